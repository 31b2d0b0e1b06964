#!/usr/bin/python3
# protocol.t — the RESP request parser and the connection limits over real
# sockets, compared with redis-server where Redis's behaviour is deterministic.
#
#  * a corpus of malformed, truncated and inline requests: each must get
#    exactly Redis's reply (e.g. "-ERR Protocol error: invalid bulk length")
#    and the same close/keep-open outcome, while zarisd stays up and a client
#    connected the whole time keeps working;
#  * requests split byte by byte and at every position;
#  * pipelining (1000 commands in one write), 10 MB values;
#  * proto-max-bulk-len, client-query-buffer-limit and the normal-class
#    client-output-buffer-limit set with CONFIG SET (a slow reader is cut off,
#    the server's memory stays bounded). By default (Redis's "normal 0 0 0")
#    no normal client is cut off: its pipeline is held back instead, which
#    pipeline_backpressure.t checks.

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from zaris import *  # noqa: E402,F403

QUIET = 0.3       # seconds of silence that end a reply on a connection kept open
LONG = 5.0        # bound on waiting for a reply or a close

# (name, request bytes, Redis closes the connection after its reply)
CORPUS = [
    ("multibulk length not a number", b"*abc\r\n", True),
    ("multibulk length with a space", b"* 1\r\n$4\r\nPING\r\n", True),
    ("multibulk length with a plus", b"*+1\r\n$4\r\nPING\r\n", True),
    ("multibulk length over INT_MAX", b"*2147483648\r\n", True),
    ("multibulk length huge", b"*99999999999\r\n", True),
    ("multibulk count line too long", b"*" + b"1" * 70000, True),
    ("negative multibulk length is ignored", b"*-5\r\n*1\r\n$4\r\nPING\r\n", False),
    ("empty multibulk is ignored", b"*0\r\n*1\r\n$4\r\nPING\r\n", False),
    ("bulk length not a number", b"*1\r\n$abc\r\n", True),
    ("bulk length negative", b"*1\r\n$-5\r\n", True),
    ("bulk length with a space", b"*1\r\n$ 4\r\nPING\r\n", True),
    ("bulk length with a plus", b"*1\r\n$+4\r\nPING\r\n", True),
    ("bulk length over proto-max-bulk-len", b"*1\r\n$536870913\r\n", True),
    ("bulk length huge", b"*1\r\n$99999999999999\r\n", True),
    ("bulk count line too long", b"*1\r\n$" + b"1" * 70000, True),
    ("'$' expected, got a letter", b"*1\r\nfoo\r\n", True),
    ("'$' expected, got ':'", b"*2\r\n$4\r\nPING\r\n:1\r\n", True),
    ("empty command name", b"*1\r\n$0\r\n\r\n", False),
    ("bytes after a bulk instead of CRLF", b"*1\r\n$4\r\nPINGxx*1\r\n$4\r\nPING\r\n", False),
    ("truncated multibulk header", b"*3\r\n$3\r\nSET\r\n", False),
    ("truncated bulk", b"*2\r\n$4\r\nECHO\r\n$10\r\nabc", False),
    ("LF-only multibulk waits for CR", b"*1\n$4\nPING\n", False),
    ("inline PING", b"PING\r\n", False),
    ("inline with bare LF", b"SET a b\nGET a\n", False),
    ("inline with blanks around", b"   PING   \r\n", False),
    ("inline blank line", b"   \r\n\r\n\nPING\r\n", False),
    ("inline double quotes and escapes", b'ECHO "a\\x41\\n\\"q\\""\r\n', False),
    ("inline single quotes", b"SET q 'it\\'s a\\nb'\r\nGET q\r\nDEL q\r\n", False),
    ("inline two quoted strings without a blank", b"ECHO 'it''s'\r\n", True),
    ("inline bad hex escape kept literally", b'ECHO "a\\x4"\r\n', False),
    ("inline unknown command", b"nosuch a b\r\n", False),
    ("inline unbalanced double quote", b'SET a "unbalanced\r\n', True),
    ("inline unbalanced single quote", b"SET a 'x\r\n", True),
    ("inline closing quote not followed by space", b'SET a "x"y\r\n', True),
    ("inline request too big", b"A" * 70000, True),
    ("binary garbage line", b"\x01\x02\xfe\xff garbage \x80\x81\r\n", False),
    ("binary garbage then a valid command", b"\x7f\x10\x11\r\n*1\r\n$4\r\nPING\r\n", False),
    ("multibulk then inline then multibulk", b"*1\r\n$4\r\nPING\r\nPING\r\n*2\r\n$4\r\nECHO\r\n$1\r\nx\r\n", False),
]


