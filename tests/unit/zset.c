/* Unit tests of the sorted-set type (store/zset.c over zset_lp.c and
 * zset_sl.c): ZADD's flag rules, both encodings and the conversions
 * between them, ranks, score and lex spans, rank deletion, iteration both
 * ways, ZSCAN coverage across resizes, dup / memory / rewrite, and long
 * randomized runs checked against a plain sorted array; the properties of
 * ZRANDMEMBER's sampling (distinct ranks, in range, roughly uniform). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/tap.h"
#include "zarisd/core/mem.h"
#include "zarisd/core/util.h"
#include "zarisd/store/zset.h"

/* ZRANDMEMBER's sampling helpers are statics of the command file. */
#include "zarisd/commands/cmd_zset.c"

static const struct zset_limits small = { 128, 64 };
static const struct zset_limits tiny = { 8, 16 };

/* --- the reference model: a sorted array ------------------------------------ */

struct ref_elem {
	char m[24];
	size_t mlen;
	double score;
};

struct ref {
	struct ref_elem e[4096];
	size_t n;
};

static int ref_cmp(const struct ref_elem *a, double score, const char *m, size_t mlen)
{
	if (a->score != score)
		return a->score < score ? -1 : 1;
	return zset_lp_member_cmp(a->m, a->mlen, m, mlen);
}

static long ref_find(const struct ref *r, const char *m, size_t mlen)
{
	for (size_t i = 0; i < r->n; i++)
		if (r->e[i].mlen == mlen && !memcmp(r->e[i].m, m, mlen))
			return (long)i;
	return -1;
}

static void ref_del_at(struct ref *r, size_t i)
{
	memmove(&r->e[i], &r->e[i + 1], (r->n - i - 1) * sizeof(r->e[0]));
	r->n--;
}

static void ref_insert(struct ref *r, const char *m, size_t mlen, double score)
{
	size_t i = 0;
	while (i < r->n && ref_cmp(&r->e[i], score, m, mlen) < 0)
		i++;
	memmove(&r->e[i + 1], &r->e[i], (r->n - i) * sizeof(r->e[0]));
	memcpy(r->e[i].m, m, mlen);
	r->e[i].mlen = mlen;
	r->e[i].score = score;
	r->n++;
}

/* Redis's zsetAdd rules, written out independently. */
static unsigned ref_add(struct ref *r, double score, const char *m, size_t mlen, unsigned flags)
{
	long i = ref_find(r, m, mlen);
	if (i < 0) {
		if (flags & ZSET_ADD_XX)
			return ZSET_OUT_NOP;
		ref_insert(r, m, mlen, score);
		return ZSET_OUT_ADDED;
	}
	if (flags & ZSET_ADD_NX)
		return ZSET_OUT_NOP;
	double cur = r->e[i].score;
	if (flags & ZSET_ADD_INCR) {
		score += cur;
		if (isnan(score))
			return ZSET_OUT_NAN;
	}
	if ((flags & ZSET_ADD_LT) && score >= cur)
		return ZSET_OUT_NOP;
	if ((flags & ZSET_ADD_GT) && score <= cur)
		return ZSET_OUT_NOP;
	if (score == cur)
		return 0;
	ref_del_at(r, (size_t)i);
	ref_insert(r, m, mlen, score);
	return ZSET_OUT_UPDATED;
}

/* Whether Z holds exactly R, in order, walked forward and backward. */
static bool same(const struct zset *z, const struct ref *r)
{
	if (zset_card(z) != r->n)
		return false;
	struct zset_iter it;
	const char *m;
	size_t mlen;
	double score;
	zset_iter_init(&it, z, 0, false);
	for (size_t i = 0; i < r->n; i++) {
		if (!zset_iter_next(&it, &m, &mlen, &score) || score != r->e[i].score ||
		    mlen != r->e[i].mlen || memcmp(m, r->e[i].m, mlen)) {
			zset_iter_release(&it);
			return false;
		}
	}
	bool end = !zset_iter_next(&it, &m, &mlen, &score);
	zset_iter_release(&it);
	if (!end)
		return false;
	if (!r->n)
		return true;
	zset_iter_init(&it, z, r->n - 1, true);
	for (size_t i = r->n; i-- > 0;) {
		if (!zset_iter_next(&it, &m, &mlen, &score) || score != r->e[i].score ||
		    mlen != r->e[i].mlen || memcmp(m, r->e[i].m, mlen)) {
			zset_iter_release(&it);
			return false;
		}
	}
	zset_iter_release(&it);
	return true;
}

