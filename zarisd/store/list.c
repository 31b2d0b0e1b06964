/* list — see list.h.
 *
 * Entry format inside a node's data[]: a header holding the element's
 * length, the bytes, and a trailer holding the length again, so that the
 * array can be walked from either end:
 *   len < 254:  [len:1] bytes [len:1]
 *   otherwise:  [0xFE][len:4 LE] bytes [len:4 LE][0xFE]
 * A node reallocates when it grows (its address changes: relink() fixes its
 * neighbours and the list's ends), so no function keeps a node pointer
 * across a call that may grow that node.
 */
#include "zarisd/store/list.h"

#include <assert.h>
#include <errno.h>
#include <string.h>

#include "zarisd/core/mem.h"

struct list_node {
	struct list_node *prev, *next;
	uint32_t count; /* entries in data[] */
	size_t used;	/* bytes of data[] holding entries */
	size_t cap;	/* bytes of data[] allocated */
	unsigned char data[];
};

#define ENTRY_BIG 0xFE
/* Node byte caps for fill -1..-5, Redis's optimization_level[]. */
static const size_t fill_bytes[] = { 4096, 8192, 16384, 32768, 65536 };
/* A positive fill still caps a node's bytes, Redis's SIZE_SAFETY_LIMIT. */
#define NODE_SAFETY_BYTES 8192

/* --- entries ---------------------------------------------------------------- */

static size_t hdr_size(size_t len)
{
	return len < ENTRY_BIG ? 1 : 5;
}

static size_t entry_size(size_t len)
{
	return len + 2 * hdr_size(len);
}

static void put32(unsigned char *d, size_t v)
{
	d[0] = (unsigned char)v;
	d[1] = (unsigned char)(v >> 8);
	d[2] = (unsigned char)(v >> 16);
	d[3] = (unsigned char)(v >> 24);
}

static size_t get32(const unsigned char *d)
{
	return (size_t)d[0] | (size_t)d[1] << 8 | (size_t)d[2] << 16 | (size_t)d[3] << 24;
}

static void put_entry(unsigned char *d, const char *p, size_t len)
{
	if (len < ENTRY_BIG) {
		d[0] = (unsigned char)len;
		memcpy(d + 1, p, len);
		d[1 + len] = (unsigned char)len;
		return;
	}
	d[0] = ENTRY_BIG;
	put32(d + 1, len);
	memcpy(d + 5, p, len);
	put32(d + 5 + len, len);
	d[9 + len] = ENTRY_BIG;
}

/* Reads the entry starting at OFF; returns its total size. */
static size_t read_entry(const struct list_node *n, size_t off, const char **p, size_t *len)
{
	const unsigned char *d = n->data + off;
	size_t l, h;
	if (d[0] != ENTRY_BIG) {
		l = d[0];
		h = 1;
	} else {
		l = get32(d + 1);
		h = 5;
	}
	*p = (const char *)d + h;
	*len = l;
	return l + 2 * h;
}

static size_t entry_size_at(const struct list_node *n, size_t off)
{
	const char *p;
	size_t len;
	return read_entry(n, off, &p, &len);
}

/* The start of the entry that ends at END (> 0). */
static size_t prev_start(const struct list_node *n, size_t end)
{
	unsigned char b = n->data[end - 1];
	if (b != ENTRY_BIG)
		return end - ((size_t)b + 2);
	return end - (get32(n->data + end - 5) + 10);
}

/* --- nodes ------------------------------------------------------------------- */

static bool node_allows(const struct list *l, const struct list_node *n, size_t add_bytes, uint32_t add_count)
{
	if (n->count == 0)
		return true;
	size_t nb = n->used + add_bytes;
	if (l->fill < 0) {
		int i = -l->fill - 1;
		return nb <= fill_bytes[i > 4 ? 4 : i];
	}
	uint32_t most = l->fill > 0 ? (uint32_t)l->fill : 1;
	return nb <= NODE_SAFETY_BYTES && n->count + add_count <= most;
}

static struct list_node *node_new(size_t cap)
{
	if (cap < 16)
		cap = 16;
	struct list_node *n = zr_try_malloc(sizeof(*n) + cap);
	if (!n)
		return NULL;
	n->prev = n->next = NULL;
	n->count = 0;
	n->used = 0;
	n->cap = zr_usable(n) - sizeof(*n);
	return n;
}

