/* lib_cmsgpack — the `cmsgpack` library of scripts: MessagePack encoding of
 * Lua values with the API, the bytes and the error texts of lua-cmsgpack
 * 0.4.0 as Redis 7.0 ships it (deps/lua/src/lua_cmsgpack.c), written anew.
 *
 * What scripts can observe, and so what this file keeps:
 *  - pack(v1, ...) encodes each argument and returns the concatenation; no
 *    argument is an argument error. Numbers that are whole and fit int64
 *    take the smallest integer encoding, others float 32 when the value
 *    survives the narrowing (infinities do, NaN does not), else float 64.
 *    Strings use fixstr / str8 / str16 / str32. A table whose keys are
 *    exactly the integers 1..n (n fitting an int, n = 0 included) is an
 *    array, any other a map in lua_next order; a table at nesting level 16
 *    (the top value is level 0) and every value of another type (nil,
 *    functions, userdata such as cjson.null) encode as nil.
 *  - unpack(s) returns every value of the stream; unpack_one(s[, off]) and
 *    unpack_limit(s, n[, off]) return the offset to read on from (-1 once
 *    the input is used up) followed by the values. As in Redis, a limit of 0
 *    with offset 0 means "all, no offset". uint 64 values past 2^63 come back
 *    negative (Lua 5.1's lua_Integer is signed); int 64 comes back as a
 *    double; bin, ext, fixext and 0xc1 are a format error; arrays and maps
 *    nest until the Lua stack says no.
 * No state: every call works on its own buffer, so any thread may run it on
 * a state it owns.
 */
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "zarisd/script/lualibs.h"

#define MP_MAX_NESTING 16 /* tables deeper than this encode as nil (cycles) */
#define MP_BUF_META "zaris.cmsgpack.buf"

/* The encoder's output. Lives in a userdata so that a Lua error in the
 * middle of an encoding (a memory error) still frees the bytes: the
 * userdata's __gc does. Invariant: len <= cap; b is NULL iff cap == 0. */
struct mp_buf {
	unsigned char *b;
	size_t len;
	size_t cap;
	lua_State *L; /* whose allocator owns b */
};

static int mp_buf_gc(lua_State *L)
{
	struct mp_buf *buf = lua_touserdata(L, 1);
	void *ud;
	lua_Alloc alloc = lua_getallocf(L, &ud);

	if (buf->b)
		alloc(ud, buf->b, buf->cap, 0);
	buf->b = NULL;
	buf->len = buf->cap = 0;
	return 0;
}

/* Pushes a new, empty buffer userdata and returns it. */
static struct mp_buf *mp_buf_push(lua_State *L)
{
	struct mp_buf *buf = lua_newuserdata(L, sizeof(*buf));

	buf->b = NULL;
	buf->len = buf->cap = 0;
	buf->L = L;
	if (luaL_newmetatable(L, MP_BUF_META)) {
		lua_pushcfunction(L, mp_buf_gc);
		lua_setfield(L, -2, "__gc");
	}
	lua_setmetatable(L, -2);
	return buf;
}

static void mp_put(struct mp_buf *buf, const void *p, size_t n)
{
	if (buf->cap - buf->len < n) {
		size_t want = buf->len + n;
		size_t cap = buf->cap ? buf->cap : 64;
		void *ud;
		lua_Alloc alloc = lua_getallocf(buf->L, &ud);
		unsigned char *nb;

		if (want < buf->len || want > SIZE_MAX / 2)
			luaL_error(buf->L, "MessagePack buffer overflow");
		while (cap < want)
			cap *= 2;
		nb = alloc(ud, buf->b, buf->cap, cap);
		if (!nb)
			luaL_error(buf->L, "not enough memory");
		buf->b = nb;
		buf->cap = cap;
	}
	memcpy(buf->b + buf->len, p, n);
	buf->len += n;
}

/* Writes the type byte T followed by the low NBYTES bytes of V, big endian. */
static void mp_put_be(struct mp_buf *buf, unsigned char t, uint64_t v, int nbytes)
{
	unsigned char out[9];

	out[0] = t;
	for (int i = 0; i < nbytes; i++)
		out[1 + i] = (unsigned char)(v >> (8 * (nbytes - 1 - i)));
	mp_put(buf, out, 1 + (size_t)nbytes);
}

