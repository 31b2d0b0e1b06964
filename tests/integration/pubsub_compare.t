#!/usr/bin/python3
# pubsub_compare.t — pub/sub corners against redis-server 7.0.15 (issue 13).
#
#   * argument-less PUNSUBSCRIBE confirms the patterns in subscription order
#     (Redis keeps a client's patterns in a list): raw replies compared, RESP2
#     and RESP3. Argument-less UNSUBSCRIBE and SUNSUBSCRIBE: Redis walks a
#     dict whose order follows a hash seeded at random on every start, so
#     the names are compared as a set and the counts (which fall one by one
#     whatever the order) as a sequence; zarisd confirms in subscription
#     order, checked on its own.
#   * an (un)subscription is seen by PUBLISH on another worker as soon as it
#     is confirmed: 200 rounds on zarisd --threads 2 with subscriber and
#     publisher on different workers (two clients pipelining SETs keep both
#     workers busy, which widens any window): PSUBSCRIBE / PUNSUBSCRIBE with
#     and without arguments, SUBSCRIBE / UNSUBSCRIBE, SSUBSCRIBE /
#     SUNSUBSCRIBE, RESET, QUIT (after +OK, PUBLISH counts 0, as in Redis,
#     where nothing runs between QUIT's reply and the client's free) and
#     CLIENT KILL ID from the publisher (PUBLISH and NUMSUB count 0 once it
#     answered; the killed client's worker closes it later).
#     Each subscription must count 1 and deliver. The same rounds run on
#     redis-server, so the expected counts are its own. A bare close is only
#     seen when its worker reads the FIN, and nothing orders that against a
#     command on another worker (Redis's one thread hides the same
#     asynchrony): PUBLISH must answer 0 within a bounded wait.
#   * CLIENT REPLY OFF and SKIP mute replies, never pub/sub pushes
#     (Redis's CLIENT_PUSHING): (un)subscribe confirmations, messages,
#     pmessages, smessages and keyspace notifications still reach the
#     client, in RESP2 and in RESP3 (> pushes); the muted PING and errors
#     do not. Raw replies compared with redis-server's.
# Env: ZARIS_BUILD (zarisd's dir).

import os
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from zaris import *  # noqa: E402,F403

ROUNDS = 200
T_READ = 5.0 * SLOW  # a reply that is due; never reached when healthy
T_WAIT = 10.0 * SLOW  # bound on polls


class Timeout(Exception):
    pass


def read(cl):
    """One reply, or Timeout when none comes within T_READ."""
    cl.settimeout(T_READ)
    try:
        return cl.read_reply()
    except OSError:
        raise Timeout()


# ------------------------------------------------------------- worker placement

def per_worker_accepts(ctrl):
    """connections_received of each worker (INFO threads): it only grows,
    so a close elsewhere cannot hide which worker took a new client."""
    out = {}
    for line in ctrl.callv("INFO", "threads").decode().split("\r\n"):
        if line.startswith("worker") and ":" in line:
            name, rest = line.split(":", 1)
            if name[6:].isdigit():
                out[name] = int(dict(kv.split("=", 1) for kv in rest.split(","))["connections_received"])
    return out


def connect_on(srv, ctrl):
    """A new client and the name of its worker (None on redis-server, which
    has one thread). This test opens one connection at a time."""
    before = per_worker_accepts(ctrl)
    c = srv.client()
    c.call("PING")
    if not before:
        return c, None
    now = per_worker_accepts(ctrl)
    up = [w for w in now if now[w] > before.get(w, 0)]
    return c, up[0] if len(up) == 1 else None


def on_worker_other_than(srv, ctrl, worker):
    """A new client on a worker other than WORKER (any client when WORKER is
    None); extra connections are closed."""
    for _ in range(64):
        c, w = connect_on(srv, ctrl)
        if worker is None or (w is not None and w != worker):
            return c, w
        c.close()
    raise RuntimeError("no client landed on a second worker")


def pair(srv, ctrl):
    """(subscriber, publisher) on different workers of zarisd."""
    s, ws = connect_on(srv, ctrl)
    p, wp = on_worker_other_than(srv, ctrl, ws)
    return s, p, (ws, wp)


# ------------------------------------------------------------- 1. unsubscribe order

