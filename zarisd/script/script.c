/* script — the per-thread Lua engine (script.h): the state and its
 * sandbox, the redis.* API, compiling and running a script.
 *
 * The sandbox. Redis 7.0 patches its Lua to make tables read-only; Debian's
 * Lua 5.1 has no such flag, so the same behaviour is built from
 * metatables: the globals a script sees are an empty proxy whose __index
 * is the real globals table and whose __newindex refuses ("Attempt to
 * modify a readonly table"); the real table's own __index raises "Script
 * attempted to access nonexistent global variable". The library tables
 * (redis, string, math, table, cjson, bit, coroutine ...) are proxies the
 * same way, and rawset / setmetatable refuse every proxy. KEYS and ARGV
 * are set in the real table by the engine before each run. What differs
 * from Redis: pairs() over a library table (a proxy) yields nothing.
 */
#include "zarisd/script/script.h"

#include <errno.h>
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "zarisd/core/log.h"
#include "zarisd/core/mem.h"
#include "zarisd/proto/reply.h"
#include "zarisd/script/lualibs.h"
#include "zarisd/script/script_int.h"

#define REDIS_VERSION_STR "7.0.15"
#define REDIS_VERSION_NUM 0x0007000f
#define RO_ERROR "Attempt to modify a readonly table"

/* The engine of the script running on this thread, or the last one got
 * (script_engine_get): what redis.* and the hooks reach. Each thread has
 * two: the EVAL engine and the FUNCTION one, each its own Lua state (as
 * Redis's two, eval.c's and function_lua.c's). */
static _Thread_local struct engine *tl_engine;
static _Thread_local struct engine *tl_kinds[2];
static pthread_key_t engine_keys[2];
static pthread_once_t engine_once = PTHREAD_ONCE_INIT;

/* The engines running a script (SCRIPT KILL finds them), under kill_mu. */
#define MAX_RUNNING 256
static pthread_mutex_t kill_mu = PTHREAD_MUTEX_INITIALIZER;
static struct engine *running[MAX_RUNNING];

/* Every thread's engines, for INFO's sums (script_vm_memory). A leaf lock. */
static struct {
	pthread_mutex_t mu;
	struct engine *head;
} engines = { .mu = PTHREAD_MUTEX_INITIALIZER };

/* --- helpers ---------------------------------------------------------------- */

static int raise_error(lua_State *L, const char *msg)
{
	script_push_error(L, msg, strlen(msg));
	return lua_error(L);
}

static struct engine *engine_of(void)
{
	return tl_engine;
}

struct engine *script_engine_of(void)
{
	return tl_engine;
}

/* --- the sandbox ------------------------------------------------------------ */

int script_nonexistent_global(lua_State *L)
{
	const char *name = lua_tostring(L, 2);
	return luaL_error(L, "Script attempted to access nonexistent global variable '%s'",
			  name ? name : "?");
}

static int readonly_newindex(lua_State *L)
{
	return luaL_error(L, RO_ERROR);
}

static bool is_readonly(lua_State *L, int idx)
{
	struct engine *e = engine_of();
	if (!lua_istable(L, idx) || !e)
		return false;
	lua_pushvalue(L, idx);
	lua_rawgeti(L, LUA_REGISTRYINDEX, e->ref_readonly);
	lua_insert(L, -2);
	lua_rawget(L, -2);
	bool ro = lua_toboolean(L, -1);
	lua_pop(L, 2);
	return ro;
}

static int sandbox_rawset(lua_State *L)
{
	luaL_checktype(L, 1, LUA_TTABLE);
	luaL_checkany(L, 2);
	luaL_checkany(L, 3);
	/* no location prefix: Redis's error comes from inside the C call */
	if (is_readonly(L, 1)) {
		lua_pushstring(L, RO_ERROR);
		return lua_error(L);
	}
	lua_settop(L, 3);
	lua_rawset(L, 1);
	return 1;
}

static int sandbox_setmetatable(lua_State *L)
{
	int t = lua_type(L, 2);
	luaL_checktype(L, 1, LUA_TTABLE);
	luaL_argcheck(L, t == LUA_TNIL || t == LUA_TTABLE, 2, "nil or table expected");
	if (is_readonly(L, 1)) {
		lua_pushstring(L, RO_ERROR);
		return lua_error(L);
	}
	if (luaL_getmetafield(L, 1, "__metatable"))
		return luaL_error(L, "cannot change a protected metatable");
	lua_settop(L, 2);
	lua_setmetatable(L, 1);
	return 1;
}

/* Marks the table at IDX read-only (the set in e->ref_readonly). */
void script_mark_readonly(lua_State *L, struct engine *e, int idx)
{
	lua_pushvalue(L, idx);
	lua_rawgeti(L, LUA_REGISTRYINDEX, e->ref_readonly);
	lua_insert(L, -2);
	lua_pushboolean(L, 1);
	lua_rawset(L, -3);
	lua_pop(L, 1);
}

/* Replaces the table on top with a read-only proxy of it. */
void script_make_proxy(lua_State *L, struct engine *e)
{
	lua_newtable(L);      /* proxy */
	lua_newtable(L);      /* its metatable */
	lua_pushvalue(L, -3); /* the real table */
	lua_setfield(L, -2, "__index");
	lua_pushcfunction(L, readonly_newindex);
	lua_setfield(L, -2, "__newindex");
	/* getmetatable() must not hand out the real table */
	lua_pushboolean(L, 0);
	lua_setfield(L, -2, "__metatable");
	lua_setmetatable(L, -2);
	lua_remove(L, -2);
	script_mark_readonly(L, e, -1);
}

