/* persist — see persist.h.
 *
 * Locks: `gate` (rwlock) orders whole-keyspace writes (FLUSHALL, SWAPDB:
 * read side, around handler and journal record) against a snapshot's
 * instant (write side), so such a command is either wholly before the
 * instant (in the image, its record <= the cut) or wholly after it. Order
 * (core/lock_order.h): sw, bg_mu, ctl, gate, then shard locks; fin_mu
 * under them. `ctl` serializes saves. `sw` serializes turning the log on
 * and off.
 */
#include "zarisd/persist/persist.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "zarisd/server/settings.h"
#include "zarisd/server/textbuf.h"
#include "zarisd/core/lock.h"
#include "zarisd/core/log.h"
#include "zarisd/core/mem.h"
#include "zarisd/core/thread.h"
#include "zarisd/core/util.h"
#include "zarisd/persist/aof.h"
#include "zarisd/persist/fileio.h"
#include "zarisd/journal/format.h"
#include "zarisd/journal/stream.h"
#include "zarisd/persist/load.h"
#include "zarisd/persist/snapshot.h"
#include "zarisd/store/store.h"

#define BGSAVE_RETRY_MS 5000 /* after a failed automatic save (Redis's CONFIG_BGSAVE_RETRY_DELAY) */

struct persist {
	struct persist_env env; /* what persistence reaches of the server (persist.h) */
	struct aof *aof;
	char *snap_path; /* as loaded at start-up (saves use snap_path_now) */
	char *aof_dir;	 /* as loaded at start-up (the log may move: aof_cut) */
	char *cwd;	 /* working directory the data is in; under sw */
	pthread_rwlock_t gate;
	pthread_mutex_t ctl; /* one save at a time */
	pthread_mutex_t sw;  /* appendonly on/off */
	pthread_mutex_t bg_mu;
	pthread_t bg;
	bool bg_joinable;
	bool replace_log;    /* persist_replace_begin stopped the log: END restarts it */
	_Atomic int bg_kind; /* 0 none, 1 bgsave, 2 rewrite */
	_Atomic int scheduled_rewrite;
	_Atomic int aof_on;
	/* Keyspace changes (Redis's server.dirty): every thread that runs
	 * commands counts into a slot of its own (a shared counter cost a
	 * locked add on one cache line per write, bounced between workers);
	 * the count since the last save is their sum minus changes_saved. */
	struct change_slot *_Atomic change_slots;
	_Atomic uint64_t changes_saved; /* the sum at the last save's instant */
	uint64_t id;			/* tells a thread's slot of this P from one of an earlier P */
	_Atomic int64_t bg_start_ms;
	/* a replica's full sync writes a snapshot since (0: none); INFO shows
	 * it as Redis shows the child of a diskless sync, an RDB save */
	_Atomic int64_t sync_start_ms;
	_Atomic int last_bgsave_ok, last_rewrite_ok;
	_Atomic int64_t last_bgsave_sec, last_rewrite_sec;
	_Atomic int64_t last_try_ms;
	_Atomic uint64_t saves, rewrites;
	_Atomic uint64_t rewrite_failures; /* consecutive: a success resets it */
	_Atomic uint64_t keys_done, keys_total;
	_Atomic uint64_t last_cow_peak;	   /* of the last snapshot save (rdb_last_cow_size) */
	_Atomic uint64_t last_rewrite_cow; /* of the last rewrite (aof_last_cow_size) */
	_Atomic uint64_t aof_base_size;
	struct load_result loaded;
	pthread_t cron;
	_Atomic int cron_stop;
	/* persist_shutdown_busy: the final save while workers still run */
	pthread_mutex_t fin_mu;
	pthread_cond_t fin_cond; /* fin_state changed */
	int fin_state;		 /* enum fin_state, under fin_mu */
	int fin_rc;		 /* the final save's result once FIN_DONE */
	/* Set at the instant of that final save (every shard lock held, so
	 * a command that locks after it sees it): a write from then on is
	 * missing from the image, so no reply is sent any more
	 * (persist_replies_frozen). Relaxed: the shard locks order it. */
	_Atomic int frozen;
};

enum fin_state {
	FIN_NONE = 0,
	FIN_SAVING,    /* the final save waits for the shard locks */
	FIN_INSTANT,   /* it passed its instant: only its I/O is left */
	FIN_DONE,      /* it ended (fin_rc), or no save was due */
	FIN_ABANDONED, /* the locks did not come in time: no save may cut the log any more */
};

/* One thread's count, written only by that thread, linked into
 * p->change_slots on its first write, freed with P. 64 bytes: a block of
 * the allocator's 64-byte class, so a line of its own (no _Alignas: the
 * sanitizers' allocators promise 16). */
struct change_slot {
	_Atomic uint64_t n;
	struct change_slot *next;
	char pad[64 - sizeof(uint64_t) - sizeof(void *)];
};

static _Atomic uint64_t persist_ids;
static _Thread_local struct change_slot *tl_slot;
static _Thread_local uint64_t tl_slot_owner; /* the id of the persist tl_slot belongs to */

/* A thread whose work must not go on while a busy shutdown ends the
 * process (persist_shutdown_busy) waits here for the end. Signals are
 * blocked in every thread (net.h), so nothing wakes it. */
static void park_until_exit(void)
{
	for (;;)
		pause();
}

