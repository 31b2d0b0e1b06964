/* settings — see settings.h. Each schema entry (config/schema.h) of
 * zarisd's own is bound to its field here (bindings[]), Redis's other
 * settings are kept as CONFIG GET shows them (s->redis_only); the parse and
 * show functions of the settings with a syntax of their own live here. */
#include "zarisd/server/settings.h"

#include <assert.h>

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

#include "config/schema.h"
#include "zarisd/server/notify_flags.h"
#include "zarisd/core/log.h"
#include "zarisd/core/mem.h"
#include "zarisd/core/util.h"
#include "zarisd/store/store.h"

/* Where a zarisd setting keeps its value. */
enum setting_store {
	ST_NONE,	 /* SCHEMA_F_REDIS entries: s->redis_only, as CONFIG GET shows it */
	ST_INT,		 /* _Atomic int: a bool, an enum index or an int */
	ST_LL,		 /* _Atomic long long: an integer or a size */
	ST_PLAIN_INT,	 /* int, start-up only: an integer, a bool or an enum index */
	ST_STRING,	 /* char *, under s->lock */
	ST_PLAIN_STRING, /* char *, start-up only */
	ST_SPECIAL,	 /* parse / show functions */
};

typedef int (*setting_parse_fn)(struct settings *s, const struct schema_entry *row, const char *v, char *err,
				size_t errlen);
typedef void (*setting_show_fn)(struct settings *s, char *buf, size_t size);
/* SCHEMA_F_REDIS entries with a syntax of their own: V checked as Redis does and written to OUT as
 * CONFIG GET shows it; 0, or -EINVAL with Redis's text in ERR. */
typedef int (*setting_canon_fn)(const struct schema_entry *row, const char *v, char *out, size_t outlen,
				char *err, size_t errlen);

/* A zarisd setting's field and side effects; its name, type, range,
 * choices and default are its schema entry's (config/schema.h). */
struct setting_binding {
	enum setting_store store;
	size_t offset;		/* into struct settings */
	setting_parse_fn parse; /* ST_SPECIAL */
	setting_show_fn show;	/* ST_SPECIAL */
	void (*apply)(int v);	/* ST_INT: the new value must also reach another module at once */
};

static int parse_save(struct settings *s, const struct schema_entry *row, const char *v, char *err,
		      size_t errlen);
static void show_save(struct settings *s, char *buf, size_t size);
static int parse_cores(struct settings *s, const struct schema_entry *row, const char *v, char *err,
		       size_t errlen);
static void show_cores(struct settings *s, char *buf, size_t size);
static int parse_obuf(struct settings *s, const struct schema_entry *row, const char *v, char *err,
		      size_t errlen);
static void show_obuf(struct settings *s, char *buf, size_t size);
static int parse_notify(struct settings *s, const struct schema_entry *row, const char *v, char *err,
			size_t errlen);
static void show_notify(struct settings *s, char *buf, size_t size);
static int parse_hz(struct settings *s, const struct schema_entry *row, const char *v, char *err,
		    size_t errlen);
static void show_hz(struct settings *s, char *buf, size_t size);
static int parse_backlog(struct settings *s, const struct schema_entry *row, const char *v, char *err,
			 size_t errlen);
static void show_backlog(struct settings *s, char *buf, size_t size);
static int redis_set(struct settings *s, const struct schema_entry *row, const char *value, bool starting,
		     char *err, size_t errlen);
static void apply_loglevel(int v);
static void apply_jemalloc_bg_thread(int v);

static int canon_percent_memory(const struct schema_entry *row, const char *v, char *out, size_t outlen,
				char *err, size_t errlen);
static int canon_octal(const struct schema_entry *row, const char *v, char *out, size_t outlen, char *err,
		       size_t errlen);
static int canon_oom_adj(const struct schema_entry *row, const char *v, char *out, size_t outlen, char *err,
			 size_t errlen);
static int canon_shutdown(const struct schema_entry *row, const char *v, char *out, size_t outlen, char *err,
			  size_t errlen);
static int canon_oom_values(const struct schema_entry *row, const char *v, char *out, size_t outlen,
			    char *err, size_t errlen);
static int canon_percentiles(const struct schema_entry *row, const char *v, char *out, size_t outlen,
			     char *err, size_t errlen);
static int canon_replicaof(const struct schema_entry *row, const char *v, char *out, size_t outlen, char *err,
			   size_t errlen);
static int canon_hostname(const struct schema_entry *row, const char *v, char *out, size_t outlen, char *err,
			  size_t errlen);
static int canon_proc_title(const struct schema_entry *row, const char *v, char *out, size_t outlen,
			    char *err, size_t errlen);