def collect(cl, expect_len, closes, quiet=QUIET):
    """What arrives on cl: (bytes, closed).  With closes, read until EOF
    (bounded); else until at least expect_len bytes are there and then
    nothing more came for `quiet` seconds (bounded by LONG)."""
    if closes:
        return cl.recv_until_closed(LONG)
    data = b""
    deadline = time.monotonic() + LONG
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return data, False
        wait = min(left, quiet) if len(data) >= expect_len else left
        if wait <= 0:
            return data, False
        more, closed = cl.recv_until_closed(wait, limit=1)
        data += more
        if closed:
            return data, True
        if not more and len(data) >= expect_len:
            return data, False


def exchange(srv, payload, expect_len, closes):
    cl = srv.client()
    try:
        try:
            cl.send_raw(payload)
        except OSError:
            pass  # a server may close while we still send; what it said counts
        return collect(cl, expect_len, closes)
    finally:
        cl.close()


def witness_ok(w):
    try:
        r = w.call("ECHO", "still here")
        return r.value == b"still here"
    except OSError:
        return False


def check_corpus(ref, z, wz):
    for name, payload, closes in CORPUS:
        want = exchange(ref, payload, 0, closes)
        if want[1] != closes:
            diag("corpus entry '%s': redis-server closed=%s, the corpus says %s" % (name, want[1], closes))
        got = exchange(z, payload, len(want[0]), closes)
        alive = z.alive() and witness_ok(wz)
        good = got == want and alive
        ok(good, "protocol: %s" % name)
        if not good:
            diag("  request: %r" % payload[:120])
            diag("  redis:   %r %s" % (want[0][:300], "then closed" if want[1] else "kept open"))
            diag("  zarisd:  %r %s" % (got[0][:300], "then closed" if got[1] else "kept open"))
            if not alive:
                diag("  zarisd or the witness client stopped working")
                if not z.alive():
                    diag(z.log_tail())
                    z.restart()
                bail_out("zarisd does not survive a malformed request")


def check_split(z):
    req = (encode_command("SET", "split", "hello world") + encode_command("GET", "split")
           + b"ECHO inline\r\n" + encode_command("DEL", "split"))
    want = b"+OK\r\n$11\r\nhello world\r\n$6\r\ninline\r\n:1\r\n"
    cl = z.client()
    for i in range(len(req)):
        cl.send_raw(req[i:i + 1])
        time.sleep(0.001)
    data, _ = collect(cl, len(want), False)
    cl.close()
    is_(data, want, "a pipeline sent one byte per send() gets its replies")

    bad = None
    cl = z.client()
    for cut in range(1, len(req)):
        cl.send_raw(req[:cut])
        time.sleep(0.002)
        cl.send_raw(req[cut:])
        data, closed = collect(cl, len(want), False, quiet=0)
        if data != want or closed:
            bad = (cut, data, closed)
            break
    cl.close()
    ok(bad is None, "a pipeline split at each of its %d positions gets its replies" % (len(req) - 1))
    if bad:
        diag("  split at %d: got %r closed=%s" % bad)


