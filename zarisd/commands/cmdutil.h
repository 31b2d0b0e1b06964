/* cmdutil — the small helpers every handler uses: argument parsing that
 * replies the error itself (Redis's ...OrReply habit: when one returns
 * false, the client has its error and the handler just returns), and the
 * common error replies with Redis's exact texts.
 */
#ifndef ZR_CMDUTIL_H
#define ZR_CMDUTIL_H

#include <stdbool.h>
#include <limits.h>
#include <stddef.h>
#include <string.h>

#include "zarisd/server/client.h"
#include "zarisd/server/server.h"
#include "zarisd/core/util.h"
#include "zarisd/proto/reply.h"
#include "zarisd/store/store.h"

#define ERR_SYNTAX "ERR syntax error"
#define ERR_WRONGTYPE "WRONGTYPE Operation against a key holding the wrong kind of value"
#define ERR_NOT_INTEGER "ERR value is not an integer or out of range"
#define ERR_NOT_FLOAT "ERR value is not a valid float"
#define ERR_OVERFLOW "ERR increment or decrement would overflow"
#define ERR_NO_KEY "ERR no such key"
#define ERR_OOM "OOM command not allowed when used memory > 'maxmemory'."
#define ERR_DB_INDEX "ERR DB index is out of range"
#define ERR_NOAUTH "NOAUTH Authentication required."
/* while a script runs past busy-reply-threshold: an EVAL's, a function's */
#define ERR_BUSY_SCRIPT \
	"BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."
#define ERR_BUSY_FUNCTION \
	"BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE."
#define ERR_FLOAT_NAN_INF "ERR increment would produce NaN or Infinity"
#define ERR_STRING_TOO_BIG "ERR string exceeds maximum allowed size (proto-max-bulk-len)"

/* argv[i] as bytes. */
static inline const char *cmd_arg(const struct client *c, int i, size_t *len)
{
	*len = c->argv[i].len;
	return c->argv[i].ptr;
}

/* SCRIPT KILL's (FUNCTION false) or FUNCTION KILL's reply to R, what
 * script_kill() returned: OK, NOTBUSY, UNKILLABLE, or BUSY naming the
 * other KILL when the busy script is of the other kind. */
void cmd_reply_script_kill(struct client *c, int r, bool function);

/* Whether argv[i] equals LIT, case-insensitively (option names). */
bool cmd_arg_is(const struct client *c, int i, const char *lit);

/* argv[i] as a long long; false after replying ERR_NOT_INTEGER (or MSG when
 * not NULL). */
bool cmd_arg_ll(struct client *c, int i, long long *out, const char *msg);
/* Same, also requiring MIN <= v <= MAX (else replies MSG or ERR_NOT_INTEGER). */
bool cmd_arg_ll_range(struct client *c, int i, long long min, long long max, long long *out, const char *msg);
/* argv[i] as a double (accepts inf); false after replying ERR_NOT_FLOAT. */
bool cmd_arg_double(struct client *c, int i, double *out, const char *msg);
/* argv[i] as a long double; false after replying ERR_NOT_FLOAT. */
bool cmd_arg_ld(struct client *c, int i, long double *out);
/* argv[i] as a database index: false after replying Redis's errors for
 * a non-integer (ERR_NOT_INTEGER), one outside an int ("value is out of
 * range, value must between ..."), and a database that does not exist
 * (ERR_DB_INDEX). */
bool cmd_arg_db(struct client *c, int i, unsigned *db);

/* store_hash() of argv[ARGI]: the dispatcher's copy when it hashed that
 * argument to lock its shard, else computed. */
static inline uint64_t cmd_key_hash(const struct client *c, int argi)
{
	if (c->key_hash_argv == c->argv && c->key_hash_argi == argi)
		return c->key_hash;
	return store_hash(c->argv[argi].ptr, c->argv[argi].len);
}

/* Whether option argv[I] is LIT, case-insensitively, up to its first NUL
 * byte: Redis compares option names with strcasecmp on the argument's C
 * string, so "NX\0junk" is NX. */
static inline bool cmd_opt_is(const struct client *c, int i, const char *lit)
{
	const char *p = c->argv[i].ptr;
	size_t len = c->argv[i].len;
	const char *nul = memchr(p, '\0', len);
	return zr_eq_nocase(p, nul ? (size_t)(nul - p) : len, lit);
}

/* lookupKeyRead: the entry of key argv[ARGI] in c->db, or NULL; counts a
 * keyspace hit or miss and deletes the key when expired. The caller holds
 * the key's shard lock (the dispatcher took it). */
static inline struct entry *cmd_lookup_read(struct client *c, int argi)
{
	return store_find_h_locked(c->srv->store, c->db, c->argv[argi].ptr, c->argv[argi].len,
				   cmd_key_hash(c, argi), c->now_ms, 0);
}

/* lookupKeyWrite: like cmd_lookup_read, never counted in hits/misses. */
static inline struct entry *cmd_lookup_write(struct client *c, int argi)
{
	return store_find_h_locked(c->srv->store, c->db, c->argv[argi].ptr, c->argv[argi].len,
				   cmd_key_hash(c, argi), c->now_ms, STORE_LOOKUP_NOSTATS);
}

/* checkType for strings: false after replying WRONGTYPE when E is not a
 * string. */
static inline bool cmd_is_string_or_reply(struct client *c, const struct entry *e)
{
	if (entry_type(e) == STORE_TYPE_STRING)
		return true;
	reply_error(&c->out, ERR_WRONGTYPE);
	return false;
}

/* VALUE + INCR for INCRBY / DECRBY / HINCRBY into *OUT; false after
 * replying ERR_OVERFLOW. */
static inline bool cmd_incr_ll_or_reply(struct client *c, long long value, long long incr, long long *out)
{
	if ((incr < 0 && value < 0 && incr < LLONG_MIN - value) ||
	    (incr > 0 && value > 0 && incr > LLONG_MAX - value)) {
		reply_error(&c->out, ERR_OVERFLOW);
		return false;
	}
	*out = value + incr;
	return true;
}

/* VALUE + INCR for INCRBYFLOAT / HINCRBYFLOAT, formatted as Redis stores
 * it into BUF (ZR_MAX_LONG_DOUBLE_CHARS bytes), its length in *LEN; false
 * after replying ERR_FLOAT_NAN_INF. */
bool cmd_incr_ld_or_reply(struct client *c, long double value, long double incr, char *buf, size_t *len);

/* LMPOP / ZMPOP / BLMPOP / BZMPOP arguments from argv[NUMKEYS_I] on, like
 * Redis's lmpopGenericCommand: numkeys (1..LONG_MAX), the keys, then
 * WHERE0 or WHERE1 (*WHERE = 0 or 1), then [COUNT n] (1..LONG_MAX, 1 when
 * absent). false after replying the error. */
bool cmd_arg_mpop(struct client *c, int numkeys_i, const char *where0, const char *where1, long long *numkeys,
		  int *where, long long *count);

/* Client names: printable ASCII without spaces (Redis's validateClientName). */
bool client_name_is_valid(const char *p, size_t len);

/* Replies "ERR wrong number of arguments for '<name>' command" (the Redis 7
 * form, with "container|sub" for subcommands). */
void cmd_reply_arity(struct client *c);
/* Replies "ERR unknown subcommand '<sub>'. Try <CONTAINER> HELP." */
void cmd_reply_unknown_subcommand(struct client *c);
/* Replies Redis's HELP array: a simple-string line per entry of LINES
 * (NULL-terminated), with the "<CMD> <subcommand> ..." header. */
void cmd_reply_help(struct client *c, const char *const *lines);

#endif
