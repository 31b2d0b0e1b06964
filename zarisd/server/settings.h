/* settings — zarisd's configuration values. What each setting is (its
 * name, Redis's where Redis has it, type, range, choices, default, whether
 * CONFIG SET may change it) is config/schema.h, the table the cluster-file
 * loader reads too; this module keeps the live values, binds each schema
 * entry to its field and side effects, and serves command-line flags
 * (--maxmemory 64mb), the cluster file's keys (through settings_set),
 * CONFIG GET / SET and INFO.
 *
 * Values that CONFIG SET may change while workers run are relaxed atomics
 * (each is read on its own; no two need to change together). Strings that
 * may change (requirepass) are read through settings_requirepass_check(),
 * under the settings lock. Settings flagged immutable are written only
 * before the workers start.
 */
#ifndef ZR_SETTINGS_H
#define ZR_SETTINGS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "config/schema.h"

#define SETTINGS_MAX_CORES SCHEMA_MAX_CORES

/* Redis's protected-command settings (enable-debug-command): who may run
 * the command. */
enum settings_protected {
	SETTINGS_PROTECTED_NO = 0,
	SETTINGS_PROTECTED_YES = 1,
	SETTINGS_PROTECTED_LOCAL = 2, /* loopback or unix-socket clients only */
};

struct settings {
	/* start-up only (immutable once workers run) */
	int port;
	int native_port; /* the native protocol's port, 0 = off */
	int native_rf1;	 /* native-rf1: one copy, no journal records for native writes */
	char *bind;	 /* space-separated addresses */
	int threads;	 /* 0 = one per core in `cores` (or per online CPU) */
	int cores[SETTINGS_MAX_CORES];
	int ncores;	  /* 0 = no pinning */
	char *cores_text; /* as given, for CONFIG GET */
	int io_backend;	  /* 0 auto, 1 uring, 2 epoll */
	int databases;
	int shard_bits; /* log2 of the shard count */
	char *dir;
	char *logfile;
	char *pidfile;
	int tcp_backlog;
	int enable_debug_command; /* 0 no, 1 yes, 2 local (SETTINGS_PROTECTED_*) */
	int disable_thp;	  /* 1: no transparent huge pages for the process (Redis's disable-thp) */

	/* runtime (CONFIG SET) */
	_Atomic long long maxmemory;
	_Atomic int maxmemory_policy; /* enum store_evict_policy */
	_Atomic int maxmemory_samples;
	_Atomic long long proto_max_bulk_len;
	_Atomic long long client_query_buffer_limit;
	_Atomic unsigned long long obuf_hard_limit; /* client-output-buffer-limit normal <hard> (0: none) */
	_Atomic unsigned long long obuf_soft_limit; /* ... <soft> (0: none) */
	_Atomic long long obuf_soft_seconds;	    /* ... <seconds>, 0 to INT_MAX */
	_Atomic long long maxclients;		    /* Redis: an unsigned int */
	_Atomic int timeout;			    /* idle client timeout, seconds, 0 = never */
	_Atomic int tcp_keepalive;		    /* seconds */
	_Atomic int protected_mode;
	_Atomic int jemalloc_bg_thread; /* jemalloc's background purging (zr_mem_background_purge) */
	_Atomic int hz;
	_Atomic int lfu_log_factor;
	_Atomic int lfu_decay_time;
	_Atomic long long slowlog_log_slower_than;
	_Atomic long long slowlog_max_len;
	_Atomic long long latency_monitor_threshold;
	_Atomic int loglevel;
	_Atomic int active_expire_effort;

	pthread_mutex_t lock; /* guards the strings below */
	char *requirepass;    /* NULL or "" = no password */
	char *save;	      /* save rules "<seconds> <changes> ..." (persist/) */

	/* --- hashes and sets (cmd_hash.c, cmd_set.c): runtime, relaxed --- */
	_Atomic long long hash_max_listpack_entries;
	_Atomic long long hash_max_listpack_value;
	_Atomic long long set_max_intset_entries;

	/* --- bitmaps and HyperLogLog (cmd_bitmap.c, cmd_hll.c): runtime, relaxed --- */
	_Atomic long long hll_sparse_max_bytes; /* sparse HLLs turn dense past this size */

	/* --- sorted sets (cmd_zset.c): runtime, relaxed --- */
	_Atomic long long zset_max_listpack_entries;
	_Atomic long long zset_max_listpack_value;

	/* --- lists (cmd_list.c): runtime, relaxed; read when a list is created --- */
	_Atomic long long list_max_listpack_size;

