#!/usr/bin/python3
"""maxmemory: with allkeys-lru, writing 1 GiB of values into a 64 MiB limit
keeps the server answering, its used_memory at the limit and its RSS near
it; with noeviction a write over the limit gets Redis's -OOM error while
reads and deletes still work. Run for every eviction policy on a smaller
load: each evicts and stays under the limit."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from zaris import *  # noqa: F401,F403

MB = 1024 * 1024
LIMIT = 64 * MB
VALUE = b"v" * (8 * 1024)
TOTAL = 1024 * MB


def info(c):
    text = c.callv("INFO", "all")
    if isinstance(text, bytes):
        text = text.decode()
    out = {}
    for line in text.splitlines():
        if ":" in line and not line.startswith("#"):
            k, v = line.split(":", 1)
            out[k] = v
    return out


def write_load(c, nbytes, prefix, ttl_every=0):
    """Writes nbytes of VALUE in pipelines of 256 SETs; returns the replies
    that were not +OK."""
    bad = []
    n = nbytes // len(VALUE)
    i = 0
    while i < n:
        batch = []
        for j in range(i, min(i + 256, n)):
            key = "%s:%d" % (prefix, j)
            if ttl_every and j % ttl_every == 0:
                batch.append(("SET", key, VALUE, "EX", "3600"))
            else:
                batch.append(("SET", key, VALUE))
        for r in c.pipeline(batch):
            if r.raw != b"+OK\r\n":
                bad.append(r.raw)
        i += 256
    return bad


srv = start_zarisd(threads=2, extra=["--maxmemory", "64mb", "--maxmemory-policy", "allkeys-lru"])
with srv.client(timeout=60) as c:
    bad = write_load(c, TOTAL, "big")
    ok(not bad, "1 GiB of SETs under allkeys-lru all answered +OK (%d not)" % len(bad))
    ok(c.call("PING").raw == b"+PONG\r\n", "server still answers PING")
    inf = info(c)
    used, rss = int(inf["used_memory"]), srv.rss_kb() * 1024
    evicted, keys = int(inf["evicted_keys"]), c.callv("DBSIZE")
    diag("allkeys-lru after 1 GiB written: used_memory=%d (%.1f MiB) rss=%.1f MiB evicted_keys=%d dbsize=%d"
         % (used, used / MB, rss / MB, evicted, keys))
    ok(used <= LIMIT * 1.05, "used_memory %.1f MiB stays at the 64 MiB limit" % (used / MB))
    if os.environ.get("ZARIS_SAN"):
        # sanitizer builds use libc malloc with redzones and quarantine:
        # RSS says nothing about zarisd's own accounting there
        ok(True, "RSS check skipped in a %s build (RSS %.1f MiB)" % (os.environ["ZARIS_SAN"], rss / MB))
    else:
        ok(rss <= LIMIT * 2, "RSS %.1f MiB stays near the limit (under 2x)" % (rss / MB))
    ok(evicted > 0 and keys < TOTAL // len(VALUE), "keys were evicted (%d) and dbsize %d < written" % (evicted, keys))
    # LRU keeps what was touched last: the latest keys are there
    last = TOTAL // len(VALUE) - 1
    ok(c.call("EXISTS", "big:%d" % last).raw == b":1\r\n", "the most recently written key survived")

    ok(c.call("CONFIG", "SET", "maxmemory-policy", "noeviction").raw == b"+OK\r\n", "switch to noeviction")
    # As in Redis, a write is refused while used_memory is over the limit
    # when it arrives. The load left it about one value over, but background
    # work since (active rehashing frees a resized table's old half) may
    # have brought it just under, so the first writes may still fit; within
    # 200 values (1.6 MB) one must be refused.
    used_before = int(info(c)["used_memory"])
    accepted, r = 0, None
    while accepted < 200:
        r = c.call("SET", "one-more:%d" % accepted, VALUE)
        if r.raw != b"+OK\r\n":
            break
        accepted += 1
    diag("noeviction: used_memory %d before, %d SETs accepted before the first refusal" % (used_before, accepted))
    is_(r.raw, b"-OOM command not allowed when used memory > 'maxmemory'.\r\n", "noeviction: SET answers Redis's OOM error")
    ok(c.call("GET", "big:%d" % last).raw.startswith(b"$8192\r\n"), "noeviction: reads still work")
    ok(c.call("DEL", "big:%d" % last).raw == b":1\r\n", "noeviction: DEL still works")
    ok(c.call("PING").raw == b"+PONG\r\n", "server still up")
srv.stop()

policies = ["allkeys-lru", "allkeys-lfu", "allkeys-random", "volatile-lru", "volatile-lfu",
            "volatile-random", "volatile-ttl"]
for pol in policies:
    s = start_zarisd(threads=2, extra=["--maxmemory", "16mb", "--maxmemory-policy", pol])
    with s.client(timeout=60) as c:
        volatile = pol.startswith("volatile")
        bad = write_load(c, 64 * MB, "k", ttl_every=1 if volatile else 0)
        inf = info(c)
        used, evicted = int(inf["used_memory"]), int(inf["evicted_keys"])
        ok(not bad and evicted > 0 and used <= 16 * MB * 1.1,
           "%s: 64 MiB written into 16 MiB: all +OK, evicted %d, used_memory %.1f MiB"
           % (pol, evicted, used / MB))
        if volatile:
            # keys without a TTL are never evicted by volatile-* policies
            c.call("SET", "persistent", "x")
            write_load(c, 32 * MB, "more", ttl_every=1)
            ok(c.call("GET", "persistent").raw == b"$1\r\nx\r\n", "%s: a key without TTL is kept" % pol)
    s.stop()
done_testing()
