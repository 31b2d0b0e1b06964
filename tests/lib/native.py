"""native.py — an independent Python implementation of the Zaris native
protocol, version 1, written from zarisd/proto/PROTOCOL.md (the contract)
for the conformance tests: it never looks at how zarisd does it.

What it owns:

  * frame and field encoding: frame(), hello_payload(), and one op_*()
    per operation of PROTOCOL.md 4, each returning the operation's bytes
    (op, opflags, db, fields); request() wraps operations into a frame.
  * a RESP3 value decoder (Value, decode_value) for results, which keeps
    each value's exact bytes (raw) for byte-for-byte comparisons.
  * a blocking client (NativeClient) with a timeout on every read: the
    handshake, requests, responses checked for index coverage and LAST,
    and GOODBYE detection (expect_goodbye).

Nothing here raises on what a test wants to check: a response's defects
(an index twice, a missing one, LAST misplaced, a wrong id) are collected
in Response.problems, and a closed connection or a GOODBYE is an exception
the test catches (Goodbye, Closed, socket.timeout).
"""

import select
import socket
import struct
import time

MAGIC = 0x5A524E31
VERSION = 1
HEADER = 12  # u32 length, u8 kind, u8 flags, u16 count, u32 id
MAX_OPS = 65535

HELLO, REQUEST, RESPONSE, GOODBYE = 1, 2, 3, 4
LAST = 0x01
HELLO_RF1, HELLO_CLUSTER = 0x0001, 0x0002

(OP_GET, OP_SET, OP_DEL, OP_EXISTS, OP_INCRBY, OP_GETSET, OP_GETDEL, OP_MGET, OP_MSET, OP_PTTL, OP_PEXPIRE,
 OP_PERSIST, OP_METAGET, OP_METASET, OP_INVALIDATE, OP_TOPOLOGY, OP_COMMAND) = range(1, 18)

SET_NX, SET_XX, SET_GET, SET_KEEPTTL, SET_META = 0x01, 0x02, 0x04, 0x08, 0x10

# PROTOCOL.md 5: status code -> the first word of Redis's error text
STATUS_WORDS = {
    1: "ERR", 2: "WRONGTYPE", 3: "MOVED", 4: "ASK", 5: "OOM", 6: "NOAUTH", 7: "BUSY", 8: "READONLY",
    9: "NOREPLICAS", 10: "CROSSSLOT", 11: "TRYAGAIN", 12: "CLUSTERDOWN", 13: "LOADING", 14: "NOSCRIPT",
    15: "EXECABORT", 16: "MASTERDOWN", 17: "MISCONF", 18: "NOPERM", 19: "FENCED", 20: "UNKILLABLE",
    21: "NOTBUSY", 22: "BUSYKEY",
}
STATUS = {w: c for c, w in STATUS_WORDS.items()}
STATUS_OTHER = 255


def status_of_error(text):
    """The status PROTOCOL.md 5 gives an error whose text is TEXT."""
    word = text.split(" ", 1)[0]
    return STATUS.get(word, STATUS_OTHER)


# ---------------------------------------------------------------- encoding

def b_(x):
    if isinstance(x, (bytes, bytearray, memoryview)):
        return bytes(x)
    return str(x).encode()


def u8(v):
    return struct.pack("<B", v)


def u16(v):
    return struct.pack("<H", v)


def u32(v):
    return struct.pack("<I", v)


def i64(v):
    return struct.pack("<q", v)


def u64(v):
    return struct.pack("<Q", v)


def sstr(x):
    """A str field: u32 length, then the bytes."""
    x = b_(x)
    return u32(len(x)) + x


def frame(kind, count, fid, payload, flags=0, length=None):
    """One frame; LENGTH overrides the length field (for malformed input)."""
    if length is None:
        length = 8 + len(payload)
    return struct.pack("<IBBHI", length, kind, flags, count, fid) + payload


def hello_payload(username=b"", password=b"", magic=MAGIC, version=VERSION, flags=0):
    return u32(magic) + u16(version) + u16(flags) + sstr(username) + sstr(password)