	/* --- pub/sub and keyspace notifications (pubsub.c, notify.c): runtime, relaxed --- */
	_Atomic int notify_keyspace_events;		   /* enum notify_flag bits (notify.h) */
	_Atomic unsigned long long obuf_pubsub_hard_limit; /* client-output-buffer-limit pubsub <hard> */
	_Atomic unsigned long long obuf_pubsub_soft_limit; /* ... <soft> */
	_Atomic long long obuf_pubsub_soft_seconds;	   /* ... <seconds> */
	/* client-output-buffer-limit replica (slave) <hard> <soft> <seconds>:
	 * how far a replica may fall behind the stream (repl/primary.c) */
	_Atomic unsigned long long obuf_replica_hard_limit;
	_Atomic unsigned long long obuf_replica_soft_limit;
	_Atomic long long obuf_replica_soft_seconds;

	/* --- persistence (persist/): save, appendonly, ... --- */
	char *dbfilename;	 /* start-up only */
	char *appendfilename;	 /* start-up only: segment name prefix */
	char *appenddirname;	 /* start-up only */
	_Atomic int aof_enabled; /* appendonly: CONFIG SET turns the log on/off at run time */
	_Atomic int appendfsync; /* enum aof_fsync: always, everysec, no */
	_Atomic long long auto_aof_rewrite_percentage;
	_Atomic long long auto_aof_rewrite_min_size;
	_Atomic int aof_load_truncated;
	_Atomic int rdb_key_save_delay; /* us per key a snapshot sleeps (snapshot.h); < 0: 1 us, 1 in -N */
	/* `save` (above, under lock) holds the "<seconds> <changes> ..." rules */

	/* --- replication (repl/): runtime, relaxed; masterauth under lock --- */
	_Atomic int replica_read_only;
	_Atomic int replica_serve_stale_data;
	_Atomic int min_replicas_to_write;
	_Atomic int min_replicas_max_lag; /* seconds */
	_Atomic long long repl_backlog_size;
	_Atomic int repl_timeout;	 /* seconds */
	char *masterauth;		 /* NULL or "" = none; under lock */
	_Atomic int replica_ack;	 /* replicas that must confirm a write before its reply */
	_Atomic int replica_ack_timeout; /* ms */

	/* --- cluster (cluster/): start-up only --- */
	int cluster_enabled;
	int write_lease;			/* writes only under a CLUSTER LEASE (server.h) */
	_Atomic int allow_undeclared_keys;	/* scripts may use undeclared keys, every shard locked */
	_Atomic long long busy_reply_threshold; /* ms (lua-time-limit is its alias) */
	_Atomic int meta_max_labels;		/* labels per key's metadata */
	_Atomic int meta_max_label_length;	/* bytes of a label, entity, content-type */

	/* --- Redis's other settings (settings.c, SF_REDIS rows): CONFIG SET
	 * checks and takes them as Redis does, CONFIG GET shows them; nothing
	 * in zarisd acts on them. Their values as CONFIG GET shows them, by
	 * row index; under lock. --- */
	char **redis_only;
};

/* Fills S with Redis's defaults (127.0.0.1:6379, 16 databases, ...). */
void settings_init(struct settings *s);
/* Frees the strings. */
void settings_free(struct settings *s);

/* Sets NAME (case-insensitive, Redis's name) to VALUE. STARTING: before the
 * workers run, so immutable settings are allowed. Returns 0, or -EINVAL /
 * -ENOENT / -EPERM with a message in ERR (Redis's CONFIG SET wording). */
int settings_set(struct settings *s, const char *name, const char *value, bool starting, char *err,
		 size_t errlen);

/* Calls FN for every setting whose name matches the glob PATTERN, with its
 * current value as text (what CONFIG GET shows). */
typedef void (*settings_visit_fn)(const char *name, const char *value, void *ctx);
void settings_get(struct settings *s, const char *pattern, settings_visit_fn fn, void *ctx);

/* Whether NAME is a setting (for --flag parsing). */
bool settings_exists(const char *name);
/* Whether NAME is a setting that only start-up may set (CONFIG SET answers
 * Redis's "can't set immutable config"). */
bool settings_is_immutable(const char *name);

/* true when a password is configured. */
bool settings_requirepass_set(struct settings *s);
/* true when PW matches the configured password (constant time). */
bool settings_requirepass_check(struct settings *s, const char *pw, size_t len);

/* Lists every setting name with a one-line description (for --help). */
void settings_print_help(FILE *f);

/* native-rf1 keeps one copy: why S's other settings contradict it (the
 * append-only log is on, or replicaof names a primary), as an error text
 * naming both, or NULL when they do not (or native-rf1 is off). */
const char *settings_rf1_conflict(struct settings *s);

#endif
