#!/usr/bin/python3
# conformance.t — every operation of PROTOCOL.md 4 against a zarisd with
# --native-port, each result compared byte for byte with what the same
# request gives over RESP3 (HELLO 3) on the same server, from the same
# starting state (FLUSHALL and the case's setup before each side), and the
# keys' state afterwards compared too (value, type, TTL in 10 s buckets,
# metadata without its version). Every error result's status must be the
# one PROTOCOL.md 5 gives its first word. Then: the refused commands of 4.1,
# the HELLO reply (client id as CLIENT LIST shows it, flags, max_frame),
# TOPOLOGY outside cluster mode, INFO commandstats counting native ops,
# index coverage and LAST, pipelining, requests of 1, 16, 1000 and 65535
# ops, values of 1 MiB and more, and request order on one key.
# The status codes needing their own server (OOM, BUSY, NOREPLICAS, NOAUTH,
# WRONGPASS, READONLY, MOVED, CROSSSLOT, CLUSTERDOWN) are in
# conformance_status.t.

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from zaris import *  # noqa: E402,F403
from native import *  # noqa: E402,F403
import native as nw  # noqa: E402

srv = start_native(threads=2)
R = resp3(srv)
N = native(srv)

S = [("SET", "k", "old")]
T = [("SET", "k", "old", "PX", "100500")]
L = [("RPUSH", "k", "a")]
M = [("METAPUT", "k", "old", "LABELS", "2", "l1", "l2", "ENTITY", "e1", "CONTENTTYPE", "a/b")]
BIG_NUMBER = "1234567890123456789012345678901234567890"


def meta_cmd(meta):
    labels, entity, ctype = meta
    out = []
    if labels:
        out += ["LABELS", str(len(labels))] + list(labels)
    if entity:
        out += ["ENTITY", entity]
    if ctype:
        out += ["CONTENTTYPE", ctype]
    return out


