/* lock_order — every lock of zarisd and the one order they are taken in.
 * This comment is the only copy (zarisd/README.md points here);
 * tests/hygiene/lock_order.t fails when a lock declared in zarisd/ is not
 * named below, so a new lock is placed here when it is written.
 *
 * The rule (memcached's thread.c): a thread may take a lock while it
 * holds only locks of LOWER levels. Two locks of one level are never held
 * together, except the shard locks, which are taken in ascending index.
 * Waiting for another thread (pthread_join, a condition variable) counts
 * as taking every lock that thread takes before it ends or signals.
 *
 *  1  persist/persist.c   struct persist.sw        appendonly on/off; CONFIG SET (every
 *                                                  one), a replica's full sync from
 *                                                  persist_replace_begin to _end
 *  2  persist/persist.c   struct persist.bg_mu     the background save's thread: bg_wait
 *                                                  joins a running save holding it
 *  3  persist/persist.c   struct persist.ctl       one save at a time (do_save, a full
 *                                                  sync to a replica, a replica's load);
 *                                                  aof_drop_before waits on the log
 *                                                  writer's cut holding it
 *  4  persist/persist.c   struct persist.gate      rwlock. Write: a snapshot, from before
 *                                                  its shard locks to its instant. Read:
 *                                                  a whole-keyspace command not holding
 *                                                  every shard lock (propagate.c), a
 *                                                  replica's parallel batch (replica.c
 *                                                  run_batch, which waits for the apply
 *                                                  pool's threads and their shard locks)
 *  5  store/store_int.h   struct shard.lock        zr_lock (core/lock.h), one per shard
 *                                                  index; ascending, or all of them
 *                                                  (store_lock_all: EXEC of a
 *                                                  whole-keyspace command, a snapshot's
 *                                                  instant, the replay of such a record).
 *                                                  Every command's keys; what a command
 *                                                  reaches under them takes the levels
 *                                                  below: its record (stream), keyspace
 *                                                  notifications and PUBLISH (pubsub),
 *                                                  blocking, CLIENT and INFO in EXEC,
 *                                                  scripts, a snapshot's instant
 *                                                  (persist fin_mu, aof, stream, the
 *                                                  function registry)
 *  6  server/registry.c   struct registry_worker.lock  one per worker: CLIENT LIST /
 *                                                  KILL and INFO's visits, one worker at
 *                                                  a time
 *  7  commands/pubsub.c   struct pubsub.lock       rwlock; under a registry visit
 *                                                  (CLIENT KILL marks a subscriber,
 *                                                  CLIENT LIST counts subscriptions)
 *  8  commands/blocking.c struct bw_worker.lock    one per worker: its blocked clients'
 *                                                  list (CLIENT UNBLOCK posts under it)
 *     repl/repl_int.h     struct repl.mu           peers, WAITs, ids: takes the stream
 *                                                  and posts mail under it
 *     persist/aof.c       struct aof.mu            the log writer's state: takes the
 *                                                  stream under it
 *     cluster/cluster.c   struct cluster.push_lock pushes; also held for a whole read
 *                                                  section by a thread that is not its
 *                                                  reader number's worker, which may
 *                                                  count error replies
 *  9  net/msgq.c          struct inbox.lock        a worker's mail queue; let go before
 *                                                  the wake-up
 *     server/server.h     struct server.wake_lock  rwlock: read around a wake-up,
 *                                                  write (net.c) to install or remove
 *                                                  the wake function
 *     journal/stream.c    struct stream.mu         the change stream; an appender may
 *                                                  wait on its `room` holding its shard
 *                                                  locks: the consumers that make room
 *                                                  hold none
 *     server/info.c       registry_lock            the error codes' registry; takes a
 *                                                  table's lock under it
 * 10  leaves: nothing but the allocator and the log is taken under them
 *     server/info.c       struct info_errtable.lock  a worker's error counts (and
 *                                                  `replayed`'s)
 *     server/info.c       base_lock                RESETSTAT's baselines
 *     server/slowlog.c    struct slowlog.lock
 *     server/latency.c    latency_lock
 *     server/settings.h   struct settings.lock     the string settings
 *     persist/persist.c   struct persist.fin_mu    a busy shutdown's final save (taken
 *                                                  at its instant, every shard lock held)
 *     repl/apply_pool.c   struct apply_pool.mu     its threads' start and end
 *     script/script.c     kill_mu                  running scripts (SCRIPT KILL, busy)
 *     script/script.c     engines.mu               every thread's Lua states (INFO)
 *     script/registry.c   reg.mu                   script bodies by SHA1
 *     script/function.c   freg.mu                  function libraries
 *     commands/blocking.c g_init_lock              first use of blocking's state
 *     commands/pubsub.c   g_ps_init                first use of pub/sub's state
 *
 * Taken out of order today, each a deadlock in a narrow window (open
 * issues, not checked at run time):
 *   - CONFIG SET queued in MULTI: EXEC holds its shard locks (5) and
 *     persist_settings_changed takes sw (1); a replica whose full sync
 *     holds sw and waits in its load for one of those shards never gets
 *     it.
 *   - BGSAVE / BGREWRITEAOF queued in MULTI: persist_bgsave takes bg_mu (2)
 *     under EXEC's shard locks; bg_wait (a replica's full sync, shutdown)
 *     holds bg_mu while it joins a save that waits for every shard lock.
 *   - REPLICAOF queued in MULTI: repl_replicaof joins the old link's thread
 *     under EXEC's shard locks, and that thread may be waiting for one of
 *     them (applying a record, or load_synced's store_lock_all).
 *
 * Checked in the sanitizer builds (core/thread.h, core/lock.h): a shard
 * lock taken twice by one thread, or released by a thread that does not
 * hold it; every *_locked store function and every version stamp against
 * its shard's lock (store_int.h STORE_ASSERT_HELD); "holds no shard lock"
 * where a lower level is taken (persist_gate_enter, do_save) or where
 * locks are taken out of index order (blocking's waiter_finish, eviction
 * and expiry's shard_lock_briefly); the static *_locked helpers of the
 * pthread-locked modules against their mutex; and the owning worker of
 * per-worker state (net/worker.c, msgq_drain, the registry's index,
 * blocking's lists and heaps).
 */
#ifndef ZR_LOCK_ORDER_H
#define ZR_LOCK_ORDER_H
#endif
