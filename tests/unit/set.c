/* Unit tests of zarisd/store/set.c and intset.c: intset widths and their
 * upgrades, intset -> hashtable conversion (non-integer member, too many
 * members), 7.0's rebuild after SPOP, randomized operations against a
 * sorted-array reference model in both encodings, random-pick
 * distribution, SCAN coverage, dup / rewrite, and that every byte is given
 * back. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/tap.h"
#include "zarisd/core/mem.h"
#include "zarisd/core/util.h"
#include "zarisd/store/intset.h"
#include "zarisd/store/set.h"

/* --- reference model: an array of strings, linear search --------------------- */

#define MODEL_MAX 4096

struct model {
	char *m[MODEL_MAX];
	int n;
};

static int model_find(const struct model *m, const char *s)
{
	for (int i = 0; i < m->n; i++)
		if (!strcmp(m->m[i], s))
			return i;
	return -1;
}

static int model_add(struct model *m, const char *s)
{
	if (model_find(m, s) >= 0)
		return 0;
	m->m[m->n++] = strdup(s);
	return 1;
}

static bool model_del(struct model *m, const char *s)
{
	int i = model_find(m, s);
	if (i < 0)
		return false;
	free(m->m[i]);
	m->m[i] = m->m[--m->n];
	return true;
}

static void model_clear(struct model *m)
{
	for (int i = 0; i < m->n; i++)
		free(m->m[i]);
	m->n = 0;
}

/* Whether S holds exactly M; an intset must also iterate ascending. */
static bool same_as_model(const struct set *s, const struct model *m, char *why, size_t whylen)
{
	if (set_size(s) != (uint64_t)m->n) {
		snprintf(why, whylen, "size %llu != %d", (unsigned long long)set_size(s), m->n);
		return false;
	}
	struct set_iter it;
	set_iter_init(&it, s);
	const char *p;
	size_t len;
	int seen = 0;
	long long prev = 0;
	while (set_next(&it, &p, &len)) {
		char b[128];
		snprintf(b, sizeof(b), "%.*s", (int)len, p);
		if (model_find(m, b) < 0) {
			snprintf(why, whylen, "member %s not in model", b);
			return false;
		}
		if (s->enc == SET_ENC_INTSET) {
			long long v = atoll(b);
			if (seen && v <= prev) {
				snprintf(why, whylen, "intset not ascending at %s", b);
				return false;
			}
			prev = v;
		}
		seen++;
	}
	for (int i = 0; i < m->n; i++) {
		if (!set_contains(s, m->m[i], strlen(m->m[i]))) {
			snprintf(why, whylen, "set_contains(%s) false", m->m[i]);
			return false;
		}
	}
	return seen == m->n;
}

/* The number in P (LEN bytes, not NUL-terminated) after an optional 'm'. */
static int num_of(const char *p, size_t len)
{
	char b[32];
	snprintf(b, sizeof(b), "%.*s", (int)len, p);
	return atoi(b[0] == 'm' ? b + 1 : b);
}

/* --- intset ------------------------------------------------------------------------ */

static void test_intset(void)
{
	struct intset *is = intset_new();
	is_int(is->width, 2, "intset: starts 2 bytes wide");
	ok(intset_add(&is, 5) && intset_add(&is, -3) && intset_add(&is, 100) && !intset_add(&is, 5),
	   "intset: add, duplicate refused");
	is_int(is->width, 2, "intset: small values stay 2 bytes");
	intset_add(&is, 70000);
	is_int(is->width, 4, "intset: 70000 widens to 4 bytes");
	intset_add(&is, -5000000000LL);
	is_int(is->width, 8, "intset: -5e9 widens to 8 bytes (goes first)");
	intset_add(&is, INT64_MAX);
	intset_add(&is, INT64_MIN);
	int64_t want[] = { INT64_MIN, -5000000000LL, -3, 5, 100, 70000, INT64_MAX };
	bool order = intset_len(is) == 7;
	for (uint32_t i = 0; order && i < 7; i++)
		order = intset_get(is, i) == want[i];
	ok(order, "intset: ascending across widenings");
	ok(intset_contains(is, 70000) && !intset_contains(is, 70001) && intset_contains(is, INT64_MIN),
	   "intset: contains");
	ok(intset_remove(&is, 5) && !intset_remove(&is, 5) && intset_len(is) == 6, "intset: remove");
	is_int(is->width, 8, "intset: never narrows");
	struct intset *d = intset_dup(is);
	ok(d->len == is->len && !memcmp(d->data, is->data, (size_t)is->len * is->width), "intset: dup");
	zr_free(d);
	/* a narrow set never holds a wide value: contains() says no early */
	struct intset *n = intset_new();
	intset_add(&n, 1);
	ok(!intset_contains(n, 1LL << 40), "intset: value wider than the set is absent");
	zr_free(n);
	zr_free(is);
}

