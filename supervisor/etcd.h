/* etcd — a small etcd v3 client over etcd's JSON gateway (/v3/..., etcd
 * 3.4), with libcurl for HTTP and json-c for JSON: leases, get/put/delete
 * and transactions, which is all coordination needs (coord.h).
 *
 * Keys and values travel base64-encoded, int64s as JSON strings, and proto3
 * leaves defaults out: a failed transaction has no "succeeded" field and a
 * count of 0 no "count". Every call ends within the client's timeout in
 * total: endpoints are tried in turn, the last one that answered first,
 * while time is left (an etcd without quorum does not answer writes or
 * linearizable reads: that is a timeout here).
 *
 * Threads: one struct etcd per thread (curl easy handles are not shared);
 * etcd_global_init() once, from main, before any thread starts. Every
 * allocation a call returns is the caller's (etcd_kvs_free). Errors are
 * negative errnos with the text in etcd_last_error().
 */
#ifndef SV_ETCD_H
#define SV_ETCD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct etcd;
struct etcd_txn;

/* libcurl's global set-up; once, before threads. Returns 0 or -EIO. */
int etcd_global_init(void);

/* A client for ENDPOINTS ("http://a:p,http://b:p"); every call ends within
 * TIMEOUT_MS. NULL with the reason in ERR when the list is empty or an
 * endpoint is not an http:// URL. */
struct etcd *etcd_new(const char *endpoints, int timeout_ms, char *err, size_t errlen);
void etcd_free(struct etcd *e);
/* Why the last call failed, naming the endpoint; "" after a success. */
const char *etcd_last_error(const struct etcd *e);
/* The endpoint the last successful call used (tests kill that member), or
 * NULL before any success. Borrowed until etcd_free(E). */
const char *etcd_last_endpoint(const struct etcd *e);

/* The calls return 0, or -ETIMEDOUT (the time was used up, an etcd without
 * quorum included), -ECONNREFUSED (no endpoint could be reached), -EPROTO
 * (an unexpected reply), -ENOENT (the lease does not exist, or expired). */
/* GRANTED_TTL_S may be NULL. */
int etcd_lease_grant(struct etcd *e, int ttl_s, int64_t *id, int *granted_ttl_s);
/* One keepalive of lease ID; its remaining TTL in *TTL_S. */
int etcd_lease_keepalive(struct etcd *e, int64_t id, int *ttl_s);
int etcd_lease_revoke(struct etcd *e, int64_t id);

struct etcd_kv {
	char *key;
	char *value; /* NUL-terminated; VALUE_LEN bytes */
	size_t value_len;
	int64_t create_rev, mod_rev, version, lease;
};
struct etcd_kvs {
	struct etcd_kv *kv;
	size_t n;
	int64_t revision; /* the reply header's */
};
void etcd_kvs_free(struct etcd_kvs *k);

/* KEY (every key starting with it when PREFIX), linearizable, into OUT
 * (the caller frees it with etcd_kvs_free, also after an error). */
int etcd_get(struct etcd *e, const char *key, bool prefix, struct etcd_kvs *out);
/* KEY = VALUE, attached to LEASE (0: none). */
int etcd_put(struct etcd *e, const char *key, const char *value, int64_t lease);
int etcd_delete(struct etcd *e, const char *key, bool prefix);

/* A transaction: compares (all must hold), then the success or the
 * failure ops. Built, committed once, freed. */
enum etcd_cmp_op {
	ETCD_EQUAL,
	ETCD_NOT_EQUAL,
	ETCD_LESS,
	ETCD_GREATER
};
struct etcd_txn *etcd_txn_new(void);
void etcd_txn_free(struct etcd_txn *t);
/* create_revision OP REV; REV 0 with ETCD_EQUAL: KEY does not exist. */
void etcd_txn_cmp_create_rev(struct etcd_txn *t, const char *key, enum etcd_cmp_op op, int64_t rev);
void etcd_txn_cmp_mod_rev(struct etcd_txn *t, const char *key, enum etcd_cmp_op op, int64_t rev);
void etcd_txn_cmp_value(struct etcd_txn *t, const char *key, enum etcd_cmp_op op, const char *value);
void etcd_txn_put(struct etcd_txn *t, bool on_success, const char *key, const char *value, int64_t lease);
void etcd_txn_delete(struct etcd_txn *t, bool on_success, const char *key);
void etcd_txn_get(struct etcd_txn *t, bool on_success, const char *key, bool prefix);
/* Runs T: *SUCCEEDED whether the compares held; RANGES (optional) gets the
 * kvs of the executed branch's get ops, concatenated. */
int etcd_txn_commit(struct etcd *e, struct etcd_txn *t, bool *succeeded, struct etcd_kvs *ranges);

#endif
