#!/usr/bin/python3
# keyslot.t — a key's shard follows its Redis Cluster slot.
#
# Slots: for a seeded sweep of keys (random bytes, NUL and bytes over 0x7f,
# braces placed to make and break hash tags: "{}", "{{x}}", "a{b}{c}", an
# unclosed "{"), zarisd's slot (DEBUG KEYSLOT-SHARD, zarisd only) is
# redis-server's CLUSTER KEYSLOT (a redis-server started with
# cluster-enabled yes in its own directory), and the shard it names is
# slot >> (14 - shard-bits) for shard-bits 10 (the default), 0, 3 and 14.
# shard-bits 15 is refused at start-up (a shard holds whole slots).
#
# Per-slot key counts (the third field of DEBUG KEYSLOT-SHARD): after a
# seeded random workload over two databases (SET, DEL, SET EX/PX, lazy
# expiry, RENAME across slots, MOVE, COPY, SWAPDB, FLUSHDB, LMPOP), every
# slot of a key that exists or existed has the count a recount of KEYS *
# gives; again after a restart from the log (replay) and after one from a
# snapshot (load).

import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from zaris import *  # noqa: E402,F403

KEYS = 3000


def crc16(data):
    """CRC16-XMODEM, bit by bit (the test's own oracle, checked against
    redis-server below)."""
    c = 0
    for b in data:
        c ^= b << 8
        for _ in range(8):
            c = ((c << 1) ^ 0x1021) & 0xFFFF if c & 0x8000 else (c << 1) & 0xFFFF
    return c


def slot(key):
    s = key.find(b"{")
    if s >= 0:
        e = key.find(b"}", s + 1)
        if e > s + 1:
            key = key[s + 1:e]
    return crc16(key) & 16383


def random_key(rng):
    kind = rng.random()
    if kind < 0.3:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(0, 24)))
    parts = []
    for _ in range(rng.randrange(1, 5)):
        parts.append(rng.choice([b"{", b"}", b"{}", b"{{", b"}}", b"user", b"\x00", b"\xff",
                                 bytes([rng.randrange(256)]), b"%d" % rng.randrange(1000)]))
    return b"".join(parts)


def keyslot_shard(c, keys):
    return [r.py() for r in c.pipeline([("DEBUG", "KEYSLOT-SHARD", k) for k in keys])]


rng = seeded_rng()

# --- slots against redis-server ------------------------------------------------------
redis = start_redis(extra=["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"])
rc = redis.client()
keys = [b"123456789", b"{user1000}.following", b"{user1000}.followers", b"foo{}{bar}",
        b"foo{{bar}}zap", b"foo{bar}{zap}", b"", b"{", b"}", b"{}"]
keys += [random_key(rng) for _ in range(KEYS)]
want = [r.py() for r in rc.pipeline([("CLUSTER", "KEYSLOT", k) for k in keys])]
ok(all(isinstance(w, int) for w in want), "redis-server answers CLUSTER KEYSLOT for %d keys" % len(keys))
is_(want[:6], [12739, 3443, 3443, slot(b"foo{}{bar}"), slot(b"{bar"), slot(b"bar")],
    "redis-server: the spec's examples")
bad = [k for k, w in zip(keys, want) if slot(k) != w]
is_(bad[:5], [], "the test's CRC16 oracle is redis-server's slot for every key")
redis.stop()

for bits in (None, 0, 3, 14):
    extra = ["--enable-debug-command", "yes"] + (["--shard-bits", str(bits)] if bits is not None else [])
    z = start_zarisd(threads=2, extra=extra, name="zarisd-bits%s" % bits)
    got = keyslot_shard(z.client(), keys)
    b = 10 if bits is None else bits
    wrong = [(k, g, w) for k, g, w in zip(keys, got, want) if g[0] != w or g[1] != w >> (14 - b)]
    for k, g, w in wrong[:5]:
        diag("%r: zarisd [slot, shard] %r, redis-server slot %d" % (k, g[:2], w))
    ok(not wrong, "shard-bits %d: %d keys: slot as redis-server's CLUSTER KEYSLOT, shard = slot >> %d"
       % (b, len(keys), 14 - b))
    z.cleanup()

