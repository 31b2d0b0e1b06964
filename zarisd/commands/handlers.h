/* handlers — every command handler, grouped by the file that defines it,
 * and the rows' getkeys procedures. table.c lists them; nothing else
 * names a handler (a command's special meaning is a flag of its row).
 * Each handler's contract is the one of cmd_handler_fn, each getkeys's
 * that of cmd_getkeys_fn (command.h). */
#ifndef ZR_HANDLERS_H
#define ZR_HANDLERS_H

struct client;

/* Strong declarations: every row of table.c names its handler, so a
 * handler that no file defines fails the link. */
#define HANDLER(name) void name(struct client *c);

/* clang-format off */
/* cmd_string.c */
#define STRING_HANDLERS(X)                                                                             \
	X(cmd_get)                                                                                     \
	X(cmd_set)                                                                                     \
	X(cmd_setnx) X(cmd_setex) X(cmd_psetex) X(cmd_getset) X(cmd_getdel) X(cmd_getex) X(cmd_mget)   \
		X(cmd_mset) X(cmd_msetnx) X(cmd_incr) X(cmd_decr) X(cmd_incrby) X(cmd_decrby)          \
			X(cmd_incrbyfloat) X(cmd_append) X(cmd_strlen) X(cmd_getrange) X(cmd_setrange) \
				X(cmd_substr) X(cmd_lcs) X(cmd_metaput)

/* cmd_meta.c */
#define META_HANDLERS(X) X(cmd_metaset) X(cmd_metaget) X(cmd_metascan) X(cmd_metainvalidate)

/* cmd_keys.c */
#define KEYS_HANDLERS(X)                                                                                   \
	X(cmd_del)                                                                                         \
	X(cmd_unlink)                                                                                      \
	X(cmd_exists) X(cmd_type) X(cmd_expire) X(cmd_pexpire) X(cmd_expireat) X(cmd_pexpireat)            \
		X(cmd_expiretime) X(cmd_pexpiretime) X(cmd_ttl) X(cmd_pttl) X(cmd_persist) X(cmd_rename)   \
			X(cmd_renamenx) X(cmd_copy) X(cmd_keys) X(cmd_scan) X(cmd_randomkey) X(cmd_dbsize) \
				X(cmd_flushdb) X(cmd_flushall) X(cmd_touch) X(cmd_move) X(cmd_swapdb)      \
					X(cmd_object_encoding) X(cmd_object_freq) X(cmd_object_idletime)   \
						X(cmd_object_refcount) X(cmd_object_help)                  \
							X(cmd_memory_usage) X(cmd_memory_help)             \
								X(cmd_memory_stats) X(cmd_memory_doctor)   \
									X(cmd_memory_malloc_stats)         \
										X(cmd_memory_purge)

/* cmd_server.c, cmd_conn.c, cmd_client.c, cmd_config.c, cmd_command.c, cmd_info.c */
#define SERVER_HANDLERS(X)                                                                                   \
	X(cmd_ping)                                                                                          \
	X(cmd_echo)                                                                                          \
	X(cmd_quit) X(cmd_reset) X(cmd_select) X(cmd_auth) X(cmd_hello) X(cmd_client_id) X(                  \
		cmd_client_setname) X(cmd_client_getname) X(cmd_client_list) X(cmd_client_kill)              \
		X(cmd_client_info) X(cmd_client_pause) X(cmd_client_unpause) X(cmd_client_reply) X(          \
			cmd_client_no_evict) X(cmd_client_help) X(cmd_client_setinfo) X(cmd_info)            \
			X(cmd_config_get) X(cmd_config_set) X(cmd_config_resetstat) X(cmd_config_rewrite) X( \
				cmd_config_help) X(cmd_time) X(cmd_lastsave) X(cmd_debug) X(cmd_slowlog_get) \
				X(cmd_slowlog_len) X(cmd_slowlog_reset) X(cmd_slowlog_help)                  \
					X(cmd_latency_latest) X(cmd_latency_history) X(cmd_latency_reset)    \
						X(cmd_latency_help) X(cmd_latency_doctor) X(cmd_shutdown)    \
							X(cmd_command) X(cmd_command_count)                  \
								X(cmd_command_info) X(cmd_command_docs)      \
									X(cmd_command_list)                  \
										X(cmd_command_getkeys)       \
										X(cmd_command_getkeysandflags) \
											X(cmd_command_help)

