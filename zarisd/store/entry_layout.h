/* entry_layout — the private byte layout of a keyspace entry (store/ only).
 *
 * One allocation per entry:
 *
 *   off  0  struct entry *next     bucket chain of the owning table
 *   off  8  uint64_t version       replication clock of the last write
 *   off 16  uint32_t meta          lru:23 | md:1 | type:3 | ttl:1 | kcls:2 | vcls:2
 *   off 20  [uint32_t vidx]        only with ttl: index in the dict's volatile array
 *   off 24  [int64_t expire_ms]    only with ttl: absolute unix ms
 *   then    klen                   1/2/4/8 bytes (kcls)
 *   then    vlen                   1/2/4/8 bytes (vcls), strings only
 *   then    key bytes, then value bytes (string) or a void * (other types)
 *   then    [struct store_meta *]  only with md: the metadata (labels,
 *                                  entity, content-type; store/meta.h)
 *
 * So a string without TTL costs 22 bytes of header for keys < 256 bytes and
 * values < 256 bytes (a 10-byte key with a 100-byte value is 132 bytes: the
 * 160-byte jemalloc class), a TTL costs 12 bytes only when present, and
 * metadata 8 bytes (a pointer to its own block) only when present.
 * Nothing after `meta` is naturally aligned (apart from the TTL area), so
 * multi-byte fields are read with memcpy, which the compiler turns into a
 * plain load on x86-64 and arm64.
 *
 * lru holds either the LRU clock (seconds, 23 bits: it wraps after 97
 * days, Redis's 24 bits after 194) or, under an LFU policy, Redis's
 * (minutes << 8 | counter:8) with 15 bits of minutes (wrapping after 22
 * days, Redis's 16 after 45): the 24th bit is the metadata flag, so that
 * an entry without metadata costs no byte more (evict.c).
 *
 * The metadata pointer sits after the value, not beside the TTL area, so
 * that no offset a lookup or a read computes (lengths, key, value) depends
 * on it: measured with callgrind on 100,000 SETs and 400,000 GET/SETs, the
 * pointer before the lengths cost 7 instructions per GET and 25 per SET
 * for entries without metadata; after the value, GET costs nothing more
 * and SET a bit test. Writers that change the value's length or position
 * (string_resize, rewrite_in_place in ops.c) read the pointer first and
 * put it back after the value (entry_set_meta_ptr_raw needs the header's
 * lengths written).
 */
#ifndef ZR_STORE_ENTRY_LAYOUT_H
#define ZR_STORE_ENTRY_LAYOUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "zarisd/store/store.h"

struct entry {
	struct entry *next; /* next entry of the same bucket */
	uint64_t version;   /* stamped by every write */
	uint32_t meta;	    /* see ENTRY_META_* */
	unsigned char body[];
};

#define ENTRY_FIXED 20u /* offsetof(struct entry, body); sizeof() is padded to 24 */
#define ENTRY_TTL_AREA 12u

#define ENTRY_META_AREA 8u

#define ENTRY_LRU_MASK 0x007fffffu
#define ENTRY_META_BIT (1u << 23)
#define ENTRY_TYPE_SHIFT 24
#define ENTRY_TYPE_MASK (7u << ENTRY_TYPE_SHIFT)
#define ENTRY_TTL_BIT (1u << 27)
#define ENTRY_KCLS_SHIFT 28
#define ENTRY_VCLS_SHIFT 30

_Static_assert(offsetof(struct entry, body) == ENTRY_FIXED, "entry header layout");
_Static_assert(STORE_TYPE_COUNT <= 8, "type must fit 3 bits");

/* Size class of a length: 0 → 1 byte, 1 → 2, 2 → 4, 3 → 8. */
static inline unsigned entry_len_cls(uint64_t n)
{
	return n < 0x100 ? 0 : n < 0x10000 ? 1 : n < 0x100000000ull ? 2 : 3;
}

static inline uint64_t entry_get_len(const unsigned char *p, unsigned cls)
{
	switch (cls) {
	case 0:
		return p[0];
	case 1: {
		uint16_t v;
		memcpy(&v, p, 2);
		return v;
	}
	case 2: {
		uint32_t v;
		memcpy(&v, p, 4);
		return v;
	}
	default: {
		uint64_t v;
		memcpy(&v, p, 8);
		return v;
	}
	}
}

static inline void entry_put_len(unsigned char *p, unsigned cls, uint64_t n)
{
	switch (cls) {
	case 0:
		p[0] = (unsigned char)n;
		break;
	case 1: {
		uint16_t v = (uint16_t)n;
		memcpy(p, &v, 2);
		break;
	}
	case 2: {
		uint32_t v = (uint32_t)n;
		memcpy(p, &v, 4);
		break;
	}
	default:
		memcpy(p, &n, 8);
		break;
	}
}

