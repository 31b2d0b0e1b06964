#!/usr/bin/python3
# malformed.t — the errors that close a native connection (PROTOCOL.md 2,
# 3 and 9). Each malformed input of the corpus is sent on a fresh
# connection twice, once whole and once fed a byte at a time with short
# pauses (the server must frame incrementally), and each time: the server
# answers GOODBYE with a reason (checked loosely: it names what is wrong)
# and closes, no RESPONSE comes for that frame, nothing of that frame ran (a
# SET of a canary key before the bad part of the same frame did not
# happen), INFO's total_native_protocol_errors grows by one, the reason is
# in the verbose log with the client's address, and a native and a RESP
# client that stay connected meanwhile are still served.
# Then: a GOODBYE must still come when the client shuts its write side
# right after the bad bytes; a valid request fed byte by byte works; the
# frame size limit's edges as PROTOCOL.md 1 gives them (payload bytes); and
# a seeded random mutation fuzz of valid frames (ZARIS_SEED repeats a run;
# ZARIS_NATIVE_FUZZ sets the count), against zarisd with and without
# native-rf1, never crashes the server and never leaves a connection
# hanging: a stream the server can decide on ends with every request
# answered or a GOODBYE and a close (the counter growing by one exactly
# then); a cut one is closed after the client's EOF.

import os
import re
import socket
import struct
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from zaris import *  # noqa: E402,F403
from native import *  # noqa: E402,F403
import native as nw  # noqa: E402

BULK = 1 << 20  # --proto-max-bulk-len: the smallest zarisd takes
WAIT = 10.0 * SLOW

srv = start_native(threads=2, extra=["--proto-max-bulk-len", str(BULK), "--loglevel", "verbose"])
R = srv.client()
N = native(srv)
MAX_FRAME = N.hello_reply.max_frame
H = hello_frame()


def errors_counted(rc=None):
    v = info_field(rc or R, "stats", "total_native_protocol_errors")
    return int(v) if v is not None else None


def req(ops, count=None, fid=7):
    payload = b"".join(ops)
    return frame(REQUEST, len(ops) if count is None else count, fid, payload)


def raw_op(op, opflags=0, db=0, fields=b""):
    return u8(op) + u8(opflags) + u16(db) + fields


def canary(name):
    return op_set(name, "1")


BIG = b"x" * (BULK + 1)
# (name, bytes after a valid HELLO (None: the bytes are the whole stream), canary key or None, reason words)
W_OP = r"op|code|unknown|operation"
W_FLAGS = r"flag"
W_DB = r"db|database|range"
W_PAST = r"past|end|short|truncat|incomplete|field|malformed|length"
W_TRAIL = r"trail|left|over|extra|after|length|malformed|end"
W_COUNT = r"count|empty|operation|zero"
W_LONG = r"long|large|big|limit|bulk|length|size"
W_LEN = r"length|size|short|limit|large|frame"
W_KIND = r"kind|type|frame|unexpected|expected"
W_HELLO = r"hello|handshake|first|expected"
W_MAGIC = r"magic|hello"
W_VERSION = r"version"
W_ARGC = r"argc|arg|command|empty"

