/* settings — see settings.h. One row per setting: its Redis name, how its
 * value is parsed and shown, and whether CONFIG SET may change it. */
#include "zarisd/server/settings.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "zarisd/server/notify_flags.h"
#include "zarisd/core/log.h"
#include "zarisd/core/mem.h"
#include "zarisd/core/util.h"
#include "zarisd/store/store.h"

enum setting_kind {
	SK_INT,		 /* _Atomic int, decimal */
	SK_LL,		 /* _Atomic long long, decimal */
	SK_MEMORY,	 /* _Atomic long long, accepts 64mb / 1gb */
	SK_BOOL,	 /* _Atomic int, yes/no */
	SK_ENUM,	 /* _Atomic int, one of names[] */
	SK_STRING,	 /* char *, under s->lock */
	SK_PLAIN_INT,	 /* int, start-up only */
	SK_PLAIN_STRING, /* char *, start-up only */
	SK_SPECIAL,	 /* parse/show functions (SF_REDIS rows: canon) */
	SK_UMEMORY,	 /* SF_REDIS rows only: an unsigned memory value, 0 to 2^64 - 1 */
};

#define SF_IMMUTABLE 0x1 /* start-up only: CONFIG SET refuses */
#define SF_SENSITIVE 0x2 /* redact in logs */
#define SF_CHDIR 0x4	 /* dir: CONFIG SET changes the working directory; shows getcwd() */
#define SF_BASENAME 0x8	 /* a file name, not a path (dbfilename) */
#define SF_REDIS 0x10	 /* Redis's setting that zarisd takes and shows but does not act on */
#define SF_HIDDEN 0x20	 /* Redis's HIDDEN_CONFIG: CONFIG GET shows it for its exact name only */

struct setting;
typedef int (*setting_parse_fn)(struct settings *s, const struct setting *row, const char *v, char *err,
				size_t errlen);
typedef void (*setting_show_fn)(struct settings *s, char *buf, size_t size);
/* SF_REDIS special rows: V checked as Redis does and written to OUT as
 * CONFIG GET shows it; 0, or -EINVAL with Redis's text in ERR. */
typedef int (*setting_canon_fn)(const struct setting *row, const char *v, char *out, size_t outlen, char *err,
				size_t errlen);

struct setting {
	const char *name;
	enum setting_kind kind;
	size_t offset;
	unsigned flags;
	long long min, max;
	const char *const *names; /* SK_ENUM */
	setting_parse_fn parse;	  /* SK_SPECIAL */
	setting_show_fn show;	  /* SK_SPECIAL */
	const char *help;
	/* SF_REDIS rows: the value is kept as CONFIG GET shows it
	 * (s->redis_only, by the row index of the row itself or of ALIAS_OF) */
	const char *def;	/* the value at start, as CONFIG GET shows it */
	const char *alias_of;	/* Redis's alias (slaveof): the row whose value it shares */
	const char *refuse;	/* any value but DEF is refused with this text (Redis's own
				 * error where it cannot do it either: TLS, defrag) */
	setting_canon_fn canon; /* SK_SPECIAL */
};

/* indexed by enum aof_fsync */
static const char *const appendfsync_names[] = { "always", "everysec", "no", NULL };
static const char *const appendfsync_names_redis_order[] = { "everysec", "always", "no", NULL };
static int parse_save(struct settings *s, const struct setting *row, const char *v, char *err, size_t errlen);
static void show_save(struct settings *s, char *buf, size_t size);
static const char *const io_backend_names[] = { "auto", "uring", "epoll", NULL };
/* indexed by enum settings_protected */
static const char *const protected_names[] = { "no", "yes", "local", NULL };
static const char *const yesno_names[] = { "no", "yes", NULL };
static const char *const loglevel_names[] = { "debug", "verbose", "notice", "warning", NULL };
static const char *const policy_names[] = { "noeviction",      "allkeys-lru",  "allkeys-lfu",
					    "allkeys-random",  "volatile-lru", "volatile-lfu",
					    "volatile-random", "volatile-ttl", NULL };
static const char *const policy_names_redis_order[] = { "volatile-lru",	  "volatile-lfu", "volatile-random",
							"volatile-ttl",	  "allkeys-lru",  "allkeys-lfu",
							"allkeys-random", "noeviction",	  NULL };

static int parse_cores(struct settings *s, const struct setting *row, const char *v, char *err,
		       size_t errlen);
static void show_cores(struct settings *s, char *buf, size_t size);
static int parse_obuf(struct settings *s, const struct setting *row, const char *v, char *err, size_t errlen);
static void show_obuf(struct settings *s, char *buf, size_t size);
static int parse_notify(struct settings *s, const struct setting *row, const char *v, char *err,
			size_t errlen);
static void show_notify(struct settings *s, char *buf, size_t size);
static int parse_hz(struct settings *s, const struct setting *row, const char *v, char *err, size_t errlen);
static int redis_set(struct settings *s, const struct setting *row, const char *value, bool starting,
		     char *err, size_t errlen);
static void show_hz(struct settings *s, char *buf, size_t size);

/* Redis's other settings (SF_REDIS rows), in Redis 7.0's config.c order */
static const char *const supervised_names[] = { "upstart", "systemd", "auto", "no", NULL };
static const char *const syslog_facility_names[] = { "user",   "local0", "local1", "local2", "local3",
						     "local4", "local5", "local6", "local7", NULL };
static const char *const diskless_load_names[] = { "disabled", "on-empty-db", "swapdb", NULL };
static const char *const acl_pubsub_names[] = { "allchannels", "resetchannels", NULL };
static const char *const sanitize_names[] = { "no", "yes", "clients", NULL };
static const char *const endpoint_names[] = { "ip", "hostname", "unknown-endpoint", NULL };
static const char *const propagation_names[] = { "ignore", "panic", "panic-on-replicas", NULL };
static const char *const tls_auth_names[] = { "no", "yes", "optional", NULL };
static const char *const oom_adj_names[] = { "no", "yes", "relative", "absolute", NULL };
/* indexed by bit: Redis's SHUTDOWN_SAVE, _NOSAVE, _NOW, _FORCE after "default" (0) */
static const char *const shutdown_names[] = { "default", "save", "nosave", "now", "force", NULL };
static int canon_percent_memory(const struct setting *row, const char *v, char *out, size_t outlen, char *err,
				size_t errlen);
static int canon_backlog(const struct setting *row, const char *v, char *out, size_t outlen, char *err,
			 size_t errlen);
static int canon_octal(const struct setting *row, const char *v, char *out, size_t outlen, char *err,
		       size_t errlen);
static int canon_oom_adj(const struct setting *row, const char *v, char *out, size_t outlen, char *err,
			 size_t errlen);
static int canon_shutdown(const struct setting *row, const char *v, char *out, size_t outlen, char *err,
			  size_t errlen);
static int canon_oom_values(const struct setting *row, const char *v, char *out, size_t outlen, char *err,
			    size_t errlen);
static int canon_percentiles(const struct setting *row, const char *v, char *out, size_t outlen, char *err,
			     size_t errlen);
static int canon_replicaof(const struct setting *row, const char *v, char *out, size_t outlen, char *err,
			   size_t errlen);
static int canon_hostname(const struct setting *row, const char *v, char *out, size_t outlen, char *err,
			  size_t errlen);
static int canon_proc_title(const struct setting *row, const char *v, char *out, size_t outlen, char *err,
			    size_t errlen);

#define REDIS_HELP "Redis's setting: taken and shown, no effect in zarisd"
#define TLS_REFUSED "Unable to update TLS configuration. Check server logs."
/* An SF_REDIS row: NAME, its kind, flags, range, choices and default. */
#define REDIS_ROW(name, kind, flags, min, max, names, def)                                                   \
	{                                                                                                    \
		name, kind, 0, SF_REDIS | (flags), min, max, names, NULL, NULL, REDIS_HELP, def, NULL, NULL, \
			NULL                                                                                 \
	}
/* Redis's alias NAME of the SF_REDIS row OF (same kind, range and flags). */
#define REDIS_ALIAS(name, of, kind, flags, min, max, names)                                                 \
	{                                                                                                   \
		name, kind, 0, SF_REDIS | (flags), min, max, names, NULL, NULL, REDIS_HELP, NULL, of, NULL, \
			NULL                                                                                \
	}
#define REDIS_BOOL(name, flags, def) REDIS_ROW(name, SK_BOOL, flags, 0, 1, NULL, def)
#define REDIS_INT(name, flags, min, max, def) REDIS_ROW(name, SK_LL, flags, min, max, NULL, def)
#define REDIS_MEMORY(name, flags, min, max, def) REDIS_ROW(name, SK_MEMORY, flags, min, max, NULL, def)
#define REDIS_STRING(name, flags, def) REDIS_ROW(name, SK_STRING, flags, 0, 0, NULL, def)
#define REDIS_ENUM(name, flags, names, def) REDIS_ROW(name, SK_ENUM, flags, 0, 0, names, def)
#define REDIS_SPECIAL(name, flags, canon, names, def)                                                    \
	{                                                                                                \
		name, SK_SPECIAL, 0, SF_REDIS | (flags), 0, 0, names, NULL, NULL, REDIS_HELP, def, NULL, \
			NULL, canon                                                                      \
	}
