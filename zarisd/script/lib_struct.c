/* lib_struct — the `struct` library of scripts: Roberto Ierusalimschy's
 * struct.pack / struct.unpack / struct.size as Redis 7.0 ships it
 * (deps/lua/src/lua_struct.c, struct.c 1.7), written anew with the same
 * format language, bytes and error texts.
 *
 * Format: '>' big and '<' little endian (default native), '![n]' maximum
 * alignment n (a power of 2; bare '!' is the native maximum), ' ' ignored,
 * 'x' one zero byte, 'b'/'B' 'h'/'H' 'l'/'L' 'T' 'i[n]'/'I[n]' (n <= 32
 * bytes, default sizeof(int)) integers, 'f' 'd' floats, 'c[n]' n chars (n
 * 0: the whole string on pack, the previous number on unpack), 's' a
 * zero-terminated string. There is no '=' option in this version: it is an
 * invalid option, as in Redis. Numbers go through long (64 bits here), so
 * integer sizes past 8 bytes keep only the low 64 bits, as in Redis.
 * No state; any thread, on a state it owns.
 */
#include <ctype.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "zarisd/script/lualibs.h"

#define ST_MAXINTSIZE 32
#define ST_BIG 0
#define ST_LITTLE 1

/* The platform's strictest alignment (a double's, at least an int's), what
 * a bare '!' selects. */
struct st_align_probe {
	char c;
	double d;
};
#define ST_PADDING (offsetof(struct st_align_probe, d))
#define ST_MAXALIGN (ST_PADDING > sizeof(int) ? ST_PADDING : sizeof(int))

struct st_header {
	int endian; /* ST_BIG or ST_LITTLE */
	int align;  /* maximum alignment, a power of 2 */
};

static int st_native_endian(void)
{
	const uint16_t one = 1;
	unsigned char first;

	memcpy(&first, &one, 1);
	return first ? ST_LITTLE : ST_BIG;
}

static void st_defaults(struct st_header *h)
{
	h->endian = st_native_endian();
	h->align = 1;
}

/* Reads the decimal number at *FMT (advancing it), or returns DFLT when
 * there is none. */
static int st_getnum(lua_State *L, const char **fmt, int dflt)
{
	int a = 0;

	if (!isdigit((unsigned char)**fmt))
		return dflt;
	do {
		int digit = **fmt - '0';
		if (a > INT_MAX / 10 || a * 10 > INT_MAX - digit)
			luaL_error(L, "integral size overflow");
		a = a * 10 + digit;
		(*fmt)++;
	} while (isdigit((unsigned char)**fmt));
	return a;
}

/* The size of option OPT (reading its number from *FMT); 0 for options that
 * have none (controls, 's', unknown letters). */
static size_t st_optsize(lua_State *L, int opt, const char **fmt)
{
	int sz;

	switch (opt) {
	case 'b':
	case 'B':
		return sizeof(char);
	case 'h':
	case 'H':
		return sizeof(short);
	case 'l':
	case 'L':
		return sizeof(long);
	case 'T':
		return sizeof(size_t);
	case 'f':
		return sizeof(float);
	case 'd':
		return sizeof(double);
	case 'x':
		return 1;
	case 'c':
		return (size_t)st_getnum(L, fmt, 1);
	case 'i':
	case 'I':
		sz = st_getnum(L, fmt, sizeof(int));
		if (sz > ST_MAXINTSIZE)
			luaL_error(L, "integral size %d is larger than limit of %d", sz, ST_MAXINTSIZE);
		return (size_t)sz;
	default:
		return 0;
	}
}

/* Padding before an item of SIZE at offset LEN: items align to their size,
 * capped by the header's alignment; chars never align. This is Roberto's
 * formula, which for a size that is not a power of 2 gives odd paddings:
 * kept, since scripts see them. */
static size_t st_toalign(size_t len, const struct st_header *h, int opt, size_t size)
{
	if (size == 0 || opt == 'c')
		return 0;
	if (size > (size_t)h->align)
		size = (size_t)h->align;
	return (size - (len & (size - 1))) & (size - 1);
}

/* Applies a control option (endianness, alignment, space) or raises the
 * invalid-option argument error. */