static uint64_t seed = 88172645463325252ull;
static uint64_t rnd(void)
{
	seed ^= seed << 13;
	seed ^= seed >> 7;
	seed ^= seed << 17;
	return seed;
}

static const double score_pool[] = { -INFINITY, -3.5, -1, 0, 0.1, 1, 1, 2, 2.5, 1e300, INFINITY, 7, 42 };

static double rnd_score(void)
{
	if (rnd() % 4 == 0)
		return score_pool[rnd() % (sizeof(score_pool) / sizeof(score_pool[0]))];
	return (double)(int64_t)(rnd() % 200) - 100 + (rnd() % 2 ? 0.25 : 0);
}

static size_t rnd_member(char *buf, size_t universe)
{
	return (size_t)snprintf(buf, 24, "m%zu", (size_t)(rnd() % universe));
}

/* --- focused tests ----------------------------------------------------------- */

static void test_basics(void)
{
	struct zset *z = zset_create(1, &small);
	ok(zset_is_compact(z), "a new small set is compact");
	double ns;
	is_int(zset_add(z, 2, "b", 1, 0, &ns, &small), ZSET_OUT_ADDED, "add b");
	is_int(zset_add(z, 1, "a", 1, 0, &ns, &small), ZSET_OUT_ADDED, "add a");
	is_int(zset_add(z, 1, "c", 1, 0, &ns, &small), ZSET_OUT_ADDED, "add c with a's score");
	size_t rank;
	ok(zset_rank(z, "c", 1, false, &rank) && rank == 1, "equal scores order by member");
	ok(zset_rank(z, "b", 1, true, &rank) && rank == 0, "reverse rank");
	is_int(zset_add(z, 5, "a", 1, ZSET_ADD_NX, &ns, &small), ZSET_OUT_NOP, "NX on a present member");
	is_int(zset_add(z, 5, "d", 1, ZSET_ADD_XX, &ns, &small), ZSET_OUT_NOP, "XX on an absent member");
	is_int(zset_add(z, 0, "a", 1, ZSET_ADD_GT, &ns, &small), ZSET_OUT_NOP, "GT with a lower score");
	is_int(zset_add(z, 3, "a", 1, ZSET_ADD_GT, &ns, &small), ZSET_OUT_UPDATED, "GT with a higher score");
	is_int(zset_add(z, 2, "a", 1, ZSET_ADD_INCR, &ns, &small), ZSET_OUT_UPDATED, "INCR");
	ok(ns == 5, "INCR gives the new score");
	is_int(zset_add(z, 5, "a", 1, 0, &ns, &small), 0, "same score: neither added nor updated");
	zset_add(z, INFINITY, "i", 1, 0, NULL, &small);
	is_int(zset_add(z, -INFINITY, "i", 1, ZSET_ADD_INCR, &ns, &small), ZSET_OUT_NAN, "inf + -inf is NaN");
	double s;
	ok(zset_score(z, "i", 1, &s) && isinf(s) && s > 0, "NaN left the score alone");
	ok(zset_remove(z, "i", 1) && !zset_remove(z, "i", 1), "remove once");
	ok(!zset_score(z, "zz", 2, &s), "absent member has no score");
	zset_add(z, 0, "", 0, 0, NULL, &small);
	ok(zset_score(z, "", 0, &s) && s == 0, "the empty member");
	zset_add(z, -0.0, "negz", 4, 0, NULL, &small);
	ok(zset_score(z, "negz", 4, &s) && s == 0 && !signbit(s),
	   "compact -0 reads back as 0 (like listpack)");
	zset_free(z);
}

