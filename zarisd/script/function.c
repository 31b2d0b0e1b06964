/* function — Redis 7.0's functions (functions.c, function_lua.c): the
 * server-wide library registry, the load sandbox with
 * redis.register_function, FCALL on each thread's FUNCTION engine, and
 * FUNCTION RESTORE's policies (script.h; the payload's encoding is
 * function_payload.c's).
 *
 * A library is loaded twice over: once by FUNCTION LOAD, on the calling
 * thread's FUNCTION engine, to check it and learn its functions (the
 * registry keeps the code and the functions' names, descriptions and
 * flags); then on each worker that runs one of its functions, lazily, in
 * that worker's own state. Every change of the registry moves its
 * generation, and a worker's state of an older generation is made again
 * before its next FCALL (script.c's script_engine_get), so no state keeps
 * a function that was deleted or replaced.
 *
 * The load sandbox: while a library's code runs, the globals scripts see
 * (the proxy of script.c) look names up in a table holding only `redis`,
 * itself only register_function, log, the LOG_* levels and the version
 * fields, as Redis's LIBRARY_API; any other name raises "Script attempted
 * to access nonexistent global variable". The callbacks it registers run
 * later with the full API, the proxy's lookups back on the real globals.
 *
 * The registry's mutex is a leaf lock: no Lua runs while it is held.
 */
#include <ctype.h>
#include <errno.h>
#include <lauxlib.h>
#include <lua.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "zarisd/core/log.h"
#include "zarisd/core/mem.h"
#include "zarisd/core/thread.h"
#include "zarisd/core/util.h"
#include "zarisd/proto/reply.h"
#include "zarisd/script/script.h"
#include "zarisd/script/script_int.h"

#define LOAD_TIMEOUT_MS 500
#define ERR_NAME                                                                                   \
	"Library names can only contain letters, numbers, or underscores(_) and must be at least " \
	"one character long"

struct fn_def {
	char *name;
	char *desc; /* NULL: none */
	uint32_t flags;
};

struct fn_lib {
	struct fn_lib *next;
	char *name;
	char *code; /* the whole payload, its metadata line included */
	size_t len;
	struct fn_def *fns;
	int nfns;
};

/* A set of libraries: the registry's, or one a RESTORE builds. */
struct fn_ctx {
	struct fn_lib *head;
	uint64_t nlibs, nfns;
};

/* What redis.register_function collects while a library's code runs. */
struct fn_load {
	struct fn_def *fns;
	int nfns, cap;
	int ref_table;	  /* name -> callback, in the engine's registry */
	int64_t start_ms; /* CLOCK_MONOTONIC */
	bool timeout;
};

static struct {
	pthread_mutex_t mu;
	struct fn_ctx ctx;
} freg = { .mu = PTHREAD_MUTEX_INITIALIZER };

/* Read without the mutex before every FCALL: acquire pairs with the
 * release of a change made under it, so an engine that sees the new
 * generation finds the new registry when it looks a function up. */
static _Atomic uint64_t fgen = 1;

static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* --- sets of libraries ------------------------------------------------------- */

static void lib_free(struct fn_lib *l)
{
	if (!l)
		return;
	for (int i = 0; i < l->nfns; i++) {
		zr_free(l->fns[i].name);
		zr_free(l->fns[i].desc);
	}
	zr_free(l->fns);
	zr_free(l->name);
	zr_free(l->code);
	zr_free(l);
}

static void ctx_clear(struct fn_ctx *c)
{
	for (struct fn_lib *l = c->head, *next; l; l = next) {
		next = l->next;
		lib_free(l);
	}
	*c = (struct fn_ctx){ 0 };
}

static struct fn_lib **ctx_find_lib(struct fn_ctx *c, const char *name, size_t len)
{
	for (struct fn_lib **p = &c->head; *p; p = &(*p)->next)
		if (strlen((*p)->name) == len && !memcmp((*p)->name, name, len))
			return p;
	return NULL;
}

/* The library of C holding function NAME (other than SKIP), *I its index:
 * function names are matched in any case across libraries (Redis's
 * functions dict), exactly within one (its library's dict). */
static struct fn_lib *ctx_find_fn(struct fn_ctx *c, const char *name, size_t len, const struct fn_lib *skip,
				  int *idx)
{
	for (struct fn_lib *l = c->head; l; l = l->next) {
		if (l == skip)
			continue;
		for (int i = 0; i < l->nfns; i++)
			if (strlen(l->fns[i].name) == len && !strncasecmp(l->fns[i].name, name, len)) {
				if (idx)
					*idx = i;
				return l;
			}
	}
	return NULL;
}