static void mp_put_int(struct mp_buf *buf, int64_t n)
{
	unsigned char one;

	if (n >= 0) {
		if (n <= 127) {
			one = (unsigned char)n;
			mp_put(buf, &one, 1);
		} else if (n <= 0xff) {
			mp_put_be(buf, 0xcc, (uint64_t)n, 1);
		} else if (n <= 0xffff) {
			mp_put_be(buf, 0xcd, (uint64_t)n, 2);
		} else if (n <= 0xffffffffLL) {
			mp_put_be(buf, 0xce, (uint64_t)n, 4);
		} else {
			mp_put_be(buf, 0xcf, (uint64_t)n, 8);
		}
	} else if (n >= -32) {
		one = (unsigned char)(0xe0 | (n & 0x1f));
		mp_put(buf, &one, 1);
	} else if (n >= -128) {
		mp_put_be(buf, 0xd0, (uint64_t)n, 1);
	} else if (n >= -32768) {
		mp_put_be(buf, 0xd1, (uint64_t)n, 2);
	} else if (n >= INT32_MIN) {
		mp_put_be(buf, 0xd2, (uint64_t)n, 4);
	} else {
		mp_put_be(buf, 0xd3, (uint64_t)n, 8);
	}
}

/* Float 32 when the narrowing gives the value back (infinities do, NaN
 * never), else float 64. A double past float's range narrows to an
 * infinity (IEC 60559, which gcc and glibc follow: Annex F). */
static void mp_put_double(struct mp_buf *buf, double d)
{
	float f = (float)d;
	uint64_t bits;

	if ((double)f == d) {
		uint32_t fb;
		memcpy(&fb, &f, 4);
		mp_put_be(buf, 0xca, fb, 4);
		return;
	}
	memcpy(&bits, &d, 8);
	mp_put_be(buf, 0xcb, bits, 8);
}

/* A header of a string, array or map of N elements: the fix form (T_FIX |
 * n, up to FIXMAX), then the 8 (strings only: T8 != 0), 16 and 32 bit forms.
 * Lengths past 32 bits are written truncated, as Redis does. */
static void mp_put_header(struct mp_buf *buf, size_t n, unsigned char t_fix, size_t fixmax, unsigned char t8,
			  unsigned char t16, unsigned char t32)
{
	unsigned char one;

	if (n <= fixmax) {
		one = (unsigned char)(t_fix | n);
		mp_put(buf, &one, 1);
	} else if (t8 && n <= 0xff) {
		mp_put_be(buf, t8, n, 1);
	} else if (n <= 0xffff) {
		mp_put_be(buf, t16, n, 2);
	} else {
		mp_put_be(buf, t32, n & 0xffffffffu, 4);
	}
}

/* True when the number is whole and in int64's range: what Redis's
 * IS_INT64_EQUIVALENT gives on x86-64, where an out-of-range conversion
 * yields INT64_MIN (never equal to the value); written without that
 * undefined conversion. */
static int is_int64(double n)
{
	return n >= -9223372036854775808.0 && n < 9223372036854775808.0 && (double)(int64_t)n == n;
}

/* Redis's array test: every key a number n with 0 < n <= INT_MAX, n whole,
 * and the largest equal to the count (so the keys are 1..count). */
static int table_is_array(lua_State *L)
{
	int top = lua_gettop(L);
	int count = 0, max = 0;

	luaL_checkstack(L, 2, "in function table_is_an_array");
	lua_pushnil(L);
	while (lua_next(L, -2)) {
		double n;
		lua_pop(L, 1);
		if (lua_type(L, -1) != LUA_TNUMBER || (n = lua_tonumber(L, -1)) <= 0 || n > INT_MAX ||
		    (double)(int)n != n) {
			lua_settop(L, top);
			return 0;
		}
		if ((int)n > max)
			max = (int)n;
		count++;
	}
	lua_settop(L, top);
	return max == count;
}

static void mp_encode_top(lua_State *L, struct mp_buf *buf, int level);

