#!/usr/bin/python3
# command_fuzz.t — random commands with awkward arguments, each sent to
# redis-server and then to zarisd, each on a RESP2 or a RESP3 connection
# (HELLO 3) at random: the raw replies must be the same, byte for byte.
# One time in twenty the command is a transaction of one to five of them;
# one in ten a listing (SMEMBERS, SUNION, HGETALL ...), compared sorted.
# compare.t has the fixed cases; this is its random twin, for the argument
# parsing and edge values nobody thought to write down.
#
# The commands come from tests/lib/cmdgen.py: about 90 over strings,
# lists, hashes, sorted sets, sets, bitmaps, HyperLogLog and keys, the
# argument count following redis-server's COMMAND INFO arity nine times in
# ten, the first argument a key of the command's type, the others keys,
# values (empty, signs, 64-bit limits and one past them, floats, inf/nan
# spellings, "0x10", padded numbers) and option words. What it leaves out,
# and why, is written there. Seeded: the seed is printed, ZARIS_SEED
# repeats a run.

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from zaris import *  # noqa: E402,F403
from cmdgen import UNORDERED, arities, random_command, unordered_form  # noqa: E402

COMMANDS = 20000

plan(3)
rng = seeded_rng()
redis = start_redis()
zaris = start_zarisd(threads=2)
# a RESP2 and a RESP3 connection to each; every command goes to one pair
pairs = [(redis.client(), zaris.client()), (redis.client(), zaris.client())]
for c in pairs[1]:
    c.call("HELLO", "3")
rc, zc = pairs[0]
arity = arities(rc)


def transaction(rng):
    """MULTI, one to five commands, then EXEC (or DISCARD); one time in five
    a stray MULTI, WATCH, EXEC or DISCARD somewhere in between."""
    seq = [["MULTI"]] + [random_command(rng, arity) for _ in range(rng.randrange(1, 6))]
    seq.append([rng.choice(["EXEC", "EXEC", "EXEC", "DISCARD"])])
    if rng.random() < 0.2:
        seq.insert(rng.randrange(1, len(seq)), [rng.choice(["MULTI", "WATCH", "EXEC", "DISCARD"]), "k1"][
            :rng.randrange(1, 3)])
    return seq


diffs, errors, transactions = [], 0, 0
for i in range(COMMANDS):
    # one time in twenty a transaction (queued commands, EXECABORT, errors
    # inside EXEC's reply), one in ten a listing compared in sorted form,
    # else one command
    u = rng.random()
    if u < 0.05:
        seq = transaction(rng)
    elif u < 0.15:
        seq = [random_command(rng, arity, UNORDERED)]
    else:
        seq = [random_command(rng, arity)]
    transactions += len(seq) > 1
    proto = rng.randrange(2)
    r, z = pairs[proto]
    form = (lambda x: unordered_form(x)) if seq[0][0] in UNORDERED else (lambda x: x.raw)
    want = [form(r.call(*args)) for args in seq]
    got = [form(z.call(*args)) for args in seq]
    if len(seq) > 1:  # leave no transaction open
        r.call("DISCARD")
        z.call("DISCARD")
    errors += sum(isinstance(w, bytes) and w.startswith(b"-") for w in want)
    if got != want:
        bad = [k for k in range(len(seq)) if got[k] != want[k]][0]
        diffs.append((["RESP%d" % (proto + 2)] + seq[bad], str(want[bad])[:300], str(got[bad])[:300]))
        # start again from empty keyspaces, so one difference is not many
        rc.call("FLUSHALL")
        zc.call("FLUSHALL")
for args, want, got in diffs[:5]:
    diag("%r\n# redis-server: %r\n# zarisd:       %r" % (args, want, got))
is_(len(diffs), 0, "%d random commands (%d of them transactions): zarisd's replies are "
    "redis-server's" % (COMMANDS, transactions))
ok(COMMANDS // 5 < errors < COMMANDS * 4 // 5,
   "the sweep had both errors (%d) and replies that are not errors" % errors)
is_(zc.call("DBSIZE").raw, rc.call("DBSIZE").raw, "the keyspaces end the same size")
for pair in pairs:
    for c in pair:
        c.close()
sys.exit(done_testing())
