#!/usr/bin/python3
# blocking_journal.t — a pop that serves a blocked client is journaled as
# the command that repeats it (as Redis propagates a served BLPOP as LPOP,
# BLMOVE as LMOVE, BZPOPMIN as ZPOPMIN, BLMPOP as LPOP key count): with the
# append-only log and no snapshots, after SHUTDOWN NOSAVE the replay of the
# log alone gives back what the serves left. (e880b70 journaled the push
# and not the serve: the popped elements came back after a restart, and a
# replica kept them.)

import os
import shutil
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from zaris import *  # noqa: E402,F403

CASES = [
    # (what, blocking command, the write that serves it, keys to read after)
    ("BLPOP", ["BLPOP", "l1", "5"], ["RPUSH", "l1", "a", "b"], ["l1"]),
    ("BRPOP", ["BRPOP", "l2", "5"], ["RPUSH", "l2", "a", "b", "c"], ["l2"]),
    ("BLMPOP", ["BLMPOP", "5", "1", "l3", "LEFT", "COUNT", "2"], ["RPUSH", "l3", "a", "b", "c"], ["l3"]),
    ("BLMOVE", ["BLMOVE", "l4", "d4", "LEFT", "RIGHT", "5"], ["RPUSH", "l4", "x", "y"], ["l4", "d4"]),
    ("BZPOPMIN", ["BZPOPMIN", "z1", "5"], ["ZADD", "z1", "1", "a", "2", "b"], ["z1"]),
    ("BZMPOP", ["BZMPOP", "5", "1", "z2", "MAX", "COUNT", "2"], ["ZADD", "z2", "1", "a", "2", "b", "3", "c"], ["z2"]),
]


def read(c, key):
    t = c.call("TYPE", key).py()
    if t == "list":
        return c.call("LRANGE", key, 0, -1).py()
    if t == "zset":
        return c.call("ZRANGE", key, 0, -1, "WITHSCORES").py()
    return t


plan(2 * len(CASES) + 1)
d = tempfile.mkdtemp(prefix="zaris-bjournal-")
srv = start_zarisd(threads=2, extra=["--dir", d, "--appendonly", "yes", "--save", ""])
c = srv.client()
before = {}
for what, block, write, keys in CASES:
    waiter = srv.client()
    waiter.send(*block)
    # the waiter is blocked once CLIENT LIST shows its command (bounded)
    for _ in range(200):
        if any(b"cmd=" + block[0].lower().encode() in line for line in c.call("CLIENT", "LIST").raw.split(b"\n")):
            break
        time.sleep(0.01)
    c.call(*write)
    got = waiter.read_reply()
    ok(not got.is_error() and got.py() is not None, "%s: the blocked client was served" % what) or diag(got)
    for k in keys:
        before[k] = read(c, k)
    waiter.close()
c.send("SHUTDOWN", "NOSAVE")
srv.proc.wait(30)
srv.restart()
c = srv.client()
for what, block, write, keys in CASES:
    after = {k: read(c, k) for k in keys}
    ok(all(after[k] == before[k] for k in keys), "%s: after the log's replay the keys hold what the serve left" % what) \
        or diag("before %r after %r" % ({k: before[k] for k in keys}, after))
ok(srv.alive(), "the server restarted from its log")
srv.cleanup()
shutil.rmtree(d, ignore_errors=True)
sys.exit(done_testing())
