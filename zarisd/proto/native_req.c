/* native_req — see native_req.h. Each operation is decoded twice: a
 * counting pass that checks every field and sizes the argv and the
 * scratch, then a building pass over the same bytes (checked already), so
 * the arrays are allocated once per request and never move while argv
 * entries point into them. */
#include "zarisd/proto/native_req.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "zarisd/core/mem.h"
#include "zarisd/core/util.h"
#include "zarisd/proto/native_wire.h"

struct dec {
	struct nw_reader rd;
	const struct native_limits *lim;
	bool build;
	struct resp_arg *args; /* build: the argv entries */
	size_t nargs;
	char *scratch; /* build: number texts */
	size_t nscratch;
	const char *why; /* the first rule broken, NULL while none */
	char *errbuf;
	size_t errlen;
	unsigned index; /* the operation being decoded */
};

static void fail(struct dec *d, const char *what)
{
	if (d->why)
		return;
	snprintf(d->errbuf, d->errlen, "%s at operation %u", what, d->index);
	d->why = d->errbuf;
}

static void add(struct dec *d, const char *p, size_t len)
{
	if (d->build)
		d->args[d->nargs] = (struct resp_arg){ .ptr = (char *)p, .len = len };
	d->nargs++;
}

static void add_word(struct dec *d, const char *word)
{
	add(d, word, strlen(word));
}

static void add_num(struct dec *d, long long v)
{
	if (d->build) {
		char *p = d->scratch + d->nscratch;
		size_t n = zr_ll_to_str(p, v);
		add(d, p, n);
		d->nscratch += n;
	} else {
		add(d, NULL, 0);
		d->nscratch += ZR_LONG_STR_SIZE;
	}
}

/* A str field, added to argv; WHAT names it in an error. */
static void add_str(struct dec *d, const char *what)
{
	if (!nw_need(&d->rd, 4)) {
		fail(d, "a field runs past the end of the frame");
		return;
	}
	uint32_t n = nw_get32(d->rd.p);
	if (n > d->lim->max_bulk_len) {
		char msg[64];
		snprintf(msg, sizeof(msg), "%s longer than proto-max-bulk-len", what);
		fail(d, msg);
		d->rd.ok = false;
		return;
	}
	size_t len;
	const unsigned char *s = nw_take_str(&d->rd, d->lim->max_bulk_len, &len);
	if (!s) {
		fail(d, "a field runs past the end of the frame");
		return;
	}
	add(d, (const char *)s, len);
}

static long long take_i64(struct dec *d)
{
	uint64_t v = nw_take64(&d->rd);
	if (!d->rd.ok)
		fail(d, "a field runs past the end of the frame");
	return (long long)v;
}

static unsigned take_u16(struct dec *d)
{
	unsigned v = nw_take16(&d->rd);
	if (!d->rd.ok)
		fail(d, "a field runs past the end of the frame");
	return v;
}

/* meta (PROTOCOL.md §4): LABELS n label..., then ENTITY / CONTENTTYPE
 * when not empty. The words are METAPUT's and METASET's. */
static void add_meta(struct dec *d)
{
	unsigned n = take_u16(d);
	if (d->why)
		return;
	add_word(d, "LABELS");
	add_num(d, n);
	for (unsigned i = 0; i < n && !d->why; i++)
		add_str(d, "a label");
	const char *words[2] = { "ENTITY", "CONTENTTYPE" };
	for (int k = 0; k < 2 && !d->why; k++) {
		if (!nw_need(&d->rd, 4)) {
			fail(d, "a field runs past the end of the frame");
			return;
		}
		if (nw_get32(d->rd.p) == 0) {
			d->rd.p += 4;
			continue;
		}
		add_word(d, words[k]);
		add_str(d, k ? "a content-type" : "an entity");
	}
}

static void decode_set(struct dec *d, uint8_t flags)
{
	add_word(d, (flags & NW_SET_META) ? "METAPUT" : "SET");
	add_str(d, "a key");
	add_str(d, "a value");
	long long ttl = take_i64(d);
	if (d->why)
		return;
	/* 0 is no TTL; a negative one goes to SET, which refuses it with
	 * Redis's text */
	if (ttl) {
		add_word(d, "PX");
		add_num(d, ttl);
	}
	if (flags & NW_SET_NX)
		add_word(d, "NX");
	if (flags & NW_SET_XX)
		add_word(d, "XX");
	if (flags & NW_SET_GET)
		add_word(d, "GET");
	if (flags & NW_SET_KEEPTTL)
		add_word(d, "KEEPTTL");
	if (flags & NW_SET_META)
		add_meta(d);
}