/* N moved to a new address: points its neighbours and the list at it. */
static void relink(struct list *l, struct list_node *n)
{
	if (n->prev)
		n->prev->next = n;
	else
		l->head = n;
	if (n->next)
		n->next->prev = n;
	else
		l->tail = n;
}

static void link_after(struct list *l, struct list_node *at, struct list_node *n)
{
	n->prev = at;
	n->next = at ? at->next : l->head;
	if (n->next)
		n->next->prev = n;
	else
		l->tail = n;
	if (at)
		at->next = n;
	else
		l->head = n;
	l->nnodes++;
}

static void unlink_free(struct list *l, struct list_node *n)
{
	if (n->prev)
		n->prev->next = n->next;
	else
		l->head = n->next;
	if (n->next)
		n->next->prev = n->prev;
	else
		l->tail = n->prev;
	l->nnodes--;
	zr_free(n);
}

/* Room for EXTRA more bytes in N; returns N (maybe moved) or NULL on OOM. */
static struct list_node *node_reserve(struct list *l, struct list_node *n, size_t extra)
{
	size_t need = n->used + extra;
	if (need <= n->cap)
		return n;
	size_t cap = n->cap + n->cap / 2;
	if (cap < need)
		cap = need;
	struct list_node *m = zr_try_realloc(n, sizeof(*m) + cap);
	if (!m)
		return NULL;
	m->cap = zr_usable(m) - sizeof(*m);
	relink(l, m);
	return m;
}

/* Gives back memory after deletions; N may move. */
static struct list_node *node_shrink(struct list *l, struct list_node *n)
{
	if (n->cap < 256 || n->used >= n->cap / 4)
		return n;
	struct list_node *m = zr_try_realloc(n, sizeof(*m) + n->used * 2);
	if (!m)
		return n;
	m->cap = zr_usable(m) - sizeof(*m);
	relink(l, m);
	return m;
}

/* Writes an entry at OFF of N, which has room for it. */
static void node_put(struct list *l, struct list_node *n, size_t off, const char *p, size_t len)
{
	size_t esz = entry_size(len);
	memmove(n->data + off + esz, n->data + off, n->used - off);
	put_entry(n->data + off, p, len);
	n->used += esz;
	n->count++;
	l->count++;
}

/* Removes the entry at OFF of N; frees N when it empties. Returns true
 * when N was freed. N does not move otherwise. */
static bool node_del(struct list *l, struct list_node *n, size_t off)
{
	size_t esz = entry_size_at(n, off);
	memmove(n->data + off, n->data + off + esz, n->used - off - esz);
	n->used -= esz;
	n->count--;
	l->count--;
	if (n->count == 0) {
		unlink_free(l, n);
		return true;
	}
	return false;
}

/* Counts the entries of N before byte offset OFF. */
static uint32_t count_before(const struct list_node *n, size_t off)
{
	uint32_t k = 0;
	for (size_t o = 0; o < off; o += entry_size_at(n, o))
		k++;
	return k;
}

/* Splits N at OFF (0 < OFF < used): the entries from OFF on go to a new
 * node after N. Returns the new node, or NULL on OOM (nothing changed). */
static struct list_node *node_split(struct list *l, struct list_node *n, size_t off)
{
	struct list_node *r = node_new(n->used - off);
	if (!r)
		return NULL;
	uint32_t left = count_before(n, off);
	memcpy(r->data, n->data + off, n->used - off);
	r->used = n->used - off;
	r->count = n->count - left;
	n->used = off;
	n->count = left;
	link_after(l, n, r);
	return r;
}

/* Appends B's entries to A and frees B (B follows A) when the result fits
 * the fill; returns A (maybe moved). */
static struct list_node *node_merge(struct list *l, struct list_node *a)
{
	struct list_node *b = a->next;
	if (!b || !node_allows(l, a, b->used, b->count))
		return a;
	struct list_node *m = node_reserve(l, a, b->used);
	if (!m)
		return a;
	memcpy(m->data + m->used, b->data, b->used);
	m->used += b->used;
	m->count += b->count;
	unlink_free(l, b);
	return m;
}

/* Merges neighbours that fit together and shrinks sparse nodes (after
 * removals in the middle). */
