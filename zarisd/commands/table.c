/* table — the one command table. Every row: name, arity, flags, ACL
 * categories, key specs, handler, docs, and where Redis has them tips and
 * a getkeys; arity, flags, categories, key specs and tips are Redis
 * 7.0's, as redis-server 7.0 shows them in COMMAND INFO
 * (tests/integration/command_info_compare.t holds them to it). Each
 * section is owned by the cmd_<group>.c file named in its comment.
 * command_table_init numbers the rows and works out what follows from
 * them: the implied ACL categories, the legacy key range, movablekeys and
 * the one-key shortcut. */
#include "zarisd/commands/table.h"

#include <assert.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zarisd/commands/handlers.h"
#include "zarisd/commands/keyiter.h"
#include "zarisd/core/util.h"

/* command flags (command.h enum cmd_flag) */
#define W CMD_WRITE
#define R CMD_READONLY
#define M CMD_DENYOOM
#define A CMD_ADMIN
#define F CMD_FAST
#define L CMD_LOADING
#define S CMD_STALE
#define NA CMD_NOAUTH
#define NS CMD_NOSCRIPT
#define NM CMD_NOMULTI
#define BL CMD_BLOCKING
#define PS CMD_PUBSUB
#define AB CMD_ALLOW_BUSY
#define NAL CMD_NO_ASYNC_LOADING
#define KL CMD_KEYLESS
#define WD CMD_WHOLEDB
#define PR CMD_PROTECTED
#define EX CMD_EXEC
#define RE CMD_RANDOM_EFFECT
#define MW CMD_MAY_WRITE
#define SUB CMD_SUBSCRIBED
#define NOW CMD_MULTI_NOW

/* the ACL categories Redis lists for a command (the implied ones are
 * added at start-up: command.h enum acl_category) */
#define C_KEYSPACE ACL_CAT_KEYSPACE
#define C_STRING ACL_CAT_STRING
#define C_LIST ACL_CAT_LIST
#define C_SET ACL_CAT_SET
#define C_ZSET ACL_CAT_SORTEDSET
#define C_HASH ACL_CAT_HASH
#define C_BITMAP ACL_CAT_BITMAP
#define C_HLL ACL_CAT_HYPERLOGLOG
#define C_ADMIN ACL_CAT_ADMIN
#define C_DANGEROUS ACL_CAT_DANGEROUS
#define C_CONN ACL_CAT_CONNECTION
#define C_TXN ACL_CAT_TRANSACTION
#define C_SCRIPTING ACL_CAT_SCRIPTING

/* key spec flags (command.h enum key_spec_flag) */
#define RO KS_RO
#define RW KS_RW
#define OW KS_OW
#define RM KS_RM
#define ACC KS_ACCESS
#define UPD KS_UPDATE
#define INS KS_INSERT
#define DEL KS_DELETE
#define NOTKEY KS_NOT_KEY
#define VARF KS_VARIABLE_FLAGS

/* clang-format off */
/* Key specs (command.h struct key_spec). A spec whose keys begin at
 * argv[I] and end LAST after it (negative: from the end), every STEP-th;
 * the same with COMMAND INFO's notes; a count at argv[I] and the keys after
 * it. */
#define SPEC_RANGE(fl, i, last, step)                                                          \
	{ .flags = (fl), .begin = { .pos = (i) }, .find = KS_FIND_RANGE,                       \
	  .fk.range = { .lastkey = (last), .keystep = (step) } }
#define SPEC_RANGE_NOTE(fl, i, last, step, note)                                               \
	{ .notes = (note), .flags = (fl), .begin = { .pos = (i) }, .find = KS_FIND_RANGE,      \
	  .fk.range = { .lastkey = (last), .keystep = (step) } }
#define SPEC_COUNTED(fl, i, note)                                                              \
	{ .notes = (note), .flags = (fl), .begin = { .pos = (i) }, .find = KS_FIND_KEYNUM,     \
	  .fk.keynum = { .keynumidx = 0, .firstkey = 1, .keystep = 1 } }
/* A row's specs, in Redis's order. */
#define SPECS(...)                                                                             \
	.key_specs = (const struct key_spec[]){ __VA_ARGS__ },                                \
	.key_specs_num = (int)(sizeof((const struct key_spec[]){ __VA_ARGS__ }) / sizeof(struct key_spec))
#define NOKEYS .key_specs = NULL, .key_specs_num = 0
/* the common shapes */
#define KEY1(fl) SPECS(SPEC_RANGE(fl, 1, 0, 1))                       /* GET key */
#define KEY_AT(i, fl) SPECS(SPEC_RANGE(fl, i, 0, 1))                  /* OBJECT ENCODING key */
#define KEYS_ALL(fl) SPECS(SPEC_RANGE(fl, 1, -1, 1))                  /* DEL key [key ...] */
#define KEYS_BUT_TIMEOUT(fl) SPECS(SPEC_RANGE(fl, 1, -2, 1))          /* BLPOP key [key ...] timeout */
#define KEY1_KEY2(fl1, fl2) SPECS(SPEC_RANGE(fl1, 1, 0, 1), SPEC_RANGE(fl2, 2, 0, 1)) /* SMOVE src dst */
/* SUNIONSTORE dst key [key ...] */
#define KEY1_SOURCES(fl) SPECS(SPEC_RANGE(fl, 1, 0, 1), SPEC_RANGE(RO | ACC, 2, -1, 1))
/* LMPOP numkeys key [key ...]: the count at argv[I] */
#define KEYS_COUNTED(fl, i) SPECS(SPEC_COUNTED(fl, i, NULL))
/* ZUNIONSTORE dst numkeys key [key ...] */
#define KEY1_COUNTED(fl) SPECS(SPEC_RANGE(fl, 1, 0, 1), SPEC_COUNTED(RO | ACC, 2, NULL))
/* where COMMAND GETKEYS goes when a count does not parse (keyiter.h) */
#define GETKEYS_COUNTED .getkeys = keyiter_getkeys_counted

/* Tips, in Redis's order for the row. */
#define TIPS(...) .tips = (const char *const[]){ __VA_ARGS__, NULL }
#define T_NONDET "nondeterministic_output"
#define T_NONDET_ORDER "nondeterministic_output_order"
#define T_ALL_SHARDS "request_policy:all_shards"
#define T_ALL_NODES "request_policy:all_nodes"
#define T_MULTI_SHARD "request_policy:multi_shard"
#define T_REQ_SPECIAL "request_policy:special"
#define T_ALL_SUCCEEDED "response_policy:all_succeeded"
#define T_ONE_SUCCEEDED "response_policy:one_succeeded"
#define T_AGG_SUM "response_policy:agg_sum"
#define T_AGG_MIN "response_policy:agg_min"
#define T_AGG_AND "response_policy:agg_logical_and"
#define T_SPECIAL "response_policy:special"

#define SCRIPT_NOTES_RW "We cannot tell how the keys will be used so we assume the worst, RW and UPDATE"
#define SCRIPT_NOTES_RO "We cannot tell how the keys will be used so we assume the worst, RO and ACCESS"

/* One row per line reads as a table. The summary may be followed by more
 * fields, as designated initializers (TIPS(...), .getkeys = ...). */
#define ROW(n, ar, fl, cats, keys, h, grp, ver, ...)                                                   \
	{                                                                                              \
		.name = n, .arity = ar, .flags = (fl), .acl_categories = (cats), keys, .handler = h,   \
		.group = grp, .since = ver, .summary = __VA_ARGS__                                     \
	}
/* A script row (EVAL, FCALL): the keys counted by argv[2], with the
 * note its key spec carries in COMMAND INFO (NULL: none), as Redis's. */
#define ROW_SCRIPT(n, fl, kfl, h, note, ver, sum)                                                      \
	ROW(n, -3, (fl) | NS | S | CMD_SKIP_MONITOR | CMD_NO_MANDATORY_KEYS | CMD_SCRIPT, C_SCRIPTING, \
	    SPECS(SPEC_COUNTED(kfl, 2, note)), h, "scripting", ver, sum, GETKEYS_COUNTED)
/* A container: its subcommands are rows of their own; Redis shows it with
 * no flags and @slow. */
#define CONTAINER(n, ar, subs, grp, ver, sum)                                                          \
	{                                                                                              \
		.name = n, .arity = ar, .flags = CMD_CONTAINER, .subcommands = subs, .group = grp,     \
		.since = ver, .summary = sum                                                           \
	}
#define END                  \
	{                    \
		.name = NULL \
	}

/* FUNCTION (cmd_function.c): LOAD DELETE FLUSH RESTORE change the
 * libraries, whole-keyspace writes for the dispatcher (every shard lock:
 * ordered with a snapshot's instant) */
static struct command function_subcommands[] = {
	ROW("load", -3, NS | W | M | WD | KL, C_SCRIPTING, NOKEYS, cmd_function_load, "scripting", "7.0.0", "Create a function with the given arguments (name, code, description)", TIPS(T_ALL_SHARDS, T_ALL_SUCCEEDED)),
	ROW("delete", 3, NS | W | WD | KL, C_SCRIPTING, NOKEYS, cmd_function_delete, "scripting", "7.0.0", "Delete a function by name", TIPS(T_ALL_SHARDS, T_ALL_SUCCEEDED)),
	ROW("flush", -2, NS | W | WD | KL, C_SCRIPTING, NOKEYS, cmd_function_flush, "scripting", "7.0.0", "Deleting all functions", TIPS(T_ALL_SHARDS, T_ALL_SUCCEEDED)),
	ROW("kill", 2, NS | KL | AB, C_SCRIPTING, NOKEYS, cmd_function_kill, "scripting", "7.0.0", "Kill the function currently in execution.", TIPS(T_ALL_SHARDS, T_ONE_SUCCEEDED)),
	ROW("list", -2, NS | KL, C_SCRIPTING, NOKEYS, cmd_function_list, "scripting", "7.0.0", "List information about all the functions", TIPS(T_NONDET_ORDER)),
	ROW("stats", 2, NS | KL | AB, C_SCRIPTING, NOKEYS, cmd_function_stats, "scripting", "7.0.0", "Return information about the function currently running (name, description, duration)", TIPS(T_NONDET, T_ALL_SHARDS, T_SPECIAL)),
	ROW("dump", 2, NS | KL, C_SCRIPTING, NOKEYS, cmd_function_dump, "scripting", "7.0.0", "Dump all functions into a serialized binary payload"),
	ROW("restore", -3, NS | W | M | WD | KL, C_SCRIPTING, NOKEYS, cmd_function_restore, "scripting", "7.0.0", "Restore all the functions on the given payload", TIPS(T_ALL_SHARDS, T_ALL_SUCCEEDED)),
	ROW("help", 2, KL | L | S, C_SCRIPTING, NOKEYS, cmd_function_help, "scripting", "7.0.0", "Show helpful text about the different subcommands"),
	END,
};

