/* table — the one command table. Every row: name, arity, flags, key spec
 * (first, last, step), handler, docs. Arity and key specs are Redis 7's.
 * Each section is owned by the cmd_<group>.c file named in its comment. */
#include "zarisd/commands/table.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zarisd/commands/handlers.h"
#include "zarisd/core/util.h"

#define W CMD_WRITE
#define R CMD_READONLY
#define M CMD_DENYOOM
#define A CMD_ADMIN
#define F CMD_FAST
#define L CMD_LOADING
#define S CMD_STALE
#define NA CMD_NOAUTH
#define NS CMD_NOSCRIPT
#define KL CMD_KEYLESS
#define WD CMD_WHOLEDB
#define PR CMD_PROTECTED
#define EX CMD_EXEC
#define RE CMD_RANDOM_EFFECT
#define NMK CMD_NO_MANDATORY_KEYS
#define MW CMD_MAY_WRITE
#define SCRIPT_NOTES_RW "We cannot tell how the keys will be used so we assume the worst, RW and UPDATE"
#define SCRIPT_NOTES_RO "We cannot tell how the keys will be used so we assume the worst, RO and ACCESS"

/* One row per line reads as a table. */
/* clang-format off */
#define ROW(n, ar, fl, fk, lk, st, h, grp, ver, sum)                                                  \
	{                                                                                             \
		.name = n, .arity = ar, .flags = fl, .first_key = fk, .last_key = lk, .key_step = st, \
		.handler = h, .group = grp, .since = ver, .summary = sum                              \
	}
/* A row whose keys (after the fixed fk..lk ones) are counted by argv[kn]
 * and follow it (command.h keynum_*). */
#define ROW_KEYNUM(n, ar, fl, fk, lk, st, kn, h, grp, ver, sum)                                       \
	{                                                                                             \
		.name = n, .arity = ar, .flags = fl, .first_key = fk, .last_key = lk, .key_step = st, \
		.keynum_index = kn, .keynum_first = 1, .keynum_step = 1, .handler = h, .group = grp,  \
		.since = ver, .summary = sum                                                          \
	}
/* A script row (EVAL, FCALL): keys counted by argv[2], and the note its
 * key spec carries in COMMAND INFO (NULL: none), as Redis's. */
#define ROW_SCRIPT(n, fl, h, notes, ver, sum)                                                        \
	{                                                                                             \
		.name = n, .arity = -3, .flags = (fl) | NS | S | NMK | CMD_SCRIPT, .keynum_index = 2,  \
		.keynum_first = 1, .keynum_step = 1, .handler = h, .group = "scripting", .since = ver, \
		.summary = sum, .key_notes = notes                                                    \
	}
/* A row with Redis's command tips (COMMAND INFO). */
#define ROW_TIPS(n, ar, fl, fk, lk, st, h, grp, ver, sum, tp)                                         \
	{                                                                                             \
		.name = n, .arity = ar, .flags = fl, .first_key = fk, .last_key = lk, .key_step = st, \
		.handler = h, .group = grp, .since = ver, .summary = sum, .tips = tp                  \
	}
#define CONTAINER(n, ar, fl, subs, grp, ver, sum)                                                         \
	{                                                                                                 \
		.name = n, .arity = ar, .flags = (fl) | CMD_CONTAINER, .subcommands = subs, .group = grp, \
		.since = ver, .summary = sum                                                              \
	}
#define END                  \
	{                    \
		.name = NULL \
	}

/* FUNCTION (cmd_function.c): LOAD DELETE FLUSH RESTORE change the
 * libraries, whole-keyspace writes for the dispatcher (every shard lock:
 * ordered with a snapshot's instant) */
static const char *const tips_all_succeeded[] = { "request_policy:all_shards", "response_policy:all_succeeded", NULL };
static const char *const tips_one_succeeded[] = { "request_policy:all_shards", "response_policy:one_succeeded", NULL };
static const char *const tips_stats[] = { "nondeterministic_output", "request_policy:all_shards", "response_policy:special", NULL };
static const char *const tips_order[] = { "nondeterministic_output_order", NULL };
static struct command function_subcommands[] = {
	ROW_TIPS("load", -3, NS | W | M | WD | KL, 0, 0, 0, cmd_function_load, "scripting", "7.0.0", "Create a function with the given arguments (name, code, description)", tips_all_succeeded),
	ROW_TIPS("delete", 3, NS | W | WD | KL, 0, 0, 0, cmd_function_delete, "scripting", "7.0.0", "Delete a function by name", tips_all_succeeded),
	ROW_TIPS("flush", -2, NS | W | WD | KL, 0, 0, 0, cmd_function_flush, "scripting", "7.0.0", "Deleting all functions", tips_all_succeeded),
	ROW_TIPS("kill", 2, NS | KL, 0, 0, 0, cmd_function_kill, "scripting", "7.0.0", "Kill the function currently in execution.", tips_one_succeeded),
	ROW_TIPS("list", -2, NS | KL, 0, 0, 0, cmd_function_list, "scripting", "7.0.0", "List information about all the functions", tips_order),
	ROW_TIPS("stats", 2, NS | KL, 0, 0, 0, cmd_function_stats, "scripting", "7.0.0", "Return information about the function currently running (name, description, duration)", tips_stats),
	ROW("dump", 2, NS | KL, 0, 0, 0, cmd_function_dump, "scripting", "7.0.0", "Dump all functions into a serialized binary payload"),
	ROW_TIPS("restore", -3, NS | W | M | WD | KL, 0, 0, 0, cmd_function_restore, "scripting", "7.0.0", "Restore all the functions on the given payload", tips_all_succeeded),
	ROW("help", 2, KL | L | S, 0, 0, 0, cmd_function_help, "scripting", "7.0.0", "Show helpful text about the different subcommands"),
	END,
};

static struct command script_subcommands[] = {
	ROW("load", 3, NS | S | KL, 0, 0, 0, cmd_script_load, "scripting", "2.6.0", "Loads a server-side Lua script to the script cache."),
	ROW("exists", -3, NS | S | KL, 0, 0, 0, cmd_script_exists, "scripting", "2.6.0", "Determines whether server-side Lua scripts exist in the script cache."),
	ROW("flush", -2, NS | KL, 0, 0, 0, cmd_script_flush, "scripting", "2.6.0", "Removes all server-side Lua scripts from the script cache."),
	ROW("kill", 2, NS | KL, 0, 0, 0, cmd_script_kill, "scripting", "2.6.0", "Terminates a server-side Lua script during execution."),
	ROW("debug", 3, NS | KL, 0, 0, 0, cmd_script_debug, "scripting", "3.2.0", "Sets the debug mode of server-side Lua scripts."),
	ROW("help", 2, KL | L | S, 0, 0, 0, cmd_script_help, "scripting", "5.0.0", "Returns helpful text about the different subcommands."),
	END,
};

static struct command object_subcommands[] = {
	ROW("encoding", 3, R, 2, 2, 1, cmd_object_encoding, "generic", "2.2.3", "Returns the internal encoding of a Redis object."),
	ROW("freq", 3, R, 2, 2, 1, cmd_object_freq, "generic", "4.0.0", "Returns the logarithmic access frequency counter of a Redis object."),
	ROW("idletime", 3, R, 2, 2, 1, cmd_object_idletime, "generic", "2.2.3", "Returns the time since the last access to a Redis object."),
	ROW("refcount", 3, R, 2, 2, 1, cmd_object_refcount, "generic", "2.2.3", "Returns the reference count of a value of a key."),
	ROW("help", 2, KL | L | S, 0, 0, 0, cmd_object_help, "generic", "6.2.0", "Returns helpful text about the different subcommands."),
	END,
};

