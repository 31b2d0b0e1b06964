/* schema — every setting zarisd has, described once: its name (Redis's
 * where Redis has the setting), type, range or choices, default, whether
 * CONFIG SET may change it, and whether the cluster file may set it. Three
 * readers take it from here, so they cannot disagree: zarisd's flag parser
 * and CONFIG GET / SET (zarisd/server/settings.c, which keeps the live
 * values and binds each entry to its field and side effects), and the
 * cluster-file loader (zconf.c, which checks the per-instance keys against
 * the same entries before the supervisor passes them to zarisd as flags).
 *
 * Plain constant data plus lookups: any thread, no state.
 */
#ifndef ZCONF_SCHEMA_H
#define ZCONF_SCHEMA_H

#include <stdbool.h>
#include <stddef.h>

/* The most CPUs a `cores` list may name (numbers 0 .. SCHEMA_MAX_CORES - 1). */
#define SCHEMA_MAX_CORES 256

/* How a value is written. The text forms are Redis's. */
enum schema_type {
	SCHEMA_BOOL,	/* yes | no, any case */
	SCHEMA_INT,	/* a decimal integer from min to max */
	SCHEMA_MEMORY,	/* a size with Redis's units (1k = 1000, 1kb = 1024, m, mb, g, gb), min to max */
	SCHEMA_UMEMORY, /* a size, 0 to 2^64 - 1 */
	SCHEMA_ENUM,	/* one of names[], any case; kept as its index */
	SCHEMA_STRING,	/* any text (zarisd may check more: a host name, a template) */
	SCHEMA_LIST,	/* several words in a syntax of their own (save rules, a CPU list, buffer-limit
			 * classes, flags): checked by the entry's `check` where it has one, else by the
			 * parser zarisd binds to it */
	SCHEMA_SPECIAL, /* one value in a syntax of its own (an octal mode, a size or a percentage) */
};

#define SCHEMA_F_IMMUTABLE 0x1 /* start-up only: CONFIG SET refuses ("can't set immutable config") */
#define SCHEMA_F_SENSITIVE 0x2 /* a secret: never logged */
#define SCHEMA_F_CHDIR 0x4     /* dir: CONFIG SET changes the working directory; shown as getcwd() */
#define SCHEMA_F_BASENAME 0x8  /* a file name, not a path (dbfilename) */
#define SCHEMA_F_REDIS 0x10    /* Redis's setting that zarisd takes and shows but does not act on */
#define SCHEMA_F_HIDDEN 0x20   /* Redis's HIDDEN_CONFIG: CONFIG GET shows it for its exact name only */
#define SCHEMA_F_FILE_RESTART \
	0x40 /* the cluster file sets it and a change restarts the instance, though
				    * CONFIG SET could change it (dir: the data moves with it) */

/* How the cluster file writes a key whose syntax there is not its type's. */
enum schema_file_syntax {
	SCHEMA_FILE_AS_TYPE = 0,
	SCHEMA_FILE_ADDRS, /* a string of space-separated numeric IP addresses */
	SCHEMA_FILE_CORES, /* "0-3,6", one number or an array of numbers */
};

/* One setting. Invariants (tests/unit/schema.c): names are unique (any
 * case); an alias has the type, range and choices of the entry it names
 * and no default of its own; every other entry's default passes its own
 * checks. */
struct schema_entry {
	const char *name;
	enum schema_type type;
	unsigned flags;			      /* SCHEMA_F_* */
	long long min, max;		      /* INT, MEMORY; LIST cores: the CPU numbers */
	const char *const *names;	      /* ENUM (and LIST flags): NULL-terminated choices */
	const char *const *names_redis_order; /* how Redis lists NAMES in its error, NULL = as NAMES */
	const char *def;		  /* the value at start, as CONFIG GET shows it; NULL for an alias */
	const char *alias_of;		  /* Redis's other name: the entry whose value it shares */
	const char *refuse;		  /* REDIS: any value but DEF is refused with this text */
	const char *help;		  /* one line for --help */
	bool (*check)(const char *value); /* LIST: the syntax check shared by both readers, or NULL */
	unsigned char file;		  /* 1 + its enum zconf_key when the cluster file may set it
						 * (under NAME), else 0 */
	unsigned char file_syntax;	  /* enum schema_file_syntax */
};

/* zarisd's own settings, by index into schema_table; Redis's other settings
 * (SCHEMA_F_REDIS) follow from SCHEMA_ID_REDIS_FIRST on, in Redis 7.0's
 * config.c order. CONFIG GET lists the table in this order. */
