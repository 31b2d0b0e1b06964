#!/usr/bin/python3
# blocking.t — blocking list pops across worker threads (commands/blocking.h).
#
# For each io backend (uring when the kernel has it, epoll) and --threads 2
# and 3:
#  * a client blocked on one worker is served by a push from a client on
#    another worker (which worker holds a connection is read from INFO
#    threads' per-worker connected_clients as connections open one by one);
#  * FIFO: three clients that block in turn are served in that order by
#    three single pushes, and by one push of three elements;
#  * timeouts: 0.1 s gives the null reply of each command (compared byte for
#    byte with redis-server, RESP2 and RESP3); timeout 0 waits for a push;
#  * BLMOVE between keys of many different shards (lock order), chained
#    BLMOVEs, a destination of the wrong type;
#  * a client that disconnects while blocked loses nothing: the next push
#    goes to the next waiter, or stays in the list;
#  * requests pipelined after a blocking command run only once it is served;
#  * CLIENT UNBLOCK (TIMEOUT / ERROR), INFO blocked_clients, MULTI/EXEC;
#  * stress: 24 blockers (BLPOP, BLMPOP, BLMOVE) and 4 pushers over 4 keys:
#    every pushed element is received exactly once.

import os
import random
import select
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from zaris import *  # noqa: E402,F403

T_WAIT = 10.0  # bound on every poll loop


def info_field(cl, section, name):
    r = cl.callv("INFO", section).decode()
    for line in r.split("\r\n"):
        if line.startswith(name + ":"):
            return line.split(":", 1)[1]
    return None


def blocked(ctrl):
    return int(info_field(ctrl, "clients", "blocked_clients"))


def wait_blocked(ctrl, n):
    """Polls INFO until blocked_clients == n; returns whether it got there."""
    end = time.monotonic() + T_WAIT
    while time.monotonic() < end:
        if blocked(ctrl) == n:
            return True
        time.sleep(0.005)
    return False


def clients_on_distinct_workers(srv, ctrl, n):
    """n clients, each on a worker different from the previous one's when
    possible (opens extra connections until it finds them)."""
    pool, chosen = [], []
    for _ in range(64):
        c, w = connect_on_worker(srv, ctrl, T_WAIT / SLOW)
        pool.append((c, w))
        if w is not None and (not chosen or w != chosen[-1][1]):
            chosen.append((c, w))
            if len(chosen) == n:
                break
    extra = [c for c, w in pool if all(c is not x for x, _ in chosen)]
    return chosen, extra


def readable(cl, t=0.2):
    if cl.buf:
        return True
    r, _, _ = select.select([cl.sock], [], [], t)
    return bool(r)


def test_cross_worker(srv, ctrl, tag):
    chosen, extra = clients_on_distinct_workers(srv, ctrl, 2)
    ok(len(chosen) == 2 and chosen[0][1] != chosen[1][1], "%s: waiter and pusher on different workers (%s)" %
       (tag, [w for _, w in chosen]))
    if len(chosen) < 2:
        return
    (waiter, ww), (pusher, pw) = chosen
    waiter.send("BLPOP", "xw", "0")
    ok(wait_blocked(ctrl, 1), "%s: INFO blocked_clients is 1" % tag)
    ok(not readable(waiter), "%s: no reply while blocked" % tag)
    is_(pusher.callv("RPUSH", "xw", "v1"), 1, "%s: RPUSH counts the pushed element" % tag)
    is_(waiter.read_reply().py(), [b"xw", b"v1"], "%s: waiter on %s served by push on %s" % (tag, ww, pw))
    is_(pusher.callv("EXISTS", "xw"), 0, "%s: served element left the list" % tag)
    ok(wait_blocked(ctrl, 0), "%s: blocked_clients back to 0" % tag)
    for c in [waiter, pusher] + extra:
        c.close()