def hello_frame(username=b"", password=b"", **kw):
    return frame(HELLO, 0, 0, hello_payload(username, password, **kw))


def _op(op, opflags, db, fields=b""):
    return u8(op) + u8(opflags) + u16(db) + fields


def meta_fields(meta):
    """META = (labels, entity, content_type)."""
    labels, entity, ctype = meta
    return u16(len(labels)) + b"".join(sstr(l) for l in labels) + sstr(entity) + sstr(ctype)


def op_get(key, db=0):
    return _op(OP_GET, 0, db, sstr(key))


def op_set(key, value, ttl_ms=0, nx=False, xx=False, get=False, keepttl=False, meta=None, db=0, opflags=None):
    flags = (SET_NX if nx else 0) | (SET_XX if xx else 0) | (SET_GET if get else 0) | \
        (SET_KEEPTTL if keepttl else 0) | (SET_META if meta is not None else 0)
    if opflags is not None:
        flags = opflags
    f = sstr(key) + sstr(value) + i64(ttl_ms)
    if meta is not None:
        f += meta_fields(meta)
    return _op(OP_SET, flags, db, f)


def op_del(key, db=0):
    return _op(OP_DEL, 0, db, sstr(key))


def op_exists(key, db=0):
    return _op(OP_EXISTS, 0, db, sstr(key))


def op_incrby(key, delta, db=0):
    return _op(OP_INCRBY, 0, db, sstr(key) + i64(delta))


def op_getset(key, value, db=0):
    return _op(OP_GETSET, 0, db, sstr(key) + sstr(value))


def op_getdel(key, db=0):
    return _op(OP_GETDEL, 0, db, sstr(key))


def op_mget(keys, db=0):
    return _op(OP_MGET, 0, db, u16(len(keys)) + b"".join(sstr(k) for k in keys))


def op_mset(pairs, db=0):
    return _op(OP_MSET, 0, db, u16(len(pairs)) + b"".join(sstr(k) + sstr(v) for k, v in pairs))


def op_pttl(key, db=0):
    return _op(OP_PTTL, 0, db, sstr(key))


def op_pexpire(key, ttl_ms, db=0):
    return _op(OP_PEXPIRE, 0, db, sstr(key) + i64(ttl_ms))


def op_persist(key, db=0):
    return _op(OP_PERSIST, 0, db, sstr(key))


def op_metaget(key, db=0):
    return _op(OP_METAGET, 0, db, sstr(key))


def op_metaset(key, meta, db=0):
    return _op(OP_METASET, 0, db, sstr(key) + meta_fields(meta))


def op_invalidate(label, entity=b"", db=0):
    return _op(OP_INVALIDATE, 0, db, sstr(label) + sstr(entity))


def op_topology(db=0):
    return _op(OP_TOPOLOGY, 0, db)


def op_command(*args, db=0):
    return _op(OP_COMMAND, 0, db, u16(len(args)) + b"".join(sstr(a) for a in args))


def request(ops, fid):
    return frame(REQUEST, len(ops), fid, b"".join(ops))


# ---------------------------------------------------------------- RESP3 values

class Malformed(Exception):
    pass


class Value:
    """One RESP3 value. kind: its type byte as a str. value: + - ( , =
    text (str); $ bytes; : int; # bool; _ None; * ~ > list of Value; %
    list of (Value, Value). raw: its exact bytes (attribute included)."""

    __slots__ = ("kind", "value", "raw")

    def __init__(self, kind, value, raw):
        self.kind, self.value, self.raw = kind, value, raw

    def is_error(self):
        return self.kind in "-!"

    def text(self):
        """An error's or status's text ('' for others)."""
        return self.value if isinstance(self.value, str) else ""

    def py(self):
        k, v = self.kind, self.value
        if k in "*~>":
            return [x.py() for x in v]
        if k == "%":
            return {_frozen(a.py()): b.py() for a, b in v}
        return v

    def __repr__(self):
        return "Value(%r)" % (self.raw,)


