#!/usr/bin/python3
"""zaris-bench --cluster against a three-node Redis Cluster and a three-node
zarisd cluster this test starts (bench/cluster's Cluster: nodes on
127.0.0.11..13, the even split of the slots), and a tiny
`bench/compare --cluster 1` run.

What is checked, from the servers' side, never against time: every request
answered and no error; after a prefill the nodes' DBSIZEs add up to the
keyspace and every key a node holds hashes to one of its own slots; a run
started from a wrong map (--cluster-stale-map) follows MOVED, re-reads
the map and still answers every request; on Redis, a slot being migrated (MIGRATING on its
owner, IMPORTING on another node) makes each new key of the slot an -ASK
that is followed with ASKING to the importing node, which then holds them;
when a node dies mid-run the others go on being served.
"""
import argparse
import importlib.machinery
import importlib.util
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(REPO_ROOT, "tests", "lib"))
from zaris import build_dir, diag, done_testing, is_, ok, skip_all  # noqa: E402

BUILD = build_dir()
BENCH = os.path.join(BUILD, "zaris-bench")
KEYS = 3000


def load(name):
    loader = importlib.machinery.SourceFileLoader("bench_" + name, os.path.join(REPO_ROOT, "bench", name))
    spec = importlib.util.spec_from_loader("bench_" + name, loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


def crc16(data):
    """CRC16-XMODEM, Redis Cluster's key hash (written here from its
    definition, independent of the C code under test)."""
    crc = 0
    for b in data:
        crc ^= b << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) & 0xFFFF if crc & 0x8000 else (crc << 1) & 0xFFFF
    return crc


def key_slot(key):
    s = key.find("{")
    if s >= 0:
        e = key.find("}", s + 1)
        if e > s + 1:
            key = key[s + 1:e]
    return crc16(key.encode()) % 16384


def bench(cl, *args):
    """zaris-bench --cluster seeded at CL's first node; (RESULT dict, exit, output)."""
    seed = cl.nodes[0]
    argv = [BENCH, "--cluster", "-H", seed.host, "-p", str(seed.port), "-q"] + [str(a) for a in args]
    p = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    lines = p.stdout.strip().splitlines()
    r = {}
    if lines and lines[-1].startswith("RESULT "):
        for kv in lines[-1].split()[1:]:
            k, _, v = kv.partition("=")
            r[k] = int(v) if v.isdigit() else v
    return r, p.returncode, p.stdout + p.stderr


def all_keys(K, nd):
    keys, cursor = [], "0"
    for _ in range(10000):
        cursor, batch = K.call(nd.host, nd.port, "SCAN", cursor, "COUNT", 1000)
        keys += batch
        if cursor == "0":
            return keys
    raise RuntimeError("SCAN did not end")


def clean_run(r, rc, n, what):
    good = rc == 0 and r.get("ops") == n and r.get("sent") == n and r.get("errors") == 0 and \
        r.get("lost") == 0 and r.get("conn_errors") == 0
    ok(good, "%s: %d requests, every one answered, no error" % (what, n)) or diag(r)
    return good


def check_placement(K, cl, label):
    """DBSIZEs add up to KEYS and every node holds only keys of its slots."""
    sizes = [K.call(nd.host, nd.port, "DBSIZE") for nd in cl.nodes]
    is_(sum(sizes), KEYS, "%s: the nodes' DBSIZEs add up to the keyspace %s" % (label, sizes))
    ok(all(s > 0 for s in sizes), "%s: every node got keys" % label)
    wrong = []
    for nd, (a, b) in zip(cl.nodes, K.even_split(len(cl.nodes))):
        wrong += ["%s on %s" % (k, nd.name) for k in all_keys(K, nd) if not a <= key_slot(k) <= b]
    ok(not wrong, "%s: every key is on the owner of its slot" % label) or diag(wrong[:5])


