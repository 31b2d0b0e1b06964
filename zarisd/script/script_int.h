/* script_int — what the script module's files share (not its API). */
#ifndef ZR_SCRIPT_INT_H
#define ZR_SCRIPT_INT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "zarisd/proto/resp.h"

struct lua_State;
struct obuf;
struct script_run;
struct fn_load;

/* One thread's Lua state (script.c), the EVAL one or the FUNCTION one.
 * Invariant: run != NULL exactly while a script of this engine runs. */
struct engine {
	struct lua_State *L;
	bool function;	     /* the FUNCTION engine: libraries, not bodies by SHA */
	uint64_t generation; /* its registry's when L was made */
	struct script_run *run;
	int resp;	      /* redis.setresp of the running script */
	int ref_handler;      /* registry refs: the error handler, */
	int ref_scripts;      /* sha -> compiled function (FUNCTION: name -> callback), */
	int ref_flags;	      /* sha -> shebang flags (FUNCTION: library name -> true, loaded), */
	int ref_readonly;     /* the set of read-only tables (weak keys), */
	int ref_globals;      /* the real globals table */
	int ref_proxy;	      /* the globals scripts see */
	int ref_proxy_mt;     /* the proxy's metatable (its __index: the globals, or a library's load env) */
	int ref_loadenv;      /* FUNCTION: what a library's code sees while it loads */
	int ref_names;	      /* FUNCTION: lower-case name -> the name as registered */
	struct fn_load *load; /* FUNCTION: the library being loaded, while its code runs */
	unsigned gc_countdown;
	uint32_t rand_x[3]; /* redis.math.random's 48-bit state (Redis's rand.c) */
	char *argbuf;	    /* redis.call's argument copies */
	size_t argcap;
	struct resp_arg *argv;
	int argv_cap;
	_Atomic bool kill;  /* SCRIPT KILL asked for it */
	_Atomic bool dirty; /* the running script wrote (SCRIPT KILL reads it) */
	/* the bytes its Lua state holds: stored by its own thread only
	 * (relaxed: no shared read-modify-write per allocation), read by
	 * INFO through the engine list (script_vm_memory) */
	_Atomic size_t vm_bytes;
	struct engine *next_engine; /* the engine list, under its mutex */
};

/* The registry's generation: moves on every SCRIPT FLUSH (registry.c). */
uint64_t script_registry_generation(void);
/* The function registry's generation: moves on every change (function.c). */
uint64_t function_registry_generation(void);
/* Pushes RUN's KEYS and ARGV as two arrays (FCALL's callback arguments). */
void script_push_arrays(struct lua_State *L, const struct script_run *run);
/* Pushes Redis's error table {err = "CODE msg"} for S[0..LEN): "-CODE msg"
 * keeps its code, plain "msg" gets ERR (luaPushErrorBuff). */
void script_push_error(struct lua_State *L, const char *s, size_t len);
/* Whether the error table on top of L counts in the error statistics
 * when it reaches the client: false when it carries
 * ignore_error_stats_update (redis.call's errors, counted when the
 * command answered or was refused). */
bool script_error_counted(struct lua_State *L);
/* Writes the error table on top of L (not popped) as an error reply,
 * counted or not as script_error_counted says. */
void script_reply_error_table(struct lua_State *L, struct obuf *out);

/* This thread's engine of the kind FUNCTION, its state made (again) when
 * its generation is not GEN; it becomes the thread's current engine. */
struct engine *script_engine_get(bool function, uint64_t gen);
/* The thread's current engine (NULL before any). */
struct engine *script_engine_of(void);
/* Runs the function on top of E's stack with NARGS arguments above it
 * (the error handler is pushed below them here) for RUN, writing its reply
 * into OUT; pops them all. */
void script_engine_call(struct engine *e, struct script_run *run, int nargs, struct obuf *out);
/* Marks the table at IDX read-only / replaces the table on top of the
 * stack by a read-only proxy of it (the sandbox, script.c). */
void script_mark_readonly(struct lua_State *L, struct engine *e, int idx);
void script_make_proxy(struct lua_State *L, struct engine *e);
/* lua_CFunction: raises "Script attempted to access nonexistent global
 * variable" (a protected table's __index). */
int script_nonexistent_global(struct lua_State *L);
/* The FUNCTION engine's own parts of a new state (function.c): the load
 * environment, redis.register_function. */
void function_engine_init(struct engine *e);

/* Walks a FUNCTION DUMP payload (function_payload.c): checks its RDB
 * version and CRC64, then calls FN with each library's code, in order,
 * stopping at FN's first negative return, which it returns. A malformed
 * payload: -EINVAL with Redis's error text in ERR. */
typedef int (*function_payload_fn)(void *ctx, const char *code, size_t len, char *err, size_t errsize);
int function_payload_each(const char *payload, size_t len, function_payload_fn fn, void *ctx, char *err,
			  size_t errsize);

/* The flags' names, as a shebang (registry.c) and register_function
 * (function.c) take them, in Redis's order. */
#define SCRIPT_FLAG_NAMES 6
struct script_flag_name {
	const char *name;
	uint32_t flag; /* enum script_flag */
};
extern const struct script_flag_name script_flag_names[SCRIPT_FLAG_NAMES];

#endif