def _frozen(x):
    return tuple(x) if isinstance(x, list) else x


def _crlf_line(buf, pos):
    end = buf.find(b"\r\n", pos)
    if end < 0:
        raise Malformed("no CRLF after offset %d" % pos)
    return bytes(buf[pos:end]), end + 2


def _num(s):
    try:
        return int(s)
    except ValueError:
        raise Malformed("bad number %r" % s)


def decode_value(buf, pos=0):
    """Decodes one RESP3 value at BUF[POS:]; returns (Value, next position).
    Raises Malformed on anything not RESP3 or running past the end."""
    if pos >= len(buf):
        raise Malformed("value missing at offset %d" % pos)
    start = pos
    kind = chr(buf[pos])
    line, pos = _crlf_line(buf, pos + 1)
    if kind == "|":  # attribute: a map, then the value it annotates
        n = _num(line)
        for _ in range(2 * n):
            _, pos = decode_value(buf, pos)
        v, pos = decode_value(buf, pos)
        return Value(v.kind, v.value, bytes(buf[start:pos])), pos
    if kind in "+-(,":
        val = line.decode("utf-8", "surrogateescape")
        if kind == "(" and not line.lstrip(b"-").isdigit():
            raise Malformed("bad big number %r" % line)
    elif kind == ":":
        val = _num(line)
    elif kind == "_":
        if line:
            raise Malformed("bad null")
        val = None
    elif kind == "#":
        if line not in (b"t", b"f"):
            raise Malformed("bad boolean %r" % line)
        val = line == b"t"
    elif kind in "$!=":
        n = _num(line)
        if n < 0 or len(buf) < pos + n + 2 or buf[pos + n:pos + n + 2] != b"\r\n":
            raise Malformed("bad blob of %d at %d" % (n, pos))
        val = bytes(buf[pos:pos + n])
        pos += n + 2
        if kind != "$":
            val = val.decode("utf-8", "surrogateescape")
    elif kind in "*~>%":
        n = _num(line)
        if n < 0:
            raise Malformed("negative aggregate length (not RESP3)")
        items = []
        for _ in range(2 * n if kind == "%" else n):
            v, pos = decode_value(buf, pos)
            items.append(v)
        val = list(zip(items[0::2], items[1::2])) if kind == "%" else items
    else:
        raise Malformed("unknown RESP3 type byte %r" % kind)
    return Value(kind, val, bytes(buf[start:pos])), pos


# ---------------------------------------------------------------- results

class Result:
    __slots__ = ("index", "status", "value")

    def __init__(self, index, status, value):
        self.index, self.status, self.value = index, status, value

    def __repr__(self):
        return "Result(%d, %d, %r)" % (self.index, self.status, self.value.raw)


def decode_results(payload, count):
    """The COUNT results of a RESPONSE payload; Malformed on a short or
    long payload."""
    out, pos = [], 0
    for _ in range(count):
        if pos + 3 > len(payload):
            raise Malformed("result header past the payload's end")
        index, status = struct.unpack_from("<HB", payload, pos)
        v, pos = decode_value(payload, pos + 3)
        out.append(Result(index, status, v))
    if pos != len(payload):
        raise Malformed("%d bytes after the last result" % (len(payload) - pos))
    return out


class Response:
    """All frames answering one request. results: list by index (None
    where none came); problems: every way the frames broke PROTOCOL.md 5."""

    def __init__(self, fid, nops):
        self.fid = fid
        self.results = [None] * nops
        self.frames = 0
        self.problems = []

    def __getitem__(self, i):
        return self.results[i]


class Goodbye(Exception):
    """The server sent GOODBYE; reason is its text."""

    def __init__(self, reason):
        Exception.__init__(self, "GOODBYE %r" % reason)
        self.reason = reason


class Closed(Exception):
    pass


