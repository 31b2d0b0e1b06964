#!/usr/bin/python3
"""hosts_selftest.t — proves the failover test's infrastructure
(tests/lib/hosts.py, tests/lib/history.py) on what exists today:

  * three network-namespace hosts with an etcd member each: healthy, a put
    through one member is read through another; host k partitioned: its
    member cannot write (etcdctl --command-timeout=500ms fails) while the
    others can; healed: it reads the majority's write; host k killed: the
    other two stay healthy and writable;
  * the checker on synthetic histories: a clean one passes; a lost
    acknowledged SET, a duplicate INCR result, a counter below an acked
    result, a definitely failed SET that is present, and two primaries of
    one shard held at overlapping sampled times are each detected;
  * the workload for a few seconds against three zarisd primaries in the
    hosts (cluster mode, topology pushed by the test over each host's
    loopback, no persistence), no faults: acknowledged writes, 0 lost, 0
    duplicated, 0 split-brain INCRs, 0 overlaps, one sampled primary per
    shard; a primary SIGSTOPped for 1.5 s: indeterminate ops, writes again
    after SIGCONT, 0 lost; a primary killed and replaced by an empty one:
    the checker reports that shard's acknowledged writes lost and its
    counter's repeated INCR results (split brain), no other shard's.

Skips when not root or `ip netns` fails; etcd parts skip without etcd."""
import os
import shutil
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
sys.path.insert(0, HERE)
from svlib import ok, diag, skip, skip_all, done, ZARISD  # noqa: E402
from hosts import Hosts, HostsUnavailable  # noqa: E402
from zaris_sys import inside  # noqa: E402
import history  # noqa: E402
from history import Op, Sample, check  # noqa: E402
import redis  # noqa: E402

try:
    hosts = Hosts(3)
except HostsUnavailable as e:
    skip_all("no network namespaces here (%s)" % e)


def etcd_part():
    if not (shutil.which("etcd") and shutil.which("etcdctl")):
        for _ in range(6):
            skip("etcd is not installed")
        return
    for i in (1, 2, 3):
        hosts.start_etcd(i)
    ok(hosts.wait_etcd_healthy([1, 2, 3], timeout=30), "three etcd members in three hosts: healthy")
    rc1, out1 = hosts.etcdctl(1, "put", "/selftest/a", "from-h1", timeout="3s")
    rc2, out2 = hosts.etcdctl(2, "get", "--print-value-only", "/selftest/a", timeout="3s")
    if not ok(rc1 == 0 and rc2 == 0 and out2.strip() == "from-h1", "a put through h1 is read through h2"):
        diag(out1 + out2)
    k = 2
    hosts.partition(k)
    rc_min, out_min = hosts.etcdctl(k, "put", "/selftest/minority", "x")
    maj = False
    for _ in range(20):   # the majority may need an election first
        rc, out = hosts.etcdctl(1, "put", "/selftest/majority", "y", timeout="1s",
                                endpoints=hosts.etcd_endpoints([1, 3]))
        if rc == 0:
            maj = True
            break
        time.sleep(0.2)
    if not ok(rc_min != 0 and maj, "h%d partitioned: its member cannot write, the others can" % k):
        diag("minority put rc=%d: %s" % (rc_min, out_min))
    hosts.heal(k)
    seen = ""
    for _ in range(50):
        rc, seen = hosts.etcdctl(k, "get", "--print-value-only", "/selftest/majority", timeout="1s")
        if rc == 0 and seen.strip() == "y":
            break
        time.sleep(0.1)
    ok(seen.strip() == "y", "healed: h%d reads the majority's write" % k)
    hosts.kill_host(3)
    ok(not hosts.pids_in(3), "kill_host(3): no process is left in h3")
    ok(hosts.wait_etcd_healthy([1, 2], timeout=15), "the other two members stay healthy")
    wrote = any(hosts.etcdctl(1, "put", "/selftest/after", "z", timeout="1s",
                              endpoints=hosts.etcd_endpoints([1, 2]))[0] == 0 or time.sleep(0.2)
                for _ in range(20))
    ok(wrote, "and writable")
    hosts.kill_host(1)
    hosts.kill_host(2)


class FakeWL:
    """A recorded history without a workload run."""
    def __init__(self, ops, samples=(), faults=()):
        self.ops, self.samples, self.faults = ops, list(samples), [list(f) for f in faults]
        self.shard_slots = [0, 1]

    def counter_key(self, shard):
        return "{c%d}:ctr" % shard


A, B = ("10.0.0.1", 1), ("10.0.0.2", 2)


def op(kind, shard, key, value, t, node, outcome, result=None):
    o = Op(kind, shard, key, value, t, node)
    o.complete, o.outcome, o.result = t + 0.001, outcome, result
    return o