/* Redis's setting for a feature zarisd lacks: only DEF is taken. */
#define REDIS_REFUSED(name, kind, min, max, def, text)                                                 \
	{                                                                                              \
		name, kind, 0, SF_REDIS, min, max, NULL, NULL, NULL, REDIS_HELP, def, NULL, text, NULL \
	}

#define OFF(field) offsetof(struct settings, field)
/* zarisd's own rows leave the SF_REDIS fields (def ... canon) out: NULL */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
static const struct setting setting_rows[] = {
	{ "port", SK_PLAIN_INT, OFF(port), SF_IMMUTABLE, 0, 65535, NULL, NULL, NULL,
	  "TCP port to listen on" },
	{ "bind", SK_PLAIN_STRING, OFF(bind), SF_IMMUTABLE, 0, 0, NULL, NULL, NULL,
	  "addresses to listen on, space separated" },
	{ "threads", SK_PLAIN_INT, OFF(threads), SF_IMMUTABLE, 0, 1024, NULL, NULL, NULL,
	  "worker threads (0 = one per core)" },
	{ "cores", SK_SPECIAL, 0, SF_IMMUTABLE, 0, 0, NULL, parse_cores, show_cores,
	  "CPU list to pin workers to, e.g. 0-3 or 1,3" },
	{ "io-backend", SK_PLAIN_INT, OFF(io_backend), SF_IMMUTABLE, 0, 2, io_backend_names, NULL, NULL,
	  "auto|uring|epoll" },
	{ "databases", SK_PLAIN_INT, OFF(databases), SF_IMMUTABLE, 1, 1 << 20, NULL, NULL, NULL,
	  "number of databases" },
	{ "shard-bits", SK_PLAIN_INT, OFF(shard_bits), SF_IMMUTABLE, 0, 14, NULL, NULL, NULL,
	  "log2 of the keyspace shard count" },
	{ "dir", SK_STRING, OFF(dir), SF_CHDIR, 0, 0, NULL, NULL, NULL, "working directory for data files" },
	{ "logfile", SK_PLAIN_STRING, OFF(logfile), SF_IMMUTABLE, 0, 0, NULL, NULL, NULL,
	  "log file (empty = stderr)" },
	{ "pidfile", SK_PLAIN_STRING, OFF(pidfile), SF_IMMUTABLE, 0, 0, NULL, NULL, NULL,
	  "write the PID to this file" },
	{ "tcp-backlog", SK_PLAIN_INT, OFF(tcp_backlog), SF_IMMUTABLE, 0, INT_MAX, NULL, NULL, NULL,
	  "listen(2) backlog" },
	{ "enable-debug-command", SK_PLAIN_INT, OFF(enable_debug_command), SF_IMMUTABLE, 0, 2,
	  protected_names, NULL, NULL, "who may run DEBUG: no|yes|local (loopback clients)" },
	{ "disable-thp", SK_PLAIN_INT, OFF(disable_thp), SF_IMMUTABLE, 0, 1, yesno_names, NULL, NULL,
	  "yes: no transparent huge pages for zarisd; no: huge pages for its heap" },
	{ "maxmemory", SK_MEMORY, OFF(maxmemory), 0, 0, LLONG_MAX, NULL, NULL, NULL,
	  "memory limit (0 = none), e.g. 64mb" },
	{ "maxmemory-policy", SK_ENUM, OFF(maxmemory_policy), 0, 0, 0, policy_names, NULL, NULL,
	  "eviction policy" },
	{ "maxmemory-samples", SK_INT, OFF(maxmemory_samples), 0, 1, INT_MAX, NULL, NULL, NULL,
	  "keys sampled per eviction (at most 64 are used)" },
	{ "proto-max-bulk-len", SK_MEMORY, OFF(proto_max_bulk_len), 0, 1024 * 1024, LLONG_MAX, NULL, NULL,
	  NULL, "largest bulk string accepted" },
	{ "client-query-buffer-limit", SK_MEMORY, OFF(client_query_buffer_limit), 0, 1024 * 1024, LLONG_MAX,
	  NULL, NULL, NULL, "largest query buffer per client" },
	{ "client-output-buffer-limit", SK_SPECIAL, 0, 0, 0, 0, NULL, parse_obuf, show_obuf,
	  "normal <hard> <soft> <seconds>" },
	{ "maxclients", SK_LL, OFF(maxclients), 0, 1, UINT_MAX, NULL, NULL, NULL, "most connected clients" },
	{ "timeout", SK_INT, OFF(timeout), 0, 0, INT_MAX, NULL, NULL, NULL,
	  "close clients idle this many seconds (0 = never)" },
	{ "tcp-keepalive", SK_INT, OFF(tcp_keepalive), 0, 0, INT_MAX, NULL, NULL, NULL,
	  "TCP keepalive seconds (0 = off)" },
	{ "protected-mode", SK_BOOL, OFF(protected_mode), 0, 0, 1, NULL, NULL, NULL,
	  "refuse non-loopback clients without a password" },
	{ "jemalloc-bg-thread", SK_BOOL, OFF(jemalloc_bg_thread), 0, 0, 1, NULL, NULL, NULL,
	  "jemalloc returns freed pages to the system from a background thread" },
	{ "hz", SK_SPECIAL, 0, 0, 0, INT_MAX, NULL, parse_hz, show_hz,
	  "timer frequency of background tasks (1 to 500)" },
	{ "lfu-log-factor", SK_INT, OFF(lfu_log_factor), 0, 0, INT_MAX, NULL, NULL, NULL,
	  "LFU counter logarithm factor" },
	{ "lfu-decay-time", SK_INT, OFF(lfu_decay_time), 0, 0, INT_MAX, NULL, NULL, NULL,
	  "LFU counter decay minutes" },
	{ "slowlog-log-slower-than", SK_LL, OFF(slowlog_log_slower_than), 0, -1, LLONG_MAX, NULL, NULL, NULL,
	  "slow log threshold in microseconds" },
	{ "slowlog-max-len", SK_LL, OFF(slowlog_max_len), 0, 0, LONG_MAX, NULL, NULL, NULL,
	  "slow log entries kept" },
	{ "latency-monitor-threshold", SK_LL, OFF(latency_monitor_threshold), 0, 0, LLONG_MAX, NULL, NULL,
	  NULL, "latency monitor threshold in ms" },
	{ "loglevel", SK_ENUM, OFF(loglevel), 0, 0, 0, loglevel_names, NULL, NULL,
	  "debug|verbose|notice|warning" },
	{ "active-expire-effort", SK_INT, OFF(active_expire_effort), 0, 1, 10, NULL, NULL, NULL,
	  "active expiry effort 1-10" },
	{ "requirepass", SK_STRING, OFF(requirepass), SF_SENSITIVE, 0, 0, NULL, NULL, NULL,
	  "password clients must AUTH with" },
	/* pub/sub: flags parsed and shown by notify.c (parse_notify/show_notify) */
	{ "notify-keyspace-events", SK_SPECIAL, 0, 0, 0, 0, NULL, parse_notify, show_notify,
	  "keyspace notification classes, e.g. KEA" },
	/* --- hashes and sets (cmd_hash.c, cmd_set.c); Redis 7.0's defaults --- */
	{ "hash-max-listpack-entries", SK_LL, OFF(hash_max_listpack_entries), 0, 0, LONG_MAX, NULL, NULL,
	  NULL, "most fields of a listpack-encoded hash" },
	{ "hash-max-listpack-value", SK_MEMORY, OFF(hash_max_listpack_value), 0, 0, LONG_MAX, NULL, NULL,
	  NULL, "longest field or value of a listpack-encoded hash" },
	{ "hash-max-ziplist-entries", SK_LL, OFF(hash_max_listpack_entries), 0, 0, LONG_MAX, NULL, NULL, NULL,
	  "alias of hash-max-listpack-entries" },
	{ "hash-max-ziplist-value", SK_MEMORY, OFF(hash_max_listpack_value), 0, 0, LONG_MAX, NULL, NULL, NULL,
	  "alias of hash-max-listpack-value" },
	{ "set-max-intset-entries", SK_LL, OFF(set_max_intset_entries), 0, 0, LONG_MAX, NULL, NULL, NULL,
	  "most members of an intset-encoded set" },
	/* --- bitmaps and HyperLogLog (cmd_bitmap.c, cmd_hll.c); Redis 7.0's defaults --- */
	{ "hll-sparse-max-bytes", SK_MEMORY, OFF(hll_sparse_max_bytes), 0, 0, LONG_MAX, NULL, NULL, NULL,
	  "largest sparse HyperLogLog before it turns dense" },
	/* --- sorted sets (cmd_zset.c); Redis 7.0's defaults and alias names --- */
	{ "zset-max-listpack-entries", SK_LL, OFF(zset_max_listpack_entries), 0, 0, LONG_MAX, NULL, NULL,
	  NULL, "most members of a listpack-encoded sorted set" },
	{ "zset-max-listpack-value", SK_MEMORY, OFF(zset_max_listpack_value), 0, 0, LONG_MAX, NULL, NULL,
	  NULL, "longest member of a listpack-encoded sorted set" },
	{ "zset-max-ziplist-entries", SK_LL, OFF(zset_max_listpack_entries), 0, 0, LONG_MAX, NULL, NULL, NULL,
	  "alias of zset-max-listpack-entries" },
	{ "zset-max-ziplist-value", SK_MEMORY, OFF(zset_max_listpack_value), 0, 0, LONG_MAX, NULL, NULL, NULL,
	  "alias of zset-max-listpack-value" },
	/* --- lists (cmd_list.c); Redis 7.0's default and alias name --- */
	{ "list-max-listpack-size", SK_LL, OFF(list_max_listpack_size), 0, INT_MIN, INT_MAX, NULL, NULL, NULL,
	  "list node size: -1..-5 = 4..64 KB per node, N > 0 = N entries per node" },
	{ "list-max-ziplist-size", SK_LL, OFF(list_max_listpack_size), 0, INT_MIN, INT_MAX, NULL, NULL, NULL,
	  "alias of list-max-listpack-size" },
	/* --- persistence (persist/) --- */
	{ "dbfilename", SK_STRING, OFF(dbfilename), SF_BASENAME, 0, 0, NULL, NULL, NULL,
	  "snapshot file name (in dir)" },
	{ "appendfilename", SK_PLAIN_STRING, OFF(appendfilename), SF_IMMUTABLE, 0, 0, NULL, NULL, NULL,
	  "append-only log segment name prefix" },
	{ "appenddirname", SK_PLAIN_STRING, OFF(appenddirname), SF_IMMUTABLE, 0, 0, NULL, NULL, NULL,
	  "append-only log directory (in dir)" },
	{ "appendonly", SK_BOOL, OFF(aof_enabled), 0, 0, 1, NULL, NULL, NULL,
	  "yes|no: keep the append-only log" },
	{ "appendfsync", SK_ENUM, OFF(appendfsync), 0, 0, 0, appendfsync_names, NULL, NULL,
	  "always|everysec|no: when the log is fsynced" },
	{ "save", SK_SPECIAL, 0, 0, 0, 0, NULL, parse_save, show_save,
	  "snapshot rules: \"<seconds> <changes> ...\" (\"\" = none)" },
	{ "auto-aof-rewrite-percentage", SK_LL, OFF(auto_aof_rewrite_percentage), 0, 0, INT_MAX, NULL, NULL,
	  NULL, "rewrite the log when it grew this % over the last snapshot (0 = never)" },
	{ "auto-aof-rewrite-min-size", SK_MEMORY, OFF(auto_aof_rewrite_min_size), 0, 0, LLONG_MAX, NULL, NULL,
	  NULL, "smallest log size that triggers an automatic rewrite" },
	{ "aof-load-truncated", SK_BOOL, OFF(aof_load_truncated), 0, 0, 1, NULL, NULL, NULL,
	  "yes: trim a truncated log tail at start-up, no: refuse to start" },
	/* --- Redis 7.0's other settings: taken with Redis's checks and texts,
	 * shown by CONFIG GET, not acted on (zarisd has no replication, cluster
	 * bus, TLS, scripting, streams, defrag, lazy free, ACL file ... yet) --- */
	REDIS_BOOL("rdbchecksum", SF_IMMUTABLE, "yes"),
	REDIS_BOOL("daemonize", SF_IMMUTABLE, "no"),
	REDIS_BOOL("io-threads-do-reads", SF_IMMUTABLE, "no"),
	REDIS_BOOL("always-show-logo", SF_IMMUTABLE, "no"),
	REDIS_BOOL("rdbcompression", 0, "yes"),
	REDIS_BOOL("rdb-del-sync-files", 0, "no"),
	REDIS_BOOL("activerehashing", 0, "yes"),
	REDIS_BOOL("stop-writes-on-bgsave-error", 0, "yes"),
	REDIS_BOOL("set-proc-title", SF_IMMUTABLE, "yes"),
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
	REDIS_ALIAS("cluster-slave-no-failover", "cluster-replica-no-failover", SK_BOOL, 0, 0, 1, NULL),
	REDIS_BOOL("replica-lazy-flush", 0, "no"),
	REDIS_ALIAS("slave-lazy-flush", "replica-lazy-flush", SK_BOOL, 0, 0, 1, NULL),
	REDIS_BOOL("replica-serve-stale-data", 0, "yes"),
	REDIS_ALIAS("slave-serve-stale-data", "replica-serve-stale-data", SK_BOOL, 0, 0, 1, NULL),
	REDIS_BOOL("replica-read-only", 0, "yes"),
	REDIS_ALIAS("slave-read-only", "replica-read-only", SK_BOOL, 0, 0, 1, NULL),
	REDIS_BOOL("replica-ignore-maxmemory", 0, "yes"),
	REDIS_ALIAS("slave-ignore-maxmemory", "replica-ignore-maxmemory", SK_BOOL, 0, 0, 1, NULL),
	REDIS_REFUSED("activedefrag", SK_BOOL, 0, 1, "no",
		      "Active defragmentation cannot be enabled: it requires a Redis server compiled with a "
		      "modified Jemalloc like the one shipped by default with the Redis source distribution"),
	REDIS_BOOL("syslog-enabled", SF_IMMUTABLE, "no"),
	REDIS_BOOL("cluster-enabled", SF_IMMUTABLE, "no"),
	REDIS_BOOL("cluster-allow-reads-when-down", 0, "no"),
	REDIS_BOOL("cluster-allow-pubsubshard-when-down", 0, "yes"),
	REDIS_BOOL("crash-log-enabled", 0, "yes"),
	REDIS_BOOL("crash-memcheck-enabled", 0, "yes"),
	REDIS_BOOL("use-exit-on-panic", SF_HIDDEN, "no"),
	REDIS_BOOL("cluster-allow-replica-migration", 0, "yes"),
	REDIS_BOOL("replica-announced", 0, "yes"),
	REDIS_BOOL("latency-tracking", 0, "yes"),
	REDIS_BOOL("aof-disable-auto-gc", 0, "no"),
	REDIS_BOOL("replica-ignore-disk-write-errors", 0, "no"),
	REDIS_STRING("aclfile", SF_IMMUTABLE, ""),
	REDIS_STRING("unixsocket", SF_IMMUTABLE, ""),
	REDIS_STRING("replica-announce-ip", 0, ""),
	REDIS_ALIAS("slave-announce-ip", "replica-announce-ip", SK_STRING, 0, 0, 0, NULL),
	REDIS_STRING("masteruser", SF_SENSITIVE, ""),
	REDIS_STRING("cluster-announce-ip", 0, ""),
	REDIS_STRING("cluster-config-file", SF_IMMUTABLE, "nodes.conf"),
	REDIS_SPECIAL("cluster-announce-hostname", 0, canon_hostname, NULL, ""),
	REDIS_STRING("syslog-ident", SF_IMMUTABLE, "redis"),
	REDIS_STRING("server_cpulist", SF_IMMUTABLE, ""),
	REDIS_STRING("bio_cpulist", SF_IMMUTABLE, ""),
	REDIS_STRING("aof_rewrite_cpulist", SF_IMMUTABLE, ""),
	REDIS_STRING("bgsave_cpulist", SF_IMMUTABLE, ""),
	REDIS_STRING("ignore-warnings", 0, ""),
	REDIS_SPECIAL("proc-title-template", 0, canon_proc_title, NULL,
		      "{title} {listen-addr} {server-mode}"),
	REDIS_STRING("bind-source-addr", 0, ""),
	REDIS_STRING("masterauth", SF_SENSITIVE, ""),
	REDIS_ENUM("supervised", SF_IMMUTABLE, supervised_names, "no"),
	REDIS_ENUM("syslog-facility", SF_IMMUTABLE, syslog_facility_names, "local0"),
	REDIS_ENUM("repl-diskless-load", 0, diskless_load_names, "disabled"),
	REDIS_SPECIAL("oom-score-adj", 0, canon_oom_adj, oom_adj_names, "no"),
	REDIS_ENUM("acl-pubsub-default", 0, acl_pubsub_names, "resetchannels"),
	REDIS_ENUM("sanitize-dump-payload", 0, sanitize_names, "no"),
	REDIS_ENUM("enable-protected-configs", SF_IMMUTABLE, protected_names, "no"),
	REDIS_ENUM("enable-module-command", SF_IMMUTABLE, protected_names, "no"),
	REDIS_ENUM("cluster-preferred-endpoint-type", 0, endpoint_names, "ip"),
	REDIS_ENUM("propagation-error-behavior", 0, propagation_names, "ignore"),
	REDIS_SPECIAL("shutdown-on-sigint", 0, canon_shutdown, shutdown_names, "default"),
	REDIS_SPECIAL("shutdown-on-sigterm", 0, canon_shutdown, shutdown_names, "default"),
	REDIS_INT("io-threads", SF_IMMUTABLE, 1, 128, "1"),
	REDIS_INT("cluster-replica-validity-factor", 0, 0, INT_MAX, "10"),
	REDIS_ALIAS("cluster-slave-validity-factor", "cluster-replica-validity-factor", SK_LL, 0, 0, INT_MAX,
		    NULL),
	REDIS_INT("cluster-migration-barrier", 0, 0, INT_MAX, "1"),
	REDIS_INT("active-defrag-cycle-min", 0, 1, 99, "1"),
	REDIS_INT("active-defrag-cycle-max", 0, 1, 99, "25"),
	REDIS_INT("active-defrag-threshold-lower", 0, 0, 1000, "10"),
	REDIS_INT("active-defrag-threshold-upper", 0, 0, 1000, "100"),
	REDIS_INT("replica-priority", 0, 0, INT_MAX, "100"),
	REDIS_ALIAS("slave-priority", "replica-priority", SK_LL, 0, 0, INT_MAX, NULL),
	REDIS_INT("repl-diskless-sync-delay", 0, 0, INT_MAX, "5"),
	REDIS_INT("maxmemory-eviction-tenacity", 0, 0, 100, "10"),
	REDIS_INT("replica-announce-port", 0, 0, 65535, "0"),
	REDIS_ALIAS("slave-announce-port", "replica-announce-port", SK_LL, 0, 0, 65535, NULL),
	REDIS_INT("cluster-port", SF_IMMUTABLE, 0, 65535, "0"),
	REDIS_INT("cluster-announce-bus-port", 0, 0, 65535, "0"),
	REDIS_INT("cluster-announce-port", 0, 0, 65535, "0"),
	REDIS_INT("cluster-announce-tls-port", 0, 0, 65535, "0"),
	REDIS_INT("repl-timeout", 0, 1, INT_MAX, "60"),
	REDIS_INT("repl-ping-replica-period", 0, 1, INT_MAX, "10"),
	REDIS_ALIAS("repl-ping-slave-period", "repl-ping-replica-period", SK_LL, 0, 1, INT_MAX, NULL),
	REDIS_INT("list-compress-depth", 0, 0, INT_MAX, "0"),
	REDIS_INT("rdb-key-save-delay", SF_HIDDEN, INT_MIN, INT_MAX, "0"),
	REDIS_INT("key-load-delay", SF_HIDDEN, INT_MIN, INT_MAX, "0"),
	REDIS_INT("min-replicas-to-write", 0, 0, INT_MAX, "0"),
	REDIS_ALIAS("min-slaves-to-write", "min-replicas-to-write", SK_LL, 0, 0, INT_MAX, NULL),
	REDIS_INT("min-replicas-max-lag", 0, 0, INT_MAX, "10"),
	REDIS_ALIAS("min-slaves-max-lag", "min-replicas-max-lag", SK_LL, 0, 0, INT_MAX, NULL),
	REDIS_INT("watchdog-period", SF_HIDDEN, 0, INT_MAX, "0"),
	REDIS_INT("shutdown-timeout", 0, 0, INT_MAX, "10"),
	REDIS_INT("repl-diskless-sync-max-replicas", 0, 0, INT_MAX, "0"),
	REDIS_SPECIAL("unixsocketperm", SF_IMMUTABLE, canon_octal, NULL, "0"),
	REDIS_INT("socket-mark-id", SF_IMMUTABLE, 0, UINT_MAX, "0"),
	REDIS_INT("active-defrag-max-scan-fields", 0, 1, LONG_MAX, "1000"),
	REDIS_INT("acllog-max-len", 0, 0, LONG_MAX, "128"),
	REDIS_INT("busy-reply-threshold", 0, 0, LONG_MAX, "5000"),
	REDIS_ALIAS("lua-time-limit", "busy-reply-threshold", SK_LL, 0, 0, LONG_MAX, NULL),
	REDIS_INT("cluster-node-timeout", 0, 0, LLONG_MAX, "15000"),
	REDIS_INT("stream-node-max-entries", 0, 0, LLONG_MAX, "100"),
	REDIS_SPECIAL("repl-backlog-size", 0, canon_backlog, NULL, "1048576"),
	REDIS_ROW("cluster-link-sendbuf-limit", SK_UMEMORY, 0, 0, 0, NULL, "0"),
	REDIS_MEMORY("active-defrag-ignore-bytes", 0, 1, LLONG_MAX, "104857600"),
	REDIS_MEMORY("stream-node-max-bytes", 0, 0, LONG_MAX, "4096"),
	REDIS_INT("tracking-table-max-keys", 0, 0, LONG_MAX, "1000000"),
	REDIS_SPECIAL("maxmemory-clients", 0, canon_percent_memory, NULL, "0"),
	REDIS_INT("repl-backlog-ttl", 0, 0, LONG_MAX, "3600"),
	REDIS_INT("loading-process-events-interval-bytes", SF_HIDDEN, 1024, INT_MAX, "2097152"),
	REDIS_REFUSED("tls-port", SK_LL, 0, 65535, "0", TLS_REFUSED),
	REDIS_INT("tls-session-cache-size", 0, 0, INT_MAX, "20480"),
	REDIS_INT("tls-session-cache-timeout", 0, 0, INT_MAX, "300"),
	REDIS_REFUSED("tls-cluster", SK_BOOL, 0, 1, "no", TLS_REFUSED),
	REDIS_REFUSED("tls-replication", SK_BOOL, 0, 1, "no", TLS_REFUSED),
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
	REDIS_SPECIAL("oom-score-adj-values", 0, canon_oom_values, NULL, "0 200 800"),
	REDIS_SPECIAL("replicaof", SF_IMMUTABLE, canon_replicaof, NULL, ""),
	{ "slaveof", SK_SPECIAL, 0, SF_REDIS | SF_IMMUTABLE, 0, 0, NULL, NULL, NULL, REDIS_HELP, NULL,
	  "replicaof", NULL, canon_replicaof },
	REDIS_SPECIAL("latency-tracking-info-percentiles", 0, canon_percentiles, NULL, "50 99 99.9"),
};
#pragma GCC diagnostic pop
#undef OFF

