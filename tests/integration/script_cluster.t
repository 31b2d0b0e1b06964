#!/usr/bin/python3
# script_cluster.t — scripts in cluster mode (one zarisd owning every slot,
# its topology pushed with CLUSTER SETTOPOLOGY): the declared keys must
# share a slot (-CROSSSLOT, the dispatcher's check, as Redis Cluster's);
# a script's calls must stay in that slot ("Script attempted to access
# keys that do not hash to the same slot", Redis's scriptVerifyClusterState)
# unless flagged allow-cross-slot-keys; a call on a slot another node owns
# is refused ("non local key"); the no-cluster flag refuses the script. The texts are Redis 7.0's (script.c, cluster.c).

import hashlib
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from zaris import *  # noqa: E402,F403

srv = start_zarisd(threads=2, extra=["--cluster-enabled", "yes"])
c = srv.client()
nid = hashlib.sha1(b"script-cluster/n0").hexdigest()
doc = "epoch 1\ncluster script-cluster\nmyself %s\nnode %s n0 127.0.0.1 %d primary 0-16383\n" % (nid, nid, srv.port)
is_(c.call("CLUSTER", "SETTOPOLOGY", doc).raw, b"+OK\r\n", "one node owning every slot")

is_(c.call("EVAL", "return redis.call('set', KEYS[1], KEYS[2])", 2, "{t}a", "{t}b").raw, b"+OK\r\n",
    "declared keys of one slot")
is_(c.call("EVAL", "return 1", 2, "a", "b").raw, b"-CROSSSLOT Keys in request don't hash to the same slot\r\n",
    "declared keys of two slots: CROSSSLOT")
r = c.call("EVAL", "#!lua flags=allow-undeclared-keys\nreturn redis.call('get', 'other')", 1, "{t}a")
ok(r.is_error() and str(r.value).startswith(
    "ERR Script attempted to access keys that do not hash to the same slot script: "), "a call outside the slot: %s" % r.value)
r = c.call("EVAL", "#!lua flags=allow-undeclared-keys\nredis.call('get', 'x1'); return redis.call('get', 'x2')", 0)
ok(r.is_error() and "do not hash to the same slot" in str(r.value), "no declared key: the first call sets the slot")
r = c.call("EVAL", "#!lua flags=allow-undeclared-keys,allow-cross-slot-keys\n"
           "redis.call('set', 'x1', '1'); return redis.call('set', 'x2', '2')", 0)
is_(r.raw, b"+OK\r\n", "allow-cross-slot-keys: calls may use other slots")
is_(c.call("EVAL", "#!lua flags=no-cluster\nreturn 1", 0).raw,
    b"-ERR Can not run script on cluster, 'no-cluster' flag is set.\r\n", "no-cluster refused")

# half the slots to another node (never contacted: there is no bus)
nid1 = hashlib.sha1(b"script-cluster/n1").hexdigest()
doc2 = ("epoch 2\ncluster script-cluster\nmyself %s\nnode %s n0 127.0.0.1 %d primary 0-8191\n"
        "node %s n1 127.0.0.1 1 primary 8192-16383\n" % (nid, nid, srv.port, nid1))
is_(c.call("CLUSTER", "SETTOPOLOGY", doc2).raw, b"+OK\r\n", "half the slots move to another node")
mine = next(k for k in ("a%d" % i for i in range(1000)) if c.call("CLUSTER", "KEYSLOT", k).py() < 8192)
theirs = next(k for k in ("b%d" % i for i in range(1000)) if c.call("CLUSTER", "KEYSLOT", k).py() >= 8192)
is_(c.call("EVAL", "return 1", 1, theirs).raw[:7], b"-MOVED ", "a declared key of the other node: MOVED")
r = c.call("EVAL", "#!lua flags=allow-undeclared-keys,allow-cross-slot-keys\nreturn redis.call('get', '%s')" % theirs,
           1, mine)
ok(r.is_error() and str(r.value).startswith("ERR Script attempted to access a non local key in a cluster node script: "),
   "a call on the other node's key: %s" % r.value)
sys.exit(done_testing())