/* Appends L to C (the listing order is the creation order). */
static void ctx_link(struct fn_ctx *c, struct fn_lib *l)
{
	struct fn_lib **p = &c->head;
	while (*p)
		p = &(*p)->next;
	l->next = NULL;
	*p = l;
	c->nlibs++;
	c->nfns += (uint64_t)l->nfns;
}

static void ctx_unlink(struct fn_ctx *c, struct fn_lib **p)
{
	struct fn_lib *l = *p;
	*p = l->next;
	l->next = NULL;
	c->nlibs--;
	c->nfns -= (uint64_t)l->nfns;
}

/* A library of CTX in place of the one at P (its position kept). */
static void ctx_swap(struct fn_ctx *c, struct fn_lib **p, struct fn_lib *l)
{
	struct fn_lib *old = *p;
	l->next = old->next;
	*p = l;
	c->nfns = c->nfns - (uint64_t)old->nfns + (uint64_t)l->nfns;
	lib_free(old);
}

static void bump_locked(void)
{
	ZR_ASSERT_MUTEX_HELD(&freg.mu);
	atomic_fetch_add_explicit(&fgen, 1, memory_order_release);
}

/* --- the metadata line ------------------------------------------------------- */

static bool name_ok(const char *s, size_t n)
{
	if (!n)
		return false;
	for (size_t i = 0; i < n; i++) {
		char ch = s[i];
		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
		      ch == '_'))
			return false;
	}
	return true;
}

/* Redis's functionExtractLibMetaData and the checks after it: the
 * library's name (a heap string) in *NAME, the offset of its code (the
 * '\n' ending the line, kept for the line numbers) in *BODY. */
static int parse_metadata(const char *code, size_t len, char **name, size_t *body, char *err, size_t errsize)
{
	*name = NULL;
	size_t clen = strnlen(code, len); /* Redis reads the payload as a C string here */
	if (clen < 2 || memcmp(code, "#!", 2)) {
		snprintf(err, errsize, "ERR Missing library metadata");
		return -EINVAL;
	}
	const char *nl = memchr(code, '\n', clen);
	if (!nl) {
		snprintf(err, errsize, "ERR Invalid library metadata");
		return -EINVAL;
	}
	size_t llen = (size_t)(nl - code);
	char *line = zr_malloc(llen + 1);
	memcpy(line, code, llen);
	line[llen] = '\0';
	/* a line of L bytes has at most L / 2 + 1 arguments */
	int max = (int)(llen / 2 + 2);
	struct resp_arg *parts = zr_malloc(sizeof(*parts) * (size_t)max);
	int n = resp_split_inline(line, llen, parts, max);
	int r = -EINVAL;
	if (n <= 0 || n > max) {
		snprintf(err, errsize, "ERR Invalid library metadata");
		goto out;
	}
	const char *lib = NULL;
	size_t lib_len = 0;
	for (int i = 1; i < n; i++) {
		if (parts[i].len >= 5 && !strncasecmp(parts[i].ptr, "name=", 5)) {
			if (lib) {
				snprintf(
					err, errsize,
					"ERR Invalid metadata value, name argument was given multiple times");
				goto out;
			}
			lib = parts[i].ptr + 5;
			lib_len = parts[i].len - 5;
			continue;
		}
		snprintf(err, errsize, "ERR Invalid metadata value given: %.*s", (int)parts[i].len,
			 parts[i].ptr);
		goto out;
	}
	if (!lib) {
		snprintf(err, errsize, "ERR Library name was not given");
		goto out;
	}
	if (!name_ok(lib, lib_len)) {
		snprintf(err, errsize, "ERR " ERR_NAME);
		goto out;
	}
	if (parts[0].len != 5 || strncasecmp(parts[0].ptr, "#!lua", 5)) { /* engines: any case */
		snprintf(err, errsize, "ERR Engine '%.*s' not found",
			 (int)(parts[0].len > 2 ? parts[0].len - 2 : 0), parts[0].ptr + 2);
		goto out;
	}
	*name = zr_malloc(lib_len + 1);
	memcpy(*name, lib, lib_len);
	(*name)[lib_len] = '\0';
	*body = llen;
	r = 0;
out:
	zr_free(parts);
	zr_free(line);
	return r;
}

/* --- the load sandbox -------------------------------------------------------- */

static int raise_msg(lua_State *L, const char *msg)
{
	script_push_error(L, msg, strlen(msg));
	return lua_error(L);
}

/* A string argument at IDX (numbers count, as lua_isstring), or NULL. */
static const char *arg_str(lua_State *L, int idx, size_t *len)
{
	return lua_isstring(L, idx) ? lua_tolstring(L, idx, len) : NULL;
}