static void mp_encode_table(lua_State *L, struct mp_buf *buf, int level)
{
	if (table_is_array(L)) {
		size_t len = lua_objlen(L, -1);

		mp_put_header(buf, len, 0x90, 15, 0, 0xdc, 0xdd);
		luaL_checkstack(L, 1, "in function mp_encode_lua_table_as_array");
		for (size_t j = 1; j <= len; j++) {
			lua_pushnumber(L, (lua_Number)j);
			lua_gettable(L, -2);
			mp_encode_top(L, buf, level + 1);
		}
		return;
	}
	size_t pairs = 0;

	luaL_checkstack(L, 3, "in function mp_encode_lua_table_as_map");
	lua_pushnil(L);
	while (lua_next(L, -2)) {
		lua_pop(L, 1);
		pairs++;
	}
	mp_put_header(buf, pairs, 0x80, 15, 0, 0xde, 0xdf);
	lua_pushnil(L);
	while (lua_next(L, -2)) {
		lua_pushvalue(L, -2);
		mp_encode_top(L, buf, level + 1); /* the key (copy), popped */
		mp_encode_top(L, buf, level + 1); /* the value, popped */
	}
}

/* Encodes the value at the top of the stack and pops it. */
static void mp_encode_top(lua_State *L, struct mp_buf *buf, int level)
{
	int t = lua_type(L, -1);
	unsigned char one;

	if (t == LUA_TTABLE && level == MP_MAX_NESTING)
		t = LUA_TNIL;
	switch (t) {
	case LUA_TSTRING: {
		size_t len;
		const char *s = lua_tolstring(L, -1, &len);
		mp_put_header(buf, len, 0xa0, 31, 0xd9, 0xda, 0xdb);
		mp_put(buf, s, len);
		break;
	}
	case LUA_TBOOLEAN:
		one = lua_toboolean(L, -1) ? 0xc3 : 0xc2;
		mp_put(buf, &one, 1);
		break;
	case LUA_TNUMBER: {
		double n = lua_tonumber(L, -1);
		if (is_int64(n))
			mp_put_int(buf, (int64_t)n);
		else
			mp_put_double(buf, n);
		break;
	}
	case LUA_TTABLE:
		mp_encode_table(L, buf, level);
		break;
	default:
		one = 0xc0;
		mp_put(buf, &one, 1);
		break;
	}
	lua_pop(L, 1);
}

static int mp_pack(lua_State *L)
{
	int nargs = lua_gettop(L);
	struct mp_buf *buf;

	if (nargs == 0)
		return luaL_argerror(L, 0, "MessagePack pack needs input.");
	if (!lua_checkstack(L, nargs))
		return luaL_argerror(L, 0, "Too many arguments for MessagePack pack.");
	/* As in Redis, each argument's bytes become a string on the stack and
	 * the strings are concatenated at the end, so that a stack limit is hit
	 * where Redis hits it (give or take the buffer's one slot). */
	buf = mp_buf_push(L);
	for (int i = 1; i <= nargs; i++) {
		luaL_checkstack(L, 1, "in function mp_check");
		lua_pushvalue(L, i);
		mp_encode_top(L, buf, 0);
		lua_pushlstring(L, (const char *)buf->b, buf->len);
		buf->len = 0;
	}
	lua_concat(L, nargs);
	return 1;
}

/* The decoder's position. Invariant: left bytes remain at p. */
struct mp_cur {
	const unsigned char *p;
	size_t left;
	int err; /* MP_ERR_* */
};

enum {
	MP_ERR_NONE,
	MP_ERR_EOF,
	MP_ERR_BADFMT
};

/* The unsigned big-endian number of N bytes at P. */
static uint64_t be_get(const unsigned char *p, int n)
{
	uint64_t v = 0;

	for (int i = 0; i < n; i++)
		v = v << 8 | p[i];
	return v;
}

/* Takes N bytes off the cursor, or sets the EOF error and returns NULL. */
static const unsigned char *mp_take(struct mp_cur *c, size_t n)
{
	const unsigned char *p = c->p;

	if (c->left < n) {
		c->err = MP_ERR_EOF;
		return NULL;
	}
	c->p += n;
	c->left -= n;
	return p;
}

static void mp_decode_one(lua_State *L, struct mp_cur *c);

