#!/usr/bin/python3
"""The shipped config/examples/failover-local.conf, run as its comment and
the README say: three supervisors, `--machine m1|m2|m3`, each running its
machine's etcd member itself (etcd = "run") and its instances. Only the
ports are the test's own (the file's 7001-7006 and each machine's etcd
client and peer ports, added as etcd-client-port / etcd-peer-port): every
other line is the file's.

Checked: zarisctl check-config takes it; the three members form one etcd
cluster and every shard is led by its declared primary; writes through a
cluster client are acknowledged (replica-ack 1); machine m1 dies (kill -9
of its supervisor and of every process it started: zarisd p1 and r3, the
etcd member): r1 on m2 is elected for p1's slots; p2's slots (primary and
replica alive) take writes, while p1's (r1 now, its replica p1 gone) and
p3's (its replica r3 gone) refuse them with NOREPLICAS, as replica-ack 1
says, rather than acknowledge a single copy; nothing acknowledged is lost;
m1 comes back in the same directory (its etcd data kept, as after a
reboot): its member rejoins, p1 rejoins as a replica of r1, r3 of p3, and
every shard takes writes again. Skips without etcd.

m1 is killed about a second after r1's first full sync, between two of its
supervisor's health checks: r1 is a candidate because its freshness comes
from its own INFO (master_link_down_since_seconds), not only from a check
that happened to see its link up (without that it was never elected)."""
import json
import os
import re
import shutil
import signal
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from svlib import *  # noqa: E402,F401

require_binaries()
if not shutil.which("etcd"):
    skip_all("etcd not installed")
try:
    from redis.cluster import RedisCluster, ClusterNode
    from redis.crc import key_slot
except ImportError:
    skip_all("python3-redis has no RedisCluster")

EXAMPLE = os.path.join(REPO, "config", "examples", "failover-local.conf")
ADDR = {"m1": "127.0.0.1", "m2": "127.0.0.2", "m3": "127.0.0.3"}
MACHINES = ["m1", "m2", "m3"]


def local_copy(text, node_ports, etcd_ports):
    """The example with the test's ports: node port N -> node_ports[N], and
    each machine entry given its etcd ports."""
    text = re.sub(r"port = (700[1-6]);", lambda m: "port = %d;" % node_ports[int(m.group(1))], text)
    for k, m in enumerate(MACHINES):
        entry = '{ name = "%s"; address = "%s"; }' % (m, ADDR[m])
        if entry not in text:
            raise RuntimeError("the example no longer declares " + entry)
        text = text.replace(entry, '{ name = "%s"; address = "%s"; etcd-client-port = %d; etcd-peer-port = %d; }' % (
            m, ADDR[m], etcd_ports[2 * k], etcd_ports[2 * k + 1]))
    return text