static struct command script_subcommands[] = {
	ROW("load", 3, NS | S | KL, C_SCRIPTING, NOKEYS, cmd_script_load, "scripting", "2.6.0", "Loads a server-side Lua script to the script cache.", TIPS(T_ALL_NODES, T_ALL_SUCCEEDED)),
	ROW("exists", -3, NS | KL, C_SCRIPTING, NOKEYS, cmd_script_exists, "scripting", "2.6.0", "Determines whether server-side Lua scripts exist in the script cache.", TIPS(T_ALL_SHARDS, T_AGG_AND)),
	ROW("flush", -2, NS | KL, C_SCRIPTING, NOKEYS, cmd_script_flush, "scripting", "2.6.0", "Removes all server-side Lua scripts from the script cache.", TIPS(T_ALL_NODES, T_ALL_SUCCEEDED)),
	ROW("kill", 2, NS | KL | AB, C_SCRIPTING, NOKEYS, cmd_script_kill, "scripting", "2.6.0", "Terminates a server-side Lua script during execution.", TIPS(T_ALL_SHARDS, T_ONE_SUCCEEDED)),
	ROW("debug", 3, NS | KL, C_SCRIPTING, NOKEYS, cmd_script_debug, "scripting", "3.2.0", "Sets the debug mode of server-side Lua scripts."),
	ROW("help", 2, KL | L | S, C_SCRIPTING, NOKEYS, cmd_script_help, "scripting", "5.0.0", "Returns helpful text about the different subcommands."),
	END,
};

static struct command object_subcommands[] = {
	ROW("encoding", 3, R, C_KEYSPACE, KEY_AT(2, RO), cmd_object_encoding, "generic", "2.2.3", "Returns the internal encoding of a Redis object.", TIPS(T_NONDET)),
	ROW("freq", 3, R, C_KEYSPACE, KEY_AT(2, RO), cmd_object_freq, "generic", "4.0.0", "Returns the logarithmic access frequency counter of a Redis object.", TIPS(T_NONDET)),
	ROW("idletime", 3, R, C_KEYSPACE, KEY_AT(2, RO), cmd_object_idletime, "generic", "2.2.3", "Returns the time since the last access to a Redis object.", TIPS(T_NONDET)),
	ROW("refcount", 3, R, C_KEYSPACE, KEY_AT(2, RO), cmd_object_refcount, "generic", "2.2.3", "Returns the reference count of a value of a key.", TIPS(T_NONDET)),
	ROW("help", 2, KL | L | S, C_KEYSPACE, NOKEYS, cmd_object_help, "generic", "6.2.0", "Returns helpful text about the different subcommands."),
	END,
};

static struct command memory_subcommands[] = {
	ROW("usage", -3, R, 0, KEY_AT(2, RO), cmd_memory_usage, "server", "4.0.0", "Estimates the memory usage of a key."),
	ROW("stats", 2, KL, 0, NOKEYS, cmd_memory_stats, "server", "4.0.0", "Returns details about memory usage.", TIPS(T_NONDET, T_ALL_SHARDS, T_SPECIAL)),
	ROW("doctor", 2, KL, 0, NOKEYS, cmd_memory_doctor, "server", "4.0.0", "Outputs a memory problems report.", TIPS(T_NONDET, T_ALL_SHARDS, T_SPECIAL)),
	ROW("malloc-stats", 2, KL, 0, NOKEYS, cmd_memory_malloc_stats, "server", "4.0.0", "Returns the allocator statistics.", TIPS(T_NONDET, T_ALL_SHARDS, T_SPECIAL)),
	ROW("purge", 2, KL, 0, NOKEYS, cmd_memory_purge, "server", "4.0.0", "Asks the allocator to release memory.", TIPS(T_ALL_SHARDS, T_ALL_SUCCEEDED)),
	ROW("help", 2, KL | L | S, 0, NOKEYS, cmd_memory_help, "server", "4.0.0", "Returns helpful text about the different subcommands."),
	END,
};

static struct command cluster_subcommands[] = {
	ROW("help", 2, KL | L | S, 0, NOKEYS, cmd_cluster_help, "cluster", "5.0.0", "Returns helpful text about the different subcommands."),
	ROW("info", 2, KL | S, 0, NOKEYS, cmd_cluster_info, "cluster", "3.0.0", "Returns information about the state of a node.", TIPS(T_NONDET)),
	ROW("keyslot", 3, KL | S, 0, NOKEYS, cmd_cluster_keyslot, "cluster", "3.0.0", "Returns the hash slot for a key."),
	ROW("countkeysinslot", 3, KL | S, 0, NOKEYS, cmd_cluster_countkeysinslot, "cluster", "3.0.0", "Returns the number of keys in a hash slot."),
	ROW("getkeysinslot", 4, KL | S, 0, NOKEYS, cmd_cluster_getkeysinslot, "cluster", "3.0.0", "Returns the key names in a hash slot.", TIPS(T_NONDET)),
	ROW("myid", 2, KL | S, 0, NOKEYS, cmd_cluster_myid, "cluster", "3.0.0", "Returns the ID of a node."),
	ROW("myshardid", 2, KL | L | S, 0, NOKEYS, cmd_cluster_myshardid, "cluster", "7.2.0", "Returns the shard ID of a node."),
	ROW("nodes", 2, KL | S, 0, NOKEYS, cmd_cluster_nodes, "cluster", "3.0.0", "Returns the cluster configuration for a node.", TIPS(T_NONDET)),
	ROW("slots", 2, KL | S, 0, NOKEYS, cmd_cluster_slots, "cluster", "3.0.0", "Returns the mapping of cluster slots to nodes.", TIPS(T_NONDET)),
	ROW("shards", 2, KL | S, 0, NOKEYS, cmd_cluster_shards, "cluster", "7.0.0", "Returns the mapping of cluster slots to shards.", TIPS(T_NONDET)),
	ROW("links", 2, KL | S, 0, NOKEYS, cmd_cluster_links, "cluster", "7.0.0", "Returns a list of all TCP links to and from peer nodes.", TIPS(T_NONDET)),
	ROW("replicas", 3, A | KL | S, 0, NOKEYS, cmd_cluster_replicas, "cluster", "5.0.0", "Lists the replica nodes of a master node.", TIPS(T_NONDET)),
	ROW("slaves", 3, A | KL | S, 0, NOKEYS, cmd_cluster_replicas, "cluster", "3.0.0", "Lists the replica nodes of a master node.", TIPS(T_NONDET)),
	ROW("saveconfig", 2, A | KL | S | NAL, 0, NOKEYS, cmd_cluster_saveconfig, "cluster", "3.0.0", "Forces a node to save the cluster configuration to disk."),
	ROW("reset", -2, A | KL | S | NS, 0, NOKEYS, cmd_cluster_unsupported, "cluster", "3.0.0", "Resets a node."),
	ROW("addslots", -3, A | KL | S | NAL, 0, NOKEYS, cmd_cluster_unsupported, "cluster", "3.0.0", "Assigns new hash slots to a node."),
	ROW("addslotsrange", -4, A | KL | S | NAL, 0, NOKEYS, cmd_cluster_unsupported, "cluster", "7.0.0", "Assigns new hash slot ranges to a node."),
	ROW("delslots", -3, A | KL | S | NAL, 0, NOKEYS, cmd_cluster_unsupported, "cluster", "3.0.0", "Sets hash slots as unbound for a node."),
	ROW("delslotsrange", -4, A | KL | S | NAL, 0, NOKEYS, cmd_cluster_unsupported, "cluster", "7.0.0", "Sets hash slot ranges as unbound for a node."),
	ROW("flushslots", 2, A | KL | S | NAL, 0, NOKEYS, cmd_cluster_unsupported, "cluster", "3.0.0", "Deletes all slots information from a node."),
	ROW("meet", -4, A | KL | S | NAL, 0, NOKEYS, cmd_cluster_unsupported, "cluster", "3.0.0", "Forces a node to handshake with another node."),
	ROW("forget", 3, A | KL | S | NAL, 0, NOKEYS, cmd_cluster_unsupported, "cluster", "3.0.0", "Removes a node from the nodes table."),
	ROW("replicate", 3, A | KL | S | NAL, 0, NOKEYS, cmd_cluster_unsupported, "cluster", "3.0.0", "Configure a node as replica of a master node."),
	ROW("setslot", -4, A | KL | S | NAL, 0, NOKEYS, cmd_cluster_unsupported, "cluster", "3.0.0", "Binds a hash slot to a node."),
	ROW("failover", -2, A | KL | S | NAL, 0, NOKEYS, cmd_cluster_unsupported, "cluster", "3.0.0", "Forces a replica to perform a manual failover of its master."),
	ROW("bumpepoch", 2, A | KL | S | NAL, 0, NOKEYS, cmd_cluster_unsupported, "cluster", "3.0.0", "Advances the cluster config epoch.", TIPS(T_NONDET)),
	ROW("set-config-epoch", 3, A | KL | S | NAL, 0, NOKEYS, cmd_cluster_unsupported, "cluster", "3.0.0", "Sets the configuration epoch for a new node."),
	ROW("count-failure-reports", 3, A | KL | S, 0, NOKEYS, cmd_cluster_unsupported, "cluster", "3.0.0", "Returns the number of active failure reports active for a node.", TIPS(T_NONDET)),
	ROW("settopology", 3, A | KL | L | S | NS, 0, NOKEYS, cmd_cluster_settopology, "cluster", "7.0.0", "Applies a topology document (zarisd: pushed by the supervisor)."),
	ROW("lease", -2, A | F | KL | L | S | NS, 0, NOKEYS, cmd_cluster_lease, "cluster", "7.0.0", "Sets or returns the write lease (zarisd: granted by the supervisor)."),
	ROW("topology", 2, KL | L | S, 0, NOKEYS, cmd_cluster_topology, "cluster", "7.0.0", "Returns the topology document in force (zarisd)."),
	END,
};

