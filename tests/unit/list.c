/* Unit tests of zarisd/store/list: entry encodings (short and 5-byte
 * headers), node fill rules for every list-max-listpack-size kind, splits
 * and merges, and randomized operations checked against a plain array
 * model after every step (list_check verifies the node invariants). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/tap.h"
#include "zarisd/core/mem.h"
#include "zarisd/store/list.h"

/* --- the reference model: an array of malloc'd strings ---------------------- */

struct model {
	char **v;
	size_t *len;
	size_t n, cap;
};

static void m_insert(struct model *m, size_t at, const char *p, size_t len)
{
	if (m->n == m->cap) {
		m->cap = m->cap ? m->cap * 2 : 16;
		m->v = realloc(m->v, m->cap * sizeof(*m->v));
		m->len = realloc(m->len, m->cap * sizeof(*m->len));
	}
	memmove(m->v + at + 1, m->v + at, (m->n - at) * sizeof(*m->v));
	memmove(m->len + at + 1, m->len + at, (m->n - at) * sizeof(*m->len));
	m->v[at] = malloc(len + 1);
	memcpy(m->v[at], p, len);
	m->len[at] = len;
	m->n++;
}

static void m_delete(struct model *m, size_t at)
{
	free(m->v[at]);
	memmove(m->v + at, m->v + at + 1, (m->n - at - 1) * sizeof(*m->v));
	memmove(m->len + at, m->len + at + 1, (m->n - at - 1) * sizeof(*m->len));
	m->n--;
}

static void m_free(struct model *m)
{
	for (size_t i = 0; i < m->n; i++)
		free(m->v[i]);
	free(m->v);
	free(m->len);
	memset(m, 0, sizeof(*m));
}

static bool m_eq(const struct model *m, size_t i, const char *p, size_t len)
{
	return m->len[i] == len && memcmp(m->v[i], p, len) == 0;
}

/* The list and the model hold the same elements, walked both ways. */
static bool same(const struct list *l, const struct model *m)
{
	if (!list_check(l) || list_len(l) != m->n)
		return false;
	struct list_iter it;
	const char *p;
	size_t len, i = 0;
	list_iter_init(&it, l, 0, true);
	while (list_iter_next(&it, &p, &len))
		if (i >= m->n || !m_eq(m, i++, p, len))
			return false;
	if (i != m->n)
		return false;
	list_iter_init(&it, l, m->n ? m->n - 1 : 0, false);
	while (list_iter_next(&it, &p, &len))
		if (i == 0 || !m_eq(m, --i, p, len))
			return false;
	return i == 0;
}

/* --- random values of every size class ---------------------------------------- */

static uint64_t rnd_state = 88172645463325252ull;

static uint64_t rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return rnd_state;
}

static size_t rnd_value(char *buf, size_t max)
{
	size_t len;
	uint64_t k = rnd() % 100;
	if (k < 60)
		len = rnd() % 12; /* small, from a small alphabet: many equal values */
	else if (k < 90)
		len = 240 + rnd() % 30; /* around the 254-byte header switch */
	else
		len = 3000 + rnd() % 7000; /* near or over a node's byte cap */
	if (len > max)
		len = max;
	for (size_t i = 0; i < len; i++)
		buf[i] = (char)('a' + rnd() % (len < 12 ? 3 : 26));
	return len;
}

/* --- tests --------------------------------------------------------------------- */

