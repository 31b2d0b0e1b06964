/* aof — see aof.h. The writer is a consumer of the change stream: under
 * `mu` it takes the visible frames from its cursor (journal/stream.h) and
 * does the I/O without the lock. A cut (snapshot instant, under `mu`)
 * records the stream offset where the next segment begins; since takes
 * happen under `mu` too, the writer closes the old segment exactly there.
 * Lock order: mu, then the stream's (core/lock_order.h).
 */
#include "zarisd/persist/aof.h"

#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "zarisd/core/log.h"
#include "zarisd/core/mem.h"
#include "zarisd/core/thread.h"
#include "zarisd/core/util.h"
#include "zarisd/persist/fileio.h"

struct aof {
	struct stream *stream;
	aof_durable_fn durable;
	void *durable_ctx;
	char *dir;
	char *name;

	pthread_mutex_t mu;
	pthread_cond_t wake;	   /* writer, while it keeps unwritten bytes: something to do */
	pthread_cond_t cut_done;   /* aof_drop_before: the cut's segment is open */
	struct stream_consumer *c; /* the writer's cursor, while running */
	bool cut_pending;
	uint64_t cut_off; /* stream offset where the cut's segment begins */
	uint64_t cut_seq; /* start seq of the segment the cut opens */
	char *cut_dir;	  /* the directory the cut moves the log to, or NULL */
	uint64_t cut_gen, cut_gen_done;
	bool running, stop;
	enum aof_fsync mode;
	pthread_t thread;

	/* writer thread only (dir: changed by the writer under mu at a cut
	 * that moves the log, or by aof_set_dir while stopped) */
	int fd;
	uint64_t seg_start;
	/* written by the writer alone, read by aof_stats: relaxed, each value
	 * stands on its own (durability is published through journal_durable) */
	_Atomic uint64_t written_seq, synced_seq;
	_Atomic int64_t stall_ms; /* DEBUG JOURNAL-STALL: sleep before the next write */
	int64_t last_fsync_ms;
	bool unsynced;
	_Atomic uint64_t current_size;
	_Atomic uint64_t fsyncs;
	_Atomic int last_errno;
	_Atomic int64_t delayed_fsync;
};

struct aof *aof_create(struct stream *stream, aof_durable_fn durable, void *ctx, const char *dir_path,
		       const char *name)
{
	struct aof *a = zr_calloc(1, sizeof(*a));
	a->stream = stream;
	a->durable = durable;
	a->durable_ctx = ctx;
	a->dir = zr_strdup(dir_path);
	a->name = zr_strdup(name);
	a->fd = -1;
	pthread_mutex_init(&a->mu, NULL);
	pthread_cond_init(&a->wake, NULL);
	pthread_cond_init(&a->cut_done, NULL);
	return a;
}

void aof_destroy(struct aof *a)
{
	if (!a)
		return;
	aof_stop(a);
	stream_consumer_free(a->c);
	pthread_cond_destroy(&a->wake);
	pthread_cond_destroy(&a->cut_done);
	zr_free(a->cut_dir);
	pthread_mutex_destroy(&a->mu);
	zr_free(a->dir);
	zr_free(a->name);
	zr_free(a);
}

bool aof_running(struct aof *a)
{
	pthread_mutex_lock(&a->mu);
	bool r = a->running;
	pthread_mutex_unlock(&a->mu);
	return r;
}

void aof_set_fsync(struct aof *a, enum aof_fsync mode)
{
	pthread_mutex_lock(&a->mu);
	a->mode = mode;
	pthread_cond_signal(&a->wake);
	if (a->c)
		stream_kick(a->c);
	pthread_mutex_unlock(&a->mu);
}

/* --- files ------------------------------------------------------------------ */

static char *seg_path(const struct aof *a, uint64_t start)
{
	size_t n = strlen(a->dir) + strlen(a->name) + 40;
	char *p = zr_malloc(n);
	snprintf(p, n, "%s/%s.%020" PRIu64 ".zj", a->dir, a->name, start);
	return p;
}

