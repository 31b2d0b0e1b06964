/* Unit tests of zarisd/store/hash.c and the structures under it
 * (strpack.c, strtab.c): listpack -> hashtable conversion on both limits,
 * insertion order, randomized operations against a plain reference model in
 * both encodings, SCAN coverage across resizes, random-pick distribution,
 * dup / rewrite, and that every byte is given back. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/tap.h"
#include "zarisd/core/mem.h"
#include "zarisd/store/hash.h"
#include "zarisd/store/strpack.h"
#include "zarisd/store/strtab.h"

/* --- reference model: parallel arrays, linear search ------------------------- */

#define MODEL_MAX 4096

struct model {
	char *f[MODEL_MAX];
	char *v[MODEL_MAX];
	int n;
};

static int model_find(const struct model *m, const char *f)
{
	for (int i = 0; i < m->n; i++)
		if (!strcmp(m->f[i], f))
			return i;
	return -1;
}

static int model_set(struct model *m, const char *f, const char *v)
{
	int i = model_find(m, f);
	if (i >= 0) {
		free(m->v[i]);
		m->v[i] = strdup(v);
		return 0;
	}
	m->f[m->n] = strdup(f);
	m->v[m->n] = strdup(v);
	m->n++;
	return 1;
}

static bool model_del(struct model *m, const char *f)
{
	int i = model_find(m, f);
	if (i < 0)
		return false;
	free(m->f[i]);
	free(m->v[i]);
	/* keep insertion order, like a listpack */
	memmove(&m->f[i], &m->f[i + 1], sizeof(char *) * (size_t)(m->n - i - 1));
	memmove(&m->v[i], &m->v[i + 1], sizeof(char *) * (size_t)(m->n - i - 1));
	m->n--;
	return true;
}

static void model_clear(struct model *m)
{
	for (int i = 0; i < m->n; i++) {
		free(m->f[i]);
		free(m->v[i]);
	}
	m->n = 0;
}

/* Whether H holds exactly M (and, for a listpack, in M's order). */
static bool same_as_model(const struct hash *h, const struct model *m, char *why, size_t whylen)
{
	if (hash_len(h) != (uint64_t)m->n) {
		snprintf(why, whylen, "len %llu != %d", (unsigned long long)hash_len(h), m->n);
		return false;
	}
	struct hash_iter it;
	hash_iter_init(&it, h);
	const char *f, *v;
	size_t flen, vlen;
	int i = 0, seen = 0;
	while (hash_next(&it, &f, &flen, &v, &vlen)) {
		char fb[256], vb[256];
		snprintf(fb, sizeof(fb), "%.*s", (int)flen, f);
		snprintf(vb, sizeof(vb), "%.*s", (int)vlen, v);
		int j = model_find(m, fb);
		if (j < 0 || strcmp(m->v[j], vb)) {
			snprintf(why, whylen, "pair %.100s=%.100s not in model", fb, vb);
			return false;
		}
		if (h->enc == HASH_ENC_LISTPACK && j != i) {
			snprintf(why, whylen, "listpack order: %.100s at %d, model %d", fb, i, j);
			return false;
		}
		i++;
		seen++;
	}
	for (int j = 0; j < m->n; j++) {
		const char *gv;
		size_t gl;
		if (!hash_get(h, m->f[j], strlen(m->f[j]), &gv, &gl) || gl != strlen(m->v[j]) ||
		    memcmp(gv, m->v[j], gl)) {
			snprintf(why, whylen, "hash_get(%s) wrong", m->f[j]);
			return false;
		}
	}
	return seen == m->n;
}

/* The number in P (LEN bytes, not NUL-terminated) after its first byte. */
static int num_of(const char *p, size_t len)
{
	char b[32];
	snprintf(b, sizeof(b), "%.*s", (int)len, p);
	return atoi(b + 1);
}

/* --- strpack / strtab basics ---------------------------------------------------- */