class HelloReply:
    def __init__(self, payload):
        if len(payload) < 22:
            raise Malformed("HELLO reply payload of %d bytes" % len(payload))
        self.magic, self.version, self.flags, self.client_id, self.max_frame = \
            struct.unpack_from("<IHHQI", payload, 0)
        n = struct.unpack_from("<I", payload, 20)[0]
        self.node_id = bytes(payload[24:24 + n])
        self.extra = len(payload) - 24 - n  # bytes after node_id: 0 when well formed
        if self.extra < 0:
            raise Malformed("HELLO reply's node_id runs past its end")


# ---------------------------------------------------------------- client

class NativeClient:
    """A blocking native client over one TCP connection. Every read waits
    at most TIMEOUT seconds (socket.timeout after). hello=False leaves the
    handshake to the caller."""

    def __init__(self, port, host="127.0.0.1", timeout=10.0, username=b"", password=b"", hello=True):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = bytearray()
        self.next_id = 1
        self.hello_reply = None
        if hello:
            self.hello_reply = self.hello(username, password)

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def send(self, data):
        self.sock.sendall(data)

    def send_slowly(self, data, chunk=1, pause=0.001):
        """Sends DATA CHUNK bytes at a time with a pause between (to test
        the server's incremental framing). Stops quietly when the server has
        closed (it may answer GOODBYE before the rest arrived)."""
        for i in range(0, len(data), chunk):
            try:
                self.sock.sendall(data[i:i + chunk])
            except (BrokenPipeError, ConnectionResetError):
                return False
            time.sleep(pause)
        return True

    def _fill(self):
        try:
            chunk = self.sock.recv(1 << 20)
        except ConnectionResetError:
            chunk = b""
        if not chunk:
            raise Closed("connection closed by the server")
        self.buf += chunk

    def read_frame(self):
        """(kind, flags, count, id, payload) of the next frame."""
        while len(self.buf) < 4:
            self._fill()
        length = struct.unpack_from("<I", self.buf, 0)[0]
        if length < 8:
            raise Malformed("server frame length %d" % length)
        while len(self.buf) < 4 + length:
            self._fill()
        kind, flags, count, fid = struct.unpack_from("<BBHI", self.buf, 4)
        payload = bytes(self.buf[HEADER:4 + length])
        del self.buf[:4 + length]
        return kind, flags, count, fid, payload

    @staticmethod
    def goodbye_reason(payload):
        if len(payload) < 4:
            return payload
        n = struct.unpack_from("<I", payload, 0)[0]
        return payload[4:4 + n]

    def hello(self, username=b"", password=b"", **kw):
        """Sends HELLO and returns the HelloReply; Goodbye when refused."""
        self.send(hello_frame(username, password, **kw))
        kind, flags, count, fid, payload = self.read_frame()
        if kind == GOODBYE:
            raise Goodbye(self.goodbye_reason(payload))
        if kind != HELLO or flags or count or fid:
            raise Malformed("HELLO answered by kind %d flags %d count %d id %d" % (kind, flags, count, fid))
        self.hello_reply = HelloReply(payload)
        return self.hello_reply

    def send_request(self, ops, fid=None):
        """Sends one REQUEST of OPS; returns its id."""
        if fid is None:
            fid = self.next_id
            self.next_id = (self.next_id + 1) & 0xFFFFFFFF
        self.send(request(ops, fid))
        return fid

    def read_response(self, fid, nops):
        """Reads RESPONSE frames up to the one with LAST; a Response."""
        r = Response(fid, nops)
        while True:
            kind, flags, count, rid, payload = self.read_frame()
            if kind == GOODBYE:
                raise Goodbye(self.goodbye_reason(payload))
            r.frames += 1
            if kind != RESPONSE:
                r.problems.append("frame of kind %d among the responses" % kind)
                continue
            if rid != fid:
                r.problems.append("response id %d, want %d" % (rid, fid))
            if flags & ~LAST:
                r.problems.append("response flags 0x%x" % flags)
            try:
                results = decode_results(payload, count)
            except Malformed as e:
                r.problems.append("undecodable response: %s" % e)
                results = []
            for res in results:
                if res.index >= nops:
                    r.problems.append("index %d of %d ops" % (res.index, nops))
                elif r.results[res.index] is not None:
                    r.problems.append("index %d answered twice" % res.index)
                else:
                    r.results[res.index] = res
                if res.status == 0 and res.value.is_error():
                    r.problems.append("index %d: error value with status 0" % res.index)
                if res.status != 0 and not res.value.is_error():
                    r.problems.append("index %d: status %d on a non-error value" % (res.index, res.status))
            if flags & LAST:
                missing = [i for i, x in enumerate(r.results) if x is None]
                if missing:
                    r.problems.append("LAST with %d ops unanswered (first %d)" % (len(missing), missing[0]))
                return r

    def call(self, ops):
        """One request, its Response."""
        if not isinstance(ops, (list, tuple)):
            ops = [ops]
        fid = self.send_request(ops)
        return self.read_response(fid, len(ops))

    def one(self, op):
        """One op alone: its Result (raises AssertionError on problems)."""
        r = self.call([op])
        if r.problems:
            raise AssertionError("; ".join(r.problems))
        return r.results[0]

    def expect_goodbye(self, timeout=10.0):
        """Reads until the server closes: (GOODBYE reason or None, whether
        it closed within TIMEOUT, the kinds of other frames seen)."""
        deadline = time.monotonic() + timeout
        reason, others = None, []
        while True:
            # frames already buffered first
            while len(self.buf) >= 4:
                length = struct.unpack_from("<I", self.buf, 0)[0]
                if len(self.buf) < 4 + length or length < 8:
                    break
                kind, flags, count, fid, payload = self.read_frame()
                if kind == GOODBYE:
                    reason = self.goodbye_reason(payload)
                else:
                    others.append(kind)
            left = deadline - time.monotonic()
            if left <= 0:
                return reason, False, others
            rd, _, _ = select.select([self.sock], [], [], left)
            if not rd:
                return reason, False, others
            try:
                chunk = self.sock.recv(1 << 20)
            except ConnectionResetError:
                chunk = b""
            if not chunk:
                return reason, True, others
            self.buf += chunk


