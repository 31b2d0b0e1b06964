/* slotmap — which primary serves which hash slot, as zaris-bench
 * --cluster sees it: the primaries' addresses and one owner per slot, read
 * from CLUSTER SLOTS of a seed node (Redis Cluster or zarisd in cluster
 * mode), and the parsing of the -MOVED / -ASK redirections that correct it.
 *
 * The fetch is a blocking exchange on one short-lived connection (done
 * before the clock starts); the rest are pure functions. A struct slotmap
 * is plain data: each load-generator thread keeps its own copy and updates
 * it when a node redirects (no sharing between threads).
 */
#ifndef ZB_SLOTMAP_H
#define ZB_SLOTMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "zarisd/core/keyslot.h"

#define SM_MAX_NODES 64
#define SM_NONE 0xff /* owner of a slot no primary serves */

struct sm_node {
	char host[64]; /* numeric address as CLUSTER SLOTS gives it */
	int port;
};

struct slotmap {
	struct sm_node node[SM_MAX_NODES];
	unsigned nnodes;
	uint8_t owner[ZR_KEY_SLOTS]; /* index into node, or SM_NONE */
};

/* Asks HOST:PORT for CLUSTER SLOTS and fills M with the primaries (in the
 * order the reply names them) and their slots; a primary given with an
 * empty address is taken to be at HOST. Returns 0, or -errno with a
 * message in ERR (ERRLEN bytes): the connection failed, the node answered
 * an error (cluster support disabled, say), or no slot is served. */
int slotmap_fetch(const char *host, int port, struct slotmap *m, char *err, size_t errlen);

/* The index of the node at HOST (HLEN bytes):PORT in M, or -1. */
int slotmap_find(const struct slotmap *m, const char *host, size_t hlen, int port);

/* A redirection parsed from an error reply's text. */
struct sm_redirect {
	bool ask; /* -ASK (one request, preceded by ASKING) rather than -MOVED */
	unsigned slot;
	const char *host; /* points into the reply */
	size_t hlen;
	int port;
};

/* Parses "MOVED <slot> <host>:<port>" or "ASK <slot> <host>:<port>" (the
 * error text without its '-'). Returns true and fills *R, false for any
 * other error. */
bool slotmap_parse_redirect(const char *s, size_t len, struct sm_redirect *r);

#endif
