/* Unit tests of zarisd/store: entries, dict resize and SCAN, TTLs, active
 * expiry, whole-keyspace operations, eviction policies, accounting, and a
 * multi-threaded stress for TSan. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/tap.h"
#include "zarisd/core/keyslot.h"
#include "zarisd/core/mem.h"
#include "zarisd/core/util.h"
#include "zarisd/store/write.h"
#include "zarisd/store/store.h"
#include "zarisd/store/store_int.h"

#define NOW 1000000000000LL /* a fixed "now" for TTL tests (unix ms) */

static int kfmt(char *buf, const char *pfx, int i)
{
	return snprintf(buf, 64, "%s:%d", pfx, i);
}

static int set_str(struct store *s, unsigned db, const char *k, const char *v, int64_t ttl)
{
	unsigned sh = store_shard_of(s, k, strlen(k));
	store_lock(s, sh);
	int r = store_set_string_locked(s, db, k, strlen(k), v, strlen(v), ttl, 0, NULL);
	store_unlock(s, sh);
	return r;
}

/* Copies K's value into OUT (NUL-terminated); false when absent. */
static bool get_str(struct store *s, unsigned db, const char *k, int64_t now, char *out, size_t outsz)
{
	unsigned sh = store_shard_of(s, k, strlen(k));
	store_lock(s, sh);
	struct entry *e = store_find_locked(s, db, k, strlen(k), now, 0);
	if (e && out) {
		size_t vlen;
		const char *v = entry_str(e, &vlen);
		if (vlen >= outsz)
			vlen = outsz - 1;
		memcpy(out, v, vlen);
		out[vlen] = '\0';
	}
	store_unlock(s, sh);
	return e != NULL;
}

static bool exists(struct store *s, unsigned db, const char *k, int64_t now)
{
	return get_str(s, db, k, now, NULL, 0);
}

static bool del(struct store *s, unsigned db, const char *k, int64_t now)
{
	unsigned sh = store_shard_of(s, k, strlen(k));
	store_lock(s, sh);
	bool r = store_delete_locked(s, db, k, strlen(k), now);
	store_unlock(s, sh);
	return r;
}

static int64_t ttl_of(struct store *s, unsigned db, const char *k)
{
	unsigned sh = store_shard_of(s, k, strlen(k));
	store_lock(s, sh);
	struct entry *e = store_find_locked(s, db, k, strlen(k), NOW, STORE_LOOKUP_NOTOUCH);
	int64_t t = e ? entry_expire(e) : -2;
	store_unlock(s, sh);
	return t;
}

/* --- a fake non-string type ------------------------------------------------------ */

struct blob {
	size_t n;
	char data[];
};
static int blob_frees;

static void blob_free(void *o)
{
	blob_frees++;
	zr_free(o);
}
static void *blob_dup(const void *o)
{
	const struct blob *b = o;
	struct blob *c = zr_malloc(sizeof(*c) + b->n);
	memcpy(c, b, sizeof(*c) + b->n);
	return c;
}
static size_t blob_mem(const void *o)
{
	return zr_usable(o);
}
static const char *blob_enc(const void *o)
{
	return "blob";
}
static const struct store_type_ops blob_ops = {
	.free = blob_free, .dup = blob_dup, .memory = blob_mem, .encoding = blob_enc
};

static struct blob *blob_new(const char *s)
{
	size_t n = strlen(s);
	struct blob *b = zr_malloc(sizeof(*b) + n);
	b->n = n;
	memcpy(b->data, s, n);
	return b;
}

/* --- tests ------------------------------------------------------------------------ */

/* A scan step of these tests never gives a wait up (no wait hook). */
static void ok_scan(int rc)
{
	if (rc != 0) {
		diag("store_scan: %d", rc);
		abort();
	}
}

static void test_basic(void)
{
	ok(store_create(0, 4) == NULL, "0 databases refused");
	ok(store_create(16, 30) == NULL, "absurd shard bits refused");
	struct store *s = store_create(16, 10);
	ok(s && store_shard_count(s) == 1024 && store_databases(s) == 16, "create 16 dbs x 1024 shards");
	char buf[256];
	ok(set_str(s, 0, "k1", "v1", -1) == 0, "set k1");
	ok(get_str(s, 0, "k1", NOW, buf, sizeof(buf)) && !strcmp(buf, "v1"), "get k1");
	ok(!exists(s, 1, "k1", NOW), "k1 absent in db 1");
	is_int(store_dbsize(s, 0), 1, "dbsize 1");

	unsigned sh = store_shard_of(s, "k1", 2);
	store_lock(s, sh);
	struct entry *e = store_find_locked(s, 0, "k1", 2, NOW, 0);
	uint64_t v1 = entry_version(e);
	size_t kl;
	const char *k = entry_key(e, &kl);
	ok(kl == 2 && !memcmp(k, "k1", 2), "entry_key");
	ok(entry_type(e) == STORE_TYPE_STRING && entry_expire(e) == -1, "type string, no ttl");
	store_unlock(s, sh);

	ok(set_str(s, 0, "k1", "v2", -1) == 0, "overwrite");
	store_lock(s, sh);
	e = store_find_locked(s, 0, "k1", 2, NOW, 0);
	ok(entry_version(e) > v1, "version grows on write");
	store_unlock(s, sh);
	ok(get_str(s, 0, "k1", NOW, buf, sizeof(buf)) && !strcmp(buf, "v2"), "overwritten value");
	ok(del(s, 0, "k1", NOW), "delete");
	ok(!del(s, 0, "k1", NOW), "delete again false");
	ok(!exists(s, 0, "k1", NOW), "gone");
	is_int(store_dbsize(s, 0), 0, "dbsize 0");

	struct store_stats st;
	store_stats(s, &st);
	ok(st.keyspace_hits >= 3 && st.keyspace_misses >= 2, "hits/misses counted");
	store_reset_stats(s);
	store_stats(s, &st);
	ok(st.keyspace_hits == 0 && st.keyspace_misses == 0, "reset stats");
	store_destroy(s);
}

static void test_layout(void)
{
	struct entry_shape sh = entry_shape_of(STORE_TYPE_STRING, false, 10, 100);
	is_int(sh.size, 132, "10-byte key + 100-byte value entry is 132 bytes");
	struct entry_shape st = entry_shape_of(STORE_TYPE_STRING, true, 10, 100);
	is_int(st.size - sh.size, 12, "a TTL costs 12 bytes");
	struct store *s = store_create(1, 10);
	char key[64], val[101];
	memset(val, 'x', 100);
	val[100] = 0;
	size_t before = store_db_bytes(s, 0), entries = 0;
	int n = 200000;
	for (int i = 0; i < n; i++) {
		snprintf(key, sizeof(key), "key:%06d", i); /* 10 bytes */
		set_str(s, 0, key, val, -1);
	}
	for (int i = 0; i < n; i++) {
		snprintf(key, sizeof(key), "key:%06d", i);
		unsigned shd = store_shard_of(s, key, 10);
		store_lock(s, shd);
		struct entry *e = store_find_locked(s, 0, key, 10, NOW, STORE_LOOKUP_NOTOUCH);
		entries += zr_usable(e);
		store_unlock(s, shd);
	}
	double per_entry = (double)entries / n;
	double table = (double)(store_db_bytes(s, 0) - before - entries) / n;
	diag("entry block %.1f bytes, table %.1f bytes per key", per_entry, table);
#ifndef ZR_SANITIZED
	ok(per_entry <= 160, "entry fits the 160-byte class (%.1f)", per_entry);
#else
	ok(per_entry <= 176, "entry block small (%.1f, libc malloc)", per_entry);
#endif
	ok(table >= 4 && table <= 16.5, "table overhead 8-16 bytes per key (%.1f)", table);
	store_destroy(s);
}