int persist_write_errno(struct persist *p)
{
	if (!p || !atomic_load_explicit(&p->aof_on, memory_order_relaxed))
		return 0;
	return aof_write_errno(p->aof);
}

/* --- keyspace change counts --------------------------------------------------------- */

static void count_changes(struct persist *p, uint64_t n)
{
	if (tl_slot_owner != p->id) {
		struct change_slot *s = zr_calloc(1, sizeof(*s));
		s->next = atomic_load_explicit(&p->change_slots, memory_order_relaxed);
		while (!atomic_compare_exchange_weak_explicit(&p->change_slots, &s->next, s,
							      memory_order_release, memory_order_relaxed))
			;
		tl_slot = s;
		tl_slot_owner = p->id;
	}
	atomic_store_explicit(&tl_slot->n, atomic_load_explicit(&tl_slot->n, memory_order_relaxed) + n,
			      memory_order_relaxed);
}

static uint64_t changes_total(struct persist *p)
{
	uint64_t sum = 0;
	for (struct change_slot *s = atomic_load_explicit(&p->change_slots, memory_order_acquire); s;
	     s = s->next)
		sum += atomic_load_explicit(&s->n, memory_order_relaxed);
	return sum;
}

/* Changes since the last save's instant (INFO's rdb_changes_since_last_save). */
static uint64_t changes_unsaved(struct persist *p)
{
	uint64_t total = changes_total(p);
	uint64_t saved = atomic_load_explicit(&p->changes_saved, memory_order_relaxed);
	return total > saved ? total - saved : 0; /* a slot read before the instant's sum */
}

static void free_change_slots(struct persist *p)
{
	struct change_slot *s = atomic_load_explicit(&p->change_slots, memory_order_acquire);
	while (s) {
		struct change_slot *next = s->next;
		zr_free(s);
		s = next;
	}
	atomic_store_explicit(&p->change_slots, NULL, memory_order_relaxed);
}

/* --- the journal hook ------------------------------------------------------------- */

void persist_gate_enter(struct persist *p)
{
	/* a snapshot takes the gate, then every shard lock */
	ZR_CHECK(zr_locks_held() == 0);
	if (p)
		pthread_rwlock_rdlock(&p->gate);
}

void persist_gate_leave(struct persist *p)
{
	if (p)
		pthread_rwlock_unlock(&p->gate);
}

void persist_count_changes(struct persist *p, uint64_t changes)
{
	if (p && changes)
		count_changes(p, changes);
}

/* --- saving ------------------------------------------------------------------------- */

/* NAME in the working directory now, as an absolute path: a save or a
 * log segment keeps its directory even if CONFIG SET dir changes the
 * working directory meanwhile. */
static char *path_in_cwd(const char *name)
{
	char cwd[PATH_MAX];
	if (name[0] == '/' || !getcwd(cwd, sizeof(cwd)))
		return zr_strdup(name);
	size_t n = strlen(cwd) + strlen(name) + 2;
	char *path = zr_malloc(n);
	snprintf(path, n, "%s/%s", cwd, name);
	return path;
}

/* The snapshot file a save writes now: dbfilename (CONFIG SET may change
 * it, under the settings lock) in the working directory. */
static char *snap_path_now(struct persist *p)
{
	struct settings *cfg = p->env.cfg;
	pthread_mutex_lock(&cfg->lock);
	char *name = zr_strdup(cfg->dbfilename);
	pthread_mutex_unlock(&cfg->lock);
	char *path = path_in_cwd(name);
	zr_free(name);
	return path;
}

struct instant_ctx {
	struct persist *p;
	bool final; /* the final save of persist_shutdown_busy */
	bool gate_held;
	uint64_t changes_at;
	const char *log_dir; /* where the log continues after the cut */
};

/* At a save's instant, every shard lock held: once a busy shutdown gave
 * up on its final save, no save may cut the log (aof_freeze stops it), so
 * the thread parks; the final save itself freezes replies from here on. */
static void instant_gate(struct instant_ctx *ic)
{
	struct persist *p = ic->p;
	pthread_mutex_lock(&p->fin_mu);
	if (p->fin_state == FIN_ABANDONED) {
		pthread_mutex_unlock(&p->fin_mu);
		park_until_exit();
	}
	if (ic->final) {
		atomic_store_explicit(&p->frozen, 1, memory_order_relaxed);
		p->fin_state = FIN_INSTANT;
		pthread_cond_broadcast(&p->fin_cond);
	}
	pthread_mutex_unlock(&p->fin_mu);
}

/* At a snapshot's instant: the image's key count (INFO's
 * current_save_keys_total while it is written). */
static void count_image_keys(struct persist *p)
{
	uint64_t total = 0;
	for (unsigned db = 0; db < store_databases(p->env.store); db++)
		total += store_dbsize(p->env.store, db);
	atomic_store_explicit(&p->keys_total, total, memory_order_relaxed);
}

static uint64_t at_instant(void *arg, struct snapshot_origin *origin)
{
	struct instant_ctx *ic = arg;
	struct persist *p = ic->p;
	instant_gate(ic);
	origin->offset = stream_origin(p->env.stream, origin->id);
	uint64_t seq = atomic_load_explicit(&p->aof_on, memory_order_relaxed)
			       ? aof_cut(p->aof, ic->log_dir)
			       : stream_last_seq(p->env.stream);
	/* every shard lock is held: no command is changing the keyspace */
	uint64_t total = changes_total(p);
	ic->changes_at = total - atomic_exchange_explicit(&p->changes_saved, total, memory_order_relaxed);
	ZR_CHECK(zr_rwlock_wrheld(&p->gate)); /* do_save's, on this thread */
	pthread_rwlock_unlock(&p->gate);
	ic->gate_held = false;
	count_image_keys(p);
	return seq;
}

