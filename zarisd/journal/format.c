/* journal/format — see format.h: the frame encoder and decoder. */
#include "zarisd/journal/format.h"

#include <errno.h>
#include <string.h>

#include "zarisd/core/mem.h"
#include "zarisd/core/crc32c.h"
#include "zarisd/store/store.h"

void jbuf_init(struct jbuf *b)
{
	b->p = NULL;
	b->len = b->cap = 0;
}

void jbuf_free(struct jbuf *b)
{
	ZR_FREE(b->p);
	b->len = b->cap = 0;
}

void jbuf_reserve(struct jbuf *b, size_t extra)
{
	if (b->len + extra <= b->cap)
		return;
	size_t cap = b->cap ? b->cap : 256;
	while (cap < b->len + extra)
		cap *= 2;
	b->p = zr_realloc(b->p, cap);
	b->cap = cap;
}

void jbuf_put(struct jbuf *b, const void *p, size_t n)
{
	jbuf_reserve(b, n);
	if (n)
		memcpy(b->p + b->len, p, n);
	b->len += n;
}

void jbuf_u8(struct jbuf *b, uint8_t v)
{
	jbuf_put(b, &v, 1);
}

static void put_le32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static void put_le64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t get_le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get_le64(const unsigned char *p)
{
	return (uint64_t)get_le32(p) | (uint64_t)get_le32(p + 4) << 32;
}

void jbuf_u32(struct jbuf *b, uint32_t v)
{
	jbuf_reserve(b, 4);
	put_le32(b->p + b->len, v);
	b->len += 4;
}

void jbuf_u64(struct jbuf *b, uint64_t v)
{
	jbuf_reserve(b, 8);
	put_le64(b->p + b->len, v);
	b->len += 8;
}

void jbuf_varint(struct jbuf *b, uint64_t v)
{
	jbuf_reserve(b, 10);
	while (v >= 0x80) {
		b->p[b->len++] = (unsigned char)(v | 0x80);
		v >>= 7;
	}
	b->p[b->len++] = (unsigned char)v;
}

void jbuf_bytes(struct jbuf *b, const void *p, size_t n)
{
	jbuf_varint(b, n);
	jbuf_put(b, p, n);
}

void jr_file_header(struct jbuf *b, const char *magic)
{
	size_t off = b->len;
	jbuf_put(b, magic, 8);
	jbuf_u32(b, JR_FORMAT_VERSION);
	jbuf_u32(b, crc32c(0, b->p + off, 12));
}

size_t jr_frame_begin(struct jbuf *b, enum jr_kind kind)
{
	size_t off = b->len;
	jbuf_u32(b, 0);
	jbuf_u32(b, 0);
	jbuf_u8(b, (uint8_t)kind);
	return off;
}

void jr_frame_end(struct jbuf *b, size_t off)
{
	size_t plen = b->len - off - JR_FRAME_HEADER;
	put_le32(b->p + off, (uint32_t)plen);
	put_le32(b->p + off + 4, crc32c(0, b->p + off + JR_FRAME_HEADER, plen));
}

size_t jr_cmd_begin(struct jbuf *b, uint64_t seq, int64_t now_ms, unsigned db, uint64_t txn, unsigned ncmds)
{
	size_t off = jr_frame_begin(b, JR_CMD);
	jbuf_u64(b, seq);
	jbuf_u64(b, (uint64_t)now_ms);
	jbuf_u32(b, db);
	jbuf_u64(b, txn);
	jbuf_u32(b, ncmds);
	return off;
}

void jr_cmd_set_ncmds(struct jbuf *b, size_t off, unsigned ncmds)
{
	/* kind, seq, now, db, txn precede it */
	put_le32(b->p + off + JR_FRAME_HEADER + 1 + 8 + 8 + 4 + 8, ncmds);
}

void jr_cmd_argv(struct jbuf *b, int argc, const char *const *argv, const size_t *lens)
{
	jbuf_varint(b, (uint64_t)argc);
	for (int i = 0; i < argc; i++)
		jbuf_bytes(b, argv[i], lens[i]);
}

void jr_cmd_versions_begin(struct jbuf *b, unsigned nver)
{
	jbuf_varint(b, nver);
}

void jr_cmd_version(struct jbuf *b, const char *key, size_t klen, uint64_t version)
{
	jbuf_bytes(b, key, klen);
	jbuf_u64(b, version);
}

