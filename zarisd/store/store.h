/* store — the keyspace: databases × shards of entries, with expiry and
 * eviction. Knows no clients and no RESP.
 *
 * Layout: S shards (a power of two, at most 16384); shard i of every
 * database is guarded by one lock, store lock i. A key's shard comes from
 * its Redis Cluster slot (CRC16 of the key or its {hash tag}, mod 16384):
 * shard = slot >> (14 - shard bits), so a slot's keys share a shard in
 * every mode, and a key keeps its shard index in every database (MOVE,
 * COPY DB, SWAPDB need no extra locks). Each (db, shard) holds a chained
 * hash table with incremental rehash (buckets from a seeded hash), a dense
 * array of its volatile entries (for active expiry and the volatile-*
 * eviction policies), a key count, a key count per slot and a memory
 * counter.
 *
 * Lock order: shard locks are taken in ascending shard index; what else may
 * be taken while one is held, and what must be taken before, is in
 * core/lock_order.h. Functions named *_locked need the caller to hold the
 * lock of every shard they touch (checked in the sanitizer builds:
 * core/thread.h); the others take and release the locks themselves, one
 * shard at a time.
 *
 * Entries: one allocation holds the header, the key and (for strings) the
 * value; an absolute TTL is stored only when set. Every write stamps the
 * entry with a new 64-bit version from its shard's clock (a replication
 * clock: monotonic per key, roughly wall-clock ordered across shards).
 * Entry pointers are valid only while the shard lock is held.
 */
#ifndef ZR_STORE_H
#define ZR_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct store;
struct entry;

enum store_type {
	STORE_TYPE_STRING = 0,
	STORE_TYPE_LIST,
	STORE_TYPE_SET,
	STORE_TYPE_ZSET,
	STORE_TYPE_HASH,
	STORE_TYPE_COUNT,
};

/* Redis's maxmemory-policy values. */
enum store_evict_policy {
	STORE_EVICT_NOEVICTION,
	STORE_EVICT_ALLKEYS_LRU,
	STORE_EVICT_ALLKEYS_LFU,
	STORE_EVICT_ALLKEYS_RANDOM,
	STORE_EVICT_VOLATILE_LRU,
	STORE_EVICT_VOLATILE_LFU,
	STORE_EVICT_VOLATILE_RANDOM,
	STORE_EVICT_VOLATILE_TTL,
};

/* Receives one command of a rewrite (see store_type_ops.rewrite): ARGC
 * arguments ARGV[i] of LENS[i] bytes, borrowed for the call. Returns 0 to
 * go on, non-zero to stop the rewrite. */
typedef int (*store_emit_fn)(int argc, const char *const *argv, const size_t *lens, void *ctx);

/* How a non-string value is freed, copied, measured and rebuilt. Each type
 * module (store/<type>.c) defines one, listed in store/types.c, and
 * store_create() registers them all. */
struct store_type_ops {
	void (*free)(void *obj);
	void *(*dup)(const void *obj);		  /* deep copy, for COPY */
	size_t (*memory)(const void *obj);	  /* bytes held, for MEMORY USAGE */
	const char *(*encoding)(const void *obj); /* OBJECT ENCODING */
	/* Emits the commands that rebuild OBJ under KEY from nothing (RPUSH,
	 * SADD, ZADD, HSET ... in batches of at most 64 elements), for the
	 * append-only log's rewrite and for snapshots. No TTL (the caller
	 * adds it). Returns 0 or EMIT's first non-zero result. */
	int (*rewrite)(const void *obj, const char *key, size_t klen, store_emit_fn emit, void *ctx);
};

/* Counters, read with relaxed loads; for INFO. */
struct store_stats {
	uint64_t expired_keys;
	uint64_t evicted_keys;
	uint64_t keyspace_hits;
	uint64_t keyspace_misses;
};

/* --- lifetime -------------------------------------------------------------- */