static void compact(struct list *l)
{
	for (struct list_node *n = l->head; n; n = n->next) {
		n = node_merge(l, n);
		n = node_shrink(l, n);
	}
}

/* Inserts an element at byte OFF of N (OFF == used: after its last entry),
 * splitting or adding nodes when N is full. */
static int insert_at(struct list *l, struct list_node *n, size_t off, const char *p, size_t len)
{
	size_t esz = entry_size(len);
	if (!node_allows(l, n, esz, 1)) {
		struct list_node *fresh = NULL;
		if (off == 0 && n->prev && node_allows(l, n->prev, esz, 1)) {
			n = n->prev;
			off = n->used;
		} else if (off == n->used && n->next && node_allows(l, n->next, esz, 1)) {
			n = n->next;
			off = 0;
		} else if (off == 0 || off == n->used) {
			if (!(fresh = node_new(esz)))
				return -ENOMEM;
			link_after(l, off == 0 ? n->prev : n, fresh);
		} else {
			struct list_node *r = node_split(l, n, off);
			if (!r)
				return -ENOMEM;
			if (node_allows(l, n, esz, 1)) {
				off = n->used;
			} else if (node_allows(l, r, esz, 1)) {
				n = r;
				off = 0;
			} else {
				if (!(fresh = node_new(esz)))
					return -ENOMEM;
				link_after(l, n, fresh);
			}
		}
		if (fresh) {
			n = fresh;
			off = 0;
		}
	}
	n = node_reserve(l, n, esz);
	if (!n)
		return -ENOMEM;
	node_put(l, n, off, p, len);
	return 0;
}

/* The node and byte offset of element IDX (< count). */
static struct list_node *locate(const struct list *l, uint64_t idx, size_t *off)
{
	struct list_node *n;
	uint64_t i;
	if (idx < l->count / 2) {
		n = l->head;
		while (idx >= n->count) {
			idx -= n->count;
			n = n->next;
		}
		i = idx;
	} else {
		uint64_t r = l->count - 1 - idx;
		n = l->tail;
		while (r >= n->count) {
			r -= n->count;
			n = n->prev;
		}
		i = n->count - 1 - r;
	}
	size_t o;
	if (i <= n->count / 2) {
		o = 0;
		for (uint64_t k = 0; k < i; k++)
			o += entry_size_at(n, o);
	} else {
		o = n->used;
		for (uint64_t k = n->count - i; k > 0; k--)
			o = prev_start(n, o);
	}
	*off = o;
	return n;
}

/* --- the API ------------------------------------------------------------------ */

struct list *list_create(int fill)
{
	struct list *l = zr_calloc(1, sizeof(*l));
	l->fill = fill;
	return l;
}

void list_free(struct list *l)
{
	if (!l)
		return;
	for (struct list_node *n = l->head, *next; n; n = next) {
		next = n->next;
		zr_free(n);
	}
	zr_free(l);
}

struct list *list_dup(const struct list *l)
{
	struct list *d = list_create(l->fill);
	for (const struct list_node *n = l->head; n; n = n->next) {
		struct list_node *c = zr_malloc(sizeof(*c) + n->used);
		c->cap = zr_usable(c) - sizeof(*c);
		c->used = n->used;
		c->count = n->count;
		memcpy(c->data, n->data, n->used);
		link_after(d, d->tail, c);
	}
	d->count = l->count;
	return d;
}

int list_push(struct list *l, enum list_where where, const char *p, size_t len)
{
	struct list_node *n = where == LIST_HEAD ? l->head : l->tail;
	size_t esz = entry_size(len);
	if (!n || !node_allows(l, n, esz, 1)) {
		/* a first node gets some slack: small lists grow in place */
		struct list_node *fresh = node_new(n ? esz : esz + 48);
		if (!fresh)
			return -ENOMEM;
		link_after(l, where == LIST_HEAD ? NULL : l->tail, fresh);
		n = fresh;
	}
	n = node_reserve(l, n, esz);
	if (!n)
		return -ENOMEM;
	node_put(l, n, where == LIST_HEAD ? 0 : n->used, p, len);
	return 0;
}

bool list_peek(const struct list *l, enum list_where where, const char **p, size_t *len)
{
	if (!l->count)
		return false;
	if (where == LIST_HEAD)
		read_entry(l->head, 0, p, len);
	else
		read_entry(l->tail, prev_start(l->tail, l->tail->used), p, len);
	return true;
}

