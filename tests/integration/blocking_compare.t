#!/usr/bin/python3
# blocking_compare.t — blocking pops against redis-server 7.0: their
# timeouts, and which writes serve them.
#
# Timeouts. A blocked client's timeout has a timer of its own on its worker
# (armed for the earliest deadline of that worker's blocked clients), not
# the cron's tick. The timing checks run with `hz 1`: N sequential
# `BLPOP nolist 0.001` then take N ticks (at least N - 1 seconds) when
# timeouts wait for the tick, a few milliseconds each with the timer, so
# "under 0.9 x (N - 1) s" separates the two by structure: no tick-bound
# server can be that fast, and only a machine so loaded that each round
# trip took most of a second could make the timer that slow (a bound of
# N x 0.25 s, a factor of four, was a guess at a machine's speed).
# (redis-server 7.0.15 itself waits for its hz tick here: its beforeSleep
# handles the timeout radix tree, but its event loop sleeps until the next
# timer event.) A long timeout taken first must not
# hold back a short one that comes later on the same worker (the timer
# follows the earliest deadline), and INFO blocked_clients reads 0 once
# the last timed-out client got its reply. The null replies of every
# blocking pop after a timeout, RESP2 and RESP3, are redis-server's.
#
# Serving. Every write that makes a key hold a list or a sorted set serves
# the clients blocked on it (Redis's signalKeyAsReady in dbAdd, and
# scanDatabaseForReadyKeys for SWAPDB): RENAME, RENAMENX, COPY (same db and
# DB n), MOVE, SWAPDB, LMOVE/RPOPLPUSH, ZUNIONSTORE/ZINTERSTORE/ZDIFFSTORE/
# ZRANGESTORE, pushes and ZADD/ZINCRBY, under every blocking pop (BLPOP,
# BRPOP, BLMOVE, BRPOPLPUSH, BLMPOP, BZPOPMIN, BZPOPMAX, BZMPOP). Each
# scenario runs the same steps on redis-server and on zarisd (2 workers)
# and compares the raw replies byte for byte: the writer's reply, what the
# waiter gets, and what is left in the keys. A set (SUNIONSTORE) arriving
# under BZPOPMIN does not serve.
#
# The io backend is $ZARIS_IO_BACKEND's (the suite runs this file once per
# backend).

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from zaris import *  # noqa: E402,F403

T_WAIT = 10.0 * SLOW  # bound on every wait for a reply


def served(w):
    """The waiter's reply, or a marker when none comes within T_WAIT."""
    w.settimeout(T_WAIT)
    try:
        return w.read_reply().raw
    except (TimeoutError, OSError):
        return b"<no reply>"


# ----------------------------------------------------------------- timeouts

TIMEOUT_CMDS = [
    ("BLPOP", "nokey", "0.01"),
    ("BRPOP", "nokey", "nokey2", "0.01"),
    ("BLMOVE", "nokey", "dst", "LEFT", "RIGHT", "0.01"),
    ("BRPOPLPUSH", "nokey", "dst", "0.01"),
    ("BLMPOP", "0.01", "2", "nokey", "nokey2", "LEFT", "COUNT", "3"),
    ("BZPOPMIN", "nokey", "0.01"),
    ("BZPOPMAX", "nokey", "nokey2", "0.01"),
    ("BZMPOP", "0.01", "1", "nokey", "MAX", "COUNT", "2"),
]


def timeout_replies(srv):
    out = []
    for proto in (2, 3):
        c = srv.client()
        if proto == 3:
            c.call("HELLO", "3")
        for cmd in TIMEOUT_CMDS:
            out.append(("RESP%d %s" % (proto, " ".join(cmd)), c.call(*cmd).raw))
        c.close()
    return out


def sequential_short(srv, n, name):
    """N sequential BLPOP nolist 0.001 on one connection: all must give a
    null, in less time than the 1 Hz tick set by the caller would take at
    the very least (N - 1 ticks), with a tenth to spare."""
    c = srv.client()
    t0 = time.monotonic()
    replies = set()
    for _ in range(n):
        replies.add(c.call("BLPOP", "nolist", "0.001").raw)
    took = time.monotonic() - t0
    c.close()
    note("%s: %d x BLPOP nolist 0.001 took %.3f s" % (name, n, took))
    ok(replies == {b"*-1\r\n"}, "%s: every BLPOP nolist 0.001 answers a null array" % name)
    bound = 0.9 * (n - 1)
    ok(took < bound, "%s: %d sequential 1 ms timeouts in under %.1f s (took %.3f s; waiting for a "
       "1 Hz tick takes at least %d s)" % (name, n, bound, took, n - 1))