#define SETTING_COUNT (sizeof(setting_rows) / sizeof(setting_rows[0]))

static const struct setting *setting_find(const char *name)
{
	for (size_t i = 0; i < SETTING_COUNT; i++)
		if (!strcasecmp(setting_rows[i].name, name))
			return &setting_rows[i];
	return NULL;
}

bool settings_exists(const char *name)
{
	return setting_find(name) != NULL;
}

bool settings_is_immutable(const char *name)
{
	const struct setting *row = setting_find(name);
	return row && (row->flags & SF_IMMUTABLE);
}

/* The row whose value an SF_REDIS row shows: itself, or what it is an alias of. */
static size_t redis_slot(const struct setting *row)
{
	const struct setting *primary = row->alias_of ? setting_find(row->alias_of) : row;
	return (size_t)(primary - setting_rows);
}

void settings_init(struct settings *s)
{
	memset(s, 0, sizeof(*s));
	pthread_mutex_init(&s->lock, NULL);
	s->port = 6379;
	s->bind = zr_strdup("127.0.0.1 -::1");
	s->databases = 16;
	s->shard_bits = 10;
	s->dir = zr_strdup(".");
	s->logfile = zr_strdup("");
	s->pidfile = zr_strdup("");
	s->tcp_backlog = 511;
	s->disable_thp = 1;
	s->cores_text = zr_strdup("");
	atomic_init(&s->maxmemory, 0);
	atomic_init(&s->maxmemory_policy, STORE_EVICT_NOEVICTION);
	atomic_init(&s->maxmemory_samples, 5);
	atomic_init(&s->proto_max_bulk_len, 512LL * 1024 * 1024);
	atomic_init(&s->client_query_buffer_limit, 1024LL * 1024 * 1024);
	/* Redis's "normal 0 0 0": normal clients are never cut off for their
	 * output. A pipeline's replies no longer pile up (net/conn.h: its
	 * requests wait while its output is over a few MB), so a limit would
	 * only cut off clients that do nothing wrong (ioredis' auto-pipelining
	 * of big GETs was cut at 256mb and sent its batch again, forever). */
	atomic_init(&s->obuf_hard_limit, 0);
	atomic_init(&s->obuf_soft_limit, 0);
	atomic_init(&s->obuf_soft_seconds, 0);
	atomic_init(&s->maxclients, 10000);
	atomic_init(&s->timeout, 0);
	atomic_init(&s->tcp_keepalive, 300);
	atomic_init(&s->protected_mode, 1);
	atomic_init(&s->jemalloc_bg_thread, 1);
	atomic_init(&s->hz, 10);
	atomic_init(&s->lfu_log_factor, 10);
	atomic_init(&s->lfu_decay_time, 1);
	atomic_init(&s->slowlog_log_slower_than, 10000);
	atomic_init(&s->slowlog_max_len, 128);
	atomic_init(&s->latency_monitor_threshold, 0);
	atomic_init(&s->loglevel, ZR_LOG_NOTICE);
	atomic_init(&s->active_expire_effort, 1);
	s->requirepass = zr_strdup("");
	/* pub/sub: no notifications; Redis's pubsub class limits 32mb 8mb 60 */
	atomic_init(&s->notify_keyspace_events, 0);
	atomic_init(&s->obuf_pubsub_hard_limit, 32ULL * 1024 * 1024);
	atomic_init(&s->obuf_pubsub_soft_limit, 8ULL * 1024 * 1024);
	atomic_init(&s->obuf_pubsub_soft_seconds, 60);
	/* hashes and sets */
	atomic_init(&s->hash_max_listpack_entries, 512);
	atomic_init(&s->hash_max_listpack_value, 64);
	atomic_init(&s->set_max_intset_entries, 512);
	/* bitmaps and HyperLogLog */
	atomic_init(&s->hll_sparse_max_bytes, 3000);
	/* sorted sets */
	atomic_init(&s->zset_max_listpack_entries, 128);
	atomic_init(&s->zset_max_listpack_value, 64);
	/* lists */
	atomic_init(&s->list_max_listpack_size, -2);
	/* persistence: Redis 7's defaults, our file names */
	s->dbfilename = zr_strdup("dump.zdb");
	s->appendfilename = zr_strdup("appendonly.aof");
	s->appenddirname = zr_strdup("appendonlydir");
	s->save = zr_strdup("3600 1 300 100 60 10000");
	atomic_init(&s->aof_enabled, 0);
	atomic_init(&s->appendfsync, 1);
	atomic_init(&s->auto_aof_rewrite_percentage, 100);
	atomic_init(&s->auto_aof_rewrite_min_size, 64LL * 1024 * 1024);
	atomic_init(&s->aof_load_truncated, 1);
	/* Redis's other settings, at Redis 7.0's defaults */
	s->redis_only = zr_calloc(SETTING_COUNT, sizeof(char *));
	for (size_t i = 0; i < SETTING_COUNT; i++)
		if ((setting_rows[i].flags & SF_REDIS) && !setting_rows[i].alias_of)
			s->redis_only[i] = zr_strdup(setting_rows[i].def);
}

