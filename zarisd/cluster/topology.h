/* topology — one cluster layout as the supervisor pushes it (the contract
 * in DESIGN.md §8.3): an epoch, the cluster's name, which node this server
 * is, every node (id, name, address, primary with its slot ranges or
 * replica of a primary) and the slot table derived from it, 16384 entries
 * of the owning primary's node index. Parsed from the text document, then
 * never changed: cluster.h publishes it by pointer and workers read it
 * without locks. Pure data and pure functions; any thread.
 *
 * The document, one item per line, `#` to end of line a comment:
 *	epoch <n>                      (the first item)
 *	cluster <name>
 *	myself <id>
 *	node <id> <name> <ip> <port> primary [<ranges>] [native <nport>]
 *	node <id> <name> <ip> <port> replica <primary-id> [native <nport>]
 * ids are 40 lowercase hex digits; ranges are `a-b` or `a`, comma
 * separated, 0..16383, no slot owned twice. `native <nport>`, the last two
 * words of a node line or absent, is the node's native-protocol port
 * (zarisd/proto/PROTOCOL.md), 1..65535, distinct from every port and
 * native port on the same ip. It is optional both ways: a document without
 * it parses as before (native_port 0), and the supervisor writes it only
 * for a node that declares one, so a cluster without native ports pushes
 * the very documents an older zarisd takes. "native" cannot be a range, so
 * a primary without ranges stays unambiguous.
 */
#ifndef ZR_TOPOLOGY_H
#define ZR_TOPOLOGY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "zarisd/core/keyslot.h"

#define TOPO_ID_LEN 40
#define TOPO_NO_OWNER 0xffffu /* owner[] of a slot no primary serves */
#define TOPO_MAX_NODES 4096

struct topo_node {
	char id[TOPO_ID_LEN + 1];
	char *name;
	char ip[64];
	int port;
	int native_port; /* its native-protocol port, 0 = none declared */
	int primary;	 /* index of its primary; -1 for a primary */
	unsigned nslots; /* slots a primary owns */
	int line;	 /* its line in the document */
};

struct topology {
	uint64_t epoch;
	char *cluster;	 /* the cluster's name */
	unsigned myself; /* index into nodes */
	unsigned nnodes;
	struct topo_node *nodes;
	unsigned assigned;	      /* slots some primary owns */
	uint16_t owner[ZR_KEY_SLOTS]; /* node index, or TOPO_NO_OWNER */
	char *text;		      /* the document as pushed */
	size_t text_len;
	/* the layout without comments, spacing and line order, and without
	 * the epoch: two documents of one epoch must have the same one */
	char *layout;
};

/* Parses LEN bytes of TEXT. NULL on error, with "line <L>: <what>" in ERR
 * (L the document line at fault, or its last line for what is missing). */
struct topology *topology_parse(const char *text, size_t len, char *err, size_t errlen);
void topology_free(struct topology *t);

/* Whether T and U describe the same layout (their epochs aside). */
bool topology_same_layout(const struct topology *t, const struct topology *u);

/* The node whose id is ID (LEN bytes), or -1. */
int topology_find(const struct topology *t, const char *id, size_t len);

/* Whether ID (LEN bytes) is a node id: 40 lowercase hex digits. */
bool topology_valid_id(const char *id, size_t len);

#endif
