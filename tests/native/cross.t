#!/usr/bin/python3
# cross.t — the native and RESP protocols over one keyspace: writes over
# each seen by the other (values, databases, metadata through METAPUT and
# METAGET, TTLs), INVALIDATE removing keys labelled over RESP, keyspace
# notifications to a RESP subscriber firing for native writes exactly as for
# the same writes over RESP (same events, same order; a PUBLISH of a marker
# from the same connection ends each batch, so no wait depends on a clock),
# WATCH over RESP aborted by a native write, and a replica (zarisd with
# --replicaof) receiving the native writes made on its primary.

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from zaris import *  # noqa: E402,F403
from native import *  # noqa: E402,F403

WAIT = 30.0 * SLOW

srv = start_native(threads=2)
R = srv.client()  # RESP2
R3 = resp3(srv)
N = native(srv)


def norm_meta(v):
    """A METAGET reply's plain value without its version (a clock), with
    expire-at-ms as "set" or "none"."""
    if isinstance(v, list):
        v = {v[i]: v[i + 1] for i in range(0, len(v), 2)}
    if isinstance(v, dict):
        v = dict(v)
        v.pop(b"version", None)
        v[b"expire-at-ms"] = "none" if v.get(b"expire-at-ms") in (None, -1) else "set"
    return v


def meta_of(c, key):
    """METAGET through a RESP client, normalised."""
    return norm_meta(c.call("METAGET", key).py())


# ---- values both ways, in several databases -----------------------------------------------
R.call("FLUSHALL")
R.call("SET", "r1", "from-resp")
is_(N.one(op_get("r1")).value.raw, b"$9\r\nfrom-resp\r\n", "SET over RESP, GET over native")
N.one(op_set("n1", b"from-\x00native"))
is_(R.call("GET", "n1").py(), b"from-\x00native", "SET over native, GET over RESP")
N.one(op_set("d", "in-db7", db=7))
R.call("SELECT", "7")
is_(R.call("GET", "d").py(), b"in-db7", "a native SET in db 7 is in RESP's db 7")
R.call("SET", "d2", "resp-db7")
R.call("SELECT", "0")
is_(R.call("GET", "d").py(), None, "and not in db 0")
is_(N.one(op_get("d2", db=7)).value.raw, b"$8\r\nresp-db7\r\n", "a RESP SET in db 7 is read by a native GET in db 7")
R.call("RPUSH", "lst", "a")
is_(N.one(op_get("lst")).status, 2, "a list made over RESP is WRONGTYPE for a native GET")
N.one(op_incrby("ctr", 5))
is_(R.call("INCRBY", "ctr", "2").py(), 7, "INCRBY over native then over RESP")
N.one(op_mset([("m1", "a"), ("m2", "b")]))
is_(R.call("MGET", "m1", "m2").py(), [b"a", b"b"], "native MSET seen by RESP MGET")
R.call("MSET", "m3", "c", "m4", "d")
is_(N.one(op_mget(["m3", "m4"])).value.py(), [b"c", b"d"], "RESP MSET seen by native MGET")
N.one(op_del("r1"))
is_(R.call("EXISTS", "r1").py(), 0, "native DEL of a key written over RESP")

# ---- metadata -----------------------------------------------------------------------------
R.call("METAPUT", "mp", "v", "LABELS", "2", "a", "b", "ENTITY", "user:1", "CONTENTTYPE", "text/plain")
want = {b"labels": [b"a", b"b"], b"entity": b"user:1", b"content-type": b"text/plain", b"expire-at-ms": "none"}
is_(norm_meta(N.one(op_metaget("mp")).value.py()), want, "METAPUT over RESP, METAGET over native")
N.one(op_set("ns", "v", meta=(["x"], "ent", "a/b")))
is_(meta_of(R3, "ns"), {b"labels": [b"x"], b"entity": b"ent", b"content-type": b"a/b", b"expire-at-ms": "none"},
    "a native SET with meta, METAGET over RESP")
N.one(op_set("nst", "v", 100500, meta=([], "ent", "")))
is_(meta_of(R3, "nst"), {b"labels": [], b"entity": b"ent", b"content-type": None, b"expire-at-ms": "set"},
    "a native SET with meta and a TTL, METAGET over RESP")
N.one(op_metaset("mp", (["c"], "", "")))
m = meta_of(R3, "mp")
is_((m[b"labels"], m[b"entity"], m[b"content-type"]) if m else None, ([b"c"], None, None),
    "a native METASET replaces what RESP's METAPUT set")