def test_fifo(srv, ctrl, tag):
    chosen, extra = clients_on_distinct_workers(srv, ctrl, 3)
    ws = [c for c, _ in chosen]
    while len(ws) < 3:
        ws.append(srv.client())
    pusher = srv.client()
    for rnd, single in ((1, True), (2, False)):
        for i, c in enumerate(ws):
            c.send("BLPOP", "ff", "other", "0")
            ok(wait_blocked(ctrl, i + 1), "%s: fifo round %d: waiter %d blocked" % (tag, rnd, i))
        if single:
            for i in range(3):
                pusher.callv("RPUSH", "ff", "e%d" % i)
        else:
            pusher.callv("RPUSH", "ff", "e0", "e1", "e2")
        got = [c.read_reply().py() for c in ws]
        is_(got, [[b"ff", b"e0"], [b"ff", b"e1"], [b"ff", b"e2"]],
            "%s: fifo round %d (%s): served in blocking order" % (tag, rnd, "single pushes" if single else "one push"))
    for c in ws + extra + [pusher]:
        c.close()


TIMEOUT_CMDS = [
    ("BLPOP", "tk", "0.1"),
    ("BRPOP", "tk", "tk2", "0.1"),
    ("BLMPOP", "0.1", "2", "tk", "tk2", "LEFT", "COUNT", "3"),
    ("BLMOVE", "tk", "td", "LEFT", "RIGHT", "0.1"),
    ("BRPOPLPUSH", "tk", "td", "0.1"),
]


def timeout_replies(srv):
    out = []
    for proto in (2, 3):
        c = srv.client()
        if proto == 3:
            c.callv("HELLO", "3")
        for cmd in TIMEOUT_CMDS:
            t0 = time.monotonic()
            r = c.call(*cmd)
            out.append((proto, cmd[0], r.raw, time.monotonic() - t0))
        # MULTI/EXEC: the blocking form answers as timed out at once
        c.callv("MULTI")
        c.call("BLPOP", "tk", "0")
        c.call("BLMOVE", "tk", "td", "LEFT", "RIGHT", "0")
        c.call("BLMPOP", "0", "1", "tk", "LEFT")
        r = c.call("EXEC")
        out.append((proto, "EXEC", r.raw, 0.0))
        c.close()
    return out


def served_events(srv, ctrl):
    """The keyspace events a subscriber sees when a push serves a blocked
    BLPOP, BLMOVE and BLMPOP (pushed by another client)."""
    ctrl.call("CONFIG", "SET", "notify-keyspace-events", "Elgn")
    sub = srv.client()
    sub.call("PSUBSCRIBE", "__keyevent@0__:*")
    sub.call("SUBSCRIBE", "marker")
    out = []
    for block, push in ((("BLPOP", "nq1", "0"), ("RPUSH", "nq1", "a")),
                        (("BLMOVE", "nq2", "nd", "RIGHT", "LEFT", "0"), ("RPUSH", "nq2", "a", "b")),
                        (("BLMPOP", "0", "1", "nq3", "LEFT", "COUNT", "5"), ("LPUSH", "nq3", "a", "b"))):
        b, p = srv.client(), srv.client()
        b.send(*block)
        wait_blocked(ctrl, 1)
        p.call(*push)
        out.append(b.read_reply().raw)
        # the pusher's worker sent the events (the served pops too: they
        # run after its command, on its thread); a message it publishes now
        # comes after them (delivery is FIFO per publishing thread)
        p.call("PUBLISH", "marker", "end")
        while True:
            r = sub.read_reply().py()
            if r[0] == b"message":
                break
            out.append((r[2], r[3]))
        b.close()
        p.close()
    sub.close()
    ctrl.call("DEL", "nd")
    ctrl.call("CONFIG", "SET", "notify-keyspace-events", "")
    return out