/* next() and pairs() over a read-only proxy walk the table behind it. */
static int sandbox_next(lua_State *L)
{
	luaL_checktype(L, 1, LUA_TTABLE);
	lua_settop(L, 2);
	if (is_readonly(L, 1) && lua_getmetatable(L, 1)) {
		lua_pushstring(L, "__index");
		lua_rawget(L, -2);
		if (lua_istable(L, -1))
			lua_replace(L, 1);
		else
			lua_pop(L, 1);
		lua_pop(L, 1);
	}
	if (lua_next(L, 1))
		return 2;
	lua_pushnil(L);
	return 1;
}

static int sandbox_pairs(lua_State *L)
{
	luaL_checktype(L, 1, LUA_TTABLE);
	lua_pushvalue(L, lua_upvalueindex(1));
	lua_pushvalue(L, 1);
	lua_pushnil(L);
	return 3;
}

/* --- redis.* ------------------------------------------------------------------ */

/* redis.call's arguments as resp_args in the engine's buffer (copied:
 * a handler may write into its argv, a Lua string must not change).
 * Returns argc, or -1 after pushing the error table. */
static int collect_args(lua_State *L, struct engine *e)
{
	int argc = lua_gettop(L);
	if (argc == 0) {
		script_push_error(L, "Please specify at least one argument for this redis lib call", 60);
		return -1;
	}
	size_t need = 0;
	for (int j = 1; j <= argc; j++) {
		int t = lua_type(L, j);
		if (t == LUA_TNUMBER)
			need += 32;
		else if (t == LUA_TSTRING)
			need += lua_objlen(L, j) + 1;
		else {
			lua_settop(L, 0);
			const char *m = "Lua redis lib command arguments must be strings or integers";
			script_push_error(L, m, strlen(m));
			return -1;
		}
	}
	if (need > e->argcap) {
		e->argcap = need * 2;
		e->argbuf = zr_realloc(e->argbuf, e->argcap);
	}
	if (argc > e->argv_cap) {
		e->argv_cap = argc * 2;
		e->argv = zr_realloc(e->argv, sizeof(*e->argv) * (size_t)e->argv_cap);
	}
	char *p = e->argbuf;
	for (int j = 1; j <= argc; j++) {
		size_t n;
		if (lua_type(L, j) == LUA_TNUMBER) {
			/* not lua_tolstring: Lua's "%.14g" loses precision */
			n = (size_t)snprintf(p, 32, "%.17g", (double)lua_tonumber(L, j));
		} else {
			const char *s = lua_tolstring(L, j, &n);
			memcpy(p, s, n);
		}
		p[n] = '\0';
		e->argv[j - 1].ptr = p;
		e->argv[j - 1].len = n;
		p += n + 1;
	}
	lua_settop(L, 0);
	return argc;
}

static int redis_generic_call(lua_State *L, bool raise)
{
	struct engine *e = engine_of();
	if (!e || !e->run)
		return raise_error(L, "redis.call/pcall can only be called inside a script invocation");
	int argc = collect_args(L, e);
	if (argc < 0)
		return raise ? lua_error(L) : 1;
	const char *reply;
	size_t len;
	char err[512];
	if (e->run->host.call(e->run->host.ctx, e->argv, argc, e->resp, &reply, &len, err, sizeof(err)) < 0) {
		script_push_error(L, err, strlen(err));
		lua_pushstring(L, "ignore_error_stats_update");
		lua_pushboolean(L, 1);
		lua_settable(L, -3);
		return raise ? lua_error(L) : 1;
	}
	if (!script_resp_to_lua(L, reply, len))
		return raise_error(L, "ERR the command's reply could not be read");
	if (raise && len && reply[0] == '-')
		return lua_error(L);
	return 1;
}

static int redis_call(lua_State *L)
{
	return redis_generic_call(L, true);
}

static int redis_pcall(lua_State *L)
{
	return redis_generic_call(L, false);
}

/* The global pcall: Redis 7's error objects are tables; an error
 * table's err string is what pcall returns, as scripts expected before. */
static int sandbox_pcall(lua_State *L)
{
	int argc = lua_gettop(L);
	luaL_checkany(L, 1);
	lua_pushboolean(L, 1);
	lua_insert(L, 1);
	if (lua_pcall(L, argc - 1, LUA_MULTRET, 0)) {
		lua_remove(L, 1);
		if (lua_istable(L, -1)) {
			lua_getfield(L, -1, "err");
			if (lua_isstring(L, -1))
				lua_replace(L, -2);
			else
				lua_pop(L, 1);
		}
		lua_pushboolean(L, 0);
		lua_insert(L, 1);
	}
	return lua_gettop(L);
}

static int redis_sha1hex(lua_State *L)
{
	if (lua_gettop(L) != 1)
		return raise_error(L, "wrong number of arguments");
	size_t len;
	const char *s = lua_tolstring(L, 1, &len);
	char hex[ZR_SHA1_HEX_LEN + 1];
	zr_sha1_hex(s ? s : "", s ? len : 0, hex);
	lua_pushstring(L, hex);
	return 1;
}