CORPUS = [
    ("unknown op 0", lambda c: req([canary(c), raw_op(0, fields=sstr("k"))]), W_OP),
    ("unknown op 18", lambda c: req([canary(c), raw_op(18, fields=sstr("k"))]), W_OP),
    ("unknown op 255", lambda c: req([canary(c), raw_op(255, fields=sstr("k"))]), W_OP),
    ("GET with opflags 0x01", lambda c: req([canary(c), raw_op(OP_GET, 1, fields=sstr("k"))]), W_FLAGS),
    ("SET with opflags 0x20", lambda c: req([canary(c), op_set("k", "v", opflags=0x20)]), W_FLAGS),
    ("SET with opflags 0x80", lambda c: req([canary(c), op_set("k", "v", opflags=0x80)]), W_FLAGS),
    ("DEL with opflags 0x80", lambda c: req([canary(c), raw_op(OP_DEL, 0x80, fields=sstr("k"))]), W_FLAGS),
    ("MSET with opflags 0x10", lambda c: req([canary(c), raw_op(OP_MSET, 0x10, fields=u16(0))]), W_FLAGS),
    ("COMMAND with opflags 0x01", lambda c: req([canary(c), raw_op(OP_COMMAND, 1, fields=u16(1) + sstr("PING"))]),
     W_FLAGS),
    ("TOPOLOGY with opflags 0x02", lambda c: req([canary(c), raw_op(OP_TOPOLOGY, 2)]), W_FLAGS),
    ("GET in db 16 of 16", lambda c: req([canary(c), op_get("k", db=16)]), W_DB),
    ("SET in db 65535", lambda c: req([canary(c), op_set("k", "v", db=65535)]), W_DB),
    ("COMMAND in db 16", lambda c: req([canary(c), op_command("PING", db=16)]), W_DB),
    ("GET key past the frame's end", lambda c: req([canary(c), raw_op(OP_GET, fields=u32(100) + b"abc")]), W_PAST),
    ("GET key length field cut", lambda c: req([canary(c), raw_op(OP_GET, fields=b"\x03\x00")]), W_PAST),
    ("GET key length 0xffffffff", lambda c: req([canary(c), raw_op(OP_GET, fields=u32(0xFFFFFFFF) + b"abc")]),
     W_PAST + "|" + W_LONG),
    ("SET without its ttl", lambda c: req([canary(c), raw_op(OP_SET, fields=sstr("k") + sstr("v"))]), W_PAST),
    ("SET ttl cut", lambda c: req([canary(c), raw_op(OP_SET, fields=sstr("k") + sstr("v") + b"\x00\x00\x00")]), W_PAST),
    ("SET meta flag without meta", lambda c: req([canary(c), raw_op(OP_SET, SET_META, fields=sstr("k") + sstr("v") +
                                                                      i64(0))]), W_PAST),
    ("SET meta with 3 labels of 2", lambda c: req([canary(c), raw_op(OP_SET, SET_META, fields=sstr("k") + sstr("v") +
                                                                       i64(0) + u16(3) + sstr("a") + sstr("b"))]),
     W_PAST),
    ("METASET without content_type", lambda c: req([canary(c), raw_op(OP_METASET, fields=sstr("k") + u16(0) +
                                                                       sstr(""))]), W_PAST),
    ("MGET of 5 with 2 keys", lambda c: req([canary(c), raw_op(OP_MGET, fields=u16(5) + sstr("a") + sstr("b"))]),
     W_PAST),
    ("MSET of 2 with 1 pair", lambda c: req([canary(c), raw_op(OP_MSET, fields=u16(2) + sstr("a") + sstr("b"))]),
     W_PAST),
    ("INCRBY delta cut", lambda c: req([canary(c), raw_op(OP_INCRBY, fields=sstr("k") + u32(1))]), W_PAST),
    ("INVALIDATE without entity", lambda c: req([canary(c), raw_op(OP_INVALIDATE, fields=sstr("lab"))]), W_PAST),
    ("COMMAND of 3 args with 2", lambda c: req([canary(c), raw_op(OP_COMMAND, fields=u16(3) + sstr("SET") +
                                                                    sstr("k"))]), W_PAST),
    ("op header cut", lambda c: req([canary(c), b"\x01\x00"], count=2), W_PAST),
    ("count 3 with 2 ops", lambda c: req([canary(c), op_get("k")], count=3), W_PAST + "|" + W_COUNT),
    ("trailing bytes after the last op", lambda c: req([canary(c), op_get("k"), b"\x00\x01\x02"], count=2), W_TRAIL),
    ("trailing op beyond count", lambda c: req([canary(c), op_get("k")], count=1), W_TRAIL),
    ("key one byte over proto-max-bulk-len", lambda c: req([canary(c), op_get(BIG)]), W_LONG),
    ("value one byte over proto-max-bulk-len", lambda c: req([canary(c), op_set("k", BIG)]), W_LONG),
    ("GETSET value over proto-max-bulk-len", lambda c: req([canary(c), op_getset("k", BIG)]), W_LONG),
    ("label over proto-max-bulk-len", lambda c: req([canary(c), op_set("k", "v", meta=([BIG], "", ""))]), W_LONG),
    ("METASET label over proto-max-bulk-len", lambda c: req([canary(c), op_metaset("k", ([BIG], "", ""))]), W_LONG),
    ("MSET key over proto-max-bulk-len", lambda c: req([canary(c), op_mset([("a", "1"), (BIG, "2")])]), W_LONG),
    ("COMMAND with argc 0", lambda c: req([canary(c), raw_op(OP_COMMAND, fields=u16(0))]), W_ARGC),
    ("valid ops, then a bad one last of 5", lambda c: req([canary(c), op_get("a"), op_incrby(c, 1), op_del("z"),
                                                          raw_op(19)]), W_OP),
    ("count 0", lambda c: req([], count=0), W_COUNT),
    ("count 0 with an op", lambda c: req([canary(c)], count=0), W_COUNT + "|" + W_TRAIL),
    ("frame length 0", lambda c: struct.pack("<I", 0) + b"\x02\x00\x01\x00" + b"\x00" * 4, W_LEN),
    ("frame length 7", lambda c: struct.pack("<I", 7) + b"\x02\x00\x01\x00\x07\x00\x00", W_LEN),
    ("frame length 0xffffffff", lambda c: struct.pack("<IBBHI", 0xFFFFFFFF, REQUEST, 0, 1, 7), W_LEN),
    ("frame length max_frame + 13", lambda c: struct.pack("<IBBHI", MAX_FRAME + 13, REQUEST, 0, 1, 7), W_LEN),
    ("kind 0", lambda c: frame(0, 2, 7, canary(c) + op_get("k")), W_KIND),
    ("kind RESPONSE from a client", lambda c: frame(RESPONSE, 2, 7, canary(c) + op_get("k")), W_KIND),
    ("kind GOODBYE from a client", lambda c: frame(GOODBYE, 0, 0, sstr("bye")), W_KIND),
    ("kind 5", lambda c: frame(5, 2, 7, canary(c) + op_get("k")), W_KIND),
    ("kind 255", lambda c: frame(255, 2, 7, canary(c) + op_get("k")), W_KIND),
    ("second HELLO", lambda c: H, W_HELLO),
    ("second HELLO after a request", lambda c: req([op_get("k")]) + H + req([canary(c)]), W_HELLO,
     [HELLO, RESPONSE]),
]
# whole streams: no valid HELLO first
BEFORE_HELLO = [
    ("REQUEST before HELLO", lambda c: req([canary(c)]), W_HELLO),
    ("HELLO with a bad magic", lambda c: hello_frame(magic=0x3152525A), W_MAGIC),
    ("HELLO with magic 0", lambda c: hello_frame(magic=0), W_MAGIC),
    ("HELLO version 0", lambda c: hello_frame(version=0), W_VERSION),
    ("HELLO version 2", lambda c: hello_frame(version=2), W_VERSION),
    ("HELLO payload cut", lambda c: frame(HELLO, 0, 0, hello_payload()[:9]), W_PAST + "|" + W_HELLO),
    ("HELLO frame length 7", lambda c: struct.pack("<I", 7) + b"\x01\x00\x00\x00\x00\x00\x00", W_LEN),
    ("RESPONSE before HELLO", lambda c: frame(RESPONSE, 0, 0, b""), W_KIND + "|" + W_HELLO),
    ("GOODBYE before HELLO", lambda c: frame(GOODBYE, 0, 0, sstr("x")), W_KIND + "|" + W_HELLO),
]


