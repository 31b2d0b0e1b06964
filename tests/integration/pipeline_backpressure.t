#!/usr/bin/python3
# pipeline_backpressure.t — a long pipeline of big replies is neither cut off
# nor held whole in memory (issue 13 §3), against redis-server.
#
#  * 600 pipelined GETs of 1 MiB values (8 keys) on one connection, read
#    slowly at first and then fast: every reply arrives whole and right, and
#    zarisd's RSS stays under its baseline + the 4 MiB backpressure
#    threshold + 64 MiB (zarisd used to close the connection at its 256 MiB
#    normal-class limit; ioredis then sent the batch again, forever). The
#    peaks of both servers are printed;
#  * the same with MULTI/EXEC (an EXEC reply of 20 MiB) and a BLPOP in the
#    middle of the pipeline, answered by another client: nothing stalls;
#  * a held connection is still closed by CLIENT KILL, by the idle timeout,
#    and when the client goes away (reset or orderly close), as
#    redis-server closes one with its replies unread;
#  * a client that writes its whole pipeline (64 MB of ECHOs) before it
#    reads any reply (redis-py's, Jedis's pipelines) is served, not left
#    waiting for zarisd to read;
#  * what the limits still do, as in Redis: a subscriber that never reads
#    is cut off by the pubsub class's 32mb; one MGET reply of 40 MiB, ten
#    times the threshold, is delivered whole; with CONFIG SET
#    client-output-buffer-limit "normal 1mb 0 0" a client whose one reply
#    is over 1mb is cut off;
#  * CONFIG GET client-output-buffer-limit is redis-server's;
#  * under appendfsync always (replies wait for the fsync in the output
#    buffer) the same pipeline with a SET before each GET: all answered,
#    RSS bounded as well.
# Env: ZARIS_BUILD, ZARIS_IO_BACKEND (the suite runs it with both).

import os
import shutil
import socket
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from zaris import *  # noqa: E402,F403

MiB = 1024 * 1024
NKEYS = 8
NGETS = 600
THRESHOLD_KB = 4 * 1024  # net/conn.c CONN_BP_HIGH
MARGIN_KB = 64 * 1024
WAIT = 60.0 * SLOW  # bound on every wait; never reached when healthy


def value(i):
    return (b"%d:" % i + bytes(range(256)) * 4096)[:MiB]


def bulk(v):
    return b"$%d\r\n%s\r\n" % (len(v), v)


def store_values(srv):
    with srv.client() as c:
        for i in range(NKEYS):
            c.call("SET", "big%d" % i, value(i))


class Reader:
    """Reads a stream of expected replies off SOCK, comparing as it goes,
    sampling the server's RSS at every read."""

    def __init__(self, srv, sock):
        self.srv = srv
        self.sock = sock
        self.peak = srv.rss_kb()
        self.buf = bytearray(1 << 20)

    def expect(self, replies, slow_bytes=0, sleep=0.005):
        """True when REPLIES (a list of bytes) arrived exactly; the first
        SLOW_BYTES are read 64 KiB at a time with SLEEP between reads.
        Returns (all_ok, n_whole_replies_seen, closed)."""
        mv = memoryview(self.buf)
        i = off = got = 0
        self.sock.settimeout(WAIT)
        while i < len(replies):
            want = 65536 if got < slow_bytes else len(self.buf)
            try:
                k = self.sock.recv_into(mv[:want])
            except (ConnectionResetError, socket.timeout):
                return False, i, True
            self.peak = max(self.peak, self.srv.rss_kb())
            if k == 0:
                return False, i, True
            got += k
            pos = 0
            while pos < k:
                if i == len(replies):
                    return False, i, False  # more than expected
                e = replies[i]
                take = min(len(e) - off, k - pos)
                if mv[pos:pos + take] != memoryview(e)[off:off + take]:
                    diag("%s: reply %d differs at byte %d" % (self.srv.name, i, off))
                    return False, i, False
                pos += take
                off += take
                if off == len(e):
                    i += 1
                    off = 0
            if got < slow_bytes:
                time.sleep(sleep)
        return True, i, False