/* Opens segment START (creating it with its header) as a->fd. */
static int open_segment(struct aof *a, uint64_t start, bool fresh)
{
	char *path = seg_path(a, start);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
	if (fd < 0) {
		int e = -errno;
		zr_log(ZR_LOG_WARNING, "Can't open the append-only file %s: %s", path, strerror(errno));
		zr_free(path);
		return e;
	}
	struct jbuf h;
	jbuf_init(&h);
	jr_file_header(&h, JR_MAGIC_JOURNAL);
	size_t off = jr_frame_begin(&h, JR_SEGMENT);
	jbuf_u64(&h, start);
	jbuf_u32(&h, fresh ? JR_SEG_FRESH : 0);
	jbuf_u64(&h, (uint64_t)zr_time_ms());
	jr_frame_end(&h, off);
	int r = fileio_write_all(fd, h.p, h.len);
	if (r == 0 && fdatasync(fd) < 0)
		r = -errno;
	atomic_fetch_add_explicit(&a->current_size, h.len, memory_order_relaxed);
	jbuf_free(&h);
	if (r < 0) {
		zr_log(ZR_LOG_WARNING, "Can't write the append-only file %s: %s", path, strerror(-r));
		close(fd);
		zr_free(path);
		return r;
	}
	fileio_fsync_dir(a->dir);
	zr_free(path);
	a->fd = fd;
	a->seg_start = start;
	return 0;
}

/* A failed fdatasync of the open segment under policy MODE. Under
 * appendfsync always it is fatal, as in Redis (flushAppendOnlyFile): the
 * records it covered are written but maybe not on disk, and after a
 * failed fsync Linux marks their pages clean and reports the error once,
 * so no retry can tell when they are. Acknowledging them would be a lie,
 * holding their replies forever a hang; exiting sends none of them, and
 * the supervisor restarts the instance from what the disk holds. _exit:
 * the workers are still running, so no exit handlers. */
static void fsync_failed(struct aof *a, enum aof_fsync mode, int err)
{
	if (mode == AOF_FSYNC_ALWAYS) {
		zr_log(ZR_LOG_WARNING,
		       "Can't persist AOF for fsync error when the AOF fsync policy is 'always': %s. "
		       "Exiting...",
		       strerror(err));
		_exit(1);
	}
	atomic_store_explicit(&a->last_errno, err, memory_order_relaxed);
	zr_log(ZR_LOG_WARNING, "fsync of the append-only file failed: %s", strerror(err));
}

/* Syncs and closes the open segment; MODE as in fsync_failed. */
static void close_segment(struct aof *a, enum aof_fsync mode)
{
	if (a->fd < 0)
		return;
	if (fdatasync(a->fd) < 0)
		fsync_failed(a, mode, errno);
	close(a->fd);
	a->fd = -1;
}

/* Bytes of every segment on disk (the size counter restarts from it
 * whenever segments come or go other than by our appends). */
static uint64_t segments_size(const struct aof *a, const char *dir)
{
	char **paths;
	uint64_t *starts;
	int n = aof_list(dir, a->name, &paths, &starts);
	uint64_t total = 0;
	for (int i = 0; i < n; i++) {
		struct stat st;
		if (stat(paths[i], &st) == 0)
			total += (uint64_t)st.st_size;
	}
	if (n > 0)
		aof_list_free(paths, starts, n);
	return total;
}

/* --- the writer thread -------------------------------------------------------- */

static void publish(struct aof *a, uint64_t seq)
{
	/* the callback publishes with release: a worker that sees the new
	 * value and sends a held reply must also see the I/O as done (it is:
	 * the syscalls returned) */
	a->durable(a->durable_ctx, seq);
}

/* Writes what it can of P[0..N) to the open segment; returns how many
 * bytes went in (N unless a write failed: ENOSPC, EIO ..., then the error
 * is logged once and kept in last_errno until a write works again). */
static size_t write_some(struct aof *a, const unsigned char *p, size_t n)
{
	size_t done;
	int err = -fileio_write_counted(a->fd, p, n, &done);
	if (done) {
		atomic_fetch_add_explicit(&a->current_size, done, memory_order_relaxed);
		a->unsynced = true;
	}
	if (err) {
		if (atomic_exchange_explicit(&a->last_errno, err, memory_order_relaxed) != err)
			zr_log(ZR_LOG_WARNING,
			       "Error writing to the append-only file: %s; the unwritten records are kept "
			       "and retried, write commands are refused meanwhile",
			       strerror(err));
		return done;
	}
	/* Redis's aof_last_write_status turns ok again once a write works */
	if (atomic_exchange_explicit(&a->last_errno, 0, memory_order_relaxed))
		zr_log(ZR_LOG_WARNING, "AOF write error looks solved, zarisd can write again.");
	return done;
}

