/* A key's cluster slot and its shard (core/keyslot, store): Redis's
 * published CRC16 vector and hash-tag cases, the sliced CRC against a
 * bit-by-bit one, shard = slot >> (14 - shard bits) for every shard-bits,
 * and the per-slot key counts against a recount after a seeded random
 * workload of every kind of insertion and deletion (set, delete, lazy and
 * active expiry, eviction, FLUSHDB, FLUSHALL, MOVE, SWAPDB, RENAME across
 * slots and databases, COPY). The comparison of slots with redis-server's
 * CLUSTER KEYSLOT is tests/integration/keyslot.t.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/tap.h"
#include "zarisd/core/keyslot.h"
#include "zarisd/core/mem.h"
#include "zarisd/core/util.h"
#include "zarisd/store/store.h"
#include "zarisd/store/write.h"

#define NOW 1000000000000LL

/* CRC16-XMODEM one bit at a time: the definition, to check the tables. */
static uint16_t crc16_bits(const unsigned char *p, size_t len)
{
	unsigned c = 0;
	for (size_t i = 0; i < len; i++) {
		c ^= (unsigned)p[i] << 8;
		for (int b = 0; b < 8; b++)
			c = (c & 0x8000) ? ((c << 1) ^ 0x1021) & 0xffff : (c << 1) & 0xffff;
	}
	return (uint16_t)c;
}

static unsigned slot_of(const char *k)
{
	return zr_key_slot(k, strlen(k));
}

static void test_vectors(void)
{
	/* Redis Cluster spec, appendix A: "123456789" -> 0x31C3 */
	is_int(zr_crc16("123456789", 9), 0x31C3, "crc16(\"123456789\") is the spec's 0x31C3");
	is_int(slot_of("123456789"), 12739, "its slot is 12739");
	is_int(zr_crc16("", 0), 0, "crc16 of nothing is 0");
	ok(slot_of("{user1000}.following") == slot_of("{user1000}.followers"),
	   "{user1000}.following and {user1000}.followers share a slot");
	is_int(slot_of("{user1000}.following"), slot_of("user1000"), "... the slot of user1000");
	is_int(slot_of("foo{}{bar}"), zr_crc16("foo{}{bar}", 10) & 16383, "foo{}{bar} hashes the whole key");
	is_int(slot_of("foo{{bar}}zap"), zr_crc16("{bar", 4) & 16383, "foo{{bar}}zap hashes \"{bar\"");
	is_int(slot_of("foo{bar}{zap}"), slot_of("bar"), "foo{bar}{zap} hashes \"bar\"");
	is_int(slot_of("foo{bar"), zr_crc16("foo{bar", 7) & 16383, "an unclosed tag: the whole key");
	is_int(slot_of("}foo{bar}"), slot_of("bar"), "a '}' before the '{' does not count");
	is_int(slot_of("{"), zr_crc16("{", 1) & 16383, "\"{\" alone: the whole key");
	is_int(slot_of("{}"), zr_crc16("{}", 2) & 16383, "\"{}\": the whole key");
	/* a '{' in every position of a word, and in the byte tail */
	char k[40];
	int bad = 0;
	for (int len = 1; len < 30; len++)
		for (int at = 0; at < len; at++) {
			memset(k, 'a', (size_t)len);
			k[at] = '{';
			size_t tl;
			const char *tag = zr_key_hashtag(k, (size_t)len, &tl);
			if (tag != k || tl != (size_t)len ||
			    zr_key_slot(k, (size_t)len) !=
				    (crc16_bits((unsigned char *)k, (size_t)len) & 16383u))
				bad++;
			if (at + 2 < len) {
				k[len - 1] = '}';
				tag = zr_key_hashtag(k, (size_t)len, &tl);
				if (tag != k + at + 1 || tl != (size_t)(len - at - 2))
					bad++;
			}
		}
	is_int(bad, 0, "'{' found at every offset of keys of 1..29 bytes");

	uint64_t rnd = 0x1234567;
	unsigned char buf[512];
	for (size_t i = 0; i < sizeof(buf); i++) {
		rnd = rnd * 6364136223846793005ULL + 1442695040888963407ULL;
		buf[i] = (unsigned char)(rnd >> 56);
	}
	bad = 0;
	for (size_t len = 0; len <= sizeof(buf); len++)
		for (size_t off = 0; off < 8 && off + len <= sizeof(buf); off += 3)
			if (zr_crc16(buf + off, len) != crc16_bits(buf + off, len))
				bad++;
	is_int(bad, 0, "sliced crc16 equals the bitwise one for 0..512 bytes at odd offsets");
}