/* --- set ------------------------------------------------------------------------------ */

static void test_conversion(void)
{
	struct set *s = set_create("1", 1);
	is_int(s->enc, SET_ENC_INTSET, "set_create: integer first member -> intset");
	set_free(s);
	s = set_create("a", 1);
	is_int(s->enc, SET_ENC_HASHTABLE, "set_create: other first member -> hashtable");
	set_free(s);
	s = set_create("01", 2);
	is_int(s->enc, SET_ENC_HASHTABLE, "set_create: non-canonical integer -> hashtable");
	set_free(s);

	s = set_new_intset();
	char b[32];
	for (int i = 0; i < 8; i++)
		set_add(s, b, (size_t)snprintf(b, sizeof(b), "%d", i), 8);
	is_int(s->enc, SET_ENC_INTSET, "set: 8 integers at max 8 stay intset");
	set_add(s, "3", 1, 8);
	is_int(s->enc, SET_ENC_INTSET, "set: a duplicate does not convert");
	is_int(set_add(s, "8", 1, 8), 1, "set: ninth integer added");
	is_int(s->enc, SET_ENC_HASHTABLE, "set: ninth integer converts");
	ok(set_contains(s, "0", 1) && set_contains(s, "8", 1) && set_size(s) == 9, "set: members survive");
	set_free(s);

	s = set_new_intset();
	set_add(s, "1", 1, 512);
	set_add(s, "x", 1, 512);
	is_int(s->enc, SET_ENC_HASHTABLE, "set: a non-integer converts");
	set_remove(s, "x", 1);
	is_int(s->enc, SET_ENC_HASHTABLE, "set: removing it does not convert back");
	set_recompact(s, 512);
	is_int(s->enc, SET_ENC_INTSET, "set_recompact: all-integer hashtable -> intset (SPOP rebuild)");
	ok(set_contains(s, "1", 1) && set_size(s) == 1, "set_recompact: member kept");
	set_add(s, "y", 1, 512);
	set_recompact(s, 512);
	is_int(s->enc, SET_ENC_HASHTABLE, "set_recompact: a non-integer keeps the hashtable");
	set_free(s);

	s = set_new_intset();
	ok(!set_contains(s, "1.0", 3) && !set_remove(s, "abc", 3),
	   "set: non-integers are never in an intset");
	set_free(s);
}

static void random_ops(const char *name, uint64_t max_intset, bool strings, int keyspace, int rounds,
		       unsigned seed)
{
	srand(seed);
	struct model m = { 0 };
	struct set *s = set_new_intset();
	char why[256] = "";
	bool good = true;
	int step;
	for (step = 0; step < rounds && good; step++) {
		char b[32];
		int k = rand() % keyspace - keyspace / 2;
		if (strings && rand() % 4 == 0)
			snprintf(b, sizeof(b), "m%d", k);
		else
			snprintf(b, sizeof(b), "%d", k * 1000003); /* spans all widths */
		int op = rand() % 10;
		if (op < 6) {
			int want = model_add(&m, b), got = set_add(s, b, strlen(b), max_intset);
			if (got != want) {
				snprintf(why, sizeof(why), "set_add(%s) = %d, model %d", b, got, want);
				good = false;
			}
		} else if (op < 9) {
			bool want = model_del(&m, b), got = set_remove(s, b, strlen(b));
			if (got != want) {
				snprintf(why, sizeof(why), "set_remove(%s) = %d, model %d", b, got, want);
				good = false;
			}
		} else if (set_contains(s, b, strlen(b)) != (model_find(&m, b) >= 0)) {
			snprintf(why, sizeof(why), "set_contains(%s) wrong", b);
			good = false;
		}
		if (good && step % 50 == 0)
			good = same_as_model(s, &m, why, sizeof(why));
	}
	if (good)
		good = same_as_model(s, &m, why, sizeof(why));
	ok(good, "set random ops %s: %d steps agree with the model (ends %s)%s%s", name, step,
	   store_set_ops.encoding(s), good ? "" : ": ", why);
	struct set *d = set_dup(s);
	ok(d && d->enc == s->enc && same_as_model(d, &m, why, sizeof(why)),
	   "set %s: dup is equal, same encoding", name);
	set_free(d);
	set_free(s);
	model_clear(&m);
}

