/* lualibs — the Lua libraries a script sees beyond Lua's base, table, string
 * and math: cjson and bit (Debian's lua-cjson 2.1.0 and lua-bitop 1.0.2),
 * cmsgpack and struct (written here, lib_cmsgpack.c and lib_struct.c, with
 * the API, the bytes and the error texts of the copies Redis 7.0 ships in
 * deps/lua). Everything here acts on one lua_State and keeps no state of its
 * own, so any thread may call it on a state it owns (a worker, its own
 * state); the libraries allocate through the state's allocator.
 */
#ifndef ZR_SCRIPT_LUALIBS_H
#define ZR_SCRIPT_LUALIBS_H

#include <lua.h>

/* Opens cjson, struct, cmsgpack and bit in the fresh state L as the globals
 * of those names, configured as Redis 7.0 configures them (cjson: 14
 * significant digits, invalid numbers refused on encode and accepted on
 * decode, nesting 1000, cjson.null; cmsgpack: tables nested past 16 levels
 * encode as nil). cjson.encode and cjson.decode are guards around Debian's
 * that refuse, with an error, an encoding that could pass 1 GiB and an
 * input past 1 GiB (Debian's cjson counts in int; Redis's was fixed for
 * CVE-2022-24834). cjson's buffers come from malloc, outside L's allocator,
 * and cjson ends the process when malloc fails (exit; Redis's aborts). Opens
 * neither base, table, string nor math (the engine
 * does, with its sandbox) and protects no table: making library tables read
 * only is the sandbox's job. Leaves L's stack as it found it. A memory error
 * raises a Lua error (call it under lua_cpcall where that matters). */
void script_libs_open(lua_State *L);

/* The two openers script_libs_open uses, as lua_CFunctions: each leaves its
 * module table on the stack, returns 1 and sets the global "cmsgpack"
 * (resp. "struct"). Exported for the unit test. */
int script_open_cmsgpack(lua_State *L);
int script_open_struct(lua_State *L);

#endif