/* The flags table on top of the stack: false on a flag we do not know. */
static bool read_flags(lua_State *L, uint32_t *flags)
{
	uint32_t f = 0;
	for (int j = 1;; j++) {
		lua_pushnumber(L, j);
		lua_gettable(L, -2);
		if (lua_isnil(L, -1)) {
			lua_pop(L, 1);
			break;
		}
		if (!lua_isstring(L, -1)) {
			lua_pop(L, 1);
			return false;
		}
		const char *s = lua_tostring(L, -1);
		bool found = false;
		for (size_t k = 0; k < SCRIPT_FLAG_NAMES && !found; k++)
			if (!strcasecmp(script_flag_names[k].name, s)) {
				f |= script_flag_names[k].flag;
				found = true;
			}
		lua_pop(L, 1);
		if (!found)
			return false;
	}
	*flags = f;
	return true;
}

/* Adds the function (NAME, DESC, FLAGS) whose callback is on top of the
 * stack (popped) to the library being loaded; NULL or Redis's error. */
static const char *add_function(lua_State *L, struct fn_load *ld, const char *name, size_t nlen,
				const char *desc, size_t dlen, uint32_t flags)
{
	if (!name_ok(name, nlen)) {
		lua_pop(L, 1);
		return ERR_NAME;
	}
	for (int i = 0; i < ld->nfns; i++)
		if (strlen(ld->fns[i].name) == nlen && !memcmp(ld->fns[i].name, name, nlen)) {
			lua_pop(L, 1);
			return "Function already exists in the library";
		}
	if (ld->nfns == ld->cap) {
		ld->cap = ld->cap ? ld->cap * 2 : 4;
		ld->fns = zr_realloc(ld->fns, sizeof(*ld->fns) * (size_t)ld->cap);
	}
	struct fn_def *d = &ld->fns[ld->nfns++];
	d->name = zr_malloc(nlen + 1);
	memcpy(d->name, name, nlen);
	d->name[nlen] = '\0';
	d->desc = NULL;
	if (desc) {
		d->desc = zr_malloc(dlen + 1);
		memcpy(d->desc, desc, dlen);
		d->desc[dlen] = '\0';
	}
	d->flags = flags;
	lua_rawgeti(L, LUA_REGISTRYINDEX, ld->ref_table);
	lua_pushlstring(L, name, nlen);
	lua_pushvalue(L, -3);
	lua_rawset(L, -3);
	lua_pop(L, 2);
	return NULL;
}

/* redis.register_function{function_name=, callback=, flags=, description=}:
 * the callback is kept at stack index 2, the name and description in
 * NAME and DESC (heap, the caller frees). */
static const char *register_named(lua_State *L, struct fn_load *ld, char **name, size_t *nlen, char **desc,
				  size_t *dlen)
{
	if (!lua_istable(L, 1))
		return "calling redis.register_function with a single argument is only applicable to Lua "
		       "table (representing named arguments).";
	bool have_cb = false;
	uint32_t flags = 0;
	lua_settop(L, 1);
	lua_pushnil(L); /* index 2: the callback */
	lua_pushnil(L);
	while (lua_next(L, 1)) {
		if (!lua_isstring(L, -2))
			return "named argument key given to redis.register_function is not a string";
		lua_pushvalue(L, -2); /* tostring of a copy: next() needs the key as it is */
		const char *key = lua_tostring(L, -1);
		char k[16];
		snprintf(k, sizeof(k), "%s", strlen(key) < sizeof(k) ? key : "");
		lua_pop(L, 1);
		const char *s;
		size_t n;
		if (!strcasecmp(k, "function_name")) {
			if (!(s = arg_str(L, -1, &n)))
				return "function_name argument given to redis.register_function must be a string";
			zr_free(*name);
			*name = zr_malloc(n + 1);
			memcpy(*name, s, n + 1);
			*nlen = n;
		} else if (!strcasecmp(k, "description")) {
			if (!(s = arg_str(L, -1, &n)))
				return "description argument given to redis.register_function must be a string";
			zr_free(*desc);
			*desc = zr_malloc(n + 1);
			memcpy(*desc, s, n + 1);
			*dlen = n;
		} else if (!strcasecmp(k, "callback")) {
			if (!lua_isfunction(L, -1))
				return "callback argument given to redis.register_function must be a function";
			lua_pushvalue(L, -1);
			lua_replace(L, 2);
			have_cb = true;
		} else if (!strcasecmp(k, "flags")) {
			if (!lua_istable(L, -1))
				return "flags argument to redis.register_function must be a table representing "
				       "function flags";
			if (!read_flags(L, &flags))
				return "unknown flag given";
		} else {
			return "unknown argument given to redis.register_function";
		}
		lua_pop(L, 1);
	}
	if (!*name)
		return "redis.register_function must get a function name argument";
	if (!have_cb)
		return "redis.register_function must get a callback argument";
	lua_pushvalue(L, 2);
	return add_function(L, ld, *name, *nlen, *desc, *dlen, flags);
}