static void test_strpack(void)
{
	struct strpack p;
	strpack_init(&p);
	ok(strpack_append(&p, "f1", 2) == 0 && strpack_append(&p, "v1", 2) == 0, "strpack: append");
	char big[300];
	memset(big, 'x', sizeof(big));
	ok(strpack_append(&p, "f2", 2) == 0 && strpack_append(&p, big, sizeof(big)) == 0,
	   "strpack: append a 300-byte element (2-byte varint)");
	ok(strpack_append(&p, "", 0) == 0 && strpack_append(&p, "e", 1) == 0, "strpack: empty element");
	is_int(p.count, 6, "strpack: six elements");
	size_t off = strpack_find_pair(&p, "f2", 2);
	ok(off != STRPACK_END, "strpack: find f2");
	const char *s;
	size_t len;
	size_t voff = strpack_get(&p, off, &s, &len);
	strpack_get(&p, voff, &s, &len);
	is_int(len, 300, "strpack: value length through the varint");
	ok(strpack_find_pair(&p, "v1", 2) == STRPACK_END, "strpack: values are not found as fields");
	ok(strpack_find_pair(&p, "", 0) != STRPACK_END, "strpack: empty field found");
	ok(strpack_replace(&p, voff, "short", 5) == 0, "strpack: replace shrinks");
	strpack_get(&p, voff, &s, &len);
	ok(len == 5 && !memcmp(s, "short", 5), "strpack: replaced value read back");
	strpack_delete(&p, strpack_find_pair(&p, "f1", 2), 2);
	is_int(p.count, 4, "strpack: delete a pair");
	off = strpack_offset_of(&p, 0);
	strpack_get(&p, off, &s, &len);
	ok(len == 2 && !memcmp(s, "f2", 2), "strpack: order kept after delete");
	strpack_clear(&p);
	ok(p.buf == NULL && p.bytes == 0 && p.count == 0, "strpack: clear");
}

static void collect(const struct strtab_node *n, void *ctx)
{
	unsigned char *seen = ctx;
	int i = num_of(n->data, n->klen);
	seen[i]++;
}

static void test_strtab_scan_resize(void)
{
	/* Keys present for the whole scan are seen at least once even when
	 * the table grows and shrinks between steps. */
	struct strtab t;
	strtab_init(&t);
	char k[32];
	for (int i = 0; i < 1000; i++)
		strtab_add(&t, k, (size_t)snprintf(k, sizeof(k), "k%d", i));
	unsigned char seen[5000] = { 0 };
	uint64_t cursor = 0;
	int steps = 0, extra = 1000;
	do {
		cursor = strtab_scan(&t, cursor, collect, seen);
		steps++;
		if (steps % 7 == 0 && extra < 5000) { /* grow */
			for (int j = 0; j < 300 && extra < 5000; j++, extra++)
				strtab_add(&t, k, (size_t)snprintf(k, sizeof(k), "k%d", extra));
		}
		if (steps == 400) { /* shrink: drop the added ones */
			for (int j = 1000; j < extra; j++)
				strtab_delete(&t, k, (size_t)snprintf(k, sizeof(k), "k%d", j));
		}
	} while (cursor && steps < 100000);
	int missing = 0;
	for (int i = 0; i < 1000; i++)
		missing += !seen[i];
	ok(cursor == 0, "strtab scan: finishes (%d steps)", steps);
	is_int(missing, 0, "strtab scan: every permanent key visited across grow and shrink");
	strtab_clear(&t);
	is_int(t.bytes, 0, "strtab: clear gives back every byte");
}

/* --- hash -------------------------------------------------------------------- */