/* Decodes N values (MAP: N key/value pairs) into a new table, pushed; stops
 * at the first error, leaving what it pushed for the caller's error. */
static void mp_decode_table(lua_State *L, struct mp_cur *c, size_t n, int map)
{
	lua_newtable(L);
	/* Redis checks here for arrays only (a map's values meet the check of
	 * mp_decode_one); the text, which a script sees, is Redis's. */
	if (!map)
		luaL_checkstack(L, 1, "in function mp_decode_to_lua_array");
	for (size_t i = 1; i <= n; i++) {
		if (map) {
			mp_decode_one(L, c);
			if (c->err)
				return;
		} else {
			lua_pushnumber(L, (lua_Number)i);
		}
		mp_decode_one(L, c);
		if (c->err)
			return;
		lua_settable(L, -3);
	}
}

/* Pushes the string of the length held in the LENBYTES bytes after the type
 * byte (0: in the type byte's low 5 bits). */
static void mp_decode_str(lua_State *L, struct mp_cur *c, int lenbytes)
{
	const unsigned char *h = mp_take(c, 1 + (size_t)lenbytes);
	const unsigned char *s;
	size_t len;

	if (!h)
		return;
	len = lenbytes ? (size_t)be_get(h + 1, lenbytes) : (size_t)(h[0] & 0x1f);
	if (!(s = mp_take(c, len)))
		return;
	lua_pushlstring(L, (const char *)s, len);
}

/* Pushes the number of NBYTES bytes after the type byte: signed (SIGNED) or
 * not; int 64 as a double, uint 64 wrapping into lua_Integer, as Redis. */
static void mp_decode_num(lua_State *L, struct mp_cur *c, int nbytes, int is_signed)
{
	const unsigned char *h = mp_take(c, 1 + (size_t)nbytes);
	uint64_t v;

	if (!h)
		return;
	v = be_get(h + 1, nbytes);
	if (!is_signed) {
		lua_pushinteger(L, (lua_Integer)v);
		return;
	}
	switch (nbytes) {
	case 1:
		lua_pushinteger(L, (int8_t)v);
		break;
	case 2:
		lua_pushinteger(L, (int16_t)v);
		break;
	case 4:
		lua_pushinteger(L, (int32_t)v);
		break;
	default:
		lua_pushnumber(L, (lua_Number)(int64_t)v);
		break;
	}
}

/* The array or map whose count is in the NBYTES bytes after the type byte. */
static void mp_decode_sized_table(lua_State *L, struct mp_cur *c, int nbytes, int map)
{
	const unsigned char *h = mp_take(c, 1 + (size_t)nbytes);

	if (h)
		mp_decode_table(L, c, (size_t)be_get(h + 1, nbytes), map);
}

/* Decodes one value at the cursor and pushes it; on error sets c->err. */
static void mp_decode_one(lua_State *L, struct mp_cur *c)
{
	unsigned char t;

	if (c->left < 1) {
		c->err = MP_ERR_EOF;
		return;
	}
	/* A stream may hold any number of top-level values: ask for one more
	 * slot each time (Lua doubles the stack when it grows it). */
	luaL_checkstack(L, 1, "too many return values at once; use unpack_one or unpack_limit instead.");
	t = c->p[0];
	if (t <= 0x7f || t >= 0xe0) {
		mp_take(c, 1);
		lua_pushinteger(L, t <= 0x7f ? t : (int8_t)t);
		return;
	}
	if ((t & 0xe0) == 0xa0) {
		mp_decode_str(L, c, 0);
		return;
	}
	if ((t & 0xf0) == 0x90 || (t & 0xf0) == 0x80) {
		mp_take(c, 1);
		mp_decode_table(L, c, t & 0x0f, (t & 0xf0) == 0x80);
		return;
	}
	switch (t) {
	case 0xc0:
	case 0xc2:
	case 0xc3:
		mp_take(c, 1);
		if (t == 0xc0)
			lua_pushnil(L);
		else
			lua_pushboolean(L, t == 0xc3);
		break;
	case 0xcc:
	case 0xcd:
	case 0xce:
	case 0xcf:
		mp_decode_num(L, c, 1 << (t - 0xcc), 0);
		break;
	case 0xd0:
	case 0xd1:
	case 0xd2:
	case 0xd3:
		mp_decode_num(L, c, 1 << (t - 0xd0), 1);
		break;
	case 0xca: {
		const unsigned char *h = mp_take(c, 5);
		uint32_t fb;
		float f;
		if (!h)
			break;
		fb = (uint32_t)be_get(h + 1, 4);
		memcpy(&f, &fb, 4);
		lua_pushnumber(L, f);
		break;
	}
	case 0xcb: {
		const unsigned char *h = mp_take(c, 9);
		uint64_t db;
		double d;
		if (!h)
			break;
		db = be_get(h + 1, 8);
		memcpy(&d, &db, 8);
		lua_pushnumber(L, d);
		break;
	}
	case 0xd9:
		mp_decode_str(L, c, 1);
		break;
	case 0xda:
		mp_decode_str(L, c, 2);
		break;
	case 0xdb:
		mp_decode_str(L, c, 4);
		break;
	case 0xdc:
	case 0xdd:
		mp_decode_sized_table(L, c, t == 0xdc ? 2 : 4, 0);
		break;
	case 0xde:
	case 0xdf:
		mp_decode_sized_table(L, c, t == 0xde ? 2 : 4, 1);
		break;
	default:
		c->err = MP_ERR_BADFMT;
		break;
	}
}

