#!/usr/bin/python3
# conformance_status.t — the status codes of PROTOCOL.md 5 that need a
# server state of their own, each produced for real over the native port
# and its text compared with what the same command gets over RESP3 on the
# same server at the same moment:
#   OOM (CONFIG SET maxmemory 1), NOREPLICAS (min-replicas-to-write 1, no
#   replica; and replica-ack 1, whose time-out is a GOODBYE with that text),
#   BUSY (a looping script sent over RESP, busy-reply-threshold 100 ms;
#   native clients on another worker and on the script's own; the wait is
#   for the first -BUSY, not for a clock), NOTBUSY and UNKILLABLE (COMMAND
#   SCRIPT KILL), READONLY (a zarisd made a replica with REPLICAOF over
#   RESP), MASTERDOWN (a replica of nothing with replica-serve-stale-data
#   no), CLUSTERDOWN / MOVED / CROSSSLOT (a cluster-mode zarisd before and
#   after a pushed topology giving half the slots to another node), NOAUTH
#   and WRONGPASS in the handshake (requirepass), maxclients' GOODBYE,
#   CLIENT PAUSE WRITE holding native writes, and in cluster mode the HELLO
#   flags, node id and TOPOLOGY's map (primaries, a replica, epoch).
#   ASK, TRYAGAIN and BUSYKEY: zarisd has no slot migration and no RESTORE,
#   so nothing produces them (not tested); LOADING, MISCONF, NOPERM, FENCED
#   and EXECABORT are not reachable from a native request here either.

import hashlib
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from zaris import *  # noqa: E402,F403
from native import *  # noqa: E402,F403
import native as nw  # noqa: E402

WAIT = 30.0 * SLOW
BUSY = b"-BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.\r\n"


def same_error(name, res, want, code):
    """RES (a native Result) has status CODE and the bytes of WANT (RESP3)."""
    good = res.status == code and res.value.raw == want.raw and want.raw[:1] == b"-"
    if not ok(good, name):
        diag("native: status %d %r" % (res.status, res.value.raw[:200]))
        diag("resp3:  %r (want status %d)" % (want.raw[:200], code))
    return good


srv = start_native(threads=2)
R = resp3(srv)
N = native(srv)

# ---- OOM ---------------------------------------------------------------------------------
R.call("FLUSHALL")
R.call("SET", "keep", "x" * 1000)
is_(R.call("CONFIG", "SET", "maxmemory", "1").raw, b"+OK\r\n", "CONFIG SET maxmemory 1")
res = N.one(op_set("k", "v"))
same_error("SET under maxmemory 1: status OOM, Redis's text", res, R.call("SET", "k", "v"), nw.STATUS["OOM"])
res = N.one(op_get("keep"))
is_(res.status, 0, "a read still runs under OOM")
res = N.one(op_command("LPUSH", "l", "x"))
is_(res.status, nw.STATUS["OOM"], "COMMAND LPUSH under OOM: status OOM")
R.call("CONFIG", "SET", "maxmemory", "0")
is_(N.one(op_set("k", "v")).value.raw, b"+OK\r\n", "SET runs again with maxmemory 0")

# ---- NOREPLICAS --------------------------------------------------------------------------
is_(R.call("CONFIG", "SET", "min-replicas-to-write", "1").raw, b"+OK\r\n", "CONFIG SET min-replicas-to-write 1")
res = N.one(op_set("k", "v2"))
same_error("SET without a replica: status NOREPLICAS, Redis's text", res, R.call("SET", "k", "v2"),
           nw.STATUS["NOREPLICAS"])
res = N.one(op_incrby("n", 1))
is_(res.status, nw.STATUS["NOREPLICAS"], "INCRBY: NOREPLICAS as well")
is_(N.one(op_get("k")).value.raw, b"$1\r\nv\r\n", "and nothing was written; GET runs")
R.call("CONFIG", "SET", "min-replicas-to-write", "0")

