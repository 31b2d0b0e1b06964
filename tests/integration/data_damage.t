#!/usr/bin/python3
# data_damage.t — the append-only log and the snapshot damaged in many ways,
# each tried on a copy. Never a crash, a hang, a sanitizer report, a hole or
# a wrong value; `zarisd --check-data` says OK, TRUNCATED or CORRUPT for the
# same copy and never crashes.
#
# The log: 200 SETs of k<i> to a value derived from i (lengths 1 to 600, so
# frames of many sizes and page crossings), appendfsync always, SHUTDOWN
# NOSAVE. zarisd either refuses to start, naming file and offset, or starts
# with a prefix of the writes, every value intact. The damages (a seeded
# random sweep; the seed is printed, and ZARIS_SEED repeats a run): the file
# cut at a random offset (a crash mid-write); one bit flipped; a 1 KiB block
# zeroed (a lost block); the tail zeroed from a random offset, with the
# size kept (a failed writeback, fsync_error.t); random bytes appended.
# Checked per kind as well: a cut or a zeroed tail always starts (a torn
# tail, aof-load-truncated yes), and appended garbage starts with all 200.
#
# The snapshot (every type, some keys with a TTL, SAVE): a snapshot is
# written whole and renamed into place, so any damage is refused (the
# start stops naming dump.zdb and the offset), never a partial load.
#
# It found a bug: a start refused for a bad data file returned from main
# without freeing anything, which LeakSanitizer reports (make asan).

import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from zaris import *  # noqa: E402,F403
from zaris import HOST  # noqa: E402

N = 200
PER_KIND = 8
KINDS = ("cut", "flip", "zero-block", "zero-tail", "garbage")


def value(i):
    return ("%d:" % i) + "abcdefghij"[i % 10] * ((i * 37) % 600)


def make_log(d):
    srv = start_zarisd(threads=2, extra=["--dir", d, "--appendonly", "yes", "--appendfsync", "always",
                                         "--save", ""], name="zarisd-writer")
    c = srv.client()
    for i in range(N):
        c.call("SET", "k%d" % i, value(i))
    c.send("SHUTDOWN", "NOSAVE")
    srv.proc.wait(10 * SLOW)
    c.close()
    ad = os.path.join(d, "appendonlydir")
    segs = sorted(f for f in os.listdir(ad) if f.endswith(".zj"))
    return os.path.join(ad, segs[-1]), len(segs)


def make_snapshot(d):
    """A snapshot of every type (small and large encodings, some TTLs);
    the number of keys in it."""
    srv = start_zarisd(threads=2, extra=["--dir", d, "--save", ""], name="zarisd-snapshot")
    c = srv.client()
    for i in range(40):
        c.call("SET", "s%d" % i, value(i))
        c.call("HSET", "h%d" % i, *[x for f in range(1 + i * 5) for x in ("f%d" % f, value(f))])
        c.call("RPUSH", "l%d" % i, *[value(f) for f in range(1 + i * 5)])
        c.call("SADD", "i%d" % i, *[str(f) for f in range(1 + i * 20)])
        c.call("SADD", "t%d" % i, *["m%d" % f for f in range(1 + i * 5)])
        c.call("ZADD", "z%d" % i, *[x for f in range(1 + i * 5) for x in (str(f * 1.5), "m%d" % f)])
        if i % 3 == 0:
            c.call("PEXPIRE", "s%d" % i, 3600 * 1000)
            c.call("PEXPIRE", "z%d" % i, 3600 * 1000)
    keys = int(c.call("DBSIZE").value)
    c.call("SAVE")
    c.send("SHUTDOWN", "NOSAVE")
    srv.proc.wait(10 * SLOW)
    c.close()
    return keys