static int redis_error_reply(lua_State *L)
{
	if (lua_gettop(L) != 1 || lua_type(L, -1) != LUA_TSTRING) {
		script_push_error(L, "wrong number or type of arguments", 33);
		return 1;
	}
	size_t len;
	const char *s = lua_tolstring(L, -1, &len);
	if (s[0] == '-') {
		script_push_error(L, s, len);
	} else {
		char *b = zr_malloc(len + 2);
		b[0] = '-';
		memcpy(b + 1, s, len + 1);
		script_push_error(L, b, len + 1);
		zr_free(b);
	}
	return 1;
}

static int redis_status_reply(lua_State *L)
{
	if (lua_gettop(L) != 1 || lua_type(L, -1) != LUA_TSTRING) {
		script_push_error(L, "wrong number or type of arguments", 33);
		return 1;
	}
	lua_newtable(L);
	lua_pushstring(L, "ok");
	lua_pushvalue(L, -3);
	lua_settable(L, -3);
	return 1;
}

static int redis_log(lua_State *L)
{
	int argc = lua_gettop(L);
	if (argc < 2)
		return raise_error(L, "redis.log() requires two arguments or more.");
	if (!lua_isnumber(L, 1))
		return raise_error(L, "First argument must be a number (log level).");
	int level = (int)lua_tonumber(L, 1);
	if (level < ZR_LOG_DEBUG || level > ZR_LOG_WARNING)
		return raise_error(L, "Invalid debug level.");
	luaL_Buffer b;
	luaL_buffinit(L, &b);
	for (int j = 2; j <= argc; j++) {
		size_t n;
		const char *s = lua_tolstring(L, j, &n);
		if (!s)
			continue;
		if (j != 2)
			luaL_addchar(&b, ' ');
		luaL_addlstring(&b, s, n);
	}
	luaL_pushresult(&b);
	zr_log((enum zr_log_level)level, "%s", lua_tostring(L, -1));
	return 0;
}

static int redis_setresp(lua_State *L)
{
	struct engine *e = engine_of();
	if (!e || !e->run)
		return raise_error(L, "redis.setresp can only be called inside a script invocation");
	if (lua_gettop(L) != 1)
		return raise_error(L, "redis.setresp() requires one argument.");
	int resp = (int)lua_tonumber(L, 1);
	if (resp != 2 && resp != 3)
		return raise_error(L, "RESP version must be 2 or 3.");
	e->resp = resp;
	return 0;
}

/* redis.set_repl: the flags checked as Redis checks them; the host
 * propagates the script's later writes accordingly (script.h). */
static int redis_set_repl(lua_State *L)
{
	struct engine *e = engine_of();
	if (!e || !e->run)
		return raise_error(L, "redis.set_repl can only be called inside a script invocation");
	if (lua_gettop(L) != 1)
		return raise_error(L, "redis.set_repl() requires two arguments.");
	int flags = (int)lua_tonumber(L, -1);
	if (flags & ~SCRIPT_REPL_ALL)
		return raise_error(
			L, "Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.");
	e->run->repl = flags;
	return 0;
}

static int redis_true(lua_State *L)
{
	lua_pushboolean(L, 1);
	return 1;
}

static int redis_false(lua_State *L)
{
	lua_pushboolean(L, 0);
	return 1;
}

static int redis_noop(lua_State *L)
{
	(void)L;
	return 0;
}

/* redis.acl_check_cmd: zarisd has one user who may run every command;
 * an unknown command is an error, as in Redis. */
static int redis_acl_check_cmd(lua_State *L)
{
	struct engine *e = engine_of();
	if (!e || !e->run)
		return raise_error(L, "redis.acl_check_cmd can only be called inside a script invocation");
	if (lua_gettop(L) == 0)
		return raise_error(L, "Please specify at least one argument for this redis lib call");
	lua_pushboolean(L, 1);
	return 1;
}

/* Redis's rand.c: the 48-bit generator behind math.random, the same
 * sequence on every platform. */
static int32_t rand48_next(struct engine *e)
{
	uint64_t x = (uint64_t)e->rand_x[0] | ((uint64_t)e->rand_x[1] << 16) | ((uint64_t)e->rand_x[2] << 32);
	x = (x * 0x5DEECE66Dull + 0xB) & ((1ull << 48) - 1);
	e->rand_x[0] = (uint32_t)(x & 0xffff);
	e->rand_x[1] = (uint32_t)((x >> 16) & 0xffff);
	e->rand_x[2] = (uint32_t)(x >> 32);
	return (int32_t)(x >> 17);
}

static int math_random(lua_State *L)
{
	struct engine *e = engine_of();
	if (!e || !e->run)
		return luaL_error(L, "math.random can only be called inside a script invocation");
	lua_Number r = (lua_Number)(rand48_next(e) % 2147483647) / (lua_Number)2147483647;
	switch (lua_gettop(L)) {
	case 0:
		lua_pushnumber(L, r);
		break;
	case 1: {
		int u = luaL_checkint(L, 1);
		luaL_argcheck(L, 1 <= u, 1, "interval is empty");
		lua_pushnumber(L, floor(r * u) + 1);
		break;
	}
	case 2: {
		int l = luaL_checkint(L, 1), u = luaL_checkint(L, 2);
		luaL_argcheck(L, l <= u, 2, "interval is empty");
		lua_pushnumber(L, floor(r * (u - l + 1)) + l);
		break;
	}
	default:
		return luaL_error(L, "wrong number of arguments");
	}
	return 1;
}