static void test_basics(void)
{
	struct list *l = list_create(-2);
	ok(list_len(l) == 0 && list_check(l), "empty list");
	const char *p;
	size_t len;
	ok(!list_peek(l, LIST_HEAD, &p, &len), "peek on empty");
	ok(list_push(l, LIST_TAIL, "b", 1) == 0 && list_push(l, LIST_HEAD, "a", 1) == 0, "push both ends");
	char big[300];
	memset(big, 'x', sizeof(big));
	ok(list_push(l, LIST_TAIL, big, sizeof(big)) == 0, "push a 300-byte element");
	ok(list_push(l, LIST_TAIL, "", 0) == 0, "push an empty element");
	ok(list_len(l) == 4 && list_check(l), "length 4");
	ok(list_index(l, 2, &p, &len) && len == 300 && !memcmp(p, big, 300), "index of the long element");
	ok(list_index(l, 3, &p, &len) && len == 0, "index of the empty element");
	ok(!list_index(l, 4, &p, &len), "index out of range");
	ok(list_peek(l, LIST_TAIL, &p, &len) && len == 0, "peek tail");
	list_pop(l, LIST_TAIL);
	ok(list_peek(l, LIST_TAIL, &p, &len) && len == 300, "pop tail");
	ok(list_insert(l, "b", 1, true, "c", 1) == 1 && list_insert(l, "zz", 2, false, "q", 1) == 0,
	   "insert");
	ok(list_index(l, 2, &p, &len) && len == 1 && *p == 'c', "inserted after the pivot");
	ok(list_set(l, 0, big, 260) == 0 && list_index(l, 0, &p, &len) && len == 260, "set grows an element");
	ok(list_set(l, 0, "A", 1) == 0 && list_index(l, 0, &p, &len) && len == 1 && *p == 'A',
	   "set shrinks it");
	ok(strcmp(store_list_ops.encoding(l), "quicklist") == 0, "OBJECT ENCODING is quicklist (Redis 7.0)");
	struct list *d = list_dup(l);
	ok(list_check(d) && list_len(d) == list_len(l) && list_memory(d) > 0, "dup");
	list_free(d);
	list_trim(l, 1, 1);
	ok(list_len(l) == 2 && list_check(l), "trim one from each end");
	list_trim(l, 5, 5);
	ok(list_len(l) == 0 && l->head == NULL && list_check(l), "trim past the length empties");
	list_free(l);
}

static void test_fill(void)
{
	/* -2: 8 KB per node; 2000 10-byte entries need about three nodes */
	struct list *l = list_create(-2);
	for (int i = 0; i < 2000; i++)
		list_push(l, LIST_TAIL, "0123456789", 10);
	ok(l->nnodes >= 2 && l->nnodes <= 4 && list_check(l), "fill -2: %u nodes for 24 KB", l->nnodes);
	list_free(l);
	l = list_create(5);
	for (int i = 0; i < 23; i++)
		list_push(l, i & 1 ? LIST_HEAD : LIST_TAIL, "v", 1);
	ok(l->nnodes == 5 && list_check(l), "fill 5: 23 entries in 5 nodes (%u)", l->nnodes);
	list_free(l);
	l = list_create(-1);
	char big[9000];
	memset(big, 'b', sizeof(big));
	list_push(l, LIST_TAIL, "a", 1);
	list_push(l, LIST_TAIL, big, sizeof(big));
	list_push(l, LIST_TAIL, "c", 1);
	ok(l->nnodes == 3 && list_check(l), "an element over the cap gets its own node");
	ok(list_insert(l, "a", 1, true, big, 5000) == 1 && list_check(l) && list_len(l) == 4,
	   "insert into full");
	ok(list_remove(l, big, sizeof(big), 0) == 1 && list_check(l), "remove the big one");
	list_free(l);
}