static void test_conversion(void)
{
	struct zset *z = zset_create(1, &tiny);
	char m[24];
	for (int i = 0; i < 8; i++) {
		snprintf(m, sizeof(m), "k%d", i);
		zset_add(z, i, m, strlen(m), 0, NULL, &tiny);
	}
	ok(zset_is_compact(z), "8 members in an 8-entry compact set");
	zset_add(z, 100, "k8", 2, 0, NULL, &tiny);
	ok(!zset_is_compact(z), "the 9th member converts to skiplist");
	is_int(zset_card(z), 9, "nothing lost in the conversion");
	zset_remove(z, "k8", 2);
	ok(!zset_is_compact(z), "removal does not convert back");
	zset_compact_if_fits(z, &tiny);
	ok(zset_is_compact(z), "compact_if_fits converts a small skiplist back");
	size_t rank;
	ok(zset_rank(z, "k7", 2, false, &rank) && rank == 7, "order kept through both conversions");

	struct zset *l = zset_create(1, &tiny);
	zset_add(l, 1, "short", 5, 0, NULL, &tiny);
	zset_add(l, 1, "a-member-longer-than-16", 23, 0, NULL, &tiny);
	ok(!zset_is_compact(l), "a member over max_value converts");
	zset_compact_if_fits(l, &tiny);
	ok(!zset_is_compact(l), "and a set holding one stays a skiplist");
	zset_free(l);

	struct zset *f = zset_create(100, &tiny);
	ok(!zset_is_compact(f), "a first member over max_value creates a skiplist");
	zset_free(f);
	const struct zset_limits zero = { 0, 64 };
	f = zset_create(1, &zero);
	ok(!zset_is_compact(f), "max_entries 0 creates a skiplist");
	zset_free(f);
	zset_free(z);
}

static int emit_count(int argc, const char *const *argv, const size_t *lens, void *ctx)
{
	long *n = ctx;
	if (argc < 4 || lens[0] != 4 || memcmp(argv[0], "ZADD", 4) || (argc - 2) % 2)
		return -1;
	for (int i = 2; i < argc; i += 2) {
		double d;
		if (!zr_str_to_d(argv[i], lens[i], &d))
			return -1;
	}
	*n += (argc - 2) / 2;
	return 0;
}

static void test_ops(void)
{
	for (int big = 0; big < 2; big++) {
		struct zset *z = zset_create(1, &small);
		char m[24];
		int n = big ? 1000 : 50;
		for (int i = 0; i < n; i++) {
			snprintf(m, sizeof(m), "m%d", i);
			zset_add(z, i * 0.5, m, strlen(m), 0, NULL, &small);
		}
		ok(zset_is_compact(z) == !big, "%s encoding for %d members", big ? "skiplist" : "compact", n);
		struct zset *d = zset_dup(z);
		ok(zset_card(d) == zset_card(z) && zset_is_compact(d) == zset_is_compact(z),
		   "dup keeps size and encoding");
		size_t r1, r2;
		ok(zset_rank(d, "m7", 2, false, &r1) && zset_rank(z, "m7", 2, false, &r2) && r1 == r2,
		   "dup keeps order");
		zset_remove(d, "m7", 2);
		ok(zset_score(z, "m7", 2, NULL), "dup is deep");
		ok(zset_memory(z) > (size_t)n, "memory counts the elements (%zu bytes)", zset_memory(z));
		const struct store_type_ops *ops = &store_zset_ops;
		is_str(ops->encoding(z), big ? "skiplist" : "listpack", "OBJECT ENCODING name");
		long emitted = 0;
		ok(ops->rewrite(z, "key", 3, emit_count, &emitted) == 0 && emitted == n,
		   "rewrite emits every member in ZADDs");
		zset_free(d);
		zset_free(z);
	}
}

/* --- randomized runs against the model ------------------------------------------- */

static bool check_spans(const struct zset *z, const struct ref *r)
{
	for (int t = 0; t < 20; t++) {
		struct zset_score_range sr = { rnd_score(), rnd_score(), rnd() % 2, rnd() % 2 };
		size_t want_first = 0, want_n = 0;
		bool started = false;
		for (size_t i = 0; i < r->n; i++) {
			double v = r->e[i].score;
			bool in = (sr.minex ? v > sr.min : v >= sr.min) &&
				  (sr.maxex ? v < sr.max : v <= sr.max);
			if (in) {
				if (!started)
					want_first = i;
				started = true;
				want_n++;
			}
		}
		size_t first;
		size_t n = zset_score_span(z, &sr, &first);
		if (n != want_n || (n && first != want_first)) {
			diag("score span [%g%s, %g%s]: got %zu@%zu want %zu@%zu", sr.min, sr.minex ? "(" : "",
			     sr.max, sr.maxex ? "(" : "", n, first, want_n, want_first);
			return false;
		}
	}
	return true;
}

