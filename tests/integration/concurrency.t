#!/usr/bin/python3
# concurrency.t — commands running on several workers at once keep Redis's
# single-threaded semantics.
#
#  * 64 clients x 10,000 INCR on one key (pipelined, 8 processes x 8
#    connections) end at exactly 640,000, and each client sees its own
#    replies strictly increase;
#  * MSET of a 10-key group (all to the same value) racing MGET of the group:
#    no MGET ever sees two different values (multi-key commands are atomic);
#  * SCAN: every key present for the whole scan is returned at least once
#    while other clients insert and delete other keys (so tables resize).
# zarisd runs with --threads 4 (more workers than cores on purpose) so that
# connections land on different workers.  Counts go to diag.

import multiprocessing as mp
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from zaris import *  # noqa: E402,F403

THREADS = 4
PROCS, CONNS_PER_PROC, INCRS, BATCH = 8, 8, 10000, 500
GROUP = ["mgroup:%d" % i for i in range(1, 11)]
STABLE = 20000


def read_lines(cl, n):
    """Read exactly n one-line replies (":N", "+OK"); returns their lines."""
    lines = []
    while len(lines) < n:
        end = cl.buf.rfind(b"\r\n")
        if end >= 0:
            chunk = bytes(cl.buf[:end])
            del cl.buf[:end + 2]
            lines.extend(chunk.split(b"\r\n"))
        if len(lines) < n:
            cl._fill()
    if len(lines) != n:
        raise ProtocolError("expected %d replies, got %d" % (n, len(lines)))
    return lines