static inline bool entry_has_ttl(const struct entry *e)
{
	return e->meta & ENTRY_TTL_BIT;
}

static inline bool entry_has_meta_raw(const struct entry *e)
{
	return e->meta & ENTRY_META_BIT;
}

static inline unsigned entry_type_raw(const struct entry *e)
{
	return (e->meta & ENTRY_TYPE_MASK) >> ENTRY_TYPE_SHIFT;
}

static inline uint32_t entry_lru_raw(const struct entry *e)
{
	return e->meta & ENTRY_LRU_MASK;
}

static inline void entry_set_lru_raw(struct entry *e, uint32_t lru)
{
	e->meta = (e->meta & ~ENTRY_LRU_MASK) | (lru & ENTRY_LRU_MASK);
}

static inline uint32_t entry_vidx(const struct entry *e)
{
	uint32_t v;
	memcpy(&v, e->body, 4);
	return v;
}

static inline void entry_set_vidx(struct entry *e, uint32_t v)
{
	memcpy(e->body, &v, 4);
}

static inline int64_t entry_ttl_raw(const struct entry *e)
{
	int64_t v;
	memcpy(&v, e->body + 4, 8);
	return v;
}

static inline void entry_set_ttl_raw(struct entry *e, int64_t ms)
{
	memcpy(e->body + 4, &ms, 8);
}

/* Offset of the length fields (after the optional TTL area). */
static inline size_t entry_lens_off(uint32_t meta)
{
	return ENTRY_FIXED + ((meta & ENTRY_TTL_BIT) ? ENTRY_TTL_AREA : 0);
}

/* Where a layout puts key and value, and its total size. */
struct entry_shape {
	uint32_t meta; /* type, ttl, md, kcls, vcls bits (lru zero) */
	size_t koff;   /* key offset */
	size_t voff;   /* value (or object pointer) offset */
	size_t size;   /* bytes of the whole entry */
};

/* A string edited in place (APPEND, SETRANGE, SETBIT, PFADD ...) answers
 * OBJECT ENCODING "raw" like Redis, whose in-place edits always leave a
 * raw sds whatever its length or content. The mark costs no bit: such an
 * entry keeps its value length in a class one wider than the length
 * needs, which every reader decodes the same way (the class is in vcls);
 * entry_string_is_raw() sees the wider class. A length that needs the
 * widest class (>= 4 GiB) cannot be marked, but is "raw" by length
 * anyway. RAW: mark the shape of a string (ignored for other types).
 * MD: the shape has the metadata pointer. */
static inline struct entry_shape entry_shape_of_md(unsigned type, bool ttl, bool md, size_t klen, size_t vlen,
						   bool raw)
{
	struct entry_shape sh;
	unsigned kc = entry_len_cls(klen);
	unsigned vc = type == STORE_TYPE_STRING ? entry_len_cls(vlen) : 0;
	if (type == STORE_TYPE_STRING && raw && vc < 3)
		vc++;
	sh.meta = (type << ENTRY_TYPE_SHIFT) | (ttl ? ENTRY_TTL_BIT : 0) | (md ? ENTRY_META_BIT : 0) |
		  (kc << ENTRY_KCLS_SHIFT) | (vc << ENTRY_VCLS_SHIFT);
	size_t off = ENTRY_FIXED + (ttl ? ENTRY_TTL_AREA : 0) + (1u << kc);
	if (type == STORE_TYPE_STRING)
		off += 1u << vc;
	sh.koff = off;
	sh.voff = off + klen;
	sh.size = sh.voff + (type == STORE_TYPE_STRING ? vlen : sizeof(void *)) + (md ? ENTRY_META_AREA : 0);
	return sh;
}

/* Without metadata. */
static inline struct entry_shape entry_shape_of_ex(unsigned type, bool ttl, size_t klen, size_t vlen,
						   bool raw)
{
	return entry_shape_of_md(type, ttl, false, klen, vlen, raw);
}

/* The shape of a new entry (a string not marked raw, no metadata). */
static inline struct entry_shape entry_shape_of(unsigned type, bool ttl, size_t klen, size_t vlen)
{
	return entry_shape_of_ex(type, ttl, klen, vlen, false);
}

static inline size_t entry_klen_raw(const struct entry *e)
{
	return (size_t)entry_get_len((const unsigned char *)e + entry_lens_off(e->meta),
				     (e->meta >> ENTRY_KCLS_SHIFT) & 3);
}