static void test_conversion(void)
{
	struct hash_limits lim = { .max_entries = 4, .max_value = 8 };
	struct hash *h = hash_new();
	char f[16], v[16];
	for (int i = 0; i < 4; i++) {
		snprintf(f, sizeof(f), "f%d", i);
		snprintf(v, sizeof(v), "v%d", i);
		hash_set(h, f, strlen(f), v, strlen(v), &lim);
	}
	is_int(h->enc, HASH_ENC_LISTPACK, "hash: 4 fields at max 4 stay listpack");
	hash_set(h, "f0", 2, "again", 5, &lim);
	is_int(h->enc, HASH_ENC_LISTPACK, "hash: replacing a value does not convert");
	is_int(hash_set(h, "f4", 2, "v4", 2, &lim), 1, "hash: fifth field added");
	is_int(h->enc, HASH_ENC_HASHTABLE, "hash: fifth field converts");
	hash_delete(h, "f4", 2);
	hash_delete(h, "f3", 2);
	is_int(h->enc, HASH_ENC_HASHTABLE, "hash: never converts back");
	const char *gv;
	size_t gl;
	ok(hash_get(h, "f0", 2, &gv, &gl) && gl == 5 && !memcmp(gv, "again", 5),
	   "hash: values survive conversion");
	hash_free(h);

	h = hash_new();
	hash_set(h, "12345678", 8, "12345678", 8, &lim);
	is_int(h->enc, HASH_ENC_LISTPACK, "hash: value of exactly max_value stays listpack");
	hash_set(h, "a", 1, "123456789", 9, &lim);
	is_int(h->enc, HASH_ENC_HASHTABLE, "hash: value over max_value converts");
	hash_free(h);
	h = hash_new();
	hash_set(h, "123456789", 9, "v", 1, &lim);
	is_int(h->enc, HASH_ENC_HASHTABLE, "hash: field over max_value converts");
	hash_free(h);
}

/* Randomized HSET/HDEL/HGET against the model, in one encoding or across
 * the conversion, checking the whole content every few steps. */
static void random_ops(const char *name, struct hash_limits lim, int keyspace, int rounds, unsigned seed)
{
	srand(seed);
	struct model m = { 0 };
	struct hash *h = hash_new();
	char why[256] = "";
	bool good = true;
	int step;
	for (step = 0; step < rounds && good; step++) {
		char f[32], v[64];
		snprintf(f, sizeof(f), "field:%d", rand() % keyspace);
		int vl = rand() % 12;
		for (int i = 0; i < vl; i++)
			v[i] = (char)('a' + rand() % 26);
		v[vl] = '\0';
		int op = rand() % 10;
		if (op < 6) {
			int want = model_set(&m, f, v);
			int got = hash_set(h, f, strlen(f), v, strlen(v), &lim);
			if (got != want) {
				snprintf(why, sizeof(why), "hash_set(%s) = %d, model %d", f, got, want);
				good = false;
			}
		} else if (op < 9) {
			bool want = model_del(&m, f), got = hash_delete(h, f, strlen(f));
			if (got != want) {
				snprintf(why, sizeof(why), "hash_delete(%s) = %d, model %d", f, got, want);
				good = false;
			}
		} else {
			const char *gv;
			size_t gl;
			bool got = hash_get(h, f, strlen(f), &gv, &gl);
			if (got != (model_find(&m, f) >= 0)) {
				snprintf(why, sizeof(why), "hash_get(%s) presence wrong", f);
				good = false;
			}
		}
		if (good && step % 50 == 0)
			good = same_as_model(h, &m, why, sizeof(why));
	}
	if (good)
		good = same_as_model(h, &m, why, sizeof(why));
	ok(good, "hash random ops %s: %d steps agree with the model%s%s", name, step, good ? "" : ": ", why);
	struct hash *d = hash_dup(h);
	ok(d && d->enc == h->enc && same_as_model(d, &m, why, sizeof(why)),
	   "hash %s: dup is equal, same encoding", name);
	hash_free(d);
	hash_free(h);
	model_clear(&m);
}

static void test_order_and_scan(void)
{
	struct hash_limits lim = { 512, 64 };
	struct hash *h = hash_new();
	hash_set(h, "z", 1, "1", 1, &lim);
	hash_set(h, "a", 1, "2", 1, &lim);
	hash_set(h, "m", 1, "3", 1, &lim);
	hash_set(h, "a", 1, "22", 2, &lim);
	struct hash_iter it;
	hash_iter_init(&it, h);
	char order[8] = "";
	const char *f, *v;
	size_t flen, vlen;
	int n = 0;
	while (hash_next(&it, &f, &flen, &v, &vlen))
		order[n++] = f[0];
	is_str(order, "zam", "hash: listpack keeps insertion order, updates in place");
	hash_free(h);
}

static void count_field(const char *f, size_t flen, const char *v, size_t vlen, void *ctx)
{
	int *seen = ctx;
	seen[num_of(f, flen)]++;
}