def rss_bound(growth_kb, name):
    if os.environ.get("ZARIS_SAN"):
        # sanitizer builds: libc malloc with redzones and a quarantine of
        # freed memory (256 MiB), which every sent reply passes through
        ok(True, "RSS bound skipped in a %s build (grew %d kB)" % (os.environ["ZARIS_SAN"], growth_kb))
        return
    ok(growth_kb < THRESHOLD_KB + MARGIN_KB, "%s: RSS grew %d kB (< %d kB: threshold + 64 MiB), not the %d MiB "
       "of replies" % (name, growth_kb, THRESHOLD_KB + MARGIN_KB, NGETS))


def check_big_pipeline(srv, writes=False):
    """600 GETs of 1 MiB in one write (each after a small SET when WRITES);
    returns (ok, replies, closed, RSS before, peak RSS)."""
    time.sleep(0.2)
    base = srv.rss_kb()
    c = srv.client()
    vals = [bulk(value(i)) for i in range(NKEYS)]
    req, exp = [], []
    for i in range(NGETS):
        if writes:
            req.append(encode_command("SET", "w%d" % i, "v"))
            exp.append(b"+OK\r\n")
        req.append(encode_command("GET", "big%d" % (i % NKEYS)))
        exp.append(vals[i % NKEYS])
    c.send_raw(b"".join(req))
    rd = Reader(srv, c.sock)
    good, n, closed = rd.expect(exp, slow_bytes=32 * MiB)
    if good:
        good = c.call("PING").value == "PONG"
    c.close()
    return good, n, closed, base, rd.peak


def check_multi_blpop(srv):
    """MULTI with 20 GETs of 1 MiB, then GETs, a BLPOP another client answers,
    more GETs: every reply, in order."""
    c = srv.client()
    with srv.client() as w:
        w.call("DEL", "bplist")
    cmds = [("MULTI",)] + [("GET", "big%d" % (i % NKEYS)) for i in range(20)] + [("EXEC",)]
    cmds += [("GET", "big%d" % (i % NKEYS)) for i in range(20)]
    cmds += [("BLPOP", "bplist", "0")] + [("GET", "big%d" % (i % NKEYS)) for i in range(20)]
    c.send_raw(b"".join(encode_command(*x) for x in cmds))
    vals = [bulk(value(i)) for i in range(NKEYS)]
    exp = [b"+OK\r\n"] + [b"+QUEUED\r\n"] * 20
    exp.append(b"*20\r\n" + b"".join(vals[i % NKEYS] for i in range(20)))
    exp += [vals[i % NKEYS] for i in range(20)]
    exp.append(b"*2\r\n$6\r\nbplist\r\n$1\r\nx\r\n")
    exp += [vals[i % NKEYS] for i in range(20)]

    def push():
        time.sleep(1.0)
        with srv.client() as p:
            p.call("RPUSH", "bplist", "x")
    t = threading.Thread(target=push)
    t.start()
    rd = Reader(srv, c.sock)
    good, n, _ = rd.expect(exp, slow_bytes=24 * MiB)
    t.join()
    c.close()
    return good, n


def held_client(srv, name, n=100):
    """A client that sends N GETs of 1 MiB and reads nothing."""
    c = srv.client(rcvbuf=65536)
    c.send_raw(encode_command("CLIENT", "SETNAME", name) +
               b"".join(encode_command("GET", "big%d" % (i % NKEYS)) for i in range(n)))
    return c


def client_list(admin):
    v = admin.call("CLIENT", "LIST").value
    return v.decode() if isinstance(v, bytes) else v


def client_gone(admin, name, timeout=WAIT):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if ("name=%s " % name) not in client_list(admin):
            return True
        time.sleep(0.05)
    return False


def held(admin, name, timeout=WAIT):
    """Waits (bounded) until the client NAME is listed with a reply of 1 MiB
    or more queued: its GETs were read and their replies are held."""
    def queued():
        for line in client_list(admin).splitlines():
            f = dict(x.split("=", 1) for x in line.split() if "=" in x)
            if f.get("name") == name and int(f.get("omem", 0)) >= MiB:
                return True
        return False
    return wait_until(queued, timeout)


def client_id(admin, name):
    for line in client_list(admin).splitlines():
        f = dict(x.split("=", 1) for x in line.split() if "=" in x)
        if f.get("name") == name:
            return int(f["id"])
    return -1