static void st_control(lua_State *L, int opt, const char **fmt, struct st_header *h)
{
	int a;

	switch (opt) {
	case ' ':
		return;
	case '>':
		h->endian = ST_BIG;
		return;
	case '<':
		h->endian = ST_LITTLE;
		return;
	case '!':
		a = st_getnum(L, fmt, (int)ST_MAXALIGN);
		if (a <= 0 || (a & (a - 1)) != 0)
			luaL_error(L, "alignment %d is not a power of 2", a);
		h->align = a;
		return;
	default:
		luaL_argerror(L, 1, lua_pushfstring(L, "invalid format option '%c'", opt));
	}
}

/* double -> int64 as an x86-64 cvttsd2si does: out of range (NaN too)
 * gives INT64_MIN. Redis's struct converts with a plain C cast, whose
 * out-of-range result is that instruction's; here without the undefined
 * behaviour. */
static int64_t st_to_i64(double d)
{
	if (d >= -9223372036854775808.0 && d < 9223372036854775808.0)
		return (int64_t)d;
	return INT64_MIN;
}

/* double -> uint64 as gcc compiles the cast on x86-64: below 2^63 (NaN
 * included) the signed conversion, else the signed conversion of d - 2^63
 * with the top bit flipped (so 2^64 and up give 0). */
static uint64_t st_to_u64(double d)
{
	if (!(d >= 9223372036854775808.0))
		return (uint64_t)st_to_i64(d);
	return (uint64_t)st_to_i64(d - 9223372036854775808.0) ^ (UINT64_C(1) << 63);
}

/* Reverses the SIZE bytes at B unless ENDIAN is the native one. */
static void st_fix_order(unsigned char *b, size_t size, int endian)
{
	if (endian == st_native_endian())
		return;
	for (size_t i = 0, j = size - 1; i < j; i++, j--) {
		unsigned char t = b[i];
		b[i] = b[j];
		b[j] = t;
	}
}

static void st_put_int(lua_State *L, luaL_Buffer *b, int arg, int endian, size_t size)
{
	lua_Number n = luaL_checknumber(L, arg);
	uint64_t v = n < 0 ? (uint64_t)st_to_i64(n) : st_to_u64(n);
	unsigned char out[ST_MAXINTSIZE];

	/* Least significant byte first; bytes past the 8th are zero. */
	for (size_t i = 0; i < size; i++) {
		out[endian == ST_LITTLE ? i : size - 1 - i] = (unsigned char)(v & 0xff);
		v >>= 8;
	}
	luaL_addlstring(b, (const char *)out, size);
}

static int st_pack(lua_State *L)
{
	const char *fmt = luaL_checkstring(L, 1);
	struct st_header h;
	luaL_Buffer b;
	size_t total = 0;
	int arg = 2;

	st_defaults(&h);
	lua_pushnil(L); /* keeps the buffer's pieces apart from the arguments */
	luaL_buffinit(L, &b);
	while (*fmt) {
		int opt = (unsigned char)*fmt++;
		size_t size = st_optsize(L, opt, &fmt);
		size_t pad = st_toalign(total, &h, opt, size);

		total += pad;
		while (pad-- > 0)
			luaL_addchar(&b, '\0');
		switch (opt) {
		case 'b':
		case 'B':
		case 'h':
		case 'H':
		case 'l':
		case 'L':
		case 'T':
		case 'i':
		case 'I':
			st_put_int(L, &b, arg++, h.endian, size);
			break;
		case 'x':
			luaL_addchar(&b, '\0');
			break;
		case 'f': {
			float f = (float)luaL_checknumber(L, arg++);
			st_fix_order((unsigned char *)&f, sizeof(f), h.endian);
			luaL_addlstring(&b, (const char *)&f, sizeof(f));
			break;
		}
		case 'd': {
			double d = luaL_checknumber(L, arg++);
			st_fix_order((unsigned char *)&d, sizeof(d), h.endian);
			luaL_addlstring(&b, (const char *)&d, sizeof(d));
			break;
		}
		case 'c':
		case 's': {
			size_t l;
			const char *s = luaL_checklstring(L, arg++, &l);
			if (size == 0)
				size = l;
			/* Redis names the argument after this one. */
			luaL_argcheck(L, l >= size, arg, "string too short");
			luaL_addlstring(&b, s, size);
			if (opt == 's') {
				luaL_addchar(&b, '\0');
				size++;
			}
			break;
		}
		default:
			st_control(L, opt, &fmt, &h);
		}
		total += size;
	}
	luaL_pushresult(&b);
	return 1;
}

