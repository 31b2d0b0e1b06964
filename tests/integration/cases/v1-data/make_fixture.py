#!/usr/bin/python3
# make_fixture.py — how tests/integration/cases/v1-data/ was made, once,
# with the zarisd of c7244ab (journal format version 1):
#   ZARIS_BUILD=/work/wt/old/build python3 make_fixture.py
# It writes data/ (a snapshot and log segments after it) and expected.txt
# (every key as that zarisd reported it after a restart on data/; see
# dump() in journal_v1.t). Not run by the tests.
import os
import random
import shutil
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "lib"))
from zaris import *  # noqa: E402,F403

sys.path.insert(0, os.path.join(HERE, "..", ".."))
from importlib.machinery import SourceFileLoader  # noqa: E402
v1 = SourceFileLoader("journal_v1", os.path.join(HERE, "..", "..", "journal_v1.t")).load_module()

FAR = 4102444800000  # 2100-01-01, an absolute TTL that stays in the future


def fill(c, rng, n0, n1, tag):
    """Keys of every type in databases 0 and 2, some with a TTL."""
    for i in range(n0, n1):
        db = "2" if i % 7 == 0 else "0"
        c.call("SELECT", db)
        k = "%s:%d" % (tag, i)
        t = i % 6
        if t == 0:
            c.call("SET", "s:" + k, "v%d" % rng.randrange(10 ** 9))
        elif t == 1:
            c.call("RPUSH", "l:" + k, *["e%d" % rng.randrange(100) for _ in range(rng.randrange(1, 20))])
        elif t == 2:
            c.call("HSET", "h:" + k, *sum([["f%d" % j, "x%d" % rng.randrange(1000)] for j in range(rng.randrange(1, 10))], []))
        elif t == 3:
            c.call("SADD", "S:" + k, *["m%d" % rng.randrange(50) for _ in range(rng.randrange(1, 30))])
        elif t == 4:
            c.call("ZADD", "z:" + k, *sum([[str(rng.randrange(-100, 100) / 4), "m%d" % j] for j in range(rng.randrange(1, 15))], []))
        else:
            c.call("SET", "n:" + k, str(rng.randrange(1000)))
            c.call("INCRBY", "n:" + k, "7")
        if i % 11 == 0:
            c.call("PEXPIREAT", [kk for kk in c.call("KEYS", "*%s" % k).py()][0], str(FAR + i))
    c.call("SELECT", "0")


def main():
    rng = random.Random(14)
    out = os.path.join(HERE, "data")
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    z = start_zarisd(threads=2, extra=["--dir", out, "--save", "", "--appendonly", "yes"])
    c = z.client()
    fill(c, rng, 0, 2500, "a")
    c.call("SET", b"bin\x00\xff", b"\x00\x01\xfe\xff")
    c.call("PFADD", "hll", *["u%d" % j for j in range(300)])
    c.call("SETBIT", "bits", "1000", "1")
    c.call("SAVE")  # the snapshot: covers everything above, cuts the log
    fill(c, rng, 2500, 4000, "b")  # records after the snapshot
    for i in range(40):  # transactions, each its own records and commit
        c.send("MULTI")
        c.read_reply()
        for cmd in (["INCR", "tx:n"], ["RPUSH", "tx:l", str(i)], ["HSET", "tx:h", "f%d" % i, str(i)]):
            c.send(*cmd)
            c.read_reply()
        c.call("EXEC")
    c.call("SADD", "sp", *["m%d" % j for j in range(100)])
    for _ in range(30):
        c.call("SPOP", "sp")  # journaled as its effect
    c.call("SPOP", "sp", "5")
    c.call("DEL", "a:6", "s:a:6")
    c.call("RENAME", "l:a:1", "l:renamed")
    c.call("SET", "short", "gone", "PX", "200")  # expired before any load
    c.call("LPUSH", "l:a:1", "again")
    time.sleep(1)
    z.stop()
    z = start_zarisd(threads=2, extra=["--dir", out, "--save", "", "--appendonly", "yes"])
    dump = v1.dump(z.client())
    z.stop()
    with open(os.path.join(HERE, "expected.txt"), "w") as f:
        for line in dump:
            f.write(repr(line) + "\n")
    print("%d keys" % len(dump))


main()