/* The operation at the reader: its header, then its fields as argv. */
static void decode_op(struct dec *d, struct native_op *o)
{
	if (!nw_need(&d->rd, NW_OP_HEADER)) {
		fail(d, "an operation runs past the end of the frame");
		return;
	}
	uint8_t op = nw_take8(&d->rd), flags = nw_take8(&d->rd);
	uint16_t db = nw_take16(&d->rd);
	if (op < NW_OP_GET || op > NW_OP_LAST) {
		char msg[48];
		snprintf(msg, sizeof(msg), "unknown operation %u", op);
		fail(d, msg);
		return;
	}
	if (flags & ~(op == NW_OP_SET ? NW_SET_FLAGS : 0)) {
		char msg[64];
		snprintf(msg, sizeof(msg), "opflags 0x%02x not defined for operation %u", flags, op);
		fail(d, msg);
		return;
	}
	if (db >= d->lim->databases) {
		char msg[48];
		snprintf(msg, sizeof(msg), "db %u out of range", db);
		fail(d, msg);
		return;
	}
	size_t start = d->nargs;
	static const char *const single[] = {
		[NW_OP_GET] = "GET",	     [NW_OP_DEL] = "DEL",   [NW_OP_EXISTS] = "EXISTS",
		[NW_OP_GETDEL] = "GETDEL",   [NW_OP_PTTL] = "PTTL", [NW_OP_PERSIST] = "PERSIST",
		[NW_OP_METAGET] = "METAGET",
	};
	switch (op) {
	case NW_OP_GET:
	case NW_OP_DEL:
	case NW_OP_EXISTS:
	case NW_OP_GETDEL:
	case NW_OP_PTTL:
	case NW_OP_PERSIST:
	case NW_OP_METAGET:
		add_word(d, single[op]);
		add_str(d, "a key");
		break;
	case NW_OP_SET:
		decode_set(d, flags);
		break;
	case NW_OP_INCRBY:
	case NW_OP_PEXPIRE: {
		add_word(d, op == NW_OP_INCRBY ? "INCRBY" : "PEXPIRE");
		add_str(d, "a key");
		long long v = take_i64(d);
		if (!d->why)
			add_num(d, v);
		break;
	}
	case NW_OP_GETSET:
		add_word(d, "GETSET");
		add_str(d, "a key");
		add_str(d, "a value");
		break;
	case NW_OP_MGET:
	case NW_OP_MSET: {
		add_word(d, op == NW_OP_MGET ? "MGET" : "MSET");
		unsigned n = take_u16(d);
		for (unsigned i = 0; i < n && !d->why; i++) {
			add_str(d, "a key");
			if (op == NW_OP_MSET)
				add_str(d, "a value");
		}
		break;
	}
	case NW_OP_METASET:
		add_word(d, "METASET");
		add_str(d, "a key");
		add_word(d, "CLEAR");
		add_meta(d);
		break;
	case NW_OP_INVALIDATE: {
		add_word(d, "METAINVALIDATE");
		add_str(d, "a label");
		if (!nw_need(&d->rd, 4)) {
			fail(d, "a field runs past the end of the frame");
			break;
		}
		if (nw_get32(d->rd.p) == 0) {
			d->rd.p += 4;
			break;
		}
		add_word(d, "ENTITY");
		add_str(d, "an entity");
		break;
	}
	case NW_OP_TOPOLOGY:
		break;
	case NW_OP_COMMAND: {
		unsigned n = take_u16(d);
		if (!d->why && n == 0)
			fail(d, "COMMAND with no arguments");
		for (unsigned i = 0; i < n && !d->why; i++)
			add_str(d, "an argument");
		break;
	}
	}
	if (d->build) {
		o->op = op;
		o->flags = flags;
		o->db = db;
		o->argc = (int)(d->nargs - start);
		o->argv = o->argc ? d->args + start : NULL;
	}
}

void native_req_init(struct native_req *r)
{
	memset(r, 0, sizeof(*r));
}

void native_req_free(struct native_req *r)
{
	zr_free(r->ops);
	zr_free(r->args);
	zr_free(r->scratch);
	native_req_init(r);
}

static bool run_pass(struct dec *d, struct native_req *r, unsigned count, unsigned char *payload, size_t len)
{
	nw_reader_init(&d->rd, payload, len);
	d->nargs = d->nscratch = 0;
	for (unsigned i = 0; i < count && !d->why; i++) {
		d->index = i;
		decode_op(d, d->build ? &r->ops[i] : NULL);
	}
	if (!d->why && d->rd.p != d->rd.end) {
		d->index = count - 1;
		fail(d, "bytes left after the last operation");
	}
	return !d->why;
}

const char *native_req_decode(struct native_req *r, unsigned count, unsigned char *payload, size_t len,
			      const struct native_limits *lim, char *errbuf, size_t errlen)
{
	struct dec d = { .lim = lim, .errbuf = errbuf, .errlen = errlen };
	r->nops = 0;
	if (!run_pass(&d, r, count, payload, len))
		return d.why;
	if (count > r->ops_cap) {
		r->ops = zr_realloc(r->ops, sizeof(*r->ops) * count);
		r->ops_cap = count;
	}
	if (d.nargs > r->args_cap) {
		r->args = zr_realloc(r->args, sizeof(*r->args) * d.nargs);
		r->args_cap = d.nargs;
	}
	if (d.nscratch > r->scratch_cap) {
		r->scratch = zr_realloc(r->scratch, d.nscratch);
		r->scratch_cap = d.nscratch;
	}
	d.build = true;
	d.args = r->args;
	d.scratch = r->scratch;
	run_pass(&d, r, count, payload, len);
	r->nops = count;
	return NULL;
}