void settings_free(struct settings *s)
{
	ZR_FREE(s->bind);
	ZR_FREE(s->dir);
	ZR_FREE(s->logfile);
	ZR_FREE(s->pidfile);
	ZR_FREE(s->cores_text);
	ZR_FREE(s->requirepass);
	ZR_FREE(s->dbfilename);
	ZR_FREE(s->appendfilename);
	ZR_FREE(s->appenddirname);
	ZR_FREE(s->save);
	for (size_t i = 0; s->redis_only && i < SETTING_COUNT; i++)
		zr_free(s->redis_only[i]);
	ZR_FREE(s->redis_only);
	pthread_mutex_destroy(&s->lock);
}

static void *field(struct settings *s, const struct setting *row)
{
	return (char *)s + row->offset;
}

static int parse_cores(struct settings *s, const struct setting *row, const char *v, char *err, size_t errlen)
{
	int cores[SETTINGS_MAX_CORES];
	int n = 0;
	const char *p = v;
	while (*p) {
		char *end;
		long lo = strtol(p, &end, 10), hi;
		if (end == p || lo < 0 || lo >= SETTINGS_MAX_CORES)
			goto bad;
		hi = lo;
		p = end;
		if (*p == '-') {
			hi = strtol(p + 1, &end, 10);
			if (end == p + 1 || hi < lo || hi >= SETTINGS_MAX_CORES)
				goto bad;
			p = end;
		}
		for (long cpu = lo; cpu <= hi; cpu++) {
			if (n == SETTINGS_MAX_CORES)
				goto bad;
			cores[n++] = (int)cpu;
		}
		if (*p == ',')
			p++;
		else if (*p)
			goto bad;
	}
	memcpy(s->cores, cores, sizeof(int) * (size_t)n);
	s->ncores = n;
	zr_free(s->cores_text);
	s->cores_text = zr_strdup(v);
	return 0;
bad:
	snprintf(err, errlen, "argument must be a CPU list like 0-3 or 1,3 for '%s'", row->name);
	return -EINVAL;
}