# ---- BUSY ---------------------------------------------------------------------------------
def native_on_workers(srv, ctrl, want, attempts=32):
    """{"same": a native client on worker WANT, "other": one on another},
    found by which worker's connected_clients (INFO threads) rises."""
    found, spare = {}, []
    for _ in range(attempts):
        before = clients_per_worker(ctrl)
        c = native(srv, timeout=WAIT)
        now = clients_per_worker(ctrl)
        up = [w for w in now if now[w] > before.get(w, 0)]
        role = None
        if len(up) == 1:
            role = "same" if up[0] == "worker%d" % want else "other"
        if role and role not in found:
            found[role] = c
        else:
            spare.append(c)
        if len(found) == 2:
            break
    for c in spare:
        c.close()
    return found


R.call("CONFIG", "SET", "busy-reply-threshold", "100")
runner = srv.client(timeout=WAIT)
w_run = worker_of(runner)
ctrl = srv.client()
nb = native_on_workers(srv, ctrl, w_run)
ctrl.close()
ok(w_run is not None and len(nb) == 2, "native clients on the script's worker (%s) and on another" % w_run)
# connections made while the script runs may land on its worker, which does
# not accept then: every client of this part is connected beforehand
other = client_on_other_worker(srv, runner)
other.call("HELLO", "3")
runner.send("EVAL", "local i = 0 while true do i = i + 1 end", "0")
deadline = time.monotonic() + WAIT
res = None
while "other" in nb and time.monotonic() < deadline:
    res = nb["other"].one(op_get("k"))
    if res.status != 0:
        break
    time.sleep(0.02)
ok(res is not None and res.status == nw.STATUS["BUSY"] and res.value.raw == BUSY,
   "GET while a script loops (another worker): status BUSY, Redis's text (%r)" % (res.value.raw[:100] if res else None))
is_(other.call("GET", "k").raw, BUSY, "RESP3 GET at the same moment gets the same text")
if "other" in nb:
    resp = nb["other"].call([op_get("k"), op_set("k", "x"), op_command("PING")])
    ok(not resp.problems and all(r.status == nw.STATUS["BUSY"] for r in resp.results),
       "every op of a 3-op request is BUSY: %r" % [r.status if r else None for r in resp.results])
if "same" in nb:
    nb["same"].sock.settimeout(5 * SLOW)
    try:
        res = nb["same"].one(op_get("k"))
        got = (res.status, res.value.raw)
    except (OSError, Closed, Goodbye, AssertionError) as e:
        got = repr(e)
    # the busy script's worker serves its other connections from the
    # script's hook, native ones too
    ok(got == (nw.STATUS["BUSY"], BUSY), "GET on the script's own worker: status BUSY too (%r)" % (got,))
killed = other.call("SCRIPT", "KILL")
is_(killed.raw, b"+OK\r\n", "SCRIPT KILL over RESP")
runner.read_reply()
runner.close()
for c in nb.values():
    c.close()
is_(N.one(op_get("k")).value.raw, b"$1\r\nv\r\n", "after SCRIPT KILL the native GET runs; the busy SET did not")
other.close()

# ---- NOTBUSY -------------------------------------------------------------------------------
res = N.one(op_command("SCRIPT", "KILL"))
same_error("COMMAND SCRIPT KILL with no script: status NOTBUSY, Redis's text", res, R.call("SCRIPT", "KILL"),
           nw.STATUS["NOTBUSY"])

# ---- replica-ack 1 without a replica: NOREPLICAS as a GOODBYE ----------------------------
# PROTOCOL.md 2: when replica-ack times out the results still queued are
# not sent; the connection gets GOODBYE with Redis's NOREPLICAS text (as a
# RESP client gets it before its close), never bare RESP bytes among frames.
R.call("CONFIG", "SET", "replica-ack-timeout", "200")
R.call("CONFIG", "SET", "replica-ack", "1")
r3 = resp3(srv)
want = r3.call("SET", "ack-resp", "v")
r3.close()
NA = native(srv)
NA.send_request([op_set("ack", "v")], fid=77)
reason, closed, others = NA.expect_goodbye(WAIT)
raw_left = bytes(NA.buf[:200])
NA.close()
R.call("CONFIG", "SET", "replica-ack", "0")
ok(reason is not None and closed and not others,
   "replica-ack 1, no replica: GOODBYE and a close, no other frame (%r, closed %s, others %r, unparsed %r)"
   % (reason, closed, others, raw_left))