/* The three unpackers: the string at 1, at most LIMIT values from OFFSET.
 * LIMIT 0 with OFFSET 0 decodes everything and returns no offset. */
static int mp_unpack_from(lua_State *L, lua_Integer limit, lua_Integer offset)
{
	size_t len;
	const char *s = luaL_checklstring(L, 1, &len);
	int all = limit == 0 && offset == 0;
	struct mp_cur c;
	int n;

	/* Redis prints the input's length where it means the limit. */
	if (offset < 0 || limit < 0)
		return luaL_error(L, "Invalid request to unpack with offset of %d and limit of %d.",
				  (int)offset, (int)len);
	if ((size_t)offset > len)
		return luaL_error(L, "Start offset %d greater than input length %d.", (int)offset, (int)len);
	if (all)
		limit = INT_MAX;
	c.p = (const unsigned char *)s + offset;
	c.left = len - (size_t)offset;
	c.err = MP_ERR_NONE;
	for (n = 0; c.left > 0 && n < limit; n++) {
		mp_decode_one(L, &c);
		if (c.err == MP_ERR_EOF)
			return luaL_error(L, "Missing bytes in input.");
		if (c.err == MP_ERR_BADFMT)
			return luaL_error(L, "Bad data format in input.");
	}
	if (all)
		return n;
	luaL_checkstack(L, 1, "in function mp_unpack_full");
	lua_pushinteger(L, c.left == 0 ? -1 : (lua_Integer)(len - c.left));
	lua_insert(L, 2);
	return n + 1;
}

static int mp_unpack(lua_State *L)
{
	return mp_unpack_from(L, 0, 0);
}

static int mp_unpack_one(lua_State *L)
{
	lua_Integer offset = luaL_optinteger(L, 2, 0);

	lua_settop(L, 1);
	return mp_unpack_from(L, 1, offset);
}

static int mp_unpack_limit(lua_State *L)
{
	lua_Integer limit = luaL_checkinteger(L, 2);
	lua_Integer offset = luaL_optinteger(L, 3, 0);

	lua_settop(L, 1);
	return mp_unpack_from(L, limit, offset);
}

int script_open_cmsgpack(lua_State *L)
{
	static const luaL_Reg fns[] = {
		{ "pack", mp_pack },
		{ "unpack", mp_unpack },
		{ "unpack_one", mp_unpack_one },
		{ "unpack_limit", mp_unpack_limit },
	};

	lua_createtable(L, 0, 6);
	for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); i++) {
		lua_pushcfunction(L, fns[i].func);
		lua_setfield(L, -2, fns[i].name);
	}
	lua_pushliteral(L, "cmsgpack");
	lua_setfield(L, -2, "_NAME");
	lua_pushliteral(L, "lua-cmsgpack 0.4.0");
	lua_setfield(L, -2, "_VERSION");
	lua_pushvalue(L, -1);
	lua_setglobal(L, "cmsgpack");
	return 1;
}
