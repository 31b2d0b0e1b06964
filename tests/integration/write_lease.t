#!/usr/bin/python3
# write_lease.t — zarisd's write lease (issue 17: fencing). With
# --write-lease yes a primary starts fenced: every write command gets
# -CLUSTERDOWN write lease lapsed ..., reads are served. CLUSTER LEASE
# <until-ms> (an absolute CLOCK_MONOTONIC time in ms: python's
# time.monotonic() is the same clock on Linux) lets writes through until
# then; a time in the past or 0 fences again. MULTI: a write queued while
# fenced dooms the transaction; EXEC after the lease lapsed is
# EXECABORT. INFO cluster: write_lease, write_lease_remaining_ms,
# write_lease_refused, write_lease_acks_dropped, cluster_topology_epoch.
# With write-lease no nothing changes and setting a lease is an error;
# CLUSTER LEASE works with cluster-enabled yes too (and CLUSTER HELP lists
# it). The acknowledgement gate: a primary with replica-ack 1 whose
# replica is SIGSTOPped holds a SET's reply; when the replica comes back
# after the lease lapsed, the reply is not sent: the client gets the
# fenced error (", the write may or may not be applied") and the
# connection is closed. A replica started with write-lease yes applies
# its stream though never leased. (A non-local CLUSTER LEASE is refused
# like SETTOPOLOGY; not tested: a second host address is needed.)

import hashlib
import os
import signal
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from zaris import *  # noqa: E402,F403
from zaris import HOST, SLOW  # noqa: E402
from repl import info, wait_for, wait_in_sync  # noqa: E402

FENCED = ("CLUSTERDOWN write lease lapsed: this node is fenced until its supervisor confirms its "
          "leadership")


def mono_ms():
    return int(time.monotonic() * 1000)


def cinfo(cl):
    return info(cl, "cluster")


def err(r):
    return r.value if r.is_error() else "(not an error: %r)" % (r.raw,)


# ---- fenced at start ----------------------------------------------------------------------
p = start_zarisd(threads=2, extra=["--write-lease", "yes"], name="leased")
c = p.client()
c2 = p.client()
is_(c.call("CONFIG", "GET", "write-lease").py(), [b"write-lease", b"yes"], "CONFIG GET write-lease is yes")
is_(err(c.call("CONFIG", "SET", "write-lease", "no")),
    "ERR CONFIG SET failed (possibly related to argument 'write-lease') - can't set immutable config",
    "write-lease is start-up only")
f = cinfo(c)
is_((f.get("write_lease"), f.get("write_lease_remaining_ms"), f.get("write_lease_refused"),
     f.get("write_lease_acks_dropped"), f.get("cluster_topology_epoch")),
    ("lapsed", "0", "0", "0", "0"), "INFO at start: lapsed, 0 ms, nothing refused or dropped, no topology")
is_(c.call("CLUSTER", "LEASE").py(), 0, "CLUSTER LEASE answers 0 ms left")
is_(err(c.call("SET", "k", "v")), FENCED, "SET is refused with the fenced text")
is_(err(c.call("DEL", "k")), FENCED, "DEL too")
is_(err(c.call("FLUSHALL")), FENCED, "FLUSHALL too")
is_(c.call("GET", "k").py(), None, "GET is served")
is_(c.call("DBSIZE").py(), 0, "DBSIZE is served")
is_(c.call("PING").py(), "PONG", "PING is served")
is_(cinfo(c).get("write_lease_refused"), "3", "write_lease_refused counts the 3 refused writes")

# ---- a lease lets writes through -----------------------------------------------------------
is_(c.call("CLUSTER", "LEASE", str(mono_ms() + 5000)).py(), "OK", "CLUSTER LEASE now+5000 is OK")
is_(c.call("SET", "k", "v").py(), "OK", "SET is accepted under the lease")
is_(c2.call("GET", "k").py(), b"v", "and applied")
left = c.call("CLUSTER", "LEASE").py()
ok(isinstance(left, int) and 0 < left <= 5000, "CLUSTER LEASE answers the ms left (%r)" % (left,))
f = cinfo(c)
ok(f.get("write_lease") == "held" and 0 < int(f.get("write_lease_remaining_ms", "0")) <= 5000,
   "INFO: write_lease:held, write_lease_remaining_ms %s" % f.get("write_lease_remaining_ms"))
is_(c.pipeline([["MULTI"], ["INCR", "n"], ["INCR", "n"], ["EXEC"]])[-1].py(), [1, 2], "MULTI/EXEC runs under the lease")