def send_all(c, data, slowly):
    """Whole, or byte by byte (frames over 4 KiB: their first 512 bytes one
    at a time, then 64 KiB chunks); False once the server had closed."""
    try:
        if not slowly:
            c.send(data)
            return True
        if len(data) <= 4096:
            return c.send_slowly(data, 1, 0.0005)
        return c.send_slowly(data[:512], 1, 0.0005) and c.send_slowly(data[512:], 65536, 0)
    except (BrokenPipeError, ConnectionResetError):
        return False


_probe_clients = {}


def still_served(s=None, rc=None):
    """Whether a native client of S (default srv) that stays connected, and
    the RESP client RC, are served."""
    s, rc = s or srv, rc or R
    c = _probe_clients.get(s.native_port) or native(s)
    try:
        good = c.one(op_get("probe")).value.raw == b"$1\r\np\r\n"
        _probe_clients[s.native_port] = c
    except (AssertionError, Goodbye, Closed, OSError):
        _probe_clients.pop(s.native_port, None)
        good = False
    return good and rc.call("PING").raw == b"+PONG\r\n"


R.call("SET", "probe", "p")
failures = {}
reasons = {}
counter_ok = True
n_case = 0
for group, with_hello in ((CORPUS, True), (BEFORE_HELLO, False)):
    for name, build, words, *more in group:
        for slowly in (False, True):
            n_case += 1
            can = "canary%d" % n_case
            bad = build(can)
            before = errors_counted()
            c = NativeClient(srv.native_port, timeout=WAIT, hello=False)
            stream = (H if with_hello else b"") + bad
            send_all(c, stream, slowly)
            reason, closed, others = c.expect_goodbye(WAIT)
            c.close()
            want_others = more[0] if more else [HELLO] if with_hello else []
            problems = []
            if reason is None:
                problems.append("no GOODBYE")
            elif not reason:
                problems.append("GOODBYE without a reason")
            if not closed:
                problems.append("not closed")
            if others != want_others:
                problems.append("other frames: kinds %r" % others)
            if R.call("EXISTS", can).py() != 0:
                problems.append("the canary SET of the same frame ran")
            deadline = time.monotonic() + WAIT
            after = errors_counted()
            while after is not None and before is not None and after < before + 1 and time.monotonic() < deadline:
                time.sleep(0.02)
                after = errors_counted()
            if before is None or after != before + 1:
                problems.append("total_native_protocol_errors %r -> %r" % (before, after))
            if not still_served():
                problems.append("the other native or RESP client was not served afterwards")
            tag = "%s (%s)" % (name, "byte by byte" if slowly else "whole")
            reasons[tag] = reason
            if reason and not re.search(words, reason.decode("utf-8", "replace"), re.I):
                problems.append("reason %r does not name it (%s)" % (reason, words))
            if problems:
                failures[tag] = problems
            if not srv.alive():
                bail_out("the server died on %s; log:\n%s" % (tag, srv.log_tail(2000)))

