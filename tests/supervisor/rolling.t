#!/usr/bin/python3
"""zarisctl rolling-restart: instances restart one at a time in file order
(PIDs change in order), each healthy before the next, never two down at
once, with a progress line per step. With persistence in zarisd, data
written before survives the rolling restart (skipped until zarisd has it)."""
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
import shutil

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from svlib import *  # noqa: E402,F401

require_binaries()


def zarisd_persists():
    """Whether zarisd keeps data across a restart with --appendonly yes --dir:
    returns None if so, else the reason to skip."""
    d = tempfile.mkdtemp(prefix="zpersist-")
    (port,) = free_ports(1)
    args = [ZARISD, "--port", str(port), "--bind", "127.0.0.1", "--threads", "1",
            "--dir", d, "--appendonly", "yes"]
    why = None
    try:
        for attempt in (0, 1):
            p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            if not wait_for(lambda: ping(port) or p.poll() is not None, 5) or p.poll() is not None:
                err = p.stderr.read().decode(errors="replace").strip().splitlines()
                return "zarisd does not accept --appendonly/--dir yet (%s)" % (err[-1] if err else "exit")
            r = client(port)
            if attempt == 0:
                r.set("persist-probe", "1")
            else:
                if r.get("persist-probe") != "1":
                    why = "zarisd accepts --appendonly yes but does not persist data yet"
            p.terminate()
            p.wait(10)
        return why
    finally:
        shutil.rmtree(d, ignore_errors=True)


ports = free_ports(3)
names = ["a", "b", "c"]
skip_persist = zarisd_persists()
data_dir = tempfile.mkdtemp(prefix="zroll-")
nodes = []
for n, p in zip(names, ports):
    node = {"name": n, "port": p}
    if not skip_persist:
        os.makedirs(os.path.join(data_dir, n))
        node["dir"] = '"%s"' % os.path.join(data_dir, n)
        node["appendonly"] = "true"
    nodes.append(node)
sv = Supervisor(node_conf(nodes))
try:
    inst = sv.wait_all_up()
    ok(inst, "a, b, c up")
    before = {n: inst[n]["pid"] for n in names}
    if not skip_persist:
        for n, p in zip(names, ports):
            client(p).set("key-" + n, "value-" + n)

    # Watch every instance while the job runs: when did each pid change, and
    # how many were unreachable at the same moment.
    stop = threading.Event()
    worst = [0]
    changed = {}

    def watch():
        while not stop.is_set():
            down = sum(1 for p in ports if not ping(p, timeout=1.0))
            worst[0] = max(worst[0], down)
            _, cur = sv.status()
            for n in names:
                if n in cur and n not in changed and cur[n]["pid"] not in (0, before[n]):
                    changed[n] = time.monotonic()
            time.sleep(0.005)

    th = threading.Thread(target=watch, daemon=True)
    th.start()
    rc, out, err = sv.ctl("rolling-restart", timeout=60)
    # the watcher sees the last change in its own time (a round pings every
    # port, with a 1 s timeout for one that is down)
    wait_for(lambda: len(changed) == len(names), 10)
    stop.set()
    th.join(5)
    diag(out.strip())
    ok(rc == 0, "rolling-restart succeeds (rc=%d %s)" % (rc, err.strip()))
    steps = [l for l in out.splitlines() if l.startswith("[")]
    ok(len(steps) == 6, "a progress line per step (restarting / up again) for 3 instances")
    ok([l.split()[2] for l in steps if "restarting" in l] == names, "restarted in file order a, b, c")
    _, inst = sv.status()
    ok(all(inst[n]["pid"] != before[n] for n in names), "every instance has a new pid")
    ok(all(inst[n]["state"] == "up" for n in names), "all up at the end")
    order = sorted(changed, key=changed.get)
    ok(order == names, "PIDs changed in order: %s" % order)
    restarts = re.findall(r"(\w+): started zarisd pid \d+ \(restart\)", sv.log_text())
    ok(restarts == names, "the log shows the restarts in order: %s" % restarts)
    ok(worst[0] <= 1, "never two instances down at once (max down together: %d)" % worst[0])
    ok(not any(pid_alive(p) for p in before.values()), "old processes are gone")

    # --json: one object per progress line and a final {"ok":true}
    rc, out, _ = sv.ctl("--json", "rolling-restart", timeout=60)
    lines = [json.loads(l) for l in out.splitlines()]
    ok(rc == 0 and lines[-1].get("ok") is True, "--json rolling-restart ends with ok:true")
    ok(sum(1 for l in lines if l.get("event") == "up") == 3, "--json reports 3 'up' steps")

    if skip_persist:
        skip("data survives a rolling restart: " + skip_persist)
    else:
        ok(all(client(p).get("key-" + n) == "value-" + n for n, p in zip(names, ports)),
           "data written before survives the rolling restarts")
finally:
    sv.cleanup()
    shutil.rmtree(data_dir, ignore_errors=True)
done()
