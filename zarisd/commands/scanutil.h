/* scanutil — what SCAN, HSCAN, SSCAN and ZSCAN share (Redis 7.0's
 * parseScanCursorOrReply and scanGenericCommand): the cursor argument, the
 * MATCH / COUNT / TYPE options with Redis's errors, the elements one call
 * collects, the COUNT bound on the iteration, and the reply
 * [cursor, [elements]].
 *
 * A handler parses the cursor, looks its key up (a missing key replies
 * scan_reply_empty()), parses the options, then steps its structure's scan
 * function with a visitor that calls scan_offer() / scan_offer_pair() until
 * scan_more() says stop, and replies with scan_reply(). Elements are copied
 * into the scan_out: the reply starts with the cursor, which is known only
 * after the walk, and SCAN's entries die with their shard lock. Everything
 * here runs on the client's worker; it keeps no state between calls.
 */
#ifndef ZR_SCANUTIL_H
#define ZR_SCANUTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "zarisd/server/client.h"

#define ERR_INVALID_CURSOR "ERR invalid cursor"

/* One call's options and what it collected. Invariant: buf holds n
 * elements as [u32 len][bytes]...; seen >= n. */
struct scan_out {
	long long count;  /* COUNT (default 10): stop after this many elements seen */
	long long budget; /* scan steps left (COUNT * 10) so a sparse MATCH ends */
	const char *pat;  /* MATCH pattern (borrowed from argv), NULL: every element */
	size_t plen;
	const char *type; /* SCAN's TYPE name (borrowed from argv), NULL: any type */
	size_t tlen;
	char *buf; /* collected elements */
	size_t used, cap;
	long n;		/* elements in buf */
	long long seen; /* elements visited, matching or not: what COUNT bounds */
};

/* argv[I] as a scan cursor, like Redis's strtoul over the C string: "" is
 * 0, "-1" wraps, a leading blank or any trailing byte is an error. false
 * after replying ERR_INVALID_CURSOR. */
bool scan_arg_cursor(struct client *c, int i, uint64_t *cursor);

/* Initializes SO and parses the options from argv[FIRST] on: COUNT n
 * (integer >= 1, else ERR_NOT_INTEGER / ERR_SYNTAX), MATCH pattern, and
 * TYPE name when ALLOW_TYPE (SCAN only). false after replying the error;
 * SO then owns nothing. */
bool scan_arg_opts(struct client *c, int first, bool allow_type, struct scan_out *so);

/* Whether TYPE_NAME passes SO's TYPE filter (Redis 7.0 compares names
 * case-insensitively, so an unknown name matches nothing). */
bool scan_type_ok(const struct scan_out *so, const char *type_name);

/* Counts one visited element and keeps a copy of it when it matches MATCH.
 * Returns whether it was kept. */
bool scan_offer(struct scan_out *so, const char *p, size_t len);
/* Counts one visited element that a filter other than MATCH rejected. */
static inline void scan_skip(struct scan_out *so)
{
	so->seen++;
}
/* A field and its value (HSCAN) or a member and its score (ZSCAN): both
 * count against COUNT, MATCH applies to A, and both are kept when A
 * matches. */
void scan_offer_pair(struct scan_out *so, const char *a, size_t alen, const char *b, size_t blen);

/* After a scan step that returned CURSOR: whether to take another one
 * (the walk is not finished, fewer than COUNT elements were seen and the
 * step budget is not spent). */
bool scan_more(struct scan_out *so, uint64_t cursor);

/* Replies [CURSOR, [elements]] and frees what SO holds. */
void scan_reply(struct client *c, uint64_t cursor, struct scan_out *so);
/* Frees what SO holds, replying nothing (the walk gave up). */
void scan_discard(struct scan_out *so);
/* Replies [0, []]: the scan of a missing key (Redis's shared.emptyscan). */
void scan_reply_empty(struct client *c);

#endif
