#!/usr/bin/python3
# repl_obuf_limit.t — client-output-buffer-limit's replica class decides
# how far a replica may fall behind, as in Redis: a primary never waits for
# a replica that stops reading, it drops it once it is more than <hard>
# bytes behind, or more than <soft> for <seconds>; the replica then
# reconnects and resyncs. The sender takes what it sends next in chunks,
# so what a stopped replica has not read stays in the stream's ring where
# the limit sees it (it took everything at once, and the limit saw
# nothing of what waited in its buffer).
#
#   * CONFIG GET shows the replica class as set; the default is Redis's
#     "slave 268435456 67108864 60".
#   * hard 8mb: the replica is stopped (SIGSTOP); the primary takes the
#     limit's 8 MB plus what the kernel can hold of the link of writes
#     without waiting, logs that it dropped the replica and shows
#     connected_slaves:0; after SIGCONT the replica syncs again and its
#     keyspace is the primary's.
#   * soft 4mb for 2 s (hard 0): the same with 4 MB plus the kernel's
#     share; the drop comes only after the 2 s, with its own log line.
#
# What the kernel holds of a link is not behind in the stream: the stopped
# replica's receive buffer (autotuned up to tcp_rmem's maximum, which the
# full sync before may well have reached) and the primary's send buffer
# (tcp_wmem's), plus the sender's 1 MB chunk. The writes are sized from
# those maxima, so that more than the limit is left in the stream however
# far the buffers grew (fixed 24 MB with a 32 MB tcp_rmem: a receive
# buffer autotuned past 16 MB left less than the soft 4 MB behind and the
# replica was never dropped, test 11 under TSan in CI).
# ZARIS_REPL_ENGINE=redis runs the same on redis-server pairs.

import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from zaris import *  # noqa: E402,F403
from repl import *  # noqa: E402,F403

VALUE = b"v" * 1000


def write_mb(cl, mb, prefix):
    """MB megabytes of 1 KB SETs through CL, pipelined; how long it took."""
    t0 = time.monotonic()
    n = mb * 1000
    for base in range(0, n, 500):
        for rep in cl.pipeline([("SET", "%s:%d" % (prefix, i), VALUE) for i in range(base, min(n, base + 500))]):
            if rep.is_error():
                raise RuntimeError("SET failed: %r" % rep)
    return time.monotonic() - t0


def kernel_max_mb(name):
    """The maximum of /proc/sys/net/ipv4/NAME (min default max), in MB, rounded up."""
    with open("/proc/sys/net/ipv4/" + name) as f:
        return -(-int(f.read().split()[2]) // (1 << 20))


def link_queues(port):
    """ss's view of the connections to PORT (the replica link's queues), for a diagnosis."""
    out = subprocess.run(["ss", "-tnmH", "state", "established", "( sport = :%d or dport = :%d )" % (port, port)],
                         capture_output=True, text=True)
    return out.stdout + out.stderr


# what the kernel can hold of a link, and the sender's chunk, with 2 MB to spare
HELD_MB = kernel_max_mb("tcp_rmem") + kernel_max_mb("tcp_wmem") + 1 + 2


def dropped(p, pc, text):
    """Whether the primary shows no replica and logs TEXT (zarisd)."""
    if info_int(pc, "connected_slaves") != 0:
        return False
    return is_redis() or text in p.log_tail(20000)


p = start_node("primary", threads=2)
pc = p.client()
default = pc.call("CONFIG", "GET", "client-output-buffer-limit").py()
ok(b"slave 268435456 67108864 60" in default[1], "the default replica class is Redis's (%r)" % default[1])

for what, limit, mb, text, wait_s in (
        ("hard 8mb", "replica 8mb 0 0", 8 + HELD_MB, "fell more than", 0),
        ("soft 4mb for 2s", "replica 0 4mb 2", 4 + HELD_MB, "stayed more than", 2)):
    is_(pc.call("CONFIG", "SET", "client-output-buffer-limit", limit).py(), "OK", "%s: CONFIG SET %s" % (what, limit))
    r = start_node("replica-" + what.split()[0], threads=2, replicaof=(HOST, p.port))
    rc = r.client()
    ok(wait_link(rc) and wait_for(lambda: replicas_online(info(pc)), 20), "%s: the replica is linked" % what) or \
        diag(sync_state(pc, rc))
    stop_process(r.pid)
    secs = write_mb(pc, mb, what.split()[0])
    ok(True, "%s: the primary took %d MB of writes with the replica stopped (%.1f s)" % (what, mb, secs))
    if wait_s:
        # it takes the soft limit's seconds to drop it
        gone = ok(wait_for(lambda: dropped(p, pc, text), 10 + wait_s), "%s: the replica is dropped after %d s" % (what, wait_s))
    else:
        gone = ok(wait_for(lambda: dropped(p, pc, text), 20), "%s: the replica is dropped" % what)
    if not gone:
        diag(p.log_tail(2000))
        diag(link_queues(p.port))
    os.kill(r.pid, signal.SIGCONT)
    ok(wait_in_sync(pc, rc, timeout=60), "%s: after SIGCONT the replica syncs again" % what) or diag(sync_state(pc, rc))
    a = dump(pc)
    lines = differences(a, dump(rc))
    if not ok(len(a) >= mb * 1000 and not lines, "%s: the replica's keyspace is the primary's (%d keys)" % (what, len(a))):
        for line in lines or ["only %d keys" % len(a)]:
            diag(line)
    rc.close()
    r.cleanup()
sys.exit(done_testing())
