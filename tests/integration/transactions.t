#!/usr/bin/python3
"""MULTI/EXEC atomicity and WATCH across worker threads.

- transfers between 10 accounts in MULTI/EXEC from writers on every worker
  keep the total constant in every MULTI-read and MGET snapshot (a
  non-atomic EXEC shows a different sum);
- pairs of keys incremented together in one EXEC are always read equal;
- WATCH sees a write made from another connection (on either worker);
- optimistic WATCH/GET/MULTI/SET/EXEC increments from 8 processes lose
  no update.
Both io backends."""
import multiprocessing as mp
import os
import random
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from zaris import *  # noqa: F401,F403

ACCOUNTS = ["acct:%d" % i for i in range(10)]
START = 1000
FILLER = 2


def writer(port, seed, rounds, out):
    rnd = random.Random(seed)
    c = Client(port)
    for _ in range(rounds):
        a, b = rnd.sample(ACCOUNTS, 2)
        x = rnd.randint(1, 50)
        # a pause between the two halves widens the window a non-atomic
        # EXEC would expose to the readers on the other worker
        filler = [("INCR", "filler"), ("DEBUG", "SLEEP", "0.0005")]
        replies = c.pipeline([("MULTI",), ("DECRBY", a, x), ("INCR", "pair:x")] + filler +
                             [("INCRBY", b, x), ("INCR", "pair:y"), ("EXEC",)])
        if replies[-1].kind != "*" or len(replies[-1].value) != 4 + FILLER:
            out.put(("bad-exec", repr(replies[-1])))
            return
    out.put(("ok", rounds))


def reader(port, rounds, out):
    c = Client(port)
    bad = 0
    for i in range(rounds):
        if i % 2:
            vals = c.callv("MGET", *ACCOUNTS)
        else:
            r = c.pipeline([("MULTI",)] + [("GET", k) for k in ACCOUNTS] + [("EXEC",)])
            vals = [v.value for v in r[-1].value]
        if sum(int(v) for v in vals) != START * len(ACCOUNTS):
            bad += 1
        px, py = c.callv("MGET", "pair:x", "pair:y")
        if px != py:
            bad += 1
    out.put(("reader", bad))


def optimistic(port, n, out):
    c = Client(port)
    done = retries = 0
    while done < n and retries < 100000:
        c.call("WATCH", "counter")
        v = int(c.callv("GET", "counter") or 0)
        r = c.pipeline([("MULTI",), ("SET", "counter", str(v + 1)), ("EXEC",)])
        if r[-1].kind == "*" and r[-1].value is not None:
            done += 1
        else:
            retries += 1
    out.put(("opt", done, retries))


backends = ["epoll"] + (["uring"] if io_uring_available() else [])
for backend in backends:
    srv = start_zarisd(threads=2, io_backend=backend, extra=["--enable-debug-command", "local"])
    c = srv.client()
    c.call("MSET", *sum([[k, str(START)] for k in ACCOUNTS], []))
    q = mp.Queue()
    procs = [mp.Process(target=writer, args=(srv.port, s, 500, q)) for s in range(4)]
    procs += [mp.Process(target=reader, args=(srv.port, 3000, q)) for _ in range(2)]
    for p in procs:
        p.start()
    results = [q.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(30)
    writes = sum(r[1] for r in results if r[0] == "ok")
    bad = sum(r[1] for r in results if r[0] == "reader")
    ok(writes == 2000, "%s: 4 writers ran 2000 transfer transactions (%s)" % (backend, [r for r in results if r[0] != "reader"]))
    ok(bad == 0, "%s: readers saw the total and the pair consistent every time (%d inconsistent)" % (backend, bad))
    total = sum(int(v) for v in c.callv("MGET", *ACCOUNTS))
    is_(total, START * len(ACCOUNTS), "%s: total conserved after the run" % backend)
    is_(c.callv("GET", "pair:x"), b"2000", "%s: every EXEC ran its commands once" % backend)

    # WATCH sees a write from another connection, whichever worker it is on
    aborted = 0
    for i in range(8):
        a, b = srv.client(), srv.client()
        a.call("SET", "w%d" % i, "0")
        a.call("WATCH", "w%d" % i)
        b.call("SET", "w%d" % i, "changed")
        r = a.pipeline([("MULTI",), ("SET", "w%d" % i, "mine"), ("EXEC",)])
        aborted += r[-1].raw in (b"*-1\r\n", b"_\r\n")
        a.close()
        b.close()
    is_(aborted, 8, "%s: WATCH aborted EXEC after a write from another connection, 8 of 8" % backend)

    c.call("SET", "counter", "0")
    procs = [mp.Process(target=optimistic, args=(srv.port, 200, q)) for _ in range(8)]
    for p in procs:
        p.start()
    results = [q.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(30)
    is_(c.callv("GET", "counter"), b"1600", "%s: 8 x 200 optimistic increments, none lost (%d retries)"
        % (backend, sum(r[2] for r in results)))
    c.close()
    srv.stop()
done_testing()