static struct command client_subcommands[] = {
	ROW("id", 2, KL | NS | L | S, C_CONN, NOKEYS, cmd_client_id, "connection", "5.0.0", "Returns the unique client ID of the connection."),
	ROW("setname", 3, KL | NS | L | S, C_CONN, NOKEYS, cmd_client_setname, "connection", "2.6.9", "Sets the connection name."),
	ROW("getname", 2, KL | NS | L | S, C_CONN, NOKEYS, cmd_client_getname, "connection", "2.6.9", "Returns the name of the connection."),
	ROW("list", -2, KL | A | NS | L | S, C_CONN, NOKEYS, cmd_client_list, "connection", "2.4.0", "Lists open connections.", TIPS(T_NONDET)),
	ROW("kill", -3, KL | A | NS | L | S, C_CONN, NOKEYS, cmd_client_kill, "connection", "2.4.0", "Terminates open connections."),
	ROW("info", 2, KL | NS | L | S, C_CONN, NOKEYS, cmd_client_info, "connection", "6.2.0", "Returns information about the connection.", TIPS(T_NONDET)),
	ROW("pause", -3, KL | A | NS | L | S, C_CONN, NOKEYS, cmd_client_pause, "connection", "3.0.0", "Suspends commands processing."),
	ROW("unpause", 2, KL | A | NS | L | S, C_CONN, NOKEYS, cmd_client_unpause, "connection", "6.2.0", "Resumes processing commands from paused clients."),
	ROW("reply", 3, KL | NS | L | S, C_CONN, NOKEYS, cmd_client_reply, "connection", "3.2.0", "Instructs the server whether to reply to commands."),
	ROW("unblock", -3, KL | A | NS | L | S, C_CONN, NOKEYS, cmd_client_unblock, "connection", "5.0.0", "Unblocks a client blocked by a blocking command from a different connection."), /* blocking.h */
	ROW("no-evict", 3, KL | A | NS | L | S, C_CONN, NOKEYS, cmd_client_no_evict, "connection", "7.0.0", "Sets the client eviction mode of the connection."),
	ROW("help", 2, KL | L | S, C_CONN, NOKEYS, cmd_client_help, "connection", "5.0.0", "Returns helpful text about the different subcommands."),
	END,
};

static struct command config_subcommands[] = {
	ROW("get", -3, KL | A | NS | L | S, 0, NOKEYS, cmd_config_get, "server", "2.0.0", "Returns the effective values of configuration parameters."),
	ROW("set", -4, KL | A | NS | L | S, 0, NOKEYS, cmd_config_set, "server", "2.0.0", "Sets configuration parameters in-flight.", TIPS(T_ALL_NODES, T_ALL_SUCCEEDED)),
	ROW("resetstat", 2, KL | A | NS | L | S, 0, NOKEYS, cmd_config_resetstat, "server", "2.0.0", "Resets the server's statistics."),
	ROW("rewrite", 2, KL | A | NS | L | S, 0, NOKEYS, cmd_config_rewrite, "server", "2.8.0", "Persists the effective configuration to file."),
	ROW("help", 2, KL | L | S, 0, NOKEYS, cmd_config_help, "server", "5.0.0", "Returns helpful text about the different subcommands."),
	END,
};

static struct command slowlog_subcommands[] = {
	ROW("get", -2, KL | A | L | S, 0, NOKEYS, cmd_slowlog_get, "server", "2.2.12", "Returns the slow log's entries.", TIPS(T_ALL_NODES, T_NONDET)),
	ROW("len", 2, KL | A | L | S, 0, NOKEYS, cmd_slowlog_len, "server", "2.2.12", "Returns the number of entries in the slow log.", TIPS(T_ALL_NODES, T_AGG_SUM, T_NONDET)),
	ROW("reset", 2, KL | A | L | S, 0, NOKEYS, cmd_slowlog_reset, "server", "2.2.12", "Clears all entries from the slow log.", TIPS(T_ALL_NODES, T_ALL_SUCCEEDED)),
	ROW("help", 2, KL | L | S, 0, NOKEYS, cmd_slowlog_help, "server", "6.2.0", "Show helpful text about the different subcommands"),
	END,
};

static struct command latency_subcommands[] = {
	ROW("latest", 2, KL | A | NS | L | S, 0, NOKEYS, cmd_latency_latest, "server", "2.8.13", "Returns the latest latency samples for all events.", TIPS(T_NONDET, T_ALL_NODES, T_SPECIAL)),
	ROW("history", 3, KL | A | NS | L | S, 0, NOKEYS, cmd_latency_history, "server", "2.8.13", "Returns timestamp-latency samples for an event.", TIPS(T_NONDET, T_ALL_NODES, T_SPECIAL)),
	ROW("reset", -2, KL | A | NS | L | S, 0, NOKEYS, cmd_latency_reset, "server", "2.8.13", "Resets the latency data for one or more events.", TIPS(T_ALL_NODES, T_ALL_SUCCEEDED)),
	ROW("doctor", 2, KL | A | NS | L | S, 0, NOKEYS, cmd_latency_doctor, "server", "2.8.13", "Returns a human-readable latency analysis report.", TIPS(T_NONDET, T_ALL_NODES, T_SPECIAL)),
	ROW("help", 2, KL | L | S, 0, NOKEYS, cmd_latency_help, "server", "2.8.13", "Returns helpful text about the different subcommands."),
	END,
};

/* pub/sub (cmd_pubsub.c) */
static struct command pubsub_subcommands[] = {
	ROW("channels", -2, PS | KL | L | S, 0, NOKEYS, cmd_pubsub_channels, "pubsub", "2.8.0", "List active channels"),
	ROW("numsub", -2, PS | KL | L | S, 0, NOKEYS, cmd_pubsub_numsub, "pubsub", "2.8.0", "Get the count of subscribers for channels"),
	ROW("numpat", 2, PS | KL | L | S, 0, NOKEYS, cmd_pubsub_numpat, "pubsub", "2.8.0", "Get the count of unique patterns pattern subscriptions"),
	ROW("shardchannels", -2, PS | KL | L | S, 0, NOKEYS, cmd_pubsub_shardchannels, "pubsub", "7.0.0", "List active shard channels"),
	ROW("shardnumsub", -2, PS | KL | L | S, 0, NOKEYS, cmd_pubsub_shardnumsub, "pubsub", "7.0.0", "Get the count of subscribers for shard channels"),
	ROW("help", 2, KL | L | S, 0, NOKEYS, cmd_pubsub_help, "pubsub", "6.2.0", "Show helpful text about the different subcommands"),
	END,
};

static struct command command_subcommands[] = {
	ROW("count", 2, KL | L | S, C_CONN, NOKEYS, cmd_command_count, "server", "2.8.13", "Returns a count of commands."),
	ROW("info", -2, KL | L | S, C_CONN, NOKEYS, cmd_command_info, "server", "2.8.13", "Returns information about one, multiple or all commands.", TIPS(T_NONDET_ORDER)),
	ROW("docs", -2, KL | L | S, C_CONN, NOKEYS, cmd_command_docs, "server", "7.0.0", "Returns documentary information about one, multiple or all commands.", TIPS(T_NONDET_ORDER)),
	ROW("list", -2, KL | L | S, C_CONN, NOKEYS, cmd_command_list, "server", "7.0.0", "Returns a list of command names.", TIPS(T_NONDET_ORDER)),
	ROW("getkeys", -4, KL | L | S, C_CONN, NOKEYS, cmd_command_getkeys, "server", "2.8.13", "Extracts the key names from an arbitrary command."),
	ROW("getkeysandflags", -4, KL | L | S, C_CONN, NOKEYS, cmd_command_getkeysandflags, "server", "7.0.0", "Extracts the key names and access flags for an arbitrary command."),
	ROW("help", 2, KL | L | S, C_CONN, NOKEYS, cmd_command_help, "server", "5.0.0", "Returns helpful text about the different subcommands."),
	END,
};

