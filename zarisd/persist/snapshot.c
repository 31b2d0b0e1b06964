/* snapshot — see snapshot.h. Each shard is encoded into a memory buffer
 * under its lock (store_snap_dump) and the buffer is written out after the
 * lock is released, so the extra memory of a save is one shard's encoding
 * plus the pre-images of entries written meanwhile. */
#include "zarisd/persist/snapshot.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "zarisd/core/log.h"
#include "zarisd/core/mem.h"
#include "zarisd/core/util.h"
#include "zarisd/persist/fileio.h"
#include "zarisd/journal/format.h"
#include "zarisd/store/store.h"

/* snapshot_set_extra's: written once by main before any snapshot, read
 * by the saving threads after (their start orders the two) */
static snapshot_extra_fn extra_fn;
static void *extra_ctx;

void snapshot_set_extra(snapshot_extra_fn fn, void *ctx)
{
	extra_fn = fn;
	extra_ctx = ctx;
}

struct snap_ctx {
	struct store *s;
	struct jbuf extra; /* the frames of snapshot_set_extra's hook, at the instant */
	snapshot_instant_fn at_instant;
	void *ctx;
	uint64_t seq;
	struct snapshot_origin origin;
	struct jbuf buf;
	uint64_t keys;
	unsigned ncmds;
};

static void instant(void *arg)
{
	struct snap_ctx *sc = arg;
	sc->seq = sc->at_instant ? sc->at_instant(sc->ctx, &sc->origin) : 0;
	if (extra_fn)
		extra_fn(extra_ctx, &sc->extra);
}

static int emit_cmd(int argc, const char *const *argv, const size_t *lens, void *arg)
{
	struct snap_ctx *sc = arg;
	jr_cmd_argv(&sc->buf, argc, argv, lens);
	sc->ncmds++;
	return 0;
}

