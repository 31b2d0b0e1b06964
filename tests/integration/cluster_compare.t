#!/usr/bin/python3
# cluster_compare.t — zarisd's cluster replies against a real Redis Cluster:
# three redis-server (cluster-enabled yes, redis-cli --cluster create,
# waited for until cluster_state:ok) and three zarisd pushed the same slot
# layout. With the same keys written through redis-py's RedisCluster, both
# give the same CLUSTER KEYSLOT, COUNTKEYSINSLOT and GETKEYSINSLOT, the
# same error texts (CROSSSLOT, MOVED, EXEC across slots, SELECT, invalid
# slots, unknown node), and CLUSTER SLOTS / SHARDS / NODES / INFO of the
# same shape in RESP2 and RESP3 once node ids, ports and offsets are
# replaced by the node's index. Without cluster mode both refuse CLUSTER,
# READONLY, READWRITE and ASKING with the same text.

import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from zaris import *  # noqa: E402,F403

try:
    from redis.cluster import RedisCluster, ClusterNode
except ImportError:
    skip_all("python3-redis with redis.cluster is not installed")

CLI = "/usr/bin/redis-cli"

# ---- a real Redis Cluster -----------------------------------------------------------------
reds = [start_redis(extra=["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"], name="redis%d" % i)
        for i in range(3)]
p = subprocess.run([CLI, "--cluster", "create"] + ["127.0.0.1:%d" % r.port for r in reds] + ["--cluster-yes"],
                   capture_output=True, text=True, timeout=60)
ok(p.returncode == 0, "redis-cli --cluster create" + ("" if p.returncode == 0 else ": " + p.stdout[-400:]))
deadline = time.monotonic() + 30 * SLOW
while time.monotonic() < deadline:
    states = [r.client().call("CLUSTER", "INFO").py() for r in reds]
    if all(b"cluster_state:ok" in s for s in states):
        break
    time.sleep(0.1)
ok(all(b"cluster_state:ok" in s for s in states), "the Redis Cluster reaches cluster_state:ok")

rc0 = reds[0].client()
rslots = sorted(rc0.call("CLUSTER", "SLOTS").py(), key=lambda r: r[0])
# redis node index i: the one holding the i-th range
r_order = []
for r in rslots:
    port = r[2][1]
    r_order.append([x for x in reds if x.port == port][0])
ranges = ["%d-%d" % (r[0], r[1]) for r in rslots]

# ---- zarisd with the same layout ----------------------------------------------------------
zs = [start_zarisd(threads=2, extra=["--cluster-enabled", "yes"], name="zarisd%d" % i) for i in range(3)]
zids = [z.client().call("CLUSTER", "MYID").py().decode() for z in zs]
for i, z in enumerate(zs):
    doc = "epoch 1\ncluster cmp\nmyself %s\n" % zids[i] + "".join(
        "node %s z%d 127.0.0.1 %d primary %s\n" % (zids[j], j, zs[j].port, ranges[j]) for j in range(3))
    r = z.client().call("CLUSTER", "SETTOPOLOGY", doc).py()
    is_(r, "OK", "zarisd%d takes the layout %s" % (i, ranges))

rids = [x.client().call("CLUSTER", "MYID").py().decode() for x in r_order]


def text(reply):
    """A bulk or (RESP3) verbatim reply's text."""
    v = reply.py()
    v = v.decode() if isinstance(v, bytes) else v
    return v[4:] if reply.kind == "=" else v


def normalizer(ids, ports):
    def norm(v):
        if isinstance(v, list):
            return [norm(x) for x in v]
        if isinstance(v, dict):
            return {norm(k): (0 if k == b"replication-offset" else norm(x)) for k, x in v.items()}
        if isinstance(v, bytes):
            s = v.decode("utf-8", "replace")
            for i, x in enumerate(ids):
                s = s.replace(x, "ID%d" % i)
            for i, x in enumerate(ports):
                s = re.sub(r"\b%d\b" % x, "PORT%d" % i, s)
            return s
        if isinstance(v, str):
            return norm(v.encode())
        if isinstance(v, int) and v in ports:
            return "PORT%d" % ports.index(v)
        return v
    return norm


rnorm = normalizer(rids, [x.port for x in r_order] + [x.port + 10000 for x in r_order])
znorm = normalizer(zids, [z.port for z in zs] + [z.port + 10000 for z in zs])