/* BG: BGSAVE / rewrite / save rule (Redis's rdb_last_bgsave_* fields
 * describe those only), else SAVE or the save at shutdown. FINAL: the
 * final save of a shutdown with busy workers (persist_shutdown_busy). */
static int do_save(struct persist *p, bool rewrite, bool bg, bool final)
{
	ZR_CHECK(zr_locks_held() == 0); /* it takes ctl, the gate, then every shard lock */
	pthread_mutex_lock(&p->ctl);
	int64_t t0 = zr_time_ms();
	atomic_store_explicit(&p->keys_done, 0, memory_order_relaxed);
	atomic_store_explicit(&p->keys_total, 0, memory_order_relaxed);
	/* the directory of this save and of the log after its cut: the
	 * working directory now (CONFIG SET dir moves both, see persist.h) */
	char *snap_path = snap_path_now(p);
	char *log_dir = path_in_cwd(p->env.cfg->appenddirname);
	struct instant_ctx ic = { .p = p, .final = final, .gate_held = true, .log_dir = log_dir };
	pthread_rwlock_wrlock(&p->gate);
	struct snapshot_result res;
	int r = snapshot_write(p->env.store, snap_path, at_instant, &ic, &p->keys_done,
			       &p->env.cfg->rdb_key_save_delay, &res);
	zr_free(snap_path);
	zr_free(log_dir);
	if (ic.gate_held)
		pthread_rwlock_unlock(&p->gate);
	int64_t secs = (zr_time_ms() - t0 + 500) / 1000;
	if (r == 0) {
		if (atomic_load_explicit(&p->aof_on, memory_order_relaxed))
			aof_drop_before(p->aof, res.journal_seq);
		atomic_store_explicit(&p->aof_base_size, res.bytes, memory_order_relaxed);
		atomic_store_explicit(p->env.lastsave, (int64_t)time(NULL), memory_order_relaxed);
		atomic_store_explicit(rewrite ? &p->last_rewrite_cow : &p->last_cow_peak, res.cow_peak,
				      memory_order_relaxed);
		atomic_fetch_add_explicit(&p->saves, 1, memory_order_relaxed);
		zr_log(ZR_LOG_NOTICE,
		       "DB saved on disk: %" PRIu64 " keys, %" PRIu64 " bytes, journal seq %" PRIu64
		       ", copy-before-write peak %" PRIu64 " bytes (%" PRIu64 " entries)",
		       res.keys, res.bytes, res.journal_seq, res.cow_peak, res.cow_entries);
	} else {
		/* the changes are still unsaved */
		atomic_fetch_sub_explicit(&p->changes_saved, ic.changes_at, memory_order_relaxed);
	}
	atomic_store_explicit(rewrite ? &p->last_rewrite_ok : &p->last_bgsave_ok, r == 0,
			      memory_order_relaxed);
	if (bg)
		atomic_store_explicit(rewrite ? &p->last_rewrite_sec : &p->last_bgsave_sec, secs,
				      memory_order_relaxed);
	if (rewrite) {
		if (r == 0) {
			atomic_fetch_add_explicit(&p->rewrites, 1, memory_order_relaxed);
			atomic_store_explicit(&p->rewrite_failures, 0, memory_order_relaxed);
		} else {
			atomic_fetch_add_explicit(&p->rewrite_failures, 1, memory_order_relaxed);
		}
	}
	atomic_store_explicit(&p->last_try_ms, zr_time_ms(), memory_order_relaxed);
	pthread_mutex_unlock(&p->ctl);
	return r;
}

int persist_save(struct persist *p)
{
	if (!p)
		return -ENOTCONN;
	if (atomic_load_explicit(&p->bg_kind, memory_order_relaxed))
		return -EBUSY;
	return do_save(p, false, false, false);
}

static void *bg_main(void *arg)
{
	struct persist *p = arg;
	int kind = atomic_load_explicit(&p->bg_kind, memory_order_relaxed);
	int r = do_save(p, kind == 2, true, false);
	zr_log(r == 0 ? ZR_LOG_NOTICE : ZR_LOG_WARNING, "Background %s %s",
	       kind == 2 ? "append only file rewriting" : "saving",
	       r == 0 ? "terminated with success" : "failed");
	atomic_store_explicit(&p->bg_kind, 0, memory_order_release);
	return NULL;
}