static void show_cores(struct settings *s, char *buf, size_t size)
{
	snprintf(buf, size, "%s", s->cores_text);
}

/* Redis's text for a bad client-output-buffer-limit: WHAT, under its CONFIG
 * SET prefix; -EINVAL. */
static int obuf_error(const struct setting *row, const char *what, char *err, size_t errlen)
{
	snprintf(err, errlen,
		 "CONFIG SET failed (possibly related to argument '%s') - %s in buffer limit configuration.",
		 row->name, what);
	return -EINVAL;
}

static int parse_obuf(struct settings *s, const struct setting *row, const char *v, char *err, size_t errlen)
{
	/* "normal hard soft seconds [replica ...] [pubsub ...]": only the
	 * normal class applies so far; other classes are accepted and checked. */
	char buf[512];
	snprintf(buf, sizeof(buf), "%s", v);
	char *save = NULL;
	char *tok[32];
	int n = 0;
	for (char *t = strtok_r(buf, " ", &save); t && n < 32; t = strtok_r(NULL, " ", &save))
		tok[n++] = t;
	/* an empty value sets nothing and is taken, as in Redis */
	if (n % 4)
		return obuf_error(row, "Wrong number of arguments", err, errlen);
	unsigned long long vals[8][3];
	int normal = -1, pubsub = -1;
	for (int i = 0; i < n; i += 4) {
		const char *cls = tok[i];
		if (strcasecmp(cls, "normal") && strcasecmp(cls, "replica") && strcasecmp(cls, "slave") &&
		    strcasecmp(cls, "pubsub")) {
			return obuf_error(row, "Invalid client class specified", err, errlen);
		}
		/* As Redis 7.0: two memory values, then the seconds as a plain
		 * integer kept in an int (its low 32 bits), refused when that
		 * is negative */
		long long ll = 0;
		bool bad = !zr_parse_memory(tok[i + 1], &vals[i / 4][0]) ||
			   !zr_parse_memory(tok[i + 2], &vals[i / 4][1]) ||
			   !zr_str_to_ll(tok[i + 3], strlen(tok[i + 3]), &ll);
		uint32_t secs = (uint32_t)(unsigned long long)ll;
		if (bad || secs > INT_MAX)
			return obuf_error(row, "Error in hard, soft or soft_seconds setting", err, errlen);
		vals[i / 4][2] = secs;
		if (!strcasecmp(cls, "normal"))
			normal = i / 4;
		if (!strcasecmp(cls, "pubsub")) /* pub/sub: subscribed clients' class */
			pubsub = i / 4;
	}
	if (normal >= 0) {
		atomic_store_explicit(&s->obuf_hard_limit, vals[normal][0], memory_order_relaxed);
		atomic_store_explicit(&s->obuf_soft_limit, vals[normal][1], memory_order_relaxed);
		atomic_store_explicit(&s->obuf_soft_seconds, (long long)vals[normal][2],
				      memory_order_relaxed);
	}
	if (pubsub >= 0) {
		atomic_store_explicit(&s->obuf_pubsub_hard_limit, vals[pubsub][0], memory_order_relaxed);
		atomic_store_explicit(&s->obuf_pubsub_soft_limit, vals[pubsub][1], memory_order_relaxed);
		atomic_store_explicit(&s->obuf_pubsub_soft_seconds, (long long)vals[pubsub][2],
				      memory_order_relaxed);
	}
	return 0;
}

static void show_obuf(struct settings *s, char *buf, size_t size)
{
	snprintf(buf, size, "normal %llu %llu %lld slave 268435456 67108864 60 pubsub %llu %llu %lld",
		 atomic_load_explicit(&s->obuf_hard_limit, memory_order_relaxed),
		 atomic_load_explicit(&s->obuf_soft_limit, memory_order_relaxed),
		 atomic_load_explicit(&s->obuf_soft_seconds, memory_order_relaxed),
		 atomic_load_explicit(&s->obuf_pubsub_hard_limit, memory_order_relaxed),
		 atomic_load_explicit(&s->obuf_pubsub_soft_limit, memory_order_relaxed),
		 atomic_load_explicit(&s->obuf_pubsub_soft_seconds, memory_order_relaxed));
}

/* pub/sub: notify-keyspace-events is kept as flags (notify.h) */
/* Redis's texts for a value that is not an integer, and for one outside
 * ROW's range; both return -EINVAL. */
static int bad_integer(const struct setting *row, char *err, size_t errlen)
{
	snprintf(
		err, errlen,
		"CONFIG SET failed (possibly related to argument '%s') - argument couldn't be parsed into an integer",
		row->name);
	return -EINVAL;
}

static int out_of_range(const struct setting *row, char *err, size_t errlen)
{
	snprintf(
		err, errlen,
		"CONFIG SET failed (possibly related to argument '%s') - argument must be between %lld and %lld inclusive",
		row->name, row->min, row->max);
	return -EINVAL;
}