/* Creates an empty keyspace of DATABASES databases and 2^SHARD_BITS shards
 * (SHARD_BITS 0..14). Returns NULL on bad arguments. The caller owns the
 * result. */
struct store *store_create(unsigned databases, unsigned shard_bits);
/* Frees every entry and the store. No lock may be held, no thread may use it. */
void store_destroy(struct store *s);
/* Registers the ops of a non-string type. Before any thread starts. */
void store_register_type(struct store *s, enum store_type t, const struct store_type_ops *ops);

unsigned store_databases(const struct store *s);
unsigned store_shard_count(const struct store *s);
/* The shard index of KEY (same in every database): its slot's shard. */
unsigned store_shard_of(const struct store *s, const char *key, size_t klen);
/* The key hash every store function uses: the key's cluster slot in its
 * top 14 bits, a seeded hash below. A caller that keeps it (the
 * dispatcher computes it once per key to pick the shard) passes it to the
 * *_h variants below, so a command hashes each key once. */
uint64_t store_hash(const char *key, size_t klen);
unsigned store_shard_of_hash(const struct store *s, uint64_t hash);
/* The cluster slot (0..16383) of the key whose store_hash() is HASH. */
unsigned store_slot_of_hash(uint64_t hash);
/* The shard that holds slot SLOT's keys. */
unsigned store_slot_shard(const struct store *s, unsigned slot);
/* Keys of DB in slot SLOT (CLUSTER COUNTKEYSINSLOT), kept exact by every
 * insertion and deletion (counted with the shard's key count); like
 * store_dbsize() it includes keys whose TTL has passed and that nothing
 * has deleted yet. Takes the slot's shard lock: call holding none (or all,
 * store_lock_all). The _locked variant: the caller holds that lock. */
uint64_t store_slot_count(struct store *s, unsigned db, unsigned slot);
uint64_t store_slot_count_locked(const struct store *s, unsigned db, unsigned slot);
/* Prefetching for a caller that will look a key up a little later (a
 * pipelined request parsed ahead), in four steps, each loading the line
 * the previous one requested: a caller takes each step for a whole group
 * of keys before the next, so that the misses overlap. None changes
 * anything; any thread.
 * store_prefetch: false (nothing hashed) when DB holds no key; else true
 *   with *HASH = store_hash(KEY), and the key's shard and dict requested.
 * store_prefetch_bucket: requests the key's bucket. Reads where the table
 *   is without the lock (racy, maybe a table being replaced): the address
 *   is only prefetched, never loaded from.
 * store_prefetch_entry: requests the first entry of the key's bucket. Reads
 *   the bucket, so only when the shard lock is free at once (trylock):
 *   never waits.
 * store_prefetch_next: requests the second entry of the bucket when the
 *   first does not hold KEY (a third of lookups at the tables' load). Reads
 *   the first entry; trylock as above. */
bool store_prefetch(struct store *s, unsigned db, const char *key, size_t klen, uint64_t *hash);
void store_prefetch_bucket(struct store *s, unsigned db, uint64_t hash);
void store_prefetch_entry(struct store *s, unsigned db, uint64_t hash);
void store_prefetch_next(struct store *s, unsigned db, uint64_t hash, const char *key, size_t klen);

/* --- locking --------------------------------------------------------------- */

void store_lock(struct store *s, unsigned shard);
void store_unlock(struct store *s, unsigned shard);
/* Takes every shard lock (ascending) for a caller that runs
 * whole-keyspace commands atomically with others (EXEC); until
 * store_unlock_all() the whole-keyspace functions and store_lock() on this
 * thread then do not lock again. Returns true (kept a bool so a build
 * could refuse). TSan: run with detect_deadlocks=0 (1024 held locks). */
bool store_lock_all(struct store *s);
void store_unlock_all(struct store *s);
/* Whether this thread holds every shard lock (store_lock_all). */
bool store_thread_all_locked(void);
/* Whether this thread holds shard SHARD's lock (or all of them): for
 * ZR_CHECK (core/thread.h) only, and defined only in the builds that
 * record lock owners (ZR_OWNER_CHECKS: the sanitizer builds). */
