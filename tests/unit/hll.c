/* Unit tests of the HyperLogLog format (zarisd/store/hll.c): dense register
 * packing, sparse editing against a plain register array as the reference
 * model, sparse -> dense promotion (by size and by value), corrupt data,
 * the header cache, element hashing against values read from redis-server,
 * and the estimator's error on up to 1,000,000 distinct elements (Redis
 * documents a standard error of 0.81% for 16384 registers; the test allows
 * three times that).
 */
#include "zarisd/store/hll.c"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/tap.h"

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static uint64_t rng(void)
{
	/* xorshift64*: deterministic, so a failure reproduces */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 2685821657736338717ULL;
}

/* Registers of H as one byte each; false when H's data is corrupt. */
static bool registers_of(const struct hll *h, uint8_t *regs)
{
	memset(regs, 0, HLL_REGISTERS);
	return hll_merge_max(regs, h->p, h->len) == 0;
}

static void test_dense_packing(void)
{
	uint8_t *regs = calloc(1, HLL_DENSE_SIZE - HLL_HDR_SIZE);
	uint8_t ref[HLL_REGISTERS] = { 0 };
	int bad = 0;
	for (int round = 0; round < 200000; round++) {
		unsigned i = (unsigned)(rng() % HLL_REGISTERS), v = (unsigned)(rng() % 64);
		hll_dense_set(regs, i, v);
		ref[i] = (uint8_t)v;
		/* the register and its neighbours read back */
		for (int d = -1; d <= 1; d++) {
			long j = (long)i + d;
			if (j >= 0 && j < HLL_REGISTERS && hll_dense_get(regs, (unsigned)j) != ref[j])
				bad++;
		}
	}
	for (unsigned i = 0; i < HLL_REGISTERS; i++)
		if (hll_dense_get(regs, i) != ref[i])
			bad++;
	is_int(bad, 0, "dense registers: 200000 random writes read back, neighbours untouched");
	hll_dense_set(regs, HLL_REGISTERS - 1, 63);
	is_int(hll_dense_get(regs, HLL_REGISTERS - 1), 63, "the last register lies inside the 12288 bytes");
	is_int(regs[12287] >> 2, 63, "... in the top six bits of the last byte");
	free(regs);
}

static void test_empty_and_header(void)
{
	struct hll h;
	hll_init_empty(&h);
	static const uint8_t want[] = { 'H', 'Y', 'L', 'L', 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x7f, 0xff };
	ok(h.len == sizeof(want) && memcmp(h.p, want, sizeof(want)) == 0, "empty HLL: Redis's 18 bytes");
	ok(hll_is_valid(h.p, h.len), "empty HLL is valid");
	uint64_t card = 99;
	ok(hll_cache_get(h.p, &card) && card == 0, "empty HLL's cache is valid and 0");
	ok(hll_count(h.p, h.len, &card) == 0 && card == 0, "empty HLL counts 0");
	hll_cache_set(h.p, 0x0102030405060708ULL);
	ok(h.p[8] == 8 && h.p[15] == 1, "cache is little-endian");
	ok(hll_cache_get(h.p, &card) && card == 0x0102030405060708ULL, "cache reads back");
	hll_cache_invalidate(h.p);
	ok(!hll_cache_get(h.p, &card), "invalidated cache is not valid");

	ok(!hll_is_valid((const uint8_t *)"HYLL", 4), "too short is not an HLL");
	uint8_t buf[HLL_DENSE_SIZE] = { 'H', 'Y', 'L', 'X', 1 };
	ok(!hll_is_valid(buf, 18), "wrong magic is not an HLL");
	memcpy(buf, "HYLL", 4);
	buf[4] = 2;
	ok(!hll_is_valid(buf, 18), "unknown encoding is not an HLL");
	buf[4] = HLL_DENSE;
	ok(!hll_is_valid(buf, HLL_DENSE_SIZE - 1) && hll_is_valid(buf, HLL_DENSE_SIZE),
	   "a dense HLL must be exactly 12304 bytes");
	hll_release(&h);
}

/* Element -> (register, value) pairs read from redis-server 7.0 with PFADD
 * and PFDEBUG DECODE: they pin MurmurHash64A, its seed and the pattern. */
