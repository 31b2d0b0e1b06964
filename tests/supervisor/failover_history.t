#!/usr/bin/python3
"""failover_history.t — Jepsen-style: failover through etcd under faults,
with a recorded history and a checker (issue 17).

Three network-namespace hosts h1..h3 (tests/lib/hosts.py), each with an etcd
member, and a zaris-supervisor (--machine hN) running its nodes of one
cluster file: primaries p1..p3 on h1..h3 and two replicas of each on the
other two hosts (r1, s1 of p1 on h2, h3; r2, s2 of p2 on h3, h1; r3, s3 of
p3 on h1, h2), so a host lost leaves every shard a primary and a replica
that acknowledges its writes with replica-ack 1, and a failover time is the
election's, not a wait for a replica to come back; cluster
mode, slots auto, coordination through the three members (lease-ttl 3s),
zarisd with write-lease, replica-ack 1, appendonly with appendfsync always.

While tests/lib/history.py's workload writes (per shard: unique SETs and
INCRs of a counter, every outcome recorded) and samples INFO of every node,
faults in a seeded random order (every kind once per round of six):
  kill-primary   kill -9 of a shard's current primary zarisd
  kill-host      kill -9 of everything on a primary's host (supervisor,
                 zarisd, etcd member), restarted after the shard moved
  kill-supervisor
                 kill -9 of the supervisor of a primary's host alone: its
                 instances get SIGTERM (PR_SET_PDEATHSIG) and shut down;
                 one still finishing its shutdown is fenced when its lease
                 ends; restarted after the shard moved
  partition      the primary's host loses the other hosts (clients still
                 reach it: fencing must refuse its writes), healed after
  sigstop        SIGSTOP of a primary for lease-ttl + 2 s, then SIGCONT
  kill-etcd      kill -9 of one etcd member, restarted after 2 s
After each: heal, and wait (bounded) until every shard has a primary that
acknowledges a write. Then every key is read back from the final primaries
and checked: TAP per fault kind for 0 lost, 0 duplicated, 0 split-brain
INCRs, 0 overlapping primaries (sampled: see history.py); the summary table
(cycles, acknowledged, lost, ..., failover time p50/max) and the seed as
diagnostics.

Cycles: $ZARIS_FAILOVER_CYCLES (20 by default, 5 under a sanitizer), within
a budget of $ZARIS_FAILOVER_BUDGET seconds (default 170: CI's limit; 0 = no
budget, for long runs) after which no new cycle starts. ZARIS_SEED repeats an
order; $ZARIS_FAILOVER_KINDS (comma-separated, default all six) limits the
faults to those kinds. Skips until zaris-supervisor has --machine and zarisd --write-lease,
and when not root."""
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
sys.path.insert(0, HERE)
from svlib import ok, diag, note as tap_note, failed, skip_all, done, ZARISD, SUPERVISOR, ZARISCTL, free_ports, wait_for  # noqa: E402
import zaris  # noqa: E402
import history  # noqa: E402
import redis  # noqa: E402

LEASE_TTL = 3.0
W = zaris.SLOW
KINDS = ["kill-primary", "kill-host", "kill-supervisor", "partition", "sigstop", "kill-etcd"]


