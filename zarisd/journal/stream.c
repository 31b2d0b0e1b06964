/* stream — see stream.h.
 *
 * Invariants (under mu): base <= every cursor <= end, except a cursor
 * opened after an open transaction began, which may sit past vis_end;
 * [base, end) are whole frames kept in `ring` (capacity a power of two,
 * byte at absolute offset o at ring[o & (cap - 1)]); vis_end <= end is the
 * end of the visible prefix (the start of the oldest gated transaction)
 * and vis_seq the seq of its last frame; seq is the last seq handed out.
 *
 * Checksums: a frame in the ring has its seq and length but not yet its
 * checksum; whoever copies frames out of the ring (stream_take,
 * stream_recent) fills them in on its copy, without the lock. An append
 * holds the mutex for a memcpy only, and a server without a consumer
 * computes no checksum at all.
 */
#include "zarisd/journal/stream.h"

#include <pthread.h>
#include <stdatomic.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "zarisd/core/crc32c.h"
#include "zarisd/core/mem.h"
#include "zarisd/core/thread.h"

#define RING_MIN (64u << 10)

struct open_txn {
	uint64_t txn;
	uint64_t start;	   /* absolute offset of its first frame */
	uint64_t seq_prev; /* seq of the frame before it */
};

struct stream_consumer {
	struct stream *s;
	struct stream_consumer *next;
	uint64_t cursor;	    /* absolute offset of the next byte to take */
	uint64_t stop_at, stop_seq; /* once closing: where taking ends, its seq */
	uint64_t drop_limit;	    /* stream_consumer_set_drop: 0 = applies back-pressure */
	bool holds, closing, kicked;
	bool dropped; /* fell drop_limit behind: cut off, holds nothing of the ring */
};

struct stream {
	pthread_mutex_t mu;
	pthread_cond_t data; /* consumers: something to take, or a kick */
	pthread_cond_t room; /* appenders: room under the limit, or a close */
	unsigned char *ring;
	size_t cap;
	uint64_t base, end;
	uint64_t vis_end, vis_seq;
	/* The last seq << 1, and STATE_KEEPING while frames are kept (see
	 * stream_number): one word, so that numbering without the mutex and
	 * a consumer's opening never interleave. */
	_Atomic uint64_t state;
	bool backlog; /* stream_set_backlog: keep the tail with no consumer */
	struct open_txn open[STREAM_MAX_OPEN_TXN];
	int nopen;
	struct stream_consumer *consumers;
	unsigned nconsumers, nholders; /* open (not closing) ones; those that hold replies */
	unsigned nwaiting;	       /* consumers in stream_wait */
	unsigned room_waiters;	       /* appenders waiting for room */
	size_t limit;
	char id[41];		  /* the replication id of this history ("" = none yet) */
	_Atomic size_t tail;	  /* history kept before the slowest cursor (stream_set_tail) */
	_Atomic size_t ring_held; /* end - base as of the last append, for stream_memory */
	uint64_t peak, waits, records;
	bool frozen;
};

struct stream *stream_create(void)
{
	struct stream *s = zr_calloc(1, sizeof(*s));
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->data, NULL);
	pthread_cond_init(&s->room, NULL);
	s->limit = STREAM_BUFFER_LIMIT;
	s->tail = STREAM_TAIL_BYTES;
	return s;
}

void stream_destroy(struct stream *s)
{
	if (!s)
		return;
	while (s->consumers)
		stream_consumer_free(s->consumers);
	pthread_cond_destroy(&s->data);
	pthread_cond_destroy(&s->room);
	pthread_mutex_destroy(&s->mu);
	zr_free(s->ring);
	zr_free(s);
}

/* --- frames ------------------------------------------------------------------------ */

