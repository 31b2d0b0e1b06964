/* table — the one command table: lookup by name, iteration, subcommands.
 * command_table_init() runs once before the workers start (it numbers the
 * rows and builds the lookup index); everything else is read-only and may
 * be called from any thread.
 */
#ifndef ZR_TABLE_H
#define ZR_TABLE_H

#include <stdbool.h>
#include <stddef.h>

#include "zarisd/server/command.h"
#include "zarisd/proto/resp.h"

void command_table_init(void);
/* The top-level row named NAME (case-insensitive), or NULL. */
const struct command *command_lookup(const char *name, size_t len);
/* The subcommand row of container CMD named SUB, or NULL. */
const struct command *command_lookup_sub(const struct command *cmd, const char *sub, size_t len);
/* Rows including subcommands (size of per-command stats arrays). */
unsigned command_table_size(void);
/* Top-level rows, for COMMAND / COMMAND COUNT / LIST. */
unsigned command_count(void);
const struct command *command_at(unsigned i);
/* The row with stats id ID (top-level or subcommand). */
const struct command *command_by_id(unsigned id);
/* The keys that argv[cmd->keynum_index] counts (command.h): true with
 * their positions argv[*FIRST .. *LAST], step cmd->keynum_step, when the
 * row has a count and it is an integer >= 1 (string2ll's syntax) whose
 * keys all lie inside ARGV[0..ARGC). False otherwise: the handler will
 * reply the error, and nothing beyond the row's fixed keys is a key. Any
 * thread; reads ARGV only. */
bool command_keynum_range(const struct command *cmd, const struct resp_arg *argv, int argc, int *first,
			  int *last);

/* Writes "get" or "config|get" into BUF. */
size_t command_full_name(const struct command *cmd, char *buf, size_t size);

#endif
