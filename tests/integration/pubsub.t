#!/usr/bin/python3
# pubsub.t — pub/sub across workers and keyspace notifications.
#
#   * fan-out: 30 subscribers (RESP2 and RESP3, channel and pattern) spread
#     over the workers of zarisd --threads 2 and --threads 3; two publishers
#     each send 10,000 numbered messages at once; every subscriber must see
#     each publisher's messages all, in order; PUBLISH counts 30 receivers.
#   * unsubscribe while messages are in flight: the messages before the
#     confirmation are a gap-free prefix, and nothing follows it (an RESP2
#     client back in normal mode must get plain replies only).
#   * a subscriber that never reads is closed by the pubsub output limit
#     while another keeps receiving everything, and the server's RSS stays
#     bounded.
#   * keyspace notifications of SET/DEL/EXPIRE/expired/evicted: the same
#     sequence against zarisd and redis-server, same messages.
# Env: ZARIS_BUILD (zarisd's dir); a TSan build works too (slower, longer waits).

import os
import re
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from zaris import *  # noqa: E402,F403

MSGS = 10000
NSUB = 30
WAIT = 120.0  # bound on every wait (TSan builds are slow); never reached when healthy

PAYLOAD_RE = re.compile(rb"\r\n([AB]):(\d+)\r\n")


def hello3(cl):
    r = cl.call("HELLO", "3")
    return not r.is_error()


def read_until(cl, pred, timeout=WAIT):
    """Reads raw bytes into cl.buf until pred(cl.buf) or timeout; True when pred held."""
    deadline = time.monotonic() + timeout
    while not pred(cl.buf):
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        cl.sock.settimeout(min(left, 5.0))
        try:
            chunk = cl.sock.recv(1 << 20)
        except OSError:
            continue
        if not chunk:
            return pred(cl.buf)
        cl.buf += chunk
    return True


def publisher(port, tag, results):
    with Client(port, timeout=WAIT) as p:
        replies = []
        batch = 500
        for start in range(0, MSGS, batch):
            p.send_raw(b"".join(encode_command("PUBLISH", "fan", "%s:%d" % (tag, i))
                                for i in range(start, min(MSGS, start + batch))))
            for _ in range(start, min(MSGS, start + batch)):
                replies.append(p.read_reply().value)
        results[tag] = replies


def check_order(data):
    """(ok, why): each publisher's numbers are 0..MSGS-1 in order."""
    seen = {b"A": [], b"B": []}
    for m in PAYLOAD_RE.finditer(data):
        seen[m.group(1)].append(int(m.group(2)))
    for tag, nums in seen.items():
        if nums != list(range(MSGS)):
            bad = next((i for i, n in enumerate(nums) if n != i), len(nums))
            return False, "%s: %d messages, first out of place at %d" % (tag.decode(), len(nums), bad)
    return True, ""


def fanout(threads):
    srv = start_zarisd(threads=threads, name="zarisd-t%d" % threads)
    subs = []
    for i in range(NSUB):
        cl = srv.client(timeout=WAIT)
        resp3 = i % 3 == 0
        if resp3:
            hello3(cl)
        if i % 4 == 1:
            r = cl.call("PSUBSCRIBE", "fa*")
        else:
            r = cl.call("SUBSCRIBE", "fan")
        subs.append((cl, resp3, r))
    ok(all(r.kind == (">" if resp3 else "*") and r.value[-1].value == 1 for _, resp3, r in subs),
       "threads %d: %d subscribers confirmed (RESP2 '*', RESP3 '>')" % (threads, NSUB))
    with srv.client() as c:
        listing = c.call("CLIENT", "LIST").py().decode()
    psubs = len(re.findall(r"flags=P .*sub=0 psub=1 ssub=0", listing))
    csubs = len(re.findall(r"flags=P .*sub=1 psub=0 ssub=0", listing))
    is_((csubs, psubs), (NSUB - len(range(1, NSUB, 4)), len(range(1, NSUB, 4))),
        "threads %d: CLIENT LIST shows flag P and sub=/psub= counts" % threads)

    results = {}
    pubs = [threading.Thread(target=publisher, args=(srv.port, t, results)) for t in ("A", "B")]
    for t in pubs:
        t.start()
    for t in pubs:
        t.join(WAIT)
    is_(sorted(set(results.get("A", []) + results.get("B", []))), [NSUB],
        "threads %d: every PUBLISH counted %d receivers" % (threads, NSUB))
    bad = []
    for i, (cl, resp3, _) in enumerate(subs):
        read_until(cl, lambda b: b.count(b"\r\nA:") + b.count(b"\r\nB:") >= 2 * MSGS)
        good, why = check_order(bytes(cl.buf))
        head = (b">" if resp3 else b"*") + (b"4\r\n$8\r\npmessage" if i % 4 == 1 else b"3\r\n$7\r\nmessage")
        if not good or not bytes(cl.buf).startswith(head):
            bad.append("subscriber %d (RESP%d): %s %r" % (i, 3 if resp3 else 2, why, bytes(cl.buf[:40])))
        cl.close()
    ok(not bad, "threads %d: %d subscribers got 2 x %d messages, each publisher's in order" % (threads, NSUB, MSGS))
    for b in bad[:5]:
        diag(b)
    return srv