/* What the writer could not write yet, in order. While it holds bytes the
 * writer takes nothing new from the buffer and publishes nothing: a reply
 * waiting for a record is never released before the record is in the file
 * (journal_durable), and the records stay for a retry every 100 ms. A cut
 * met meanwhile waits until the bytes of the segment it closes are in. */
struct backlog {
	struct jbuf bytes; /* for the open segment */
	bool cut;	   /* then: close it, open cut_seq's (in cut_dir) */
	uint64_t cut_seq, cut_gen;
	char *cut_dir;
	struct jbuf after; /* for the segment the cut opens */
	uint64_t seq;	   /* the last record in bytes / after */
};

static bool backlog_empty(const struct backlog *b)
{
	return b->bytes.len == 0 && !b->cut;
}

/* Writes P[0..N), or keeps what is not written at the end of B->bytes
 * (all of it when bytes are already waiting: the order stays). */
static void write_or_keep(struct aof *a, struct backlog *b, const unsigned char *p, size_t n)
{
	if (a->fd < 0 || n == 0)
		return; /* no segment open (switch_segment logged why), or nothing */
	size_t done = b->bytes.len ? 0 : write_some(a, p, n);
	if (done < n)
		jbuf_put(&b->bytes, p + done, n - done);
}

/* fdatasync of the open segment under policy MODE (fsync_failed); false
 * when it failed. */
static bool do_fsync(struct aof *a, enum aof_fsync mode)
{
	int64_t t0 = zr_time_ms();
	if (fdatasync(a->fd) < 0) {
		fsync_failed(a, mode, errno);
		/* everysec tries again a second later: writes are refused
		 * (-MISCONF) meanwhile, so there is a second fsync to wait for
		 * and not another write's */
		a->last_fsync_ms = zr_time_ms();
		return false;
	}
	int64_t t1 = zr_time_ms();
	if (t1 - t0 > 2000)
		atomic_fetch_add_explicit(&a->delayed_fsync, 1, memory_order_relaxed);
	a->last_fsync_ms = t1;
	a->unsynced = false;
	atomic_fetch_add_explicit(&a->fsyncs, 1, memory_order_relaxed);
	return true;
}

/* An fsync worked with nothing kept (no write error pending): under
 * everysec and no, as Redis's aof_bio_fsync_status, writes are refused from
 * a failed fsync to the next one that works. */
static void sync_worked(struct aof *a)
{
	if (atomic_exchange_explicit(&a->last_errno, 0, memory_order_relaxed))
		zr_log(ZR_LOG_WARNING, "AOF fsync error looks solved, zarisd can write again.");
}

static void mark_synced(struct aof *a, uint64_t seq)
{
	atomic_store_explicit(&a->synced_seq, seq, memory_order_relaxed);
}

/* At a cut: opens segment START, in NEW_DIR when the cut moves the log
 * (CONFIG SET dir) — whatever segments NEW_DIR held are not ours and are
 * removed first, and the segment is marked fresh, so the new directory
 * never loads without the snapshot of this cut. When NEW_DIR cannot be
 * used, the log stays where it was. Consumes NEW_DIR. */
static void switch_segment(struct aof *a, uint64_t start, char *new_dir)
{
	if (new_dir) {
		if (mkdir(new_dir, 0755) < 0 && errno != EEXIST) {
			zr_log(ZR_LOG_WARNING,
			       "Can't create the append-only directory %s: %s; the log stays in %s", new_dir,
			       strerror(errno), a->dir);
			zr_free(new_dir);
			new_dir = NULL;
		} else {
			aof_remove_all(new_dir, a->name);
			pthread_mutex_lock(&a->mu);
			char *old = a->dir;
			a->dir = new_dir;
			pthread_mutex_unlock(&a->mu);
			if (open_segment(a, start, true) == 0) {
				zr_log(ZR_LOG_NOTICE, "The append-only log moved to %s", new_dir);
				zr_free(old);
				return;
			}
			pthread_mutex_lock(&a->mu);
			a->dir = old;
			pthread_mutex_unlock(&a->mu);
			zr_free(new_dir);
		}
	}
	open_segment(a, start, false);
}