enum schema_id {
	SCHEMA_ID_PORT,
	SCHEMA_ID_BIND,
	SCHEMA_ID_THREADS,
	SCHEMA_ID_CORES,
	SCHEMA_ID_IO_BACKEND,
	SCHEMA_ID_DATABASES,
	SCHEMA_ID_SHARD_BITS,
	SCHEMA_ID_DIR,
	SCHEMA_ID_LOGFILE,
	SCHEMA_ID_PIDFILE,
	SCHEMA_ID_TCP_BACKLOG,
	SCHEMA_ID_ENABLE_DEBUG_COMMAND,
	SCHEMA_ID_DISABLE_THP,
	SCHEMA_ID_MAXMEMORY,
	SCHEMA_ID_MAXMEMORY_POLICY,
	SCHEMA_ID_MAXMEMORY_SAMPLES,
	SCHEMA_ID_PROTO_MAX_BULK_LEN,
	SCHEMA_ID_CLIENT_QUERY_BUFFER_LIMIT,
	SCHEMA_ID_CLIENT_OUTPUT_BUFFER_LIMIT,
	SCHEMA_ID_MAXCLIENTS,
	SCHEMA_ID_TIMEOUT,
	SCHEMA_ID_TCP_KEEPALIVE,
	SCHEMA_ID_PROTECTED_MODE,
	SCHEMA_ID_JEMALLOC_BG_THREAD,
	SCHEMA_ID_HZ,
	SCHEMA_ID_LFU_LOG_FACTOR,
	SCHEMA_ID_LFU_DECAY_TIME,
	SCHEMA_ID_SLOWLOG_LOG_SLOWER_THAN,
	SCHEMA_ID_SLOWLOG_MAX_LEN,
	SCHEMA_ID_LATENCY_MONITOR_THRESHOLD,
	SCHEMA_ID_LOGLEVEL,
	SCHEMA_ID_ACTIVE_EXPIRE_EFFORT,
	SCHEMA_ID_REQUIREPASS,
	SCHEMA_ID_NOTIFY_KEYSPACE_EVENTS,
	SCHEMA_ID_HASH_MAX_LISTPACK_ENTRIES,
	SCHEMA_ID_HASH_MAX_LISTPACK_VALUE,
	SCHEMA_ID_HASH_MAX_ZIPLIST_ENTRIES,
	SCHEMA_ID_HASH_MAX_ZIPLIST_VALUE,
	SCHEMA_ID_SET_MAX_INTSET_ENTRIES,
	SCHEMA_ID_HLL_SPARSE_MAX_BYTES,
	SCHEMA_ID_ZSET_MAX_LISTPACK_ENTRIES,
	SCHEMA_ID_ZSET_MAX_LISTPACK_VALUE,
	SCHEMA_ID_ZSET_MAX_ZIPLIST_ENTRIES,
	SCHEMA_ID_ZSET_MAX_ZIPLIST_VALUE,
	SCHEMA_ID_LIST_MAX_LISTPACK_SIZE,
	SCHEMA_ID_LIST_MAX_ZIPLIST_SIZE,
	SCHEMA_ID_DBFILENAME,
	SCHEMA_ID_APPENDFILENAME,
	SCHEMA_ID_APPENDDIRNAME,
	SCHEMA_ID_APPENDONLY,
	SCHEMA_ID_APPENDFSYNC,
	SCHEMA_ID_SAVE,
	SCHEMA_ID_AUTO_AOF_REWRITE_PERCENTAGE,
	SCHEMA_ID_AUTO_AOF_REWRITE_MIN_SIZE,
	SCHEMA_ID_AOF_LOAD_TRUNCATED,
	SCHEMA_ID_REPLICA_READ_ONLY,
	SCHEMA_ID_REPLICA_SERVE_STALE_DATA,
	SCHEMA_ID_MIN_REPLICAS_TO_WRITE,
	SCHEMA_ID_MIN_REPLICAS_MAX_LAG,
	SCHEMA_ID_REPL_BACKLOG_SIZE,
	SCHEMA_ID_REPL_TIMEOUT,
	SCHEMA_ID_MASTERAUTH,
	SCHEMA_ID_REPLICA_ACK,
	SCHEMA_ID_REPLICA_ACK_TIMEOUT,
	SCHEMA_ID_SLAVE_READ_ONLY,
	SCHEMA_ID_SLAVE_SERVE_STALE_DATA,
	SCHEMA_ID_MIN_SLAVES_TO_WRITE,
	SCHEMA_ID_MIN_SLAVES_MAX_LAG,
	SCHEMA_ID_CLUSTER_ENABLED,
	SCHEMA_ID_WRITE_LEASE,
	SCHEMA_ID_ALLOW_UNDECLARED_KEYS,
	SCHEMA_ID_BUSY_REPLY_THRESHOLD,
	SCHEMA_ID_LUA_TIME_LIMIT,
	SCHEMA_ID_META_MAX_LABELS,
	SCHEMA_ID_META_MAX_LABEL_LENGTH,
	SCHEMA_ID_NATIVE_PORT,
	SCHEMA_ID_NATIVE_RF1,
	SCHEMA_ID_RDB_KEY_SAVE_DELAY,
	SCHEMA_ID_REDIS_FIRST
};

extern const struct schema_entry schema_table[];
extern const size_t schema_count;

/* The entry called NAME (any case), or NULL. */
const struct schema_entry *schema_find(const char *name);
/* E's index in schema_table. */
size_t schema_index(const struct schema_entry *e);
/* The entry whose value E shows: E itself, or the entry it is an alias of. */
const struct schema_entry *schema_primary(const struct schema_entry *e);

/* The entry the cluster file sets as KEY (an enum zconf_key), or NULL when
 * KEY is out of range. */
const struct schema_entry *schema_file_entry(int key);
/* E's enum zconf_key, or -1 when the cluster file cannot set E. */
int schema_file_key(const struct schema_entry *e);

/* Whether a running instance takes a new value of E through CONFIG SET
 * (else the supervisor restarts it). */
bool schema_is_live(const struct schema_entry *e);

/* The save rules: "<seconds> <changes> ..." pairs of non-negative integers,
 * separated by spaces, or "" for none (Redis's format). */
bool schema_save_rules_valid(const char *value);

#endif