static int register_function(lua_State *L)
{
	struct engine *e = script_engine_of();
	struct fn_load *ld = e ? e->load : NULL;
	if (!ld)
		return raise_msg(L, "redis.register_function can only be called on FUNCTION LOAD command");
	int argc = lua_gettop(L);
	const char *err;
	if (argc < 1 || argc > 2) {
		err = "wrong number of arguments to redis.register_function";
	} else if (argc == 1) {
		char *name = NULL, *desc = NULL;
		size_t nlen = 0, dlen = 0;
		err = register_named(L, ld, &name, &nlen, &desc, &dlen);
		zr_free(name);
		zr_free(desc);
	} else {
		size_t nlen;
		const char *name = arg_str(L, 1, &nlen);
		if (!name)
			err = "first argument to redis.register_function must be a string";
		else if (!lua_isfunction(L, 2))
			err = "second argument to redis.register_function must be a function";
		else {
			lua_pushvalue(L, 2);
			err = add_function(L, ld, name, nlen, NULL, 0, 0);
		}
	}
	if (err)
		return raise_msg(L, err);
	return 0;
}

static int load_log(lua_State *L)
{
	/* redis.log of the load sandbox: the full API's, reached through the
	 * real globals (the proxy's lookups go to the load env now) */
	struct engine *e = script_engine_of();
	lua_rawgeti(L, LUA_REGISTRYINDEX, e->ref_globals);
	lua_getfield(L, -1, "redis");
	lua_getfield(L, -1, "log");
	lua_insert(L, 1);
	lua_pop(L, 2);
	lua_call(L, lua_gettop(L) - 1, 0);
	return 0;
}

void function_engine_init(struct engine *e)
{
	lua_State *L = e->L;
	lua_newtable(L); /* the load env's real table */
	lua_newtable(L); /* its redis */
	lua_pushcfunction(L, register_function);
	lua_setfield(L, -2, "register_function");
	lua_pushcfunction(L, load_log);
	lua_setfield(L, -2, "log");
	/* the levels and version fields, copied from the full redis table */
	static const char *const copied[] = { "LOG_DEBUG",   "LOG_VERBOSE",	  "LOG_NOTICE",
					      "LOG_WARNING", "REDIS_VERSION_NUM", "REDIS_VERSION",
					      NULL };
	lua_rawgeti(L, LUA_REGISTRYINDEX, e->ref_globals);
	lua_getfield(L, -1, "redis");
	for (int i = 0; copied[i]; i++) {
		lua_getfield(L, -1, copied[i]);
		lua_setfield(L, -4, copied[i]);
	}
	lua_pop(L, 2);
	/* a name it lacks is an error, as a global's (luaSetErrorMetatable) */
	lua_newtable(L);
	lua_pushcfunction(L, script_nonexistent_global);
	lua_setfield(L, -2, "__index");
	lua_setmetatable(L, -2);
	script_make_proxy(L, e);
	lua_setfield(L, -2, "redis");
	lua_newtable(L);
	lua_pushcfunction(L, script_nonexistent_global);
	lua_setfield(L, -2, "__index");
	lua_setmetatable(L, -2);
	script_make_proxy(L, e);
	e->ref_loadenv = luaL_ref(L, LUA_REGISTRYINDEX);
	lua_newtable(L);
	e->ref_names = luaL_ref(L, LUA_REGISTRYINDEX);
}

static void load_hook(lua_State *L, lua_Debug *ar)
{
	(void)ar;
	struct engine *e = script_engine_of();
	if (!e || !e->load || !e->load->timeout)
		return;
	if (mono_ms() - e->load->start_ms > LOAD_TIMEOUT_MS) {
		lua_sethook(L, load_hook, LUA_MASKLINE, 0);
		raise_msg(L, "FUNCTION LOAD timeout");
	}
}

/* Points the globals proxy's lookups at the table of registry ref REF. */
static void set_lookups(lua_State *L, struct engine *e, int ref)
{
	lua_rawgeti(L, LUA_REGISTRYINDEX, e->ref_proxy_mt);
	lua_pushstring(L, "__index");
	lua_rawgeti(L, LUA_REGISTRYINDEX, ref);
	lua_rawset(L, -3);
	lua_pop(L, 1);
}

