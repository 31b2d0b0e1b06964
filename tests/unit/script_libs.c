/* The script libraries (zarisd/script/lualibs.h) in a bare Lua 5.1 state:
 * base, table, string and math opened as the engine opens them, then
 * script_libs_open(). Each case is a chunk returning one string, checked
 * against bytes worked out from the MessagePack spec, the struct format
 * and Redis 7.0's error texts; tests/integration/script_libs.t compares a
 * larger corpus with redis-server itself. Also: the state's stack is left
 * as found, and a pack cut short by a memory error frees its buffer (the
 * state's allocator counts every byte back to zero at lua_close), and the
 * guards around Debian's cjson refuse what its int counts cannot hold (the
 * limit lowered here to 64 KiB by including the module's .c).
 */
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include "tests/tap.h"

#define ZR_CJSON_MAX_BYTES ((size_t)65536)
#include "zarisd/script/lualibs.c"

/* An allocator that counts live bytes and fails past a limit. */
struct counting {
	size_t live;
	size_t limit; /* 0: none */
};

static void *counting_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
	struct counting *c = ud;

	if (nsize == 0) {
		if (ptr)
			c->live -= osize;
		free(ptr);
		return NULL;
	}
	size_t old = ptr ? osize : 0;
	if (c->limit && nsize > old && c->live - old + nsize > c->limit)
		return NULL;
	void *p = realloc(ptr, nsize);
	if (p)
		c->live = c->live - old + nsize;
	return p;
}

static const char PRELUDE[] =
	"function hex(s) return (string.gsub(s, '.', function(c) return string.format('%02x', "
	"string.byte(c)) end)) end\n"
	"function try(f, ...) local ok, e = pcall(f, ...) if ok then return 'ok' end return 'err:' .. "
	"tostring(e) end\n";

static lua_State *new_state(struct counting *c)
{
	lua_State *L = lua_newstate(counting_alloc, c);
	const lua_CFunction opens[] = { luaopen_base, luaopen_table, luaopen_string, luaopen_math };

	for (size_t i = 0; i < sizeof(opens) / sizeof(opens[0]); i++) {
		lua_pushcfunction(L, opens[i]);
		lua_call(L, 0, 0);
	}
	script_libs_open(L);
	if (luaL_dostring(L, PRELUDE) != 0)
		abort();
	return L;
}

/* Runs CHUNK in L; returns its string result (or "ERROR: <message>"),
 * copied into a static buffer. */
static const char *run(lua_State *L, const char *chunk)
{
	static char out[4096];
	size_t len;
	const char *s;

	if (luaL_loadstring(L, chunk) != 0 || lua_pcall(L, 0, 1, 0) != 0) {
		snprintf(out, sizeof(out), "ERROR: %s", lua_tostring(L, -1));
	} else {
		s = lua_tolstring(L, -1, &len);
		snprintf(out, sizeof(out), "%s", s ? s : "(not a string)");
	}
	lua_pop(L, 1);
	return out;
}

struct kase {
	const char *chunk;
	const char *want;
};

