#!/usr/bin/python3
# meta_persist.t — per-key metadata through the journal (issue 19): a
# workload of METAPUT / METASET / METAINVALIDATE, value writes, RENAME,
# COPY, MOVE, SWAPDB, SPOP (journaled as its effect) and TTLs on keys of
# every type; then every key's metadata (labels, entity, content-type,
# expiry, version), value and the label index (METASCAN) are the same
# after a restart from the log alone (SHUTDOWN NOSAVE), after one from a
# snapshot alone (SAVE, appendonly no), on a replica that took a full sync
# of them, and on that replica after it applied further writes from the
# stream.

import os
import random
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from zaris import *  # noqa: E402,F403
from repl import *  # noqa: E402,F403

LABELS = ["red", "green", "blue", "p:17", "p:18"]


def workload(c, rng, n, tag):
    types = ["string", "list", "set", "zset", "hash"]
    for i in range(n):
        k = "%s:%d" % (tag, rng.randrange(60))
        op = rng.random()
        labels = rng.sample(LABELS, rng.randrange(0, 3))
        largs = ["LABELS", len(labels)] + labels
        if op < 0.25:
            ttl = ["PX", rng.randrange(100000, 900000)] if rng.random() < 0.3 else []
            c.callv("METAPUT", k, "v%d" % i, *largs, "ENTITY", "user:%d" % rng.randrange(4),
                    "CONTENTTYPE", rng.choice(["text/plain", "application/json"]), *ttl)
        elif op < 0.45:
            t = rng.choice(types)
            c.callv("DEL", k)
            if t == "string":
                c.callv("SET", k, "s%d" % i)
            elif t == "list":
                c.callv("RPUSH", k, "a", "b", "c%d" % i)
            elif t == "set":
                c.callv("SADD", k, *("m%d" % j for j in range(rng.randrange(1, 8))))
            elif t == "zset":
                c.callv("ZADD", k, 1, "a", 2, "b%d" % i)
            else:
                c.callv("HSET", k, "f", "v%d" % i)
            c.callv("METASET", k, *largs, "ENTITY", "user:%d" % rng.randrange(4))
        elif op < 0.6:
            c.call("METASET", k, rng.choice(["ADDLABELS", "REMLABELS"]), 1, rng.choice(LABELS))
        elif op < 0.68:
            c.call("SPOP", k)
        elif op < 0.74:
            c.call("RENAME", k, "%s:%d" % (tag, rng.randrange(60)))
        elif op < 0.78:
            c.call("COPY", k, "%s:%d" % (tag, rng.randrange(60)), "REPLACE")
        elif op < 0.82:
            c.call("MOVE", k, 1)
        elif op < 0.84:
            c.callv("SWAPDB", 0, 1)
        elif op < 0.87:
            c.callv("METAINVALIDATE", rng.choice(LABELS), *(["ENTITY", "user:1"] if rng.random() < 0.5 else []))
        elif op < 0.93:
            c.call("APPEND", k, "x")
        else:
            c.call("SET", k, "plain%d" % i)


def state(c):
    """{(db, key): (type, value, METAGET)} and {(db, label): keys} of dbs 0 and 1."""
    keys, index = {}, {}
    for db in (0, 1):
        c.callv("SELECT", db)
        for k in sorted(scan_keys(c)):
            t = c.callv("TYPE", k)
            read = {"string": ("GET", k), "list": ("LRANGE", k, 0, -1), "set": ("SMEMBERS", k),
                    "zset": ("ZRANGE", k, 0, -1, "WITHSCORES"), "hash": ("HGETALL", k)}[t]
            v = c.callv(*read)
            if isinstance(v, list) and t in ("set",):
                v = sorted(v)
            m = c.callv("METAGET", k)
            keys[(db, k)] = (t, v, m)
        for lab in LABELS + ["user:0", "user:1", "user:2", "user:3"]:
            kind = "ENTITY" if lab.startswith("user:") else "LABEL"
            found, cur = set(), b"0"
            for _ in range(100000):
                cur, page = c.callv("METASCAN", cur, kind, lab, "COUNT", 100)
                found.update(page)
                if cur == b"0":
                    break
            index[(db, kind, lab)] = sorted(found)
    c.callv("SELECT", 0)
    return keys, index


def diff(a, b):
    out = []
    for k in sorted(set(a) | set(b)):
        if a.get(k) != b.get(k):
            out.append("%r: %r != %r" % (k, a.get(k), b.get(k)))
    return out


def same(name, a, b):
    d = diff(a[0], b[0]) + diff(a[1], b[1])
    ok(not d, "%s: %d keys, metadata, versions and label index equal" % (name, len(a[0])))
    for line in d[:6]:
        diag(line)


def labelled(st):
    return sum(1 for v in st[0].values() if v[2] and (v[2].get(b"labels") if isinstance(v[2], dict) else v[2][1]))


def shutdown(srv, c):
    c.send("SHUTDOWN", "NOSAVE")
    c.recv_until_closed()
    c.close()
    srv.proc.wait(20 * SLOW)
    srv.cleanup()


rng = seeded_rng()

# --- restart from the log, then from a snapshot -----------------------------------------
d = data_dir("zaris-meta-")
flags = ["--dir", d, "--appendonly", "yes", "--save", "", "--threads", "2"]
srv = start_zarisd(extra=flags)
c = srv.client()
workload(c, rng, 3000, "k")
before = state(c)
ok(labelled(before) > 10, "the workload left %d keys with labels" % labelled(before))
shutdown(srv, c)
srv = start_zarisd(extra=flags)
c = srv.client()
same("restart from the log", before, state(c))
c.callv("SAVE")
shutdown(srv, c)
# appendonly no: the snapshot is loaded, no log read (persist_fuzz.t's way)
srv = start_zarisd(extra=["--dir", d, "--appendonly", "no", "--save", "", "--threads", "2"])
c = srv.client()
after = state(c)
ok(len(after[0]) > 0, "the snapshot alone loaded %d keys" % len(after[0]))
same("restart from the snapshot alone", before, after)
c.close()
srv.cleanup()

# --- a replica: full sync of existing metadata, then the stream -----------------------------
p = start_node("primary", threads=2)
pc = p.client()
workload(pc, rng, 2000, "r")
r = start_node("replica", threads=2, replicaof=(HOST, p.port))
rc = r.client()
ok(wait_in_sync(pc, rc), "the replica is in sync after its full sync")
same("replica after the full sync", state(pc), state(rc))
workload(pc, rng, 2000, "r")
ok(wait_in_sync(pc, rc), "in sync after the stream")
same("replica after the stream", state(pc), state(rc))
done_testing()