# the lease lapses between MULTI and EXEC: EXEC is EXECABORT, nothing applied
is_([r.py() for r in c.pipeline([["MULTI"], ["SET", "m", "1"], ["GET", "k"]])], ["OK", "QUEUED", "QUEUED"],
    "a write queued under the lease")
is_(c2.call("CLUSTER", "LEASE", "0").py(), "OK", "CLUSTER LEASE 0 from another connection")
is_(err(c.call("EXEC")), "EXECABORT Transaction discarded because of: " + FENCED,
    "EXEC after the lease lapsed: EXECABORT with the fenced text")
is_(c.call("EXISTS", "m").py(), 0, "nothing of it was applied")
is_(cinfo(c).get("write_lease"), "lapsed", "INFO: lapsed after CLUSTER LEASE 0")

# fenced while queueing: the write errors at once, EXEC answers EXECABORT
rs = c.pipeline([["MULTI"], ["GET", "k"], ["SET", "m", "1"], ["EXEC"]])
is_([err(r) if r.is_error() else r.py() for r in rs],
    ["OK", "QUEUED", FENCED, "EXECABORT Transaction discarded because of previous errors."],
    "a write queued while fenced: the fenced error, then EXECABORT")
is_(c.call("EXISTS", "m").py(), 0, "not applied")
is_(c.pipeline([["MULTI"], ["GET", "k"], ["EXEC"]])[-1].py(), [b"v"], "a MULTI of reads runs while fenced")

# a lease that ends in the past fences; a later call lengthens or shortens it
is_(c.call("CLUSTER", "LEASE", str(mono_ms() + 60000)).py(), "OK", "a long lease")
is_(c.call("SET", "k", "w").py(), "OK", "writes go through")
is_(c.call("CLUSTER", "LEASE", str(max(0, mono_ms() - 1000))).py(), "OK", "then a lease that ended a second ago")
is_(err(c.call("SET", "k", "x")), FENCED, "fences at once")
is_(c.call("CLUSTER", "LEASE", "1").py(), "OK", "CLUSTER LEASE 1 (boot time) is taken")
is_(err(c.call("INCR", "n")), FENCED, "and fences")
is_(c.call("GET", "k").py(), b"w", "the refused writes left the value alone")
# a short lease runs out on its own (waited for by polling, bounded)
is_(c.call("CLUSTER", "LEASE", str(mono_ms() + 300)).py(), "OK", "a 300 ms lease")
ok(wait_for(lambda: c2.call("CLUSTER", "LEASE").py() == 0, timeout=10), "it runs out")
is_(err(c.call("SET", "k", "y")), FENCED, "writes are refused once it ran out")
f = cinfo(c)
is_((f.get("write_lease"), f.get("write_lease_remaining_ms"), f.get("write_lease_refused")),
    ("lapsed", "0", "8"), "INFO: lapsed, 0 ms, 8 refused (each refused write, a doomed EXEC once)")

# ---- bad arguments -------------------------------------------------------------------------
bad = "ERR lease end must be a non-negative integer (CLOCK_MONOTONIC ms)"
for arg in ("-1", "abc", "1.5", "", "99999999999999999999"):
    is_(err(c.call("CLUSTER", "LEASE", arg)), bad, "CLUSTER LEASE %r is refused" % arg)
is_(err(c.call("CLUSTER", "LEASE", "1", "2")), "ERR wrong number of arguments for 'cluster|lease' command",
    "CLUSTER LEASE with two arguments: arity error")
is_(c.call("CLUSTER", "LEASE").py(), 0, "still fenced")
is_(err(c.call("CLUSTER", "HELP")), "ERR This instance has cluster support disabled",
    "CLUSTER HELP stays cluster mode's")
c.close()
c2.close()
p.stop()

# ---- write-lease no: unaffected --------------------------------------------------------------
q = start_zarisd(threads=2, name="unleased")
c = q.client()
is_(c.call("SET", "k", "v").py(), "OK", "write-lease no: SET is accepted")
is_(c.call("CLUSTER", "LEASE").py(), -1, "CLUSTER LEASE answers -1")
is_(err(c.call("CLUSTER", "LEASE", str(mono_ms() + 5000))), "ERR write-lease is off", "setting one is an error")
is_(c.call("CLUSTER", "LEASE", "0").is_error(), True, "CLUSTER LEASE 0 too")
is_(c.call("SET", "k", "w").py(), "OK", "and writes still go through")
f = cinfo(c)
is_((f.get("write_lease"), f.get("write_lease_remaining_ms"), f.get("write_lease_refused")), ("off", "0", "0"),
    "INFO: write_lease:off")