static void le32_put(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t le32_get(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Numbers the frame at REC's start (its seq follows the kind byte in both
 * JR_CMD and JR_COMMIT) and sets its length; the checksum is left to
 * seal_frames. */
static void number_frame(struct jbuf *rec, uint64_t seq)
{
	le32_put(rec->p, (uint32_t)(rec->len - JR_FRAME_HEADER));
	for (int i = 0; i < 8; i++)
		rec->p[JR_FRAME_HEADER + 1 + i] = (unsigned char)(seq >> (8 * i));
}

/* Fills in the checksum of every frame of P[0..N) (whole frames). */
static void seal_frames(unsigned char *p, size_t n)
{
	size_t off = 0;
	while (off + JR_FRAME_HEADER <= n) {
		uint32_t plen = le32_get(p + off);
		le32_put(p + off + 4, crc32c(0, p + off + JR_FRAME_HEADER, plen));
		off += JR_FRAME_HEADER + plen;
	}
}

#define STATE_KEEPING 1u

static uint64_t cur_seq(const struct stream *s)
{
	return atomic_load_explicit(&((struct stream *)s)->state, memory_order_acquire) >> 1;
}

/* Whether frames are kept now: a consumer exists (open or still taking),
 * the backlog is on, or the stream is frozen (every append must then
 * reach the mutex and wait). With none of them the ring's history is
 * dropped: frames numbered without being kept leave it with a hole. mu
 * held. */
static void update_keeping(struct stream *s)
{
	if (s->consumers || s->backlog || s->frozen) {
		atomic_fetch_or_explicit(&s->state, STATE_KEEPING, memory_order_acq_rel);
	} else {
		atomic_fetch_and_explicit(&s->state, ~(uint64_t)STATE_KEEPING, memory_order_acq_rel);
		s->base = s->end;
		s->nopen = 0;
	}
}

/* --- the ring (mu held) -------------------------------------------------------- */

static void ring_put(struct stream *s, uint64_t at, const unsigned char *p, size_t n)
{
	if (!n)
		return;
	size_t i = (size_t)(at & (s->cap - 1));
	size_t first = s->cap - i < n ? s->cap - i : n;
	memcpy(s->ring + i, p, first);
	memcpy(s->ring, p + first, n - first);
}

static void ring_get(const struct stream *s, uint64_t at, unsigned char *p, size_t n)
{
	if (!n)
		return;
	size_t i = (size_t)(at & (s->cap - 1));
	size_t first = s->cap - i < n ? s->cap - i : n;
	memcpy(p, s->ring + i, first);
	memcpy(p + first, s->ring, n - first);
}

/* The size of the frame kept at AT (its header included). */
static uint64_t frame_size_at(const struct stream *s, uint64_t at)
{
	unsigned char h[4];
	ring_get(s, at, h, 4);
	return JR_FRAME_HEADER + (uint64_t)le32_get(h);
}

/* The lowest cursor of every consumer (OPEN_ONLY: of those not closing),
 * or END when there is none. */
static uint64_t min_cursor(const struct stream *s, bool open_only)
{
	uint64_t m = s->end;
	for (const struct stream_consumer *c = s->consumers; c; c = c->next)
		if ((!open_only || !c->closing) && !c->dropped && c->cursor < m)
			m = c->cursor;
	return m;
}

/* Visible bytes the slowest open consumer that applies back-pressure has
 * not taken. */
static uint64_t visible_pending(const struct stream *s)
{
	if (!s->nconsumers)
		return 0;
	uint64_t m = s->vis_end;
	for (const struct stream_consumer *c = s->consumers; c; c = c->next)
		if (!c->closing && !c->dropped && !c->drop_limit && c->cursor < m)
			m = c->cursor;
	return s->vis_end > m ? s->vis_end - m : 0;
}

/* Cuts off every consumer that fell its drop limit behind (mu held): it
 * no longer keeps the ring's bytes, and its owner learns it at its next
 * take or wait. */
static void drop_laggards(struct stream *s)
{
	ZR_ASSERT_MUTEX_HELD(&s->mu);
	for (struct stream_consumer *c = s->consumers; c; c = c->next)
		if (c->drop_limit && !c->dropped && !c->closing && s->end - c->cursor > c->drop_limit) {
			c->dropped = true;
			s->nconsumers--;
			if (c->holds)
				s->nholders--;
			pthread_cond_broadcast(&s->data);
		}
}

/* Drops whole frames from the front past the tail every consumer has
 * taken, then makes room for N more bytes (growing the ring). */
static void make_room(struct stream *s, size_t n)
{
	ZR_ASSERT_MUTEX_HELD(&s->mu);
	uint64_t keep = min_cursor(s, false);
	uint64_t tail = atomic_load_explicit(&s->tail, memory_order_relaxed);
	while (s->base < keep && keep - s->base > tail)
		s->base += frame_size_at(s, s->base);
	uint64_t need = s->end - s->base + n;
	atomic_store_explicit(&s->ring_held, (size_t)need, memory_order_relaxed);
	if (need <= s->cap)
		return;
	size_t cap = s->cap ? s->cap : RING_MIN;
	while (cap < need)
		cap *= 2;
	/* relaid at the same absolute offsets under the new mask */
	size_t used = (size_t)(s->end - s->base);
	unsigned char *lin = used ? zr_malloc(used) : NULL;
	if (used)
		ring_get(s, s->base, lin, used);
	zr_free(s->ring);
	s->ring = zr_malloc(cap);
	s->cap = cap;
	if (used)
		ring_put(s, s->base, lin, used);
	zr_free(lin);
}

static void recompute_visible(struct stream *s)
{
	if (s->nopen == 0) {
		s->vis_end = s->end;
		s->vis_seq = cur_seq(s);
		return;
	}
	uint64_t lo = UINT64_MAX;
	for (int i = 0; i < s->nopen; i++)
		if (s->open[i].start < lo) {
			lo = s->open[i].start;
			s->vis_seq = s->open[i].seq_prev;
		}
	s->vis_end = lo;
}

static void wait_while_frozen(struct stream *s)
{
	while (s->frozen)
		pthread_cond_wait(&s->room, &s->mu);
}

/* Numbers the next frame (mu held) and gates it when it opens TXN. */
static uint64_t next_seq(struct stream *s, uint64_t txn)
{
	ZR_ASSERT_MUTEX_HELD(&s->mu);
	uint64_t seq = (atomic_fetch_add_explicit(&s->state, 2, memory_order_acq_rel) >> 1) + 1;
	s->records++;
	if (txn) {
		bool known = false;
		for (int i = 0; i < s->nopen && !known; i++)
			known = s->open[i].txn == txn;
		if (!known && s->nopen < STREAM_MAX_OPEN_TXN)
			s->open[s->nopen++] = (struct open_txn){ txn, s->end, seq - 1 };
	}
	return seq;
}

/* Keeps REC (numbered) at the end, then what it made visible is
 * announced. mu held. */
static void put_frame(struct stream *s, const struct jbuf *rec)
{
	make_room(s, rec->len);
	ring_put(s, s->end, rec->p, rec->len);
	s->end += rec->len;
	recompute_visible(s);
	drop_laggards(s);
	if (s->nconsumers) {
		uint64_t pend = s->end - min_cursor(s, true);
		if (pend > s->peak)
			s->peak = pend;
	}
	if (s->nwaiting)
		pthread_cond_broadcast(&s->data);
}

/* --- appending ------------------------------------------------------------------- */

uint64_t stream_append(struct stream *s, struct jbuf *rec, uint64_t txn, bool *held)
{
	pthread_mutex_lock(&s->mu);
	wait_while_frozen(s);
	uint64_t pend = visible_pending(s);
	if (pend && pend + rec->len > s->limit) {
		s->waits++;
		s->room_waiters++;
		while (!s->frozen && (pend = visible_pending(s)) && pend + rec->len > s->limit)
			pthread_cond_wait(&s->room, &s->mu);
		s->room_waiters--;
		wait_while_frozen(s);
	}
	uint64_t seq = next_seq(s, txn);
	number_frame(rec, seq);
	put_frame(s, rec);
	if (held)
		*held = s->nholders > 0;
	pthread_mutex_unlock(&s->mu);
	return seq;
}

uint64_t stream_commit(struct stream *s, uint64_t txn, bool *held)
{
	uint64_t fast = stream_number(s);
	if (fast) {
		if (held)
			*held = false;
		return fast;
	}
	struct jbuf rec;
	unsigned char space[64];
	rec.p = space;
	rec.len = 0;
	rec.cap = sizeof(space);
	size_t off = jr_frame_begin(&rec, JR_COMMIT);
	jbuf_u64(&rec, 0);
	jbuf_u64(&rec, txn);
	(void)off; /* at 0: number_frame sets its length */
	pthread_mutex_lock(&s->mu);
	wait_while_frozen(s);
	uint64_t seq = next_seq(s, 0);
	number_frame(&rec, seq);
	for (int i = 0; i < s->nopen; i++)
		if (s->open[i].txn == txn) {
			s->open[i] = s->open[--s->nopen];
			break;
		}
	put_frame(s, &rec);
	if (held)
		*held = s->nholders > 0;
	pthread_mutex_unlock(&s->mu);
	return seq;
}

uint64_t stream_number(struct stream *s)
{
	uint64_t st = atomic_load_explicit(&s->state, memory_order_relaxed);
	while (!(st & STATE_KEEPING))
		if (atomic_compare_exchange_weak_explicit(&s->state, &st, st + 2, memory_order_acq_rel,
							  memory_order_relaxed))
			return (st >> 1) + 1;
	return 0;
}

void stream_set_backlog(struct stream *s, bool on)
{
	pthread_mutex_lock(&s->mu);
	s->backlog = on;
	update_keeping(s);
	pthread_mutex_unlock(&s->mu);
}

uint64_t stream_skip_large(struct stream *s, size_t bytes, uint64_t txn)
{
	if (bytes <= atomic_load_explicit(&s->tail, memory_order_relaxed))
		return 0;
	pthread_mutex_lock(&s->mu);
	wait_while_frozen(s);
	uint64_t seq = 0;
	/* with the backlog on every frame is kept and counted: a replica
	 * continuing from an offset must never miss one */
	if (!s->consumers && !s->backlog) {
		s->base = s->end; /* the history would have a hole */
		seq = next_seq(s, txn);
		recompute_visible(s);
	}
	pthread_mutex_unlock(&s->mu);
	return seq;
}

void stream_freeze(struct stream *s)
{
	pthread_mutex_lock(&s->mu);
	s->frozen = true;
	update_keeping(s);
	pthread_mutex_unlock(&s->mu);
}

void stream_set_limit(struct stream *s, size_t limit)
{
	pthread_mutex_lock(&s->mu);
	s->limit = limit;
	pthread_cond_broadcast(&s->room);
	pthread_mutex_unlock(&s->mu);
}

void stream_set_seq(struct stream *s, uint64_t seq)
{
	pthread_mutex_lock(&s->mu);
	uint64_t keep = atomic_load_explicit(&s->state, memory_order_relaxed) & STATE_KEEPING;
	atomic_store_explicit(&s->state, seq << 1 | keep, memory_order_release);
	s->base = s->end;
	s->nopen = 0;
	recompute_visible(s);
	pthread_mutex_unlock(&s->mu);
}

uint64_t stream_last_seq(const struct stream *s)
{
	return atomic_load_explicit(&((struct stream *)s)->state, memory_order_relaxed) >> 1;
}

uint64_t stream_position(struct stream *s, uint64_t *seq)
{
	pthread_mutex_lock(&s->mu);
	uint64_t end = s->end;
	*seq = cur_seq(s);
	pthread_mutex_unlock(&s->mu);
	return end;
}

unsigned stream_recent(struct stream *s, unsigned n, struct jbuf *out)
{
	pthread_mutex_lock(&s->mu);
	unsigned total = 0;
	for (uint64_t at = s->base; at < s->end; at += frame_size_at(s, at))
		total++;
	uint64_t at = s->base;
	for (unsigned skip = total > n ? total - n : 0; skip; skip--)
		at += frame_size_at(s, at);
	size_t len = (size_t)(s->end - at);
	jbuf_reserve(out, len);
	ring_get(s, at, out->p + out->len, len);
	pthread_mutex_unlock(&s->mu);
	seal_frames(out->p + out->len, len);
	out->len += len;
	return total < n ? total : n;
}

size_t stream_memory(const struct stream *s)
{
	/* relaxed: a figure for eviction's accounting, ordered with nothing */
	return s ? atomic_load_explicit(&((struct stream *)s)->ring_held, memory_order_relaxed) : 0;
}

void stream_stats(struct stream *s, struct stream_stats *out)
{
	pthread_mutex_lock(&s->mu);
	out->last_seq = cur_seq(s);
	out->end_offset = s->end;
	out->ring_bytes = s->end - s->base;
	out->first_offset = s->base;
	out->tail = atomic_load_explicit(&s->tail, memory_order_relaxed);
	out->backlog = s->backlog || s->consumers;
	out->limit = s->limit;
	out->peak = s->peak;
	out->waits = s->waits;
	out->records = s->records;
	out->consumers = s->nconsumers;
	pthread_mutex_unlock(&s->mu);
}

/* --- consumers ------------------------------------------------------------------- */

static void link_consumer(struct stream *s, struct stream_consumer *c);

struct stream_consumer *stream_consumer_open(struct stream *s, bool holds, uint64_t *seq)
{
	struct stream_consumer *c = zr_calloc(1, sizeof(*c));
	c->s = s;
	c->holds = holds;
	pthread_mutex_lock(&s->mu);
	c->cursor = s->end;
	link_consumer(s, c); /* from here no frame is numbered without the mutex */
	*seq = cur_seq(s);
	pthread_mutex_unlock(&s->mu);
	return c;
}

/* Where C's taking ends now and the seq there (mu held). */
static uint64_t take_end(const struct stream_consumer *c, uint64_t *seq)
{
	ZR_ASSERT_MUTEX_HELD(&c->s->mu);
	if (c->closing) {
		*seq = c->stop_seq;
		return c->stop_at;
	}
	*seq = c->s->vis_seq;
	return c->s->vis_end;
}

static uint64_t frame_seq_at(const struct stream *s, uint64_t at);

size_t stream_take(struct stream_consumer *c, struct jbuf *out, uint64_t *from, uint64_t *seq)
{
	return stream_take_max(c, out, SIZE_MAX, from, seq);
}

size_t stream_take_max(struct stream_consumer *c, struct jbuf *out, size_t max, uint64_t *from, uint64_t *seq)
{
	struct stream *s = c->s;
	pthread_mutex_lock(&s->mu);
	uint64_t end = c->dropped ? c->cursor : take_end(c, seq);
	if (c->dropped)
		*seq = 0;
	if (end > c->cursor && end - c->cursor > max) {
		/* whole frames only; *SEQ becomes the last one taken's */
		uint64_t at = c->cursor;
		do {
			*seq = frame_seq_at(s, at);
			at += frame_size_at(s, at);
		} while (at < end && at + frame_size_at(s, at) - c->cursor <= max);
		end = at;
	}
	*from = c->cursor;
	size_t n = end > c->cursor ? (size_t)(end - c->cursor) : 0;
	size_t at = out->len;
	if (n) {
		jbuf_reserve(out, n);
		ring_get(s, c->cursor, out->p + at, n);
		out->len += n;
		c->cursor = end;
		if (s->room_waiters)
			pthread_cond_broadcast(&s->room);
	}
	pthread_mutex_unlock(&s->mu);
	seal_frames(out->p + at, n);
	return n;
}

void stream_wait(struct stream_consumer *c, long ms)
{
	struct stream *s = c->s;
	pthread_mutex_lock(&s->mu);
	uint64_t seq;
	if (!c->kicked && !c->dropped && take_end(c, &seq) <= c->cursor) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += ms * 1000000L;
		ts.tv_sec += ts.tv_nsec / 1000000000L;
		ts.tv_nsec %= 1000000000L;
		s->nwaiting++;
		pthread_cond_timedwait(&s->data, &s->mu, &ts);
		s->nwaiting--;
	}
	c->kicked = false;
	pthread_mutex_unlock(&s->mu);
}