static struct command memory_subcommands[] = {
	ROW("usage", -3, R, 2, 2, 1, cmd_memory_usage, "server", "4.0.0", "Estimates the memory usage of a key."),
	ROW("stats", 2, KL, 0, 0, 0, cmd_memory_stats, "server", "4.0.0", "Returns details about memory usage."),
	ROW("doctor", 2, KL, 0, 0, 0, cmd_memory_doctor, "server", "4.0.0", "Outputs a memory problems report."),
	ROW("malloc-stats", 2, KL, 0, 0, 0, cmd_memory_malloc_stats, "server", "4.0.0", "Returns the allocator statistics."),
	ROW("purge", 2, KL, 0, 0, 0, cmd_memory_purge, "server", "4.0.0", "Asks the allocator to release memory."),
	ROW("help", 2, KL | L | S, 0, 0, 0, cmd_memory_help, "server", "4.0.0", "Returns helpful text about the different subcommands."),
	END,
};

static struct command cluster_subcommands[] = {
	ROW("help", 2, KL | L | S, 0, 0, 0, cmd_cluster_help, "cluster", "5.0.0", "Returns helpful text about the different subcommands."),
	ROW("info", 2, KL | L | S, 0, 0, 0, cmd_cluster_info, "cluster", "3.0.0", "Returns information about the state of a node."),
	ROW("keyslot", 3, KL | L | S, 0, 0, 0, cmd_cluster_keyslot, "cluster", "3.0.0", "Returns the hash slot for a key."),
	ROW("countkeysinslot", 3, KL | L | S, 0, 0, 0, cmd_cluster_countkeysinslot, "cluster", "3.0.0", "Returns the number of keys in a hash slot."),
	ROW("getkeysinslot", 4, KL | L | S, 0, 0, 0, cmd_cluster_getkeysinslot, "cluster", "3.0.0", "Returns the key names in a hash slot."),
	ROW("myid", 2, KL | L | S, 0, 0, 0, cmd_cluster_myid, "cluster", "3.0.0", "Returns the ID of a node."),
	ROW("myshardid", 2, KL | L | S, 0, 0, 0, cmd_cluster_myshardid, "cluster", "7.2.0", "Returns the shard ID of a node."),
	ROW("nodes", 2, KL | L | S, 0, 0, 0, cmd_cluster_nodes, "cluster", "3.0.0", "Returns the cluster configuration for a node."),
	ROW("slots", 2, KL | L | S, 0, 0, 0, cmd_cluster_slots, "cluster", "3.0.0", "Returns the mapping of cluster slots to nodes."),
	ROW("shards", 2, KL | L | S, 0, 0, 0, cmd_cluster_shards, "cluster", "7.0.0", "Returns the mapping of cluster slots to shards."),
	ROW("links", 2, KL | L | S, 0, 0, 0, cmd_cluster_links, "cluster", "7.0.0", "Returns a list of all TCP links to and from peer nodes."),
	ROW("replicas", 3, A | KL | L | S, 0, 0, 0, cmd_cluster_replicas, "cluster", "5.0.0", "Lists the replica nodes of a master node."),
	ROW("slaves", 3, A | KL | L | S, 0, 0, 0, cmd_cluster_replicas, "cluster", "3.0.0", "Lists the replica nodes of a master node."),
	ROW("saveconfig", 2, A | KL | L | S, 0, 0, 0, cmd_cluster_saveconfig, "cluster", "3.0.0", "Forces a node to save the cluster configuration to disk."),
	ROW("reset", -2, A | KL | S | NS, 0, 0, 0, cmd_cluster_unsupported, "cluster", "3.0.0", "Resets a node."),
	ROW("addslots", -3, A | KL | S | NS, 0, 0, 0, cmd_cluster_unsupported, "cluster", "3.0.0", "Assigns new hash slots to a node."),
	ROW("addslotsrange", -4, A | KL | S | NS, 0, 0, 0, cmd_cluster_unsupported, "cluster", "7.0.0", "Assigns new hash slot ranges to a node."),
	ROW("delslots", -3, A | KL | S | NS, 0, 0, 0, cmd_cluster_unsupported, "cluster", "3.0.0", "Sets hash slots as unbound for a node."),
	ROW("delslotsrange", -4, A | KL | S | NS, 0, 0, 0, cmd_cluster_unsupported, "cluster", "7.0.0", "Sets hash slot ranges as unbound for a node."),
	ROW("flushslots", 2, A | KL | S | NS, 0, 0, 0, cmd_cluster_unsupported, "cluster", "3.0.0", "Deletes all slots information from a node."),
	ROW("meet", -4, A | KL | S | NS, 0, 0, 0, cmd_cluster_unsupported, "cluster", "3.0.0", "Forces a node to handshake with another node."),
	ROW("forget", 3, A | KL | S | NS, 0, 0, 0, cmd_cluster_unsupported, "cluster", "3.0.0", "Removes a node from the nodes table."),
	ROW("replicate", 3, A | KL | S | NS, 0, 0, 0, cmd_cluster_unsupported, "cluster", "3.0.0", "Configure a node as replica of a master node."),
	ROW("setslot", -4, A | KL | S | NS, 0, 0, 0, cmd_cluster_unsupported, "cluster", "3.0.0", "Binds a hash slot to a node."),
	ROW("failover", -2, A | KL | S | NS, 0, 0, 0, cmd_cluster_unsupported, "cluster", "3.0.0", "Forces a replica to perform a manual failover of its master."),
	ROW("bumpepoch", 2, A | KL | S | NS, 0, 0, 0, cmd_cluster_unsupported, "cluster", "3.0.0", "Advances the cluster config epoch."),
	ROW("set-config-epoch", 3, A | KL | S | NS, 0, 0, 0, cmd_cluster_unsupported, "cluster", "3.0.0", "Sets the configuration epoch for a new node."),
	ROW("count-failure-reports", 3, A | KL | S, 0, 0, 0, cmd_cluster_unsupported, "cluster", "3.0.0", "Returns the number of active failure reports active for a node."),
	ROW("settopology", 3, A | KL | L | S | NS, 0, 0, 0, cmd_cluster_settopology, "cluster", "7.0.0", "Applies a topology document (zarisd: pushed by the supervisor)."),
	ROW("lease", -2, A | F | KL | L | S | NS, 0, 0, 0, cmd_cluster_lease, "cluster", "7.0.0", "Sets or returns the write lease (zarisd: granted by the supervisor)."),
	ROW("topology", 2, KL | L | S, 0, 0, 0, cmd_cluster_topology, "cluster", "7.0.0", "Returns the topology document in force (zarisd)."),
	END,
};

static struct command client_subcommands[] = {
	ROW("id", 2, KL | NS | L | S, 0, 0, 0, cmd_client_id, "connection", "5.0.0", "Returns the unique client ID of the connection."),
	ROW("setname", 3, KL | NS | L | S, 0, 0, 0, cmd_client_setname, "connection", "2.6.9", "Sets the connection name."),
	ROW("getname", 2, KL | NS | L | S, 0, 0, 0, cmd_client_getname, "connection", "2.6.9", "Returns the name of the connection."),
	ROW("list", -2, KL | A | NS | L | S, 0, 0, 0, cmd_client_list, "connection", "2.4.0", "Lists open connections."),
	ROW("kill", -3, KL | A | NS | L | S, 0, 0, 0, cmd_client_kill, "connection", "2.4.0", "Terminates open connections."),
	ROW("info", 2, KL | NS | L | S, 0, 0, 0, cmd_client_info, "connection", "6.2.0", "Returns information about the connection."),
	ROW("pause", -3, KL | A | NS | L | S, 0, 0, 0, cmd_client_pause, "connection", "3.0.0", "Suspends commands processing."),
	ROW("unpause", 2, KL | A | NS | L | S, 0, 0, 0, cmd_client_unpause, "connection", "6.2.0", "Resumes processing commands from paused clients."),
	ROW("reply", 3, KL | NS | L | S, 0, 0, 0, cmd_client_reply, "connection", "3.2.0", "Instructs the server whether to reply to commands."),
	ROW("unblock", -3, KL | A | NS | L | S, 0, 0, 0, cmd_client_unblock, "connection", "5.0.0", "Unblocks a client blocked by a blocking command from a different connection."), /* blocking.h */
	ROW("no-evict", 3, KL | A | NS | L | S, 0, 0, 0, cmd_client_no_evict, "connection", "7.0.0", "Sets the client eviction mode of the connection."),
	ROW("help", 2, KL | L | S, 0, 0, 0, cmd_client_help, "connection", "5.0.0", "Returns helpful text about the different subcommands."),
	END,
};

