#!/usr/bin/python3
# glob_fuzz.t — Redis's glob patterns, compared with redis-server: random
# patterns over the alphabet "ab-^]\[*?xA" (stars, classes, ranges,
# negation, escapes, unterminated brackets) against the same 300 random
# keys of up to five such characters, the empty key among them. KEYS and
# SCAN MATCH must return the same keys as redis-server (sorted: their order
# is Redis's own), and a lone "*" must still return every key.
#
# It found one difference: zarisd let "*" (and "**") match the empty string,
# which Redis's stringmatchlen never does. KEYS and SCAN shortcut a lone "*"
# before matching, so there it only showed with "**". But a PSUBSCRIBE "*"
# got messages published to the channel "" — redis-server delivers none.

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from zaris import *  # noqa: E402,F403

PATTERNS = 2000
ALPHABET = "ab-^]\\[*?xA"


def scan_all(c, pattern):
    cursor, keys = b"0", []
    for _ in range(10000):  # bounded: a full SCAN of 300 keys takes a few dozen calls
        cursor, batch = c.call("SCAN", cursor, "MATCH", pattern, "COUNT", "50").py()
        keys += batch
        if cursor == b"0":
            break
    return sorted(set(keys))


rng = seeded_rng()
plan(5)
redis = start_redis()
zaris = start_zarisd(threads=2)
rc, zc = redis.client(), zaris.client()
keys = {""} | {"".join(rng.choice(ALPHABET) for _ in range(rng.randrange(1, 6))) for _ in range(300)}
for k in keys:
    rc.call("SET", k, "1")
    zc.call("SET", k, "1")
is_(zc.call("DBSIZE").raw, rc.call("DBSIZE").raw, "the same %d keys in both" % len(keys))

kdiff, sdiff = [], []
for i in range(PATTERNS):
    pat = "".join(rng.choice(ALPHABET) for _ in range(rng.randrange(0, 8)))
    want, got = sorted(rc.call("KEYS", pat).py()), sorted(zc.call("KEYS", pat).py())
    if got != want:
        kdiff.append((pat, sorted(set(want) - set(got))[:5], sorted(set(got) - set(want))[:5]))
    if i % 10 == 0:
        want, got = scan_all(rc, pat), scan_all(zc, pat)
        if got != want:
            sdiff.append((pat, sorted(set(want) - set(got))[:5], sorted(set(got) - set(want))[:5]))
for pat, only_redis, only_zaris in (kdiff + sdiff)[:5]:
    diag("pattern %r: only redis-server %r, only zarisd %r" % (pat, only_redis, only_zaris))
is_(len(kdiff), 0, "%d random patterns: KEYS returns redis-server's keys" % PATTERNS)
is_(len(sdiff), 0, "%d of them: SCAN MATCH returns redis-server's keys" % (PATTERNS // 10))
is_(len(zc.call("KEYS", "*").py()), len(keys), "KEYS * returns every key, the empty one too")

# the empty channel and a PSUBSCRIBE "*": no delivery, as redis-server
got = []
for srv in (redis, zaris):
    sub, pub = srv.client(), srv.client()
    sub.call("PSUBSCRIBE", "*")
    got.append((pub.call("PUBLISH", "", "m").raw, pub.call("PUBLISH", "a", "m").raw))
    sub.close()
    pub.close()
is_(got[1], got[0], "PUBLISH to \"\" and to \"a\" with a PSUBSCRIBE \"*\": the receiver counts of "
    "redis-server (%r)" % (got[0],))
rc.close()
zc.close()
sys.exit(done_testing())