int persist_bgsave(struct persist *p, bool rewrite, bool schedule)
{
	if (!p)
		return -ENOTCONN;
	pthread_mutex_lock(&p->bg_mu);
	if (atomic_load_explicit(&p->bg_kind, memory_order_acquire)) {
		pthread_mutex_unlock(&p->bg_mu);
		if (schedule) {
			atomic_store_explicit(&p->scheduled_rewrite, 1, memory_order_relaxed);
			return 1;
		}
		return -EBUSY;
	}
	if (p->bg_joinable) {
		pthread_join(p->bg, NULL);
		p->bg_joinable = false;
	}
	atomic_store_explicit(&p->bg_kind, rewrite ? 2 : 1, memory_order_relaxed);
	atomic_store_explicit(&p->bg_start_ms, zr_time_ms(), memory_order_relaxed);
	if (pthread_create(&p->bg, NULL, bg_main, p) != 0) {
		atomic_store_explicit(&p->bg_kind, 0, memory_order_relaxed);
		pthread_mutex_unlock(&p->bg_mu);
		return -EAGAIN;
	}
	p->bg_joinable = true;
	pthread_mutex_unlock(&p->bg_mu);
	if (rewrite)
		zr_log(ZR_LOG_NOTICE, "Background append only file rewriting started");
	else
		zr_log(ZR_LOG_NOTICE, "Background saving started");
	return 0;
}

bool persist_bg_running(struct persist *p, bool *rewrite)
{
	if (!p)
		return false;
	int k = atomic_load_explicit(&p->bg_kind, memory_order_relaxed);
	if (rewrite)
		*rewrite = k == 2;
	return k != 0;
}

static void bg_wait(struct persist *p)
{
	pthread_mutex_lock(&p->bg_mu);
	if (p->bg_joinable) {
		pthread_join(p->bg, NULL);
		p->bg_joinable = false;
	}
	pthread_mutex_unlock(&p->bg_mu);
}

/* --- replication --------------------------------------------------------------------- */

struct stream_instant {
	struct persist *p;
	snapshot_instant_fn instant_fn;
	void *ctx;
};

static uint64_t stream_instant(void *arg, struct snapshot_origin *origin)
{
	struct stream_instant *si = arg;
	uint64_t seq = si->instant_fn(si->ctx, origin);
	ZR_CHECK(zr_rwlock_wrheld(&si->p->gate)); /* persist_snapshot_to's */
	pthread_rwlock_unlock(&si->p->gate);
	count_image_keys(si->p);
	return seq;
}

int persist_snapshot_to(struct persist *p, const struct snapshot_sink *sink, snapshot_instant_fn instant_fn,
			void *ctx, struct snapshot_result *out)
{
	if (!p)
		return -ENOTCONN;
	pthread_mutex_lock(&p->ctl);
	atomic_store_explicit(&p->keys_done, 0, memory_order_relaxed);
	atomic_store_explicit(&p->keys_total, 0, memory_order_relaxed);
	atomic_store_explicit(&p->sync_start_ms, zr_time_ms(), memory_order_relaxed);
	struct stream_instant si = { p, instant_fn, ctx };
	pthread_rwlock_wrlock(&p->gate);
	int r = snapshot_write_sink(p->env.store, sink, stream_instant, &si, &p->keys_done,
				    &p->env.cfg->rdb_key_save_delay, out);
	if (r == -EBUSY) /* no instant: the gate is still held */
		pthread_rwlock_unlock(&p->gate);
	atomic_store_explicit(&p->sync_start_ms, 0, memory_order_relaxed);
	pthread_mutex_unlock(&p->ctl);
	return r;
}

void persist_replace_begin(struct persist *p)
{
	if (!p)
		return;
	bg_wait(p);
	pthread_mutex_lock(&p->sw);
	pthread_mutex_lock(&p->ctl);
	if (atomic_load_explicit(&p->aof_on, memory_order_relaxed)) {
		atomic_store_explicit(&p->aof_on, 0, memory_order_relaxed);
		aof_stop(p->aof);
		char *dir = path_in_cwd(p->env.cfg->appenddirname);
		aof_remove_all(dir, p->env.cfg->appendfilename);
		zr_free(dir);
		p->replace_log = true;
	}
}

void persist_replace_end(struct persist *p, const char *snap_path, bool ok)
{
	if (!p)
		return;
	if (ok) {
		char *dst = snap_path_now(p);
		if (rename(snap_path, dst) < 0) {
			zr_log(ZR_LOG_WARNING, "Renaming the synced snapshot %s to %s: %s", snap_path, dst,
			       strerror(errno));
			unlink(snap_path);
			ok = false;
		} else {
			fileio_fsync_parent(dst);
		}
		zr_free(dst);
	} else {
		unlink(snap_path);
	}
	bool restart = p->replace_log;
	p->replace_log = false;
	pthread_mutex_unlock(&p->ctl);
	if (restart) {
		/* the new snapshot is the log's base: its next segment starts
		 * after the snapshot's seq (the stream's, reset to it) */
		int r = aof_start(p->aof, (enum aof_fsync)atomic_load(&p->env.cfg->appendfsync), !ok);
		if (r < 0) {
			zr_log(ZR_LOG_WARNING,
			       "appendonly: the log could not be restarted after a full sync: %s",
			       strerror(-r));
			atomic_store_explicit(&p->env.cfg->aof_enabled, 0, memory_order_relaxed);
		} else {
			atomic_store_explicit(&p->aof_on, 1, memory_order_relaxed);
			if (!ok)
				persist_bgsave(p, true, true);
		}
	}
	pthread_mutex_unlock(&p->sw);
}

/* --- the log on / off ----------------------------------------------------------------- */