static void load_free(lua_State *L, struct fn_load *ld)
{
	for (int i = 0; i < ld->nfns; i++) {
		zr_free(ld->fns[i].name);
		zr_free(ld->fns[i].desc);
	}
	zr_free(ld->fns);
	if (L)
		luaL_unref(L, LUA_REGISTRYINDEX, ld->ref_table);
}

/* Runs library code BODY[0..LEN) (after its metadata line) on E in the
 * load sandbox, filling LD (its callbacks in LD->ref_table). 0, or
 * -EINVAL with Redis's error text in ERR. */
static int engine_load(struct engine *e, const char *body, size_t len, bool timeout, struct fn_load *ld,
		       char *err, size_t errsize)
{
	lua_State *L = e->L;
	*ld = (struct fn_load){ .start_ms = mono_ms(), .timeout = timeout };
	lua_newtable(L);
	ld->ref_table = luaL_ref(L, LUA_REGISTRYINDEX);
	lua_rawgeti(L, LUA_REGISTRYINDEX, e->ref_proxy);
	lua_replace(L, LUA_GLOBALSINDEX);
	if (luaL_loadbuffer(L, body, len, "@user_function")) {
		snprintf(err, errsize, "ERR Error compiling function: %s", lua_tostring(L, -1));
		lua_pop(L, 1);
		return -EINVAL;
	}
	set_lookups(L, e, e->ref_loadenv);
	e->load = ld;
	lua_sethook(L, load_hook, LUA_MASKCOUNT, 100000);
	int r = lua_pcall(L, 0, 0, 0);
	lua_sethook(L, NULL, 0, 0);
	e->load = NULL;
	set_lookups(L, e, e->ref_globals);
	if (r) {
		/* luaExtractErrorInformation: a string gets ERR, a table its err */
		const char *msg = NULL;
		char buf[512];
		if (lua_istable(L, -1)) {
			lua_getfield(L, -1, "err");
			if (lua_isstring(L, -1))
				msg = lua_tostring(L, -1);
			snprintf(buf, sizeof(buf), "%s", msg ? msg : "");
			lua_pop(L, 1);
		} else {
			const char *s = lua_tostring(L, -1);
			snprintf(buf, sizeof(buf), "ERR %s", s ? s : "");
		}
		snprintf(err, errsize, "ERR Error registering functions: %s", buf);
		lua_pop(L, 1);
		return -EINVAL;
	}
	return 0;
}

/* Loads CODE into a new library (heap) on this thread's FUNCTION engine;
 * NULL with the error in ERR. The library's callbacks are not kept in the
 * engine's state. */
static struct fn_lib *lib_create(const char *code, size_t len, bool timeout, char *err, size_t errsize)
{
	char *name;
	size_t body;
	if (parse_metadata(code, len, &name, &body, err, errsize) < 0)
		return NULL;
	struct engine *e = script_engine_get(true, atomic_load_explicit(&fgen, memory_order_acquire));
	struct fn_load ld;
	int r = engine_load(e, code + body, len - body, timeout, &ld, err, errsize);
	if (r == 0 && ld.nfns == 0) {
		snprintf(err, errsize, "ERR No functions registered");
		r = -EINVAL;
	}
	if (r < 0) {
		load_free(e->L, &ld);
		zr_free(name);
		return NULL;
	}
	struct fn_lib *l = zr_calloc(1, sizeof(*l));
	l->name = name;
	l->code = zr_malloc(len + 1);
	memcpy(l->code, code, len);
	l->code[len] = '\0';
	l->len = len;
	l->fns = ld.fns;
	l->nfns = ld.nfns;
	ld.fns = NULL;
	ld.nfns = 0;
	load_free(e->L, &ld);
	return l;
}

/* Whether a function of L is in C outside the library at SKIP; the
 * error ("Function x already exists") in ERR. */
static bool collides(struct fn_ctx *c, const struct fn_lib *l, const struct fn_lib *skip, char *err,
		     size_t errsize)
{
	for (int i = 0; i < l->nfns; i++)
		if (ctx_find_fn(c, l->fns[i].name, strlen(l->fns[i].name), skip, NULL)) {
			snprintf(err, errsize, "ERR Function %s already exists", l->fns[i].name);
			return true;
		}
	return false;
}

/* functionsCreateWithLibraryCtx against C (whose lock the caller holds
 * when it is the registry's, except around the Lua run: LOCKED says it
 * must be dropped then). */