is_(R.call("GET", "mp").py(), b"v", "and leaves the value")
R.call("METASET", "ns", "ADDLABELS", "1", "y")
mg = N.one(op_metaget("ns")).value.py()
is_(mg.get(b"labels") if isinstance(mg, dict) else mg, [b"x", b"y"], "RESP METASET ADDLABELS seen by native METAGET")

# ---- TTLs ------------------------------------------------------------------------------------
N.one(op_set("t1", "v", 100500))
p = R.call("PTTL", "t1").py()
ok(90000 < p <= 100500, "a native SET's TTL seen by RESP PTTL (%d)" % p)
R.call("SET", "t2", "v", "PX", "200500")
p = N.one(op_pttl("t2")).value.value
ok(190000 < p <= 200500, "a RESP SET's TTL seen by native PTTL (%d)" % p)
N.one(op_persist("t2"))
is_(R.call("PTTL", "t2").py(), -1, "native PERSIST seen over RESP")
R.call("PEXPIRE", "t1", "0")
is_(N.one(op_exists("t1")).value.raw, b":0\r\n", "RESP PEXPIRE 0 deleted it for native")
N.one(op_pexpire("t3", 1000))
R.call("SET", "t3", "v")
N.one(op_pexpire("t3", 300500))
p = R.call("PTTL", "t3").py()
ok(290000 < p <= 300500, "native PEXPIRE of a RESP key (%d)" % p)
R.call("SET", "t4", "v", "PX", "1")
deadline = time.monotonic() + WAIT
while time.monotonic() < deadline and R.call("PTTL", "t4").py() != -2:
    time.sleep(0.01)
is_(N.one(op_get("t4")).value.raw, b"_\r\n", "a RESP key past its TTL is gone for native GET")

# ---- INVALIDATE ----------------------------------------------------------------------------
for i in range(20):
    R.call("METAPUT", "inv%d" % i, "v", "LABELS", "1", "lab" if i % 2 == 0 else "other", "ENTITY", "e%d" % (i % 4))
r = N.one(op_invalidate("lab", "e0"))
is_(r.value.raw, b":5\r\n", "native INVALIDATE lab ENTITY e0 deleted the 5 keys METAPUT gave them")
is_([R.call("EXISTS", "inv%d" % i).py() for i in range(0, 20, 4)], [0] * 5, "those keys are gone over RESP")
r = N.one(op_invalidate("lab"))
is_(r.value.raw, b":5\r\n", "native INVALIDATE lab deleted the other 5 labelled lab")
is_(sum(R.call("EXISTS", "inv%d" % i).py() for i in range(20)), 10, "the 10 labelled other are still there")

# ---- keyspace notifications ---------------------------------------------------------------
R.call("CONFIG", "SET", "notify-keyspace-events", "KEA")
sub = srv.client(timeout=WAIT)
sub.call("PSUBSCRIBE", "__key*__:*")
sub.call("SUBSCRIBE", "marker")

NATIVE_BATCH = [
    op_set("ev", "1"), op_set("ev", "2", 100500), op_incrby("ev", 3), op_getset("ev", "x"), op_pexpire("ev", 200500),
    op_persist("ev"), op_mset([("ev2", "a"), ("ev3", "b")]), op_del("ev2"), op_getdel("ev3"),
    op_set("ev4", "v", meta=(["l"], "", "")), op_metaset("ev4", (["m"], "", "")), op_invalidate("m"),
    op_set("ev5", "v", nx=True), op_set("ev5", "w", xx=True, get=True), op_pexpire("ev5", 0),
    op_command("LPUSH", "evl", "a"), op_command("HSET", "evh", "f", "v"),
]
RESP_BATCH = [
    ("SET", "ev", "1"), ("SET", "ev", "2", "PX", "100500"), ("INCRBY", "ev", "3"), ("GETSET", "ev", "x"),
    ("PEXPIRE", "ev", "200500"), ("PERSIST", "ev"), ("MSET", "ev2", "a", "ev3", "b"), ("DEL", "ev2"),
    ("GETDEL", "ev3"), ("METAPUT", "ev4", "v", "LABELS", "1", "l"), ("METASET", "ev4", "CLEAR", "LABELS", "1", "m"),
    ("METAINVALIDATE", "m"), ("SET", "ev5", "v", "NX"), ("SET", "ev5", "w", "XX", "GET"), ("PEXPIRE", "ev5", "0"),
    ("LPUSH", "evl", "a"), ("HSET", "evh", "f", "v"),
]


def events_until_marker(tag):
    out = []
    for _ in range(10000):
        m = sub.read_reply().py()
        if m[0] == b"message" and m[1] == b"marker":
            if m[2] == tag:
                return out
            continue
        out.append(tuple(m[2:]))
    return out


