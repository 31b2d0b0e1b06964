#!/usr/bin/python3
# libzaris_cluster.t — libzaris against three zarisd primaries in cluster
# mode, their topology pushed with CLUSTER SETTOPOLOGY, node lines carrying
# `native <port>` (the client learns native ports from TOPOLOGY; no port
# offset is used). Checked: the client finds cluster mode and the epoch
# from the seed; 600 keys written through split MSETs and SETs each land on
# their slot's owner (each node's DBSIZE is the count of keys whose slot,
# CRC16 with hash tags computed here, it owns; EXISTS on the owner over
# RESP); one MGET of all of them comes back whole and in order; INVALIDATE
# is summed over the primaries; a new epoch moving a range makes the old
# owner answer MOVED, which the client follows (no MOVED reaches the
# caller), then re-reads TOPOLOGY; a kill -9 of one node fails only its
# keys (ZARIS_E_IO) and, restarted on the same ports, it is reconnected.
import hashlib
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
sys.path.insert(0, HERE)
from zaris import Reply, diag, done_testing, is_, ok, skip_all, start_zarisd  # noqa: E402
import zdriver  # noqa: E402

if not os.access(zdriver.driver_path(), os.X_OK):
    skip_all("no %s (make builds it)" % zdriver.driver_path())

CLI = "/usr/bin/redis-cli"
NAMES = ["n0", "n1", "n2"]


def crc16(data):
    crc = 0
    for b in data:
        crc ^= b << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else crc << 1
            crc &= 0xFFFF
    return crc


def slot(key):
    s = key.find(b"{")
    if s >= 0:
        e = key.find(b"}", s + 1)
        if e > s + 1:
            key = key[s + 1:e]
    return crc16(key) % 16384


def node_id(name):
    return hashlib.sha1(("libzaris-cluster/" + name).encode()).hexdigest()


def document(epoch, me, ranges):
    lines = ["epoch %d" % epoch, "cluster libzaris", "myself %s" % node_id(me)]
    for n in sorted(ranges):
        lines.append("node %s %s 127.0.0.1 %d primary %s native %d"
                     % (node_id(n), n, servers[n].port, ranges[n], natives[n]))
    return "\n".join(lines) + "\n"


def push(epoch, ranges):
    outs = []
    for n in sorted(ranges):
        p = subprocess.run([CLI, "-p", str(servers[n].port), "CLUSTER", "SETTOPOLOGY", document(epoch, n, ranges)],
                           capture_output=True, text=True, timeout=60)
        outs.append(p.stdout.strip())
    return outs


def owner(s, ranges):
    for n, r in ranges.items():
        for part in r.split(","):
            a, b = map(int, part.split("-"))
            if a <= s <= b:
                return n
    return None


RANGES = {"n0": "0-5460", "n1": "5461-10922", "n2": "10923-16383"}
servers = {n: start_zarisd(threads=2, name=n, native=True, extra=["--cluster-enabled", "yes"]) for n in NAMES + ["n3"]}
natives = {n: servers[n].native_port for n in servers}
is_(push(1, RANGES), ["OK"] * 3, "topology epoch 1 pushed to the three nodes (n3 runs, in no topology yet)")
conn = {n: servers[n].client() for n in NAMES}

d = zdriver.Driver()
rc, text = d.connect(port=natives["n0"], timeout=5000, rmin=20, rmax=200, interval=1)
is_((rc, text), (0, "cluster"), "connect to n0's native port: cluster mode from HELLO")
st = d.stats()
ok(st["epoch"] == 1 and st["topology"] == 1, "one TOPOLOGY read, epoch 1 (%r)" % st)

keys = [b"key:%d" % i for i in range(500)] + [b"{tag%d}:%d" % (i % 7, i) for i in range(100)]
for i in range(0, 300, 50):
    d.add("mset", *[x for k in keys[i:i + 50] for x in (k, k + b"=v")])
for k in keys[300:]:
    d.add("set", k, k + b"=v")
rc, res = d.exec()
ok(rc == 0 and all(s == 0 for s, _ in res), "6 MSETs of 50 keys (split per slot) and 300 SETs")
want = {n: 0 for n in NAMES}
for k in keys:
    want[owner(slot(k), RANGES)] += 1
got = {n: conn[n].call("DBSIZE").value for n in NAMES}
is_(got, want, "each node holds exactly the keys of its slots")
misplaced = [k for k in keys[::37] if conn[owner(slot(k), RANGES)].call("EXISTS", k).value != 1]
is_(misplaced, [], "sampled keys exist on their owner")
ks = [conn["n0"].call("CLUSTER", "KEYSLOT", k).value for k in keys[:20]]
is_(ks, [slot(k) for k in keys[:20]], "this test's slot function agrees with CLUSTER KEYSLOT")

