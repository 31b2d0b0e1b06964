#!/usr/bin/python3
# repl_fullsync_kill.t — a full sync killed halfway leaves the replica with
# its previous data set or a complete copy, never a mix; a later sync
# completes and the replica then equals the primary.
#
# The primary holds 200,000 keys new:<n> of 300 bytes (values derived from
# the key: repl.fill_value), the replica (standalone first) 20,000 keys
# old:<n>; both persist (zarisd and redis-server: appendonly yes) and the
# replica's old data are on disk (a clean restart) before each attempt.
# While the full sync runs, a client keeps writing load:<n> keys on the
# primary (a few thousand a second). The sync starts with REPLICAOF at run time; once the replica
# reports master_sync_in_progress:1, once it has read a random part (5 to
# 50 %) of the bytes a first, uninterrupted sync read (master_sync_read_bytes;
# a part of that sync's duration where no count is reported), one side
# gets kill -9:
#
#   * the primary: the replica, once its sync has stopped, holds exactly
#     old:* (all 20,000, values intact) or no old:* and all 200,000 new:*
#     (values intact); the primary restarts on the same port from its log,
#     the replica (still its replica) syncs, and its keys and values are
#     the primary's;
#   * the replica: restarted on its data directory as a standalone server,
#     it holds one of the same two; REPLICAOF again, the sync completes,
#     keys and values are the primary's.
#
# A note says whether each kill landed during the sync; at least one per
# side must. ZARIS_REPL_KEYS (default 200000, 100000 under a sanitizer) and ZARIS_REPL_CYCLES
# (attempts per side, default 1) for other runs; seeded (ZARIS_SEED).

import os
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from zaris import *  # noqa: E402,F403
from zaris import ProtocolError  # noqa: E402
from repl import *  # noqa: E402,F403