static int ctx_create(struct fn_ctx *c, const char *code, size_t len, bool replace, bool timeout, bool locked,
		      char *name, size_t namesize, char *err, size_t errsize)
{
	ZR_CHECK(!locked || zr_mutex_held(&freg.mu));
	char *lname = NULL;
	/* the metadata first: "Library 'x' already exists" comes before the code runs */
	size_t body;
	if (parse_metadata(code, len, &lname, &body, err, errsize) < 0)
		return -EINVAL;
	struct fn_lib **old = ctx_find_lib(c, lname, strlen(lname));
	if (old && !replace) {
		snprintf(err, errsize, "ERR Library '%s' already exists", lname);
		zr_free(lname);
		return -EINVAL;
	}
	zr_free(lname);
	if (locked)
		pthread_mutex_unlock(&freg.mu);
	struct fn_lib *l = lib_create(code, len, timeout, err, errsize);
	if (locked)
		pthread_mutex_lock(&freg.mu);
	if (!l)
		return -EINVAL;
	/* again: the registry may have changed while the code ran */
	old = ctx_find_lib(c, l->name, strlen(l->name));
	if (old && !replace) {
		snprintf(err, errsize, "ERR Library '%s' already exists", l->name);
		lib_free(l);
		return -EINVAL;
	}
	if (collides(c, l, old ? *old : NULL, err, errsize)) {
		lib_free(l);
		return -EINVAL;
	}
	if (name)
		snprintf(name, namesize, "%s", l->name);
	if (old)
		ctx_swap(c, old, l);
	else
		ctx_link(c, l);
	return 0;
}

/* --- the registry ------------------------------------------------------------ */

int function_load(const char *code, size_t len, bool replace, bool timeout, char *name, size_t namesize,
		  char *err, size_t errsize)
{
	pthread_mutex_lock(&freg.mu);
	int r = ctx_create(&freg.ctx, code, len, replace, timeout, true, name, namesize, err, errsize);
	if (r == 0)
		bump_locked();
	pthread_mutex_unlock(&freg.mu);
	return r;
}

int function_delete(const char *name, size_t len)
{
	pthread_mutex_lock(&freg.mu);
	struct fn_lib **p = ctx_find_lib(&freg.ctx, name, len);
	if (p) {
		struct fn_lib *l = *p;
		ctx_unlink(&freg.ctx, p);
		lib_free(l);
		bump_locked();
	}
	pthread_mutex_unlock(&freg.mu);
	return p ? 0 : -ENOENT;
}

void function_flush(void)
{
	pthread_mutex_lock(&freg.mu);
	ctx_clear(&freg.ctx);
	bump_locked();
	pthread_mutex_unlock(&freg.mu);
}

void function_counts(uint64_t *libraries, uint64_t *functions)
{
	pthread_mutex_lock(&freg.mu);
	*libraries = freg.ctx.nlibs;
	*functions = freg.ctx.nfns;
	pthread_mutex_unlock(&freg.mu);
}

uint64_t function_memory(void)
{
	uint64_t bytes = 0;
	pthread_mutex_lock(&freg.mu);
	for (const struct fn_lib *l = freg.ctx.head; l; l = l->next) {
		bytes += sizeof(*l) + strlen(l->name) + 1 + l->len + 1 + sizeof(*l->fns) * (uint64_t)l->nfns;
		for (int i = 0; i < l->nfns; i++)
			bytes += strlen(l->fns[i].name) + 1 +
				 (l->fns[i].desc ? strlen(l->fns[i].desc) + 1 : 0);
	}
	pthread_mutex_unlock(&freg.mu);
	return bytes;
}

void function_registry_free(void)
{
	function_flush();
}

static void reply_flags(struct obuf *out, uint32_t flags)
{
	long n = 0;
	for (size_t k = 0; k < SCRIPT_FLAG_NAMES; k++)
		n += (flags & script_flag_names[k].flag) != 0;
	reply_set(out, n);
	for (size_t k = 0; k < SCRIPT_FLAG_NAMES; k++)
		if (flags & script_flag_names[k].flag)
			reply_simple(out, script_flag_names[k].name);
}

