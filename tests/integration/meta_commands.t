#!/usr/bin/python3
# meta_commands.t — per-key metadata (issue 19): METAPUT's SET options
# against redis-server's SET (replies byte for byte, the command's name in
# the expiry error aside), METASET on a key of each type (value, type and
# TTL untouched; a later write of the value keeps the metadata), METAGET
# over RESP2 and RESP3, bad input refused with nothing changed, METASCAN's
# cursor, METAINVALIDATE (count, ENTITY, keyspace events, MULTI), and the
# metadata following RENAME / COPY / MOVE / SWAPDB and going with DEL,
# expiry and eviction.

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from zaris import *  # noqa: E402,F403

zs = start_zarisd(threads=2)
rs = start_redis()
z = zs.client()
r = rs.client()


def meta(c, key):
    """METAGET as a dict (RESP2 flat array folded), or None."""
    v = c.callv("METAGET", key)
    if v is None or isinstance(v, dict):
        return v
    return {v[i]: v[i + 1] for i in range(0, len(v), 2)}


def fields(c, key):
    m = meta(c, key)
    return None if m is None else (m[b"labels"], m[b"entity"], m[b"content-type"])


def scan_all(c, kind, name, count=10, match=None):
    cur, keys, steps = b"0", [], 0
    while True:
        args = ["METASCAN", cur, kind, name, "COUNT", count] + (["MATCH", match] if match else [])
        cur, page = c.callv(*args)
        keys += page
        steps += 1
        if cur == b"0" or steps > 100000:
            return sorted(set(keys)), steps


# --- METAPUT: SET's options, replies as redis-server's SET ------------------------
SET_CASES = [
    [], ["NX"], ["XX"], ["GET"], ["NX", "GET"], ["XX", "GET"], ["EX", "100"], ["PX", "100000"],
    ["EXAT", str(int(time.time()) + 100)], ["PXAT", str(int(time.time() * 1000) + 100000)], ["KEEPTTL"],
    ["EX", "0"], ["EX", "-5"], ["PX", "abc"], ["EX", "10", "PX", "10"], ["NX", "XX"], ["KEEPTTL", "EX", "5"],
    ["FOO"], ["EX"], ["GET", "EX", "100"], ["PXAT", "1"],
]
mismatch = []
for opts in SET_CASES:
    for pre in ([], [("SET", "k", "old")], [("SET", "k", "old", "EX", "50")], [("RPUSH", "k", "x")]):
        for c in (z, r):
            c.callv("DEL", "k")
            for cmd in pre:
                c.callv(*cmd)
        want = r.call("SET", "k", "new", *opts)
        got = z.call("METAPUT", "k", "new", "LABELS", "1", "lbl", *opts)
        wraw = want.raw.replace(b"'set'", b"'metaput'")
        same = wraw == got.raw
        # the key's state after it: value and whether it has a TTL
        sv = (r.call("GET", "k").raw, r.callv("TTL", "k") > 0)
        zv = (z.call("GET", "k").raw, z.callv("TTL", "k") > 0)
        if not same or sv != zv:
            mismatch.append("%s after %s: redis %r %r, zarisd %r %r" % (opts, pre, wraw, sv, got.raw, zv))
        # the labels are there exactly when the write happened
        wrote = zv[0] == b"$3\r\nnew\r\n"
        lab = z.callv("EXISTS", "k") and z.call("TYPE", "k").value == "string" and fields(z, "k")[0] == [b"lbl"]
        if wrote != bool(lab):
            mismatch.append("%s after %s: written %s, labels %s" % (opts, pre, wrote, lab))
ok(not mismatch, "METAPUT with each SET option set (%d x 4 starts) answers as SET" % len(SET_CASES))
for m in mismatch[:8]:
    diag(m)

# METAPUT replaces the metadata; a plain SET keeps it (a value rewrite, as KEEPTTL keeps a TTL)
z.callv("DEL", "p")
z.callv("METAPUT", "p", "v1", "LABELS", "2", "a", "b", "ENTITY", "user:1", "CONTENTTYPE", "text/plain")
is_(fields(z, "p"), ([b"a", b"b"], b"user:1", b"text/plain"), "METAPUT sets labels, entity, content-type")
z.callv("SET", "p", "v2")
is_(fields(z, "p"), ([b"a", b"b"], b"user:1", b"text/plain"), "a plain SET keeps the metadata")
z.callv("METAPUT", "p", "v3", "ENTITY", "user:2")
is_(fields(z, "p"), ([], b"user:2", None), "METAPUT replaces the metadata with what it names")
z.callv("METAPUT", "p", "v4")
is_(fields(z, "p"), ([], None, None), "METAPUT without metadata leaves none")

