/* etcd — see etcd.h. One request = one JSON POST to the gateway, tried on
 * the endpoints in turn within the client's time budget. */
#include "supervisor/etcd.h"

#include <curl/curl.h>
#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ETCD_MAX_ENDPOINTS 16
#define ETCD_MIN_TRY_MS 100 /* no endpoint is given less than this */

struct etcd {
	char *endpoint[ETCD_MAX_ENDPOINTS]; /* "http://host:port", owned */
	size_t n;
	size_t good;	  /* the last endpoint that answered: tried first */
	bool any_success; /* GOOD has answered once */
	int timeout_ms;
	CURL *curl;
	char *body; /* the reply being received */
	size_t body_len, body_cap;
	char err[600];
};

struct etcd_txn {
	json_object *root; /* {"compare": [], "success": [], "failure": []} */
};

int etcd_global_init(void)
{
	return curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK ? 0 : -EIO;
}

static void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		abort();
	return p;
}

/* ---- base64 (the gateway's bytes fields) --------------------------------- */

static const char b64chars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static char *b64_encode(const void *data, size_t len)
{
	const unsigned char *p = data;
	char *out = xmalloc(4 * ((len + 2) / 3) + 1), *o = out;
	for (size_t i = 0; i < len; i += 3) {
		unsigned v = (unsigned)p[i] << 16 | (i + 1 < len ? (unsigned)p[i + 1] << 8 : 0) |
			     (i + 2 < len ? p[i + 2] : 0);
		*o++ = b64chars[v >> 18 & 63];
		*o++ = b64chars[v >> 12 & 63];
		*o++ = i + 1 < len ? b64chars[v >> 6 & 63] : '=';
		*o++ = i + 2 < len ? b64chars[v & 63] : '=';
	}
	*o = '\0';
	return out;
}

static int b64_value(char c)
{
	const char *p = c ? strchr(b64chars, c) : NULL;
	return p ? (int)(p - b64chars) : -1;
}

/* Decodes S into a NUL-terminated buffer (*LEN bytes before the NUL), or
 * NULL when S is not base64. */
static char *b64_decode(const char *s, size_t *len)
{
	size_t n = strlen(s);
	char *out = xmalloc(n / 4 * 3 + 3), *o = out;
	unsigned v = 0;
	int bits = 0;
	for (const char *p = s; *p && *p != '='; p++) {
		int d = b64_value(*p);
		if (d < 0) {
			free(out);
			return NULL;
		}
		v = v << 6 | (unsigned)d;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			*o++ = (char)(v >> bits & 0xff);
		}
	}
	*o = '\0';
	*len = (size_t)(o - out);
	return out;
}

/* ---- JSON helpers ----------------------------------------------------------- */

static void add_str(json_object *o, const char *name, const char *value)
{
	json_object_object_add(o, name, json_object_new_string(value));
}

static void add_bytes(json_object *o, const char *name, const char *value)
{
	char *b = b64_encode(value, strlen(value));
	add_str(o, name, b);
	free(b);
}

static void add_int(json_object *o, const char *name, int64_t v)
{
	char buf[32];
	snprintf(buf, sizeof(buf), "%" PRId64, v); /* int64s are strings in proto3 JSON */
	add_str(o, name, buf);
}

/* KEY's prefix range end: KEY with its last byte raised (etcd's rule). */
static void add_prefix_end(json_object *o, const char *key)
{
	size_t n = strlen(key);
	char *end = xmalloc(n + 1);
	memcpy(end, key, n + 1);
	while (n > 0 && (unsigned char)end[n - 1] == 0xff)
		end[--n] = '\0';
	if (n == 0) {
		add_str(o, "range_end", "AA=="); /* one zero byte: every key from KEY on */
	} else {
		end[n - 1]++;
		char *b = b64_encode(end, n);
		add_str(o, "range_end", b);
		free(b);
	}
	free(end);
}