def probe():
    """None when the failover exists, else why the test skips."""
    for b in (ZARISD, SUPERVISOR, ZARISCTL):
        if not os.access(b, os.X_OK):
            return "%s is not built" % b
    if not (shutil.which("etcd") and shutil.which("etcdctl") and shutil.which("nft")):
        return "etcd, etcdctl or nft is not installed"
    r = subprocess.run([SUPERVISOR, "--help"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=10)
    if b"--machine" not in r.stdout:
        return "zaris-supervisor has no --machine yet (etcd coordination)"
    port = free_ports(1)[0]
    tmp = tempfile.mkdtemp(prefix="zfo-probe-")
    p = subprocess.Popen([ZARISD, "--port", str(port), "--bind", "127.0.0.1", "--dir", tmp,
                          "--cluster-enabled", "yes", "--write-lease", "yes"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        up = wait_for(lambda: p.poll() is not None or zaris_ping(port), 5 * W)
        if p.poll() is not None or not up:
            return "zarisd does not take --write-lease yes yet"
    finally:
        if p.poll() is None:
            p.kill()
        p.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    return None


def zaris_ping(port):
    try:
        return redis.Redis(port=port, socket_timeout=1, socket_connect_timeout=1).ping()
    except redis.RedisError:
        return False


why = probe()
if why:
    skip_all(why)

from hosts import Hosts, HostsUnavailable  # noqa: E402

try:
    hosts = Hosts(3)
except HostsUnavailable as e:
    skip_all("no network namespaces here (%s)" % e)

rng = zaris.seeded_rng()
seed = zaris._tap.get("seed")
cycles = zaris.sweep_size("ZARIS_FAILOVER_CYCLES", 20, 5)
budget = float(os.environ.get("ZARIS_FAILOVER_BUDGET", "170"))
KINDS_RUN = [k for k in os.environ.get("ZARIS_FAILOVER_KINDS", ",".join(KINDS)).split(",") if k]
if not KINDS_RUN or set(KINDS_RUN) - set(KINDS):
    print("Bail out! ZARIS_FAILOVER_KINDS=%s: kinds are %s" % (",".join(KINDS_RUN), ",".join(KINDS)))
    sys.exit(255)

# nodes: name -> (host, port, primary it replicates or None)
LAYOUT = {"p1": (1, 7001, None), "p2": (2, 7002, None), "p3": (3, 7003, None),
          "r1": (2, 7101, "p1"), "r2": (3, 7102, "p2"), "r3": (1, 7103, "p3"),
          "s1": (3, 7201, "p1"), "s2": (1, 7202, "p2"), "s3": (2, 7203, "p3")}
SHARD_OF_NAME = {"p1": 0, "r1": 0, "s1": 0, "p2": 1, "r2": 1, "s2": 1, "p3": 2, "r3": 2, "s3": 2}
SHARD_SLOTS = [0, 5461, 10923]   # slots auto over p1..p3: 0-5460, 5461-10922, 10923-16383
NODES = {n: (hosts.addr(h), port) for n, (h, port, _) in LAYOUT.items()}
SHARD_OF = {NODES[n]: s for n, s in SHARD_OF_NAME.items()}
HOST_OF = {NODES[n]: h for n, (h, _, _) in LAYOUT.items()}


def cluster_file():
    ep = hosts.etcd_endpoints()
    machines = ", ".join('{ name = "h%d"; address = "%s"; }' % (i, hosts.addr(i)) for i in (1, 2, 3))
    extra = "replica-ack = 1; "
    nodes = []
    for n, (h, port, of) in LAYOUT.items():
        kv = 'name = "%s"; address = "%s"; port = %d;' % (n, hosts.addr(h), port)
        if of:
            kv += ' replica-of = "%s";' % of
        nodes.append("  { %s }" % kv)
    return ('cluster = { name = "fo"; threads = 1; enabled = true; slots = "auto"; '
            'protected-mode = false; appendonly = true; appendfsync = "always"; %s};\n'
            'coordination = { etcd = "%s"; lease-ttl = "3s"; machines = ( %s ); };\n'
            'supervisor = { health-interval = "100ms"; health-timeout = "1s"; health-failures = 3; '
            'start-timeout = "10s"; stop-timeout = "1s"; backoff-min = "100ms"; backoff-max = "800ms"; '
            'crash-loop-restarts = 100; stable-after = "60s"; };\n'
            'nodes = (\n%s\n);\n') % (extra, ep, machines, ",\n".join(nodes))


def check_config(text):
    path = os.path.join(hosts.dir, "probe.conf")
    with open(path, "w") as f:
        f.write(text)
    r = subprocess.run([ZARISCTL, "check-config", path], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       timeout=20)
    return r.returncode, r.stdout.decode(errors="replace")


def start_supervisor(i):
    d = os.path.join(hosts.dir, "h%d" % i)
    os.makedirs(d, exist_ok=True)
    log = open(os.path.join(d, "supervisor.log"), "a")
    return hosts.run(i, [SUPERVISOR, "--config", CONF, "--machine", "h%d" % i,
                         "--control-socket", os.path.join(d, "ctl.sock"), "--zarisd", ZARISD],
                     cwd=d, stdout=log, stderr=subprocess.STDOUT)


def node_info(cache, node):
    try:
        c = cache.get(node) or redis.Redis(host=node[0], port=node[1], socket_timeout=1,
                                           socket_connect_timeout=0.5, decode_responses=True)
        cache[node] = c
        return c.info()
    except redis.RedisError:
        cache.pop(node, None)
        return None


def primary_of(wl, cache, shard):
    return wl.refresh(cache, shard)


def writable(wl, cache, shard):
    """The node acknowledging a probe write of SHARD now, or None."""
    node = wl.refresh(cache, shard)
    if node is None:
        return None
    try:
        c = wl._conn(cache, node)
        c.set("{%s}:probe" % wl.tags[shard], "x")
        return node
    except redis.RedisError:
        wl._drop(cache, node)
        return None


def wait_all_writable(wl, cache, timeout):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if all(writable(wl, cache, s) for s in range(3)):
            return True
        time.sleep(0.1)
    return False


def wait_moved(wl, cache, shard, old, timeout):
    """Until SHARD acknowledges a probe write on a node other than OLD."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        n = writable(wl, cache, shard)
        if n is not None and n != old:
            return n
        time.sleep(0.1)
    return None


sups = {}
try:
    for i in (1, 2, 3):
        hosts.start_etcd(i)
    ok(hosts.wait_etcd_healthy([1, 2, 3], timeout=30 * W), "an etcd member in each of three hosts, healthy")
    text = cluster_file()
    rc, out = check_config(text)
    if not ok(rc == 0, "zarisctl check-config takes the cluster file"):
        diag(out)
        diag(text)
        raise SystemExit
    CONF = os.path.join(hosts.dir, "zaris.conf")
    with open(CONF, "w") as f:
        f.write(text)
    for i in (1, 2, 3):
        sups[i] = start_supervisor(i)

    wl = history.Workload(list(NODES.values()), SHARD_SLOTS, enter=hosts.enter_client, seed=seed)
    with hosts.client():
        cache, info_cache = {}, {}   # connections of the main thread
        up = wait_all_writable(wl, cache, 40 * W)
        ok(up, "three supervisors: every shard has a primary acknowledging writes")
        if not up:
            raise SystemExit

        wl.start()
        time.sleep(1)
        started = time.monotonic()
        order = []
        while len(order) < cycles:
            block = list(KINDS_RUN)
            rng.shuffle(block)
            order += block
        order = order[:cycles]
        ran = 0
        recovered_all = True
        for n, kind in enumerate(order):
            if budget and time.monotonic() - started > budget:
                diag("time budget of %ds used: %d of %d cycles ran" % (budget, ran, cycles))
                break
            shard = rng.randrange(3)
            prim = primary_of(wl, cache, shard)
            if prim is None:
                recovered_all = False
                diag("cycle %d: shard %d has no primary" % (n, shard))
                break
            info = node_info(info_cache, prim) or {}
            pid = info.get("process_id")
            host = HOST_OF[prim]
            note = "%s shard %d primary %s:%d (h%d, pid %s)" % (kind, shard, prim[0], prim[1], host, pid)
            if kind == "kill-primary":
                wl.mark_fault(kind, {shard: prim})
                os.kill(int(pid), 9)
                time.sleep(0.5)
            elif kind == "kill-host":
                affected = {s: p for s in range(3) for p in [primary_of(wl, cache, s)]
                            if p is not None and HOST_OF[p] == host}
                wl.mark_fault(kind, affected)
                hosts.kill_host(host)
                until = time.monotonic() + 15 * W   # one bound for all its shards
                for s, p in affected.items():
                    wait_moved(wl, cache, s, p, max(0.0, until - time.monotonic()))
                hosts.start_etcd(host)
                sups[host] = start_supervisor(host)
            elif kind == "kill-supervisor":
                affected = {s: p for s in range(3) for p in [primary_of(wl, cache, s)]
                            if p is not None and HOST_OF[p] == host}
                wl.mark_fault(kind, affected)
                sups[host].kill()
                sups[host].wait(10)
                until = time.monotonic() + 15 * W
                for s, p in affected.items():
                    wait_moved(wl, cache, s, p, max(0.0, until - time.monotonic()))
                sups[host] = start_supervisor(host)
            elif kind == "partition":
                wl.mark_fault(kind, {shard: prim})
                hosts.partition(host)
                wait_moved(wl, cache, shard, prim, 15 * W)
                hosts.heal(host)
            elif kind == "sigstop":
                wl.mark_fault(kind, {shard: prim})
                hosts.stop(int(pid))
                time.sleep(LEASE_TTL + 2)
                hosts.cont(int(pid))
            elif kind == "kill-etcd":
                member = rng.randrange(1, 4)
                note = "kill-etcd member h%d" % member
                wl.mark_fault(kind, {})
                hosts.kill_etcd(member)
                time.sleep(2)
                hosts.start_etcd(member)
            hosts.heal_all()
            back = wait_all_writable(wl, cache, 30 * W) and hosts.wait_etcd_healthy([1, 2, 3], timeout=15 * W)
            wl.end_fault()
            zaris.note("cycle %d: %s -> %s" % (n + 1, note, "recovered" if back else "NOT recovered"))
            ran += 1
            if not back:
                recovered_all = False
                break
        stopped = wl.stop()
        ok(recovered_all and ran > 0, "%d fault cycles, every one recovered (every shard writable again)" % ran)
        ok(stopped, "the workload's threads ended")
        try:
            final = history.read_back(wl)
            read_ok = True
        except RuntimeError as e:
            final, read_ok = {}, False
            diag(str(e))
        ok(read_ok, "every key read back from the final primaries")
    res = history.check(wl, final, SHARD_OF)
    for kind in ["none"] + KINDS:
        k = res.kinds.get(kind)
        if k is None:
            continue
        for field, label in (("lost", "lost"), ("duplicated", "duplicated"),
                             ("split_brain", "split-brain INCRs"), ("overlaps", "overlapping primaries (sampled)")):
            if not ok(not k[field], "%s: %d cycles, %d acknowledged, 0 %s" % (kind, k["cycles"], k["acked"], label)):
                for e in k[field][:10]:
                    diag(e)
    # the table and the seed are in CI's log when a check failed
    tell = diag if failed() else tap_note
    for line in history.summary_table(res):
        tell(line)
    tell("seed %s (ZARIS_SEED=%s repeats the order)" % (seed, seed))
except SystemExit:
    pass
finally:
    hosts.close()
done()
