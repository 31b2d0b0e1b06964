#!/usr/bin/python3
"""Reload applies only the difference: an invalid file changes nothing
(same PIDs; file:line in status and log), a restart-only change restarts
just that instance, a live key goes through CONFIG SET without a restart,
removed nodes stop and new ones start."""
import os
import re
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from svlib import *  # noqa: E402,F401

require_binaries()
pa, pb, pc = free_ports(3)
A = {"name": "a", "port": pa, "maxmemory": '"64mb"'}
B = {"name": "b", "port": pb, "maxmemory": '"64mb"'}
sv = Supervisor(node_conf([A, B]))
try:
    inst = sv.wait_all_up()
    ok(inst, "a and b up")
    pids = {n: i["pid"] for n, i in inst.items()}

    # --- invalid file: nothing changes -------------------------------------
    good = open(sv.conf).read()
    bad = good.replace('maxmemory = "64mb"; }', 'maxmemory = "64mb"; colour = "blue"; }', 1)
    sv.write_conf(bad)
    bad_line = next(n for n, l in enumerate(bad.splitlines(), 1) if "colour" in l)
    rc, out, err = sv.ctl("reload")
    ok(rc == 1, "zarisctl reload fails on an invalid file (rc=%d)" % rc)
    where = "%s:%d:" % (sv.conf, bad_line)
    ok(where in err and "unknown key 'colour'" in err, "reload error names file:line: %s" % err.strip())
    sup, inst = sv.status()
    ok(sup["config_error"] and where in sup["config_error"], "status shows the config error")
    ok({n: i["pid"] for n, i in inst.items()} == pids, "running instances untouched (same PIDs)")
    ok(re.search(r"<3>zaris-supervisor: reload refused, nothing changed: " + re.escape(where),
                 sv.log_text()), "the error is logged with file:line at priority err")
    rc, out, _ = sv.ctl("status")
    ok("config error" in out and where in out, "text status shows it too")
    # SIGHUP path (systemctl reload) behaves the same
    refusals = len(re.findall(r"reload refused, nothing changed", sv.log_text()))
    os.kill(sv.proc.pid, signal.SIGHUP)
    ok(wait_for(lambda: len(re.findall(r"reload refused, nothing changed", sv.log_text())) > refusals, 10),
       "SIGHUP with the bad file: refused too (logged)")
    ok({n: i["pid"] for n, i in sv.status()[1].items()} == pids, "SIGHUP with the bad file: same PIDs")

    # --- restart-only change on b: only b restarts --------------------------
    B2 = dict(B, threads="2")
    sv.write_conf(node_conf([A, B2]))
    rc, out, err = sv.ctl("reload")
    ok(rc == 0, "reload of a valid file succeeds")
    note(out.strip())
    ok("restarting b" in out, "reload streams the restart of b")
    sup, inst = sv.status()
    ok(sup["config_error"] is None, "config error cleared")
    ok(inst["a"]["pid"] == pids["a"], "a kept its pid")
    ok(inst["b"]["pid"] != pids["b"] and inst["b"]["state"] == "up", "b restarted and is up")
    ok(not pid_alive(pids["b"]), "b's old process is gone")
    pids = {n: i["pid"] for n, i in inst.items()}

    # --- live change: maxmemory via CONFIG SET, no restart ------------------
    A3 = dict(A, maxmemory='"96mb"')
    sv.write_conf(node_conf([A3, B2]))
    rc, out, err = sv.ctl("reload")
    ok(rc == 0, "reload with a new maxmemory for a")
    got = wait_for(lambda: client(pa).config_get("maxmemory").get("maxmemory") == str(96 << 20), 10)
    ok(got, "CONFIG GET maxmemory on a shows 96mb")
    sup, inst = sv.status()
    ok({n: i["pid"] for n, i in inst.items()} == pids, "no instance restarted for a live change")
    ok(re.search(r"a: CONFIG SET maxmemory applied without restart", sv.log_text()), "logged as applied live")

    # --- a reload while a health check is in flight still applies ----------
    # (the check in flight when the reload queued the change used to mark it
    # applied although it never carried the CONFIG SET)
    os.kill(pids["a"], signal.SIGSTOP)
    time.sleep(0.3)  # a check (interval 100ms) is now waiting on a: in flight
    A5 = dict(A, maxmemory='"80mb"')
    sv.write_conf(node_conf([A5, B2]))
    rc, out, err = sv.ctl("reload")
    os.kill(pids["a"], signal.SIGCONT)  # within the 1 s health timeout
    ok(rc == 0, "reload with a new maxmemory while a's health check is in flight")
    got = wait_for(lambda: client(pa).config_get("maxmemory").get("maxmemory") == str(80 << 20), 10)
    ok(got, "CONFIG GET maxmemory on a shows 80mb: the change was not lost")
    ok(sv.status()[1]["a"]["pid"] == pids["a"], "still no restart")
    sv.write_conf(node_conf([A3, B2]))
    ok(sv.ctl("reload")[0] == 0 and wait_for(
        lambda: client(pa).config_get("maxmemory").get("maxmemory") == str(96 << 20), 10),
        "back to 96mb")

    # --- live requirepass: health checks keep working with the new password
    A4 = dict(A3, requirepass='"s3cret"')
    sv.write_conf(node_conf([A4, B2]))
    rc, out, err = sv.ctl("reload")
    ok(rc == 0, "reload setting requirepass on a")
    ok(wait_for(lambda: ping(pa, password="s3cret"), 5), "a accepts the new password")
    time.sleep(0.5)
    i = sv.instance("a")
    ok(i["state"] == "up" and i["pid"] == pids["a"], "a stays up and healthy with the password (same pid)")

    # --- remove b, add c ----------------------------------------------------
    C = {"name": "c", "port": pc}
    sv.write_conf(node_conf([A4, C]))
    rc, out, err = sv.ctl("reload")
    ok(rc == 0, "reload removing b and adding c")
    ok(wait_for(lambda: not pid_alive(pids["b"]), 5), "b stopped")
    ok(sv.wait_state("c", "up"), "c started and up")
    ok(wait_for(lambda: "b" not in sv.status()[1], 5), "b is gone from status")
    ok(sv.instance("a")["pid"] == pids["a"], "a untouched throughout")
finally:
    sv.cleanup()
done()
