#!/usr/bin/python3
# repl_parallel_apply.t — a 2-thread replica applies its primary's records
# by shard in parallel batches (zarisd/repl/apply_pool.h), and every copy
# made of its data while batches run is exact: its snapshots and log, and
# the full syncs it serves to a replica of its own.
#
# Counters make a record applied twice or lost visible: four clients on
# the primary (2 threads) send pipelines of INCRBY on 3,000 counters (one
# shard each: batched), mixed with MSETs of two counters in different
# slots and MULTI/EXEC pairs of INCRBYs (several shards, a transaction:
# applied alone, between batches). Meanwhile, on the replica (2 threads,
# appendonly yes):
#   * BGSAVE after BGSAVE: each snapshot's instant must find every record
#     of a batch in the replica's stream or none, else the restart below
#     replays a record the snapshot holds (a counter too high) or skips one
#     (too low);
#   * a replica of the replica is re-pointed (REPLICAOF NO ONE, then back)
#     several times: each time a full sync of a snapshot taken on the
#     replica while batches run;
#   * then the replica gets kill -9 and starts again on its data directory:
#     it resyncs partially (its history is in its data) while the writes go
#     on.
# Once the writers stop: the three servers hold the same counters (every
# key, type, value and version: tests/lib/repl.py's dump), the replica
# applied records both ways (INFO replication replica_applied_parallel,
# replica_applied_alone) and the primary saw a partial resync after the
# kill. ZARIS_REPL_ROUNDS (default 3, 2 under a sanitizer) sets how many
# times the sub-replica is re-pointed. Seeded (ZARIS_SEED).

import os
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from zaris import *  # noqa: E402,F403
from zaris import ProtocolError  # noqa: E402
from repl import *  # noqa: E402,F403

if is_redis():
    skip_all("zarisd's parallel apply (redis-server applies on one thread)")

ROUNDS = sweep_size("ZARIS_REPL_ROUNDS", 3, 2)
COUNTERS = 3000
rng = seeded_rng()


class CounterWriters:
    """Clients sending pipelines of counter updates until stop()."""

    def __init__(self, port, n):
        self.clients = [Client(port) for _ in range(n)]
        self.seeds = [rng.randrange(1 << 30) for _ in range(n)]
        self.sent = [0] * n
        self.errors = []
        self._stop = threading.Event()
        self._threads = []

    def _run(self, i):
        import random
        r = random.Random(self.seeds[i])
        c = self.clients[i]
        try:
            while not self._stop.is_set():
                cmds = []
                for _ in range(64):
                    a, b = r.randrange(COUNTERS), r.randrange(COUNTERS)
                    pick = r.random()
                    if pick < 0.9:
                        cmds.append(("INCRBY", "c:%d" % a, str(r.randrange(1, 100))))
                    elif pick < 0.95:
                        cmds.append(("MSET", "m:%d" % a, str(r.randrange(1000)), "m:%d" % b, str(r.randrange(1000))))
                    else:
                        cmds += [("MULTI",), ("INCRBY", "c:%d" % a, "1"), ("INCRBY", "c:%d" % b, "-1"), ("EXEC",)]
                for rep in c.pipeline(cmds):
                    if rep.is_error():
                        raise ProtocolError("%r" % rep)
                self.sent[i] += len(cmds)
        except (OSError, ConnectionError, ProtocolError) as e:
            self.errors.append("client %d after %d: %s" % (i, self.sent[i], e))

    def total(self):
        return sum(self.sent)

    def start(self):
        self._threads = [threading.Thread(target=self._run, args=(i,), daemon=True) for i in range(len(self.clients))]
        for t in self._threads:
            t.start()
        return self

    def more(self, n, timeout=30):
        start = self.total()
        return wait_for(lambda: self.total() >= start + n, timeout)

    def stop(self):
        self._stop.set()
        for t in self._threads:
            t.join(60 * SLOW)
        for c in self.clients:
            c.close()


def bgsave_done(cl):
    return info_int(cl, "rdb_bgsave_in_progress", "persistence") == 0


p = start_node("primary", threads=2, extra=["--repl-backlog-size", "256mb"])
d = data_dir()
r = start_node("replica", threads=2, replicaof=(HOST, p.port), extra=["--dir", d, "--appendonly", "yes"])
s = start_node("sub-replica", threads=1)
pc, rc, sc = p.client(), r.client(), s.client()
ok(wait_link(rc), "the replica (2 threads, appendonly yes) is linked") or diag(sync_state(pc, rc))
wr = CounterWriters(p.port, 4).start()
ok(wr.more(20000), "four clients write counters on the primary (%d commands so far)" % wr.total()) or diag(wr.errors)

saves = 0
for rnd in range(ROUNDS):
    sc.call("REPLICAOF", "NO", "ONE")
    sc.call("REPLICAOF", HOST, str(r.port))
    linked = wait_link(sc, timeout=60)
    for _ in range(2):
        rep = rc.call("BGSAVE")
        if not rep.is_error() and wait_for(lambda: bgsave_done(rc), 60):
            saves += 1
        wr.more(3000)
    ok(linked, "round %d: the sub-replica full-synced from the replica while batches ran" % rnd) or \
        diag(sync_state(rc, sc))
ok(saves >= 2 * ROUNDS, "the replica took %d snapshots while batches ran" % saves)
ok(info_int(rc, "replica_applied_parallel") > 0 and info_int(rc, "replica_applied_alone") > 0,
   "the replica applied records in parallel (%d) and alone (%d)"
   % (info_int(rc, "replica_applied_parallel"), info_int(rc, "replica_applied_alone")))

before = info_int(pc, "sync_partial_ok", "stats")
# a save right before the kill: the restart loads it and replays the log after it
rc.call("BGSAVE")
wait_for(lambda: bgsave_done(rc), 60)
wr.more(3000)
r.kill()
rc.close()
ok(not r.alive(), "the replica killed (kill -9) while batches run")
wr.more(5000)
r.restart(same_port=True)  # its replica reconnects to the same address
rc = r.client()
ok(wait_link(rc, timeout=60), "after a restart on its data directory its link is up") or diag(sync_state(pc, rc))
wr.more(5000)
wr.stop()
ok(not wr.errors, "%d counter commands written on the primary" % wr.total()) or diag(wr.errors)
ok(info_int(pc, "sync_partial_ok", "stats") > before, "the restarted replica resynced partially (sync_partial_ok %d -> %d)"
   % (before, info_int(pc, "sync_partial_ok", "stats")))
ok(wait_in_sync(pc, rc, timeout=60) and wait_in_sync(rc, sc, timeout=60),
   "the replica and its replica reach their primaries' offsets") or diag(sync_state(pc, rc) + " / " + sync_state(rc, sc))
a = dump(pc)
for name, cl in (("replica", rc), ("sub-replica", sc)):
    lines = differences(a, dump(cl), lb=name)
    if not ok(len(a) >= COUNTERS // 2 and not lines, "the %s's counters are the primary's (%d keys)" % (name, len(a))):
        for line in lines or ["only %d keys" % len(a)]:
            diag(line)
sys.exit(done_testing())