void stream_kick(struct stream_consumer *c)
{
	struct stream *s = c->s;
	pthread_mutex_lock(&s->mu);
	c->kicked = true;
	pthread_cond_broadcast(&s->data);
	pthread_mutex_unlock(&s->mu);
}

uint64_t stream_pending(struct stream_consumer *c)
{
	struct stream *s = c->s;
	pthread_mutex_lock(&s->mu);
	uint64_t n = s->end > c->cursor ? s->end - c->cursor : 0;
	pthread_mutex_unlock(&s->mu);
	return n;
}

/* mu held */
static void close_locked(struct stream_consumer *c, bool all)
{
	struct stream *s = c->s;
	ZR_ASSERT_MUTEX_HELD(&s->mu);
	if (c->closing)
		return;
	c->closing = true;
	if (c->dropped) /* counted out when it was cut off */
		return;
	if (all) {
		c->stop_at = s->end;
		c->stop_seq = cur_seq(s);
	} else {
		c->stop_at = s->vis_end > c->cursor ? s->vis_end : c->cursor;
		c->stop_seq = s->vis_seq;
	}
	s->nconsumers--;
	if (c->holds)
		s->nholders--;
	pthread_cond_broadcast(&s->room);
	pthread_cond_broadcast(&s->data);
}

void stream_consumer_close(struct stream_consumer *c, bool all)
{
	pthread_mutex_lock(&c->s->mu);
	close_locked(c, all);
	pthread_mutex_unlock(&c->s->mu);
}

