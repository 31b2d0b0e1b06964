/* native_wire — the native protocol's wire constants and its little-endian
 * field helpers (PROTOCOL.md beside this file is the contract). Shared by
 * zarisd's native session and libzaris: no dependency beyond libc, every
 * function inline and pure.
 */
#ifndef ZR_NATIVE_WIRE_H
#define ZR_NATIVE_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define NW_MAGIC 0x5a524e31u /* "ZRN1" */
#define NW_VERSION 1
#define NW_HEADER 12	 /* u32 length, u8 kind, u8 flags, u16 count, u32 id */
#define NW_HEADER_REST 8 /* what the length counts of the header */
#define NW_MAX_OPS 65535
/* what a frame may carry beyond its largest value (PROTOCOL.md 1) */
#define NW_FRAME_SLACK (1u << 20)

enum nw_kind {
	NW_HELLO = 1,
	NW_REQUEST = 2,
	NW_RESPONSE = 3,
	NW_GOODBYE = 4,
};

#define NW_RESPONSE_LAST 0x01

/* HELLO reply flags */
#define NW_HELLO_RF1 0x0001
#define NW_HELLO_CLUSTER 0x0002

enum nw_op {
	NW_OP_GET = 1,
	NW_OP_SET = 2,
	NW_OP_DEL = 3,
	NW_OP_EXISTS = 4,
	NW_OP_INCRBY = 5,
	NW_OP_GETSET = 6,
	NW_OP_GETDEL = 7,
	NW_OP_MGET = 8,
	NW_OP_MSET = 9,
	NW_OP_PTTL = 10,
	NW_OP_PEXPIRE = 11,
	NW_OP_PERSIST = 12,
	NW_OP_METAGET = 13,
	NW_OP_METASET = 14,
	NW_OP_INVALIDATE = 15,
	NW_OP_TOPOLOGY = 16,
	NW_OP_COMMAND = 17,
	NW_OP_LAST = NW_OP_COMMAND,
};

/* Whether operation CODE is about one key, its first argument (the key a
 * request's prefetch and RF1's grouping by shard go by). */
static inline bool nw_op_single_key(uint8_t code)
{
	switch (code) {
	case NW_OP_GET:
	case NW_OP_SET:
	case NW_OP_DEL:
	case NW_OP_EXISTS:
	case NW_OP_INCRBY:
	case NW_OP_GETSET:
	case NW_OP_GETDEL:
	case NW_OP_PTTL:
	case NW_OP_PEXPIRE:
	case NW_OP_PERSIST:
	case NW_OP_METAGET:
	case NW_OP_METASET:
		return true;
	default:
		return false;
	}
}

/* SET's opflags */
#define NW_SET_NX 0x01
#define NW_SET_XX 0x02
#define NW_SET_GET 0x04
#define NW_SET_KEEPTTL 0x08
#define NW_SET_META 0x10
#define NW_SET_FLAGS 0x1f

#define NW_OP_HEADER 4	   /* u8 op, u8 opflags, u16 db */
#define NW_RESULT_HEADER 3 /* u16 index, u8 status */

enum nw_status {
	NW_OK = 0,
	NW_ERR = 1,
	NW_WRONGTYPE = 2,
	NW_MOVED = 3,
	NW_ASK = 4,
	NW_OOM = 5,
	NW_NOAUTH = 6,
	NW_BUSY = 7,
	NW_READONLY = 8,
	NW_NOREPLICAS = 9,
	NW_CROSSSLOT = 10,
	NW_TRYAGAIN = 11,
	NW_CLUSTERDOWN = 12,
	NW_LOADING = 13,
	NW_NOSCRIPT = 14,
	NW_EXECABORT = 15,
	NW_MASTERDOWN = 16,
	NW_MISCONF = 17,
	NW_NOPERM = 18,
	NW_FENCED = 19,
	NW_UNKILLABLE = 20,
	NW_NOTBUSY = 21,
	NW_BUSYKEY = 22,
	NW_OTHER = 255,
};

/* The status of an error whose first word (Redis's code) is CODE, LEN
 * bytes: PROTOCOL.md 5's table. */