plan_cases = n_case
ok(not failures, "%d malformed inputs (%d whole, %d byte by byte): GOODBYE naming it, closed, nothing ran, "
   "counted, others served" % (plan_cases, plan_cases // 2, plan_cases // 2))
for tag, problems in sorted(failures.items()):
    diag("%s: %s" % (tag, "; ".join(problems)))
for tag in sorted(reasons):
    note("%s: %r" % (tag, reasons[tag]))
# PROTOCOL.md 9: each is logged at verbose level with the client's address
with open(srv.logpath, "rb") as f:
    log_lines = f.read().split(b"\n")
unlogged = sorted(set(r for r in reasons.values() if r and not any(r in l and b"127.0.0.1" in l for l in log_lines)))
ok(not unlogged, "every GOODBYE reason is in the verbose log with the client's address (%d reasons)"
   % len(set(reasons.values())))
for r in unlogged[:5]:
    diag("not logged: %r" % r)
# one TAP line per corpus entry too, so that prove names what broke
for group, with_hello in ((CORPUS, True), (BEFORE_HELLO, False)):
    for name, *_ in group:
        bad = [t for t in failures if t.startswith(name + " (")]
        ok(not bad, "malformed: %s" % name)

# ---- a valid stream fed byte by byte ----------------------------------------------------
c = NativeClient(srv.native_port, timeout=WAIT, hello=False)
stream = H + req([op_set("slow", "v", 100500), op_get("slow"), op_incrby("slowc", 3)], fid=9) + \
    req([op_mget(["slow", "nosuch"]), op_command("STRLEN", "slow")], fid=10)
c.send_slowly(stream, 1, 0.0005)
kind, _, _, _, payload = c.read_frame()
is_(kind, HELLO, "byte by byte: HELLO answered")
r1 = c.read_response(9, 3)
r2 = c.read_response(10, 2)
ok(not r1.problems and not r2.problems and
   [x.value.raw for x in r1.results + r2.results] == [b"+OK\r\n", b"$1\r\nv\r\n", b":3\r\n", b"*2\r\n$1\r\nv\r\n_\r\n",
                                                      b":1\r\n"],
   "byte by byte: two requests answered as whole ones (%r)" % ([x.value.raw if x else None for x in r1.results + r2.results],))
c.close()

# ---- a violation followed at once by the client's EOF -----------------------------------
# PROTOCOL.md 9: each violation sends GOODBYE. A client that half-closes
# right after its bytes can still read; the GOODBYE must reach it.
# With a pipelined request after the bad frame, which the server never reads.
for name, bad in (("bad kind", frame(9, 0, 0, b"")), ("unknown op", req([raw_op(200, fields=sstr("k"))])),
                  ("frame length over max_frame", struct.pack("<IBBHI", MAX_FRAME + 13, REQUEST, 0, 1, 7))):
    for tail in (b"", req([op_get("k")])):
        c = NativeClient(srv.native_port, timeout=WAIT, hello=False)
        c.send(H + bad + tail)
        c.sock.shutdown(socket.SHUT_WR)
        reason, closed, others = c.expect_goodbye(WAIT)
        c.close()
        ok(reason and closed and others == [HELLO],
           "%s%s, then the client's EOF at once: GOODBYE still sent (%r, closed %s)"
           % (name, " and a request after it" if tail else "", reason, closed))

# ---- the size limits' edges ---------------------------------------------------------------
c = native(srv)
val = b"y" * BULK
r = c.one(op_set("atlimit", val))
is_(r.value.raw, b"+OK\r\n", "a value of exactly proto-max-bulk-len is taken")
c.close()
# PROTOCOL.md 1: a frame's payload (the bytes after the 12-byte header) is at
# most proto-max-bulk-len + 1 MiB. Two SETs fill it exactly; one byte more
# is over the limit.
PAYLOAD_MAX = BULK + (1 << 20)
for extra, name in ((0, "exactly"), (1, "one byte over")):
    v2 = PAYLOAD_MAX - len(op_set("edge1", b"")) - len(op_set("edge2", b"")) - BULK + extra
    stream = req([op_set("edge1", val), op_set("edge2", b"z" * v2)], fid=3)
    assert len(stream) - 12 == PAYLOAD_MAX + extra
    c = NativeClient(srv.native_port, timeout=WAIT, hello=False)
    c.send(H)
    c.read_frame()
    try:
        c.send(stream)
        r = c.read_response(3, 2)
        got = ("answered", [x.value.raw for x in r.results], r.problems)
    except Goodbye as g:
        got = ("goodbye", g.reason)
    except (Closed, OSError) as e:
        # the server refused from the header on and closed while the rest was sent
        reason = c.expect_goodbye(WAIT)[0]
        got = ("goodbye", reason) if reason else ("closed", repr(e))
    c.close()
    if extra == 0:
        is_(got, ("answered", [b"+OK\r\n", b"+OK\r\n"], []),
            "a request whose payload is %s proto-max-bulk-len + 1 MiB (%d bytes) is served" % (name, PAYLOAD_MAX))
    else:
        is_(got[0], "goodbye", "a request whose payload is %s proto-max-bulk-len + 1 MiB: GOODBYE" % name)
ok(still_served(), "served after the edges")

# ---- random mutation fuzz ------------------------------------------------------------------
rng = seeded_rng()
COUNT = sweep_size("ZARIS_NATIVE_FUZZ", 400, 100)
INTERESTING = [0, 1, 7, 8, 9, 0x7F, 0x80, 0xFF, 0xFFFF, 0x10000, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, BULK, BULK + 1]


def random_op():
    k = "f%d" % rng.randrange(50)
    return rng.choice([
        lambda: op_get(k), lambda: op_set(k, "v" * rng.randrange(20), rng.choice([0, 0, 100000]),
                                          nx=rng.random() < 0.2, get=rng.random() < 0.2),
        lambda: op_del(k), lambda: op_exists(k), lambda: op_incrby("fc", rng.randrange(-5, 5)),
        lambda: op_mget([k, "f1", "f2"]), lambda: op_mset([(k, "1"), ("f3", "2")]), lambda: op_pttl(k),
        lambda: op_pexpire(k, 100000), lambda: op_persist(k), lambda: op_metaget(k),
        lambda: op_metaset(k, (["a", "b"], "e", "")), lambda: op_set(k, "m", meta=(["l"], "", "t")),
        lambda: op_invalidate("nolabel"), lambda: op_topology(), lambda: op_command("STRLEN", k),
        lambda: op_getset(k, "g"), lambda: op_getdel(k), lambda: op_command("ECHO", "e"),
    ])()


def mutate(data, start):
    """DATA with one to four random mutations at or after START."""
    data = bytearray(data)
    for _ in range(rng.randrange(1, 5)):
        if len(data) <= start:
            break
        pos = rng.randrange(start, len(data))
        m = rng.randrange(7)
        if m == 0:
            data[pos] ^= 1 << rng.randrange(8)
        elif m == 1:
            data[pos] = rng.randrange(256)
        elif m == 2:
            data[pos:pos] = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 8)))
        elif m == 3:
            del data[pos:pos + rng.randrange(1, 8)]
        elif m == 4:
            del data[pos:]
        elif m == 5:
            v = rng.choice(INTERESTING)
            width = rng.choice([1, 2, 4])
            data[pos:pos + width] = (v & ((1 << (8 * width)) - 1)).to_bytes(width, "little")
        else:
            end = min(len(data), pos + rng.randrange(1, 40))
            data[pos:pos] = data[pos:end]
    return bytes(data)


