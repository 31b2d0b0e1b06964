/* schema — the table of every setting and its lookups; see schema.h.
 * zarisd's own settings come first, by enum schema_id; Redis 7.0's other
 * settings follow, in its config.c order, with Redis's names, ranges,
 * defaults and (where zarisd lacks the feature) refusals.
 */
#include "config/schema.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config/zconf.h"

/* indexed by zarisd's enum aof_fsync */
static const char *const appendfsync_names[] = { "always", "everysec", "no", NULL };
static const char *const appendfsync_names_redis_order[] = { "everysec", "always", "no", NULL };
static const char *const io_backend_names[] = { "auto", "uring", "epoll", NULL };
/* indexed by zarisd's enum settings_protected */
static const char *const protected_names[] = { "no", "yes", "local", NULL };
/* indexed by zarisd's enum zr_log_level */
static const char *const loglevel_names[] = { "debug", "verbose", "notice", "warning", NULL };
/* indexed by zarisd's enum store_evict_policy */
static const char *const policy_names[] = { "noeviction",      "allkeys-lru",  "allkeys-lfu",
					    "allkeys-random",  "volatile-lru", "volatile-lfu",
					    "volatile-random", "volatile-ttl", NULL };
static const char *const policy_names_redis_order[] = { "volatile-lru",	  "volatile-lfu", "volatile-random",
							"volatile-ttl",	  "allkeys-lru",  "allkeys-lfu",
							"allkeys-random", "noeviction",	  NULL };

/* Redis's other settings' choices, in Redis 7.0's config.c order */
static const char *const supervised_names[] = { "upstart", "systemd", "auto", "no", NULL };
static const char *const syslog_facility_names[] = { "user",   "local0", "local1", "local2", "local3",
						     "local4", "local5", "local6", "local7", NULL };
static const char *const diskless_load_names[] = { "disabled", "on-empty-db", "swapdb", NULL };
static const char *const acl_pubsub_names[] = { "allchannels", "resetchannels", NULL };
static const char *const sanitize_names[] = { "no", "yes", "clients", NULL };
static const char *const endpoint_names[] = { "ip", "hostname", "unknown-endpoint", NULL };
static const char *const propagation_names[] = { "ignore", "panic", "panic-on-replicas", NULL };
static const char *const tls_auth_names[] = { "no", "yes", "optional", NULL };
/* "relative" is Redis's other word for "yes" */
static const char *const oom_adj_names[] = { "no", "yes", "relative", "absolute", NULL };
/* by bit: Redis's SHUTDOWN_SAVE, _NOSAVE, _NOW, _FORCE after "default" (none) */
static const char *const shutdown_names[] = { "default", "save", "nosave", "now", "force", NULL };

#define FILE_KEY(k) ((k) + 1)
#define REDIS_HELP "Redis's setting: taken and shown, no effect in zarisd"
#define TLS_REFUSED "Unable to update TLS configuration. Check server logs."
/* A Redis setting: NAME, its type, flags, range, choices and default. */
#define REDIS_ROW(n, t, fl, mn, mx, nm, d)                                                               \
	{                                                                                                \
		.name = n, .type = t, .flags = SCHEMA_F_REDIS | (fl), .min = mn, .max = mx, .names = nm, \
		.def = d, .help = REDIS_HELP                                                             \
	}
/* Redis's alias NAME of the entry OF (same type, range and flags). */
#define REDIS_ALIAS(n, of, t, fl, mn, mx, nm)                                                            \
	{                                                                                                \
		.name = n, .type = t, .flags = SCHEMA_F_REDIS | (fl), .min = mn, .max = mx, .names = nm, \
		.alias_of = of, .help = REDIS_HELP                                                       \
	}
#define REDIS_BOOL(n, fl, d) REDIS_ROW(n, SCHEMA_BOOL, fl, 0, 1, NULL, d)
#define REDIS_INT(n, fl, mn, mx, d) REDIS_ROW(n, SCHEMA_INT, fl, mn, mx, NULL, d)
#define REDIS_MEMORY(n, fl, mn, mx, d) REDIS_ROW(n, SCHEMA_MEMORY, fl, mn, mx, NULL, d)
#define REDIS_STRING(n, fl, d) REDIS_ROW(n, SCHEMA_STRING, fl, 0, 0, NULL, d)
#define REDIS_ENUM(n, fl, nm, d) REDIS_ROW(n, SCHEMA_ENUM, fl, 0, 0, nm, d)
/* A Redis setting whose syntax zarisd's parser for it checks (settings.c). */
#define REDIS_SPECIAL(n, t, fl, nm, d) REDIS_ROW(n, t, fl, 0, 0, nm, d)
/* Redis's setting for a feature zarisd lacks: only DEF is taken. */
#define REDIS_REFUSED(n, t, mn, mx, d, text)                                                   \
	{                                                                                      \
		.name = n, .type = t, .flags = SCHEMA_F_REDIS, .min = mn, .max = mx, .def = d, \
		.refuse = text, .help = REDIS_HELP                                             \
	}