void list_pop(struct list *l, enum list_where where)
{
	assert(l->count > 0);
	struct list_node *n = where == LIST_HEAD ? l->head : l->tail;
	size_t off = where == LIST_HEAD ? 0 : prev_start(n, n->used);
	if (!node_del(l, n, off))
		node_shrink(l, n);
}

bool list_index(const struct list *l, uint64_t idx, const char **p, size_t *len)
{
	if (idx >= l->count)
		return false;
	size_t off;
	struct list_node *n = locate(l, idx, &off);
	read_entry(n, off, p, len);
	return true;
}

int list_set(struct list *l, uint64_t idx, const char *p, size_t len)
{
	assert(idx < l->count);
	size_t off;
	struct list_node *n = locate(l, idx, &off);
	size_t old = entry_size_at(n, off), esz = entry_size(len);
	if (n->count == 1 || esz <= old || node_allows(l, n, esz - old, 0)) {
		/* replace in place */
		if (esz > old) {
			n = node_reserve(l, n, esz - old);
			if (!n)
				return -ENOMEM;
		}
		memmove(n->data + off + esz, n->data + off + old, n->used - off - old);
		put_entry(n->data + off, p, len);
		n->used = n->used - old + esz;
		return 0;
	}
	/* does not fit: insert the new one before, then drop the old one */
	int rc = insert_at(l, n, off, p, len);
	if (rc < 0)
		return rc;
	n = locate(l, idx + 1, &off);
	node_del(l, n, off);
	compact(l);
	return 0;
}

int list_insert(struct list *l, const char *pivot, size_t plen, bool after, const char *p, size_t len)
{
	for (struct list_node *n = l->head; n; n = n->next) {
		for (size_t off = 0; off < n->used;) {
			const char *e;
			size_t elen;
			size_t sz = read_entry(n, off, &e, &elen);
			if (elen == plen && memcmp(e, pivot, plen) == 0) {
				int rc = insert_at(l, n, after ? off + sz : off, p, len);
				return rc < 0 ? rc : 1;
			}
			off += sz;
		}
	}
	return 0;
}

static bool entry_equals(const struct list_node *n, size_t off, const char *v, size_t vlen)
{
	const char *e;
	size_t elen;
	read_entry(n, off, &e, &elen);
	return elen == vlen && memcmp(e, v, vlen) == 0;
}

uint64_t list_remove(struct list *l, const char *v, size_t vlen, int64_t count)
{
	uint64_t limit = count == 0  ? UINT64_MAX
			 : count < 0 ? (uint64_t)0 - (uint64_t)count
				     : (uint64_t)count;
	uint64_t removed = 0;
	if (count >= 0) {
		struct list_node *n = l->head;
		size_t off = 0;
		while (n && removed < limit) {
			if (off >= n->used) {
				n = n->next;
				off = 0;
				continue;
			}
			if (!entry_equals(n, off, v, vlen)) {
				off += entry_size_at(n, off);
				continue;
			}
			struct list_node *next = n->next;
			if (node_del(l, n, off)) {
				n = next;
				off = 0;
			}
			removed++;
		}
	} else {
		struct list_node *n = l->tail;
		size_t end = n ? n->used : 0; /* end of the next entry to look at */
		while (n && removed < limit) {
			if (end == 0) {
				n = n->prev;
				end = n ? n->used : 0;
				continue;
			}
			size_t start = prev_start(n, end);
			if (entry_equals(n, start, v, vlen)) {
				struct list_node *prev = n->prev;
				removed++;
				if (node_del(l, n, start)) {
					n = prev;
					end = n ? n->used : 0;
					continue;
				}
			}
			end = start;
		}
	}
	if (removed)
		compact(l);
	return removed;
}