def check_pipeline(ref, z):
    cmds = []
    for i in range(1000):
        if i % 4 == 0:
            cmds.append(("SET", "p:%d" % i, "value-%d" % i))
        elif i % 4 == 1:
            cmds.append(("GET", "p:%d" % (i - 1)))
        elif i % 4 == 2:
            cmds.append(("INCR", "p:count"))
        else:
            cmds.append(("NOSUCH", i))
    out = {}
    for srv in (ref, z):
        cl = srv.client()
        cl.call("DEL", "p:count")
        out[srv.name] = [r.raw for r in cl.pipeline(cmds)]
        cl.call("FLUSHALL")
        cl.close()
    got, want = out[z.name], out[ref.name]
    ok(got == want, "1000 pipelined commands in one write: replies in order, as redis-server's")
    if got != want:
        first = next(i for i in range(len(want)) if i >= len(got) or got[i] != want[i])
        diag("  first difference at command %d %r: redis %r zarisd %r"
             % (first, cmds[first], want[first], got[first] if first < len(got) else None))
    cl = z.client()
    cl.send_raw(b"PING\r\n" * 10000)
    data, _ = collect(cl, 7 * 10000, False)
    cl.close()
    ok(data == b"+PONG\r\n" * 10000, "10000 inline PINGs in one write get 10000 PONGs (%d bytes)" % len(data))


