#!/usr/bin/python3
"""zarisctl against a running supervisor: stop/start/restart NAME, errors
for unknown names and commands, exit 3 without a supervisor, the control
socket's permissions, --node selection and host-based local detection
(replicas: replicas.t)."""
import os
import re
import socket
import stat
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from svlib import *  # noqa: E402,F401

require_binaries()
pa, pb, pc, pd = free_ports(4)
conf = node_conf([
    {"name": "a", "port": pa},
    {"name": "b", "port": pb},
    # not local by host: another machine's node on a loopback address
    {"name": "c", "port": pc, "host": '"not-this-machine-%d"' % pc},
    {"name": "d", "port": pd, "host": '"%s"' % socket.gethostname()},
])
sv = Supervisor(conf)
try:
    inst = sv.wait_all_up()
    ok(inst and sorted(inst) == ["a", "b", "d"], "local nodes: a, b (by address) and d (by host), not c: %s"
       % sorted(inst or {}))
    mode = stat.S_IMODE(os.stat(sv.sock).st_mode)
    ok(mode == 0o660, "control socket mode is 0660 (%o)" % mode)

    # stop / start / restart
    a_pid = inst["a"]["pid"]
    rc, out, err = sv.ctl("stop", "a")
    ok(rc == 0 and "a: stop" in out, "zarisctl stop a: " + out.strip())
    ok(sv.wait_state("a", "down"), "a is down")
    ok(not pid_alive(a_pid) and not ping(pa), "a's process is gone")
    ok(sv.instance("a")["health"] == "stopped", "health column says stopped")
    sup, _ = sv.status()
    ok(sup["summary"].startswith("2/2 instances up; a stopped"), "a stopped on purpose is not counted as missing: "
       + sup["summary"])
    rc, out, err = sv.ctl("start", "a")
    ok(rc == 0, "zarisctl start a")
    a2 = sv.wait_state("a", "up")
    ok(a2 and ping(pa), "a is up again")
    rc, out, err = sv.ctl("restart", "d")
    d0 = inst["d"]["pid"]
    ok(rc == 0, "zarisctl restart d")
    ok(sv.wait_state("d", "up", pred=lambda i: i["pid"] != d0), "d restarted with a new pid")

    rc, out, err = sv.ctl("restart", "nosuch")
    ok(rc == 1 and "no local instance called 'nosuch'" in err, "unknown instance: " + err.strip())
    rc, out, err = sv.ctl("restart", "c")
    ok(rc == 1, "c is not local here, so it cannot be restarted here")
    rc, out, err = sv.ctl("frobnicate")
    ok(rc == 2 and "unknown command" in err, "unknown command: usage error (rc=%d)" % rc)
    rc, out, err = sv.ctl("restart")
    ok(rc == 2, "restart without NAME is a usage error")
    r = subprocess.run([ZARISCTL, "--control-socket", sv.sock + ".none", "status"], capture_output=True,
                       text=True, timeout=10)
    ok(r.returncode == 3 and "cannot talk to zaris-supervisor" in r.stderr, "no supervisor: rc 3, clear message")
finally:
    sv.cleanup()

# --node picks nodes explicitly, even one that is not local by host; the
# zarisd binary comes from $ZARISD (no --zarisd).
pe, pf = free_ports(2)
sv = Supervisor(node_conf([{"name": "e", "port": pe, "host": '"elsewhere"'},
                           {"name": "f", "port": pf}]), extra_args=["--node", "e"],
                zarisd_via_env=True)
try:
    inst = sv.wait_all_up()
    ok(inst and sorted(inst) == ["e"], "--node e: only e runs (%s), zarisd found via $ZARISD"
       % sorted(inst or {}))
    ok(ping(pe) and not ping(pf), "e answers, f was not started")
finally:
    sv.cleanup()

# A supervisor given an invalid file refuses to start, naming file:line.
sv = Supervisor("nodes = ( { name = \"x\"; address = \"127.0.0.1\"; port = 0; } );\n")
try:
    rc = sv.proc.wait(10)
    ok(rc == 1, "invalid file at start: exit 1")
    ok(re.search(r"<3>zaris-supervisor: cannot start: .*zaris.conf:1: 'port' must be between 1 and 65535",
                 sv.log_text()), "start-up error logged with file:line")
finally:
    sv.cleanup()
done()
