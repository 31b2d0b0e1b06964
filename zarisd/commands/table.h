/* table — the one command table: lookup by name, iteration, subcommands,
 * the names of the ACL categories. command_table_init() runs once before
 * the workers start (it numbers the rows, builds the lookup index and
 * fills in the fields each row's data implies); everything else is
 * read-only and may be called from any thread.
 */
#ifndef ZR_TABLE_H
#define ZR_TABLE_H

#include <stdbool.h>
#include <stddef.h>

#include "zarisd/server/command.h"
#include "zarisd/proto/resp.h"

/* Numbers the rows, builds the lookup index and fills in each row's
 * start-up fields (command.h): every ACL category, the legacy key range,
 * movablekeys, the one-key shortcut. Once, before any other thread runs. */
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
/* The name of ACL category bit I (command.h enum acl_category: "keyspace"
 * for ACL_CAT_KEYSPACE, bit 0), or NULL past the last. */
const char *command_acl_category_name(unsigned i);

/* Writes "get" or "config|get" into BUF. */
size_t command_full_name(const struct command *cmd, char *buf, size_t size);

#endif