/* Closes the open segment (policy MODE), opens the cut's, and lets
 * aof_drop_before on. */
static void do_cut(struct aof *a, enum aof_fsync mode, uint64_t cut_seq, char *cut_dir, uint64_t cut_gen)
{
	close_segment(a, mode);
	switch_segment(a, cut_seq, cut_dir);
	pthread_mutex_lock(&a->mu);
	a->cut_gen_done = cut_gen;
	pthread_cond_broadcast(&a->cut_done);
	pthread_mutex_unlock(&a->mu);
}

/* Every record up to SEQ is in the file: fsync as the policy says, publish. */
static void records_written(struct aof *a, uint64_t seq, enum aof_fsync mode)
{
	atomic_store_explicit(&a->written_seq, seq, memory_order_relaxed);
	if (mode == AOF_FSYNC_ALWAYS ||
	    (mode == AOF_FSYNC_EVERYSEC && zr_time_ms() - a->last_fsync_ms >= 1000)) {
		if (a->fd >= 0 && do_fsync(a, mode))
			sync_worked(a);
		mark_synced(a, seq);
	}
	publish(a, seq);
}

/* One retry of B; true when it is empty afterwards. */
static bool backlog_retry(struct aof *a, struct backlog *b, enum aof_fsync mode)
{
	if (b->bytes.len) {
		size_t done = a->fd >= 0 ? write_some(a, b->bytes.p, b->bytes.len) : b->bytes.len;
		memmove(b->bytes.p, b->bytes.p + done, b->bytes.len - done);
		b->bytes.len -= done;
		if (b->bytes.len)
			return false;
	}
	if (b->cut) {
		b->cut = false;
		do_cut(a, mode, b->cut_seq, b->cut_dir, b->cut_gen);
		b->cut_dir = NULL;
		write_or_keep(a, b, b->after.p, b->after.len);
		b->after.len = 0;
		if (b->bytes.len)
			return false;
	}
	zr_log(ZR_LOG_NOTICE, "The kept append-only records are written: write commands are accepted again.");
	records_written(a, b->seq, mode);
	return true;
}

/* Waits on a->wake (a->mu held) for at most MS milliseconds. */
static void wait_wake(struct aof *a, long ms)
{
	ZR_ASSERT_MUTEX_HELD(&a->mu);
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_nsec += ms * 1000000L;
	ts.tv_sec += ts.tv_nsec / 1000000000L;
	ts.tv_nsec %= 1000000000L;
	pthread_cond_timedwait(&a->wake, &a->mu, &ts);
}