void jr_tail_put(struct jbuf *b, uint64_t type, const void *p, size_t n)
{
	jbuf_varint(b, type);
	jbuf_bytes(b, p, n);
}

void jr_tail_put_dest(struct jbuf *b, unsigned dest)
{
	unsigned char v = (unsigned char)dest; /* a one-byte varint */
	jr_tail_put(b, JR_TAIL_DEST, &v, 1);
}

void jr_frame_set_seq(struct jbuf *b, size_t off, uint64_t seq)
{
	/* the seq follows the kind byte in both JR_CMD and JR_COMMIT */
	put_le64(b->p + off + JR_FRAME_HEADER + 1, seq);
	jr_frame_end(b, off);
}

/* --- decoding -------------------------------------------------------------- */

int jr_frame_peek(const unsigned char *buf, size_t len, uint32_t *plen)
{
	*plen = 0;
	if (len < JR_FRAME_HEADER)
		return 0;
	uint32_t n = get_le32(buf);
	if (n > JR_MAX_FRAME)
		return -EPROTO;
	*plen = n;
	return n <= len - JR_FRAME_HEADER;
}

bool jr_frame_crc_ok(const unsigned char *frame, size_t plen)
{
	return crc32c(0, frame + JR_FRAME_HEADER, plen) == get_le32(frame + 4);
}

uint64_t jr_commit_seq(const unsigned char *pl)
{
	return get_le64(pl + 1);
}

enum jr_status jr_next_frame(const unsigned char *buf, size_t len, size_t *off, const unsigned char **payload,
			     size_t *plen, const char **why)
{
	const char *dummy;
	if (!why)
		why = &dummy;
	size_t o = *off;
	if (o >= len)
		return JR_EOF;
	if (len - o < JR_FRAME_HEADER) {
		*why = "incomplete frame header at the end";
		return JR_TRUNCATED;
	}
	uint32_t n;
	int whole = jr_frame_peek(buf + o, len - o, &n);
	if (whole < 0 || n == 0) { /* a file has no heartbeats */
		*why = "impossible frame length";
		return JR_CORRUPT;
	}
	if (!whole) {
		*why = "frame cut short by the end of the file";
		return JR_TRUNCATED;
	}
	if (!jr_frame_crc_ok(buf + o, n)) {
		bool last = o + JR_FRAME_HEADER + n == len;
		*why = last ? "checksum mismatch in the last frame (torn write)" : "checksum mismatch";
		return last ? JR_TRUNCATED : JR_CORRUPT;
	}
	*payload = buf + o + JR_FRAME_HEADER;
	*plen = n;
	*off = o + JR_FRAME_HEADER + n;
	return JR_OK;
}

bool jr_torn_tail(const unsigned char *buf, size_t len, size_t at, uint64_t after_seq)
{
	/* smallest record frame: header, kind byte, u64 seq */
	const size_t min = JR_FRAME_HEADER + 1 + 8;
	for (size_t o = at + 1; o < len && len - o >= min; o++) {
		uint32_t n = get_le32(buf + o);
		if (n < 9 || n > len - o - JR_FRAME_HEADER)
			continue;
		const unsigned char *pl = buf + o + JR_FRAME_HEADER;
		/* kind and seq first (a seq at most 2^32 past AFTER_SEQ): random
		 * bytes pass them about once in 2^40, so the checksum is almost
		 * never computed and the scan stays linear in the tail */
		uint64_t seq = get_le64(pl + 1);
		if ((pl[0] != JR_CMD && pl[0] != JR_COMMIT) || seq <= after_seq ||
		    seq - after_seq > (1ull << 32))
			continue;
		if (crc32c(0, pl, n) == get_le32(buf + o + 4))
			return false;
	}
	return true;
}

int jr_check_file_header(const unsigned char *buf, size_t len, const char *magic)
{
	if (len < JR_FILE_HEADER || memcmp(buf, magic, 8) != 0 || crc32c(0, buf, 12) != get_le32(buf + 12))
		return -EINVAL;
	uint32_t version = get_le32(buf + 8);
	if (version < JR_FORMAT_MIN_VERSION || version > JR_FORMAT_VERSION)
		return -EPROTO;
	return 0;
}

bool jrd_u8(struct jreader *r, uint8_t *v)
{
	if (r->end - r->p < 1)
		return false;
	*v = *r->p++;
	return true;
}

bool jrd_u32(struct jreader *r, uint32_t *v)
{
	if (r->end - r->p < 4)
		return false;
	*v = get_le32(r->p);
	r->p += 4;
	return true;
}

