/* Functions (script/function.c, function_payload.c) below the commands: CRC-64/Jones's check
 * value; the RDB string reader on every form (plain, the three integer
 * encodings, LZF with literal runs and short and long back references,
 * overlapping copies) and on damaged ones (cut short, a reference before
 * the start, a wrong length), refused without reading past the payload;
 * FUNCTION DUMP then RESTORE (FLUSH, APPEND, REPLACE) giving back the same
 * libraries; a payload of a 7.0-rc record (name, engine, description,
 * code); the registry's checks (duplicate library, function names across
 * libraries in any case, nothing left behind by a failed load).
 */
#include <stdio.h>
#include <string.h>

#include "tests/tap.h"
#include "zarisd/core/crc64.h"
#include "zarisd/proto/reply.h"
#include "zarisd/script/function.c"
#include "zarisd/script/function_payload.c"

static const char LIB[] = "#!lua name=ulib\nredis.register_function('uf', function() return 1 end)";
static const char LIB2[] = "#!lua name=ulib2\nredis.register_function('ug', function() return 2 end)";

/* A payload: BODY[0..N) then the RDB version and the CRC64. */
static size_t seal(unsigned char *buf, size_t n)
{
	buf[n++] = RDB_VERSION;
	buf[n++] = 0;
	uint64_t crc = zr_crc64(0, buf, n);
	for (int i = 0; i < 8; i++)
		buf[n++] = (unsigned char)(crc >> (8 * i));
	return n;
}

static void test_crc64(void)
{
	is_int(zr_crc64(0, "123456789", 9), 0xe9c6d914c4b8d9caull, "CRC-64/Jones check value");
	uint64_t part = zr_crc64(zr_crc64(0, "1234", 4), "56789", 5);
	is_int(part, 0xe9c6d914c4b8d9caull, "in two pieces");
}

static void test_strings(void)
{
	/* plain, 14-bit length */
	unsigned char b[400];
	b[0] = 0x40 | 1;
	b[1] = 44; /* 300 */
	memset(b + 2, 'x', 300);
	struct rdb_reader r = { b, b + 302 };
	size_t n = 0;
	char *s = get_string(&r, &n);
	ok(s && n == 300 && r.p == b + 302, "a 14-bit length string");
	zr_free(s);
	/* integers: int8 -5, int16 1000, int32 -70000 */
	unsigned char ints[] = { 0xc0, 0xfb, 0xc1, 0xe8, 0x03, 0xc2, 0x90, 0xee, 0xfe, 0xff };
	r = (struct rdb_reader){ ints, ints + sizeof(ints) };
	const char *want[] = { "-5", "1000", "-70000" };
	for (int i = 0; i < 3; i++) {
		s = get_string(&r, &n);
		is_str(s ? s : "(null)", want[i], "integer encoding %d", i);
		zr_free(s);
	}
	/* LZF: literal "abc", then a back reference of length 6 at distance 3
	 * (overlapping: "abcabcabc"), then a long one (len code 7 + 2) */
	/* 9 compressed bytes, 18 out: "abc", a reference of 4 + 2 bytes at
	 * distance 3, then one of 7 + 0 + 2 (the long form) */
	unsigned char lzf[] = { 0xc3, 9, 18, 2, 'a', 'b', 'c', (4 << 5) | 0, 2, (7 << 5) | 0, 0, 2 };
	r = (struct rdb_reader){ lzf, lzf + sizeof(lzf) };
	s = get_string(&r, &n);
	is_str(s ? s : "(null)", "abcabcabcabcabcabc", "LZF: literal run, overlapping references");
	zr_free(s);
	/* damaged LZF: a reference before the start, a short output, cut short */
	unsigned char bad1[] = { 0xc3, 2, 3, (1 << 5) | 0, 9 };
	r = (struct rdb_reader){ bad1, bad1 + sizeof(bad1) };
	ok(!get_string(&r, &n), "LZF: a reference before the output's start is refused");
	unsigned char bad2[] = { 0xc3, 4, 9, 2, 'a', 'b', 'c' };
	r = (struct rdb_reader){ bad2, bad2 + sizeof(bad2) };
	ok(!get_string(&r, &n), "LZF: an output shorter than its length is refused");
	unsigned char bad3[] = { 0xc3, 10, 20, 2, 'a', 'b' };
	r = (struct rdb_reader){ bad3, bad3 + sizeof(bad3) };
	ok(!get_string(&r, &n), "LZF: a compressed length past the payload is refused");
	unsigned char bad4[] = { 0x80, 0, 0, 1 };
	r = (struct rdb_reader){ bad4, bad4 + sizeof(bad4) };
	ok(!get_string(&r, &n), "a 32-bit length cut short is refused");
}

static void list_names(char *out, size_t size)
{
	struct obuf o;
	obuf_init(&o);
	function_reply_list(&o, NULL, 0, false);
	size_t off = 0;
	out[0] = '\0';
	for (struct obuf_chunk *ch = o.head; ch; ch = ch->next) {
		size_t k = ch->used - ch->sent;
		if (off + k >= size)
			k = size - off - 1;
		memcpy(out + off, ch->data + ch->sent, k);
		off += k;
	}
	out[off] = '\0';
	obuf_free(&o);
}