static int math_randomseed(lua_State *L)
{
	struct engine *e = engine_of();
	if (!e || !e->run)
		return luaL_error(L, "math.randomseed can only be called inside a script invocation");
	int32_t seed = luaL_checkint(L, 1);
	e->rand_x[0] = 0x330E;
	e->rand_x[1] = (uint32_t)seed & 0xffff;
	e->rand_x[2] = ((uint32_t)seed >> 16) & 0xffff;
	return 0;
}

/* The pcall error handler (Redis's __redis__err__handler): makes every
 * error a table {err=, source=, line=} naming where the script was. */
static int error_handler(lua_State *L)
{
	lua_Debug ar;
	bool found = false;
	if (lua_getstack(L, 1, &ar) && lua_getinfo(L, "nSl", &ar)) {
		found = true;
		if (!strcmp(ar.what, "C"))
			found = lua_getstack(L, 2, &ar) && lua_getinfo(L, "nSl", &ar);
	}
	if (!lua_istable(L, 1)) {
		/* tostring(err), whatever err is */
		lua_getfield(L, LUA_REGISTRYINDEX, "zaris_tostring");
		lua_pushvalue(L, 1);
		lua_call(L, 1, 1);
		const char *s = lua_tostring(L, -1);
		lua_newtable(L);
		lua_pushstring(L, "err");
		lua_pushfstring(L, "ERR %s", s ? s : "");
		lua_settable(L, -3);
		lua_replace(L, 1);
		lua_settop(L, 1);
	}
	if (found) {
		lua_pushstring(L, ar.source);
		lua_setfield(L, 1, "source");
		lua_pushnumber(L, ar.currentline);
		lua_setfield(L, 1, "line");
	}
	lua_settop(L, 1);
	return 1;
}

/* --- kill and busy ------------------------------------------------------------ */

static _Atomic unsigned busy_count;    /* engines past busy-reply-threshold */
static _Atomic unsigned busy_fn_count; /* ... of them running a function */

/* The first function that ran past busy-reply-threshold, for FUNCTION
 * STATS (under kill_mu): its run, and its command's copy. */
static struct {
	struct script_run *run;
	char *name;
	char *cmd; /* the command's arguments, each a u32 length and the bytes */
	int argc;
	size_t len;
} busy_fn;

static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* RUN went past busy-reply-threshold (the owning thread, in its hook). */
static void busy_begin(struct script_run *run)
{
	run->busy = true;
	if (run->function) {
		pthread_mutex_lock(&kill_mu);
		if (!busy_fn.run) {
			size_t n = 0;
			for (int i = 0; i < run->argc; i++)
				n += 4 + run->argv[i].len;
			busy_fn.run = run;
			busy_fn.name = zr_strdup(run->sha);
			busy_fn.cmd = zr_malloc(n + 1);
			busy_fn.argc = run->argc;
			busy_fn.len = n;
			char *p = busy_fn.cmd;
			for (int i = 0; i < run->argc; i++) {
				uint32_t l = (uint32_t)run->argv[i].len;
				memcpy(p, &l, 4);
				memcpy(p + 4, run->argv[i].ptr, l);
				p += 4 + l;
			}
		}
		pthread_mutex_unlock(&kill_mu);
		atomic_fetch_add_explicit(&busy_fn_count, 1, memory_order_release);
	}
	/* release: a client that sees the count sees nothing else of ours;
	 * the count only gates replies */
	atomic_fetch_add_explicit(&busy_count, 1, memory_order_release);
}

static void busy_end(struct script_run *run)
{
	if (run->function) {
		pthread_mutex_lock(&kill_mu);
		if (busy_fn.run == run) {
			ZR_FREE(busy_fn.name);
			ZR_FREE(busy_fn.cmd);
			busy_fn.run = NULL;
		}
		pthread_mutex_unlock(&kill_mu);
		atomic_fetch_sub_explicit(&busy_fn_count, 1, memory_order_release);
	}
	atomic_fetch_sub_explicit(&busy_count, 1, memory_order_release);
}

static void kill_hook(lua_State *L, lua_Debug *ar)
{
	(void)ar;
	struct engine *e = engine_of();
	if (!e || !e->run)
		return;
	struct script_run *run = e->run;
	if (!run->busy && run->busy_ms > 0 && mono_ms() - run->start_ms >= run->busy_ms) {
		busy_begin(run);
		zr_log(ZR_LOG_WARNING,
		       "Slow script detected: still in execution after %lld milliseconds. You can try "
		       "killing the script using the %s command. Script name is: %s.",
		       (long long)(mono_ms() - run->start_ms),
		       run->function ? "FUNCTION KILL" : "SCRIPT KILL", run->sha);
	}
	if (run->busy && run->host.serve) {
		int64_t now = mono_ms();
		if (now != run->served_ms) {
			run->served_ms = now;
			run->host.serve(run->host.ctx);
		}
	}
	bool stopping = run->stop && atomic_load_explicit(run->stop, memory_order_relaxed) && !run->wrote;
	if (stopping || atomic_load_explicit(&e->kill, memory_order_acquire)) {
		zr_log(ZR_LOG_WARNING, "Lua script killed by user with SCRIPT KILL.");
		/* every line from now on: a pcall in the script cannot swallow it */
		lua_sethook(L, kill_hook, LUA_MASKLINE, 0);
		raise_error(L, "Script killed by user with SCRIPT KILL...");
	}
}