void stream_consumer_free(struct stream_consumer *c)
{
	if (!c)
		return;
	struct stream *s = c->s;
	pthread_mutex_lock(&s->mu);
	close_locked(c, false);
	for (struct stream_consumer **pp = &s->consumers; *pp; pp = &(*pp)->next)
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	update_keeping(s);
	pthread_mutex_unlock(&s->mu);
	zr_free(c);
}

/* --- replication ----------------------------------------------------------------- */

void stream_set_tail(struct stream *s, size_t bytes)
{
	pthread_mutex_lock(&s->mu);
	atomic_store_explicit(&s->tail, bytes, memory_order_relaxed);
	pthread_mutex_unlock(&s->mu);
}

/* The seq of the JR_CMD / JR_COMMIT frame kept at AT (mu held). */
static uint64_t frame_seq_at(const struct stream *s, uint64_t at)
{
	ZR_ASSERT_MUTEX_HELD(&s->mu);
	unsigned char b[8];
	ring_get(s, at + JR_FRAME_HEADER + 1, b, 8);
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = v << 8 | b[i];
	return v;
}

static void link_consumer(struct stream *s, struct stream_consumer *c)
{
	c->next = s->consumers;
	s->consumers = c;
	update_keeping(s);
	s->nconsumers++;
	if (c->holds)
		s->nholders++;
}