def timeout_precision(srv):
    sequential_short(srv, 20, "alone")

    # A long deadline armed first, on the only worker: the short ones that
    # come later must still fire on their own deadline.
    admin = srv.client()
    long_waiter = start_blocked(srv, admin, 1, "BLPOP", "nolist", "60")
    sequential_short(srv, 10, "behind a 60 s waiter")
    is_(blocked_clients(admin), 1, "the 60 s waiter is still blocked")
    admin.call("RPUSH", "nolist", "x")
    is_(served(long_waiter), b"*2\r\n$6\r\nnolist\r\n$1\r\nx\r\n", "the 60 s waiter is served by a push")
    long_waiter.close()

    # Many deadlines at once on the one worker, in no order, three of the
    # waiters leaving early (served by a push, CLIENT UNBLOCK, a closed
    # connection): every other one times out on its own, the 60 s one stays.
    # The three that leave and the 60 s one are blocked first, with
    # deadlines no wait of this test reaches, and counted as blocked; the
    # short ones come after, so the timer goes from far deadlines to nearer
    # ones while the leavers' are held. (Sent first, the short ones could
    # time out before the others were counted: on a loaded machine the
    # count of 13 never came and the 60 s waiter "did not block".)
    timeouts = ["0.25", "0.05", "0.4", "0.15", "0.5", "0.1", "0.35", "0.2", "0.45", "0.3"]
    pushed = start_blocked(srv, admin, 1, "BLPOP", "pushme", "30")
    unblocked = srv.client()
    cid = unblocked.call("CLIENT", "ID").value
    unblocked.send("BLPOP", "nolist", "40")
    gone = start_blocked(srv, admin, 3, "BLPOP", "nolist", "20")
    gone.close()
    long_waiter = start_blocked(srv, admin, 3, "BLPOP", "nolist", "60")
    timed = []
    for t in timeouts:
        w = srv.client()
        w.send("BLPOP", "nolist", t)
        timed.append(w)
    admin.call("RPUSH", "pushme", "v")
    is_(admin.call("CLIENT", "UNBLOCK", str(cid), "TIMEOUT").value, 1, "CLIENT UNBLOCK of a 40 s waiter")
    is_(served(pushed), b"*2\r\n$6\r\npushme\r\n$1\r\nv\r\n", "the 30 s waiter served by a push got it")
    is_(served(unblocked), b"*-1\r\n", "the unblocked waiter got a null array")
    is_(set(served(w) for w in timed), {b"*-1\r\n"}, "10 waiters with timeouts 0.05 to 0.5 s in no order: "
        "each got a null array")
    is_(blocked_clients(admin), 1, "only the 60 s waiter is left blocked")
    long_waiter.close()
    for w in timed + [pushed, unblocked]:
        w.close()
    wait_blocked(admin, 0)

    # A batch that times out together: the count drops with the replies.
    waiters = []
    for _ in range(20):
        w = srv.client()
        w.send("BLPOP", "nolist", "0.05")
        waiters.append(w)
    got = set(served(w) for w in waiters)
    is_(got, {b"*-1\r\n"}, "20 clients with timeout 0.05: each got a null array")
    is_(blocked_clients(admin), 0, "INFO blocked_clients is 0 right after the last timeout reply")
    for w in waiters:
        w.close()
    admin.close()


# ------------------------------------------------------------------ serving

LIST_POPS = [
    ("BLPOP", lambda k: ("BLPOP", k, "0")),
    ("BRPOP", lambda k: ("BRPOP", "none{t}", k, "0")),
    ("BLMOVE", lambda k: ("BLMOVE", k, "dst{t}", "RIGHT", "LEFT", "0")),
    ("BRPOPLPUSH", lambda k: ("BRPOPLPUSH", k, "dst{t}", "0")),
    ("BLMPOP LEFT", lambda k: ("BLMPOP", "0", "1", k, "LEFT")),
    ("BLMPOP RIGHT COUNT 2", lambda k: ("BLMPOP", "0", "2", "none{t}", k, "RIGHT", "COUNT", "2")),
]

ZSET_POPS = [
    ("BZPOPMIN", lambda k: ("BZPOPMIN", k, "0")),
    ("BZPOPMAX", lambda k: ("BZPOPMAX", "none{t}", k, "0")),
    ("BZMPOP MIN", lambda k: ("BZMPOP", "0", "1", k, "MIN")),
    ("BZMPOP MAX COUNT 2", lambda k: ("BZMPOP", "0", "2", "none{t}", k, "MAX", "COUNT", "2")),
]