/* An int64 field (a JSON string or number), DEF when absent. */
static int64_t get_int(json_object *o, const char *name, int64_t def)
{
	json_object *v;
	if (!o || !json_object_object_get_ex(o, name, &v))
		return def;
	if (json_object_is_type(v, json_type_string))
		return strtoll(json_object_get_string(v), NULL, 10);
	return json_object_get_int64(v);
}

/* ---- the client ---------------------------------------------------------- */

static size_t on_body(char *data, size_t size, size_t n, void *arg)
{
	struct etcd *e = arg;
	size_t len = size * n;
	if (e->body_len + len + 1 > e->body_cap) {
		size_t cap = (e->body_len + len + 1) * 2;
		char *b = realloc(e->body, cap);
		if (!b)
			return 0; /* curl fails the transfer */
		e->body = b;
		e->body_cap = cap;
	}
	memcpy(e->body + e->body_len, data, len);
	e->body_len += len;
	e->body[e->body_len] = '\0';
	return len;
}

struct etcd *etcd_new(const char *endpoints, int timeout_ms, char *err, size_t errlen)
{
	struct etcd *e = calloc(1, sizeof(*e));
	if (!e)
		abort();
	e->timeout_ms = timeout_ms > 0 ? timeout_ms : 1000;
	const char *p = endpoints ? endpoints : "";
	while (*p) {
		size_t l = strcspn(p, ",");
		if (l > 0) {
			if (e->n == ETCD_MAX_ENDPOINTS || l < 8 || strncmp(p, "http://", 7) != 0) {
				snprintf(err, errlen,
					 "etcd endpoint '%.*s': not an http:// URL (or more than %d)", (int)l,
					 p, ETCD_MAX_ENDPOINTS);
				etcd_free(e);
				return NULL;
			}
			e->endpoint[e->n] = xmalloc(l + 1);
			memcpy(e->endpoint[e->n], p, l);
			e->endpoint[e->n++][l] = '\0';
		}
		p += l + (p[l] == ',');
	}
	if (!e->n) {
		snprintf(err, errlen, "no etcd endpoints given");
		etcd_free(e);
		return NULL;
	}
	e->curl = curl_easy_init();
	if (!e->curl) {
		snprintf(err, errlen, "curl_easy_init failed");
		etcd_free(e);
		return NULL;
	}
	return e;
}

void etcd_free(struct etcd *e)
{
	if (!e)
		return;
	for (size_t k = 0; k < e->n; k++)
		free(e->endpoint[k]);
	if (e->curl)
		curl_easy_cleanup(e->curl);
	free(e->body);
	free(e);
}

const char *etcd_last_error(const struct etcd *e)
{
	return e->err;
}

const char *etcd_last_endpoint(const struct etcd *e)
{
	return e->any_success ? e->endpoint[e->good] : NULL;
}

static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* POSTs BODY (consumed) to PATH; *OUT the parsed reply (caller puts it).
 * An HTTP error whose message says a lease was not found is -ENOENT. */
