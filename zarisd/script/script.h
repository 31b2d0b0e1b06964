/* script — the Lua scripting engine behind EVAL / EVALSHA / SCRIPT (Redis
 * 7.0's script_lua.c and eval.c, reply for reply).
 *
 * Two parts. The registry of script bodies by SHA1 is server-wide (one
 * mutex, its own: taken with or without shard locks held, never while
 * taking another lock), so SCRIPT LOAD on one worker serves EVALSHA on
 * every other; SCRIPT FLUSH empties it and bumps its generation. The
 * engine is per thread: each worker gets its own Lua 5.1 state on its
 * first script, compiles a body on its first use there and keeps the
 * compiled function until the registry's generation moves (the state is
 * then closed and made again, as Redis's scriptingReset).
 *
 * The engine knows no commands and no clients: redis.call reaches the
 * server through a struct script_host the caller supplies (commands/
 * cmd_script.c runs the command through the table and the dispatcher's
 * checks and hands back the RESP bytes its handler wrote, which the
 * engine parses into Lua values, so the conversion is exact by
 * construction). The script's own reply is written into an obuf.
 *
 * Threads: the registry functions from any thread; the engine functions
 * from the thread that owns the engine (the calling worker).
 */
#ifndef ZR_SCRIPT_H
#define ZR_SCRIPT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "zarisd/core/sha1.h"
#include "zarisd/proto/resp.h"

struct obuf;

/* Shebang flags (#!lua flags=...), Redis's SCRIPT_FLAG_* plus our own
 * allow-undeclared-keys. SCRIPT_FLAG_COMPAT: no shebang (Redis's
 * EVAL_COMPAT_MODE: the flags' checks do not apply). */
enum script_flag {
	SCRIPT_FLAG_NO_WRITES = 1u << 0,
	SCRIPT_FLAG_ALLOW_OOM = 1u << 1,
	SCRIPT_FLAG_ALLOW_STALE = 1u << 2,
	SCRIPT_FLAG_NO_CLUSTER = 1u << 3,
	SCRIPT_FLAG_ALLOW_CROSS_SLOT = 1u << 4,
	SCRIPT_FLAG_ALLOW_UNDECLARED = 1u << 5,
	SCRIPT_FLAG_COMPAT = 1u << 6,
};

/* Parses the shebang of BODY. Returns 0 with *FLAGS and *SKIP (bytes of
 * the shebang line, its '\n' kept so that line numbers stay) or -EINVAL
 * with Redis's error text in ERR ("Invalid script shebang", "Unexpected
 * flag in script shebang: x" ...), without the "ERR " code. */
int script_parse_shebang(const char *body, size_t len, uint32_t *flags, size_t *skip, char *err,
			 size_t errsize);

/* --- registry (any thread) ------------------------------------------------ */

/* Adds BODY (copied) under its SHA1, written into SHA (lower-case hex);
 * adding a body twice keeps one. */
void script_registry_add(const char *body, size_t len, char sha[ZR_SHA1_HEX_LEN + 1]);
/* Whether SHA (40 hex digits, any case) is registered. */
bool script_registry_exists(const char *sha, size_t len);
/* A heap copy of the body registered under SHA (caller frees, zr_free),
 * *LEN its length; NULL when none. */
char *script_registry_get(const char *sha, size_t len, size_t *blen);
/* Drops every body and bumps the generation (SCRIPT FLUSH). */
void script_registry_flush(void);
/* Scripts registered, and the bytes of their bodies (INFO memory). */
void script_registry_stats(uint64_t *count, uint64_t *bytes);
/* Frees the registry at exit. */
void script_registry_free(void);

/* --- engine (owning thread) ----------------------------------------------- */

/* What redis.call / pcall reach. CALL runs ARGV[0..ARGC) (borrowed for
 * the call) with the script's protocol RESP (2 or 3): it returns 0 with
 * *REPLY / *LEN the command's whole RESP reply (the host's bytes, valid
 * until its next call), or -1 with a rejection's text in ERR (Redis's,
 * with or without its code: "Unknown Redis command called from script",
 * "-NOSCRIPT ..."), the command not run. */
struct script_host {
	int (*call)(void *ctx, struct resp_arg *argv, int argc, int resp, const char **reply, size_t *len,
		    char *err, size_t errsize);
	/* Optional (NULL: nobody else is served): called from the script's
	 * hook once it runs past busy-reply-threshold, at most once per
	 * millisecond, so that the host answers its other clients meanwhile
	 * (-BUSY, SCRIPT KILL, SHUTDOWN NOSAVE), as Redis's event loop does
	 * between a busy script's steps. A SCRIPT KILL it serves is seen by
	 * the same hook right after. */
	void (*serve)(void *ctx);
	void *ctx;
};