bool script_running_here(void)
{
	return tl_engine && tl_engine->run;
}

bool script_any_busy(void)
{
	return atomic_load_explicit(&busy_count, memory_order_acquire) > 0;
}

bool script_busy_is_function(void)
{
	unsigned all = atomic_load_explicit(&busy_count, memory_order_acquire);
	unsigned fns = atomic_load_explicit(&busy_fn_count, memory_order_acquire);
	return fns > 0 && fns >= all;
}

bool script_reply_busy_function(struct obuf *out)
{
	pthread_mutex_lock(&kill_mu);
	bool have = busy_fn.run != NULL;
	if (have) {
		reply_map(out, 3);
		reply_bulk_cstr(out, "name");
		reply_bulk_cstr(out, busy_fn.name);
		reply_bulk_cstr(out, "command");
		reply_array(out, busy_fn.argc);
		const char *p = busy_fn.cmd;
		for (int i = 0; i < busy_fn.argc; i++) {
			uint32_t l;
			memcpy(&l, p, 4);
			reply_bulk(out, p + 4, l);
			p += 4 + l;
		}
		reply_bulk_cstr(out, "duration_ms");
		reply_long(out, mono_ms() - busy_fn.run->start_ms);
	}
	pthread_mutex_unlock(&kill_mu);
	return have;
}

int script_kill(bool function)
{
	int r = -ENOENT;
	bool other = false;
	pthread_mutex_lock(&kill_mu);
	for (int i = 0; i < MAX_RUNNING; i++) {
		if (!running[i])
			continue;
		if (running[i]->function != function)
			other = true;
		else if (atomic_load_explicit(&running[i]->dirty, memory_order_acquire))
			r = -EPERM;
	}
	if (r != -EPERM)
		for (int i = 0; i < MAX_RUNNING; i++)
			if (running[i] && running[i]->function == function) {
				atomic_store_explicit(&running[i]->kill, true, memory_order_release);
				r = 0;
			}
	pthread_mutex_unlock(&kill_mu);
	return r == -ENOENT && other ? -EBUSY : r;
}

static void set_running(struct engine *e, bool on)
{
	pthread_mutex_lock(&kill_mu);
	for (int i = 0; i < MAX_RUNNING; i++) {
		if (on && !running[i]) {
			running[i] = e;
			break;
		}
		if (!on && running[i] == e) {
			running[i] = NULL;
			break;
		}
	}
	pthread_mutex_unlock(&kill_mu);
}

void script_mark_write(struct script_run *run)
{
	struct engine *e = engine_of();
	run->wrote = true;
	if (e)
		atomic_store_explicit(&e->dirty, true, memory_order_release);
}

/* --- the state ---------------------------------------------------------------- */

static void open_lib(lua_State *L, const char *name, lua_CFunction open)
{
	lua_pushcfunction(L, open);
	lua_pushstring(L, name);
	lua_call(L, 1, 1);
	if (*name && lua_istable(L, -1)) {
		lua_pushvalue(L, -1);
		lua_setglobal(L, name);
	}
	lua_pop(L, 1);
}

static void set_fn(lua_State *L, const char *name, lua_CFunction f)
{
	lua_pushcfunction(L, f);
	lua_setfield(L, -2, name);
}

static void set_num(lua_State *L, const char *name, lua_Number v)
{
	lua_pushnumber(L, v);
	lua_setfield(L, -2, name);
}

static void register_redis_api(lua_State *L)
{
	lua_newtable(L);
	set_fn(L, "call", redis_call);
	set_fn(L, "pcall", redis_pcall);
	set_fn(L, "log", redis_log);
	set_num(L, "LOG_DEBUG", ZR_LOG_DEBUG);
	set_num(L, "LOG_VERBOSE", ZR_LOG_VERBOSE);
	set_num(L, "LOG_NOTICE", ZR_LOG_NOTICE);
	set_num(L, "LOG_WARNING", ZR_LOG_WARNING);
	set_num(L, "REDIS_VERSION_NUM", REDIS_VERSION_NUM);
	lua_pushstring(L, REDIS_VERSION_STR);
	lua_setfield(L, -2, "REDIS_VERSION");
	set_fn(L, "setresp", redis_setresp);
	set_fn(L, "sha1hex", redis_sha1hex);
	set_fn(L, "error_reply", redis_error_reply);
	set_fn(L, "status_reply", redis_status_reply);
	set_fn(L, "set_repl", redis_set_repl);
	set_num(L, "REPL_NONE", SCRIPT_REPL_NONE);
	set_num(L, "REPL_AOF", SCRIPT_REPL_AOF);
	set_num(L, "REPL_SLAVE", SCRIPT_REPL_REPLICA);
	set_num(L, "REPL_REPLICA", SCRIPT_REPL_REPLICA);
	set_num(L, "REPL_ALL", SCRIPT_REPL_ALL);
	set_fn(L, "acl_check_cmd", redis_acl_check_cmd);
	set_fn(L, "breakpoint", redis_false); /* no debugging session: false, as Redis */
	set_fn(L, "debug", redis_noop);
	set_fn(L, "replicate_commands", redis_true);
	lua_setglobal(L, "redis");
}