R.call("FLUSHALL")
resp = N.call(NATIVE_BATCH)
N.one(op_command("PUBLISH", "marker", "n"))
native_events = events_until_marker(b"n")
R.call("FLUSHALL")
for cmd in RESP_BATCH:
    R.call(*cmd)
R.call("PUBLISH", "marker", "r")
resp_events = events_until_marker(b"r")
ok(len(resp_events) > 20, "the RESP batch made %d events" % len(resp_events))
if not is_(native_events, resp_events, "the native batch made the same keyspace events, in the same order"):
    for i in range(max(len(native_events), len(resp_events))):
        a = native_events[i] if i < len(native_events) else None
        b = resp_events[i] if i < len(resp_events) else None
        if a != b:
            diag("event %d: native %r, resp %r" % (i, a, b))
R.call("CONFIG", "SET", "notify-keyspace-events", "")
sub.close()

# ---- WATCH aborted by a native write ------------------------------------------------------
R.call("SET", "w", "0")
R.call("WATCH", "w")
R.call("MULTI")
R.call("SET", "w", "from-multi")
N.one(op_set("w", "from-native"))
is_(R.call("EXEC").raw, b"*-1\r\n", "WATCH over RESP, a native SET, EXEC aborts")
is_(R.call("GET", "w").py(), b"from-native", "the native write stands")
for name, op in [("INCRBY", op_incrby("w2", 1)), ("DEL", op_del("w2")), ("PEXPIRE", op_pexpire("w2", 100000)),
                 ("METASET", op_metaset("w2", (["q"], "", ""))), ("COMMAND APPEND", op_command("APPEND", "w2", "x"))]:
    R.call("SET", "w2", "1")
    R.call("WATCH", "w2")
    R.call("MULTI")
    R.call("GET", "w2")
    N.one(op)
    is_(R.call("EXEC").raw, b"*-1\r\n", "WATCH aborted by a native %s" % name)
R.call("SET", "w3", "1")
R.call("WATCH", "w3")
R.call("MULTI")
R.call("GET", "w3")
N.one(op_get("w3"))
N.one(op_set("other", "x"))
is_(R.call("EXEC").raw, b"*1\r\n$1\r\n1\r\n", "a native read and a write of another key do not abort it")

# ---- a replica gets the native writes of its primary -----------------------------------
rep = start_zarisd(threads=2, extra=["--replicaof", "127.0.0.1 %d" % srv.port], name="zarisd-replica")
RR = rep.client()
deadline = time.monotonic() + WAIT
while time.monotonic() < deadline and "master_link_status:up" not in RR.call("INFO", "replication").py().decode():
    time.sleep(0.05)
ops = [op_set("rk%d" % i, "v%d" % i) for i in range(200)] + [
    op_set("rttl", "v", 500500), op_incrby("rctr", 41), op_incrby("rctr", 1), op_mset([("rm1", "1"), ("rm2", "2")]),
    op_set("rmeta", "v", meta=(["l1", "l2"], "ent", "c/t")), op_del("rk0"), op_getdel("rk1"), op_set("rk2", "x", db=3),
    op_command("RPUSH", "rlist", "a", "b"), op_set("rdone", "1")]
resp = N.call(ops)
ok(not resp.problems and all(r.status == 0 for r in resp.results), "210 native writes on the primary")
deadline = time.monotonic() + WAIT
while time.monotonic() < deadline and RR.call("GET", "rdone").py() != b"1":
    time.sleep(0.02)
is_(RR.call("GET", "rdone").py(), b"1", "the replica got the last native write")
is_([RR.call("GET", "rk%d" % i).py() for i in (0, 1, 2, 3, 199)], [None, None, b"v2", b"v3", b"v199"],
    "the replica has the native SETs, DEL and GETDEL")
RR.call("SELECT", "3")
is_(RR.call("GET", "rk2").py(), b"x", "and the SET in db 3")
RR.call("SELECT", "0")
is_(RR.call("GET", "rctr").py(), b"42", "and the INCRBYs")
is_(RR.call("MGET", "rm1", "rm2").py(), [b"1", b"2"], "and the MSET")
is_(RR.call("LRANGE", "rlist", "0", "-1").py(), [b"a", b"b"], "and the COMMAND RPUSH")
p = RR.call("PTTL", "rttl").py()
ok(400000 < p <= 500500, "and the TTL (%d)" % p)
is_(meta_of(RR, "rmeta"), meta_of(R, "rmeta"), "and the metadata, as the primary has it")
is_(RR.call("DBSIZE").py(), R.call("DBSIZE").py(), "the replica's db 0 has as many keys as the primary's")

ok(srv.alive() and rep.alive(), "both servers up at the end")
done_testing()