static void test_overwrite_inplace(void)
{
	struct store *s = store_create(1, 2);
	char big[1000];
	memset(big, 'a', sizeof(big) - 1);
	big[999] = 0;
	char v100[101], v90[91];
	memset(v100, 'b', 100);
	v100[100] = 0;
	memset(v90, 'c', 90);
	v90[90] = 0;
	unsigned sh = store_shard_of(s, "k", 1);
	store_lock(s, sh);
	struct entry *e1, *e2, *e3;
	store_set_string_locked(s, 0, "k", 1, v100, 100, -1, 0, &e1);
	store_set_string_locked(s, 0, "k", 1, v90, 90, -1, 0, &e2);
	ok(e1 == e2, "overwrite with a value of the same class is in place");
	size_t vl;
	const char *v = entry_str(e2, &vl);
	ok(vl == 90 && !memcmp(v, v90, 90), "in-place value right");
	store_set_string_locked(s, 0, "k", 1, v90, 90, NOW + 5000, 0, &e2);
	ok(entry_expire(e2) == NOW + 5000 && store_expires_count(s, 0) == 1, "in-place overwrite adding TTL");
	v = entry_str(e2, &vl);
	ok(vl == 90 && !memcmp(v, v90, 90), "value right after TTL added");
	store_set_string_locked(s, 0, "k", 1, big, 999, -1, STORE_SET_KEEPTTL, &e3);
	ok(e3 != e2 && entry_expire(e3) == NOW + 5000, "bigger value reallocates, KEEPTTL keeps TTL");
	v = entry_str(e3, &vl);
	ok(vl == 999 && !memcmp(v, big, 999), "big value right");
	store_set_string_locked(s, 0, "k", 1, "x", 1, -1, 0, &e3);
	ok(entry_expire(e3) == -1 && store_expires_count(s, 0) == 0, "SET without KEEPTTL drops TTL");
	is_str(entry_encoding(s, e3), "embstr", "encoding embstr");
	store_set_string_locked(s, 0, "k", 1, "12345", 5, -1, 0, &e3);
	is_str(entry_encoding(s, e3), "int", "encoding int");
	store_set_string_locked(s, 0, "k", 1, "012", 3, -1, 0, &e3);
	is_str(entry_encoding(s, e3), "embstr", "non-canonical integer is embstr");
	store_set_string_locked(s, 0, "k", 1, big, 45, -1, 0, &e3);
	is_str(entry_encoding(s, e3), "raw", "45 bytes is raw");
	store_unlock(s, sh);
	store_destroy(s);
}

static void test_ttl(void)
{
	struct store *s = store_create(2, 4);
	set_str(s, 0, "t", "v", NOW + 1000);
	is_int(ttl_of(s, 0, "t"), NOW + 1000, "ttl stored");
	is_int(store_expires_count(s, 0), 1, "expires count 1");
	ok(exists(s, 0, "t", NOW + 1000), "alive at its TTL instant");
	ok(!exists(s, 0, "t", NOW + 1001), "lazy-expired after it");
	struct store_stats st;
	store_stats(s, &st);
	is_int(st.expired_keys, 1, "expired_keys 1");
	is_int(store_dbsize(s, 0), 0, "dbsize 0 after lazy expiry");
	is_int(store_expires_count(s, 0), 0, "expires count 0");

	set_str(s, 0, "p", "value", -1);
	unsigned sh = store_shard_of(s, "p", 1);
	store_lock(s, sh);
	struct entry *e = store_find_locked(s, 0, "p", 1, NOW, 0);
	ok(store_set_expire_locked(s, 0, &e, NOW + 50) == 0 && entry_expire(e) == NOW + 50, "set expire");
	size_t vl;
	const char *v = entry_str(e, &vl);
	ok(vl == 5 && !memcmp(v, "value", 5), "value kept when TTL added");
	ok(store_set_expire_locked(s, 0, &e, NOW + 70) == 0 && entry_expire(e) == NOW + 70, "change expire");
	ok(store_set_expire_locked(s, 0, &e, -1) == 0 && entry_expire(e) == -1, "persist");
	v = entry_str(e, &vl);
	ok(vl == 5 && !memcmp(v, "value", 5), "value kept when TTL removed");
	store_unlock(s, sh);
	is_int(store_expires_count(s, 0), 0, "expires count 0 after persist");
	ok(!del(s, 0, "gone", NOW), "delete of missing key");
	set_str(s, 0, "d", "v", NOW - 1);
	ok(!del(s, 0, "d", NOW), "delete of an expired key reports false");
	store_destroy(s);
}

static void test_active_expire(void)
{
	struct store *s = store_create(2, 6);
	char k[64];
	for (int i = 0; i < 10000; i++) {
		kfmt(k, "vol", i);
		set_str(s, 0, k, "v", NOW + 500);
		kfmt(k, "vol1", i);
		set_str(s, 1, k, "v", NOW + 500);
		kfmt(k, "keep", i);
		set_str(s, 0, k, "v", i % 2 ? NOW + 100000 : -1);
	}
	store_active_expire(s, 0, 1, NOW, 1000000);
	is_int(store_dbsize(s, 0), 20000, "nothing expired before the TTL");
	int rounds = 0;
	while ((store_dbsize(s, 0) > 10000 || store_dbsize(s, 1) > 0) && rounds < 1000) {
		store_active_expire(s, rounds % 2, 2, NOW + 1000, 1000000);
		rounds++;
	}
	ok(store_dbsize(s, 0) == 10000 && store_dbsize(s, 1) == 0,
	   "active expiry removed every expired key (%d rounds)", rounds);
	is_int(store_expires_count(s, 0), 5000, "volatile keys that are not due remain");
	struct store_stats st;
	store_stats(s, &st);
	is_int(st.expired_keys, 20000, "expired_keys 20000");
	store_destroy(s);
}

static void check_all(struct store *s, const char *pfx, int from, int to, int64_t now, const char *what)
{
	char k[64], buf[64];
	int bad = 0;
	for (int i = from; i < to; i++) {
		kfmt(k, pfx, i);
		if (!get_str(s, 0, k, now, buf, sizeof(buf)) || strcmp(buf, k))
			bad++;
	}
	is_int(bad, 0, "%s", what);
}

static uint64_t total_buckets(struct store *s, unsigned db)
{
	uint64_t n = 0;
	for (unsigned i = 0; i < store_shard_count(s); i++) {
		store_lock(s, i);
		struct dict *d = store_dict(s, db, i);
		n += d->size[0] + d->size[1];
		store_unlock(s, i);
	}
	return n;
}

static void test_resize(void)
{
	struct store *s = store_create(1, 1);
	char k[64];
	int n = 100000, bad = 0;
	for (int i = 0; i < n; i++) {
		kfmt(k, "r", i);
		set_str(s, 0, k, k, -1);
		/* Every few inserts, check an older key is still findable. */
		if (i % 97 == 0 && !exists(s, 0, (kfmt(k, "r", i / 2), k), NOW))
			bad++;
	}
	is_int(bad, 0, "keys findable while growing");
	is_int(store_dbsize(s, 0), n, "dbsize after inserts");
	uint64_t grown = total_buckets(s, 0);
	ok(grown >= (uint64_t)n / 2 && grown <= (uint64_t)n * 4, "tables grew (%llu buckets)",
	   (unsigned long long)grown);
	check_all(s, "r", 0, n, NOW, "every key found after growth");
	for (int i = 100; i < n; i++) {
		kfmt(k, "r", i);
		if (!del(s, 0, k, NOW))
			bad++;
	}
	is_int(bad, 0, "deletes all found");
	check_all(s, "r", 0, 100, NOW, "remaining keys found after shrink");
	/* Drive any shrink in progress to its end. */
	for (int round = 0; round < 2000; round++)
		for (int i = 0; i < 100; i++) {
			kfmt(k, "r", i);
			exists(s, 0, k, NOW);
		}
	uint64_t shrunk = total_buckets(s, 0);
	ok(shrunk <= 512, "tables shrank (%llu buckets)", (unsigned long long)shrunk);
	store_destroy(s);
}

/* SCAN: collect which base keys were seen. */
struct scan_seen {
	char *seen; /* [nbase] */
	int nbase;
	int visits;
};

static void scan_visit(const struct entry *e, void *ctx)
{
	struct scan_seen *ss = ctx;
	size_t kl;
	const char *k = entry_key(e, &kl);
	ss->visits++;
	if (kl > 5 && !memcmp(k, "base:", 5)) {
		int i = atoi(k + 5);
		if (i >= 0 && i < ss->nbase)
			ss->seen[i] = 1;
	}
}

