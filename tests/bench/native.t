#!/usr/bin/python3
"""zaris-bench --native against a zarisd with a native port this test
starts: a prefill whose keys are then read over RESP (DBSIZE, GET), a
SET:GET mix with several batches in flight checked against INFO
commandstats, both ways of waiting (several connections per thread and one
thread per connection), nils, error results, the rf1 flag from HELLO, a
refused connection and the options the native mode refuses.

Checks the RESULT line against what the server saw, never against time.
Skips when zaris-bench was built without libzaris.
"""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
import zaris  # noqa: E402

BENCH = os.path.join(zaris.build_dir(), "zaris-bench")
KEYS = 2000
VSIZE = 37


def bench(port, *args, timeout=120):
    """Runs zaris-bench --native; returns (exit code, RESULT dict, output)."""
    p = subprocess.run([BENCH, "--native", "-H", zaris.HOST, "-p", str(port), "-q", *map(str, args)],
                       capture_output=True, text=True, timeout=timeout)
    result = {}
    lines = p.stdout.splitlines()
    if lines and lines[-1].startswith("RESULT "):
        for kv in lines[-1].split()[1:]:
            k, _, v = kv.partition("=")
            result[k] = v
    return p.returncode, result, p.stdout + p.stderr


def start_native(rf1=False):
    """A zarisd (2 threads, no persistence) with a native port, and
    native-rf1 yes when RF1."""
    extra = ["--save", "", "--appendonly", "no"] + (["--native-rf1", "yes"] if rf1 else [])
    return zaris.start_zarisd(threads=2, native=True, extra=extra,
                              name="zarisd-native-rf1" if rf1 else "zarisd-native")


def calls(c, cmd):
    """INFO commandstats calls of CMD (0 when never called)."""
    info = c.call("INFO", "commandstats").value
    if isinstance(info, bytes):
        info = info.decode()
    for line in info.splitlines():
        if line.startswith("cmdstat_%s:" % cmd):
            return int(line.split("calls=")[1].split(",")[0])
    return 0


def run_ok(name, rc, r, out, ops):
    good = rc == 0 and r.get("mode") == "native" and r.get("ops") == str(ops) \
        and r.get("sent") == str(ops) and r.get("errors") == "0" and r.get("lost") == "0" \
        and r.get("conn_errors") == "0"
    if not zaris.ok(good, name):
        zaris.diag(out)
    return good


def main():
    if not os.access(BENCH, os.X_OK):
        zaris.skip_all("no zaris-bench at %s" % BENCH)
    probe = subprocess.run([BENCH, "--native", "-q", "-p", str(zaris.free_port()), "-n", "1", "-c", "1"],
                           capture_output=True, text=True, timeout=30)
    if "without libzaris" in probe.stderr:
        zaris.skip_all("zaris-bench built without libzaris (zarisd/client)")
    zaris.plan(23)

    srv = start_native()
    np = srv.native_port
    c = srv.client()

    # 1. prefill: every key once, visible over RESP
    rc, r, out = bench(np, "--prefill", "-k", KEYS, "-d", VSIZE, "-c", "4", "--batch", "16")
    run_ok("prefill over the native port: %d ops, no error" % KEYS, rc, r, out, KEYS)
    zaris.is_(r.get("batch"), "16", "RESULT batch= is --batch")
    zaris.is_(r.get("rf1"), "0", "RESULT rf1=0 without native-rf1")
    zaris.is_(c.call("DBSIZE").value, KEYS, "DBSIZE over RESP counts every prefilled key")
    v = c.call("GET", "key:000000000042").value
    zaris.is_(v, b"x" * VSIZE, "a prefilled key's value over RESP is --value-size bytes of x")
    zaris.is_(c.call("GET", "key:%012d" % (KEYS - 1)).value, b"x" * VSIZE, "so is the last key's")
    zaris.is_(c.call("EXISTS", "key:%012d" % KEYS).value, 0, "no key past the keyspace")

    # 2. a SET:GET 1:1 mix, several connections per thread, batches of 7, depth 3
    set0, get0 = calls(c, "set"), calls(c, "get")
    rc, r, out = bench(np, "-k", KEYS, "-d", VSIZE, "-n", "5000", "-c", "3", "-t", "1", "--batch", "7",
                       "--depth", "3", "--ratio", "1:1")
    run_ok("SET:GET 1:1, 3 connections on one thread, batch 7, depth 3", rc, r, out, 5000)
    zaris.is_(r.get("nils"), "0", "every GET found its prefilled key")
    zaris.is_(r.get("depth"), "3", "RESULT depth= is --depth")
    zaris.is_((calls(c, "set") - set0, calls(c, "get") - get0), (2500, 2500),
              "INFO commandstats counted 2500 SET and 2500 GET")

    # 3. one thread per connection (blocking waits), a mix of 1:3
    get0 = calls(c, "get")
    rc, r, out = bench(np, "-k", KEYS, "-n", "4000", "-c", "2", "-t", "2", "--batch", "16", "--depth", "2",
                       "--ratio", "1:3", "-d", VSIZE)
    run_ok("SET:GET 1:3, one thread per connection", rc, r, out, 4000)
    zaris.is_(calls(c, "get") - get0, 3000, "3000 of the 4000 were GETs")
    zaris.is_(c.call("DBSIZE").value, KEYS, "the runs wrote no key outside the keyspace")

    # 4. misses count as nils
    rc, r, out = bench(np, "-k", "1000", "-n", "300", "-c", "2", "--ratio", "0:1", "--key-prefix", "none:")
    run_ok("GETs of missing keys", rc, r, out, 300)
    zaris.is_(r.get("nils"), "300", "each miss counted as a nil")

    # 5. an error result makes errors= non-zero (the run itself completes)
    c.call("DEL", "bad:000000000000")
    c.call("RPUSH", "bad:000000000000", "x")
    rc, r, out = bench(np, "-k", "1", "-n", "50", "-c", "1", "--ratio", "0:1", "--key-prefix", "bad:",
                       "--batch", "5")
    if not zaris.ok(rc == 0 and r.get("ops") == "50" and r.get("errors") == "50",
                    "GET of a list: every result an error, counted"):
        zaris.diag(out)
    zaris.ok("WRONGTYPE" in out, "the first error's text is shown")

    # 6. rf1: the HELLO flag reaches the RESULT line
    srv1 = start_native(rf1=True)
    rc, r, out = bench(srv1.native_port, "-k", "500", "-n", "1000", "-c", "2", "--batch", "10")
    run_ok("a run against native-rf1 yes", rc, r, out, 1000)
    zaris.is_(r.get("rf1"), "1", "RESULT rf1=1 with native-rf1 yes")
    srv1.stop()

    # 7. nothing listening, and options the native mode refuses
    rc, r, out = bench(zaris.free_port(), "-n", "10", "-c", "1")
    zaris.ok(rc == 1 and "RESULT" not in out, "a refused connection exits 1 without a RESULT")
    rc, r, out = bench(np, "-n", "10", "-P", "4")
    zaris.ok(rc == 2 and "--batch" in out, "-P is refused with --native (exit 2, names --batch)")
    rc, r, out = bench(np, "-n", "10", "--native-port-offset", "1")
    zaris.ok(rc == 2 and "--cluster" in out, "--native-port-offset without --cluster is refused")
    c.close()
    srv.stop()


if __name__ == "__main__":
    main()
    zaris.done_testing()