bool jrd_u64(struct jreader *r, uint64_t *v)
{
	if (r->end - r->p < 8)
		return false;
	*v = get_le64(r->p);
	r->p += 8;
	return true;
}

bool jrd_varint(struct jreader *r, uint64_t *v)
{
	uint64_t x = 0;
	for (int shift = 0; shift < 64; shift += 7) {
		if (r->p >= r->end)
			return false;
		unsigned char c = *r->p++;
		x |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80)) {
			*v = x;
			return true;
		}
	}
	return false;
}

bool jrd_bytes(struct jreader *r, const char **p, size_t *n)
{
	uint64_t len;
	if (!jrd_varint(r, &len) || len > (uint64_t)(r->end - r->p))
		return false;
	*p = (const char *)r->p;
	*n = (size_t)len;
	r->p += len;
	return true;
}

bool jr_next_argc(struct jreader *cmds, uint64_t *argc)
{
	return jrd_varint(cmds, argc) && *argc > 0 && *argc <= JR_MAX_ARGS;
}

bool jr_next_version(struct jreader *vers, const char **key, size_t *klen, uint64_t *version)
{
	return jrd_bytes(vers, key, klen) && jrd_u64(vers, version);
}

int jr_tail_next(struct jreader *tail, uint64_t *type, const char **p, size_t *n)
{
	if (tail->p == tail->end)
		return 0;
	return jrd_varint(tail, type) && jrd_bytes(tail, p, n) ? 1 : -EINVAL;
}

bool jr_tail_ok(struct jreader tail)
{
	uint64_t type;
	const char *p;
	size_t n;
	int r;
	while ((r = jr_tail_next(&tail, &type, &p, &n)) == 1)
		;
	return r == 0;
}

/* Walks NCMDS commands of R (every length checked). */
static bool skip_cmds(struct jreader *r, uint64_t ncmds)
{
	for (uint64_t i = 0; i < ncmds; i++) {
		uint64_t argc;
		if (!jr_next_argc(r, &argc))
			return false;
		for (uint64_t k = 0; k < argc; k++) {
			const char *p;
			size_t n;
			if (!jrd_bytes(r, &p, &n))
				return false;
		}
	}
	return true;
}

bool jr_parse_commit(const unsigned char *payload, size_t plen, uint64_t *seq, uint64_t *txn,
		     struct jreader *tail)
{
	struct jreader r = { payload, payload + plen };
	uint8_t kind;
	if (!jrd_u8(&r, &kind) || kind != JR_COMMIT || !jrd_u64(&r, seq) || !jrd_u64(&r, txn) ||
	    !jr_tail_ok(r))
		return false;
	if (tail)
		*tail = r;
	return true;
}

bool jr_parse_snap_entry(const unsigned char *payload, size_t plen, struct jr_snap_entry *out)
{
	struct jreader r = { payload, payload + plen };
	uint32_t db;
	uint64_t exp;
	if (!jrd_u8(&r, &out->kind) || (out->kind != JR_SNAP_STR && out->kind != JR_SNAP_OBJ) ||
	    !jrd_u32(&r, &db))
		return false;
	out->db = db;
	out->type = 0;
	if (out->kind == JR_SNAP_OBJ && !jrd_u8(&r, &out->type))
		return false;
	if (!jrd_u64(&r, &exp) || !jrd_u64(&r, &out->version) || !jrd_bytes(&r, &out->key, &out->klen))
		return false;
	out->expire = (int64_t)exp;
	out->val = NULL;
	out->vlen = 0;
	out->ncmds = 0;
	out->cmds = (struct jreader){ r.end, r.end };
	if (out->kind == JR_SNAP_STR) {
		if (!jrd_bytes(&r, &out->val, &out->vlen))
			return false;
	} else {
		uint32_t ncmds;
		if (!jrd_u32(&r, &ncmds))
			return false;
		out->ncmds = ncmds;
		out->cmds = r;
		if (!skip_cmds(&r, ncmds))
			return false;
		out->cmds.end = r.p;
	}
	out->tail = r;
	return jr_tail_ok(r);
}