def test_timeouts(srv, ctrl, ref, tag):
    mine = timeout_replies(srv)
    for (proto, name, raw, dt), (_, _, rraw, _) in zip(mine, ref):
        is_(raw, rraw, "%s: RESP%d %s timeout reply is redis-server's" % (tag, proto, name))
        if name != "EXEC":
            ok(dt >= 0.09, "%s: RESP%d %s waited its timeout (%.3f s)" % (tag, proto, name, dt))
    # timeout 0 waits until a push
    c, p = srv.client(), srv.client()
    c.send("BRPOP", "zero", "0")
    ok(wait_blocked(ctrl, 1), "%s: timeout 0 blocks" % tag)
    time.sleep(0.4)  # several timer periods: it must still be blocked
    ok(not readable(c, 0.05), "%s: timeout 0 still blocked after 0.4 s" % tag)
    p.callv("LPUSH", "zero", "late")
    is_(c.read_reply().py(), [b"zero", b"late"], "%s: timeout 0 served by the push" % tag)
    c.close()
    p.close()


def test_blmove(srv, ctrl, tag):
    p = srv.client()
    n = 12  # keys spread over shards: both lock orders occur
    ws = []
    for i in range(n):
        c = srv.client()
        c.send("BLMOVE", "src{%d}" % i, "dst-%d" % (i * 7919), "LEFT", "RIGHT", "0")
        ws.append(c)
    ok(wait_blocked(ctrl, n), "%s: %d BLMOVE waiters blocked" % (tag, n))
    for i in range(n):
        p.callv("RPUSH", "src{%d}" % i, "m%d" % i)
    good = 0
    for i, c in enumerate(ws):
        if c.read_reply().py() == b"m%d" % i and p.callv("LRANGE", "dst-%d" % (i * 7919), "0", "-1") == [b"m%d" % i] \
                and p.callv("EXISTS", "src{%d}" % i) == 0:
            good += 1
        c.close()
    is_(good, n, "%s: every BLMOVE moved its element to its destination" % tag)
    # chained: a -> b -> c
    c1, c2 = srv.client(), srv.client()
    c1.send("BLMOVE", "chain1", "chain2", "RIGHT", "LEFT", "0")
    c2.send("BLMOVE", "chain2", "chain3", "LEFT", "RIGHT", "0")
    ok(wait_blocked(ctrl, 2), "%s: chained BLMOVE waiters blocked" % tag)
    p.callv("RPUSH", "chain1", "foo")
    is_([c1.read_reply().py(), c2.read_reply().py()], [b"foo", b"foo"], "%s: chained BLMOVE both served" % tag)
    is_([p.callv("EXISTS", "chain1", "chain2"), p.callv("LRANGE", "chain3", "0", "-1")], [0, [b"foo"]],
        "%s: chained BLMOVE result" % tag)
    # destination of the wrong type: WRONGTYPE, the element stays
    p.callv("SET", "wdst", "string")
    c1.send("BLMOVE", "wsrc", "wdst", "LEFT", "LEFT", "0")
    ok(wait_blocked(ctrl, 1), "%s: BLMOVE to a string blocked" % tag)
    p.callv("RPUSH", "wsrc", "keep")
    r = c1.read_reply()
    ok(r.is_error() and r.value.startswith("WRONGTYPE"), "%s: BLMOVE to a string gets WRONGTYPE (%r)" % (tag, r.raw))
    is_(p.callv("LRANGE", "wsrc", "0", "-1"), [b"keep"], "%s: element stays in the source" % tag)
    for c in (c1, c2, p):
        c.close()


