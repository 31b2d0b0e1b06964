/* dict — see dict.h. */
#include "zarisd/store/dict.h"

#include <assert.h>
#include <string.h>

#include "zarisd/core/mem.h"
#include "zarisd/core/util.h"

/* Buckets with nothing in them that one rehash step may skip per bucket it
 * is asked to move (Redis's empty_visits), so a step stays O(1). */
#define DICT_EMPTY_VISITS 10

/* The bucket part of E's key hash: the store's key hash (store_int.h) is
 * the slot in the top 14 bits over the seeded xxh3, and a table never has
 * 2^50 buckets, so rehashing needs only the xxh3 (no CRC). */
static inline uint64_t entry_hash(const struct entry *e)
{
	size_t klen;
	const char *k = entry_key_raw(e, &klen);
	return zr_hash(k, klen);
}

/* Counts one key more of H's slot (lock held). */
static inline void slot_inc(struct dict *d, uint64_t h)
{
	if (!d->slots)
		d->slots = zr_calloc((size_t)d->live->slot_mask + 1, sizeof(*d->slots));
	d->slots[(h >> DICT_SLOT_SHIFT) & d->live->slot_mask]++;
}

/* Counts one key less of H's slot; KEYS is what the dict holds now. */
static inline void slot_dec(struct dict *d, uint64_t h, uint64_t keys)
{
	uint64_t *c = &d->slots[(h >> DICT_SLOT_SHIFT) & d->live->slot_mask];
	assert(*c > 0);
	--*c;
	if (keys == 0)
		ZR_FREE(d->slots);
}

static inline void keys_set(struct dict *d, uint64_t n)
{
	atomic_store_explicit(&d->keys, n, memory_order_relaxed);
}

void dict_init(struct dict *d, struct dict_live *live)
{
	memset(d, 0, sizeof(*d));
	dict_set_rehash(d, -1);
	d->live = live;
}

static struct entry **table_alloc(struct dict *d, uint64_t size)
{
	struct entry **t = zr_calloc(size, sizeof(*t));
	dict_bytes_add(d, (int64_t)zr_usable(t));
	return t;
}

static void table_free(struct dict *d, struct entry **t)
{
	if (!t)
		return;
	dict_bytes_add(d, -(int64_t)zr_usable(t));
	zr_free(t);
}

void dict_clear(struct dict *d, void (*free_fn)(struct entry *e, void *ctx), void *ctx)
{
	if (dict_keys(d))
		dict_live_add(&d->live->keys, -1);
	if (d->nvol)
		dict_live_add(&d->live->vols, -1);
	for (int t = 0; t < 2; t++) {
		for (uint64_t i = 0; i < d->size[t]; i++) {
			struct entry *e = d->tab[t][i];
			while (e) {
				struct entry *next = e->next;
				free_fn(e, ctx);
				e = next;
			}
		}
		table_free(d, d->tab[t]);
		d->tab[t] = NULL;
		d->size[t] = 0;
	}
	if (d->vol) {
		dict_bytes_add(d, -(int64_t)zr_usable(d->vol));
		ZR_FREE(d->vol);
	}
	__atomic_store_n(&d->nvol, 0, __ATOMIC_RELAXED);
	d->volcap = 0;
	dict_set_rehash(d, -1);
	keys_set(d, 0);
	ZR_FREE(d->slots);
}

/* Starts moving every entry into a new table of SIZE buckets. */
static void rehash_start(struct dict *d, uint64_t size)
{
	assert(!dict_is_rehashing(d));
	if (d->size[0] == 0) {
		d->tab[0] = table_alloc(d, size);
		d->size[0] = size;
		return;
	}
	d->tab[1] = table_alloc(d, size);
	d->size[1] = size;
	dict_set_rehash(d, 0);
}

static void rehash_finish(struct dict *d)
{
	table_free(d, d->tab[0]);
	d->tab[0] = d->tab[1];
	d->size[0] = d->size[1];
	d->tab[1] = NULL;
	d->size[1] = 0;
	dict_set_rehash(d, -1);
}

void dict_rehash_step(struct dict *d, int n)
{
	if (!dict_is_rehashing(d))
		return;
	int empty = n * DICT_EMPTY_VISITS;
	uint64_t m1 = d->size[1] - 1;
	uint64_t pos = (uint64_t)d->rehash;
	while (n-- > 0 && pos < d->size[0]) {
		while (!d->tab[0][pos]) {
			if (++pos == d->size[0])
				goto done;
			if (--empty == 0)
				goto out;
		}
		struct entry *e = d->tab[0][pos];
		while (e) {
			struct entry *next = e->next;
			uint64_t idx = entry_hash(e) & m1;
			e->next = d->tab[1][idx];
			d->tab[1][idx] = e;
			e = next;
		}
		d->tab[0][pos] = NULL;
		pos++;
	}
done:
	if (pos >= d->size[0]) {
		rehash_finish(d);
		return;
	}
out:
	dict_set_rehash(d, (int64_t)pos);
}

