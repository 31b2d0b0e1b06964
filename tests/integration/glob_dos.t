#!/usr/bin/python3
# glob_dos.t — glob patterns that backtrack exponentially (issue 13, the
# CVE-2022-36021 class): KEYS "a*a*…a*b" over a key of many 'a' and no 'b'.
# redis-server 7.0.15 answers in milliseconds (stringmatchlen stops retrying
# a '*' once a longer match failed); zarisd's old recursive matcher ran for
# hours on one worker while holding a shard lock, so other clients of that
# shard and of that worker stalled too.
#
# Every place a client's pattern is matched gets a pathological pattern:
# KEYS, SCAN/HSCAN/SSCAN/ZSCAN MATCH, PSUBSCRIBE + PUBLISH, PUBSUB CHANNELS
# and NUMPAT, CONFIG GET and COMMAND LIST FILTERBY PATTERN (those two match
# without case), with stars, classes and escapes. Each reply must come within
# a generous socket timeout and equal redis-server's. Then, while a KEYS of
# such a pattern runs over 4000 long keys, four other clients must get their
# PING and GET answered.
#
# On the old binary the first KEYS never answers: the test reports it and
# bails out (the helper then SIGKILLs the server).

import os
import socket
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from zaris import *  # noqa: E402,F403

WAIT = 30.0 * SLOW  # per reply; the fixed matcher needs milliseconds
LONG = "a" * 1000 + "1"  # 1000 'a' and no 'b'
REPRO = "a" * 60 + "1"


def stars(unit, n, tail):
    return unit * n + tail


# (pattern, what it is): each matched against every key, field, member
# and channel below
PATTERNS = [
    (stars("a*", 30, "b"), "the issue's reproducer, 30 stars"),
    (stars("a*", 100, "b"), "100 stars, no match"),
    (stars("a*", 100, "1"), "100 stars that match"),
    (stars("*a", 100, "*b"), "100 stars, leading star"),
    (stars("[a]*", 100, "[^a]b"), "classes and stars"),
    (stars("[a-b]*", 60, "[^1]"), "ranges and stars"),
    (stars("\\a*", 100, "\\b"), "escapes and stars"),
    (stars("?*", 100, "b"), "question marks and stars"),
    (stars("a*", 100, "\\"), "stars and a trailing backslash"),
]


def sorted_py(reply):
    v = reply.py()
    return sorted(v) if isinstance(v, list) else v


def call(c, *args):
    try:
        return c.call(*args)
    except socket.timeout:
        ok(False, "%s %r...: no answer within %.0f s" % (args[0], args[1][:40] if len(args) > 1 else "", WAIT))
        bail_out("the server is stuck in a glob pattern")


def scan_all(c, cmd, key, pattern):
    cursor, out = b"0", []
    for _ in range(1000):  # bounded: COUNT 1000 walks these in a few calls
        args = (cmd, key, cursor) if key else (cmd, cursor)
        cursor, batch = call(c, *args, "MATCH", pattern, "COUNT", "1000").py()
        out += batch
        if cursor == b"0":
            break
    return sorted(out)


def fill(c):
    for k in (REPRO, LONG, "A" * 1000 + "1", "a*" * 50, "a\\" * 50):
        c.call("SET", k, "v")
    c.call("HSET", "h", LONG, "1", REPRO, "2", "b", "3")
    c.call("SADD", "s", LONG, REPRO, "b")
    c.call("ZADD", "z", "1", LONG, "2", REPRO, "3", "b")


plan(1 + 2 * len(PATTERNS) + 5)
redis = start_redis()
zaris = start_zarisd(threads=2)
rc, zc = redis.client(timeout=WAIT), zaris.client(timeout=WAIT)
fill(rc)
fill(zc)
is_(zc.call("DBSIZE").raw, rc.call("DBSIZE").raw, "the same keys in both")

