#!/usr/bin/python3
"""sd_notify protocol without systemd: READY=1 only once zarisd answers PING,
WATCHDOG=1 keeps coming from the supervisor's pid (and stops while its loop
is frozen), STATUS= follows the instances, STOPPING=1 and a clean exit on
SIGTERM."""
import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from svlib import *  # noqa: E402,F401

require_binaries()
(port,) = free_ports(1)
# Hold the instance's port with a socket that never answers: zarisd cannot
# bind and the health check gets no PONG, so READY=1 must wait.
blocker = port_blocker(port)
sv = Supervisor(node_conf([{"name": "a", "port": port}]), watchdog_usec=300000)
try:
    ok(sv.wait_notify("STATUS=0/1 instances up") is not None, "STATUS= says 0/1 up meanwhile")
    time.sleep(1.0)  # time for a READY=1 that must not come
    sv.mark()
    early = [l for _, _, l in sv.notify_lines() if l == "READY=1"]
    ok(not early, "no READY=1 while the instance cannot answer PING")
    st = [l for _, _, l in sv.notify_lines() if l.startswith("STATUS=")]
    diag("statuses so far: %s" % st[-3:])

    t_release = time.monotonic()
    blocker.close()
    ready = sv.wait_notify("READY=1", timeout=10)
    ok(ready is not None, "READY=1 arrives once the port is free")
    ok(ready and ready[0] >= t_release, "READY=1 came after the release")
    ok(ping(port), "zarisd answers PING when READY=1 has been sent")
    sup, inst = sv.status()
    ok(ready and ready[1] == sv.proc.pid, "READY=1 is sent by the supervisor's pid")
    ok(sv.wait_notify("STATUS=1/1 instances up") is not None, "STATUS= says 1/1 up")

    # four in a row, waited for (bounded) rather than counted in a fixed
    # time: a loaded machine delays the loop and the reader alike
    t0 = time.monotonic()

    def watchdogs():
        return [x for x in sv.notify_lines(t0) if x[2] == "WATCHDOG=1"]
    wd = watchdogs() if wait_for(lambda: len(watchdogs()) >= 4) else watchdogs()
    ok(len(wd) >= 4, "WATCHDOG=1 keeps coming (WATCHDOG_USEC=300ms: %d in %.1f s)"
       % (len(wd), time.monotonic() - t0))
    ok(wd and all(p == sv.proc.pid for _, p, _ in wd), "WATCHDOG=1 comes from the supervisor's pid")

    # A frozen loop must stop the watchdog (that is its whole point). The
    # mark, once the process is seen stopped, puts every WATCHDOG=1 sent
    # before the stop behind the lines looked at.
    os.kill(sv.proc.pid, signal.SIGSTOP)
    ok(wait_for(lambda: proc_state(sv.proc.pid) == "T", 5), "the supervisor is stopped")
    t1 = sv.mark()
    time.sleep(0.8)  # several watchdog periods with the loop stopped
    frozen = [x for x in sv.notify_lines(t1) if x[2] == "WATCHDOG=1"] if t1 is not None else ["no mark"]
    os.kill(sv.proc.pid, signal.SIGCONT)
    ok(not frozen, "no WATCHDOG=1 while the supervisor's loop is stopped")
    t2 = time.monotonic()
    ok(sv.wait_notify("WATCHDOG=1", since=t2, timeout=3) is not None, "WATCHDOG=1 resumes")

    # STATUS= follows an instance going away and coming back.
    pid = inst["a"]["pid"]
    t3 = time.monotonic()
    os.kill(pid, signal.SIGKILL)
    down = sv.wait_notify("STATUS=0/1 instances up", since=t3, timeout=5)
    ok(down is not None and ("backoff" in down[2] or "crash-loop" in down[2]), "STATUS= reports the crashed instance: %s"
       % (down[2] if down else None))
    up = sv.wait_notify("STATUS=1/1 instances up", since=t3 + 0.001, timeout=10)
    ok(up is not None and up[0] > down[0] if down else False, "STATUS= back to 1/1 up")

    # Reload: RELOADING=1 then READY=1.
    t4 = time.monotonic()
    sv.proc.send_signal(signal.SIGHUP)
    rl = sv.wait_notify("RELOADING=1", since=t4, timeout=5)
    rd = sv.wait_notify("READY=1", since=t4, timeout=5)
    ok(rl and rd and rd[0] >= rl[0], "SIGHUP: RELOADING=1 then READY=1")

    t5 = time.monotonic()
    rc = sv.stop()
    ok(rc == 0, "SIGTERM: supervisor exits 0 (rc=%s)" % rc)
    ok(sv.wait_notify("STOPPING=1", since=t5) is not None, "STOPPING=1 sent")
    sup2, inst2 = None, {}
    ok(wait_for(lambda: not any(pid_alive(p) for p in sv.known_pids), 5),
       "no instance process is left")
    ok(not os.path.exists(sv.sock), "control socket removed on exit")
finally:
    sv.cleanup()
done()