struct entry **dict_find(struct dict *d, uint64_t h, const char *key, size_t klen)
{
	if (dict_is_rehashing(d))
		dict_rehash_step(d, 1);
	for (int t = 0; t < 2; t++) {
		if (!d->size[t])
			break;
		struct entry **link = &d->tab[t][h & (d->size[t] - 1)];
		for (; *link; link = &(*link)->next) {
			if (entry_key_eq(*link, key, klen))
				return link;
		}
		if (!dict_is_rehashing(d))
			break;
	}
	return NULL;
}

struct entry **dict_link_of(struct dict *d, uint64_t h, const struct entry *e)
{
	for (int t = 0; t < 2; t++) {
		if (!d->size[t])
			break;
		struct entry **link = &d->tab[t][h & (d->size[t] - 1)];
		for (; *link; link = &(*link)->next) {
			if (*link == e)
				return link;
		}
	}
	assert(!"entry not in its dict");
	return NULL;
}

void dict_add(struct dict *d, uint64_t h, struct entry *e)
{
	uint64_t keys = dict_keys(d);
	if (dict_is_rehashing(d))
		dict_rehash_step(d, 1);
	else if (keys + 1 > d->size[0])
		rehash_start(d, d->size[0] ? d->size[0] * 2 : DICT_MIN_SIZE);
	int t = dict_is_rehashing(d) ? 1 : 0;
	struct entry **b = &d->tab[t][h & (d->size[t] - 1)];
	e->next = *b;
	*b = e;
	keys_set(d, keys + 1);
	slot_inc(d, h);
	if (keys == 0)
		dict_live_add(&d->live->keys, 1);
}

void dict_unlink(struct dict *d, uint64_t h, struct entry **link)
{
	struct entry *e = *link;
	*link = e->next;
	e->next = NULL;
	uint64_t keys = dict_keys(d) - 1;
	keys_set(d, keys);
	slot_dec(d, h, keys);
	if (keys == 0)
		dict_live_add(&d->live->keys, -1);
	if (dict_is_rehashing(d)) {
		dict_rehash_step(d, 1);
	} else if (d->size[0] > DICT_MIN_SIZE && keys * 8 < d->size[0]) {
		/* Shrink to a load of at most 1/2 so that the next few adds do
		 * not grow it straight back. */
		uint64_t size = DICT_MIN_SIZE;
		while (size < keys * 2)
			size *= 2;
		rehash_start(d, size);
	}
}

static inline uint64_t rev64(uint64_t v)
{
	v = ((v >> 1) & 0x5555555555555555ull) | ((v & 0x5555555555555555ull) << 1);
	v = ((v >> 2) & 0x3333333333333333ull) | ((v & 0x3333333333333333ull) << 2);
	v = ((v >> 4) & 0x0f0f0f0f0f0f0f0full) | ((v & 0x0f0f0f0f0f0f0f0full) << 4);
	return __builtin_bswap64(v);
}

static void visit_bucket(struct entry *e, dict_visit_fn fn, void *ctx)
{
	while (e) {
		struct entry *next = e->next; /* FN may not free, but be robust to relinking */
		fn(e, ctx);
		e = next;
	}
}

/* Redis's dictScan: the cursor counts with its bits reversed, so buckets
 * that split (grow) or merge (shrink) between two calls are never skipped:
 * every index visited so far, seen through any power-of-two mask, is a
 * prefix already covered. */
uint64_t dict_scan(struct dict *d, uint64_t v, dict_visit_fn fn, void *ctx)
{
	if (!d->size[0] || dict_keys(d) == 0)
		return 0;
	if (!dict_is_rehashing(d)) {
		uint64_t m0 = d->size[0] - 1;
		visit_bucket(d->tab[0][v & m0], fn, ctx);
		v |= ~m0;
		v = rev64(v);
		v++;
		return rev64(v);
	}
	int small = d->size[0] <= d->size[1] ? 0 : 1, big = 1 - small;
	uint64_t m0 = d->size[small] - 1, m1 = d->size[big] - 1;
	visit_bucket(d->tab[small][v & m0], fn, ctx);
	/* Then every bucket of the big table that expands the small one's. */
	do {
		visit_bucket(d->tab[big][v & m1], fn, ctx);
		v |= ~m1;
		v = rev64(v);
		v++;
		v = rev64(v);
	} while (v & (m0 ^ m1));
	return v;
}