st, v = d.one("mget", *keys)
ok(st == 0 and v.py() == [k + b"=v" for k in keys], "one MGET of all 600 keys: whole and in order")

for i in range(30):
    d.add("set", b"lab:%d" % i, b"x", labels=[b"L"])
rc, _ = d.exec()
st, v = d.one("invalidate", b"L")
ok(rc == 0 and st == 0 and v == Reply(":", 30), "INVALIDATE over the three primaries: 30 (%r)" % (v,))
if st != 0:
    diag("status %s rc %s: %s" % (st, d.rc, d.err))
is_(sum(conn[n].call("DBSIZE").value for n in NAMES), len(keys), "and the labelled keys are gone")

# a new epoch: n1 takes n0's range
MOVED_RANGES = {"n0": "0-0", "n1": "1-10922", "n2": "10923-16383"}
is_(push(2, MOVED_RANGES), ["OK"] * 3, "topology epoch 2 moves slots 1-5460 to n1")
moved_keys = [k for k in keys if 1 <= slot(k) <= 5460][:20]
before = d.stats()["moved"]
for k in moved_keys:
    d.add("set", k, b"new")
rc, res = d.exec()
after = d.stats()
ok(rc == 0 and all(s == 0 for s, _ in res), "SETs of 20 keys in the moved range succeed (no MOVED to the caller)")
ok(after["moved"] > before, "the client followed MOVED (%d)" % (after["moved"] - before))
bad = [k for k in moved_keys if conn["n1"].call("GET", k).value != b"new"]
is_(bad, [], "the writes landed on the new owner n1")
epoch = after["epoch"]
for _ in range(100):  # bounded: the re-read is rate-limited to once per 1 ms here
    if epoch == 2:
        break
    d.one("get", moved_keys[0])
    epoch = d.stats()["epoch"]
    time.sleep(0.01)
is_(epoch, 2, "the client re-read TOPOLOGY and uses epoch 2")
m0 = d.stats()["moved"]
st, v = d.one("get", moved_keys[1])
ok(st == 0 and v == Reply("$", b"new") and d.stats()["moved"] == m0, "then routes there directly (no MOVED)")

# kill -9 one node
n2_key = next(k for k in keys if owner(slot(k), MOVED_RANGES) == "n2")
n1_key = next(k for k in keys if owner(slot(k), MOVED_RANGES) == "n1")
conn["n2"].close()
servers["n2"].kill()
d.add("get", n1_key)
d.add("get", n2_key)
rc, res = d.exec()
ok(rc == zdriver.E_IO and res[0][0] == 0 and res[1][0] == zdriver.E_IO,
   "after kill -9 of n2: its key ZARIS_E_IO, n1's key answered (%r)" % ([s for s, _ in res],))
servers["n2"].restart(same_port=True)
conn["n2"] = servers["n2"].client()
topo = conn["n2"].call("CLUSTER", "MYID").py()
ok(topo == node_id("n2").encode(), "n2 restarted with its topology file")
conn["n2"].call("SET", n2_key, b"back")  # kill -9 lost its data (no persistence here)
st = None
for _ in range(200):  # bounded: backoff is at most 200 ms here
    st, v = d.one("get", n2_key)
    if st == 0:
        break
    time.sleep(0.02)
if st != 0:
    diag("status %s rc %s: %s" % (st, d.rc, d.err))
ok(st == 0 and v == Reply("$", b"back"), "the client reconnects to the restarted n2 and reads its key")

# a node the client has never heard of: MOVED names it, the client waits
# for a TOPOLOGY read to learn its native port, then sends there
GROWN = {"n0": "0-0", "n1": "1-10922", "n2": "11001-16383", "n3": "10923-11000"}
conn["n3"] = servers["n3"].client()
is_(push(3, GROWN), ["OK"] * 4, "topology epoch 3: n3 joins with slots 10923-11000 from n2")
k3 = next(k for k in (b"new:%d" % i for i in range(100000)) if owner(slot(k), GROWN) == "n3")
m0, t0 = d.stats()["moved"], d.stats()["topology"]
st, v = d.one("set", k3, b"on-n3")
s3 = d.stats()
ok(st == 0 and s3["moved"] == m0 + 1 and s3["topology"] > t0 and s3["epoch"] == 3,
   "SET of a key n3 now owns: one MOVED, a TOPOLOGY read, epoch 3 (%r)" % s3)
is_(conn["n3"].call("GET", k3).value, b"on-n3", "the key is on n3")
d.close()
done_testing()
