#!/usr/bin/python3
# snapshot_swapdb.t — a snapshot taken while SWAPDB moves databases and
# writes change the moved keys is still the keyspace of its instant. A
# BGSAVE of 150,000 keys in database 1 runs (its dump takes a while);
# meanwhile SWAPDB 1 2 moves them and SETs change some of them in database
# 2. With the append-only log on, SHUTDOWN NOSAVE and a restart load that
# snapshot and replay the log after its instant: the result must be the
# keyspace before the shutdown. (e880b70 filed the pre-image of a moved
# key under the database it was moved to, so the snapshot held it in both
# databases: the restart had keys in database 2 that were never there.)

import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from zaris import *  # noqa: E402,F403

KEYS = 150000
ROUNDS = sweep_size("ZARIS_SNAPSWAP_ROUNDS", 3, 1)


def counts(c):
    out = []
    for db in range(3):
        c.call("SELECT", db)
        out.append(c.call("DBSIZE").py())
    return out


def sample(c, n=2000):
    out = {}
    for db in range(3):
        c.call("SELECT", db)
        for i in range(0, KEYS, KEYS // n):
            out[(db, i)] = c.call("GET", "k:%d" % i).py()
    return out


plan(2 * ROUNDS)
for rnd in range(ROUNDS):
    d = tempfile.mkdtemp(prefix="zaris-snapswap-")
    srv = start_zarisd(threads=2, extra=["--dir", d, "--appendonly", "yes", "--save", ""])
    c = srv.client()
    c.call("SELECT", 1)
    for base in range(0, KEYS, 5000):
        for i in range(base, base + 5000):
            c.send("SET", "k:%d" % i, "v%d" % i)
        for i in range(base, base + 5000):
            c.read_reply()
    c.call("BGSAVE")
    c.call("SWAPDB", 1, 2)
    c.call("SELECT", 2)
    for i in range(0, KEYS, 7):
        c.send("SET", "k:%d" % i, "new%d" % i)
    for i in range(0, KEYS, 7):
        c.read_reply()
    for _ in range(600):  # the BGSAVE ends (bounded)
        if c.call("INFO", "persistence").raw.find(b"rdb_bgsave_in_progress:0") >= 0:
            break
        time.sleep(0.05)
    before = (counts(c), sample(c))
    c.send("SHUTDOWN", "NOSAVE")
    srv.proc.wait(30)
    srv.restart()
    c = srv.client()
    after = (counts(c), sample(c))
    is_(after[0], before[0], "round %d: each database's size after the restart (snapshot and log)" % rnd)
    diff = [k for k in before[1] if before[1][k] != after[1].get(k)]
    ok(not diff, "round %d: sampled values after the restart" % rnd) or \
        diag("%d differ, e.g. %r: %r then %r" % (len(diff), diff[0], before[1][diff[0]], after[1][diff[0]]))
    srv.cleanup()
    shutil.rmtree(d, ignore_errors=True)
sys.exit(done_testing())