bool store_shard_held(const struct store *s, unsigned shard);
/* Sorts SHARDS ascending and removes duplicates; returns the new count. */
int store_shards_normalize(unsigned *shards, int n);
/* Locks / unlocks a normalized shard set (ascending order). */
void store_lock_set(struct store *s, const unsigned *shards, int n);
void store_unlock_set(struct store *s, const unsigned *shards, int n);
/* store_lock / store_lock_set / store_lock_all for a waiter that may give
 * up (core/lock.h's zr_lock_unless): while a lock another thread holds
 * is waited for, GIVE_UP(ARG) is asked about every millisecond; when it
 * says true, the locks this call took are released and it returns false.
 * The dispatcher's, so that a worker does not wait out a busy script. */
typedef bool (*store_give_up_fn)(void *arg);
bool store_lock_unless(struct store *s, unsigned shard, store_give_up_fn give_up, void *arg);
bool store_lock_set_unless(struct store *s, const unsigned *shards, int n, store_give_up_fn give_up,
			   void *arg);
bool store_lock_all_unless(struct store *s, store_give_up_fn give_up, void *arg);
/* This thread's wait hook: while the thread waits for a shard lock that
 * another thread holds — in store_lock, store_lock_set, store_lock_all and
 * in every store function that locks shards itself — FN(ARG) is called
 * before the first sleep and then about every millisecond. It answers
 * whether a waiter that can give up should: the whole-keyspace walks (read
 * only: store_scan, store_foreach, store_foreach_slot, store_random_key,
 * store_meta_scan) then stop and return -EBUSY; every other wait goes on.
 * FN NULL: none (the default). Returns the hook it replaces, for the
 * caller to put back. The dispatcher's: a worker whose request waits for a
 * shard a busy script holds serves its other clients meanwhile, as the
 * script's own worker does, and a walk answers -BUSY, as Redis would. */
typedef bool (*store_wait_fn)(void *arg);
struct store_wait_hook {
	store_wait_fn fn;
	void *arg;
};
struct store_wait_hook store_set_wait_hook(store_wait_fn fn, void *arg);

/* --- entries (pointers valid only under the entry's shard lock) ------------- */

enum store_type entry_type(const struct entry *e);
const char *entry_key(const struct entry *e, size_t *klen);
/* The value bytes of a string entry. */
const char *entry_str(const struct entry *e, size_t *vlen);
/* The structure of a non-string entry. */
void *entry_obj(const struct entry *e);
/* Absolute expiry in unix ms, or -1 when the entry has none. */
int64_t entry_expire(const struct entry *e);
uint64_t entry_version(const struct entry *e);
/* Seconds since last access (OBJECT IDLETIME). */
uint64_t entry_idle_seconds(const struct store *s, const struct entry *e);
/* LFU counter after decay (OBJECT FREQ). */
unsigned entry_lfu(const struct store *s, const struct entry *e);
/* OBJECT ENCODING name: "int", "embstr", "raw" for strings, else the type's. */
const char *entry_encoding(const struct store *s, const struct entry *e);
/* Bytes the entry holds, like MEMORY USAGE (header, key, value, TTL). */
size_t entry_memory(const struct store *s, const struct entry *e);
/* Whether E is a string holding a canonical integer in 0..9999: the values
 * Redis takes from its shared integers (when maxmemory is 0 or the policy
 * is not LRU/LFU), for which OBJECT REFCOUNT says INT_MAX. */
bool entry_is_small_int(const struct entry *e);

/* --- metadata (labels, entity, content-type; store/meta.h) ------------------ */

/* A key's metadata as the caller gives or reads it: NLABELS labels
 * LABELS[i] of LABEL_LENS[i] bytes, an entity and a content-type (NULL:
 * none). Borrowed: the store copies what it keeps. */