is_(b"-" + (reason or b"") + b"\r\n", want.raw, "the GOODBYE's reason is the error text a RESP client gets")

# ---- maxclients refuses a native connection with GOODBYE --------------------------------
# R and N are the only connections left open: the server may not have
# reaped r3's and NA's closes yet, and a slot freed by one of them after
# the count was read would let the refused connection in
nclients = int(info_field(R, "clients", "connected_clients"))
deadline = time.time() + WAIT
while nclients != 2 and time.time() < deadline:
    time.sleep(0.02)
    nclients = int(info_field(R, "clients", "connected_clients"))
is_(nclients, 2, "before maxclients: only the test's two connections are counted")
R.call("CONFIG", "SET", "maxclients", str(nclients))
c = NativeClient(srv.native_port, timeout=WAIT, hello=False)
try:
    c.send(hello_frame())
except OSError:
    pass
reason, closed, others = c.expect_goodbye(WAIT)
c.close()
R.call("CONFIG", "SET", "maxclients", "10000")
ok(reason is not None and b"max number of clients" in reason and closed and not others,
   "maxclients reached: a native connection gets GOODBYE (%r) and is closed" % reason)

# ---- CLIENT PAUSE WRITE holds native writes, not reads -------------------------------------
R.call("DEL", "paused")
is_(R.call("CLIENT", "PAUSE", "100000", "WRITE").raw, b"+OK\r\n", "CLIENT PAUSE 100000 WRITE over RESP")
NP = native(srv)
is_(NP.one(op_get("paused")).value.raw, b"_\r\n", "a native GET runs during the pause")
fid = NP.send_request([op_set("paused", "v")])
# the SET must not run: poll a while (bounded) that it has not
ran = False
for _ in range(25):
    if R.call("EXISTS", "paused").py():
        ran = True
        break
    time.sleep(0.02)
ok(not ran, "a native SET waits while writes are paused")
R.call("CLIENT", "UNPAUSE")
r = NP.read_response(fid, 1)
ok(not r.problems and r[0].value.raw == b"+OK\r\n" and R.call("GET", "paused").py() == b"v",
   "after CLIENT UNPAUSE it runs and is answered")
NP.close()

# ---- requirepass: NOAUTH and WRONGPASS in the handshake ----------------------------------
psrv = start_native(threads=1, extra=["--requirepass", "s3cret"], name="zarisd-pass")
for user, pw, want, what in [
        (b"", b"", b"NOAUTH Authentication required.", "no password"),
        (b"", b"wrong", b"WRONGPASS invalid username-password pair or user is disabled.", "a wrong password"),
        (b"default", b"wrong", b"WRONGPASS invalid username-password pair or user is disabled.",
         "user default, a wrong password"),
        (b"nobody", b"s3cret", b"WRONGPASS invalid username-password pair or user is disabled.",
         "another user name")]:
    c = NativeClient(psrv.native_port, timeout=10 * SLOW, hello=False)
    got = None
    try:
        c.hello(user, pw)
    except Goodbye as g:
        got = g.reason
    except (Closed, OSError) as e:
        got = repr(e)
    is_(got, want, "requirepass, HELLO with %s: GOODBYE with Redis's text" % what)
    reason, closed, _ = c.expect_goodbye(5 * SLOW)
    ok(closed, "and the connection is closed")
    c.close()
with NativeClient(psrv.native_port, timeout=10 * SLOW, password=b"s3cret") as c:
    is_(c.one(op_set("k", "v")).value.raw, b"+OK\r\n", "requirepass, the right password: served")
with NativeClient(psrv.native_port, timeout=10 * SLOW, username=b"default", password=b"s3cret") as c:
    is_(c.one(op_get("k")).value.raw, b"$1\r\nv\r\n", "requirepass, user default and the right password: served")
psrv.stop()

# ---- READONLY on a replica ---------------------------------------------------------------
rsrv = start_native(threads=2, name="zarisd-replica")
RR = resp3(rsrv)
is_(RR.call("REPLICAOF", "127.0.0.1", str(srv.port)).raw, b"+OK\r\n", "REPLICAOF the first server over RESP")
deadline = time.monotonic() + WAIT
while time.monotonic() < deadline and info_field(RR, "replication", "master_link_status") != "up":
    time.sleep(0.05)