original = open(EXAMPLE).read()
fixed = [int(p) for p in re.findall(r"port = (\d+);", original)]
ok(sorted(fixed) == list(range(7001, 7007)), "the example declares nodes on ports 7001-7006 (%r)" % fixed)
fp = free_ports(12)
node_ports = {7001 + k: fp[k] for k in range(6)}
text = local_copy(original, node_ports, fp[6:])
tmp = tempfile.mkdtemp(prefix="zfo-example-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
conf_path = os.path.join(tmp, "failover-local.conf")
with open(conf_path, "w") as f:
    f.write(text)
r = subprocess.run([ZARISCTL, "check-config", conf_path], capture_output=True, text=True, timeout=20)
ok(r.returncode == 0, "zarisctl check-config takes the example (ports replaced)") or diag(r.stdout + r.stderr)

port_of = {"p1": node_ports[7001], "p2": node_ports[7002], "p3": node_ports[7003],
           "r1": node_ports[7004], "r2": node_ports[7005], "r3": node_ports[7006]}
addr_of = {"p1": "127.0.0.1", "p2": "127.0.0.2", "p3": "127.0.0.3",
           "r1": "127.0.0.2", "r2": "127.0.0.3", "r3": "127.0.0.1"}
sups = {}


def start(m):
    sups[m] = Supervisor(text, extra_args=["--machine", m], workdir=os.path.join(tmp, m))


def shards(m):
    rc, out, _ = sups[m].ctl("--json", "status")
    res = {}
    if rc == 0:
        for line in out.splitlines():
            d = json.loads(line)
            if d.get("type") == "shard":
                res[d["shard"]] = d
    return res


def role(name):
    try:
        i = redis.Redis(host=addr_of[name], port=port_of[name], socket_timeout=1).info("replication")
        return i.get("role"), i.get("master_port")
    except Exception:
        return None, None


def children(pid):
    """The PIDs whose parent is PID."""
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open("/proc/%s/stat" % d) as f:
                    if int(f.read().rsplit(")", 1)[1].split()[1]) == pid:
                        out.append(int(d))
            except (OSError, ValueError, IndexError):
                pass
    return out


class Cluster:
    """A RedisCluster client as an application keeps one, made again when
    redis-py cannot refresh its view: python3-redis 4.3.4 (Debian 12) drops
    the connection of a node that stopped answering and then fails every
    refresh that reaches that node before a live one ("cannot pickle
    '_thread.lock' object": it deep-copies connection arguments holding a
    bound method of the client), so a client whose first startup node died
    keeps its old slot map for ever. A new client skips the dead nodes."""

    def __init__(self):
        self.rc = None
        self.renewed = 0
        self.renew()

    def renew(self):
        if self.rc is not None:
            self.rc.close()
            self.renewed += 1
        self.rc = RedisCluster(startup_nodes=[ClusterNode(addr_of[n], port_of[n]) for n in port_of],
                               socket_timeout=3, cluster_error_retry_attempts=10)

    def after_error(self, e):
        if "cannot pickle" in str(e):
            self.renew()
            return
        try:
            self.rc.nodes_manager.initialize()
        except Exception as e2:
            if "cannot pickle" in str(e2):
                self.renew()


def write_keys(cl, keys, acked, deadline_s=120):
    """Sets each key to itself, retrying refusals until the deadline;
    returns the retries."""
    errs = 0
    deadline = time.monotonic() + deadline_s
    for key in keys:
        while time.monotonic() < deadline:
            try:
                cl.rc.set(key, key)
                acked.append(key)
                break
            except Exception as e:
                errs += 1
                time.sleep(0.2)
                cl.after_error(e)
    return errs


def shard_keys(prefix, n, shard):
    """N keys PREFIX:k whose slots are SHARD's under slots = "auto"."""
    lo, hi = {"p1": (0, 5460), "p2": (5461, 10922), "p3": (10923, 16383)}[shard]
    out = []
    k = 0
    while len(out) < n:
        key = "%s:%d" % (prefix, k)
        if lo <= key_slot(key.encode()) <= hi:
            out.append(key)
        k += 1
    return out


def refused(cl, key):
    """The error a SET of KEY gets ("" when acknowledged); a client that
    had to be made again is not the server's refusal."""
    for _ in range(3):
        try:
            cl.rc.set(key, key)
            return ""
        except Exception as e:
            if "cannot pickle" not in str(e):
                return str(e)
            cl.after_error(e)
    return "no client"


def missing(cl, keys, deadline_s=60):
    lost = []
    deadline = time.monotonic() + deadline_s
    for key in keys:
        while True:
            try:
                if cl.rc.get(key) != key.encode():
                    lost.append(key)
                break
            except Exception as e:
                if time.monotonic() > deadline:
                    lost.append(key)
                    break
                time.sleep(0.2)
                cl.after_error(e)
    return lost


cl = None
try:
    for m in MACHINES:
        start(m)
    ok(all(sups[m].wait_all_up(60) for m in MACHINES), "each machine's supervisor starts its instances")
    led = wait_for(lambda: all(shards("m1").get(p, {}).get("leader") == p for p in ("p1", "p2", "p3")), 60, 0.2)
    ok(led, "the supervisors' etcd members form a cluster; every shard is led by its declared primary")
    if not led:
        diag(sups["m1"].log_text()[-3000:])
    cl = Cluster()
    acked = []
    errs = write_keys(cl, ["a:%d" % k for k in range(300)], acked)
    ok(len(acked) == 300, "300 writes to every shard acknowledged (replica-ack 1; %d retried)" % errs)

    # m1 dies: its supervisor and everything it started, at once
    note([l for l in sups["m2"].ctl("--json", "status")[1].splitlines() if '"r1"' in l])
    victims = [sups["m1"].proc.pid] + children(sups["m1"].proc.pid)
    ok(len(victims) >= 4, "m1 runs its supervisor, zarisd p1 and r3 and an etcd member (%d processes)" % len(victims))
    for pid in victims:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    sups["m1"].proc.wait(10)
    moved = wait_for(lambda: shards("m2").get("p1", {}).get("leader") == "r1", 40, 0.2)
    ok(moved, "m1 killed: r1 (on m2) is elected for p1's slots")
    if not moved:
        diag("\n".join(l for l in sups["m2"].log_text().splitlines() if "r1" in l or "coordination" in l))
        diag(sups["m2"].ctl("--json", "status")[1])
        try:
            diag(redis.Redis(host=addr_of["r1"], port=port_of["r1"], socket_timeout=1).info("replication"))
        except Exception as e:
            diag("r1: %s" % e)
    errs = write_keys(cl, shard_keys("b", 100, "p2"), acked)
    ok(len(acked) == 400, "p2's slots (primary and replica alive) take writes (%d retried)" % errs)
    why = [refused(cl, shard_keys("x", 1, sh)[0]) for sh in ("p1", "p3")]
    ok(all("NOREPLICAS" in w for w in why),
       "p1's slots (r1, its replica gone) and p3's (r3 gone) refuse writes: %r" % why)
    lost = missing(cl, acked)
    ok(not lost, "every acknowledged key is there (%d lost of %d)" % (len(lost), len(acked)))

    # m1 comes back where it was (a reboot): its etcd member rejoins with its data
    sups["m1"].cleanup()
    start("m1")
    back = wait_for(lambda: role("p1") == ("slave", port_of["r1"]) and
                    shards("m1").get("p1", {}).get("leader") == "r1", 60, 0.2)
    ok(back, "m1 back: its member rejoins (m1's status sees the leader) and p1 is a replica of r1")
    ok(wait_for(lambda: role("r3") == ("slave", port_of["p3"]), 60, 0.2), "r3 is p3's replica again")
    errs = write_keys(cl, ["c:%d" % k for k in range(100)], acked)
    lost = missing(cl, acked)
    ok(len(acked) == 500 and not lost,
       "every shard takes writes again: 500 acknowledged, none lost (%d retried)" % errs)
    note("the cluster client was made again %d times (python3-redis 4.3.4's refresh bug)" % cl.renewed)
finally:
    if cl is not None:
        cl.rc.close()
    for s in sups.values():
        s.cleanup()
    shutil.rmtree(tmp, ignore_errors=True)
done()