static struct command config_subcommands[] = {
	ROW("get", -3, KL | A | NS | L | S, 0, 0, 0, cmd_config_get, "server", "2.0.0", "Returns the effective values of configuration parameters."),
	ROW("set", -4, KL | A | NS | L | S, 0, 0, 0, cmd_config_set, "server", "2.0.0", "Sets configuration parameters in-flight."),
	ROW("resetstat", 2, KL | A | NS | L | S, 0, 0, 0, cmd_config_resetstat, "server", "2.0.0", "Resets the server's statistics."),
	ROW("rewrite", 2, KL | A | NS | L | S, 0, 0, 0, cmd_config_rewrite, "server", "2.8.0", "Persists the effective configuration to file."),
	ROW("help", 2, KL | L | S, 0, 0, 0, cmd_config_help, "server", "5.0.0", "Returns helpful text about the different subcommands."),
	END,
};

static struct command slowlog_subcommands[] = {
	ROW("get", -2, KL | A | L | S, 0, 0, 0, cmd_slowlog_get, "server", "2.2.12", "Returns the slow log's entries."),
	ROW("len", 2, KL | A | L | S, 0, 0, 0, cmd_slowlog_len, "server", "2.2.12", "Returns the number of entries in the slow log."),
	ROW("reset", 2, KL | A | L | S, 0, 0, 0, cmd_slowlog_reset, "server", "2.2.12", "Clears all entries from the slow log."),
	ROW("help", 2, KL | L | S, 0, 0, 0, cmd_slowlog_help, "server", "6.2.0", "Show helpful text about the different subcommands"),
	END,
};

static struct command latency_subcommands[] = {
	ROW("latest", 2, KL | A | NS | L | S, 0, 0, 0, cmd_latency_latest, "server", "2.8.13", "Returns the latest latency samples for all events."),
	ROW("history", 3, KL | A | NS | L | S, 0, 0, 0, cmd_latency_history, "server", "2.8.13", "Returns timestamp-latency samples for an event."),
	ROW("reset", -2, KL | A | NS | L | S, 0, 0, 0, cmd_latency_reset, "server", "2.8.13", "Resets the latency data for one or more events."),
	ROW("doctor", 2, KL | A | NS | L | S, 0, 0, 0, cmd_latency_doctor, "server", "2.8.13", "Returns a human-readable latency analysis report."),
	ROW("help", 2, KL | L | S, 0, 0, 0, cmd_latency_help, "server", "2.8.13", "Returns helpful text about the different subcommands."),
	END,
};

/* pub/sub (cmd_pubsub.c) */
static struct command pubsub_subcommands[] = {
	ROW("channels", -2, CMD_PUBSUB | KL | L | S, 0, 0, 0, cmd_pubsub_channels, "pubsub", "2.8.0", "List active channels"),
	ROW("numsub", -2, CMD_PUBSUB | KL | L | S, 0, 0, 0, cmd_pubsub_numsub, "pubsub", "2.8.0", "Get the count of subscribers for channels"),
	ROW("numpat", 2, CMD_PUBSUB | KL | L | S, 0, 0, 0, cmd_pubsub_numpat, "pubsub", "2.8.0", "Get the count of unique patterns pattern subscriptions"),
	ROW("shardchannels", -2, CMD_PUBSUB | KL | L | S, 0, 0, 0, cmd_pubsub_shardchannels, "pubsub", "7.0.0", "List active shard channels"),
	ROW("shardnumsub", -2, CMD_PUBSUB | KL | L | S, 0, 0, 0, cmd_pubsub_shardnumsub, "pubsub", "7.0.0", "Get the count of subscribers for shard channels"),
	ROW("help", 2, KL | L | S, 0, 0, 0, cmd_pubsub_help, "pubsub", "6.2.0", "Show helpful text about the different subcommands"),
	END,
};

static struct command command_subcommands[] = {
	ROW("count", 2, KL | L | S, 0, 0, 0, cmd_command_count, "server", "2.8.13", "Returns a count of commands."),
	ROW("info", -2, KL | L | S, 0, 0, 0, cmd_command_info, "server", "2.8.13", "Returns information about one, multiple or all commands."),
	ROW("docs", -2, KL | L | S, 0, 0, 0, cmd_command_docs, "server", "7.0.0", "Returns documentary information about one, multiple or all commands."),
	ROW("list", -2, KL | L | S, 0, 0, 0, cmd_command_list, "server", "7.0.0", "Returns a list of command names."),
	ROW("getkeys", -4, KL | L | S, 0, 0, 0, cmd_command_getkeys, "server", "2.8.13", "Extracts the key names from an arbitrary command."),
	ROW("help", 2, KL | L | S, 0, 0, 0, cmd_command_help, "server", "5.0.0", "Returns helpful text about the different subcommands."),
	END,
};