NR = native(rsrv)
res = NR.one(op_set("k", "v"))
same_error("SET on a replica: status READONLY, Redis's text", res, RR.call("SET", "k", "v"), nw.STATUS["READONLY"])
res = NR.one(op_command("DEL", "k"))
is_(res.status, nw.STATUS["READONLY"], "COMMAND DEL on a replica: READONLY")
ok(NR.one(op_get("k")).status == 0, "GET on a replica is served")
NR.close()
rsrv.stop()

# ---- cluster mode: CLUSTERDOWN, MOVED, CROSSSLOT, HELLO flags, TOPOLOGY ------------------
csrv = start_native(threads=2, extra=["--cluster-enabled", "yes"], name="zarisd-cluster")
CR = resp3(csrv)
NC = native(csrv)
myid = CR.call("CLUSTER", "MYID").py()
is_(NC.hello_reply.flags & (nw.HELLO_CLUSTER | nw.HELLO_RF1), nw.HELLO_CLUSTER, "HELLO flags: cluster mode, no RF1")
is_(NC.hello_reply.node_id, myid, "HELLO node_id is CLUSTER MYID")
res = NC.one(op_get("a"))
same_error("GET before a topology: status CLUSTERDOWN, Redis's text", res, CR.call("GET", "a"),
           nw.STATUS["CLUSTERDOWN"])

other_id = hashlib.sha1(b"conformance/other").hexdigest()
other_port = free_port()
other_native = free_port()
rep_id = hashlib.sha1(b"conformance/replica").hexdigest()
rep_port = free_port()
doc = "\n".join([
    "epoch 7", "cluster conformance", "myself %s" % myid.decode(),
    "node %s me 127.0.0.1 %d primary 0-8191 native %d" % (myid.decode(), csrv.port, csrv.native_port),
    "node %s other 127.0.0.1 %d primary 8192-16383 native %d" % (other_id, other_port, other_native),
    "node %s rep 127.0.0.1 %d replica %s" % (rep_id, rep_port, other_id)]) + "\n"
pushed = subprocess.run(["/usr/bin/redis-cli", "-p", str(csrv.port), "CLUSTER", "SETTOPOLOGY", doc],
                        capture_output=True, text=True, timeout=60)
is_(pushed.stdout.strip(), "OK", "CLUSTER SETTOPOLOGY: this node 0-8191, another 8192-16383")


def key_in(lo, hi):
    for i in range(100000):
        k = "key%d" % i
        if lo <= CR.call("CLUSTER", "KEYSLOT", k).py() <= hi:
            return k


mine, theirs = key_in(0, 8191), key_in(8192, 16383)
res = NC.one(op_set(mine, "v"))
is_(res.value.raw, b"+OK\r\n", "SET of a key of this node's slots")
for name, op, cmd in [("GET", op_get(theirs), ("GET", theirs)), ("SET", op_set(theirs, "v"), ("SET", theirs, "v")),
                      ("COMMAND LPUSH", op_command("LPUSH", theirs, "x"), ("LPUSH", theirs, "x"))]:
    same_error("%s of another node's key: status MOVED, Redis's text" % name, NC.one(op), CR.call(*cmd),
               nw.STATUS["MOVED"])
res = NC.one(op_get(theirs))
slot = CR.call("CLUSTER", "KEYSLOT", theirs).py()
is_(res.value.raw, b"-MOVED %d 127.0.0.1:%d\r\n" % (slot, other_port), "MOVED names the slot and the owner's address")
myslot = CR.call("CLUSTER", "KEYSLOT", mine).py()
for i in range(100000):
    k = "other%d" % i
    s = CR.call("CLUSTER", "KEYSLOT", k).py()
    if s <= 8191 and s != myslot:
        break
res = NC.one(op_mset([(mine, "1"), (k, "2")]))
same_error("MSET of two slots of this node: status CROSSSLOT, Redis's text", res, CR.call("MSET", mine, "1", k, "2"),
           nw.STATUS["CROSSSLOT"])