void dict_foreach(struct dict *d, dict_visit_fn fn, void *ctx)
{
	for (int t = 0; t < 2; t++)
		for (uint64_t i = 0; i < d->size[t]; i++)
			visit_bucket(d->tab[t][i], fn, ctx);
}

struct entry *dict_random(struct dict *d, uint64_t *rnd)
{
	if (dict_keys(d) == 0)
		return NULL;
	uint64_t total = d->size[0] + d->size[1];
	struct entry *head = NULL;
	/* Load is >= 1/8 (shrink threshold), so this ends quickly; the bound
	 * is only a guard, after which a linear walk finds the first entry. */
	for (int tries = 0; tries < 10000 && !head; tries++) {
		uint64_t i = dict_rand(rnd) % total;
		head = i < d->size[0] ? d->tab[0][i] : d->tab[1][i - d->size[0]];
	}
	for (uint64_t i = 0; !head && i < total; i++)
		head = i < d->size[0] ? d->tab[0][i] : d->tab[1][i - d->size[0]];
	if (!head)
		return NULL;
	unsigned len = 0;
	for (struct entry *e = head; e; e = e->next)
		len++;
	unsigned pick = (unsigned)(dict_rand(rnd) % len);
	while (pick--)
		head = head->next;
	return head;
}

unsigned dict_sample(struct dict *d, struct entry **out, unsigned n, uint64_t *rnd)
{
	if (dict_keys(d) == 0 || n == 0)
		return 0;
	if (n > dict_keys(d))
		n = (unsigned)dict_keys(d);
	uint64_t maxsize = d->size[0] > d->size[1] ? d->size[0] : d->size[1];
	uint64_t i = dict_rand(rnd) & (maxsize - 1);
	unsigned got = 0, empty = 0, steps = n * 10;
	while (got < n && steps--) {
		bool any = false;
		for (int t = 0; t < 2 && got < n; t++) {
			if (!d->size[t] || i >= d->size[t])
				continue;
			for (struct entry *e = d->tab[t][i]; e && got < n; e = e->next) {
				out[got++] = e;
				any = true;
			}
		}
		/* Like Redis: after a run of empty buckets jump somewhere else. */
		if (!any && ++empty >= 5 && empty > n) {
			i = dict_rand(rnd) & (maxsize - 1);
			empty = 0;
		} else {
			i = (i + 1) & (maxsize - 1);
		}
	}
	return got;
}

void dict_vol_add(struct dict *d, struct entry *e)
{
	if (d->nvol == d->volcap) {
		uint32_t cap = d->volcap ? d->volcap * 2 : 4;
		size_t old = zr_usable(d->vol);
		d->vol = zr_realloc(d->vol, (size_t)cap * sizeof(*d->vol));
		dict_bytes_add(d, (int64_t)zr_usable(d->vol) - (int64_t)old);
		d->volcap = cap;
	}
	entry_set_vidx(e, d->nvol);
	d->vol[d->nvol] = e;
	if (d->nvol == 0)
		dict_live_add(&d->live->vols, 1);
	__atomic_store_n(&d->nvol, d->nvol + 1, __ATOMIC_RELAXED);
}

void dict_vol_del(struct dict *d, struct entry *e)
{
	uint32_t i = entry_vidx(e);
	assert(i < d->nvol && d->vol[i] == e);
	uint32_t last = d->nvol - 1;
	if (i != last) {
		d->vol[i] = d->vol[last];
		entry_set_vidx(d->vol[i], i);
	}
	__atomic_store_n(&d->nvol, last, __ATOMIC_RELAXED);
	/* Give memory back when the array is mostly empty. */
	if (last == 0) {
		dict_live_add(&d->live->vols, -1);
		dict_bytes_add(d, -(int64_t)zr_usable(d->vol));
		ZR_FREE(d->vol);
		d->volcap = 0;
	} else if (d->volcap > 16 && last * 4 < d->volcap) {
		size_t old = zr_usable(d->vol);
		d->volcap /= 2;
		d->vol = zr_realloc(d->vol, (size_t)d->volcap * sizeof(*d->vol));
		dict_bytes_add(d, (int64_t)zr_usable(d->vol) - (int64_t)old);
	}
}