static int post(struct etcd *e, const char *path, json_object *body, json_object **out)
{
	const char *text = json_object_to_json_string_ext(body, JSON_C_TO_STRING_PLAIN);
	int64_t deadline = mono_ms() + e->timeout_ms;
	int rc = -ETIMEDOUT;
	bool any_timeout = false;
	struct curl_slist *hdr = curl_slist_append(NULL, "Content-Type: application/json");

	*out = NULL;
	e->err[0] = '\0';
	for (size_t tried = 0; tried < e->n; tried++) {
		int64_t left = deadline - mono_ms();
		if (left <= 0)
			break;
		size_t idx = (e->good + tried) % e->n;
		long per = (long)(left / (int64_t)(e->n - tried));
		if (per < ETCD_MIN_TRY_MS)
			per = (long)(left < ETCD_MIN_TRY_MS ? left : ETCD_MIN_TRY_MS);
		char url[300];
		snprintf(url, sizeof(url), "%s%s", e->endpoint[idx], path);
		e->body_len = 0;
		curl_easy_reset(e->curl);
		curl_easy_setopt(e->curl, CURLOPT_URL, url);
		curl_easy_setopt(e->curl, CURLOPT_POSTFIELDS, text);
		curl_easy_setopt(e->curl, CURLOPT_HTTPHEADER, hdr);
		curl_easy_setopt(e->curl, CURLOPT_TIMEOUT_MS, per);
		curl_easy_setopt(e->curl, CURLOPT_CONNECTTIMEOUT_MS, per);
		curl_easy_setopt(e->curl, CURLOPT_NOSIGNAL, 1L);
		curl_easy_setopt(e->curl, CURLOPT_NOPROXY, "*");
		curl_easy_setopt(e->curl, CURLOPT_WRITEFUNCTION, on_body);
		curl_easy_setopt(e->curl, CURLOPT_WRITEDATA, e);
		CURLcode cc = curl_easy_perform(e->curl);
		if (cc != CURLE_OK) {
			any_timeout |= cc == CURLE_OPERATION_TIMEDOUT;
			snprintf(e->err, sizeof(e->err), "%.300s: %.250s", url, curl_easy_strerror(cc));
			rc = any_timeout ? -ETIMEDOUT : -ECONNREFUSED;
			continue;
		}
		long status = 0;
		curl_easy_getinfo(e->curl, CURLINFO_RESPONSE_CODE, &status);
		json_object *j = e->body_len ? json_tokener_parse(e->body) : NULL;
		if (status != 200) {
			json_object *m = NULL;
			const char *msg = j && (json_object_object_get_ex(j, "message", &m) ||
						json_object_object_get_ex(j, "error", &m))
						  ? json_object_get_string(m)
						  : "";
			snprintf(e->err, sizeof(e->err), "%.300s: HTTP %ld %.250s", url, status, msg);
			bool lease_gone = strstr(msg, "lease not found") != NULL;
			json_object_put(j);
			if (lease_gone) {
				rc = -ENOENT;
				e->good = idx;
				goto out;
			}
			any_timeout = true; /* no leader, deadline exceeded ...: another member may do */
			rc = -ETIMEDOUT;
			continue;
		}
		if (!j) {
			snprintf(e->err, sizeof(e->err), "%.300s: reply is not JSON", url);
			rc = -EPROTO;
			continue;
		}
		e->good = idx;
		e->any_success = true;
		*out = j;
		rc = 0;
		goto out;
	}
	if (!e->err[0])
		snprintf(e->err, sizeof(e->err), "no etcd endpoint answered within %d ms", e->timeout_ms);
out:
	curl_slist_free_all(hdr);
	json_object_put(body);
	return rc;
}

int etcd_lease_grant(struct etcd *e, int ttl_s, int64_t *id, int *granted_ttl_s)
{
	json_object *b = json_object_new_object(), *r;
	add_int(b, "TTL", ttl_s);
	int rc = post(e, "/v3/lease/grant", b, &r);
	if (rc)
		return rc;
	*id = get_int(r, "ID", 0);
	if (granted_ttl_s)
		*granted_ttl_s = (int)get_int(r, "TTL", 0);
	json_object_put(r);
	if (!*id) {
		snprintf(e->err, sizeof(e->err), "lease grant: no ID in the reply");
		return -EPROTO;
	}
	return 0;
}

int etcd_lease_keepalive(struct etcd *e, int64_t id, int *ttl_s)
{
	json_object *b = json_object_new_object(), *r, *res = NULL;
	add_int(b, "ID", id);
	int rc = post(e, "/v3/lease/keepalive", b, &r);
	if (rc)
		return rc;
	json_object_object_get_ex(r, "result", &res);
	*ttl_s = (int)get_int(res, "TTL", 0);
	json_object_put(r);
	if (*ttl_s <= 0) {
		snprintf(e->err, sizeof(e->err), "lease %" PRId64 " expired", id);
		return -ENOENT;
	}
	return 0;
}