/* cmd_hash.c */
#define HASH_HANDLERS(X)                                                                       \
	X(cmd_hset) X(cmd_hsetnx) X(cmd_hget) X(cmd_hmset) X(cmd_hmget) X(cmd_hdel) X(cmd_hexists)     \
	X(cmd_hlen) X(cmd_hkeys) X(cmd_hvals) X(cmd_hgetall) X(cmd_hincrby) X(cmd_hincrbyfloat)         \
	X(cmd_hstrlen) X(cmd_hrandfield) X(cmd_hscan)

/* cmd_set.c */
#define SET_HANDLERS(X)                                                                        \
	X(cmd_sadd) X(cmd_srem) X(cmd_sismember) X(cmd_smismember) X(cmd_smembers) X(cmd_scard)        \
	X(cmd_spop) X(cmd_srandmember) X(cmd_smove) X(cmd_sinter) X(cmd_sintercard)                    \
	X(cmd_sinterstore) X(cmd_sunion) X(cmd_sunionstore) X(cmd_sdiff) X(cmd_sdiffstore) X(cmd_sscan)

/* cmd_zset.c, cmd_zset_pop.c, cmd_zset_setops.c */
#define ZSET_HANDLERS(X)                                                                       \
	X(cmd_zadd) X(cmd_zincrby) X(cmd_zrem) X(cmd_zcard) X(cmd_zscore) X(cmd_zmscore) X(cmd_zrank)  \
	X(cmd_zrevrank) X(cmd_zcount) X(cmd_zlexcount) X(cmd_zrange) X(cmd_zrangestore)                \
	X(cmd_zrevrange) X(cmd_zrangebyscore) X(cmd_zrevrangebyscore) X(cmd_zrangebylex)               \
	X(cmd_zrevrangebylex) X(cmd_zremrangebyrank) X(cmd_zremrangebyscore) X(cmd_zremrangebylex)     \
	X(cmd_zpopmin) X(cmd_zpopmax) X(cmd_zmpop) X(cmd_zrandmember) X(cmd_zscan) X(cmd_zunion)       \
	X(cmd_zinter) X(cmd_zdiff) X(cmd_zintercard) X(cmd_zunionstore) X(cmd_zinterstore)             \
	X(cmd_zdiffstore) X(cmd_bzpopmin) X(cmd_bzpopmax) X(cmd_bzmpop)

/* cmd_list.c (and the blocking pops; cmd_client_unblock is in cmd_client.c) */
#define LIST_HANDLERS(X)                                                                                  \
	X(cmd_lpush) X(cmd_rpush) X(cmd_lpushx) X(cmd_rpushx) X(cmd_linsert) X(cmd_llen) X(cmd_lindex)    \
		X(cmd_lrange) X(cmd_lset) X(cmd_lrem) X(cmd_ltrim) X(cmd_lpop) X(cmd_rpop) X(cmd_lpos)    \
			X(cmd_lmove) X(cmd_rpoplpush) X(cmd_lmpop) X(cmd_blpop) X(cmd_brpop) X(cmd_blmove) \
				X(cmd_brpoplpush) X(cmd_blmpop) X(cmd_client_unblock)

/* cmd_bitmap.c, cmd_hll.c */
#define BITMAP_HANDLERS(X)                                                                     \
	X(cmd_setbit) X(cmd_getbit) X(cmd_bitcount) X(cmd_bitpos) X(cmd_bitop) X(cmd_bitfield)         \
	X(cmd_bitfield_ro) X(cmd_pfadd) X(cmd_pfcount) X(cmd_pfmerge) X(cmd_pfdebug) X(cmd_pfselftest)

/* cmd_multi.c */
#define MULTI_HANDLERS(X) X(cmd_multi) X(cmd_exec) X(cmd_discard) X(cmd_watch) X(cmd_unwatch)