static bool check_ranks(const struct zset *z, const struct ref *r)
{
	for (size_t i = 0; i < r->n; i += 1 + rnd() % 7) {
		size_t rank;
		if (!zset_rank(z, r->e[i].m, r->e[i].mlen, false, &rank) || rank != i)
			return false;
		if (!zset_rank(z, r->e[i].m, r->e[i].mlen, true, &rank) || rank != r->n - 1 - i)
			return false;
		const char *m;
		size_t mlen;
		double score;
		zset_at(z, i, &m, &mlen, &score);
		if (mlen != r->e[i].mlen || memcmp(m, r->e[i].m, mlen) || score != r->e[i].score)
			return false;
	}
	return true;
}

static void randomized(const struct zset_limits *lim, size_t universe, int steps, const char *what)
{
	static struct ref r;
	r.n = 0;
	struct zset *z = zset_create(2, lim);
	bool good = true, was_full = false;
	char m[24];
	for (int step = 0; step < steps && good; step++) {
		unsigned op = (unsigned)(rnd() % 100);
		if (op < 55) {
			size_t mlen = rnd_member(m, universe);
			unsigned flags = 0;
			switch (rnd() % 8) {
			case 0:
				flags = ZSET_ADD_NX;
				break;
			case 1:
				flags = ZSET_ADD_XX;
				break;
			case 2:
				flags = ZSET_ADD_GT;
				break;
			case 3:
				flags = ZSET_ADD_LT;
				break;
			case 4:
				flags = ZSET_ADD_INCR;
				break;
			case 5:
				flags = ZSET_ADD_INCR | ZSET_ADD_XX;
				break;
			default:
				break;
			}
			double score = rnd_score();
			unsigned want = ref_add(&r, score, m, mlen, flags);
			unsigned got = zset_add(z, score, m, mlen, flags, NULL, lim);
			if (got != want) {
				diag("step %d: add %s %g flags %u: got %u want %u", step, m, score, flags,
				     got, want);
				good = false;
			}
		} else if (op < 75) {
			size_t mlen = rnd_member(m, universe);
			long i = ref_find(&r, m, mlen);
			if (i >= 0)
				ref_del_at(&r, (size_t)i);
			if (zset_remove(z, m, mlen) != (i >= 0))
				good = false;
		} else if (op < 80 && r.n) {
			size_t first = rnd() % r.n;
			size_t count = rnd() % (r.n - first + 1);
			if (count > 5)
				count = rnd() % 5;
			zset_remove_ranks(z, first, count);
			for (size_t k = 0; k < count; k++)
				ref_del_at(&r, first);
		} else if (op < 90) {
			good = check_spans(z, &r) && check_ranks(z, &r);
		} else if (op < 92) {
			zset_compact_if_fits(z, lim);
		}
		if (!zset_is_compact(z))
			was_full = true;
		if (good && (r.n < 200 || step % 16 == 0) && !same(z, &r)) {
			diag("step %d: contents differ from the model", step);
			good = false;
		}
	}
	ok(good, "%s: %d random steps match the model (ended with %zu members)", what, steps, r.n);
	ok(!lim->max_entries || was_full || universe <= lim->max_entries,
	   "%s: the run reached the skiplist encoding", what);
	zset_free(z);
}