int etcd_lease_revoke(struct etcd *e, int64_t id)
{
	json_object *b = json_object_new_object(), *r;
	add_int(b, "ID", id);
	int rc = post(e, "/v3/lease/revoke", b, &r);
	json_object_put(r);
	return rc;
}

void etcd_kvs_free(struct etcd_kvs *k)
{
	for (size_t i = 0; i < k->n; i++) {
		free(k->kv[i].key);
		free(k->kv[i].value);
	}
	free(k->kv);
	memset(k, 0, sizeof(*k));
}

/* Appends the "kvs" of range reply R to OUT. -EPROTO on a bad entry. */
static int take_kvs(json_object *r, struct etcd_kvs *out)
{
	json_object *kvs;
	if (!json_object_object_get_ex(r, "kvs", &kvs) || !json_object_is_type(kvs, json_type_array))
		return 0; /* none */
	size_t n = json_object_array_length(kvs);
	out->kv = realloc(out->kv, (out->n + n) * sizeof(out->kv[0]) + 1);
	if (!out->kv)
		abort();
	for (size_t i = 0; i < n; i++) {
		json_object *kv = json_object_array_get_idx(kvs, i), *k = NULL, *v = NULL;
		struct etcd_kv *d = &out->kv[out->n];
		size_t klen;
		memset(d, 0, sizeof(*d));
		if (!json_object_object_get_ex(kv, "key", &k))
			return -EPROTO;
		d->key = b64_decode(json_object_get_string(k), &klen);
		if (json_object_object_get_ex(kv, "value", &v))
			d->value = b64_decode(json_object_get_string(v), &d->value_len);
		else
			d->value = b64_decode("", &d->value_len);
		if (!d->key || !d->value) {
			free(d->key);
			free(d->value);
			return -EPROTO;
		}
		d->create_rev = get_int(kv, "create_revision", 0);
		d->mod_rev = get_int(kv, "mod_revision", 0);
		d->version = get_int(kv, "version", 0);
		d->lease = get_int(kv, "lease", 0);
		out->n++;
	}
	return 0;
}

static json_object *range_req(const char *key, bool prefix)
{
	json_object *b = json_object_new_object();
	add_bytes(b, "key", key);
	if (prefix)
		add_prefix_end(b, key);
	return b;
}

int etcd_get(struct etcd *e, const char *key, bool prefix, struct etcd_kvs *out)
{
	json_object *r, *h = NULL;
	memset(out, 0, sizeof(*out));
	int rc = post(e, "/v3/kv/range", range_req(key, prefix), &r);
	if (rc)
		return rc;
	json_object_object_get_ex(r, "header", &h);
	out->revision = get_int(h, "revision", 0);
	rc = take_kvs(r, out);
	if (rc)
		snprintf(e->err, sizeof(e->err), "range %.300s: a key without its fields", key);
	json_object_put(r);
	return rc;
}

static json_object *put_req(const char *key, const char *value, int64_t lease)
{
	json_object *b = json_object_new_object();
	add_bytes(b, "key", key);
	add_bytes(b, "value", value);
	if (lease)
		add_int(b, "lease", lease);
	return b;
}

int etcd_put(struct etcd *e, const char *key, const char *value, int64_t lease)
{
	json_object *r;
	int rc = post(e, "/v3/kv/put", put_req(key, value, lease), &r);
	json_object_put(r);
	return rc;
}

int etcd_delete(struct etcd *e, const char *key, bool prefix)
{
	json_object *r;
	int rc = post(e, "/v3/kv/deleterange", range_req(key, prefix), &r);
	json_object_put(r);
	return rc;
}

/* ---- transactions ------------------------------------------------------------ */