static struct command command_rows[] = {
	/* --- strings (cmd_string.c) --- */
	ROW("get", 2, R | F, 1, 1, 1, cmd_get, "string", "1.0.0", "Returns the string value of a key."),
	ROW("set", -3, W | M, 1, 1, 1, cmd_set, "string", "1.0.0", "Sets the string value of a key, ignoring its type. The key is created if it doesn't exist."),
	ROW("setnx", 3, W | M | F, 1, 1, 1, cmd_setnx, "string", "1.0.0", "Set the string value of a key only when the key doesn't exist."),
	ROW("setex", 4, W | M, 1, 1, 1, cmd_setex, "string", "2.0.0", "Sets the string value and expiration time of a key. Creates the key if it doesn't exist."),
	ROW("psetex", 4, W | M, 1, 1, 1, cmd_psetex, "string", "2.6.0", "Sets both string value and expiration time in milliseconds of a key. The key is created if it doesn't exist."),
	ROW("getset", 3, W | M | F, 1, 1, 1, cmd_getset, "string", "1.0.0", "Returns the previous string value of a key after setting it to a new value."),
	ROW("getdel", 2, W | F, 1, 1, 1, cmd_getdel, "string", "6.2.0", "Returns the string value of a key after deleting the key."),
	ROW("getex", -2, W | F, 1, 1, 1, cmd_getex, "string", "6.2.0", "Returns the string value of a key after setting its expiration time."),
	/* --- zarisd's per-key metadata (cmd_string.c: metaput; cmd_meta.c) --- */
	ROW("metaput", -3, W | M, 1, 1, 1, cmd_metaput, "string", "0.1.0", "Sets the string value of a key together with its metadata (LABELS numlabels label ..., ENTITY, CONTENTTYPE), with SET's NX|XX, GET and EX|PX|EXAT|PXAT|KEEPTTL options; the metadata given replaces the key's."),
	ROW("metaset", -3, W | M | F, 1, 1, 1, cmd_metaset, "generic", "0.1.0", "Sets or changes the metadata of an existing key of any type: CLEAR, LABELS/ADDLABELS/REMLABELS numlabels label ..., ENTITY, CONTENTTYPE (\"\" removes). Replies 1, or 0 when the key does not exist."),
	ROW("metaget", 2, R | F, 1, 1, 1, cmd_metaget, "generic", "0.1.0", "Returns the metadata of a key: labels, entity, content-type, expire-at-ms and version, as a map (RESP2: a flat array); null when the key does not exist."),
	ROW("metascan", -4, R | WD, 0, 0, 0, cmd_metascan, "generic", "0.1.0", "Iterates over the keys carrying a label (LABEL label) or an entity (ENTITY entity), with SCAN's cursor, COUNT and MATCH."),
	ROW("metainvalidate", -2, W | WD | NS, 0, 0, 0, cmd_metainvalidate, "generic", "0.1.0", "Deletes every key of the database carrying a label (and, with ENTITY, that entity), atomically on this node, and returns how many; each sends del and invalidated keyspace events."),
	ROW("mget", -2, R | F, 1, -1, 1, cmd_mget, "string", "1.0.0", "Atomically returns the string values of one or more keys."),
	ROW("mset", -3, W | M, 1, -1, 2, cmd_mset, "string", "1.0.1", "Atomically creates or modifies the string values of one or more keys."),
	ROW("msetnx", -3, W | M, 1, -1, 2, cmd_msetnx, "string", "1.0.1", "Atomically modifies the string values of one or more keys only when all keys don't exist."),
	ROW("incr", 2, W | M | F, 1, 1, 1, cmd_incr, "string", "1.0.0", "Increments the integer value of a key by one. Uses 0 as initial value if the key doesn't exist."),
	ROW("decr", 2, W | M | F, 1, 1, 1, cmd_decr, "string", "1.0.0", "Decrements the integer value of a key by one. Uses 0 as initial value if the key doesn't exist."),
	ROW("incrby", 3, W | M | F, 1, 1, 1, cmd_incrby, "string", "1.0.0", "Increments the integer value of a key by a number. Uses 0 as initial value if the key doesn't exist."),
	ROW("decrby", 3, W | M | F, 1, 1, 1, cmd_decrby, "string", "1.0.0", "Decrements a number from the integer value of a key. Uses 0 as initial value if the key doesn't exist."),
	ROW("incrbyfloat", 3, W | M | F, 1, 1, 1, cmd_incrbyfloat, "string", "2.6.0", "Increment the floating point value of a key by a number. Uses 0 as initial value if the key doesn't exist."),
	ROW("append", 3, W | M | F, 1, 1, 1, cmd_append, "string", "2.0.0", "Appends a string to the value of a key. Creates the key if it doesn't exist."),
	ROW("strlen", 2, R | F, 1, 1, 1, cmd_strlen, "string", "2.2.0", "Returns the length of a string value."),
	ROW("getrange", 4, R, 1, 1, 1, cmd_getrange, "string", "2.4.0", "Returns a substring of the string stored at a key."),
	ROW("setrange", 4, W | M, 1, 1, 1, cmd_setrange, "string", "2.2.0", "Overwrites a part of a string value with another by an offset. Creates the key if it doesn't exist."),
	ROW("substr", 4, R, 1, 1, 1, cmd_substr, "string", "1.0.0", "Returns a substring from a string value."),
	ROW("lcs", -3, R, 1, 2, 1, cmd_lcs, "string", "7.0.0", "Finds the longest common substring."),

	/* --- keys (cmd_keys.c) --- */
	ROW("del", -2, W, 1, -1, 1, cmd_del, "generic", "1.0.0", "Deletes one or more keys."),
	ROW("unlink", -2, W | F, 1, -1, 1, cmd_unlink, "generic", "4.0.0", "Asynchronously deletes one or more keys."),
	ROW("exists", -2, R | F, 1, -1, 1, cmd_exists, "generic", "1.0.0", "Determines whether one or more keys exist."),
	ROW("type", 2, R | F, 1, 1, 1, cmd_type, "generic", "1.0.0", "Determines the type of value stored at a key."),
	ROW("expire", -3, W | F, 1, 1, 1, cmd_expire, "generic", "1.0.0", "Sets the expiration time of a key in seconds."),
	ROW("pexpire", -3, W | F, 1, 1, 1, cmd_pexpire, "generic", "2.6.0", "Sets the expiration time of a key in milliseconds."),
	ROW("expireat", -3, W | F, 1, 1, 1, cmd_expireat, "generic", "1.2.0", "Sets the expiration time of a key to a Unix timestamp."),
	ROW("pexpireat", -3, W | F, 1, 1, 1, cmd_pexpireat, "generic", "2.6.0", "Sets the expiration time of a key to a Unix milliseconds timestamp."),
	ROW("expiretime", 2, R | F, 1, 1, 1, cmd_expiretime, "generic", "7.0.0", "Returns the expiration time of a key as a Unix timestamp."),
	ROW("pexpiretime", 2, R | F, 1, 1, 1, cmd_pexpiretime, "generic", "7.0.0", "Returns the expiration time of a key as a Unix milliseconds timestamp."),
	ROW("ttl", 2, R | F, 1, 1, 1, cmd_ttl, "generic", "1.0.0", "Returns the expiration time in seconds of a key."),
	ROW("pttl", 2, R | F, 1, 1, 1, cmd_pttl, "generic", "2.6.0", "Returns the expiration time in milliseconds of a key."),
	ROW("persist", 2, W | F, 1, 1, 1, cmd_persist, "generic", "2.2.0", "Removes the expiration time of a key."),
	ROW("rename", 3, W, 1, 2, 1, cmd_rename, "generic", "1.0.0", "Renames a key and overwrites the destination."),
	ROW("renamenx", 3, W | F, 1, 2, 1, cmd_renamenx, "generic", "1.0.0", "Renames a key only when the target key name doesn't exist."),
	ROW("copy", -3, W | M, 1, 2, 1, cmd_copy, "generic", "6.2.0", "Copies the value of a key to a new key."),
	ROW("keys", 2, R | WD, 0, 0, 0, cmd_keys, "generic", "1.0.0", "Returns all key names that match a pattern."),
	ROW("scan", -2, R | WD, 0, 0, 0, cmd_scan, "generic", "2.8.0", "Iterates over the key names in the database."),
	ROW("randomkey", 1, R | WD, 0, 0, 0, cmd_randomkey, "generic", "1.0.0", "Returns a random key name from the database."),
	ROW("dbsize", 1, R | F | WD, 0, 0, 0, cmd_dbsize, "server", "1.0.0", "Returns the number of keys in the database."),
	ROW("flushdb", -1, W | WD, 0, 0, 0, cmd_flushdb, "server", "1.0.0", "Remove all keys from the current database."),
	ROW("flushall", -1, W | WD, 0, 0, 0, cmd_flushall, "server", "1.0.0", "Removes all keys from all databases."),
	ROW("touch", -2, R | F, 1, -1, 1, cmd_touch, "generic", "3.2.1", "Returns the number of existing keys out of those specified after updating the time they were last accessed."),
	ROW("move", 3, W | F, 1, 1, 1, cmd_move, "generic", "1.0.0", "Moves a key to another database."),
	ROW("swapdb", 3, W | F | WD, 0, 0, 0, cmd_swapdb, "server", "4.0.0", "Swaps two Redis databases."),
	CONTAINER("object", -2, 0, object_subcommands, "generic", "2.2.3", "A container for object introspection commands."),
	CONTAINER("memory", -2, 0, memory_subcommands, "server", "4.0.0", "A container for memory diagnostics commands."),