struct stream_consumer *stream_consumer_open_at(struct stream *s, uint64_t offset, bool holds, uint64_t *seq)
{
	pthread_mutex_lock(&s->mu);
	if (offset < s->base || offset > s->end) {
		pthread_mutex_unlock(&s->mu);
		return NULL;
	}
	/* OFFSET must be a frame boundary; the seq before it is that of the
	 * frame ending there (or the stream's, at its end) */
	uint64_t at = s->base, before = 0;
	bool have_before = false;
	while (at < offset) {
		before = frame_seq_at(s, at);
		have_before = true;
		at += frame_size_at(s, at);
	}
	if (at != offset) {
		pthread_mutex_unlock(&s->mu);
		return NULL;
	}
	if (!have_before)
		before = at < s->end ? frame_seq_at(s, at) - 1 : cur_seq(s);
	struct stream_consumer *c = zr_calloc(1, sizeof(*c));
	c->s = s;
	c->holds = holds;
	c->cursor = offset;
	link_consumer(s, c);
	*seq = before;
	pthread_mutex_unlock(&s->mu);
	return c;
}

void stream_consumer_set_drop(struct stream_consumer *c, size_t limit)
{
	pthread_mutex_lock(&c->s->mu);
	c->drop_limit = limit;
	if (c->s->room_waiters)
		pthread_cond_broadcast(&c->s->room);
	pthread_mutex_unlock(&c->s->mu);
}