static void put_u32_at(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

/* The JR_TAIL_META field of E, when it has metadata. */
static void put_meta(struct jbuf *b, const struct entry *e)
{
	if (!entry_has_meta(e))
		return;
	unsigned n = entry_meta_nlabels(e);
	const char *small[16];
	size_t small_lens[16];
	const char **labels = n <= 16 ? small : zr_malloc(n * sizeof(*labels));
	size_t *lens = n <= 16 ? small_lens : zr_malloc(n * sizeof(*lens));
	struct store_meta_fields f;
	entry_meta_fields(e, &f, labels, lens);
	jr_meta_put(b, &f);
	if (labels != small) {
		zr_free(labels);
		zr_free(lens);
	}
}

static void emit_entry(unsigned db, const struct entry *e, void *arg)
{
	struct snap_ctx *sc = arg;
	size_t klen;
	const char *key = entry_key(e, &klen);
	enum store_type t = entry_type(e);
	if (t == STORE_TYPE_STRING) {
		size_t vlen;
		const char *v = entry_str(e, &vlen);
		size_t off = jr_frame_begin(&sc->buf, JR_SNAP_STR);
		jbuf_u32(&sc->buf, db);
		jbuf_u64(&sc->buf, (uint64_t)entry_expire(e));
		jbuf_u64(&sc->buf, entry_version(e));
		jbuf_bytes(&sc->buf, key, klen);
		jbuf_bytes(&sc->buf, v, vlen);
		put_meta(&sc->buf, e);
		jr_frame_end(&sc->buf, off);
	} else {
		const struct store_type_ops *ops = store_type_ops_of(sc->s, t);
		if (!ops || !ops->rewrite) {
			zr_log(ZR_LOG_WARNING, "snapshot: type %d has no rewrite op; key skipped", (int)t);
			return;
		}
		size_t off = jr_frame_begin(&sc->buf, JR_SNAP_OBJ);
		jbuf_u32(&sc->buf, db);
		jbuf_u8(&sc->buf, (uint8_t)t);
		jbuf_u64(&sc->buf, (uint64_t)entry_expire(e));
		jbuf_u64(&sc->buf, entry_version(e));
		jbuf_bytes(&sc->buf, key, klen);
		size_t count_at = sc->buf.len;
		jbuf_u32(&sc->buf, 0);
		sc->ncmds = 0;
		ops->rewrite(entry_obj(e), key, klen, emit_cmd, sc);
		put_u32_at(sc->buf.p + count_at, sc->ncmds);
		put_meta(&sc->buf, e);
		jr_frame_end(&sc->buf, off);
	}
	sc->keys++;
}

/* rdb-key-save-delay for N keys (snapshot.h); no lock held, so writers
 * go on meanwhile: what a test needs to change keys while a snapshot runs. */
static void key_delay_sleep(const _Atomic int *key_delay, uint64_t n)
{
	for (uint64_t i = 0; key_delay && i < n; i++) {
		long long us = atomic_load_explicit(key_delay, memory_order_relaxed);
		if (us < 0)
			us = rand() % -us == 0;
		if (us == 0)
			continue;
		struct timespec ts = { (time_t)(us / 1000000), (long)(us % 1000000) * 1000 };
		nanosleep(&ts, NULL);
	}
}

int snapshot_write_sink(struct store *s, const struct snapshot_sink *sink, snapshot_instant_fn at_instant,
			void *ctx, _Atomic uint64_t *progress, const _Atomic int *key_delay,
			struct snapshot_result *out)
{
	memset(out, 0, sizeof(*out));
	struct snap_ctx sc = { .s = s, .at_instant = at_instant, .ctx = ctx };
	jbuf_init(&sc.buf);
	jbuf_init(&sc.extra);
	int r = store_snap_begin(s, instant, &sc);
	if (r < 0)
		goto out;
	jr_file_header(&sc.buf, JR_MAGIC_SNAPSHOT);
	size_t off = jr_frame_begin(&sc.buf, JR_SNAP_HEAD);
	jbuf_u64(&sc.buf, sc.seq);
	jbuf_u64(&sc.buf, (uint64_t)zr_time_ms());
	jbuf_u32(&sc.buf, store_databases(s));
	if (sc.origin.id[0]) {
		unsigned char le[8];
		for (int i = 0; i < 8; i++)
			le[i] = (unsigned char)(sc.origin.offset >> (8 * i));
		jr_tail_put(&sc.buf, JR_TAIL_ORIGIN_ID, sc.origin.id, strlen(sc.origin.id));
		jr_tail_put(&sc.buf, JR_TAIL_ORIGIN_OFFSET, le, sizeof(le));
	}
	jr_frame_end(&sc.buf, off);
	jbuf_put(&sc.buf, sc.extra.p, sc.extra.len);
	/* the head goes out at once: a replica's full sync announces itself
	 * with its first bytes (+FULLRESYNC), and the replica waits for that
	 * only a short while, however long the shards take */
	r = sink->write(sink->ctx, sc.buf.p, sc.buf.len);
	uint64_t total = sc.buf.len;
	sc.buf.len = 0;
	unsigned n = store_shard_count(s);
	for (unsigned i = 0; i < n && r == 0; i++) {
		uint64_t before = sc.keys;
		store_snap_dump(s, i, emit_entry, &sc);
		if (progress)
			atomic_store_explicit(progress, sc.keys, memory_order_relaxed);
		store_snap_buffered(s, sc.buf.cap); /* the image's, not the keyspace's */
		key_delay_sleep(key_delay, sc.keys - before);
		if (sc.buf.len >= (1u << 20) || i == n - 1) {
			r = sink->write(sink->ctx, sc.buf.p, sc.buf.len);
			total += sc.buf.len;
			sc.buf.len = 0;
		}
	}
	store_snap_buffered(s, 0);
	struct store_snap_stats st;
	store_snap_stats(s, &st);
	store_snap_end(s);
	if (r < 0)
		goto out;
	off = jr_frame_begin(&sc.buf, JR_SNAP_END);
	jbuf_u64(&sc.buf, sc.keys);
	jr_frame_end(&sc.buf, off);
	r = sink->write(sink->ctx, sc.buf.p, sc.buf.len);
	total += sc.buf.len;
	if (r == 0) {
		out->keys = sc.keys;
		out->bytes = total;
		out->journal_seq = sc.seq;
		out->cow_peak = st.peak;
		out->cow_entries = st.entries;
	}
out:
	jbuf_free(&sc.buf);
	jbuf_free(&sc.extra);
	return r;
}

static int file_write(void *ctx, const void *p, size_t n)
{
	return fileio_write_all(*(int *)ctx, p, n);
}

int snapshot_write(struct store *s, const char *path, snapshot_instant_fn at_instant, void *ctx,
		   _Atomic uint64_t *progress, const _Atomic int *key_delay, struct snapshot_result *out)
{
	memset(out, 0, sizeof(*out));
	size_t plen = strlen(path) + 8;
	char *tmp = zr_malloc(plen);
	snprintf(tmp, plen, "%s.tmp", path);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		int e = -errno;
		zr_log(ZR_LOG_WARNING, "Failed opening the temp snapshot file %s: %s", tmp, strerror(errno));
		zr_free(tmp);
		return e;
	}
	struct snapshot_sink sink = { file_write, &fd };
	int r = snapshot_write_sink(s, &sink, at_instant, ctx, progress, key_delay, out);
	if (r < 0)
		goto out_close;
	if (fsync(fd) < 0)
		r = -errno;
	if (close(fd) < 0 && r == 0)
		r = -errno;
	fd = -1;
	if (r == 0 && rename(tmp, path) < 0)
		r = -errno;
	if (r == 0)
		fileio_fsync_parent(path);
out_close:
	if (fd >= 0)
		close(fd);
	if (r < 0) {
		if (r != -EBUSY)
			zr_log(ZR_LOG_WARNING, "Write error saving the snapshot %s: %s", tmp, strerror(-r));
		unlink(tmp);
		memset(out, 0, sizeof(*out));
	}
	zr_free(tmp);
	return r;
}