	/* --- hashes (cmd_hash.c) --- */
	ROW("hset", -4, W | M | F, 1, 1, 1, cmd_hset, "hash", "2.0.0", "Creates or modifies the value of a field in a hash."),
	ROW("hsetnx", 4, W | M | F, 1, 1, 1, cmd_hsetnx, "hash", "2.0.0", "Sets the value of a field in a hash only when the field doesn't exist."),
	ROW("hget", 3, R | F, 1, 1, 1, cmd_hget, "hash", "2.0.0", "Returns the value of a field in a hash."),
	ROW("hmset", -4, W | M | F, 1, 1, 1, cmd_hmset, "hash", "2.0.0", "Sets the values of multiple fields."),
	ROW("hmget", -3, R | F, 1, 1, 1, cmd_hmget, "hash", "2.0.0", "Returns the values of all fields in a hash."),
	ROW("hdel", -3, W | F, 1, 1, 1, cmd_hdel, "hash", "2.0.0", "Deletes one or more fields and their values from a hash. Deletes the hash if no fields remain."),
	ROW("hexists", 3, R | F, 1, 1, 1, cmd_hexists, "hash", "2.0.0", "Determines whether a field exists in a hash."),
	ROW("hlen", 2, R | F, 1, 1, 1, cmd_hlen, "hash", "2.0.0", "Returns the number of fields in a hash."),
	ROW("hkeys", 2, R, 1, 1, 1, cmd_hkeys, "hash", "2.0.0", "Returns all fields in a hash."),
	ROW("hvals", 2, R, 1, 1, 1, cmd_hvals, "hash", "2.0.0", "Returns all values in a hash."),
	ROW("hgetall", 2, R, 1, 1, 1, cmd_hgetall, "hash", "2.0.0", "Returns all fields and values in a hash."),
	ROW("hincrby", 4, W | M | F, 1, 1, 1, cmd_hincrby, "hash", "2.0.0", "Increments the integer value of a field in a hash by a number. Uses 0 as initial value if the field doesn't exist."),
	ROW("hincrbyfloat", 4, W | M | F, 1, 1, 1, cmd_hincrbyfloat, "hash", "2.6.0", "Increments the floating point value of a field by a number. Uses 0 as initial value if the field doesn't exist."),
	ROW("hstrlen", 3, R | F, 1, 1, 1, cmd_hstrlen, "hash", "3.2.0", "Returns the length of the value of a field."),
	ROW("hrandfield", -2, R, 1, 1, 1, cmd_hrandfield, "hash", "6.2.0", "Returns one or more random fields from a hash."),
	ROW("hscan", -3, R, 1, 1, 1, cmd_hscan, "hash", "2.8.0", "Iterates over fields and values of a hash."),

	/* --- sets (cmd_set.c) --- */
	ROW("sadd", -3, W | M | F, 1, 1, 1, cmd_sadd, "set", "1.0.0", "Adds one or more members to a set. Creates the key if it doesn't exist."),
	ROW("srem", -3, W | F, 1, 1, 1, cmd_srem, "set", "1.0.0", "Removes one or more members from a set. Deletes the set if the last member was removed."),
	ROW("sismember", 3, R | F, 1, 1, 1, cmd_sismember, "set", "1.0.0", "Determines whether a member belongs to a set."),
	ROW("smismember", -3, R | F, 1, 1, 1, cmd_smismember, "set", "6.2.0", "Determines whether multiple members belong to a set."),
	ROW("smembers", 2, R, 1, 1, 1, cmd_smembers, "set", "1.0.0", "Returns all members of a set."),
	ROW("scard", 2, R | F, 1, 1, 1, cmd_scard, "set", "1.0.0", "Returns the number of members in a set."),
	ROW("spop", -2, W | F | RE, 1, 1, 1, cmd_spop, "set", "1.0.0", "Returns one or more random members from a set after removing them. Deletes the set if the last member was popped."),
	ROW("srandmember", -2, R, 1, 1, 1, cmd_srandmember, "set", "1.0.0", "Get one or multiple random members from a set"),
	ROW("smove", 4, W | F, 1, 2, 1, cmd_smove, "set", "1.0.0", "Moves a member from one set to another."),
	ROW("sinter", -2, R, 1, -1, 1, cmd_sinter, "set", "1.0.0", "Returns the intersect of multiple sets."),
	/* Redis's key spec is "numkeys at 1, keys from 2"; the range 2..last
	 * over-approximates it (LIMIT and its value get locked too, which
	 * only costs a lock) so the dispatcher holds every key's shard. */
	ROW_KEYNUM("sintercard", -3, R, 0, 0, 0, 1, cmd_sintercard, "set", "7.0.0", "Returns the number of members of the intersect of multiple sets."),
	ROW("sinterstore", -3, W | M, 1, -1, 1, cmd_sinterstore, "set", "1.0.0", "Stores the intersect of multiple sets in a key."),
	ROW("sunion", -2, R, 1, -1, 1, cmd_sunion, "set", "1.0.0", "Returns the union of multiple sets."),
	ROW("sunionstore", -3, W | M, 1, -1, 1, cmd_sunionstore, "set", "1.0.0", "Stores the union of multiple sets in a key."),
	ROW("sdiff", -2, R, 1, -1, 1, cmd_sdiff, "set", "1.0.0", "Returns the difference of multiple sets."),
	ROW("sdiffstore", -3, W | M, 1, -1, 1, cmd_sdiffstore, "set", "1.0.0", "Stores the difference of multiple sets in a key."),
	ROW("sscan", -3, R, 1, 1, 1, cmd_sscan, "set", "2.8.0", "Iterates over members of a set."),

