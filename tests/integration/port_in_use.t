#!/usr/bin/python3
# port_in_use.t — a zarisd started on a port something already listens on
# refuses to start, as redis-server does ("Could not create server TCP
# listening socket ...: Address already in use", exit 1), whether that
# something is redis-server or another zarisd, on the RESP port or on the
# native port. Every worker binds its own SO_REUSEPORT listener, and two
# zarisd of the same user used to share the port that way: the second
# started and took about half of the first one's new connections. The first
# server keeps answering every new connection alone.
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from zaris import *  # noqa: E402,F403
from zaris import HOST, SLOW  # noqa: E402

WAIT = 10.0 * SLOW  # a refusing server exits at once
MSG = "Could not create server TCP listening socket"


def zarisd_argv(port, extra=()):
    return [zarisd_path(), "--port", str(port), "--bind", HOST, "--threads", "2", "--save", "",
            "--appendonly", "no"] + list(extra)


def refused(what, argv, want_rc):
    rc, out = run_until_exit(argv, WAIT)
    ok(rc == want_rc and MSG in out and "Address already in use" in out,
       "%s: exits %s naming the address in use (%s, %r)" % (what, want_rc, rc, out.strip()[-160:]))


def answers_alone(srv, n=40):
    """Whether N new connections to SRV all reach it (a key only it holds)."""
    c = srv.client()
    c.call("SET", "port-in-use-owner", "first")
    c.close()
    got = []
    for _ in range(n):
        c = srv.client()
        got.append(c.call("GET", "port-in-use-owner").value)
        c.close()
    return got.count(b"first") == n


redis = start_redis()
rc, out = run_until_exit(["/usr/bin/redis-server", "--port", str(redis.port), "--bind", HOST, "--save", ""], WAIT)
ok(rc == 1 and "Address already in use" in out, "redis-server on its own port a second time exits 1 (%s)" % rc)
refused("zarisd on redis-server's port", zarisd_argv(redis.port), 1)

for backend in ["epoll"] + (["uring"] if io_uring_available() else []):
    first = start_zarisd(threads=2, io_backend=backend, native=True, extra=["--save", ""])
    refused("zarisd (%s) on another zarisd's RESP port" % backend,
            zarisd_argv(first.port, ["--io-backend", backend]), 1)
    refused("zarisd (%s) on another zarisd's native port" % backend,
            zarisd_argv(free_port(), ["--io-backend", backend, "--native-port", str(first.native_port)]), 1)
    ok(answers_alone(first), "the first zarisd (%s) answers every new connection alone" % backend)
    first.stop()
redis.stop()
done_testing()