static void test_scan(unsigned bits)
{
	struct store *s = store_create(1, bits);
	char k[64];
	int nbase = 2000;
	for (int i = 0; i < nbase; i++) {
		kfmt(k, "base", i);
		set_str(s, 0, k, "v", -1);
	}
	struct scan_seen ss = { calloc((size_t)nbase, 1), nbase, 0 };
	uint64_t cur = 0;
	int steps = 0, extra = 0, extra_del = 0;
	do {
		ok_scan(store_scan(s, 0, &cur, NOW, scan_visit, &ss));
		steps++;
		/* Interleave writers: first grow hard (rehash), then shrink. */
		if (steps < 200) {
			for (int j = 0; j < 100; j++) {
				kfmt(k, "extra", extra++);
				set_str(s, 0, k, "v", -1);
			}
		} else if (extra_del < extra) {
			for (int j = 0; j < 150 && extra_del < extra; j++) {
				kfmt(k, "extra", extra_del++);
				del(s, 0, k, NOW);
			}
		}
	} while (cur != 0 && steps < 10000000);
	int missing = 0;
	for (int i = 0; i < nbase; i++)
		missing += !ss.seen[i];
	is_int(missing, 0, "scan (%u shard bits) returned every base key across grow and shrink (%d steps)",
	       bits, steps);
	free(ss.seen);

	/* A plain scan of a quiet db visits each key exactly once. */
	for (int i = 0; i < extra; i++) {
		kfmt(k, "extra", i);
		del(s, 0, k, NOW);
	}
	struct scan_seen ss2 = { calloc((size_t)nbase, 1), nbase, 0 };
	cur = 0;
	do
		ok_scan(store_scan(s, 0, &cur, NOW, scan_visit, &ss2));
	while (cur);
	is_int(ss2.visits, nbase, "quiet scan visits each key once");
	free(ss2.seen);
	store_destroy(s);
}

struct count_ctx {
	int n;
	char last[64];
};

static void count_visit(const struct entry *e, void *ctx)
{
	struct count_ctx *cc = ctx;
	size_t kl;
	const char *k = entry_key(e, &kl);
	cc->n++;
	snprintf(cc->last, sizeof(cc->last), "%.*s", (int)kl, k);
}

static void test_whole(void)
{
	struct store *s = store_create(4, 10);
	set_str(s, 0, "a", "1", -1);
	set_str(s, 0, "a2", "1", NOW + 10);
	set_str(s, 1, "b", "2", -1);
	struct count_ctx cc = { 0 };
	is_int(store_random_key(s, 2, NOW, count_visit, &cc), 0, "random key of an empty db");
	ok(store_random_key(s, 1, NOW, count_visit, &cc) == 1 && !strcmp(cc.last, "b"), "random key");
	store_swapdb(s, 0, 1);
	ok(exists(s, 0, "b", NOW) && exists(s, 1, "a", NOW) && !exists(s, 0, "a", NOW), "swapdb swapped");
	is_int(store_dbsize(s, 1), 2, "dbsize follows swap");
	is_int(store_expires_count(s, 1), 1, "expires count follows swap");
	is_int(ttl_of(s, 1, "a2"), NOW + 10, "TTL follows swap");
	cc.n = 0;
	is_int(store_foreach(s, 1, NOW, count_visit, &cc), 0, "foreach: no wait given up");
	is_int(cc.n, 2, "foreach visits live keys");
	cc.n = 0;
	store_foreach(s, 1, NOW + 11, count_visit, &cc);
	is_int(cc.n, 1, "foreach skips expired keys");
	store_flushdb(s, 1);
	ok(store_dbsize(s, 1) == 0 && store_dbsize(s, 0) == 1, "flushdb flushes one db");
	store_flushall(s);
	ok(store_dbsize(s, 0) == 0, "flushall");
	store_destroy(s);
}

static void test_rename_copy(void)
{
	struct store *s = store_create(4, 10);
	store_register_type(s, STORE_TYPE_LIST, &blob_ops);
	/* Find two keys in different shards. */
	char a[64] = "src", b[64];
	int i = 0;
	do
		kfmt(b, "dst", i++);
	while (store_shard_of(s, a, strlen(a)) == store_shard_of(s, b, strlen(b)));
	set_str(s, 0, a, "hello", NOW + 100);
	set_str(s, 0, b, "old", -1);
	unsigned sh[2] = { store_shard_of(s, a, strlen(a)), store_shard_of(s, b, strlen(b)) };
	int n = store_shards_normalize(sh, 2);
	ok(n == 2 && sh[0] < sh[1], "normalize sorts");
	store_lock_set(s, sh, n);
	struct entry *e = store_find_locked(s, 0, a, strlen(a), NOW, 0);
	ok(store_rename_locked(s, 0, e, 0, b, strlen(b)) == 0, "rename across shards");
	ok(store_find_locked(s, 0, a, strlen(a), NOW, 0) == NULL, "source gone");
	e = store_find_locked(s, 0, b, strlen(b), NOW, 0);
	size_t vl;
	const char *v = e ? entry_str(e, &vl) : NULL;
	ok(v && vl == 5 && !memcmp(v, "hello", 5) && entry_expire(e) == NOW + 100, "dest has value and TTL");
	ok(store_copy_locked(s, 0, e, 0, a, strlen(a)) == 0, "copy back");
	ok(store_copy_locked(s, 0, e, 0, b, strlen(b)) == -EINVAL, "copy onto itself refused");
	store_unlock_set(s, sh, n);
	char buf[64];
	ok(get_str(s, 0, a, NOW, buf, sizeof(buf)) && !strcmp(buf, "hello") && ttl_of(s, 0, a) == NOW + 100,
	   "copy has value and TTL");
	is_int(store_dbsize(s, 0), 2, "two keys");
	is_int(store_expires_count(s, 0), 2, "two volatile");

	/* MOVE to another db: same key, same shard. */
	unsigned sa = store_shard_of(s, a, strlen(a));
	store_lock(s, sa);
	e = store_find_locked(s, 0, a, strlen(a), NOW, 0);
	ok(store_rename_locked(s, 0, e, 3, a, strlen(a)) == 0, "move to db 3");
	store_unlock(s, sa);
	ok(!exists(s, 0, a, NOW) && exists(s, 3, a, NOW) && ttl_of(s, 3, a) == NOW + 100, "moved with TTL");
	is_int(store_expires_count(s, 0), 1, "volatile count src");
	is_int(store_expires_count(s, 3), 1, "volatile count dst");

	/* Objects: copy is deep, delete frees, rename moves ownership. */
	size_t base = zr_mem_used();
	unsigned so = store_shard_of(s, "obj", 3), sc = store_shard_of(s, "objcopy", 7);
	unsigned set2[2] = { so, sc };
	n = store_shards_normalize(set2, 2);
	store_lock_set(s, set2, n);
	struct blob *bl = blob_new("payload");
	ok(store_set_object_locked(s, 0, "obj", 3, STORE_TYPE_LIST, bl, -1, 0, &e) == 0, "set object");
	ok(entry_type(e) == STORE_TYPE_LIST && entry_obj(e) == bl, "object entry");
	is_str(entry_encoding(s, e), "blob", "object encoding from ops");
	ok(entry_memory(s, e) > zr_usable(bl), "memory includes the object");
	ok(store_copy_locked(s, 0, e, 0, "objcopy", 7) == 0, "copy object");
	struct entry *c = store_find_locked(s, 0, "objcopy", 7, NOW, 0);
	ok(c && entry_obj(c) != bl && !memcmp(((struct blob *)entry_obj(c))->data, "payload", 7),
	   "deep copy");
	blob_frees = 0;
	ok(store_rename_locked(s, 0, c, 0, "obj", 3) == 0, "rename object over object");
	is_int(blob_frees, 1, "replaced object freed once");
	store_unlock_set(s, set2, n);
	del(s, 0, "obj", NOW);
	is_int(blob_frees, 2, "deleted object freed");
	ok(zr_mem_used() <= base + 64, "object memory returned (%zu vs %zu)", zr_mem_used(), base);
	store_destroy(s);
}