/* Lex spans on a same-score set, both encodings. */
static void test_lex(void)
{
	const char *words[] = { "a", "aa", "ab", "b", "ba", "c", "d", "dd", "e", "f" };
	for (int big = 0; big < 2; big++) {
		const struct zset_limits *lim = big ? &(const struct zset_limits){ 0, 64 } : &small;
		struct zset *z = zset_create(1, lim);
		for (int i = 9; i >= 0; i--)
			zset_add(z, 0, words[i], strlen(words[i]), 0, NULL, lim);
		struct {
			const char *min, *max;
			int mininf, maxinf;
			bool minex, maxex;
			size_t first, n;
		} cases[] = {
			{ NULL, NULL, -1, 1, true, true, 0, 10 }, { "aa", "b", 0, 0, false, false, 1, 3 },
			{ "aa", "b", 0, 0, true, true, 2, 1 },	  { "b", "aa", 0, 0, false, false, 3, 0 },
			{ NULL, "c", -1, 0, true, false, 0, 6 },  { "dd", NULL, 0, 1, true, true, 8, 2 },
			{ NULL, NULL, 1, -1, true, true, 10, 0 }, { "a", "a", 0, 0, false, true, 0, 0 },
			{ "zz", NULL, 0, 1, false, true, 10, 0 },
		};
		bool good = true;
		for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
			struct zset_lex_range r = { cases[i].min,
						    cases[i].max,
						    cases[i].min ? strlen(cases[i].min) : 0,
						    cases[i].max ? strlen(cases[i].max) : 0,
						    cases[i].mininf,
						    cases[i].maxinf,
						    cases[i].minex,
						    cases[i].maxex };
			size_t first = 0, n = zset_lex_span(z, &r, &first);
			if (n != cases[i].n || (n && first != cases[i].first)) {
				diag("lex case %zu: got %zu@%zu want %zu@%zu", i, n, first, cases[i].n,
				     cases[i].first);
				good = false;
			}
		}
		ok(good, "lex spans (%s)", big ? "skiplist" : "compact");
		zset_free(z);
	}
}

static void scan_mark(const char *m, size_t mlen, double score, void *ctx)
{
	int *seen = ctx;
	char buf[24];
	size_t n = mlen - 1 < sizeof(buf) - 1 ? mlen - 1 : sizeof(buf) - 1;
	memcpy(buf, m + 1, n); /* members are not NUL-terminated */
	buf[n] = '\0';
	(void)score;
	seen[atoi(buf)]++;
}

/* ZSCAN visits every member present for the whole scan, across resizes. */
static void test_scan(void)
{
	const struct zset_limits lim = { 0, 64 };
	struct zset *z = zset_create(1, &lim);
	char m[24];
	for (int i = 0; i < 500; i++) {
		snprintf(m, sizeof(m), "m%d", i);
		zset_add(z, i, m, strlen(m), 0, NULL, &lim);
	}
	static int seen[3000];
	uint64_t cursor = 0;
	int steps = 0, added = 500;
	do {
		cursor = zset_scan(z, cursor, scan_mark, seen);
		/* grow the table mid-scan */
		for (int k = 0; k < 5 && added < 3000; k++, added++) {
			snprintf(m, sizeof(m), "m%d", added);
			zset_add(z, added, m, strlen(m), 0, NULL, &lim);
		}
		steps++;
	} while (cursor && steps < 100000);
	int missing = 0;
	for (int i = 0; i < 500; i++)
		missing += seen[i] == 0;
	ok(cursor == 0 && missing == 0, "scan across growth saw all 500 original members (%d steps)", steps);
	memset(seen, 0, sizeof(seen));
	/* shrink mid-scan: remove the upper members while scanning */
	cursor = 0;
	steps = 0;
	int removed = 2999;
	do {
		cursor = zset_scan(z, cursor, scan_mark, seen);
		for (int k = 0; k < 20 && removed >= 500; k++, removed--) {
			snprintf(m, sizeof(m), "m%d", removed);
			zset_remove(z, m, strlen(m));
		}
		steps++;
	} while (cursor && steps < 100000);
	missing = 0;
	for (int i = 0; i < 500; i++)
		missing += seen[i] == 0;
	ok(cursor == 0 && missing == 0, "scan across shrinking saw all 500 kept members");
	zset_free(z);

	struct zset *c = zset_create(1, &small);
	zset_add(c, 1, "m1", 2, 0, NULL, &small);
	zset_add(c, 2, "m2", 2, 0, NULL, &small);
	memset(seen, 0, sizeof(seen));
	ok(zset_scan(c, 0, scan_mark, seen) == 0 && seen[1] == 1 && seen[2] == 1, "compact scan is one step");
	zset_free(c);
}