	/* --- sorted sets (cmd_zset.c) --- */
	ROW("zadd", -4, W | M | F, 1, 1, 1, cmd_zadd, "sorted-set", "1.2.0", "Add one or more members to a sorted set, or update its score if it already exists"),
	ROW("zincrby", 4, W | M | F, 1, 1, 1, cmd_zincrby, "sorted-set", "1.2.0", "Increment the score of a member in a sorted set"),
	ROW("zrem", -3, W | F, 1, 1, 1, cmd_zrem, "sorted-set", "1.2.0", "Remove one or more members from a sorted set"),
	ROW("zcard", 2, R | F, 1, 1, 1, cmd_zcard, "sorted-set", "1.2.0", "Get the number of members in a sorted set"),
	ROW("zscore", 3, R | F, 1, 1, 1, cmd_zscore, "sorted-set", "1.2.0", "Get the score associated with the given member in a sorted set"),
	ROW("zmscore", -3, R | F, 1, 1, 1, cmd_zmscore, "sorted-set", "6.2.0", "Get the score associated with the given members in a sorted set"),
	ROW("zrank", 3, R | F, 1, 1, 1, cmd_zrank, "sorted-set", "2.0.0", "Determine the index of a member in a sorted set"),
	ROW("zrevrank", 3, R | F, 1, 1, 1, cmd_zrevrank, "sorted-set", "2.0.0", "Determine the index of a member in a sorted set, with scores ordered from high to low"),
	ROW("zcount", 4, R | F, 1, 1, 1, cmd_zcount, "sorted-set", "2.0.0", "Count the members in a sorted set with scores within the given values"),
	ROW("zlexcount", 4, R | F, 1, 1, 1, cmd_zlexcount, "sorted-set", "2.8.9", "Count the number of members in a sorted set between a given lexicographical range"),
	ROW("zrange", -4, R, 1, 1, 1, cmd_zrange, "sorted-set", "1.2.0", "Return a range of members in a sorted set"),
	ROW("zrangestore", -5, W | M, 1, 2, 1, cmd_zrangestore, "sorted-set", "6.2.0", "Store a range of members from sorted set into another key"),
	ROW("zrevrange", -4, R, 1, 1, 1, cmd_zrevrange, "sorted-set", "1.2.0", "Return a range of members in a sorted set, by index, with scores ordered from high to low"),
	ROW("zrangebyscore", -4, R, 1, 1, 1, cmd_zrangebyscore, "sorted-set", "1.0.5", "Return a range of members in a sorted set, by score"),
	ROW("zrevrangebyscore", -4, R, 1, 1, 1, cmd_zrevrangebyscore, "sorted-set", "2.2.0", "Return a range of members in a sorted set, by score, with scores ordered from high to low"),
	ROW("zrangebylex", -4, R, 1, 1, 1, cmd_zrangebylex, "sorted-set", "2.8.9", "Return a range of members in a sorted set, by lexicographical range"),
	ROW("zrevrangebylex", -4, R, 1, 1, 1, cmd_zrevrangebylex, "sorted-set", "2.8.9", "Return a range of members in a sorted set, by lexicographical range, ordered from higher to lower strings."),
	ROW("zremrangebyrank", 4, W, 1, 1, 1, cmd_zremrangebyrank, "sorted-set", "2.0.0", "Remove all members in a sorted set within the given indexes"),
	ROW("zremrangebyscore", 4, W, 1, 1, 1, cmd_zremrangebyscore, "sorted-set", "1.2.0", "Remove all members in a sorted set within the given scores"),
	ROW("zremrangebylex", 4, W, 1, 1, 1, cmd_zremrangebylex, "sorted-set", "2.8.9", "Remove all members in a sorted set between the given lexicographical range"),
	ROW("zpopmin", -2, W | F, 1, 1, 1, cmd_zpopmin, "sorted-set", "5.0.0", "Remove and return members with the lowest scores in a sorted set"),
	ROW("zpopmax", -2, W | F, 1, 1, 1, cmd_zpopmax, "sorted-set", "5.0.0", "Remove and return members with the highest scores in a sorted set"),
	ROW("zrandmember", -2, R, 1, 1, 1, cmd_zrandmember, "sorted-set", "6.2.0", "Get one or multiple random elements from a sorted set"),
	ROW("zscan", -3, R, 1, 1, 1, cmd_zscan, "sorted-set", "2.8.0", "Incrementally iterate sorted sets elements and associated scores"),
	/* Redis's key specs for these are "numkeys, then that many keys"; the
	 * range from the first key to the last argument over-approximates it
	 * (options get locked too, which only costs a lock), so the dispatcher
	 * holds every input's shard. */
	ROW("bzpopmin", -3, W | NS | CMD_BLOCKING | F, 1, -2, 1, cmd_bzpopmin, "sorted-set", "5.0.0", "Remove and return the member with the lowest score from one or more sorted sets, or block until one is available"),
	ROW("bzpopmax", -3, W | NS | CMD_BLOCKING | F, 1, -2, 1, cmd_bzpopmax, "sorted-set", "5.0.0", "Remove and return the member with the highest score from one or more sorted sets, or block until one is available"),
	ROW_KEYNUM("bzmpop", -5, W | CMD_BLOCKING, 0, 0, 0, 2, cmd_bzmpop, "sorted-set", "7.0.0", "Remove and return members with scores in a sorted set or block until one is available"),
	ROW_KEYNUM("zmpop", -4, W, 0, 0, 0, 1, cmd_zmpop, "sorted-set", "7.0.0", "Remove and return members with scores in a sorted set"),
	ROW_KEYNUM("zunion", -3, R, 0, 0, 0, 1, cmd_zunion, "sorted-set", "6.2.0", "Add multiple sorted sets"),
	ROW_KEYNUM("zinter", -3, R, 0, 0, 0, 1, cmd_zinter, "sorted-set", "6.2.0", "Intersect multiple sorted sets"),
	ROW_KEYNUM("zdiff", -3, R, 0, 0, 0, 1, cmd_zdiff, "sorted-set", "6.2.0", "Subtract multiple sorted sets"),
	ROW_KEYNUM("zintercard", -3, R, 0, 0, 0, 1, cmd_zintercard, "sorted-set", "7.0.0", "Intersect multiple sorted sets and return the cardinality of the result"),
	ROW_KEYNUM("zunionstore", -4, W | M, 1, 1, 1, 2, cmd_zunionstore, "sorted-set", "2.0.0", "Add multiple sorted sets and store the resulting sorted set in a new key"),
	ROW_KEYNUM("zinterstore", -4, W | M, 1, 1, 1, 2, cmd_zinterstore, "sorted-set", "2.0.0", "Intersect multiple sorted sets and store the resulting sorted set in a new key"),
	ROW_KEYNUM("zdiffstore", -4, W | M, 1, 1, 1, 2, cmd_zdiffstore, "sorted-set", "6.2.0", "Subtract multiple sorted sets and store the resulting sorted set in a new key"),

	/* --- lists and blocking pops (cmd_list.c) --- */
	ROW("lpush", -3, W | M | F, 1, 1, 1, cmd_lpush, "list", "1.0.0", "Prepends one or more elements to a list. Creates the key if it doesn't exist."),
	ROW("rpush", -3, W | M | F, 1, 1, 1, cmd_rpush, "list", "1.0.0", "Appends one or more elements to a list. Creates the key if it doesn't exist."),
	ROW("lpushx", -3, W | M | F, 1, 1, 1, cmd_lpushx, "list", "2.2.0", "Prepends one or more elements to a list only when the list exists."),
	ROW("rpushx", -3, W | M | F, 1, 1, 1, cmd_rpushx, "list", "2.2.0", "Appends an element to a list only when the list exists."),
	ROW("linsert", 5, W | M, 1, 1, 1, cmd_linsert, "list", "2.2.0", "Inserts an element before or after another element in a list."),
	ROW("llen", 2, R | F, 1, 1, 1, cmd_llen, "list", "1.0.0", "Returns the length of a list."),
	ROW("lindex", 3, R, 1, 1, 1, cmd_lindex, "list", "1.0.0", "Returns an element from a list by its index."),
	ROW("lrange", 4, R, 1, 1, 1, cmd_lrange, "list", "1.0.0", "Returns a range of elements from a list."),
	ROW("lset", 4, W | M, 1, 1, 1, cmd_lset, "list", "1.0.0", "Sets the value of an element in a list by its index."),
	ROW("lrem", 4, W, 1, 1, 1, cmd_lrem, "list", "1.0.0", "Removes elements from a list. Deletes the list if the last element was removed."),
	ROW("ltrim", 4, W, 1, 1, 1, cmd_ltrim, "list", "1.0.0", "Removes elements from both ends a list. Deletes the list if all elements were trimmed."),
	ROW("lpop", -2, W | F, 1, 1, 1, cmd_lpop, "list", "1.0.0", "Returns the first elements in a list after removing it. Deletes the list if the last element was popped."),
	ROW("rpop", -2, W | F, 1, 1, 1, cmd_rpop, "list", "1.0.0", "Returns and removes the last elements of a list. Deletes the list if the last element was popped."),
	ROW("lpos", -3, R, 1, 1, 1, cmd_lpos, "list", "6.0.6", "Returns the index of matching elements in a list."),
	ROW("lmove", 5, W | M, 1, 2, 1, cmd_lmove, "list", "6.2.0", "Returns an element after popping it from one list and pushing it to another. Deletes the list if the last element was moved."),
	ROW("rpoplpush", 3, W | M, 1, 2, 1, cmd_rpoplpush, "list", "1.2.0", "Returns the last element of a list after removing and pushing it to another list. Deletes the list if the last element was popped."),
	/* Redis's key spec is "numkeys, then keys"; the range to the last
	 * argument over-approximates it (the direction and COUNT get
	 * locked too, which only costs a lock). */
	ROW_KEYNUM("lmpop", -4, W, 0, 0, 0, 1, cmd_lmpop, "list", "7.0.0", "Returns multiple elements from a list after removing them. Deletes the list if the last element was popped."),
	ROW("blpop", -3, W | NS | CMD_BLOCKING, 1, -2, 1, cmd_blpop, "list", "2.0.0", "Removes and returns the first element in a list. Blocks until an element is available otherwise. Deletes the list if the last element was popped."),
	ROW("brpop", -3, W | NS | CMD_BLOCKING, 1, -2, 1, cmd_brpop, "list", "2.0.0", "Removes and returns the last element in a list. Blocks until an element is available otherwise. Deletes the list if the last element was popped."),
	ROW("blmove", 6, W | M | NS | CMD_BLOCKING, 1, 2, 1, cmd_blmove, "list", "6.2.0", "Pops an element from a list, pushes it to another list and returns it. Blocks until an element is available otherwise. Deletes the list if the last element was moved."),
	ROW("brpoplpush", 4, W | M | NS | CMD_BLOCKING, 1, 2, 1, cmd_brpoplpush, "list", "2.2.0", "Pops an element from a list, pushes it to another list and returns it. Block until an element is available otherwise. Deletes the list if the last element was popped."),
	ROW_KEYNUM("blmpop", -5, W | CMD_BLOCKING, 0, 0, 0, 2, cmd_blmpop, "list", "7.0.0", "Pops the first element from one of multiple lists. Blocks until an element is available otherwise. Deletes the list if the last element was popped."),