def check_frames(data, closed):
    """What is wrong with the server's bytes DATA (a list, empty if none)."""
    pos, kinds, bad = 0, [], []
    while pos + 4 <= len(data):
        length = struct.unpack_from("<I", data, pos)[0]
        if length < 8 or pos + 4 + length > len(data):
            bad.append("frame of length %d at %d cut or short" % (length, pos))
            break
        kind, flags, count, fid = struct.unpack_from("<BBHI", data, pos + 4)
        payload = data[pos + 12:pos + 4 + length]
        kinds.append(kind)
        if kind == RESPONSE:
            try:
                decode_results(payload, count)
            except Malformed as e:
                bad.append("undecodable RESPONSE: %s" % e)
        elif kind == HELLO:
            try:
                HelloReply(payload)
            except Malformed as e:
                bad.append("bad HELLO reply: %s" % e)
        elif kind == GOODBYE:
            if len(payload) < 4 or struct.unpack_from("<I", payload)[0] != len(payload) - 4:
                bad.append("GOODBYE payload not one str")
        else:
            bad.append("frame kind %d from the server" % kind)
        pos += 4 + length
    if pos != len(data) and not bad:
        bad.append("%d stray bytes" % (len(data) - pos))
    if GOODBYE in kinds and kinds[-1] != GOODBYE:
        bad.append("frames after GOODBYE")
    if not closed:
        bad.append("connection not closed after the client's EOF (hang)")
    return bad, kinds