static struct command command_rows[] = {
	/* --- strings (cmd_string.c) --- */
	ROW("get", 2, R | F, C_STRING, KEY1(RO | ACC), cmd_get, "string", "1.0.0", "Returns the string value of a key."),
	ROW("set", -3, W | M, C_STRING, SPECS(SPEC_RANGE_NOTE(RW | ACC | UPD | VARF, 1, 0, 1, "RW and ACCESS due to the optional `GET` argument")), cmd_set, "string", "1.0.0", "Sets the string value of a key, ignoring its type. The key is created if it doesn't exist.", .getkeys = cmd_set_getkeys),
	ROW("setnx", 3, W | M | F, C_STRING, KEY1(OW | INS), cmd_setnx, "string", "1.0.0", "Set the string value of a key only when the key doesn't exist."),
	ROW("setex", 4, W | M, C_STRING, KEY1(OW | UPD), cmd_setex, "string", "2.0.0", "Sets the string value and expiration time of a key. Creates the key if it doesn't exist."),
	ROW("psetex", 4, W | M, C_STRING, KEY1(OW | UPD), cmd_psetex, "string", "2.6.0", "Sets both string value and expiration time in milliseconds of a key. The key is created if it doesn't exist."),
	ROW("getset", 3, W | M | F, C_STRING, KEY1(RW | ACC | UPD), cmd_getset, "string", "1.0.0", "Returns the previous string value of a key after setting it to a new value."),
	ROW("getdel", 2, W | F, C_STRING, KEY1(RW | ACC | DEL), cmd_getdel, "string", "6.2.0", "Returns the string value of a key after deleting the key."),
	ROW("getex", -2, W | F, C_STRING, SPECS(SPEC_RANGE_NOTE(RW | ACC | UPD, 1, 0, 1, "RW and UPDATE because it changes the TTL")), cmd_getex, "string", "6.2.0", "Returns the string value of a key after setting its expiration time."),
	/* --- zarisd's per-key metadata (cmd_string.c: metaput; cmd_meta.c) --- */
	ROW("metaput", -3, W | M, C_STRING, KEY1(RW | UPD), cmd_metaput, "string", "0.1.0", "Sets the string value of a key together with its metadata (LABELS numlabels label ..., ENTITY, CONTENTTYPE), with SET's NX|XX, GET and EX|PX|EXAT|PXAT|KEEPTTL options; the metadata given replaces the key's."),
	ROW("metaset", -3, W | M | F, C_KEYSPACE, KEY1(RW | UPD), cmd_metaset, "generic", "0.1.0", "Sets or changes the metadata of an existing key of any type: CLEAR, LABELS/ADDLABELS/REMLABELS numlabels label ..., ENTITY, CONTENTTYPE (\"\" removes). Replies 1, or 0 when the key does not exist."),
	ROW("metaget", 2, R | F, C_KEYSPACE, KEY1(RO | ACC), cmd_metaget, "generic", "0.1.0", "Returns the metadata of a key: labels, entity, content-type, expire-at-ms and version, as a map (RESP2: a flat array); null when the key does not exist."),
	ROW("metascan", -4, R | WD, C_KEYSPACE, NOKEYS, cmd_metascan, "generic", "0.1.0", "Iterates over the keys carrying a label (LABEL label) or an entity (ENTITY entity), with SCAN's cursor, COUNT and MATCH."),
	ROW("metainvalidate", -2, W | WD | NS, C_KEYSPACE | C_DANGEROUS, NOKEYS, cmd_metainvalidate, "generic", "0.1.0", "Deletes every key of the database carrying a label (and, with ENTITY, that entity), atomically on this node, and returns how many; each sends del and invalidated keyspace events."),
	ROW("mget", -2, R | F, C_STRING, KEYS_ALL(RO | ACC), cmd_mget, "string", "1.0.0", "Atomically returns the string values of one or more keys.", TIPS(T_MULTI_SHARD)),
	ROW("mset", -3, W | M, C_STRING, SPECS(SPEC_RANGE(OW | UPD, 1, -1, 2)), cmd_mset, "string", "1.0.1", "Atomically creates or modifies the string values of one or more keys.", TIPS(T_MULTI_SHARD, T_ALL_SUCCEEDED)),
	ROW("msetnx", -3, W | M, C_STRING, SPECS(SPEC_RANGE(OW | INS, 1, -1, 2)), cmd_msetnx, "string", "1.0.1", "Atomically modifies the string values of one or more keys only when all keys don't exist.", TIPS(T_MULTI_SHARD, T_AGG_MIN)),
	ROW("incr", 2, W | M | F, C_STRING, KEY1(RW | ACC | UPD), cmd_incr, "string", "1.0.0", "Increments the integer value of a key by one. Uses 0 as initial value if the key doesn't exist."),
	ROW("decr", 2, W | M | F, C_STRING, KEY1(RW | ACC | UPD), cmd_decr, "string", "1.0.0", "Decrements the integer value of a key by one. Uses 0 as initial value if the key doesn't exist."),
	ROW("incrby", 3, W | M | F, C_STRING, KEY1(RW | ACC | UPD), cmd_incrby, "string", "1.0.0", "Increments the integer value of a key by a number. Uses 0 as initial value if the key doesn't exist."),
	ROW("decrby", 3, W | M | F, C_STRING, KEY1(RW | ACC | UPD), cmd_decrby, "string", "1.0.0", "Decrements a number from the integer value of a key. Uses 0 as initial value if the key doesn't exist."),
	ROW("incrbyfloat", 3, W | M | F, C_STRING, KEY1(RW | ACC | UPD), cmd_incrbyfloat, "string", "2.6.0", "Increment the floating point value of a key by a number. Uses 0 as initial value if the key doesn't exist."),
	ROW("append", 3, W | M | F, C_STRING, KEY1(RW | INS), cmd_append, "string", "2.0.0", "Appends a string to the value of a key. Creates the key if it doesn't exist."),
	ROW("strlen", 2, R | F, C_STRING, KEY1(RO), cmd_strlen, "string", "2.2.0", "Returns the length of a string value."),
	ROW("getrange", 4, R, C_STRING, KEY1(RO | ACC), cmd_getrange, "string", "2.4.0", "Returns a substring of the string stored at a key."),
	ROW("setrange", 4, W | M, C_STRING, KEY1(RW | UPD), cmd_setrange, "string", "2.2.0", "Overwrites a part of a string value with another by an offset. Creates the key if it doesn't exist."),
	ROW("substr", 4, R, C_STRING, KEY1(RO | ACC), cmd_substr, "string", "1.0.0", "Returns a substring from a string value."),
	ROW("lcs", -3, R, C_STRING, SPECS(SPEC_RANGE(RO | ACC, 1, 1, 1)), cmd_lcs, "string", "7.0.0", "Finds the longest common substring."),

	/* --- keys (cmd_keys.c) --- */
	ROW("del", -2, W, C_KEYSPACE, KEYS_ALL(RM | DEL), cmd_del, "generic", "1.0.0", "Deletes one or more keys.", TIPS(T_MULTI_SHARD, T_AGG_SUM)),
	ROW("unlink", -2, W | F, C_KEYSPACE, KEYS_ALL(RM | DEL), cmd_unlink, "generic", "4.0.0", "Asynchronously deletes one or more keys.", TIPS(T_MULTI_SHARD, T_AGG_SUM)),
	ROW("exists", -2, R | F, C_KEYSPACE, KEYS_ALL(RO), cmd_exists, "generic", "1.0.0", "Determines whether one or more keys exist.", TIPS(T_MULTI_SHARD, T_AGG_SUM)),
	ROW("type", 2, R | F, C_KEYSPACE, KEY1(RO), cmd_type, "generic", "1.0.0", "Determines the type of value stored at a key."),
	ROW("expire", -3, W | F, C_KEYSPACE, KEY1(RW | UPD), cmd_expire, "generic", "1.0.0", "Sets the expiration time of a key in seconds."),
	ROW("pexpire", -3, W | F, C_KEYSPACE, KEY1(RW | UPD), cmd_pexpire, "generic", "2.6.0", "Sets the expiration time of a key in milliseconds."),
	ROW("expireat", -3, W | F, C_KEYSPACE, KEY1(RW | UPD), cmd_expireat, "generic", "1.2.0", "Sets the expiration time of a key to a Unix timestamp."),
	ROW("pexpireat", -3, W | F, C_KEYSPACE, KEY1(RW | UPD), cmd_pexpireat, "generic", "2.6.0", "Sets the expiration time of a key to a Unix milliseconds timestamp."),
	ROW("expiretime", 2, R | F, C_KEYSPACE, KEY1(RO | ACC), cmd_expiretime, "generic", "7.0.0", "Returns the expiration time of a key as a Unix timestamp."),
	ROW("pexpiretime", 2, R | F, C_KEYSPACE, KEY1(RO | ACC), cmd_pexpiretime, "generic", "7.0.0", "Returns the expiration time of a key as a Unix milliseconds timestamp."),
	ROW("ttl", 2, R | F, C_KEYSPACE, KEY1(RO | ACC), cmd_ttl, "generic", "1.0.0", "Returns the expiration time in seconds of a key.", TIPS(T_NONDET)),
	ROW("pttl", 2, R | F, C_KEYSPACE, KEY1(RO | ACC), cmd_pttl, "generic", "2.6.0", "Returns the expiration time in milliseconds of a key.", TIPS(T_NONDET)),
	ROW("persist", 2, W | F, C_KEYSPACE, KEY1(RW | UPD), cmd_persist, "generic", "2.2.0", "Removes the expiration time of a key."),
	ROW("rename", 3, W, C_KEYSPACE, KEY1_KEY2(RW | ACC | DEL, OW | UPD), cmd_rename, "generic", "1.0.0", "Renames a key and overwrites the destination."),
	ROW("renamenx", 3, W | F, C_KEYSPACE, KEY1_KEY2(RW | ACC | DEL, OW | INS), cmd_renamenx, "generic", "1.0.0", "Renames a key only when the target key name doesn't exist."),
	ROW("copy", -3, W | M, C_KEYSPACE, KEY1_KEY2(RO | ACC, OW | UPD), cmd_copy, "generic", "6.2.0", "Copies the value of a key to a new key.", .db_arg = { .keyword = "db", .pos = 3 }),
	ROW("keys", 2, R | WD, C_KEYSPACE | C_DANGEROUS, NOKEYS, cmd_keys, "generic", "1.0.0", "Returns all key names that match a pattern.", TIPS(T_ALL_SHARDS, T_NONDET_ORDER)),
	ROW("scan", -2, R | WD, C_KEYSPACE, NOKEYS, cmd_scan, "generic", "2.8.0", "Iterates over the key names in the database.", TIPS(T_NONDET, T_REQ_SPECIAL)),
	ROW("randomkey", 1, R | WD, C_KEYSPACE, NOKEYS, cmd_randomkey, "generic", "1.0.0", "Returns a random key name from the database.", TIPS(T_ALL_SHARDS, T_NONDET)),
	ROW("dbsize", 1, R | F | WD, C_KEYSPACE, NOKEYS, cmd_dbsize, "server", "1.0.0", "Returns the number of keys in the database.", TIPS(T_ALL_SHARDS, T_AGG_SUM)),
	ROW("flushdb", -1, W | WD, C_KEYSPACE | C_DANGEROUS, NOKEYS, cmd_flushdb, "server", "1.0.0", "Remove all keys from the current database.", TIPS(T_ALL_SHARDS, T_ALL_SUCCEEDED)),
	ROW("flushall", -1, W | WD, C_KEYSPACE | C_DANGEROUS, NOKEYS, cmd_flushall, "server", "1.0.0", "Removes all keys from all databases.", TIPS(T_ALL_SHARDS, T_ALL_SUCCEEDED)),
	ROW("touch", -2, R | F, C_KEYSPACE, KEYS_ALL(RO), cmd_touch, "generic", "3.2.1", "Returns the number of existing keys out of those specified after updating the time they were last accessed.", TIPS(T_MULTI_SHARD, T_AGG_SUM)),
	ROW("move", 3, W | F, C_KEYSPACE, KEY1(RW | ACC | UPD), cmd_move, "generic", "1.0.0", "Moves a key to another database.", .db_arg = { .pos = 2 }),
	ROW("swapdb", 3, W | F | WD, C_KEYSPACE | C_DANGEROUS, NOKEYS, cmd_swapdb, "server", "4.0.0", "Swaps two Redis databases."),
	CONTAINER("object", -2, object_subcommands, "generic", "2.2.3", "A container for object introspection commands."),
	CONTAINER("memory", -2, memory_subcommands, "server", "4.0.0", "A container for memory diagnostics commands."),