	/* --- bitmaps and HyperLogLog (cmd_bitmap.c, cmd_hll.c) --- */
	ROW("setbit", 4, W | M, 1, 1, 1, cmd_setbit, "bitmap", "2.2.0", "Sets or clears the bit at offset of the string value. Creates the key if it doesn't exist."),
	ROW("getbit", 3, R | F, 1, 1, 1, cmd_getbit, "bitmap", "2.2.0", "Returns a bit value by offset."),
	ROW("bitcount", -2, R, 1, 1, 1, cmd_bitcount, "bitmap", "2.6.0", "Counts the number of set bits (population counting) in a string."),
	ROW("bitpos", -3, R, 1, 1, 1, cmd_bitpos, "bitmap", "2.8.7", "Finds the first set (1) or clear (0) bit in a string."),
	ROW("bitop", -4, W | M, 2, -1, 1, cmd_bitop, "bitmap", "2.6.0", "Performs bitwise operations on multiple strings, and stores the result."),
	ROW("bitfield", -2, W | M, 1, 1, 1, cmd_bitfield, "bitmap", "3.2.0", "Performs arbitrary bitfield integer operations on strings."),
	ROW("bitfield_ro", -2, R | F, 1, 1, 1, cmd_bitfield_ro, "bitmap", "6.0.0", "Performs arbitrary read-only bitfield integer operations on strings."),
	ROW("pfadd", -2, W | M | F, 1, 1, 1, cmd_pfadd, "hyperloglog", "2.8.9", "Adds elements to a HyperLogLog key. Creates the key if it doesn't exist."),
	ROW("pfcount", -2, R | MW, 1, -1, 1, cmd_pfcount, "hyperloglog", "2.8.9", "Returns the approximated cardinality of the set(s) observed by the HyperLogLog key(s)."),
	ROW("pfmerge", -2, W | M, 1, -1, 1, cmd_pfmerge, "hyperloglog", "2.8.9", "Merges one or more HyperLogLog values into a single key."),
	ROW("pfdebug", 3, W | M | A, 2, 2, 1, cmd_pfdebug, "hyperloglog", "2.8.9", "Internal commands for debugging HyperLogLog values."),
	ROW("pfselftest", 1, A | KL, 0, 0, 0, cmd_pfselftest, "hyperloglog", "2.8.9", "An internal command for testing HyperLogLog values."),

	/* --- transactions (cmd_multi.c) --- */
	ROW("multi", 1, NS | L | S | F | KL | CMD_NOMULTI, 0, 0, 0, cmd_multi, "transactions", "1.2.0", "Starts a transaction."),
	ROW("exec", 1, NS | L | S | KL | EX, 0, 0, 0, cmd_exec, "transactions", "1.2.0", "Executes all commands in a transaction."),
	ROW("discard", 1, NS | L | S | F | KL, 0, 0, 0, cmd_discard, "transactions", "2.0.0", "Discards a transaction."),
	ROW("watch", -2, NS | L | S | F | CMD_NOMULTI, 1, -1, 1, cmd_watch, "transactions", "2.2.0", "Monitors changes to keys to determine the execution of a transaction."),
	ROW("unwatch", 1, NS | L | S | F | KL, 0, 0, 0, cmd_unwatch, "transactions", "2.2.0", "Forgets about watched keys of a transaction."),

	/* --- scripting (cmd_script.c): numkeys at argv[2] counts the declared
	 * keys, whose shards the dispatcher locks --- */
	ROW_SCRIPT("eval", 0, cmd_eval, SCRIPT_NOTES_RW, "2.6.0", "Executes a server-side Lua script."),
	ROW_SCRIPT("evalsha", 0, cmd_evalsha, NULL, "2.6.0", "Executes a server-side Lua script by SHA1 digest."),
	ROW_SCRIPT("eval_ro", R, cmd_eval_ro, SCRIPT_NOTES_RO, "7.0.0", "Executes a read-only server-side Lua script."),
	ROW_SCRIPT("evalsha_ro", R, cmd_evalsha_ro, NULL, "7.0.0", "Executes a read-only server-side Lua script by SHA1 digest."),
	CONTAINER("script", -2, 0, script_subcommands, "scripting", "2.6.0", "A container for Lua scripts management commands."),
	ROW_SCRIPT("fcall", 0, cmd_fcall, SCRIPT_NOTES_RW, "7.0.0", "Invoke a function"),
	ROW_SCRIPT("fcall_ro", R, cmd_fcall_ro, SCRIPT_NOTES_RO, "7.0.0", "Invoke a read-only function"),
	CONTAINER("function", -2, 0, function_subcommands, "scripting", "7.0.0", "A container for function commands"),

	/* --- pub/sub (cmd_pubsub.c) --- */
	/* The shard commands' channels are keys in their key spec (cluster
	 * routing) but never locked: KL. */
	ROW("subscribe", -2, CMD_PUBSUB | NS | L | S | KL, 0, 0, 0, cmd_subscribe, "pubsub", "2.0.0", "Listen for messages published to the given channels"),
	ROW("unsubscribe", -1, CMD_PUBSUB | NS | L | S | KL, 0, 0, 0, cmd_unsubscribe, "pubsub", "2.0.0", "Stop listening for messages posted to the given channels"),
	ROW("psubscribe", -2, CMD_PUBSUB | NS | L | S | KL, 0, 0, 0, cmd_psubscribe, "pubsub", "2.0.0", "Listen for messages published to channels matching the given patterns"),
	ROW("punsubscribe", -1, CMD_PUBSUB | NS | L | S | KL, 0, 0, 0, cmd_punsubscribe, "pubsub", "2.0.0", "Stop listening for messages posted to channels matching the given patterns"),
	ROW("publish", 3, CMD_PUBSUB | L | S | F | KL, 0, 0, 0, cmd_publish, "pubsub", "2.0.0", "Post a message to a channel"),
	ROW("ssubscribe", -2, CMD_PUBSUB | NS | L | S | KL, 1, -1, 1, cmd_ssubscribe, "pubsub", "7.0.0", "Listen for messages published to the given shard channels"),
	ROW("sunsubscribe", -1, CMD_PUBSUB | NS | L | S | KL, 1, -1, 1, cmd_sunsubscribe, "pubsub", "7.0.0", "Stop listening for messages posted to the given shard channels"),
	ROW("spublish", 3, CMD_PUBSUB | L | S | F | KL, 1, 1, 1, cmd_spublish, "pubsub", "7.0.0", "Post a message to a shard channel"),
	CONTAINER("pubsub", -2, 0, pubsub_subcommands, "pubsub", "2.8.0", "A container for Pub/Sub commands"),