static void test_resize_string(void)
{
	struct store *s = store_create(1, 4);
	set_str(s, 0, "k", "abc", NOW + 99);
	unsigned sh = store_shard_of(s, "k", 1);
	store_lock(s, sh);
	struct entry *e = store_find_locked(s, 0, "k", 1, NOW, 0);
	char *v = store_string_resize_locked(s, 0, &e, 300);
	ok(v && !memcmp(v, "abc", 3) && v[3] == 0 && v[299] == 0, "grow across a length class");
	memset(v + 3, 'z', 297);
	v = store_string_resize_locked(s, 0, &e, 5000);
	ok(v && v[299] == 'z' && v[300] == 0 && v[4999] == 0, "grow large");
	v = store_string_resize_locked(s, 0, &e, 4);
	size_t vl;
	const char *r = entry_str(e, &vl);
	ok(v && vl == 4 && !memcmp(r, "abcz", 4) && entry_expire(e) == NOW + 99,
	   "shrink keeps prefix and TTL");
	store_unlock(s, sh);
	ok(get_str(s, 0, "k", NOW, (char[16]){ 0 }, 16), "still findable");
	store_destroy(s);
}

static void snap_collect(unsigned db, const struct entry *e, void *ctx)
{
	(void)db;
	size_t vl;
	const char *v = entry_str(e, &vl);
	snprintf(ctx, 64, "%.*s|%s", (int)vl, v, entry_string_is_raw(e) ? "raw" : "plain");
}

struct snap_keys {
	char seen[256];
};

static void snap_keys_collect(unsigned db, const struct entry *e, void *ctx)
{
	struct snap_keys *sk = ctx;
	size_t kl, vl;
	const char *k = entry_key(e, &kl);
	const char *v = entry_str(e, &vl);
	size_t n = strlen(sk->seen);
	snprintf(sk->seen + n, sizeof(sk->seen) - n, "%u:%.*s=%.*s ", db, (int)kl, k, (int)vl, v);
}

/* A replica gives each key its primary's version back after the write
 * (store_entry_set_version_locked), a version that can be below the
 * shard's clock at a snapshot's instant (the primary ran the write
 * earlier than this server's clock says): a key born after the instant
 * with such a version is still not in the image, a key changed after it
 * is there as it was, and one born after the instant and deleted again
 * is not there either. */
static void test_snap_restored_versions(void)
{
	struct store *s = store_create(4, 2);
	set_str(s, 0, "{t}old", "1", -1);
	unsigned sh_old = store_shard_of(s, "{t}old", 6);
	store_lock(s, sh_old);
	uint64_t low = entry_version(store_find_locked(s, 0, "{t}old", 6, NOW, 0));
	store_unlock(s, sh_old);
	/* one slot, so one shard, whose clock runs ahead of the versions
	 * the "primary" gives */
	for (int i = 0; i < 50; i++)
		set_str(s, 1, "{t}clock", "x", -1);
	ok(store_snap_begin(s, NULL, NULL) == 0, "restored versions: snapshot begins");
	const char *born[2] = { "{t}born", "{t}gone" };
	for (int i = 0; i < 2; i++) {
		set_str(s, 0, born[i], "2", -1);
		unsigned sh = store_shard_of(s, born[i], strlen(born[i]));
		store_lock(s, sh);
		store_entry_set_version_locked(s, store_find_locked(s, 0, born[i], strlen(born[i]), NOW, 0),
					       low + 1);
		store_unlock(s, sh);
	}
	unsigned sh_gone = store_shard_of(s, "{t}gone", 7);
	store_lock(s, sh_gone);
	ok(store_delete_locked(s, 0, "{t}gone", 7, NOW),
	   "restored versions: a key born after the instant deleted again");
	store_unlock(s, sh_gone);
	set_str(s, 0, "{t}old", "3", -1);
	store_lock(s, sh_old);
	store_entry_set_version_locked(s, store_find_locked(s, 0, "{t}old", 6, NOW, 0), low + 2);
	store_unlock(s, sh_old);
	struct snap_keys sk = { "" };
	for (unsigned i = 0; i < store_shard_count(s); i++)
		store_snap_dump(s, i, snap_keys_collect, &sk);
	store_snap_end(s);
	ok(strstr(sk.seen, "0:{t}old=1 ") && !strstr(sk.seen, "born") && !strstr(sk.seen, "gone") &&
		   strstr(sk.seen, "1:{t}clock=x "),
	   "restored versions: the image is the keyspace at the instant (%s)", sk.seen);
	store_lock(s, sh_old);
	size_t vl;
	const char *v = entry_str(store_find_locked(s, 0, "{t}old", 6, NOW, 0), &vl);
	ok(vl == 1 && v[0] == '3', "restored versions: the live value is the new one");
	store_unlock(s, sh_old);
	store_destroy(s);
}

/* An in-place edit marks a string raw (OBJECT ENCODING "raw", as Redis)
 * through a wider length class: the mark survives a TTL change, rename and
 * copy, a whole-value overwrite clears it, and a snapshot pre-image of a
 * marked entry is a full copy of it. */
static void test_raw_mark(void)
{
	struct store *s = store_create(2, 2);
	set_str(s, 0, "k", "12", -1);
	unsigned sh = store_shard_of(s, "k", 1);
	store_lock(s, sh);
	struct entry *e = store_find_locked(s, 0, "k", 1, NOW, 0);
	is_str(entry_encoding(s, e), "int", "a new integer string is int");
	char *v = store_string_resize_locked(s, 0, &e, 3);
	v[2] = '3';
	is_str(entry_encoding(s, e), "raw", "an in-place edit makes it raw");
	size_t vl;
	ok(!memcmp(entry_str(e, &vl), "123", 3) && vl == 3, "the value is intact");
	ok(store_set_expire_locked(s, 0, &e, NOW + 1000) >= 0 && entry_string_is_raw(e) &&
		   entry_expire(e) == NOW + 1000,
	   "a TTL keeps the mark");
	v = store_string_resize_locked(s, 0, &e, 300);
	ok(v && entry_string_is_raw(e) && !memcmp(v, "123", 3), "a resize across classes keeps it");
	v = store_string_resize_locked(s, 0, &e, 3);
	ok(v && entry_string_is_raw(e), "and back");
	store_unlock(s, sh);

	/* a snapshot taken now keeps the marked entry whole */
	ok(store_snap_begin(s, NULL, NULL) == 0, "snapshot begins");
	store_lock(s, sh);
	e = store_find_locked(s, 0, "k", 1, NOW, 0); /* a writer's lookup: keeps the pre-image */
	v = store_string_resize_locked(s, 0, &e, 5);
	memcpy(v + 3, "45", 2);
	store_unlock(s, sh);
	char seen[64] = "";
	for (unsigned i = 0; i < store_shard_count(s); i++)
		store_snap_dump(s, i, snap_collect, seen); /* locks the shard itself */
	store_snap_end(s);
	is_str(seen, "123|raw", "the snapshot has the pre-image, mark and all bytes");

	store_lock(s, sh);
	e = store_find_locked(s, 0, "k", 1, NOW, 0);
	ok(store_copy_locked(s, 0, e, 1, "k", 1) == 0, "copy to db 1");
	struct entry *c = store_find_locked(s, 1, "k", 1, NOW, 0);
	ok(c && entry_string_is_raw(c) && !memcmp(entry_str(c, &vl), "12345", 5), "a copy is raw too");
	v = store_string_overwrite_locked(s, 0, &e, 2);
	memcpy(v, "77", 2);
	is_str(entry_encoding(s, e), "int", "a whole new value is judged by its content again");
	store_unlock(s, sh);
	store_destroy(s);
}

static void test_memory_baseline(void)
{
	struct store *s = store_create(16, 10);
	store_register_type(s, STORE_TYPE_LIST, &blob_ops);
	size_t base = zr_mem_used();
	char k[64];
	for (int i = 0; i < 20000; i++) {
		kfmt(k, "m", i);
		set_str(s, (unsigned)i % 16, k, "some value here", i % 3 ? -1 : NOW + i);
		if (i % 10 == 0) {
			kfmt(k, "o", i);
			unsigned sh = store_shard_of(s, k, strlen(k));
			store_lock(s, sh);
			store_set_object_locked(s, 0, k, strlen(k), STORE_TYPE_LIST, blob_new("x"), -1, 0,
						NULL);
			store_unlock(s, sh);
		}
	}
	ok(zr_mem_used() > base + 20000 * 40, "memory grew");
	store_flushall(s);
	is_int(zr_mem_used(), base, "memory back to baseline after flushall");
	size_t before = zr_mem_used();
	store_destroy(s);
	ok(zr_mem_used() < before, "destroy frees the shards");
}

