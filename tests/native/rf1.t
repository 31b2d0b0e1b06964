#!/usr/bin/python3
# rf1.t — native-rf1 (PROTOCOL.md 8). Refused where it must be: zarisd
# exits non-zero, naming native-rf1, when started with it and appendonly
# yes or replicaof; on a running RF1 node CONFIG SET appendonly yes, CONFIG
# SET native-rf1 (immutable), REPLICAOF/SLAVEOF host port, SYNC and PSYNC
# are refused with errors naming native-rf1, and a zarisd started with
# --replicaof pointing at it is refused (its log names native-rf1; the RF1
# node counts no replica and the replica gets none of its keys). With RF1
# on: HELLO's RF1 flag, native writes work, SAVE and a restart after kill -9
# keep what was saved (values, TTLs, metadata; what came after the SAVE is
# gone: there is no append-only log), WATCH and keyspace events still fire,
# and a seeded batch of thousands of ops over many keys gives exactly the
# results, index by index, and the final keyspace of the same batch on a
# zarisd without RF1.

import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from zaris import *  # noqa: E402,F403
from native import *  # noqa: E402,F403
import native as nw  # noqa: E402

WAIT = 30.0 * SLOW
RF1 = ["--native-rf1", "yes"]


def start_refused(extra):
    """Runs zarisd with EXTRA; (exit status or None if it kept running, output)."""
    d = tempfile.mkdtemp(prefix="zaris-rf1-")
    argv = [zarisd_path(), "--port", str(free_port()), "--bind", "127.0.0.1", "--native-port", str(free_port()),
            "--dir", d, "--save", ""] + extra
    try:
        return run_until_exit(argv, WAIT, prefix="zaris-rf1-run-")
    finally:
        shutil.rmtree(d, ignore_errors=True)


# ---- refused at start-up ---------------------------------------------------------------------
other = start_zarisd(threads=1, name="zarisd-plain-primary")
for what, extra in [("appendonly yes", RF1 + ["--appendonly", "yes"]),
                    ("appendonly yes given first", ["--appendonly", "yes"] + RF1),
                    ("replicaof", RF1 + ["--replicaof", "127.0.0.1 %d" % other.port]),
                    ("slaveof", RF1 + ["--slaveof", "127.0.0.1 %d" % other.port])]:
    rc, out = start_refused(extra)
    ok(rc not in (None, 0) and "native-rf1" in out,
       "native-rf1 yes with %s: zarisd exits non-zero naming native-rf1 (exit %r)" % (what, rc))
    if rc in (None, 0) or "native-rf1" not in out:
        diag(out[-1500:])

# ---- a running RF1 node refuses what would make copies ------------------------------------
srv = start_native(threads=2, extra=RF1, name="zarisd-rf1")
R = srv.client()
N = native(srv)
is_(N.hello_reply.flags & (nw.HELLO_RF1 | nw.HELLO_CLUSTER), nw.HELLO_RF1, "HELLO flags: RF1 on, not cluster")
for cmd in [("CONFIG", "SET", "appendonly", "yes"), ("REPLICAOF", "127.0.0.1", str(other.port)),
            ("SLAVEOF", "127.0.0.1", str(other.port))]:
    r = R.call(*cmd)
    ok(r.is_error() and "native-rf1" in str(r.value), "%s refused naming native-rf1 (%r)" % (" ".join(cmd), r.value))
r = R.call("CONFIG", "SET", "native-rf1", "no")
ok(r.is_error(), "CONFIG SET native-rf1 no is refused (%r)" % r.value)
is_(R.call("CONFIG", "GET", "appendonly").py(), [b"appendonly", b"no"], "appendonly is still no")
is_(R.call("CONFIG", "GET", "native-rf1").py(), [b"native-rf1", b"yes"], "native-rf1 is still yes")
ok("role:master" in R.call("INFO", "replication").py().decode(), "the node is still a primary")
for cmd in [("SYNC",), ("PSYNC", "?", "-1")]:
    c = srv.client(timeout=WAIT)
    r = c.call(*cmd)
    ok(r.is_error() and "native-rf1" in str(r.value), "%s from a would-be replica refused naming native-rf1 (%r)"
       % (" ".join(cmd), r.value if r.is_error() else r.raw[:60]))
    c.close()
r = N.one(op_command("CONFIG", "SET", "appendonly", "yes"))
ok(r.status == 1 and b"native-rf1" in r.value.raw, "CONFIG SET appendonly yes over native: refused too")

R.call("SET", "rf1-key", "v")
rep = start_zarisd(threads=1, extra=["--replicaof", "127.0.0.1 %d" % srv.port], name="zarisd-would-be-replica")
deadline = time.monotonic() + WAIT
while time.monotonic() < deadline and "native-rf1" not in rep.log_tail(20000):
    time.sleep(0.05)
