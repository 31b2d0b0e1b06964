/* lualibs — opens the libraries of a script's state (contract in lualibs.h).
 *
 * Redis calls each luaopen_* with the library name as its one argument and
 * drops what it returns; lua-bitop and our struct register their global
 * themselves (luaL_register), Redis builds its cjson with
 * ENABLE_CJSON_GLOBAL and its cmsgpack sets the global on Lua 5.1. Debian
 * builds lua-cjson without that flag, so the global is set here. Debian's
 * cjson is the same 2.1.0 as Redis's with the same defaults (precision 14,
 * encode_invalid_numbers off, decode_invalid_numbers on, depth 1000, sparse
 * ratio 2 safe 10, keep buffer on); they are set explicitly anyway, so that
 * a distribution patch changing a default cannot change what scripts see.
 *
 * What Debian's cjson lacks is Redis's fix for CVE-2022-24834: its string
 * buffer counts in int, so an encoding whose buffer would pass 2^31 bytes
 * (cjson reserves 6 bytes per input byte of a string) overflows the heap,
 * and its decoder keeps lengths and positions in int too. cjson.encode and
 * cjson.decode (and those of cjson.new() instances) are therefore guards
 * around Debian's: encode first bounds the encoding's worst-case size by a
 * walk of the value, decode the input's length, and refuse past 1 GiB with
 * an error (Redis would go on). The guards check the arguments as cjson
 * does and re-raise cjson's errors with the caller's position, so that
 * scripts see Redis's texts.
 */
#include <lauxlib.h>
#include <lua-bitop.h>
#include <lua-cjson.h>
#include <stddef.h>

#include "zarisd/script/lualibs.h"

/* The largest encoding (worst case) or decoding input the guards pass.
 * cjson's buffer doubles until it holds a request, so a request of at most
 * 2^30 leaves it under 2^31, where Debian's int sizes overflow. */
#ifndef ZR_CJSON_MAX_BYTES
#define ZR_CJSON_MAX_BYTES ((size_t)1 << 30)
#endif
#define CJSON_MAX_DEPTH 1000 /* cjson's own nesting limit, set below */

/* Calls the lua_CFunction OPEN with NAME as its argument, as Redis's
 * luaLoadLib does, discarding its results. */
static void open_one(lua_State *L, const char *name, lua_CFunction open)
{
	lua_pushcfunction(L, open);
	lua_pushstring(L, name);
	lua_call(L, 1, 0);
}

/* Calls cjson.<FN>(arguments) on the cjson table at the top of the stack:
 * FMT has one letter per argument, 'b' a boolean, 'i' an integer, taken in
 * order from VALS. */
static void cjson_set(lua_State *L, const char *fn, const char *fmt, const int *vals)
{
	int n = 0;

	lua_getfield(L, -1, fn);
	for (; fmt[n]; n++) {
		if (fmt[n] == 'b')
			lua_pushboolean(L, vals[n]);
		else
			lua_pushinteger(L, vals[n]);
	}
	lua_call(L, n, 0);
}

/* Adds to *EST the worst-case bytes cjson's encoder reserves for the value
 * at IDX (strings 6 per byte plus quotes, as json_append_string reserves;
 * anything else a generous 32; 2 per table item for separators). Walks as
 * cjson does (raw, depth first) and stops, returning 0, where cjson would
 * stop by itself (nesting past its limit, no stack) or once *EST passes the
 * limit; returns 1 otherwise. */
static int cjson_estimate(lua_State *L, int idx, int depth, size_t *est)
{
	size_t len;

	switch (lua_type(L, idx)) {
	case LUA_TSTRING:
		lua_tolstring(L, idx, &len);
		if (len > ZR_CJSON_MAX_BYTES)
			*est = ZR_CJSON_MAX_BYTES + 1;
		else
			*est += 6 * len + 2;
		break;
	case LUA_TTABLE:
		if (depth > CJSON_MAX_DEPTH || !lua_checkstack(L, 3))
			return 0;
		idx = idx < 0 ? lua_gettop(L) + idx + 1 : idx;
		lua_pushnil(L);
		while (lua_next(L, idx)) {
			*est += 2;
			if (!cjson_estimate(L, -2, depth + 1, est) ||
			    !cjson_estimate(L, -1, depth + 1, est)) {
				lua_pop(L, 2);
				return 0;
			}
			lua_pop(L, 1);
		}
		break;
	default:
		*est += 32;
		break;
	}
	return *est <= ZR_CJSON_MAX_BYTES;
}