struct etcd_txn *etcd_txn_new(void)
{
	struct etcd_txn *t = xmalloc(sizeof(*t));
	t->root = json_object_new_object();
	json_object_object_add(t->root, "compare", json_object_new_array());
	json_object_object_add(t->root, "success", json_object_new_array());
	json_object_object_add(t->root, "failure", json_object_new_array());
	return t;
}

void etcd_txn_free(struct etcd_txn *t)
{
	if (!t)
		return;
	json_object_put(t->root);
	free(t);
}

static json_object *txn_list(struct etcd_txn *t, const char *name)
{
	json_object *a = NULL;
	json_object_object_get_ex(t->root, name, &a);
	return a;
}

static const char *cmp_name(enum etcd_cmp_op op)
{
	static const char *const names[] = { "EQUAL", "NOT_EQUAL", "LESS", "GREATER" };
	return names[op];
}

static json_object *cmp_new(const char *target, const char *key, enum etcd_cmp_op op)
{
	json_object *c = json_object_new_object();
	add_str(c, "target", target);
	add_str(c, "result", cmp_name(op));
	add_bytes(c, "key", key);
	return c;
}

void etcd_txn_cmp_create_rev(struct etcd_txn *t, const char *key, enum etcd_cmp_op op, int64_t rev)
{
	json_object *c = cmp_new("CREATE", key, op);
	add_int(c, "create_revision", rev);
	json_object_array_add(txn_list(t, "compare"), c);
}

void etcd_txn_cmp_mod_rev(struct etcd_txn *t, const char *key, enum etcd_cmp_op op, int64_t rev)
{
	json_object *c = cmp_new("MOD", key, op);
	add_int(c, "mod_revision", rev);
	json_object_array_add(txn_list(t, "compare"), c);
}

void etcd_txn_cmp_value(struct etcd_txn *t, const char *key, enum etcd_cmp_op op, const char *value)
{
	json_object *c = cmp_new("VALUE", key, op);
	add_bytes(c, "value", value);
	json_object_array_add(txn_list(t, "compare"), c);
}

static void txn_op(struct etcd_txn *t, bool on_success, const char *kind, json_object *req)
{
	json_object *op = json_object_new_object();
	json_object_object_add(op, kind, req);
	json_object_array_add(txn_list(t, on_success ? "success" : "failure"), op);
}

void etcd_txn_put(struct etcd_txn *t, bool on_success, const char *key, const char *value, int64_t lease)
{
	txn_op(t, on_success, "request_put", put_req(key, value, lease));
}

void etcd_txn_delete(struct etcd_txn *t, bool on_success, const char *key)
{
	txn_op(t, on_success, "request_delete_range", range_req(key, false));
}

void etcd_txn_get(struct etcd_txn *t, bool on_success, const char *key, bool prefix)
{
	txn_op(t, on_success, "request_range", range_req(key, prefix));
}

int etcd_txn_commit(struct etcd *e, struct etcd_txn *t, bool *succeeded, struct etcd_kvs *ranges)
{
	json_object *r, *v = NULL, *resps = NULL;
	if (ranges)
		memset(ranges, 0, sizeof(*ranges));
	/* post() consumes its body: hand it a reference of ours */
	int rc = post(e, "/v3/kv/txn", json_object_get(t->root), &r);
	if (rc)
		return rc;
	/* proto3 JSON omits false: a failed transaction has no "succeeded" */
	*succeeded = json_object_object_get_ex(r, "succeeded", &v) && json_object_get_boolean(v);
	if (ranges && json_object_object_get_ex(r, "responses", &resps) &&
	    json_object_is_type(resps, json_type_array)) {
		for (size_t i = 0; i < json_object_array_length(resps); i++) {
			json_object *one = json_object_array_get_idx(resps, i), *rr = NULL;
			if (json_object_object_get_ex(one, "response_range", &rr) &&
			    take_kvs(rr, ranges) < 0) {
				rc = -EPROTO;
				break;
			}
		}
	}
	json_object_put(r);
	return rc;
}