def unsubscribe_in_flight(srv):
    """Subscribers leave while a publisher streams; nothing may follow the
    confirmation, and what came before is a gap-free prefix."""
    subs = [srv.client(timeout=WAIT) for _ in range(8)]
    for cl in subs:
        cl.call("SUBSCRIBE", "flight")
    stop = threading.Event()

    def stream():
        with srv.client(timeout=WAIT) as p:
            n = 0
            while not stop.is_set() and n < 50000:
                p.send_raw(b"".join(encode_command("PUBLISH", "flight", "A:%d" % i) for i in range(n, n + 100)))
                for _ in range(100):
                    p.read_reply()
                n += 100
                time.sleep(0.002)

    t = threading.Thread(target=stream)
    t.start()
    problems = []
    for k, cl in enumerate(subs):
        time.sleep(0.01)
        cl.send_raw(encode_command("UNSUBSCRIBE", "flight") + encode_command("PING") + encode_command("GET", "nokey"))
        nums = []
        while True:
            r = cl.read_reply()
            if r.kind == "*" and r.value[0].value == b"message":
                nums.append(int(r.value[2].value.split(b":")[1]))
                continue
            break
        if not (r.kind == "*" and r.value[0].value == b"unsubscribe" and r.value[2].value == 0):
            problems.append("client %d: expected the confirmation, got %r" % (k, r.raw[:60]))
        after = [cl.read_reply(), cl.read_reply()]
        if [a.raw for a in after] != [b"+PONG\r\n", b"$-1\r\n"]:
            problems.append("client %d: after UNSUBSCRIBE got %r" % (k, [a.raw[:60] for a in after]))
        if nums and nums != list(range(nums[0], nums[0] + len(nums))):
            problems.append("client %d: gap or reorder in %d messages" % (k, len(nums)))
        cl.close()
    stop.set()
    t.join(WAIT)
    ok(not problems, "unsubscribe with messages in flight: nothing after the confirmation, no gaps")
    for p in problems[:5]:
        diag(p)


def slow_subscriber(srv):
    big = b"x" * 16384
    with srv.client() as c:
        ok(c.call("CONFIG", "SET", "client-output-buffer-limit", "pubsub 4mb 0 0").value == "OK",
           "CONFIG SET client-output-buffer-limit pubsub 4mb 0 0")
        got = c.call("CONFIG", "GET", "client-output-buffer-limit").py()
        ok(b"pubsub 4194304 0 0" in got[1], "CONFIG GET shows the pubsub class")
    slow = srv.client(timeout=WAIT, rcvbuf=4096)
    slow.call("SUBSCRIBE", "big")
    fast = srv.client(timeout=WAIT)
    fast.call("SUBSCRIBE", "big")
    rss0 = srv.rss_kb()
    total = 4000  # 64 MB through the channel
    received = [0]
    done = threading.Event()

    def reader():
        want = b"$16384\r\n"
        while received[0] < total and not done.is_set():
            try:
                chunk = fast.sock.recv(1 << 20)
            except OSError:
                continue
            if not chunk:
                break
            fast.buf += chunk
            # count whole messages; keep the tail that may hold a partial marker
            n = fast.buf.count(want)
            received[0] += n
            cut = fast.buf.rfind(want)
            if cut >= 0:
                del fast.buf[:cut + len(want)]

    fast.sock.settimeout(1.0)
    rt = threading.Thread(target=reader)
    rt.start()
    peak = rss0
    with srv.client(timeout=WAIT) as p:
        for start in range(0, total, 20):
            p.send_raw(b"".join(encode_command("PUBLISH", "big", big) for _ in range(20)))
            for _ in range(20):
                p.read_reply()
            # flow control for the fast reader only: it stays far below the limit
            deadline = time.monotonic() + WAIT
            while received[0] < start + 20 - 40 and time.monotonic() < deadline:
                time.sleep(0.001)
            if start % 400 == 0:
                peak = max(peak, srv.rss_kb())
    deadline = time.monotonic() + WAIT
    while received[0] < total and time.monotonic() < deadline:
        time.sleep(0.01)
    done.set()
    rt.join(WAIT)
    is_(received[0], total, "the reading subscriber got all %d messages of 16 KB" % total)
    _, closed = slow.recv_until_closed(timeout=30.0, limit=1 << 30)
    ok(closed, "the subscriber that never read was disconnected by the pubsub limit")
    peak = max(peak, srv.rss_kb())
    growth_mb = (peak - rss0) / 1024.0
    if os.environ.get("ZARIS_SAN"):
        # sanitizer builds: libc malloc with redzones and quarantine
        ok(True, "RSS bound skipped in a %s build (grew %.1f MB)" % (os.environ["ZARIS_SAN"], growth_mb))
    else:
        ok(growth_mb < 40, "server RSS grew %.1f MB while 64 MB went to a stuck subscriber (bound 40)" % growth_mb)
    with srv.client() as c:
        ok(srv.alive() and c.call("PING").value == "PONG", "server alive after the slow subscriber")
        c.call("CONFIG", "SET", "client-output-buffer-limit", "pubsub 32mb 8mb 60")
    slow.close()
    fast.close()


