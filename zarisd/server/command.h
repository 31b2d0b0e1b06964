/* command — the shape of the one command table (commands/table.c).
 *
 * A row is data: name, arity, flags, ACL categories, Redis 7 key specs,
 * tips, docs, handler. Dispatch, COMMAND / COMMAND INFO / DOCS / COUNT /
 * LIST / GETKEYS, the shard locks, the journal's key versions and cluster
 * routing all read the rows; none of them names a command. A new command
 * is one row plus its handler. The rows are read-only once
 * command_table_init (commands/table.h) has filled in the fields marked
 * "set at start-up"; any thread may read them after that.
 */
#ifndef ZR_COMMAND_H
#define ZR_COMMAND_H

#include <stdint.h>

struct client;
struct command;
struct resp_arg;

/* A handler replies exactly once (into c->out) and never touches a socket.
 * The dispatcher has checked arity, auth and OOM, and holds the shard locks
 * of every key the row's key specs name. */
typedef void (*cmd_handler_fn)(struct client *c);

/* Flags — one definition each. First those COMMAND INFO shows, under
 * Redis 7.0's names (command_flag_name, table.h):
 * WRITE     may modify the keyspace ("write")
 * READONLY  reads the keyspace, never modifies it ("readonly")
 * DENYOOM   may grow memory: refused with -OOM when over maxmemory after eviction
 * ADMIN     administrative (CONFIG, SHUTDOWN, DEBUG, ...)
 * PUBSUB    pub/sub command
 * NOSCRIPT  not allowed from scripts
 * FAST      O(1) or O(log N)
 * LOADING   allowed while a replica loads a full sync
 * STALE     allowed on a replica whose link is down (replica-serve-stale-data no)
 * NOAUTH    allowed before AUTH ("no_auth")
 * NOMULTI   refused inside MULTI ("no_multi")
 * BLOCKING  may block the client
 * NO_MANDATORY_KEYS  may name no key at all (EVAL with numkeys 0):
 *           COMMAND GETKEYS answers an empty array rather than an error
 * ALLOW_BUSY  served while a script runs past busy-reply-threshold (the
 *           dispatcher's busy gate; Redis's allow_busy: the transaction
 *           commands, so that a pipelined MULTI is not cut in half, AUTH,
 *           SCRIPT KILL, FUNCTION KILL / STATS ...)
 * NO_ASYNC_LOADING  Redis refuses it during an async (swapdb) load;
 *           zarisd has none, so it is shown only
 * SKIP_SLOWLOG  never recorded in the slow log (EXEC: its commands are)
 * SKIP_MONITOR  not fed to MONITOR (the script rows; zarisd has no MONITOR)
 * MOVABLE_KEYS  set at start-up: some key spec is not a plain range
 *           (a count, a keyword), so first/last/step miss keys ("movablekeys")
 * Then zarisd's own, which COMMAND INFO does not show:
 * KEYLESS   touches no key (no shard lock); the shard channels of
 *           SSUBSCRIBE / SPUBLISH are in its key spec, for cluster routing
 * WHOLEDB   walks the keyspace itself (takes shard locks one at a time)
 * CONTAINER has subcommands; dispatch goes to the subcommand row
 * PROTECTED refused unless its enable-*-command setting allows the client
 *           (Redis's CMD_PROTECTED; hidden by COMMAND INFO, as in 7.0)
 * SELFLOCK  keyless in the table but takes a key's shard lock itself (DEBUG
 *           OBJECT): queued in MULTI, EXEC takes every lock, as for WHOLEDB,
 *           so that lock is already held
 * EXEC      runs a client's queued commands (EXEC): the dispatcher's
 *           EXECABORT answers and the transaction's records key on it
 * RANDOM_EFFECT  its outcome is random (SPOP): its journal record is its
 *           effect, not its argv (commands/propagate.h)
 * SCRIPT    runs a script (EVAL): the commands it runs are records of one
 *           transaction, as EXEC's (propagate.h)
 * MAY_WRITE READONLY as Redis shows it, yet it may change a key it reads
 *           (PFCOUNT caches the cardinality in the value; Redis's key spec
 *           says RW): it runs in a writing bracket (store/write.h), so its
 *           change is counted and a running snapshot keeps the pre-image.
 * SUBSCRIBED  allowed to a RESP2 client in subscribed context: the
 *           (P|S)(UN)SUBSCRIBE family, PING, QUIT, RESET (commands/pubsub.h)
 * MULTI_NOW runs at once inside MULTI, never queued: EXEC, DISCARD, MULTI
 *           (which refuses nesting itself), WATCH (likewise), QUIT, RESET
 * Bits 29..31 are free; past them the word must grow to 64 bits. */
