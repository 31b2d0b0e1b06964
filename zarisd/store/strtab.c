/* strtab — see strtab.h. */
#include "zarisd/store/strtab.h"

#include <errno.h>
#include <string.h>

#include "zarisd/core/mem.h"
#include "zarisd/core/util.h"

static inline uint64_t bucket_of(const struct strtab *t, const char *key, size_t klen)
{
	return zr_hash(key, klen) & (t->size - 1);
}

void strtab_init(struct strtab *t)
{
	memset(t, 0, sizeof(*t));
}

void strtab_clear(struct strtab *t)
{
	for (uint64_t i = 0; i < t->size; i++) {
		struct strtab_node *n = t->tab[i];
		while (n) {
			struct strtab_node *next = n->next;
			zr_free(n);
			n = next;
		}
	}
	zr_free(t->tab);
	strtab_init(t);
}

void strtab_free(struct strtab *t)
{
	if (!t)
		return;
	strtab_clear(t);
	zr_free(t);
}

/* Moves every node into a new bucket array of SIZE buckets. */
static void resize(struct strtab *t, uint64_t size)
{
	struct strtab_node **tab = zr_calloc(size, sizeof(*tab));
	for (uint64_t i = 0; i < t->size; i++) {
		struct strtab_node *n = t->tab[i];
		while (n) {
			struct strtab_node *next = n->next;
			uint64_t b = zr_hash(n->data, n->klen) & (size - 1);
			n->next = tab[b];
			tab[b] = n;
			n = next;
		}
	}
	if (t->tab)
		t->bytes -= zr_usable(t->tab);
	zr_free(t->tab);
	t->tab = tab;
	t->size = size;
	t->bytes += zr_usable(tab);
}

void strtab_expand(struct strtab *t, uint64_t n)
{
	uint64_t size = STRTAB_MIN_SIZE;
	while (size < n)
		size <<= 1;
	if (size > t->size)
		resize(t, size);
}

/* The link pointing at KEY's node, or NULL. */
static struct strtab_node **find_link(const struct strtab *t, const char *key, size_t klen)
{
	if (!t->size)
		return NULL;
	struct strtab_node **link = &t->tab[bucket_of(t, key, klen)];
	for (; *link; link = &(*link)->next)
		if ((*link)->klen == klen && !memcmp((*link)->data, key, klen))
			return link;
	return NULL;
}

struct strtab_node *strtab_find(const struct strtab *t, const char *key, size_t klen)
{
	struct strtab_node **link = find_link(t, key, klen);
	return link ? *link : NULL;
}

static struct strtab_node *node_new(const char *key, size_t klen, const char *val, size_t vlen)
{
	struct strtab_node *n = zr_try_malloc(sizeof(*n) + klen + vlen);
	if (!n)
		return NULL;
	n->next = NULL;
	n->klen = (uint32_t)klen;
	n->vlen = (uint32_t)vlen;
	memcpy(n->data, key, klen);
	if (vlen)
		memcpy(n->data + klen, val, vlen);
	return n;
}

/* Replaces the value of *LINK's node; the node may move. */
static int replace_value(struct strtab *t, struct strtab_node **link, const char *val, size_t vlen)
{
	struct strtab_node *n = *link;
	size_t need = sizeof(*n) + n->klen + vlen;
	size_t have = zr_usable(n);
	/* Reuse the block when the value fits and does not leave most of it
	 * empty (a shrinking value would otherwise pin a big block). */
	if (need <= have && need * 2 >= have) {
		if (vlen)
			memmove(n->data + n->klen, val, vlen);
		n->vlen = (uint32_t)vlen;
		return 0;
	}
	struct strtab_node *m = node_new(n->data, n->klen, val, vlen);
	if (!m)
		return -ENOMEM;
	m->next = n->next;
	*link = m;
	t->bytes += zr_usable(m);
	t->bytes -= have;
	zr_free(n);
	return 0;
}

