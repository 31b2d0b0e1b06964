#!/usr/bin/python3
# repl_partial.t — a replica that loses its link while writes go on comes
# back with a partial resync: on the primary INFO stats' sync_partial_ok
# goes up and sync_full does not, and afterwards the replica's keyspace is
# the primary's (tests/lib/repl.py's dump: type, value, expiry, version).
#
# (a) The replica process is killed (kill -9) and started again on its
#     data directory, while two clients keep writing random streams on the
#     primary (backlog 64 MB). zarisd (appendonly yes) keeps its
#     replication id and offset in its data. redis-server 7.0 keeps them in
#     an RDB: the one the full sync left as its dump.rdb does (it names the
#     primary's id and the offset the sync started at), so with
#     ZARIS_REPL_ENGINE=redis a kill -9 resyncs partially too, replaying
#     the backlog from there.
# (b) The link is cut under the processes: the primary in network
#     namespace a, the replica in b (tests/lib/zaris_sys.py's NetnsPair, a
#     veth pair inside the two namespaces; nothing on the host), both with
#     repl-timeout 2 and repl-ping-replica-period 1. `ip link set veth0
#     down` in b drops all traffic until the replica reports its link down
#     and a second more; then the link comes back up. Skipped when network
#     namespaces cannot be made (not root).
#
# Seeded (ZARIS_SEED repeats a run).

import os
import random
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from zaris import *  # noqa: E402,F403
import zaris  # noqa: E402
from zaris_sys import NetnsPair, NetnsUnavailable, inside, skip  # noqa: E402
from cmdgen import arities  # noqa: E402
from repl import *  # noqa: E402,F403

rng = seeded_rng()
ref = start_redis()
arity = arities(ref.client())
ref.stop()
BACKLOG = ["--repl-backlog-size", "64mb"]
TIMEOUTS = ["--repl-timeout", "2", "--repl-ping-replica-period", "1"]


def workloads(n):
    return [Workload(random.Random(rng.randrange(1 << 30)), arity) for _ in range(n)]


def syncs(pc):
    s = info(pc, "stats")
    return int(s.get("sync_full", -1)), int(s.get("sync_partial_ok", -1)), int(s.get("sync_partial_err", -1))


def more_writes(wr, n, timeout=20):
    start = wr.total()
    return wait_for(lambda: wr.total() >= start + n, timeout)


def finish(what, pc, rc, wr, before):
    """Stops the writers, waits for the replica, checks the counters and
    the keyspaces."""
    more_writes(wr, 300)
    wr.stop()
    ok(not wr.errors, "%s: %d stream items written on the primary meanwhile" % (what, wr.total())) or diag(wr.errors)
    time.sleep(0.7)  # past the short TTLs
    ok(wait_in_sync(pc, rc, timeout=60), "%s: the replica is in sync again" % what) or diag(sync_state(pc, rc))
    after = syncs(pc)
    note("%s: primary sync_full, sync_partial_ok, sync_partial_err before %r after %r" % (what, before, after))
    is_(after[0], before[0], "%s: no full sync (sync_full %d)" % (what, after[0]))
    ok(after[1] > before[1], "%s: a partial resync (sync_partial_ok %d -> %d)" % (what, before[1], after[1]))
    a, b = dump(pc), dump(rc)
    lines = differences(a, b)
    if not ok(len(a) >= 20 and not lines, "%s: the replica's keyspace is the primary's (%d keys)" % (what, len(a))):
        for line in lines or ["only %d keys" % len(a)]:
            diag(line)


# ---- (a) the replica process dies and comes back on its data -------------------------------------
what = "replica restarted"
p = start_node("primary", threads=2, extra=BACKLOG)
d = data_dir()
persist = ["--dir", d] + (["--dbfilename", "dump.rdb"] if is_redis() else ["--appendonly", "yes"])
r = start_node("replica", threads=2, replicaof=(HOST, p.port), extra=persist)
pc, rc = p.client(), r.client()
ws = workloads(2)
wr = Writers([p.client() for _ in ws], ws).start()
ok(wait_link(rc) and more_writes(wr, 300) and wait_for(lambda: replicas_online(info(pc)), 20),
   "%s: the replica is linked and online, writes going on" % what) or diag(sync_state(pc, rc))
before = syncs(pc)
r.kill()
rc.close()
ok(not r.alive(), "%s: replica killed (kill -9) while the primary takes writes" % what)
more_writes(wr, 500)
r.restart()
rc = r.client()
ok(wait_link(rc, timeout=30), "%s: after a restart on its data directory the link is up again" % what) or \
    diag(sync_state(pc, rc))
finish(what, pc, rc, wr, before)
r.cleanup()
p.cleanup()

# ---- (b) the link cut by a network namespace ---------------------------------------------------
what = "link cut"
try:
    pair = NetnsPair()
except NetnsUnavailable as e:
    pair = None
    for name in ("linked", "the replica notices the cut", "the link back up", "writes", "in sync", "no full sync",
                 "partial", "keyspace"):
        skip("%s: %s: cannot create a network namespace (%s)" % (what, name, e))
if pair is not None:
    try:
        with inside(pair.a):
            p = start_node("primary-a", threads=2,
                           extra=BACKLOG + TIMEOUTS + ["--bind", "127.0.0.1 " + pair.addr_a, "--protected-mode", "no"])
            pc = p.client()
            ws = workloads(2)
            wcl = [p.client() for _ in ws]
        with inside(pair.b):
            r = start_node("replica-b", threads=2, replicaof=(pair.addr_a, p.port), extra=TIMEOUTS)
            rc = r.client()
        wr = Writers(wcl, ws).start()
        ok(wait_link(rc) and more_writes(wr, 300) and wait_for(lambda: replicas_online(info(pc)), 20),
           "%s: the replica in namespace b is linked to the primary in a, writes going on" % what) or \
            diag(sync_state(pc, rc))
        before = syncs(pc)
        subprocess.run(["ip", "-n", pair.b, "link", "set", "veth0", "down"], check=True, timeout=20)
        down = wait_link(rc, "down", timeout=30)
        ok(down, "%s: with veth0 down in b the replica reports its link down (repl-timeout 2)" % what) or \
            diag(sync_state(pc, rc))
        more_writes(wr, 300, timeout=1.5)
        subprocess.run(["ip", "-n", pair.b, "link", "set", "veth0", "up"], check=True, timeout=20)
        pair._wait_link()
        ok(wait_link(rc, timeout=60), "%s: with veth0 up again the link is up" % what) or diag(sync_state(pc, rc))
        finish(what, pc, rc, wr, before)
    finally:
        for s in list(zaris._servers):
            s.stop()
        pair.close()
sys.exit(done_testing())
