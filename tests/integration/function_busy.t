#!/usr/bin/python3
# function_busy.t — busy functions against redis-server and zarisd (2
# workers), with busy-reply-threshold at 100 ms (CONFIG SET): a function
# (FCALL) that loops for ever makes other clients' commands answer -BUSY
# with the FUNCTION KILL text; FUNCTION STATS names it (its name, its
# command, a duration); SCRIPT KILL is refused with that BUSY text, and
# FUNCTION KILL stops it (its client gets Redis's error); a function that
# wrote is UNKILLABLE and SHUTDOWN NOSAVE ends the server. Then a busy EVAL:
# FUNCTION KILL and FUNCTION STATS answer the SCRIPT KILL BUSY text. Each
# step's raw reply is compared with redis-server's (FUNCTION STATS's
# duration_ms is only checked to be an integer).
#
# No check depends on the clock: the test waits (bounded) until a PING
# answers -BUSY, i.e. until the server says the threshold has passed.

import os
import re
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from zaris import *  # noqa: E402,F403

WAIT = 30.0 * SLOW
BUSY_FN = b"-BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE.\r\n"
BUSY_EVAL = b"-BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.\r\n"
LIB = """#!lua name=busy
redis.register_function('loop_ro', function(keys, args)
  local i = 0
  while true do i = i + 1 end
end)
redis.register_function('loop_rw', function(keys, args)
  redis.call('SET', keys[1], 'written')
  local i = 0
  while true do i = i + 1 end
end)
"""


def start_busy(srv, busy_reply, *cmd):
    """Loads LIB, sends CMD on one connection and waits (bounded) until
    another, on another worker, gets BUSY_REPLY. Returns (the runner's
    client, the other client, whether the BUSY came)."""
    admin = srv.client()
    for c in (("FLUSHALL",), ("FUNCTION", "FLUSH"), ("CONFIG", "SET", "busy-reply-threshold", "100"),
              ("FUNCTION", "LOAD", LIB)):
        r = admin.call(*c)
        if r.is_error():
            raise RuntimeError("%s: %s" % (" ".join(c), r.value))
    admin.close()
    runner = srv.client(timeout=WAIT)
    other = client_on_other_worker(srv, runner)
    runner.send(*cmd)
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        if other.call("PING").raw == busy_reply:
            return runner, other, True
        time.sleep(0.02)
    return runner, other, False


def wait_served(cl, busy_reply):
    deadline = time.monotonic() + WAIT
    r = None
    while time.monotonic() < deadline:
        r = cl.call("PING")
        if r.raw != busy_reply:
            return r.raw
        time.sleep(0.02)
    return r.raw if r else None


def stats_shape(raw):
    """FUNCTION STATS's reply with its duration_ms number replaced by N."""
    return re.sub(rb"(duration_ms\r\n):\d+\r\n", rb"\1:N\r\n", raw)


def killable(srv, res):
    runner, other, busy = start_busy(srv, BUSY_FN, "FCALL", "loop_ro", "0", "extra-arg")
    res["busy"] = busy
    res["GET while busy"] = other.call("GET", "k").raw
    res["FCALL while busy"] = other.call("FCALL", "loop_ro", "0").raw
    res["FUNCTION STATS"] = stats_shape(other.call("FUNCTION", "STATS").raw)
    res["FUNCTION LIST while busy"] = other.call("FUNCTION", "LIST").raw
    res["SCRIPT KILL"] = other.call("SCRIPT", "KILL").raw
    res["FUNCTION KILL"] = other.call("FUNCTION", "KILL").raw
    res["killed function's reply"] = runner.read_reply().raw
    res["served again"] = wait_served(other, BUSY_FN)
    res["FUNCTION KILL when idle"] = other.call("FUNCTION", "KILL").raw
    res["FUNCTION STATS when idle"] = other.call("FUNCTION", "STATS").raw
    res["runner served again"] = runner.call("PING").raw
    runner.close()
    other.close()


def busy_eval(srv, res):
    runner, other, busy = start_busy(srv, BUSY_EVAL, "EVAL", "local i = 0 while true do i = i + 1 end", "0")
    res["busy"] = busy
    res["FUNCTION KILL"] = other.call("FUNCTION", "KILL").raw
    res["FUNCTION STATS"] = other.call("FUNCTION", "STATS").raw
    res["SCRIPT KILL"] = other.call("SCRIPT", "KILL").raw
    res["killed script's reply"] = runner.read_reply().raw
    res["served again"] = wait_served(other, BUSY_EVAL)
    runner.close()
    other.close()


def unkillable(srv, res):
    runner, other, busy = start_busy(srv, BUSY_FN, "FCALL", "loop_rw", "1", "k")
    res["busy"] = busy
    res["FUNCTION KILL"] = other.call("FUNCTION", "KILL").raw
    res["still busy"] = other.call("GET", "k").raw
    shutdown_nosave_while_busy(srv, runner, other, res, WAIT, "function's client")


def compare(what, want, got):
    for name in want:
        is_(got.get(name), want[name], "%s: %s as redis-server" % (what, name))


def main():
    z = start_zarisd(threads=2)
    r = start_redis()
    want = {}
    killable(r, want)
    ok(want["busy"] and want["killed function's reply"].startswith(b"-ERR Script killed by user")
       and b"running_script" in want["FUNCTION STATS"],
       "redis-server: -BUSY, FUNCTION STATS, FUNCTION KILL's error (the test reads it right)")
    compare("busy function", want, guarded(z, killable))

    want = {}
    busy_eval(r, want)
    compare("busy EVAL", want, guarded(z, busy_eval))

    want = {}
    unkillable(r, want)
    ok(want["FUNCTION KILL"].startswith(b"-UNKILLABLE") and want["exit status"] is not None,
       "redis-server: UNKILLABLE, SHUTDOWN NOSAVE exits (the test reads it right)")
    compare("function that wrote", want, guarded(z, unkillable))
    return done_testing()


if __name__ == "__main__":
    sys.exit(main())