uint64_t stream_consumer_behind(struct stream_consumer *c)
{
	pthread_mutex_lock(&c->s->mu);
	uint64_t n = c->s->end > c->cursor ? c->s->end - c->cursor : 0;
	pthread_mutex_unlock(&c->s->mu);
	return n;
}

bool stream_consumer_dropped(struct stream_consumer *c)
{
	pthread_mutex_lock(&c->s->mu);
	bool d = c->dropped;
	pthread_mutex_unlock(&c->s->mu);
	return d;
}

void stream_reset(struct stream *s, uint64_t seq, uint64_t offset)
{
	pthread_mutex_lock(&s->mu);
	uint64_t keep = atomic_load_explicit(&s->state, memory_order_relaxed) & STATE_KEEPING;
	atomic_store_explicit(&s->state, seq << 1 | keep, memory_order_release);
	s->base = s->end = offset;
	atomic_store_explicit(&s->ring_held, 0, memory_order_relaxed);
	s->nopen = 0;
	for (struct stream_consumer *c = s->consumers; c; c = c->next) {
		c->cursor = offset;
		if (c->closing && c->stop_at < offset) {
			c->stop_at = offset;
			c->stop_seq = seq;
		}
	}
	recompute_visible(s);
	pthread_cond_broadcast(&s->room);
	pthread_mutex_unlock(&s->mu);
}