# A writer: (name, waiter's db, setup [(db, cmd)], the write [(db, cmd)]).
# The waiter blocks on foo{t} after the setup; the write's replies are
# compared. The source list is [hij, def, abc], the sorted sets
# src{t} = {a:1 b:2 c:3} and o{t} = {b:5 d:4}.
LSRC = ("LPUSH", "bob{t}", "abc", "def", "hij")
LIST_WRITERS = [
    ("RENAME", 0, [(0, LSRC)], [(0, ("RENAME", "bob{t}", "foo{t}"))]),
    ("RENAMENX", 0, [(0, LSRC)], [(0, ("RENAMENX", "bob{t}", "foo{t}"))]),
    ("COPY", 0, [(0, LSRC)], [(0, ("COPY", "bob{t}", "foo{t}"))]),
    ("COPY DB 1", 1, [(0, LSRC)], [(0, ("COPY", "bob{t}", "foo{t}", "DB", "1"))]),
    ("MOVE", 1, [(0, ("LPUSH", "foo{t}", "abc", "def", "hij"))], [(0, ("MOVE", "foo{t}", "1"))]),
    ("SWAPDB", 0, [(1, ("LPUSH", "foo{t}", "abc", "def", "hij"))], [(0, ("SWAPDB", "0", "1"))]),
    ("LMOVE", 0, [(0, LSRC)], [(0, ("LMOVE", "bob{t}", "foo{t}", "RIGHT", "LEFT"))]),
    ("RPOPLPUSH", 0, [(0, LSRC)], [(0, ("RPOPLPUSH", "bob{t}", "foo{t}"))]),
    ("RPUSH", 0, [], [(0, ("RPUSH", "foo{t}", "abc", "def", "hij"))]),
    ("MULTI RPUSH+LPOP", 0, [], [(0, ("MULTI",)), (0, ("RPUSH", "foo{t}", "abc", "def")),
                                 (0, ("LPOP", "foo{t}")), (0, ("EXEC",))]),
    # PERSIST answers 1 when the key has a TTL: a TTL read in seconds
    # rounds to 999 on a loaded machine on one server and not the other
    ("RENAME of a key with a TTL", 0, [(0, LSRC), (0, ("EXPIRE", "bob{t}", "1000"))],
     [(0, ("RENAME", "bob{t}", "foo{t}")), (0, ("PERSIST", "foo{t}"))]),
    ("RENAME over a string set after blocking", 0, [(0, LSRC)],
     [(0, ("SET", "foo{t}", "str")), (0, ("RENAME", "bob{t}", "foo{t}"))]),
]

ZSRC = ("ZADD", "src{t}", "1", "a", "2", "b", "3", "c")
ZO = ("ZADD", "o{t}", "5", "b", "4", "d")
ZSET_WRITERS = [
    ("RENAME", 0, [(0, ZSRC)], [(0, ("RENAME", "src{t}", "foo{t}"))]),
    ("RENAMENX", 0, [(0, ZSRC)], [(0, ("RENAMENX", "src{t}", "foo{t}"))]),
    ("COPY", 0, [(0, ZSRC)], [(0, ("COPY", "src{t}", "foo{t}"))]),
    ("COPY DB 1", 1, [(0, ZSRC)], [(0, ("COPY", "src{t}", "foo{t}", "DB", "1"))]),
    ("MOVE", 1, [(0, ("ZADD", "foo{t}", "1", "a", "2", "b"))], [(0, ("MOVE", "foo{t}", "1"))]),
    ("SWAPDB", 0, [(1, ("ZADD", "foo{t}", "1", "a", "2", "b"))], [(0, ("SWAPDB", "1", "0"))]),
    ("ZADD", 0, [], [(0, ("ZADD", "foo{t}", "1", "a", "2", "b", "3", "c"))]),
    ("ZADD INCR", 0, [], [(0, ("ZADD", "foo{t}", "INCR", "7", "m"))]),
    ("ZINCRBY", 0, [], [(0, ("ZINCRBY", "foo{t}", "2", "m"))]),
    ("ZUNIONSTORE", 0, [(0, ZSRC), (0, ZO)], [(0, ("ZUNIONSTORE", "foo{t}", "2", "src{t}", "o{t}"))]),
    ("ZINTERSTORE", 0, [(0, ZSRC), (0, ZO)], [(0, ("ZINTERSTORE", "foo{t}", "2", "src{t}", "o{t}"))]),
    ("ZDIFFSTORE", 0, [(0, ZSRC), (0, ZO)], [(0, ("ZDIFFSTORE", "foo{t}", "2", "src{t}", "o{t}"))]),
    ("ZRANGESTORE", 0, [(0, ZSRC)], [(0, ("ZRANGESTORE", "foo{t}", "src{t}", "1", "-1"))]),
    ("ZINTERSTORE empty", 0, [(0, ZSRC)], [(0, ("ZINTERSTORE", "foo{t}", "2", "src{t}", "none{t}")),
                                           (0, ("ZADD", "foo{t}", "9", "late"))]),
    ("SUNIONSTORE (a set) then ZADD", 0, [(0, ("SADD", "s{t}", "x"))],
     [(0, ("SUNIONSTORE", "foo{t}", "s{t}")), (0, ("DEL", "foo{t}")), (0, ("ZADD", "foo{t}", "9", "late"))]),
]