c.close()
q.stop()

# ---- cluster-enabled yes -----------------------------------------------------------------------
n = start_zarisd(threads=2, extra=["--cluster-enabled", "yes", "--write-lease", "yes"], name="cluster")
c = n.client()
help_lines = [x.decode() if isinstance(x, bytes) else x for x in c.call("CLUSTER", "HELP").py()]
ok(any(x.startswith("LEASE [<until-ms>]") for x in help_lines), "CLUSTER HELP lists LEASE")
nid = hashlib.sha1(b"lease-test/n0").hexdigest()
doc = "epoch 7\ncluster lease-test\nmyself %s\nnode %s n0 127.0.0.1 %d primary 0-16383\n" % (nid, nid, n.port)
is_(c.call("CLUSTER", "SETTOPOLOGY", doc).py(), "OK", "a topology of epoch 7 is pushed")
is_(cinfo(c).get("cluster_topology_epoch"), "7", "INFO cluster_topology_epoch:7")
is_(err(c.call("SET", "k", "v")), FENCED, "cluster mode, fenced: SET refused")
is_(c.call("CLUSTER", "LEASE", str(mono_ms() + 5000)).py(), "OK", "CLUSTER LEASE in cluster mode")
is_(c.call("SET", "k", "v").py(), "OK", "then SET is accepted")
c.close()
n.stop()

# ---- the acknowledgement gate ------------------------------------------------------------------
pr = start_zarisd(threads=2, extra=["--write-lease", "yes", "--replica-ack", "1", "--replica-ack-timeout", "60000"],
                  name="ack-primary")
rp = start_zarisd(threads=2, extra=["--write-lease", "yes", "--replicaof", "%s %d" % (HOST, pr.port)],
                  name="ack-replica")
pc, rc = pr.client(), rp.client()
# a primary never leased since it started (restarted, maybe empty, waiting
# for the election) feeds no replica: a full sync from it would wipe the
# replica that is about to be elected
is_(err(pc.call("PSYNC", "?", "-1")),
    "NOMASTERLINK this primary's leadership is not confirmed yet (no write lease held since it started)",
    "PSYNC to a never-leased primary is refused")
pc.close()
pc = pr.client()
time.sleep(0.5 * SLOW)
ok(info(rc).get("master_link_status") != "up" and info(pc).get("connected_slaves") == "0",
   "the replica is not linked to a never-leased primary")
is_(pc.call("CLUSTER", "LEASE", str(mono_ms() + 60000)).py(), "OK", "the primary is leased")
ok(wait_in_sync(pc, rc, timeout=60), "then the replica syncs")
is_(pc.call("SET", "pre", "1").py(), "OK", "a SET acknowledged by the replica")
is_(rc.call("GET", "pre").py(), b"1", "the replica applied it, though never leased itself")
is_(err(rc.call("SET", "x", "1")), "READONLY You can't write against a read only replica.",
    "the replica refuses writes as a replica")

LEASE_MS = int(1500 * SLOW)
w = pr.client()
stop_process(rp.pid)
try:
    lease_end = mono_ms() + LEASE_MS
    is_(pc.call("CLUSTER", "LEASE", str(lease_end)).py(), "OK", "a lease of %d ms" % LEASE_MS)
    w.send("SET", "held", "v")
    data, closed = w.recv_until_closed(timeout=0.3)
    ok(not data and not closed, "the SET's reply is held while the replica is stopped (%r)" % (data,))
    while mono_ms() < lease_end + 300:
        time.sleep(0.05)
    is_(pc.call("CLUSTER", "LEASE").py(), 0, "the lease has lapsed")
finally:
    os.kill(rp.pid, signal.SIGCONT)
data, closed = w.recv_until_closed(timeout=30 * SLOW)
is_(data.decode("utf-8", "replace"), "-" + FENCED + ", the write may or may not be applied\r\n",
    "after SIGCONT the client gets the fenced error instead of +OK")
ok(closed, "and the connection is closed")
w.close()
is_(cinfo(pc).get("write_lease_acks_dropped"), "1", "INFO write_lease_acks_dropped:1")
ok(wait_in_sync(pc, rc, timeout=60), "the replica catches up")
is_((pc.call("GET", "held").py(), rc.call("GET", "held").py()), (b"v", b"v"),
    "the write was applied (the error says it may have been)")
is_(err(pc.call("SET", "after", "1")), FENCED, "the primary is fenced for new writes")
pc.close()
rc.close()
done_testing()