struct store_meta_fields {
	unsigned nlabels;
	const char *const *labels;
	const size_t *label_lens;
	const char *entity;
	size_t entity_len;
	const char *ctype;
	size_t ctype_len;
};

/* Whether E carries metadata (the header bit: an entry without any has
 * no byte of it). */
bool entry_has_meta(const struct entry *e);
/* E's labels (0 when none), the I-th of them, its entity and content-type
 * (NULL: none); borrowed while the shard lock is held and E unchanged. */
unsigned entry_meta_nlabels(const struct entry *e);
const char *entry_meta_label(const struct entry *e, unsigned i, size_t *len);
const char *entry_meta_entity(const struct entry *e, size_t *len);
const char *entry_meta_ctype(const struct entry *e, size_t *len);
/* Fills F with E's metadata (nothing when it has none), the labels into
 * LABELS / LENS, which hold entry_meta_nlabels(E) each; borrowed as for
 * entry_meta_label. */
void entry_meta_fields(const struct entry *e, struct store_meta_fields *f, const char **labels, size_t *lens);
/* Whether E carries label L. */
bool entry_meta_has_label(const struct entry *e, const char *l, size_t llen);

/* Replaces the metadata of *E (in DB) with F (NULL, or F holding nothing:
 * removes it, so the entry is back to no extra byte). Indexes follow;
 * stamps a new version; *E may move. Returns 0 or -ENOMEM (nothing
 * changed). Caller holds the key's shard lock. */
int store_meta_set_locked(struct store *s, unsigned db, struct entry **e, const struct store_meta_fields *f);

/* (store_visit_fn as below) */
typedef void (*store_visit_fn)(const struct entry *e, void *ctx);
enum store_meta_kind {
	STORE_META_LABEL,
	STORE_META_ENTITY,
};
/* One step of a scan of DB's keys carrying label (or entity) NAME, from
 * *CURSOR: visits (FN) the live keys of at least one bucket of one shard's
 * index and sets *CURSOR to the next cursor (0: done). Returns 0, or
 * -EBUSY when the thread's wait hook gave up a wait (*CURSOR unchanged). A key carrying NAME for the
 * whole scan is visited at least once (store_scan's cursor, over the
 * index's key tables). Takes each shard lock itself: call holding none.
 * Cost: O(keys carrying NAME) over the whole scan, plus one look at each
 * shard. */
int store_meta_scan(struct store *s, unsigned db, enum store_meta_kind kind, const char *name, size_t nlen,
		    uint64_t *cursor, int64_t now_ms, store_visit_fn fn, void *ctx);
/* Called for each key an invalidation deleted, before the next one is
 * (KEY borrowed; the entry is gone). */
typedef void (*store_key_fn)(unsigned db, const char *key, size_t klen, void *ctx);
/* Deletes every key of DB in shard SHARD carrying LABEL (and, when ENTITY
 * is not NULL, that entity), calling FN for each live one; keys past
 * their TTL are expired as a lookup would (store_delete_locked). Returns
 * the live keys deleted. Caller holds SHARD's lock. O(keys carrying
 * LABEL in the shard). */
uint64_t store_meta_invalidate_locked(struct store *s, unsigned db, unsigned shard, const char *label,
				      size_t llen, const char *entity, size_t elen, int64_t now_ms,
				      store_key_fn fn, void *ctx);

/* --- single-key operations: caller holds the key's shard lock --------------- */

#define STORE_LOOKUP_NOTOUCH 0x1 /* do not update LRU/LFU (TYPE, TTL, OBJECT, SCAN) */
#define STORE_LOOKUP_NOSTATS 0x2 /* do not count a keyspace hit or miss */
/* an entry past its TTL is left in place (and NULL returned), as in
 * replica mode: for a caller that only looks (the journal reading the
 * versions a command left), whose lookup must not expire a key the
 * command did not meet expired (Redis's LOOKUP_NOEXPIRE) */