static void test_patterns_match_redis(void)
{
	static const struct {
		const char *ele;
		unsigned index, count;
	} cases[] = {
		{ "a", 12711, 2 },	  { "hello", 9216, 1 },
		{ "", 5938, 2 },	  { "0123456789abcdef", 5949, 1 },
		{ "abcdefghi", 6903, 1 }, { "foo bar baz!", 13903, 4 },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		unsigned index, count = hll_pattern(cases[i].ele, strlen(cases[i].ele), &index);
		ok(index == cases[i].index && count == cases[i].count,
		   "pattern of '%s' is register %u value %u", cases[i].ele, cases[i].index, cases[i].count);
	}
}

/* Random register raises on a sparse HLL (kept sparse by a huge limit), a
 * sparse one with the default limit (promotes), and a dense one, each
 * checked against the plain array after every step. */
static void test_sparse_model(void)
{
	struct hll sp, prom, dn;
	hll_init_empty(&sp);
	hll_init_empty(&prom);
	hll_init_empty(&dn);
	ok(hll_to_dense(&dn) == 0 && dn.len == HLL_DENSE_SIZE && dn.p[4] == HLL_DENSE,
	   "empty sparse -> dense");
	uint8_t *ref = calloc(1, HLL_REGISTERS), *got = malloc(HLL_REGISTERS);
	int bad = 0, bad_rc = 0, promoted_at = -1;
	for (int step = 0; step < 4000; step++) {
		/* clustered indexes produce VAL runs, ZERO splits and merges */
		unsigned idx = (unsigned)(step % 3 ? rng() % HLL_REGISTERS : (rng() % 64) * 7);
		unsigned val = (unsigned)(rng() % 32) + 1;
		int want = val > ref[idx];
		if (want)
			ref[idx] = (uint8_t)val;
		if (hll_set(&sp, idx, val, 1u << 30) != want)
			bad_rc++;
		if (hll_set(&prom, idx, val, 3000) != want)
			bad_rc++;
		if (hll_set(&dn, idx, val, 3000) != want)
			bad_rc++;
		if (promoted_at < 0 && prom.p[4] == HLL_DENSE)
			promoted_at = step;
		if (step % 97 == 0 || step == 3999) {
			if (!registers_of(&sp, got) || memcmp(got, ref, HLL_REGISTERS))
				bad++;
			if (!registers_of(&prom, got) || memcmp(got, ref, HLL_REGISTERS))
				bad++;
			if (!registers_of(&dn, got) || memcmp(got, ref, HLL_REGISTERS))
				bad++;
		}
	}
	is_int(bad_rc, 0, "hll_set reports a change exactly when the register rises");
	is_int(bad, 0, "sparse, promoted and dense HLLs hold the model's registers");
	ok(sp.p[4] == HLL_SPARSE, "with a huge limit the HLL stays sparse (%zu bytes)", sp.len);
	ok(promoted_at > 0 && prom.len == HLL_DENSE_SIZE, "with 3000 bytes it turned dense (at step %d)",
	   promoted_at);
	uint64_t a = 0, b = 0, c2 = hll_count_registers(ref);
	bool counted = hll_count(sp.p, sp.len, &a) == 0 && hll_count(dn.p, dn.len, &b) == 0;
	ok(counted && a == b && a == c2, "sparse, dense and register-array estimates agree (%llu)",
	   (unsigned long long)a);
	struct hll copy;
	hll_load(&copy, sp.p, sp.len);
	ok(hll_to_dense(&copy) == 0 &&
		   memcmp(copy.p + HLL_HDR_SIZE, dn.p + HLL_HDR_SIZE, HLL_DENSE_SIZE - HLL_HDR_SIZE) == 0,
	   "converting the sparse copy gives the dense registers");
	hll_release(&copy);

	/* a value above 32 cannot be sparse */
	struct hll big;
	hll_init_empty(&big);
	is_int(hll_set(&big, 5, 33, 3000), 1, "value 33 on a sparse HLL is a change");
	ok(big.p[4] == HLL_DENSE && hll_dense_get(big.p + HLL_HDR_SIZE, 5) == 33, "... made it dense");
	hll_release(&big);
	hll_release(&sp);
	hll_release(&prom);
	hll_release(&dn);
	free(ref);
	free(got);
}

/* Opcode sequences of a few hand-checked edits (the byte layout Redis
 * writes). */
