#!/usr/bin/python3
# script_busy.t — busy scripts against redis-server and zarisd (2 workers):
# with busy-reply-threshold at 100 ms (CONFIG SET), a script that loops for
# ever makes other clients' commands answer -BUSY (a set of commands, each
# on a new connection, replies compared with redis-server's), on the
# other worker and on the script's own one, whose script hook serves its
# other clients as Redis's event loop does; SCRIPT KILL sent from the
# script's own worker stops a read-only one (its client gets Redis's
# error, the server serves again), and a WATCH sent there meanwhile is
# answered after it; a script that wrote is UNKILLABLE: a client blocked
# (BLPOP) on the key it pushed to disconnects, PING and QUIT are still
# answered on its worker, and SHUTDOWN NOSAVE from there ends the server
# (the connections close, the process exits with redis-server's status);
# SHUTDOWN and SHUTDOWN SAVE are refused with -BUSY.
#
# No check depends on the clock: the test waits (bounded) until a PING
# answers -BUSY, i.e. until the server says the threshold has passed.

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from zaris import *  # noqa: E402,F403

WAIT = 30.0 * SLOW
BUSY = b"-BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.\r\n"
LOOP_RO = "local i = 0 while true do i = i + 1 end"
LOOP_RW = "redis.call('RPUSH', KEYS[1], 'written') local i = 0 while true do i = i + 1 end"

# commands sent while a script is busy, each on a new connection; the
# reply's bytes are compared, or only its type byte (HELLO: server texts)
WHILE_BUSY = [
    (("PING",), "raw"), (("GET", "k"), "raw"), (("SET", "k", "v"), "raw"), (("INFO", "server"), "raw"),
    (("CONFIG", "GET", "maxmemory"), "raw"), (("SCRIPT", "EXISTS", "x"), "raw"),
    (("EVAL", "return 1", "0"), "raw"), (("SCRIPT", "LOAD", "return 1"), "raw"),
    (("SCRIPT", "FLUSH"), "raw"), (("SELECT", "1"), "raw"), (("CLIENT", "SETNAME", "x"), "raw"),
    (("MULTI",), "raw"), (("SHUTDOWN", "ABORT"), "raw"), (("RESET",), "raw"), (("HELLO", "3"), "type"),
    (("AUTH", "x"), "raw"), (("NOSUCHCOMMAND",), "raw"),
]


def start_busy(srv, script, nkeys, *keys, mates=0, prelude=None):
    """Sends SCRIPT on one connection and waits (bounded) until another,
    on another worker, gets -BUSY. Returns (script's client, other client,
    len(WHILE_BUSY) more connections on the other's worker, MATES
    connections on the script's worker, whether -BUSY came). PRELUDE(admin,
    mates), if given, runs before the script is sent. The connections are
    made before the script starts: INFO (which tells a connection's
    worker) is refused while it runs."""
    admin = srv.client()
    admin.call("FLUSHALL")
    r = admin.call("CONFIG", "SET", "busy-reply-threshold", "100")
    if r.is_error():
        raise RuntimeError("CONFIG SET busy-reply-threshold: %s" % r.value)
    runner = srv.client(timeout=WAIT)
    other = client_on_other_worker(srv, runner)
    pool = [same_worker_client(srv, other) for _ in WHILE_BUSY]
    mates = [same_worker_client(srv, runner) for _ in range(mates)]
    if prelude:
        prelude(admin, mates)
    admin.close()
    runner.send("EVAL", script, str(nkeys), *keys)
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        r = other.call("PING")
        if r.raw == BUSY:
            return runner, other, pool, mates, True
        time.sleep(0.02)
    return runner, other, pool, mates, False


def while_busy(pool):
    """WHILE_BUSY's replies, each command on its own connection of POOL."""
    out = []
    for (cmd, how), c in zip(WHILE_BUSY, pool):
        try:
            r = c.call(*cmd)
            out.append(r.raw if how == "raw" else r.raw[:1])
        except (OSError, ProtocolError) as e:
            out.append(("no reply", type(e).__name__))
        finally:
            c.close()
    return out


def wait_served(cl):
    """Polls PING (bounded) until it is not -BUSY; returns its last reply."""
    deadline = time.monotonic() + WAIT
    r = None
    while time.monotonic() < deadline:
        r = cl.call("PING")
        if r.raw != BUSY:
            return r.raw
        time.sleep(0.02)
    return r.raw if r else None


