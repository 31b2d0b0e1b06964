/* entry — the public accessors of a keyspace entry (layout in
 * entry_layout.h). Callers hold the entry's shard lock. */
#include <assert.h>

#include "zarisd/core/mem.h"
#include "zarisd/core/util.h"
#include "zarisd/store/meta.h"
#include "zarisd/store/store.h"
#include "zarisd/store/store_int.h"

/* Redis's OBJ_ENCODING_EMBSTR_SIZE_LIMIT. */
#define ENTRY_EMBSTR_LIMIT 44

enum store_type entry_type(const struct entry *e)
{
	return (enum store_type)entry_type_raw(e);
}

const char *entry_key(const struct entry *e, size_t *klen)
{
	return entry_key_raw(e, klen);
}

const char *entry_str(const struct entry *e, size_t *vlen)
{
	assert(entry_type_raw(e) == STORE_TYPE_STRING);
	*vlen = entry_vlen_raw(e);
	return entry_val_raw(e);
}

void *entry_obj(const struct entry *e)
{
	assert(entry_type_raw(e) != STORE_TYPE_STRING);
	return entry_obj_raw(e);
}

int64_t entry_expire(const struct entry *e)
{
	return entry_has_ttl(e) ? entry_ttl_raw(e) : -1;
}

uint64_t entry_version(const struct entry *e)
{
	return e->version;
}

const char *entry_encoding(const struct store *s, const struct entry *e)
{
	unsigned t = entry_type_raw(e);
	if (t != STORE_TYPE_STRING) {
		const struct store_type_ops *ops = s->ops[t];
		return ops && ops->encoding ? ops->encoding(entry_obj_raw(e)) : "unknown";
	}
	if (entry_string_is_raw(e))
		return "raw"; /* edited in place, as Redis's dbUnshareStringValue leaves it */
	size_t vlen = entry_vlen_raw(e);
	long long v;
	/* Redis keeps a value that is a canonical long long as an integer
	 * (tryObjectEncoding), whatever its length up to 20 characters. */
	if (vlen <= 20 && zr_str_to_ll(entry_val_raw(e), vlen, &v))
		return "int";
	return vlen <= ENTRY_EMBSTR_LIMIT ? "embstr" : "raw";
}

size_t entry_memory(const struct store *s, const struct entry *e)
{
	/* The block plus its bucket slot (the table's share per key). */
	size_t n = zr_usable(e) + sizeof(struct entry *);
	if (entry_has_meta_raw(e))
		n += meta_bytes(entry_meta_ptr_raw(e));
	unsigned t = entry_type_raw(e);
	if (t != STORE_TYPE_STRING && s->ops[t] && s->ops[t]->memory)
		n += s->ops[t]->memory(entry_obj_raw(e));
	return n;
}

bool entry_is_small_int(const struct entry *e)
{
	if (entry_type_raw(e) != STORE_TYPE_STRING)
		return false;
	size_t vlen = entry_vlen_raw(e);
	long long v;
	return vlen <= 5 && zr_str_to_ll(entry_val_raw(e), vlen, &v) && v >= 0 && v < 10000;
}