def incr_worker(port, q):
    errors = []
    replies = 0
    try:
        conns = [Client(port, timeout=60) for _ in range(CONNS_PER_PROC)]
        last = [0] * len(conns)
        req = encode_command("INCR", "counter") * BATCH
        for _ in range(INCRS // BATCH):
            for c in conns:
                c.send_raw(req)
            for i, c in enumerate(conns):
                for line in read_lines(c, BATCH):
                    replies += 1
                    if line[:1] != b":":
                        errors.append("reply %r" % line[:80])
                        continue
                    v = int(line[1:])
                    if v <= last[i]:
                        errors.append("INCR went from %d to %d on one connection" % (last[i], v))
                    last[i] = v
        for c in conns:
            c.close()
    except Exception as e:  # report, do not hang the parent
        errors.append("%s: %s" % (type(e).__name__, e))
    q.put((replies, errors[:5], len(errors)))


def check_incr(z):
    with z.client() as c:
        c.call("DEL", "counter")
    q = mp.Queue()
    t0 = time.monotonic()
    procs = [mp.Process(target=incr_worker, args=(z.port, q)) for _ in range(PROCS)]
    for p in procs:
        p.start()
    results = [q.get(timeout=300) for _ in procs]
    for p in procs:
        p.join(30)
    took = time.monotonic() - t0
    replies = sum(r[0] for r in results)
    nerr = sum(r[2] for r in results)
    with z.client() as c:
        final = c.call("GET", "counter").value
    diag("%d clients x %d INCR: %d replies, %d bad, final counter %r (%.1fs)"
         % (PROCS * CONNS_PER_PROC, INCRS, replies, nerr, final, took))
    for r in results:
        for e in r[1]:
            diag("  " + e)
    is_(final, str(PROCS * CONNS_PER_PROC * INCRS).encode(), "64 x 10,000 INCR end at exactly 640,000")
    ok(nerr == 0 and replies == PROCS * CONNS_PER_PROC * INCRS,
       "every INCR got an integer reply, increasing on each connection")


def mset_writer(port, wid, rounds, q):
    errors = []
    try:
        c = Client(port, timeout=60)
        for r in range(0, rounds, 20):
            cmds = []
            for k in range(r, min(r + 20, rounds)):
                v = "w%d-%d" % (wid, k)
                cmds.append(["MSET"] + [x for key in GROUP for x in (key, v)])
            for rep in c.pipeline(cmds):
                if rep.raw != b"+OK\r\n":
                    errors.append(rep.raw[:80])
        c.close()
    except Exception as e:
        errors.append("%s: %s" % (type(e).__name__, e))
    q.put(("w", 0, 0, 0, errors[:5]))


def mget_reader(port, stop, q):
    seen = mixed = 0
    values = set()
    errors = []
    example = None
    try:
        c = Client(port, timeout=60)
        # bounded: at most 400 batches of 25 MGETs even if the writers stall
        for _ in range(400):
            for rep in c.pipeline([["MGET"] + GROUP] * 25):
                if rep.kind != "*":
                    errors.append(rep.raw[:80])
                    continue
                vals = [x.value for x in rep.value]
                seen += 1
                if len(set(vals)) != 1:
                    mixed += 1
                    if example is None:
                        example = vals
                values.add(vals[0])
            if stop.is_set():
                break
        c.close()
    except Exception as e:
        errors.append("%s: %s" % (type(e).__name__, e))
    if example is not None:
        errors.insert(0, "mixed MGET: %r" % example)
    q.put(("r", seen, mixed, len(values), errors[:5]))


def check_mset_mget(z):
    with z.client() as c:
        c.call("MSET", *[x for key in GROUP for x in (key, "init")])
    q = mp.Queue()
    stop = mp.Event()
    writers = [mp.Process(target=mset_writer, args=(z.port, w, 3000, q)) for w in range(3)]
    readers = [mp.Process(target=mget_reader, args=(z.port, stop, q)) for _ in range(3)]
    for p in readers + writers:
        p.start()
    res = [q.get(timeout=300) for _ in writers]
    stop.set()
    res += [q.get(timeout=300) for _ in readers]
    for p in readers + writers:
        p.join(30)
    errors = [e for r in res for e in r[4]]
    seen = sum(r[1] for r in res)
    mixed = sum(r[2] for r in res)
    distinct = sum(r[3] for r in res)
    diag("MSET/MGET: 3 writers x 3000 MSET of %d keys, %d MGETs observed, %d mixed, %d distinct values seen"
         % (len(GROUP), seen, mixed, distinct))
    for e in errors:
        diag("  %s" % e)
    ok(mixed == 0 and seen > 0 and not [e for e in errors if not e.startswith("mixed")],
       "no MGET observes a half-applied MSET")
    ok(distinct > 3, "the readers saw the group change while they read (%d values)" % distinct)


def churn(port, cid, stop, q):
    added = deleted = 0
    errors = []
    try:
        c = Client(port, timeout=60)
        for rnd in range(200):  # bounded even if stop never comes
            keys = ["churn:%d:%d:%d" % (cid, rnd, i) for i in range(4000)]
            for off in range(0, len(keys), 500):
                c.pipeline([["SET", k, "x"] for k in keys[off:off + 500]])
            added += len(keys)
            for off in range(0, len(keys), 500):
                r = c.call("DEL", *keys[off:off + 500])
                deleted += r.value if r.kind == ":" else 0
            if stop.is_set():
                break
        c.close()
    except Exception as e:
        errors.append("%s: %s" % (type(e).__name__, e))
    q.put((added, deleted, errors))


def check_scan(z):
    with z.client(timeout=60) as c:
        c.call("FLUSHALL")
        for off in range(0, STABLE, 1000):
            c.call("MSET", *[x for i in range(off, off + 1000) for x in ("stable:%d" % i, "v")])
        size0 = c.call("DBSIZE").value
    q = mp.Queue()
    stop = mp.Event()
    churners = [mp.Process(target=churn, args=(z.port, i, stop, q)) for i in range(2)]
    for p in churners:
        p.start()
    time.sleep(0.2)
    scans = returned = calls = 0
    missing_total = 0
    first_missing = None
    errors = []
    with z.client(timeout=60) as c:
        for _ in range(4):
            seen = set()
            cursor = b"0"
            for _ in range(100000):  # bound on one iteration's calls
                r = c.call("SCAN", cursor, "COUNT", 100)
                calls += 1
                if r.kind != "*" or len(r.value) != 2:
                    errors.append(r.raw[:100])
                    break
                cursor = r.value[0].value
                for k in r.value[1].value:
                    returned += 1
                    if k.value.startswith(b"stable:"):
                        seen.add(k.value)
                if cursor == b"0":
                    break
            scans += 1
            miss = STABLE - len(seen)
            missing_total += miss
            if miss and first_missing is None:
                first_missing = sorted(set(b"stable:%d" % i for i in range(STABLE)) - seen)[:5]
    stop.set()
    res = [q.get(timeout=300) for _ in churners]
    for p in churners:
        p.join(30)
    added = sum(r[0] for r in res)
    deleted = sum(r[1] for r in res)
    errors += [e for r in res for e in r[2]]
    diag("SCAN: %d full scans (%d calls, %d keys returned) over %d stable keys (DBSIZE %r) "
         "while 2 clients added %d and deleted %d other keys; stable keys missed: %d"
         % (scans, calls, returned, STABLE, size0, added, deleted, missing_total))
    for e in errors[:5]:
        diag("  %r" % (e,))
    ok(missing_total == 0 and not errors and scans == 4,
       "every SCAN returned each of the %d stable keys at least once" % STABLE)
    if first_missing:
        diag("  e.g. missing: %r" % first_missing)
    ok(added > 0 and added == deleted, "the churn clients' keys were all added and deleted (%d)" % added)


def main():
    z = start_zarisd(threads=THREADS)
    diag("zarisd: %s" % " ".join(z.argv))
    check_incr(z)
    check_mset_mget(z)
    check_scan(z)
    ok(z.alive(), "zarisd is still running")
    if not z.alive():
        diag(z.log_tail())
    is_(z.stop(), 0, "zarisd exits with status 0 on SIGTERM")
    done_testing()


if __name__ == "__main__":
    main()
