#!/usr/bin/python3
# meta_concurrency.t — METAINVALIDATE under concurrent writes (issue 19).
# A 2-thread zarisd with the append-only log; one writer on each worker
# puts keys labelled "hot" (some also "cold"), rewrites them with a plain
# SET (which keeps the labels), and puts unlabelled keys, while a third
# client invalidates "hot" over and over. Afterwards: no key carries
# "hot" once a last invalidation ran (METAGET of every key, and
# METASCAN), every unlabelled key holds the last value its writer
# put, nothing else is left, and a restart from the log alone (SHUTDOWN NOSAVE) gives the same
# keyspace back (the invalidation's record replays among the writes as it
# ran).

import os
import random
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from zaris import *  # noqa: E402,F403
from repl import data_dir, scan_keys  # noqa: E402

OPS = sweep_size("ZARIS_META_OPS", 6000, 1500)
ROUNDS = sweep_size("ZARIS_META_ROUNDS", 3, 1)


def everything(c):
    out = {}
    for k in scan_keys(c):
        out[k] = (c.callv("GET", k), c.callv("METAGET", k))
    return out


plan(6 * ROUNDS)
rng = seeded_rng()
for rnd in range(ROUNDS):
    d = data_dir("zaris-metac-")
    flags = ["--dir", d, "--appendonly", "yes", "--save", ""]
    srv = start_zarisd(threads=2, extra=flags)
    first = srv.client()
    second = client_on_other_worker(srv, first)
    writers = [first, second]
    last = [dict(), dict()]  # unlabelled key -> last value, per writer
    errors = []
    stop = threading.Event()
    counts = []

    def writer(i, seed):
        c = writers[i]
        r = random.Random(seed)
        try:
            for n in range(OPS):
                k = "w%d:%d" % (i, r.randrange(400))
                op = r.random()
                if op < 0.45:
                    labels = ["hot"] + (["cold"] if r.random() < 0.3 else [])
                    c.callv("METAPUT", "l" + k, "v%d" % n, "LABELS", len(labels), *labels)
                elif op < 0.6:
                    c.callv("SET", "l" + k, "s%d" % n)  # keeps whatever labels the key has
                else:
                    c.callv("SET", "u" + k, "u%d" % n)
                    last[i]["u" + k] = b"u%d" % n
        except Exception as e:  # noqa: BLE001
            errors.append(repr(e))

    def invalidator():
        c = srv.client()
        try:
            while not stop.is_set():
                counts.append(c.callv("METAINVALIDATE", "hot"))
        except Exception as e:  # noqa: BLE001
            errors.append(repr(e))

    ts = [threading.Thread(target=writer, args=(i, rng.randrange(1 << 30))) for i in range(2)]
    inv = threading.Thread(target=invalidator)
    inv.start()
    for t in ts:
        t.start()
    for t in ts:
        t.join(300 * SLOW)
    stop.set()
    inv.join(60 * SLOW)
    c = srv.client()
    final = c.callv("METAINVALIDATE", "hot")
    ok(not errors and not any(t.is_alive() for t in ts + [inv]),
       "round %d: %d writes on two workers, %d invalidations meanwhile (%d keys)" %
       (rnd, 2 * OPS, len(counts), sum(counts) + final)) or diag(errors[:3])
    state = everything(c)
    hot = [k for k, (v, m) in state.items() if b"hot" in (m[b"labels"] if isinstance(m, dict) else m[1])]
    ok(not hot, "round %d: no key carries the label after the last invalidation" % rnd) or diag(hot[:5])
    cur, found = b"0", []
    for _ in range(100000):
        cur, page = c.callv("METASCAN", cur, "LABEL", "hot", "COUNT", 100)
        found += page
        if cur == b"0":
            break
    cold, cur = [], b"0"
    for _ in range(100000):
        cur, page = c.callv("METASCAN", cur, "LABEL", "cold", "COUNT", 100)
        cold += page
        if cur == b"0":
            break
    ok(not found and not cold, "round %d: the index holds neither label (%d, %d)" % (rnd, len(found), len(cold)))
    want = dict(last[0])
    want.update(last[1])
    lost = [k for k in want if state.get(k.encode(), (None,))[0] != want[k]]
    ok(not lost and len(want) > 0, "round %d: all %d unlabelled keys hold their last value" % (rnd, len(want))) or \
        diag(lost[:5])
    ok(all(k.startswith(b"u") or k.startswith(b"l") for k in state) and
       sum(1 for k in state if k.startswith(b"u")) == len(want),
       "round %d: nothing else in the keyspace, no unlabelled key missing" % rnd)
    c.send("SHUTDOWN", "NOSAVE")
    c.recv_until_closed()
    srv.proc.wait(30 * SLOW)
    srv.restart()
    again = everything(srv.client())
    diff = [k for k in set(state) | set(again) if state.get(k) != again.get(k)]
    ok(not diff, "round %d: the log's replay gives the same %d keys, metadata and versions" % (rnd, len(state))) or \
        diag(["%r: %r / %r" % (k, state.get(k), again.get(k)) for k in diff[:4]])
    for cl in writers:
        cl.close()
    srv.cleanup()
done_testing()