# --- METASET on every type -----------------------------------------------------------
TYPES = {
    "string": (("SET", "t", "abc"), ("GET", "t"), ("APPEND", "t", "def")),
    "list": (("RPUSH", "t", "a", "b"), ("LRANGE", "t", 0, -1), ("LPUSH", "t", "z")),
    "set": (("SADD", "t", "a", "b"), ("SMEMBERS", "t"), ("SADD", "t", "c")),
    "zset": (("ZADD", "t", 1, "a", 2, "b"), ("ZRANGE", "t", 0, -1, "WITHSCORES"), ("ZADD", "t", 3, "c")),
    "hash": (("HSET", "t", "f", "v"), ("HGETALL", "t"), ("HSET", "t", "g", "w")),
}
for tname, (create, read, write) in TYPES.items():
    z.callv("DEL", "t")
    z.callv(*create)
    z.callv("PEXPIRE", "t", 500000)
    before = (z.call(*read).raw, z.callv("TYPE", "t"))
    is_(z.callv("METASET", "t", "LABELS", "2", "x", "y", "ENTITY", "e:" + tname), 1, "%s: METASET answers 1" % tname)
    after = (z.call(*read).raw, z.callv("TYPE", "t"))
    ok(before == after and z.callv("PTTL", "t") > 400000, "%s: value, type and TTL untouched" % tname)
    is_(fields(z, "t"), ([b"x", b"y"], b"e:" + tname.encode(), None), "%s: METAGET shows it" % tname)
    z.callv(*write)
    is_(fields(z, "t"), ([b"x", b"y"], b"e:" + tname.encode(), None), "%s: kept by %s" % (tname, write[0]))
    z.callv("METASET", "t", "ADDLABELS", "1", "w", "REMLABELS", "1", "x", "CONTENTTYPE", "a/b", "ENTITY", "")
    is_(fields(z, "t"), ([b"y", b"w"], None, b"a/b"), "%s: ADDLABELS, REMLABELS, ENTITY \"\"" % tname)
    keys, _ = scan_all(z, "LABEL", "w")
    is_(keys, [b"t"], "%s: in the label index" % tname)
    z.callv("METASET", "t", "CLEAR")
    is_(fields(z, "t"), ([], None, None), "%s: CLEAR" % tname)
    keys, _ = scan_all(z, "LABEL", "w")
    is_(keys, [], "%s: and out of the index" % tname)
is_(z.callv("METASET", "nosuchkey", "LABELS", "1", "a"), 0, "METASET on a missing key answers 0")
ok(z.callv("EXISTS", "nosuchkey") == 0, "and creates nothing")

# --- METAGET replies --------------------------------------------------------------------
z.callv("METAPUT", "g", "v", "LABELS", "1", "a", "PXAT", "4102444800000")
raw2 = z.call("METAGET", "g").raw
ok(raw2.startswith(b"*10\r\n$6\r\nlabels\r\n*1\r\n$1\r\na\r\n$6\r\nentity\r\n$-1\r\n$12\r\ncontent-type\r\n$-1\r\n"
                   b"$12\r\nexpire-at-ms\r\n:4102444800000\r\n$7\r\nversion\r\n:"), "RESP2: a flat array of 10")
z3 = zs.client()
z3.callv("HELLO", 3)
raw3 = z3.call("METAGET", "g").raw
ok(raw3.startswith(b"%5\r\n$6\r\nlabels\r\n*1\r\n$1\r\na\r\n$6\r\nentity\r\n_\r\n"), "RESP3: a map of 5")
is_(z.call("METAGET", "nosuchkey").raw, b"$-1\r\n", "RESP2: a missing key is null")
is_(z3.call("METAGET", "nosuchkey").raw, b"_\r\n", "RESP3: a missing key is null")
v1 = meta(z, "g")[b"version"]
z.callv("METASET", "g", "LABELS", "1", "b")
ok(meta(z, "g")[b"version"] > v1, "METASET stamps a new version")
is_(z.call("METAGET").raw, b"-ERR wrong number of arguments for 'metaget' command\r\n", "METAGET arity")

