/* types — the value types the keyspace holds besides strings. Each line
 * names the ops its type module (store/<type>.c) exports; store_create()
 * registers them. A type whose module is not in yet stays NULL. */
#include "zarisd/store/store.h"
#include "zarisd/store/store_int.h"

const struct store_type_ops *const store_builtin_types[STORE_TYPE_COUNT] = {
	[STORE_TYPE_STRING] = NULL, /* inline in the entry, no ops */
	[STORE_TYPE_LIST] = NULL,   [STORE_TYPE_SET] = NULL,
	[STORE_TYPE_ZSET] = NULL,   [STORE_TYPE_HASH] = NULL,
};