void function_reply_list(struct obuf *out, const char *pattern, size_t plen, bool withcode)
{
	pthread_mutex_lock(&freg.mu);
	long n = 0;
	for (struct fn_lib *l = freg.ctx.head; l; l = l->next)
		n += !pattern || zr_glob_match(pattern, plen, l->name, strlen(l->name), true);
	reply_array(out, n);
	for (struct fn_lib *l = freg.ctx.head; l; l = l->next) {
		if (pattern && !zr_glob_match(pattern, plen, l->name, strlen(l->name), true))
			continue;
		reply_map(out, withcode ? 4 : 3);
		reply_bulk_cstr(out, "library_name");
		reply_bulk_cstr(out, l->name);
		reply_bulk_cstr(out, "engine");
		reply_bulk_cstr(out, "LUA");
		reply_bulk_cstr(out, "functions");
		reply_array(out, l->nfns);
		for (int i = 0; i < l->nfns; i++) {
			reply_map(out, 3);
			reply_bulk_cstr(out, "name");
			reply_bulk_cstr(out, l->fns[i].name);
			reply_bulk_cstr(out, "description");
			if (l->fns[i].desc)
				reply_bulk_cstr(out, l->fns[i].desc);
			else
				reply_null(out);
			reply_bulk_cstr(out, "flags");
			reply_flags(out, l->fns[i].flags);
		}
		if (withcode) {
			reply_bulk_cstr(out, "library_code");
			reply_bulk(out, l->code, l->len);
		}
	}
	pthread_mutex_unlock(&freg.mu);
}

void function_foreach_code(function_code_fn fn, void *ctx)
{
	/* copied under the lock, called without it */
	pthread_mutex_lock(&freg.mu);
	size_t n = 0;
	for (struct fn_lib *l = freg.ctx.head; l; l = l->next)
		n++;
	char **codes = zr_malloc(sizeof(char *) * (n + 1));
	size_t *lens = zr_malloc(sizeof(size_t) * (n + 1));
	size_t i = 0;
	for (struct fn_lib *l = freg.ctx.head; l; l = l->next, i++) {
		codes[i] = zr_malloc(l->len + 1);
		memcpy(codes[i], l->code, l->len + 1);
		lens[i] = l->len;
	}
	pthread_mutex_unlock(&freg.mu);
	for (i = 0; i < n; i++) {
		fn(ctx, codes[i], lens[i]);
		zr_free(codes[i]);
	}
	zr_free(codes);
	zr_free(lens);
}

/* --- RESTORE ------------------------------------------------------------------ */

/* function_payload_each's callback: one library into the set CTX. */
static int restore_one(void *ctx, const char *code, size_t len, char *err, size_t errsize)
{
	return ctx_create(ctx, code, len, false, false, false, NULL, 0, err, errsize);
}

int function_restore(const char *payload, size_t len, enum function_restore_policy policy, char *err,
		     size_t errsize)
{
	/* the payload's libraries are loaded into a set of their own first:
	 * a bad one leaves the registry as it was */
	struct fn_ctx tmp = { 0 };
	int rc = -EINVAL;
	if (function_payload_each(payload, len, restore_one, &tmp, err, errsize) < 0)
		goto out;
	pthread_mutex_lock(&freg.mu);
	if (policy == FUNCTION_RESTORE_FLUSH) {
		ctx_clear(&freg.ctx);
		freg.ctx = tmp;
		tmp = (struct fn_ctx){ 0 };
		bump_locked();
		rc = 0;
	} else {
		/* libraryJoin: every name checked before anything changes */
		bool ok = true;
		for (struct fn_lib *l = tmp.head; l && ok; l = l->next) {
			struct fn_lib **old = ctx_find_lib(&freg.ctx, l->name, strlen(l->name));
			if (old && policy == FUNCTION_RESTORE_APPEND) {
				snprintf(err, errsize, "ERR Library %s already exists", l->name);
				ok = false;
			}
		}
		for (struct fn_lib *l = tmp.head; l && ok; l = l->next) {
			for (int i = 0; i < l->nfns && ok; i++) {
				struct fn_lib *owner = ctx_find_fn(&freg.ctx, l->fns[i].name,
								   strlen(l->fns[i].name), NULL, NULL);
				/* a library being replaced leaves its functions' names free */
				if (owner && ctx_find_lib(&tmp, owner->name, strlen(owner->name)))
					owner = NULL;
				if (owner) {
					snprintf(err, errsize, "ERR Function %s already exists",
						 l->fns[i].name);
					ok = false;
				}
			}
		}
		if (ok) {
			while (tmp.head) {
				struct fn_lib *l = tmp.head;
				ctx_unlink(&tmp, &tmp.head);
				struct fn_lib **old = ctx_find_lib(&freg.ctx, l->name, strlen(l->name));
				if (old)
					ctx_swap(&freg.ctx, old, l);
				else
					ctx_link(&freg.ctx, l);
			}
			bump_locked();
			rc = 0;
		}
	}
	pthread_mutex_unlock(&freg.mu);
out:
	ctx_clear(&tmp);
	return rc;
}

/* --- FCALL ------------------------------------------------------------------- */

/* Pushes NAME in lower case: the key of a function in an engine's tables
 * (FCALL finds a function in any case). */