KEYS = sweep_size("ZARIS_REPL_KEYS", 200000, 100000)
CYCLES = sweep_size("ZARIS_REPL_CYCLES", 1, 1)
OLD = max(KEYS // 10, 10)
SIZE = 300

rng = seeded_rng()


def persist(d):
    return ["--dir", d, "--appendonly", "yes"]


class Load:
    """A client writing load:<n> keys (pipelines of 20 SETs, a few thousand
    a second) on the primary until stopped or the primary dies."""

    def __init__(self, srv, tag):
        self.cl = srv.client(timeout=5)
        self.tag = tag
        self.n = 0
        self.err = None
        self._stop = threading.Event()
        self.t = threading.Thread(target=self._run, daemon=True)
        self.t.start()

    def _run(self):
        try:
            while not self._stop.is_set():
                self.cl.pipeline([("SET", "load:%s:%d" % (self.tag, self.n + i), "x" * 100) for i in range(20)])
                self.n += 20
                time.sleep(0.005)
        except (OSError, ConnectionError, ProtocolError) as e:
            self.err = e

    def stop(self):
        self._stop.set()
        self.t.join(30)
        self.cl.close()
        return self.n


def values_ok(cl, keys):
    """How many of KEYS do not hold fill_value(key, SIZE) (MGET batches)."""
    bad = 0
    for i in range(0, len(keys), 1000):
        part = keys[i:i + 1000]
        got = cl.call("MGET", *part).py()
        bad += sum(1 for k, v in zip(part, got) if v != fill_value(k, SIZE))
    return bad


def classify(cl):
    """("previous" | "copy" | "mix", detail) of the replica behind CL."""
    keys = scan_keys(cl)
    replies = cl.pipeline([("SELECT", db) if i == 0 else ("DBSIZE",) for db in range(1, 16) for i in (0, 1)])
    others = sum(x.py() for x in replies[1::2])
    cl.call("SELECT", "0")
    old = sorted(k for k in keys if k.startswith(b"old:"))
    new = sorted(k for k in keys if k.startswith(b"new:"))
    load = sum(1 for k in keys if k.startswith(b"load:"))
    stray = len(keys) - len(old) - len(new) - load + others
    bad = values_ok(cl, old) + values_ok(cl, new)
    detail = "%d old:* of %d, %d new:* of %d, %d load:*, %d others, %d wrong values" % (
        len(old), OLD, len(new), KEYS, load, stray, bad)
    if bad or stray:
        return "mix", detail
    if len(old) == OLD and not new and not load:
        return "previous", detail
    if not old and len(new) == KEYS:
        return "copy", detail
    return "mix", detail


def kv_dump(cl):
    """{key: value} of database 0 (every key is a string here)."""
    keys = sorted(scan_keys(cl))
    out = {}
    for i in range(0, len(keys), 1000):
        part = keys[i:i + 1000]
        out.update(zip(part, cl.call("MGET", *part).py()))
    return out


def equal(pc, rc, what):
    ok(wait_in_sync(pc, rc, timeout=120), "%s: the sync completes" % what) or diag(sync_state(pc, rc))
    a, b = kv_dump(pc), kv_dump(rc)
    if not ok(a == b and len(a) > KEYS,
              "%s: the replica's keys and values are the primary's (%d keys)" % (what, len(a))):
        only_a = [k for k in a if k not in b]
        only_b = [k for k in b if k not in a]
        diff = [k for k in a if k in b and a[k] != b[k]]
        diag("%d only on the primary (%r), %d only on the replica (%r), %d differ (%r)"
             % (len(only_a), only_a[:3], len(only_b), only_b[:3], len(diff), diff[:3]))


def reset_replica(r):
    """The replica back to standalone with exactly old:*, on disk."""
    rc = r.client()
    rc.call("REPLICAOF", "NO", "ONE")
    rc.call("FLUSHALL")
    fill(rc, OLD, prefix="old:", size=SIZE)
    rc.close()
    r.restart()
    rc = r.client(timeout=30)
    kind, detail = classify(rc)
    if kind != "previous":
        bail_out("the replica's old data did not survive a clean restart: " + detail)
    return rc


def start_sync(rc, p):
    r = rc.call("REPLICAOF", HOST, str(p.port))
    if r.is_error():
        bail_out("REPLICAOF refused: %s" % r.value)
    return wait_for(lambda: info(rc).get("master_sync_in_progress") == "1", 30, step=0.002)


def sync_read(rc):
    """(sync in progress, its bytes read so far: -1 when not reported)."""
    i = info(rc)
    try:
        n = int(i.get("master_sync_read_bytes", "-1"))
    except ValueError:
        n = -1
    return i.get("master_sync_in_progress") == "1", n


def watch_first_sync(rc, timeout):
    """Waits (bounded) for the first sync's link; returns (up, the most
    bytes seen read while it was in progress): the scale of the kills."""
    most = -1
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if info(rc).get("master_link_status") == "up":
            return True, most
        most = max(most, sync_read(rc)[1])
        time.sleep(0.002)
    return False, most


def kill_point(rc, frac):
    """Waits until the sync in progress has read FRAC of the first sync's
    bytes (a state, not a time: how long a sync takes depends on the
    machine's load, and a kill at a fraction of the first one's duration
    came after the whole sync once it ran faster), or is over; falls back
    to that fraction of the first sync's duration when no byte count is
    reported."""
    if first_bytes <= 0:
        time.sleep(frac * dur)
        return
    target = frac * first_bytes
    end = time.monotonic() + 120 * SLOW
    while time.monotonic() < end:
        going, n = sync_read(rc)
        if not going or n >= target:
            return
        time.sleep(0.002)


def settle(rc, timeout=60):
    """Waits until the replica answers and has no sync in progress (LOADING
    and a sync in progress both pass)."""
    def calm():
        try:
            return rc.call("PING").py() == "PONG" and info(rc).get("master_sync_in_progress", "0") == "0"
        except (OSError, ConnectionError, ProtocolError):
            return False
    return wait_for(calm, timeout, step=0.05)


p = start_node("primary", threads=2, extra=persist(data_dir()))
r = start_node("replica", threads=2, extra=persist(data_dir()))
pc = p.client(timeout=60)
t0 = time.monotonic()
fill(pc, KEYS, prefix="new:", size=SIZE)
note("filled %d keys of %d bytes in %.1fs" % (KEYS, SIZE, time.monotonic() - t0))

# a first sync, uninterrupted: its duration is the scale of the kills
rc = reset_replica(r)
load = Load(p, "first")
t0 = time.monotonic()
seen = start_sync(rc, p)
up, first_bytes = watch_first_sync(rc, 120)
ok(up, "first sync: REPLICAOF, the link is up (sync in progress seen: %s)" % bool(seen)) or \
    diag(sync_state(pc, rc))
dur = time.monotonic() - t0
note("first full sync of %d keys: %.2fs, %d bytes seen read" % (KEYS, dur, first_bytes))
load.stop()
equal(pc, rc, "first sync")

mid = {"primary": 0, "replica": 0}
for cycle in range(CYCLES):
    # ---- kill -9 the primary during the sync ----------------------------------------------------
    what = "primary killed, attempt %d" % (cycle + 1)
    rc = reset_replica(r)
    load = Load(p, "p%d" % cycle)
    seen = start_sync(rc, p)
    kill_point(rc, rng.uniform(0.05, 0.5))
    during = info(rc).get("master_sync_in_progress") == "1"
    p.kill()
    load.stop()
    mid["primary"] += bool(seen and during)
    note("%s: sync in progress seen %s, at the kill %s" % (what, bool(seen), during))
    ok(settle(rc), "%s: the replica answers, no sync in progress" % what)
    kind, detail = classify(rc)
    ok(kind in ("previous", "copy"), "%s: the replica holds its previous data or a complete copy: %s (%s)"
       % (what, kind, detail))
    p.restart(timeout=120, same_port=True)
    pc = p.client(timeout=60)
    load = Load(p, "p%d-after" % cycle)
    ok(wait_link(rc, timeout=120), "%s: the primary restarted on its port, the replica's link is up" % what) or \
        diag(sync_state(pc, rc))
    load.stop()
    equal(pc, rc, what)

    # ---- kill -9 the replica during the sync ---------------------------------------------------
    what = "replica killed, attempt %d" % (cycle + 1)
    rc = reset_replica(r)
    load = Load(p, "r%d" % cycle)
    seen = start_sync(rc, p)
    kill_point(rc, rng.uniform(0.05, 0.5))
    during = info(rc).get("master_sync_in_progress") == "1"
    r.kill()
    mid["replica"] += bool(seen and during)
    note("%s: sync in progress seen %s, at the kill %s" % (what, bool(seen), during))
    r.restart(timeout=120)
    rc = r.client(timeout=60)
    role = rc.call("ROLE").py()[0]
    if role != b"master":
        note("%s: restarted, the replica's role is %r" % (what, role))
    ok(settle(rc), "%s: restarted on its data directory, it answers" % what)
    kind, detail = classify(rc)
    ok(kind in ("previous", "copy"), "%s: it holds its previous data or a complete copy: %s (%s)"
       % (what, kind, detail))
    rc.call("REPLICAOF", HOST, str(p.port))
    ok(wait_link(rc, timeout=120), "%s: REPLICAOF again, the link is up" % what) or diag(sync_state(pc, rc))
    load.stop()
    equal(pc, rc, what)

for side in ("primary", "replica"):
    ok(mid[side] > 0, "%s side: %d of %d kills landed while the sync was in progress" % (side, mid[side], CYCLES))
sys.exit(done_testing())