/* The SIZE-byte integer at P: only the last 8 bytes read count. A signed
 * one is sign-extended from bit size*8-1, the shift taken modulo 64 as the
 * x86 shift instruction Redis's build uses does (sizes 0 and past 8). */
static lua_Number st_get_int(const unsigned char *p, int endian, int is_signed, size_t size)
{
	uint64_t v = 0;

	for (size_t i = 0; i < size; i++)
		v = v << 8 | p[endian == ST_BIG ? i : size - 1 - i];
	if (!is_signed)
		return (lua_Number)v;
	uint64_t mask = ~UINT64_C(0) << ((size * 8 - 1) & 63);
	if (v & mask)
		v |= mask;
	return (lua_Number)(int64_t)v;
}

static int st_unpack(lua_State *L)
{
	const char *fmt = luaL_checkstring(L, 1);
	size_t ld;
	const unsigned char *data = (const unsigned char *)luaL_checklstring(L, 2, &ld);
	size_t pos = (size_t)luaL_optinteger(L, 3, 1);
	struct st_header h;
	int n = 0;

	luaL_argcheck(L, pos > 0, 3, "offset must be 1 or greater");
	pos--;
	st_defaults(&h);
	while (*fmt) {
		int opt = (unsigned char)*fmt++;
		size_t size = st_optsize(L, opt, &fmt);

		pos += st_toalign(pos, &h, opt, size);
		luaL_argcheck(L, size <= ld && pos <= ld - size, 2, "data string too short");
		luaL_checkstack(L, 2, "too many results");
		switch (opt) {
		case 'b':
		case 'B':
		case 'h':
		case 'H':
		case 'l':
		case 'L':
		case 'T':
		case 'i':
		case 'I':
			lua_pushnumber(L, st_get_int(data + pos, h.endian, islower(opt), size));
			n++;
			break;
		case 'x':
			break;
		case 'f': {
			float f;
			memcpy(&f, data + pos, sizeof(f));
			st_fix_order((unsigned char *)&f, sizeof(f), h.endian);
			lua_pushnumber(L, f);
			n++;
			break;
		}
		case 'd': {
			double d;
			memcpy(&d, data + pos, sizeof(d));
			st_fix_order((unsigned char *)&d, sizeof(d), h.endian);
			lua_pushnumber(L, d);
			n++;
			break;
		}
		case 'c':
			if (size == 0) {
				if (n == 0 || !lua_isnumber(L, -1))
					luaL_error(L, "format 'c0' needs a previous size");
				size = (size_t)st_to_u64(lua_tonumber(L, -1));
				lua_pop(L, 1);
				n--;
				luaL_argcheck(L, size <= ld && pos <= ld - size, 2, "data string too short");
			}
			lua_pushlstring(L, (const char *)data + pos, size);
			n++;
			break;
		case 's': {
			const unsigned char *e = memchr(data + pos, '\0', ld - pos);
			if (!e)
				luaL_error(L, "unfinished string in data");
			size = (size_t)(e - (data + pos)) + 1;
			lua_pushlstring(L, (const char *)data + pos, size - 1);
			n++;
			break;
		}
		default:
			st_control(L, opt, &fmt, &h);
		}
		pos += size;
	}
	lua_pushinteger(L, (lua_Integer)(pos + 1));
	return n + 1;
}

static int st_size(lua_State *L)
{
	const char *fmt = luaL_checkstring(L, 1);
	struct st_header h;
	size_t pos = 0;

	st_defaults(&h);
	while (*fmt) {
		int opt = (unsigned char)*fmt++;
		size_t size = st_optsize(L, opt, &fmt);

		pos += st_toalign(pos, &h, opt, size);
		if (opt == 's')
			luaL_argerror(L, 1, "option 's' has no fixed size");
		else if (opt == 'c' && size == 0)
			luaL_argerror(L, 1, "option 'c0' has no fixed size");
		/* Unknown letters pass silently here, as in Redis. */
		if (!isalnum(opt))
			st_control(L, opt, &fmt, &h);
		pos += size;
	}
	lua_pushinteger(L, (lua_Integer)pos);
	return 1;
}

int script_open_struct(lua_State *L)
{
	static const luaL_Reg fns[] = {
		{ "pack", st_pack },
		{ "unpack", st_unpack },
		{ "size", st_size },
		{ NULL, NULL },
	};

	luaL_register(L, "struct", fns);
	return 1;
}