static int aof_turn_on(struct persist *p, bool at_start)
{
	struct settings *cfg = p->env.cfg;
	if (!at_start) {
		char *dir = path_in_cwd(cfg->appenddirname); /* CONFIG SET dir may have moved it */
		aof_set_dir(p->aof, dir);
		aof_remove_all(dir, cfg->appendfilename); /* not loaded: stale */
		zr_free(dir);
	}
	int r = aof_start(p->aof, (enum aof_fsync)atomic_load(&cfg->appendfsync), !at_start);
	if (r < 0)
		return r;
	atomic_store_explicit(&p->aof_on, 1, memory_order_relaxed);
	if (!at_start) /* Redis's startAppendOnly: the log needs a base */
		persist_bgsave(p, true, true);
	return 0;
}

void persist_settings_changed(struct persist *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->sw);
	bool want = atomic_load_explicit(&p->env.cfg->aof_enabled, memory_order_relaxed);
	bool on = atomic_load_explicit(&p->aof_on, memory_order_relaxed);
	if (want && !on) {
		if (aof_turn_on(p, false) < 0) {
			zr_log(ZR_LOG_WARNING, "appendonly yes failed: the log could not be opened");
			atomic_store_explicit(&p->env.cfg->aof_enabled, 0, memory_order_relaxed);
		}
	} else if (!want && on) {
		atomic_store_explicit(&p->aof_on, 0, memory_order_relaxed);
		aof_stop(p->aof);
		zr_log(ZR_LOG_NOTICE, "Background append only file: turned off");
	}
	aof_set_fsync(p->aof,
		      (enum aof_fsync)atomic_load_explicit(&p->env.cfg->appendfsync, memory_order_relaxed));
	char cwd[PATH_MAX];
	if (getcwd(cwd, sizeof(cwd)) && strcmp(cwd, p->cwd)) {
		/* CONFIG SET dir: later saves go to the new directory; the log
		 * moves there at the next snapshot's cut, started now so the new
		 * directory is complete soon (Redis waits for the next rewrite) */
		zr_log(ZR_LOG_NOTICE, "Working directory changed to %s", cwd);
		zr_free(p->cwd);
		p->cwd = zr_strdup(cwd);
		if (atomic_load_explicit(&p->aof_on, memory_order_relaxed))
			persist_bgsave(p, true, true);
	}
	pthread_mutex_unlock(&p->sw);
}

/* --- cron -------------------------------------------------------------------------------- */