def clean_history():
    ops = [op("set", 0, "{c0}:k1", "w0:1", 1.0, A, "ok", "True"),
           op("incr", 0, "{c0}:ctr", None, 1.1, A, "ok", 1),
           op("set", 0, "{c0}:k3", "w0:3", 1.2, A, "info"),
           op("incr", 0, "{c0}:ctr", None, 1.3, A, "info"),
           op("set", 0, "{c0}:k5", "w0:5", 2.0, B, "fail"),
           op("incr", 0, "{c0}:ctr", None, 2.1, B, "ok", 3),
           op("set", 1, "{c1}:k1", "w1:1", 1.0, B, "ok", "True")]
    final = {"{c0}:k1": "w0:1", "{c0}:k3": None, "{c0}:k5": None, "{c0}:ctr": "3", "{c1}:k1": "w1:1"}
    samples = [Sample(t, t + 0.002, A, "master", 1, "held") for t in (0.9, 1.0, 1.1, 1.2)]
    samples += [Sample(1.35, 1.36, A, "master", 1, "lapsed")]
    samples += [Sample(t, t + 0.002, B, "master", 2, "held") for t in (1.9, 2.0)]
    return ops, final, samples


def totals(res):
    out = {}
    for k in res.kinds.values():
        for f in ("lost", "duplicated", "split_brain", "overlaps"):
            out[f] = out.get(f, 0) + len(k[f])
    return out


def checker_part():
    # outcomes: a fenced refusal did nothing; a dropped held ack may have
    ok(history.classify_error(redis.ResponseError(
        "CLUSTERDOWN write lease lapsed: this node is fenced until its supervisor confirms its "
        "leadership"))[0] == "fail", "classify: a fenced refusal is a definite failure")
    ok(history.classify_error(redis.ResponseError(
        "CLUSTERDOWN write lease lapsed: this node is fenced until its supervisor confirms its "
        "leadership, the write may or may not be applied"))[0] == "info",
       "classify: a dropped held acknowledgement is indeterminate")
    shard_of = {A: 0, B: 0}
    ops, final, samples = clean_history()
    faults = [("kill-primary", 1.5, 2.5, {0: A})]
    res = check(FakeWL(ops, samples, faults), final, shard_of)
    t = totals(res)
    if not ok(t == {"lost": 0, "duplicated": 0, "split_brain": 0, "overlaps": 0},
              "checker: a clean history passes (an info SET absent, a failed SET absent, counter 3 "
              "within 2 acked + 1 indeterminate)"):
        diag(t)
    fo = res.kinds["kill-primary"]["failover"]
    ok(len(fo) == 1 and abs(fo[0] - (2.101 - 1.5)) < 1e-6,
       "checker: failover time from the fault to the first ack on another node")
    for line in history.summary_table(res):
        diag(line)
    # the old primary came back and kept the shard (acks on A only in the
    # cycle): that is no failover, and B's ack in a later cycle is not
    # this cycle's (it was once counted as a 15 s failover); the outage
    # ends with the first ack after the first refusal, not with a write
    # that was in flight at the fault
    kept_ops = ops + [op("set", 0, "{c0}:k9", "w0:9", 1.5, A, "ok", "True"),   # in flight at the fault
                      op("set", 0, "{c0}:k7", "w0:7", 1.55, A, "fail"),
                      op("incr", 0, "{c0}:ctr", None, 1.6, A, "ok", 2)]
    res = check(FakeWL(kept_ops, samples, [("kill-primary", 1.5, 1.7, {0: A})]), final, shard_of)
    k = res.kinds["kill-primary"]
    ok(not k["failover"] and len(k["kept"]) == 1 and abs(k["kept"][0] - (1.601 - 1.5)) < 1e-6,
       "checker: a shard its primary kept is counted as kept, a later cycle's move is not its failover")

    ops, final, samples = clean_history()
    final["{c0}:k1"] = None
    t = totals(check(FakeWL(ops, samples), final, shard_of))
    ok(t["lost"] == 1 and t["duplicated"] == 0, "checker: an acknowledged SET absent is lost")
    final["{c0}:k1"] = "w0:999"
    t = totals(check(FakeWL(ops, samples), final, shard_of))
    ok(t["lost"] == 1 and t["duplicated"] == 1, "checker: an acknowledged SET holding another value: lost, duplicated")

    ops, final, samples = clean_history()
    final["{c0}:k5"] = "w0:5"
    t = totals(check(FakeWL(ops, samples), final, shard_of))
    ok(t["duplicated"] == 1 and t["lost"] == 0, "checker: a definitely failed SET that is present is detected")

    ops, final, samples = clean_history()
    ops[5].result = 1
    t = totals(check(FakeWL(ops, samples), final, shard_of))
    ok(t["split_brain"] == 1, "checker: two acknowledged INCRs returning the same value: split brain")

    ops, final, samples = clean_history()
    final["{c0}:ctr"] = "2"
    t = totals(check(FakeWL(ops, samples), final, shard_of))
    ok(t["lost"] == 1, "checker: a counter below its largest acknowledged INCR is lost")
    final["{c0}:ctr"] = "5"
    t = totals(check(FakeWL(ops, samples), final, shard_of))
    ok(t["duplicated"] == 1, "checker: a counter above acked + indeterminate INCRs is detected")

    ops, final, samples = clean_history()
    samples.append(Sample(1.05, 1.06, B, "master", 2, "held"))
    t = totals(check(FakeWL(ops, samples), final, shard_of))
    ok(t["overlaps"] == 1, "checker: a second held primary of the shard inside the first's sampled span")
    ops, final, samples = clean_history()
    samples.append(Sample(1.05, 1.06, B, "master", 2, "lapsed"))
    samples.append(Sample(1.05, 1.06, ("10.0.0.3", 3), "master", 2, "held"))
    t = totals(check(FakeWL(ops, samples), final, {A: 0, B: 0, ("10.0.0.3", 3): 1}))
    ok(t["overlaps"] == 0, "checker: a lapsed primary, or a primary of another shard, is no overlap")