# ---------------------------------------------------------------- test glue

def start_native(extra=(), threads=2, name="zarisd-native", **kw):
    """A zarisd (tests/lib/zaris.py's start_zarisd) with --native-port on a
    free loopback port as well; srv.native_port is that port, and the native
    listener answered a connect before this returns. restart_native() waits
    for it again after a restart (the port is picked afresh)."""
    import zaris
    srv = zaris.start_zarisd(threads=threads, extra=extra, name=name, native=True, **kw)
    _wait_native(srv)
    return srv


def restart_native(srv):
    srv.restart()
    _wait_native(srv)


def _wait_native(srv, timeout=10.0):
    deadline = time.monotonic() + timeout
    while True:
        try:
            socket.create_connection(("127.0.0.1", srv.native_port), timeout=1.0).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise RuntimeError("%s: nothing listens on native port %d; log:\n%s"
                                   % (srv.name, srv.native_port, srv.log_tail()))
            time.sleep(0.05)


def resp3(srv, timeout=10.0):
    """A RESP client of SRV after HELLO 3 (tests/lib/zaris.py's Client)."""
    c = srv.client(timeout=timeout)
    r = c.call("HELLO", "3")
    if r.is_error():
        raise RuntimeError("HELLO 3: %s" % r.value)
    return c


def native(srv, timeout=10.0, **kw):
    return NativeClient(srv.native_port, timeout=timeout, **kw)


def info_field(c, section, name):
    """An INFO field's text through the RESP client C (None when absent)."""
    r = c.call("INFO", section)
    text = r.value if isinstance(r.value, str) else (r.value or b"").decode()
    if text.startswith("txt:"):  # RESP3 verbatim string
        text = text[4:]
    for line in text.split("\r\n"):
        if line.startswith(name + ":"):
            return line.split(":", 1)[1]
    return None