/* cmd_pubsub.c */
#define PUBSUB_HANDLERS(X)                                                                           \
	X(cmd_subscribe)                                                                             \
	X(cmd_unsubscribe) X(cmd_psubscribe) X(cmd_punsubscribe) X(cmd_publish) X(cmd_ssubscribe)   \
		X(cmd_sunsubscribe) X(cmd_spublish) X(cmd_pubsub_channels) X(cmd_pubsub_numsub)      \
			X(cmd_pubsub_numpat) X(cmd_pubsub_shardchannels) X(cmd_pubsub_shardnumsub)   \
				X(cmd_pubsub_help)

/* cmd_persist.c */
#define PERSIST_HANDLERS(X) X(cmd_save) X(cmd_bgsave) X(cmd_bgrewriteaof)

/* cmd_repl.c */
#define REPL_HANDLERS(X) X(cmd_replicaof) X(cmd_role) X(cmd_psync) X(cmd_sync) X(cmd_replconf) X(cmd_wait)

/* cmd_cluster.c */
#define CLUSTER_HANDLERS(X)                                                                               \
	X(cmd_cluster_help) X(cmd_cluster_info) X(cmd_cluster_keyslot) X(cmd_cluster_countkeysinslot)      \
	X(cmd_cluster_getkeysinslot) X(cmd_cluster_myid) X(cmd_cluster_myshardid) X(cmd_cluster_nodes)     \
	X(cmd_cluster_slots) X(cmd_cluster_shards) X(cmd_cluster_links) X(cmd_cluster_replicas)            \
	X(cmd_cluster_saveconfig) X(cmd_cluster_unsupported) X(cmd_cluster_settopology)                   \
	X(cmd_cluster_lease) X(cmd_cluster_topology) X(cmd_asking) X(cmd_readonly) X(cmd_readwrite)

/* cmd_script.c */
#define SCRIPT_HANDLERS(X)                                                                                \
	X(cmd_eval) X(cmd_evalsha) X(cmd_eval_ro) X(cmd_evalsha_ro) X(cmd_script_load) X(cmd_script_exists) \
	X(cmd_script_flush) X(cmd_script_kill) X(cmd_script_debug) X(cmd_script_help) X(cmd_fcall)        \
	X(cmd_fcall_ro)                                                                                    \
	/* cmd_function.c */                                                                               \
	X(cmd_function_load) X(cmd_function_delete) X(cmd_function_flush) X(cmd_function_kill)             \
	X(cmd_function_list) X(cmd_function_stats) X(cmd_function_dump) X(cmd_function_restore)            \
	X(cmd_function_help)

/* clang-format on */

STRING_HANDLERS(HANDLER)
KEYS_HANDLERS(HANDLER)
SERVER_HANDLERS(HANDLER)
HASH_HANDLERS(HANDLER)
SET_HANDLERS(HANDLER)
ZSET_HANDLERS(HANDLER)
LIST_HANDLERS(HANDLER)
BITMAP_HANDLERS(HANDLER)
MULTI_HANDLERS(HANDLER)
PUBSUB_HANDLERS(HANDLER)
PERSIST_HANDLERS(HANDLER)
REPL_HANDLERS(HANDLER)
CLUSTER_HANDLERS(HANDLER)
SCRIPT_HANDLERS(HANDLER)
META_HANDLERS(HANDLER)

#undef HANDLER

struct command;
struct resp_arg;
struct cmd_key;

/* SET's and BITFIELD's getkeys (cmd_string.c, cmd_bitmap.c): the key is
 * argv[1], its flags depend on the arguments (SET ... GET reads it; a
 * BITFIELD of GETs only reads it), as Redis's setGetKeys and
 * bitfieldGetKeys. */
int cmd_set_getkeys(const struct command *cmd, const struct resp_arg *argv, int argc, struct cmd_key *out);
int cmd_bitfield_getkeys(const struct command *cmd, const struct resp_arg *argv, int argc,
			 struct cmd_key *out);

#endif