/* redis.set_repl's flags (Redis's PROPAGATE_AOF | PROPAGATE_REPL): where
 * the script's write commands from then on propagate. The host makes
 * their journal records for the log only (AOF), for replicas only
 * (REPLICA) or none (NONE). */
enum script_repl {
	SCRIPT_REPL_NONE = 0,
	SCRIPT_REPL_AOF = 1,
	SCRIPT_REPL_REPLICA = 2,
	SCRIPT_REPL_ALL = 3,
};

/* One script to run (EVAL's or FCALL's arguments). */
struct script_run {
	const char *sha; /* lower-case hex of the body (FCALL: the function's name), NUL-terminated */
	bool function;	 /* FCALL: KEYS and ARGV are the callback's two arguments, not globals */
	const struct resp_arg *argv; /* the whole command (FUNCTION STATS shows a busy one's) */
	int argc;
	const struct resp_arg *keys;
	int nkeys;
	const struct resp_arg *args;
	int nargs;
	struct script_host host;
	int64_t busy_ms;	 /* busy-reply-threshold (0: never busy) */
	const _Atomic int *stop; /* non-zero: the server stops; a script that wrote nothing is ended */
	/* the engine's, while it runs: */
	int64_t start_ms;  /* CLOCK_MONOTONIC at the start */
	bool wrote;	   /* a write command ran (script_mark_write): SCRIPT KILL refuses */
	int repl;	   /* enum script_repl: redis.set_repl's, SCRIPT_REPL_ALL at the start */
	bool busy;	   /* ran past busy_ms: counted by script_any_busy */
	int64_t served_ms; /* when host.serve was last called */
};

/* Finds the compiled function of SHA on this thread, compiling BODY (may
 * be NULL: looked up in the registry) on first use. Returns 0 with *FLAGS
 * the script's shebang flags; -ENOENT when SHA is not registered (the
 * caller answers NOSCRIPT); -EINVAL after writing the compile or shebang
 * error (Redis's full text, code included) into ERR. */
int script_prepare(const char *sha, const char *body, size_t len, uint32_t *flags, char *err, size_t errsize);

/* Runs the script prepared for RUN->sha and writes its reply (or its
 * error, Redis's text) into OUT, speaking OUT's protocol. */
void script_execute(struct script_run *run, struct obuf *out);

/* The host, before running a write command for RUN: from then on the
 * script cannot be killed (Redis's UNKILLABLE). Owning thread. */
void script_mark_write(struct script_run *run);

/* SCRIPT KILL (FUNCTION false) and FUNCTION KILL (true), any thread:
 * asks every running script of that kind to stop at its next hook (every
 * 100000 instructions). 0 when one was asked; -ENOENT when none runs
 * (NOTBUSY); -EPERM when one has written (UNKILLABLE), and then none is
 * asked; -EBUSY when only scripts of the other kind run (Redis answers
 * that kind's BUSY text). */
int script_kill(bool function);
/* Whether a script has run past busy-reply-threshold (other clients are
 * answered -BUSY). Any thread. */
bool script_any_busy(void);
/* Whether this thread is inside a script (its host's serve hook is
 * running the thread's other clients: they must not wait for the shard
 * locks the script holds). */
bool script_running_here(void);
/* Whether every script past busy-reply-threshold is a function (the BUSY
 * text names FUNCTION KILL then). Any thread. */
bool script_busy_is_function(void);
/* FUNCTION STATS's running_script: writes the map {name, command,
 * duration_ms} of a function past busy-reply-threshold into OUT and
 * returns true; false (nothing written) when none is. Any thread. */
bool script_reply_busy_function(struct obuf *out);

/* INFO stats scripts_all_shards_locked: scripts run with every shard
 * lock held (allow-undeclared-keys). Any thread. */
void script_count_all_locked(void);
uint64_t script_all_locked_runs(void);

/* INFO memory's used_memory_vm_eval / used_memory_vm_functions: the
 * bytes the Lua states of every thread hold, the EVAL engines' into
 * *EVAL and the FUNCTION engines' into *FUNCTIONS (a thread's state is
 * made at its first script, so 0 before any). Any thread. */
void script_vm_memory(uint64_t *eval, uint64_t *functions);

/* Closes this thread's Lua states that SCRIPT FLUSH or a change of the
 * functions made stale, freeing their memory now (as Redis's flush does)
 * rather than at the thread's next script, which makes them again; not
 * while a script runs here. A worker's timer calls it. */
void script_thread_tick(void);

/* Frees this thread's engine (also done when the thread exits). */
void script_thread_exit(void);

