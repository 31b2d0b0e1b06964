#!/usr/bin/python3
# cluster_ruby.t — a second cluster-aware client family against zarisd's
# cluster mode (issue 16): redis-rb's cluster client (Debian's ruby-redis
# 4.8), seeded with one node of three zarisd primaries and a replica pushed
# the even split with CLUSTER SETTOPOLOGY, runs tests/lib/cluster_redis_rb.rb:
# 10,000 SETs and GETs over all slots, hash-tagged MSET/MGET, CROSSSLOT
# surfacing as Redis::CommandError with nothing written, INCR, a pipeline
# and a MULTI on hash-tagged keys. Each node then holds only keys of its own
# slots, the DBSIZEs add up to the script's count, the replica holds its
# primary's keys. The same script against a real Redis Cluster (three
# redis-server, redis-cli --cluster create) prints the same lines.

import binascii
import hashlib
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from zaris import *  # noqa: E402,F403

RUBY = "/usr/bin/ruby"
SCRIPT = os.path.join(REPO, "tests", "lib", "cluster_redis_rb.rb")
CLI = "/usr/bin/redis-cli"
N = 10000

if not os.access(RUBY, os.X_OK):
    skip_all("ruby is not installed (Debian package ruby)")
if subprocess.run([RUBY, "-e", "require 'redis'; require 'redis/cluster'"], capture_output=True,
                  timeout=60).returncode != 0:
    skip_all("redis-rb with its cluster client is not installed (Debian package ruby-redis)")

NAMES = ["n0", "n1", "n2", "r0"]
RANGES = {"n0": "0-5460", "n1": "5461-10922", "n2": "10923-16383"}
CROSSSLOT = "Redis::CommandError: CROSSSLOT Keys in request don't hash to the same slot"
# what the script prints when every step works as Redis defines it
WANT = {
    "nodes": "3",
    "set_ok": str(N),
    "get_ok": str(N),
    "mset_ok": "100",
    "mget_ok": "100",
    "mset_crossslot": CROSSSLOT,
    "mset_crossslot_wrote": "0,0",
    "mget_crossslot": CROSSSLOT,
    "incr": "123",
    "incr_wrongtype": "Redis::CommandError: ERR value is not an integer or out of range",
    "pipeline": "100 1 42",
    "multi": '["OK", 1, 2, "1"]',
    "pipeline_crossslot": "Redis::Cluster::CrossSlotPipeliningError",
    "del": "1",
    # key:*, five keys for each of 100 tags, counter, 100 {pipe}<i> and {pipe}n, {tx}n
    "dbsize": str(N + 500 + 1 + 101 + 1),
    "done": "yes",
}


def key_slot(key):
    """Redis Cluster's slot of a key: CRC16/XMODEM of its hash tag or of all of it."""
    b = key if isinstance(key, bytes) else key.encode()
    i = b.find(b"{")
    if i >= 0:
        j = b.find(b"}", i + 1)
        if j > i + 1:
            b = b[i + 1:j]
    return binascii.crc_hqx(b, 0) % 16384


def node_id(name):
    return hashlib.sha1(("ruby-cluster/" + name).encode()).hexdigest()


def document(ports, me):
    lines = ["epoch 1", "cluster ruby-cluster", "myself %s" % node_id(me)]
    for n in ["n0", "n1", "n2"]:
        lines.append("node %s %s 127.0.0.1 %d primary %s" % (node_id(n), n, ports[n], RANGES[n]))
    lines.append("node %s r0 127.0.0.1 %d replica %s" % (node_id("r0"), ports["r0"], node_id("n0")))
    return "\n".join(lines) + "\n"


def run_script(port, tag):
    """The script's "name value" lines against a cluster seeded with 127.0.0.1:port."""
    p = subprocess.run([RUBY, SCRIPT, "127.0.0.1:%d" % port, str(N)], capture_output=True, text=True,
                       timeout=600 * SLOW)
    ok(p.returncode == 0, "%s: the redis-rb script exits 0" % tag +
       ("" if p.returncode == 0 else " (%d: %s)" % (p.returncode, p.stderr[-600:])))
    if p.stderr.strip():
        diag("%s: script stderr: %s" % (tag, p.stderr.strip()[-600:]))
    lines = [l for l in p.stdout.split("\n") if l]
    return lines, dict(l.split(" ", 1) for l in lines if " " in l)


def check_results(tag, got):
    for name, want in WANT.items():
        is_(got.get(name), want, "%s: %s" % (tag, name))


