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
#
# A second sweep, in database 1, adds bytes over 0x7f, DEL and NUL to the
# alphabet: redis-server compares them as (x86-64) signed chars, so the
# range [\xe9-\x7f] is [-23, 127] and holds 'a' but not \xff. zarisd
# compared unsigned bytes and differed on such ranges.

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from zaris import *  # noqa: E402,F403

PATTERNS = 2000
ALPHABET = "ab-^]\\[*?xA"
BYTES = [b"a", b"b", b"-", b"^", b"]", b"\\", b"[", b"*", b"?", b"A", b"\xe9", b"\xff", b"\x00", b"\x7f"]


def scan_all(c, pattern):
    cursor, keys = b"0", []
    for _ in range(10000):  # bounded: a full SCAN of 300 keys takes a few dozen calls
        cursor, batch = c.call("SCAN", cursor, "MATCH", pattern, "COUNT", "50").py()
        keys += batch
        if cursor == b"0":
            break
    return sorted(set(keys))


rng = seeded_rng()
plan(6)
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

# bytes over 0x7f, NUL and DEL, in database 1
for c in (rc, zc):
    c.call("SELECT", "1")
bkeys = {b"".join(rng.choice(BYTES) for _ in range(rng.randrange(1, 6))) for _ in range(300)}
for k in bkeys:
    rc.call("SET", k, "1")
    zc.call("SET", k, "1")
bdiff = []
for i in range(PATTERNS):
    pat = b"".join(rng.choice(BYTES) for _ in range(rng.randrange(0, 8)))
    want, got = sorted(rc.call("KEYS", pat).py()), sorted(zc.call("KEYS", pat).py())
    if got != want:
        bdiff.append((pat, sorted(set(want) - set(got))[:5], sorted(set(got) - set(want))[:5]))
for pat, only_redis, only_zaris in bdiff[:5]:
    diag("pattern %r: only redis-server %r, only zarisd %r" % (pat, only_redis, only_zaris))
is_(len(bdiff), 0, "%d random patterns with bytes over 0x7f, NUL and DEL: KEYS as redis-server" % PATTERNS)
for c in (rc, zc):
    c.call("SELECT", "0")

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
