#!/usr/bin/python3
# script_busy.t — busy scripts (busy-reply-threshold, alias lua-time-limit),
# SCRIPT KILL and SHUTDOWN NOSAVE, against redis-server where Redis has the
# behaviour: the same texts, raw.
#
#  * a script looping past the threshold: another client (on zarisd, one
#    on another worker than the script's: a client of the script's own
#    worker waits until it ends) gets -BUSY, SCRIPT KILL answers OK, the
#    script's client gets Redis's kill error, the server serves again;
#  * SCRIPT KILL with nothing running: NOTBUSY;
#  * a script that wrote before looping: SCRIPT KILL answers UNKILLABLE;
#    SHUTDOWN NOSAVE stops the server (the wait is bounded).

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from zaris import *  # noqa: E402,F403

T_WAIT = 20.0 * SLOW


def pair(srv, is_zarisd):
    """The script's client and one on another worker (any two on Redis)."""
    if not is_zarisd:
        return srv.client(), srv.client()
    ctrl = srv.client()
    a, wa = connect_on_worker(srv, ctrl)
    for _ in range(32 if wa is not None else 0):
        b, wb = connect_on_worker(srv, ctrl)
        if wb is not None and wb != wa:
            return a, b
    return a, None


def until_busy(c):
    """PINGs until the answer is an error (BUSY); that reply, or None."""
    end = time.monotonic() + T_WAIT
    while time.monotonic() < end:
        r = c.call("PING")
        if r.is_error():
            return r.raw
        time.sleep(0.01)
    return None


def scenario(srv, is_zarisd):
    out = []
    a, b = pair(srv, is_zarisd)
    if b is None:
        return None
    out.append(b.call("CONFIG", "SET", "busy-reply-threshold", "50").raw)
    out.append(b.call("CONFIG", "GET", "lua-time-limit").raw)
    out.append(b.call("SCRIPT", "KILL").raw)
    a.send("EVAL", "local i = 0 while true do i = i + 1 end", 0)
    out.append(until_busy(b))
    out.append(b.call("GET", "x").raw)
    out.append(b.call("SCRIPT", "KILL").raw)
    out.append(a.read_reply().raw)
    out.append(b.call("PING").raw)
    out.append(a.call("PING").raw)
    # a script that wrote cannot be killed
    a.send("EVAL", "redis.call('set', KEYS[1], 'v') local i = 0 while true do i = i + 1 end", 1, "x")
    out.append(until_busy(b))
    out.append(b.call("SCRIPT", "KILL").raw)
    b.send("SHUTDOWN", "NOSAVE")
    ok(b.is_closed_by_peer(timeout=T_WAIT), "%s: SHUTDOWN NOSAVE closes the connection" % srv.name)
    end = time.monotonic() + T_WAIT
    while srv.alive() and time.monotonic() < end:
        time.sleep(0.05)
    ok(not srv.alive(), "%s: the server stopped" % srv.name)
    return out


want = scenario(start_redis(), False)
ok(want[3] and want[3].startswith(b"-BUSY ") and want[9] and want[9].startswith(b"-BUSY ") and
   want[5] == b"+OK\r\n" and want[10].startswith(b"-UNKILLABLE "), "redis-server: BUSY, killed, UNKILLABLE") or diag(want)
got = scenario(start_zarisd(threads=2), True)
ok(got is not None, "zarisd: two clients on different workers")
if got is not None:
    ok(got == want, "busy script, SCRIPT KILL, UNKILLABLE: zarisd answers as redis-server") or diag_steps(want, got)
sys.exit(done_testing())
