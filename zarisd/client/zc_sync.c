/* zc_sync — the synchronous helpers of zaris.h: each runs one operation in
 * the client's own batch, so the values they lend stay valid until the
 * next call on the client. */
#include <stdlib.h>
#include <string.h>

#include "zarisd/client/zc_int.h"

/* Runs Z's helper batch (one operation added): its result, or NULL with
 * *RC the client error. A server error sets z->err to its text. */
static const struct zaris_result *run_one(struct zaris *z, int added, int *rc)
{
	if (added < 0) {
		zc_set_err(z, "%s", zaris_strerror(added));
		*rc = added;
		return NULL;
	}
	int r = zaris_exec(z, z->sync);
	const struct zaris_result *res = zaris_batch_result(z->sync, 0);
	if (r < 0 || !res || res->status < 0) {
		*rc = r < 0 ? r : res ? res->status : ZARIS_E_IO;
		return NULL;
	}
	if (res->status > 0 && res->value)
		zc_set_err(z, "%.*s", (int)res->value->len, res->value->str);
	*rc = 0;
	return res;
}

static struct zaris_batch *fresh(struct zaris *z)
{
	zaris_batch_reset(z->sync);
	z->err[0] = '\0';
	return z->sync;
}

static int unexpected(struct zaris *z, const char *what)
{
	zc_set_err(z, "%s: an unexpected reply type", what);
	return ZARIS_E_PROTO;
}

int zaris_get(struct zaris *z, const void *key, size_t klen, char **val, size_t *vlen)
{
	int rc;
	*val = NULL;
	const struct zaris_result *r = run_one(z, zaris_add_get(fresh(z), key, klen), &rc);
	if (!r)
		return rc;
	if (r->status > 0)
		return ZARIS_E_SERVER;
	if (r->value->type == ZARIS_T_NULL)
		return 0;
	if (r->value->type != ZARIS_T_BULK)
		return unexpected(z, "GET");
	char *p = malloc(r->value->len + 1);
	if (!p)
		return ZARIS_E_NOMEM;
	memcpy(p, r->value->str, r->value->len + 1);
	*val = p;
	if (vlen)
		*vlen = r->value->len;
	return 1;
}

int zaris_set(struct zaris *z, const void *key, size_t klen, const void *val, size_t vlen,
	      const struct zaris_set_opts *opts)
{
	if (opts && (opts->flags & ZARIS_SET_GET))
		return ZARIS_E_INVAL;
	int rc;
	const struct zaris_result *r = run_one(z, zaris_add_set(fresh(z), key, klen, val, vlen, opts), &rc);
	if (!r)
		return rc;
	if (r->status > 0)
		return ZARIS_E_SERVER;
	if (r->value->type == ZARIS_T_NULL)
		return 0;
	return r->value->type == ZARIS_T_SIMPLE ? 1 : unexpected(z, "SET");
}

int zaris_incrby(struct zaris *z, const void *key, size_t klen, int64_t delta, int64_t *out)
{
	int rc;
	const struct zaris_result *r = run_one(z, zaris_add_incrby(fresh(z), key, klen, delta), &rc);
	if (!r)
		return rc;
	if (r->status > 0)
		return ZARIS_E_SERVER;
	if (r->value->type != ZARIS_T_INTEGER)
		return unexpected(z, "INCRBY");
	if (out)
		*out = r->value->integer;
	return 0;
}

int64_t zaris_invalidate(struct zaris *z, const char *label, const char *entity)
{
	int rc;
	if (!label)
		return ZARIS_E_INVAL;
	size_t el = entity ? strlen(entity) : 0;
	const struct zaris_result *r =
		run_one(z, zaris_add_invalidate(fresh(z), label, strlen(label), entity, el), &rc);
	if (!r)
		return rc;
	if (r->status > 0)
		return ZARIS_E_SERVER;
	if (r->value->type != ZARIS_T_INTEGER)
		return unexpected(z, "INVALIDATE");
	return r->value->integer;
}

int zaris_command(struct zaris *z, int argc, const char *const *argv, const size_t *lens,
		  const struct zaris_value **reply)
{
	int rc;
	*reply = NULL;
	const struct zaris_result *r = run_one(z, zaris_add_command(fresh(z), argc, argv, lens), &rc);
	if (!r)
		return rc;
	*reply = r->value;
	return 0;
}