try:
    z = start_zarisd(extra=["--shard-bits", "15"], name="zarisd-bits15", attempts=1, start_timeout=5)
    ok(False, "shard-bits 15 refused at start-up")
    z.cleanup()
except RuntimeError as e:
    ok("shard-bits" in str(e), "shard-bits 15 refused at start-up")

# --- per-slot counts ------------------------------------------------------------------
space = [b"k%d" % i for i in range(300)] + [b"{t%d}:%d" % (i % 7, i) for i in range(300)]


def workload(c, n):
    """n seeded operations; the last 500 have no SWAPDB or FLUSHDB, so the
    check after it sees a populated key space whatever the seed (a FLUSHDB
    near the end left 41 keys for seed 76556599)."""
    for i in range(n):
        k, k2 = rng.choice(space), rng.choice(space)
        r = rng.random()
        if i >= n - 500 and 0.85 <= r < 0.856:
            r = 0.9
        if r < 0.35:
            c.call("SET", k, "v")
        elif r < 0.45:
            c.call("SET", k, "v", "PX", str(rng.randrange(1, 30)))
        elif r < 0.55:
            c.call("DEL", k)
        elif r < 0.62:
            c.call("RENAME", k, k2)
        elif r < 0.68:
            c.call("MOVE", k, "1")
        elif r < 0.74:
            c.call("COPY", k, k2, "DB", rng.choice(["0", "1"]), "REPLACE")
        elif r < 0.80:
            c.call("RPUSH", k2, "a", "b")
            c.call("LMPOP", "2", k, k2, "LEFT", "COUNT", str(rng.randrange(1, 4)))
        elif r < 0.85:
            c.call("SELECT", rng.choice(["0", "1"]))
        elif r < 0.855:
            c.call("SWAPDB", "0", "1")
        elif r < 0.856:
            c.call("FLUSHDB")
        else:
            c.call("GET", k)  # lazy expiry
    c.call("SELECT", "0")


def counts_agree(c, what):
    """Every slot of the key space: DEBUG KEYSLOT-SHARD's count against a
    recount of KEYS *, in both databases. Expired keys are deleted first
    (EXISTS on each), as the counts include keys no one has collected."""
    bad = []
    total = 0
    for db in ("0", "1"):
        c.call("SELECT", db)
        c.pipeline([("EXISTS", k) for k in space])
        stored = c.call("KEYS", "*").py()
        total += len(stored)
        recount = {}
        for k in stored:
            recount[slot(k)] = recount.get(slot(k), 0) + 1
        got = keyslot_shard(c, space)
        for k, g in zip(space, got):
            if g[2] != recount.get(g[0], 0):
                bad.append((db, k, g, recount.get(g[0], 0)))
    c.call("SELECT", "0")
    for b in bad[:5]:
        diag("%s: db %s key %r: [slot, shard, count] %r, recount %d" % (what, b[0], b[1], b[2], b[3]))
    ok(not bad and total > 50, "%s: every slot's count is a recount of KEYS * (%d keys)" % (what, total))


for mode in ("the log", "a snapshot"):
    d = tempfile.mkdtemp(prefix="zaris-keyslot-")
    extra = ["--dir", d, "--save", "", "--enable-debug-command", "yes"]
    extra += ["--appendonly", "yes"] if mode == "the log" else []
    z = start_zarisd(threads=2, extra=extra, name="zarisd-" + mode.split()[-1])
    c = z.client()
    workload(c, 4000)
    time.sleep(0.05)  # the short TTLs run out
    counts_agree(c, "%s: after the workload" % mode)
    if mode == "a snapshot":
        c.call("SAVE")
    c.close()
    z.restart()
    counts_agree(z.client(), "%s: after a restart from %s" % (mode, mode))
    z.cleanup()
    shutil.rmtree(d, ignore_errors=True)

sys.exit(done_testing())
