#!/usr/bin/python3
"""zarisctl rolling-restart with replicas, while a client keeps writing to
the primary: the file lists a (primary), b (replica of a), c (replica of
b); the job restarts c, then b, then a (replicas first, the deepest of the
chain first), and after each replica is up again it waits until that
replica has caught up (a progress line says so) before the next step.
Afterwards every write the client had acknowledged is on a, b and c
(appendfsync always), nothing lost. A catch-up that cannot happen (the
primary stopped, on another machine: a second supervisor) stops the job at
catch-up-timeout, saying so; with that primary running, a replica whose
primary is elsewhere has caught up once its link is up and synced."""
import os
import re
import signal
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from svlib import *  # noqa: E402,F401

require_binaries()
why = replication_unsupported()
if why:
    skip_all(why)

pa, pb, pc = free_ports(3)
CLUSTER = 'appendonly = true; appendfsync = "always";'
SUP = FAST.replace("};", '  catch-up-lag = "256kb";\n  catch-up-timeout = "20s";\n};')
NODES = [{"name": "a", "port": pa},
         {"name": "b", "port": pb, "replica-of": '"a"'},
         {"name": "c", "port": pc, "replica-of": '"b"'}]
names = ["a", "b", "c"]
ports = {"a": pa, "b": pb, "c": pc}


class Writer:
    """SETs w:<n> = n to a, one at a time, reconnecting when a is away;
    remembers every n that was acknowledged with OK."""

    def __init__(self, port):
        self.port = port
        self.acked = []
        self.failed = 0
        self.stop = threading.Event()
        self.th = threading.Thread(target=self.run, daemon=True)
        self.th.start()

    def run(self):
        n, r = 0, None
        while not self.stop.is_set():
            try:
                if r is None:
                    r = client(self.port)
                if r.set("w:%d" % n, str(n)) is True:
                    self.acked.append(n)
            except Exception:
                self.failed += 1
                r = None
                time.sleep(0.02)
            n += 1
            time.sleep(0.001)

    def finish(self):
        self.stop.set()
        self.th.join(10)


sv = Supervisor(node_conf(NODES, cluster=CLUSTER, supervisor=SUP))
w = None
try:
    inst = sv.wait_all_up()
    ok(inst, "a, b, c up")
    ok(wait_for(lambda: all(sv.instance(n)["link"] == "up" for n in ("b", "c")), 20, step=0.05),
       "b follows a and c follows b, links up")
    before = {n: inst[n]["pid"] for n in names}
    w = Writer(pa)
    ok(wait_for(lambda: len(w.acked) >= 200, 20), "the client writes to a (%d acknowledged)" % len(w.acked))

    # when did each pid change
    stop = threading.Event()
    changed = {}

    def watch():
        while not stop.is_set():
            _, cur = sv.status()
            for n in names:
                if n in cur and n not in changed and cur[n]["pid"] not in (0, before[n]):
                    changed[n] = time.monotonic()
            time.sleep(0.01)
    th = threading.Thread(target=watch, daemon=True)
    th.start()
    acked_at_start = len(w.acked)
    rc, out, err = sv.ctl("rolling-restart", timeout=120)
    stop.set()
    th.join(5)
    diag(out.strip())
    ok(rc == 0, "rolling-restart succeeds (rc=%d %s)" % (rc, err.strip()))
    steps = [l for l in out.splitlines() if l.startswith("[")]
    order = [l.split()[2] for l in steps if l.split()[1] == "restarting"]
    ok(order == ["c", "b", "a"], "restarted c, b, then a: replicas first, deepest first (%s)" % order)
    ok(sorted(changed, key=changed.get) == ["c", "b", "a"], "PIDs changed in that order")
    for n, p in (("c", "b"), ("b", "a")):
        up = next((k for k, l in enumerate(steps) if re.search(r"\] %s is up again" % n, l)), None)
        wait = next((k for k, l in enumerate(steps)
                     if re.search(r"\] waiting for %s to catch up with %s \(link up, at most 262144 bytes" % (n, p), l)), None)
        done_ = next((k for k, l in enumerate(steps)
                      if re.search(r"\] %s caught up with %s \(link up, \d+ bytes behind\)" % (n, p), l)), None)
        nxt = next((k for k, l in enumerate(steps) if re.search(r"\] restarting %s " % p, l)), None)
        ok(None not in (up, wait, done_, nxt) and up < wait < done_ < nxt,
           "%s: up again, waiting to catch up with %s, caught up, and only then %s restarts" % (n, p, p))
    ok(not any(re.search(r"\] (waiting for a to catch up|a caught up)", l) for l in steps),
       "no catch-up wait for the primary a")
    _, inst = sv.status()
    ok(all(inst[n]["pid"] != before[n] and inst[n]["state"] == "up" for n in names),
       "every instance has a new pid and is up")
    ok(len(w.acked) > acked_at_start, "writes went on during the job (%d acknowledged meanwhile, %d refused "
       "while a was away)" % (len(w.acked) - acked_at_start, w.failed))
    ok(wait_for(lambda: len(w.acked) >= acked_at_start + 100 and ping(pa), 20),
       "and after a's restart")
    w.finish()
    acked = set(w.acked)

    ok(wait_synced(pa, pb) and wait_synced(pb, pc), "b and c have caught up after the writes stopped")
    for n in names:
        ks = keyspace(ports[n])
        missing = [k for k in acked if ks.get("w:%d" % k) != str(k)]
        ok(not missing, "%s: every one of the %d acknowledged writes is there (%d missing%s)"
           % (n, len(acked), len(missing), (", e.g. w:%d" % missing[0]) if missing else ""))