STATE_LIST = [("LRANGE", "foo{t}", "0", "-1"), ("LRANGE", "dst{t}", "0", "-1"), ("LRANGE", "bob{t}", "0", "-1")]
STATE_ZSET = [("ZRANGE", "foo{t}", "0", "-1", "WITHSCORES"), ("EXISTS", "src{t}")]


def run_scenario(srv, admin, pop, writer, state, proto):
    """One waiter (POP on foo{t}, speaking RESP PROTO) and one WRITER; the
    raw replies."""
    wname, wdb, setup, writes = writer
    admin.call("SELECT", "0")
    admin.call("FLUSHALL")
    for db, cmd in setup:
        admin.call("SELECT", str(db))
        admin.call(*cmd)
    setup = ([("HELLO", "3")] if proto == 3 else []) + ([("SELECT", str(wdb))] if wdb else [])
    w = start_blocked(srv, admin, 1, *pop("foo{t}"), setup=setup)
    writer_cl = srv.client()
    replies = []
    cur = 0
    for db, cmd in writes:
        if db != cur:
            writer_cl.call("SELECT", str(db))
            cur = db
        replies.append(writer_cl.call(*cmd).raw)
    replies.append(served(w))
    for db in sorted({0, wdb}):
        admin.call("SELECT", str(db))
        replies += [admin.call(*s).raw for s in state]
    wait_blocked(admin, 0)
    w.close()
    writer_cl.close()
    return replies


def serve_scenarios(srv):
    out = []
    admin = srv.client()
    for proto in (2, 3):
        for pops, writers, state in ((LIST_POPS, LIST_WRITERS, STATE_LIST), (ZSET_POPS, ZSET_WRITERS, STATE_ZSET)):
            for pname, pop in pops:
                for writer in writers:
                    out.append(("RESP%d %s served by %s" % (proto, pname, writer[0]),
                                run_scenario(srv, admin, pop, writer, state, proto)))
    # Two waiters, a BLMOVE chain: RENAME serves the first, whose push
    # serves the second (Redis follows the chain in the same call).
    admin.call("FLUSHALL")
    admin.call(*LSRC)
    w1 = start_blocked(srv, admin, 1, "BLMOVE", "foo{t}", "bar{t}", "LEFT", "LEFT", "0")
    w2 = start_blocked(srv, admin, 2, "BLPOP", "bar{t}", "0")
    r = [admin.call("RENAME", "bob{t}", "foo{t}").raw, served(w1), served(w2),
         admin.call("LRANGE", "foo{t}", "0", "-1").raw, admin.call("EXISTS", "bar{t}").raw]
    out.append(("RENAME serves a BLMOVE chain", r))
    w1.close()
    w2.close()
    # Two waiters on one key, FIFO: RENAME of a 3-element list serves both.
    admin.call("FLUSHALL")
    admin.call(*LSRC)
    w1 = start_blocked(srv, admin, 1, "BLPOP", "foo{t}", "0")
    w2 = start_blocked(srv, admin, 2, "BLMPOP", "0", "1", "foo{t}", "RIGHT", "COUNT", "5")
    r = [admin.call("RENAME", "bob{t}", "foo{t}").raw, served(w1), served(w2),
         admin.call("EXISTS", "foo{t}").raw]
    out.append(("RENAME serves two waiters in order", r))
    w1.close()
    w2.close()
    admin.close()
    return out


def compare(want, got):
    for (name, w), (_, g) in zip(want, got):
        if not ok(w == g, name):
            if isinstance(w, bytes):
                diag("redis  %r" % w)
                diag("zarisd %r" % g)
                continue
            diag_steps(w, g)


redis = start_redis()
z1 = start_zarisd(threads=1)
z2 = start_zarisd(threads=2)

compare(timeout_replies(redis), timeout_replies(z2))
# the cron's tick at 1 Hz: a timeout that waited for it would take a second
for srv in (z1, z2):
    is_(srv.client().call("CONFIG", "SET", "hz", "1").raw, b"+OK\r\n", "CONFIG SET hz 1")
timeout_precision(z1)
note("threads 2:")
sequential_short(z2, 20, "threads 2")
compare(serve_scenarios(redis), serve_scenarios(z2))
# a sanitizer's report (a leak of a deadline heap, a race) makes the exit
# status non-zero
for name, srv in (("threads 1", z1), ("threads 2", z2)):
    if not is_(srv.stop(), 0, "zarisd (%s) exits cleanly" % name):
        diag(srv.log_tail())
done_testing()