def killable(srv, res):
    """A read-only busy script, the commands while busy on both workers, a
    WATCH on the script's worker, SCRIPT KILL from there: the results into
    RES."""
    runner, other, pool, mates, busy = start_busy(srv, LOOP_RO, 0, mates=len(WHILE_BUSY) + 2)
    res["busy"] = busy
    res["while busy"] = while_busy(pool)
    watcher, killer = mates[-2], mates[-1]
    res["while busy, on the script's worker"] = while_busy(mates[:len(WHILE_BUSY)])
    # WATCH reads its key under the shard lock the script may hold: zarisd
    # answers it once the script ended (DIVERGENCES.md); its reply is the same
    watcher.send("WATCH", "k")
    killer.send("SCRIPT", "KILL")
    res["script kill from the script's worker"] = reply_within(killer, "SCRIPT KILL", WAIT)
    res["killed script's reply"] = reply_within(runner, "EVAL", WAIT)
    res["watch sent while busy"] = reply_within(watcher, "WATCH", WAIT)
    res["served again"] = wait_served(other)
    res["script kill when idle"] = killer.call("SCRIPT", "KILL").raw
    res["runner served again"] = runner.call("PING").raw
    res["watcher served again"] = watcher.call("PING").raw
    for c in (runner, other, watcher, killer):
        c.close()


def block_on_k(admin, mates):
    """The first mate blocks in BLPOP on k (the key the script pushes to)."""
    mates[0].send("BLPOP", "k", "0")
    if not wait_blocked(admin, 1):
        raise RuntimeError("BLPOP k 0 did not block")


def unkillable(srv, res):
    """A busy script that wrote (it pushed to k, where a client is
    blocked): that client disconnects, PING, QUIT and SCRIPT KILL on the
    script's worker, then SHUTDOWN NOSAVE from there: the results into
    RES."""
    runner, other, pool, mates, busy = start_busy(srv, LOOP_RW, 1, "k", mates=4, prelude=block_on_k)
    for c in pool:
        c.close()
    blocked, pinger, quitter, admin = mates
    res["busy"] = busy
    # its close is handled while the script holds k's shard lock
    blocked.close()
    pinger.send("PING")
    res["ping on the script's worker"] = reply_within(pinger, "PING", WAIT)
    quitter.send("QUIT")
    res["quit on the script's worker: reply, closed"] = quitter.recv_until_closed(WAIT)
    res["script kill"] = other.call("SCRIPT", "KILL").raw
    admin.send("SCRIPT", "KILL")
    res["script kill on the script's worker"] = reply_within(admin, "SCRIPT KILL", WAIT)
    res["still busy"] = other.call("GET", "k").raw
    pinger.close()
    other.close()
    shutdown_nosave_while_busy(srv, runner, admin, res, WAIT)


def shutdown_refused(srv, res):
    """SHUTDOWN and SHUTDOWN SAVE while a read-only script is busy: Redis
    answers -BUSY (only NOSAVE ends it); then SCRIPT KILL."""
    runner, other, pool, _, busy = start_busy(srv, LOOP_RO, 0)
    for c in pool:
        c.close()
    res["busy"] = busy
    for cmd in (("SHUTDOWN",), ("SHUTDOWN", "SAVE")):
        try:
            res[" ".join(cmd)] = other.call(*cmd).raw
        except (OSError, ProtocolError) as e:
            res[" ".join(cmd)] = ("no reply", type(e).__name__)
            break
    res["script kill"] = other.call("SCRIPT", "KILL").raw
    res["served again"] = wait_served(other)
    runner.close()
    other.close()


def compare(what, want, got):
    for name in want:
        w, g = want[name], got.get(name)
        if name.startswith("while busy"):
            for (cmd, _), a, b in zip(WHILE_BUSY, w, g or [None] * len(w)):
                is_(b, a, "%s, %s: %s as redis-server" % (what, name, " ".join(cmd)))
            continue
        is_(g, w, "%s: %s as redis-server" % (what, name))


def main():
    z = start_zarisd(threads=2)
    require_eval(z)
    r = start_redis()
    want = {}
    killable(r, want)
    ok(want["busy"] and want["killed script's reply"][:26] == b"-ERR Script killed by user",
       "redis-server: -BUSY, then SCRIPT KILL's error (the test reads it right)")
    compare("read-only script", want, guarded(z, killable))

    want = {}
    shutdown_refused(start_redis(), want)
    z.restart()
    compare("shutdown while busy", want, guarded(z, shutdown_refused))

    want = {}
    unkillable(start_redis(), want)
    ok(want["script kill"].startswith(b"-UNKILLABLE") and want["exit status"] is not None,
       "redis-server: UNKILLABLE, SHUTDOWN NOSAVE exits (the test reads it right)")
    z.restart()
    compare("script that wrote", want, guarded(z, unkillable))
    return done_testing()


if __name__ == "__main__":
    sys.exit(main())