static void test_hashtable_scan(void)
{
	struct hash_limits lim = { 4, 64 };
	struct hash *h = hash_new();
	char f[16];
	for (int i = 0; i < 300; i++)
		hash_set(h, f, (size_t)snprintf(f, sizeof(f), "f%d", i), "v", 1, &lim);
	int seen[300] = { 0 };
	uint64_t cursor = 0;
	int steps = 0;
	do {
		cursor = hash_scan(h, cursor, count_field, seen);
		steps++;
	} while (cursor && steps < 10000);
	int bad = 0;
	for (int i = 0; i < 300; i++)
		bad += seen[i] != 1;
	is_int(bad, 0, "hash scan: a stable hashtable is covered exactly once");
	hash_free(h);
}

static void test_random_distribution(void)
{
	/* 8 fields, 80000 draws: each expected 10000; a fair picker stays well
	 * inside +-15% (the binomial sd is ~94). Both encodings. */
	for (int enc = 0; enc < 2; enc++) {
		struct hash_limits lim = { enc ? 2 : 512, 64 };
		struct hash *h = hash_new();
		char f[8];
		for (int i = 0; i < 8; i++)
			hash_set(h, f, (size_t)snprintf(f, sizeof(f), "f%d", i), "v", 1, &lim);
		int counts[8] = { 0 };
		uint64_t rnd = 88172645463325252ULL;
		for (int i = 0; i < 80000; i++) {
			const char *rf, *rv;
			size_t rfl, rvl;
			hash_random(h, &rnd, &rf, &rfl, &rv, &rvl);
			counts[num_of(rf, rfl)]++;
		}
		int lo = counts[0], hi = counts[0];
		for (int i = 1; i < 8; i++) {
			lo = counts[i] < lo ? counts[i] : lo;
			hi = counts[i] > hi ? counts[i] : hi;
		}
		ok(lo > 8500 && hi < 11500,
		   "hash_random %s: every field drawn 8500..11500 times (min %d max %d)",
		   enc ? "hashtable" : "listpack", lo, hi);
		hash_free(h);
	}
}

struct emit_ctx {
	int calls, pairs;
	bool shape_ok;
};

static int emit(int argc, const char *const *argv, const size_t *lens, void *ctx)
{
	struct emit_ctx *e = ctx;
	e->calls++;
	e->pairs += (argc - 2) / 2;
	if (lens[0] != 4 || memcmp(argv[0], "HSET", 4) || lens[1] != 3 || memcmp(argv[1], "key", 3) ||
	    argc % 2 || argc > 2 + 128)
		e->shape_ok = false;
	return 0;
}

static void test_rewrite(void)
{
	struct hash_limits lim = { 512, 64 };
	struct hash *h = hash_new();
	char f[16];
	for (int i = 0; i < 130; i++)
		hash_set(h, f, (size_t)snprintf(f, sizeof(f), "f%d", i), "v", 1, &lim);
	struct emit_ctx e = { 0, 0, true };
	int rc = store_hash_ops.rewrite(h, "key", 3, emit, &e);
	ok(rc == 0 && e.calls == 3 && e.pairs == 130 && e.shape_ok,
	   "hash rewrite: 130 fields as HSET key + 64 pairs at most (%d calls)", e.calls);
	is_str(store_hash_ops.encoding(h), "listpack", "hash ops: encoding name");
	ok(store_hash_ops.memory(h) > 130 * 4, "hash ops: memory counts the pack");
	hash_free(h);
}

int main(void)
{
	size_t before = zr_mem_used();
	test_strpack();
	test_strtab_scan_resize();
	test_conversion();
	random_ops("listpack", (struct hash_limits){ 100000, 1000 }, 60, 4000, 1);
	random_ops("hashtable", (struct hash_limits){ 0, 1000 }, 500, 20000, 2);
	random_ops("converting", (struct hash_limits){ 64, 8 }, 200, 20000, 3);
	test_order_and_scan();
	test_hashtable_scan();
	test_random_distribution();
	test_rewrite();
	is_int(zr_mem_used(), before, "every byte given back");
	return done_testing();
}