def common_checks(K, cl, label):
    r, rc, out = bench(cl, "--prefill", "-k", KEYS, "-c", 4, "-P", 16)
    clean_run(r, rc, KEYS, "%s prefill" % label) or diag(out[-1500:])
    is_(r.get("nodes"), 3, "%s: the map names three primaries" % label)
    check_placement(K, cl, label)

    r, rc, out = bench(cl, "-k", KEYS, "-c", 4, "-P", 8, "-n", 6000, "--ratio", "1:1")
    clean_run(r, rc, 6000, "%s SET:GET 1:1" % label) or diag(out[-1500:])
    is_(r.get("nils"), 0, "%s: every GET found its key (it went to the key's owner)" % label)
    is_(r.get("moved"), 0, "%s: no MOVED with the map from CLUSTER SLOTS" % label)
    is_(sum(K.call(nd.host, nd.port, "DBSIZE") for nd in cl.nodes), KEYS, "%s: still %d keys" % (label, KEYS))

    r, rc, out = bench(cl, "--cluster-stale-map", "-k", KEYS, "-c", 4, "-P", 8, "-n", 4000, "--ratio", "0:1")
    clean_run(r, rc, 4000, "%s from a stale map" % label) or diag(out[-1500:])
    ok(r.get("moved", 0) > 0, "%s: MOVED followed from a stale map (%s)" % (label, r.get("moved")))
    is_(r.get("nils"), 0, "%s: after MOVED every GET found its key" % label)
    ok(r.get("refreshes", 0) >= 1, "%s: a MOVED made it re-read CLUSTER SLOTS" % label)


def ask_checks(K, cl):
    """A slot in migration on Redis: new keys of it answer -ASK. Half of the
    SETs carry a hash tag of that slot (routed by the tag), half are spread
    over all slots; the key stream is sequential and the two templates
    alternate, so which key goes where is known exactly."""
    src, dst = cl.nodes[0], cl.nodes[1]
    n = 2000
    a, b = K.even_split(3)[0]
    tag = next("m%d" % i for i in range(1000) if a <= key_slot("m%d" % i) <= b)
    slot = key_slot(tag)
    keys = ["ask:%012d" % i if i % 2 == 0 else "{%s}ask:%012d" % (tag, i) for i in range(n)]
    in_slot = sum(1 for k in keys if key_slot(k) == slot)
    src_id = K.call(src.host, src.port, "CLUSTER", "MYID")
    dst_id = K.call(dst.host, dst.port, "CLUSTER", "MYID")
    K.call(dst.host, dst.port, "CLUSTER", "SETSLOT", slot, "IMPORTING", src_id)
    K.call(src.host, src.port, "CLUSTER", "SETSLOT", slot, "MIGRATING", dst_id)
    r, rc, out = bench(cl, "--command", "SET __key__ __data__", "--command", "SET {%s}__key__ __data__" % tag,
                       "--key-prefix", "ask:", "--dist", "seq", "-k", n, "-n", n, "-c", 2, "-P", 4)
    clean_run(r, rc, n, "redis: SETs while slot %d migrates" % slot) or diag(out[-1500:])
    is_(r.get("asks"), in_slot, "redis: one ASK per new key of the migrating slot (%d)" % in_slot)
    is_(r.get("moved"), 0, "redis: no MOVED (the slot still belongs to its owner)")
    is_(K.call(dst.host, dst.port, "CLUSTER", "COUNTKEYSINSLOT", slot), in_slot,
        "redis: the importing node holds the slot's new keys")
    is_(K.call(src.host, src.port, "CLUSTER", "COUNTKEYSINSLOT", slot), 0, "redis: the migrating node holds none")
    is_(sum(K.call(nd.host, nd.port, "DBSIZE") for nd in cl.nodes), KEYS + n, "redis: every SET landed once")
    owners = K.even_split(3)
    missing = []
    for k in keys[:200]:
        if key_slot(k) == slot:
            continue
        nd = cl.nodes[next(x for x, (lo, hi) in enumerate(owners) if lo <= key_slot(k) <= hi)]
        if K.call(nd.host, nd.port, "EXISTS", k) != 1:
            missing.append(k)
    ok(not missing, "redis: the other keys are on their slots' owners") or diag(missing[:5])