enum cmd_flag {
	CMD_WRITE = 1u << 0,
	CMD_READONLY = 1u << 1,
	CMD_DENYOOM = 1u << 2,
	CMD_ADMIN = 1u << 3,
	CMD_PUBSUB = 1u << 4,
	CMD_NOSCRIPT = 1u << 5,
	CMD_FAST = 1u << 6,
	CMD_LOADING = 1u << 7,
	CMD_STALE = 1u << 8,
	CMD_NOAUTH = 1u << 9,
	CMD_NOMULTI = 1u << 10,
	CMD_BLOCKING = 1u << 11,
	CMD_NO_MANDATORY_KEYS = 1u << 12,
	CMD_ALLOW_BUSY = 1u << 13,
	CMD_NO_ASYNC_LOADING = 1u << 14,
	CMD_SKIP_SLOWLOG = 1u << 15,
	CMD_SKIP_MONITOR = 1u << 16,
	CMD_MOVABLE_KEYS = 1u << 17,
	CMD_KEYLESS = 1u << 18,
	CMD_WHOLEDB = 1u << 19,
	CMD_CONTAINER = 1u << 20,
	CMD_PROTECTED = 1u << 21,
	CMD_SELFLOCK = 1u << 22,
	CMD_EXEC = 1u << 23,
	CMD_RANDOM_EFFECT = 1u << 24,
	CMD_SCRIPT = 1u << 25,
	CMD_MAY_WRITE = 1u << 26,
	CMD_SUBSCRIBED = 1u << 27,
	CMD_MULTI_NOW = 1u << 28,
};

/* ACL categories, one bit each in Redis's order (the order COMMAND INFO
 * lists them in; command_acl_category_name, table.h). A row names the
 * categories Redis lists for the command explicitly; command_table_init
 * adds those its flags imply, as Redis does: WRITE @write, READONLY @read
 * (not for a @scripting row), ADMIN @admin @dangerous, PUBSUB @pubsub,
 * FAST @fast, else @slow, BLOCKING @blocking. */
enum acl_category {
	ACL_CAT_KEYSPACE = 1u << 0,
	ACL_CAT_READ = 1u << 1,
	ACL_CAT_WRITE = 1u << 2,
	ACL_CAT_SET = 1u << 3,
	ACL_CAT_SORTEDSET = 1u << 4,
	ACL_CAT_LIST = 1u << 5,
	ACL_CAT_HASH = 1u << 6,
	ACL_CAT_STRING = 1u << 7,
	ACL_CAT_BITMAP = 1u << 8,
	ACL_CAT_HYPERLOGLOG = 1u << 9,
	ACL_CAT_GEO = 1u << 10,
	ACL_CAT_STREAM = 1u << 11,
	ACL_CAT_PUBSUB = 1u << 12,
	ACL_CAT_ADMIN = 1u << 13,
	ACL_CAT_FAST = 1u << 14,
	ACL_CAT_SLOW = 1u << 15,
	ACL_CAT_BLOCKING = 1u << 16,
	ACL_CAT_DANGEROUS = 1u << 17,
	ACL_CAT_CONNECTION = 1u << 18,
	ACL_CAT_TRANSACTION = 1u << 19,
	ACL_CAT_SCRIPTING = 1u << 20,
};
#define ACL_CATEGORY_COUNT 21

/* Key spec flags (Redis 7.0's, in COMMAND INFO's order). One of RO, RW,
 * OW (overwrite: the old value is not read), RM (removes the key) says what
 * happens to the key; ACCESS (its value is returned), UPDATE, INSERT,
 * DELETE refine it. NOT_KEY: a shard channel, routed as a key but never a
 * key (not locked, not in COMMAND GETKEYS). INCOMPLETE: the spec may miss
 * keys, so COMMAND GETKEYS falls back to the row's getkeys. VARIABLE_FLAGS:
 * the flags depend on the arguments (SET ... GET): COMMAND GETKEYS asks
 * the row's getkeys for them. */