#define STORE_LOOKUP_NOEXPIRE 0x4

/* Finds KEY in DB; an entry whose TTL is past NOW_MS is deleted (counted as
 * expired, reported to the deletion hook) and NULL returned; in replica
 * mode or with STORE_LOOKUP_NOEXPIRE it is left in place and NULL returned. */
struct entry *store_find_locked(struct store *s, unsigned db, const char *key, size_t klen, int64_t now_ms,
				int flags);
/* Same with KEY's store_hash() already computed. */
struct entry *store_find_h_locked(struct store *s, unsigned db, const char *key, size_t klen, uint64_t hash,
				  int64_t now_ms, int flags);

#define STORE_SET_KEEPTTL 0x1 /* keep an existing entry's TTL (ignores EXPIRE_MS) */
#define STORE_SET_RAW 0x2     /* a string Redis builds raw (BITOP, a new HLL): OBJECT ENCODING "raw" */

/* Creates or replaces KEY with a string value. EXPIRE_MS is absolute unix ms
 * or -1. Returns 0 and, if OUT, the new entry; -ENOMEM when the allocation
 * failed (nothing changed). Replacing frees the old value whatever its type. */
int store_set_string_locked(struct store *s, unsigned db, const char *key, size_t klen, const char *val,
			    size_t vlen, int64_t expire_ms, int flags, struct entry **out);
/* Same with KEY's store_hash() already computed. Overwriting a string whose
 * block fits the new value rewrites it in place (no allocation); *OUT may
 * then be the old pointer. Note: KEEPTTL keeps whatever TTL the entry has,
 * so look the key up first (store_find_locked deletes it if expired). */
int store_set_string_h_locked(struct store *s, unsigned db, const char *key, size_t klen, uint64_t hash,
			      const char *val, size_t vlen, int64_t expire_ms, int flags, struct entry **out);
/* Same for a non-string TYPE; on success the store owns OBJ. */
int store_set_object_locked(struct store *s, unsigned db, const char *key, size_t klen, enum store_type type,
			    void *obj, int64_t expire_ms, int flags, struct entry **out);
/* Resizes a string entry's value to NEWLEN bytes, keeping the first
 * min(old, NEWLEN) bytes (new bytes are zero). *E is updated (the entry may
 * move). Returns the writable value, or NULL on allocation failure (the
 * entry is then unchanged). Stamps a new version. The value counts as
 * edited in place: OBJECT ENCODING says "raw" from now on, as in Redis
 * (APPEND, SETRANGE, SETBIT, PFADD ...), until a whole new value is set. */
char *store_string_resize_locked(struct store *s, unsigned db, struct entry **e, size_t newlen);
/* Same, for a caller about to write a whole new value (INCR, SET on an
 * existing key): the encoding is then judged from the value again. */
char *store_string_overwrite_locked(struct store *s, unsigned db, struct entry **e, size_t newlen);
/* Records an in-place modification of E's value (new version). The store
 * accounts entry blocks and tables only; a non-string object's own memory
 * is in zr_mem_used() and read through the type's ops for MEMORY USAGE. */
void store_modified_locked(struct store *s, unsigned db, struct entry *e);
/* Deletes KEY; true if it existed (and had not expired: an expired one is
 * deleted as an expiry and reported false; in replica mode, true). */
bool store_delete_locked(struct store *s, unsigned db, const char *key, size_t klen, int64_t now_ms);
bool store_delete_h_locked(struct store *s, unsigned db, const char *key, size_t klen, uint64_t hash,
			   int64_t now_ms);
/* Deletes a found entry. */
void store_delete_entry_locked(struct store *s, unsigned db, struct entry *e);
/* Sets E's absolute expiry (unix ms), or removes it with -1. *E may move. */
int store_set_expire_locked(struct store *s, unsigned db, struct entry **e, int64_t at_ms);
/* Moves entry E of SRC_DB under key NEWKEY in DST_DB, replacing what was
 * there (RENAME, MOVE). Both keys' shard locks held. Keeps value and TTL,
 * stamps a new version. Returns 0 or -ENOMEM (nothing changed). */