static void *writer_main(void *arg)
{
	struct aof *a = arg;
	struct jbuf out;
	jbuf_init(&out);
	struct backlog bl = { 0 };
	jbuf_init(&bl.bytes);
	jbuf_init(&bl.after);
	pthread_mutex_lock(&a->mu);
	for (;;) {
		if (!backlog_empty(&bl)) {
			if (a->stop) {
				zr_log(ZR_LOG_WARNING,
				       "Stopping with %zu bytes of the append-only log unwritten (%s): their "
				       "writes were never acknowledged",
				       bl.bytes.len + bl.after.len,
				       strerror(atomic_load_explicit(&a->last_errno, memory_order_relaxed)));
				break;
			}
			enum aof_fsync mode = a->mode;
			pthread_mutex_unlock(&a->mu);
			bool done = backlog_retry(a, &bl, mode);
			pthread_mutex_lock(&a->mu);
			if (!done)
				wait_wake(a, 100);
			continue;
		}
		/* taken under mu: a cut (mu) falls wholly before or after it */
		out.len = 0;
		uint64_t from, seq;
		size_t n = stream_take(a->c, &out, &from, &seq);
		bool cut_now = a->cut_pending && a->cut_off <= from + n;
		if (n == 0 && !cut_now) {
			if (a->stop)
				break;
			bool fsync_due = a->mode == AOF_FSYNC_EVERYSEC && a->unsynced &&
					 zr_time_ms() - a->last_fsync_ms >= 1000;
			pthread_mutex_unlock(&a->mu);
			if (!fsync_due) {
				stream_wait(a->c, 100);
			} else {
				if (do_fsync(a, AOF_FSYNC_EVERYSEC))
					sync_worked(a);
				mark_synced(a, atomic_load_explicit(&a->written_seq, memory_order_relaxed));
			}
			pthread_mutex_lock(&a->mu);
			continue;
		}
		size_t cut = cut_now ? (size_t)(a->cut_off - from) : SIZE_MAX;
		uint64_t cut_seq = a->cut_seq, cut_gen = a->cut_gen;
		char *cut_dir = NULL;
		if (cut_now) {
			a->cut_pending = false;
			cut_dir = a->cut_dir;
			a->cut_dir = NULL;
		}
		enum aof_fsync mode = a->mode;
		pthread_mutex_unlock(&a->mu);
		int64_t stall = atomic_exchange_explicit(&a->stall_ms, 0, memory_order_relaxed);
		if (stall > 0) {
			struct timespec ts = { stall / 1000, (stall % 1000) * 1000000L };
			nanosleep(&ts, NULL);
		}

		if (cut != SIZE_MAX) {
			write_or_keep(a, &bl, out.p, cut);
			if (bl.bytes.len) {
				/* the cut waits for the bytes of the segment it closes */
				bl.cut = true;
				bl.cut_seq = cut_seq;
				bl.cut_gen = cut_gen;
				bl.cut_dir = cut_dir;
				jbuf_put(&bl.after, out.p + cut, n - cut);
			} else {
				do_cut(a, mode, cut_seq, cut_dir, cut_gen);
			}
		} else {
			cut = 0;
		}
		if (!bl.cut && n > cut)
			write_or_keep(a, &bl, out.p + cut, n - cut);
		if (backlog_empty(&bl))
			records_written(a, seq, mode);
		else
			bl.seq = seq;
		pthread_mutex_lock(&a->mu);
	}
	enum aof_fsync mode = a->mode;
	pthread_mutex_unlock(&a->mu);
	jbuf_free(&bl.bytes);
	jbuf_free(&bl.after);
	zr_free(bl.cut_dir);
	if (a->fd >= 0)
		do_fsync(a, mode);
	mark_synced(a, atomic_load_explicit(&a->written_seq, memory_order_relaxed));
	jbuf_free(&out);
	return NULL;
}

int aof_start(struct aof *a, enum aof_fsync mode, bool fresh)
{
	if (mkdir(a->dir, 0755) < 0 && errno != EEXIST) {
		int e = -errno;
		zr_log(ZR_LOG_WARNING, "Can't create the append-only directory %s: %s", a->dir,
		       strerror(errno));
		return e;
	}
	/* the cursor opens at the stream's end: the segment starts with the
	 * next seq, and every record after it reaches the writer */
	uint64_t last;
	pthread_mutex_lock(&a->mu);
	a->c = stream_consumer_open(a->stream, true, &last);
	uint64_t start = last + 1;
	a->cut_pending = false;
	a->mode = mode;
	a->stop = false;
	pthread_mutex_unlock(&a->mu);
	/* the records so far are durable (in the snapshot, or nowhere) */
	a->durable(a->durable_ctx, last);
	int r = open_segment(a, start, fresh);
	if (r < 0)
		goto out_free_consumer;
	atomic_store_explicit(&a->written_seq, start - 1, memory_order_relaxed);
	mark_synced(a, start - 1);
	a->last_fsync_ms = zr_time_ms();
	atomic_store_explicit(&a->current_size, segments_size(a, a->dir), memory_order_relaxed);
	if (pthread_create(&a->thread, NULL, writer_main, a) != 0) {
		close_segment(a, mode);
		r = -EAGAIN;
		goto out_free_consumer;
	}
	pthread_mutex_lock(&a->mu);
	a->running = true;
	pthread_mutex_unlock(&a->mu);
	return 0;
out_free_consumer:
	pthread_mutex_lock(&a->mu);
	stream_consumer_free(a->c);
	a->c = NULL;
	pthread_mutex_unlock(&a->mu);
	return r;
}

