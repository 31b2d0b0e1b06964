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
	void *ctx;
};

/* One script to run (EVAL's arguments). */
struct script_run {
	const char *sha; /* lower-case hex of the body, NUL-terminated */
	const struct resp_arg *keys;
	int nkeys;
	const struct resp_arg *args;
	int nargs;
	struct script_host host;
	int64_t busy_ms;	 /* busy-reply-threshold (0: never busy) */
	const _Atomic int *stop; /* non-zero: the server stops; a script that wrote nothing is ended */
	/* the engine's, while it runs: */
	int64_t start_ms; /* CLOCK_MONOTONIC at the start */
	bool wrote;	  /* a write command ran (script_mark_write): SCRIPT KILL refuses */
	bool busy;	  /* ran past busy_ms: counted by script_any_busy */
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

/* SCRIPT KILL, any thread: asks every running script to stop at its next
 * hook (every 100000 instructions). 0 when one was asked; -ENOENT when
 * none runs (NOTBUSY); -EPERM when one has written (UNKILLABLE), and then
 * none is asked. */
int script_kill(void);
/* Whether a script has run past busy-reply-threshold (other clients are
 * answered -BUSY). Any thread. */
bool script_any_busy(void);

/* INFO stats scripts_all_shards_locked: scripts run with every shard
 * lock held (allow-undeclared-keys). Any thread. */
void script_count_all_locked(void);
uint64_t script_all_locked_runs(void);

/* Frees this thread's engine (also done when the thread exits). */
void script_thread_exit(void);

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
