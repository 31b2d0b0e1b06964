/* script_int — what the script module's files share (not its API). */
#ifndef ZR_SCRIPT_INT_H
#define ZR_SCRIPT_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct lua_State;
struct obuf;

/* The registry's generation: moves on every SCRIPT FLUSH (registry.c). */
uint64_t script_registry_generation(void);
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

#endif