/* Redis's hz: any value from 0 to INT_MAX is taken and then held to 1..500
 * (its updateHZ), which is what CONFIG GET shows. */
static int parse_hz(struct settings *s, const struct setting *row, const char *v, char *err, size_t errlen)
{
	long long ll;
	if (!zr_str_to_ll(v, strlen(v), &ll))
		return bad_integer(row, err, errlen);
	if (ll < row->min || ll > row->max)
		return out_of_range(row, err, errlen);
	int hz = ll < 1 ? 1 : ll > 500 ? 500 : (int)ll;
	atomic_store_explicit(&s->hz, hz, memory_order_relaxed);
	return 0;
}

static void show_hz(struct settings *s, char *buf, size_t size)
{
	snprintf(buf, size, "%d", atomic_load_explicit(&s->hz, memory_order_relaxed));
}

static int parse_notify(struct settings *s, const struct setting *row, const char *v, char *err,
			size_t errlen)
{
	int flags = notify_flags_parse(v);
	if (flags < 0) {
		snprintf(err, errlen, "CONFIG SET failed (possibly related to argument '%s') - %s", row->name,
			 NOTIFY_ERR_CLASS);
		return -EINVAL;
	}
	atomic_store_explicit(&s->notify_keyspace_events, flags, memory_order_relaxed);
	return 0;
}

static void show_notify(struct settings *s, char *buf, size_t size)
{
	notify_flags_format(atomic_load_explicit(&s->notify_keyspace_events, memory_order_relaxed), buf,
			    size);
}

static int parse_enum(const struct setting *row, const char *v)
{
	for (int i = 0; row->names[i]; i++)
		if (!strcasecmp(row->names[i], v))
			return i;
	return -1;
}

static int parse_bool(const char *v)
{
	if (!strcasecmp(v, "yes"))
		return 1;
	if (!strcasecmp(v, "no"))
		return 0;
	return -1;
}

/* Settings whose new value must also reach another module at once. */
static void apply_loglevel(int v)
{
	zr_log_set_level((enum zr_log_level)v);
}

static void apply_jemalloc_bg_thread(int v)
{
	(void)zr_mem_background_purge(v); /* -ENOTSUP without jemalloc: nothing to run */
}

static const struct {
	size_t offset;
	void (*apply)(int value);
} setting_effects[] = {
	{ offsetof(struct settings, loglevel), apply_loglevel },
	{ offsetof(struct settings, jemalloc_bg_thread), apply_jemalloc_bg_thread },
};

/* Passes ROW's new value V to its effect, if it has one (start-up too:
 * applying again later, as main does, is harmless). */
static void apply_effect(const struct setting *row, int v)
{
	for (size_t i = 0; i < sizeof(setting_effects) / sizeof(setting_effects[0]); i++)
		if (setting_effects[i].offset == row->offset)
			setting_effects[i].apply(v);
}

/* Redis's error for a value outside a yes/no or named setting's choices
 * (ROW's names; none for a yes/no setting); returns -EINVAL. */
static int bad_choice(const struct setting *row, char *err, size_t errlen)
{
	if (!row->names || row->names == yesno_names) {
		snprintf(
			err, errlen,
			"CONFIG SET failed (possibly related to argument '%s') - argument must be 'yes' or 'no'",
			row->name);
		return -EINVAL;
	}
	snprintf(
		err, errlen,
		"CONFIG SET failed (possibly related to argument '%s') - argument(s) must be one of the following: ",
		row->name);
	/* Redis lists some choices in its own enum order, not ours */
	const char *const *shown = row->names == policy_names	     ? policy_names_redis_order
				   : row->names == appendfsync_names ? appendfsync_names_redis_order
								     : row->names;
	for (int i = 0; shown[i]; i++) {
		size_t used = strlen(err);
		snprintf(err + used, errlen - used, "%s%s", i ? ", " : "", shown[i]);
	}
	return -EINVAL;
}

/* CONFIG SET dir: Redis's setConfigDirOption, chdir at once (main does it
 * at start-up, after every setting is read). Keeps the absolute path, so
 * a rollback (cmd_config.c) or a later relative value stays right. */
static int set_dir(struct settings *s, const struct setting *row, const char *value, char *err, size_t errlen)
{
	char cwd[PATH_MAX];
	if (chdir(value) < 0 || !getcwd(cwd, sizeof(cwd))) {
		snprintf(err, errlen, "CONFIG SET failed (possibly related to argument '%s') - %s", row->name,
			 strerror(errno));
		return -EINVAL;
	}
	pthread_mutex_lock(&s->lock);
	zr_free(*(char **)field(s, row));
	*(char **)field(s, row) = zr_strdup(cwd);
	pthread_mutex_unlock(&s->lock);
	return 0;
}

int settings_set(struct settings *s, const char *name, const char *value, bool starting, char *err,
		 size_t errlen)
{
	const struct setting *row = setting_find(name);
	if (!row) {
		snprintf(err, errlen, "Unknown option or number of arguments for CONFIG SET - '%s'", name);
		return -ENOENT;
	}
	if ((row->flags & SF_IMMUTABLE) && !starting) {
		snprintf(err, errlen,
			 "CONFIG SET failed (possibly related to argument '%s') - can't set immutable config",
			 row->name);
		return -EPERM;
	}
	if (row->flags & SF_REDIS)
		return redis_set(s, row, value, starting, err, errlen);
	if ((row->flags & SF_BASENAME) && (strchr(value, '/') || strchr(value, '\\'))) {
		snprintf(
			err, errlen,
			"CONFIG SET failed (possibly related to argument '%s') - %s can't be a path, just a filename",
			row->name, row->name);
		return -EINVAL;
	}
	if ((row->flags & SF_CHDIR) && !starting)
		return set_dir(s, row, value, err, errlen);
	long long ll;
	unsigned long long ull;
	int iv;
	switch (row->kind) {
	case SK_INT:
	case SK_LL:
	case SK_PLAIN_INT:
		if (row->names) {
			iv = parse_enum(row, value);
			if (iv < 0)
				return bad_choice(row, err, errlen);
			ll = iv;
		} else if (!zr_str_to_ll(value, strlen(value), &ll)) {
			goto bad_value;
		}
		if (ll < row->min || ll > row->max)
			return out_of_range(row, err, errlen);
		if (row->kind == SK_INT)
			atomic_store_explicit((_Atomic int *)field(s, row), (int)ll, memory_order_relaxed);
		else if (row->kind == SK_LL)
			atomic_store_explicit((_Atomic long long *)field(s, row), ll, memory_order_relaxed);
		else
			*(int *)field(s, row) = (int)ll;
		break;
	case SK_MEMORY:
		if (!zr_parse_memory(value, &ull)) {
			snprintf(
				err, errlen,
				"CONFIG SET failed (possibly related to argument '%s') - argument must be a memory value",
				row->name);
			return -EINVAL;
		}
		if (ull > (unsigned long long)row->max || (long long)ull < row->min)
			return out_of_range(row, err, errlen);
		atomic_store_explicit((_Atomic long long *)field(s, row), (long long)ull,
				      memory_order_relaxed);
		break;
	case SK_BOOL:
		iv = parse_bool(value);
		if (iv < 0)
			return bad_choice(row, err, errlen);
		atomic_store_explicit((_Atomic int *)field(s, row), iv, memory_order_relaxed);
		apply_effect(row, iv);
		break;
	case SK_ENUM:
		iv = parse_enum(row, value);
		if (iv < 0)
			return bad_choice(row, err, errlen);
		atomic_store_explicit((_Atomic int *)field(s, row), iv, memory_order_relaxed);
		apply_effect(row, iv);
		break;
	case SK_STRING:
		pthread_mutex_lock(&s->lock);
		zr_free(*(char **)field(s, row));
		*(char **)field(s, row) = zr_strdup(value);
		pthread_mutex_unlock(&s->lock);
		break;
	case SK_PLAIN_STRING:
		zr_free(*(char **)field(s, row));
		*(char **)field(s, row) = zr_strdup(value);
		break;
	case SK_SPECIAL:
		return row->parse(s, row, value, err, errlen);
	case SK_UMEMORY: /* SF_REDIS rows only (redis_set) */
		break;
	}
	return 0;
bad_value:
	return bad_integer(row, err, errlen);
}