/* --- eviction ------------------------------------------------------------------ */

/* Evicts about N keys of DB 0 worth of memory; returns evicted_keys. */
static uint64_t evict_some(struct store *s, enum store_evict_policy p, size_t bytes, int *rc)
{
	struct store_stats a, b;
	store_stats(s, &a);
	size_t used = zr_mem_used();
	*rc = store_evict(s, used > bytes ? used - bytes : 0, p, NOW);
	store_stats(s, &b);
	return b.evicted_keys - a.evicted_keys;
}

static void fill(struct store *s, const char *pfx, int n, int64_t ttl_base)
{
	char k[64];
	char val[200];
	memset(val, 'v', sizeof(val) - 1);
	val[sizeof(val) - 1] = 0;
	for (int i = 0; i < n; i++) {
		kfmt(k, pfx, i);
		set_str(s, 0, k, val, ttl_base < 0 ? -1 : ttl_base + i);
	}
}

static int count_present(struct store *s, const char *pfx, int from, int to)
{
	char k[64];
	int n = 0;
	for (int i = from; i < to; i++) {
		kfmt(k, pfx, i);
		unsigned sh = store_shard_of(s, k, strlen(k));
		store_lock(s, sh);
		n += store_find_locked(s, 0, k, strlen(k), NOW,
				       STORE_LOOKUP_NOTOUCH | STORE_LOOKUP_NOSTATS) != NULL;
		store_unlock(s, sh);
	}
	return n;
}

static void test_evict(void)
{
	const size_t chunk = 200 * 256; /* about 200 entries of ~256 bytes */
	int rc;
	ok(store_evict_policy_parse("allkeys-lru") == STORE_EVICT_ALLKEYS_LRU, "parse policy");
	ok(store_evict_policy_parse("ALLKEYS-LFU") == STORE_EVICT_ALLKEYS_LFU, "parse is case-insensitive");
	ok(store_evict_policy_parse("bogus") == -EINVAL, "unknown policy");
	is_str(store_evict_policy_name(STORE_EVICT_VOLATILE_TTL), "volatile-ttl", "policy name");

	/* noeviction */
	struct store *s = store_create(1, 4);
	fill(s, "n", 1000, -1);
	ok(store_evict(s, zr_mem_used() + 1000000, STORE_EVICT_NOEVICTION, NOW) == 0, "under the limit: 0");
	ok(store_evict(s, 1, STORE_EVICT_NOEVICTION, NOW) == -ENOMEM, "noeviction: -ENOMEM");
	is_int(store_dbsize(s, 0), 1000, "noeviction deletes nothing");
	store_destroy(s);

	/* allkeys-random */
	s = store_create(1, 4);
	fill(s, "r", 2000, -1);
	uint64_t ev = evict_some(s, STORE_EVICT_ALLKEYS_RANDOM, chunk, &rc);
	ok(rc == 0 && ev > 50 && store_dbsize(s, 0) == 2000 - ev, "allkeys-random evicted %llu",
	   (unsigned long long)ev);
	store_destroy(s);

	/* volatile-random / volatile-ttl / volatile-lru / volatile-lfu spare keys without TTL */
	enum store_evict_policy vols[] = { STORE_EVICT_VOLATILE_RANDOM, STORE_EVICT_VOLATILE_TTL,
					   STORE_EVICT_VOLATILE_LRU, STORE_EVICT_VOLATILE_LFU };
	for (unsigned i = 0; i < 4; i++) {
		s = store_create(1, 4);
		store_set_maxmemory_samples(s, 10);
		store_set_evict_policy(s, vols[i]);
		fill(s, "p", 1000, -1);
		fill(s, "t", 1000, NOW + 1000);
		ev = evict_some(s, vols[i], chunk, &rc);
		int kept = count_present(s, "p", 0, 1000);
		ok(rc == 0 && ev > 50 && kept == 1000,
		   "%s evicts only volatile keys (%llu evicted, %d of 1000 kept)",
		   store_evict_policy_name(vols[i]), (unsigned long long)ev, kept);
		if (vols[i] == STORE_EVICT_VOLATILE_TTL) {
			/* Nearest TTLs are t:0..; the evicted should be mostly the
			 * near ones: of the first 300, far more gone than of the last 300. */
			int near_gone = 300 - count_present(s, "t", 0, 300);
			int far_gone = 300 - count_present(s, "t", 700, 1000);
			ok(near_gone > 3 * far_gone, "volatile-ttl evicts nearest TTLs (near %d, far %d)",
			   near_gone, far_gone);
		}
		/* With the volatile keys gone, nothing is left to evict. */
		ok(store_evict(s, 1, vols[i], NOW) == -ENOMEM && count_present(s, "p", 0, 1000) == 1000 &&
			   store_expires_count(s, 0) == 0,
		   "%s: -ENOMEM once no volatile key remains", store_evict_policy_name(vols[i]));
		store_destroy(s);
	}

	/* allkeys-lru keeps recently touched keys */
	s = store_create(1, 4);
	store_set_evict_policy(s, STORE_EVICT_ALLKEYS_LRU);
	store_tick(s, NOW);
	fill(s, "c", 1000, -1); /* cold half: c:0..499, hot half: c:500..999 */
	store_tick(s, NOW + 100000);
	char k[64];
	for (int i = 500; i < 1000; i++) {
		kfmt(k, "c", i);
		exists(s, 0, k, NOW);
	}
	ev = evict_some(s, STORE_EVICT_ALLKEYS_LRU, chunk, &rc);
	int hot_gone = 500 - count_present(s, "c", 500, 1000);
	ok(rc == 0 && ev > 50 && hot_gone * 10 < (int)ev, "allkeys-lru evicted %llu, of which %d hot",
	   (unsigned long long)ev, hot_gone);
	{
		unsigned sh = store_shard_of(s, "c:999", 5);
		store_lock(s, sh);
		struct entry *e = store_find_locked(s, 0, "c:999", 5, NOW, STORE_LOOKUP_NOTOUCH);
		is_int(e ? (long long)entry_idle_seconds(s, e) : -1, 0, "idle 0 for a touched key");
		store_unlock(s, sh);
		store_tick(s, NOW + 130000);
		store_lock(s, sh);
		e = store_find_locked(s, 0, "c:999", 5, NOW, STORE_LOOKUP_NOTOUCH);
		is_int(e ? (long long)entry_idle_seconds(s, e) : -1, 30, "idle 30 s later");
		store_unlock(s, sh);
	}
	store_destroy(s);

	/* allkeys-lfu keeps frequently used keys */
	s = store_create(1, 4);
	store_set_evict_policy(s, STORE_EVICT_ALLKEYS_LFU);
	store_tick(s, NOW);
	fill(s, "f", 1000, -1);
	for (int round = 0; round < 50; round++)
		for (int i = 500; i < 1000; i++) {
			kfmt(k, "f", i);
			exists(s, 0, k, NOW);
		}
	{
		unsigned sh = store_shard_of(s, "f:999", 5);
		store_lock(s, sh);
		struct entry *e = store_find_locked(s, 0, "f:999", 5, NOW, STORE_LOOKUP_NOTOUCH);
		ok(e && entry_lfu(s, e) > 5, "lfu counter grew (%u)", e ? entry_lfu(s, e) : 0);
		store_unlock(s, sh);
	}
	ev = evict_some(s, STORE_EVICT_ALLKEYS_LFU, chunk, &rc);
	hot_gone = 500 - count_present(s, "f", 500, 1000);
	ok(rc == 0 && ev > 50 && hot_gone * 10 < (int)ev, "allkeys-lfu evicted %llu, of which %d hot",
	   (unsigned long long)ev, hot_gone);
	/* Decay: 10 minutes later with decay-time 1 the counter drops by 10. */
	{
		unsigned sh = store_shard_of(s, "f:999", 5);
		store_lock(s, sh);
		struct entry *e = store_find_locked(s, 0, "f:999", 5, NOW, STORE_LOOKUP_NOTOUCH);
		unsigned before = e ? entry_lfu(s, e) : 0;
		store_unlock(s, sh);
		store_tick(s, NOW + 10 * 60000);
		store_lock(s, sh);
		e = store_find_locked(s, 0, "f:999", 5, NOW, STORE_LOOKUP_NOTOUCH);
		unsigned after = e ? entry_lfu(s, e) : 0;
		store_unlock(s, sh);
		ok(after + 10 == before || (before < 10 && after == 0),
		   "lfu decays one per minute (%u -> %u)", before, after);
	}
	store_destroy(s);
	store_evict_pool_clear();
}