ok("native-rf1" in rep.log_tail(20000), "a zarisd started with replicaof the RF1 node logs the refusal naming native-rf1")
RP = rep.client()
is_(RP.call("EXISTS", "rf1-key").py(), 0, "it got none of the RF1 node's keys")
ok("master_link_status:up" not in RP.call("INFO", "replication").py().decode(), "its link is not up")
ok("connected_slaves:0" in R.call("INFO", "replication").py().decode(), "the RF1 node counts no replica")
RP.close()
rep.stop()
other.stop()

# ---- no change-stream records for native writes ------------------------------------------
# PROTOCOL.md 8: with RF1 native writes make no change-stream (journal)
# record; RESP writes still do. INFO persistence's journal_seq is the
# stream's last record.
def journal_seq():
    v = info_field(R, "persistence", "journal_seq")
    return int(v) if v is not None else None


j0 = journal_seq()
resp = N.call([op_set("j%d" % i, "v") for i in range(50)] + [op_incrby("jc", 1), op_del("j0"),
                                                            op_command("SET", "jcmd", "v")])
j1 = journal_seq()
R.call("SET", "jresp", "v")
j2 = journal_seq()
ok(j0 is not None and j1 == j0, "RF1: 53 native writes made no change-stream record (journal_seq %r -> %r)" % (j0, j1))
ok(j2 is not None and j1 is not None and j2 > j1, "RF1: a RESP write still does (%r -> %r)" % (j1, j2))

# ---- native writes, SAVE, kill -9, restart ---------------------------------------------------
R.call("FLUSHALL")
resp = N.call([op_set("s%d" % i, "v%d" % i) for i in range(500)] + [
    op_set("sttl", "v", 900500), op_set("smeta", "v", meta=(["a", "b"], "e", "c/t")), op_incrby("sctr", 9),
    op_set("sdb", "x", db=4), op_mset([("sm1", "1"), ("sm2", "2")])])
ok(not resp.problems and all(r.status == 0 for r in resp.results), "505 native writes on the RF1 node")
is_(R.call("SAVE").raw, b"+OK\r\n", "SAVE")
N.one(op_set("after-save", "lost"))
N.one(op_del("s0"))
meta_before = R.call("METAGET", "smeta").py()
N.close()
srv.kill()
restart_native(srv)
R = srv.client()
N = native(srv)
is_(N.one(op_get("s499")).value.raw, b"$4\r\nv499\r\n", "after kill -9 and a restart: a saved native write is there")
is_(R.call("DBSIZE").py(), 505, "db 0 has the 505 keys saved")
is_(N.one(op_get("s0")).value.raw, b"$2\r\nv0\r\n", "the DEL after SAVE is gone (no append-only log)")
is_(N.one(op_get("after-save")).value.raw, b"_\r\n", "so is the SET after SAVE")
p = N.one(op_pttl("sttl")).value.value
ok(800000 < p <= 900500, "the TTL was kept (%d)" % p)
is_(R.call("METAGET", "smeta").py(), meta_before, "the metadata was kept")
is_(N.one(op_get("sdb", db=4)).value.raw, b"$1\r\nx\r\n", "the write to db 4 was kept")
is_(N.one(op_get("sctr")).value.raw, b"$1\r\n9\r\n", "the INCRBY was kept")
is_(N.hello_reply.flags & nw.HELLO_RF1, nw.HELLO_RF1, "RF1 is on after the restart")

# ---- WATCH and keyspace events still fire ---------------------------------------------------
R.call("WATCH", "s1")
R.call("MULTI")
R.call("GET", "s1")
N.one(op_set("s1", "changed"))
is_(R.call("EXEC").raw, b"*-1\r\n", "RF1: WATCH over RESP aborted by a native write")
R.call("CONFIG", "SET", "notify-keyspace-events", "KEA")
sub = srv.client(timeout=WAIT)
sub.call("SUBSCRIBE", "__keyevent@0__:set", "marker")
sub.read_reply()  # the second channel's confirmation
N.call([op_set("ev%d" % i, "v") for i in range(5)])
N.one(op_command("PUBLISH", "marker", "m"))
got = []
for _ in range(100):
    m = sub.read_reply().py()
    if m[1] == b"marker":
        break
    got.append(m[2])
is_(sorted(got), [b"ev%d" % i for i in range(5)], "RF1: a 5-op request made 5 set events")
sub.close()
R.call("CONFIG", "SET", "notify-keyspace-events", "")

# ---- order on one key, and requests that are not single-key only ------------------------
resp = N.call([op_incrby("ord", 1) for _ in range(1000)])
is_([r.value.raw if r else None for r in resp.results], [b":%d\r\n" % (i + 1) for i in range(1000)],
    "RF1: 1000 INCRBYs of one key in one request run in request order")
ops = []
for i in range(200):
    k = "o%d" % (i % 17)
    ops += [op_set(k, "a%d" % i), op_command("APPEND", k, "b"), op_get(k), op_mget([k])]