def check_placement(tag, conns, ranges, total):
    """Every node holds only keys of its own slots; their DBSIZEs add up to the script's."""
    sizes = []
    for n, c in conns.items():
        a, b = map(int, ranges[n].split("-"))
        keys = c.call("KEYS", "*").py()
        stray = [k for k in keys if not a <= key_slot(k) <= b]
        ok(isinstance(keys, list) and len(keys) > N // 4 and not stray,
           "%s: %s holds %d keys, all of its slots %s" % (tag, n, len(keys), ranges[n]) +
           ("" if not stray else " (strays %r)" % stray[:3]))
        sizes.append(c.call("DBSIZE").py())
    is_(sum(sizes), total, "%s: the primaries' DBSIZEs %s add up to %d" % (tag, sizes, total))
    ok(sum(sizes) >= N, "%s: at least %d keys in all" % (tag, N))


# ---- zarisd: three primaries and a replica of n0 -------------------------------------------
servers = {}
for n in ["n0", "n1", "n2"]:
    servers[n] = start_zarisd(threads=2, extra=["--cluster-enabled", "yes"], name=n)
servers["r0"] = start_zarisd(threads=2, extra=["--cluster-enabled", "yes", "--replicaof",
                                                "127.0.0.1 %d" % servers["n0"].port], name="r0")
ports = {n: s.port for n, s in servers.items()}
conn = {n: s.client() for n, s in servers.items()}
res = {n: conn[n].call("CLUSTER", "SETTOPOLOGY", document(ports, n)).py() for n in NAMES}
ok(all(v == "OK" for v in res.values()), "zarisd: SETTOPOLOGY on every node: %s" % res)

# seeded with n1 alone: the client learns n0 and n2 from CLUSTER SLOTS / NODES
z_lines, z_got = run_script(ports["n1"], "zarisd")
check_results("zarisd", z_got)
primaries = {n: conn[n] for n in ["n0", "n1", "n2"]}
check_placement("zarisd", primaries, RANGES, int(WANT["dbsize"]))

deadline = time.monotonic() + 30 * SLOW
while time.monotonic() < deadline and conn["r0"].call("DBSIZE").py() != conn["n0"].call("DBSIZE").py():
    time.sleep(0.05)
n0_keys = sorted(conn["n0"].call("KEYS", "*").py())
ok(n0_keys == sorted(conn["r0"].call("KEYS", "*").py()), "zarisd: the replica holds its primary's %d keys"
   % len(n0_keys))

# ---- a real Redis Cluster -----------------------------------------------------------------
reds = [start_redis(extra=["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"], name="redis%d" % i)
        for i in range(3)]
p = subprocess.run([CLI, "--cluster", "create"] + ["127.0.0.1:%d" % r.port for r in reds] +
                   ["--cluster-replicas", "0", "--cluster-yes"], capture_output=True, text=True, timeout=120)
ok(p.returncode == 0, "redis-cli --cluster create" + ("" if p.returncode == 0 else ": " + p.stdout[-400:]))
rconn = [r.client() for r in reds]
states = []
deadline = time.monotonic() + 30 * SLOW
while time.monotonic() < deadline:
    states = [c.call("CLUSTER", "INFO").py() for c in rconn]
    if all(b"cluster_state:ok" in s for s in states):
        break
    time.sleep(0.1)
ok(all(b"cluster_state:ok" in s for s in states), "the Redis Cluster reaches cluster_state:ok")
# redis-cli --cluster create gives the even split too, in node order
r_ranges = {}
for r in rconn[0].call("CLUSTER", "SLOTS").py():
    i = [j for j, x in enumerate(reds) if x.port == r[2][1]][0]
    r_ranges["redis%d" % i] = "%d-%d" % (r[0], r[1])
is_(sorted(r_ranges.values()), sorted(RANGES.values()), "redis-server: the same even split as zarisd's")

r_lines, r_got = run_script(reds[1].port, "redis-server")
check_results("redis-server", r_got)
check_placement("redis-server", {"redis%d" % i: c for i, c in enumerate(rconn)}, r_ranges, int(WANT["dbsize"]))
diff = [(a, b) for a, b in zip(z_lines, r_lines) if a != b]
ok(z_lines == r_lines, "the script prints the same %d lines against zarisd and redis-server" % len(r_lines) +
   ("" if not diff and len(z_lines) == len(r_lines) else ": %r (lines %d vs %d)" % (diff[:3], len(z_lines),
                                                                                       len(r_lines))))

for c in list(conn.values()) + rconn:
    c.close()
done_testing()
