/* native_req — decodes a native protocol REQUEST payload (PROTOCOL.md §4)
 * into its operations, each as the argv of its Redis equivalent, so that
 * the commands layer runs it as it runs a RESP request. No I/O, no server
 * state: the session gives the bytes and the limits, and gets the ops or
 * the rule the payload broke.
 *
 * The whole payload is checked before any op is returned (nothing of a bad
 * frame runs). argv entries point into the payload (keys, values, labels)
 * or into the decoder's own scratch (numbers as text, command words), so
 * they are valid until the payload's bytes change or the next decode.
 * Command words point at string constants: handlers must not write to
 * argv (none does; RESP's inline unescaping happens in its parser).
 */
#ifndef ZR_NATIVE_REQ_H
#define ZR_NATIVE_REQ_H

#include <stddef.h>
#include <stdint.h>

#include "zarisd/proto/resp.h"

struct native_limits {
	uint64_t max_bulk_len; /* proto-max-bulk-len: a key, value, label or argument */
	unsigned databases;    /* db must be below */
};

struct native_op {
	uint8_t op;    /* enum nw_op */
	uint8_t flags; /* its opflags */
	uint16_t db;
	int argc; /* 0 for TOPOLOGY, which is not a command */
	struct resp_arg *argv;
};

/* One decoder per session; zero it (or native_req_init) before the first
 * decode, native_req_free when done. Grows to the largest request seen. */
struct native_req {
	struct native_op *ops;
	unsigned nops, ops_cap;
	struct resp_arg *args;
	size_t args_cap;
	char *scratch;
	size_t scratch_cap;
};

void native_req_init(struct native_req *r);
void native_req_free(struct native_req *r);

/* Decodes COUNT operations from PAYLOAD[0..LEN) into r->ops[0..count).
 * Returns NULL, or the rule broken (a static text for the GOODBYE and the
 * log: "unknown operation 99 at operation 3"), in which case r->ops is not
 * valid. ERRBUF (at least 96 bytes) holds the formatted text. */
const char *native_req_decode(struct native_req *r, unsigned count, unsigned char *payload, size_t len,
			      const struct native_limits *lim, char *errbuf, size_t errlen);

#endif