int stream_append_frame(struct stream *s, const unsigned char *frame, size_t len, bool *held)
{
	if (len < JR_FRAME_HEADER + 1 + 8)
		return -EINVAL;
	const unsigned char *pl = frame + JR_FRAME_HEADER;
	uint8_t kind = pl[0];
	uint64_t seq = 0, txn = 0;
	for (int i = 7; i >= 0; i--)
		seq = seq << 8 | pl[1 + i];
	struct jreader r = { pl + 9, frame + len };
	if (kind == JR_CMD) {
		uint64_t now;
		uint32_t db;
		if (!jrd_u64(&r, &now) || !jrd_u32(&r, &db) || !jrd_u64(&r, &txn))
			return -EINVAL;
	} else if (kind == JR_COMMIT) {
		if (!jrd_u64(&r, &txn))
			return -EINVAL;
	} else {
		return -EINVAL;
	}
	struct jbuf rec = { (unsigned char *)frame, len, len };
	pthread_mutex_lock(&s->mu);
	wait_while_frozen(s);
	if (seq != cur_seq(s) + 1) {
		pthread_mutex_unlock(&s->mu);
		return -ERANGE;
	}
	uint64_t pend = visible_pending(s);
	if (pend && pend + len > s->limit) {
		s->waits++;
		s->room_waiters++;
		while (!s->frozen && (pend = visible_pending(s)) && pend + len > s->limit)
			pthread_cond_wait(&s->room, &s->mu);
		s->room_waiters--;
		wait_while_frozen(s);
	}
	next_seq(s, kind == JR_CMD ? txn : 0);
	if (kind == JR_COMMIT)
		for (int i = 0; i < s->nopen; i++)
			if (s->open[i].txn == txn) {
				s->open[i] = s->open[--s->nopen];
				break;
			}
	if (atomic_load_explicit(&s->state, memory_order_relaxed) & STATE_KEEPING) {
		put_frame(s, &rec);
	} else {
		/* not kept, still counted: the offset follows the primary's */
		s->end += len;
		s->base = s->end;
		recompute_visible(s);
	}
	if (held)
		*held = s->nholders > 0;
	pthread_mutex_unlock(&s->mu);
	return 0;
}

void stream_set_id(struct stream *s, const char *id)
{
	pthread_mutex_lock(&s->mu);
	snprintf(s->id, sizeof(s->id), "%s", id);
	pthread_mutex_unlock(&s->mu);
}

uint64_t stream_origin(struct stream *s, char id[41])
{
	pthread_mutex_lock(&s->mu);
	memcpy(id, s->id, sizeof(s->id));
	uint64_t end = s->end;
	pthread_mutex_unlock(&s->mu);
	return end;
}
