/* types — the value types the keyspace holds besides strings. Each line
 * names the ops its type module (store/<type>.c) exports; store_create()
 * registers them. A type whose module is not in yet stays NULL. */
#include "zarisd/store/hash.h"
#include "zarisd/store/list.h"
#include "zarisd/store/set.h"
#include "zarisd/store/store.h"
#include "zarisd/store/store_int.h"
#include "zarisd/store/zset.h"

const struct store_type_ops *const store_builtin_types[STORE_TYPE_COUNT] = {
	[STORE_TYPE_STRING] = NULL, /* inline in the entry, no ops */
	[STORE_TYPE_LIST] = &store_list_ops, [STORE_TYPE_SET] = &store_set_ops,
	[STORE_TYPE_ZSET] = &store_zset_ops, [STORE_TYPE_HASH] = &store_hash_ops,
};
