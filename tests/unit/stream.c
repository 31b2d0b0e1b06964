/* Unit tests of the change stream (zarisd/journal/stream.c): numbering,
 * a consumer's cursor, transaction gating, closing with and without the
 * open transactions, the bounded tail with no consumer (and a record too
 * large for it only numbered), the ring's wrap-around and growth, and
 * back-pressure: an append over the limit waits until the consumer takes. */
#include "zarisd/journal/stream.c"

#include <stdio.h>

#include "tests/tap.h"

/* A JR_CMD of one SET with a value of VLEN bytes (seq 0, numbered by the
 * stream), in B. */
static void make_rec(struct jbuf *b, uint64_t txn, size_t vlen)
{
	static char val[1 << 21];
	memset(val, 'v', vlen);
	b->len = 0;
	size_t off = jr_cmd_begin(b, 0, 1700000000000LL, 0, txn, 1);
	const char *argv[3] = { "SET", "k", val };
	size_t lens[3] = { 3, 1, vlen };
	jr_cmd_argv(b, 3, argv, lens);
	jr_cmd_versions_begin(b, 0);
	jr_frame_end(b, off);
}

/* The seqs of the frames of BUF[0..LEN), in *SEQS (at most MAX); -1 when a
 * frame does not check. */
static int frame_seqs(const unsigned char *buf, size_t len, uint64_t *seqs, int max)
{
	size_t off = 0;
	int n = 0;
	while (off < len) {
		const unsigned char *pl;
		size_t plen;
		if (jr_next_frame(buf, len, &off, &pl, &plen, NULL) != JR_OK)
			return -1;
		uint64_t seq = 0;
		for (int i = 0; i < 8; i++)
			seq |= (uint64_t)pl[1 + i] << (8 * i);
		if (n < max)
			seqs[n] = seq;
		n++;
	}
	return n;
}

struct appender {
	struct stream *s;
	struct jbuf rec;
	_Atomic int done;
};

static void *append_main(void *arg)
{
	struct appender *ap = arg;
	stream_append(ap->s, &ap->rec, 0, NULL);
	atomic_store(&ap->done, 1);
	return NULL;
}

/* A capped take (a replica's sender): whole frames up to the cap, at
 * least one, and what is left stays behind the cursor. */
static void test_take_max(void)
{
	struct stream *s = stream_create();
	struct jbuf rec, out;
	jbuf_init(&rec);
	jbuf_init(&out);
	uint64_t seqs[8], at, from, seq;
	stream_set_seq(s, 14);
	struct stream_consumer *c = stream_consumer_open(s, false, &at);
	make_rec(&rec, 0, 5);
	for (int i = 0; i < 3; i++)
		stream_append(s, &rec, 0, NULL);
	size_t one = stream_take_max(c, &out, 1, &from, &seq);
	ok(one > 0 && seq == 15 && frame_seqs(out.p, out.len, seqs, 8) == 1,
	   "a cap below one frame still takes one whole frame (15)");
	is_int((long long)stream_consumer_behind(c), (long long)(2 * one), "two frames are left behind");
	out.len = 0;
	size_t n = stream_take_max(c, &out, 2 * one - 1, &from, &seq);
	ok(n == one && seq == 16, "a cap under two frames takes one (16)");
	out.len = 0;
	n = stream_take_max(c, &out, 10 * one, &from, &seq);
	ok(n == one && seq == 17, "a cap above what is left takes it all (17)");
	is_int((long long)stream_consumer_behind(c), 0, "nothing is left behind");
	stream_consumer_free(c);
	stream_destroy(s);
	jbuf_free(&rec);
	jbuf_free(&out);
}

