/* Unit tests of the replay state machine (zarisd/journal/replay.c):
 * records applied in order, a transaction's records (and those after its
 * first) held until its commit and dropped without one, records already
 * applied skipped, a seq gap and too many open transactions refused, the
 * callback's refusal reported at its record, and the same stream fed in
 * every chunking gives the same result. */
#include "zarisd/journal/replay.c"

#include "tests/tap.h"

struct log {
	char seen[4096]; /* "seq," per record applied */
	size_t len;
	uint64_t fail_seq;
};

static int record(void *ctx, const struct jr_cmd *rec, char *err, size_t errlen)
{
	struct log *l = ctx;
	if (rec->seq == l->fail_seq) {
		snprintf(err, errlen, "refused %u", (unsigned)rec->seq);
		return -ENOTSUP;
	}
	l->len += (size_t)snprintf(l->seen + l->len, sizeof(l->seen) - l->len, "%u,", (unsigned)rec->seq);
	return 0;
}

static void cmd(struct jbuf *b, uint64_t seq, uint64_t txn)
{
	size_t off = jr_cmd_begin(b, seq, 1, 0, txn, 1);
	const char *argv[2] = { "INCR", "k" };
	size_t lens[2] = { 4, 1 };
	jr_cmd_argv(b, 2, argv, lens);
	jr_cmd_versions_begin(b, 0);
	jr_frame_end(b, off);
}

static void commit(struct jbuf *b, uint64_t seq, uint64_t txn)
{
	size_t off = jr_frame_begin(b, JR_COMMIT);
	jbuf_u64(b, seq);
	jbuf_u64(b, txn);
	jr_frame_end(b, off);
}

/* Feeds B in chunks of CHUNK bytes (0: whole) after AFTER; returns the rc. */
static int run(const struct jbuf *b, size_t chunk, uint64_t after, struct log *l, struct jr_replay *rp)
{
	memset(l->seen, 0, sizeof(l->seen));
	l->len = 0;
	jr_replay_init(rp, after, record, l);
	int r = 0;
	for (size_t o = 0; o < b->len && r == 0;) {
		size_t n = chunk && b->len - o > chunk ? chunk : b->len - o;
		r = jr_replay_feed(rp, b->p + o, n);
		o += n;
	}
	return r;
}

int main(void)
{
	plan(16);
	struct jbuf b;
	jbuf_init(&b);
	cmd(&b, 1, 0);
	cmd(&b, 2, 5); /* txn 5 opens */
	cmd(&b, 3, 0); /* held behind it */
	cmd(&b, 4, 6); /* txn 6 opens */
	commit(&b, 5, 5);
	cmd(&b, 6, 6);
	commit(&b, 7, 6); /* both closed: 2 3 4 6 applied */
	cmd(&b, 8, 0);
	size_t off9 = b.len;
	cmd(&b, 9, 7); /* open at the end */
	cmd(&b, 10, 0);
	struct log l = { .fail_seq = 0 };
	struct jr_replay rp;
	is_int(run(&b, 0, 0, &l, &rp), 0, "whole stream accepted");
	is_str(l.seen, "1,2,3,4,6,8,", "applied in order, the transactions after their commits");
	uint64_t first = 0;
	ok(jr_replay_held(&rp, &first) == 2 && first == off9, "two held at the end");
	is_int((long long)rp.expect, 11, "every seq accepted");
	is_int((long long)jr_replay_drop(&rp), 2, "dropped, never applied");
	jr_replay_free(&rp);

	/* every chunking gives the same */
	int bad = 0;
	for (size_t chunk = 1; chunk < 80; chunk++) {
		if (run(&b, chunk, 0, &l, &rp) != 0 || strcmp(l.seen, "1,2,3,4,6,8,") || rp.nheld != 2)
			bad++;
		jr_replay_free(&rp);
	}
	is_int(bad, 0, "chunks of 1 to 79 bytes: the same records applied");

	/* after a snapshot at 4: 1..4 skipped; then 6 arrives without the
	 * first records of txn 6, which the snapshot had */
	is_int(run(&b, 7, 4, &l, &rp), 0, "replay after seq 4");
	is_str(l.seen, "6,8,", "records up to 4 skipped");
	jr_replay_free(&rp);

	/* a gap */
	struct jbuf g;
	jbuf_init(&g);
	cmd(&g, 1, 0);
	cmd(&g, 3, 0);
	ok(run(&g, 0, 0, &l, &rp) == -EINVAL && strstr(rp.err, "record 3 where 2 was expected"),
	   "a seq gap refused: %s", rp.err);
	is_int((long long)rp.err_pos, (long long)(g.len / 2), "at the record's stream offset");
	jr_replay_free(&rp);

	/* the callback's refusal */
	l.fail_seq = 3;
	ok(run(&b, 3, 0, &l, &rp) == -ENOTSUP && !strcmp(rp.err, "refused 3"), "the callback's error");
	ok(jr_replay_feed(&rp, b.p, 1) == -ENOTSUP, "the replay stays stopped");
	jr_replay_free(&rp);
	l.fail_seq = 0;

	/* JR_MAX_OPEN_TXN open transactions, then one more */
	g.len = 0;
	for (unsigned i = 1; i <= JR_MAX_OPEN_TXN + 1; i++)
		cmd(&g, i, i);
	ok(run(&g, 0, 0, &l, &rp) == -EINVAL && strstr(rp.err, "transactions open at once"),
	   "more than %d open transactions refused", JR_MAX_OPEN_TXN);
	jr_replay_free(&rp);

	/* a damaged frame in a stream */
	g.len = 0;
	cmd(&g, 1, 0);
	g.p[JR_FRAME_HEADER + 3] ^= 1;
	ok(run(&g, 5, 0, &l, &rp) == -EINVAL && strstr(rp.err, "checksum"), "a bad checksum refused");
	jr_replay_free(&rp);
	unsigned char zeros[16] = { 0 };
	jr_replay_init(&rp, 0, record, &l);
	ok(jr_replay_feed(&rp, zeros, sizeof(zeros)) == -EINVAL && strstr(rp.err, "frame length"),
	   "a zero length refused");
	jr_replay_free(&rp);
	/* an unknown kind */
	g.len = 0;
	size_t off = jr_frame_begin(&g, JR_SNAP_HEAD);
	jbuf_u64(&g, 1);
	jr_frame_end(&g, off);
	ok(run(&g, 0, 0, &l, &rp) == -EINVAL && strstr(rp.err, "unknown record kind 10"), "unknown kind");
	jr_replay_free(&rp);
	jbuf_free(&g);
	jbuf_free(&b);
	return 0;
}
