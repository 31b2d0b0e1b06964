/* Unit tests for zarisd/proto/native_req.c: every operation's argv, and
 * each rule a REQUEST payload can break (PROTOCOL.md §9). */
#include <stdint.h>
#include <string.h>

#include "tests/tap.h"
#include "zarisd/proto/native_req.h"
#include "zarisd/proto/native_wire.h"

struct buf {
	unsigned char b[4096];
	size_t n;
};

static void put8(struct buf *b, unsigned v)
{
	b->b[b->n++] = (unsigned char)v;
}
static void put16(struct buf *b, unsigned v)
{
	nw_put16(b->b + b->n, (uint16_t)v);
	b->n += 2;
}
static void put64(struct buf *b, int64_t v)
{
	nw_put64(b->b + b->n, (uint64_t)v);
	b->n += 8;
}
static void putstr(struct buf *b, const char *s)
{
	size_t n = strlen(s);
	nw_put32(b->b + b->n, (uint32_t)n);
	memcpy(b->b + b->n + 4, s, n);
	b->n += 4 + n;
}
static void op(struct buf *b, unsigned code, unsigned flags, unsigned db)
{
	put8(b, code);
	put8(b, flags);
	put16(b, db);
}

/* The argv of OP joined with spaces. */
static const char *joined(const struct native_op *o)
{
	static char out[512];
	size_t n = 0;
	for (int i = 0; i < o->argc; i++)
		n += (size_t)snprintf(out + n, sizeof(out) - n, "%s%.*s", i ? " " : "", (int)o->argv[i].len,
				      o->argv[i].ptr);
	out[n] = 0;
	return out;
}

static const struct native_limits lim = { .max_bulk_len = 64, .databases = 16 };

static const char *decode(struct native_req *r, unsigned count, struct buf *b)
{
	static char err[160];
	return native_req_decode(r, count, b->b, b->n, &lim, err, sizeof(err));
}

int main(void)
{
	struct native_req r;
	native_req_init(&r);
	struct buf b = { .n = 0 };
	op(&b, NW_OP_GET, 0, 3);
	putstr(&b, "k");
	op(&b, NW_OP_SET, NW_SET_NX | NW_SET_GET, 0);
	putstr(&b, "k");
	putstr(&b, "v");
	put64(&b, 1500);
	op(&b, NW_OP_SET, NW_SET_META | NW_SET_KEEPTTL, 0);
	putstr(&b, "k");
	putstr(&b, "v");
	put64(&b, 0);
	put16(&b, 2);
	putstr(&b, "a");
	putstr(&b, "b");
	putstr(&b, "");
	putstr(&b, "text/plain");
	op(&b, NW_OP_INCRBY, 0, 0);
	putstr(&b, "n");
	put64(&b, -42);
	op(&b, NW_OP_MSET, 0, 0);
	put16(&b, 2);
	putstr(&b, "a");
	putstr(&b, "1");
	putstr(&b, "b");
	putstr(&b, "2");
	op(&b, NW_OP_METASET, 0, 0);
	putstr(&b, "k");
	put16(&b, 0);
	putstr(&b, "e");
	putstr(&b, "");
	op(&b, NW_OP_INVALIDATE, 0, 0);
	putstr(&b, "lab");
	putstr(&b, "");
	op(&b, NW_OP_TOPOLOGY, 0, 0);
	op(&b, NW_OP_COMMAND, 0, 0);
	put16(&b, 2);
	putstr(&b, "ECHO");
	putstr(&b, "hi");
	op(&b, NW_OP_PEXPIRE, 0, 0);
	putstr(&b, "k");
	put64(&b, 0);
	plan(22);
	ok(decode(&r, 10, &b) == NULL, "a request of ten operations decodes");
	is_int(r.nops, 10, "ten ops");
	is_str(joined(&r.ops[0]), "GET k", "GET");
	is_int(r.ops[0].db, 3, "GET's db");
	is_str(joined(&r.ops[1]), "SET k v PX 1500 NX GET", "SET with a TTL, NX and GET");
	is_str(joined(&r.ops[2]), "METAPUT k v KEEPTTL LABELS 2 a b CONTENTTYPE text/plain",
	       "SET with metadata is METAPUT; an empty entity is left out");
	is_str(joined(&r.ops[3]), "INCRBY n -42", "INCRBY with a negative delta");
	is_str(joined(&r.ops[4]), "MSET a 1 b 2", "MSET");
	is_str(joined(&r.ops[5]), "METASET k CLEAR LABELS 0 ENTITY e", "METASET replaces the metadata");
	is_str(joined(&r.ops[6]), "METAINVALIDATE lab", "INVALIDATE without entity");
	is_int(r.ops[7].argc, 0, "TOPOLOGY has no argv");
	is_str(joined(&r.ops[8]), "ECHO hi", "COMMAND passes its argv");
	is_str(joined(&r.ops[9]), "PEXPIRE k 0", "PEXPIRE 0 (deletes, as Redis)");

	struct buf t = b;
	put8(&t, 0);
	const char *why = decode(&r, 10, &t);
	ok(why && strstr(why, "bytes left after the last operation"), "trailing bytes: %s", why ? why : "-");
	why = decode(&r, 11, &b);
	ok(why && strstr(why, "past the end") && strstr(why, "operation 10"),
	   "one op more than the payload holds: %s", why ? why : "-");
	struct buf u = { .n = 0 };
	op(&u, 99, 0, 0);
	why = decode(&r, 1, &u);
	ok(why && strstr(why, "unknown operation 99"), "unknown op: %s", why ? why : "-");
	u.n = 0;
	op(&u, NW_OP_GET, 0x01, 0);
	putstr(&u, "k");
	why = decode(&r, 1, &u);
	ok(why && strstr(why, "opflags 0x01"), "opflags GET does not define: %s", why ? why : "-");
	u.n = 0;
	op(&u, NW_OP_GET, 0, 16);
	putstr(&u, "k");
	why = decode(&r, 1, &u);
	ok(why && strstr(why, "db 16 out of range"), "db out of range: %s", why ? why : "-");
	u.n = 0;
	op(&u, NW_OP_GET, 0, 0);
	putstr(&u, "0123456789012345678901234567890123456789012345678901234567890123456789");
	why = decode(&r, 1, &u);
	ok(why && strstr(why, "longer than proto-max-bulk-len"), "a key over the limit: %s", why ? why : "-");
	u.n = 0;
	op(&u, NW_OP_COMMAND, 0, 0);
	put16(&u, 0);
	why = decode(&r, 1, &u);
	ok(why && strstr(why, "COMMAND with no arguments"), "COMMAND argc 0: %s", why ? why : "-");
	u.n = 0;
	op(&u, NW_OP_SET, 0, 0);
	putstr(&u, "k");
	putstr(&u, "v");
	put8(&u, 1); /* a TTL cut short */
	why = decode(&r, 1, &u);
	ok(why && strstr(why, "past the end"), "a TTL cut short: %s", why ? why : "-");
	u.n = 0;
	op(&u, NW_OP_MGET, 0, 0);
	put16(&u, 3);
	putstr(&u, "a");
	why = decode(&r, 1, &u);
	ok(why && strstr(why, "past the end"), "MGET with fewer keys than it counts: %s", why ? why : "-");
	native_req_free(&r);
	return done_testing();
}
