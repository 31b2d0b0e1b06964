#!/usr/bin/python3
# journal_v1.t — a data directory in journal format version 1, made by the
# zarisd of c7244ab (cases/v1-data/make_fixture.py says how): a snapshot and
# log segments after it (strings, every type, TTLs, MULTI/EXEC, SPOP, about
# 4000 keys in two databases). This zarisd loads it, its keyspace is what
# that zarisd reported for the same data (cases/v1-data/expected.txt),
# --check-data accepts it; a write and a restart then make version-2 files
# that load again.

import ast
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
from zaris import *  # noqa: E402,F403

FIXTURE = os.path.join(HERE, "cases", "v1-data")
DBS = ("0", "1", "2")


def dump(c):
    """Every key of DBS, sorted: (db, key, type, PEXPIRETIME, value); lists
    and sorted sets in order, hashes and sets sorted."""
    out = []
    for db in DBS:
        c.call("SELECT", db)
        for k in c.call("KEYS", "*").py():
            t = c.call("TYPE", k).py()
            if t == "string":
                v = c.call("GET", k).py()
            elif t == "list":
                v = c.call("LRANGE", k, "0", "-1").py()
            elif t == "hash":
                v = sorted(c.call("HGETALL", k).py())
            elif t == "set":
                v = sorted(c.call("SMEMBERS", k).py())
            elif t == "zset":
                v = c.call("ZRANGE", k, "0", "-1", "WITHSCORES").py()
            else:
                v = None
            out.append((db, k, t, c.call("PEXPIRETIME", k).py(), v))
    c.call("SELECT", "0")
    return sorted(out)


def file_versions(d):
    """{file name: format version} of every snapshot and segment under D."""
    vs = {}
    for root, _, names in os.walk(d):
        for n in names:
            with open(os.path.join(root, n), "rb") as f:
                h = f.read(12)
            if h[:8] in (b"ZARISJNL", b"ZARISSNP"):
                vs[os.path.relpath(os.path.join(root, n), d)] = int.from_bytes(h[8:12], "little")
    return vs


def check_data(d):
    p = subprocess.run([zarisd_path(), "--check-data", d], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, timeout=60 * SLOW)
    return p.returncode, p.stdout.decode(errors="replace")


if __name__ == "__main__":
    plan(9)
    with open(os.path.join(FIXTURE, "expected.txt")) as f:
        expected = [ast.literal_eval(line) for line in f if line.strip()]
    d = tempfile.mkdtemp(prefix="zaris-journal-v1-")
    data = os.path.join(d, "data")
    shutil.copytree(os.path.join(FIXTURE, "data"), data)
    vs = file_versions(data)
    ok(len(vs) >= 2 and set(vs.values()) == {1}, "the fixture is version 1: %s" % sorted(vs.items()))
    rc, out = check_data(data)
    ok(rc == 0 and "CORRUPT" not in out and "TRUNCATED" not in out, "--check-data accepts it")
    if rc:
        diag(out)
    extra = ["--dir", data, "--save", "", "--appendonly", "yes"]
    z = start_zarisd(threads=2, extra=extra)
    got = dump(z.client())
    is_(len(got), len(expected), "as many keys as the old zarisd reported")
    ok(got == expected, "every key's type, expiry and value as the old zarisd reported")
    if got != expected:
        missing = [x for x in expected if x not in got][:3]
        extra_keys = [x for x in got if x not in expected][:3]
        diag("missing %r; unexpected %r" % (missing, extra_keys))
    # a write, a snapshot and a write after it: version-2 files
    c = z.client()
    c.call("SET", "after", "v2")
    c.call("RPUSH", "l:renamed", "tail")
    c.call("BGREWRITEAOF")
    for _ in range(600):
        info = c.call("INFO", "persistence").py()
        if b"aof_rewrite_in_progress:0" in info and b"aof_rewrite_scheduled:0" in info:
            break
        time.sleep(0.05)
    c.call("SET", "after2", "v2")
    c.call("MULTI")
    c.call("INCR", "tx:n")
    c.call("EXEC")
    before = dump(c)
    ok(z.stop() == 0, "stopped")
    vs = file_versions(data)
    ok(vs and set(vs.values()) == {2}, "the files written now are version 2: %s" % sorted(vs.items()))
    rc, out = check_data(data)
    ok(rc == 0, "--check-data accepts them")
    z = start_zarisd(threads=2, extra=extra)
    after = dump(z.client())
    ok(after == before and len(after) == len(expected) + 2, "they load again: %d keys" % len(after))
    z.stop()
    shutil.rmtree(d, ignore_errors=True)
    ok(True, "done")
    done_testing()