for pat, what in PATTERNS:
    want = [sorted_py(rc.call("KEYS", pat))] + [scan_all(rc, *a, pat) for a in
                                                (("SCAN", None), ("HSCAN", "h"), ("SSCAN", "s"), ("ZSCAN", "z"))]
    got = [sorted_py(call(zc, "KEYS", pat))] + [scan_all(zc, *a, pat) for a in
                                                (("SCAN", None), ("HSCAN", "h"), ("SSCAN", "s"), ("ZSCAN", "z"))]
    is_(got, want, "%s: KEYS, SCAN, HSCAN, SSCAN, ZSCAN MATCH answer as redis-server" % what)

# pub/sub: a subscriber of a 1001-byte channel, pattern subscribers of the
# pathological patterns, a PUBLISH to the long channel
for pat, what in PATTERNS:
    got = []
    for srv in (redis, zaris):
        sub, psub, pub = srv.client(timeout=WAIT), srv.client(timeout=WAIT), srv.client(timeout=WAIT)
        call(sub, "SUBSCRIBE", LONG)
        call(psub, "PSUBSCRIBE", pat)
        r = [call(pub, "PUBLISH", LONG, "m").raw, call(pub, "PUBLISH", REPRO, "m").raw,
             call(pub, "PUBSUB", "CHANNELS", pat).raw, call(pub, "PUBSUB", "NUMPAT").raw]
        for c in (sub, psub, pub):
            c.close()
        got.append(r)
    is_(got[1], got[0], "%s: PSUBSCRIBE+PUBLISH receivers, PUBSUB CHANNELS and NUMPAT as redis-server" % what)


# CONFIG GET and COMMAND LIST FILTERBY PATTERN fold case: stars over
# [A-Z] classes (folded onto the lowercase names), with and without a match.
# zarisd has fewer settings and commands than Redis, so the matching
# patterns are ones whose names exist in both.
def config_get(c, pat):
    v = call(c, "CONFIG", "GET", pat).py()
    return sorted(zip(v[::2], v[1::2]))


nocase = [stars("*[A-Z]", 20, "#"), stars("*[A-Z]", 12, "*-*-*-*-*-*-*#"), stars("*?", 30, "#"),
          "H*A*S*H*-*M*A*X*-*[L-L]*I*S*T*P*A*C*K*", stars("*\\E", 8, "*Z")]
is_([config_get(zc, p) for p in nocase], [config_get(rc, p) for p in nocase],
    "CONFIG GET (nocase): %d pathological patterns answer as redis-server" % len(nocase))
cmds = [stars("*[A-Z]", 20, "#"), stars("*?", 24, "#"), "Z*R*E*M*R*A*N*G*E*B*Y*", "*H*[^Q]*[A-Z]*T", "H*\\S*E*T*"]
is_([sorted_py(call(zc, "COMMAND", "LIST", "FILTERBY", "PATTERN", p)) for p in cmds],
    [sorted_py(rc.call("COMMAND", "LIST", "FILTERBY", "PATTERN", p)) for p in cmds],
    "COMMAND LIST FILTERBY PATTERN (nocase): %d such patterns answer as redis-server" % len(cmds))

# while a KEYS of a pathological pattern walks 4000 long keys, other
# clients (on both workers, whichever got them) are served
pipe = []
for i in range(4000):
    pipe.append(("SET", "%s:%d" % ("a" * 500, i), "v"))
    if len(pipe) == 500:
        zc.pipeline(pipe)
        pipe = []
zc.call("SET", "other", "x")
others = [zaris.client(timeout=WAIT) for _ in range(4)]
slow = zaris.client(timeout=WAIT)
slow.send("KEYS", stars("a*", 100, "b"))
answered = 0
for c in others:
    try:
        if c.call("PING").value == "PONG" and c.call("GET", "other").raw == b"$1\r\nx\r\n":
            answered += 1
    except socket.timeout:
        pass
is_(answered, 4, "during a KEYS of 100 stars over 4000 keys, 4 other clients had their PING and GET answered")
try:
    r = slow.read_reply()
    is_(r.raw, b"*0\r\n", "and that KEYS answered: no key")
except socket.timeout:
    ok(False, "and that KEYS answered within %.0f s" % WAIT)
ok(zaris.alive(), "zarisd still runs")
rc.close()
zc.close()
for c in others + [slow]:
    c.close()
sys.exit(done_testing())