def stream_shape(stream):
    """(REQUEST frames after the first frame, whether the server has all it
    needs to decide on every frame of STREAM: it ends on a frame boundary,
    or a length field under 8 or over max_frame comes before its end)."""
    pos, nreq, first = 0, 0, True
    while pos + 4 <= len(stream):
        length = struct.unpack_from("<I", stream, pos)[0]
        if length < 8 or length > MAX_FRAME:
            return nreq, True
        if pos + 5 <= len(stream) and stream[pos + 4] == REQUEST and not first:
            nreq += 1
        first = False
        pos += 4 + length
    return nreq, pos == len(stream)


def server_frames(data):
    """(kind, flags) of each whole frame in DATA."""
    pos, out = 0, []
    while pos + 12 <= len(data):
        length = struct.unpack_from("<I", data, pos)[0]
        if length < 8 or pos + 4 + length > len(data):
            break
        out.append((data[pos + 4], data[pos + 5]))
        pos += 4 + length
    return out


def read_until(c, data, deadline, done):
    """Reads into DATA until DONE(frames), the server's close or DEADLINE:
    returns "done", "closed" or "timeout"."""
    while True:
        if done(server_frames(data)):
            return "done"
        left = deadline - time.monotonic()
        if left <= 0:
            return "timeout"
        try:
            c.sock.settimeout(left)
            chunk = c.sock.recv(1 << 20)
        except socket.timeout:
            return "timeout"
        except ConnectionResetError:
            return "closed"
        if not chunk:
            return "closed"
        data += chunk