static const struct kase cases[] = {
	{ "return type(cjson) .. type(cmsgpack) .. type(struct) .. type(bit)", "tabletabletabletable" },
	/* cmsgpack: integers take the smallest encoding */
	{ "return hex(cmsgpack.pack(0, 127, 128, 255, 256, 65535, 65536))",
	  "007fcc80ccffcd0100cdffffce00010000" },
	{ "return hex(cmsgpack.pack(4294967295, 4294967296))", "ceffffffffcf0000000100000000" },
	{ "return hex(cmsgpack.pack(-1, -32, -33, -128, -129, -32768, -32769))",
	  "ffe0d0dfd080d1ff7fd18000d2ffff7fff" },
	{ "return hex(cmsgpack.pack(-2147483649))", "d3ffffffff7fffffff" },
	/* floats: 32 bits when exact, else 64; 2^63 is past int64 */
	{ "return hex(cmsgpack.pack(0.5, 1/0, 2^63))", "ca3f000000ca7f800000ca5f000000" },
	{ "return hex(cmsgpack.pack(0.1))", "cb3fb999999999999a" },
	/* strings */
	{ "return hex(cmsgpack.pack('', 'abc'))", "a0a3616263" },
	{ "return hex(cmsgpack.pack(string.rep('x', 31))):sub(1, 2)", "bf" },
	{ "return hex(cmsgpack.pack(string.rep('x', 32))):sub(1, 4)", "d920" },
	{ "return hex(cmsgpack.pack(string.rep('x', 256))):sub(1, 6)", "da0100" },
	{ "return hex(cmsgpack.pack(string.rep('x', 65536))):sub(1, 10)", "db00010000" },
	{ "return hex(cmsgpack.pack(true, false, nil, function() end))", "c3c2c0c0" },
	/* tables: arrays 1..n, everything else a map */
	{ "return hex(cmsgpack.pack({}, {1, 2}, {a = 1}))", "9092010281a16101" },
	{ "return hex(cmsgpack.pack({1, nil, 3}))", "8201010303" },
	{ "return hex(cmsgpack.pack({[0] = 1}, {[1.5] = 2}, {[0.1] = 3}))", "810001"
									    "81ca3fc0000002"
									    "81cb3fb999999999999a03" },
	{ "local t = {} for i = 1, 16 do t[i] = 0 end return hex(cmsgpack.pack(t)):sub(1, 8)", "dc001000" },
	/* nesting: level 16 is nil, cycles end there */
	{ "local t = {} local c = t for i = 1, 20 do c[1] = {} c = c[1] end return hex(cmsgpack.pack(t))",
	  "91919191919191919191919191919191c0" },
	{ "local t = {} t[1] = t return hex(cmsgpack.pack(t))", "91919191919191919191919191919191c0" },
	{ "return try(cmsgpack.pack)", "err:bad argument #0 to '?' (MessagePack pack needs input.)" },
	/* unpack */
	{ "local a, b, c = cmsgpack.unpack(cmsgpack.pack(1, 'x', {2, {3}})) return a .. b .. c[1] .. c[2][1]",
	  "1x23" },
	{ "local t = cmsgpack.unpack(cmsgpack.pack({k = 'v', [7] = true})) return t.k .. tostring(t[7])",
	  "vtrue" },
	{ "return tostring(cmsgpack.unpack('\\207\\128\\0\\0\\0\\0\\0\\0\\0'))", "-9.2233720368548e+18" },
	{ "return tostring(cmsgpack.unpack('\\211\\255\\255\\255\\255\\255\\255\\255\\255'))", "-1" },
	{ "return tostring(cmsgpack.unpack('\\209\\128\\1'))", "-32767" },
	{ "return tostring(cmsgpack.unpack('\\202\\63\\192\\0\\0'))", "1.5" },
	{ "return select('#', cmsgpack.unpack(''))", "0" },
	{ "return try(cmsgpack.unpack, '\\193')", "err:Bad data format in input." },
	{ "return try(cmsgpack.unpack, '\\196\\1a')", "err:Bad data format in input." },
	{ "return try(cmsgpack.unpack, '\\205\\1')", "err:Missing bytes in input." },
	{ "return try(cmsgpack.unpack, '\\147\\1\\2')", "err:Missing bytes in input." },
	{ "return try(cmsgpack.unpack, '\\129\\192\\1')", "err:table index is nil" },
	{ "return try(cmsgpack.unpack, string.rep('\\145', 10000))",
	  "err:stack overflow (in function mp_decode_to_lua_array)" },
	{ "local o, v = cmsgpack.unpack_one(cmsgpack.pack(1, 2)) return o .. ',' .. v", "1,1" },
	{ "local o, v = cmsgpack.unpack_one(cmsgpack.pack(1, 2), 1) return o .. ',' .. v", "-1,2" },
	{ "return select('#', cmsgpack.unpack_one(cmsgpack.pack(1, 2), 2))", "1" },
	{ "local o, a, b = cmsgpack.unpack_limit(cmsgpack.pack(1, 2, 3), 2) return o .. a .. b", "212" },
	/* a limit of 0 from offset 0 is "everything, no offset" */
	{ "return table.concat({cmsgpack.unpack_limit(cmsgpack.pack(1, 2, 3), 0)}, ',')", "1,2,3" },
	{ "return try(cmsgpack.unpack_one, '\\1\\2', 3)", "err:Start offset 3 greater than input length 2." },
	{ "return try(cmsgpack.unpack_limit, '\\1\\2\\3', -1)",
	  "err:Invalid request to unpack with offset of 0 and limit of 3." },
	/* struct */
	{ "return hex(struct.pack('>i2<i2', 258, 258))", "01020201" },
	{ "return hex(struct.pack('<bBhH', -1, 255, -2, 65534))", "ffff"
								  "feff"
								  "feff" },
	{ "return hex(struct.pack('>i3 I1', -2, 256))", "fffffe00" },
	{ "return hex(struct.pack('>I16', 1))", "00000000000000000000000000000001" },
	/* past 8 bytes the value is not sign-extended (Redis's long) */
	{ "return hex(struct.pack('<i16', -1))", "ffffffffffffffff0000000000000000" },
	{ "return hex(struct.pack('<!4 b i4 b h', 1, 2, 3, 4))", "01000000020000000300"
								 "0400" },
	{ "return hex(struct.pack('>f>d', 1.5, 0.1))", "3fc00000"
						       "3fb999999999999a" },
	{ "return hex(struct.pack('s c2 c0 x', 'ab', 'xyz', 'q'))", "616200"
								    "7879"
								    "71"
								    "00" },
	{ "return struct.size('!4 b i4') .. ' ' .. struct.size('b i4') .. ' ' .. struct.size('!8 b d')",
	  "8 5 16" },
	{ "return table.concat({struct.unpack('>i2 I2', '\\255\\254\\0\\5')}, ',')", "-2,5,5" },
	{ "return table.concat({struct.unpack('b c0 b', '\\3abc\\7')}, ',')", "abc,7,6" },
	{ "return table.concat({struct.unpack('s', 'ab\\0cd')}, ',')", "ab,4" },
	{ "return table.concat({struct.unpack('b', 'abc', 3)}, ',')", "99,4" },
	{ "return tostring(struct.unpack('>i16', string.rep('\\0', 8) .. '\\128' .. string.rep('\\0', 7)))",
	  "-9.2233720368548e+18" },
	{ "return try(struct.pack, '=i', 1)", "err:bad argument #1 to '?' (invalid format option '=')" },
	{ "return try(struct.pack, '!3 i', 1)", "err:alignment 3 is not a power of 2" },
	{ "return try(struct.pack, 'i33', 1)", "err:integral size 33 is larger than limit of 32" },
	{ "return try(struct.pack, 'i99999999999', 1)", "err:integral size overflow" },
	{ "return try(struct.pack, 'c5', 'abc')", "err:bad argument #3 to '?' (string too short)" },
	{ "return try(struct.pack, 'i', 'x')", "err:bad argument #2 to '?' (number expected, got string)" },
	{ "return try(struct.size, 's')", "err:bad argument #1 to '?' (option 's' has no fixed size)" },
	{ "return try(struct.size, 'c0')", "err:bad argument #1 to '?' (option 'c0' has no fixed size)" },
	{ "return try(struct.unpack, 's', 'ab')", "err:unfinished string in data" },
	{ "return try(struct.unpack, 'i4', 'ab')", "err:bad argument #2 to '?' (data string too short)" },
	{ "return try(struct.unpack, 'c0', 'ab')", "err:format 'c0' needs a previous size" },
	{ "return try(struct.unpack, 'b', 'a', 0)",
	  "err:bad argument #3 to '?' (offset must be 1 or greater)" },
	/* bit (Debian's lua-bitop) */
	{ "return bit.band(0xff, 0x0f) .. ' ' .. bit.tohex(255) .. ' ' .. bit.tobit(0xffffffff)",
	  "15 000000ff -1" },
	/* cjson (Debian's lua-cjson) as Redis configures it */
	{ "return cjson.encode({1, 2, 3}) .. cjson.encode({a = {true}}) .. cjson.encode(1/3)",
	  "[1,2,3]{\"a\":[true]}0.33333333333333" },
	{ "return tostring(cjson.decode('[1,{\"a\":null}]')[2].a == cjson.null)", "true" },
	{ "return cjson.decode('0x10') .. ' ' .. cjson.encode_number_precision()", "16 14" },
	{ "return try(cjson.encode, 0/0)", "err:Cannot serialise number: must not be NaN or Inf" },
	{ "return try(cjson.encode, {[20] = 1})", "err:Cannot serialise table: excessively sparse array" },
	{ "return cjson.encode(cjson.decode(string.rep('[', 1000) .. string.rep(']', 1000))):len()", "2000" },
	{ "return try(cjson.decode, string.rep('[', 1001) .. string.rep(']', 1001))",
	  "err:Found too many nested data structures (1001) at character 1001" },
	/* the guards around cjson (limit 65536 here): 6 bytes per string byte */
	{ "return #cjson.encode(string.rep('x', 10922))", "10924" },
	{ "return try(cjson.encode, string.rep('x', 10923))",
	  "err:Cannot serialise value: its encoding could pass 65536 bytes" },
	{ "local t = {} for i = 1, 1000 do t[i] = 'abcdefghij' end return try(cjson.encode, t)",
	  "err:Cannot serialise value: its encoding could pass 65536 bytes" },
	{ "return try(cjson.new().encode, {k = string.rep('x', 10923)})",
	  "err:Cannot serialise value: its encoding could pass 65536 bytes" },
	{ "return try(cjson.decode, '[' .. string.rep('1,', 33000) .. '1]')",
	  "err:Cannot decode JSON text of more than 65536 bytes" },
	{ "return try(cjson.new().new().decode, string.rep(' ', 70000) .. '1')",
	  "err:Cannot decode JSON text of more than 65536 bytes" },
	{ "return #cjson.decode('[' .. string.rep('1,', 1000) .. '1]')", "1001" },
	/* a cycle is still cjson's own error, found as fast as cjson finds it */
	{ "local t = {} t[1] = t t[2] = t t.x = t return try(cjson.encode, t)",
	  "err:Cannot serialise, excessive nesting (1001)" },
	{ "local ok, e = pcall(function() local r = cjson.decode('[1') return r end) return e",
	  "[string \"local ok, e = pcall(function() local r = cj...\"]:1: "
	  "Expected comma or array end but found T_END at character 3" },
	/* round trips between the libraries */
	{ "local v = cjson.decode('{\"l\":[1,2.5,\"s\"]}') local w = cmsgpack.unpack(cmsgpack.pack(v)) "
	  "return cjson.encode(w)",
	  "{\"l\":[1,2.5,\"s\"]}" },
	{ "local p = struct.pack('>I2 s', 7, 'hi') return hex(cmsgpack.unpack(cmsgpack.pack(p)))",
	  "0007686900" },
};