static void setting_show(struct settings *s, const struct setting *row, char *buf, size_t size)
{
	if (row->flags & SF_REDIS) {
		pthread_mutex_lock(&s->lock);
		snprintf(buf, size, "%s", s->redis_only[redis_slot(row)]);
		pthread_mutex_unlock(&s->lock);
		return;
	}
	switch (row->kind) {
	case SK_UMEMORY: /* SF_REDIS rows only */
		break;
	case SK_INT:
		snprintf(buf, size, "%d",
			 atomic_load_explicit((_Atomic int *)field(s, row), memory_order_relaxed));
		break;
	case SK_LL:
	case SK_MEMORY:
		snprintf(buf, size, "%lld",
			 atomic_load_explicit((_Atomic long long *)field(s, row), memory_order_relaxed));
		break;
	case SK_BOOL:
		snprintf(buf, size, "%s",
			 atomic_load_explicit((_Atomic int *)field(s, row), memory_order_relaxed) ? "yes"
												  : "no");
		break;
	case SK_ENUM:
		snprintf(
			buf, size, "%s",
			row->names[atomic_load_explicit((_Atomic int *)field(s, row), memory_order_relaxed)]);
		break;
	case SK_PLAIN_INT:
		if (row->names)
			snprintf(buf, size, "%s", row->names[*(int *)field(s, row)]);
		else
			snprintf(buf, size, "%d", *(int *)field(s, row));
		break;
	case SK_STRING:
		if ((row->flags & SF_CHDIR) && getcwd(buf, size))
			break; /* Redis shows the working directory itself */
		pthread_mutex_lock(&s->lock);
		snprintf(buf, size, "%s", *(char **)field(s, row));
		pthread_mutex_unlock(&s->lock);
		break;
	case SK_PLAIN_STRING:
		snprintf(buf, size, "%s", *(char **)field(s, row));
		break;
	case SK_SPECIAL:
		row->show(s, buf, size);
		break;
	}
}

void settings_get(struct settings *s, const char *pattern, settings_visit_fn fn, void *ctx)
{
	char value[1024];
	for (size_t i = 0; i < SETTING_COUNT; i++) {
		const struct setting *row = &setting_rows[i];
		/* as Redis, a hidden setting answers only its exact name */
		if ((row->flags & SF_HIDDEN) && strpbrk(pattern, "*?["))
			continue;
		if (!zr_glob_match(pattern, strlen(pattern), row->name, strlen(row->name), true))
			continue;
		setting_show(s, row, value, sizeof(value));
		fn(row->name, value, ctx);
	}
}

bool settings_requirepass_set(struct settings *s)
{
	pthread_mutex_lock(&s->lock);
	bool set = s->requirepass && s->requirepass[0];
	pthread_mutex_unlock(&s->lock);
	return set;
}

bool settings_requirepass_check(struct settings *s, const char *pw, size_t len)
{
	pthread_mutex_lock(&s->lock);
	const char *want = s->requirepass ? s->requirepass : "";
	size_t wlen = strlen(want);
	/* constant time in the password's length: no early exit on a mismatch */
	unsigned char diff = (unsigned char)(wlen != len);
	for (size_t i = 0; i < len; i++)
		diff |= (unsigned char)(pw[i] ^ (i < wlen ? want[i] : 0));
	pthread_mutex_unlock(&s->lock);
	return diff == 0 && wlen > 0;
}

void settings_print_help(FILE *f)
{
	for (size_t i = 0; i < SETTING_COUNT; i++) {
		const struct setting *row = &setting_rows[i];
		fprintf(f, "  --%-28s %s%s\n", row->name, row->help,
			(row->flags & SF_IMMUTABLE) ? "" : " (CONFIG SET)");
	}
}

/* --- persistence: save rules ------------------------------------------------------ */

/* "<seconds> <changes>" pairs, or "" for none (Redis's format). */
static int parse_save(struct settings *s, const struct setting *row, const char *v, char *err, size_t errlen)
{
	(void)row;
	int n = 0;
	const char *p = v;
	while (*p) {
		while (*p == ' ')
			p++;
		if (!*p)
			break;
		char *end;
		long long x = strtoll(p, &end, 10);
		if (end == p || x < 0 || (*end && *end != ' ')) {
			snprintf(
				err, errlen,
				"CONFIG SET failed (possibly related to argument 'save') - Invalid save parameters");
			return -EINVAL;
		}
		p = end;
		n++;
	}
	if (n % 2) {
		snprintf(err, errlen,
			 "CONFIG SET failed (possibly related to argument 'save') - Invalid save parameters");
		return -EINVAL;
	}
	pthread_mutex_lock(&s->lock);
	zr_free(s->save);
	s->save = zr_strdup(v);
	pthread_mutex_unlock(&s->lock);
	return 0;
}

static void show_save(struct settings *s, char *buf, size_t size)
{
	pthread_mutex_lock(&s->lock);
	snprintf(buf, size, "%s", s->save ? s->save : "");
	pthread_mutex_unlock(&s->lock);
}

/* --- Redis's other settings (SF_REDIS rows) ------------------------------------------ */

/* Redis's "CONFIG SET failed ..." prefix around WHAT; -EINVAL. */
static int redis_error(const struct setting *row, const char *what, char *err, size_t errlen)
{
	snprintf(err, errlen, "CONFIG SET failed (possibly related to argument '%s') - %s", row->name, what);
	return -EINVAL;
}

/* Redis's sdssplitlen(V, " ") of a multi-argument setting: every single
 * space separates (two spaces leave an empty word), "" has no word. Fills
 * WORDS (at most MAX) with pointers into BUF, a copy of V the caller frees;
 * returns the count, or -1 past MAX. */
static int split_words(const char *v, char **buf, char **words, int max)
{
	*buf = zr_strdup(v);
	if (!**buf)
		return 0;
	int n = 0;
	for (char *p = *buf;; p++) {
		if (n == max)
			return -1;
		words[n++] = p;
		p = strchr(p, ' ');
		if (!p)
			return n;
		*p = '\0';
	}
}

/* Redis's maxmemory-clients: a memory value, or N% (0..100) of maxmemory,
 * kept as -N and shown as "N%" (so a memory value past 2^63 - 1 reads as
 * a percentage, as in Redis). */
static int canon_percent_memory(const struct setting *row, const char *v, char *out, size_t outlen, char *err,
				size_t errlen)
{
	unsigned long long ull;
	long long ll;
	size_t len = strlen(v);
	if (zr_parse_memory(v, &ull))
		ll = (long long)ull;
	else if (len > 1 && v[len - 1] == '%' && zr_str_to_ll(v, len - 1, &ll) && ll >= 0)
		ll = -ll;
	else
		return redis_error(row, "argument must be a memory or percent value", err, errlen);
	if (ll < -100)
		return redis_error(row, "percentage argument must be less or equal to 100", err, errlen);
	if (ll < 0)
		snprintf(out, outlen, "%lld%%", -ll);
	else
		snprintf(out, outlen, "%lld", ll);
	return 0;
}

/* Redis's repl-backlog-size: a memory value from 1, then held to at
 * least 16kb (its resizeReplicationBacklog). */
static int canon_backlog(const struct setting *row, const char *v, char *out, size_t outlen, char *err,
			 size_t errlen)
{
	unsigned long long ull;
	if (!zr_parse_memory(v, &ull))
		return redis_error(row, "argument must be a memory value", err, errlen);
	if (ull < 1 || ull > LLONG_MAX)
		return redis_error(row, "argument must be between 1 and 9223372036854775807 inclusive", err,
				   errlen);
	snprintf(out, outlen, "%llu", ull < 16384 ? 16384 : ull);
	return 0;
}

/* Redis's unixsocketperm: octal, 0 to 0777, shown in octal. */
static int canon_octal(const struct setting *row, const char *v, char *out, size_t outlen, char *err,
		       size_t errlen)
{
	char *end;
	errno = 0;
	long long ll = strtoll(v, &end, 8);
	if (errno || *end)
		return redis_error(row, "argument couldn't be parsed as an octal number", err, errlen);
	if ((unsigned long long)ll > 0777)
		return redis_error(row, "argument must be between 0 and 777 inclusive", err, errlen);
	snprintf(out, outlen, "%llo", (unsigned long long)ll);
	return 0;
}

/* Redis's oom-score-adj: "relative" is "yes" (one value, shown by its
 * first name). */
static int canon_oom_adj(const struct setting *row, const char *v, char *out, size_t outlen, char *err,
			 size_t errlen)
{
	int i = parse_enum(row, v);
	if (i < 0)
		return bad_choice(row, err, errlen);
	snprintf(out, outlen, "%s", row->names[i == 2 ? 1 : i]);
	return 0;
}

/* Redis's shutdown-on-sigint / -sigterm: flags (save nosave now force),
 * several words OR-ed, "default" none; shown in that order. */
static int canon_shutdown(const struct setting *row, const char *v, char *out, size_t outlen, char *err,
			  size_t errlen)
{
	char *buf, *words[64];
	int n = split_words(v, &buf, words, 64), bits = 0;
	for (int i = 0; i < n; i++) {
		int k = parse_enum(row, words[i]);
		if (k < 0) {
			n = -1;
			break;
		}
		bits |= k ? 1 << (k - 1) : 0;
	}
	zr_free(buf);
	if (n <= 0)
		return bad_choice(row, err, errlen);
	if ((bits & 1) && (bits & 2))
		return redis_error(row, "shutdown options SAVE and NOSAVE can't be used simultaneously", err,
				   errlen);
	out[0] = '\0';
	for (int k = 1; row->names[k]; k++)
		if (bits & (1 << (k - 1))) {
			size_t used = strlen(out);
			snprintf(out + used, outlen - used, "%s%s", used ? " " : "", row->names[k]);
		}
	if (!bits)
		snprintf(out, outlen, "%s", row->names[0]);
	return 0;
}

