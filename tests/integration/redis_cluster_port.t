#!/usr/bin/python3
# redis_cluster_port.t — the harness's cluster-mode redis-server starts on
# any free port.
#
# A redis-server with cluster-enabled yes also listens on a bus port, by
# default its port + 10000, and exits at start when that passes 65535.  The
# kernel hands out free ports up to 60999, so a comparison test that drew one
# above 55535 for every attempt failed to start its reference server (CI,
# cluster_compare.t: "redis1 exited with 1 during start").  Here the port is
# forced above 55535: the server must start, in cluster mode, with a bus port
# that is not port + 10000.

import os
import socket
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import zaris  # noqa: E402
from zaris import *  # noqa: E402,F403

plan(4)


def free_high_port(lo=55536, hi=60999):
    """A port above 55535 that nothing holds on 127.0.0.1 (bounded scan)."""
    for port in range(lo, hi + 1):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            s.bind((zaris.HOST, port))
            return port
        except OSError:
            continue
        finally:
            s.close()
    return None


high = free_high_port()
ok(high is not None, "a free port above 55535 to start on")
first = [high]
normal_free_port = zaris.free_port


def high_first():
    """The first port asked for is the high one, the rest as usual."""
    return first.pop() if first else normal_free_port()


zaris.free_port = high_first
try:
    srv = start_redis(extra=["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"],
                      name="redis-cluster-high", attempts=1)
except RuntimeError as e:
    ok(False, "the server took the high port")
    diag(str(e)[-600:])
    bail_out("no cluster-mode redis-server on a port above 55535")
finally:
    zaris.free_port = normal_free_port
is_(srv.port, high, "the server took the high port")
c = srv.client()
ok(b"cluster_enabled:1" in c.call("INFO", "cluster").value, "it runs in cluster mode")
bus = [r.value for r in c.call("CONFIG", "GET", "cluster-port").value]
ok(int(bus[1]) not in (0, high + 10000) and int(bus[1]) <= 65535,
   "its bus port %s is its own, not port + 10000" % bus[1].decode())
c.close()
done_testing()