resp = N.call(ops)
want = []
for i in range(200):
    v = b"a%db" % i
    want += [b"+OK\r\n", b":%d\r\n" % len(v), b"$%d\r\n%s\r\n" % (len(v), v), b"*1\r\n$%d\r\n%s\r\n" % (len(v), v)]
ok(not resp.problems and [r.value.raw for r in resp.results] == want,
   "RF1: a request with COMMAND and MGET ops runs in order (SET, APPEND, GET, MGET of 17 keys, 800 ops)")

# ---- a batch of many ops: the same results without RF1 --------------------------------------
plain = start_native(threads=2, name="zarisd-not-rf1")
rng = seeded_rng()
NKEYS = 400
NOPS = sweep_size("ZARIS_RF1_OPS", 20000, 4000)


def key():
    return "b%d" % rng.randrange(NKEYS)


def random_op():
    k = key()
    pick = rng.randrange(20)
    return [
        lambda: op_get(k), lambda: op_set(k, "v%d" % rng.randrange(100)), lambda: op_set(k, "n", nx=True),
        lambda: op_set(k, "x", xx=True, get=True), lambda: op_del(k), lambda: op_exists(k),
        lambda: op_incrby("c%d" % rng.randrange(20), rng.randrange(-3, 4)), lambda: op_getset(k, "g"),
        lambda: op_getdel(k), lambda: op_mget([key() for _ in range(rng.randrange(1, 5))]),
        lambda: op_mset([(key(), "m") for _ in range(rng.randrange(1, 4))]), lambda: op_persist(k),
        lambda: op_command("APPEND", k, "a"), lambda: op_command("STRLEN", k),
        lambda: op_set(k, "t", 600500), lambda: op_metaset(k, (["l%d" % rng.randrange(3)], "", "")),
        lambda: op_set(k, "mv", meta=(["l%d" % rng.randrange(3)], "e", "")), lambda: op_incrby(k, 1),
        lambda: op_command("LPUSH", "L" + k, "x"), lambda: op_get("L" + k),
    ][pick]()


batches = []
done = 0
while done < NOPS:
    n = min(NOPS - done, rng.choice([1, 7, 100, 1000, 5000]))
    batches.append([random_op() for _ in range(n)])
    done += n


def run(s):
    c = native(s, timeout=WAIT)
    rc = s.client()
    rc.call("FLUSHALL")
    rc.call("MSET", *[x for i in range(0, NKEYS, 3) for x in ("b%d" % i, "seed%d" % i)])
    rc.call("RPUSH", "b1", "list")
    out, probs, frames = [], [], 0
    for ops in batches:
        r = c.call(ops)
        probs += r.problems
        frames += r.frames
        out.append([(x.status, x.value.raw) if x else None for x in r.results])
    # the keyspace afterwards: every key's type, value, TTL bucket and metadata labels
    state = []
    for name in sorted(set(["b%d" % i for i in range(NKEYS)] + ["Lb%d" % i for i in range(NKEYS)] +
                           ["c%d" % i for i in range(20)])):
        t = rc.call("TYPE", name).py()
        v = rc.call("GET", name).raw if t == "string" else rc.call("LLEN", name).raw if t == "list" else None
        p = rc.call("PTTL", name).py()
        m = rc.call("METAGET", name).py()
        labels = m[1] if isinstance(m, list) else None
        state.append((name, t, v, p if p < 0 else (p + 50000) // 100000, labels))
    c.close()
    rc.close()
    return out, probs, frames, state


got, gprobs, gframes, gstate = run(srv)
want, wprobs, wframes, wstate = run(plain)
ok(not gprobs, "RF1: every op of %d requests answered once, LAST on the final frame (%d frames)"
   % (len(batches), gframes))
for p in gprobs[:5]:
    diag(p)
ok(not wprobs, "without RF1 too (%d frames)" % wframes)
diffs = [(b, i) for b in range(len(batches)) for i in range(len(batches[b])) if got[b][i] != want[b][i]]
if not ok(not diffs, "%d ops in %d requests: RF1's results are those without RF1, index by index" % (NOPS, len(batches))):
    for b, i in diffs[:5]:
        diag("request %d op %d: rf1 %r, plain %r" % (b, i, got[b][i], want[b][i]))
sd = [(a, b) for a, b in zip(gstate, wstate) if a != b]
if not ok(not sd and len(gstate) == len(wstate), "and the same keyspace afterwards (%d keys compared)" % len(gstate)):
    for a, b in sd[:5]:
        diag("rf1 %r, plain %r" % (a, b))
errors = sum(1 for b in got for x in b if x and x[0] != 0)
ok(errors > 0, "the batch had error results too (%d: WRONGTYPE, not an integer)" % errors)

ok(srv.alive() and plain.alive(), "both servers up at the end")
done_testing()