static void test_sparse_bytes(void)
{
	struct hll h;
	hll_init_empty(&h);
	hll_set(&h, 0, 3, 3000);
	static const uint8_t a[] = { 0x88, 0x7f, 0xfe }; /* VAL 3x1, XZERO 16383 */
	ok(h.len == HLL_HDR_SIZE + 3 && memcmp(h.p + HLL_HDR_SIZE, a, 3) == 0, "first register: VAL XZERO");
	hll_set(&h, 1, 3, 3000);
	static const uint8_t b[] = { 0x89, 0x7f, 0xfd }; /* merged into VAL 3x2 */
	ok(h.len == HLL_HDR_SIZE + 3 && memcmp(h.p + HLL_HDR_SIZE, b, 3) == 0, "equal neighbour merges");
	hll_set(&h, 100, 1, 3000);
	char text[256];
	size_t n = hll_sparse_decode(h.p, h.len, text, sizeof(text));
	text[n] = '\0';
	is_str(text, "v:3,2 Z:98 v:1,1 Z:16283", "decode after a split of the XZERO");
	hll_set(&h, 2, 2, 3000);
	n = hll_sparse_decode(h.p, h.len, text, sizeof(text));
	text[n] = '\0';
	is_str(text, "v:3,2 v:2,1 Z:97 v:1,1 Z:16283", "splitting a long zero run keeps XZERO for > 64");
	hll_set(&h, 3, 2, 3000);
	n = hll_sparse_decode(h.p, h.len, text, sizeof(text));
	text[n] = '\0';
	is_str(text, "v:3,2 v:2,2 Z:96 v:1,1 Z:16283", "merge with the left neighbour");
	hll_set(&h, 40, 5, 3000);
	n = hll_sparse_decode(h.p, h.len, text, sizeof(text));
	text[n] = '\0';
	is_str(text, "v:3,2 v:2,2 z:36 v:5,1 z:59 v:1,1 Z:16283", "short zero runs use ZERO");
	hll_release(&h);
}

static void test_corrupt(void)
{
	struct hll h;
	hll_init_empty(&h);
	h.p[HLL_HDR_SIZE + 1] = 0xfe; /* XZERO 16383: one register short */
	uint64_t card;
	is_int(hll_count(h.p, h.len, &card), -EINVAL, "short sparse data: count fails");
	uint8_t *max = calloc(1, HLL_REGISTERS);
	is_int(hll_merge_max(max, h.p, h.len), -EINVAL, "short sparse data: merge fails");
	is_int(hll_set(&h, HLL_REGISTERS - 1, 1, 3000), -EINVAL, "setting an uncovered register fails");
	is_int(hll_to_dense(&h), -EINVAL, "short sparse data does not convert");
	ok(h.p[4] == HLL_SPARSE, "... and stays as it was");
	h.len = HLL_HDR_SIZE;
	is_int(hll_count(h.p, h.len, &card), -EINVAL, "no opcodes at all: count fails");
	free(max);
	hll_release(&h);
}

/* The estimate's relative error for N distinct elements, through a dense
 * HLL fed element by element. */
static void check_error(struct hll *h, unsigned long *added, unsigned long n)
{
	char ele[32];
	for (; *added < n; (*added)++) {
		int len = snprintf(ele, sizeof(ele), "element:%lu", *added);
		hll_add(h, ele, (size_t)len, 3000);
	}
	uint64_t card;
	int rc = hll_count(h->p, h->len, &card);
	double err = ((double)card - (double)n) / (double)n;
	ok(rc == 0 && err < 3 * 0.0081 && err > -3 * 0.0081,
	   "%lu distinct elements: estimate %llu, error %.3f%%", n, (unsigned long long)card, err * 100);
}

static void test_error(void)
{
	struct hll h;
	hll_init_empty(&h);
	unsigned long added = 0;
	static const unsigned long sizes[] = { 10, 100, 1000, 10000, 100000, 1000000 };
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		check_error(&h, &added, sizes[i]);
	hll_release(&h);
}

int main(void)
{
	plan(47);
	test_dense_packing();
	test_empty_and_header();
	test_patterns_match_redis();
	test_sparse_model();
	test_sparse_bytes();
	test_corrupt();
	test_error();
	return done_testing();
}