# (name, setup over RESP, native op, RESP equivalent, keys whose state is compared, db, how to compare values)
CASES = [
    ("GET missing", [], op_get("k"), ("GET", "k")),
    ("GET string", S, op_get("k"), ("GET", "k")),
    ("GET list", L, op_get("k"), ("GET", "k")),
    ("GET binary key and value", [("SET", b"b\x00\r\n\xff", b"\x00\r\nv\xfe")], op_get(b"b\x00\r\n\xff"),
     ("GET", b"b\x00\r\n\xff"), [b"b\x00\r\n\xff"]),
    ("GET empty key", [("SET", "", "e")], op_get(""), ("GET", ""), [""]),
    ("SET new", [], op_set("k", "v"), ("SET", "k", "v")),
    ("SET over string", S, op_set("k", "v"), ("SET", "k", "v")),
    ("SET over list", L, op_set("k", "v"), ("SET", "k", "v")),
    ("SET ttl", [], op_set("k", "v", 100500), ("SET", "k", "v", "PX", "100500")),
    ("SET ttl 0 clears a TTL", T, op_set("k", "v"), ("SET", "k", "v")),
    ("SET empty value", [], op_set("k", ""), ("SET", "k", "")),
    ("SET NX missing", [], op_set("k", "v", nx=True), ("SET", "k", "v", "NX")),
    ("SET NX existing", S, op_set("k", "v", nx=True), ("SET", "k", "v", "NX")),
    ("SET XX missing", [], op_set("k", "v", xx=True), ("SET", "k", "v", "XX")),
    ("SET XX existing", S, op_set("k", "v", xx=True), ("SET", "k", "v", "XX")),
    ("SET XX ttl", S, op_set("k", "v", 100500, xx=True), ("SET", "k", "v", "PX", "100500", "XX")),
    ("SET GET missing", [], op_set("k", "v", get=True), ("SET", "k", "v", "GET")),
    ("SET GET existing", S, op_set("k", "v", get=True), ("SET", "k", "v", "GET")),
    ("SET GET list", L, op_set("k", "v", get=True), ("SET", "k", "v", "GET")),
    ("SET NX GET existing", S, op_set("k", "v", nx=True, get=True), ("SET", "k", "v", "NX", "GET")),
    ("SET NX GET missing", [], op_set("k", "v", nx=True, get=True), ("SET", "k", "v", "NX", "GET")),
    ("SET XX GET missing", [], op_set("k", "v", xx=True, get=True), ("SET", "k", "v", "XX", "GET")),
    ("SET KEEPTTL", T, op_set("k", "v", keepttl=True), ("SET", "k", "v", "KEEPTTL")),
    ("SET KEEPTTL no ttl", S, op_set("k", "v", keepttl=True), ("SET", "k", "v", "KEEPTTL")),
    ("SET XX GET KEEPTTL", T, op_set("k", "v", xx=True, get=True, keepttl=True), ("SET", "k", "v", "XX", "GET", "KEEPTTL")),
    ("SET KEEPTTL with a ttl", T, op_set("k", "v", 100500, keepttl=True), ("SET", "k", "v", "PX", "100500", "KEEPTTL")),
    ("SET NX XX", S, op_set("k", "v", nx=True, xx=True), ("SET", "k", "v", "NX", "XX")),
    ("SET negative ttl", S, op_set("k", "v", -5), ("SET", "k", "v", "PX", "-5")),
    ("SET meta", [], op_set("k", "v", meta=(["a", "b"], "ent", "text/plain")),
     ("METAPUT", "k", "v") + tuple(meta_cmd((["a", "b"], "ent", "text/plain")))),
    ("SET meta labels only", S, op_set("k", "v", meta=(["a"], "", "")), ("METAPUT", "k", "v", "LABELS", "1", "a")),
    ("SET meta entity only", [], op_set("k", "v", meta=([], "e", "")), ("METAPUT", "k", "v", "ENTITY", "e")),
    ("SET empty meta clears", M, op_set("k", "v", meta=([], "", "")), ("METAPUT", "k", "v")),
    ("SET without meta keeps it", M, op_set("k", "v"), ("SET", "k", "v")),
    ("SET meta ttl NX", [], op_set("k", "v", 100500, nx=True, meta=(["a"], "", "")),
     ("METAPUT", "k", "v", "PX", "100500", "NX", "LABELS", "1", "a")),
    ("SET meta GET", M, op_set("k", "v", get=True, meta=(["z"], "", "c/d")),
     ("METAPUT", "k", "v", "GET", "LABELS", "1", "z", "CONTENTTYPE", "c/d")),
    ("SET meta XX missing", [], op_set("k", "v", xx=True, meta=(["a"], "", "")),
     ("METAPUT", "k", "v", "XX", "LABELS", "1", "a")),
    ("SET meta KEEPTTL", T, op_set("k", "v", keepttl=True, meta=(["a"], "", "")),
     ("METAPUT", "k", "v", "KEEPTTL", "LABELS", "1", "a")),
    ("SET db 3", [], op_set("k", "v", db=3), ("SET", "k", "v"), ["k"], 3),
    ("DEL missing", [], op_del("k"), ("DEL", "k")),
    ("DEL string", S, op_del("k"), ("DEL", "k")),
    ("DEL list", L, op_del("k"), ("DEL", "k")),
    ("DEL db 15", [("SELECT", "15")] + S, op_del("k", db=15), ("DEL", "k"), ["k"], 15),
    ("EXISTS missing", [], op_exists("k"), ("EXISTS", "k")),
    ("EXISTS string", S, op_exists("k"), ("EXISTS", "k")),
    ("EXISTS list", L, op_exists("k"), ("EXISTS", "k")),
    ("INCRBY missing", [], op_incrby("k", 5), ("INCRBY", "k", "5")),
    ("INCRBY existing", [("SET", "k", "10")], op_incrby("k", -7), ("INCRBY", "k", "-7")),
    ("INCRBY not an integer", S, op_incrby("k", 1), ("INCRBY", "k", "1")),
    ("INCRBY overflow", [("SET", "k", str(2 ** 63 - 1))], op_incrby("k", 1), ("INCRBY", "k", "1")),
    ("INCRBY min", [("SET", "k", "0")], op_incrby("k", -2 ** 63), ("INCRBY", "k", str(-2 ** 63))),
    ("INCRBY list", L, op_incrby("k", 1), ("INCRBY", "k", "1")),
    ("INCRBY keeps TTL", [("SET", "k", "1", "PX", "100500")], op_incrby("k", 1), ("INCRBY", "k", "1")),
    ("GETSET missing", [], op_getset("k", "v"), ("GETSET", "k", "v")),
    ("GETSET existing clears TTL", T, op_getset("k", "v"), ("GETSET", "k", "v")),
    ("GETSET list", L, op_getset("k", "v"), ("GETSET", "k", "v")),
    ("GETDEL missing", [], op_getdel("k"), ("GETDEL", "k")),
    ("GETDEL existing", S, op_getdel("k"), ("GETDEL", "k")),
    ("GETDEL list", L, op_getdel("k"), ("GETDEL", "k")),
    ("MGET three", [("SET", "k", "a"), ("RPUSH", "k2", "x")], op_mget(["k", "k2", "k3"]), ("MGET", "k", "k2", "k3"),
     ["k", "k2", "k3"]),
    ("MGET one", S, op_mget(["k"]), ("MGET", "k")),
    ("MGET repeated key", S, op_mget(["k", "k"]), ("MGET", "k", "k")),
    ("MGET none", S, op_mget([]), ("MGET",)),
    ("MSET two", L, op_mset([("k", "1"), ("k2", "2")]), ("MSET", "k", "1", "k2", "2"), ["k", "k2"]),
    ("MSET repeated key", [], op_mset([("k", "1"), ("k", "2")]), ("MSET", "k", "1", "k", "2")),
    ("MSET clears TTL", T, op_mset([("k", "1")]), ("MSET", "k", "1")),
    ("MSET none", [], op_mset([]), ("MSET",)),
    ("MSET db 2", [], op_mset([("k", "1"), ("k2", "2")], db=2), ("MSET", "k", "1", "k2", "2"), ["k", "k2"], 2),
    ("PTTL missing", [], op_pttl("k"), ("PTTL", "k")),
    ("PTTL no ttl", S, op_pttl("k"), ("PTTL", "k")),
    ("PEXPIRE missing", [], op_pexpire("k", 100500), ("PEXPIRE", "k", "100500")),
    ("PEXPIRE existing", S, op_pexpire("k", 100500), ("PEXPIRE", "k", "100500")),
    ("PEXPIRE 0 deletes", S, op_pexpire("k", 0), ("PEXPIRE", "k", "0")),
    ("PEXPIRE negative deletes", S, op_pexpire("k", -1000), ("PEXPIRE", "k", "-1000")),
    ("PEXPIRE list", L, op_pexpire("k", 100500), ("PEXPIRE", "k", "100500")),
    ("PEXPIRE overflow", S, op_pexpire("k", 2 ** 63 - 1), ("PEXPIRE", "k", str(2 ** 63 - 1))),
    ("PERSIST missing", [], op_persist("k"), ("PERSIST", "k")),
    ("PERSIST no ttl", S, op_persist("k"), ("PERSIST", "k")),
    ("PERSIST ttl", T, op_persist("k"), ("PERSIST", "k")),
    ("METAGET missing", [], op_metaget("k"), ("METAGET", "k"), ["k"], 0, "meta"),
    ("METAGET no metadata", S, op_metaget("k"), ("METAGET", "k"), ["k"], 0, "meta"),
    ("METAGET metadata", M, op_metaget("k"), ("METAGET", "k"), ["k"], 0, "meta"),
    ("METAGET metadata and TTL", M + [("PEXPIRE", "k", "100500")], op_metaget("k"), ("METAGET", "k"), ["k"], 0,
     "meta"),
    ("METASET replaces", M, op_metaset("k", (["x", "y"], "e2", "c/t")),
     ("METASET", "k", "CLEAR", "LABELS", "2", "x", "y", "ENTITY", "e2", "CONTENTTYPE", "c/t")),
    ("METASET empty clears", M, op_metaset("k", ([], "", "")), ("METASET", "k", "CLEAR")),
    ("METASET missing", [], op_metaset("k", (["x"], "", "")), ("METASET", "k", "CLEAR", "LABELS", "1", "x")),
    ("METASET on a list", L, op_metaset("k", (["x"], "", "")), ("METASET", "k", "CLEAR", "LABELS", "1", "x")),
    ("METASET label too long", S, op_metaset("k", (["x" * 5000], "", "")),
     ("METASET", "k", "CLEAR", "LABELS", "1", "x" * 5000)),
    ("SET meta too many labels", [], op_set("k", "v", meta=(["l%d" % i for i in range(300)], "", "")),
     ("METAPUT", "k", "v", "LABELS", "300") + tuple("l%d" % i for i in range(300))),
    ("INVALIDATE label", [("METAPUT", "k", "v", "LABELS", "1", "lab", "ENTITY", "e1"),
                          ("METAPUT", "k2", "v", "LABELS", "2", "x", "lab"), ("METAPUT", "k3", "v", "LABELS", "1", "x")],
     op_invalidate("lab"), ("METAINVALIDATE", "lab"), ["k", "k2", "k3"]),
    ("INVALIDATE label and entity", [("METAPUT", "k", "v", "LABELS", "1", "lab", "ENTITY", "e1"),
                                     ("METAPUT", "k2", "v", "LABELS", "1", "lab", "ENTITY", "e2")],
     op_invalidate("lab", "e1"), ("METAINVALIDATE", "lab", "ENTITY", "e1"), ["k", "k2"]),
    ("INVALIDATE nothing", S, op_invalidate("nolabel"), ("METAINVALIDATE", "nolabel")),
    ("INVALIDATE db 4", [("SELECT", "4"), ("METAPUT", "k", "v", "LABELS", "1", "lab")], op_invalidate("lab", db=4),
     ("METAINVALIDATE", "lab"), ["k"], 4),
    # COMMAND: replies of every RESP3 type
    ("COMMAND HGETALL (map)", [("HSET", "k", "f1", "v1", "f2", "v2")], op_command("HGETALL", "k"), ("HGETALL", "k")),
    ("COMMAND HGETALL missing (empty map)", [], op_command("HGETALL", "k"), ("HGETALL", "k")),
    ("COMMAND CONFIG GET (map)", [], op_command("CONFIG", "GET", "maxmemory-policy"),
     ("CONFIG", "GET", "maxmemory-policy")),
    ("COMMAND ZSCORE (double)", [("ZADD", "k", "1.5", "a")], op_command("ZSCORE", "k", "a"), ("ZSCORE", "k", "a")),
    ("COMMAND ZSCORE inf", [("ZADD", "k", "-inf", "a")], op_command("ZSCORE", "k", "a"), ("ZSCORE", "k", "a")),
    ("COMMAND ZRANGE WITHSCORES", [("ZADD", "k", "1.5", "a", "2", "b")],
     op_command("ZRANGE", "k", "0", "-1", "WITHSCORES"), ("ZRANGE", "k", "0", "-1", "WITHSCORES")),
    ("COMMAND ZINCRBY (double)", [("ZADD", "k", "1", "a")], op_command("ZINCRBY", "k", "0.25", "a"),
     ("ZINCRBY", "k", "0.25", "a")),
    ("COMMAND SMEMBERS (set)", [("SADD", "k", "1", "2", "3")], op_command("SMEMBERS", "k"), ("SMEMBERS", "k")),
    ("COMMAND SMEMBERS missing", [], op_command("SMEMBERS", "k"), ("SMEMBERS", "k")),
    ("COMMAND EVAL big number", [], op_command("EVAL", "return {big_number='%s'}" % BIG_NUMBER, "0"),
     ("EVAL", "return {big_number='%s'}" % BIG_NUMBER, "0")),
    ("COMMAND EVAL double", [], op_command("EVAL", "return {double=3.25}", "0"), ("EVAL", "return {double=3.25}", "0")),
    ("COMMAND EVAL map", [], op_command("EVAL", "return {map={a=1}}", "0"), ("EVAL", "return {map={a=1}}", "0")),
    ("COMMAND EVAL set", [], op_command("EVAL", "return {set={a=true}}", "0"), ("EVAL", "return {set={a=true}}", "0")),
    ("COMMAND EVAL nil and true", [], op_command("EVAL", "return {1, false, true}", "0"),
     ("EVAL", "return {1, false, true}", "0")),
    ("COMMAND EVAL writes", [], op_command("EVAL", "return redis.call('SET', KEYS[1], 'x')", "1", "k"),
     ("EVAL", "return redis.call('SET', KEYS[1], 'x')", "1", "k")),
    ("COMMAND EVAL error", [], op_command("EVAL", "return redis.error_reply('MYERR custom')", "0"),
     ("EVAL", "return redis.error_reply('MYERR custom')", "0")),
    ("COMMAND EVALSHA unknown (NOSCRIPT)", [], op_command("EVALSHA", "f" * 40, "0"), ("EVALSHA", "f" * 40, "0")),
    ("COMMAND INCRBYFLOAT", [("SET", "k", "1.5")], op_command("INCRBYFLOAT", "k", "0.25"),
     ("INCRBYFLOAT", "k", "0.25")),
    ("COMMAND LRANGE", [("RPUSH", "k", "a", "b", "c")], op_command("LRANGE", "k", "0", "-1"),
     ("LRANGE", "k", "0", "-1")),
    ("COMMAND HINCRBYFLOAT", [("HSET", "k", "f", "1")], op_command("HINCRBYFLOAT", "k", "f", "0.5"),
     ("HINCRBYFLOAT", "k", "f", "0.5")),
    ("COMMAND ZRANGEBYSCORE WITHSCORES", [("ZADD", "k", "1", "a", "2.5", "b")],
     op_command("ZRANGEBYSCORE", "k", "-inf", "+inf", "WITHSCORES"),
     ("ZRANGEBYSCORE", "k", "-inf", "+inf", "WITHSCORES")),
    ("COMMAND TYPE", L, op_command("TYPE", "k"), ("TYPE", "k")),
    ("COMMAND OBJECT ENCODING", S, op_command("OBJECT", "ENCODING", "k"), ("OBJECT", "ENCODING", "k")),
    ("COMMAND PING", [], op_command("PING"), ("PING",)),
    ("COMMAND ECHO binary", [], op_command("ECHO", b"\x00\r\n"), ("ECHO", b"\x00\r\n")),
    ("COMMAND unknown", [], op_command("NOSUCHCOMMAND", "a"), ("NOSUCHCOMMAND", "a")),
    ("COMMAND wrong arity", [], op_command("GET"), ("GET",)),
    ("COMMAND lower case", S, op_command("get", "k"), ("get", "k")),
    ("COMMAND LPUSH on string (WRONGTYPE)", S, op_command("LPUSH", "k", "x"), ("LPUSH", "k", "x")),
    ("COMMAND SET in db 5", [], op_command("SET", "k", "v", db=5), ("SET", "k", "v"), ["k"], 5),
    ("COMMAND DBSIZE in db 5", [("SELECT", "5"), ("SET", "a", "1"), ("SET", "b", "2")], op_command("DBSIZE", db=5),
     ("DBSIZE",), ["a"], 5),
    ("COMMAND PFADD PFCOUNT", [("PFADD", "k", "a", "b")], op_command("PFCOUNT", "k"), ("PFCOUNT", "k")),
    ("COMMAND SETRANGE", S, op_command("SETRANGE", "k", "1", "XY"), ("SETRANGE", "k", "1", "XY")),
    ("COMMAND HRANDFIELD on one field", [("HSET", "k", "f", "v")], op_command("HRANDFIELD", "k", "1", "WITHVALUES"),
     ("HRANDFIELD", "k", "1", "WITHVALUES")),
]