#define OFF(field) offsetof(struct settings, field)
/* Every zarisd setting of the schema (enum schema_id) has its binding;
 * a missing one is ST_NONE, which tests/unit/schema.c refuses. */
static const struct setting_binding bindings[SCHEMA_ID_REDIS_FIRST] = {
	[SCHEMA_ID_PORT] = { ST_PLAIN_INT, OFF(port) },
	[SCHEMA_ID_BIND] = { ST_PLAIN_STRING, OFF(bind) },
	[SCHEMA_ID_THREADS] = { ST_PLAIN_INT, OFF(threads) },
	[SCHEMA_ID_CORES] = { ST_SPECIAL, 0, parse_cores, show_cores },
	[SCHEMA_ID_IO_BACKEND] = { ST_PLAIN_INT, OFF(io_backend) },
	[SCHEMA_ID_DATABASES] = { ST_PLAIN_INT, OFF(databases) },
	[SCHEMA_ID_SHARD_BITS] = { ST_PLAIN_INT, OFF(shard_bits) },
	[SCHEMA_ID_DIR] = { ST_STRING, OFF(dir) },
	[SCHEMA_ID_LOGFILE] = { ST_PLAIN_STRING, OFF(logfile) },
	[SCHEMA_ID_PIDFILE] = { ST_PLAIN_STRING, OFF(pidfile) },
	[SCHEMA_ID_TCP_BACKLOG] = { ST_PLAIN_INT, OFF(tcp_backlog) },
	[SCHEMA_ID_ENABLE_DEBUG_COMMAND] = { ST_PLAIN_INT, OFF(enable_debug_command) },
	[SCHEMA_ID_DISABLE_THP] = { ST_PLAIN_INT, OFF(disable_thp) },
	[SCHEMA_ID_MAXMEMORY] = { ST_LL, OFF(maxmemory) },
	[SCHEMA_ID_MAXMEMORY_POLICY] = { ST_INT, OFF(maxmemory_policy) },
	[SCHEMA_ID_MAXMEMORY_SAMPLES] = { ST_INT, OFF(maxmemory_samples) },
	[SCHEMA_ID_PROTO_MAX_BULK_LEN] = { ST_LL, OFF(proto_max_bulk_len) },
	[SCHEMA_ID_CLIENT_QUERY_BUFFER_LIMIT] = { ST_LL, OFF(client_query_buffer_limit) },
	[SCHEMA_ID_CLIENT_OUTPUT_BUFFER_LIMIT] = { ST_SPECIAL, 0, parse_obuf, show_obuf },
	[SCHEMA_ID_MAXCLIENTS] = { ST_LL, OFF(maxclients) },
	[SCHEMA_ID_TIMEOUT] = { ST_INT, OFF(timeout) },
	[SCHEMA_ID_TCP_KEEPALIVE] = { ST_INT, OFF(tcp_keepalive) },
	[SCHEMA_ID_PROTECTED_MODE] = { ST_INT, OFF(protected_mode) },
	[SCHEMA_ID_JEMALLOC_BG_THREAD] = { ST_INT, OFF(jemalloc_bg_thread),
					   .apply = apply_jemalloc_bg_thread },
	[SCHEMA_ID_HZ] = { ST_SPECIAL, 0, parse_hz, show_hz },
	[SCHEMA_ID_LFU_LOG_FACTOR] = { ST_INT, OFF(lfu_log_factor) },
	[SCHEMA_ID_LFU_DECAY_TIME] = { ST_INT, OFF(lfu_decay_time) },
	[SCHEMA_ID_SLOWLOG_LOG_SLOWER_THAN] = { ST_LL, OFF(slowlog_log_slower_than) },
	[SCHEMA_ID_SLOWLOG_MAX_LEN] = { ST_LL, OFF(slowlog_max_len) },
	[SCHEMA_ID_LATENCY_MONITOR_THRESHOLD] = { ST_LL, OFF(latency_monitor_threshold) },
	[SCHEMA_ID_LOGLEVEL] = { ST_INT, OFF(loglevel), .apply = apply_loglevel },
	[SCHEMA_ID_ACTIVE_EXPIRE_EFFORT] = { ST_INT, OFF(active_expire_effort) },
	[SCHEMA_ID_REQUIREPASS] = { ST_STRING, OFF(requirepass) },
	[SCHEMA_ID_NOTIFY_KEYSPACE_EVENTS] = { ST_SPECIAL, 0, parse_notify, show_notify },
	[SCHEMA_ID_HASH_MAX_LISTPACK_ENTRIES] = { ST_LL, OFF(hash_max_listpack_entries) },
	[SCHEMA_ID_HASH_MAX_LISTPACK_VALUE] = { ST_LL, OFF(hash_max_listpack_value) },
	[SCHEMA_ID_HASH_MAX_ZIPLIST_ENTRIES] = { ST_LL, OFF(hash_max_listpack_entries) },
	[SCHEMA_ID_HASH_MAX_ZIPLIST_VALUE] = { ST_LL, OFF(hash_max_listpack_value) },
	[SCHEMA_ID_SET_MAX_INTSET_ENTRIES] = { ST_LL, OFF(set_max_intset_entries) },
	[SCHEMA_ID_HLL_SPARSE_MAX_BYTES] = { ST_LL, OFF(hll_sparse_max_bytes) },
	[SCHEMA_ID_ZSET_MAX_LISTPACK_ENTRIES] = { ST_LL, OFF(zset_max_listpack_entries) },
	[SCHEMA_ID_ZSET_MAX_LISTPACK_VALUE] = { ST_LL, OFF(zset_max_listpack_value) },
	[SCHEMA_ID_ZSET_MAX_ZIPLIST_ENTRIES] = { ST_LL, OFF(zset_max_listpack_entries) },
	[SCHEMA_ID_ZSET_MAX_ZIPLIST_VALUE] = { ST_LL, OFF(zset_max_listpack_value) },
	[SCHEMA_ID_LIST_MAX_LISTPACK_SIZE] = { ST_LL, OFF(list_max_listpack_size) },
	[SCHEMA_ID_LIST_MAX_ZIPLIST_SIZE] = { ST_LL, OFF(list_max_listpack_size) },
	[SCHEMA_ID_DBFILENAME] = { ST_STRING, OFF(dbfilename) },
	[SCHEMA_ID_APPENDFILENAME] = { ST_PLAIN_STRING, OFF(appendfilename) },
	[SCHEMA_ID_APPENDDIRNAME] = { ST_PLAIN_STRING, OFF(appenddirname) },
	[SCHEMA_ID_APPENDONLY] = { ST_INT, OFF(aof_enabled) },
	[SCHEMA_ID_APPENDFSYNC] = { ST_INT, OFF(appendfsync) },
	[SCHEMA_ID_SAVE] = { ST_SPECIAL, 0, parse_save, show_save },
	[SCHEMA_ID_AUTO_AOF_REWRITE_PERCENTAGE] = { ST_LL, OFF(auto_aof_rewrite_percentage) },
	[SCHEMA_ID_AUTO_AOF_REWRITE_MIN_SIZE] = { ST_LL, OFF(auto_aof_rewrite_min_size) },
	[SCHEMA_ID_AOF_LOAD_TRUNCATED] = { ST_INT, OFF(aof_load_truncated) },
	[SCHEMA_ID_REPLICA_READ_ONLY] = { ST_INT, OFF(replica_read_only) },
	[SCHEMA_ID_REPLICA_SERVE_STALE_DATA] = { ST_INT, OFF(replica_serve_stale_data) },
	[SCHEMA_ID_MIN_REPLICAS_TO_WRITE] = { ST_INT, OFF(min_replicas_to_write) },
	[SCHEMA_ID_MIN_REPLICAS_MAX_LAG] = { ST_INT, OFF(min_replicas_max_lag) },
	[SCHEMA_ID_REPL_BACKLOG_SIZE] = { ST_SPECIAL, 0, parse_backlog, show_backlog },
	[SCHEMA_ID_REPL_TIMEOUT] = { ST_INT, OFF(repl_timeout) },
	[SCHEMA_ID_MASTERAUTH] = { ST_STRING, OFF(masterauth) },
	[SCHEMA_ID_REPLICA_ACK] = { ST_INT, OFF(replica_ack) },
	[SCHEMA_ID_REPLICA_ACK_TIMEOUT] = { ST_INT, OFF(replica_ack_timeout) },
	[SCHEMA_ID_SLAVE_READ_ONLY] = { ST_INT, OFF(replica_read_only) },
	[SCHEMA_ID_SLAVE_SERVE_STALE_DATA] = { ST_INT, OFF(replica_serve_stale_data) },
	[SCHEMA_ID_MIN_SLAVES_TO_WRITE] = { ST_INT, OFF(min_replicas_to_write) },
	[SCHEMA_ID_MIN_SLAVES_MAX_LAG] = { ST_INT, OFF(min_replicas_max_lag) },
	[SCHEMA_ID_CLUSTER_ENABLED] = { ST_PLAIN_INT, OFF(cluster_enabled) },
	[SCHEMA_ID_WRITE_LEASE] = { ST_PLAIN_INT, OFF(write_lease) },
	[SCHEMA_ID_ALLOW_UNDECLARED_KEYS] = { ST_INT, OFF(allow_undeclared_keys) },
	[SCHEMA_ID_BUSY_REPLY_THRESHOLD] = { ST_LL, OFF(busy_reply_threshold) },
	[SCHEMA_ID_LUA_TIME_LIMIT] = { ST_LL, OFF(busy_reply_threshold) },
	[SCHEMA_ID_META_MAX_LABELS] = { ST_INT, OFF(meta_max_labels) },
	[SCHEMA_ID_META_MAX_LABEL_LENGTH] = { ST_INT, OFF(meta_max_label_length) },
	[SCHEMA_ID_NATIVE_PORT] = { ST_PLAIN_INT, OFF(native_port) },
	[SCHEMA_ID_NATIVE_RF1] = { ST_PLAIN_INT, OFF(native_rf1) },
	[SCHEMA_ID_RDB_KEY_SAVE_DELAY] = { ST_INT, OFF(rdb_key_save_delay) },
};
#undef OFF

