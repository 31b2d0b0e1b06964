#!/usr/bin/python3
# persist_fuzz.t — random commands (tests/lib/cmdgen.py, with some EXPIRE
# of a day and SELECT between two databases) on a zarisd, then a restart:
# once replaying the append-only log, once loading a snapshot (SAVE). The
# keyspace after the restart must be the one before: every key of both
# databases with its type, its value (lists and sorted sets in order,
# hashes and sets as sorted listings) and whether it has a TTL. persist.t
# has a round trip per type; this is its random twin, for replay of every
# command the generator makes (SETRANGE far out, BITFIELD overflows,
# LMPOP, ZRANGESTORE, COPY, RENAME, INCRBYFLOAT ...).

import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from zaris import *  # noqa: E402,F403
from cmdgen import arities, random_command  # noqa: E402

COMMANDS = 20000
READ = {"string": ("GET",), "list": ("LRANGE", "0", "-1"), "zset": ("ZRANGE", "0", "-1", "WITHSCORES")}
LISTED = {"hash": "HGETALL", "set": "SMEMBERS"}


def keyspace(c):
    """{(db, key): (type, value, has a TTL)} of databases 0 and 1."""
    out = {}
    for db in ("0", "1"):
        c.call("SELECT", db)
        for k in c.call("KEYS", "*").py():
            t = c.call("TYPE", k).py()
            if t in READ:
                v = c.call(READ[t][0], k, *READ[t][1:]).raw
            else:
                v = sorted(c.call(LISTED[t], k).py())
            out[(db, k)] = (t, v, c.call("PTTL", k).py() > 0)
    c.call("SELECT", "0")
    return out


rng = seeded_rng()
plan(4)
redis = start_redis()
arity = arities(redis.client())
redis.stop()
for mode in ("the log", "a snapshot"):
    d = tempfile.mkdtemp(prefix="zaris-persist-fuzz-")
    extra = ["--dir", d, "--save", ""] + (["--appendonly", "yes"] if mode == "the log" else [])
    z = start_zarisd(threads=2, extra=extra, name="zarisd-" + mode.split()[-1])
    c = z.client()
    for i in range(COMMANDS):
        r = rng.random()
        if r < 0.02:
            args = ["EXPIRE", rng.choice(["k1", "k2", "l1", "h1", "z1", "s1"]), "86400"]
        elif r < 0.04:
            args = ["SELECT", rng.choice(["0", "1"])]
        else:
            args = random_command(rng, arity)
        c.call(*args)
    c.call("SELECT", "0")
    before = keyspace(c)
    if mode == "a snapshot":
        c.call("SAVE")
    c.close()
    z.restart()
    c = z.client()
    after = keyspace(c)
    c.close()
    ok(len(before) >= 10, "%s: %d commands left %d keys" % (mode, COMMANDS, len(before)))
    changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
    for k in changed[:5]:
        diag("%r: %r -> %r" % (k, before.get(k), after.get(k)))
    is_(changed, [], "%s: the keyspace after a restart from %s is the one before" % (mode, mode))
    z.cleanup()
    shutil.rmtree(d, ignore_errors=True)
sys.exit(done_testing())
