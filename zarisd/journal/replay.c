/* journal/replay — see replay.h. Held records are copies, one heap block
 * each: a stream's buffer is reused as soon as the call returns, and a
 * loader's file may be unmapped before the commit arrives (a transaction
 * open across the end of a segment). */
#include "zarisd/journal/replay.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "zarisd/core/mem.h"

struct jr_held {
	uint64_t pos;
	unsigned char *pl; /* owned copy of the payload */
	size_t plen;
};

void jr_replay_init(struct jr_replay *rp, uint64_t after_seq, jr_apply_fn apply, void *ctx)
{
	memset(rp, 0, sizeof(*rp));
	rp->apply = apply;
	rp->ctx = ctx;
	rp->expect = after_seq + 1;
	jbuf_init(&rp->in);
}

size_t jr_replay_drop(struct jr_replay *rp)
{
	size_t n = rp->nheld;
	for (size_t i = 0; i < rp->nheld; i++)
		zr_free(rp->held[i].pl);
	rp->nheld = 0;
	rp->nopen = 0;
	return n;
}

void jr_replay_free(struct jr_replay *rp)
{
	jr_replay_drop(rp);
	ZR_FREE(rp->held);
	rp->capheld = 0;
	jbuf_free(&rp->in);
}

size_t jr_replay_held(const struct jr_replay *rp, uint64_t *first_pos)
{
	if (rp->nheld && first_pos)
		*first_pos = rp->held[0].pos;
	return rp->nheld;
}