REFUSED = [
    ("SUBSCRIBE", "c"), ("PSUBSCRIBE", "p*"), ("SSUBSCRIBE", "c"), ("UNSUBSCRIBE",), ("PUNSUBSCRIBE",),
    ("SUNSUBSCRIBE",), ("MULTI",), ("EXEC",), ("DISCARD",), ("WATCH", "k"), ("UNWATCH",), ("SELECT", "1"),
    ("HELLO", "3"), ("RESET",), ("QUIT",), ("AUTH", "x"), ("CLIENT", "REPLY", "OFF"), ("MONITOR",), ("SYNC",),
    ("PSYNC", "?", "-1"), ("REPLCONF", "listening-port", "1"), ("BLPOP", "k", "0"), ("BRPOP", "k", "0"),
    ("BLMOVE", "a", "b", "LEFT", "LEFT", "0"), ("BLMPOP", "0", "1", "k", "LEFT"), ("BZPOPMIN", "k", "0"),
    ("BZPOPMAX", "k", "0"), ("BZMPOP", "0", "1", "k", "MIN"), ("BRPOPLPUSH", "a", "b", "0"), ("WAIT", "0", "0"),
    ("multi",), ("Subscribe", "c"), ("client", "reply", "on"),
]
NOT_ALLOWED = b"-ERR command not allowed over the native protocol\r\n"