/* The state's allocator (lua_Alloc, as lauxlib's) counting E's bytes.
 * Lua 5.1 passes OSIZE 0 with a NULL PTR. Not through zr_malloc: as in
 * Redis, a script engine's memory is not in used_memory (maxmemory does
 * not evict keys for it); INFO shows it apart. */
static void *engine_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
	struct engine *e = ud;
	size_t held = atomic_load_explicit(&e->vm_bytes, memory_order_relaxed);
	if (nsize == 0) {
		free(ptr);
		atomic_store_explicit(&e->vm_bytes, held - osize, memory_order_relaxed);
		return NULL;
	}
	void *p = realloc(ptr, nsize);
	if (p)
		atomic_store_explicit(&e->vm_bytes, held - osize + nsize, memory_order_relaxed);
	return p;
}

/* An error outside any pcall: Lua exits the process after this returns. */
static int engine_panic(lua_State *L)
{
	zr_log(ZR_LOG_WARNING, "Lua: unprotected error in call to Lua API (%s)", lua_tostring(L, -1));
	return 0;
}

/* Builds the state and its sandbox (see the file header). */
static void engine_open(struct engine *e, uint64_t gen)
{
	lua_State *L = lua_newstate(engine_alloc, e);
	if (!L) { /* as zr_malloc's: no recovery from an internal allocation */
		zr_log(ZR_LOG_WARNING, "Lua: out of memory making a state");
		abort();
	}
	lua_atpanic(L, engine_panic);
	e->L = L;
	e->generation = gen;
	open_lib(L, "", luaopen_base);
	open_lib(L, LUA_TABLIBNAME, luaopen_table);
	open_lib(L, LUA_STRLIBNAME, luaopen_string);
	open_lib(L, LUA_MATHLIBNAME, luaopen_math);
	script_libs_open(L); /* cjson, struct, cmsgpack, bit */
	/* Redis 7.0's deny list, and no debug library once the handler exists */
	static const char *const removed[] = { "dofile",  "loadfile", "print", "setfenv",
					       "getfenv", "newproxy", NULL };
	for (int i = 0; removed[i]; i++) {
		lua_pushnil(L);
		lua_setglobal(L, removed[i]);
	}
	lua_getglobal(L, "tostring");
	lua_setfield(L, LUA_REGISTRYINDEX, "zaris_tostring");
	lua_pushcfunction(L, sandbox_pcall);
	lua_setglobal(L, "pcall");
	lua_pushcfunction(L, sandbox_rawset);
	lua_setglobal(L, "rawset");
	lua_pushcfunction(L, sandbox_setmetatable);
	lua_setglobal(L, "setmetatable");
	lua_pushcfunction(L, sandbox_next);
	lua_pushvalue(L, -1);
	lua_setglobal(L, "next");
	lua_pushcclosure(L, sandbox_pairs, 1);
	lua_setglobal(L, "pairs");
	register_redis_api(L);
	lua_getglobal(L, "math");
	set_fn(L, "random", math_random);
	set_fn(L, "randomseed", math_randomseed);
	lua_pop(L, 1);

	lua_pushcfunction(L, error_handler);
	lua_pushvalue(L, -1);
	lua_setglobal(L, "__redis__err__handler"); /* a global in Redis 7.0 too */
	e->ref_handler = luaL_ref(L, LUA_REGISTRYINDEX);
	lua_newtable(L);
	e->ref_scripts = luaL_ref(L, LUA_REGISTRYINDEX);
	lua_newtable(L);
	e->ref_flags = luaL_ref(L, LUA_REGISTRYINDEX);
	lua_newtable(L); /* the read-only set, weak keys */
	lua_newtable(L);
	lua_pushstring(L, "k");
	lua_setfield(L, -2, "__mode");
	lua_setmetatable(L, -2);
	e->ref_readonly = luaL_ref(L, LUA_REGISTRYINDEX);

	/* the libraries become read-only proxies */
	static const char *const libs[] = { "redis", "string",	  "math",   "table",	"cjson",
					    "bit",   "coroutine", "struct", "cmsgpack", NULL };
	for (int i = 0; libs[i]; i++) {
		lua_getglobal(L, libs[i]);
		if (!lua_istable(L, -1)) {
			lua_pop(L, 1);
			continue;
		}
		script_make_proxy(L, e);
		if (!strcmp(libs[i], "string")) {
			/* strings' methods through the proxy too, and their
			 * metatable out of reach: it is the real table's way in */
			lua_pushliteral(L, "");
			lua_getmetatable(L, -1);
			lua_pushvalue(L, -3);
			lua_setfield(L, -2, "__index");
			/* getmetatable('') as Redis's: a read-only table whose
			 * __index is the (read-only) string library */
			lua_newtable(L);
			lua_pushvalue(L, -4);
			lua_setfield(L, -2, "__index");
			script_make_proxy(L, e);
			lua_setfield(L, -2, "__metatable");
			lua_pop(L, 2);
		}
		lua_setglobal(L, libs[i]);
	}
	/* the globals: the real table G behind the proxy P */
	lua_pushvalue(L, LUA_GLOBALSINDEX); /* G */
	lua_pushvalue(L, -1);
	e->ref_globals = luaL_ref(L, LUA_REGISTRYINDEX);
	script_make_proxy(L, e); /* P */
	/* getmetatable(_G) as Redis's: read-only, its __index the error */
	lua_getmetatable(L, -1);
	lua_pushvalue(L, -1);
	e->ref_proxy_mt = luaL_ref(L, LUA_REGISTRYINDEX);
	lua_newtable(L);
	lua_pushcfunction(L, script_nonexistent_global);
	lua_setfield(L, -2, "__index");
	script_make_proxy(L, e);
	lua_setfield(L, -2, "__metatable");
	lua_pop(L, 1);
	lua_pushvalue(L, -1);
	lua_setfield(L, LUA_GLOBALSINDEX, "_G"); /* G._G = P */
	lua_rawgeti(L, LUA_REGISTRYINDEX, e->ref_globals);
	script_mark_readonly(L, e, -1);
	lua_newtable(L);
	lua_pushcfunction(L, script_nonexistent_global);
	lua_setfield(L, -2, "__index");
	lua_pushcfunction(L, readonly_newindex);
	lua_setfield(L, -2, "__newindex");
	lua_pushboolean(L, 0);
	lua_setfield(L, -2, "__metatable");
	lua_setmetatable(L, -2);
	lua_pop(L, 1);
	lua_pushvalue(L, -1);
	e->ref_proxy = luaL_ref(L, LUA_REGISTRYINDEX);
	lua_replace(L, LUA_GLOBALSINDEX); /* scripts see P */
	if (e->function)
		function_engine_init(e);
	e->rand_x[0] = 0x330E;
	e->rand_x[1] = 0xABCD;
	e->rand_x[2] = 0x1234;
}