def collect(cl, seconds, until=None):
    """(channel, message) pairs of pmessages read within `seconds` (or until
    `until(list)` is true)."""
    out = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and not (until and until(out)):
        cl.settimeout(max(0.05, min(0.3, deadline - time.monotonic())))
        try:
            r = cl.read_reply()
        except OSError:
            continue
        if r.kind in "*>" and r.value and r.value[0].value == b"pmessage":
            out.append((r.value[2].value.decode(), r.value[3].value.decode()))
    cl.settimeout(WAIT)
    return out


def notify_sequence(srv):
    """Runs the keyspace sequence on srv; returns {step: messages}."""
    res = {}
    with srv.client() as c, srv.client() as sub:
        c.call("FLUSHALL")
        c.call("CONFIG", "SET", "notify-keyspace-events", "KEA")
        sub.call("PSUBSCRIBE", "__key*__:*")
        steps = [
            ("set", [("SET", "k1", "v1"), ("SET", "k1", "v2", "EX", "100"), ("MSET", "k2", "a", "k3", "b")]),
            ("del", [("DEL", "k2", "nosuch", "k3")]),
            ("expire", [("EXPIRE", "k1", "200"), ("PERSIST", "k1"), ("PEXPIRE", "k1", "0")]),
            ("misc", [("SET", "n", "1"), ("INCRBY", "n", "5"), ("APPEND", "n", "x"), ("RENAME", "n", "m"),
                      ("COPY", "m", "m2"), ("MOVE", "m2", "3"), ("GETDEL", "m")]),
        ]
        for name, cmds in steps:
            for cmd in cmds:
                c.call(*cmd)
            c.call("PING")
            res[name] = collect(sub, 1.0)
        # expired: the active cycle (or a lookup) must report it
        c.call("SET", "short", "v", "PX", "50")
        res["expired"] = collect(sub, 10.0, until=lambda l: any("expired" in m[0] for m in l))
        # evicted: a limit below what the server holds evicts every key:
        # the 20 below and m2, which MOVE left in db 3
        for i in range(20):
            c.call("SET", "ev%02d" % i, "v" * 100)
        collect(sub, 0.5)
        c.call("CONFIG", "SET", "maxmemory-policy", "allkeys-random")
        c.call("CONFIG", "SET", "maxmemory", "1")
        c.call("SET", "trigger", "x")
        ev = collect(sub, 15.0, until=lambda l: sum(1 for m in l if m[0].endswith(":evicted")) >= 21)
        c.call("CONFIG", "SET", "maxmemory", "0")
        c.call("CONFIG", "SET", "maxmemory-policy", "noeviction")
        c.call("CONFIG", "SET", "notify-keyspace-events", "")
        res["evicted"] = sorted(m for m in ev if "evicted" in m[0] or "evicted" in m[1])
    return res


def keyspace_vs_redis(srv):
    ref = start_redis()
    want = notify_sequence(ref)
    got = notify_sequence(srv)
    for step in ("set", "del", "expire", "misc", "expired", "evicted"):
        is_(got.get(step), want.get(step), "keyspace notifications (%s) as redis-server" % step)
    ok(len(want.get("evicted", [])) == 42, "the eviction step evicted every key (%d messages)"
       % len(want.get("evicted", [])))
    ref.stop()


def main():
    plan(2 * 4 + 1 + 6 + 7 + 2)
    srv2 = fanout(2)
    srv2.stop()
    srv3 = fanout(3)
    unsubscribe_in_flight(srv3)
    slow_subscriber(srv3)
    keyspace_vs_redis(srv3)
    with srv3.client() as c:
        ok(c.call("PING").value == "PONG", "zarisd alive at the end")
    srv3.stop()
    log = open(srv3.logpath, "rb").read().decode("utf-8", "replace") + \
        open(srv2.logpath, "rb").read().decode("utf-8", "replace")
    reports = re.findall(r"WARNING: ThreadSanitizer: [^\n]*|ERROR: (?:Address|Leak)Sanitizer[^\n]*|runtime error:[^\n]*", log)
    ok(not reports, "no sanitizer report (race, memory error) in the zarisd logs")
    for r in reports[:5]:
        diag(r)
    if "Sanitizer" in log and not reports:
        diag("other sanitizer output:\n" + log[max(0, log.find("Sanitizer") - 200):][:1500])
    done_testing()


if __name__ == "__main__":
    main()
