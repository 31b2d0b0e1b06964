/* rscan — finds where one RESP2/RESP3 value ends in a byte buffer, without
 * copying or allocating, and says what kind it is at the top level. The
 * load generator uses it to count replies (and tell errors and nils from
 * the rest); the --serve stand-in uses it to cut requests, which are
 * arrays of bulk strings. Stateless: an incomplete value is scanned again
 * from its start when more bytes arrive, which costs little because
 * replies are small and mostly arrive whole.
 */
#ifndef ZB_RSCAN_H
#define ZB_RSCAN_H

#include <stddef.h>

enum rscan_kind {
	RSCAN_STATUS, /* +simple string */
	RSCAN_ERROR,  /* -error or !blob error */
	RSCAN_INT,    /* :integer, ,double, (big number, #boolean */
	RSCAN_BULK,   /* $bulk or =verbatim, not nil */
	RSCAN_NIL,    /* $-1, *-1 or _ */
	RSCAN_AGG,    /* * ~ % | aggregate (array, set, map, attribute) */
	RSCAN_PUSH,   /* >push (out-of-band, not a reply to a request) */
};

/* Scans the value starting at P (N bytes available). Returns its length in
 * bytes (> 0) and sets *KIND; 0 when the buffer holds only part of it; -1
 * on a protocol error (unknown type byte, bad length, nesting deeper than
 * 64). */
long rscan_value(const char *p, size_t n, enum rscan_kind *kind);

/* Parses the decimal integer in [P, END) (optional '-', at most 18
 * digits) into *OUT. Returns 1, or 0 on anything else. */
int rscan_int(const char *p, const char *end, long long *out);

#endif