void list_trim(struct list *l, uint64_t head_n, uint64_t tail_n)
{
	if (head_n >= l->count || tail_n >= l->count - head_n) {
		while (l->head)
			unlink_free(l, l->head);
		l->count = 0;
		return;
	}
	while (head_n && l->head->count <= head_n) {
		head_n -= l->head->count;
		l->count -= l->head->count;
		unlink_free(l, l->head);
	}
	if (head_n) {
		struct list_node *n = l->head;
		size_t off = 0;
		for (uint64_t k = 0; k < head_n; k++)
			off += entry_size_at(n, off);
		memmove(n->data, n->data + off, n->used - off);
		n->used -= off;
		n->count -= (uint32_t)head_n;
		l->count -= head_n;
		node_shrink(l, n);
	}
	while (tail_n && l->tail->count <= tail_n) {
		tail_n -= l->tail->count;
		l->count -= l->tail->count;
		unlink_free(l, l->tail);
	}
	if (tail_n) {
		struct list_node *n = l->tail;
		size_t end = n->used;
		for (uint64_t k = 0; k < tail_n; k++)
			end = prev_start(n, end);
		n->used = end;
		n->count -= (uint32_t)tail_n;
		l->count -= tail_n;
		node_shrink(l, n);
	}
}

void list_iter_init(struct list_iter *it, const struct list *l, uint64_t idx, bool forward)
{
	it->l = l;
	it->forward = forward;
	it->node = NULL;
	it->off = 0;
	if (idx >= l->count)
		return;
	size_t off;
	it->node = locate(l, idx, &off);
	it->off = forward ? off : off + entry_size_at(it->node, off);
}

bool list_iter_next(struct list_iter *it, const char **p, size_t *len)
{
	struct list_node *n = it->node;
	if (!n)
		return false;
	if (it->forward) {
		it->off += read_entry(n, it->off, p, len);
		if (it->off >= n->used) {
			it->node = n->next;
			it->off = 0;
		}
	} else {
		size_t start = prev_start(n, it->off);
		read_entry(n, start, p, len);
		it->off = start;
		if (start == 0) {
			it->node = n->prev;
			it->off = it->node ? it->node->used : 0;
		}
	}
	return true;
}

size_t list_memory(const struct list *l)
{
	size_t b = zr_usable(l);
	for (const struct list_node *n = l->head; n; n = n->next)
		b += zr_usable(n);
	return b;
}

bool list_check(const struct list *l)
{
	uint64_t total = 0;
	uint32_t nodes = 0;
	const struct list_node *prev = NULL;
	for (const struct list_node *n = l->head; n; prev = n, n = n->next) {
		if (n->prev != prev || n->count == 0 || n->used > n->cap)
			return false;
		uint32_t k = 0;
		size_t off = 0;
		while (off < n->used) {
			size_t sz = entry_size_at(n, off);
			if (off + sz > n->used || prev_start(n, off + sz) != off)
				return false;
			off += sz;
			k++;
		}
		if (off != n->used || k != n->count)
			return false;
		total += k;
		nodes++;
	}
	return prev == l->tail && total == l->count && nodes == l->nnodes &&
	       (l->head == NULL) == (l->count == 0);
}

/* --- store_type_ops ------------------------------------------------------------ */

static void ops_free(void *obj)
{
	list_free(obj);
}

static void *ops_dup(const void *obj)
{
	return list_dup(obj);
}

static size_t ops_memory(const void *obj)
{
	return list_memory(obj);
}

static const char *ops_encoding(const void *obj)
{
	(void)obj;
	return "quicklist"; /* Redis 7.0: every list, however small */
}

#define REWRITE_BATCH 64

static int ops_rewrite(const void *obj, const char *key, size_t klen, store_emit_fn emit, void *ctx)
{
	const struct list *l = obj;
	const char *argv[REWRITE_BATCH + 2];
	size_t lens[REWRITE_BATCH + 2];
	argv[0] = "RPUSH";
	lens[0] = 5;
	argv[1] = key;
	lens[1] = klen;
	int n = 2;
	struct list_iter it;
	list_iter_init(&it, l, 0, true);
	const char *p;
	size_t len;
	while (list_iter_next(&it, &p, &len)) {
		argv[n] = p;
		lens[n++] = len;
		if (n == REWRITE_BATCH + 2) {
			int rc = emit(n, argv, lens, ctx);
			if (rc)
				return rc;
			n = 2;
		}
	}
	return n > 2 ? emit(n, argv, lens, ctx) : 0;
}

const struct store_type_ops store_list_ops = {
	.free = ops_free,
	.dup = ops_dup,
	.memory = ops_memory,
	.encoding = ops_encoding,
	.rewrite = ops_rewrite,
};
