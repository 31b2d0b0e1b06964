#!/usr/bin/python3
# native_pause.t — CLIENT PAUSE WRITE in the middle of a native request:
# a request GET a, SET b, GET c sent while writes are paused gets GET a's
# result at once in a RESPONSE frame without LAST, SET b (and what follows
# it) only once the pause ends, in a second frame with LAST, each op
# answered exactly once and SET b applied exactly once; with native-rf1
# (requests of single-key ops run grouped by shard) the same. Then a
# pause that ends by its timeout resumes the held request too.

import os
import sys
import re
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from zaris import *  # noqa: E402,F403
from native import *  # noqa: E402,F403
import native as nw  # noqa: E402


def frames_until_last(n, fid, deadline):
    """Every RESPONSE frame of request FID up to the one with LAST."""
    out = []
    n.sock.settimeout(max(0.1, deadline - time.time()))
    while True:
        kind, flags, count, rid, payload = n.read_frame()
        assert kind == nw.RESPONSE and rid == fid, (kind, rid)
        out.append((flags & 1, decode_results(payload, count)))
        if flags & 1:
            return out


def held_read(n, timeout):
    """A frame that arrives within TIMEOUT, or None."""
    n.sock.settimeout(timeout)
    try:
        return n.read_frame()
    except (OSError, Closed):
        return None


plan(2 * 7 + 2)
for rf1 in (False, True):
    tag = "rf1" if rf1 else "in order"
    srv = start_native(extra=["--save", ""] + (["--native-rf1", "yes"] if rf1 else []))
    R = srv.client()
    R.call("SET", "a", "1")
    R.call("SET", "c", "3")
    n = native(srv)
    is_(R.call("CLIENT", "PAUSE", "100000", "WRITE").raw, b"+OK\r\n", "%s: CLIENT PAUSE WRITE" % tag)
    n.send_request([op_get("a"), op_set("b", "2"), op_get("c")], fid=9)
    first = held_read(n, 2.0 * SLOW)
    got = None
    if first:
        kind, flags, count, rid, payload = first
        got = (kind, flags & 1, rid, [(r.index, r.value.raw) for r in decode_results(payload, count)])
    is_(got, (nw.RESPONSE, 0, 9, [(0, b"$1\r\n1\r\n")]),
        "%s: GET a answered at once, in a frame without LAST" % tag)
    is_(R.call("EXISTS", "b").raw, b":0\r\n", "%s: SET b has not run during the pause" % tag)
    R.call("CLIENT", "UNPAUSE")
    rest = frames_until_last(n, 9, time.time() + 10.0 * SLOW)
    results = sorted((r.index, r.value.raw) for _, rs in rest for r in rs)
    is_(results, [(1, b"+OK\r\n"), (2, b"$1\r\n3\r\n")],
        "%s: after UNPAUSE SET b and GET c are answered once each, LAST on the final frame" % tag)
    is_(R.call("GET", "b").raw, b"$1\r\n2\r\n", "%s: SET b applied" % tag)
    stats = R.call("INFO", "commandstats").raw.decode()
    line = [x for x in stats.split("\r\n") if x.startswith("cmdstat_set:")]
    calls = line[0].split("calls=")[1].split(",")[0] if line else "?"
    is_(calls, "3", "%s: SET ran 3 times in all (2 over RESP, 1 native: none twice)" % tag)
    st = R.call("INFO", "stats").raw.decode()
    counts = tuple(re.search(r"^%s:(\d+)" % f, st, re.M).group(1) for f in ("total_native_requests", "total_native_ops"))
    is_(counts, ("1", "3"), "%s: INFO counts the held frame once: 1 request of 3 operations" % tag)
    if not rf1:
        # a pause that ends by its timeout
        R.call("CLIENT", "PAUSE", "300", "WRITE")
        n.send_request([op_incrby("ctr", 1)], fid=10)
        rest = frames_until_last(n, 10, time.time() + 10.0 * SLOW)
        is_([(r.index, r.value.raw) for _, rs in rest for r in rs], [(0, b":1\r\n")],
            "a pause that times out: the held INCRBY runs then")
        is_(R.call("GET", "ctr").raw, b"$1\r\n1\r\n", "... once")
    n.close()
    R.close()
    srv.stop()
done_testing()
