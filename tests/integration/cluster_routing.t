#!/usr/bin/python3
# cluster_routing.t — zarisd's cluster mode end to end (issue 16): three
# primaries and a replica (--replicaof and a replica line), each pushed
# its document with redis-cli CLUSTER SETTOPOLOGY. Every slot is served by
# its owner and MOVED from the others; CROSSSLOT; MULTI across slots and
# against another node's slot; READONLY reads on the replica (writes MOVED
# to its primary); SELECT; redis-cli -c and redis-py's RedisCluster write
# and read 10,000 keys each; redis-cli --cluster check is healthy; the
# epoch rules (older refused, same epoch other layout refused, restart keeps
# the file's, an address change makes MOVED name the new address, a slot
# left out answers CLUSTERDOWN); SETTOPOLOGY's line errors.

import hashlib
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from zaris import *  # noqa: E402,F403

try:
    import redis
    from redis.cluster import RedisCluster, ClusterNode
except ImportError:
    skip_all("python3-redis with redis.cluster is not installed")

CLI = "/usr/bin/redis-cli"
NAMES = ["n0", "n1", "n2", "r0"]
RANGES = {"n0": "0-5460", "n1": "5461-10922", "n2": "10923-16383"}


def node_id(name):
    return hashlib.sha1(("test-cluster/" + name).encode()).hexdigest()


def document(epoch, ports, me, ranges=RANGES, extra=""):
    lines = ["epoch %d" % epoch, "cluster test-cluster", "myself %s" % node_id(me)]
    for n in NAMES:
        if n in ranges:
            lines.append("node %s %s 127.0.0.1 %d primary %s" % (node_id(n), n, ports[n], ranges[n]))
        elif n == "r0":
            lines.append("node %s r0 127.0.0.1 %d replica %s" % (node_id(n), ports[n], node_id("n0")))
    return "\n".join(lines) + "\n" + extra


def cli(port, *args, stdin=None):
    p = subprocess.run([CLI, "-p", str(port)] + list(args), input=stdin, capture_output=True, timeout=120,
                       text=True)
    return p.returncode, p.stdout.strip(), p.stderr.strip()


def push_all(epoch, servers, ranges=RANGES):
    ports = {n: s.port for n, s in servers.items()}
    out = {}
    for n, s in servers.items():
        out[n] = cli(s.port, "CLUSTER", "SETTOPOLOGY", document(epoch, ports, n, ranges))[1]
    return out


def owner_of(slot, ranges=RANGES):
    for n, r in ranges.items():
        a, b = map(int, r.split("-"))
        if a <= slot <= b:
            return n
    return None


servers = {}
for n in ["n0", "n1", "n2"]:
    servers[n] = start_zarisd(threads=2, extra=["--cluster-enabled", "yes"], name=n)
servers["r0"] = start_zarisd(threads=2, extra=["--cluster-enabled", "yes", "--replicaof",
                                                "127.0.0.1 %d" % servers["n0"].port], name="r0")
ports = {n: s.port for n, s in servers.items()}
conn = {n: s.client() for n, s in servers.items()}

# ---- before the push ----------------------------------------------------------------------
c0 = conn["n0"]
myid = c0.call("CLUSTER", "MYID").py()
ok(isinstance(myid, bytes) and len(myid) == 40, "CLUSTER MYID before a topology is a generated id")
is_(c0.call("CLUSTER", "TOPOLOGY").py(), None, "CLUSTER TOPOLOGY is nil before a push")
is_(c0.call("GET", "k").py(), "CLUSTERDOWN Hash slot not served", "keyed commands are unserved before a push")
ok("cluster_enabled:1" in c0.call("INFO", "cluster").py().decode(), "INFO has cluster_enabled:1")