/* A memory error in the middle of a pack (cmsgpack's buffer) or of a
 * struct.pack must not leak: lua_close() returns every byte. */
static void test_no_leak(void)
{
	struct counting c = { 0, 0 };
	lua_State *L = new_state(&c);
	const char *r;

	c.limit = c.live + 256 * 1024;
	r = run(L, "local t = {} for i = 1, 1000 do t[i] = string.rep('x', 1000) .. i end "
		   "return try(cmsgpack.pack, t, t, t, t, t, t, t, t, t, t)");
	ok(strstr(r, "not enough memory") != NULL, "cmsgpack.pack past the memory limit fails (%s)", r);
	r = run(L,
		"return try(struct.pack, string.rep('c0', 300), string.rep('y', 4096), string.rep('y', 4096), "
		"string.rep('y', 100000), string.rep('y', 100000), string.rep('y', 100000))");
	ok(strstr(r, "not enough memory") != NULL, "struct.pack past the memory limit fails (%s)", r);
	c.limit = 0;
	is_str(run(L, "return hex(cmsgpack.pack({1}))"), "9101", "the state works after the memory errors");
	lua_close(L);
	is_int(c.live, 0, "every byte is freed at lua_close");
}

int main(void)
{
	struct counting c = { 0, 0 };
	lua_State *L = new_state(&c);

	lua_pushinteger(L, 42);
	int top = lua_gettop(L);
	script_libs_open(L);
	is_int(lua_gettop(L), top, "script_libs_open leaves the stack as it found it");
	lua_settop(L, 0);

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		is_str(run(L, cases[i].chunk), cases[i].want, "%s", cases[i].chunk);
	is_int(lua_gettop(L), 0, "the cases leave the stack empty");
	lua_close(L);
	is_int(c.live, 0, "no byte left after lua_close");
	test_no_leak();
	return done_testing();
}