static void test_random(int fill, int steps)
{
	struct list *l = list_create(fill);
	struct model m = { 0 };
	static char buf[10000];
	bool good = true;
	int step;
	for (step = 0; step < steps && good; step++) {
		uint64_t op = rnd() % 100;
		size_t len = rnd_value(buf, sizeof(buf));
		if (op < 45) {
			bool head = rnd() & 1;
			good = list_push(l, head ? LIST_HEAD : LIST_TAIL, buf, len) == 0;
			m_insert(&m, head ? 0 : m.n, buf, len);
		} else if (op < 55 && m.n) {
			bool head = rnd() & 1;
			const char *p;
			size_t pl;
			good = list_peek(l, head ? LIST_HEAD : LIST_TAIL, &p, &pl) &&
			       m_eq(&m, head ? 0 : m.n - 1, p, pl);
			list_pop(l, head ? LIST_HEAD : LIST_TAIL);
			m_delete(&m, head ? 0 : m.n - 1);
		} else if (op < 62 && m.n) {
			size_t at = rnd() % m.n;
			good = list_set(l, at, buf, len) == 0;
			m_delete(&m, at);
			m_insert(&m, at, buf, len);
		} else if (op < 72 && m.n) {
			size_t at = rnd() % m.n;
			bool after = rnd() & 1;
			/* the model inserts next to the first equal element */
			size_t first = 0;
			while (!m_eq(&m, first, m.v[at], m.len[at]))
				first++;
			char *pivot = malloc(m.len[at] + 1);
			memcpy(pivot, m.v[at], m.len[at]);
			size_t plen = m.len[at];
			good = list_insert(l, pivot, plen, after, buf, len) == 1;
			m_insert(&m, after ? first + 1 : first, buf, len);
			free(pivot);
		} else if (op < 78 && m.n) {
			size_t at = rnd() % m.n;
			int64_t count = (int64_t)(rnd() % 5) - 2;
			char *v = malloc(m.len[at] + 1);
			size_t vlen = m.len[at];
			memcpy(v, m.v[at], vlen);
			uint64_t want = 0;
			uint64_t limit = count == 0 ? UINT64_MAX : (uint64_t)(count < 0 ? -count : count);
			if (count >= 0) {
				for (size_t i = 0; i < m.n && want < limit;)
					if (m_eq(&m, i, v, vlen)) {
						m_delete(&m, i);
						want++;
					} else {
						i++;
					}
			} else {
				for (size_t i = m.n; i > 0 && want < limit; i--)
					if (m_eq(&m, i - 1, v, vlen)) {
						m_delete(&m, i - 1);
						want++;
					}
			}
			good = list_remove(l, v, vlen, count) == want;
			free(v);
		} else if (op < 80 && m.n && rnd() % 8 == 0) {
			uint64_t h = rnd() % (m.n / 2 + 2), t = rnd() % (m.n / 2 + 2);
			list_trim(l, h, t);
			if (h + t >= m.n) {
				while (m.n)
					m_delete(&m, 0);
			} else {
				for (uint64_t i = 0; i < t; i++)
					m_delete(&m, m.n - 1);
				for (uint64_t i = 0; i < h; i++)
					m_delete(&m, 0);
			}
		} else if (m.n) {
			size_t at = rnd() % m.n;
			const char *p;
			size_t pl;
			good = list_index(l, at, &p, &pl) && m_eq(&m, at, p, pl);
		}
		if (good && (step % 16 == 0 || m.n < 64))
			good = same(l, &m);
	}
	good = good && same(l, &m);
	ok(good, "fill %d: %d random operations match the model (stopped at %d, %zu elements, %u nodes)",
	   fill, steps, step, m.n, l->nnodes);
	struct list *d = list_dup(l);
	ok(same(d, &m), "fill %d: dup matches the model", fill);
	list_free(d);
	list_free(l);
	m_free(&m);
}

static int emit_count(int argc, const char *const *argv, const size_t *lens, void *ctx)
{
	(void)lens;
	int *n = ctx;
	if (argc < 3 || argc > 66 || strcmp(argv[0], "RPUSH") != 0)
		return -1;
	*n += argc - 2;
	return 0;
}

static void test_rewrite(void)
{
	struct list *l = list_create(-2);
	for (int i = 0; i < 200; i++)
		list_push(l, LIST_TAIL, "e", 1);
	int n = 0;
	int rc = store_list_ops.rewrite(l, "k", 1, emit_count, &n);
	ok(rc == 0 && n == 200, "rewrite emits 200 elements (%d)", n);
	list_free(l);
}

int main(void)
{
	test_basics();
	test_fill();
	int fills[] = { -2, -1, -5, 1, 3, 128, 0 };
	for (size_t i = 0; i < sizeof(fills) / sizeof(fills[0]); i++)
		test_random(fills[i], 4000);
	test_rewrite();
	ok(zr_mem_used() < 1024 * 1024, "nothing leaked in the accounting (%zu bytes)", zr_mem_used());
	return done_testing();
}