res = push_all(1, servers)
ok(all(v == "OK" for v in res.values()), "SETTOPOLOGY epoch 1 on every node: %s" % res)
for n, c in conn.items():
    info = c.call("CLUSTER", "INFO").py()
    info = info.decode() if isinstance(info, bytes) else info
    f = dict(l.split(":", 1) for l in info.split("\r\n") if ":" in l)
    ok(f.get("cluster_state") == "ok" and f.get("cluster_slots_assigned") == "16384" and
       f.get("cluster_known_nodes") == "4" and f.get("cluster_size") == "3" and f.get("cluster_my_epoch") == "1",
       "%s: CLUSTER INFO ok, 16384 slots, 4 nodes, size 3, epoch 1" % n)
    is_(c.call("CLUSTER", "MYID").py().decode(), node_id(n), "%s: CLUSTER MYID is myself" % n)

# ---- every slot has one owner, served there and MOVED elsewhere ---------------------------
slots = c0.call("CLUSTER", "SLOTS").py()
covered = sorted((r[0], r[1]) for r in slots)
is_(covered, [(0, 5460), (5461, 10922), (10923, 16383)], "CLUSTER SLOTS covers every slot in three ranges")
n0_range = [r for r in slots if r[0] == 0][0]
is_(len(n0_range), 4, "n0's range lists its replica")
is_(n0_range[3][:3], [b"127.0.0.1", ports["r0"], node_id("r0").encode()], "the replica entry is ip, port, id")

# a key for every slot would be 16384 keys; one per 64 slots covers all three owners' edges
# slots via the server, in one pipeline
cands = ["key:%d" % j for j in range(60000)]
slot_of = dict(zip(cands, (r.py() for r in c0.pipeline([("CLUSTER", "KEYSLOT", k) for k in cands]))))
want_slots = set(range(0, 16384, 64)) | {5460, 5461, 10922, 10923, 16383}
picked = {}
for k, s in slot_of.items():
    if s in want_slots and s not in picked:
        picked[s] = k
# hash tags reach the exact edge slots whatever the key names give
for s in want_slots - set(picked):
    for j in range(200000):
        k = "{t%d}" % j
        if c0.call("CLUSTER", "KEYSLOT", k).py() == s:
            picked[s] = k
            break
        if j > 20000:
            break
wrong = []
for s, k in sorted(picked.items()):
    own = owner_of(s)
    for n in ["n0", "n1", "n2"]:
        r = conn[n].call("SET", k, "v%d" % s)
        want = "OK" if n == own else "MOVED %d 127.0.0.1:%d" % (s, ports[own])
        if r.py() != want:
            wrong.append((n, k, s, r.py(), want))
ok(not wrong, "%d slots: SET runs on the owner, MOVED <slot> <ip:port> elsewhere" % len(picked) +
   (" (%s)" % wrong[:3] if wrong else ""))

# ---- CROSSSLOT, MULTI ---------------------------------------------------------------------
is_(c0.call("MSET", "{a}1", "x", "{b}1", "y").py(), "CROSSSLOT Keys in request don't hash to the same slot",
    "MSET across slots: CROSSSLOT")
sa = c0.call("CLUSTER", "KEYSLOT", "{a}").py()
own_a = owner_of(sa)
ca = conn[own_a]
is_(ca.call("MSET", "{a}1", "x", "{a}2", "y").py(), "OK", "MSET within one slot runs on its owner")
ca.call("MULTI")
is_(ca.call("SET", "{a}1", "1").py(), "QUEUED", "MULTI: first key queued")
ca.call("SET", "{a}x", "2")
other = [k for s, k in picked.items() if owner_of(s) == own_a and s != sa][0]
is_(ca.call("SET", other, "3").py(), "QUEUED", "MULTI: a key of another slot of this node is queued")
is_(ca.call("EXEC").py(), "CROSSSLOT Keys in request don't hash to the same slot",
    "EXEC of a transaction across slots: CROSSSLOT")
