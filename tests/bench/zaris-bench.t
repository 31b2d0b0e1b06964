#!/usr/bin/python3
"""zaris-bench against a redis-server this test starts: request-count mode,
prefill, SET:GET mix, error replies, a refused connection, the --serve floor.

Checks the final machine-readable RESULT line against what the server saw
(DBSIZE, GET, INFO commandstats), never against time.
"""
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
BUILD = os.environ.get("ZARIS_BUILD") or os.path.join(HERE, "..", "..", "build")
BENCH = os.path.join(BUILD, "zaris-bench")
REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

n_tests = 0
failed = 0


def ok(cond, name):
    global n_tests, failed
    n_tests += 1
    if not cond:
        failed += 1
    print(("ok" if cond else "not ok") + " %d - %s" % (n_tests, name), flush=True)
    return cond


def diag(msg):
    for line in str(msg).splitlines():
        print("# " + line, flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cli(port, *args):
    out = subprocess.run(["redis-cli", "-p", str(port), "--raw", *args],
                         capture_output=True, text=True, timeout=10)
    return out.stdout.rstrip("\n")


def wait_ping(port, proc, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
                s.sendall(b"PING\r\n")
                if s.recv(64).startswith(b"+PONG"):
                    return True
        except OSError:
            pass
        time.sleep(0.05)
    return False


def bench(port, *args, timeout=60):
    """Runs zaris-bench; returns (exit code, RESULT dict, whole output)."""
    p = subprocess.run([BENCH, "-p", str(port), "-q", *args],
                       capture_output=True, text=True, timeout=timeout)
    result = {}
    lines = p.stdout.splitlines()
    if lines and lines[-1].startswith("RESULT "):
        for kv in lines[-1].split()[1:]:
            k, _, v = kv.partition("=")
            result[k] = v
    return p.returncode, result, p.stdout + p.stderr


def num(result, key):
    try:
        return int(result[key])
    except (KeyError, ValueError):
        return -1


def commandstats(port):
    calls = {}
    for line in cli(port, "INFO", "commandstats").splitlines():
        if line.startswith("cmdstat_"):
            name, _, rest = line.partition(":")
            fields = dict(f.split("=") for f in rest.split(","))
            calls[name[len("cmdstat_"):]] = int(fields["calls"])
    return calls


def start(argv, port):
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    if not wait_ping(port, proc):
        stop(proc)
        return None
    return proc


def stop(proc):
    if proc and proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def main():
    if not os.access(BENCH, os.X_OK):
        print("1..1")
        ok(False, "zaris-bench is built at %s" % BENCH)
        return 1
    tmp = tempfile.mkdtemp(prefix="zb-test-")
    redis = floor = None
    try:
        print("1..36", flush=True)
        # bench/compare parses its options (its --help once crashed on a '%')
        h = subprocess.run([sys.executable, os.path.join(REPO_ROOT, "bench", "compare"), "--help"],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60)
        ok(h.returncode == 0 and b"--quick" in h.stdout, "bench/compare --help works")
        for _ in range(3):  # another process may grab the port in between
            port = free_port()
            redis = start(["redis-server", "--port", str(port), "--bind", "127.0.0.1",
                           "--save", "", "--appendonly", "no", "--dir", tmp,
                           "--logfile", os.path.join(tmp, "redis.log")], port)
            if redis:
                break
        if not ok(redis is not None, "redis-server started"):
            return 1

        # Prefill: every key written exactly once, split over 2 threads.
        rc, r, out = bench(port, "--prefill", "-k", "5000", "-t", "2", "-c", "7", "-P", "8")
        ok(rc == 0, "prefill exits 0") or diag(out)
        ok(num(r, "ops") == 5000 and num(r, "sent") == 5000, "prefill: ops = sent = 5000")
        ok(num(r, "errors") == 0 and num(r, "conn_errors") == 0 and num(r, "lost") == 0,
           "prefill: no errors, nothing lost")
        ok(cli(port, "DBSIZE") == "5000", "DBSIZE is 5000 after the prefill")
        ok(cli(port, "GET", "key:000000000000") == "x" * 100, "first key holds 100 bytes")
        ok(cli(port, "GET", "key:000000004999") == "x" * 100, "last key holds 100 bytes")
        ok(cli(port, "EXISTS", "key:000000005000") == "0", "no key past the keyspace")

        # SET:GET 1:1 over 3 threads, an odd count: the split must still add up,
        # and the server must have seen exactly what the bench counted.
        cli(port, "CONFIG", "RESETSTAT")
        rc, r, out = bench(port, "-n", "3001", "-t", "3", "-c", "5", "-P", "4", "-k", "5000",
                           "-d", "37", "--ratio", "1:1")
        ok(rc == 0 and num(r, "ops") == 3001 and num(r, "sent") == 3001,
           "mix: ops = sent = 3001") or diag(out)
        ok(num(r, "errors") == 0 and num(r, "nils") == 0, "mix: no errors, every GET hit")
        calls = commandstats(port)
        ok(calls.get("set") == 1501 and calls.get("get") == 1500,
           "server saw 1501 SET and 1500 GET") or diag(calls)
        ok(cli(port, "DBSIZE") == "5000", "uniform keys stay in the keyspace")

        # Custom templates with weights; a template that fails on every key.
        cli(port, "CONFIG", "RESETSTAT")
        rc, r, out = bench(port, "-n", "400", "-k", "5000", "--command", "INCR __key__",
                           "--command", "SET ctr:__key__ 1", "--weights", "3,1")
        ok(rc == 0 and num(r, "ops") == 400, "template run: 400 replies") or diag(out)
        ok(num(r, "errors") == 300, "INCR on a string value: 300 error replies")
        calls = commandstats(port)
        ok(calls.get("incr") == 300 and calls.get("set") == 100, "weights 3,1 honoured") or diag(calls)

        # Zipf over a small keyspace: the hottest key is key 0.
        cli(port, "FLUSHALL")
        rc, r, out = bench(port, "-n", "2000", "-k", "100", "--dist", "zipf", "--ratio", "1:0")
        ok(rc == 0 and num(r, "ops") == 2000, "zipf run: 2000 replies") or diag(out)
        dbsize = int(cli(port, "DBSIZE") or 0)
        ok(0 < dbsize <= 100 and cli(port, "EXISTS", "key:000000000000") == "1",
           "zipf keys within the keyspace, rank 1 present (%d keys)" % dbsize)

        # Duration mode: everything sent gets answered before the end.
        rc, r, out = bench(port, "-D", "0.5", "-k", "1000", "-P", "16", "-c", "4")
        ok(rc == 0 and num(r, "ops") > 0 and num(r, "ops") == num(r, "sent"),
           "duration mode: ops = sent > 0") or diag(out)
        ok(float(r.get("client_cpu_pct", "-1")) >= 0, "client CPU reported")
        lat = [float(r.get(k, "-1")) for k in
               ("lat_p50_us", "lat_p90_us", "lat_p99_us", "lat_p999_us", "lat_max_us")]
        ok(0 < lat[0] <= lat[1] <= lat[2] <= lat[3] <= lat[4]
           and 0 < float(r.get("lat_mean_us", "0")) <= lat[4],
           "latency percentiles ordered: %s" % lat)
        rc, r, out = bench(port, "-n", "1000", "-k", "1000", "--server-pid", str(redis.pid))
        ok(rc == 0 and float(r.get("server_cpu_pct", "-1")) >= 0 and r.get("server_pid") == str(redis.pid),
           "server CPU reported with --server-pid") or diag(out)

        # Nothing listening: a clear failure, not a hang.
        rc, r, out = bench(free_port(), "-n", "10")
        ok(rc == 1 and "RESULT" not in out, "refused connection fails with exit 1") or diag(out)

        # The floor, on zarisd's loop and on the stand-in: canned replies,
        # no keyspace, the same answers.
        for backend in ("zarisd", "standin"):
            fport = free_port()
            floor = start([BENCH, "--serve", "--serve-backend", backend, "-p", str(fport),
                           "-d", "20"], fport)
            if ok(floor is not None, "%s floor answers PING" % backend):
                banner = floor.stdout.readline().decode(errors="replace")
                ok(banner.startswith("serve: backend=%s " % backend), "%s floor banner" % backend) \
                    or diag(banner)
                rc, r, out = bench(fport, "-n", "2000", "-P", "16", "-c", "3")
                ok(rc == 0 and num(r, "ops") == 2000 and num(r, "errors") == 0,
                   "%s floor: 2000 replies, no errors" % backend) or diag(out)
                ok(cli(fport, "GET", "anything") == "x" * 20 and cli(fport, "SET", "a", "b") == "OK"
                   and cli(fport, "GET", "anything") == "x" * 20,
                   "%s floor: canned GET and SET replies, no keyspace" % backend)
            else:
                for _ in range(3):
                    ok(False, "%s floor did not start" % backend)
            stop(floor)
            floor = None

        # --cores pins the floor's loops (the scaling section of
        # bench/compare runs it like zarisd --cores); refused where it
        # would be ignored.
        cores = ["1", "0"] if (os.cpu_count() or 1) >= 2 else ["0"]
        fport = free_port()
        floor = start([BENCH, "--serve", "-p", str(fport), "-t", str(len(cores)),
                       "--cores", ",".join(cores)], fport)
        if ok(floor is not None, "floor with --cores %s answers PING" % ",".join(cores)):
            want = {"zaris-w%d" % i: c for i, c in enumerate(cores)}
            # A loop names and pins itself once it runs: the first PING
            # may be answered before the other loops have (bounded wait).
            deadline = time.monotonic() + 20
            while True:
                pinned = {}
                for tid in os.listdir("/proc/%d/task" % floor.pid):
                    with open("/proc/%d/task/%s/comm" % (floor.pid, tid)) as f:
                        comm = f.read().strip()
                    with open("/proc/%d/task/%s/status" % (floor.pid, tid)) as f:
                        allowed = [l.split()[1] for l in f if l.startswith("Cpus_allowed_list:")]
                    if comm.startswith("zaris-w"):
                        pinned[comm] = allowed[0]
                if pinned == want or time.monotonic() > deadline:
                    break
                time.sleep(0.05)
            ok(pinned == want, "floor loop i runs on the i-th CPU of --cores") or diag(pinned)
        else:
            ok(False, "floor with --cores did not start")
        stop(floor)
        floor = None
        for argv, what in (([BENCH, "--cores", "0", "-n", "1"], "without --serve"),
                           ([BENCH, "--serve", "--serve-backend", "standin", "--cores", "0"],
                            "with the stand-in")):
            p = subprocess.run(argv, capture_output=True, text=True, timeout=30)
            ok(p.returncode == 2 and "--cores needs --serve with the zarisd backend" in p.stderr,
               "--cores %s is refused" % what) or diag(p.stderr)
        # a bad CPU list: one line naming it, as any bad option value
        # (it was said twice, the second time as a bare strerror)
        p = subprocess.run([BENCH, "--serve", "-p", str(fport), "--cores", "x"], capture_output=True,
                           text=True, timeout=30)
        ok(p.returncode == 2 and p.stderr.splitlines() ==
           ["zaris-bench --serve: argument must be a CPU list like 0-3 or 1,3 for 'cores'"],
           "--serve --cores x: refused in one line") or diag(p.stderr)
    finally:
        stop(floor)
        stop(redis)
        shutil.rmtree(tmp, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