static void test_shard_follows_slot(void)
{
	int bad = 0, badhash = 0;
	for (unsigned bits = 0; bits <= 14; bits++) {
		struct store *s = store_create(1, bits);
		if (!s) {
			bad++;
			continue;
		}
		char k[64];
		for (int i = 0; i < 2000; i++) {
			int n = snprintf(k, sizeof(k), "%s%d:%x", i % 3 ? "k" : "{t}", i, i * 2654435761u);
			unsigned slot = zr_key_slot(k, (size_t)n);
			uint64_t h = store_hash(k, (size_t)n);
			if (store_shard_of(s, k, (size_t)n) != slot >> (14 - bits) ||
			    store_shard_of_hash(s, h) != slot >> (14 - bits) ||
			    store_slot_shard(s, slot) != slot >> (14 - bits))
				bad++;
			if (store_slot_of_hash(h) != slot)
				badhash++;
		}
		store_destroy(s);
	}
	is_int(bad, 0, "shard = slot >> (14 - shard bits), for shard bits 0..14");
	is_int(badhash, 0, "store_hash carries the slot");
	ok(store_create(1, 15) == NULL, "shard bits 15 refused (a shard holds whole slots)");
	/* buckets keep the seeded hash: two keys of one slot differ below it */
	uint64_t a = store_hash("{x}1", 4), b = store_hash("{x}2", 4);
	ok(store_slot_of_hash(a) == store_slot_of_hash(b) && (a << 14) != (b << 14),
	   "same slot, different bucket bits");
}

/* --- per-slot key counts ------------------------------------------------------------- */

static uint64_t *recount;

static void count_one(const struct entry *e, void *ctx)
{
	size_t klen;
	const char *k = entry_key(e, &klen);
	recount[zr_key_slot(k, klen)]++;
	(void)ctx;
}

/* Whether store_slot_count of DB equals a recount over every stored key
 * (expired ones included: store_foreach's NOW of 0 hides none). */
static bool counts_agree(struct store *s, unsigned db, const char *when)
{
	memset(recount, 0, ZR_KEY_SLOTS * sizeof(*recount));
	store_foreach(s, db, 0, count_one, NULL);
	uint64_t total = 0;
	for (unsigned i = 0; i < ZR_KEY_SLOTS; i++) {
		total += store_slot_count(s, db, i);
		if (store_slot_count(s, db, i) != recount[i]) {
			diag("%s: db %u slot %u counts %llu, holds %llu", when, db, i,
			     (unsigned long long)store_slot_count(s, db, i), (unsigned long long)recount[i]);
			return false;
		}
	}
	if (total != store_dbsize(s, db)) {
		diag("%s: db %u slot counts sum to %llu, dbsize %llu", when, db, (unsigned long long)total,
		     (unsigned long long)store_dbsize(s, db));
		return false;
	}
	return true;
}

static uint64_t rnd_state = 88172645463325252ULL;
static unsigned rnd(unsigned n)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return (unsigned)(rnd_state % n);
}

/* A key of a small space, a third of them sharing hash tags, so that
 * renames and copies meet existing keys and slots hold several. */
static size_t rkey(char *k)
{
	unsigned i = rnd(3000);
	return (size_t)(i % 3 ? snprintf(k, 64, "key:%u", i) : snprintf(k, 64, "{tag%u}:%u", i % 17, i));
}

static void lock2(struct store *s, const char *a, size_t al, const char *b, size_t bl, unsigned *set, int *n)
{
	set[0] = store_shard_of(s, a, al);
	set[1] = store_shard_of(s, b, bl);
	*n = store_shards_normalize(set, 2);
	store_lock_set(s, set, *n);
}

