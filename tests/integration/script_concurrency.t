#!/usr/bin/python3
# script_concurrency.t — scripts on a zarisd with 2 workers.
#
# Overlap: two scripts on disjoint keys (in different shards), sent on
# connections of different workers. Each writes its own declared key, then
# polls INFO keyspace (no key, no lock) until the database holds both keys
# or a bound on its iterations runs out. Each can see the other's key count
# only while both run: a server that ran them one after the other makes the
# first give up (redis-server, single-threaded, does: checked too, so the
# test can tell the two apart). No wall clock is asked. On keys of one shard
# (one hash tag) they must not overlap: one gives up, the other then sees
# both keys.
#
# Counter: a read-modify-write script (GET, then SET of the value plus one:
# exact only when each script runs alone on its key) run 100,000 times by
# EVALSHA from 8 clients (SCRIPT LOAD on one connection): the key ends at
# 100,000, and the values the scripts returned are 1..100,000 each once,
# increasing on every client.
#
# Env: ZARIS_SCRIPT_RUNS (default 100000; 20000 under a sanitizer).

import binascii
import os
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from zaris import *  # noqa: E402,F403

SPIN_BOUND = 300000
# scripts on one shard do not overlap: the first gives up after this many
# rounds and only then does the second start; small, so that under a
# sanitizer the two run within the clients' timeout (300,000 INFO calls
# each took longer than 40 s under ThreadSanitizer, and 20,000 took more
# than 40 s there under make tsan's parallel load: a quarter of it under a
# sanitizer, and the clients wait up to 120 s x SLOW)
SPIN_BOUND_SERIAL = 5000 if os.environ.get("ZARIS_SAN") else 20000
SPIN_WAIT = 120.0 * SLOW
SPIN = """
redis.call('SET', KEYS[1], ARGV[1])
local want = tonumber(ARGV[2])
for i = 1, tonumber(ARGV[3]) do
  local info = redis.call('INFO', 'keyspace')
  local n = tonumber(string.match(info, 'db0:keys=(%d+)') or '0')
  if n >= want then return {'saw the other', i} end
end
return {'gave up', 0}
"""
COUNTER = """
local v = tonumber(redis.call('GET', KEYS[1]) or '0') + 1
redis.call('SET', KEYS[1], v)
return v
"""


def slot(key):
    k = key.encode()
    s = k.find(b"{")
    if s >= 0:
        e = k.find(b"}", s + 1)
        if e > s + 1:
            k = k[s + 1:e]
    return binascii.crc_hqx(k, 0) % 16384


def key_in_half(prefix, upper):
    """A key whose slot is in the lower or upper half of the 16384: two such
    keys are in different shards for any shard-bits above 0."""
    for i in range(1000):
        k = "%s:%d" % (prefix, i)
        if (slot(k) >= 8192) == upper:
            return k
    raise RuntimeError("no key found")


def overlap(srv, same_shard=False):
    """Runs the two spinning scripts at once (on keys of one shard with
    SAME_SHARD); returns their replies."""
    admin = srv.client()
    admin.call("FLUSHALL")
    r = admin.call("CONFIG", "SET", "busy-reply-threshold", "600000")
    if r.is_error():
        raise RuntimeError("CONFIG SET busy-reply-threshold: %s" % r.value)
    a = srv.client(timeout=SPIN_WAIT)
    b = client_on_other_worker(srv, a)
    b.settimeout(SPIN_WAIT)
    if same_shard:
        ka, kb = "{spin}a", "{spin}b"
    else:
        ka, kb = key_in_half("spin", False), key_in_half("spin", True)
    bound = SPIN_BOUND_SERIAL if same_shard else SPIN_BOUND
    a.send("EVAL", SPIN, "1", ka, "a", "2", str(bound))
    b.send("EVAL", SPIN, "1", kb, "b", "2", str(bound))
    ra, rb = a.read_reply().py(), b.read_reply().py()
    for c in (a, b, admin):
        c.close()
    return ra, rb


def counter(srv, runs, nclients=8, batch=100):
    """RUNS counter scripts from NCLIENTS clients; returns (final value,
    every returned value, whether each client's values increased, errors)."""
    admin = srv.client()
    admin.call("DEL", "counter")
    sha = admin.callv("SCRIPT", "LOAD", COUNTER)
    if isinstance(sha, bytes):
        sha = sha.decode()
    seen = [[] for _ in range(nclients)]
    errors = []

    def run(i):
        try:
            with srv.client(timeout=60 * SLOW) as c:
                left = runs // nclients + (1 if i < runs % nclients else 0)
                while left > 0:
                    n = min(batch, left)
                    for r in c.pipeline([("EVALSHA", sha, "1", "counter")] * n):
                        if r.is_error():
                            errors.append(r.value)
                        else:
                            seen[i].append(r.value)
                    left -= n
        except Exception as e:  # noqa: BLE001 -- reported as a failure below
            errors.append("client %d: %r" % (i, e))

    threads = [threading.Thread(target=run, args=(i,)) for i in range(nclients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    final = admin.call("GET", "counter").value
    admin.close()
    values = [v for s in seen for v in s]
    increasing = all(all(x < y for x, y in zip(s, s[1:])) for s in seen)
    return final, values, increasing, errors


def main():
    runs = sweep_size("ZARIS_SCRIPT_RUNS", 100000, 20000)
    z = start_zarisd(threads=2)
    require_eval(z)
    ra, rb = overlap(z)
    ok(isinstance(ra, list) and ra[0] == b"saw the other",
       "overlap: the script on the first worker saw the other's key while it ran (%r)" % (ra,))
    ok(isinstance(rb, list) and rb[0] == b"saw the other",
       "overlap: the script on the second worker saw the other's key while it ran (%r)" % (rb,))
    ra, rb = overlap(z, same_shard=True)
    ok(sorted([ra[0], rb[0]]) == [b"gave up", b"saw the other"],
       "no overlap on one shard: one script gives up, the other then sees both keys (%r, %r)" % (ra, rb))
    ra, rb = overlap(start_redis())
    ok(ra == [b"gave up", 0] and isinstance(rb, list) and rb[0] == b"saw the other",
       "overlap: redis-server runs them one after the other, so the first gives up (%r, %r)" % (ra, rb))

    final, values, increasing, errors = counter(z, runs)
    is_(errors[:5], [], "counter: no error replies")
    is_(final, str(runs).encode(), "counter: %d scripts from 8 clients end exact" % runs)
    ok(sorted(values) == list(range(1, runs + 1)), "counter: the scripts returned 1..%d, each once" % runs)
    ok(increasing, "counter: every client's values increase")
    return done_testing()


if __name__ == "__main__":
    sys.exit(main())