def test_disconnect(srv, ctrl, tag):
    p = srv.client()
    c1, c2 = srv.client(), srv.client()
    c1.send("BLPOP", "dk", "0")
    ok(wait_blocked(ctrl, 1), "%s: first waiter blocked" % tag)
    c2.send("BLPOP", "dk", "0")
    ok(wait_blocked(ctrl, 2), "%s: second waiter blocked" % tag)
    c1.close()
    ok(wait_blocked(ctrl, 1), "%s: disconnected waiter left the queue" % tag)
    p.callv("RPUSH", "dk", "x")
    is_(c2.read_reply().py(), [b"dk", b"x"], "%s: next waiter got the element" % tag)
    c2.close()
    c3 = srv.client()
    c3.send("BLMOVE", "dk", "dd", "LEFT", "LEFT", "0")
    ok(wait_blocked(ctrl, 1), "%s: third waiter blocked" % tag)
    c3.close()
    ok(wait_blocked(ctrl, 0), "%s: third waiter gone" % tag)
    p.callv("RPUSH", "dk", "y")
    is_([p.callv("LRANGE", "dk", "0", "-1"), p.callv("EXISTS", "dd")], [[b"y"], 0],
        "%s: with no waiter left the element stays in the list" % tag)
    p.close()


def test_pipeline_and_unblock(srv, ctrl, tag):
    p = srv.client()
    c = srv.client()
    c.send_raw(encode_command("BLPOP", "pk", "0") + encode_command("PING") + encode_command("LLEN", "pk"))
    ok(wait_blocked(ctrl, 1), "%s: pipelined BLPOP blocked" % tag)
    ok(not readable(c), "%s: PING after BLPOP not answered while blocked" % tag)
    p.callv("RPUSH", "pk", "a", "b")
    got = [c.read_reply().py() for _ in range(3)]
    is_(got, [[b"pk", b"a"], "PONG", 1], "%s: pipelined requests run after the wake-up, in order" % tag)
    cid = c.callv("CLIENT", "ID")
    is_(p.callv("CLIENT", "UNBLOCK", str(cid)), 0, "%s: CLIENT UNBLOCK of an unblocked client is 0" % tag)
    c.send("BLPOP", "uk", "0")
    ok(wait_blocked(ctrl, 1), "%s: blocked for CLIENT UNBLOCK" % tag)
    is_(p.callv("CLIENT", "UNBLOCK", str(cid)), 1, "%s: CLIENT UNBLOCK is 1" % tag)
    is_(c.read_reply().raw, b"*-1\r\n", "%s: CLIENT UNBLOCK gives the timeout reply" % tag)
    c.send("BLMOVE", "uk", "ud", "LEFT", "LEFT", "0")
    ok(wait_blocked(ctrl, 1), "%s: blocked for CLIENT UNBLOCK ERROR" % tag)
    is_(p.callv("CLIENT", "UNBLOCK", str(cid), "ERROR"), 1, "%s: CLIENT UNBLOCK ERROR is 1" % tag)
    is_(c.read_reply().raw, b"-UNBLOCKED client unblocked via CLIENT UNBLOCK\r\n", "%s: UNBLOCKED error" % tag)
    is_(c.callv("PING"), "PONG", "%s: client usable after unblock" % tag)
    # a transaction that pushes and pops serves the waiter with what is left
    c.send("BLPOP", "mk", "0")
    ok(wait_blocked(ctrl, 1), "%s: blocked before MULTI" % tag)
    p.callv("MULTI")
    p.call("RPUSH", "mk", "m1", "m2")
    p.call("LPOP", "mk")
    is_(p.callv("EXEC"), [2, b"m1"], "%s: EXEC replies" % tag)
    is_(c.read_reply().py(), [b"mk", b"m2"], "%s: waiter served after EXEC with what is left" % tag)
    c.close()
    p.close()