	/* --- persistence (cmd_persist.c) --- */
	ROW("save", 1, A | NS | KL | CMD_NOMULTI, 0, 0, 0, cmd_save, "server", "1.0.0", "Synchronously saves the database(s) to disk."),
	ROW("bgsave", -1, A | NS | KL, 0, 0, 0, cmd_bgsave, "server", "1.0.0", "Asynchronously saves the database(s) to disk."),
	ROW("bgrewriteaof", 1, A | NS | KL, 0, 0, 0, cmd_bgrewriteaof, "server", "1.0.0", "Asynchronously rewrites the append-only file to disk."),

	/* --- server and connection (cmd_conn.c, cmd_server.c, cmd_client.c, cmd_config.c,
	 *     cmd_command.c, cmd_info.c) --- */
	ROW("ping", -1, F | KL, 0, 0, 0, cmd_ping, "connection", "1.0.0", "Returns the server's liveliness response."),
	ROW("echo", 2, L | S | F | KL, 0, 0, 0, cmd_echo, "connection", "1.0.0", "Returns the given string."),
	ROW("quit", -1, NA | NS | L | S | F | KL, 0, 0, 0, cmd_quit, "connection", "1.0.0", "Closes the connection."),
	ROW("reset", 1, NA | NS | L | S | F | KL, 0, 0, 0, cmd_reset, "connection", "6.2.0", "Resets the connection."),
	ROW("select", 2, L | S | F | KL, 0, 0, 0, cmd_select, "connection", "1.0.0", "Changes the selected database."),
	ROW("auth", -2, NA | NS | L | S | F | KL, 0, 0, 0, cmd_auth, "connection", "1.0.0", "Authenticates the connection."),
	ROW("hello", -1, NA | NS | L | S | F | KL, 0, 0, 0, cmd_hello, "connection", "6.0.0", "Handshakes with the Redis server."),
	CONTAINER("client", -2, 0, client_subcommands, "connection", "2.4.0", "A container for client connection commands."),
	ROW("info", -1, L | S | KL, 0, 0, 0, cmd_info, "server", "1.0.0", "Returns information and statistics about the server."),
	CONTAINER("cluster", -2, 0, cluster_subcommands, "cluster", "3.0.0", "A container for Redis Cluster commands."),
	ROW("asking", 1, F | KL, 0, 0, 0, cmd_asking, "cluster", "3.0.0", "Signals that a cluster client is following an -ASK redirect."),
	ROW("readonly", 1, F | L | S | KL, 0, 0, 0, cmd_readonly, "cluster", "3.0.0", "Enables read-only queries for a connection to a Redis Cluster replica node."),
	ROW("readwrite", 1, F | L | S | KL, 0, 0, 0, cmd_readwrite, "cluster", "3.0.0", "Enables read-write queries for a connection to a Redis Cluster replica node."),
	CONTAINER("config", -2, 0, config_subcommands, "server", "2.0.0", "A container for server configuration commands."),
	ROW("time", 1, L | S | F | KL, 0, 0, 0, cmd_time, "server", "2.6.0", "Returns the server time."),
	ROW("lastsave", 1, L | S | F | KL, 0, 0, 0, cmd_lastsave, "server", "1.0.0", "Returns the Unix timestamp of the last successful save to disk."),
	ROW("replicaof", 3, A | NS | S | KL, 0, 0, 0, cmd_replicaof, "server", "5.0.0", "Configures a server as replica of another, or promotes it to a master."),
	ROW("slaveof", 3, A | NS | S | KL, 0, 0, 0, cmd_replicaof, "server", "1.0.0", "Sets a Redis server as a replica of another, or promotes it to being a master."),
	ROW("role", 1, NS | L | S | F | KL, 0, 0, 0, cmd_role, "server", "2.8.12", "Returns the replication role."),
	ROW("psync", -3, A | NS | KL | CMD_NOMULTI, 0, 0, 0, cmd_psync, "server", "2.8.0", "An internal command used in replication."),
	ROW("sync", 1, A | NS | KL | CMD_NOMULTI, 0, 0, 0, cmd_sync, "server", "1.0.0", "An internal command used in replication."),
	ROW("replconf", -1, A | NS | L | S | KL, 0, 0, 0, cmd_replconf, "server", "3.0.0", "An internal command for configuring the replication stream."),
	ROW("wait", 3, NS | KL, 0, 0, 0, cmd_wait, "generic", "3.0.0", "Blocks until the asynchronous replication of all preceding write commands sent by the connection is completed."),
	ROW("debug", -2, A | NS | L | S | KL | PR | CMD_SELFLOCK, 0, 0, 0, cmd_debug, "server", "1.0.0", "A container for debugging commands."),
	CONTAINER("slowlog", -2, 0, slowlog_subcommands, "server", "2.2.12", "A container for slow log commands."),
	CONTAINER("latency", -2, 0, latency_subcommands, "server", "2.8.13", "A container for latency diagnostics commands."),
	ROW("shutdown", -1, A | NS | L | S | KL | CMD_NOMULTI, 0, 0, 0, cmd_shutdown, "server", "1.0.0", "Synchronously saves the database(s) to disk and shuts down the Redis server."),
	/* both a container and a command of its own: bare COMMAND lists every row */
	{ .name = "command", .arity = -1, .flags = L | S | KL | CMD_CONTAINER, .handler = cmd_command, .subcommands = command_subcommands, .group = "server", .since = "2.8.13", .summary = "Returns detailed information about all commands." },
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
#undef KL
#undef PR
#undef WD
#undef EX
#undef RE
#undef NMK
#undef MW
#undef SCRIPT_NOTES_RW
#undef SCRIPT_NOTES_RO

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

void command_table_init(void)
{
	/* ids and parents are filled in once, through a cast of the const row
	 * pointers, before any thread reads the table. */
	for (const struct command *cmd = command_rows; cmd->name; cmd++) {
		struct command *w = (struct command *)cmd;
		w->id = rows_total;
		rows_by_id[rows_total++] = cmd;
		rows_top++;
		index_insert(cmd);
		for (const struct command *sub = cmd->subcommands; sub && sub->name; sub++) {
			struct command *ws = (struct command *)sub;
			ws->parent = cmd;
			ws->id = rows_total;
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

bool command_keynum_range(const struct command *cmd, const struct resp_arg *argv, int argc, int *first,
			  int *last)
{
	long long n;
	if (cmd->keynum_index <= 0 || cmd->keynum_index >= argc ||
	    !zr_str_to_ll(argv[cmd->keynum_index].ptr, argv[cmd->keynum_index].len, &n) || n < 1 || n > argc)
		return false;
	long long f = (long long)cmd->keynum_index + cmd->keynum_first;
	long long l = f + (n - 1) * (cmd->keynum_step > 0 ? cmd->keynum_step : 1);
	if (l >= argc)
		return false;
	*first = (int)f;
	*last = (int)l;
	return true;
}

size_t command_full_name(const struct command *cmd, char *buf, size_t size)
{
	int n = cmd->parent ? snprintf(buf, size, "%s|%s", cmd->parent->name, cmd->name)
			    : snprintf(buf, size, "%s", cmd->name);
	return n < 0 ? 0 : (size_t)n;
}
