/* settings — see settings.h. One row per setting: its Redis name, how its
 * value is parsed and shown, and whether CONFIG SET may change it. */
#include "zarisd/commands/settings.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "zarisd/commands/notify.h"
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
	SK_SPECIAL,	 /* parse/show functions */
};

#define SF_IMMUTABLE 0x1 /* start-up only: CONFIG SET refuses */
#define SF_SENSITIVE 0x2 /* redact in logs */
#define SF_CHDIR 0x4	 /* dir: CONFIG SET changes the working directory; shows getcwd() */
#define SF_BASENAME 0x8	 /* a file name, not a path (dbfilename) */

struct setting;
typedef int (*setting_parse_fn)(struct settings *s, const struct setting *row, const char *v, char *err,
				size_t errlen);
typedef void (*setting_show_fn)(struct settings *s, char *buf, size_t size);

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
static void show_hz(struct settings *s, char *buf, size_t size);

#define OFF(field) offsetof(struct settings, field)
static const struct setting setting_rows[] = {
	{ "port", SK_PLAIN_INT, OFF(port), SF_IMMUTABLE, 0, 65535, NULL, NULL, NULL,
	  "TCP port to listen on" },
	{ "bind", SK_PLAIN_STRING, OFF(bind), SF_IMMUTABLE, 0, 0, NULL, NULL, NULL,
	  "addresses to listen on, space separated" },
	{ "threads", SK_PLAIN_INT, OFF(threads), SF_IMMUTABLE, 0, 256, NULL, NULL, NULL,
	  "worker threads (0 = one per core)" },
	{ "cores", SK_SPECIAL, 0, SF_IMMUTABLE, 0, 0, NULL, parse_cores, show_cores,
	  "CPU list to pin workers to, e.g. 0-3 or 1,3" },
	{ "io-backend", SK_PLAIN_INT, OFF(io_backend), SF_IMMUTABLE, 0, 2, io_backend_names, NULL, NULL,
	  "auto|uring|epoll" },
	{ "databases", SK_PLAIN_INT, OFF(databases), SF_IMMUTABLE, 1, 1 << 20, NULL, NULL, NULL,
	  "number of databases" },
	{ "shard-bits", SK_PLAIN_INT, OFF(shard_bits), SF_IMMUTABLE, 0, 16, NULL, NULL, NULL,
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
};
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
	}
	return 0;
bad_value:
	return bad_integer(row, err, errlen);
}

static void setting_show(struct settings *s, const struct setting *row, char *buf, size_t size)
{
	switch (row->kind) {
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