def check_held_closes(srv):
    """CLIENT KILL, the idle timeout and the client's own close each end a
    connection whose replies are held."""
    out = {}
    with srv.client() as admin:
        c = held_client(srv, "heldkill")
        out.setdefault("held", []).append(held(admin, "heldkill"))
        r = admin.call("CLIENT", "KILL", "ID", str(client_id(admin, "heldkill")))
        out["kill"] = (r.value, client_gone(admin, "heldkill"))
        c.close()

        c = held_client(srv, "heldgone")
        out.setdefault("held", []).append(held(admin, "heldgone"))
        c.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        c.close()  # a reset, as a killed client's kernel sends
        out["reset"] = client_gone(admin, "heldgone")

        c = held_client(srv, "heldfin")
        out.setdefault("held", []).append(held(admin, "heldfin"))
        c.sock.shutdown(socket.SHUT_WR)  # an orderly close while replies wait
        c.close()
        out["close"] = client_gone(admin, "heldfin")

        admin.call("CONFIG", "SET", "timeout", "1")
        c = held_client(srv, "heldidle")
        out["timeout"] = client_gone(admin, "heldidle", timeout=30.0 * SLOW)
        admin.call("CONFIG", "SET", "timeout", "0")
        c.close()
    return out


def check_write_all_first(srv, n=8000, size=8192):
    """Writes N ECHOs of SIZE bytes with one blocking sendall, then reads:
    True when every reply arrived."""
    c = srv.client()
    arg = b"e" * size
    req = encode_command("ECHO", arg)
    c.sock.settimeout(WAIT)
    try:
        for _ in range(0, n, 500):
            c.sock.sendall(req * 500)
    except (OSError, socket.timeout) as e:
        diag("%s: sending the pipeline failed: %s" % (srv.name, e))
        c.close()
        return False
    rd = Reader(srv, c.sock)
    good, got, _ = rd.expect([bulk(arg)] * n)
    c.close()
    if not good:
        diag("%s: %d of %d replies" % (srv.name, got, n))
    return good


def check_subscriber_cut(srv):
    """A subscriber that never reads, 64 messages of 1 MiB: (cut, bytes got)."""
    sub = srv.client(rcvbuf=65536)
    sub.send_raw(encode_command("SUBSCRIBE", "bpch"))
    msg = b"m" * MiB
    with srv.client() as p:
        deadline = time.monotonic() + WAIT
        while p.call("PUBSUB", "NUMSUB", "bpch").value[1].value != 1 and time.monotonic() < deadline:
            time.sleep(0.02)
        for _ in range(64):
            p.call("PUBLISH", "bpch", msg)
        alive = p.call("PING").value == "PONG"
    data, closed = sub.recv_until_closed(WAIT, limit=80 * MiB)
    sub.close()
    return closed and len(data) < 64 * MiB, len(data), alive


def check_one_big_reply(srv):
    """MGET of 40 keys of 1 MiB (one 40 MiB reply), twice, then PING."""
    c = srv.client()
    keys = ["big%d" % (i % NKEYS) for i in range(40)]
    c.send_raw(encode_command("MGET", *keys) * 2 + encode_command("PING"))
    one = b"*40\r\n" + b"".join(bulk(value(i % NKEYS)) for i in range(40))
    good, _, _ = Reader(srv, c.sock).expect([one, one, b"+PONG\r\n"], slow_bytes=8 * MiB)
    c.close()
    return good


def check_normal_limit(srv):
    """normal 1mb 0 0: one GET of 1 MiB (a reply just over 1mb) cuts the
    client off; (cut, bytes got before the close)."""
    with srv.client() as a:
        r = a.call("CONFIG", "SET", "client-output-buffer-limit", "normal 1mb 0 0")
        if r.raw != b"+OK\r\n":
            return ("CONFIG SET", r.raw), 0
    c = srv.client()
    c.send_raw(encode_command("GET", "big0"))
    data, closed = c.recv_until_closed(WAIT, limit=2 * MiB)
    c.close()
    with srv.client() as a:
        a.call("CONFIG", "SET", "client-output-buffer-limit", "normal 0 0 0")
    return closed and len(data) < MiB, len(data)