# ---- the same keys in both -----------------------------------------------------------------
N = 3000
keys = ["k:%d" % j for j in range(N)] + ["{user1000}.following", "{user1000}.followers", "foo{}{bar}", "{tag}%d" % 7]
for cl in (RedisCluster(startup_nodes=[ClusterNode("127.0.0.1", reds[0].port)]),
           RedisCluster(startup_nodes=[ClusterNode("127.0.0.1", zs[0].port)])):
    for k in keys:
        cl.set(k, "v")
    cl.close()

zc = [z.client() for z in zs]
rcs = [x.client() for x in r_order]
want = [r.py() for r in rcs[0].pipeline([("CLUSTER", "KEYSLOT", k) for k in keys])]
got = [r.py() for r in zc[0].pipeline([("CLUSTER", "KEYSLOT", k) for k in keys])]
ok(want == got, "CLUSTER KEYSLOT of %d keys as Redis's" % len(keys))


def owner(slot):
    for i, r in enumerate(ranges):
        a, b = map(int, r.split("-"))
        if a <= slot <= b:
            return i


sample = sorted(set(want))[::7] + [0, 16383]
diff = []
for s in sample:
    i = owner(s)
    a = rcs[i].call("CLUSTER", "COUNTKEYSINSLOT", s).py()
    b = zc[i].call("CLUSTER", "COUNTKEYSINSLOT", s).py()
    ga = sorted(rcs[i].call("CLUSTER", "GETKEYSINSLOT", s, 100).py())
    gb = sorted(zc[i].call("CLUSTER", "GETKEYSINSLOT", s, 100).py())
    if a != b or ga != gb:
        diff.append((s, a, b))
ok(not diff, "COUNTKEYSINSLOT and GETKEYSINSLOT of %d slots as Redis's" % len(sample) + (" %s" % diff[:3] if diff else ""))


def same(name, cmd_r, cmd_z=None, conn_index=0, resp3=False):
    cr, cz = reds_conn(conn_index, resp3)
    a = rnorm(cr.call(*cmd_r).py())
    b = znorm(cz.call(*(cmd_z or cmd_r)).py())
    ok(a == b, name + ("" if a == b else ": redis %r, zarisd %r" % (a, b)))
    return a, b


def reds_conn(i, resp3):
    cr, cz = r_order[i].client(), zs[i].client()
    if resp3:
        cr.call("HELLO", "3")
        cz.call("HELLO", "3")
    return cr, cz


# errors
same("CROSSSLOT text", ("MSET", "{a}1", "x", "{b}1", "y"))
for k in ["k:1", "k:2", "k:3", "k:4", "k:5", "k:6"]:
    s = want[keys.index(k)]
    i = (owner(s) + 1) % 3
    same("MOVED of %s (slot %d) from node %d" % (k, s, i), ("GET", k), conn_index=i)
same("SELECT 1 in cluster mode", ("SELECT", "1"))
same("SELECT x in cluster mode", ("SELECT", "x"))
same("MOVE in cluster mode", ("MOVE", "k:1", "1"))
same("SWAPDB in cluster mode", ("SWAPDB", "0", "1"))
same("COPY to db 1 in cluster mode", ("COPY", "{tag}7", "{tag}8", "DB", "1"), conn_index=owner(want[keys.index("{tag}7")]))
same("COPY DB 99", ("COPY", "{tag}7", "{tag}8", "DB", "99"), conn_index=owner(want[keys.index("{tag}7")]))
same("COUNTKEYSINSLOT 16384", ("CLUSTER", "COUNTKEYSINSLOT", "16384"))
same("COUNTKEYSINSLOT x", ("CLUSTER", "COUNTKEYSINSLOT", "x"))
same("GETKEYSINSLOT -1 1", ("CLUSTER", "GETKEYSINSLOT", "-1", "1"))
same("GETKEYSINSLOT 1 -1", ("CLUSTER", "GETKEYSINSLOT", "1", "-1"))
same("CLUSTER REPLICAS of an unknown node", ("CLUSTER", "REPLICAS", "f" * 40))
same("CLUSTER nosuch", ("CLUSTER", "NOSUCH"))
same("CLUSTER KEYSLOT arity", ("CLUSTER", "KEYSLOT"))
same("READONLY on a primary", ("READONLY",))
same("READWRITE", ("READWRITE",))
same("ASKING", ("ASKING",))
for resp3 in (False, True):
    cr, cz = reds_conn(0, resp3)
    for c in (cr, cz):
        c.call("MULTI")
        c.call("SET", "{a}1", "1")
        c.call("SET", "{b}1", "1")
    a, b = rnorm(cr.call("EXEC").py()), znorm(cz.call("EXEC").py())
    ok(a == b, "RESP%d: EXEC across slots as Redis (%r)" % (3 if resp3 else 2, b) + ("" if a == b else " redis %r" % a))

