#!/usr/bin/python3
# cluster_local_push.t — CLUSTER SETTOPOLOGY is taken only from a local
# connection (the topology contract): a zarisd in a private network
# namespace a, bound to loopback and to a's veth address, refuses it from a
# client in namespace b (also after AUTH) and from a client of a that
# connects to a's own 10.x address, with the contract's text and nothing
# changed; loopback is served, after AUTH when requirepass is set. Skips
# when namespaces cannot be made (not root), as netns.t.

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from zaris import *  # noqa: E402,F403
import zaris  # noqa: E402
from zaris_sys import NetnsPair, NetnsUnavailable, inside, start_server  # noqa: E402

W = getattr(zaris, "SLOW", 1.0)
REFUSED = "ERR CLUSTER SETTOPOLOGY is accepted only from a local connection"
PW = "pw-cluster"

try:
    pair = NetnsPair()
except NetnsUnavailable as e:
    skip_all("cannot create a network namespace (ip netns add: %s)" % e)


def doc(port, myid):
    return ("epoch 1\ncluster c\nmyself %s\nnode %s a 127.0.0.1 %d primary 0-16383\n" % (myid, myid, port))


for auth in (False, True):
    extra = ["--cluster-enabled", "yes", "--bind", "127.0.0.1 %s" % pair.addr_a, "--protected-mode", "no"]
    if auth:
        extra += ["--requirepass", PW]
    with inside(pair.a):
        srv = start_server("zarisd", extra=extra, threads=2, name="zarisd-auth%d" % auth)
        lc = srv.client(timeout=5 * W)
        own = Client(srv.port, host=pair.addr_a, timeout=5 * W)
    with inside(pair.b):
        rc = Client(srv.port, host=pair.addr_a, timeout=5 * W)
    tag = "requirepass: " if auth else ""
    if auth:
        for c in (lc, own, rc):
            c.call("AUTH", PW)
    myid = lc.call("CLUSTER", "MYID").py().decode()
    d = doc(srv.port, myid)
    is_(rc.call("CLUSTER", "SETTOPOLOGY", d).py(), REFUSED, tag + "a client from another namespace is refused")
    is_(own.call("CLUSTER", "SETTOPOLOGY", d).py(), REFUSED, tag + "a client on the server's own 10.x address is refused")
    is_(lc.call("CLUSTER", "TOPOLOGY").py(), None, tag + "nothing changed")
    if auth:
        with inside(pair.a):
            anon = srv.client(timeout=5 * W)
        ok(anon.call("CLUSTER", "SETTOPOLOGY", d).py().startswith("NOAUTH"), "requirepass: loopback needs AUTH first")
        anon.close()
    is_(lc.call("CLUSTER", "SETTOPOLOGY", d).py(), "OK", tag + "loopback is served")
    is_(rc.call("CLUSTER", "TOPOLOGY").py(), d.encode(), tag + "and anyone may read it back")
    for c in (lc, own, rc):
        c.close()
    srv.cleanup()
done_testing()