# --- bad input: Redis-style errors, nothing changed ------------------------------------------
z.callv("CONFIG", "SET", "meta-max-labels", "3")
z.callv("CONFIG", "SET", "meta-max-label-length", "8")
z.callv("METAPUT", "b", "val", "LABELS", "2", "l1", "l2", "ENTITY", "ent", "CONTENTTYPE", "ct")
snapshot = (meta(z, "b"), z.callv("GET", "b"))
BAD = [
    (("METASET", "b", "COLOUR", "red"), "ERR syntax error"),
    (("METASET", "b", "LABELS", "4", "a", "b", "c", "d"), "ERR too many metadata labels (meta-max-labels is 3)"),
    (("METASET", "b", "ADDLABELS", "2", "a", "b"), "ERR too many metadata labels (meta-max-labels is 3)"),
    (("METASET", "b", "LABELS", "1", ""), "ERR metadata label must not be empty"),
    (("METASET", "b", "LABELS", "1", "123456789"), "ERR metadata label is longer than meta-max-label-length (8)"),
    (("METASET", "b", "ENTITY", "123456789"), "ERR metadata entity is longer than meta-max-label-length (8)"),
    (("METASET", "b", "CONTENTTYPE", "a\x01b"), "ERR metadata content-type must not contain control characters"),
    (("METASET", "b", "CONTENTTYPE", "a\x7fb"), "ERR metadata content-type must not contain control characters"),
    (("METASET", "b", "LABELS", "x"), "ERR value is not an integer or out of range"),
    (("METASET", "b", "LABELS", "-1"), "ERR numlabels can't be negative"),
    (("METASET", "b", "LABELS", "5", "a"), "ERR syntax error"),
    (("METASET", "b", "ENTITY"), "ERR syntax error"),
    (("METAPUT", "b", "new", "LABELS", "1", ""), "ERR metadata label must not be empty"),
    (("METAPUT", "b", "new", "ADDLABELS", "1", "a"), "ERR syntax error"),
    (("METAPUT", "b", "new", "CLEAR"), "ERR syntax error"),
    (("METAPUT", "b", "new", "LABELS", "1", "a", "BOGUS"), "ERR syntax error"),
]
for cmd, err in BAD:
    got = z.call(*cmd)
    ok(got.is_error() and got.value == err, "%s -> %s (%r)" % (" ".join(cmd[:4]), err, got.value))
is_((meta(z, "b"), z.callv("GET", "b")), snapshot, "nothing changed by any of them")
ok(z.call("CONFIG", "SET", "meta-max-labels", "0").is_error(), "meta-max-labels 0 refused")
is_(z.callv("CONFIG", "GET", "meta-max-labels"), [b"meta-max-labels", b"3"], "CONFIG GET meta-max-labels")
z.callv("CONFIG", "SET", "meta-max-labels", "32")
z.callv("CONFIG", "SET", "meta-max-label-length", "256")

# --- METASCAN -------------------------------------------------------------------------
z.callv("FLUSHALL")
want_p, want_e = [], []
pipe = []
for i in range(2000):
    k = "s:%d" % i
    if i % 4 == 0:
        pipe.append(("METAPUT", k, "v", "LABELS", "2", "p", "q%d" % (i % 3), "ENTITY", "ent%d" % (i % 8)))
        want_p.append(k.encode())
        if i % 8 == 0:
            want_e.append(k.encode())
    else:
        pipe.append(("SET", k, "v"))
z.pipeline(pipe)
keys, steps = scan_all(z, "LABEL", "p")
is_(keys, sorted(want_p), "METASCAN LABEL p: the 500 labelled of 2000 keys (%d calls)" % steps)
keys, _ = scan_all(z, "ENTITY", "ent0", count=1000)
is_(keys, sorted(want_e), "METASCAN ENTITY ent0: its 250 keys")
keys, _ = scan_all(z, "LABEL", "p", match="s:1*")
is_(keys, sorted(k for k in want_p if k.startswith(b"s:1")), "METASCAN MATCH")
is_(scan_all(z, "LABEL", "nolabel")[0], [], "an unknown label: no key")
is_(z.call("METASCAN", "0", "COLOUR", "x").value, "ERR syntax error", "METASCAN needs LABEL or ENTITY")
is_(z.call("METASCAN", "x", "LABEL", "p").value, "ERR invalid cursor", "METASCAN's cursor is SCAN's")
is_(z.call("METASCAN", "0", "LABEL", "p", "COUNT", "0").value, "ERR syntax error", "COUNT 0 as SCAN's")

# --- METAINVALIDATE ----------------------------------------------------------------------
sub = zs.client()
z.callv("CONFIG", "SET", "notify-keyspace-events", "KEg")
sub.callv("PSUBSCRIBE", "__keyevent@0__:*")
n = z.callv("METAINVALIDATE", "q0", "ENTITY", "ent0")
want = [k for k in want_e if int(k[2:]) % 3 == 0]
is_(n, len(want), "METAINVALIDATE q0 ENTITY ent0: %d keys" % len(want))
events = {}
for _ in range(2 * n):
    m = sub.read_reply().py()
    events.setdefault(m[2], []).append(m[3])