def order_scenarios(srv):
    """Raw confirmations of argument-less PUNSUBSCRIBE, both protocols."""
    res = []
    for resp in (2, 3):
        with srv.client() as c:
            if resp == 3:
                c.call("HELLO", "3")
            c.send("PSUBSCRIBE", "chan1.*", "chan2.*", "chan3.*")
            raws = [read(c).raw for _ in range(3)]
            c.send("PUNSUBSCRIBE")
            raws += [read(c).raw for _ in range(3)]
            c.send("PUNSUBSCRIBE")  # nothing left: one confirmation with a null
            raws.append(read(c).raw)
            res.append(("RESP%d: PSUBSCRIBE chan1.* chan2.* chan3.*, PUNSUBSCRIBE, PUNSUBSCRIBE" % resp, raws))
    return res


def unsubscribe_all(srv, resp, sub, unsub, names):
    """(kinds, names in confirmation order, counts) of an argument-less
    UNSUB after SUB of NAMES."""
    with srv.client() as c:
        if resp == 3:
            c.call("HELLO", "3")
        c.send(sub, *names)
        for _ in names:
            read(c)
        c.send(unsub)
        got = [read(c).py() for _ in names]
        return [g[0] for g in got], [g[1] for g in got], [g[2] for g in got]


def check_order(redis, zarisd):
    want = order_scenarios(redis)
    got = order_scenarios(zarisd)
    for (name, w), (_, g) in zip(want, got):
        is_(g, w, "raw replies as redis-server's: " + name)
    names = [b"ch%d" % i for i in range(1, 9)]
    for resp in (2, 3):
        for sub, unsub in (("SUBSCRIBE", "UNSUBSCRIBE"), ("SSUBSCRIBE", "SUNSUBSCRIBE")):
            wk, wn, wc = unsubscribe_all(redis, resp, sub, unsub, names)
            zk, zn, zc = unsubscribe_all(zarisd, resp, sub, unsub, names)
            ok(zk == wk and sorted(zn) == sorted(wn) and zc == wc,
               "RESP%d: %s of 8, argument-less %s: the same names (a set: Redis's order is its "
               "seeded hash's) and counts 7..0 as redis-server" % (resp, sub, unsub))
            is_(zn, names, "RESP%d: zarisd confirms the %s in subscription order" % (resp, "channels"
                                                                                     if sub == "SUBSCRIBE"
                                                                                     else "shard channels"))


# ------------------------------------------------------------- 2. visibility

class Noise:
    """Clients pipelining SETs (one per worker of zarisd), so that a worker
    finishes a send and takes up its next event later: a subscription that
    lingers after its confirmation shows."""

    def __init__(self, srv, ctrl, n=2):
        self.stop = threading.Event()
        self.threads = []
        first, w = connect_on(srv, ctrl)
        clients = [first]
        while len(clients) < n:
            c, w = on_worker_other_than(srv, ctrl, w)
            clients.append(c)
        for c in clients:
            t = threading.Thread(target=self.run, args=(c,))
            t.start()
            self.threads.append(t)

    def run(self, c):
        # 500 SETs a write; the replies (+OK each) are counted, not parsed,
        # so this thread holds the interpreter lock little
        blob = b"".join(encode_command("SET", "noise%d" % i, "v" * 100) for i in range(500))
        with c:
            c.settimeout(T_WAIT * 6)
            while not self.stop.is_set():
                c.send_raw(blob)
                left = 500 * len(b"+OK\r\n")
                while left > 0:
                    chunk = c.sock.recv(1 << 16)
                    if not chunk:
                        return
                    left -= len(chunk)

    def end(self):
        self.stop.set()
        for t in self.threads:
            t.join(T_WAIT * 6)


def message_of(r):
    v = r.py()
    return v if r.kind in "*>" and isinstance(v, list) and v and v[0] in (b"message", b"pmessage",
                                                                       b"smessage") else None