	/* --- hashes (cmd_hash.c) --- */
	ROW("hset", -4, W | M | F, C_HASH, KEY1(RW | UPD), cmd_hset, "hash", "2.0.0", "Creates or modifies the value of a field in a hash."),
	ROW("hsetnx", 4, W | M | F, C_HASH, KEY1(RW | INS), cmd_hsetnx, "hash", "2.0.0", "Sets the value of a field in a hash only when the field doesn't exist."),
	ROW("hget", 3, R | F, C_HASH, KEY1(RO | ACC), cmd_hget, "hash", "2.0.0", "Returns the value of a field in a hash."),
	ROW("hmset", -4, W | M | F, C_HASH, KEY1(RW | UPD), cmd_hmset, "hash", "2.0.0", "Sets the values of multiple fields."),
	ROW("hmget", -3, R | F, C_HASH, KEY1(RO | ACC), cmd_hmget, "hash", "2.0.0", "Returns the values of all fields in a hash."),
	ROW("hdel", -3, W | F, C_HASH, KEY1(RW | DEL), cmd_hdel, "hash", "2.0.0", "Deletes one or more fields and their values from a hash. Deletes the hash if no fields remain."),
	ROW("hexists", 3, R | F, C_HASH, KEY1(RO), cmd_hexists, "hash", "2.0.0", "Determines whether a field exists in a hash."),
	ROW("hlen", 2, R | F, C_HASH, KEY1(RO), cmd_hlen, "hash", "2.0.0", "Returns the number of fields in a hash."),
	ROW("hkeys", 2, R, C_HASH, KEY1(RO | ACC), cmd_hkeys, "hash", "2.0.0", "Returns all fields in a hash.", TIPS(T_NONDET_ORDER)),
	ROW("hvals", 2, R, C_HASH, KEY1(RO | ACC), cmd_hvals, "hash", "2.0.0", "Returns all values in a hash.", TIPS(T_NONDET_ORDER)),
	ROW("hgetall", 2, R, C_HASH, KEY1(RO | ACC), cmd_hgetall, "hash", "2.0.0", "Returns all fields and values in a hash.", TIPS(T_NONDET_ORDER)),
	ROW("hincrby", 4, W | M | F, C_HASH, KEY1(RW | ACC | UPD), cmd_hincrby, "hash", "2.0.0", "Increments the integer value of a field in a hash by a number. Uses 0 as initial value if the field doesn't exist."),
	ROW("hincrbyfloat", 4, W | M | F, C_HASH, KEY1(RW | ACC | UPD), cmd_hincrbyfloat, "hash", "2.6.0", "Increments the floating point value of a field by a number. Uses 0 as initial value if the field doesn't exist."),
	ROW("hstrlen", 3, R | F, C_HASH, KEY1(RO), cmd_hstrlen, "hash", "3.2.0", "Returns the length of the value of a field."),
	ROW("hrandfield", -2, R, C_HASH, KEY1(RO | ACC), cmd_hrandfield, "hash", "6.2.0", "Returns one or more random fields from a hash.", TIPS(T_NONDET)),
	ROW("hscan", -3, R, C_HASH, KEY1(RO | ACC), cmd_hscan, "hash", "2.8.0", "Iterates over fields and values of a hash.", TIPS(T_NONDET)),

	/* --- sets (cmd_set.c) --- */
	ROW("sadd", -3, W | M | F, C_SET, KEY1(RW | INS), cmd_sadd, "set", "1.0.0", "Adds one or more members to a set. Creates the key if it doesn't exist."),
	ROW("srem", -3, W | F, C_SET, KEY1(RW | DEL), cmd_srem, "set", "1.0.0", "Removes one or more members from a set. Deletes the set if the last member was removed."),
	ROW("sismember", 3, R | F, C_SET, KEY1(RO), cmd_sismember, "set", "1.0.0", "Determines whether a member belongs to a set."),
	ROW("smismember", -3, R | F, C_SET, KEY1(RO | ACC), cmd_smismember, "set", "6.2.0", "Determines whether multiple members belong to a set."),
	ROW("smembers", 2, R, C_SET, KEY1(RO | ACC), cmd_smembers, "set", "1.0.0", "Returns all members of a set.", TIPS(T_NONDET_ORDER)),
	ROW("scard", 2, R | F, C_SET, KEY1(RO), cmd_scard, "set", "1.0.0", "Returns the number of members in a set."),
	ROW("spop", -2, W | F | RE, C_SET, KEY1(RW | ACC | DEL), cmd_spop, "set", "1.0.0", "Returns one or more random members from a set after removing them. Deletes the set if the last member was popped.", TIPS(T_NONDET)),
	ROW("srandmember", -2, R, C_SET, KEY1(RO | ACC), cmd_srandmember, "set", "1.0.0", "Get one or multiple random members from a set", TIPS(T_NONDET)),
	ROW("smove", 4, W | F, C_SET, KEY1_KEY2(RW | ACC | DEL, RW | INS), cmd_smove, "set", "1.0.0", "Moves a member from one set to another."),
	ROW("sinter", -2, R, C_SET, KEYS_ALL(RO | ACC), cmd_sinter, "set", "1.0.0", "Returns the intersect of multiple sets.", TIPS(T_NONDET_ORDER)),
	ROW("sintercard", -3, R, C_SET, KEYS_COUNTED(RO | ACC, 1), cmd_sintercard, "set", "7.0.0", "Returns the number of members of the intersect of multiple sets.", GETKEYS_COUNTED),
	ROW("sinterstore", -3, W | M, C_SET, KEY1_SOURCES(RW | UPD), cmd_sinterstore, "set", "1.0.0", "Stores the intersect of multiple sets in a key."),
	ROW("sunion", -2, R, C_SET, KEYS_ALL(RO | ACC), cmd_sunion, "set", "1.0.0", "Returns the union of multiple sets.", TIPS(T_NONDET_ORDER)),
	ROW("sunionstore", -3, W | M, C_SET, KEY1_SOURCES(OW | UPD), cmd_sunionstore, "set", "1.0.0", "Stores the union of multiple sets in a key."),
	ROW("sdiff", -2, R, C_SET, KEYS_ALL(RO | ACC), cmd_sdiff, "set", "1.0.0", "Returns the difference of multiple sets.", TIPS(T_NONDET_ORDER)),
	ROW("sdiffstore", -3, W | M, C_SET, KEY1_SOURCES(OW | UPD), cmd_sdiffstore, "set", "1.0.0", "Stores the difference of multiple sets in a key."),
	ROW("sscan", -3, R, C_SET, KEY1(RO | ACC), cmd_sscan, "set", "2.8.0", "Iterates over members of a set.", TIPS(T_NONDET)),

	/* --- sorted sets (cmd_zset.c) --- */
	ROW("zadd", -4, W | M | F, C_ZSET, KEY1(RW | UPD), cmd_zadd, "sorted-set", "1.2.0", "Add one or more members to a sorted set, or update its score if it already exists"),
	ROW("zincrby", 4, W | M | F, C_ZSET, KEY1(RW | ACC | UPD), cmd_zincrby, "sorted-set", "1.2.0", "Increment the score of a member in a sorted set"),
	ROW("zrem", -3, W | F, C_ZSET, KEY1(RW | DEL), cmd_zrem, "sorted-set", "1.2.0", "Remove one or more members from a sorted set"),
	ROW("zcard", 2, R | F, C_ZSET, KEY1(RO), cmd_zcard, "sorted-set", "1.2.0", "Get the number of members in a sorted set"),
	ROW("zscore", 3, R | F, C_ZSET, KEY1(RO | ACC), cmd_zscore, "sorted-set", "1.2.0", "Get the score associated with the given member in a sorted set"),
	ROW("zmscore", -3, R | F, C_ZSET, KEY1(RO | ACC), cmd_zmscore, "sorted-set", "6.2.0", "Get the score associated with the given members in a sorted set"),
	ROW("zrank", 3, R | F, C_ZSET, KEY1(RO | ACC), cmd_zrank, "sorted-set", "2.0.0", "Determine the index of a member in a sorted set"),
	ROW("zrevrank", 3, R | F, C_ZSET, KEY1(RO | ACC), cmd_zrevrank, "sorted-set", "2.0.0", "Determine the index of a member in a sorted set, with scores ordered from high to low"),
	ROW("zcount", 4, R | F, C_ZSET, KEY1(RO | ACC), cmd_zcount, "sorted-set", "2.0.0", "Count the members in a sorted set with scores within the given values"),
	ROW("zlexcount", 4, R | F, C_ZSET, KEY1(RO | ACC), cmd_zlexcount, "sorted-set", "2.8.9", "Count the number of members in a sorted set between a given lexicographical range"),
	ROW("zrange", -4, R, C_ZSET, KEY1(RO | ACC), cmd_zrange, "sorted-set", "1.2.0", "Return a range of members in a sorted set"),
	ROW("zrangestore", -5, W | M, C_ZSET, KEY1_KEY2(OW | UPD, RO | ACC), cmd_zrangestore, "sorted-set", "6.2.0", "Store a range of members from sorted set into another key"),
	ROW("zrevrange", -4, R, C_ZSET, KEY1(RO | ACC), cmd_zrevrange, "sorted-set", "1.2.0", "Return a range of members in a sorted set, by index, with scores ordered from high to low"),
	ROW("zrangebyscore", -4, R, C_ZSET, KEY1(RO | ACC), cmd_zrangebyscore, "sorted-set", "1.0.5", "Return a range of members in a sorted set, by score"),
	ROW("zrevrangebyscore", -4, R, C_ZSET, KEY1(RO | ACC), cmd_zrevrangebyscore, "sorted-set", "2.2.0", "Return a range of members in a sorted set, by score, with scores ordered from high to low"),
	ROW("zrangebylex", -4, R, C_ZSET, KEY1(RO | ACC), cmd_zrangebylex, "sorted-set", "2.8.9", "Return a range of members in a sorted set, by lexicographical range"),
	ROW("zrevrangebylex", -4, R, C_ZSET, KEY1(RO | ACC), cmd_zrevrangebylex, "sorted-set", "2.8.9", "Return a range of members in a sorted set, by lexicographical range, ordered from higher to lower strings."),
	ROW("zremrangebyrank", 4, W, C_ZSET, KEY1(RW | DEL), cmd_zremrangebyrank, "sorted-set", "2.0.0", "Remove all members in a sorted set within the given indexes"),
	ROW("zremrangebyscore", 4, W, C_ZSET, KEY1(RW | DEL), cmd_zremrangebyscore, "sorted-set", "1.2.0", "Remove all members in a sorted set within the given scores"),
	ROW("zremrangebylex", 4, W, C_ZSET, KEY1(RW | DEL), cmd_zremrangebylex, "sorted-set", "2.8.9", "Remove all members in a sorted set between the given lexicographical range"),
	ROW("zpopmin", -2, W | F, C_ZSET, KEY1(RW | ACC | DEL), cmd_zpopmin, "sorted-set", "5.0.0", "Remove and return members with the lowest scores in a sorted set"),
	ROW("zpopmax", -2, W | F, C_ZSET, KEY1(RW | ACC | DEL), cmd_zpopmax, "sorted-set", "5.0.0", "Remove and return members with the highest scores in a sorted set"),
	ROW("zrandmember", -2, R, C_ZSET, KEY1(RO | ACC), cmd_zrandmember, "sorted-set", "6.2.0", "Get one or multiple random elements from a sorted set", TIPS(T_NONDET)),
	ROW("zscan", -3, R, C_ZSET, KEY1(RO | ACC), cmd_zscan, "sorted-set", "2.8.0", "Incrementally iterate sorted sets elements and associated scores", TIPS(T_NONDET)),
	ROW("bzpopmin", -3, W | NS | BL | F, C_ZSET, KEYS_BUT_TIMEOUT(RW | ACC | DEL), cmd_bzpopmin, "sorted-set", "5.0.0", "Remove and return the member with the lowest score from one or more sorted sets, or block until one is available"),
	ROW("bzpopmax", -3, W | NS | BL | F, C_ZSET, KEYS_BUT_TIMEOUT(RW | ACC | DEL), cmd_bzpopmax, "sorted-set", "5.0.0", "Remove and return the member with the highest score from one or more sorted sets, or block until one is available"),
	ROW("bzmpop", -5, W | BL, C_ZSET, KEYS_COUNTED(RW | ACC | DEL, 2), cmd_bzmpop, "sorted-set", "7.0.0", "Remove and return members with scores in a sorted set or block until one is available", GETKEYS_COUNTED),
	ROW("zmpop", -4, W, C_ZSET, KEYS_COUNTED(RW | ACC | DEL, 1), cmd_zmpop, "sorted-set", "7.0.0", "Remove and return members with scores in a sorted set", GETKEYS_COUNTED),
	ROW("zunion", -3, R, C_ZSET, KEYS_COUNTED(RO | ACC, 1), cmd_zunion, "sorted-set", "6.2.0", "Add multiple sorted sets", GETKEYS_COUNTED),
	ROW("zinter", -3, R, C_ZSET, KEYS_COUNTED(RO | ACC, 1), cmd_zinter, "sorted-set", "6.2.0", "Intersect multiple sorted sets", GETKEYS_COUNTED),
	ROW("zdiff", -3, R, C_ZSET, KEYS_COUNTED(RO | ACC, 1), cmd_zdiff, "sorted-set", "6.2.0", "Subtract multiple sorted sets", GETKEYS_COUNTED),
	ROW("zintercard", -3, R, C_ZSET, KEYS_COUNTED(RO | ACC, 1), cmd_zintercard, "sorted-set", "7.0.0", "Intersect multiple sorted sets and return the cardinality of the result", GETKEYS_COUNTED),
	ROW("zunionstore", -4, W | M, C_ZSET, KEY1_COUNTED(OW | UPD), cmd_zunionstore, "sorted-set", "2.0.0", "Add multiple sorted sets and store the resulting sorted set in a new key", GETKEYS_COUNTED),
	ROW("zinterstore", -4, W | M, C_ZSET, KEY1_COUNTED(OW | UPD), cmd_zinterstore, "sorted-set", "2.0.0", "Intersect multiple sorted sets and store the resulting sorted set in a new key", GETKEYS_COUNTED),
	ROW("zdiffstore", -4, W | M, C_ZSET, KEY1_COUNTED(OW | UPD), cmd_zdiffstore, "sorted-set", "6.2.0", "Subtract multiple sorted sets and store the resulting sorted set in a new key", GETKEYS_COUNTED),

