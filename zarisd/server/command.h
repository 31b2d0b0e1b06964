/* command — the shape of the one command table (commands/table.c).
 *
 * Dispatch, COMMAND / COMMAND INFO / DOCS / COUNT / LIST, key extraction for
 * shard locking (and later cluster routing) all derive from these rows.
 */
#ifndef ZR_COMMAND_H
#define ZR_COMMAND_H

#include <stdint.h>

struct client;

/* A handler replies exactly once (into c->out) and never touches a socket.
 * The dispatcher has checked arity, auth and OOM, and holds the shard locks
 * of every key the row's key spec names. */
typedef void (*cmd_handler_fn)(struct client *c);

/* Flags — one definition each:
 * WRITE     may modify the keyspace
 * READONLY  reads the keyspace, never modifies it
 * DENYOOM   may grow memory: refused with -OOM when over maxmemory after eviction
 * ADMIN     administrative (CONFIG, SHUTDOWN, DEBUG, ...)
 * PUBSUB    pub/sub command
 * NOSCRIPT  not allowed from scripts
 * FAST      O(1) or O(log N)
 * LOADING   allowed while loading data
 * STALE     allowed on a stale replica
 * NOAUTH    allowed before AUTH (AUTH, HELLO, QUIT, RESET)
 * NOMULTI   not allowed inside MULTI
 * BLOCKING  may block the client
 * KEYLESS   touches no key (no shard lock)
 * WHOLEDB   walks the keyspace itself (takes shard locks one at a time)
 * CONTAINER has subcommands; dispatch goes to the subcommand row
 * PROTECTED refused unless its enable-*-command setting allows the client
 *           (Redis's CMD_PROTECTED; not shown by COMMAND INFO, as in 7.0)
 * SELFLOCK  keyless in the table but takes a key's shard lock itself (DEBUG
 *           OBJECT): queued in MULTI, EXEC takes every lock, as for WHOLEDB,
 *           so that lock is already held
 * EXEC      runs a client's queued commands (EXEC): the dispatcher's
 *           EXECABORT answers and the transaction's records key on it
 * RANDOM_EFFECT  its outcome is random (SPOP): its journal record is its
 *           effect, not its argv (commands/propagate.h)
 * SCRIPT    runs a script (EVAL): the commands it runs are records of one
 *           transaction, as EXEC's (propagate.h)
 * The last four are zarisd's own and not shown by COMMAND INFO.
 * NO_MANDATORY_KEYS  may name no key at all (EVAL with numkeys 0):
 *           COMMAND GETKEYS answers an empty array rather than an error
 * MAY_WRITE READONLY as Redis shows it, yet it may change a key it reads
 *           (PFCOUNT caches the cardinality in the value; Redis's key spec
 *           says RW): it runs in a writing bracket (store/write.h), so its
 *           change is counted and a running snapshot keeps the pre-image.
 *           zarisd's own, not shown by COMMAND INFO. */
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
	CMD_KEYLESS = 1u << 12,
	CMD_WHOLEDB = 1u << 13,
	CMD_CONTAINER = 1u << 14,
	CMD_PROTECTED = 1u << 15,
	CMD_SELFLOCK = 1u << 16,
	CMD_EXEC = 1u << 17,
	CMD_RANDOM_EFFECT = 1u << 18,
	CMD_SCRIPT = 1u << 19,
	CMD_NO_MANDATORY_KEYS = 1u << 20,
	CMD_MAY_WRITE = 1u << 21,
};

struct command {
	const char *name; /* lower case; "get", or "get" of a subcommand */
	int arity; /* exact argc, or -N: at least N (argv[0] included; subcommand counts from its container) */
	uint32_t flags; /* enum cmd_flag */
	int first_key;	/* 0 = no keys */
	int last_key;	/* negative = from the end (-1 = last arg) */
	int key_step;
	/* Keys counted by an argument (ZUNION's numkeys; Redis 7's "keynum"
	 * find_keys): when keynum_index > 0, argv[keynum_index] is a count N
	 * and the N keys are argv[keynum_index + keynum_first], then every
	 * keynum_step-th argument. They come after the fixed first..last keys
	 * (ZUNIONSTORE's destination) and make the row "movablekeys". */
	int keynum_index;
	int keynum_first;
	int keynum_step;
	cmd_handler_fn handler; /* NULL for a container */
	const char *group;	/* COMMAND DOCS group: "string", "generic", "server", "connection" ... */
	const char *summary;
	const char *since;
	const char *complexity;
	const struct command *subcommands; /* container rows: terminated by a row with name NULL */
	const char *key_notes;		   /* COMMAND INFO: the "notes" of its counted keys' spec */
	const char *const
		*tips; /* COMMAND INFO's tips (Redis 7.0's, lower case), NULL-terminated; NULL: none */
	unsigned id;   /* index into per-thread command stats, set at start-up */
	const struct command *parent; /* container of a subcommand, set at start-up */
};

#endif
