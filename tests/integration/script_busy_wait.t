#!/usr/bin/python3
# script_busy_wait.t — a worker whose request waits for a shard lock a busy
# script holds, anywhere but in the dispatcher's own locking (which gives
# the wait up: script_busy_shard.t), against redis-server and zarisd (2
# workers, --shard-bits 0: one shard, so the script holds every key).
#
# A read-only script loops on worker 1, past busy-reply-threshold. On
# worker 0, one request that takes the shard lock itself is sent just after
# the script started (admitted: the script was not busy yet) and waits for
# the lock: KEYS (a walk, and a literal pattern's one shard), SCAN and
# RANDOMKEY (walks), DEBUG OBJECT, a script flagged allow-undeclared-keys
# (every lock), a native-protocol RF1 GET (one lock per shard of the
# batch), CONFIG RESETSTAT (a wait that cannot be given up). One case has
# no such request: worker 0's timer runs the active expiry over its share
# of the shards, and the one shard holds keys with a TTL. Before the fix
# each of them slept in the lock until the script ended and worker 0
# answered nobody. Now a wait that can be given up is, once the script is
# busy, and the request is answered -BUSY as Redis answers it (it came in
# behind the script); a wait that cannot (CONFIG RESETSTAT, serving a
# blocked client) goes on while its worker serves its other clients, as
# the script's own worker does, and is answered once the script ended
# (Redis: -BUSY; DIVERGENCES.md); the active expiry passes over a shard
# held for long. Each case: a PING on worker 0 gets -BUSY, SCRIPT KILL
# from worker 0 is served and ends the script, a WATCH of the held key
# sent on worker 0 meanwhile is answered +OK once the script ended
# (paused: a waiting thread may itself hold a shard lock the WATCH needs,
# and it must not wait for it from inside that wait), the request's own
# reply; all compared with redis-server's for the RESP requests.
#
# Ordering, not time: the request is sent a little after the script; had
# it arrived first, it would have run before the script took the lock and
# the comparison would show it. Waits are bounded; a failed case ends the
# script with SCRIPT KILL from the script's own worker (served there).

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from zaris import *  # noqa: E402,F403
import native as nw  # noqa: E402

WAIT = 10.0 * SLOW
BUSY = b"-BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.\r\n"
KILLED = b"-ERR Script killed by user"
LOOP_RO = "local i = 0 while true do i = i + 1 end"
UNDECLARED = "#!lua flags=allow-undeclared-keys\nreturn redis.call('get', 'held')"


def busy_case(srv, prepare, volatile=False):
    """PREPARE() (connects the waiter on worker 0, before the script runs:
    a connection made meanwhile may land on the script's worker) gives
    (send, receive) or None. Runs the busy script on worker 1 and SEND(),
    then PINGs on worker 0 until -BUSY or no reply, SCRIPT KILL from worker
    0, the script's reply and RECEIVE() (the waiter's reply). Returns a
    dict of what each gave."""
    res = {}
    admin = srv.client()
    admin.call("FLUSHALL")
    admin.call("SET", "held", "v")
    if volatile:
        admin.pipeline([["SET", "ttl:%d" % i, "x", "EX", "100000"] for i in range(200)])
    admin.call("CONFIG", "SET", "busy-reply-threshold", "300")
    runner = client_on_worker(srv, 1, WAIT)
    rescuer = client_on_worker(srv, 1, WAIT)
    pinger = client_on_worker(srv, 0, WAIT)
    watcher = client_on_worker(srv, 0, WAIT)
    send, receive = prepare() if prepare else (None, None)
    runner.send("EVAL", LOOP_RO, "1", "held")
    time.sleep(0.05 * SLOW)  # ordering slack only: see the header
    if send:
        send()
    r = res["ping"] = ping_until(pinger, BUSY, WAIT)
    # WATCH is served while busy (Redis answers it at once); here it needs
    # the lock the script holds, from a thread that may hold locks itself
    # while it waits: paused, answered once the script ended
    watcher.send("WATCH", "held")
    if isinstance(r, tuple):
        res["kill"] = ("not asked: worker 0 did not answer", rescuer.call("SCRIPT", "KILL").raw)
    else:
        pinger.send("SCRIPT", "KILL")
        res["kill"] = reply_within(pinger, "SCRIPT KILL from the waiting worker", WAIT)
        if isinstance(res["kill"], tuple):
            rescuer.call("SCRIPT", "KILL")
    r = reply_within(runner, "the script's reply", WAIT)
    res["runner"] = r[:len(KILLED)] if isinstance(r, bytes) else r
    res["waiter"] = receive() if receive else None
    res["watch"] = reply_within(watcher, "WATCH", WAIT)
    pinger.send("PING")
    res["ping_after"] = reply_within(pinger, "PING after", WAIT)
    for c in (admin, runner, rescuer, pinger, watcher):
        c.close()
    return res


