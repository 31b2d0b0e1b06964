#!/usr/bin/python3
# repl_promote.t — after a promotion the others re-point with a partial
# resync (PSYNC2: the promoted replica keeps its old primary's replication
# id as its second id), as the supervisors' failover does (issue 17):
# primary A, replicas B and C in sync after some writes (mixed types, a
# few TTLs); B gets REPLICAOF NO ONE and takes writes of its own; C gets
# REPLICAOF B: on B INFO stats' sync_partial_ok goes up by one and
# sync_full does not, and C's keyspace is B's (tests/lib/repl.py's dump:
# type, value, expiry, version). Then A, still alive and written to no
# more since B was promoted, gets REPLICAOF B: partial too, and A's
# keyspace is B's. With ZARIS_REPL_ENGINE=redis the same on redis-server.

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from zaris import *  # noqa: E402,F403
from zaris import HOST  # noqa: E402
from repl import *  # noqa: E402,F403


def syncs(cl):
    s = info(cl, "stats")
    return int(s.get("sync_full", -1)), int(s.get("sync_partial_ok", -1))


def same(what, xa, xb, la, lb):
    a, b = dump(xa), dump(xb)
    lines = differences(a, b, la, lb)
    if not ok(len(a) >= 100 and not lines, "%s (%d keys)" % (what, len(a))):
        for line in lines or ["only %d keys" % len(a)]:
            diag(line)


a, (b, c) = start_group(replicas=2, threads=2)
ac, bc, cc = a.client(), b.client(), c.client()
fill(ac, 2000, prefix="a:", mixed=True)
ok(wait_in_sync(ac, bc, timeout=60) and wait_in_sync(ac, cc, timeout=60),
   "B and C are in sync with A") or diag(sync_state(ac, bc) + "; " + sync_state(ac, cc))

is_(bc.call("REPLICAOF", "NO", "ONE").py(), "OK", "B: REPLICAOF NO ONE")
is_(info(bc).get("role"), "master", "B is a primary")
fill(bc, 300, prefix="b:")
before = syncs(bc)

is_(cc.call("REPLICAOF", HOST, str(b.port)).py(), "OK", "C: REPLICAOF B")
ok(wait_in_sync(bc, cc, timeout=60), "C is in sync with B") or diag(sync_state(bc, cc))
after = syncs(bc)
note("B sync_full, sync_partial_ok: before %r, after C %r" % (before, after))
is_(after[0], before[0], "C: no full sync on B")
is_(after[1], before[1] + 1, "C: one partial resync on B")
same("C's keyspace is B's", bc, cc, "B", "C")

is_(ac.call("REPLICAOF", HOST, str(b.port)).py(), "OK", "A (not written to since): REPLICAOF B")
ok(wait_in_sync(bc, ac, timeout=60), "A is in sync with B") or diag(sync_state(bc, ac))
last = syncs(bc)
note("B sync_full, sync_partial_ok after A: %r" % (last,))
is_(last[0], after[0], "A: no full sync on B")
is_(last[1], after[1] + 1, "A: one partial resync on B")
same("A's keyspace is B's", bc, ac, "B", "A")

fill(bc, 200, prefix="c:")
ok(wait_in_sync(bc, ac, timeout=60) and wait_in_sync(bc, cc, timeout=60), "B's later writes reach A and C")
same("and C still holds what B holds", bc, cc, "B", "C")
for x in (ac, bc, cc):
    x.close()
done_testing()
