#!/usr/bin/python3
# evict_snapshot.t — eviction under maxmemory while a snapshot runs evicts
# about what it evicts without one. A key the running snapshot still needs
# is kept as its pre-image when it is evicted (store/snap.c), so evicting it
# frees nothing; with pre-images counted in maxmemory's figure every key
# went before the figure fell (3000 keys, maxmemory 200 KB under the used
# memory, 200 SETs during a BGSAVE: DBSIZE 0, against about 2500 without a
# snapshot). Redis leaves its replicas' and the log's buffers out of the
# figure (mem_not_counted_for_evict); zarisd leaves out the pre-images and
# the change stream's ring.
#
# Two servers, the same keys and writes: one writes with no snapshot
# running, the other while a BGSAVE is held open by rdb-key-save-delay.
# Then: the survivors of the second are within a fifth of the first's,
# INFO memory's mem_not_counted_for_evict was above 0 during the snapshot,
# and every key left holds the value last written to it.

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from zaris import *  # noqa: E402,F403
from repl import info, info_int, wait_for  # noqa: E402

KEYS, WRITES, VALUE = 3000, 200, 300
ROOM = 200 << 10  # maxmemory this far under the used memory after the fill


def fill(c):
    for i in range(KEYS):
        c.send("SET", "k:%d" % i, "v%d:" % i + "x" * VALUE)
    for _ in range(KEYS):
        c.read_reply()


def write(c):
    for i in range(WRITES):
        c.send("SET", "new:%d" % i, "n%d:" % i + "y" * VALUE)
    errors = [r for r in (c.read_reply() for _ in range(WRITES)) if r.is_error()]
    return errors


def values_intact(c):
    bad = []
    for key in c.call("KEYS", "*").py():
        v = c.call("GET", key).py()
        k = key.decode()
        want = ("v%s:" % k[2:] if k.startswith("k:") else "n%s:" % k[4:]).encode()
        if not v or not v.startswith(want):
            bad.append(k)
    return bad


def run(snapshot):
    srv = start_zarisd(threads=2, extra=["--save", "", "--appendonly", "no", "--maxmemory-policy", "allkeys-lru"])
    c = srv.client()
    fill(c)
    used = info_int(c, "used_memory", "memory")
    c.call("CONFIG", "SET", "maxmemory", str(used - ROOM))
    not_counted = 0
    if snapshot:
        c.call("CONFIG", "SET", "rdb-key-save-delay", "100000")  # 0.1 s a key: the save holds
        c.call("BGSAVE")
        # past the instant: the first shard is written (its keys counted)
        wait_for(lambda: info_int(c, "current_save_keys_processed", "persistence", 0) > 0, 10)
    errors = write(c)
    if snapshot:
        not_counted = info_int(c, "mem_not_counted_for_evict", "memory")
        running = info(c, "persistence").get("rdb_bgsave_in_progress") == "1"
        c.call("CONFIG", "SET", "rdb-key-save-delay", "0")
        wait_for(lambda: info(c, "persistence").get("rdb_bgsave_in_progress") == "0", 60)
    else:
        running = False
    out = dict(keys=c.call("DBSIZE").py(), evicted=info_int(c, "evicted_keys", "stats"),
               not_counted=not_counted, running=running, errors=errors, bad=values_intact(c))
    srv.cleanup()
    return out


plan(6)
plain = run(False)
snap = run(True)
note("no snapshot: %(keys)d keys left, %(evicted)d evicted" % plain)
note("during a snapshot: %(keys)d keys left, %(evicted)d evicted, mem_not_counted_for_evict %(not_counted)d" % snap)
ok(snap["running"], "the writes ran while the BGSAVE was in progress")
ok(not plain["errors"] and not snap["errors"], "every write was taken (allkeys-lru makes room)") or \
    diag("errors: %r / %r" % (plain["errors"][:3], snap["errors"][:3]))
ok(plain["evicted"] > 0, "maxmemory made the first server evict (%d keys)" % plain["evicted"])
ok(snap["keys"] >= plain["keys"] - (KEYS + WRITES) // 5,
   "during the snapshot about as many keys survive (%d, without one %d)" % (snap["keys"], plain["keys"]))
ok(snap["not_counted"] > 0, "mem_not_counted_for_evict shows the pre-images during the snapshot")
ok(not plain["bad"] and not snap["bad"], "every key left holds its last value") or \
    diag("bad: %r / %r" % (plain["bad"][:5], snap["bad"][:5]))
sys.exit(done_testing())