	/* --- lists and blocking pops (cmd_list.c) --- */
	ROW("lpush", -3, W | M | F, C_LIST, KEY1(RW | INS), cmd_lpush, "list", "1.0.0", "Prepends one or more elements to a list. Creates the key if it doesn't exist."),
	ROW("rpush", -3, W | M | F, C_LIST, KEY1(RW | INS), cmd_rpush, "list", "1.0.0", "Appends one or more elements to a list. Creates the key if it doesn't exist."),
	ROW("lpushx", -3, W | M | F, C_LIST, KEY1(RW | INS), cmd_lpushx, "list", "2.2.0", "Prepends one or more elements to a list only when the list exists."),
	ROW("rpushx", -3, W | M | F, C_LIST, KEY1(RW | INS), cmd_rpushx, "list", "2.2.0", "Appends an element to a list only when the list exists."),
	ROW("linsert", 5, W | M, C_LIST, KEY1(RW | INS), cmd_linsert, "list", "2.2.0", "Inserts an element before or after another element in a list."),
	ROW("llen", 2, R | F, C_LIST, KEY1(RO), cmd_llen, "list", "1.0.0", "Returns the length of a list."),
	ROW("lindex", 3, R, C_LIST, KEY1(RO | ACC), cmd_lindex, "list", "1.0.0", "Returns an element from a list by its index."),
	ROW("lrange", 4, R, C_LIST, KEY1(RO | ACC), cmd_lrange, "list", "1.0.0", "Returns a range of elements from a list."),
	ROW("lset", 4, W | M, C_LIST, KEY1(RW | UPD), cmd_lset, "list", "1.0.0", "Sets the value of an element in a list by its index."),
	ROW("lrem", 4, W, C_LIST, KEY1(RW | DEL), cmd_lrem, "list", "1.0.0", "Removes elements from a list. Deletes the list if the last element was removed."),
	ROW("ltrim", 4, W, C_LIST, KEY1(RW | DEL), cmd_ltrim, "list", "1.0.0", "Removes elements from both ends a list. Deletes the list if all elements were trimmed."),
	ROW("lpop", -2, W | F, C_LIST, KEY1(RW | ACC | DEL), cmd_lpop, "list", "1.0.0", "Returns the first elements in a list after removing it. Deletes the list if the last element was popped."),
	ROW("rpop", -2, W | F, C_LIST, KEY1(RW | ACC | DEL), cmd_rpop, "list", "1.0.0", "Returns and removes the last elements of a list. Deletes the list if the last element was popped."),
	ROW("lpos", -3, R, C_LIST, KEY1(RO | ACC), cmd_lpos, "list", "6.0.6", "Returns the index of matching elements in a list."),
	ROW("lmove", 5, W | M, C_LIST, KEY1_KEY2(RW | ACC | DEL, RW | INS), cmd_lmove, "list", "6.2.0", "Returns an element after popping it from one list and pushing it to another. Deletes the list if the last element was moved."),
	ROW("rpoplpush", 3, W | M, C_LIST, KEY1_KEY2(RW | ACC | DEL, RW | INS), cmd_rpoplpush, "list", "1.2.0", "Returns the last element of a list after removing and pushing it to another list. Deletes the list if the last element was popped."),
	ROW("lmpop", -4, W, C_LIST, KEYS_COUNTED(RW | ACC | DEL, 1), cmd_lmpop, "list", "7.0.0", "Returns multiple elements from a list after removing them. Deletes the list if the last element was popped.", GETKEYS_COUNTED),
	ROW("blpop", -3, W | NS | BL, C_LIST, KEYS_BUT_TIMEOUT(RW | ACC | DEL), cmd_blpop, "list", "2.0.0", "Removes and returns the first element in a list. Blocks until an element is available otherwise. Deletes the list if the last element was popped."),
	ROW("brpop", -3, W | NS | BL, C_LIST, KEYS_BUT_TIMEOUT(RW | ACC | DEL), cmd_brpop, "list", "2.0.0", "Removes and returns the last element in a list. Blocks until an element is available otherwise. Deletes the list if the last element was popped."),
	ROW("blmove", 6, W | M | NS | BL, C_LIST, KEY1_KEY2(RW | ACC | DEL, RW | INS), cmd_blmove, "list", "6.2.0", "Pops an element from a list, pushes it to another list and returns it. Blocks until an element is available otherwise. Deletes the list if the last element was moved."),
	ROW("brpoplpush", 4, W | M | NS | BL, C_LIST, KEY1_KEY2(RW | ACC | DEL, RW | INS), cmd_brpoplpush, "list", "2.2.0", "Pops an element from a list, pushes it to another list and returns it. Block until an element is available otherwise. Deletes the list if the last element was popped."),
	ROW("blmpop", -5, W | BL, C_LIST, KEYS_COUNTED(RW | ACC | DEL, 2), cmd_blmpop, "list", "7.0.0", "Pops the first element from one of multiple lists. Blocks until an element is available otherwise. Deletes the list if the last element was popped.", GETKEYS_COUNTED),

	/* --- bitmaps and HyperLogLog (cmd_bitmap.c, cmd_hll.c) --- */
	ROW("setbit", 4, W | M, C_BITMAP, KEY1(RW | ACC | UPD), cmd_setbit, "bitmap", "2.2.0", "Sets or clears the bit at offset of the string value. Creates the key if it doesn't exist."),
	ROW("getbit", 3, R | F, C_BITMAP, KEY1(RO | ACC), cmd_getbit, "bitmap", "2.2.0", "Returns a bit value by offset."),
	ROW("bitcount", -2, R, C_BITMAP, KEY1(RO | ACC), cmd_bitcount, "bitmap", "2.6.0", "Counts the number of set bits (population counting) in a string."),
	ROW("bitpos", -3, R, C_BITMAP, KEY1(RO | ACC), cmd_bitpos, "bitmap", "2.8.7", "Finds the first set (1) or clear (0) bit in a string."),
	ROW("bitop", -4, W | M, C_BITMAP, SPECS(SPEC_RANGE(OW | UPD, 2, 0, 1), SPEC_RANGE(RO | ACC, 3, -1, 1)), cmd_bitop, "bitmap", "2.6.0", "Performs bitwise operations on multiple strings, and stores the result."),
	ROW("bitfield", -2, W | M, C_BITMAP, SPECS(SPEC_RANGE_NOTE(RW | ACC | UPD | VARF, 1, 0, 1, "This command allows both access and modification of the key")), cmd_bitfield, "bitmap", "3.2.0", "Performs arbitrary bitfield integer operations on strings.", .getkeys = cmd_bitfield_getkeys),
	ROW("bitfield_ro", -2, R | F, C_BITMAP, KEY1(RO | ACC), cmd_bitfield_ro, "bitmap", "6.0.0", "Performs arbitrary read-only bitfield integer operations on strings."),
	ROW("pfadd", -2, W | M | F, C_HLL, KEY1(RW | INS), cmd_pfadd, "hyperloglog", "2.8.9", "Adds elements to a HyperLogLog key. Creates the key if it doesn't exist."),
	ROW("pfcount", -2, R | MW, C_HLL, SPECS(SPEC_RANGE_NOTE(RW | ACC, 1, -1, 1, "RW because it may change the internal representation of the key, and propagate to replicas")), cmd_pfcount, "hyperloglog", "2.8.9", "Returns the approximated cardinality of the set(s) observed by the HyperLogLog key(s)."),
	ROW("pfmerge", -2, W | M, C_HLL, KEY1_SOURCES(RW | ACC | INS), cmd_pfmerge, "hyperloglog", "2.8.9", "Merges one or more HyperLogLog values into a single key."),
	ROW("pfdebug", 3, W | M | A, C_HLL, KEY_AT(2, RW | ACC), cmd_pfdebug, "hyperloglog", "2.8.9", "Internal commands for debugging HyperLogLog values."),
	ROW("pfselftest", 1, A | KL, C_HLL, NOKEYS, cmd_pfselftest, "hyperloglog", "2.8.9", "An internal command for testing HyperLogLog values."),