/* distinct_ranks: COUNT distinct ranks below SIZE in both of its regimes
 * (shuffle when COUNT is a large share, rejection sampling otherwise), and
 * every rank about equally likely. */
static void test_random_ranks(void)
{
	static const size_t cases[][2] = { { 2, 1 },   { 5, 4 },      { 10, 3 },     { 10, 4 },
					   { 100, 5 }, { 1000, 333 }, { 1000, 334 }, { 100000, 10 } };
	bool good = true;
	static unsigned char seen[100000];
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		size_t size = cases[k][0], count = cases[k][1];
		for (int t = 0; t < 50 && good; t++) {
			size_t *r = distinct_ranks(size, count);
			memset(seen, 0, size);
			for (size_t i = 0; i < count; i++) {
				if (r[i] >= size || seen[r[i]]++) {
					diag("size %zu count %zu: rank %zu out of range or repeated", size,
					     count, r[i]);
					good = false;
				}
			}
			zr_free(r);
		}
	}
	ok(good, "distinct_ranks gives distinct in-range ranks in both regimes");

	/* 10000 draws of 3 out of 10: each rank expected 3000 times (sd ~46) */
	unsigned hits[10] = { 0 };
	for (int t = 0; t < 10000; t++) {
		size_t *r = distinct_ranks(10, 3);
		for (int i = 0; i < 3; i++)
			hits[r[i]]++;
		zr_free(r);
	}
	unsigned lo = hits[0], hi = hits[0];
	for (int i = 1; i < 10; i++) {
		lo = hits[i] < lo ? hits[i] : lo;
		hi = hits[i] > hi ? hits[i] : hi;
	}
	ok(lo > 2500 && hi < 3500, "distinct_ranks is roughly uniform (min %u max %u of 3000 expected)", lo,
	   hi);
	unsigned below[7] = { 0 };
	for (int t = 0; t < 70000; t++)
		below[rnd_below(7)]++;
	lo = hi = below[0];
	for (int i = 1; i < 7; i++) {
		lo = below[i] < lo ? below[i] : lo;
		hi = below[i] > hi ? below[i] : hi;
	}
	ok(lo > 9000 && hi < 11000, "rnd_below covers its range evenly (min %u max %u of 10000)", lo, hi);

	/* the picker walks the compact encoding once and answers like zset_at */
	for (int big = 0; big < 2; big++) {
		const struct zset_limits *lim = big ? &(const struct zset_limits){ 0, 64 } : &small;
		struct zset *z = zset_create(1, lim);
		char m[24];
		for (int i = 0; i < 40; i++) {
			snprintf(m, sizeof(m), "p%d", i);
			zset_add(z, i % 7, m, strlen(m), 0, NULL, lim);
		}
		struct picker p;
		picker_init(&p, z);
		bool same_el = true;
		for (size_t r = 0; r < 40; r++) {
			const char *a, *b;
			size_t al, bl;
			double as, bs;
			picker_get(&p, r, &a, &al, &as);
			zset_at(z, r, &b, &bl, &bs);
			same_el &= al == bl && !memcmp(a, b, al) && as == bs;
		}
		picker_free(&p);
		ok(same_el, "picker matches zset_at on every rank (%s)", big ? "skiplist" : "compact");
		zset_free(z);
	}
}

int main(void)
{
	zr_hash_init();
	test_basics();
	test_conversion();
	test_ops();
	test_lex();
	test_scan();
	test_random_ranks();
	randomized(&small, 60, 20000, "compact only");
	randomized(&tiny, 40, 20000, "compact <-> skiplist");
	randomized(&(const struct zset_limits){ 0, 64 }, 300, 30000, "skiplist only");
	randomized(&(const struct zset_limits){ 64, 64 }, 2000, 30000, "large universe");
	size_t before = zr_mem_used();
	struct zset *z = zset_create(1, &small);
	char m[24];
	for (int i = 0; i < 1000; i++) {
		snprintf(m, sizeof(m), "x%d", i);
		zset_add(z, i, m, strlen(m), 0, NULL, &small);
	}
	zset_free(z);
	is_int(zr_mem_used(), before, "every byte is given back");
	return done_testing();
}