static void test_random_distribution(void)
{
	/* 10 members, 100000 draws: each expected 10000 (binomial sd ~95). */
	const char *names[2] = { "intset", "hashtable" };
	for (int enc = 0; enc < 2; enc++) {
		struct set *s = set_new_intset();
		char b[32];
		for (int i = 0; i < 10; i++)
			set_add(s, b, (size_t)snprintf(b, sizeof(b), "%d", i), enc ? 0 : 512);
		int counts[10] = { 0 };
		uint64_t rnd = 0x9E3779B97F4A7C15ULL;
		for (int i = 0; i < 100000; i++) {
			char buf[ZR_LONG_STR_SIZE];
			const char *p;
			size_t len;
			set_random(s, &rnd, buf, &p, &len);
			counts[p[0] - '0']++;
		}
		int lo = counts[0], hi = counts[0];
		for (int i = 1; i < 10; i++) {
			lo = counts[i] < lo ? counts[i] : lo;
			hi = counts[i] > hi ? counts[i] : hi;
		}
		ok(s->enc == (enc ? SET_ENC_HASHTABLE : SET_ENC_INTSET) && lo > 9000 && hi < 11000,
		   "set_random %s: every member drawn 9000..11000 times (min %d max %d)", names[enc], lo, hi);
		set_free(s);
	}
	/* A bigger hashtable with uneven chains: chi-square over 1000 members,
	 * 200000 draws (df 999: mean 999, sd ~45; 1300 is > 6 sd). */
	struct set *s = set_create("a", 1);
	char b[32];
	for (int i = 0; i < 1000; i++)
		set_add(s, b, (size_t)snprintf(b, sizeof(b), "m%d", i), 0);
	static int counts[1000];
	uint64_t rnd = 12345;
	for (int i = 0; i < 200000; i++) {
		char buf[ZR_LONG_STR_SIZE];
		const char *p;
		size_t len;
		set_random(s, &rnd, buf, &p, &len);
		counts[num_of(p, len)]++;
	}
	double chi = 0;
	for (int i = 0; i < 1000; i++)
		chi += (counts[i] - 200.0) * (counts[i] - 200.0) / 200.0;
	ok(chi < 1300, "set_random hashtable of 1000: chi-square %.0f < 1300", chi);
	set_free(s);
}

static void count_member(const char *p, size_t len, void *ctx)
{
	int *seen = ctx;
	seen[num_of(p, len)]++;
}

static void test_scan(void)
{
	struct set *s = set_new_intset();
	char b[32];
	for (int i = 0; i < 100; i++)
		set_add(s, b, (size_t)snprintf(b, sizeof(b), "%d", i), 512);
	int seen[500] = { 0 };
	ok(set_scan(s, 0, count_member, seen) == 0, "set scan: an intset is done in one call");
	int bad = 0;
	for (int i = 0; i < 100; i++)
		bad += seen[i] != 1;
	is_int(bad, 0, "set scan: intset members visited once");
	for (int i = 0; i < 500; i++)
		set_add(s, b, (size_t)snprintf(b, sizeof(b), "m%d", i), 512);
	memset(seen, 0, sizeof(seen));
	uint64_t cursor = 0;
	int steps = 0;
	do {
		cursor = set_scan(s, cursor, count_member, seen);
		steps++;
	} while (cursor && steps < 10000);
	bad = 0;
	for (int i = 100; i < 500; i++)
		bad += seen[i] != 1;
	for (int i = 0; i < 100; i++)
		bad += seen[i] != 2; /* "i" and "mi" */
	is_int(bad, 0, "set scan: a stable hashtable is covered exactly once");
	set_free(s);
}

struct emit_ctx {
	int calls, members;
	bool shape_ok;
	struct model seen;
};

static int emit(int argc, const char *const *argv, const size_t *lens, void *ctx)
{
	struct emit_ctx *e = ctx;
	e->calls++;
	e->members += argc - 2;
	if (lens[0] != 4 || memcmp(argv[0], "SADD", 4) || argc > 2 + 64)
		e->shape_ok = false;
	for (int i = 2; i < argc; i++) {
		char b[64];
		snprintf(b, sizeof(b), "%.*s", (int)lens[i], argv[i]);
		model_add(&e->seen, b);
	}
	return 0;
}

static void test_rewrite(void)
{
	struct set *s = set_new_intset();
	char b[32];
	for (int i = 0; i < 100; i++)
		set_add(s, b, (size_t)snprintf(b, sizeof(b), "%d", i * 7), 512);
	struct emit_ctx e = { .shape_ok = true };
	int rc = store_set_ops.rewrite(s, "key", 3, emit, &e);
	ok(rc == 0 && e.calls == 2 && e.members == 100 && e.seen.n == 100 && e.shape_ok,
	   "set rewrite: 100 intset members as SADD key + 64 at most, each its own buffer");
	model_clear(&e.seen);
	is_str(store_set_ops.encoding(s), "intset", "set ops: encoding name");
	set_free(s);
}

int main(void)
{
	size_t before = zr_mem_used();
	test_intset();
	test_conversion();
	random_ops("intset", 100000, false, 400, 20000, 1);
	random_ops("hashtable", 0, true, 1000, 30000, 2);
	random_ops("converting", 64, true, 300, 20000, 3);
	random_ops("converting by size", 64, false, 300, 20000, 4);
	test_random_distribution();
	test_scan();
	test_rewrite();
	is_int(zr_mem_used(), before, "every byte given back");
	return done_testing();
}