/* Calls the guarded function (upvalue 1) on the arguments; a Lua error it
 * raises comes back with the caller's position, as if raised here. */
static int cjson_call_guarded(lua_State *L)
{
	int status;

	lua_pushvalue(L, lua_upvalueindex(1));
	lua_insert(L, 1);
	status = lua_pcall(L, lua_gettop(L) - 1, LUA_MULTRET, 0);
	if (status == 0)
		return lua_gettop(L);
	if (status == LUA_ERRRUN && lua_type(L, -1) == LUA_TSTRING) {
		luaL_where(L, 1);
		lua_insert(L, -2);
		lua_concat(L, 2);
	}
	return lua_error(L);
}

static int cjson_encode_guard(lua_State *L)
{
	size_t est = 0;

	luaL_argcheck(L, lua_gettop(L) == 1, 1, "expected 1 argument");
	if (!cjson_estimate(L, 1, 1, &est) && est > ZR_CJSON_MAX_BYTES)
		return luaL_error(L, "Cannot serialise value: its encoding could pass %d bytes",
				  (int)ZR_CJSON_MAX_BYTES);
	return cjson_call_guarded(L);
}

static int cjson_decode_guard(lua_State *L)
{
	size_t len;

	luaL_argcheck(L, lua_gettop(L) == 1, 1, "expected 1 argument");
	luaL_checklstring(L, 1, &len);
	if (len > ZR_CJSON_MAX_BYTES)
		return luaL_error(L, "Cannot decode JSON text of more than %d bytes",
				  (int)ZR_CJSON_MAX_BYTES);
	return cjson_call_guarded(L);
}

static void cjson_guard_table(lua_State *L);

/* cjson.new(): a new instance, its functions guarded too. */
static int cjson_new_guard(lua_State *L)
{
	lua_pushvalue(L, lua_upvalueindex(1));
	lua_call(L, 0, 1);
	cjson_guard_table(L);
	return 1;
}

/* Replaces encode, decode and new of the cjson table at the top of the
 * stack with their guards (each holding the original as its upvalue). */
static void cjson_guard_table(lua_State *L)
{
	static const struct {
		const char *name;
		lua_CFunction guard;
	} guards[] = {
		{ "encode", cjson_encode_guard },
		{ "decode", cjson_decode_guard },
		{ "new", cjson_new_guard },
	};

	for (size_t i = 0; i < sizeof(guards) / sizeof(guards[0]); i++) {
		lua_getfield(L, -1, guards[i].name);
		lua_pushcclosure(L, guards[i].guard, 1);
		lua_setfield(L, -2, guards[i].name);
	}
}

static void open_cjson(lua_State *L)
{
	lua_pushcfunction(L, luaopen_cjson);
	lua_pushstring(L, "cjson");
	lua_call(L, 1, 1);
	cjson_set(L, "encode_number_precision", "i", (const int[]){ 14 });
	cjson_set(L, "encode_max_depth", "i", (const int[]){ 1000 });
	cjson_set(L, "decode_max_depth", "i", (const int[]){ 1000 });
	/* convert off, ratio 2, safe 10 */
	cjson_set(L, "encode_sparse_array", "bii", (const int[]){ 0, 2, 10 });
	cjson_set(L, "encode_invalid_numbers", "b", (const int[]){ 0 });
	cjson_set(L, "decode_invalid_numbers", "b", (const int[]){ 1 });
	cjson_set(L, "encode_keep_buffer", "b", (const int[]){ 1 });
	cjson_guard_table(L);
	lua_setglobal(L, "cjson");
}

void script_libs_open(lua_State *L)
{
	int top = lua_gettop(L);

	open_cjson(L);
	open_one(L, "struct", script_open_struct);
	open_one(L, "cmsgpack", script_open_cmsgpack);
	open_one(L, "bit", luaopen_bit);
	lua_settop(L, top);
}
