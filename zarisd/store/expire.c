/* expire — active expiry: the cycle that deletes expired keys nobody reads.
 *
 * Redis's adaptive sampling, per (db, shard): draw 20 random entries from
 * the dict's volatile array, delete the expired ones, and draw again while
 * more than a quarter of a draw was expired; a small array is simply walked
 * whole. Worker W of N owns the shards i with i % N == W, walks them from
 * where its previous call stopped (a per-worker cursor), and stops when its
 * time budget is spent. The cycle is also Redis's active rehashing: a shard
 * whose table is being resized is visited even without volatile keys, and
 * its tables get a batch of rehash steps, so that a table nobody touches
 * still finishes growing or shrinking (and frees the old one) instead of
 * keeping both, and lookups stop paying for two tables.
 *
 * Each expired key goes through store_expire_locked (ops.c), which hands
 * it to the deletion hook: the journal gets a DEL. In replica mode, and
 * after DEBUG SET-ACTIVE-EXPIRE 0, the cycle only rehashes.
 */
#include "zarisd/core/util.h"
#include "zarisd/store/store.h"
#include "zarisd/store/store_int.h"

#define EXPIRE_SAMPLE 20
#define EXPIRE_STALE_PERCENT 25
#define EXPIRE_REHASH_STEPS 64 /* buckets moved per visit: ~10 us under the lock */
#define EXPIRE_TIME_CHECK 16   /* shards between two clock reads */

/* Expires what it can in D (lock held); returns keys deleted. Each goes
 * through store_expire_locked: its event, its DEL for the journal, its
 * count in expired_keys. */
static unsigned expire_dict(struct store *s, struct shard *sh, unsigned db, struct dict *d, int64_t now_ms,
			    int64_t deadline_us)
{
	unsigned deleted = 0;
	if (d->nvol <= EXPIRE_SAMPLE) {
		/* Walk backwards: deleting swaps the last entry into slot i. */
		for (uint32_t i = d->nvol; i-- > 0;) {
			struct entry *e = d->vol[i];
			if (entry_ttl_raw(e) < now_ms) {
				size_t klen;
				const char *k = entry_key_raw(e, &klen);
				uint64_t h = store_key_hash(k, klen);
				store_expire_locked(s, sh, db, h, dict_link_of(d, h, e));
				deleted++;
			}
		}
		return deleted;
	}
	for (int loops = 0;; loops++) {
		unsigned expired = 0, sampled = 0;
		for (int i = 0; i < EXPIRE_SAMPLE && d->nvol; i++) {
			struct entry *e = d->vol[dict_rand(&sh->rnd) % d->nvol];
			sampled++;
			if (entry_ttl_raw(e) < now_ms) {
				size_t klen;
				const char *k = entry_key_raw(e, &klen);
				uint64_t h = store_key_hash(k, klen);
				store_expire_locked(s, sh, db, h, dict_link_of(d, h, e));
				expired++;
			}
		}
		deleted += expired;
		if (!sampled || expired * 100 <= sampled * EXPIRE_STALE_PERCENT)
			break;
		if ((loops & 15) == 15 && zr_mono_us() >= deadline_us)
			break;
	}
	return deleted;
}

void store_active_expire(struct store *s, unsigned worker, unsigned nworkers, int64_t now_ms,
			 int64_t budget_us)
{
	if (nworkers == 0)
		nworkers = 1;
	worker %= nworkers;
	if (worker >= s->nshards)
		return;
	/* Shards of this worker: worker, worker + N, worker + 2N, ... */
	unsigned share = (s->nshards - worker + nworkers - 1) / nworkers;
	/* a replica waits for its primary's DELs (Redis runs no expiry cycle
	 * on a replica), DEBUG SET-ACTIVE-EXPIRE 0 stops it: only rehashing */
	bool expire =
		!store_is_replica(s) && !atomic_load_explicit(&s->active_expire_off, memory_order_relaxed);
	struct expire_cursor *cur = &s->expire[worker % STORE_EXPIRE_SLOTS];
	unsigned pos = atomic_load_explicit(&cur->next, memory_order_relaxed) % share;
	int64_t deadline = zr_mono_us() + budget_us;
	/* the cycle's deletions are writes of their own (each journals its
	 * DEL through the deletion hook) */
	struct store_write w;
	store_write_begin(&w, STORE_WRITE_EXPIRY, "active expiry", true, now_ms);
	for (unsigned k = 0; k < share; k++, pos = (pos + 1) % share) {
		if (k && k % EXPIRE_TIME_CHECK == 0 && zr_mono_us() >= deadline)
			break;
		unsigned idx = worker + pos * nworkers;
		struct shard *sh = store_shard(s, idx);
		bool any = false;
		for (unsigned db = 0; db < s->ndb && !any; db++)
			any = (expire && dict_vkeys(&sh->db[db]) > 0) || dict_rehashing_unlocked(&sh->db[db]);
		/* a shard held for long (a busy script's) waits for the
		 * next cycle */
		if (!any || !shard_lock_briefly(sh))
			continue;
		for (unsigned db = 0; db < s->ndb; db++) {
			struct dict *d = &sh->db[db];
			if (expire && d->nvol)
				expire_dict(s, sh, db, d, now_ms, deadline);
			if (dict_is_rehashing(d))
				dict_rehash_step(d, EXPIRE_REHASH_STEPS);
		}
		zr_unlock(&sh->lock);
	}
	store_write_end(&w);
	atomic_store_explicit(&cur->next, pos, memory_order_relaxed);
}