finally:
    if w:
        w.finish()
    sv.cleanup()

# --- a primary on another machine: two supervisors, one file ------------------
# sa runs only a (--node a), sb only b (--node b): to sb, a is not local, so
# its offset is not known there and b's catch-up is its link up and synced.
# With a stopped, b cannot catch up: the job stops at catch-up-timeout.
pa, pb = free_ports(2)
SUP2 = FAST.replace("};", '  catch-up-timeout = "1500ms";\n};')
conf2 = node_conf([{"name": "a", "port": pa}, {"name": "b", "port": pb, "replica-of": '"a"'}],
                  cluster=CLUSTER, supervisor=SUP2)
sa = Supervisor(conf2, extra_args=["--node", "a"])
sb = Supervisor(conf2, extra_args=["--node", "b"])
try:
    ok(sa.wait_all_up() and sb.wait_all_up(), "a under one supervisor, b under another")
    ok(sb.wait_state("b", "up", pred=lambda i: i["link"] == "up", timeout=20), "b follows a")
    i = sb.instance("b")
    ok(i["replicating_from"] == "a" and i["lag_bytes"] is None,
       "sb's status: b replicates from a, its lag in bytes not known there (a is not local)")
    rc, out, err = sb.ctl("rolling-restart", timeout=60)
    diag(out.strip())
    ok(rc == 0 and re.search(r"waiting for b to catch up with a \(link up and synced; a is not local", out)
       and re.search(r"\] b caught up with a \(link up and synced\)", out),
       "rolling restart of b alone: it waits for its link to a, which is elsewhere")
    ok(sa.ctl("stop", "a")[0] == 0 and sa.wait_state("a", "down"), "a stopped (on its own machine)")
    rc, out, err = sb.ctl("rolling-restart", timeout=60)
    diag(out.strip())
    ok(rc == 1 and "b did not catch up with a within catch-up-timeout (1500 ms): link down; stopped before "
       "the next instance" in err, "with a away the job stops at catch-up-timeout, saying why: " + err.strip())
    ok(re.search(r"<3>zaris-supervisor: restart job: b did not catch up with a", sb.log_text()),
       "logged at priority err")
    ok(sb.instance("b")["state"] == "up", "b itself stays up")
finally:
    sa.cleanup()
    sb.cleanup()
done()