/* Wakes the writer thread, whose stop flag the caller set under a->mu,
 * unlocks a->mu, joins the thread, then closes the segment (its last
 * fsync as the mode has it) and publishes what it wrote. */
static void unlock_and_join_writer(struct aof *a)
{
	enum aof_fsync mode = a->mode;
	pthread_cond_signal(&a->wake);
	stream_kick(a->c);
	pthread_mutex_unlock(&a->mu);
	pthread_join(a->thread, NULL);
	close_segment(a, mode);
	publish(a, atomic_load_explicit(&a->written_seq, memory_order_relaxed));
	pthread_mutex_lock(&a->mu);
	stream_consumer_free(a->c);
	a->c = NULL;
	pthread_mutex_unlock(&a->mu);
}

void aof_stop(struct aof *a)
{
	pthread_mutex_lock(&a->mu);
	if (!a->running) {
		pthread_mutex_unlock(&a->mu);
		return;
	}
	a->running = false;
	a->stop = true;
	/* records appended from now on are not the log's; an open
	 * transaction's records are written too: its workers are gone or its
	 * commit is lost with the process anyway */
	stream_consumer_close(a->c, true);
	unlock_and_join_writer(a);
}

void aof_freeze(struct aof *a)
{
	/* every append and commit from now on waits for the process's end */
	stream_freeze(a->stream);
	pthread_mutex_lock(&a->mu);
	if (!a->running) {
		pthread_mutex_unlock(&a->mu);
		return;
	}
	/* unlike aof_stop, an open transaction stays out: its EXEC still
	 * runs (or is stuck), its commit will never come */
	a->running = false;
	a->stop = true;
	stream_consumer_close(a->c, false);
	unlock_and_join_writer(a);
}

/* --- snapshots ------------------------------------------------------------------ */

uint64_t aof_cut(struct aof *a, const char *new_dir)
{
	pthread_mutex_lock(&a->mu);
	uint64_t seq;
	uint64_t off = stream_position(a->stream, &seq);
	if (a->running) {
		zr_free(a->cut_dir);
		a->cut_dir = new_dir && strcmp(new_dir, a->dir) ? zr_strdup(new_dir) : NULL;
		a->cut_pending = true;
		a->cut_off = off;
		a->cut_seq = seq + 1;
		a->cut_gen++;
		pthread_cond_signal(&a->wake);
		stream_kick(a->c);
	}
	pthread_mutex_unlock(&a->mu);
	return seq;
}

int aof_write_errno(const struct aof *a)
{
	return atomic_load_explicit(&a->last_errno, memory_order_relaxed);
}

int aof_drop_before(struct aof *a, uint64_t seq)
{
	pthread_mutex_lock(&a->mu);
	int64_t deadline = zr_time_ms() + 10000;
	while (a->running && a->cut_gen_done != a->cut_gen && zr_time_ms() < deadline) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 1;
		pthread_cond_timedwait(&a->cut_done, &a->mu, &ts);
	}
	bool ok = !a->running || a->cut_gen_done == a->cut_gen;
	char *dir = zr_strdup(a->dir); /* the writer moves it at a cut */
	pthread_mutex_unlock(&a->mu);
	if (!ok) {
		zr_free(dir);
		return -ETIMEDOUT;
	}
	char **paths;
	uint64_t *starts;
	int n = aof_list(dir, a->name, &paths, &starts);
	if (n < 0) {
		zr_free(dir);
		return n;
	}
	for (int i = 0; i < n; i++) {
		if (starts[i] <= seq)
			unlink(paths[i]);
	}
	aof_list_free(paths, starts, n);
	fileio_fsync_dir(dir);
	/* racy against a concurrent append by a few bytes: only a rewrite trigger reads it */
	atomic_store_explicit(&a->current_size, segments_size(a, dir), memory_order_relaxed);
	zr_free(dir);
	return 0;
}