static inline uint8_t nw_status_of(const char *code, size_t len)
{
	static const char *const words[] = {
		[NW_ERR] = "ERR",
		[NW_WRONGTYPE] = "WRONGTYPE",
		[NW_MOVED] = "MOVED",
		[NW_ASK] = "ASK",
		[NW_OOM] = "OOM",
		[NW_NOAUTH] = "NOAUTH",
		[NW_BUSY] = "BUSY",
		[NW_READONLY] = "READONLY",
		[NW_NOREPLICAS] = "NOREPLICAS",
		[NW_CROSSSLOT] = "CROSSSLOT",
		[NW_TRYAGAIN] = "TRYAGAIN",
		[NW_CLUSTERDOWN] = "CLUSTERDOWN",
		[NW_LOADING] = "LOADING",
		[NW_NOSCRIPT] = "NOSCRIPT",
		[NW_EXECABORT] = "EXECABORT",
		[NW_MASTERDOWN] = "MASTERDOWN",
		[NW_MISCONF] = "MISCONF",
		[NW_NOPERM] = "NOPERM",
		[NW_FENCED] = "FENCED",
		[NW_UNKILLABLE] = "UNKILLABLE",
		[NW_NOTBUSY] = "NOTBUSY",
		[NW_BUSYKEY] = "BUSYKEY",
	};
	for (unsigned i = 1; i < sizeof(words) / sizeof(words[0]); i++)
		if (words[i] && strlen(words[i]) == len && !memcmp(words[i], code, len))
			return (uint8_t)i;
	return NW_OTHER;
}

static inline void nw_put16(unsigned char *p, uint16_t v)
{
	p[0] = (unsigned char)v;
	p[1] = (unsigned char)(v >> 8);
}
static inline void nw_put32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}
static inline void nw_put64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}
static inline uint16_t nw_get16(const unsigned char *p)
{
	return (uint16_t)(p[0] | (unsigned)p[1] << 8);
}
static inline uint32_t nw_get32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline uint64_t nw_get64(const unsigned char *p)
{
	return (uint64_t)nw_get32(p) | (uint64_t)nw_get32(p + 4) << 32;
}

/* Writes a frame header at H (NW_HEADER bytes) for PAYLOAD bytes after it. */
static inline void nw_put_header(unsigned char *h, uint32_t payload, uint8_t kind, uint8_t flags,
				 uint16_t count, uint32_t id)
{
	nw_put32(h, NW_HEADER_REST + payload);
	h[4] = kind;
	h[5] = flags;
	nw_put16(h + 6, count);
	nw_put32(h + 8, id);
}

/* A bounded reader over received bytes: every take checks the bound, and
 * once one fails (ok false) the rest fail too, so a decoder checks once. */
struct nw_reader {
	const unsigned char *p, *end;
	bool ok;
};
static inline void nw_reader_init(struct nw_reader *r, const void *p, size_t len)
{
	r->p = p;
	r->end = r->p + len;
	r->ok = true;
}
static inline bool nw_need(struct nw_reader *r, size_t n)
{
	if (!r->ok || (size_t)(r->end - r->p) < n)
		r->ok = false;
	return r->ok;
}
static inline uint8_t nw_take8(struct nw_reader *r)
{
	return nw_need(r, 1) ? *r->p++ : 0;
}
static inline uint16_t nw_take16(struct nw_reader *r)
{
	if (!nw_need(r, 2))
		return 0;
	uint16_t v = nw_get16(r->p);
	r->p += 2;
	return v;
}
static inline uint32_t nw_take32(struct nw_reader *r)
{
	if (!nw_need(r, 4))
		return 0;
	uint32_t v = nw_get32(r->p);
	r->p += 4;
	return v;
}
static inline uint64_t nw_take64(struct nw_reader *r)
{
	if (!nw_need(r, 8))
		return 0;
	uint64_t v = nw_get64(r->p);
	r->p += 8;
	return v;
}
/* A str field: its bytes (in the buffer) and length; NULL when it runs
 * past the end or is longer than MAX. */
static inline const unsigned char *nw_take_str(struct nw_reader *r, size_t max, size_t *len)
{
	uint32_t n = nw_take32(r);
	if (!r->ok || n > max || !nw_need(r, n)) {
		r->ok = false;
		*len = 0;
		return NULL;
	}
	const unsigned char *s = r->p;
	r->p += n;
	*len = n;
	return s;
}

#endif