/* --- threads ------------------------------------------------------------------- */

struct stress_arg {
	struct store *s;
	int id;
	int ops;
};

static void *stress_worker(void *p)
{
	struct stress_arg *a = p;
	struct store *s = a->s;
	uint64_t rnd = (uint64_t)a->id * 7919 + 17;
	char k[64], k2[64];
	struct store_write w; /* this thread's writes, as a command's */
	store_write_begin(&w, STORE_WRITE_CLIENT, "a stress thread", true, 0);
	for (int i = 0; i < a->ops; i++) {
		uint64_t r = dict_rand(&rnd);
		int key = (int)(r % 500);
		kfmt(k, "s", key);
		size_t kl = strlen(k);
		unsigned sh = store_shard_of(s, k, kl);
		switch ((r >> 32) % 8) {
		case 0:
		case 1:
			store_lock(s, sh);
			store_set_string_locked(s, (unsigned)(r >> 40) % 2, k, kl, k, kl,
						(r >> 20) % 3 ? -1 : NOW + 5, 0, NULL);
			store_unlock(s, sh);
			break;
		case 2:
		case 3: {
			store_lock(s, sh);
			struct entry *e = store_find_locked(s, 0, k, kl, NOW + (int64_t)(r % 10), 0);
			if (e) {
				size_t vl;
				const char *v = entry_str(e, &vl);
				if (vl != kl || memcmp(v, k, kl))
					abort();
			}
			store_unlock(s, sh);
			break;
		}
		case 4:
			store_lock(s, sh);
			store_delete_locked(s, 0, k, kl, NOW);
			store_unlock(s, sh);
			break;
		case 5: {
			/* RENAME-like on two keys, locks in ascending order. */
			kfmt(k2, "s", (key + 1) % 500);
			unsigned set[2] = { sh, store_shard_of(s, k2, strlen(k2)) };
			int n = store_shards_normalize(set, 2);
			store_lock_set(s, set, n);
			struct entry *e = store_find_locked(s, 0, k, kl, NOW, 0);
			if (e)
				store_copy_locked(s, 0, e, 1, k, kl);
			store_unlock_set(s, set, n);
			break;
		}
		case 6: {
			struct count_ctx cc = { 0 };
			uint64_t cur = r % 4096;
			for (int j = 0; j < 4; j++)
				ok_scan(store_scan(s, 0, &cur, NOW, count_visit, &cc));
			store_dbsize(s, 0);
			break;
		}
		default:
			store_active_expire(s, (unsigned)a->id, 4, NOW + 10, 200);
			if (i % 64 == 0)
				store_random_key(s, 1, NOW, count_visit, &(struct count_ctx){ 0 });
			break;
		}
	}
	store_write_end(&w);
	store_evict_pool_clear();
	return NULL;
}

static void *evict_worker(void *p)
{
	struct stress_arg *a = p;
	for (int i = 0; i < a->ops; i++) {
		size_t used = zr_mem_used();
		store_evict(a->s, used - used / 64,
			    i % 2 ? STORE_EVICT_ALLKEYS_LRU : STORE_EVICT_VOLATILE_TTL, NOW);
		if (i % 50 == 0) {
			struct store_write w; /* SWAPDB is a command's write */
			store_write_begin(&w, STORE_WRITE_CLIENT, "SWAPDB", true, NOW);
			store_swapdb(a->s, 0, 1);
			store_write_end(&w);
		}
	}
	store_evict_pool_clear();
	return NULL;
}

static void test_threads(void)
{
	struct store *s = store_create(2, 6);
	pthread_t t[5];
	struct stress_arg args[5];
	int ops = 40000;
#ifdef ZR_SANITIZED
	ops = 15000;
#endif
	for (int i = 0; i < 4; i++) {
		args[i] = (struct stress_arg){ s, i, ops };
		pthread_create(&t[i], NULL, stress_worker, &args[i]);
	}
	args[4] = (struct stress_arg){ s, 4, 200 };
	pthread_create(&t[4], NULL, evict_worker, &args[4]);
	for (int i = 0; i < 5; i++)
		pthread_join(t[i], NULL);
	struct count_ctx cc = { 0 };
	for (unsigned db = 0; db < 2; db++) {
		cc.n = 0;
		store_foreach(s, db, 0, count_visit, &cc);
		ok((uint64_t)cc.n == store_dbsize(s, db),
		   "db %u: counted keys (%d) match dbsize after stress", db, cc.n);
		/* Every volatile slot points back at an entry with a TTL. */
		int bad = 0;
		uint64_t nvol = 0;
		for (unsigned i = 0; i < store_shard_count(s); i++) {
			struct dict *d = store_dict(s, db, i);
			for (uint32_t j = 0; j < d->nvol; j++)
				bad += !entry_has_ttl(d->vol[j]) || entry_vidx(d->vol[j]) != j;
			nvol += d->nvol;
		}
		ok(bad == 0 && nvol == store_expires_count(s, db), "db %u: volatile index consistent", db);
		long ne = 0, nev = 0;
		for (unsigned i = 0; i < store_shard_count(s); i++) {
			ne += dict_keys(store_dict(s, db, i)) > 0;
			nev += dict_vkeys(store_dict(s, db, i)) > 0;
		}
		ok(ne == atomic_load(&s->live[db].keys) && nev == atomic_load(&s->live[db].vols),
		   "db %u: non-empty shard counters right (%ld, %ld)", db, ne, nev);
	}
	store_destroy(s);
}

static void test_swapdb_all_locks(void)
{
	/* 1024 shard locks held at once: must work under TSan too. */
	struct store *s = store_create(2, 10);
	set_str(s, 0, "x", "1", -1);
	store_swapdb(s, 0, 1);
	ok(exists(s, 1, "x", NOW) && !exists(s, 0, "x", NOW), "swapdb with 1024 shards");
	store_destroy(s);
}

/* The wait hook (store_set_wait_hook): another thread holds the one
 * shard; a walk asks the hook and stops when it says so, a lock that
 * cannot give up asks and goes on waiting; shard_lock_briefly passes. */
struct holder {
	struct store *s;
	_Atomic int held, release;
};

static void *hold_shard(void *arg)
{
	struct holder *h = arg;
	store_lock(h->s, 0);
	atomic_store(&h->held, 1);
	while (!atomic_load(&h->release))
		usleep(1000);
	store_unlock(h->s, 0);
	return NULL;
}

struct hook_calls {
	int calls;
	bool give_up;
	struct holder *release_at_3; /* the hook lets the holder go at its third call */
};

static bool count_hook(void *arg)
{
	struct hook_calls *hc = arg;
	if (++hc->calls == 3 && hc->release_at_3)
		atomic_store(&hc->release_at_3->release, 1);
	return hc->give_up;
}

