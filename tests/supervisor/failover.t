#!/usr/bin/python3
"""Failover through etcd on one machine: three "machines" (127.0.0.1,
127.0.0.2, 127.0.0.3), a zaris-supervisor per machine (--machine), a
3-member etcd started here, three primaries and a replica of each on
another machine, replica-ack 1. Every shard gets a leader and takes
writes; kill -9 of a primary's zarisd: its replica is elected (epoch
raised), RedisCluster carries on, every acknowledged key is there, and the
old primary comes back as a replica of the new one; kill -9 of a whole
machine's supervisor and instances: the leases lapse, the replicas on the
other machines are elected, nothing acknowledged is lost. Skips without
etcd or while the supervisor has no --machine."""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from svlib import *  # noqa: E402,F401

require_binaries()
ETCD = shutil.which("etcd")
if not ETCD:
    skip_all("etcd not installed")
try:
    from redis.cluster import RedisCluster, ClusterNode
except ImportError:
    skip_all("python3-redis has no RedisCluster")
if "--machine" not in subprocess.run([SUPERVISOR, "--help"], capture_output=True, text=True).stdout + \
        subprocess.run([SUPERVISOR, "--help"], capture_output=True, text=True).stderr:
    skip_all("zaris-supervisor has no --machine yet")

ADDR = ["127.0.0.1", "127.0.0.2", "127.0.0.3"]
etcd_ports = free_ports(6)
etcd_dir = tempfile.mkdtemp(prefix="zfo-etcd-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
etcd_procs = []


def start_etcd():
    cl = ",".join("e%d=http://127.0.0.1:%d" % (k, etcd_ports[3 + k]) for k in range(3))
    for k in range(3):
        log = open(os.path.join(etcd_dir, "e%d.log" % k), "w")
        etcd_procs.append(subprocess.Popen(
            [ETCD, "--name", "e%d" % k, "--data-dir", os.path.join(etcd_dir, "e%d" % k),
             "--listen-client-urls", "http://127.0.0.1:%d" % etcd_ports[k],
             "--advertise-client-urls", "http://127.0.0.1:%d" % etcd_ports[k],
             "--listen-peer-urls", "http://127.0.0.1:%d" % etcd_ports[3 + k],
             "--initial-advertise-peer-urls", "http://127.0.0.1:%d" % etcd_ports[3 + k],
             "--initial-cluster", cl, "--initial-cluster-token", "zfo%d" % os.getpid(),
             "--initial-cluster-state", "new", "--heartbeat-interval", "100", "--election-timeout", "1000"],
            stdout=log, stderr=subprocess.STDOUT))
    eps = ",".join("127.0.0.1:%d" % p for p in etcd_ports[:3])

    def healthy():
        r = subprocess.run(["etcdctl", "--endpoints", eps, "--command-timeout=500ms", "endpoint", "health"],
                           capture_output=True, text=True)
        return r.returncode == 0
    return wait_for(healthy, 30, step=0.2)


ports = free_ports(6)
names = ["p1", "p2", "p3", "r1", "r2", "r3"]
machine_of = {"p1": 0, "p2": 1, "p3": 2, "r1": 1, "r2": 2, "r3": 0}


def conf_text():
    nodes = []
    for k, n in enumerate(names):
        d = {"name": n, "port": ports[k], "address": ADDR[machine_of[n]]}
        if n.startswith("r"):
            d["replica-of"] = '"p%s"' % n[1]
        nodes.append(d)
    coord = ('coordination = { etcd = "%s"; lease-ttl = "3s"; replica-validity = "1s"; machines = ( %s ); };\n' % (
        ",".join("http://127.0.0.1:%d" % p for p in etcd_ports[:3]),
        ", ".join('{ name = "m%d"; address = "%s"; }' % (k + 1, a) for k, a in enumerate(ADDR))))
    return node_conf(nodes, cluster="enabled = true; replica-ack = 1; replica-ack-timeout = 2000;") + coord


addr_of = {n: (ADDR[machine_of[n]], ports[k]) for k, n in enumerate(names)}
sups = [None, None, None]


def start_machine(m):
    sups[m] = Supervisor(conf_text(), extra_args=["--machine", "m%d" % (m + 1)])


def shards(m):
    """{shard: dict} from machine M's zarisctl status --json."""
    rc, out, _ = sups[m].ctl("--json", "status")
    res = {}
    if rc != 0:
        return res
    for line in out.splitlines():
        d = json.loads(line)
        if d.get("type") == "shard":
            res[d["shard"]] = d
    return res


def pid_of(m, name):
    i = sups[m].instance(name)
    return i["pid"] if i else 0


def cluster_client():
    return RedisCluster(startup_nodes=[ClusterNode(a, p) for a, p in addr_of.values()],
                        socket_timeout=3, cluster_error_retry_attempts=10)


def role(name):
    a, p = addr_of[name]
    try:
        r = redis.Redis(host=a, port=p, socket_timeout=1).info("replication")
        return r.get("role"), r.get("master_port")
    except Exception:
        return None, None


def write_keys(rc, prefix, n, acked):
    errs = 0
    for k in range(n):
        key = "%s:%d" % (prefix, k)
        for attempt in range(100):
            try:
                rc.set(key, key)
                acked.append(key)
                break
            except Exception:
                errs += 1
                time.sleep(0.2)
                try:
                    rc.nodes_manager.initialize()
                except Exception:
                    pass
    return errs


def writer(prefix, stop, during, errors):
    """Writes PREFIX:0, PREFIX:1 ... through its own RedisCluster until STOP,
    the acknowledged keys into DURING, the errors its retries met into
    ERRORS."""
    c2 = cluster_client()
    k = 0
    while not stop.is_set() and k < 50000:
        key = "%s:%d" % (prefix, k)
        try:
            c2.set(key, key)
            during.append(key)
            k += 1
        except Exception as e:
            errors.append(str(e)[:80])
            time.sleep(0.05)
    c2.close()


def missing(rc, acked):
    lost = []
    for key in acked:
        for attempt in range(20):
            try:
                if rc.get(key) != key.encode():
                    lost.append(key)
                break
            except Exception:
                time.sleep(0.2)
        else:
            lost.append(key)
    return lost


try:
    ok(start_etcd(), "etcd: 3 members healthy")
    for m in range(3):
        start_machine(m)
    ok(all(s.wait_all_up(30) for s in sups), "every machine's instances are up")
    ok(wait_for(lambda: all(shards(0).get(p, {}).get("leader") == p for p in ("p1", "p2", "p3")), 30, 0.2),
       "each shard is led by its declared primary")
    rc = cluster_client()
    acked = []
    errs = write_keys(rc, "a", 600, acked)
    ok(len(acked) == 600, "600 writes acknowledged with replica-ack 1 (%d retried errors)" % errs)

    # kill -9 of p1's zarisd: r1 (machine 2) must take shard p1
    e0 = shards(1)["p1"]["epoch"]
    p1pid = pid_of(0, "p1")
    os.kill(p1pid, signal.SIGKILL)
    t0 = time.monotonic()
    ok(wait_for(lambda: shards(1).get("p1", {}).get("leader") == "r1", 30, 0.1),
       "kill -9 of p1: r1 is elected leader of shard p1")
    ok(shards(1)["p1"]["epoch"] > e0, "the epoch was raised (%d -> %d)" % (e0, shards(1)["p1"]["epoch"]))
    ok(wait_for(lambda: role("r1")[0] == "master", 20, 0.1), "r1 runs as a primary")
    errs = write_keys(rc, "b", 300, acked)
    dt = time.monotonic() - t0
    note("failover after kill -9 of p1: leader r1 and 300 writes acknowledged %.1f s after the kill" % dt)
    ok(len(acked) == 900, "writes to every shard acknowledged again (%d retried errors)" % errs)
    ok(wait_for(lambda: role("p1") == ("slave", addr_of["r1"][1]), 40, 0.2),
       "the restarted p1 rejoins as a replica of r1")
    lost = missing(rc, acked)
    ok(not lost, "every acknowledged key is there (%d lost)" % len(lost))

    # kill -9 of machine 2 (supervisor, r1 = shard p1's primary, p2)
    victims = [pid_of(1, "r1"), pid_of(1, "p2")]
    sups[1].proc.kill()
    for pid in victims:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    ok(wait_for(lambda: shards(0).get("p1", {}).get("leader") == "p1" and
                shards(0).get("p2", {}).get("leader") == "r2", 40, 0.2),
       "machine 2 killed: p1 leads shard p1 again, r2 leads shard p2")
    # each shard's only replica was on machine 2: replica-ack 1 writes wait
    # for it (NOREPLICAS meanwhile); the acknowledged ones must all be there
    lost = missing(rc, acked)
    ok(not lost, "after the machine loss every acknowledged key is there (%d lost of %d)" % (
        len(lost), len(acked)))
    sups[1].cleanup()
    start_machine(1)
    ok(wait_for(lambda: role("r1") == ("slave", addr_of["p1"][1]) and role("p2") == ("slave", addr_of["r2"][1]),
                60, 0.2),
       "machine 2 back: r1 and p2 rejoin as replicas of the new primaries")
    errs = write_keys(rc, "c", 100, acked)
    lost = missing(rc, acked)
    ok(len(acked) == 1000 and not lost,
       "writes acknowledged again, every acknowledged key there (%d lost of %d; %d retried errors)" % (
           len(lost), len(acked), errs))

    # planned switchover back to p2 under writes: no error but retried
    # MOVED/CLUSTERDOWN, nothing lost, the pause reported
    stop = threading.Event()
    during, errors = [], []
    t = threading.Thread(target=writer, args=("{p2}sw", stop, during, errors))
    t.start()
    time.sleep(0.5)
    rcode, out, err = sups[2].ctl("failover", "p2", "TO", "p2", timeout=90)
    time.sleep(0.5)
    stop.set()
    t.join(60)
    note("zarisctl failover p2 TO p2: " + (out + err).strip())
    ok(rcode == 0 and "writes paused at most" in out, "zarisctl failover p2 TO p2 succeeds and reports the pause")
    ok(wait_for(lambda: role("p2")[0] == "master" and role("r2") == ("slave", addr_of["p2"][1]), 30, 0.2),
       "p2 is the primary again, r2 its replica")
    lost = missing(rc, during + acked)
    ok(len(during) > 0 and not lost, "%d writes during the switchover, none of them or before lost (%d lost)" % (
        len(during), len(lost)))

    # rolling restart of every machine under writes to every shard: each
    # leading primary is switched over first; nothing acknowledged is lost
    stop.clear()
    during, errors = [], []
    t = threading.Thread(target=writer, args=("rr", stop, during, errors))
    t.start()
    results = []
    for m in range(3):
        rcode, out, err = sups[m].ctl("rolling-restart", timeout=240)
        results.append(rcode)
        note("rolling-restart m%d: %s" % (m + 1, " | ".join(l for l in out.splitlines() if "switch" in l or "done" in l)))
    stop.set()
    t.join(60)
    ok(results == [0, 0, 0], "rolling-restart on each machine succeeds (%r)" % results)
    lost = missing(rc, during)
    ok(len(during) > 0 and not lost, "%d writes during the rolling restarts, %d lost; %d client errors retried (%s)" % (
        len(during), len(lost), len(errors), "; ".join(sorted(set(e.split(" ")[0] for e in errors)))))

    # a replica too far behind is not promoted, nor a primary restarted
    # empty; zarisctl failover --force promotes the replica as it is
    p3keys = [k for k in acked if rc.keyslot(k) >= 10923]
    P = shards(0)["p3"]["primary"]
    R = "r3" if P == "p3" else "p3"
    dead = free_ports(1)[0]
    a, p = addr_of[R]
    redis.Redis(host=a, port=p).execute_command("REPLICAOF", "127.0.0.1", str(dead))
    time.sleep(5)   # replica-validity 1s + lease-ttl 3s: R's link is stale
    os.kill(pid_of(machine_of[P], P), signal.SIGKILL)
    gone = wait_for(lambda: not shards(0).get("p3", {}).get("leader"), 15, 0.1)
    nobody = bool(gone)
    for _ in range(60):   # 6 s: more than the lease, the window and a restart
        if shards(0).get("p3", {}).get("leader"):
            nobody = False
            break
        time.sleep(0.1)
    ok(nobody, "%s killed while %s is stale: nobody is elected (%s restarts empty, %s is too far behind)" % (
        P, R, P, R))
    rcode, out, err = sups[0].ctl("failover", "p3", "TO", R, "--force", timeout=60)
    note("zarisctl failover p3 TO %s --force: %s" % (R, (out + err).strip()))
    ok(rcode == 0, "zarisctl failover p3 TO %s --force promotes it" % R)
    lost = missing(rc, p3keys)
    ok(p3keys and not lost, "%s has the %d acknowledged keys of p3's slots (%d lost)" % (R, len(p3keys), len(lost)))
    ok(wait_for(lambda: role(P) == ("slave", addr_of[R][1]), 30, 0.2), "the restarted %s becomes %s's replica" % (P, R))
    rcode, out, err = sups[0].ctl("failover", "nosuch")
    ok(rcode == 1 and "no shard 'nosuch'" in err, "an unknown shard is refused: " + err.strip())
    rc.close()
finally:
    for s in sups:
        if s:
            s.cleanup()
    for p in etcd_procs:
        p.terminate()
    for p in etcd_procs:
        try:
            p.wait(5)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
    shutil.rmtree(etcd_dir, ignore_errors=True)
done()
