/* handlers — every command handler, grouped by the file that defines it.
 * Only table.c needs these; each handler's contract is the one of
 * cmd_handler_fn (command.h). */
#ifndef ZR_HANDLERS_H
#define ZR_HANDLERS_H

struct client;

#define HANDLER(name) void name(struct client *c);

/* clang-format off */
/* cmd_string.c */
#define STRING_HANDLERS(X)                                                                             \
	X(cmd_get)                                                                                     \
	X(cmd_set)                                                                                     \
	X(cmd_setnx) X(cmd_setex) X(cmd_psetex) X(cmd_getset) X(cmd_getdel) X(cmd_getex) X(cmd_mget)   \
		X(cmd_mset) X(cmd_msetnx) X(cmd_incr) X(cmd_decr) X(cmd_incrby) X(cmd_decrby)          \
			X(cmd_incrbyfloat) X(cmd_append) X(cmd_strlen) X(cmd_getrange) X(cmd_setrange) \
				X(cmd_substr) X(cmd_lcs)

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
											X(cmd_command_help)

/* cmd_hash.c */
#define HASH_HANDLERS(X)

/* cmd_set.c */
#define SET_HANDLERS(X)

/* cmd_zset.c */
#define ZSET_HANDLERS(X)

/* cmd_list.c (and the blocking pops) */
#define LIST_HANDLERS(X)

/* cmd_bitmap.c, cmd_hll.c */
#define BITMAP_HANDLERS(X)

/* cmd_multi.c */
#define MULTI_HANDLERS(X)

/* cmd_pubsub.c */
#define PUBSUB_HANDLERS(X)

/* cmd_persist.c */
#define PERSIST_HANDLERS(X)

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

#undef HANDLER

#endif