void aof_stats(struct aof *a, struct aof_stats *out)
{
	struct stream_stats ss;
	stream_stats(a->stream, &ss);
	pthread_mutex_lock(&a->mu);
	out->pending_bytes = a->c ? stream_pending(a->c) : 0;
	pthread_mutex_unlock(&a->mu);
	out->buffer_limit = ss.limit;
	out->buffer_peak = ss.peak;
	out->buffer_waits = ss.waits;
	out->records = ss.records;
	out->written_seq = atomic_load_explicit(&a->written_seq, memory_order_relaxed);
	out->synced_seq = atomic_load_explicit(&a->synced_seq, memory_order_relaxed);
	out->current_size = atomic_load_explicit(&a->current_size, memory_order_relaxed);
	out->fsyncs = atomic_load_explicit(&a->fsyncs, memory_order_relaxed);
	out->last_write_errno = atomic_load_explicit(&a->last_errno, memory_order_relaxed);
	out->delayed_fsync = atomic_load_explicit(&a->delayed_fsync, memory_order_relaxed);
}

void aof_set_dir(struct aof *a, const char *dir)
{
	pthread_mutex_lock(&a->mu);
	assert(!a->running);
	char *old = a->dir;
	a->dir = zr_strdup(dir);
	pthread_mutex_unlock(&a->mu);
	zr_free(old);
}

void aof_debug(struct aof *a, int64_t stall_ms, size_t limit)
{
	atomic_store_explicit(&a->stall_ms, stall_ms, memory_order_relaxed);
	if (limit)
		stream_set_limit(a->stream, limit);
}

/* --- listing ------------------------------------------------------------------------ */

static int cmp_start(const void *x, const void *y)
{
	const uint64_t *a = *(const uint64_t *const *)x, *b = *(const uint64_t *const *)y;
	return *a < *b ? -1 : *a > *b;
}

int aof_list(const char *dir_path, const char *name, char ***out, uint64_t **starts_out)
{
	*out = NULL;
	*starts_out = NULL;
	DIR *d = opendir(dir_path);
	if (!d)
		return errno == ENOENT ? 0 : -errno;
	size_t nlen = strlen(name);
	int n = 0, cap = 0;
	uint64_t **items = NULL; /* [0] start, then the path pointer stored after it */
	struct dirent *de;
	while ((de = readdir(d))) {
		const char *f = de->d_name;
		size_t fl = strlen(f);
		if (fl != nlen + 1 + 20 + 3 || strncmp(f, name, nlen) || f[nlen] != '.' ||
		    strcmp(f + fl - 3, ".zj"))
			continue;
		uint64_t start = 0;
		bool digits = true;
		for (int i = 0; i < 20; i++) {
			char ch = f[nlen + 1 + i];
			digits &= ch >= '0' && ch <= '9';
			start = start * 10 + (uint64_t)(ch - '0');
		}
		if (!digits)
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 8;
			items = zr_realloc(items, sizeof(*items) * (size_t)cap);
		}
		size_t plen = strlen(dir_path) + fl + 2;
		uint64_t *it = zr_malloc(sizeof(uint64_t) + plen);
		it[0] = start;
		snprintf((char *)(it + 1), plen, "%s/%s", dir_path, f);
		items[n++] = it;
	}
	closedir(d);
	if (n > 1) /* ITEMS is NULL in an empty directory: qsort must not see it (UBSan) */
		qsort(items, (size_t)n, sizeof(*items), cmp_start);
	char **paths = zr_calloc((size_t)n + 1, sizeof(char *));
	uint64_t *starts = zr_calloc((size_t)n + 1, sizeof(uint64_t));
	for (int i = 0; i < n; i++) {
		starts[i] = items[i][0];
		paths[i] = zr_strdup((char *)(items[i] + 1));
		zr_free(items[i]);
	}
	zr_free(items);
	*out = paths;
	*starts_out = starts;
	return n;
}

void aof_list_free(char **paths, uint64_t *starts, int n)
{
	for (int i = 0; i < n; i++)
		zr_free(paths[i]);
	zr_free(paths);
	zr_free(starts);
}

void aof_remove_all(const char *dir_path, const char *name)
{
	char **paths;
	uint64_t *starts;
	int n = aof_list(dir_path, name, &paths, &starts);
	for (int i = 0; i < n; i++)
		unlink(paths[i]);
	if (n > 0)
		aof_list_free(paths, starts, n);
	fileio_fsync_dir(dir_path);
}