static void test_dump_restore(void)
{
	char err[512], name[64];
	function_flush();
	is_int(function_load(LIB, strlen(LIB), false, true, name, sizeof(name), err, sizeof(err)), 0, "LOAD");
	is_int(function_load(LIB2, strlen(LIB2), false, true, name, sizeof(name), err, sizeof(err)), 0,
	       "LOAD another");
	size_t n;
	char *p = function_dump(&n);
	char before[4096], after[4096];
	list_names(before, sizeof(before));
	is_int(function_restore(p, n, FUNCTION_RESTORE_APPEND, err, sizeof(err)), -EINVAL,
	       "APPEND over itself");
	is_str(err, "ERR Library ulib already exists", "its error");
	is_int(function_restore(p, n, FUNCTION_RESTORE_REPLACE, err, sizeof(err)), 0, "REPLACE");
	function_flush();
	is_int(function_restore(p, n, FUNCTION_RESTORE_APPEND, err, sizeof(err)), 0, "APPEND after FLUSH");
	list_names(after, sizeof(after));
	is_str(after, before, "the same libraries, in the same order");
	is_int(function_restore(p, n, FUNCTION_RESTORE_FLUSH, err, sizeof(err)), 0, "FLUSH policy");
	list_names(after, sizeof(after));
	is_str(after, before, "still the same");
	p[3] ^= 1;
	is_int(function_restore(p, n, FUNCTION_RESTORE_FLUSH, err, sizeof(err)), -EINVAL, "a flipped bit");
	is_str(err, "ERR DUMP payload version or checksum are wrong", "its error");
	zr_free(p);

	/* a 7.0-rc record: name, engine, no description, code without metadata */
	unsigned char rc[256];
	size_t k = 0;
	const char *code = "redis.register_function('rcf', function() return 3 end)";
	rc[k++] = RDB_OPCODE_FUNCTION;
	rc[k++] = 3;
	memcpy(rc + k, "rcl", 3);
	k += 3;
	rc[k++] = 3;
	memcpy(rc + k, "LUA", 3);
	k += 3;
	rc[k++] = 0;
	rc[k++] = (unsigned char)strlen(code);
	memcpy(rc + k, code, strlen(code));
	k += strlen(code);
	k = seal(rc, k);
	is_int(function_restore((char *)rc, k, FUNCTION_RESTORE_FLUSH, err, sizeof(err)), 0,
	       "a 7.0-rc record");
	uint64_t libs, fns;
	function_counts(&libs, &fns);
	ok(libs == 1 && fns == 1, "its library and function (%llu, %llu)", (unsigned long long)libs,
	   (unsigned long long)fns);
	unsigned char junk[32] = { 7 };
	k = seal(junk, 1);
	is_int(function_restore((char *)junk, k, FUNCTION_RESTORE_FLUSH, err, sizeof(err)), -EINVAL,
	       "a record that is no function");
	is_str(err, "ERR given type is not a function", "its error");
	function_counts(&libs, &fns);
	ok(libs == 1, "nothing changed by the failed RESTORE");
}

static void test_registry(void)
{
	char err[512], name[64];
	function_flush();
	function_load(LIB, strlen(LIB), false, true, name, sizeof(name), err, sizeof(err));
	is_int(function_load(LIB, strlen(LIB), false, true, name, sizeof(name), err, sizeof(err)), -EINVAL,
	       "the same library twice");
	is_str(err, "ERR Library 'ulib' already exists", "its error");
	const char *clash = "#!lua name=other\nredis.register_function('UF', function() end)";
	is_int(function_load(clash, strlen(clash), false, true, name, sizeof(name), err, sizeof(err)),
	       -EINVAL, "a function name of another library, in another case");
	is_str(err, "ERR Function UF already exists", "its error");
	const char *half = "#!lua name=half\nredis.register_function('h1', function() end)\nerror('x')";
	ok(function_load(half, strlen(half), false, true, name, sizeof(name), err, sizeof(err)) < 0,
	   "a library whose code fails after registering");
	uint64_t libs, fns;
	function_counts(&libs, &fns);
	ok(libs == 1 && fns == 1, "leaves nothing behind");
	uint32_t flags;
	char *canon;
	is_int(function_prepare("Uf", 2, &flags, &canon, err, sizeof(err)), 0, "FCALL finds it in any case");
	is_str(canon ? canon : "", "uf", "by its registered name");
	zr_free(canon);
	is_int(function_delete("ulib", 4), 0, "DELETE");
	is_int(function_prepare("uf", 2, &flags, &canon, err, sizeof(err)), -ENOENT, "gone for FCALL");
}

int main(void)
{
	test_crc64();
	test_strings();
	test_dump_restore();
	test_registry();
	function_flush();
	script_thread_exit();
	return done_testing();
}