static void push_lower(lua_State *L, const char *name, size_t len)
{
	luaL_Buffer b;
	luaL_buffinit(L, &b);
	for (size_t i = 0; i < len; i++)
		luaL_addchar(&b, (char)tolower((unsigned char)name[i]));
	luaL_pushresult(&b);
}

/* Whether E's state has function NAME (any case); *FLAGS its flags. */
static bool engine_has(struct engine *e, const char *name, size_t len, uint32_t *flags)
{
	lua_State *L = e->L;
	lua_rawgeti(L, LUA_REGISTRYINDEX, e->ref_flags);
	push_lower(L, name, len);
	lua_rawget(L, -2);
	bool have = lua_isnumber(L, -1);
	if (have)
		*flags = (uint32_t)lua_tonumber(L, -1);
	lua_pop(L, 2);
	return have;
}

/* Adds the callbacks and flags of the library LD loaded on E to E's
 * tables, by lower-case name, and the names as registered. */
static void engine_keep(struct engine *e, struct fn_load *ld)
{
	lua_State *L = e->L;
	for (int i = 0; i < ld->nfns; i++) {
		const char *n = ld->fns[i].name;
		lua_rawgeti(L, LUA_REGISTRYINDEX, e->ref_scripts);
		push_lower(L, n, strlen(n));
		lua_rawgeti(L, LUA_REGISTRYINDEX, ld->ref_table);
		lua_getfield(L, -1, n);
		lua_remove(L, -2);
		lua_rawset(L, -3);
		lua_pop(L, 1);
		lua_rawgeti(L, LUA_REGISTRYINDEX, e->ref_flags);
		push_lower(L, n, strlen(n));
		lua_pushnumber(L, ld->fns[i].flags);
		lua_rawset(L, -3);
		lua_pop(L, 1);
		lua_rawgeti(L, LUA_REGISTRYINDEX, e->ref_names);
		push_lower(L, n, strlen(n));
		lua_pushstring(L, n);
		lua_rawset(L, -3);
		lua_pop(L, 1);
	}
}

int function_prepare(const char *name, size_t len, uint32_t *flags, char **canon, char *err, size_t errsize)
{
	*canon = NULL;
	struct engine *e = script_engine_get(true, atomic_load_explicit(&fgen, memory_order_acquire));
	if (!engine_has(e, name, len, flags)) {
		pthread_mutex_lock(&freg.mu);
		uint64_t gen = atomic_load_explicit(&fgen, memory_order_relaxed);
		struct fn_lib *l = ctx_find_fn(&freg.ctx, name, len, NULL, NULL);
		char *code = NULL;
		size_t clen = 0;
		if (l) {
			code = zr_malloc(l->len + 1);
			memcpy(code, l->code, l->len + 1);
			clen = l->len;
		}
		pthread_mutex_unlock(&freg.mu);
		if (!code)
			return -ENOENT;
		e = script_engine_get(true, gen);
		char *lname;
		size_t body;
		int r = parse_metadata(code, clen, &lname, &body, err, errsize);
		if (r == 0) {
			zr_free(lname);
			struct fn_load ld;
			r = engine_load(e, code + body, clen - body, false, &ld, err, errsize);
			if (r == 0)
				engine_keep(e, &ld);
			load_free(e->L, &ld);
		}
		zr_free(code);
		if (r < 0)
			return r;
		if (!engine_has(e, name, len, flags))
			return -ENOENT;
	}
	lua_State *L = e->L;
	lua_rawgeti(L, LUA_REGISTRYINDEX, e->ref_names);
	push_lower(L, name, len);
	lua_rawget(L, -2);
	*canon = zr_strdup(lua_tostring(L, -1));
	lua_pop(L, 2);
	return 0;
}

void function_execute(struct script_run *run, struct obuf *out)
{
	struct engine *e = script_engine_of();
	lua_State *L = e->L;
	lua_rawgeti(L, LUA_REGISTRYINDEX, e->ref_proxy);
	lua_replace(L, LUA_GLOBALSINDEX);
	lua_rawgeti(L, LUA_REGISTRYINDEX, e->ref_scripts);
	push_lower(L, run->sha, strlen(run->sha));
	lua_rawget(L, -2);
	lua_remove(L, -2);
	if (!e->function || !lua_isfunction(L, -1)) { /* not prepared: the caller's bug */
		lua_pop(L, 1);
		reply_error(out, "ERR function not prepared");
		return;
	}
	run->function = true;
	script_push_arrays(L, run);
	script_engine_call(e, run, 2, out);
}

uint64_t function_registry_generation(void)
{
	return atomic_load_explicit(&fgen, memory_order_acquire);
}