int store_rename_locked(struct store *s, unsigned src_db, struct entry *e, unsigned dst_db,
			const char *newkey, size_t newklen);
/* Copies E to NEWKEY in DST_DB (COPY), replacing what was there; deep copy
 * of the value through the type's dup; keeps the TTL. Returns 0, -ENOMEM,
 * or -EINVAL when NEWKEY in DST_DB is E itself. */
int store_copy_locked(struct store *s, unsigned src_db, const struct entry *e, unsigned dst_db,
		      const char *newkey, size_t newklen);

/* --- whole-keyspace operations (lock shards themselves, one at a time) ------ */

/* Keys stored in DB — like Redis's DBSIZE this includes keys whose TTL has
 * passed but that no access or expiry cycle has deleted yet. Lock-free. */
uint64_t store_dbsize(struct store *s, unsigned db);
/* Keys with a TTL in DB. Lock-free. */
uint64_t store_expires_count(struct store *s, unsigned db);
/* Bytes of DB's entry blocks, tables and volatile arrays (non-string
 * objects' own memory not included). Lock-free. */
uint64_t store_db_bytes(struct store *s, unsigned db);

/* Bytes of DB's bucket arrays and of its volatile arrays (MEMORY STATS's
 * overhead.hashtable.main / .expires). Locks each non-empty shard briefly. */
void store_db_overhead(struct store *s, unsigned db, uint64_t *main_bytes, uint64_t *expires_bytes);

/* store_visit_fn (declared above): called for each live entry; the shard
 * lock is held during the call. */
/* The walks below return -EBUSY when this thread's wait hook
 * (store_set_wait_hook) gave up a wait for a shard lock: they stop there,
 * and what FN was given before stays given. */
/* One SCAN step over DB from *CURSOR: visits the entries of at least one
 * bucket and sets *CURSOR to the next cursor (0 = done); 0 or -EBUSY
 * (*CURSOR unchanged). Every key present for the whole scan is visited at
 * least once, across resizes (Redis's reverse-binary cursor per shard,
 * shard index in the low bits). */
int store_scan(struct store *s, unsigned db, uint64_t *cursor, int64_t now_ms, store_visit_fn fn, void *ctx);
/* Visits every live entry of DB exactly once, one shard (lock) at a time
 * (KEYS); 0 or -EBUSY. FN must not call the store. */
int store_foreach(struct store *s, unsigned db, int64_t now_ms, store_visit_fn fn, void *ctx);
/* Visits every live entry of DB in cluster slot SLOT (CLUSTER
 * GETKEYSINSLOT) under its shard's lock, walking that shard; 0 or -EBUSY.
 * FN must not call the store. */
int store_foreach_slot(struct store *s, unsigned db, unsigned slot, int64_t now_ms, store_visit_fn fn,
		       void *ctx);
/* Deletes every key of DB (or of every database with store_flushall). */
void store_flushdb(struct store *s, unsigned db);
void store_flushall(struct store *s);
/* Exchanges two databases' contents (takes every shard lock, in order);
 * one change of the open write bracket (write.h), as Redis counts it. */
void store_swapdb(struct store *s, unsigned a, unsigned b);
/* Calls FN on one random live key of DB: 1; 0 when the db is empty (FN
 * not called); -EBUSY. */
int store_random_key(struct store *s, unsigned db, int64_t now_ms, store_visit_fn fn, void *ctx);

/* --- events (keyspace notifications) ----------------------------------------- */

/* What happened to a key, as Redis names it in keyspace notifications:
 * "new" (dbAdd: a key was created), "expired", "evicted". */