/* Redis's settings whose syntax zarisd checks with a function of its own */
static const struct {
	const char *name;
	setting_canon_fn canon;
} redis_canons[] = {
	{ "cluster-announce-hostname", canon_hostname },
	{ "proc-title-template", canon_proc_title },
	{ "oom-score-adj", canon_oom_adj },
	{ "shutdown-on-sigint", canon_shutdown },
	{ "shutdown-on-sigterm", canon_shutdown },
	{ "unixsocketperm", canon_octal },
	{ "maxmemory-clients", canon_percent_memory },
	{ "oom-score-adj-values", canon_oom_values },
	{ "replicaof", canon_replicaof },
	{ "slaveof", canon_replicaof },
	{ "latency-tracking-info-percentiles", canon_percentiles },
};

static setting_canon_fn canon_of(const struct schema_entry *row)
{
	for (size_t i = 0; i < sizeof(redis_canons) / sizeof(redis_canons[0]); i++)
		if (!strcmp(redis_canons[i].name, row->name))
			return redis_canons[i].canon;
	return NULL;
}

/* ROW's binding; NULL for Redis's other settings. */
static const struct setting_binding *binding_of(const struct schema_entry *row)
{
	size_t i = schema_index(row);
	return i < SCHEMA_ID_REDIS_FIRST ? &bindings[i] : NULL;
}