def main():
    ref = start_redis()
    z = start_zarisd(threads=2)
    diag("zarisd: %s" % " ".join(z.argv))
    with ref.client() as a, z.client() as b:
        gr = a.call("CONFIG", "GET", "client-output-buffer-limit").raw
        gz = b.call("CONFIG", "GET", "client-output-buffer-limit").raw
    is_(gz, gr, "CONFIG GET client-output-buffer-limit as redis-server's (normal 0 0 0 ... pubsub 33554432 "
        "8388608 60)")
    store_values(ref)
    store_values(z)

    for srv in (ref, z):
        good, n, closed, base, peak = check_big_pipeline(srv)
        diag("%s: %d GETs of 1 MiB pipelined: %d replies%s; RSS %d kB before, peak %d kB (+%d kB)"
             % (srv.name, NGETS, n, ", then the connection was closed" if closed else "", base, peak,
                peak - base))
        if srv is ref:
            continue
        ok(good and n == NGETS, "all %d pipelined GETs of 1 MiB arrive whole and right, connection kept"
           % NGETS)
        rss_bound(peak - base, srv.name)

    good, n = check_multi_blpop(z)
    ok(good, "MULTI/EXEC of 20 MiB and a BLPOP answered by another client inside a long pipeline: every "
       "reply in order (%d)" % n)

    out = {srv.name: check_held_closes(srv) for srv in (ref, z)}
    diag("closing a client with 100 MiB of replies unread: %r" % (out,))
    oz, oref = out[z.name], out[ref.name]
    is_(oz["kill"], (1, True), "CLIENT KILL ID closes a connection whose requests are held")
    ok(oz["reset"], "a held connection whose client resets is closed")
    ok(oz["close"], "a held connection whose client closes is closed")
    ok(oz["timeout"], "the idle timeout closes a held connection that reads nothing")
    is_(oz, oref, "... each as redis-server closes it")
    ok(z.alive(), "zarisd is up")

    for srv in (ref, z):
        good = check_write_all_first(srv)
        if srv is ref:
            ok(good, "redis-server serves a 64 MB pipeline written whole before any reply is read")
        else:
            ok(good, "zarisd serves a 64 MB pipeline written whole before any reply is read (no deadlock)")

    res = {}
    for srv in (ref, z):
        res[srv.name] = check_subscriber_cut(srv)
        diag("%s: subscriber that never reads got %d bytes, %s" % (
            srv.name, res[srv.name][1], "cut off" if res[srv.name][0] else "NOT cut off"))
    ok(res[z.name][0] and res[ref.name][0], "a subscriber that never reads is cut off by the pubsub limit, "
       "as by redis-server")
    ok(res[z.name][2], "the publisher is served meanwhile")

    for srv in (ref, z):
        ok(check_one_big_reply(srv), "%s: two MGET replies of 40 MiB (10x the threshold) arrive whole"
           % srv.name)

    nl = {srv.name: check_normal_limit(srv) for srv in (ref, z)}
    diag("normal 1mb 0 0, one 1 MiB reply: %r" % (nl,))
    is_(nl[z.name][0], nl[ref.name][0], "client-output-buffer-limit normal 1mb 0 0 cuts off a client whose "
        "one reply is over it, as redis-server")
    ok(nl[z.name][0] is True, "... and it is cut off")
    ok(z.alive(), "zarisd is up")
    z.stop()
    ref.stop()

    # appendfsync always: replies wait for the fsync in the output buffer,
    # and count for the hold like any other
    d = tempfile.mkdtemp(prefix="zaris-bp-")
    za = start_zarisd(threads=2, extra=["--dir", d, "--appendonly", "yes", "--appendfsync", "always",
                                        "--save", ""], name="zarisd-always")
    store_values(za)
    good, n, closed, base, peak = check_big_pipeline(za, writes=True)
    diag("%s: %d (SET, GET of 1 MiB) pipelined: %d replies; RSS %d kB before, peak %d kB (+%d kB)"
         % (za.name, NGETS, n, base, peak, peak - base))
    ok(good and n == 2 * NGETS, "appendfsync always: %d pipelined SETs and GETs of 1 MiB all answered" % NGETS)
    rss_bound(peak - base, "appendfsync always")
    za.stop()
    shutil.rmtree(d, ignore_errors=True)
    done_testing()


main()