PORT = 7000
RANGES = ["0-5460", "5461-10922", "10923-16383"]
IDS = {i: "%040x" % (0xabc000 + i) for i in (1, 2, 3)}


def start_zarisd(i, gen):
    d = os.path.join(hosts.dir, "z%d.%d" % (i, gen))
    os.makedirs(d)
    log = open(d + ".log", "w")
    return hosts.run(i, [ZARISD, "--port", str(PORT), "--bind", "127.0.0.1 %s" % hosts.addr(i),
                         "--protected-mode", "no", "--dir", d, "--threads", "1", "--appendonly", "no",
                         "--save", "", "--cluster-enabled", "yes"], stdout=log, stderr=subprocess.STDOUT)


def wait_port_free(i, timeout=30):
    """Waits (bounded) until nothing listens on host i's PORT: a killed
    zarisd's io_uring is torn down after the process is gone, and its
    listener with it, so a new zarisd started at once can find the port
    taken ("Address already in use")."""
    end = time.monotonic() + timeout
    with inside(hosts.names[i]):
        while time.monotonic() < end:
            s = socket.socket()
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind(("127.0.0.1", PORT))
                return True
            except OSError:
                time.sleep(0.05)
            finally:
                s.close()
    return False


def push(i):
    """The topology to host i's zarisd over its loopback (SETTOPOLOGY is
    local only); redis-py connects lazily, so all of it runs inside."""
    doc = "epoch 1\ncluster selftest\nmyself %s\n" % IDS[i] + "".join(
        "node %s p%d %s %d primary %s\n" % (IDS[j], j, hosts.addr(j), PORT, RANGES[j - 1]) for j in (1, 2, 3))
    with inside(hosts.names[i]):
        c = redis.Redis(host="127.0.0.1", port=PORT, socket_timeout=2, socket_connect_timeout=1)
        try:
            # the zarisd just started answers once it listens: up to 30 s
            # (100 tries of 0.05 s ran out beside CPU hogs)
            end = time.monotonic() + 30
            while time.monotonic() < end:
                try:
                    c.ping()
                    break
                except redis.ConnectionError:
                    time.sleep(0.05)
            return c.execute_command("CLUSTER", "SETTOPOLOGY", doc) in (b"OK", True)
        except redis.RedisError as e:
            diag("push to h%d: %s" % (i, e))
            for name in sorted(os.listdir(hosts.dir)):
                if name.startswith("z%d." % i) and name.endswith(".log"):
                    with open(os.path.join(hosts.dir, name), errors="replace") as f:
                        diag("%s: %s" % (name, f.read()[-1500:]))
            return False
        finally:
            c.close()


def wait_acked(wl, n, shard=None, after=None, timeout=60):
    """Waits (bounded) until WL holds N acknowledged ops (of SHARD, invoked
    after AFTER): a workload runs until it did what a check needs, not for
    a fixed time in which a loaded machine may do little."""
    def count():
        with wl.lock:
            ops = list(wl.ops)
        return sum(1 for o in ops if o.outcome == "ok" and (shard is None or o.shard == shard)
                   and (after is None or o.invoke > after))
    end = time.monotonic() + timeout
    while count() < n and time.monotonic() < end:
        time.sleep(0.05)
    return count() >= n