static int insert(struct strtab *t, const char *key, size_t klen, const char *val, size_t vlen, bool replace)
{
	struct strtab_node **link = find_link(t, key, klen);
	if (link) {
		if (!replace)
			return 0;
		int rc = replace_value(t, link, val, vlen);
		return rc < 0 ? rc : 0;
	}
	struct strtab_node *n = node_new(key, klen, val, vlen);
	if (!n)
		return -ENOMEM;
	if (t->count + 1 > t->size)
		resize(t, t->size ? t->size * 2 : STRTAB_MIN_SIZE);
	uint64_t b = bucket_of(t, key, klen);
	n->next = t->tab[b];
	t->tab[b] = n;
	t->count++;
	t->bytes += zr_usable(n);
	return 1;
}

int strtab_set(struct strtab *t, const char *key, size_t klen, const char *val, size_t vlen)
{
	return insert(t, key, klen, val, vlen, true);
}

int strtab_add(struct strtab *t, const char *key, size_t klen)
{
	return insert(t, key, klen, NULL, 0, false);
}

bool strtab_delete(struct strtab *t, const char *key, size_t klen)
{
	struct strtab_node **link = find_link(t, key, klen);
	if (!link)
		return false;
	struct strtab_node *n = *link;
	*link = n->next;
	t->bytes -= zr_usable(n);
	zr_free(n);
	t->count--;
	if (t->count == 0) {
		strtab_clear(t);
	} else if (t->size > STRTAB_MIN_SIZE && t->count * 8 < t->size) {
		uint64_t size = STRTAB_MIN_SIZE;
		while (size < t->count)
			size <<= 1;
		resize(t, size);
	}
	return true;
}

/* Chains up to this long are sampled exactly uniformly; see strtab_random. */
#define RANDOM_CHAIN_BOUND 4

struct strtab_node *strtab_random(const struct strtab *t, uint64_t *rnd)
{
	if (!t->count)
		return NULL;
	/* Rejection sampling: a bucket, then a slot in [0, BOUND); the slot
	 * is a node only with probability len/BOUND, so every node of a
	 * chain no longer than BOUND has the same chance (Redis's
	 * bucket-then-chain pick favours nodes of short chains). Nodes past
	 * BOUND in a rare longer chain are picked uniformly within it. Load
	 * stays >= 1/8 (shrink rule), so about 4-32 draws find one. */
	for (;;) {
		uint64_t r = strtab_rand(rnd);
		struct strtab_node *n = t->tab[r & (t->size - 1)];
		if (!n)
			continue;
		unsigned len = 0;
		for (struct strtab_node *m = n; m; m = m->next)
			len++;
		unsigned slot = (unsigned)((r >> 40) % (len > RANDOM_CHAIN_BOUND ? len : RANDOM_CHAIN_BOUND));
		if (slot >= len)
			continue;
		while (slot--)
			n = n->next;
		return n;
	}
}

void strtab_iter_init(struct strtab_iter *it, const struct strtab *t)
{
	it->t = t;
	it->bucket = 0;
	it->node = NULL;
}

struct strtab_node *strtab_next(struct strtab_iter *it)
{
	if (it->node && it->node->next) {
		it->node = it->node->next;
		return it->node;
	}
	while (it->bucket < it->t->size) {
		struct strtab_node *n = it->t->tab[it->bucket++];
		if (n) {
			it->node = n;
			return n;
		}
	}
	it->node = NULL;
	return NULL;
}

static inline uint64_t rev64(uint64_t v)
{
	v = ((v >> 1) & 0x5555555555555555ULL) | ((v & 0x5555555555555555ULL) << 1);
	v = ((v >> 2) & 0x3333333333333333ULL) | ((v & 0x3333333333333333ULL) << 2);
	v = ((v >> 4) & 0x0F0F0F0F0F0F0F0FULL) | ((v & 0x0F0F0F0F0F0F0F0FULL) << 4);
	return __builtin_bswap64(v);
}

uint64_t strtab_scan(const struct strtab *t, uint64_t v, strtab_visit_fn fn, void *ctx)
{
	if (!t->count)
		return 0;
	uint64_t m = t->size - 1;
	for (struct strtab_node *n = t->tab[v & m]; n; n = n->next)
		fn(n, ctx);
	/* Increment the reversed cursor over the unmasked bits, so a cursor
	 * taken at one size stays meaningful at the next (dictScan). */
	v |= ~m;
	v = rev64(v);
	v++;
	return rev64(v);
}