def damage(path, kind, rng):
    data = bytearray(open(path, "rb").read())
    lo = 16  # keep the file header: a bad header is a separate, simple case
    if kind == "cut":
        data = data[:rng.randrange(lo, len(data))]
    elif kind == "flip":
        at = rng.randrange(lo, len(data))
        data[at] ^= 1 << rng.randrange(8)
    elif kind == "zero-block":
        at = rng.randrange(lo // 1024 * 1024 + 1024, len(data)) // 1024 * 1024
        data[at:at + 1024] = bytes(len(data[at:at + 1024]))
    elif kind == "zero-tail":
        at = rng.randrange(lo, len(data))
        data[at:] = bytes(len(data) - at)
    else:
        data += bytes(rng.randrange(256) for _ in range(rng.randrange(1, 3000)))
    with open(path, "wb") as f:
        f.write(data)


def start_or_refuse(d, appendonly="yes"):
    """zarisd on D: ("started", {i: GET k<i>}, DBSIZE) or ("refused",
    "exit N\n" + its output, None)."""
    def read(c):
        keys = {}
        for i in range(N):
            r = c.call("GET", "k%d" % i)
            if r.raw != b"$-1\r\n":
                keys[i] = r.raw
        return keys, c.call("DBSIZE").value

    state, got = start_on_data(d, read, appendonly)
    if state == "started":
        return state, got[0], got[1]
    return state, got if state == "refused" else "", None


def is_prefix(keys):
    """The loaded keys are k0..k(n-1), each with its own value."""
    n = len(keys)
    return sorted(keys) == list(range(n)) and all(
        keys[i] == b"$%d\r\n%s\r\n" % (len(value(i)), value(i).encode()) for i in range(n))


plan(10)
rng = seeded_rng()

base = tempfile.mkdtemp(prefix="zaris-damage-")
seg, nsegs = make_log(base)
ok(nsegs == 1 and os.path.getsize(seg) > 16 * 1024,
   "the log: one segment of %d bytes" % os.path.getsize(seg))

bad, check_bad, per_kind = [], [], {k: [] for k in KINDS}
for kind in KINDS:
    for _ in range(PER_KIND):
        d = tempfile.mkdtemp(prefix="zaris-damage-case-")
        shutil.copytree(os.path.join(base, "appendonlydir"), os.path.join(d, "appendonlydir"))
        damage(os.path.join(d, "appendonlydir", os.path.basename(seg)), kind, rng)
        chk = subprocess.run([zarisd_path(), "--check-data", d], capture_output=True, text=True,
                             timeout=60 * SLOW)
        verdict = ("OK" if ": OK," in chk.stdout else "TRUNCATED" if "TRUNCATED" in chk.stdout
                   else "CORRUPT" if "CORRUPT" in chk.stdout else None)
        if chk.returncode not in (0, 1) or verdict is None or "Sanitizer" in chk.stderr \
                or "runtime error" in chk.stderr:
            check_bad.append((kind, chk.returncode, chk.stdout[-300:], chk.stderr[-300:]))
        how, got, _ = start_or_refuse(d)
        if how == "started":
            fine = is_prefix(got)
            per_kind[kind].append(len(got))
        else:
            fine = how == "refused" and got.startswith("exit 1\n") and "offset" in got \
                and os.path.basename(seg) in got \
                and "Sanitizer" not in got and "runtime error" not in got
            per_kind[kind].append("refused")
        if not fine:
            bad.append((kind, how, got if how != "started" else sorted(got)[:20]))
        shutil.rmtree(d, ignore_errors=True)

for kind in KINDS:
    note("%s: %s" % (kind, " ".join(str(x) for x in per_kind[kind])))
is_(bad, [], "every damaged copy: refused naming file and offset, or a prefix of the writes with "
    "their values (%d copies)" % (len(KINDS) * PER_KIND))
is_(check_bad, [], "--check-data reports OK, TRUNCATED or CORRUPT for each and exits 0 or 1")
ok(all(x != "refused" for x in per_kind["cut"]), "a cut file always starts (torn tail trimmed)")
ok(all(x != "refused" for x in per_kind["zero-tail"]),
   "a zeroed tail always starts (torn tail trimmed)")
ok(all(x == N for x in per_kind["garbage"]), "appended garbage: trimmed, all %d writes load" % N)
ok(any(x == "refused" for x in per_kind["flip"] + per_kind["zero-block"]),
   "damage in the middle is refused, not skipped (at least once in the sweep)")
shutil.rmtree(base, ignore_errors=True)

# --------------------------------------------------------------- snapshot

base = tempfile.mkdtemp(prefix="zaris-damage-snap-")
nkeys = make_snapshot(base)
snap = os.path.join(base, "dump.zdb")
how, _, dbsize = start_or_refuse(base, appendonly="no")
ok(how == "started" and dbsize == nkeys and os.path.getsize(snap) > 16 * 1024,
   "the snapshot: %d keys in %d bytes, and it loads" % (nkeys, os.path.getsize(snap)))
bad, check_bad = [], []
for kind in ("cut", "flip", "zero-block", "garbage"):
    for _ in range(PER_KIND):
        d = tempfile.mkdtemp(prefix="zaris-damage-case-")
        shutil.copy(snap, os.path.join(d, "dump.zdb"))
        damage(os.path.join(d, "dump.zdb"), kind, rng)
        chk = subprocess.run([zarisd_path(), "--check-data", d], capture_output=True, text=True,
                             timeout=60 * SLOW)
        if chk.returncode != 1 or not ("CORRUPT" in chk.stdout or "TRUNCATED" in chk.stdout) \
                or "Sanitizer" in chk.stderr or "runtime error" in chk.stderr:
            check_bad.append((kind, chk.returncode, chk.stdout[-300:], chk.stderr[-300:]))
        how, got, _ = start_or_refuse(d, appendonly="no")
        if not (how == "refused" and got.startswith("exit 1\n") and "dump.zdb" in got
                and "offset" in got and "Sanitizer" not in got and "runtime error" not in got):
            bad.append((kind, how, got if how != "started" else "started"))
        shutil.rmtree(d, ignore_errors=True)
is_(bad, [], "every damaged snapshot: the start stops naming dump.zdb and the offset (%d copies)"
    % (4 * PER_KIND))
is_(check_bad, [], "--check-data reports each as CORRUPT or TRUNCATED and exits 1")
shutil.rmtree(base, ignore_errors=True)
sys.exit(done_testing())