bool jr_parse_cmd(const unsigned char *payload, size_t plen, struct jr_cmd *out)
{
	struct jreader r = { payload, payload + plen };
	uint8_t kind;
	uint64_t now, nver;
	uint32_t db, ncmds;
	if (!jrd_u8(&r, &kind) || kind != JR_CMD || !jrd_u64(&r, &out->seq) || !jrd_u64(&r, &now) ||
	    !jrd_u32(&r, &db) || !jrd_u64(&r, &out->txn) || !jrd_u32(&r, &ncmds) || ncmds == 0 ||
	    ncmds > 1u << 24)
		return false;
	out->payload = payload;
	out->plen = plen;
	out->now_ms = (int64_t)now;
	out->db = db;
	out->ncmds = (unsigned)ncmds;
	out->cmds = r;
	/* walk the commands once so the versions' position is known and
	 * every length is checked before anything is applied */
	if (!skip_cmds(&r, ncmds))
		return false;
	if (!jrd_varint(&r, &nver) || nver > 1u << 24)
		return false;
	out->nver = (unsigned)nver;
	out->vers = r;
	for (uint64_t i = 0; i < nver; i++) {
		const char *k;
		size_t kl;
		uint64_t v;
		if (!jr_next_version(&r, &k, &kl, &v))
			return false;
	}
	out->vers.end = r.p;
	out->tail = r;
	out->dest = 0;
	out->dest_at = 0;
	uint64_t type;
	const char *p;
	size_t n;
	int t;
	while ((t = jr_tail_next(&r, &type, &p, &n)) == 1) {
		if (type != JR_TAIL_DEST)
			continue;
		struct jreader f = { (const unsigned char *)p, (const unsigned char *)p + n };
		uint64_t dest;
		if (!jrd_varint(&f, &dest))
			return false;
		/* JR_DEST_ALL, and a value this build does not know, read as
		 * "for both" */
		if (dest == JR_DEST_LOG || dest == JR_DEST_REPLICAS || dest == JR_DEST_NONE)
			out->dest = (unsigned)dest;
		/* the writers' one-byte value, which a replica rewrites */
		if (n == 1)
			out->dest_at = (size_t)((const unsigned char *)p - payload);
	}
	return t == 0;
}

void jr_cmd_dest_as_replica(unsigned char *copy, const struct jr_cmd *rec)
{
	if (!rec->dest_at)
		return;
	if (copy[rec->dest_at] == JR_DEST_LOG)
		copy[rec->dest_at] = JR_DEST_NONE;
	else if (copy[rec->dest_at] == JR_DEST_REPLICAS)
		copy[rec->dest_at] = JR_DEST_ALL;
}

void jr_meta_put(struct jbuf *b, const struct store_meta_fields *f)
{
	struct jbuf v;
	jbuf_init(&v);
	jbuf_varint(&v, f->nlabels);
	for (unsigned i = 0; i < f->nlabels; i++)
		jbuf_bytes(&v, f->labels[i], f->label_lens[i]);
	jbuf_varint(&v, (f->entity ? JR_META_ENTITY : 0) | (f->ctype ? JR_META_CTYPE : 0));
	if (f->entity)
		jbuf_bytes(&v, f->entity, f->entity_len);
	if (f->ctype)
		jbuf_bytes(&v, f->ctype, f->ctype_len);
	jr_tail_put(b, JR_TAIL_META, v.p, v.len);
	jbuf_free(&v);
}

int jr_meta_get(struct jreader tail, struct store_meta_fields *f, const char **labels, size_t *lens)
{
	uint64_t type;
	const char *p;
	size_t n;
	int r;
	memset(f, 0, sizeof(*f));
	while ((r = jr_tail_next(&tail, &type, &p, &n)) == 1) {
		if (type != JR_TAIL_META)
			continue;
		struct jreader v = { (const unsigned char *)p, (const unsigned char *)p + n };
		uint64_t count, flags;
		if (!jrd_varint(&v, &count) || count > JR_META_MAX_LABELS)
			return -EINVAL;
		for (uint64_t i = 0; i < count; i++)
			if (!jrd_bytes(&v, &labels[i], &lens[i]) || !lens[i])
				return -EINVAL;
		if (!jrd_varint(&v, &flags))
			return -EINVAL;
		if ((flags & JR_META_ENTITY) && !jrd_bytes(&v, &f->entity, &f->entity_len))
			return -EINVAL;
		if ((flags & JR_META_CTYPE) && !jrd_bytes(&v, &f->ctype, &f->ctype_len))
			return -EINVAL;
		f->nlabels = (unsigned)count;
		f->labels = labels;
		f->label_lens = lens;
		return 1;
	}
	return r < 0 ? -EINVAL : 0;
}