const struct schema_entry schema_table[] = {
	[SCHEMA_ID_PORT] = { .name = "port",
			     .type = SCHEMA_INT,
			     .flags = SCHEMA_F_IMMUTABLE,
			     .min = 0,
			     .max = 65535,
			     .def = "6379",
			     .help = "TCP port to listen on" },
	[SCHEMA_ID_BIND] = { .name = "bind",
			     .type = SCHEMA_STRING,
			     .flags = SCHEMA_F_IMMUTABLE,
			     .def = "127.0.0.1 -::1",
			     .help = "addresses to listen on, space separated",
			     .file = FILE_KEY(ZCONF_K_BIND),
			     .file_syntax = SCHEMA_FILE_ADDRS },
	[SCHEMA_ID_THREADS] = { .name = "threads",
				.type = SCHEMA_INT,
				.flags = SCHEMA_F_IMMUTABLE,
				.min = 0,
				.max = 1024,
				.def = "0",
				.help = "worker threads (0 = one per core)",
				.file = FILE_KEY(ZCONF_K_THREADS) },
	[SCHEMA_ID_CORES] = { .name = "cores",
			      .type = SCHEMA_LIST,
			      .flags = SCHEMA_F_IMMUTABLE,
			      .min = 0,
			      .max = SCHEMA_MAX_CORES - 1,
			      .def = "",
			      .help = "CPU list to pin workers to, e.g. 0-3 or 1,3",
			      .file = FILE_KEY(ZCONF_K_CORES),
			      .file_syntax = SCHEMA_FILE_CORES },
	[SCHEMA_ID_IO_BACKEND] = { .name = "io-backend",
				   .type = SCHEMA_ENUM,
				   .flags = SCHEMA_F_IMMUTABLE,
				   .names = io_backend_names,
				   .def = "auto",
				   .help = "auto|uring|epoll",
				   .file = FILE_KEY(ZCONF_K_IO_BACKEND) },
	[SCHEMA_ID_DATABASES] = { .name = "databases",
				  .type = SCHEMA_INT,
				  .flags = SCHEMA_F_IMMUTABLE,
				  .min = 1,
				  .max = 1 << 20,
				  .def = "16",
				  .help = "number of databases",
				  .file = FILE_KEY(ZCONF_K_DATABASES) },
	[SCHEMA_ID_SHARD_BITS] = { .name = "shard-bits",
				   .type = SCHEMA_INT,
				   .flags = SCHEMA_F_IMMUTABLE,
				   .min = 0,
				   .max = 14, /* a shard is a run of cluster slots: slot >> (14 - shard-bits) */
				   .def = "10",
				   .help = "log2 of the keyspace shard count" },
	[SCHEMA_ID_DIR] = { .name = "dir",
			    .type = SCHEMA_STRING,
			    .flags = SCHEMA_F_CHDIR | SCHEMA_F_FILE_RESTART,
			    .def = ".",
			    .help = "working directory for data files",
			    .file = FILE_KEY(ZCONF_K_DIR) },
	[SCHEMA_ID_LOGFILE] = { .name = "logfile",
				.type = SCHEMA_STRING,
				.flags = SCHEMA_F_IMMUTABLE,
				.def = "",
				.help = "log file (empty = stderr)",
				.file = FILE_KEY(ZCONF_K_LOGFILE) },
	[SCHEMA_ID_PIDFILE] = { .name = "pidfile",
				.type = SCHEMA_STRING,
				.flags = SCHEMA_F_IMMUTABLE,
				.def = "",
				.help = "write the PID to this file" },
	[SCHEMA_ID_TCP_BACKLOG] = { .name = "tcp-backlog",
				    .type = SCHEMA_INT,
				    .flags = SCHEMA_F_IMMUTABLE,
				    .min = 0,
				    .max = INT_MAX,
				    .def = "511",
				    .help = "listen(2) backlog" },
	[SCHEMA_ID_ENABLE_DEBUG_COMMAND] = { .name = "enable-debug-command",
					     .type = SCHEMA_ENUM,
					     .flags = SCHEMA_F_IMMUTABLE,
					     .names = protected_names,
					     .def = "no",
					     .help = "who may run DEBUG: no|yes|local (loopback clients)",
					     .file = FILE_KEY(ZCONF_K_ENABLE_DEBUG_COMMAND) },
	[SCHEMA_ID_DISABLE_THP] = { .name = "disable-thp",
				    .type = SCHEMA_BOOL,
				    .flags = SCHEMA_F_IMMUTABLE,
				    .min = 0,
				    .max = 1,
				    .def = "yes",
				    .help = "yes: no transparent huge pages for zarisd; no: huge pages for its heap",
				    .file = FILE_KEY(ZCONF_K_DISABLE_THP) },
	[SCHEMA_ID_MAXMEMORY] = { .name = "maxmemory",
				  .type = SCHEMA_MEMORY,
				  .min = 0,
				  .max = LLONG_MAX,
				  .def = "0",
				  .help = "memory limit (0 = none), e.g. 64mb",
				  .file = FILE_KEY(ZCONF_K_MAXMEMORY) },
	[SCHEMA_ID_MAXMEMORY_POLICY] = { .name = "maxmemory-policy",
					 .type = SCHEMA_ENUM,
					 .names = policy_names,
					 .names_redis_order = policy_names_redis_order,
					 .def = "noeviction",
					 .help = "eviction policy",
					 .file = FILE_KEY(ZCONF_K_MAXMEMORY_POLICY) },
	[SCHEMA_ID_MAXMEMORY_SAMPLES] = { .name = "maxmemory-samples",
					  .type = SCHEMA_INT,
					  .min = 1,
					  .max = INT_MAX,
					  .def = "5",
					  .help = "keys sampled per eviction (at most 64 are used)" },
	[SCHEMA_ID_PROTO_MAX_BULK_LEN] = { .name = "proto-max-bulk-len",
					   .type = SCHEMA_MEMORY,
					   .min = 1024 * 1024,
					   .max = LLONG_MAX,
					   .def = "536870912",
					   .help = "largest bulk string accepted" },
	[SCHEMA_ID_CLIENT_QUERY_BUFFER_LIMIT] = { .name = "client-query-buffer-limit",
						  .type = SCHEMA_MEMORY,
						  .min = 1024 * 1024,
						  .max = LLONG_MAX,
						  .def = "1073741824",
						  .help = "largest query buffer per client" },
	/* Redis's "normal 0 0 0": normal clients are never cut off for their
	 * output. A pipeline's replies no longer pile up (zarisd/net/conn.h:
	 * its requests wait while its output is over a few MB), so a limit
	 * would only cut off clients that do nothing wrong (ioredis'
	 * auto-pipelining of big GETs was cut at 256mb and sent its batch
	 * again, forever). The pubsub class is Redis's 32mb 8mb 60. */
	[SCHEMA_ID_CLIENT_OUTPUT_BUFFER_LIMIT] = { .name = "client-output-buffer-limit",
						   .type = SCHEMA_LIST,
						   .def = "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60",
						   .help = "normal <hard> <soft> <seconds>" },
	[SCHEMA_ID_MAXCLIENTS] = { .name = "maxclients",
				   .type = SCHEMA_INT,
				   .min = 1,
				   .max = UINT_MAX,
				   .def = "10000",
				   .help = "most connected clients",
				   .file = FILE_KEY(ZCONF_K_MAXCLIENTS) },
	[SCHEMA_ID_TIMEOUT] = { .name = "timeout",
				.type = SCHEMA_INT,
				.min = 0,
				.max = INT_MAX,
				.def = "0",
				.help = "close clients idle this many seconds (0 = never)",
				.file = FILE_KEY(ZCONF_K_TIMEOUT) },
	[SCHEMA_ID_TCP_KEEPALIVE] = { .name = "tcp-keepalive",
				      .type = SCHEMA_INT,
				      .min = 0,
				      .max = INT_MAX,
				      .def = "300",
				      .help = "TCP keepalive seconds (0 = off)" },
	[SCHEMA_ID_PROTECTED_MODE] = { .name = "protected-mode",
				       .type = SCHEMA_BOOL,
				       .min = 0,
				       .max = 1,
				       .def = "yes",
				       .help = "refuse non-loopback clients without a password",
				       .file = FILE_KEY(ZCONF_K_PROTECTED_MODE) },
	[SCHEMA_ID_JEMALLOC_BG_THREAD] = { .name = "jemalloc-bg-thread",
					   .type = SCHEMA_BOOL,
					   .min = 0,
					   .max = 1,
					   .def = "yes",
					   .help = "jemalloc returns freed pages to the system from a background thread",
					   .file = FILE_KEY(ZCONF_K_JEMALLOC_BG_THREAD) },
	[SCHEMA_ID_HZ] = { .name = "hz",
			   .type = SCHEMA_INT,
			   .min = 0,
			   .max = INT_MAX,
			   .def = "10",
			   .help = "timer frequency of background tasks (1 to 500)" },
	[SCHEMA_ID_LFU_LOG_FACTOR] = { .name = "lfu-log-factor",
				       .type = SCHEMA_INT,
				       .min = 0,
				       .max = INT_MAX,
				       .def = "10",
				       .help = "LFU counter logarithm factor" },
	[SCHEMA_ID_LFU_DECAY_TIME] = { .name = "lfu-decay-time",
				       .type = SCHEMA_INT,
				       .min = 0,
				       .max = INT_MAX,
				       .def = "1",
				       .help = "LFU counter decay minutes" },
	[SCHEMA_ID_SLOWLOG_LOG_SLOWER_THAN] = { .name = "slowlog-log-slower-than",
						.type = SCHEMA_INT,
						.min = -1,
						.max = LLONG_MAX,
						.def = "10000",
						.help = "slow log threshold in microseconds" },
	[SCHEMA_ID_SLOWLOG_MAX_LEN] = { .name = "slowlog-max-len",
					.type = SCHEMA_INT,
					.min = 0,
					.max = LONG_MAX,
					.def = "128",
					.help = "slow log entries kept" },
	[SCHEMA_ID_LATENCY_MONITOR_THRESHOLD] = { .name = "latency-monitor-threshold",
						  .type = SCHEMA_INT,
						  .min = 0,
						  .max = LLONG_MAX,
						  .def = "0",
						  .help = "latency monitor threshold in ms" },
	[SCHEMA_ID_LOGLEVEL] = { .name = "loglevel",
				 .type = SCHEMA_ENUM,
				 .names = loglevel_names,
				 .def = "notice",
				 .help = "debug|verbose|notice|warning",
				 .file = FILE_KEY(ZCONF_K_LOGLEVEL) },
	[SCHEMA_ID_ACTIVE_EXPIRE_EFFORT] = { .name = "active-expire-effort",
					     .type = SCHEMA_INT,
					     .min = 1,
					     .max = 10,
					     .def = "1",
					     .help = "active expiry effort 1-10" },
	[SCHEMA_ID_REQUIREPASS] = { .name = "requirepass",
				    .type = SCHEMA_STRING,
				    .flags = SCHEMA_F_SENSITIVE,
				    .def = "",
				    .help = "password clients must AUTH with",
				    .file = FILE_KEY(ZCONF_K_REQUIREPASS) },
	/* pub/sub: class letters, as Redis (zarisd/server/notify_flags.h) */
	[SCHEMA_ID_NOTIFY_KEYSPACE_EVENTS] = { .name = "notify-keyspace-events",
					       .type = SCHEMA_LIST,
					       .def = "",
					       .help = "keyspace notification classes, e.g. KEA" },
	/* --- hashes and sets (cmd_hash.c, cmd_set.c); Redis 7.0's defaults --- */
	[SCHEMA_ID_HASH_MAX_LISTPACK_ENTRIES] = { .name = "hash-max-listpack-entries",
						  .type = SCHEMA_INT,
						  .min = 0,
						  .max = LONG_MAX,
						  .def = "512",
						  .help = "most fields of a listpack-encoded hash" },
	[SCHEMA_ID_HASH_MAX_LISTPACK_VALUE] = { .name = "hash-max-listpack-value",
						.type = SCHEMA_MEMORY,
						.min = 0,
						.max = LONG_MAX,
						.def = "64",
						.help = "longest field or value of a listpack-encoded hash" },
	[SCHEMA_ID_HASH_MAX_ZIPLIST_ENTRIES] = { .name = "hash-max-ziplist-entries",
						 .type = SCHEMA_INT,
						 .min = 0,
						 .max = LONG_MAX,
						 .alias_of = "hash-max-listpack-entries",
						 .help = "alias of hash-max-listpack-entries" },
	[SCHEMA_ID_HASH_MAX_ZIPLIST_VALUE] = { .name = "hash-max-ziplist-value",
					       .type = SCHEMA_MEMORY,
					       .min = 0,
					       .max = LONG_MAX,
					       .alias_of = "hash-max-listpack-value",
					       .help = "alias of hash-max-listpack-value" },
	[SCHEMA_ID_SET_MAX_INTSET_ENTRIES] = { .name = "set-max-intset-entries",
					       .type = SCHEMA_INT,
					       .min = 0,
					       .max = LONG_MAX,
					       .def = "512",
					       .help = "most members of an intset-encoded set" },
	/* --- bitmaps and HyperLogLog (cmd_bitmap.c, cmd_hll.c); Redis 7.0's defaults --- */
	[SCHEMA_ID_HLL_SPARSE_MAX_BYTES] = { .name = "hll-sparse-max-bytes",
					     .type = SCHEMA_MEMORY,
					     .min = 0,
					     .max = LONG_MAX,
					     .def = "3000",
					     .help = "largest sparse HyperLogLog before it turns dense" },
	/* --- sorted sets (cmd_zset.c); Redis 7.0's defaults and alias names --- */
	[SCHEMA_ID_ZSET_MAX_LISTPACK_ENTRIES] = { .name = "zset-max-listpack-entries",
						  .type = SCHEMA_INT,
						  .min = 0,
						  .max = LONG_MAX,
						  .def = "128",
						  .help = "most members of a listpack-encoded sorted set" },
	[SCHEMA_ID_ZSET_MAX_LISTPACK_VALUE] = { .name = "zset-max-listpack-value",
						.type = SCHEMA_MEMORY,
						.min = 0,
						.max = LONG_MAX,
						.def = "64",
						.help = "longest member of a listpack-encoded sorted set" },
	[SCHEMA_ID_ZSET_MAX_ZIPLIST_ENTRIES] = { .name = "zset-max-ziplist-entries",
						 .type = SCHEMA_INT,
						 .min = 0,
						 .max = LONG_MAX,
						 .alias_of = "zset-max-listpack-entries",
						 .help = "alias of zset-max-listpack-entries" },
	[SCHEMA_ID_ZSET_MAX_ZIPLIST_VALUE] = { .name = "zset-max-ziplist-value",
					       .type = SCHEMA_MEMORY,
					       .min = 0,
					       .max = LONG_MAX,
					       .alias_of = "zset-max-listpack-value",
					       .help = "alias of zset-max-listpack-value" },
	/* --- lists (cmd_list.c); Redis 7.0's default and alias name --- */
	[SCHEMA_ID_LIST_MAX_LISTPACK_SIZE] = { .name = "list-max-listpack-size",
					       .type = SCHEMA_INT,
					       .min = INT_MIN,
					       .max = INT_MAX,
					       .def = "-2",
					       .help = "list node size: -1..-5 = 4..64 KB per node, N > 0 = N entries per node" },
	[SCHEMA_ID_LIST_MAX_ZIPLIST_SIZE] = { .name = "list-max-ziplist-size",
					      .type = SCHEMA_INT,
					      .min = INT_MIN,
					      .max = INT_MAX,
					      .alias_of = "list-max-listpack-size",
					      .help = "alias of list-max-listpack-size" },
	/* --- persistence (persist/) --- */
	[SCHEMA_ID_DBFILENAME] = { .name = "dbfilename",
				   .type = SCHEMA_STRING,
				   .flags = SCHEMA_F_BASENAME,
				   .def = "dump.zdb",
				   .help = "snapshot file name (in dir)" },
	[SCHEMA_ID_APPENDFILENAME] = { .name = "appendfilename",
				       .type = SCHEMA_STRING,
				       .flags = SCHEMA_F_IMMUTABLE,
				       .def = "appendonly.aof",
				       .help = "append-only log segment name prefix" },
	[SCHEMA_ID_APPENDDIRNAME] = { .name = "appenddirname",
				      .type = SCHEMA_STRING,
				      .flags = SCHEMA_F_IMMUTABLE,
				      .def = "appendonlydir",
				      .help = "append-only log directory (in dir)" },
	[SCHEMA_ID_APPENDONLY] = { .name = "appendonly",
				   .type = SCHEMA_BOOL,
				   .min = 0,
				   .max = 1,
				   .def = "no",
				   .help = "yes|no: keep the append-only log",
				   .file = FILE_KEY(ZCONF_K_APPENDONLY) },
	[SCHEMA_ID_APPENDFSYNC] = { .name = "appendfsync",
				    .type = SCHEMA_ENUM,
				    .names = appendfsync_names,
				    .names_redis_order = appendfsync_names_redis_order,
				    .def = "everysec",
				    .help = "always|everysec|no: when the log is fsynced",
				    .file = FILE_KEY(ZCONF_K_APPENDFSYNC) },
	[SCHEMA_ID_SAVE] = { .name = "save",
			     .type = SCHEMA_LIST,
			     .def = "3600 1 300 100 60 10000",
			     .help = "snapshot rules: \"<seconds> <changes> ...\" (\"\" = none)",
			     .file = FILE_KEY(ZCONF_K_SAVE),
			     .check = schema_save_rules_valid },
	[SCHEMA_ID_AUTO_AOF_REWRITE_PERCENTAGE] = { .name = "auto-aof-rewrite-percentage",
						    .type = SCHEMA_INT,
						    .min = 0,
						    .max = INT_MAX,
						    .def = "100",
						    .help = "rewrite the log when it grew this % over the last snapshot (0 = never)" },
	[SCHEMA_ID_AUTO_AOF_REWRITE_MIN_SIZE] = { .name = "auto-aof-rewrite-min-size",
						  .type = SCHEMA_MEMORY,
						  .min = 0,
						  .max = LLONG_MAX,
						  .def = "67108864",
						  .help = "smallest log size that triggers an automatic rewrite" },
	[SCHEMA_ID_AOF_LOAD_TRUNCATED] = { .name = "aof-load-truncated",
					   .type = SCHEMA_BOOL,
					   .min = 0,
					   .max = 1,
					   .def = "yes",
					   .help = "yes: trim a truncated log tail at start-up, no: refuse to start" },
	/* --- replication (zarisd/repl/): runtime, relaxed --- */
	[SCHEMA_ID_REPLICA_READ_ONLY] = { .name = "replica-read-only",
					  .type = SCHEMA_BOOL,
					  .min = 0,
					  .max = 1,
					  .def = "yes",
					  .help = "a replica refuses writes with -READONLY" },
	[SCHEMA_ID_REPLICA_SERVE_STALE_DATA] = { .name = "replica-serve-stale-data",
						 .type = SCHEMA_BOOL,
						 .min = 0,
						 .max = 1,
						 .def = "yes",
						 .help = "no: a replica whose link is down answers -MASTERDOWN" },
	[SCHEMA_ID_MIN_REPLICAS_TO_WRITE] = { .name = "min-replicas-to-write",
					      .type = SCHEMA_INT,
					      .min = 0,
					      .max = INT_MAX,
					      .def = "0",
					      .help = "refuse writes with fewer good replicas than this (0 = never)" },
	[SCHEMA_ID_MIN_REPLICAS_MAX_LAG] = { .name = "min-replicas-max-lag",
					     .type = SCHEMA_INT,
					     .min = 0,
					     .max = INT_MAX,
					     .def = "10",
					     .help = "seconds since its last ack for a replica to count as good" },
	[SCHEMA_ID_REPL_BACKLOG_SIZE] = { .name = "repl-backlog-size",
					  .type = SCHEMA_MEMORY,
					  .min = 1,
					  .max = LLONG_MAX,
					  .def = "1048576",
					  .help = "history kept for partial resyncs" },
	[SCHEMA_ID_REPL_TIMEOUT] = { .name = "repl-timeout",
				     .type = SCHEMA_INT,
				     .min = 1,
				     .max = INT_MAX,
				     .def = "60",
				     .help = "seconds of silence after which a replication link is dropped" },
	[SCHEMA_ID_MASTERAUTH] = { .name = "masterauth",
				   .type = SCHEMA_STRING,
				   .flags = SCHEMA_F_SENSITIVE,
				   .def = "",
				   .help = "password a replica AUTHs with at its primary" },
	[SCHEMA_ID_REPLICA_ACK] = { .name = "replica-ack",
				    .type = SCHEMA_INT,
				    .min = 0,
				    .max = INT_MAX,
				    .def = "0",
				    .help = "a write is acknowledged once this many replicas applied it (0 = asynchronous)",
				    .file = FILE_KEY(ZCONF_K_REPLICA_ACK) },
	[SCHEMA_ID_REPLICA_ACK_TIMEOUT] = { .name = "replica-ack-timeout",
					    .type = SCHEMA_INT,
					    .min = 1,
					    .max = INT_MAX,
					    .def = "1000",
					    .help = "ms a held write waits for its replicas before the client gets -NOREPLICAS",
					    .file = FILE_KEY(ZCONF_K_REPLICA_ACK_TIMEOUT) },
	[SCHEMA_ID_SLAVE_READ_ONLY] = { .name = "slave-read-only",
					.type = SCHEMA_BOOL,
					.min = 0,
					.max = 1,
					.alias_of = "replica-read-only",
					.help = "alias of replica-read-only" },
	[SCHEMA_ID_SLAVE_SERVE_STALE_DATA] = { .name = "slave-serve-stale-data",
					       .type = SCHEMA_BOOL,
					       .min = 0,
					       .max = 1,
					       .alias_of = "replica-serve-stale-data",
					       .help = "alias of replica-serve-stale-data" },
	[SCHEMA_ID_MIN_SLAVES_TO_WRITE] = { .name = "min-slaves-to-write",
					    .type = SCHEMA_INT,
					    .min = 0,
					    .max = INT_MAX,
					    .alias_of = "min-replicas-to-write",
					    .help = "alias of min-replicas-to-write" },
	[SCHEMA_ID_MIN_SLAVES_MAX_LAG] = { .name = "min-slaves-max-lag",
					   .type = SCHEMA_INT,
					   .min = 0,
					   .max = INT_MAX,
					   .alias_of = "min-replicas-max-lag",
					   .help = "alias of min-replicas-max-lag" },
	[SCHEMA_ID_CLUSTER_ENABLED] = { .name = "cluster-enabled",
					.type = SCHEMA_BOOL,
					.flags = SCHEMA_F_IMMUTABLE,
					.min = 0,
					.max = 1,
					.def = "no",
					.help = "Redis Cluster protocol: slots, MOVED, CLUSTER (the topology is pushed)" },
	[SCHEMA_ID_WRITE_LEASE] = { .name = "write-lease",
				    .type = SCHEMA_BOOL,
				    .flags = SCHEMA_F_IMMUTABLE,
				    .min = 0,
				    .max = 1,
				    .def = "no",
				    .help = "writes only while the supervisor's CLUSTER LEASE holds (starts fenced)" },
	/* --- Redis 7.0's other settings: taken with Redis's checks and texts,
	 * shown by CONFIG GET, not acted on (zarisd has no replication, cluster
	 * bus, TLS, scripting, streams, defrag, lazy free, ACL file ... yet) --- */
	REDIS_BOOL("rdbchecksum", SCHEMA_F_IMMUTABLE, "yes"),
	REDIS_BOOL("daemonize", SCHEMA_F_IMMUTABLE, "no"),
	REDIS_BOOL("io-threads-do-reads", SCHEMA_F_IMMUTABLE, "no"),
	REDIS_BOOL("always-show-logo", SCHEMA_F_IMMUTABLE, "no"),
	REDIS_BOOL("rdbcompression", 0, "yes"),
	REDIS_BOOL("rdb-del-sync-files", 0, "no"),
	REDIS_BOOL("activerehashing", 0, "yes"),
	REDIS_BOOL("stop-writes-on-bgsave-error", 0, "yes"),
	REDIS_BOOL("set-proc-title", SCHEMA_F_IMMUTABLE, "yes"),
	REDIS_BOOL("dynamic-hz", 0, "yes"),
	REDIS_BOOL("lazyfree-lazy-eviction", 0, "no"),
	REDIS_BOOL("lazyfree-lazy-expire", 0, "no"),
	REDIS_BOOL("lazyfree-lazy-server-del", 0, "no"),
	REDIS_BOOL("lazyfree-lazy-user-del", 0, "no"),
	REDIS_BOOL("lazyfree-lazy-user-flush", 0, "no"),
	REDIS_BOOL("repl-disable-tcp-nodelay", 0, "no"),
	REDIS_BOOL("repl-diskless-sync", 0, "yes"),
	REDIS_BOOL("aof-rewrite-incremental-fsync", 0, "yes"),
	REDIS_BOOL("no-appendfsync-on-rewrite", 0, "no"),
	REDIS_BOOL("cluster-require-full-coverage", 0, "yes"),
	REDIS_BOOL("rdb-save-incremental-fsync", 0, "yes"),
	REDIS_BOOL("aof-use-rdb-preamble", 0, "yes"),
	REDIS_BOOL("aof-timestamp-enabled", 0, "no"),
	REDIS_BOOL("cluster-replica-no-failover", 0, "no"),
	REDIS_ALIAS("cluster-slave-no-failover", "cluster-replica-no-failover", SCHEMA_BOOL, 0, 0, 1, NULL),
	REDIS_BOOL("replica-lazy-flush", 0, "no"),
	REDIS_ALIAS("slave-lazy-flush", "replica-lazy-flush", SCHEMA_BOOL, 0, 0, 1, NULL),
	REDIS_BOOL("replica-ignore-maxmemory", 0, "yes"),
	REDIS_ALIAS("slave-ignore-maxmemory", "replica-ignore-maxmemory", SCHEMA_BOOL, 0, 0, 1, NULL),
	REDIS_REFUSED("activedefrag", SCHEMA_BOOL, 0, 1, "no",
		      "Active defragmentation cannot be enabled: it requires a Redis server compiled with a "
		      "modified Jemalloc like the one shipped by default with the Redis source distribution"),
	REDIS_BOOL("syslog-enabled", SCHEMA_F_IMMUTABLE, "no"),
	REDIS_BOOL("cluster-allow-reads-when-down", 0, "no"),
	REDIS_BOOL("cluster-allow-pubsubshard-when-down", 0, "yes"),
	REDIS_BOOL("crash-log-enabled", 0, "yes"),
	REDIS_BOOL("crash-memcheck-enabled", 0, "yes"),
	REDIS_BOOL("use-exit-on-panic", SCHEMA_F_HIDDEN, "no"),
	REDIS_BOOL("cluster-allow-replica-migration", 0, "yes"),
	REDIS_BOOL("replica-announced", 0, "yes"),
	REDIS_BOOL("latency-tracking", 0, "yes"),
	REDIS_BOOL("aof-disable-auto-gc", 0, "no"),
	REDIS_BOOL("replica-ignore-disk-write-errors", 0, "no"),
	REDIS_STRING("aclfile", SCHEMA_F_IMMUTABLE, ""),
	REDIS_STRING("unixsocket", SCHEMA_F_IMMUTABLE, ""),
	REDIS_STRING("replica-announce-ip", 0, ""),
	REDIS_ALIAS("slave-announce-ip", "replica-announce-ip", SCHEMA_STRING, 0, 0, 0, NULL),
	REDIS_STRING("masteruser", SCHEMA_F_SENSITIVE, ""),
	REDIS_STRING("cluster-announce-ip", 0, ""),
	REDIS_STRING("cluster-config-file", SCHEMA_F_IMMUTABLE, "nodes.conf"),
	REDIS_SPECIAL("cluster-announce-hostname", SCHEMA_STRING, 0, NULL, ""),
	REDIS_STRING("syslog-ident", SCHEMA_F_IMMUTABLE, "redis"),
	REDIS_STRING("server_cpulist", SCHEMA_F_IMMUTABLE, ""),
	REDIS_STRING("bio_cpulist", SCHEMA_F_IMMUTABLE, ""),
	REDIS_STRING("aof_rewrite_cpulist", SCHEMA_F_IMMUTABLE, ""),
	REDIS_STRING("bgsave_cpulist", SCHEMA_F_IMMUTABLE, ""),
	REDIS_STRING("ignore-warnings", 0, ""),
	REDIS_SPECIAL("proc-title-template", SCHEMA_STRING, 0, NULL, "{title} {listen-addr} {server-mode}"),
	REDIS_STRING("bind-source-addr", 0, ""),
	REDIS_ENUM("supervised", SCHEMA_F_IMMUTABLE, supervised_names, "no"),
	REDIS_ENUM("syslog-facility", SCHEMA_F_IMMUTABLE, syslog_facility_names, "local0"),
	REDIS_ENUM("repl-diskless-load", 0, diskless_load_names, "disabled"),
	REDIS_SPECIAL("oom-score-adj", SCHEMA_ENUM, 0, oom_adj_names, "no"),
	REDIS_ENUM("acl-pubsub-default", 0, acl_pubsub_names, "resetchannels"),
	REDIS_ENUM("sanitize-dump-payload", 0, sanitize_names, "no"),
	REDIS_ENUM("enable-protected-configs", SCHEMA_F_IMMUTABLE, protected_names, "no"),
	REDIS_ENUM("enable-module-command", SCHEMA_F_IMMUTABLE, protected_names, "no"),
	REDIS_ENUM("cluster-preferred-endpoint-type", 0, endpoint_names, "ip"),
	REDIS_ENUM("propagation-error-behavior", 0, propagation_names, "ignore"),
	REDIS_SPECIAL("shutdown-on-sigint", SCHEMA_LIST, 0, shutdown_names, "default"),
	REDIS_SPECIAL("shutdown-on-sigterm", SCHEMA_LIST, 0, shutdown_names, "default"),
	REDIS_INT("io-threads", SCHEMA_F_IMMUTABLE, 1, 128, "1"),
	REDIS_INT("cluster-replica-validity-factor", 0, 0, INT_MAX, "10"),
	REDIS_ALIAS("cluster-slave-validity-factor", "cluster-replica-validity-factor", SCHEMA_INT, 0, 0,
		    INT_MAX, NULL),
	REDIS_INT("cluster-migration-barrier", 0, 0, INT_MAX, "1"),
	REDIS_INT("active-defrag-cycle-min", 0, 1, 99, "1"),
	REDIS_INT("active-defrag-cycle-max", 0, 1, 99, "25"),
	REDIS_INT("active-defrag-threshold-lower", 0, 0, 1000, "10"),
	REDIS_INT("active-defrag-threshold-upper", 0, 0, 1000, "100"),
	REDIS_INT("replica-priority", 0, 0, INT_MAX, "100"),
	REDIS_ALIAS("slave-priority", "replica-priority", SCHEMA_INT, 0, 0, INT_MAX, NULL),
	REDIS_INT("repl-diskless-sync-delay", 0, 0, INT_MAX, "5"),
	REDIS_INT("maxmemory-eviction-tenacity", 0, 0, 100, "10"),
	REDIS_INT("replica-announce-port", 0, 0, 65535, "0"),
	REDIS_ALIAS("slave-announce-port", "replica-announce-port", SCHEMA_INT, 0, 0, 65535, NULL),
	REDIS_INT("cluster-port", SCHEMA_F_IMMUTABLE, 0, 65535, "0"),
	REDIS_INT("cluster-announce-bus-port", 0, 0, 65535, "0"),
	REDIS_INT("cluster-announce-port", 0, 0, 65535, "0"),
	REDIS_INT("cluster-announce-tls-port", 0, 0, 65535, "0"),
	REDIS_INT("repl-ping-replica-period", 0, 1, INT_MAX, "10"),
	REDIS_ALIAS("repl-ping-slave-period", "repl-ping-replica-period", SCHEMA_INT, 0, 1, INT_MAX, NULL),
	REDIS_INT("list-compress-depth", 0, 0, INT_MAX, "0"),
	REDIS_INT("rdb-key-save-delay", SCHEMA_F_HIDDEN, INT_MIN, INT_MAX, "0"),
	REDIS_INT("key-load-delay", SCHEMA_F_HIDDEN, INT_MIN, INT_MAX, "0"),
	REDIS_INT("watchdog-period", SCHEMA_F_HIDDEN, 0, INT_MAX, "0"),
	REDIS_INT("shutdown-timeout", 0, 0, INT_MAX, "10"),
	REDIS_INT("repl-diskless-sync-max-replicas", 0, 0, INT_MAX, "0"),
	REDIS_SPECIAL("unixsocketperm", SCHEMA_SPECIAL, SCHEMA_F_IMMUTABLE, NULL, "0"),
	REDIS_INT("socket-mark-id", SCHEMA_F_IMMUTABLE, 0, UINT_MAX, "0"),
	REDIS_INT("active-defrag-max-scan-fields", 0, 1, LONG_MAX, "1000"),
	REDIS_INT("acllog-max-len", 0, 0, LONG_MAX, "128"),
	REDIS_INT("busy-reply-threshold", 0, 0, LONG_MAX, "5000"),
	REDIS_ALIAS("lua-time-limit", "busy-reply-threshold", SCHEMA_INT, 0, 0, LONG_MAX, NULL),
	REDIS_INT("cluster-node-timeout", 0, 0, LLONG_MAX, "15000"),
	REDIS_INT("stream-node-max-entries", 0, 0, LLONG_MAX, "100"),
	REDIS_ROW("cluster-link-sendbuf-limit", SCHEMA_UMEMORY, 0, 0, 0, NULL, "0"),
	REDIS_MEMORY("active-defrag-ignore-bytes", 0, 1, LLONG_MAX, "104857600"),
	REDIS_MEMORY("stream-node-max-bytes", 0, 0, LONG_MAX, "4096"),
	REDIS_INT("tracking-table-max-keys", 0, 0, LONG_MAX, "1000000"),
	REDIS_SPECIAL("maxmemory-clients", SCHEMA_SPECIAL, 0, NULL, "0"),
	REDIS_INT("repl-backlog-ttl", 0, 0, LONG_MAX, "3600"),
	REDIS_INT("loading-process-events-interval-bytes", SCHEMA_F_HIDDEN, 1024, INT_MAX, "2097152"),
	REDIS_REFUSED("tls-port", SCHEMA_INT, 0, 65535, "0", TLS_REFUSED),
	REDIS_INT("tls-session-cache-size", 0, 0, INT_MAX, "20480"),
	REDIS_INT("tls-session-cache-timeout", 0, 0, INT_MAX, "300"),
	REDIS_REFUSED("tls-cluster", SCHEMA_BOOL, 0, 1, "no", TLS_REFUSED),
	REDIS_REFUSED("tls-replication", SCHEMA_BOOL, 0, 1, "no", TLS_REFUSED),
	REDIS_ENUM("tls-auth-clients", 0, tls_auth_names, "yes"),
	REDIS_BOOL("tls-prefer-server-ciphers", 0, "no"),
	REDIS_BOOL("tls-session-caching", 0, "yes"),
	REDIS_STRING("tls-cert-file", 0, ""),
	REDIS_STRING("tls-key-file", 0, ""),
	REDIS_STRING("tls-key-file-pass", 0, ""),
	REDIS_STRING("tls-client-cert-file", 0, ""),
	REDIS_STRING("tls-client-key-file", 0, ""),
	REDIS_STRING("tls-client-key-file-pass", 0, ""),
	REDIS_STRING("tls-dh-params-file", 0, ""),
	REDIS_STRING("tls-ca-cert-file", 0, ""),
	REDIS_STRING("tls-ca-cert-dir", 0, ""),
	REDIS_STRING("tls-protocols", 0, ""),
	REDIS_STRING("tls-ciphers", 0, ""),
	REDIS_STRING("tls-ciphersuites", 0, ""),
	REDIS_SPECIAL("oom-score-adj-values", SCHEMA_LIST, 0, NULL, "0 200 800"),
	REDIS_SPECIAL("replicaof", SCHEMA_LIST, SCHEMA_F_IMMUTABLE, NULL, ""),
	{ .name = "slaveof",
	  .type = SCHEMA_LIST,
	  .flags = SCHEMA_F_REDIS | SCHEMA_F_IMMUTABLE,
	  .alias_of = "replicaof",
	  .help = REDIS_HELP },
	REDIS_SPECIAL("latency-tracking-info-percentiles", SCHEMA_LIST, 0, NULL, "50 99 99.9"),
};