enum key_spec_flag {
	KS_RO = 1u << 0,
	KS_RW = 1u << 1,
	KS_OW = 1u << 2,
	KS_RM = 1u << 3,
	KS_ACCESS = 1u << 4,
	KS_UPDATE = 1u << 5,
	KS_INSERT = 1u << 6,
	KS_DELETE = 1u << 7,
	KS_NOT_KEY = 1u << 8,
	KS_INCOMPLETE = 1u << 9,
	KS_VARIABLE_FLAGS = 1u << 10,
};

/* An argument's place: argv[pos] when KEYWORD is NULL; else a key spec's
 * keyword search (Redis's begin_search "keyword"): the first argument
 * after KEYWORD (any case), searched from argv[pos] forward to the last
 * but one, or, for a negative pos, from argv[argc + pos] backward to
 * argv[2]. */
struct cmd_arg_ref {
	const char *keyword;
	int pos;
};

enum key_find {
	KS_FIND_RANGE,	/* keys from the begin index: lastkey, keystep, limit */
	KS_FIND_KEYNUM, /* a count, then that many keys */
};

/* One Redis 7 key spec: where the keys begin, then how many follow.
 * range: the keys begin..begin+lastkey every keystep-th; a negative lastkey
 * counts from the end (-1: the last argument), or with limit L > 0
 * (lastkey -1) it ends after (argc - begin) / L keys (XREAD ... STREAMS
 * k1 k2 id1 id2: half of what remains). keynum: argv[begin + keynumidx]
 * is a count N >= 0 and the N keys start at begin + firstkey, every
 * keystep-th. commands/keyiter.h is the one reader. */
struct key_spec {
	const char *notes; /* COMMAND INFO's notes, or NULL */
	uint32_t flags;	   /* enum key_spec_flag */
	struct cmd_arg_ref begin;
	enum key_find find;
	union {
		struct {
			int lastkey, keystep, limit;
		} range;
		struct {
			int keynumidx, firstkey, keystep;
		} keynum;
	} fk;
};

/* A key COMMAND GETKEYS found: its index into argv and its spec's flags. */
struct cmd_key {
	int pos;
	uint32_t flags; /* enum key_spec_flag */
};

/* Redis's getkeys_proc: where COMMAND GETKEYS goes when a spec does not
 * fit ARGV (a count that is not a number: Redis's atoi reading of it) or
 * its flags vary (SET ... GET). Writes at most ARGC + 1 keys into OUT and
 * returns how many (0: none, the command would reply an error). Reads
 * ARGV only; any thread. */
typedef int (*cmd_getkeys_fn)(const struct command *cmd, const struct resp_arg *argv, int argc,
			      struct cmd_key *out);

struct command {
	const char *name; /* lower case; "get", or "get" of a subcommand */
	int arity; /* exact argc, or -N: at least N (argv[0] included; subcommand counts from its container) */
	uint32_t flags;		 /* enum cmd_flag */
	uint32_t acl_categories; /* enum acl_category: in the table the explicit ones, all after start-up */
	const struct key_spec *key_specs; /* Redis's order; NULL when key_specs_num is 0 */
	int key_specs_num;		  /* at most KEYITER_MAX_SPECS (keyiter.h) */
	cmd_handler_fn handler;		  /* NULL for a container */
	cmd_getkeys_fn getkeys;		  /* NULL: none (keyiter.h keyiter_getkeys_counted ...) */
	/* MOVE's and COPY's other database (propagate.c): argv[pos] when
	 * keyword is NULL, else the argument after the last KEYWORD (any case)
	 * in argv[pos ..]; pos 0: none */
	struct cmd_arg_ref db_arg;
	const char *group; /* COMMAND DOCS group: "string", "generic", "server", "connection" ... */
	const char *summary;
	const char *since;
	const char *complexity;
	const struct command *subcommands; /* container rows: terminated by a row with name NULL */
	const char *const
		*tips; /* COMMAND INFO's tips (Redis 7.0's, lower case), NULL-terminated; NULL: none */
	/* set at start-up from the key specs (command_table_init): */
	int first_key, last_key,
		key_step; /* COMMAND INFO's legacy range: Redis's from the specs; 0,0,0 none */
	int single_key; /* the index of the one key a row with one spec of one key names (GET, SET ...), else 0 */
	unsigned id;		      /* index into per-thread command stats */
	const struct command *parent; /* container of a subcommand */
};

#endif