def commands_done(K, nodes):
    return sum(int(C_info(K, nd).get("total_commands_processed", 0)) for nd in nodes)


def C_info(K, nd):
    return K.C.parse_info(K.call(nd.host, nd.port, "INFO", "stats"))


def node_loss_checks(K, cl):
    """The last node hangs, then dies mid-run: the others are served again
    (a loop that stalled on the lost node's queue would stop them all)."""
    seed, dead, rest = cl.nodes[0], cl.nodes[2], cl.nodes[:2]
    argv = [BENCH, "--cluster", "-H", seed.host, "-p", str(seed.port), "-q", "-k", KEYS, "-c", 2, "-P", 8,
            "-D", 300]
    p = subprocess.Popen([str(a) for a in argv], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        before = commands_done(K, [dead])
        for _ in range(200):  # until the node to lose has served some of the load
            if commands_done(K, [dead]) > before + 1000:
                break
            time.sleep(0.05)
        # Stopped first, so its queue fills and the other sockets wait
        # with nothing in flight (as a closed loop must), then killed: the
        # loss must wake them up.
        dead.proc.send_signal(signal.SIGSTOP)
        time.sleep(0.5)
        dead.proc.kill()
        dead.proc.wait(10)
        base = commands_done(K, rest)
        grew = False
        for _ in range(200):
            if commands_done(K, rest) > base + 20000:
                grew = True
                break
            time.sleep(0.05)
        ok(grew and p.poll() is None, "redis: after a node is lost the other nodes keep getting requests")
    finally:
        p.send_signal(signal.SIGTERM)
        p.wait(30)


def compare_smoke(tmp):
    out = os.path.join(tmp, "cmp")
    p = subprocess.run([os.path.join(REPO_ROOT, "bench", "compare"), "--cluster", "1", "--build", BUILD,
                        "--keys", "2000", "--duration", "0.3", "--reps", "1", "--pipelines", "16",
                        "--conns", "4", "--wait-quiet", "0", "--out", out],
                       capture_output=True, text=True, timeout=300)
    is_(p.returncode, 0, "bench/compare --cluster 1 ran") or diag(p.stdout[-2000:] + p.stderr[-2000:])
    lines = p.stdout.splitlines()
    head = [i for i, l in enumerate(lines) if l.split()[:4] == ["N", "P", "engine", "ops/s"]]
    ok(head, "its table has a header") or diag(p.stdout[-1500:])
    if head:
        rows = [l.split() for l in lines[head[0] + 1:head[0] + 3]]
        is_(sorted(r[2] for r in rows if len(r) > 3 and r[0] == "1"), ["redis", "zarisd"],
            "a row per engine at N=1")
    ok("placement:" in p.stdout, "the output says where the nodes and the client ran")
    ok(os.path.exists(os.path.join(out, "report.md")) and os.path.exists(os.path.join(out, "results.json")),
       "report.md and results.json written")


def main():
    for need in ("redis-server", "taskset"):
        if not shutil.which(need):
            skip_all("%s is not installed" % need)
    if not os.access(BENCH, os.X_OK):
        skip_all("zaris-bench is not built")
    K = load("cluster")
    tmp = tempfile.mkdtemp(prefix="cluster-bench-t-")
    ncpu = os.cpu_count() or 1
    opts = argparse.Namespace(stand_in=False, server_cpu=ncpu - 1, zarisd=os.path.join(BUILD, "zarisd"))
    try:
        for engine in ("redis", "zarisd"):
            cl = K.Cluster(opts, engine, 3, tmp)
            try:
                cl.start()
                common_checks(K, cl, engine)
                if engine == "redis":
                    ask_checks(K, cl)
                    node_loss_checks(K, cl)
            finally:
                cl.stop()
        compare_smoke(tmp)
    finally:
        if not os.environ.get("ZARIS_KEEP_LOGS"):
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            diag("logs in %s" % tmp)
    done_testing()


if __name__ == "__main__":
    main()