int main(void)
{
	plan(31);
	struct stream *s = stream_create();
	struct jbuf rec, out;
	jbuf_init(&rec);
	jbuf_init(&out);
	uint64_t seqs[64];

	stream_set_seq(s, 10);
	make_rec(&rec, 0, 5);
	bool held = true;
	is_int((long long)stream_append(s, &rec, 0, &held), 11, "the first record after seq 10 is 11");
	ok(!held, "no consumer: nothing holds the reply");
	is_int((long long)stream_append(s, &rec, 0, NULL), 12, "the next is 12");
	is_int((long long)stream_last_seq(s), 12, "stream_last_seq");

	uint64_t at;
	struct stream_consumer *c = stream_consumer_open(s, true, &at);
	is_int((long long)at, 12, "a consumer opens after the last record");
	uint64_t from, seq;
	is_int((long long)stream_take(c, &out, &from, &seq), 0, "it takes nothing older");
	stream_append(s, &rec, 0, &held);
	ok(held, "a holding consumer is open: the reply is held");
	stream_append(s, &rec, 0, NULL);
	out.len = 0;
	size_t n = stream_take(c, &out, &from, &seq);
	ok(n == out.len && seq == 14 && frame_seqs(out.p, out.len, seqs, 64) == 2 && seqs[0] == 13 &&
		   seqs[1] == 14,
	   "it takes records 13 and 14 (seq %llu)", (unsigned long long)seq);

	/* a transaction is invisible until its commit, and so is what follows it */
	make_rec(&rec, 7, 5);
	stream_append(s, &rec, 7, NULL);
	make_rec(&rec, 0, 5);
	stream_append(s, &rec, 0, NULL);
	out.len = 0;
	is_int((long long)stream_take(c, &out, &from, &seq), 0, "an open transaction gates the stream");
	is_int((long long)stream_pending(c), (long long)(2 * rec.len), "its bytes are pending");
	is_int((long long)stream_commit(s, 7, NULL), 17, "the commit is 17");
	out.len = 0;
	stream_take(c, &out, &from, &seq);
	ok(seq == 17 && frame_seqs(out.p, out.len, seqs, 64) == 3 && seqs[0] == 15 && seqs[2] == 17,
	   "after the commit: 15, 16 and the commit 17");

	/* closing: without ALL an open transaction stays out, with ALL it is taken */
	make_rec(&rec, 8, 5);
	stream_append(s, &rec, 8, NULL);
	struct stream_consumer *c2 = stream_consumer_open(s, false, &at);
	make_rec(&rec, 8, 5);
	stream_append(s, &rec, 8, NULL);
	stream_consumer_close(c, false);
	out.len = 0;
	is_int((long long)stream_take(c, &out, &from, &seq), 0, "closed without ALL: the open txn stays out");
	stream_consumer_close(c2, true);
	out.len = 0;
	stream_take(c2, &out, &from, &seq);
	ok(frame_seqs(out.p, out.len, seqs, 64) == 1 && seqs[0] == 19 && seq == 19,
	   "closed with ALL: the txn's record after its cursor is taken");
	make_rec(&rec, 0, 5);
	stream_append(s, &rec, 0, &held);
	ok(!held, "closed consumers hold no reply");
	stream_commit(s, 8, NULL);
	stream_consumer_free(c);
	stream_consumer_free(c2);

	/* no consumer: a bounded tail */
	make_rec(&rec, 0, 1000);
	for (int i = 0; i < 5000; i++)
		stream_append(s, &rec, 0, NULL);
	struct stream_stats st;
	stream_stats(s, &st);
	ok(st.ring_bytes <= STREAM_TAIL_BYTES + rec.len && st.ring_bytes > STREAM_TAIL_BYTES - rec.len,
	   "5000 records of 1 kB keep about the 64 KiB tail (%llu bytes)", (unsigned long long)st.ring_bytes);
	out.len = 0;
	is_int((long long)stream_recent(s, 3, &out), 3, "stream_recent gives 3");
	ok(frame_seqs(out.p, out.len, seqs, 64) == 3 && seqs[2] == st.last_seq && seqs[0] == st.last_seq - 2,
	   "the last three, in order");
	uint64_t big = stream_skip_large(s, 4u << 20, 0);
	ok(big == st.last_seq + 1, "a 4 MiB record with no consumer is only numbered");
	stream_stats(s, &st);
	is_int((long long)st.ring_bytes, 0, "and the history before it is dropped (it would have a hole)");

	/* wrap-around and growth under a consumer */
	c = stream_consumer_open(s, true, &at);
	is_int((long long)stream_skip_large(s, 4u << 20, 0), 0, "with a consumer a large record is built");
	bool intact = true;
	uint64_t next = at + 1;
	for (int round = 0; round < 300 && intact; round++) {
		for (int i = 0; i < 1 + round % 7; i++) {
			make_rec(&rec, 0, 100 + (size_t)(round * 37 + i * 101) % 3000);
			stream_append(s, &rec, 0, NULL);
		}
		out.len = 0;
		stream_take(c, &out, &from, &seq);
		int k = frame_seqs(out.p, out.len, seqs, 64);
		for (int i = 0; i < k && intact; i++)
			intact = seqs[i] == next++;
		intact = intact && k > 0;
	}
	ok(intact, "records taken across the ring's wrap-around all check, in seq order");
	make_rec(&rec, 0, 1500000);
	stream_append(s, &rec, 0, NULL);
	out.len = 0;
	stream_take(c, &out, &from, &seq);
	ok(frame_seqs(out.p, out.len, seqs, 64) == 1 && seqs[0] == next,
	   "a record larger than the tail grows the ring");

	/* back-pressure */
	stream_set_limit(s, 4096);
	make_rec(&rec, 0, 1000);
	for (int i = 0; i < 3; i++) /* 3 x 1 kB under the 4 kB limit; a 4th would pass it */
		stream_append(s, &rec, 0, NULL);
	stream_stats(s, &st);
	uint64_t waits0 = st.waits;
	struct appender ap = { .s = s };
	jbuf_init(&ap.rec);
	make_rec(&ap.rec, 0, 1000);
	pthread_t t;
	pthread_create(&t, NULL, append_main, &ap);
	for (int i = 0; i < 2000; i++) { /* bounded: until it waits */
		stream_stats(s, &st);
		if (st.waits > waits0)
			break;
		struct timespec ts = { 0, 1000000 };
		nanosleep(&ts, NULL);
	}
	ok(st.waits == waits0 + 1, "an append over the limit waits");
	ok(!atomic_load(&ap.done), "and has not appended");
	out.len = 0;
	stream_take(c, &out, &from, &seq);
	pthread_join(t, NULL);
	ok(atomic_load(&ap.done), "the consumer's take lets it on");

	stream_consumer_free(c);
	stream_destroy(s);
	jbuf_free(&rec);
	jbuf_free(&out);
	jbuf_free(&ap.rec);
	test_take_max();
	return done_testing();
}