def visibility(srv, ctrl, tag):
    """200 rounds; returns {check: failures} and the rounds run."""
    bad = {}
    seen = set()

    def check(name, cond):
        seen.add(name)
        if not cond:
            bad[name] = bad.get(name, 0) + 1

    s, p, workers = pair(srv, ctrl)
    ok(workers[0] != workers[1] or workers[0] is None,
       "%s: subscriber and publisher on different workers %s" % (tag, workers))
    for r in range(ROUNDS):
        pats = ["r%d.chan%d.*" % (r, i) for i in (1, 2, 3)]
        hit = "r%d.chan1.hi" % r
        s.send("PSUBSCRIBE", *pats)
        for _ in pats:
            read(s)
        check("PSUBSCRIBE: PUBLISH counts 1", p.call("PUBLISH", hit, "m").value == 1)
        m = message_of(read(s))
        check("PSUBSCRIBE: the pmessage is delivered", m == [b"pmessage", pats[0].encode(), hit.encode(), b"m"])
        s.send("PUNSUBSCRIBE")
        for _ in pats:
            read(s)
        check("argument-less PUNSUBSCRIBE: PUBLISH counts 0", p.call("PUBLISH", hit, "hello").value == 0)

        s.send("PSUBSCRIBE", pats[0])
        read(s)
        s.send("PUNSUBSCRIBE", pats[0])
        read(s)
        check("PUNSUBSCRIBE pattern: PUBLISH counts 0", p.call("PUBLISH", hit, "x").value == 0)

        ch = "r%d.c" % r
        s.send("SUBSCRIBE", ch, ch + "2")
        read(s), read(s)
        check("SUBSCRIBE: PUBLISH counts 1", p.call("PUBLISH", ch, "m").value == 1)
        check("SUBSCRIBE: the message is delivered", message_of(read(s)) == [b"message", ch.encode(), b"m"])
        s.send("UNSUBSCRIBE", ch)
        read(s)
        check("UNSUBSCRIBE channel: PUBLISH counts 0", p.call("PUBLISH", ch, "x").value == 0)
        s.send("UNSUBSCRIBE")
        read(s)
        check("argument-less UNSUBSCRIBE: PUBLISH counts 0", p.call("PUBLISH", ch + "2", "x").value == 0)

        s.send("SSUBSCRIBE", ch)
        read(s)
        check("SSUBSCRIBE: SPUBLISH counts 1", p.call("SPUBLISH", ch, "m").value == 1)
        check("SSUBSCRIBE: the smessage is delivered", message_of(read(s)) == [b"smessage", ch.encode(), b"m"])
        s.send("SUNSUBSCRIBE", ch)
        read(s)
        check("SUNSUBSCRIBE: SPUBLISH counts 0", p.call("SPUBLISH", ch, "x").value == 0)

        s.send("SUBSCRIBE", ch)
        read(s)
        s.send("RESET")
        check("RESET answers RESET", read(s).raw == b"+RESET\r\n")
        check("RESET: PUBLISH counts 0", p.call("PUBLISH", ch, "x").value == 0)

        q, _ = on_worker_other_than(srv, ctrl, workers[1])
        q.send("SUBSCRIBE", ch)
        read(q)
        q.send("QUIT")
        check("QUIT answers +OK", read(q).raw == b"+OK\r\n")
        check("QUIT: PUBLISH after +OK counts 0", p.call("PUBLISH", ch, "x").value == 0)
        q.close()

        q, _ = on_worker_other_than(srv, ctrl, workers[1])
        qid = q.call("CLIENT", "ID").value
        q.send("SUBSCRIBE", ch)
        read(q)
        check("CLIENT KILL ID answers 1", p.call("CLIENT", "KILL", "ID", qid).value == 1)
        check("CLIENT KILL: PUBLISH counts 0", p.call("PUBLISH", ch, "x").value == 0)
        check("CLIENT KILL: PUBSUB NUMSUB counts 0", p.call("PUBSUB", "NUMSUB", ch).py() == [ch.encode(), 0])
        q.close()

        q, _ = on_worker_other_than(srv, ctrl, workers[1])
        q.send("SUBSCRIBE", ch)
        read(q)
        q.close()
        end = time.monotonic() + T_WAIT
        while p.call("PUBLISH", ch, "x").value != 0 and time.monotonic() < end:
            time.sleep(0.001)
        check("close: PUBLISH counts 0 within %.0fs" % T_WAIT, p.call("PUBLISH", ch, "x").value == 0)
    s.close()
    p.close()
    return bad, seen


def check_visibility(redis, zarisd):
    results = []
    for srv, tag in ((redis, "redis-server"), (zarisd, "zarisd --threads 2")):
        ctrl = srv.client()
        noise = Noise(srv, ctrl) if srv is zarisd else None
        try:
            results.append(visibility(srv, ctrl, tag))
        finally:
            if noise:
                noise.end()
            ctrl.close()
    (rbad, rseen), (zbad, zseen) = results
    ok(not rbad and rseen, "redis-server: every check held in %d rounds (the expectations are its own)" % ROUNDS)
    for name, n in sorted(rbad.items()):
        diag("redis-server: %s failed %d times" % (name, n))
    for name in sorted(zseen):
        if not ok(name not in zbad, "zarisd, %d rounds across workers: %s" % (ROUNDS, name)):
            diag("failed in %d of %d rounds" % (zbad[name], ROUNDS))


# ------------------------------------------------------------- 3. CLIENT REPLY OFF/SKIP