enum store_event {
	STORE_EVENT_NEW,
	STORE_EVENT_EXPIRED,
	STORE_EVENT_EVICTED,
};
/* Called with the key's shard lock held, before an expired or evicted
 * entry is freed and after a new one is linked (KEY borrowed for the
 * call). It must not take shard locks or call the store. */
typedef void (*store_event_fn)(void *ctx, enum store_event ev, unsigned db, const char *key, size_t klen);
/* Installs FN (NULL removes it); any thread, takes effect for later events.
 * One hook per store (the commands layer's keyspace notifications). */
void store_set_event_hook(struct store *s, store_event_fn fn, void *ctx);
/* A second hook, for the journal only (persist/ installs it): called for
 * every deletion no command made — each evicted key (STORE_EVENT_EVICTED)
 * and each expired one (STORE_EVENT_EXPIRED: deleted by the active cycle,
 * or lazily by a lookup, a delete or RANDOMKEY that found it past its
 * TTL) — under the same rules as the event hook (shard lock held, before
 * the entry is freed, KEY borrowed; it must not take shard locks or call
 * the store). The journal writes a DEL for it, so a replay or a replica
 * deletes the same key in the same order: a lazy expiry is reported
 * inside the command that met the key, before that command's own record.
 * Any thread; NULL removes it. */
void store_set_delete_hook(struct store *s, store_event_fn fn, void *ctx);

/* --- replica mode -------------------------------------------------------------- */

/* Replica mode (Redis's rule for replicas: expiry is the primary's, which
 * sends a DEL for each key it expires). While on: a lookup treats a key
 * past its TTL as absent without deleting it (reads answer nil, EXISTS 0,
 * TYPE none; store_scan and store_foreach skip it, as always; RANDOMKEY
 * skips it), but store_dbsize still counts it, as a Redis replica's
 * DBSIZE does; a delete removes it as a live key (the primary's DEL: true,
 * not counted as expired); the active expiry cycle only rehashes; and
 * store_evict evicts nothing (Redis's replica-ignore-maxmemory). So the
 * deletion hook is never called. A write on such a key replaces it as on
 * a key that is not there (Redis's writable replica deletes it first and
 * counts an expiry; a replica that refuses client writes, as the next
 * issue's will, never meets the difference). Records applied from the primary carry the
 * primary's clock, so their lookups see each key as the primary did.
 * Off (the default) is a primary. Any thread; takes effect for later
 * lookups. */
void store_set_replica_mode(struct store *s, bool on);
bool store_replica_mode(const struct store *s);
/* DEBUG SET-ACTIVE-EXPIRE: ON false stops the active expiry cycle (it
 * still rehashes); lookups still expire. Default on. Any thread. */
void store_set_active_expire(struct store *s, bool on);

/* --- expiry, eviction, accounting ------------------------------------------ */

/* Active expiry: worker WORKER of NWORKERS samples the volatile entries of its
 * share of the shards and deletes expired ones, for at most BUDGET_US; the
 * tables of its shards that are being resized get rehash steps (Redis's
 * active rehashing). */
void store_active_expire(struct store *s, unsigned worker, unsigned nworkers, int64_t now_ms,
			 int64_t budget_us);
/* Bytes held for others than the keyspace that eviction cannot free: the
 * change stream's ring (records the log and replicas have not taken).
 * persist/ installs it; any thread; NULL removes it. */
typedef uint64_t (*store_overhead_fn)(void *ctx);
void store_set_overhead_hook(struct store *s, store_overhead_fn fn, void *ctx);
/* Memory left out of maxmemory's figure (INFO mem_not_counted_for_evict),
 * as Redis leaves out its replicas' and the log's buffers: a running
 * snapshot's pre-images (an evicted key the snapshot needs is kept as
 * its pre-image: evicting it frees nothing) and the overhead hook's bytes. */
uint64_t store_mem_not_counted(const struct store *s);
/* The running snapshot's writer holds BYTES of the image it has not
 * handed to its sink yet (0 when it ends): left out of maxmemory's figure
 * as its pre-images are (Redis's fork child's memory is not the
 * server's). The snapshot's writer thread. */