is_(ca.call("EXEC").py(), "ERR EXEC without MULTI", "and the transaction is gone")
foreign = [k for s, k in picked.items() if owner_of(s) != own_a][0]
ca.call("MULTI")
r = ca.call("SET", foreign, "1").py()
ok(r.startswith("MOVED "), "MULTI: a key another node owns is MOVED at queue time (%s)" % r)
ok(ca.call("EXEC").py().startswith("EXECABORT"), "then EXEC answers EXECABORT")
ca.call("MULTI")
ca.call("INCR", "{a}n")
ca.call("INCR", "{a}n")
is_(ca.call("EXEC").py(), [1, 2], "a one-slot transaction runs")

# ---- keyless, SELECT, ASKING --------------------------------------------------------------
is_(c0.call("PING").py(), "PONG", "keyless commands run anywhere")
is_(c0.call("SELECT", "1").py(), "ERR SELECT is not allowed in cluster mode", "SELECT 1 refused")
is_(c0.call("SELECT", "0").py(), "OK", "SELECT 0 is fine")
is_(c0.call("ASKING").py(), "OK", "ASKING answers OK")

# ---- METAINVALIDATE covers this node's slots and says so ----------------------------------
labelled = {}
for k, s in list(slot_of.items())[:300]:
    n = owner_of(s)
    labelled.setdefault(n, []).append(k)
    conn[n].call("METAPUT", k, "v", "LABELS", "1", "lab")
inv = c0.call("METAINVALIDATE", "lab").py()
is_(inv, [b"deleted", len(labelled["n0"]), b"node", node_id("n0").encode()],
    "METAINVALIDATE on n0: its own keys deleted (%d), the reply names the node" % len(labelled["n0"]))
left = conn["n1"].call("METAINVALIDATE", "lab").py()
is_(left[:2], [b"deleted", len(labelled["n1"])], "n1's labelled keys were still there for n1's own")
is_(conn["n2"].call("EXISTS", labelled["n2"][0]).py(), 1, "and n2's are untouched")
conn["n2"].call("METAINVALIDATE", "lab")

# ---- shard channels route by slot ----------------------------------------------------------
is_(c0.call("SSUBSCRIBE", "{a}c1", "{b}c1").py(), "CROSSSLOT Keys in request don't hash to the same slot",
    "SSUBSCRIBE across slots: CROSSSLOT")
wrong_node = [n for n in ["n0", "n1", "n2"] if n != own_a][0]
is_(conn[wrong_node].call("SPUBLISH", "{a}c1", "m").py(), "MOVED %d 127.0.0.1:%d" % (sa, ports[own_a]),
    "SPUBLISH on another node's slot: MOVED")
sub = servers[own_a].client()
sub.call("SSUBSCRIBE", "{a}c1")
is_(ca.call("SPUBLISH", "{a}c1", "m").py(), 1, "SPUBLISH on the owner reaches its subscriber")
is_(sub.read_reply().py(), [b"smessage", b"{a}c1", b"m"], "the subscriber gets the smessage")
sub.close()

# ---- the replica: MOVED for writes, READONLY reads -----------------------------------------
n0_key = [k for s, k in sorted(picked.items()) if owner_of(s) == "n0"][0]
rc = conn["r0"]
deadline = time.monotonic() + 20 * SLOW
while time.monotonic() < deadline and conn["r0"].call("DBSIZE").py() < conn["n0"].call("DBSIZE").py():
    time.sleep(0.05)
s0 = slot_of.get(n0_key) if n0_key in slot_of else rc.call("CLUSTER", "KEYSLOT", n0_key).py()
is_(rc.call("GET", n0_key).py(), "MOVED %d 127.0.0.1:%d" % (s0, ports["n0"]), "replica: a read without READONLY is MOVED to its primary")
is_(rc.call("READONLY").py(), "OK", "READONLY")
is_(rc.call("GET", n0_key).py(), ("v%d" % s0).encode(), "replica: after READONLY it serves its primary's slots")
is_(rc.call("SET", n0_key, "x").py(), "MOVED %d 127.0.0.1:%d" % (s0, ports["n0"]), "replica: a write is MOVED to the primary")
n1_key = [k for s, k in sorted(picked.items()) if owner_of(s) == "n1"][0]
ok(rc.call("GET", n1_key).py().startswith("MOVED "), "replica: another shard's slot is still MOVED")
is_(rc.call("READWRITE").py(), "OK", "READWRITE")
ok(rc.call("GET", n0_key).py().startswith("MOVED "), "replica: after READWRITE reads are MOVED again")