res = NC.one(op_mget([mine, k]))
is_(res.status, nw.STATUS["CROSSSLOT"], "MGET of two slots: CROSSSLOT")
res = NC.one(op_mset([(mine, "1"), ("{%s}x" % mine, "2")]))
is_(res.value.raw, b"+OK\r\n", "MSET of one slot (hash tag) runs")
t = NC.one(op_topology())
tp = t.value.py() if t.value.kind == "%" else {}
byid = {n.get(b"id"): n for n in tp.get(b"nodes", []) if isinstance(n, dict)} if tp else {}
ok(tp.get(b"epoch") == 7 and tp.get(b"cluster") is True and len(byid) == 3,
   "TOPOLOGY in cluster mode: epoch 7, cluster true, three nodes (%r)" % t.value.raw[:200])
me, oth, rep = byid.get(myid, {}), byid.get(other_id.encode(), {}), byid.get(rep_id.encode(), {})
is_((me.get(b"ip"), me.get(b"port"), me.get(b"native-port"), me.get(b"role"), me.get(b"primary"), me.get(b"slots")),
    (b"127.0.0.1", csrv.port, csrv.native_port, b"primary", b"", [[0, 8191]]),
    "TOPOLOGY: this node, its RESP and native ports, primary, 0-8191")
is_((oth.get(b"ip"), oth.get(b"port"), oth.get(b"native-port"), oth.get(b"role"), oth.get(b"primary"),
     oth.get(b"slots")), (b"127.0.0.1", other_port, other_native, b"primary", b"", [[8192, 16383]]),
    "TOPOLOGY: the other primary, its declared native port, 8192-16383")
is_((rep.get(b"ip"), rep.get(b"port"), rep.get(b"native-port"), rep.get(b"role"), rep.get(b"primary"),
     rep.get(b"slots")), (b"127.0.0.1", rep_port, 0, b"replica", other_id.encode(), []),
    "TOPOLOGY: the replica, no native port declared (0), its primary's id, no slots")
NC.close()
ok(srv.alive() and csrv.alive(), "the servers are up at the end")
csrv.stop()

# ---- MASTERDOWN: a replica of nothing, replica-serve-stale-data no -----------------------
msrv = start_native(threads=1, name="zarisd-stale")
MR = resp3(msrv)
MR.call("CONFIG", "SET", "replica-serve-stale-data", "no")
MR.call("REPLICAOF", "127.0.0.1", str(free_port()))
with native(msrv) as NM:
    same_error("GET on a replica whose link is down, no stale data: status MASTERDOWN, Redis's text",
               NM.one(op_get("k")), MR.call("GET", "k"), nw.STATUS["MASTERDOWN"])
msrv.stop()

# ---- UNKILLABLE: SCRIPT KILL over native while a script that wrote loops ----------------
usrv = start_native(threads=2, name="zarisd-unkillable")
UR = usrv.client()
UR.call("CONFIG", "SET", "busy-reply-threshold", "100")
urun = usrv.client(timeout=WAIT)
ctrl = usrv.client()
un = native_on_workers(usrv, ctrl, worker_of(urun))
ctrl.close()
uo = client_on_other_worker(usrv, urun)
uo.call("HELLO", "3")
urun.send("EVAL", "redis.call('SET', KEYS[1], 'w') local i = 0 while true do i = i + 1 end", "1", "uk")
res = None
deadline = time.monotonic() + WAIT
while "other" in un and time.monotonic() < deadline:
    res = un["other"].one(op_get("k"))
    if res.status != 0:
        break
    time.sleep(0.02)
if "other" in un and res is not None and res.status == nw.STATUS["BUSY"]:
    same_error("COMMAND SCRIPT KILL of a script that wrote: status UNKILLABLE, Redis's text",
               un["other"].one(op_command("SCRIPT", "KILL")), uo.call("SCRIPT", "KILL"), nw.STATUS["UNKILLABLE"])
else:
    ok(False, "COMMAND SCRIPT KILL of a script that wrote: the script never made the server BUSY (%r)" % res)
uo.send("SHUTDOWN", "NOSAVE")
try:
    usrv.proc.wait(WAIT)
except subprocess.TimeoutExpired:
    pass
for c in un.values():
    c.close()
done_testing()