static bool save_rule_due(struct persist *p, int64_t now_ms)
{
	struct settings *cfg = p->env.cfg;
	char rules[256];
	pthread_mutex_lock(&cfg->lock);
	snprintf(rules, sizeof(rules), "%s", cfg->save ? cfg->save : "");
	pthread_mutex_unlock(&cfg->lock);
	uint64_t changes = changes_unsaved(p);
	int64_t since = now_ms / 1000 - atomic_load_explicit(p->env.lastsave, memory_order_relaxed);
	bool failed = !atomic_load_explicit(&p->last_bgsave_ok, memory_order_relaxed);
	if (failed && now_ms - atomic_load_explicit(&p->last_try_ms, memory_order_relaxed) < BGSAVE_RETRY_MS)
		return false;
	char *save = NULL;
	for (char *t = strtok_r(rules, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
		char *c = strtok_r(NULL, " ", &save);
		if (!c)
			break;
		long long secs = atoll(t), n = atoll(c);
		if (changes >= (uint64_t)n && since >= secs && n > 0)
			return true;
	}
	return false;
}

static bool rewrite_due(struct persist *p)
{
	struct settings *cfg = p->env.cfg;
	if (!atomic_load_explicit(&p->aof_on, memory_order_relaxed))
		return false;
	long long pct = atomic_load_explicit(&cfg->auto_aof_rewrite_percentage, memory_order_relaxed);
	long long min = atomic_load_explicit(&cfg->auto_aof_rewrite_min_size, memory_order_relaxed);
	if (pct <= 0)
		return false;
	struct aof_stats st;
	aof_stats(p->aof, &st);
	uint64_t base = atomic_load_explicit(&p->aof_base_size, memory_order_relaxed);
	return st.current_size >= (uint64_t)min && st.current_size * 100 >= base * (uint64_t)pct;
}

static void *cron_main(void *arg)
{
	struct persist *p = arg;
	while (!atomic_load_explicit(&p->cron_stop, memory_order_relaxed)) {
		struct timespec ts = { 0, 100 * 1000000L };
		nanosleep(&ts, NULL);
		if (atomic_load_explicit(&p->bg_kind, memory_order_acquire))
			continue;
		int64_t now = zr_time_ms();
		if (atomic_exchange_explicit(&p->scheduled_rewrite, 0, memory_order_relaxed)) {
			persist_bgsave(p, true, false);
		} else if (save_rule_due(p, now)) {
			zr_log(ZR_LOG_NOTICE, "%" PRIu64 " changes: saving...", changes_unsaved(p));
			persist_bgsave(p, false, false);
		} else if (rewrite_due(p)) {
			zr_log(ZR_LOG_NOTICE, "Starting automatic rewriting of AOF on growth");
			persist_bgsave(p, true, false);
		}
	}
	return NULL;
}

/* --- start-up and shutdown ---------------------------------------------------------------- */

int persist_init(const struct persist_env *env, struct persist **out)
{
	struct settings *cfg = env->cfg;
	struct persist *p = zr_calloc(1, sizeof(*p));
	p->env = *env;
	*out = NULL;
	p->id = atomic_fetch_add_explicit(&persist_ids, 1, memory_order_relaxed) + 1;
	p->snap_path = zr_strdup(cfg->dbfilename);
	p->aof_dir = zr_strdup(cfg->appenddirname);
	char *log_dir = path_in_cwd(cfg->appenddirname);
	p->aof = aof_create(p->env.stream, p->env.durable, p->env.durable_ctx, log_dir, cfg->appendfilename);
	zr_free(log_dir);
	char cwd[PATH_MAX];
	p->cwd = zr_strdup(getcwd(cwd, sizeof(cwd)) ? cwd : "");
	pthread_rwlock_init(&p->gate, NULL);
	pthread_mutex_init(&p->ctl, NULL);
	pthread_mutex_init(&p->sw, NULL);
	pthread_mutex_init(&p->bg_mu, NULL);
	pthread_mutex_init(&p->fin_mu, NULL);
	pthread_cond_init(&p->fin_cond, NULL);
	atomic_init(&p->last_bgsave_ok, 1);
	atomic_init(&p->last_rewrite_ok, 1);
	atomic_init(&p->last_bgsave_sec, -1);
	atomic_init(&p->last_rewrite_sec, -1);

	char err[512];
	unsigned threads = p->env.nworkers ? p->env.nworkers : 1;
	int64_t t0 = zr_mono_us();
	int r = load_snapshot(p->env.store, p->snap_path, threads, &p->loaded, err, sizeof(err));
	if (r < 0 && r != -ENOENT)
		goto fail;
	if (r == 0) {
		struct stat st;
		if (stat(p->snap_path, &st) == 0)
			atomic_store(p->env.lastsave, (int64_t)st.st_mtime);
		atomic_store(&p->aof_base_size, p->loaded.snapshot_bytes);
	}
	bool aof = atomic_load(&cfg->aof_enabled);
	if (aof) {
		r = load_journal(p->aof_dir, cfg->appendfilename, atomic_load(&cfg->aof_load_truncated),
				 &p->loaded, err, sizeof(err));
		if (r < 0)
			goto fail;
	}
	if (p->loaded.keys_loaded || p->loaded.records)
		zr_log(ZR_LOG_NOTICE,
		       "DB loaded from disk: %.3f seconds, %" PRIu64 " keys from the snapshot (%" PRIu64
		       " already expired), %" PRIu64 " log records",
		       (double)(zr_mono_us() - t0) / 1e6, p->loaded.keys_loaded, p->loaded.keys_expired,
		       p->loaded.records);
	p->loaded.ms = (zr_mono_us() - t0) / 1000;
	stream_set_seq(p->env.stream, p->loaded.last_seq);
	/* the snapshot's place in the replication history, moved on by the
	 * log's records replayed after it (they are the stream's frames, byte
	 * for byte): the server continues that history, and its replicas, or
	 * it as a replica, resync partially */
	if (p->loaded.origin_id[0] && !p->loaded.history_broken) {
		p->loaded.origin_offset += p->loaded.replayed_bytes;
		stream_reset(p->env.stream, p->loaded.last_seq, p->loaded.origin_offset);
		stream_set_id(p->env.stream, p->loaded.origin_id);
		stream_set_backlog(p->env.stream, true); /* from here every write is in the history */
		zr_log(ZR_LOG_NOTICE, "Replication history %s continues at offset %" PRIu64,
		       p->loaded.origin_id, p->loaded.origin_offset);
	}
	if (aof) {
		/* segments wholly covered by the snapshot are left over from a
		 * crash between a snapshot and their deletion */
		r = aof_turn_on(p, true);
		if (r < 0) {
			snprintf(err, sizeof(err), "cannot open the append-only log in %s", p->aof_dir);
			goto fail;
		}
	}
	*out = p;
	if (pthread_create(&p->cron, NULL, cron_main, p) != 0) {
		snprintf(err, sizeof(err), "cannot start the persistence thread");
		r = -EAGAIN;
		*out = NULL;
		goto fail;
	}
	return 0;
fail:
	zr_log(ZR_LOG_WARNING, "Fatal error loading the DB: %s. Exiting.", err);
	aof_destroy(p->aof);
	zr_free(p->snap_path);
	zr_free(p->aof_dir);
	zr_free(p->cwd);
	free_change_slots(p);
	zr_free(p);
	return r;
}

/* Whether the shutdown saves a snapshot: SHUTDOWN SAVE, or save rules set
 * and no SHUTDOWN NOSAVE (Redis). */
static bool final_save_due(struct persist *p)
{
	int mode = atomic_load(p->env.shutdown_save);
	char rules[8];
	pthread_mutex_lock(&p->env.cfg->lock);
	snprintf(rules, sizeof(rules), "%s", p->env.cfg->save ? p->env.cfg->save : "");
	pthread_mutex_unlock(&p->env.cfg->lock);
	return mode == PERSIST_FINAL_SAVE || (mode != PERSIST_FINAL_NOSAVE && rules[0]);
}

/* Stops the save rules and waits for a background save; then the final
 * save when one is due. Returns 0 or its -errno. */
static int final_save(struct persist *p, bool busy)
{
	atomic_store(&p->cron_stop, 1);
	pthread_join(p->cron, NULL);
	/* a background save is waited for, not killed as Redis kills its
	 * child: it, and the final save, go on without rdb-key-save-delay */
	atomic_store_explicit(&p->env.cfg->rdb_key_save_delay, 0, memory_order_relaxed);
	bg_wait(p);
	if (!final_save_due(p))
		return 0;
	zr_log(ZR_LOG_NOTICE, "Saving the final snapshot before exiting.");
	int r = do_save(p, false, false, busy);
	if (r < 0)
		zr_log(ZR_LOG_WARNING, "Error trying to save the DB, can't exit cleanly.");
	return r;
}

void persist_shutdown(struct persist *p)
{
	if (!p)
		return;
	final_save(p, false);
	atomic_store(&p->aof_on, 0);
	aof_destroy(p->aof);
	pthread_rwlock_destroy(&p->gate);
	pthread_mutex_destroy(&p->ctl);
	pthread_mutex_destroy(&p->sw);
	pthread_mutex_destroy(&p->bg_mu);
	pthread_mutex_destroy(&p->fin_mu);
	pthread_cond_destroy(&p->fin_cond);
	zr_free(p->snap_path);
	zr_free(p->aof_dir);
	zr_free(p->cwd);
	free_change_slots(p);
	zr_free(p);
}

static void *final_main(void *arg)
{
	struct persist *p = arg;
	int r = final_save(p, true);
	pthread_mutex_lock(&p->fin_mu);
	if (p->fin_state != FIN_ABANDONED) {
		p->fin_state = FIN_DONE;
		p->fin_rc = r;
		pthread_cond_broadcast(&p->fin_cond);
	}
	pthread_mutex_unlock(&p->fin_mu);
	return NULL;
}

/* Waits on p->fin_cond (fin_mu held) while the state is STATE, until
 * DEADLINE_MS on the monotonic clock (< 0: no deadline). */
static void fin_wait(struct persist *p, int state, int64_t deadline_ms)
{
	ZR_ASSERT_MUTEX_HELD(&p->fin_mu);
	while (p->fin_state == state) {
		if (deadline_ms < 0) {
			pthread_cond_wait(&p->fin_cond, &p->fin_mu);
			continue;
		}
		int64_t left = deadline_ms - zr_mono_us() / 1000;
		if (left <= 0)
			return;
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		int64_t ns = ts.tv_nsec + (left < 100 ? left : 100) * 1000000;
		ts.tv_sec += ns / 1000000000;
		ts.tv_nsec = ns % 1000000000;
		pthread_cond_timedwait(&p->fin_cond, &p->fin_mu, &ts);
	}
}

bool persist_replies_frozen(const struct persist *p)
{
	return p && atomic_load_explicit(&p->frozen, memory_order_relaxed);
}

int persist_shutdown_busy(struct persist *p, int64_t wait_ms)
{
	if (!p)
		return 0;
	pthread_mutex_lock(&p->fin_mu);
	p->fin_state = FIN_SAVING;
	pthread_mutex_unlock(&p->fin_mu);
	pthread_t t;
	bool started = pthread_create(&t, NULL, final_main, p) == 0;
	pthread_mutex_lock(&p->fin_mu);
	if (started)
		fin_wait(p, FIN_SAVING, zr_mono_us() / 1000 + wait_ms);
	if (p->fin_state == FIN_SAVING)
		p->fin_state = FIN_ABANDONED;
	/* past its instant the save holds no lock a worker could keep: its
	 * writing is waited for as at any shutdown */
	fin_wait(p, FIN_INSTANT, -1);
	int r = p->fin_state == FIN_DONE ? p->fin_rc : -ETIMEDOUT;
	pthread_mutex_unlock(&p->fin_mu);
	if (started && r != -ETIMEDOUT)
		pthread_join(t, NULL); /* it ends right after FIN_DONE */
	else if (started)
		pthread_detach(t); /* stuck on a shard lock: it ends with the process */
	if (r == -ETIMEDOUT)
		zr_log(ZR_LOG_WARNING,
		       "Could not save consistently: the final save waited %lld ms for a shard lock that a "
		       "busy worker holds. The snapshot on disk is the previous one%s.",
		       (long long)wait_ms,
		       atomic_load(&p->aof_on) ? "; the append-only log holds every acknowledged write" : "");
	if (atomic_load(&p->aof_on))
		aof_freeze(p->aof);
	return r;
}

int persist_debug_journal(struct persist *p, long long stall_ms, long long limit)
{
	if (!p || !atomic_load_explicit(&p->aof_on, memory_order_relaxed))
		return -ENOTCONN;
	aof_debug(p->aof, stall_ms, limit > 0 ? (size_t)limit : 0);
	return 0;
}

int persist_check_data(const char *dir, bool fix)
{
	return load_check_data(dir, fix);
}

/* --- INFO ------------------------------------------------------------------------------------ */

void persist_info(struct persist *p, struct textbuf *t)
{
	if (!p)
		return;
	int kind = atomic_load_explicit(&p->bg_kind, memory_order_relaxed);
	int64_t start = atomic_load_explicit(&p->bg_start_ms, memory_order_relaxed);
	int64_t sync = atomic_load_explicit(&p->sync_start_ms, memory_order_relaxed);
	if (sync && !kind) { /* a full sync's snapshot: Redis's diskless sync is an RDB child */
		kind = 1;
		start = sync;
	}
	int64_t now = zr_time_ms();
	int64_t cur = kind ? (now - start) / 1000 : -1;
	struct store_snap_stats ss;
	store_snap_stats(p->env.store, &ss);
	struct aof_stats as;
	aof_stats(p->aof, &as);
	bool aof_on = atomic_load_explicit(&p->aof_on, memory_order_relaxed);
	uint64_t done = kind ? atomic_load_explicit(&p->keys_done, memory_order_relaxed) : 0;
	uint64_t total = kind ? atomic_load_explicit(&p->keys_total, memory_order_relaxed) : 0;
	/* Redis's fork progress: keys written of the image's keys */
	double perc = total ? 100.0 * (double)(done < total ? done : total) / (double)total : 0;
	textbuf_printf(t,
		       "loading:0\r\n"
		       "async_loading:0\r\n"
		       "current_cow_peak:%" PRIu64 "\r\n"
		       "current_cow_size:%" PRIu64 "\r\n"
		       "current_cow_size_age:0\r\n"
		       "current_fork_perc:%.2f\r\n"
		       "current_save_keys_processed:%" PRIu64 "\r\n"
		       "current_save_keys_total:%" PRIu64 "\r\n"
		       "rdb_changes_since_last_save:%" PRIu64 "\r\n"
		       "rdb_bgsave_in_progress:%d\r\n"
		       "rdb_last_save_time:%lld\r\n"
		       "rdb_last_bgsave_status:%s\r\n"
		       "rdb_last_bgsave_time_sec:%lld\r\n"
		       "rdb_current_bgsave_time_sec:%lld\r\n"
		       "rdb_saves:%" PRIu64 "\r\n"
		       "rdb_last_cow_size:%" PRIu64 "\r\n"
		       "rdb_last_load_keys_expired:%" PRIu64 "\r\n"
		       "rdb_last_load_keys_loaded:%" PRIu64 "\r\n"
		       "aof_enabled:%d\r\n"
		       "aof_rewrite_in_progress:%d\r\n"
		       "aof_rewrite_scheduled:%d\r\n"
		       "aof_last_rewrite_time_sec:%lld\r\n"
		       "aof_current_rewrite_time_sec:%lld\r\n"
		       "aof_last_bgrewrite_status:%s\r\n"
		       "aof_rewrites:%" PRIu64 "\r\n"
		       "aof_rewrites_consecutive_failures:%" PRIu64 "\r\n"
		       "aof_last_write_status:%s\r\n"
		       "aof_last_cow_size:%" PRIu64 "\r\n"
		       "module_fork_in_progress:0\r\n"
		       "module_fork_last_cow_size:0\r\n",
		       kind ? ss.peak : 0, kind ? ss.bytes : 0, perc, done, total, changes_unsaved(p),
		       kind == 1, (long long)atomic_load_explicit(p->env.lastsave, memory_order_relaxed),
		       atomic_load_explicit(&p->last_bgsave_ok, memory_order_relaxed) ? "ok" : "err",
		       (long long)atomic_load_explicit(&p->last_bgsave_sec, memory_order_relaxed),
		       (long long)(kind == 1 ? cur : -1),
		       atomic_load_explicit(&p->saves, memory_order_relaxed),
		       atomic_load_explicit(&p->last_cow_peak, memory_order_relaxed), p->loaded.keys_expired,
		       p->loaded.keys_loaded, aof_on, kind == 2,
		       atomic_load_explicit(&p->scheduled_rewrite, memory_order_relaxed),
		       (long long)atomic_load_explicit(&p->last_rewrite_sec, memory_order_relaxed),
		       (long long)(kind == 2 ? cur : -1),
		       atomic_load_explicit(&p->last_rewrite_ok, memory_order_relaxed) ? "ok" : "err",
		       atomic_load_explicit(&p->rewrites, memory_order_relaxed),
		       atomic_load_explicit(&p->rewrite_failures, memory_order_relaxed),
		       as.last_write_errno ? "err" : "ok",
		       atomic_load_explicit(&p->last_rewrite_cow, memory_order_relaxed));
	if (aof_on)
		textbuf_printf(t,
			       "aof_current_size:%" PRIu64 "\r\n"
			       "aof_base_size:%" PRIu64 "\r\n"
			       "aof_pending_rewrite:0\r\n"
			       "aof_buffer_length:%" PRIu64 "\r\n"
			       "aof_pending_bio_fsync:0\r\n"
			       "aof_delayed_fsync:%lld\r\n"
			       "aof_last_seq:%" PRIu64 "\r\n"
			       "aof_synced_seq:%" PRIu64 "\r\n"
			       "aof_fsyncs:%" PRIu64 "\r\n"
			       "aof_buffer_peak:%" PRIu64 "\r\n"
			       "aof_buffer_limit:%" PRIu64 "\r\n"
			       "aof_buffer_waits:%" PRIu64 "\r\n",
			       as.current_size, atomic_load_explicit(&p->aof_base_size, memory_order_relaxed),
			       as.pending_bytes, (long long)as.delayed_fsync, stream_last_seq(p->env.stream),
			       as.synced_seq, as.fsyncs, as.buffer_peak, as.buffer_limit, as.buffer_waits);
	textbuf_printf(t, "rdb_last_load_ms:%lld\r\n", (long long)p->loaded.ms);
	/* zarisd's own: the change stream's last record, with or without the log */
	textbuf_printf(t, "journal_seq:%" PRIu64 "\r\n", stream_last_seq(p->env.stream));
}