# ---- clients: redis-cli -c and redis-py RedisCluster ---------------------------------------
N = 10000
cmds = "".join("SET cli:%d %d\n" % (j, j) for j in range(N))
code, out, err = cli(ports["n0"], "-c", stdin=cmds)
ok(code == 0 and out.count("OK") == N, "redis-cli -c: %d SETs answered OK (%s)" % (N, err[:200]))
code, out, err = cli(ports["n1"], "-c", stdin="".join("GET cli:%d\n" % j for j in range(N)))
lines = out.split("\n")
got = [l for l in lines if not l.startswith("-> Redirected to slot")]
ok(len(lines) - len(got) > N // 3, "redis-cli -c followed MOVED (%d redirects)" % (len(lines) - len(got)))
diff = [(j, g) for j, g in enumerate(got) if g != str(j)]
ok(code == 0 and len(got) == N and not diff, "redis-cli -c: %d GETs read them back" % N +
   ("" if not diff else " (%d lines, first wrong %s, %s)" % (len(got), diff[:3], err[:200])))

rcl = RedisCluster(startup_nodes=[ClusterNode("127.0.0.1", ports["n2"])], decode_responses=True)
for j in range(N):
    rcl.set("py:%d" % j, str(j))
bad = [j for j in range(N) if rcl.get("py:%d" % j) != str(j)]
ok(not bad, "redis-py RedisCluster: %d keys written and read back" % N)
total = sum(conn[n].call("DBSIZE").py() for n in ["n0", "n1", "n2"])
ok(total >= 2 * N, "the keys are spread over the three primaries (%d in all)" % total)
counts = [conn[n].call("DBSIZE").py() for n in ["n0", "n1", "n2"]]
ok(all(x > N // 2 for x in counts), "each primary holds a third of them (%s)" % counts)
s_py0 = rcl.keyslot("py:0")
own = owner_of(s_py0)
is_(conn[own].call("CLUSTER", "COUNTKEYSINSLOT", s_py0).py(), len([j for j in range(N) if rcl.keyslot("py:%d" % j) == s_py0]) +
    len([j for j in range(N) if rcl.keyslot("cli:%d" % j) == s_py0]) + len([k for s, k in picked.items() if s == s_py0]),
    "CLUSTER COUNTKEYSINSLOT counts the slot's keys")
gk = conn[own].call("CLUSTER", "GETKEYSINSLOT", s_py0, 1000).py()
ok(b"py:0" in gk and all(rcl.keyslot(k.decode()) == s_py0 for k in gk), "CLUSTER GETKEYSINSLOT lists the slot's keys")
rcl.close()

code, out, err = cli(ports["n0"], "--cluster", "check", "127.0.0.1:%d" % ports["n0"])
ok(code == 0 and "[OK] All 16384 slots covered." in out and "[ERR]" not in out,
   "redis-cli --cluster check is healthy" + ("" if code == 0 else ": " + out[-600:] + err[-300:]))

# ---- pushes while workers route: tables swapped under readers ----------------------------
import threading
stop = threading.Event()
seen = {"replies": 0, "bad": []}
hot = [k for sl, k in sorted(picked.items())][:50]


def hammer(port):
    c = Client(port)
    while not stop.is_set():
        for r in c.pipeline([("GET", k) for k in hot]):
            v = r.py()
            seen["replies"] += 1
            if not (isinstance(v, bytes) or (isinstance(v, str) and v.startswith("MOVED "))):
                seen["bad"].append(v)
    c.close()


threads = [threading.Thread(target=hammer, args=(ports["n0"],)) for _ in range(2)]
for t in threads:
    t.start()
pushed = 0
for e in range(2, 102):
    if cli(ports["n0"], "CLUSTER", "SETTOPOLOGY", document(e, ports, "n0"))[1] == "OK":
        pushed += 1
stop.set()
for t in threads:
    t.join(60)
is_(pushed, 100, "100 pushes applied while two clients route GETs")
ok(seen["replies"] > 0 and not seen["bad"], "every reply meanwhile is a value or MOVED (%d replies%s)"
   % (seen["replies"], ", bad %r" % seen["bad"][:3] if seen["bad"] else ""))
res = push_all(101, servers)
ok(all(v == "OK" for v in res.values()), "epoch 101 everywhere: %s" % res)

# ---- epochs -------------------------------------------------------------------------------
r = cli(ports["n1"], "CLUSTER", "SETTOPOLOGY", document(0, ports, "n1"))[1]
is_(r, "ERR topology epoch 0 is older than the current epoch 101", "an older epoch is refused")
moved_ranges = dict(RANGES, n1="5461-10921", n2="10922-16383")
r = cli(ports["n1"], "CLUSTER", "SETTOPOLOGY", document(101, ports, "n1", moved_ranges))[1]
is_(r, "ERR topology epoch 101 is the current epoch with a different layout",
    "the same epoch with another layout is refused")
is_(cli(ports["n1"], "CLUSTER", "SETTOPOLOGY", document(101, ports, "n1"))[1], "OK", "the same document again: OK")
r = cli(ports["n1"], "CLUSTER", "SETTOPOLOGY", "epoch 5\ncluster x\nmyself %s\nnode zz\n" % node_id("n1"))[1]
is_(r, "ERR topology line 4: a node line is: node <id> <name> <ip> <port> primary <ranges> | replica <primary-id>",
    "a bad document names its line")
is_(conn["n1"].call("CLUSTER", "INFO").py().decode().count("cluster_my_epoch:101\r"), 1, "and nothing changed")

conn["n1"].close()
servers["n1"].restart(same_port=True)
conn["n1"] = servers["n1"].client()
doc = conn["n1"].call("CLUSTER", "TOPOLOGY").py()
is_(doc.decode() if doc else None, document(101, ports, "n1"), "a restart keeps the topology from its file")
is_(conn["n1"].call("CLUSTER", "MYID").py().decode(), node_id("n1"), "and myself")
is_(cli(ports["n1"], "CLUSTER", "SETTOPOLOGY", document(0, ports, "n1"))[1],
    "ERR topology epoch 0 is older than the current epoch 101", "and still refuses an older epoch")

conn["n2"].close()
servers["n2"].restart(same_port=False)
ports["n2"] = servers["n2"].port
conn["n2"] = servers["n2"].client()
res = push_all(102, servers)
ok(all(v == "OK" for v in res.values()), "epoch 102 with n2's new port pushed everywhere: %s" % res)
k2 = [k for s, k in sorted(picked.items()) if owner_of(s) == "n2"][0]
s2 = c0.call("CLUSTER", "KEYSLOT", k2).py()
is_(c0.call("GET", k2).py(), "MOVED %d 127.0.0.1:%d" % (s2, ports["n2"]), "MOVED names n2's new address")

part = {"n0": "0-5460", "n1": "5461-10922", "n2": "10923-16000"}
res = push_all(103, servers, part)
ok(all(v == "OK" for v in res.values()), "epoch 103 leaves slots 16001-16383 to nobody")
kx = [k for s, k in sorted(picked.items()) if s > 16000]
ok(kx and c0.call("GET", kx[0]).py() == "CLUSTERDOWN Hash slot not served", "an unowned slot: CLUSTERDOWN Hash slot not served")
ok("cluster_state:fail" in c0.call("CLUSTER", "INFO").py().decode(), "CLUSTER INFO: cluster_state:fail without full coverage")

for c in conn.values():
    c.close()
done_testing()