def reply_off_scenarios(srv):
    """Steps: ("s", cmd) sends on the subscriber, ("p", cmd) calls on the
    publisher (its reply recorded), ("r", n) reads n replies from the
    subscriber, ("i", n) reads n and records nothing (HELLO's reply names
    the server). A step that waits in vain ends the scenario with TIMEOUT."""
    scen = []
    for resp in (2, 3):
        h = [("s", "HELLO", "3"), ("i", 1)] if resp == 3 else []
        scen.append(("RESP%d: CLIENT REPLY OFF, SUBSCRIBE, PUBLISH from another client" % resp, h + [
            ("s", "CLIENT", "REPLY", "OFF"), ("s", "SUBSCRIBE", "ch"), ("r", 1),
            ("p", "PUBLISH", "ch", "hello"), ("r", 1),
            ("s", "PING"), ("s", "GET", "x"), ("p", "PUBLISH", "ch", "after-ping"), ("r", 1),
            ("s", "PSUBSCRIBE", "c*"), ("s", "SSUBSCRIBE", "sh"), ("r", 2),
            ("p", "PUBLISH", "ch", "two"), ("p", "SPUBLISH", "sh", "three"), ("r", 3),
            ("s", "UNSUBSCRIBE", "ch", "nosuch"), ("s", "PUNSUBSCRIBE"), ("s", "SUNSUBSCRIBE"), ("r", 4),
            ("s", "CLIENT", "REPLY", "ON"), ("s", "PING"), ("r", 2)]))
        scen.append(("RESP%d: CLIENT REPLY SKIP before SUBSCRIBE and UNSUBSCRIBE" % resp, h + [
            ("s", "CLIENT", "REPLY", "SKIP"), ("s", "SUBSCRIBE", "q"), ("s", "PING", "x"), ("r", 2),
            ("p", "PUBLISH", "q", "m"), ("r", 1),
            ("s", "CLIENT", "REPLY", "SKIP"), ("s", "UNSUBSCRIBE", "q"), ("s", "PING", "y"),
            ("r", 3 if resp == 2 else 2), ("s", "PING"), ("r", 1)]))
        scen.append(("RESP%d: CLIENT REPLY OFF subscriber of keyspace notifications" % resp, h + [
            ("p", "CONFIG", "SET", "notify-keyspace-events", "KEA"),
            ("s", "CLIENT", "REPLY", "OFF"), ("s", "PSUBSCRIBE", "__key*__:*"), ("r", 1),
            ("p", "SET", "k", "v"), ("r", 2), ("p", "DEL", "k"), ("r", 2),
            ("s", "PUNSUBSCRIBE"), ("r", 1), ("s", "CLIENT", "REPLY", "ON"), ("s", "PING"), ("r", 2),
            ("p", "CONFIG", "SET", "notify-keyspace-events", "")]))
    scen.append(("RESP3: CLIENT REPLY OFF publisher subscribed to its own channel", [
        ("s", "HELLO", "3"), ("i", 1), ("s", "SUBSCRIBE", "self"), ("r", 1), ("s", "CLIENT", "REPLY", "OFF"),
        ("s", "PUBLISH", "self", "mine"), ("r", 1), ("p", "PUBLISH", "self", "theirs"), ("r", 1),
        ("s", "CLIENT", "REPLY", "ON"), ("s", "PING"), ("r", 2)]))
    res = []
    for name, steps in scen:
        out = []
        with srv.client() as s, srv.client() as p:
            try:
                for st in steps:
                    if st[0] == "s":
                        s.send(*st[1:])
                    elif st[0] == "p":
                        out.append(("p", p.call(*st[1:]).raw))
                    else:
                        for _ in range(st[1]):
                            r = read(s)
                            if st[0] == "r":
                                out.append(("r", r.raw))
            except Timeout:
                out.append(("TIMEOUT", b""))
            finally:
                # a scenario cut short must not leave the events on for the next
                p.call("CONFIG", "SET", "notify-keyspace-events", "")
        res.append((name, out))
    return res


def check_reply_off(redis, zarisd):
    want = reply_off_scenarios(redis)
    got = reply_off_scenarios(zarisd)
    for (name, w), (_, g) in zip(want, got):
        if not ok(w == g, "raw replies as redis-server's: " + name):
            diag_steps(w, g, first_only=True)


redis = start_redis()
zarisd = start_zarisd(threads=2)
check_order(redis, zarisd)
check_reply_off(redis, zarisd)
check_visibility(redis, zarisd)
ok(zarisd.alive(), "zarisd still up")
sys.exit(done_testing())
