/* zc_resp3 — parses one RESP3 value (PROTOCOL.md 6) from bytes into a
 * `struct zaris_value` tree whose nodes and strings live in an arena. Pure
 * (no I/O); any thread, one arena per caller.
 */
#ifndef ZC_RESP3_H
#define ZC_RESP3_H

#include <stddef.h>
#include <sys/types.h>

#include "zarisd/client/zaris.h"
#include "zarisd/client/zc_arena.h"

/* Nesting deeper than this is refused (a bound on the parser's recursion). */
#define ZC_RESP3_MAX_DEPTH 64

/* Parses the value at the start of P (LEN bytes) into *OUT, its nodes and
 * strings allocated in A. Returns the bytes the value took (> 0), 0 when P
 * holds only a prefix of a value (nothing in *OUT to use), -1 when the
 * bytes are not RESP3 (or nest too deep, or A has no memory: *WHY says
 * which, a constant text). */
ssize_t zc_resp3_parse(const void *p, size_t len, struct zc_arena *a, struct zaris_value *out,
		       const char **why);

#endif