def fuzz(fsrv, rc, label):
    """The mutation fuzz against FSRV (RC: a RESP client of it)."""
    rc.call("SET", "probe", "p")
    before = last = errors_counted(rc)
    fuzz_bad, outcomes = [], {"goodbye": 0, "answered": 0, "closed": 0}
    for i in range(COUNT):
        ops = [random_op() for _ in range(rng.randrange(1, 6))]
        body = req(ops, fid=rng.randrange(1 << 32))
        if rng.random() < 0.15:
            stream = mutate(H, 0) + body
        else:
            stream = H + mutate(body, 0)
        nreq, decidable = stream_shape(stream)
        try:
            c = NativeClient(fsrv.native_port, timeout=WAIT, hello=False)
        except OSError as e:
            fuzz_bad.append((i, "connect: %s" % e))
            break
        try:
            c.send(stream)
        except OSError:
            pass
        data = bytearray()
        bad = []
        goodbye = lambda fr: any(k == GOODBYE for k, _ in fr)  # noqa: E731
        if decidable:
            # the server must answer every request or send GOODBYE, and close after a GOODBYE
            how = read_until(c, data, time.monotonic() + WAIT,
                             lambda fr: goodbye(fr) or sum(1 for k, f in fr if k == RESPONSE and f & LAST) >= nreq and
                             any(k == HELLO for k, _ in fr))
            if how == "timeout":
                bad.append("no answer and no GOODBYE (hang)")
            elif how == "closed":
                bad.append("closed without GOODBYE")
            elif goodbye(server_frames(data)):
                how = read_until(c, data, time.monotonic() + WAIT, lambda fr: False)
                if how != "closed":
                    bad.append("not closed after GOODBYE")
            closed = True
        else:
            # a frame is cut: the server may wait for the rest; after the
            # client's EOF it must close
            read_until(c, data, time.monotonic() + 0.2, goodbye)
            try:
                c.sock.shutdown(socket.SHUT_WR)
            except OSError:
                pass
            closed = read_until(c, data, time.monotonic() + WAIT, lambda fr: False) == "closed"
        c.close()
        more, kinds = check_frames(bytes(data), closed)
        bad += more
        # a violation is counted once, and one counted was answered with GOODBYE
        now = errors_counted(rc)
        grew = None if now is None or last is None else now - last
        if decidable and grew != (1 if GOODBYE in kinds else 0):
            bad.append("total_native_protocol_errors grew by %r, GOODBYE %s" % (grew, GOODBYE in kinds))
        if not decidable and (grew is None or grew > 1 or (GOODBYE in kinds and grew != 1)):
            bad.append("cut stream: total_native_protocol_errors grew by %r, GOODBYE %s" % (grew, GOODBYE in kinds))
        last = now
        outcomes["goodbye" if GOODBYE in kinds else "answered" if RESPONSE in kinds else "closed"] += 1
        if bad:
            fuzz_bad.append((i, bad, stream[:80]))
        if not fsrv.alive():
            bail_out("the server died on fuzz case %d (%r); log:\n%s" % (i, stream[:200], fsrv.log_tail(2000)))
    ok(not fuzz_bad, "%s: %d mutated streams: valid frames, every request answered or GOODBYE then close, cut ones closed "
       "after EOF (%s)"
       % (label, COUNT, outcomes))
    for b in fuzz_bad[:10]:
        diag("fuzz case %r" % (b,))
    after = errors_counted(rc)
    ok(before is not None and after is not None and after - before >= outcomes["goodbye"],
       "%s: total_native_protocol_errors counted the fuzz's GOODBYEs (%r -> %r, %d)"
       % (label, before, after, outcomes["goodbye"]))
    ok(fsrv.alive() and still_served(fsrv, rc), "%s: still serves native and RESP clients after the fuzz" % label)


fuzz(srv, R, "zarisd")
rf1 = start_native(threads=2, extra=["--proto-max-bulk-len", str(BULK), "--native-rf1", "yes"], name="zarisd-rf1")
fuzz(rf1, rf1.client(), "zarisd with native-rf1")
done_testing()