def check_big_values(z):
    cl = z.client(timeout=30)
    big = bytes(range(256)) * (10 * 1024 * 1024 // 256)
    is_(cl.call("SET", "big", big).raw, b"+OK\r\n", "SET of a 10 MB binary value")
    r = cl.call("GET", "big")
    ok(r.kind == "$" and r.value == big, "GET returns the 10 MB value intact (%s bytes)"
       % (len(r.value) if r.value is not None else None))
    is_(cl.call("STRLEN", "big").raw, b":%d\r\n" % len(big), "STRLEN of the 10 MB value")
    # the same value, dribbled in 64 kB writes
    req = encode_command("SET", "big2", big)
    for off in range(0, len(req), 65536):
        cl.send_raw(req[off:off + 65536])
    is_(cl.read_reply().raw, b"+OK\r\n", "SET of a 10 MB value sent in 64 kB writes")
    is_(cl.call("DEL", "big", "big2").raw, b":2\r\n", "DEL both big values")
    cl.close()


def config_set(srvs, key, value):
    for s in srvs:
        with s.client() as c:
            r = c.call("CONFIG", "SET", key, value)
            if r.raw != b"+OK\r\n":
                return "%s: CONFIG SET %s %s -> %r" % (s.name, key, value, r.raw)
    return None


def check_limits(ref, z, wz):
    # proto-max-bulk-len: 1mb is Redis's smallest allowed value
    err = config_set((ref, z), "proto-max-bulk-len", "1mb")
    ok(err is None, "CONFIG SET proto-max-bulk-len 1mb")
    if err:
        diag(err)
    cases = [
        ("bulk of proto-max-bulk-len + 1 is refused",
         b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1048577\r\n", True),
        ("bulk of exactly proto-max-bulk-len is taken",
         encode_command("SET", "k", b"v" * 1048576), False),
    ]
    for name, payload, closes in cases:
        want = exchange(ref, payload, 0, closes)
        got = exchange(z, payload, len(want[0]), closes)
        ok(got == want and witness_ok(wz), name)
        if got != want:
            diag("  redis %r closed=%s / zarisd %r closed=%s" % (want[0][:200], want[1], got[0][:200], got[1]))
    config_set((ref, z), "proto-max-bulk-len", "512mb")

    # client-query-buffer-limit: a 2 MB argument cannot fit in 1 MB
    err = config_set((ref, z), "client-query-buffer-limit", "1mb")
    ok(err is None, "CONFIG SET client-query-buffer-limit 1mb")
    if err:
        diag(err)
    payload = b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$2000000\r\n" + b"x" * 1500000
    want = exchange(ref, payload, 0, True)
    got = exchange(z, payload, 0, True)
    ok(got == want and want == (b"", True) and witness_ok(wz),
       "a request over client-query-buffer-limit closes the connection without a reply")
    if got != want:
        diag("  redis %r closed=%s / zarisd %r closed=%s" % (want[0][:200], want[1], got[0][:200], got[1]))
    payload = encode_command("SET", "k", b"y" * 900000)
    want = exchange(ref, payload, 0, False)
    got = exchange(z, payload, len(want[0]), False)
    ok(got == want == (b"+OK\r\n", False), "a 900 kB request under the 1mb query buffer limit is served")
    config_set((ref, z), "client-query-buffer-limit", "1gb")


def slow_reader(srv, w):
    """A client pipelines GETs of a 100 kB value and never reads.  Returns
    (disconnected, bytes it received, server RSS growth in kB, witness ok)."""
    value = b"s" * 100000
    w.call("SET", "slowval", value)
    base = srv.rss_kb()
    n = 2000                      # 200 MB of replies if nothing stopped it
    slow = srv.client(rcvbuf=4096)
    slow.send_raw(encode_command("CLIENT", "SETNAME", "slowreader"))
    req = encode_command("GET", "slowval")
    peak = base
    try:
        for i in range(0, n, 100):
            slow.send_raw(req * 100)
            peak = max(peak, srv.rss_kb())
    except OSError:
        pass                      # cut off while still sending: that is the point
    deadline = time.monotonic() + 3.0
    while time.monotonic() < deadline:
        peak = max(peak, srv.rss_kb())
        time.sleep(0.05)
    r = w.call("GET", "slowval")
    witness = r.value == value and witness_ok(w)
    data, closed = slow.recv_until_closed(15.0, limit=n * len(value))
    slow.close()
    peak = max(peak, srv.rss_kb())
    return closed and len(data) < n * len(value) // 2, len(data), peak - base, witness


def check_output_limit(ref, z, wr, wz):
    err = config_set((ref, z), "client-output-buffer-limit", "normal 1mb 512kb 1")
    ok(err is None, "CONFIG SET client-output-buffer-limit 'normal 1mb 512kb 1'")
    if err:
        diag(err)
    for srv, w in ((ref, wr), (z, wz)):
        cut, nbytes, growth, witness = slow_reader(srv, w)
        diag("%s: slow reader got %d bytes before %s; RSS grew %d kB"
             % (srv.name, nbytes, "being disconnected" if cut else "the end (NOT disconnected)", growth))
        if srv is ref:
            if not cut:
                diag("redis-server itself did not cut the slow reader off; the check below still applies")
            continue
        ok(cut, "a slow reader over the output buffer limit is disconnected")
        ok(growth < 100 * 1024, "server RSS grew %d kB (< 100 MB) while the slow reader was connected" % growth)
        ok(witness and z.alive(), "another client was served meanwhile")
    config_set((ref, z), "client-output-buffer-limit", "normal 0 0 0")


def check_output_limit_forever(ref, z):
    """A soft limit of 1 byte held for the longest time Redis takes
    (INT_MAX seconds) never cuts a client off. zarisd took any number of
    seconds, and seconds * 1000 overflowed (UBSan: signed integer overflow)
    and cut the client at once; Redis keeps the seconds in an int and
    refuses more (the case file server-admin.txt compares the refusals)."""
    err = config_set((ref, z), "client-output-buffer-limit", "normal 0 1 2147483647")
    ok(err is None, "CONFIG SET client-output-buffer-limit 'normal 0 1 2147483647'")
    outcome = []
    for srv in (ref, z):
        c = srv.client()
        c.call("SET", "forever", "v" * 1024)
        try:
            replies = [r.raw[:6] for r in c.pipeline([("GET", "forever")] * 200)]
            outcome.append((replies.count(b"$1024\r"), c.call("PING").raw))
        except (OSError, ProtocolError) as e:
            outcome.append(("cut off", str(e)))
        c.close()
    is_(outcome[1], outcome[0], "200 pipelined 1 KB replies over the 1-byte soft limit: the client stays, "
        "as with redis-server (%r)" % (outcome[0],))
    config_set((ref, z), "client-output-buffer-limit", "normal 0 0 0")


def main():
    # no fixed plan: done_testing() counts
    ref = start_redis()
    z = start_zarisd(threads=2)
    diag("zarisd: %s" % " ".join(z.argv))
    wz = z.client()
    wr = ref.client()
    check_corpus(ref, z, wz)
    check_split(z)
    check_pipeline(ref, z)
    check_big_values(z)
    check_limits(ref, z, wz)
    check_output_limit(ref, z, wr, wz)
    check_output_limit_forever(ref, z)
    ok(z.alive() and witness_ok(wz), "zarisd is still up and the witness client, connected throughout, works")
    wz.close()
    wr.close()
    is_(z.stop(), 0, "zarisd exits with status 0 on SIGTERM")
    done_testing()


if __name__ == "__main__":
    main()
