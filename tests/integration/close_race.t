#!/usr/bin/python3
"""Clients that close right after sending: the reply is queued for the end
of the loop turn while the same turn sees the peer's close. The connection
must be freed only once nothing refers to it (an ASan build of zarisd
reports a use-after-free otherwise; the plain build may crash). Both
backends, with several commands pipelined and with a big reply that cannot
be sent at once.

The server first works through the closed clients' requests (as
redis-server does: they were read before the close was seen), copying
every big reply; under a sanitizer that copying runs tens of times slower
(fresh shadow memory for every reply), so the big value is smaller there
and the first PING afterwards waits longer than a client's default."""
import os
import socket
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from zaris import *  # noqa: F401,F403
from zaris import SLOW  # noqa: E402

BIG = sweep_size("ZARIS_CLOSE_RACE_BIG", 4 << 20, 1 << 20)
# a new connection's send buffer starts at tcp_wmem's middle value: a reply
# larger than it cannot be sent in one write
with open("/proc/sys/net/ipv4/tcp_wmem") as f:
    initial_sndbuf = int(f.read().split()[1])
ok(BIG > 4 * initial_sndbuf, "the big reply (%d bytes) exceeds a new connection's send buffer (%d)" % (BIG, initial_sndbuf))

backends = ["epoll"] + (["uring"] if io_uring_available() else [])
for backend in backends:
    srv = start_zarisd(threads=2, io_backend=backend)
    with srv.client() as c:
        c.call("SET", "big", "x" * BIG)
    payloads = [
        b"PING\r\n",
        b"SET k v\r\nGET k\r\nINCR n\r\n" * 50,
        b"GET big\r\nGET big\r\n",
    ]
    for i in range(600):
        s = socket.create_connection(("127.0.0.1", srv.port))
        s.sendall(payloads[i % len(payloads)])
        if i % 2:
            # RST instead of FIN: the next send fails
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        s.close()
    with srv.client(timeout=30.0 * SLOW) as c:
        ok(c.call("PING").raw == b"+PONG\r\n", "%s: server answers after 600 clients closed mid-reply" % backend)
        ok(c.callv("DBSIZE") >= 2, "%s: data intact" % backend)
    ok(srv.alive(), "%s: process alive" % backend)
    srv.stop()
    log = srv.log_tail(200000)
    ok("Sanitizer" not in log and "runtime error" not in log, "%s: no sanitizer report in the log" % backend)
done_testing()