def setup(steps):
    R.call("SELECT", "0")
    R.call("FLUSHALL")
    for s in steps:
        r = R.call(*s)
        if r.is_error():
            diag("setup %r: %s" % (s, r.value))
    R.call("SELECT", "0")


def norm_meta(reply_py):
    """METAGET's map without its version (a clock, different on each side)
    and with expire-at-ms as whether there is one."""
    if not isinstance(reply_py, dict):
        return reply_py
    d = dict(reply_py)
    d.pop(b"version", None)
    if b"expire-at-ms" in d:
        d[b"expire-at-ms"] = d[b"expire-at-ms"] not in (None, -1)
    return d


def state(keys, db):
    out = []
    R.call("SELECT", str(db))
    for k in keys:
        t = R.call("TYPE", k).py()
        g = R.call("GET", k).raw if t == "string" else None
        p = R.call("PTTL", k).py()
        p = p if p < 0 else ("ttl", (p + 5000) // 10000)
        m = norm_meta(R.call("METAGET", k).py())
        out.append((k, t, g, p, m))
    R.call("SELECT", "0")
    return out


def expected_status(raw):
    if raw[:1] in (b"-", b"!"):
        word = raw[1:].split(b" ", 1)[0].split(b"\r\n", 1)[0].decode("utf-8", "replace")
        return nw.status_of_error(word)
    return 0


# ---- every op against its RESP equivalent -----------------------------------------------
failed_cases = []
for case in CASES:
    name, steps, op, cmd = case[:4]
    keys = case[4] if len(case) > 4 else ["k"]
    db = case[5] if len(case) > 5 else 0
    how = case[6] if len(case) > 6 else "raw"
    setup(steps)
    try:
        res = N.one(op)
    except (AssertionError, Goodbye, Closed, OSError) as e:
        ok(False, "%s: native op answered (%s)" % (name, e))
        N = native(srv)
        continue
    nstate = state(keys, db)
    setup(steps)
    R.call("SELECT", str(db))
    want = R.call(*cmd)
    R.call("SELECT", "0")
    rstate = state(keys, db)
    if how == "meta":
        same = norm_meta(res.value.py()) == norm_meta(want.py()) and res.value.kind == want.kind
    else:
        same = res.value.raw == want.raw
    good = same and res.status == expected_status(want.raw) and nstate == rstate
    if not ok(good, "%s: native result and state as RESP3 %s" % (name, " ".join(map(str, cmd))[:60])):
        diag("native: status %d %r" % (res.status, res.value.raw[:300]))
        diag("resp3:  status %d %r" % (expected_status(want.raw), want.raw[:300]))
        if nstate != rstate:
            diag("state native %r" % (nstate,))
            diag("state resp3  %r" % (rstate,))
        failed_cases.append(name)

# ---- a PTTL with a TTL ---------------------------------------------------------------------
setup(T)
r = N.one(op_pttl("k"))
ok(r.status == 0 and r.value.kind == ":" and 90000 < r.value.value <= 100500, "PTTL of a key with a TTL: %r" % r)

# ---- the refused commands of 4.1 -----------------------------------------------------------
setup([("RPUSH", "k", "x"), ("RPUSH", "a", "x")])
bad = []
for cmd in REFUSED:
    try:
        r = N.one(op_command(*cmd))
    except (AssertionError, Goodbye, Closed, OSError) as e:
        bad.append((cmd, repr(e)))
        N = native(srv)
        continue
    if r.status != 1 or r.value.raw != NOT_ALLOWED:
        bad.append((cmd, r.status, r.value.raw))
ok(not bad, "%d refused commands answer status ERR, %r" % (len(REFUSED), NOT_ALLOWED))
for b in bad:
    diag("refused: %r" % (b,))
is_(R.call("LLEN", "k").py(), 1, "the refused BLPOP/BRPOP did not pop")
r = N.one(op_get("k"))
is_(r.value.raw[:10], b"-WRONGTYPE", "the connection serves on after the refusals (no SUBSCRIBE or MULTI state)")

# ---- HELLO reply -----------------------------------------------------------------------------
h = N.hello_reply
is_((h.magic, h.version, h.flags, h.node_id, h.extra), (nw.MAGIC, 1, 0, b"", 0),
    "HELLO reply: magic, version 1, flags 0, node_id \"\", nothing after")
cid = N.one(op_command("CLIENT", "ID"))
is_(cid.value.raw, b":%d\r\n" % h.client_id, "HELLO's client_id is what CLIENT ID answers over the connection")
clist = R.call("CLIENT", "LIST").py()
clist = clist.decode() if isinstance(clist, bytes) else str(clist)
clist = clist[4:] if clist.startswith("txt:") else clist
ids = [int(f.split("=", 1)[1]) for line in clist.split("\n") for f in line.split() if f.startswith("id=")]
ok(h.client_id in ids, "CLIENT LIST over RESP shows the native client's id %d" % h.client_id)
N2 = native(srv)
ok(N2.hello_reply.client_id != h.client_id, "a second native connection has another client id")
N2.close()
cfg = R.call("CONFIG", "GET", "proto-max-bulk-len").py()
bulk = int(list(cfg.values())[0]) if isinstance(cfg, dict) else int(cfg[1])
cfg = R.call("CONFIG", "GET", "client-query-buffer-limit").py()
qbuf = int(list(cfg.values())[0]) if isinstance(cfg, dict) else int(cfg[1])
is_(h.max_frame, min(bulk + (1 << 20), qbuf), "max_frame is min(proto-max-bulk-len + 1 MiB, client-query-buffer-limit)")
with native(srv, username="default") as Nd:
    ok(Nd.hello_reply.magic == nw.MAGIC, "HELLO with username \"default\" and no password is served")

# ---- TOPOLOGY outside cluster mode -------------------------------------------------------
t = N.one(op_topology())
tp = t.value.py() if t.value.kind == "%" else None
want_topo = {b"epoch": 0, b"cluster": False, b"nodes": [{
    b"id": b"", b"ip": b"127.0.0.1", b"port": srv.port, b"native-port": srv.native_port, b"role": b"primary",
    b"primary": b"", b"slots": [[0, 16383]]}]}
if not is_(tp, want_topo, "TOPOLOGY outside cluster mode: epoch 0, one primary owning 0-16383"):
    diag("raw %r" % t.value.raw[:400])
ok(t.value.raw.startswith(b"%3\r\n"), "TOPOLOGY is a RESP3 map of 3")

# ---- INFO commandstats counts native ops under their commands -------------------------------
R.call("CONFIG", "RESETSTAT")
N.call([op_get("s1"), op_get("s2"), op_set("s1", "v"), op_mget(["a", "b"]), op_command("STRLEN", "s1")])
N.one(op_get("s3"))
stats = {c: info_field(R, "commandstats", "cmdstat_" + c) or "" for c in ("get", "set", "mget", "strlen")}
calls = {c: (v.split("calls=", 1)[1].split(",", 1)[0] if "calls=" in v else None) for c, v in stats.items()}
is_(calls, {"get": "3", "set": "1", "mget": "1", "strlen": "1"}, "INFO commandstats counts native ops as the commands")

# ---- request sizes, coverage, LAST, order on one key ---------------------------------------
setup([])
for n in (1, 16, 1000, 65535):
    ops = [op_incrby("ctr%d" % n, 1) for _ in range(n)]
    resp = N.call(ops)
    vals = [r.value.raw if r else None for r in resp.results]
    want = [b":%d\r\n" % (i + 1) for i in range(n)]
    ok(not resp.problems and vals == want,
       "%d INCRBYs of one key in one request: every index once, LAST on the final frame, run in request order "
       "(%d frames)" % (n, resp.frames))
    for p in resp.problems[:5]:
        diag(p)
n = 65535
ops = [op_set("m%d" % i, "v%d" % i) if i % 2 == 0 else op_get("m%d" % (i - 1)) for i in range(n)]
resp = N.call(ops)
wrong = [i for i, r in enumerate(resp.results)
         if r is None or r.value.raw != (b"+OK\r\n" if i % 2 == 0 else b"$%d\r\n%s\r\n" % (len(b"v%d" % (i - 1)), b"v%d" % (i - 1)))]
ok(not resp.problems and not wrong, "65535 ops, SET and GET of 32768 keys alternating: all answered as written")
is_(R.call("GET", "m65534").py(), b"v65534", "the last SET of that request is seen over RESP")
mg = N.one(op_mget(["m%d" % i for i in range(0, 2000, 2)]))
is_(mg.value.py(), [b"v%d" % i for i in range(0, 2000, 2)], "MGET of 1000 keys")
ms = N.one(op_mset([("ms%d" % i, "x%d" % i) for i in range(3000)]))
ok(ms.value.raw == b"+OK\r\n" and R.call("GET", "ms2999").py() == b"x2999", "MSET of 3000 pairs")

# ---- pipelining without waiting --------------------------------------------------------------
setup([])
sent = []
for i in range(300):
    nops = 1 + (i * 7) % 40
    ops = [op_incrby("pipe", 1) for _ in range(nops)]
    sent.append((N.send_request(ops, fid=1000 + i * 3), nops))
seen, total, probs = [], 0, []
for fid, nops in sent:
    resp = N.read_response(fid, nops)
    probs += resp.problems
    for r in resp.results:
        total += 1
        seen.append(r.value.value if r else None)
ok(not probs, "300 pipelined requests: each answered by its id, in order, every index once (%s)" % probs[:3])
is_(seen, list(range(1, total + 1)), "their %d INCRBYs ran in the order sent" % total)

# ---- ids ------------------------------------------------------------------------------------
for fid in (0, 0xFFFFFFFF, 0x80000001):
    N.send_request([op_get("k")], fid=fid)
    resp = N.read_response(fid, 1)
    ok(not resp.problems, "request id 0x%x echoed" % fid)

# ---- big values --------------------------------------------------------------------------------
big = os.urandom(1 << 20) + b"\r\n$-1\r\n" + os.urandom(300000)
r = N.one(op_set("big", big))
is_(r.value.raw, b"+OK\r\n", "SET of a %d-byte value" % len(big))
g = N.one(op_get("big"))
rg = R.call("GET", "big")
ok(g.value.value == big and g.value.raw == rg.raw, "GET of it over native: the value, the bytes RESP3 gives")
resp = N.call([op_get("big"), op_get("nosuch"), op_getset("big", "small"), op_get("big")])
ok(not resp.problems and resp[0].value.value == big and resp[2].value.value == big and resp[3].value.value == b"small",
   "a request with 1.3 MiB results beside small ones (%d frames)" % resp.frames)
R.call("SET", "big2", big + big)
g = N.one(op_get("big2"))
ok(g.value.value == big + big, "GET of a 2.6 MiB value written over RESP")

ok(srv.alive(), "the server is up at the end")
if failed_cases:
    diag("failed cases: %s" % ", ".join(failed_cases))
done_testing()