def resp_waiter(srv, *args):
    """A prepare() for busy_case: ARGS from a connection of worker 0."""
    def prepare():
        c = client_on_worker(srv, 0, WAIT)

        def receive():
            r = reply_within(c, " ".join(args), WAIT)
            c.close()
            return r
        return (lambda: c.send(*args)), receive
    return prepare


def native_waiter(srv, ctrl):
    """A prepare() for busy_case: a native GET of the held key from a
    native connection of worker 0 (found by INFO threads' connected
    clients through CTRL)."""
    def prepare():
        c = None
        for _ in range(64):
            before = clients_per_worker(ctrl)
            c = nw.NativeClient(srv.native_port, timeout=WAIT)
            now = clients_per_worker(ctrl)
            if [w for w in now if now[w] > before.get(w, 0)] == ["worker0"]:
                break
            c.close()
            c = None
        if c is None:
            raise RuntimeError("no native connection landed on worker 0")
        sent = {}

        def send():
            sent["id"] = c.send_request([nw.op_get("held")])

        def receive():
            try:
                r = c.read_response(sent["id"], 1).results[0]
                return (r.status, r.value.raw)
            except (OSError, nw.Goodbye, nw.Closed) as e:
                return ("no reply", type(e).__name__)
            finally:
                c.close()
        return send, receive
    return prepare


redis = start_redis(extra=["--enable-debug-command", "yes"])
zarisd = start_zarisd(threads=2, native=True, extra=["--shard-bits", "0", "--native-rf1", "yes",
                                                     "--enable-debug-command", "yes"])
require_eval(zarisd)
nw._wait_native(zarisd)
ctrl = zarisd.client()

BUSY_NATIVE = (nw.STATUS["BUSY"], BUSY)
# (name, what worker 0 sends: RESP args, "native" or None, its reply on
# zarisd (None: redis-server's), keys with a TTL in the shard)
CASES = [
    ("the active expiry of worker 0's timer", None, "-", True),
    ("KEYS *", ("KEYS", "*"), None, False),
    ("KEYS held (one shard)", ("KEYS", "held"), None, False),
    ("SCAN 0 COUNT 100", ("SCAN", "0", "COUNT", "100"), None, False),
    ("RANDOMKEY", ("RANDOMKEY",), None, False),
    ("DEBUG OBJECT held", ("DEBUG", "OBJECT", "held"), None, False),
    ("EVAL of an allow-undeclared-keys script", ("EVAL", UNDECLARED, "0"), None, False),
    ("a native RF1 GET", "native", BUSY_NATIVE, False),
    ("CONFIG RESETSTAT (a wait that cannot give up)", ("CONFIG", "RESETSTAT"), b"+OK\r\n", False),
]
for name, what, reply, volatile in CASES:
    if what is None:
        prepare = None
    elif what == "native":
        prepare = native_waiter(zarisd, ctrl)
    else:
        prepare = resp_waiter(zarisd, *what)
    got = busy_case(zarisd, prepare, volatile)
    want = busy_case(redis, resp_waiter(redis, *what)) if isinstance(what, tuple) else None
    is_(got["ping"], BUSY, "%s: a PING on the worker waiting for the busy script's shard gets -BUSY" % name)
    is_(got["kill"], b"+OK\r\n", "%s: SCRIPT KILL from that worker is served" % name)
    is_(got["runner"], KILLED, "%s: the script ended, killed" % name)
    is_(got["ping_after"], b"+PONG\r\n", "%s: the worker answers after" % name)
    is_(got["watch"], b"+OK\r\n", "%s: a WATCH of the held key sent on that worker meanwhile is answered" % name)
    if want:
        ok(want["ping"] == BUSY and want["waiter"] == BUSY, "%s: redis-server answers -BUSY to the PING and to "
           "it (the premise): %r %r" % (name, want["ping"], want["waiter"]))
        for k in ("ping", "kill", "runner", "ping_after", "watch"):
            is_(got[k], want[k], "%s: %s as redis-server's (%r)" % (name, k, want[k]))
    if reply != "-":
        expect = reply if reply is not None else want["waiter"]
        is_(got["waiter"], expect, "%s: its own reply %r" % (name, expect))
ok(zarisd.alive(), "zarisd still runs")
ctrl.close()
redis.stop()
zarisd.stop()
done_testing()