static void engine_close(struct engine *e)
{
	if (e->L)
		lua_close(e->L);
	e->L = NULL;
}

static void engine_destroy(void *p)
{
	struct engine *e = p;
	if (!e)
		return;
	pthread_mutex_lock(&engines.mu);
	for (struct engine **q = &engines.head; *q; q = &(*q)->next_engine)
		if (*q == e) {
			*q = e->next_engine;
			break;
		}
	pthread_mutex_unlock(&engines.mu);
	engine_close(e);
	zr_free(e->argbuf);
	zr_free(e->argv);
	zr_free(e);
}

static void make_key(void)
{
	pthread_key_create(&engine_keys[0], engine_destroy);
	pthread_key_create(&engine_keys[1], engine_destroy);
}

struct engine *script_engine_get(bool function, uint64_t gen)
{
	struct engine *e = tl_kinds[function];
	if (!e) {
		pthread_once(&engine_once, make_key);
		e = zr_calloc(1, sizeof(*e));
		e->function = function;
		tl_kinds[function] = e;
		pthread_setspecific(engine_keys[function], e);
		pthread_mutex_lock(&engines.mu);
		e->next_engine = engines.head;
		engines.head = e;
		pthread_mutex_unlock(&engines.mu);
	}
	if (e->L && e->generation != gen)
		engine_close(e); /* SCRIPT FLUSH, a library changed: a fresh state, as Redis's reset */
	if (!e->L)
		engine_open(e, gen);
	tl_engine = e;
	return e;
}

static struct engine *engine_get(void)
{
	return script_engine_get(false, script_registry_generation());
}

void script_vm_memory(uint64_t *eval, uint64_t *functions)
{
	*eval = *functions = 0;
	pthread_mutex_lock(&engines.mu);
	for (struct engine *e = engines.head; e; e = e->next_engine)
		*(e->function ? functions : eval) += atomic_load_explicit(&e->vm_bytes, memory_order_relaxed);
	pthread_mutex_unlock(&engines.mu);
}

void script_thread_tick(void)
{
	for (int k = 0; k < 2; k++) {
		struct engine *e = tl_kinds[k];
		uint64_t gen = k ? function_registry_generation() : script_registry_generation();
		if (e && e->L && !e->run && e->generation != gen) {
			engine_close(e);
			atomic_store_explicit(&e->vm_bytes, 0, memory_order_relaxed);
		}
	}
}

void script_thread_exit(void)
{
	tl_engine = NULL;
	for (int k = 0; k < 2; k++) {
		struct engine *e = tl_kinds[k];
		if (!e)
			continue;
		pthread_setspecific(engine_keys[k], NULL);
		tl_kinds[k] = NULL;
		engine_destroy(e);
	}
}

/* --- compile and run ---------------------------------------------------------- */

int script_prepare(const char *sha, const char *body, size_t len, uint32_t *flags, char *err, size_t errsize)
{
	struct engine *e = engine_get();
	lua_State *L = e->L;
	/* a script's setfenv(0, t) must not reach the next one */
	lua_rawgeti(L, LUA_REGISTRYINDEX, e->ref_proxy);
	lua_replace(L, LUA_GLOBALSINDEX);
	lua_rawgeti(L, LUA_REGISTRYINDEX, e->ref_scripts);
	lua_getfield(L, -1, sha);
	bool have = !lua_isnil(L, -1);
	lua_pop(L, 2);
	if (have) {
		lua_rawgeti(L, LUA_REGISTRYINDEX, e->ref_flags);
		lua_getfield(L, -1, sha);
		*flags = (uint32_t)lua_tonumber(L, -1);
		lua_pop(L, 2);
		return 0;
	}
	char *owned = NULL;
	if (!body) {
		owned = script_registry_get(sha, strlen(sha), &len);
		if (!owned)
			return -ENOENT;
		body = owned;
	}
	size_t skip;
	char why[256];
	int r = script_parse_shebang(body, len, flags, &skip, why, sizeof(why));
	if (r < 0) {
		snprintf(err, errsize, "ERR %s", why);
		goto out;
	}
	if (luaL_loadbuffer(L, body + skip, len - skip, "@user_script")) {
		snprintf(err, errsize, "ERR Error compiling script (new function): %s", lua_tostring(L, -1));
		lua_pop(L, 1);
		r = -EINVAL;
		goto out;
	}
	lua_rawgeti(L, LUA_REGISTRYINDEX, e->ref_scripts);
	lua_insert(L, -2);
	lua_setfield(L, -2, sha);
	lua_pop(L, 1);
	lua_rawgeti(L, LUA_REGISTRYINDEX, e->ref_flags);
	lua_pushnumber(L, *flags);
	lua_setfield(L, -2, sha);
	lua_pop(L, 1);
	if (!owned) {
		char check[ZR_SHA1_HEX_LEN + 1];
		script_registry_add(body, len, check);
	}
out:
	zr_free(owned);
	return r;
}