static void workload_step(struct store *s, int64_t now)
{
	char k[64], k2[64];
	size_t kl = rkey(k), kl2 = rkey(k2);
	unsigned db = rnd(4) == 0 ? 1 : 0, db2 = rnd(2);
	unsigned set[2];
	int n;
	unsigned sh = store_shard_of(s, k, kl);
	switch (rnd(12)) {
	case 0:
	case 1:
	case 2: /* set, a third with a TTL that runs out soon */
		store_lock(s, sh);
		store_set_string_locked(s, db, k, kl, "v", 1, rnd(3) == 0 ? now + (int64_t)rnd(50) : -1, 0,
					NULL);
		store_unlock(s, sh);
		break;
	case 3: /* delete */
		store_lock(s, sh);
		store_delete_locked(s, db, k, kl, now);
		store_unlock(s, sh);
		break;
	case 4: /* lookup: lazily expires */
		store_lock(s, sh);
		store_find_locked(s, db, k, kl, now, 0);
		store_unlock(s, sh);
		break;
	case 5: /* RENAME / MOVE */
	case 6: {
		lock2(s, k, kl, k2, kl2, set, &n);
		struct entry *e = store_find_locked(s, db, k, kl, now, 0);
		bool move = rnd(3) == 0;
		if (e && !(move && db == db2))
			store_rename_locked(s, db, e, move ? db2 : db, move ? k : k2, move ? kl : kl2);
		store_unlock_set(s, set, n);
		break;
	}
	case 7: { /* COPY (maybe to another db) */
		lock2(s, k, kl, k2, kl2, set, &n);
		struct entry *e = store_find_locked(s, db, k, kl, now, 0);
		if (e)
			store_copy_locked(s, db, e, db2, k2, kl2);
		store_unlock_set(s, set, n);
		break;
	}
	case 8: /* set an expiry on an existing key */
		store_lock(s, sh);
		{
			struct entry *e = store_find_locked(s, db, k, kl, now, 0);
			if (e)
				store_set_expire_locked(s, db, &e, rnd(2) ? now + (int64_t)rnd(30) : -1);
		}
		store_unlock(s, sh);
		break;
	case 9:
		store_active_expire(s, 0, 1, now, 1000000);
		break;
	case 10:
		if (rnd(20) == 0)
			store_swapdb(s, 0, 1);
		break;
	case 11:
		if (rnd(1000) == 0)
			store_flushdb(s, db);
		else if (rnd(3000) == 0)
			store_flushall(s);
		else if (rnd(10) == 0)
			store_evict(s, zr_mem_used() - 500, STORE_EVICT_ALLKEYS_RANDOM, now);
		break;
	}
}

static void test_slot_counts(void)
{
	recount = zr_calloc(ZR_KEY_SLOTS, sizeof(*recount));
	int bad = 0;
	unsigned bits_list[] = { 0, 4, 10, 14 };
	for (unsigned bi = 0; bi < sizeof(bits_list) / sizeof(bits_list[0]); bi++) {
		unsigned bits = bits_list[bi];
		struct store *s = store_create(2, bits);
		char when[64];
		int64_t now = NOW;
		for (int step = 0; step < 40000; step++) {
			workload_step(s, now);
			if (step % 50 == 0)
				now++;
			if (step % 2000 == 1999) {
				snprintf(when, sizeof(when), "shard bits %u, step %d", bits, step);
				if (!counts_agree(s, 0, when) || !counts_agree(s, 1, when))
					bad++;
			}
		}
		ok(!bad && store_dbsize(s, 0) > 0,
		   "shard bits %u: every slot's count equals a recount, 20 times (%llu + %llu keys at the end)",
		   bits, (unsigned long long)store_dbsize(s, 0), (unsigned long long)store_dbsize(s, 1));
		store_flushall(s);
		snprintf(when, sizeof(when), "shard bits %u, flushall", bits);
		ok(counts_agree(s, 0, when) && store_slot_count(s, 0, 12739) == 0,
		   "shard bits %u: zero after FLUSHALL", bits);
		store_destroy(s);
	}
	zr_free(recount);
}

/* A slot's count is kept by the shard's own dict: memory given back with
 * the last key, so an emptied keyspace holds what an unused one does. */
static void fill_and_empty(struct store *s)
{
	char k[64];
	for (int i = 0; i < 5000; i++) {
		int n = snprintf(k, sizeof(k), "m:%d", i);
		unsigned sh = store_shard_of(s, k, (size_t)n);
		store_lock(s, sh);
		store_set_string_locked(s, (unsigned)i % 4, k, (size_t)n, "x", 1, -1, 0, NULL);
		store_unlock(s, sh);
	}
	for (int i = 0; i < 5000; i++) {
		int n = snprintf(k, sizeof(k), "m:%d", i);
		unsigned sh = store_shard_of(s, k, (size_t)n);
		store_lock(s, sh);
		store_delete_locked(s, (unsigned)i % 4, k, (size_t)n, NOW);
		store_unlock(s, sh);
	}
}

static void test_slot_count_memory(void)
{
	struct store *s = store_create(4, 10);
	fill_and_empty(s); /* the tables stay, at their smallest size */
	size_t base = zr_mem_used();
	fill_and_empty(s);
	is_int(zr_mem_used(), base, "deleting every key gives the slot counts' memory back");
	store_destroy(s);
}

int main(void)
{
	/* the program writes as one command would (store/write.h) */
	struct store_write unit_bracket;
	store_write_begin(&unit_bracket, STORE_WRITE_CLIENT, "a unit test", true, 0);
	zr_hash_init();
	test_vectors();
	test_shard_follows_slot();
	test_slot_counts();
	test_slot_count_memory();
	return done_testing();
}