/* Offset of the key bytes. */
static inline size_t entry_koff(const struct entry *e)
{
	size_t off = entry_lens_off(e->meta) + (1u << ((e->meta >> ENTRY_KCLS_SHIFT) & 3));
	if (entry_type_raw(e) == STORE_TYPE_STRING)
		off += 1u << ((e->meta >> ENTRY_VCLS_SHIFT) & 3);
	return off;
}

static inline const char *entry_key_raw(const struct entry *e, size_t *klen)
{
	*klen = entry_klen_raw(e);
	return (const char *)e + entry_koff(e);
}

static inline size_t entry_vlen_raw(const struct entry *e)
{
	const unsigned char *p = (const unsigned char *)e + entry_lens_off(e->meta);
	return (size_t)entry_get_len(p + (1u << ((e->meta >> ENTRY_KCLS_SHIFT) & 3)),
				     (e->meta >> ENTRY_VCLS_SHIFT) & 3);
}

/* Whether E is a string marked raw (entry_shape_of_ex). */
static inline bool entry_string_is_raw(const struct entry *e)
{
	return entry_type_raw(e) == STORE_TYPE_STRING &&
	       ((e->meta >> ENTRY_VCLS_SHIFT) & 3) != entry_len_cls(entry_vlen_raw(e));
}

/* The exact shape of the existing entry E (raw mark included). */
static inline struct entry_shape entry_shape_of_entry(const struct entry *e)
{
	unsigned type = entry_type_raw(e);
	return entry_shape_of_md(type, entry_has_ttl(e), entry_has_meta_raw(e), entry_klen_raw(e),
				 type == STORE_TYPE_STRING ? entry_vlen_raw(e) : 0, entry_string_is_raw(e));
}

/* Value bytes (string) or the object pointer's slot (others). */
static inline char *entry_val_raw(const struct entry *e)
{
	return (char *)e + entry_koff(e) + entry_klen_raw(e);
}

static inline void *entry_obj_raw(const struct entry *e)
{
	void *p;
	memcpy(&p, entry_val_raw(e), sizeof(p));
	return p;
}

struct store_meta;

/* Offset of the metadata pointer of an entry with the md bit: right after
 * the value (or the object pointer). */
static inline size_t entry_meta_off(const struct entry *e)
{
	return entry_koff(e) + entry_klen_raw(e) +
	       (entry_type_raw(e) == STORE_TYPE_STRING ? entry_vlen_raw(e) : sizeof(void *));
}

/* The metadata block of an entry with the md bit (NULL while a write hands
 * it on to a new block). */
static inline struct store_meta *entry_meta_ptr_raw(const struct entry *e)
{
	struct store_meta *m;
	memcpy(&m, (const char *)e + entry_meta_off(e), sizeof(m));
	return m;
}

/* Needs E's header (md bit, lengths) as the entry will have it. */
static inline void entry_set_meta_ptr_raw(struct entry *e, struct store_meta *m)
{
	memcpy((char *)e + entry_meta_off(e), &m, sizeof(m));
}

/* Whether E holds exactly KEY. */
static inline bool entry_key_eq(const struct entry *e, const char *key, size_t klen)
{
	size_t n;
	const char *k = entry_key_raw(e, &n);
	return n == klen && memcmp(k, key, klen) == 0;
}

/* Writes meta and the length fields of shape SH (leaves next, version,
 * the TTL area, key and value alone). */
static inline void entry_write_header(struct entry *e, const struct entry_shape *sh, uint32_t lru,
				      size_t klen, size_t vlen)
{
	e->meta = sh->meta | (lru & ENTRY_LRU_MASK);
	unsigned char *p = (unsigned char *)e + entry_lens_off(sh->meta);
	unsigned kc = (sh->meta >> ENTRY_KCLS_SHIFT) & 3;
	entry_put_len(p, kc, klen);
	if (((sh->meta & ENTRY_TYPE_MASK) >> ENTRY_TYPE_SHIFT) == STORE_TYPE_STRING)
		entry_put_len(p + (1u << kc), (sh->meta >> ENTRY_VCLS_SHIFT) & 3, vlen);
}

/* Initializes a fresh block of SH.size bytes: header, lengths and key; the
 * caller fills the value (and vidx/ttl when SH has a TTL). */
static inline void entry_init(struct entry *e, const struct entry_shape *sh, uint32_t lru, size_t klen,
			      size_t vlen, const char *key)
{
	e->next = NULL;
	e->version = 0;
	entry_write_header(e, sh, lru, klen, vlen);
	memcpy((char *)e + sh->koff, key, klen);
}

#endif