const size_t schema_count = sizeof(schema_table) / sizeof(schema_table[0]);

const struct schema_entry *schema_find(const char *name)
{
	for (size_t i = 0; i < schema_count; i++)
		if (!strcasecmp(schema_table[i].name, name))
			return &schema_table[i];
	return NULL;
}

size_t schema_index(const struct schema_entry *e)
{
	return (size_t)(e - schema_table);
}

const struct schema_entry *schema_primary(const struct schema_entry *e)
{
	const struct schema_entry *p = e->alias_of ? schema_find(e->alias_of) : NULL;
	return p ? p : e;
}

const struct schema_entry *schema_file_entry(int key)
{
	for (size_t i = 0; i < schema_count; i++)
		if (schema_table[i].file && schema_table[i].file - 1 == key)
			return &schema_table[i];
	return NULL;
}

int schema_file_key(const struct schema_entry *e)
{
	return e->file ? e->file - 1 : -1;
}

bool schema_is_live(const struct schema_entry *e)
{
	return !(e->flags & (SCHEMA_F_IMMUTABLE | SCHEMA_F_FILE_RESTART));
}

bool schema_save_rules_valid(const char *value)
{
	int n = 0;
	const char *p = value;
	while (*p) {
		while (*p == ' ')
			p++;
		if (!*p)
			break;
		char *end;
		long long x = strtoll(p, &end, 10);
		if (end == p || x < 0 || (*end && *end != ' '))
			return false;
		p = end;
		n++;
	}
	return n % 2 == 0;
}