/* --- functions: the library registry (any thread) ------------------------- *
 *
 * Libraries by name, server-wide, under one leaf mutex (as the script
 * registry): FUNCTION LOAD on one worker serves FCALL on every other.
 * Every change bumps the registry's generation; each worker's FUNCTION
 * engine (its own Lua state) is made again on its next FCALL after one and
 * loads, lazily, the libraries of the functions it is asked to run. The
 * listing order is the order the libraries were created in (Redis's is a
 * dict's, seeded at random per process), functions in registration order. */

/* FUNCTION LOAD [REPLACE]: checks CODE's "#!lua name=<lib>" metadata, runs
 * it once in this thread's FUNCTION engine in the load sandbox (only
 * redis.register_function, redis.log and the version fields; TIMEOUT: at
 * most 500 ms, as Redis's), then adds the library. Returns 0 with the
 * library's name in NAME, or -EINVAL with Redis's error text, code
 * included ("ERR Library 'x' already exists") in ERR. Owning thread of the
 * engine (a worker, or the replay applier's thread). */
int function_load(const char *code, size_t len, bool replace, bool timeout, char *name, size_t namesize,
		  char *err, size_t errsize);
/* FUNCTION DELETE: 0, or -ENOENT when no library has that name. */
int function_delete(const char *name, size_t len);
/* FUNCTION FLUSH: drops every library. */
void function_flush(void);
/* FUNCTION LIST's reply into OUT: the libraries whose name matches
 * PATTERN (Redis's glob, case-sensitive; NULL: all), with their code when
 * WITHCODE. */
void function_reply_list(struct obuf *out, const char *pattern, size_t plen, bool withcode);
/* Libraries and functions registered (FUNCTION STATS, INFO). */
void function_counts(uint64_t *libraries, uint64_t *functions);
/* INFO's used_memory_functions: the bytes the registry's libraries hold
 * (their code, names, descriptions and records). */
uint64_t function_memory(void);
/* FUNCTION DUMP: Redis 7.0's payload (an RDB_OPCODE_FUNCTION2 record per
 * library, the RDB version, the CRC64), a heap buffer the caller frees. */
char *function_dump(size_t *len);
/* FUNCTION RESTORE: how the payload's libraries meet the existing ones. */
enum function_restore_policy {
	FUNCTION_RESTORE_APPEND,  /* a name already there: refused, nothing changes */
	FUNCTION_RESTORE_REPLACE, /* a library of the same name is replaced */
	FUNCTION_RESTORE_FLUSH,	  /* the existing libraries are dropped first */
};
/* Loads the libraries of PAYLOAD (a FUNCTION DUMP's, ours or Redis's) as
 * FUNCTION LOAD does each, all or none. 0, or -EINVAL with Redis's error
 * text in ERR. Owning thread of the engine, as function_load. */
int function_restore(const char *payload, size_t len, enum function_restore_policy policy, char *err,
		     size_t errsize);
/* Calls FN with each library's code, in listing order (a snapshot of the
 * registry: FN may do anything but change it). */
typedef void (*function_code_fn)(void *ctx, const char *code, size_t len);
void function_foreach_code(function_code_fn fn, void *ctx);
/* Frees the registry at exit. */
void function_registry_free(void);

/* --- FCALL (owning thread) -------------------------------------------------- */

/* Makes function NAME (any case, as Redis finds it) ready on this
 * thread's FUNCTION engine (its library's code loaded there on first use).
 * Returns 0 with *FLAGS its flags (never SCRIPT_FLAG_COMPAT) and *CANON
 * its name as registered (heap, the caller frees; the run's name);
 * -ENOENT when no library has it (the caller answers "Function not
 * found"); -EINVAL with the error in ERR (its library's code failed
 * here). */
int function_prepare(const char *name, size_t len, uint32_t *flags, char **canon, char *err, size_t errsize);
/* Runs the function prepared for RUN->sha (its name) with KEYS and ARGV
 * as its two arguments and writes its reply into OUT. */
void function_execute(struct script_run *run, struct obuf *out);

/* Lua 5.1 <-> RESP: pushes onto L the Lua value of the RESP reply at
 * P[0..LEN) (Redis's redisProtocolToLuaType); returns the bytes read, 0
 * when the reply is malformed or cut short (nothing pushed). Exposed for
 * tests. */
struct lua_State;
size_t script_resp_to_lua(struct lua_State *L, const char *p, size_t len);
/* Pops the value on top of L and writes it to OUT as Redis's
 * luaReplyToRedisReply does; RESP2_SCRIPT: the script's protocol was 2
 * (booleans true -> :1, false -> null). */
void script_lua_to_resp(struct lua_State *L, struct obuf *out, bool resp2_script);

#endif
