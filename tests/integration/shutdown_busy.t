#!/usr/bin/python3
# shutdown_busy.t — SIGTERM stops zarisd within a bounded time even while a
# worker is busy in a long command (issue 13). The main thread used to join
# every worker, so one in DEBUG SLEEP 600 (or in an EXEC holding a shard
# lock) kept the process up until SIGKILL. Now it waits NET_STOP_WAIT_MS
# (10 s), names in its log the worker and the command it runs, and then:
#
#   sleep  DEBUG SLEEP 600 holds no shard lock: the final save (save rules
#          set) takes every lock at once, the log is flushed; exit 0, and
#          every acknowledged write is there after a restart.
#   exec   MULTI / SET / DEBUG SLEEP 600 / EXEC holds the SET's shard lock
#          for the whole EXEC: the final save cannot take it in 5 s more;
#          "Could not save consistently", exit 1, the snapshot file is the
#          one of the last SAVE, byte for byte. With appendonly yes every
#          acknowledged write is in the log (written and fsynced, the
#          unfinished EXEC left out); with appendonly no the writes after
#          the last SAVE are lost, as in a crash.
#
# Each for appendonly yes and no. Last, a SIGTERM with idle workers still
# saves cleanly and exits 0 at once. (redis-server with DEBUG SLEEP handles
# SIGTERM only after the sleep: here zarisd does better on purpose.)
#
# On the old binary the first case never exits: reported, then bailed out
# (the helper SIGKILLs it).

import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from zaris import *  # noqa: E402,F403

EXIT_WAIT = 60.0 * SLOW


def start(aof):
    return start_zarisd(threads=2, extra=["--appendonly", aof, "--save", "3600 1", "--appendfsync", "everysec",
                                                "--enable-debug-command", "yes"],
                        name="zarisd-aof-%s" % aof)


def write_keys(c, prefix, n):
    """N acknowledged SETs (each reply read)."""
    for i in range(n):
        r = c.call("SET", "%s:%d" % (prefix, i), "v%d" % i)
        if r.raw != b"+OK\r\n":
            return False
    return True


def count_keys(c, prefix, n):
    return sum(1 for i in range(n) if c.call("GET", "%s:%d" % (prefix, i)).raw == b"$%d\r\nv%d\r\n"
               % (len("v%d" % i), i))


def sigterm_and_wait(srv):
    srv.proc.send_signal(signal.SIGTERM)
    try:
        return srv.proc.wait(EXIT_WAIT)
    except subprocess.TimeoutExpired:
        return None


def snapshot_bytes(srv):
    try:
        with open(os.path.join(srv._logdir, "dump.zdb"), "rb") as f:
            return f.read()
    except OSError:
        return None


def busy_case(aof, kind):
    srv = start(aof)
    c = srv.client()
    ok_writes = write_keys(c, "before", 200)
    c.call("SAVE")
    saved = snapshot_bytes(srv)
    ok_writes = write_keys(c, "after", 200) and ok_writes
    busy = srv.client()
    ctrl = client_on_other_worker(srv, busy)
    w = worker_of(busy)
    if kind == "sleep":
        started = send_and_wait_read(busy, w, ctrl, "DEBUG", "SLEEP", "600")
        cmd = "DEBUG"
    else:
        busy.pipeline([("MULTI",), ("SET", "locked", "x"), ("DEBUG", "SLEEP", "600")])
        started = send_and_wait_read(busy, w, ctrl, "EXEC")
        cmd = "EXEC"
    ctrl.close()
    if not started:
        diag("worker %s did not take the %s request within the bound" % (w, cmd))
    t0 = time.monotonic()
    rc = sigterm_and_wait(srv)
    took = time.monotonic() - t0
    what = "appendonly %s, %s %s 600 running" % (aof, cmd, "(DEBUG SLEEP inside)" if kind == "exec" else "SLEEP")
    if rc is None:
        ok(False, "%s: SIGTERM: zarisd exits within %.0f s" % (what, EXIT_WAIT))
        diag(srv.log_tail(3000))
        bail_out("zarisd does not stop while a worker is busy")
    want_rc = 0 if kind == "sleep" else 1
    is_(rc, want_rc, "%s: SIGTERM: zarisd exits (in %.1f s) with status %d" % (what, took, want_rc))
    log = srv.log_tail(20000)
    ok("Waiting for worker" in log and ("running the command '%s'" % cmd) in log,
       "%s: the log names the busy worker and its command" % what)
    if kind == "sleep":
        ok("DB saved on disk" in log and "bye bye" in log, "%s: the final save was made" % what)
    else:
        ok("Could not save consistently" in log and "DB saved on disk" not in log.split("Received SIGTERM")[-1],
           "%s: the log says it could not save consistently, no save after SIGTERM" % what)
        ok(snapshot_bytes(srv) == saved and saved is not None,
           "%s: the snapshot file is the last SAVE's, byte for byte" % what)
    busy.close()
    c.close()
    srv.restart()
    c = srv.client()
    n_before, n_after = count_keys(c, "before", 200), count_keys(c, "after", 200)
    lost_ok = kind == "exec" and aof == "no"
    if lost_ok:
        ok(ok_writes and n_before == 200,
           "%s: after a restart the 200 keys of the last SAVE are there (%d; the %d written after it "
           "are lost, as in a crash)" % (what, n_before, 200 - n_after))
    else:
        ok(ok_writes and n_before == 200 and n_after == 200,
           "%s: after a restart all 400 acknowledged writes are there (%d + %d)" % (what, n_before, n_after))
    if kind == "exec":
        is_(c.call("EXISTS", "locked").raw, b":0\r\n", "%s: the unfinished EXEC left nothing" % what)
    c.close()
    srv.stop()


plan(2 * 4 + 2 * 6 + 3)
for aof in ("yes", "no"):
    for kind in ("sleep", "exec"):
        busy_case(aof, kind)

# idle workers: the clean final save, exit 0 within the bound
srv = start("no")
c = srv.client()
write_keys(c, "idle", 100)
c.close()
rc = sigterm_and_wait(srv)
is_(rc, 0, "idle workers: SIGTERM exits with status 0")
log = srv.log_tail(20000)
ok("DB saved on disk" in log and "Waiting for worker" not in log, "idle workers: the final save, no wait logged")
srv.restart()
c = srv.client()
is_(count_keys(c, "idle", 100), 100, "idle workers: the 100 writes are there after a restart")
c.close()
sys.exit(done_testing())