	/* --- transactions (cmd_multi.c) --- */
	ROW("multi", 1, NS | L | S | F | KL | AB | NOW, C_TXN, NOKEYS, cmd_multi, "transactions", "1.2.0", "Starts a transaction."),
	ROW("exec", 1, NS | L | S | KL | EX | NOW | CMD_SKIP_SLOWLOG, C_TXN, NOKEYS, cmd_exec, "transactions", "1.2.0", "Executes all commands in a transaction."),
	ROW("discard", 1, NS | L | S | F | KL | AB | NOW, C_TXN, NOKEYS, cmd_discard, "transactions", "2.0.0", "Discards a transaction."),
	ROW("watch", -2, NS | L | S | F | AB | NOW, C_TXN, KEYS_ALL(RO), cmd_watch, "transactions", "2.2.0", "Monitors changes to keys to determine the execution of a transaction."),
	ROW("unwatch", 1, NS | L | S | F | KL | AB, C_TXN, NOKEYS, cmd_unwatch, "transactions", "2.2.0", "Forgets about watched keys of a transaction."),

	/* --- scripting (cmd_script.c): numkeys at argv[2] counts the declared
	 * keys, whose shards the dispatcher locks --- */
	ROW_SCRIPT("eval", 0, RW | ACC | UPD, cmd_eval, SCRIPT_NOTES_RW, "2.6.0", "Executes a server-side Lua script."),
	ROW_SCRIPT("evalsha", 0, RW | ACC | UPD, cmd_evalsha, NULL, "2.6.0", "Executes a server-side Lua script by SHA1 digest."),
	ROW_SCRIPT("eval_ro", R, RO | ACC, cmd_eval_ro, SCRIPT_NOTES_RO, "7.0.0", "Executes a read-only server-side Lua script."),
	ROW_SCRIPT("evalsha_ro", R, RO | ACC, cmd_evalsha_ro, NULL, "7.0.0", "Executes a read-only server-side Lua script by SHA1 digest."),
	CONTAINER("script", -2, script_subcommands, "scripting", "2.6.0", "A container for Lua scripts management commands."),
	ROW_SCRIPT("fcall", 0, RW | ACC | UPD, cmd_fcall, SCRIPT_NOTES_RW, "7.0.0", "Invoke a function"),
	ROW_SCRIPT("fcall_ro", R, RO | ACC, cmd_fcall_ro, SCRIPT_NOTES_RO, "7.0.0", "Invoke a read-only function"),
	CONTAINER("function", -2, function_subcommands, "scripting", "7.0.0", "A container for function commands"),

	/* --- pub/sub (cmd_pubsub.c) --- */
	/* The shard commands' channels are not_key specs (cluster routing)
	 * and never locked: KL. SUB: what an RESP2 subscriber may run. */
	ROW("subscribe", -2, PS | NS | L | S | KL | SUB, 0, NOKEYS, cmd_subscribe, "pubsub", "2.0.0", "Listen for messages published to the given channels"),
	ROW("unsubscribe", -1, PS | NS | L | S | KL | SUB, 0, NOKEYS, cmd_unsubscribe, "pubsub", "2.0.0", "Stop listening for messages posted to the given channels"),
	ROW("psubscribe", -2, PS | NS | L | S | KL | SUB, 0, NOKEYS, cmd_psubscribe, "pubsub", "2.0.0", "Listen for messages published to channels matching the given patterns"),
	ROW("punsubscribe", -1, PS | NS | L | S | KL | SUB, 0, NOKEYS, cmd_punsubscribe, "pubsub", "2.0.0", "Stop listening for messages posted to channels matching the given patterns"),
	ROW("publish", 3, PS | L | S | F | KL, 0, NOKEYS, cmd_publish, "pubsub", "2.0.0", "Post a message to a channel"),
	ROW("ssubscribe", -2, PS | NS | L | S | KL | SUB, 0, KEYS_ALL(NOTKEY), cmd_ssubscribe, "pubsub", "7.0.0", "Listen for messages published to the given shard channels"),
	ROW("sunsubscribe", -1, PS | NS | L | S | KL | SUB, 0, KEYS_ALL(NOTKEY), cmd_sunsubscribe, "pubsub", "7.0.0", "Stop listening for messages posted to the given shard channels"),
	ROW("spublish", 3, PS | L | S | F | KL, 0, KEY1(NOTKEY), cmd_spublish, "pubsub", "7.0.0", "Post a message to a shard channel"),
	CONTAINER("pubsub", -2, pubsub_subcommands, "pubsub", "2.8.0", "A container for Pub/Sub commands"),

	/* --- persistence (cmd_persist.c) --- */
	ROW("save", 1, A | NS | KL | NM | NAL, 0, NOKEYS, cmd_save, "server", "1.0.0", "Synchronously saves the database(s) to disk."),
	ROW("bgsave", -1, A | NS | KL | NAL, 0, NOKEYS, cmd_bgsave, "server", "1.0.0", "Asynchronously saves the database(s) to disk."),
	ROW("bgrewriteaof", 1, A | NS | KL | NAL, 0, NOKEYS, cmd_bgrewriteaof, "server", "1.0.0", "Asynchronously rewrites the append-only file to disk."),

	/* --- server and connection (cmd_conn.c, cmd_server.c, cmd_client.c, cmd_config.c,
	 *     cmd_command.c, cmd_info.c) --- */
	ROW("ping", -1, F | KL | SUB, C_CONN, NOKEYS, cmd_ping, "connection", "1.0.0", "Returns the server's liveliness response.", TIPS(T_ALL_SHARDS, T_ALL_SUCCEEDED)),
	ROW("echo", 2, L | S | F | KL, C_CONN, NOKEYS, cmd_echo, "connection", "1.0.0", "Returns the given string."),
	ROW("quit", -1, NA | NS | L | S | F | KL | AB | SUB | NOW, C_CONN, NOKEYS, cmd_quit, "connection", "1.0.0", "Closes the connection."),
	ROW("reset", 1, NA | NS | L | S | F | KL | AB | SUB | NOW, C_CONN, NOKEYS, cmd_reset, "connection", "6.2.0", "Resets the connection."),
	ROW("select", 2, L | S | F | KL, C_CONN, NOKEYS, cmd_select, "connection", "1.0.0", "Changes the selected database."),
	ROW("auth", -2, NA | NS | L | S | F | KL | AB, C_CONN, NOKEYS, cmd_auth, "connection", "1.0.0", "Authenticates the connection."),
	ROW("hello", -1, NA | NS | L | S | F | KL | AB, C_CONN, NOKEYS, cmd_hello, "connection", "6.0.0", "Handshakes with the Redis server."),
	CONTAINER("client", -2, client_subcommands, "connection", "2.4.0", "A container for client connection commands."),
	ROW("info", -1, L | S | KL, C_DANGEROUS, NOKEYS, cmd_info, "server", "1.0.0", "Returns information and statistics about the server.", TIPS(T_NONDET, T_ALL_SHARDS, T_SPECIAL)),
	CONTAINER("cluster", -2, cluster_subcommands, "cluster", "3.0.0", "A container for Redis Cluster commands."),
	ROW("asking", 1, F | KL, C_CONN, NOKEYS, cmd_asking, "cluster", "3.0.0", "Signals that a cluster client is following an -ASK redirect."),
	ROW("readonly", 1, F | L | S | KL, C_CONN, NOKEYS, cmd_readonly, "cluster", "3.0.0", "Enables read-only queries for a connection to a Redis Cluster replica node."),
	ROW("readwrite", 1, F | L | S | KL, C_CONN, NOKEYS, cmd_readwrite, "cluster", "3.0.0", "Enables read-write queries for a connection to a Redis Cluster replica node."),
	CONTAINER("config", -2, config_subcommands, "server", "2.0.0", "A container for server configuration commands."),
	ROW("time", 1, L | S | F | KL, 0, NOKEYS, cmd_time, "server", "2.6.0", "Returns the server time.", TIPS(T_NONDET)),
	ROW("lastsave", 1, L | S | F | KL, C_ADMIN | C_DANGEROUS, NOKEYS, cmd_lastsave, "server", "1.0.0", "Returns the Unix timestamp of the last successful save to disk.", TIPS(T_NONDET)),
	ROW("replicaof", 3, A | NS | S | KL | NAL, 0, NOKEYS, cmd_replicaof, "server", "5.0.0", "Configures a server as replica of another, or promotes it to a master."),
	ROW("slaveof", 3, A | NS | S | KL | NAL, 0, NOKEYS, cmd_replicaof, "server", "1.0.0", "Sets a Redis server as a replica of another, or promotes it to being a master."),
	ROW("role", 1, NS | L | S | F | KL, C_ADMIN | C_DANGEROUS, NOKEYS, cmd_role, "server", "2.8.12", "Returns the replication role."),
	ROW("psync", -3, A | NS | KL | NM | NAL, 0, NOKEYS, cmd_psync, "server", "2.8.0", "An internal command used in replication."),
	ROW("sync", 1, A | NS | KL | NM | NAL, 0, NOKEYS, cmd_sync, "server", "1.0.0", "An internal command used in replication."),
	ROW("replconf", -1, A | NS | L | S | KL | AB, 0, NOKEYS, cmd_replconf, "server", "3.0.0", "An internal command for configuring the replication stream."),
	ROW("wait", 3, NS | KL, C_CONN, NOKEYS, cmd_wait, "generic", "3.0.0", "Blocks until the asynchronous replication of all preceding write commands sent by the connection is completed.", TIPS(T_ALL_SHARDS, T_AGG_MIN)),
	ROW("debug", -2, A | NS | L | S | KL | PR | CMD_SELFLOCK, 0, NOKEYS, cmd_debug, "server", "1.0.0", "A container for debugging commands."),
	CONTAINER("slowlog", -2, slowlog_subcommands, "server", "2.2.12", "A container for slow log commands."),
	CONTAINER("latency", -2, latency_subcommands, "server", "2.8.13", "A container for latency diagnostics commands."),
	ROW("shutdown", -1, A | NS | L | S | KL | NM | AB, 0, NOKEYS, cmd_shutdown, "server", "1.0.0", "Synchronously saves the database(s) to disk and shuts down the Redis server."),
	/* both a container and a command of its own: bare COMMAND lists every row */
	{ .name = "command", .arity = -1, .flags = L | S | KL | CMD_CONTAINER, .acl_categories = C_CONN, .handler = cmd_command, .subcommands = command_subcommands, .group = "server", .since = "2.8.13", .summary = "Returns detailed information about all commands.", TIPS(T_NONDET_ORDER) },
	END,
};