def report(res):
    for line in history.summary_table(res):
        diag(line)


def cluster_part():
    if not os.access(ZARISD, os.X_OK):
        for _ in range(5):
            skip("zarisd is not built")
        return
    procs = {i: start_zarisd(i, 1) for i in (1, 2, 3)}
    ok(all(push(i) for i in (1, 2, 3)), "three zarisd primaries in three hosts took the topology")
    nodes = [(hosts.addr(i), PORT) for i in (1, 2, 3)]
    shard_of = {n: k for k, n in enumerate(nodes)}
    wl = history.Workload(nodes, [0, 5461, 10923], enter=hosts.enter_client)
    wl.start()
    wait_acked(wl, 400)
    stopped = wl.stop()
    with hosts.client():
        final = history.read_back(wl)
    res = check(wl, final, shard_of)
    t = totals(res)
    acked = res.kinds["none"]["acked"]
    report(res)
    if not ok(stopped and acked > 300 and t == {"lost": 0, "duplicated": 0, "split_brain": 0, "overlaps": 0},
              "a workload without faults: %d acknowledged, 0 lost, 0 duplicated, 0 split brain, 0 overlaps"
              % acked):
        diag(t)
        for k in res.kinds.values():
            for f in ("lost", "duplicated", "split_brain", "overlaps"):
                for e in k[f][:5]:
                    diag(e)
    roles = {}
    for s in wl.samples:
        roles.setdefault(s.node, set()).add(s.role)
    ok(all(roles.get(n) == {"master"} for n in nodes), "the sampler saw each node as master: %s"
       % sorted((n[0], sorted(map(str, r))) for n, r in roles.items()))

    # SIGSTOP of h2's zarisd for 1.5 s: its shard's writes time out (info),
    # nothing acknowledged is lost
    wl = history.Workload(nodes, [0, 5461, 10923], enter=hosts.enter_client, timeout=0.5)
    wl.start()
    wait_acked(wl, 20, shard=1)
    wl.mark_fault("sigstop", {1: nodes[1]})
    hosts.stop(procs[2].pid)
    time.sleep(1.5)  # the fault: longer than the ops' 0.5 s timeout
    hosts.cont(procs[2].pid)
    wl.end_fault()
    wait_acked(wl, 1, shard=1, after=wl.faults[0][2])
    wl.stop()
    with hosts.client():
        final = history.read_back(wl)
    res = check(wl, final, shard_of)
    t = totals(res)
    report(res)
    infos = sum(1 for o in wl.ops if o.shard == 1 and o.outcome == "info")
    after = sum(1 for o in wl.ops if o.shard == 1 and o.outcome == "ok" and o.invoke > wl.faults[0][2])
    for kk in res.kinds.values():
        for e in kk["duplicated"][:5] + kk["lost"][:5]:
            diag(e)
    ok(t == {"lost": 0, "duplicated": 0, "split_brain": 0, "overlaps": 0} and infos >= 1 and after > 0,
       "SIGSTOP 1.5 s of a primary: %d indeterminate ops, %d acknowledged after SIGCONT, 0 lost" % (infos, after))

    # kill -9 of h2's zarisd (no persistence) and a fresh one in its place:
    # its shard's acknowledged writes are gone and its counter starts over
    # -- a real loss the checker must report
    wl = history.Workload(nodes, [0, 5461, 10923], enter=hosts.enter_client, timeout=0.5)
    wl.start()
    wait_acked(wl, 20, shard=1)
    wl.mark_fault("restart-empty", {1: nodes[1]})
    hosts.kill_host(2)
    wait_port_free(2)
    start_zarisd(2, 2)
    pushed = push(2)
    wl.end_fault()
    wait_acked(wl, 10, shard=1, after=wl.faults[0][2])
    wl.stop()
    with hosts.client():
        final = history.read_back(wl)
    res = check(wl, final, shard_of)
    report(res)
    k = res.kinds["restart-empty"]
    none = res.kinds["none"]
    gone = [o for o in wl.ops if o.kind == "set" and o.outcome == "ok" and final.get(o.key) != o.value]
    lost_shards = set(o.shard for o in gone)
    ok(pushed and len(none["lost"]) > 0 and lost_shards == {1} and len(k["split_brain"]) > 0,
       "a primary restarted empty: the checker reports %d lost writes (shard %s only) and %d split-brain INCRs"
       % (len(none["lost"]) + len(k["lost"]), sorted(lost_shards), len(k["split_brain"])))


try:
    etcd_part()
    checker_part()
    cluster_part()
finally:
    hosts.close()
done()