static void test_wait_hook(void)
{
	struct store *s = store_create(1, 0); /* one shard */
	set_str(s, 0, "k", "v", -1);
	set_str(s, 0, "t", "v", NOW + 100000);
	struct holder h = { .s = s };
	pthread_t t;
	pthread_create(&t, NULL, hold_shard, &h);
	while (!atomic_load(&h.held))
		usleep(1000);
	struct hook_calls hc = { 0, true, NULL };
	struct store_wait_hook prev = store_set_wait_hook(count_hook, &hc);
	ok(prev.fn == NULL, "no wait hook by default");
	struct count_ctx cc = { 0 };
	is_int(store_foreach(s, 0, NOW, count_visit, &cc), -EBUSY, "foreach: the hook gives the wait up");
	ok(hc.calls >= 1 && cc.n == 0, "foreach asked the hook (%d) and visited nothing", hc.calls);
	uint64_t cur = 0;
	is_int(store_scan(s, 0, &cur, NOW, count_visit, &cc), -EBUSY, "scan: given up");
	is_int((int)cur, 0, "scan: the cursor unchanged");
	is_int(store_random_key(s, 0, NOW, count_visit, &cc), -EBUSY, "random key: given up");
	is_int(store_foreach_slot(s, 0, zr_key_slot("k", 1), NOW, count_visit, &cc), -EBUSY,
	       "foreach_slot: given up");
	cur = 0;
	is_int(store_meta_scan(s, 0, STORE_META_LABEL, "l", 1, &cur, NOW, count_visit, &cc), -EBUSY,
	       "meta scan: given up");
	ok(!shard_lock_briefly(store_shard(s, 0)), "shard_lock_briefly passes a shard held for long");
	/* the active expiry passes over it too, and returns (checked below) */
	store_active_expire(s, 0, 1, NOW + 200000, 1000);
	/* a lock that cannot give up asks the hook, and waits on */
	hc = (struct hook_calls){ 0, true, &h };
	store_lock(s, 0);
	ok(hc.calls >= 3, "store_lock asked the hook while it waited (%d times) and then got the lock",
	   hc.calls);
	store_unlock(s, 0);
	pthread_join(t, NULL);
	is_int(store_dbsize(s, 0), 2, "the active expiry passed over the held shard");
	hc = (struct hook_calls){ 0, true, NULL };
	cc.n = 0;
	is_int(store_foreach(s, 0, NOW, count_visit, &cc), 0,
	       "foreach of a free shard: the hook is not asked");
	ok(hc.calls == 0 && cc.n == 2, "visited both keys");
	ok(shard_lock_briefly(store_shard(s, 0)), "shard_lock_briefly takes a free shard");
	store_unlock(s, 0);
	store_set_wait_hook(prev.fn, prev.arg);
	store_destroy(s);
}

/* Active rehashing: the expiry cycle finishes a resize that no command
 * drives, also in a database without volatile keys, and loses nothing. */
static void test_active_rehash(void)
{
	struct store *s = store_create(2, 0); /* one shard: one dict per db */
	char k[64], v[64];
	int n = 0;
	struct dict *d = store_dict(s, 1, 0);
	/* grow until a resize of a table too big for one visit's steps is
	 * under way, then stop touching the table */
	while (!(dict_is_rehashing(d) && d->size[0] >= 4096) && n < 100000) {
		kfmt(k, "r", n);
		set_str(s, 1, k, k, -1);
		n++;
	}
	ok(dict_is_rehashing(d) && dict_rehashing_unlocked(d),
	   "active rehash: a resize under way after %d keys", n);
	is_int(store_dict(s, 1, 0)->nvol, 0, "active rehash: no volatile key anywhere");
	size_t mem_before = zr_mem_used();
	int cycles = 0;
	while (dict_is_rehashing(d) && cycles < 100000) {
		store_active_expire(s, 0, 1, NOW, 1000000);
		cycles++;
	}
	ok(!dict_is_rehashing(d) && !dict_rehashing_unlocked(d) && cycles > 1,
	   "active rehash: finished by the cycle, a batch per call (%d calls)", cycles);
	ok(d->tab[1] == NULL && d->size[0] >= (uint64_t)n, "active rehash: one table left, %llu buckets",
	   (unsigned long long)d->size[0]);
	ok(zr_mem_used() < mem_before, "active rehash: the old table's memory is freed (%zu -> %zu bytes)",
	   mem_before, zr_mem_used());
	int bad = 0;
	for (int i = 0; i < n; i++) {
		kfmt(k, "r", i);
		if (!get_str(s, 1, k, NOW, v, sizeof(v)) || strcmp(v, k))
			bad++;
	}
	is_int(bad, 0, "active rehash: every key keeps its value");
	is_int(store_dbsize(s, 1), n, "active rehash: key count unchanged");
	store_destroy(s);
}

/* The prefetch steps (store.h) change nothing and never keep a lock: every
 * key keeps its value, every shard lock is free afterwards, a lock the
 * caller holds stays held; also on an empty database, for absent keys and
 * while tables are being rehashed. */
static void test_prefetch(void)
{
	struct store *s = store_create(1, 2);
	char k[64], v[64];
	uint64_t h = 0;
	ok(!store_prefetch(s, 0, "none", 4, &h), "prefetch: an empty database hashes nothing");
	int n = 20000, bad_hash = 0, bad_val = 0, rehashing_seen = 0;
	for (int i = 0; i < n; i++) {
		kfmt(k, "p", i);
		set_str(s, 0, k, k, -1);
		/* prefetch every few keys as the tables grow (rehashes included) */
		int j = i - i % 7;
		kfmt(k, "p", j);
		if (!store_prefetch(s, 0, k, strlen(k), &h) || h != store_hash(k, strlen(k)))
			bad_hash++;
		store_prefetch_bucket(s, 0, h);
		store_prefetch_entry(s, 0, h);
		store_prefetch_next(s, 0, h, k, strlen(k));
		kfmt(k, "absent", i);
		h = store_hash(k, strlen(k));
		store_prefetch_bucket(s, 0, h);
		store_prefetch_entry(s, 0, h);
		store_prefetch_next(s, 0, h, k, strlen(k));
		for (unsigned sh = 0; sh < store_shard_count(s); sh++)
			rehashing_seen += dict_is_rehashing(store_dict(s, 0, sh));
	}
	is_int(bad_hash, 0, "prefetch: hash given for every present key");
	ok(rehashing_seen > 0, "prefetch: taken while tables were rehashed (%d times)", rehashing_seen);
	is_int(store_dbsize(s, 0), n, "prefetch: key count unchanged");
	for (int i = 0; i < n; i++) {
		kfmt(k, "p", i);
		if (!get_str(s, 0, k, NOW, v, sizeof(v)) || strcmp(v, k))
			bad_val++;
	}
	is_int(bad_val, 0, "prefetch: every value unchanged");
	int held = 0;
	for (unsigned sh = 0; sh < store_shard_count(s); sh++) {
		struct zr_lock *l = &store_shard(s, sh)->lock;
		if (!zr_trylock(l))
			held++;
		else
			zr_unlock(l);
	}
	is_int(held, 0, "prefetch: no shard lock left held");
	kfmt(k, "p", 1);
	unsigned sh = store_shard_of(s, k, strlen(k));
	h = store_hash(k, strlen(k));
	store_lock(s, sh);
	store_prefetch_entry(s, 0, h);
	store_prefetch_next(s, 0, h, k, strlen(k));
	ok(!zr_trylock(&store_shard(s, sh)->lock), "prefetch: a lock the caller holds stays held");
	store_unlock(s, sh);
	store_destroy(s);
}

/* --- deletions no command made, replica mode ------------------------------------- */

/* What the deletion hook saw: "E:key" / "V:key" in order. */
struct del_log {
	char buf[4096];
	size_t len;
	int n;
};

static void del_hook(void *ctx, enum store_event ev, unsigned db, const char *key, size_t klen)
{
	struct del_log *l = ctx;
	l->len += (size_t)snprintf(l->buf + l->len, sizeof(l->buf) - l->len, "%c%u:%.*s ",
				   ev == STORE_EVENT_EXPIRED   ? 'E'
				   : ev == STORE_EVENT_EVICTED ? 'V'
							       : '?',
				   db, (int)klen, key);
	l->n++;
}

static void pick_one(const struct entry *e, void *ctx)
{
	size_t klen;
	const char *k = entry_key(e, &klen);
	snprintf(ctx, 64, "%.*s", (int)klen, k);
}

static void count_live(const struct entry *e, void *ctx)
{
	(*(int *)ctx)++;
}