/* Redis's oom-score-adj-values: three integers from -2000 to 2000 (strtoll:
 * an empty word is 0). */
static int canon_oom_values(const struct setting *row, const char *v, char *out, size_t outlen, char *err,
			    size_t errlen)
{
	char *buf, *words[4];
	int n = split_words(v, &buf, words, 4);
	long long vals[3];
	int r = 0;
	if (n != 3) {
		r = redis_error(row, "wrong number of arguments", err, errlen);
		goto out;
	}
	for (int i = 0; i < 3; i++) {
		char *end;
		vals[i] = strtoll(words[i], &end, 10);
		if (*end || vals[i] < -2000 || vals[i] > 2000) {
			r = redis_error(
				row, "Invalid oom-score-adj-values, elements must be between -2000 and 2000.",
				err, errlen);
			goto out;
		}
	}
	snprintf(out, outlen, "%lld %lld %lld", vals[0], vals[1], vals[2]);
out:
	zr_free(buf);
	return r;
}

/* Redis's string2d: all of V, no leading space, not NaN, no overflow. */
static bool redis_string2d(const char *v, double *d)
{
	char *end;
	errno = 0;
	*d = strtod(v, &end);
	if (!*v || isspace((unsigned char)v[0]) || *end || isnan(*d))
		return false;
	return !(errno == ERANGE && (*d == HUGE_VAL || *d == -HUGE_VAL || fpclassify(*d) == FP_ZERO));
}

/* Redis's latency-tracking-info-percentiles: numbers from 0 to 100 ("" for
 * none), shown as "%f" without trailing zeros. */
static int canon_percentiles(const struct setting *row, const char *v, char *out, size_t outlen, char *err,
			     size_t errlen)
{
	char *buf, **words = zr_malloc(sizeof(char *) * (strlen(v) + 1));
	int n = split_words(v, &buf, words, (int)strlen(v) + 1), r = 0;
	if (n == 1 && !words[0][0])
		n = 0;
	out[0] = '\0';
	for (int i = 0; i < n; i++) {
		double d;
		if (!redis_string2d(words[i], &d)) {
			r = redis_error(row, "Invalid latency-tracking-info-percentiles parameters", err,
					errlen);
			break;
		}
		if (d > 100.0 || d < 0.0) {
			r = redis_error(
				row,
				"latency-tracking-info-percentiles parameters should sit between [0.0,100.0]",
				err, errlen);
			break;
		}
		char f[512];
		int len = snprintf(f, sizeof(f), "%f", d);
		if (strchr(f, '.')) { /* Redis's trimDoubleString */
			while (len > 0 && f[len - 1] == '0')
				len--;
			if (len > 0 && f[len - 1] == '.')
				len--;
		}
		size_t used = strlen(out);
		snprintf(out + used, outlen - used, "%s%.*s", i ? " " : "", len, f);
	}
	zr_free(buf);
	zr_free(words);
	return r;
}

/* Redis's replicaof / slaveof "<host> <port>" or "no one" (start-up only):
 * zarisd replicates from nobody, so only "no one" is taken. */
static int canon_replicaof(const struct setting *row, const char *v, char *out, size_t outlen, char *err,
			   size_t errlen)
{
	char *buf, *words[3];
	int n = split_words(v, &buf, words, 3);
	bool none = n == 2 && !strcasecmp(words[0], "no") && !strcasecmp(words[1], "one");
	zr_free(buf);
	if (n != 2)
		return redis_error(row, "wrong number of arguments", err, errlen);
	if (!none)
		return redis_error(row, "zarisd does not replicate yet: only 'no one' is taken", err, errlen);
	snprintf(out, outlen, "%s", "");
	return 0;
}

/* Redis's isValidAnnouncedHostname. */
static int canon_hostname(const struct setting *row, const char *v, char *out, size_t outlen, char *err,
			  size_t errlen)
{
	if (strlen(v) >= 256)
		return redis_error(row, "Hostnames must be less than 256 characters", err, errlen);
	for (const char *p = v; *p; p++)
		if (!isalnum((unsigned char)*p) && *p != '-' && *p != '.')
			return redis_error(
				row, "Hostnames may only contain alphanumeric characters, hyphens or dots",
				err, errlen);
	snprintf(out, outlen, "%s", v);
	return 0;
}

/* Redis's validateProcTitleTemplate: every {variable} known ({{ is a
 * brace), and the title it gives for an empty {title} not empty. */
static int canon_proc_title(const struct setting *row, const char *v, char *out, size_t outlen, char *err,
			    size_t errlen)
{
	/* what each variable gives with zarisd's defaults: empty or not */
	static const struct {
		const char *name;
		bool empty;
	} vars[] = { { "title", true },	       { "listen-addr", false }, { "server-mode", true },
		     { "config-file", false }, { "port", false },	 { "tls-port", false },
		     { "unixsocket", true } };
	bool text = false;
	for (const char *p = v; *p;) {
		const char *open = strchr(p, '{');
		if (!open) {
			text = true;
			break;
		}
		text |= open > p;
		if (!open[1])
			goto bad;
		if (open[1] == '{') {
			text = true;
			p = open + 2;
			continue;
		}
		const char *close = strchr(open + 1, '}');
		if (!close)
			goto bad;
		size_t n = (size_t)(close - open - 1), k;
		for (k = 0; k < sizeof(vars) / sizeof(vars[0]); k++)
			if (strlen(vars[k].name) == n && !memcmp(vars[k].name, open + 1, n))
				break;
		if (k == sizeof(vars) / sizeof(vars[0]))
			goto bad;
		text |= !vars[k].empty;
		p = close + 1;
	}
	if (!text)
		goto bad;
	snprintf(out, outlen, "%s", v);
	return 0;
bad:
	return redis_error(row, "template format is invalid or contains unknown variables", err, errlen);
}

/* V as CONFIG GET shows ROW's value, after Redis's checks; 0 with a heap
 * string in *OUT, or -EINVAL with Redis's text in ERR. */
static int redis_canon(const struct setting *row, const char *v, char **out, char *err, size_t errlen)
{
	char buf[4096];
	long long ll;
	unsigned long long ull;
	int i;
	switch (row->kind) {
	case SK_BOOL:
		if ((i = parse_bool(v)) < 0)
			return bad_choice(row, err, errlen);
		snprintf(buf, sizeof(buf), "%s", i ? "yes" : "no");
		break;
	case SK_ENUM:
		if ((i = parse_enum(row, v)) < 0)
			return bad_choice(row, err, errlen);
		snprintf(buf, sizeof(buf), "%s", row->names[i]);
		break;
	case SK_LL:
		if (!zr_str_to_ll(v, strlen(v), &ll))
			return bad_integer(row, err, errlen);
		if (ll < row->min || ll > row->max)
			return out_of_range(row, err, errlen);
		snprintf(buf, sizeof(buf), "%lld", ll);
		break;
	case SK_MEMORY:
	case SK_UMEMORY:
		if (!zr_parse_memory(v, &ull))
			return redis_error(row, "argument must be a memory value", err, errlen);
		if (row->kind == SK_MEMORY &&
		    (ull > (unsigned long long)row->max || (long long)ull < row->min))
			return out_of_range(row, err, errlen);
		snprintf(buf, sizeof(buf), "%llu", ull);
		break;
	case SK_STRING:
		*out = zr_strdup(v);
		return 0;
	case SK_SPECIAL:
		if ((i = row->canon(row, v, buf, sizeof(buf), err, errlen)) < 0)
			return i;
		break;
	default:
		return redis_error(row, "unsupported", err, errlen); /* no other kind in the table */
	}
	*out = zr_strdup(buf);
	return 0;
}

/* settings_set of an SF_REDIS row. A value Redis would take is kept; a
 * setting for a feature zarisd lacks (REFUSE) takes only its default, and
 * so does a start-up-only setting at start-up, so that zarisd is never
 * started believing it runs e.g. daemonized or in cluster mode. */
static int redis_set(struct settings *s, const struct setting *row, const char *value, bool starting,
		     char *err, size_t errlen)
{
	char *text = NULL;
	int r = redis_canon(row, value, &text, err, errlen);
	if (r < 0)
		return r;
	size_t slot = redis_slot(row);
	const char *def = setting_rows[slot].def;
	if (strcmp(text, def) && row->refuse) {
		zr_free(text);
		return redis_error(row, row->refuse, err, errlen);
	}
	if (strcmp(text, def) && starting && (row->flags & SF_IMMUTABLE)) {
		snprintf(err, errlen,
			 "'%s' is taken for Redis compatibility only: zarisd runs with its default '%s'",
			 row->name, def);
		zr_free(text);
		return -EINVAL;
	}
	pthread_mutex_lock(&s->lock);
	zr_free(s->redis_only[slot]);
	s->redis_only[slot] = text;
	pthread_mutex_unlock(&s->lock);
	return 0;
}