static void push_array(lua_State *L, const struct resp_arg *a, int n)
{
	lua_createtable(L, n, 0);
	for (int j = 0; j < n; j++) {
		lua_pushlstring(L, a[j].ptr, a[j].len);
		lua_rawseti(L, -2, j + 1);
	}
}

/* Writes the error on top of L (a failed run) into OUT, as Redis's
 * luaCallFunction. */
static void reply_run_error(lua_State *L, const char *sha, struct obuf *out)
{
	if (!lua_istable(L, -1)) {
		const char *msg = lua_isstring(L, -1) ? lua_tostring(L, -1) : "execution failure";
		reply_errorf(out, "ERR Error running script %s, %.100s", sha, msg);
		return;
	}
	bool counted = script_error_counted(L);
	lua_getfield(L, -1, "err");
	lua_getfield(L, -2, "source");
	lua_getfield(L, -3, "line");
	const char *msg = lua_tostring(L, -3), *src = lua_tostring(L, -2), *line = lua_tostring(L, -1);
	luaL_Buffer b;
	luaL_buffinit(L, &b);
	luaL_addchar(&b, '-');
	luaL_addstring(&b, msg ? msg : "");
	if (src && line) {
		luaL_addstring(&b, " script: ");
		luaL_addstring(&b, sha);
		luaL_addstring(&b, ", on ");
		luaL_addstring(&b, src);
		luaL_addchar(&b, ':');
		luaL_addstring(&b, line);
		luaL_addchar(&b, '.');
	}
	luaL_pushresult(&b);
	/* Redis's addReplyErrorSdsEx: not counted again when redis.call's
	 * error counted it already */
	if (counted)
		reply_error(out, lua_tostring(L, -1));
	else
		reply_error_nostats(out, lua_tostring(L, -1));
	lua_pop(L, 4);
}

void script_execute(struct script_run *run, struct obuf *out)
{
	struct engine *e = engine_get();
	lua_State *L = e->L;
	lua_rawgeti(L, LUA_REGISTRYINDEX, e->ref_scripts);
	lua_getfield(L, -1, run->sha);
	lua_remove(L, -2);
	if (!lua_isfunction(L, -1)) { /* not prepared: the caller's bug */
		lua_pop(L, 1);
		reply_error(out, "ERR script not prepared");
		return;
	}
	lua_rawgeti(L, LUA_REGISTRYINDEX, e->ref_globals);
	/* raw: the real table refuses new keys (its __newindex) */
	lua_pushstring(L, "KEYS");
	push_array(L, run->keys, run->nkeys);
	lua_rawset(L, -3);
	lua_pushstring(L, "ARGV");
	push_array(L, run->args, run->nargs);
	lua_rawset(L, -3);
	lua_pop(L, 1);
	script_engine_call(e, run, 0, out);
}

void script_push_arrays(lua_State *L, const struct script_run *run)
{
	push_array(L, run->keys, run->nkeys);
	push_array(L, run->args, run->nargs);
}

void script_engine_call(struct engine *e, struct script_run *run, int nargs, struct obuf *out)
{
	lua_State *L = e->L;
	lua_rawgeti(L, LUA_REGISTRYINDEX, e->ref_handler);
	lua_insert(L, -(nargs + 2));
	tl_engine = e;
	e->run = run;
	e->resp = 2;
	run->wrote = false;
	run->repl = SCRIPT_REPL_ALL;
	run->busy = false;
	run->start_ms = mono_ms();
	atomic_store_explicit(&e->kill, false, memory_order_relaxed);
	atomic_store_explicit(&e->dirty, false, memory_order_relaxed);
	set_running(e, true);
	lua_sethook(L, kill_hook, LUA_MASKCOUNT, 100000);
	int r = lua_pcall(L, nargs, 1, -(nargs + 2));
	lua_sethook(L, NULL, 0, 0);
	set_running(e, false);
	if (run->busy)
		busy_end(run);
	if (r) {
		reply_run_error(L, run->sha, out);
		lua_pop(L, 1);
	} else {
		script_lua_to_resp(L, out, e->resp == 2);
	}
	e->run = NULL;
	lua_pop(L, 1); /* the handler */
	/* Redis's periodic step: a full collection now and then costs a latency spike */
	if (++e->gc_countdown >= 50) {
		lua_gc(L, LUA_GCSTEP, 50);
		e->gc_countdown = 0;
	}
}
