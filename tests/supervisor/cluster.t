#!/usr/bin/python3
"""A 3+3 cluster through the supervisor on loopback with free ports, real
zarisd in cluster mode: every slot served (CLUSTER SLOTS), redis-py's
RedisCluster and redis-cli -c write and read 10,000 keys, redis-cli
--cluster check is healthy, kill -9 of an instance: restarted and pushed
again, a reload moving a node to a new port moves clients (MOVED to the
new address), a reload moving slots is refused and the cluster is as it
was. Skips while zarisd has no cluster mode (CLUSTER TOPOLOGY). The
supervisor's side alone: cluster_push.t."""
import os
import shutil
import signal
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from svlib import *  # noqa: E402,F401

require_binaries()
if not shutil.which("redis-cli"):
    skip_all("redis-cli not installed")
try:
    from redis.cluster import RedisCluster, ClusterNode
except ImportError:
    skip_all("python3-redis has no RedisCluster")


def zarisd_has_cluster_mode():
    port = free_ports(1)[0]
    tmp = tempfile.mkdtemp(prefix="zcl-probe-")
    p = subprocess.Popen([ZARISD, "--port", str(port), "--bind", "127.0.0.1", "--dir", tmp,
                          "--cluster-enabled", "yes"], stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    try:
        if not wait_for(lambda: p.poll() is not None or ping(port), 5):
            return False
        if p.poll() is not None:
            return False
        try:
            client(port).execute_command("CLUSTER", "TOPOLOGY")
            return True
        except redis.ResponseError:
            return False
    finally:
        if p.poll() is None:
            p.kill()
        p.wait()
        shutil.rmtree(tmp, ignore_errors=True)


if not zarisd_has_cluster_mode():
    skip_all("zarisd has no cluster mode yet (--cluster-enabled yes, CLUSTER TOPOLOGY)")

ports = free_ports(7)
names = ["p1", "p2", "p3", "r1", "r2", "r3"]


def conf(p3_port=ports[2], slots=None):
    nodes = []
    for k, n in enumerate(names):
        d = {"name": n, "port": p3_port if n == "p3" else ports[k]}
        if n.startswith("r"):
            d["replica-of"] = '"p%s"' % n[1]
        elif slots:
            d["slots"] = '"%s"' % slots[n]
        nodes.append(d)
    return node_conf(nodes, cluster="enabled = true;")


def cli(port, *args):
    r = subprocess.run(["redis-cli", "-p", str(port)] + list(args), capture_output=True, text=True,
                       timeout=60)
    return r.returncode, r.stdout + r.stderr


def served_slots(port):
    total = 0
    for rng in client(port).execute_command("CLUSTER", "SLOTS"):
        total += rng[1] - rng[0] + 1
    return total


def synced(sv, epoch):
    sup, inst = sv.status()
    return sup and sup["cluster_epoch"] == epoch and all(i["topology_synced"] for i in inst.values())


sv = Supervisor(conf())
try:
    ok(sv.wait_all_up(20), "six instances up in cluster mode")
    ok(wait_for(lambda: synced(sv, 1), 15), "all have the topology at epoch 1")
    ok(served_slots(ports[0]) == 16384, "CLUSTER SLOTS: every slot served")

    rc_ = RedisCluster(startup_nodes=[ClusterNode("127.0.0.1", ports[0])], decode_responses=True)
    for k in range(10000):
        rc_.set("key:%d" % k, "v%d" % k)
    ok(all(rc_.get("key:%d" % k) == "v%d" % k for k in range(10000)),
       "RedisCluster wrote and read 10,000 keys")
    bad = 0
    for k in range(0, 10000, 7):
        rc, out = cli(ports[1], "-c", "get", "key:%d" % k)
        bad += out.strip() != "v%d" % k
        if k > 700:
            break
    ok(bad == 0, "redis-cli -c reads them through any node")
    script = "".join("SET cli:%d %d\n" % (k, k) for k in range(10000))
    r = subprocess.run(["redis-cli", "-c", "-p", str(ports[0])], input=script, capture_output=True,
                       text=True, timeout=120)
    ok(r.returncode == 0 and all(rc_.get("cli:%d" % k) == str(k) for k in range(0, 10000, 97)),
       "redis-cli -c wrote 10,000 keys")
    rc, out = cli(ports[0], "--cluster", "check", "127.0.0.1:%d" % ports[0])
    if not ok(rc == 0 and "[OK] All 16384 slots covered." in out, "redis-cli --cluster check healthy"):
        diag(out)

    old = sv.instance("p2")["pid"]
    os.kill(old, signal.SIGKILL)
    ok(sv.wait_state("p2", "up", pred=lambda i: i["pid"] != old, timeout=20), "p2 restarted after kill -9")
    ok(wait_for(lambda: synced(sv, 1), 15), "and pushed the topology again")
    ok(served_slots(ports[1]) == 16384, "p2 serves the map again")

    sv.write_conf(conf(p3_port=ports[6]))
    rc, out, err = sv.ctl("reload")
    ok(rc == 0 and wait_for(lambda: synced(sv, 2), 20), "reload moving p3 to a new port: epoch 2 everywhere")
    key = next("key:%d" % k for k in range(10000)
               if client(ports[0]).execute_command("CLUSTER", "KEYSLOT", "key:%d" % k) >= 10923)
    try:
        client(ports[0]).get(key)
        moved = ""
    except redis.ResponseError as e:
        moved = str(e)
    ok(moved.startswith("MOVED") and moved.endswith("127.0.0.1:%d" % ports[6]),
       "MOVED points at p3's new address: %s" % moved)

    slots = {"p1": "0-5000", "p2": "5001-10922", "p3": "10923-16383"}
    sv.write_conf(conf(p3_port=ports[6], slots=slots))
    rc, out, err = sv.ctl("reload")
    ok(rc == 1 and "slot moves come later" in err, "a reload moving slots is refused")
    ok(synced(sv, 2) and served_slots(ports[0]) == 16384, "the running cluster is as it was")
finally:
    sv.cleanup()
done()
