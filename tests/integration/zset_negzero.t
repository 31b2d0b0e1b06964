#!/usr/bin/python3
# zset_negzero.t — a sorted set's -0 scores survive a snapshot and a full
# sync as the set had them.
#
# The compact encoding keeps a zero score without its sign, as Redis's
# listpack does (redis-server: ZADD small -0 m; ZSCORE small m answers 0),
# while the full one keeps -0 (ZSCORE answers -0 on both servers). A
# snapshot stores a set as the ZADDs that rebuild it; the rebuild starts
# compact and converts once it is big enough, so -0 members among the
# first ones came back as 0 (CI: repl_equality.t, "full sync of an existing
# keyspace", a 200-member set whose replica had 0 where the primary had
# -0). Checked: the scores as redis-server gives them, then the same after
# a restart from a snapshot and on a replica after a full sync.

import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from zaris import *  # noqa: E402,F403
from repl import HOST, wait_in_sync, wait_link  # noqa: E402
import repl  # noqa: E402

plan(5)


def fill(c):
    # big: 300 members, -0 among the first batch, in the middle and last
    args = []
    for i in range(300):
        args += ["-0" if i in (0, 5, 150, 299) else str(i - 100), "m%d" % i]
    c.call("ZADD", "big", *args)
    c.call("ZADD", "small", "-0", "a", "1", "b")


def scores(c):
    return [(k, c.call("ZRANGE", k, "0", "-1", "WITHSCORES").raw) for k in ("big", "small")]


ref = start_redis()
rc_ = ref.client()
fill(rc_)
want = scores(rc_)
ref.stop()
ok(b"-0" in want[0][1] and b"-0" not in want[1][1],
   "redis-server: -0 kept in the full encoding, 0 in the compact one (the test reads it right)")

d = tempfile.mkdtemp(prefix="zset-negzero-")
try:
    z = start_zarisd(extra=["--dir", d, "--appendonly", "no", "--save", ""])
    zc = z.client()
    fill(zc)
    is_(scores(zc), want, "zarisd: the scores as redis-server's")
    is_(zc.call("SAVE").raw, b"+OK\r\n", "SAVE")
    z.stop()
    state, got = start_on_data(d, scores, appendonly="no")
    is_((state, got), ("started", want), "after a restart from the snapshot: the same scores")

    p = repl.start_node("negzero-primary")
    pc = p.client()
    fill(pc)
    r = repl.start_node("negzero-replica", replicaof=(HOST, p.port))
    rcl = r.client()
    linked = wait_link(rcl) and wait_in_sync(pc, rcl)
    is_((linked, scores(rcl)), (True, want), "a replica after a full sync: the same scores")
finally:
    shutil.rmtree(d, ignore_errors=True)
done_testing()