void store_snap_buffered(struct store *s, size_t bytes);
/* zr_mem_used() less store_mem_not_counted(): what maxmemory bounds. */
size_t store_mem_for_eviction(const struct store *s);

/* Evicts keys by POLICY until store_mem_for_eviction() <= MAXMEMORY. Returns 0 when
 * under the limit (or in replica mode, which evicts nothing), -ENOMEM
 * when nothing more can be evicted (noeviction, or no candidate keys).
 * Takes shard locks itself: call holding none. */
int store_evict(struct store *s, size_t maxmemory, enum store_evict_policy policy, int64_t now_ms);
/* Parses/names maxmemory-policy values; -EINVAL for an unknown name. */
int store_evict_policy_parse(const char *name);
const char *store_evict_policy_name(enum store_evict_policy p);
bool store_policy_is_lfu(enum store_evict_policy p);
/* Advances the LRU/LFU clock (and the wall part of versions); called from a
 * timer, any thread. */
void store_tick(struct store *s, int64_t now_ms);
/* Sets lfu-log-factor and lfu-decay-time. */
void store_set_lfu_params(struct store *s, int log_factor, int decay_time);
/* Mirrors maxmemory-policy: decides whether an access updates the LRU
 * clock or the LFU counter (also updated by store_evict from its argument).
 * Call at start-up and on CONFIG SET maxmemory-policy. */
void store_set_evict_policy(struct store *s, enum store_evict_policy policy);
/* Mirrors maxmemory-samples (clamped to 1..64). Default 5. */
void store_set_maxmemory_samples(struct store *s, int samples);
/* Drops the calling thread's eviction pool (tests; before a thread exits). */
void store_evict_pool_clear(void);
void store_stats(const struct store *s, struct store_stats *out);
void store_reset_stats(struct store *s);

/* --- persistence support (persist/) ----------------------------------------- */

/* The ops registered for non-string type T, or NULL. */
const struct store_type_ops *store_type_ops_of(const struct store *s, enum store_type t);
/* Loading: sets E's version to VERSION (the one saved) and raises its
 * shard's clock to at least VERSION, so later writes stay monotonic. */
void store_entry_set_version_locked(struct store *s, struct entry *e, uint64_t version);
/* Point-in-time snapshot without fork. store_snap_begin() takes every
 * shard lock (ascending), calls AT_INSTANT(CTX) — the snapshot's instant:
 * no keyed command runs — marks every shard pending and records each
 * shard's clock, then unlocks. From then on, the first change to an entry
 * of a pending shard that existed at the instant keeps a pre-image of it
 * (a copy; a deleted entry is kept itself), once per key: per-entry
 * copy-before-write, so the extra memory is the entries changed during
 * the save, not the keyspace. store_snap_dump() serializes one shard as
 * it was at the instant (pre-images, then live entries not changed since)
 * under its lock, frees its pre-images and clears its mark. Returns
 * -EBUSY when a snapshot already runs. One snapshot at a time. */
int store_snap_begin(struct store *s, void (*at_instant)(void *ctx), void *ctx);
/* Called with the shard lock held for each entry of the image; DB is its
 * database. E is valid only during the call. */
typedef void (*store_snap_fn)(unsigned db, const struct entry *e, void *ctx);
void store_snap_dump(struct store *s, unsigned shard, store_snap_fn fn, void *ctx);
/* Ends the snapshot (dumps nothing: call after every shard was dumped, or
 * to abandon it — pending pre-images are freed). */
void store_snap_end(struct store *s);
struct store_snap_stats {
	uint64_t bytes;	  /* held by pre-images now */
	uint64_t peak;	  /* most held during the current or last snapshot */
	uint64_t entries; /* pre-images taken during the current or last snapshot */
};
void store_snap_stats(struct store *s, struct store_snap_stats *out);

#endif