bool settings_exists(const char *name)
{
	return schema_find(name) != NULL;
}

bool settings_is_immutable(const char *name)
{
	const struct schema_entry *row = schema_find(name);
	return row && (row->flags & SCHEMA_F_IMMUTABLE);
}

/* The index of the s->redis_only slot a SCHEMA_F_REDIS entry shows: its own, or
 * that of the row it is an alias of. */
static size_t redis_slot(const struct schema_entry *row)
{
	return schema_index(schema_primary(row));
}

static int set_value(struct settings *s, const struct schema_entry *row, const char *value, bool starting,
		     bool effects, char *err, size_t errlen);

void settings_init(struct settings *s)
{
	memset(s, 0, sizeof(*s));
	pthread_mutex_init(&s->lock, NULL);
	s->redis_only = zr_calloc(schema_count, sizeof(char *));
	/* Every setting at its schema default, parsed as start-up parses a flag
	 * but without side effects: main applies those once every setting is
	 * read. An alias shares its primary's value. */
	for (size_t i = 0; i < schema_count; i++) {
		const struct schema_entry *row = &schema_table[i];
		char err[256];
		if (!row->def)
			continue;
		if (row->flags & SCHEMA_F_REDIS) {
			s->redis_only[i] = zr_strdup(row->def);
			continue;
		}
		int rc = set_value(s, row, row->def, true, false, err, sizeof(err));
		assert(rc == 0); /* tests/unit/schema.c: every default passes its checks */
		(void)rc;
	}
}
void settings_free(struct settings *s)
{
	ZR_FREE(s->bind);
	ZR_FREE(s->dir);
	ZR_FREE(s->logfile);
	ZR_FREE(s->pidfile);
	ZR_FREE(s->cores_text);
	ZR_FREE(s->requirepass);
	ZR_FREE(s->masterauth);
	ZR_FREE(s->dbfilename);
	ZR_FREE(s->appendfilename);
	ZR_FREE(s->appenddirname);
	ZR_FREE(s->save);
	for (size_t i = 0; s->redis_only && i < schema_count; i++)
		zr_free(s->redis_only[i]);
	ZR_FREE(s->redis_only);
	pthread_mutex_destroy(&s->lock);
}