# shapes
for resp3 in (False, True):
    tag = "RESP%d: " % (3 if resp3 else 2)
    cr, cz = reds_conn(1, resp3)
    a = sorted(rnorm(cr.call("CLUSTER", "SLOTS").py()), key=lambda r: r[0])
    b = sorted(znorm(cz.call("CLUSTER", "SLOTS").py()), key=lambda r: r[0])
    ok(a == b, tag + "CLUSTER SLOTS as Redis's" + ("" if a == b else ": redis %r, zarisd %r" % (a, b)))
    ra, rb = cr.call("CLUSTER", "SHARDS"), cz.call("CLUSTER", "SHARDS")

    def shard_key(sh):
        d = sh if isinstance(sh, dict) else dict(zip(sh[::2], sh[1::2]))
        return d.get("slots") or d.get(b"slots")
    a = sorted(rnorm(ra.py()), key=lambda s: str(shard_key(s)))
    b = sorted(znorm(rb.py()), key=lambda s: str(shard_key(s)))
    ok(a == b, tag + "CLUSTER SHARDS as Redis's" + ("" if a == b else ": redis %r, zarisd %r" % (a, b)))
    ok(ra.kind == rb.kind and ra.value[0].kind == rb.value[0].kind, tag + "CLUSTER SHARDS reply types as Redis's")
    ia, ib = cr.call("CLUSTER", "INFO"), cz.call("CLUSTER", "INFO")
    ok(ia.kind == ib.kind, tag + "CLUSTER INFO's reply type as Redis's (%s)" % ib.kind)
    fa = dict(l.split(":", 1) for l in text(ia).split("\r\n") if ":" in l)
    fb = dict(l.split(":", 1) for l in text(ib).split("\r\n") if ":" in l)
    common = ["cluster_state", "cluster_slots_assigned", "cluster_slots_ok", "cluster_slots_pfail",
              "cluster_slots_fail", "cluster_known_nodes", "cluster_size"]
    ok(all(fa.get(k) == fb.get(k) for k in common) and set(fb) <= set(fa) | {"cluster_stats_messages_sent",
                                                                                "cluster_stats_messages_received"},
       tag + "CLUSTER INFO fields as Redis's (%s)" % {k: fb.get(k) for k in common})
    na, nb = cr.call("CLUSTER", "NODES"), cz.call("CLUSTER", "NODES")
    ok(na.kind == nb.kind, tag + "CLUSTER NODES reply type as Redis's (%s)" % nb.kind)

    def nodes(text):
        out = []
        for line in text.strip().split("\n"):
            f = line.split(" ")
            # id addr flags master ping pong epoch link slots...: times and epochs differ
            # the bus port (after @) is port + 10000 in both, when that fits
            out.append((f[0], f[1].split("@")[0], f[2], f[3], f[7], f[8:]))
        return sorted(out)
    a, b = nodes(rnorm(text(na))), nodes(znorm(text(nb)))
    ok(a == b, tag + "CLUSTER NODES lines as Redis's" + ("" if a == b else ": redis %r, zarisd %r" % (a, b)))
    a, b = cr.call("CLUSTER", "LINKS"), cz.call("CLUSTER", "LINKS")
    ok(a.kind == b.kind == "*", tag + "CLUSTER LINKS is an array")
    a, b = cr.call("CLUSTER", "MYID"), cz.call("CLUSTER", "MYID")
    ok(a.kind == b.kind and len(a.value) == len(b.value) == 40, tag + "CLUSTER MYID as Redis's")

# ---- without cluster mode ------------------------------------------------------------------
plain_r = start_redis(name="redis-plain")
plain_z = start_zarisd(threads=2, name="zarisd-plain")
pr, pz = plain_r.client(), plain_z.client()
for cmd in [("CLUSTER", "INFO"), ("CLUSTER", "SLOTS"), ("CLUSTER", "KEYSLOT", "x"), ("READONLY",), ("READWRITE",),
            ("ASKING",), ("CLUSTER", "NOSUCH")]:
    a, b = pr.call(*cmd), pz.call(*cmd)
    ok(a == b, "cluster disabled: %s as Redis (%r)" % (" ".join(cmd), b.value) + ("" if a == b else " redis %r" % a.value))
ok("cluster_enabled:0" in pz.call("INFO", "cluster").py().decode(), "INFO cluster_enabled:0")
done_testing()