is_(sorted(events.get(b"__keyevent@0__:del", [])), sorted(want), "a del event per key")
is_(sorted(events.get(b"__keyevent@0__:invalidated", [])), sorted(want), "an invalidated event per key")
n = z.callv("METAINVALIDATE", "p")
is_(n, 500 - len(want), "METAINVALIDATE p: the rest")
is_(z.callv("DBSIZE"), 1500, "the 1500 unlabelled keys kept")
is_(scan_all(z, "LABEL", "q1")[0], [], "the deleted keys' other labels are gone from the index")
is_(z.callv("METAINVALIDATE", "p"), 0, "again: 0")
ok(z.call("METAINVALIDATE", "p", "ENTITY").is_error(), "ENTITY without a value: error")
z.callv("CONFIG", "SET", "notify-keyspace-events", "")
sub.close()
# in MULTI: atomic with the other commands
z.callv("METAPUT", "m1", "v", "LABELS", "1", "tx")
z.callv("MULTI")
z.callv("METAPUT", "m2", "v", "LABELS", "1", "tx")
z.callv("METAINVALIDATE", "tx")
z.callv("EXISTS", "m1", "m2")
is_(z.callv("EXEC"), ["OK", 2, 0], "inside MULTI/EXEC")

# --- the metadata follows the key, and goes with it ---------------------------------------
z.callv("FLUSHALL")
z.callv("METAPUT", "a", "v", "LABELS", "1", "L", "ENTITY", "E")
z.callv("RENAME", "a", "b")
ok(meta(z, "a") is None and fields(z, "b") == ([b"L"], b"E", None), "RENAME moves it")
z.callv("COPY", "b", "c")
is_(fields(z, "c"), ([b"L"], b"E", None), "COPY copies it")
z.callv("METASET", "c", "LABELS", "1", "C")
is_(fields(z, "b"), ([b"L"], b"E", None), "the copy's is its own")
z.callv("MOVE", "b", 1)
z.callv("SELECT", 1)
is_(fields(z, "b"), ([b"L"], b"E", None), "MOVE takes it to db 1")
is_(scan_all(z, "LABEL", "L")[0], [b"b"], "db 1's index has it")
z.callv("SELECT", 0)
is_(scan_all(z, "LABEL", "L")[0], [], "db 0's not")
z.callv("SWAPDB", 0, 1)
is_(fields(z, "b"), ([b"L"], b"E", None), "SWAPDB brings it back to db 0")
is_(scan_all(z, "LABEL", "L")[0], [b"b"], "with its index")
z.callv("COPY", "b", "d", "DB", 1)
z.callv("SELECT", 1)
is_(fields(z, "d"), ([b"L"], b"E", None), "COPY ... DB copies it")
z.callv("SELECT", 0)
z.callv("DEL", "b")
z.callv("SET", "b", "fresh")
is_(fields(z, "b"), ([], None, None), "DEL drops it: the key made again has none")
z.callv("METAPUT", "x", "v", "LABELS", "1", "X", "PX", "50")
deadline = time.monotonic() + 10 * SLOW
while z.callv("EXISTS", "x") and time.monotonic() < deadline:
    time.sleep(0.02)
z.callv("SET", "x", "again")
ok(fields(z, "x") == ([], None, None) and scan_all(z, "LABEL", "X")[0] == [], "expiry drops it")
# eviction
z.callv("FLUSHALL")
z.callv("CONFIG", "SET", "maxmemory-policy", "allkeys-random")
used = int(dict(l.split(":", 1) for l in z.callv("INFO", "memory").decode().split("\r\n") if ":" in l)["used_memory"])
z.callv("CONFIG", "SET", "maxmemory", used + 4 * 1024 * 1024)
for i in range(0, 60000, 500):
    z.pipeline([("METAPUT", "ev:%d" % j, "x" * 100, "LABELS", "1", "EV") for j in range(i, i + 500)])
z.callv("CONFIG", "SET", "maxmemory", 0)
left = z.callv("DBSIZE")
keys, _ = scan_all(z, "LABEL", "EV", count=1000)
ok(0 < left < 60000 and len(keys) == left, "eviction drops it: %d keys left, %d in the index" % (left, len(keys)))
is_(z.callv("METAINVALIDATE", "EV"), left, "and invalidation counts only the keys left")
z.callv("CONFIG", "SET", "maxmemory-policy", "noeviction")

# COMMAND DOCS / INFO know the new commands
docs = z.callv("COMMAND", "INFO", "metaput", "metaset", "metaget", "metascan", "metainvalidate")
ok(all(d is not None for d in docs), "COMMAND INFO lists the five commands")
ok(all(r.callv("COMMAND", "INFO", n)[0] is None for n in ("metaput", "metaset", "metaget", "metascan",
                                                           "metainvalidate")), "redis-server has none of those names")
done_testing()
