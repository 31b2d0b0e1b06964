#!/usr/bin/python3
# wholedb_order.t — a whole-keyspace write (SWAPDB, FLUSHDB) and writes on
# other workers are journaled in the order they took effect. Two clients
# push to lists in random databases while a third swaps and flushes
# databases, on a 2-thread zarisd with the append-only log and no
# snapshots; after SHUTDOWN NOSAVE the restart replays the log alone, and
# every database must hold what it held before. (Run shard by shard, a
# SWAPDB let a push land in a shard it had already swapped while the
# push's record went to the log before the SWAPDB's: the replay put the
# element in the other database. A replica applies the same stream.)

import os
import random
import shutil
import sys
import tempfile
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from zaris import *  # noqa: E402,F403

ROUNDS = sweep_size("ZARIS_WHOLEDB_ROUNDS", 6, 2)
OPS = 4000


def lists(c):
    out = {}
    for db in range(3):
        c.call("SELECT", db)
        for k in c.call("KEYS", "*").py():
            out[(db, k)] = c.call("LRANGE", k, 0, -1).py()
    return out


rng = seeded_rng()
plan(2 * ROUNDS)
for rnd in range(ROUNDS):
    d = tempfile.mkdtemp(prefix="zaris-wholedb-")
    srv = start_zarisd(threads=2, extra=["--dir", d, "--appendonly", "yes", "--save", ""])
    stop = threading.Event()
    errors = []
    progress = [0, 0]  # each pusher's pushes so far

    def pusher(seed, who):
        r = random.Random(seed)
        c = srv.client()
        try:
            for i in range(OPS):
                progress[who] = i
                c.call("SELECT", r.randrange(3))
                c.call("RPUSH", "l:%d" % r.randrange(8), "%d:%d" % (seed, i))
        except Exception as e:  # noqa: BLE001
            errors.append(repr(e))

    def swapper(seed):
        r = random.Random(seed)
        c = srv.client()
        try:
            while not stop.is_set():
                # no FLUSHDB once both pushers are past 90 %: the flushes
                # that came after the last pushes (a main thread slow to
                # stop this one on a loaded machine) emptied every database
                if r.random() < 0.995 or min(progress) >= OPS * 9 // 10:
                    c.call("SWAPDB", r.randrange(3), r.randrange(3))
                else:
                    c.call("SELECT", r.randrange(3))
                    c.call("FLUSHDB")
        except Exception as e:  # noqa: BLE001
            errors.append(repr(e))

    seeds = [rng.randrange(1 << 30) for _ in range(3)]
    ts = [threading.Thread(target=pusher, args=(seeds[0], 0)), threading.Thread(target=pusher, args=(seeds[1], 1))]
    sw = threading.Thread(target=swapper, args=(seeds[2],))
    for t in ts + [sw]:
        t.start()
    for t in ts:
        t.join(120)
    stop.set()
    sw.join(60)
    c = srv.client()
    before = lists(c)
    c.send("SHUTDOWN", "NOSAVE")
    srv.proc.wait(30)
    srv.restart()
    after = lists(srv.client())
    ok(not errors and sum(len(v) for v in before.values()) > 0,
       "round %d: %d list elements in %d keys written under SWAPDB and FLUSHDB" %
       (rnd, sum(len(v) for v in before.values()), len(before))) or diag(errors[:3])
    diff = [k for k in set(before) | set(after) if before.get(k) != after.get(k)]
    ok(not diff, "round %d: the log's replay gives every database back as it was" % rnd) or \
        diag("%d keys differ, e.g. %r: before %r, after %r" %
             (len(diff), diff[0], (before.get(diff[0]) or [])[:5], (after.get(diff[0]) or [])[:5]))
    srv.cleanup()
    shutil.rmtree(d, ignore_errors=True)
sys.exit(done_testing())
