#!/usr/bin/python3
# script_busy_shard.t — a worker whose client waits for a shard lock that a
# busy script holds, against redis-server and zarisd (2 workers).
#
# A read-only script loops on worker A holding its declared key's shard.
# Clients of worker B then send commands that need that shard: GET of the
# key, EXEC of a transaction that queued a GET of it, WATCH of it. Before
# the fix, B's thread slept in the shard lock until the script ended, so
# none of B's clients got -BUSY (Redis answers every client -BUSY once the
# script passes busy-reply-threshold). Now the wait gives up when the
# script turns busy: GET and EXEC get -BUSY (EXEC's transaction is doomed,
# the next EXEC answers EXECABORT, as Redis's flagTransaction), another
# client's PING on B gets -BUSY, and WATCH, which Redis answers at once,
# waits as a paused request and is answered +OK once SCRIPT KILL ended the
# script. Replies compared with redis-server's.
#
# Ordering, not time: the commands on B are sent a little after the
# script; had one arrived first, it would just run (and both servers
# answer it alike), the checks compare replies only.

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from zaris import *  # noqa: E402,F403

WAIT = 30.0 * SLOW
BUSY = b"-BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.\r\n"
LOOP_RO = "local i = 0 while true do i = i + 1 end"


def run(srv):
    res = {}
    admin = srv.client()
    admin.call("FLUSHALL")
    admin.call("SET", "held", "v")
    r = admin.call("CONFIG", "SET", "busy-reply-threshold", "300")
    if r.is_error():
        raise RuntimeError("CONFIG SET busy-reply-threshold: %s" % r.value)
    runner = srv.client(timeout=WAIT)
    getter = client_on_other_worker(srv, runner)
    pinger = same_worker_client(srv, getter)
    execer = same_worker_client(srv, getter)
    watcher = same_worker_client(srv, getter)
    res["multi"] = execer.call("MULTI").raw
    res["queued"] = execer.call("GET", "held").raw

    runner.send("EVAL", LOOP_RO, "1", "held")
    time.sleep(0.05 * SLOW)  # ordering slack only: see the header
    getter.send("GET", "held")
    execer.send("EXEC")
    watcher.send("WATCH", "held")
    r = res["ping"] = ping_until(pinger, BUSY, WAIT)
    res["get"] = reply_within(getter, "GET of the held key", WAIT)
    res["exec"] = reply_within(execer, "EXEC", WAIT)
    killer = srv.client()
    res["kill"] = killer.call("SCRIPT", "KILL").raw
    r = reply_within(runner, "the script's reply", WAIT)
    res["runner"] = r[:len(b"-ERR Error running script")] if isinstance(r, bytes) else r
    res["watch"] = reply_within(watcher, "WATCH after the kill", WAIT)
    res["get_after"] = getter.call("GET", "held").raw
    res["exec_again"] = execer.call("EXEC").raw
    res["ping_after"] = pinger.call("PING").raw
    for c in (admin, runner, getter, pinger, execer, watcher, killer):
        c.close()
    return res


redis = start_redis()
zarisd = start_zarisd(threads=2)
require_eval(zarisd)
want = run(redis)
got = run(zarisd)
# first the PING: the whole point
first = "ping"
is_(got[first], want[first], "PING on the waiting worker: %r (redis-server %r)" % (got[first], want[first]))
for k in ("multi", "queued", "get", "exec", "kill", "runner", "watch", "get_after", "exec_again", "ping_after"):
    is_(got[k], want[k], "%s: %r" % (k, want[k]))
ok(want["ping"] == BUSY and want["get"] == BUSY, "redis-server answered -BUSY to both (the test's premise)")
ok(zarisd.alive(), "zarisd still runs")
redis.stop()
zarisd.stop()
done_testing()
