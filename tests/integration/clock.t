#!/usr/bin/python3
# clock.t — the command clock across the requests of one connection,
# compared with Debian's redis-server.
#
# zarisd reads the clock once per command: within a batch of requests
# (one receive), a command starts at the instant the previous one ended
# (commands/client.h clock_chained). These stories pin down what that
# must never change: the instant a command sees is its own, so
#   - a key whose TTL ran out while the connection was idle is expired
#     for the first command of the next batch (also when the previous
#     batch ended with an unknown command or an error);
#   - a key whose TTL runs out during a long command of a pipeline
#     (DEBUG SLEEP) is expired for the commands after it;
#   - the idle time between batches is nobody's duration: SLOWLOG stays
#     empty under slowlog-log-slower-than 100 ms, and GET's usec in INFO
#     commandstats stays far below one idle gap.
# Each story runs on redis-server, zarisd (io_uring where available) and
# zarisd on epoll, and the replies must be the same.
#
# Timing: TTLs of 200-300 ms, idle gaps of 600 ms: the margins are
# generous; no assertion on speed.

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from zaris import *  # noqa: E402,F403
import zaris  # noqa: E402
from zaris_sys import start_server  # noqa: E402

IDLE = 0.6
SLOWER_THAN_US = 100000


def commandstat_usec(cl, name):
    text = cl.call("INFO", "commandstats").value
    text = text.decode() if isinstance(text, bytes) else text
    for line in text.split("\r\n"):
        if line.startswith("cmdstat_%s:" % name):
            fields = dict(kv.split("=") for kv in line.split(":", 1)[1].split(","))
            return int(fields["usec"]), int(fields["calls"])
    return None, 0


def story(srv):
    """Replies of every step, as Python values (compared across servers)."""
    out = []
    with srv.client() as cl:
        out.append(cl.call("CONFIG", "SET", "slowlog-log-slower-than", str(SLOWER_THAN_US)).py())
        out.append(cl.call("SLOWLOG", "RESET").py())
        out.append(cl.call("CONFIG", "RESETSTAT").py())
        # 1. a batch of writes, idle past the TTL, then a read as the first
        #    request of the next batch
        out.append([r.py() for r in cl.pipeline([("SET", "ttl:a", "v", "PX", "300"),
                                                 ("SET", "plain", "v"), ("GET", "plain")])])
        time.sleep(IDLE)
        out.append([r.py() for r in cl.pipeline([("GET", "ttl:a"), ("PTTL", "ttl:a"),
                                                 ("EXISTS", "ttl:a")])])
        # 2. the batch ends with an unknown command and a wrong arity
        out.append([r.is_error() for r in cl.pipeline([("SET", "ttl:b", "v", "PX", "300"),
                                                       ("NOSUCHCOMMAND", "x"), ("GET",)])])
        time.sleep(IDLE)
        out.append(cl.call("GET", "ttl:b").py())
        # 3. the TTL runs out during a long command inside one pipeline
        out.append([r.py() for r in cl.pipeline([("SET", "ttl:c", "v", "PX", "200"),
                                                 ("DEBUG", "SLEEP", "0.4"), ("GET", "ttl:c"),
                                                 ("EXISTS", "ttl:c")])])
        # 4. idle, then a read: no duration includes an idle gap
        time.sleep(IDLE)
        out.append(cl.call("GET", "plain").py())
        slow = cl.call("SLOWLOG", "GET", "10").py()
        # DEBUG SLEEP 0.4 is the one slow command, on both servers
        out.append(sorted(e[3][0].decode().lower() for e in slow))
        usec, calls = commandstat_usec(cl, "get")
        ok(usec is not None and usec < SLOWER_THAN_US,
           "%s: GET's usec over %d calls is %s, below one idle gap" % (srv.name, calls, usec))
    return out


servers = [("redis-server", dict(kind="redis", extra=["--enable-debug-command", "local"])),
           ("zarisd", dict(kind="zarisd", threads=2, extra=["--enable-debug-command", "local"]))]
if zaris.io_uring_available():
    servers.append(("zarisd epoll", dict(kind="zarisd", threads=2, io_backend="epoll",
                                         extra=["--enable-debug-command", "local"])))
plan(2 * len(servers) - 1)

results = {}
for name, kw in servers:
    srv = start_server(name=name, **kw)
    try:
        results[name] = story(srv)
    finally:
        srv.stop()
        srv.cleanup()

want = results["redis-server"]
for name, _ in servers[1:]:
    got = results[name]
    if not ok(got == want, "%s: the same replies as redis-server" % name):
        for i, (g, w) in enumerate(zip(got, want)):
            if g != w:
                diag("step %d: got %r, expected %r" % (i, g, w))
