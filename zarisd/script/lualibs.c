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
 */
#include <lauxlib.h>
#include <lua-bitop.h>
#include <lua-cjson.h>

#include "zarisd/script/lualibs.h"

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