static int refuse(struct jr_replay *rp, int rc, uint64_t pos, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int refuse(struct jr_replay *rp, int rc, uint64_t pos, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(rp->err, sizeof(rp->err), fmt, ap);
	va_end(ap);
	rp->rc = rc;
	rp->err_pos = pos;
	return rc;
}

static int apply_one(struct jr_replay *rp, const unsigned char *pl, size_t plen, uint64_t pos)
{
	struct jr_cmd rc;
	rp->applied++;
	if (!jr_parse_cmd(pl, plen, &rc))
		return refuse(rp, -EINVAL, pos, "malformed record");
	int r = rp->apply(rp->ctx, &rc, rp->err, sizeof(rp->err));
	if (r < 0) {
		rp->rc = r;
		rp->err_pos = pos;
	}
	return r < 0 ? r : 0;
}

static void hold(struct jr_replay *rp, const unsigned char *pl, size_t plen, uint64_t pos)
{
	if (rp->nheld == rp->capheld) {
		rp->capheld = rp->capheld ? rp->capheld * 2 : 64;
		rp->held = zr_realloc(rp->held, rp->capheld * sizeof(*rp->held));
	}
	unsigned char *copy = zr_malloc(plen);
	memcpy(copy, pl, plen);
	rp->held[rp->nheld++] = (struct jr_held){ pos, copy, plen };
}

/* The last open transaction committed: the held records, in order. */
static int release(struct jr_replay *rp)
{
	int r = 0;
	size_t i = 0;
	for (; i < rp->nheld && r == 0; i++)
		r = apply_one(rp, rp->held[i].pl, rp->held[i].plen, rp->held[i].pos);
	for (size_t j = 0; j < rp->nheld; j++)
		zr_free(rp->held[j].pl);
	rp->nheld = 0;
	return r;
}

int jr_replay_frame(struct jr_replay *rp, const unsigned char *pl, size_t plen, uint64_t pos)
{
	if (rp->rc)
		return rp->rc;
	struct jreader rd = { pl, pl + plen };
	uint8_t kind = 0;
	uint64_t seq, txn;
	jrd_u8(&rd, &kind);
	if ((kind != JR_CMD && kind != JR_COMMIT) || !jrd_u64(&rd, &seq))
		return refuse(rp, -EINVAL, pos, "unknown record kind %u", kind);
	if (seq < rp->expect)
		return JR_REPLAY_SKIPPED;
	if (seq != rp->expect)
		return refuse(rp, -EINVAL, pos, "record %" PRIu64 " where %" PRIu64 " was expected", seq,
			      rp->expect);
	if (kind == JR_COMMIT) {
		if (!jr_parse_commit(pl, plen, &seq, &txn, NULL))
			return refuse(rp, -EINVAL, pos, "malformed record");
		rp->expect = seq + 1;
		for (int i = 0; i < rp->nopen; i++)
			if (rp->open[i] == txn) {
				rp->open[i] = rp->open[--rp->nopen];
				break;
			}
		if (rp->nopen || !rp->nheld)
			return rp->nopen ? JR_REPLAY_HELD : JR_REPLAY_APPLIED;
		int r = release(rp);
		return r < 0 ? r : JR_REPLAY_APPLIED;
	}
	/* the header only: the whole record is decoded when it is applied */
	uint64_t now;
	uint32_t db;
	if (!jrd_u64(&rd, &now) || !jrd_u32(&rd, &db) || !jrd_u64(&rd, &txn))
		return refuse(rp, -EINVAL, pos, "malformed record");
	rp->expect = seq + 1;
	if (txn) {
		bool known = false;
		for (int i = 0; i < rp->nopen && !known; i++)
			known = rp->open[i] == txn;
		if (!known && rp->nopen == JR_MAX_OPEN_TXN)
			return refuse(rp, -EINVAL, pos, "more than %d transactions open at once",
				      JR_MAX_OPEN_TXN);
		if (!known)
			rp->open[rp->nopen++] = txn;
	}
	if (rp->nopen) {
		hold(rp, pl, plen, pos);
		return JR_REPLAY_HELD;
	}
	int r = apply_one(rp, pl, plen, pos);
	return r < 0 ? r : JR_REPLAY_APPLIED;
}

/* One whole frame at P (header included, N bytes of payload) at stream
 * offset POS. */
static int feed_frame(struct jr_replay *rp, const unsigned char *p, uint32_t n, uint64_t pos)
{
	if (!jr_frame_crc_ok(p, n))
		return refuse(rp, -EINVAL, pos, "checksum mismatch");
	int r = jr_replay_frame(rp, p + JR_FRAME_HEADER, n, pos);
	return r < 0 ? r : 0;
}

/* The frame at P[0..LEN) (at least its header): 1 whole, 0 cut, with its
 * payload length in *N; -1 (refused) when its length is impossible. */
static int frame_at(struct jr_replay *rp, const unsigned char *p, size_t len, uint64_t pos, uint32_t *n)
{
	int whole = jr_frame_peek(p, len, n);
	if (whole < 0 || *n == 0) { /* a log or a full sync has no heartbeats */
		refuse(rp, -EINVAL, pos, "impossible frame length");
		return -1;
	}
	return whole;
}

int jr_replay_feed(struct jr_replay *rp, const void *buf, size_t len)
{
	const unsigned char *p = buf;
	if (rp->rc)
		return rp->rc;
	/* first complete the frame begun by an earlier chunk */
	while (rp->in.len && len) {
		size_t want = JR_FRAME_HEADER;
		if (rp->in.len >= JR_FRAME_HEADER) {
			uint32_t n;
			if (frame_at(rp, rp->in.p, rp->in.len, rp->fed, &n) < 0)
				return rp->rc;
			want += n;
		}
		size_t take = want - rp->in.len < len ? want - rp->in.len : len;
		jbuf_put(&rp->in, p, take);
		p += take;
		len -= take;
		if (rp->in.len < want)
			continue; /* the header is whole now (loop again) or the chunk ran out */
		if (want == JR_FRAME_HEADER)
			continue;
		int r = feed_frame(rp, rp->in.p, (uint32_t)(want - JR_FRAME_HEADER), rp->fed);
		rp->fed += want;
		rp->in.len = 0;
		if (r < 0)
			return r;
	}
	/* then whole frames straight from the chunk, no copy */
	while (len >= JR_FRAME_HEADER) {
		uint32_t n;
		int whole = frame_at(rp, p, len, rp->fed, &n);
		if (whole < 0)
			return rp->rc;
		if (!whole)
			break;
		int r = feed_frame(rp, p, n, rp->fed);
		rp->fed += JR_FRAME_HEADER + (uint64_t)n;
		p += JR_FRAME_HEADER + (size_t)n;
		len -= JR_FRAME_HEADER + (size_t)n;
		if (r < 0)
			return r;
	}
	jbuf_put(&rp->in, p, len);
	return 0;
}