static void *field(struct settings *s, const struct schema_entry *row)
{
	return (char *)s + binding_of(row)->offset;
}
static int parse_cores(struct settings *s, const struct schema_entry *row, const char *v, char *err,
		       size_t errlen)
{
	int cores[SETTINGS_MAX_CORES];
	int n = 0;
	const char *p = v;
	while (*p) {
		char *end;
		long lo = strtol(p, &end, 10), hi;
		if (end == p || lo < row->min || lo > row->max)
			goto bad;
		hi = lo;
		p = end;
		if (*p == '-') {
			hi = strtol(p + 1, &end, 10);
			if (end == p + 1 || hi < lo || hi > row->max)
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
static int obuf_error(const struct schema_entry *row, const char *what, char *err, size_t errlen)
{
	snprintf(err, errlen,
		 "CONFIG SET failed (possibly related to argument '%s') - %s in buffer limit configuration.",
		 row->name, what);
	return -EINVAL;
}

static int parse_obuf(struct settings *s, const struct schema_entry *row, const char *v, char *err,
		      size_t errlen)
{
	/* "normal hard soft seconds [replica ...] [pubsub ...]": each class
	 * given is set, the others are left as they were. */
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
	int normal = -1, pubsub = -1, replica = -1;
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
		if (!strcasecmp(cls, "replica") || !strcasecmp(cls, "slave"))
			replica = i / 4;
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
	if (replica >= 0) {
		atomic_store_explicit(&s->obuf_replica_hard_limit, vals[replica][0], memory_order_relaxed);
		atomic_store_explicit(&s->obuf_replica_soft_limit, vals[replica][1], memory_order_relaxed);
		atomic_store_explicit(&s->obuf_replica_soft_seconds, (long long)vals[replica][2],
				      memory_order_relaxed);
	}
	return 0;
}

static void show_obuf(struct settings *s, char *buf, size_t size)
{
	snprintf(buf, size, "normal %llu %llu %lld slave %llu %llu %lld pubsub %llu %llu %lld",
		 atomic_load_explicit(&s->obuf_hard_limit, memory_order_relaxed),
		 atomic_load_explicit(&s->obuf_soft_limit, memory_order_relaxed),
		 atomic_load_explicit(&s->obuf_soft_seconds, memory_order_relaxed),
		 atomic_load_explicit(&s->obuf_replica_hard_limit, memory_order_relaxed),
		 atomic_load_explicit(&s->obuf_replica_soft_limit, memory_order_relaxed),
		 atomic_load_explicit(&s->obuf_replica_soft_seconds, memory_order_relaxed),
		 atomic_load_explicit(&s->obuf_pubsub_hard_limit, memory_order_relaxed),
		 atomic_load_explicit(&s->obuf_pubsub_soft_limit, memory_order_relaxed),
		 atomic_load_explicit(&s->obuf_pubsub_soft_seconds, memory_order_relaxed));
}

/* pub/sub: notify-keyspace-events is kept as flags (notify.h) */
/* Redis's texts for a value that is not an integer, and for one outside
 * ROW's range; both return -EINVAL. */
static int bad_integer(const struct schema_entry *row, char *err, size_t errlen)
{
	snprintf(
		err, errlen,
		"CONFIG SET failed (possibly related to argument '%s') - argument couldn't be parsed into an integer",
		row->name);
	return -EINVAL;
}

static int out_of_range(const struct schema_entry *row, char *err, size_t errlen)
{
	snprintf(
		err, errlen,
		"CONFIG SET failed (possibly related to argument '%s') - argument must be between %lld and %lld inclusive",
		row->name, row->min, row->max);
	return -EINVAL;
}

/* Redis's hz: any value from 0 to INT_MAX is taken and then held to 1..500
 * (its updateHZ), which is what CONFIG GET shows. */
static int parse_hz(struct settings *s, const struct schema_entry *row, const char *v, char *err,
		    size_t errlen)
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

/* Redis's repl-backlog-size: a memory value from 1, then held to at
 * least 16kb (its resizeReplicationBacklog), which CONFIG GET shows. */
static int parse_backlog(struct settings *s, const struct schema_entry *row, const char *v, char *err,
			 size_t errlen)
{
	unsigned long long ull;
	if (!zr_parse_memory(v, &ull)) {
		snprintf(
			err, errlen,
			"CONFIG SET failed (possibly related to argument '%s') - argument must be a memory value",
			row->name);
		return -EINVAL;
	}
	if (ull < (unsigned long long)row->min || ull > (unsigned long long)row->max)
		return out_of_range(row, err, errlen);
	atomic_store_explicit(&s->repl_backlog_size, ull < 16384 ? 16384 : (long long)ull,
			      memory_order_relaxed);
	return 0;
}

static void show_backlog(struct settings *s, char *buf, size_t size)
{
	snprintf(buf, size, "%lld", atomic_load_explicit(&s->repl_backlog_size, memory_order_relaxed));
}

static int parse_notify(struct settings *s, const struct schema_entry *row, const char *v, char *err,
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

static int parse_enum(const struct schema_entry *row, const char *v)
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

/* Redis's error for a value outside a yes/no or named setting's choices
 * (ROW's names; none for a yes/no setting); returns -EINVAL. */
static int bad_choice(const struct schema_entry *row, char *err, size_t errlen)
{
	if (row->type == SCHEMA_BOOL) {
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
	const char *const *shown = row->names_redis_order ? row->names_redis_order : row->names;
	for (int i = 0; shown[i]; i++) {
		size_t used = strlen(err);
		snprintf(err + used, errlen - used, "%s%s", i ? ", " : "", shown[i]);
	}
	return -EINVAL;
}

/* CONFIG SET dir: Redis's setConfigDirOption, chdir at once (main does it
 * at start-up, after every setting is read). Keeps the absolute path, so
 * a rollback (cmd_config.c) or a later relative value stays right. */
static int set_dir(struct settings *s, const struct schema_entry *row, const char *value, char *err,
		   size_t errlen)
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

/* settings_set of zarisd's own setting ROW; EFFECTS: pass the new value
 * to its apply hook (not while settings_init fills in the defaults). */
static int set_value(struct settings *s, const struct schema_entry *row, const char *value, bool starting,
		     bool effects, char *err, size_t errlen)
{
	const struct setting_binding *b = binding_of(row);
	if ((row->flags & SCHEMA_F_BASENAME) && (strchr(value, '/') || strchr(value, '\\'))) {
		snprintf(
			err, errlen,
			"CONFIG SET failed (possibly related to argument '%s') - %s can't be a path, just a filename",
			row->name, row->name);
		return -EINVAL;
	}
	if ((row->flags & SCHEMA_F_CHDIR) && !starting)
		return set_dir(s, row, value, err, errlen);
	long long ll;
	unsigned long long ull;
	switch (b->store) {
	case ST_SPECIAL:
		return b->parse(s, row, value, err, errlen);
	case ST_STRING:
		pthread_mutex_lock(&s->lock);
		zr_free(*(char **)field(s, row));
		*(char **)field(s, row) = zr_strdup(value);
		pthread_mutex_unlock(&s->lock);
		return 0;
	case ST_PLAIN_STRING:
		zr_free(*(char **)field(s, row));
		*(char **)field(s, row) = zr_strdup(value);
		return 0;
	case ST_NONE: /* SCHEMA_F_REDIS entries only (redis_set) */
		return 0;
	case ST_INT:
	case ST_LL:
	case ST_PLAIN_INT:
		break;
	}
	switch (row->type) {
	case SCHEMA_BOOL:
		if ((ll = parse_bool(value)) < 0)
			return bad_choice(row, err, errlen);
		break;
	case SCHEMA_ENUM:
		if ((ll = parse_enum(row, value)) < 0)
			return bad_choice(row, err, errlen);
		break;
	case SCHEMA_MEMORY:
		if (!zr_parse_memory(value, &ull)) {
			snprintf(
				err, errlen,
				"CONFIG SET failed (possibly related to argument '%s') - argument must be a memory value",
				row->name);
			return -EINVAL;
		}
		if (ull > (unsigned long long)row->max || (long long)ull < row->min)
			return out_of_range(row, err, errlen);
		ll = (long long)ull;
		break;
	default: /* SCHEMA_INT */
		if (!zr_str_to_ll(value, strlen(value), &ll))
			return bad_integer(row, err, errlen);
		if (ll < row->min || ll > row->max)
			return out_of_range(row, err, errlen);
		break;
	}
	if (b->store == ST_INT)
		atomic_store_explicit((_Atomic int *)field(s, row), (int)ll, memory_order_relaxed);
	else if (b->store == ST_LL)
		atomic_store_explicit((_Atomic long long *)field(s, row), ll, memory_order_relaxed);
	else
		*(int *)field(s, row) = (int)ll;
	if (effects && b->apply)
		b->apply((int)ll);
	return 0;
}

int settings_set(struct settings *s, const char *name, const char *value, bool starting, char *err,
		 size_t errlen)
{
	const struct schema_entry *row = schema_find(name);
	if (!row) {
		snprintf(err, errlen, "Unknown option or number of arguments for CONFIG SET - '%s'", name);
		return -ENOENT;
	}
	if ((row->flags & SCHEMA_F_IMMUTABLE) && !starting) {
		snprintf(err, errlen,
			 "CONFIG SET failed (possibly related to argument '%s') - can't set immutable config",
			 row->name);
		return -EPERM;
	}
	if (row->flags & SCHEMA_F_REDIS)
		return redis_set(s, row, value, starting, err, errlen);
	return set_value(s, row, value, starting, true, err, errlen);
}

static void setting_show(struct settings *s, const struct schema_entry *row, char *buf, size_t size)
{
	const struct setting_binding *b = binding_of(row);
	if (!b) {
		pthread_mutex_lock(&s->lock);
		snprintf(buf, size, "%s", s->redis_only[redis_slot(row)]);
		pthread_mutex_unlock(&s->lock);
		return;
	}
	long long v = 0;
	switch (b->store) {
	case ST_NONE:
		return;
	case ST_SPECIAL:
		b->show(s, buf, size);
		return;
	case ST_STRING:
		if ((row->flags & SCHEMA_F_CHDIR) && getcwd(buf, size))
			return; /* Redis shows the working directory itself */
		pthread_mutex_lock(&s->lock);
		snprintf(buf, size, "%s", *(char **)field(s, row));
		pthread_mutex_unlock(&s->lock);
		return;
	case ST_PLAIN_STRING:
		snprintf(buf, size, "%s", *(char **)field(s, row));
		return;
	case ST_INT:
		v = atomic_load_explicit((_Atomic int *)field(s, row), memory_order_relaxed);
		break;
	case ST_LL:
		v = atomic_load_explicit((_Atomic long long *)field(s, row), memory_order_relaxed);
		break;
	case ST_PLAIN_INT:
		v = *(int *)field(s, row);
		break;
	}
	if (row->type == SCHEMA_BOOL)
		snprintf(buf, size, "%s", v ? "yes" : "no");
	else if (row->type == SCHEMA_ENUM)
		snprintf(buf, size, "%s", row->names[v]);
	else
		snprintf(buf, size, "%lld", v);
}
void settings_get(struct settings *s, const char *pattern, settings_visit_fn fn, void *ctx)
{
	char value[1024];
	for (size_t i = 0; i < schema_count; i++) {
		const struct schema_entry *row = &schema_table[i];
		/* as Redis, a hidden setting answers only its exact name */
		if ((row->flags & SCHEMA_F_HIDDEN) && strpbrk(pattern, "*?["))
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
	for (size_t i = 0; i < schema_count; i++) {
		const struct schema_entry *row = &schema_table[i];
		fprintf(f, "  --%-28s %s%s\n", row->name, row->help,
			(row->flags & SCHEMA_F_IMMUTABLE) ? "" : " (CONFIG SET)");
	}
}

/* --- persistence: save rules ------------------------------------------------------ */

/* "<seconds> <changes>" pairs, or "" for none (Redis's format). */
static int parse_save(struct settings *s, const struct schema_entry *row, const char *v, char *err,
		      size_t errlen)
{
	if (!row->check(v)) {
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

/* --- Redis's other settings (SCHEMA_F_REDIS entries) ------------------------------------------ */

/* Redis's "CONFIG SET failed ..." prefix around WHAT; -EINVAL. */
static int redis_error(const struct schema_entry *row, const char *what, char *err, size_t errlen)
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
static int canon_percent_memory(const struct schema_entry *row, const char *v, char *out, size_t outlen,
				char *err, size_t errlen)
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

/* Redis's unixsocketperm: octal, 0 to 0777, shown in octal. */
static int canon_octal(const struct schema_entry *row, const char *v, char *out, size_t outlen, char *err,
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
static int canon_oom_adj(const struct schema_entry *row, const char *v, char *out, size_t outlen, char *err,
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
static int canon_shutdown(const struct schema_entry *row, const char *v, char *out, size_t outlen, char *err,
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
static int canon_oom_values(const struct schema_entry *row, const char *v, char *out, size_t outlen,
			    char *err, size_t errlen)
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
static int canon_percentiles(const struct schema_entry *row, const char *v, char *out, size_t outlen,
			     char *err, size_t errlen)
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

/* Redis's replicaof / slaveof "<host> <port>" or "no one" (start-up
 * only; REPLICAOF changes the role at run time). */
static int canon_replicaof(const struct schema_entry *row, const char *v, char *out, size_t outlen, char *err,
			   size_t errlen)
{
	char *buf, *words[3];
	int n = split_words(v, &buf, words, 3);
	bool none = n == 2 && !strcasecmp(words[0], "no") && !strcasecmp(words[1], "one");
	if (n != 2) {
		zr_free(buf);
		return redis_error(row, "wrong number of arguments", err, errlen);
	}
	char *end;
	long port = none ? 0 : strtol(words[1], &end, 10);
	if (!none && (*end || port < 0 || port > 65535)) {
		zr_free(buf);
		return redis_error(row, "Invalid master port", err, errlen);
	}
	/* "host port" (repl/ starts the link from it), "" for no one */
	if (none)
		snprintf(out, outlen, "%s", "");
	else
		snprintf(out, outlen, "%s %ld", words[0], port);
	zr_free(buf);
	return 0;
}

/* Redis's isValidAnnouncedHostname. */
static int canon_hostname(const struct schema_entry *row, const char *v, char *out, size_t outlen, char *err,
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
static int canon_proc_title(const struct schema_entry *row, const char *v, char *out, size_t outlen,
			    char *err, size_t errlen)
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
static int redis_canon(const struct schema_entry *row, const char *v, char **out, char *err, size_t errlen)
{
	char buf[4096];
	long long ll;
	unsigned long long ull;
	int i;
	setting_canon_fn canon = canon_of(row);
	if (canon) {
		if ((i = canon(row, v, buf, sizeof(buf), err, errlen)) < 0)
			return i;
		*out = zr_strdup(buf);
		return 0;
	}
	switch (row->type) {
	case SCHEMA_BOOL:
		if ((i = parse_bool(v)) < 0)
			return bad_choice(row, err, errlen);
		snprintf(buf, sizeof(buf), "%s", i ? "yes" : "no");
		break;
	case SCHEMA_ENUM:
		if ((i = parse_enum(row, v)) < 0)
			return bad_choice(row, err, errlen);
		snprintf(buf, sizeof(buf), "%s", row->names[i]);
		break;
	case SCHEMA_INT:
		if (!zr_str_to_ll(v, strlen(v), &ll))
			return bad_integer(row, err, errlen);
		if (ll < row->min || ll > row->max)
			return out_of_range(row, err, errlen);
		snprintf(buf, sizeof(buf), "%lld", ll);
		break;
	case SCHEMA_MEMORY:
	case SCHEMA_UMEMORY:
		if (!zr_parse_memory(v, &ull))
			return redis_error(row, "argument must be a memory value", err, errlen);
		if (row->type == SCHEMA_MEMORY &&
		    (ull > (unsigned long long)row->max || (long long)ull < row->min))
			return out_of_range(row, err, errlen);
		snprintf(buf, sizeof(buf), "%llu", ull);
		break;
	case SCHEMA_STRING:
		*out = zr_strdup(v);
		return 0;
	default:
		return redis_error(row, "unsupported", err, errlen); /* no other kind in the table */
	}
	*out = zr_strdup(buf);
	return 0;
}

/* settings_set of a SCHEMA_F_REDIS entry. A value Redis would take is kept; a
 * setting for a feature zarisd lacks (REFUSE) takes only its default, and
 * so does a start-up-only setting at start-up, so that zarisd is never
 * started believing it runs e.g. daemonized or in cluster mode. */
static int redis_set(struct settings *s, const struct schema_entry *row, const char *value, bool starting,
		     char *err, size_t errlen)
{
	char *text = NULL;
	int r = redis_canon(row, value, &text, err, errlen);
	if (r < 0)
		return r;
	size_t slot = redis_slot(row);
	const char *def = schema_table[slot].def;
	if (strcmp(text, def) && row->refuse) {
		zr_free(text);
		return redis_error(row, row->refuse, err, errlen);
	}
	/* replicaof is the one start-up Redis row zarisd acts on: repl/ reads
	 * it when it starts (repl_create) */
	if (strcmp(text, def) && starting && (row->flags & SCHEMA_F_IMMUTABLE) &&
	    strcmp(schema_table[slot].name, "replicaof")) {
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

static void read_replicaof(const char *name, const char *value, void *ctx)
{
	if (!strcasecmp(name, "replicaof") && value[0])
		*(bool *)ctx = true;
}

const char *settings_rf1_conflict(struct settings *s)
{
	if (!s->native_rf1)
		return NULL;
	if (atomic_load_explicit(&s->aof_enabled, memory_order_relaxed))
		return "native-rf1 yes keeps one copy and makes no journal records: it cannot be combined with "
		       "appendonly yes";
	bool replica = false;
	settings_get(s, "replicaof", read_replicaof, &replica);
	if (replica)
		return "native-rf1 yes keeps one copy: it cannot be combined with replicaof (this node would be "
		       "a replica)";
	return NULL;
}
