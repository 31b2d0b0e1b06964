#!/usr/bin/python3
"""Failures of an instance: kill -9 (restarted, answering, counter up), a
SIGSTOPped (hung) instance (health check fails, it is killed and restarted),
and a crash loop (backoff grows, status says crash-loop, it recovers)."""
import os
import re
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from svlib import *  # noqa: E402,F401

require_binaries()
pa, pb = free_ports(2)
sv = Supervisor(node_conf([{"name": "a", "port": pa}, {"name": "b", "port": pb}]))
try:
    inst = sv.wait_all_up()
    ok(inst, "both instances up")
    a0, b0 = inst["a"], inst["b"]

    # --- kill -9 -----------------------------------------------------------
    os.kill(a0["pid"], signal.SIGKILL)
    a1 = sv.wait_state("a", "up", pred=lambda i: i["pid"] != a0["pid"])
    ok(a1, "kill -9: a is up again with a new pid")
    # On a loaded machine a health check of the new process can time out
    # and restart it once more before the status is read: the counter has
    # gone up at least once and the kill is in the log, whatever came after
    ok(a1 and a1["restarts"] >= a0["restarts"] + 1, "restart counter went up (%s -> %s)"
       % (a0["restarts"], a1 and a1["restarts"]))
    ok(wait_for(lambda: ping(pa), 5), "a answers PING again")
    killed = re.compile(r"zaris-supervisor: a: pid %d killed by signal 9" % a0["pid"])
    ok(wait_for(lambda: killed.search(sv.log_text()), 5), "the log says a's pid %d was killed by signal 9 (last "
       "error now: %s)" % (a0["pid"], a1 and a1["last_error"]))
    ok(sv.instance("b")["pid"] == b0["pid"], "b was not touched")

    # --- SIGSTOP: hung, not dead ---------------------------------------------
    hung = b0["pid"]
    os.kill(hung, signal.SIGSTOP)
    u = sv.wait_state("b", "unhealthy", timeout=5)
    ok(u, "a stopped instance is seen as unhealthy")
    b1 = sv.wait_state("b", "up", pred=lambda i: i["pid"] != hung, timeout=10)
    ok(b1, "the hung instance was replaced and is up (pid %s -> %s)" % (hung, b1 and b1["pid"]))
    ok(wait_for(lambda: not pid_alive(hung), 3), "the hung process is gone")
    ok(b1 and "health check failed" in (b1["last_error"] or ""), "last error: %s"
       % (b1 and b1["last_error"]))
    ok(wait_for(lambda: ping(pb), 5), "b answers PING again")
    log = sv.log_text()
    ok(re.search(r"<3>zaris-supervisor: b: health check failed 2 times", log),
       "the restart is logged at priority err (<3>)")

    # --- crash loop ----------------------------------------------------------
    # Take a's port away: every start fails at bind, so it crashes at once.
    a_pid = sv.instance("a")["pid"]
    blocker = None
    os.kill(a_pid, signal.SIGKILL)
    for _ in range(200):        # grab the port in the window before the restart
        try:
            blocker = port_blocker(pa)
            break
        except OSError:
            time.sleep(0.005)
    ok(blocker is not None, "test holds a's port")
    cl = sv.wait_state("a", "crash-loop", timeout=10)
    ok(cl, "status shows crash-loop")
    ok(cl and cl["crashes"] >= 3, "crash count %s >= crash-loop-restarts" % (cl and cl["crashes"]))
    ok(cl and "crash-loop" in cl["health"], "health column: %s" % (cl and cl["health"]))
    # Between retries it is briefly "starting": look until a crash-loop shows.
    ok(wait_for(lambda: re.search(r"^a .*crash-loop", sv.ctl("status")[1], re.M), 5),
       "text status shows crash-loop")
    def logged_delays():
        return [int(x) for x in re.findall(r"a: (?:failed|crash loop) \(\d+ in a row\); restarting in (\d+) ms",
                                           sv.log_text())]
    # a failed start takes its own time (longer under a sanitizer and load):
    # wait for the fourth delay instead of a fixed sleep
    wait_for(lambda: len(logged_delays()) >= 4, 30)
    delays = logged_delays()
    diag("backoff delays: %s" % delays)
    ok(len(delays) >= 4 and all(b >= a for a, b in zip(delays, delays[1:])) and delays[-1] > delays[0],
       "backoff grows")
    ok(delays and max(delays) <= 1600, "backoff capped at backoff-max")
    ok(wait_for(lambda: "a crash-loop" in sv.status()[0]["summary"], 5), "status summary mentions crash-loop")
    ok(wait_for(lambda: any("a crash-loop" in l for _, _, l in sv.notify_lines()), 5), "STATUS= mentioned crash-loop")
    ok(ping(pb), "b keeps running through a's crash loop")

    blocker.close()
    rec = sv.wait_state("a", "up", timeout=10)
    ok(rec, "a recovers by itself once the port is free")
    ok(wait_for(lambda: ping(pa), 5), "a answers PING")
finally:
    sv.cleanup()
done()