static void test_delete_hook(void)
{
	struct store *s = store_create(2, 4);
	struct del_log log = { .len = 0 };
	store_set_delete_hook(s, del_hook, &log);
	set_str(s, 0, "lazy", "v", NOW - 1);
	set_str(s, 0, "del", "v", NOW - 1);
	set_str(s, 1, "rnd", "v", NOW - 1);
	set_str(s, 0, "live", "v", NOW + 100000);
	uint64_t dirty = store_write_dirty();
	ok(!exists(s, 0, "lazy", NOW), "an expired key is not found");
	ok(!del(s, 0, "del", NOW), "its delete reports false");
	char k[64] = "";
	ok(!store_random_key(s, 1, NOW, pick_one, k), "RANDOMKEY of only expired keys: none");
	is_int(store_write_dirty() - dirty, 0, "lazy expiries are no change of the caller");
	ok(!strcmp(log.buf, "E0:lazy E0:del E1:rnd "), "each lazy expiry reported to the hook: %s", log.buf);
	set_str(s, 0, "over", "v", NOW - 1);
	set_str(s, 0, "over", "w", -1);
	is_int(log.n, 3, "no clock in the bracket: a write replaces an expired key silently");
	set_str(s, 0, "over", "v", NOW - 1);
	struct store_write cmd;
	store_write_begin(&cmd, STORE_WRITE_CLIENT, "SET", true, NOW);
	set_str(s, 0, "over", "w", -1);
	store_write_end(&cmd);
	ok(log.n == 4 && strstr(log.buf, "E0:over"), "with the command's clock it expires it first (setKey)");
	ok(get_str(s, 0, "over", NOW, k, sizeof(k)) && !strcmp(k, "w"), "then writes the new value");
	for (int i = 0; i < 50; i++) {
		kfmt(k, "act", i);
		set_str(s, 1, k, "v", NOW + 10);
	}
	log.len = 0;
	log.n = 0;
	store_active_expire(s, 0, 1, NOW, 1000000);
	is_int(log.n, 0, "nothing reported before the TTL");
	for (int r = 0; r < 100 && store_dbsize(s, 1); r++)
		store_active_expire(s, 0, 1, NOW + 11, 1000000);
	is_int(log.n, 50, "the active cycle reports every key it expires");
	ok(exists(s, 0, "live", NOW + 11), "a key not due stays");
	struct store_stats st;
	store_stats(s, &st);
	is_int(st.expired_keys, 54, "expired_keys counts all of them");
	store_set_delete_hook(s, NULL, NULL);
	store_destroy(s);
}

static void test_replica_mode(void)
{
	struct store *s = store_create(1, 4);
	struct del_log log = { .len = 0 };
	store_set_delete_hook(s, del_hook, &log);
	store_set_replica_mode(s, true);
	ok(store_replica_mode(s), "replica mode on");
	char k[64];
	for (int i = 0; i < 40; i++) {
		kfmt(k, "gone", i);
		set_str(s, 0, k, "v", NOW - 1);
	}
	set_str(s, 0, "live", "v", -1);
	ok(!exists(s, 0, "gone:1", NOW), "an expired key is hidden");
	is_int(store_dbsize(s, 0), 41, "but still counted and kept");
	int n = 0;
	store_foreach(s, 0, NOW, count_live, &n);
	is_int(n, 1, "a walk skips it");
	n = 0;
	uint64_t cur = 0;
	do
		ok_scan(store_scan(s, 0, &cur, NOW, count_live, &n));
	while (cur);
	is_int(n, 1, "SCAN skips it");
	for (int r = 0; r < 20; r++)
		store_active_expire(s, 0, 1, NOW, 1000000);
	is_int(store_dbsize(s, 0), 41, "the active cycle deletes nothing");
	bool all_live = true;
	for (int r = 0; r < 50; r++) {
		char got[64] = "";
		all_live &= store_random_key(s, 0, NOW, pick_one, got) && !strcmp(got, "live");
	}
	ok(all_live, "RANDOMKEY answers the live key, never a hidden one");
	is_int(store_dbsize(s, 0), 41, "and deletes nothing");
	ok(del(s, 0, "live", NOW), "the live key deleted");
	char got[64] = "";
	/* every key has a TTL and every one is expired: Redis's replica answers one */
	ok(store_random_key(s, 0, NOW, pick_one, got) && !strncmp(got, "gone:", 5),
	   "every key expired and volatile: a hidden one, as Redis's replica (%s)", got);
	ok(del(s, 0, "gone:1", NOW), "the primary's DEL deletes a hidden key (true)");
	is_int(store_dbsize(s, 0), 39, "counted out");
	ok(store_evict(s, 1, STORE_EVICT_ALLKEYS_RANDOM, NOW) == 0, "eviction: nothing to do on a replica");
	is_int(store_dbsize(s, 0), 39, "nothing evicted");
	ok(set_str(s, 0, "gone:2", "new", -1) == 0 && exists(s, 0, "gone:2", NOW),
	   "a write replaces a hidden key");
	struct store_stats st;
	store_stats(s, &st);
	is_int(st.expired_keys + st.evicted_keys, 0, "nothing expired or evicted");
	is_int(log.n, 0, "the deletion hook never called");
	store_set_replica_mode(s, false);
	ok(!exists(s, 0, "gone:3", NOW), "back to a primary: a lookup expires");
	is_int(store_dbsize(s, 0), 38, "and deletes");
	for (int r = 0; r < 100 && store_dbsize(s, 0) > 1; r++)
		store_active_expire(s, 0, 1, NOW, 1000000);
	is_int(store_dbsize(s, 0), 1, "the active cycle runs again");
	is_int(log.n, 38, "each expiry reported");
	store_set_active_expire(s, false);
	set_str(s, 0, "later", "v", NOW - 1);
	for (int r = 0; r < 20; r++)
		store_active_expire(s, 0, 1, NOW, 1000000);
	is_int(store_dbsize(s, 0), 2, "active expiry off: the cycle deletes nothing");
	ok(!exists(s, 0, "later", NOW) && store_dbsize(s, 0) == 1, "a lookup still expires");
	store_set_delete_hook(s, NULL, NULL);
	store_destroy(s);
}

/* The write bracket (store/write.h): nesting, the counts, the
 * transaction, and a write outside any bracket counted (a release build;
 * a sanitizer build aborts there, so it is left out). */
static void test_brackets(void)
{
	struct store *s = store_create(1, 2);
	struct store_write *base = store_write_open();
	ok(base != NULL, "main's bracket is open");
	struct store_write outer, inner;
	store_write_begin(&outer, STORE_WRITE_CLIENT, "EXEC", false, NOW);
	outer.txn_open = true;
	ok(store_write_open() == &outer && outer.outer == base, "a bracket nests in the open one");
	store_write_begin(&inner, STORE_WRITE_CLIENT, "SET", true, NOW);
	set_str(s, 0, "a", "1", -1);
	set_str(s, 0, "b", "2", -1);
	is_int(store_write_dirty(), 2, "two stamps, two changes");
	store_write_changes_are(1);
	is_int(store_write_changes(&inner), 1, "what the writer said wins");
	ok(store_write_txn() == &outer, "the transaction is the bracket that opened one");
	store_write_end(&inner);
	ok(store_write_open() == &outer, "end: the outer one is open again");
	is_int(outer.dirty, 2, "and has the inner one's changes");
	is_int(store_write_changes(&outer), 2, "a count said inside is the inner one's");
	store_write_end(&outer);
	ok(store_write_txn() == NULL, "no transaction once it ended");
	uint64_t before = store_write_breaches();
	store_write_begin(&inner, STORE_WRITE_CLIENT, "GET", false, NOW);
	char v[8];
	ok(get_str(s, 0, "a", NOW, v, sizeof(v)), "a read-only bracket reads");
	store_write_end(&inner);
	is_int(store_write_breaches(), before, "and is no breach");
#ifndef ZR_SANITIZED
	store_write_begin(&inner, STORE_WRITE_CLIENT, "GET", false, NOW);
	set_str(s, 0, "a", "3", -1);
	store_write_end(&inner);
	is_int(store_write_breaches(), before + 1, "a write in a read-only bracket is counted");
#endif
	store_destroy(s);
}

int main(void)
{
	zr_hash_init();
	/* the program writes as one command would (store/write.h); its
	 * threads open their own */
	struct store_write w;
	store_write_begin(&w, STORE_WRITE_CLIENT, "a unit test", true, 0);
	test_basic();
	test_layout();
	test_overwrite_inplace();
	test_ttl();
	test_active_expire();
	test_delete_hook();
	test_replica_mode();
	test_resize();
	test_scan(0);
	test_scan(3);
	test_whole();
	test_rename_copy();
	test_resize_string();
	test_raw_mark();
	test_snap_restored_versions();
	test_memory_baseline();
	test_evict();
	test_swapdb_all_locks();
	test_prefetch();
	test_active_rehash();
	test_threads();
	test_wait_hook();
	test_brackets();
	store_write_end(&w);
#ifndef ZR_SANITIZED
	is_int(store_write_breaches(), 1, "no breach but test_brackets' own");
#else
	is_int(store_write_breaches(), 0, "no breach");
#endif
	return done_testing();
}