/* clang-format on */

#undef W
#undef R
#undef M
#undef A
#undef F
#undef L
#undef S
#undef NA
#undef NS
#undef NM
#undef BL
#undef PS
#undef AB
#undef NAL
#undef KL
#undef WD
#undef PR
#undef EX
#undef RE
#undef MW
#undef SUB
#undef NOW
#undef C_KEYSPACE
#undef C_STRING
#undef C_LIST
#undef C_SET
#undef C_ZSET
#undef C_HASH
#undef C_BITMAP
#undef C_HLL
#undef C_ADMIN
#undef C_DANGEROUS
#undef C_CONN
#undef C_TXN
#undef C_SCRIPTING
#undef RO
#undef RW
#undef OW
#undef RM
#undef ACC
#undef UPD
#undef INS
#undef DEL
#undef NOTKEY
#undef VARF
#undef SPEC_RANGE
#undef SPEC_RANGE_NOTE
#undef SPEC_COUNTED
#undef SPECS
#undef NOKEYS
#undef KEY1
#undef KEY_AT
#undef KEYS_ALL
#undef KEYS_BUT_TIMEOUT
#undef KEY1_KEY2
#undef KEY1_SOURCES
#undef KEYS_COUNTED
#undef KEY1_COUNTED
#undef GETKEYS_COUNTED
#undef TIPS
#undef T_NONDET
#undef T_NONDET_ORDER
#undef T_ALL_SHARDS
#undef T_ALL_NODES
#undef T_MULTI_SHARD
#undef T_REQ_SPECIAL
#undef T_ALL_SUCCEEDED
#undef T_ONE_SUCCEEDED
#undef T_AGG_SUM
#undef T_AGG_MIN
#undef T_AGG_AND
#undef T_SPECIAL
#undef SCRIPT_NOTES_RW
#undef SCRIPT_NOTES_RO
#undef ROW
#undef ROW_SCRIPT
#undef CONTAINER
#undef END

/* Open-addressing index from lower-case name to row, built once. */
#define INDEX_SIZE 512
struct index_slot {
	const struct command *cmd;
	size_t len; /* strlen(cmd->name) */
};
static struct index_slot index_slots[INDEX_SIZE];
static const struct command *rows_by_id[1024];
static unsigned rows_total;
static unsigned rows_top;

/* Whether S (any case) equals LOWER (a lower-case table name), LEN bytes:
 * the hot path of every command, so no locale and no strlen. */
static inline bool name_eq_lower(const char *s, const char *lower, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		unsigned char a = (unsigned char)s[i];
		if (a >= 'A' && a <= 'Z')
			a += 'a' - 'A';
		if (a != (unsigned char)lower[i])
			return false;
	}
	return true;
}

static uint32_t name_hash(const char *s, size_t len)
{
	uint32_t h = 2166136261u;
	for (size_t i = 0; i < len; i++)
		h = (h ^ (uint8_t)(s[i] >= 'A' && s[i] <= 'Z' ? s[i] + ('a' - 'A') : s[i])) * 16777619u;
	return h;
}

static void index_insert(const struct command *cmd)
{
	uint32_t i = name_hash(cmd->name, strlen(cmd->name)) & (INDEX_SIZE - 1);
	while (index_slots[i].cmd)
		i = (i + 1) & (INDEX_SIZE - 1);
	index_slots[i].cmd = cmd;
	index_slots[i].len = strlen(cmd->name);
}

static const char *const acl_category_names[ACL_CATEGORY_COUNT] = {
	"keyspace", "read",   "write",	     "set",	  "sortedset",	"list",	       "hash",
	"string",   "bitmap", "hyperloglog", "geo",	  "stream",	"pubsub",      "admin",
	"fast",	    "slow",   "blocking",    "dangerous", "connection", "transaction", "scripting",
};

const char *command_acl_category_name(unsigned i)
{
	return i < ACL_CATEGORY_COUNT ? acl_category_names[i] : NULL;
}

/* The categories CMD's flags imply, added to those its row lists (Redis's
 * setImplicitACLCategories). */
static uint32_t implied_categories(const struct command *cmd)
{
	uint32_t f = cmd->flags, cats = cmd->acl_categories;
	if (f & CMD_WRITE)
		cats |= ACL_CAT_WRITE;
	/* EVAL_RO and FCALL_RO are read-only scripts, not @read */
	if ((f & CMD_READONLY) && !(cats & ACL_CAT_SCRIPTING))
		cats |= ACL_CAT_READ;
	if (f & CMD_ADMIN)
		cats |= ACL_CAT_ADMIN | ACL_CAT_DANGEROUS;
	if (f & CMD_PUBSUB)
		cats |= ACL_CAT_PUBSUB;
	if (f & CMD_FAST)
		cats |= ACL_CAT_FAST;
	if (f & CMD_BLOCKING)
		cats |= ACL_CAT_BLOCKING;
	if (!(cats & ACL_CAT_FAST))
		cats |= ACL_CAT_SLOW;
	return cats;
}

static bool spec_is_plain_range(const struct key_spec *s)
{
	return !s->begin.keyword && s->find == KS_FIND_RANGE;
}

/* COMMAND INFO's first/last/step and movablekeys from W's key specs, as
 * Redis 7.0 derives its legacy range: one plain range spec is the range;
 * else consecutive plain ranges of step 1 merge, and any spec that does not
 * (a count, a keyword, a gap, a step) makes the keys movable. Also the
 * one-key shortcut (keyiter_single). */
static void derive_key_fields(struct command *w)
{
	w->first_key = w->last_key = w->key_step = w->single_key = 0;
	assert(w->key_specs_num >= 0 && w->key_specs_num <= KEYITER_MAX_SPECS);
	if (w->key_specs_num == 0)
		return;
	const struct key_spec *ks = w->key_specs;
	if (w->key_specs_num == 1 && spec_is_plain_range(&ks[0])) {
		int lastkey = ks[0].fk.range.lastkey;
		w->first_key = ks[0].begin.pos;
		w->last_key = lastkey >= 0 ? ks[0].begin.pos + lastkey : lastkey;
		w->key_step = ks[0].fk.range.keystep;
		if (ks[0].flags & KS_INCOMPLETE)
			w->flags |= CMD_MOVABLE_KEYS;
		else if (lastkey == 0 && !(ks[0].flags & KS_NOT_KEY))
			w->single_key = ks[0].begin.pos;
		return;
	}
	int first = 0, prev_last = 0;
	unsigned last = 0; /* a negative last key (from the end) is past every positive one */
	for (int i = 0; i < w->key_specs_num; i++) {
		const struct key_spec *s = &ks[i];
		if (!spec_is_plain_range(s) || s->fk.range.keystep != 1 ||
		    (prev_last && prev_last != s->begin.pos - 1)) {
			w->flags |= CMD_MOVABLE_KEYS;
			continue;
		}
		if (s->flags & KS_INCOMPLETE)
			w->flags |= CMD_MOVABLE_KEYS;
		if (!first || s->begin.pos < first)
			first = s->begin.pos;
		int abs_last =
			s->fk.range.lastkey >= 0 ? s->begin.pos + s->fk.range.lastkey : s->fk.range.lastkey;
		if ((unsigned)abs_last > last)
			last = (unsigned)abs_last;
		prev_last = (int)last;
	}
	if (!first) {
		w->flags |= CMD_MOVABLE_KEYS;
		return;
	}
	w->first_key = first;
	w->last_key = (int)last;
	w->key_step = 1;
}

static void init_row(struct command *w, unsigned id, const struct command *parent)
{
	w->id = id;
	w->parent = parent;
	w->acl_categories = implied_categories(w);
	derive_key_fields(w);
}

void command_table_init(void)
{
	/* ids, parents and the derived fields are filled in once, through a
	 * cast of the const row pointers, before any thread reads the table. */
	for (const struct command *cmd = command_rows; cmd->name; cmd++) {
		init_row((struct command *)cmd, rows_total, NULL);
		rows_by_id[rows_total++] = cmd;
		rows_top++;
		index_insert(cmd);
		for (const struct command *sub = cmd->subcommands; sub && sub->name; sub++) {
			init_row((struct command *)sub, rows_total, cmd);
			rows_by_id[rows_total++] = sub;
		}
	}
}

const struct command *command_lookup(const char *name, size_t len)
{
	uint32_t i = name_hash(name, len) & (INDEX_SIZE - 1);
	for (; index_slots[i].cmd; i = (i + 1) & (INDEX_SIZE - 1))
		if (index_slots[i].len == len && name_eq_lower(name, index_slots[i].cmd->name, len))
			return index_slots[i].cmd;
	return NULL;
}

const struct command *command_lookup_sub(const struct command *cmd, const char *sub, size_t len)
{
	for (const struct command *s = cmd->subcommands; s && s->name; s++)
		if (zr_eq_nocase(sub, len, s->name))
			return s;
	return NULL;
}

unsigned command_table_size(void)
{
	return rows_total;
}

unsigned command_count(void)
{
	return rows_top;
}

const struct command *command_at(unsigned i)
{
	return i < rows_top ? &command_rows[i] : NULL;
}

const struct command *command_by_id(unsigned id)
{
	return id < rows_total ? rows_by_id[id] : NULL;
}

size_t command_full_name(const struct command *cmd, char *buf, size_t size)
{
	int n = cmd->parent ? snprintf(buf, size, "%s|%s", cmd->parent->name, cmd->name)
			    : snprintf(buf, size, "%s", cmd->name);
	return n < 0 ? 0 : (size_t)n;
}
