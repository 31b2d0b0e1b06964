#!/usr/bin/python3
"""zaris-bench --native --cluster against a three-node zarisd cluster with
native ports (bench/cluster's Cluster, engine zarisd-native: nodes on
127.0.0.11..13, the even split of the slots, each native port its RESP
port + 1, reached with --native-port-offset since the topology document
names none).

Checked from the servers' side, never against time: a prefill through
libzaris's routing answers every operation with no error and no redirect,
the nodes' DBSIZEs add up to the keyspace, every node got keys and holds
the sampled keys of its own slots (CLUSTER KEYSLOT over RESP); a SET:GET
run finds every key (no nil) and reports the three nodes; each node's
frames carried about --batch operations (INFO's native counters).
"""
import argparse
import importlib.machinery
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(REPO_ROOT, "tests", "lib"))
from zaris import build_dir, diag, done_testing, is_, ok, plan, skip_all  # noqa: E402

BUILD = build_dir()
BENCH = os.path.join(BUILD, "zaris-bench")
KEYS = 3000


def load(name):
    loader = importlib.machinery.SourceFileLoader("bench_" + name, os.path.join(REPO_ROOT, "bench", name))
    spec = importlib.util.spec_from_loader("bench_" + name, loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


def bench(K, cl, *args):
    """zaris-bench --native --cluster seeded at CL's first node's native
    port; (RESULT dict, exit, output)."""
    seed = cl.nodes[0]
    argv = [BENCH, "--native", "--cluster", "-H", seed.host,
            "-p", str(seed.port + K.NATIVE_OFFSET), "-q", "--server-pid", ",".join(map(str, cl.pids))]
    p = subprocess.run(argv + [str(a) for a in args], capture_output=True, text=True, timeout=120)
    lines = p.stdout.strip().splitlines()
    r = {}
    if lines and lines[-1].startswith("RESULT "):
        for kv in lines[-1].split()[1:]:
            k, _, v = kv.partition("=")
            r[k] = int(v) if v.isdigit() else v
    return r, p.returncode, p.stdout + p.stderr


def clean_run(r, rc, out, n, what):
    good = rc == 0 and r.get("mode") == "native" and r.get("ops") == n and r.get("sent") == n \
        and r.get("errors") == 0 and r.get("lost") == 0 and r.get("conn_errors") == 0
    ok(good, "%s: %d operations, every one answered, no error" % (what, n)) or diag(out)
    return good


def main():
    for need in ("redis-server", "taskset"):
        if not shutil.which(need):
            skip_all("%s is not installed" % need)
    if not os.access(BENCH, os.X_OK):
        skip_all("zaris-bench is not built")
    probe = subprocess.run([BENCH, "--native", "-q", "-p", "1", "-n", "1", "-c", "1"],
                           capture_output=True, text=True, timeout=30)
    if "unrecognized option" in probe.stderr:
        skip_all("zaris-bench has no --native")
    K = load("cluster")
    tmp = tempfile.mkdtemp(prefix="native-cluster-t-")
    ncpu = os.cpu_count() or 1
    opts = argparse.Namespace(stand_in=False, server_cpu=ncpu - 1, zarisd=os.path.join(BUILD, "zarisd"))
    plan(11)
    cl = K.Cluster(opts, "zarisd-native", 3, tmp)
    try:
        cl.start()
        r, rc, out = bench(K, cl, "--prefill", "-k", KEYS, "-c", 4, "-t", 2, "--batch", 16)
        clean_run(r, rc, out, KEYS, "prefill routed by libzaris")
        is_((r.get("nodes"), r.get("moved"), r.get("asks")), (3, 0, 0),
            "RESULT: three nodes, no redirect (the map was right)")
        is_(r.get("refreshes"), 4, "RESULT: one TOPOLOGY read per connection (its connect), counted")
        ok(str(r.get("server_pid", "")).count(",") == 2, "--server-pid summed three processes")
        sizes = [K.call(nd.host, nd.port, "DBSIZE") for nd in cl.nodes]
        is_(sum(sizes), KEYS, "the nodes' DBSIZEs add up to the keyspace %s" % sizes)
        ok(all(s > 0 for s in sizes), "every node got keys")
        misplaced = []
        for k in range(0, KEYS, 97):
            key = "key:%012d" % k
            slot = K.call(cl.nodes[0].host, cl.nodes[0].port, "CLUSTER", "KEYSLOT", key)
            owner = next(i for i, (a, b) in enumerate(K.even_split(3)) if a <= slot <= b)
            nd = cl.nodes[owner]
            if K.call(nd.host, nd.port, "EXISTS", key) != 1:
                misplaced.append(key)
        ok(not misplaced, "each sampled key is on its slot's owner") or diag(misplaced)
        r, rc, out = bench(K, cl, "-k", KEYS, "-n", 6000, "-c", 3, "-t", 3, "--batch", 10, "--depth", 2)
        clean_run(r, rc, out, 6000, "SET:GET 1:1 over three nodes, batch 10, depth 2")
        is_(r.get("nils"), 0, "every GET found its key")
        is_(sum(K.call(nd.host, nd.port, "DBSIZE") for nd in cl.nodes), KEYS, "still the keyspace, no more")
        # a batch holds --batch operations per node: each node's frames
        # carry about 16 (prefill) and 10 of them, not a third of that
        per_frame = []
        for nd in cl.nodes:
            st = dict(line.split(":", 1) for line in str(K.call(nd.host, nd.port, "INFO", "stats")).splitlines()
                      if ":" in line)
            reqs, ops = int(st.get("total_native_requests", 0)), int(st.get("total_native_ops", 0))
            per_frame.append(round(ops / reqs, 1) if reqs else 0)
        ok(all(x >= 7 for x in per_frame), "each node's REQUEST frames carried about --batch operations "
           "(INFO total_native_ops / total_native_requests: %s)" % per_frame)
    finally:
        cl.stop()
        if not os.environ.get("ZARIS_KEEP_LOGS"):
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            diag("logs in %s" % tmp)
    done_testing()


if __name__ == "__main__":
    main()