def test_stress(srv, ctrl, tag):
    keys = ["s%d" % i for i in range(4)]
    pushers, per_pusher = 4, 600
    total = pushers * per_pusher
    received, moved = [], []
    lock = threading.Lock()
    stop = threading.Event()
    errors = []

    def blocker(kind, seed):
        r = random.Random(seed)
        c = srv.client()
        try:
            while not stop.is_set():
                ks = r.sample(keys, r.randint(1, 4))
                if kind == 0:
                    v = c.call("BLPOP", *ks, "0.2").py()
                    got = [v[1]] if v else []
                elif kind == 1:
                    v = c.call("BLMPOP", "0.2", str(len(ks)), *ks, "RIGHT", "COUNT", "2").py()
                    got = list(v[1]) if v else []
                else:
                    v = c.call("BLMOVE", ks[0], "sink", "LEFT", "RIGHT", "0.2").py()
                    got = [v] if v else []
                    if v:
                        with lock:
                            moved.append(v)
                with lock:
                    received.extend(got)
        except Exception as e:  # noqa: BLE001
            errors.append(repr(e))
        finally:
            c.close()

    # what each pusher really sent (one or two elements per push)
    sent = []

    def pusher_exact(pi):
        c = srv.client()
        r = random.Random(100 + pi)
        try:
            j = 0
            while j < per_pusher:
                k = r.choice(keys)
                if r.random() < 0.3 and j + 1 < per_pusher:
                    vals = ["p%d-%d" % (pi, j), "p%d-%d" % (pi, j + 1)]
                else:
                    vals = ["p%d-%d" % (pi, j)]
                c.callv("RPUSH" if r.random() < 0.5 else "LPUSH", k, *vals)
                with lock:
                    sent.extend(v.encode() for v in vals)
                j += len(vals)
        except Exception as e:  # noqa: BLE001
            errors.append(repr(e))
        finally:
            c.close()

    bl = [threading.Thread(target=blocker, args=(i % 3, i)) for i in range(24)]
    pu = [threading.Thread(target=pusher_exact, args=(i,)) for i in range(pushers)]
    for t in bl + pu:
        t.start()
    for t in pu:
        t.join(120)
    end = time.monotonic() + 60
    while time.monotonic() < end:
        with lock:
            if len(received) >= total:
                break
        time.sleep(0.05)
    stop.set()
    for t in bl:
        t.join(30)
    # what blockers did not get must still be in the lists
    left = []
    for k in keys:
        left += ctrl.callv("LRANGE", k, "0", "-1")
    sink = ctrl.callv("LRANGE", "sink", "0", "-1")
    diag("%s: stress sent %d, received %d, left %d, moved %d" % (tag, len(sent), len(received), len(left), len(moved)))
    is_(errors, [], "%s: stress clients saw no error" % tag)
    is_(len(sent), total, "%s: stress pushed %d elements" % (tag, total))
    is_(sorted(received + left), sorted(sent), "%s: every pushed element received exactly once (or still listed)" % tag)
    is_(sorted(sink), sorted(moved), "%s: BLMOVE replies match the sink list" % tag)
    ok(wait_blocked(ctrl, 0), "%s: no client left blocked" % tag)


def main():
    backends = ["epoll"]
    if io_uring_available():
        backends.insert(0, "uring")
    else:
        diag("io_uring unavailable: epoll only")
    ref_srv = start_redis()
    ref = timeout_replies(ref_srv)
    ref_events = served_events(ref_srv, ref_srv.client())
    note("redis-server, served pops: %r" % (ref_events,))
    ref_srv.stop()
    for backend in backends:
        for threads in (2, 3):
            tag = "%s/threads=%d" % (backend, threads)
            srv = start_zarisd(threads=threads, io_backend=backend)
            ctrl = srv.client()
            test_cross_worker(srv, ctrl, tag)
            test_fifo(srv, ctrl, tag)
            test_timeouts(srv, ctrl, ref, tag)
            is_(served_events(srv, ctrl), ref_events,
                "%s: a served BLPOP / BLMOVE / BLMPOP: replies and keyspace events as redis-server's" % tag)
            test_blmove(srv, ctrl, tag)
            test_disconnect(srv, ctrl, tag)
            test_pipeline_and_unblock(srv, ctrl, tag)
            test_stress(srv, ctrl, tag)
            ok(srv.alive(), "%s: server alive" % tag)
            ctrl.close()
            is_(srv.stop(), 0, "%s: clean exit" % tag)
    done_testing()


main()
