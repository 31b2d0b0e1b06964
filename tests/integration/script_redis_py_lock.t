#!/usr/bin/python3
# script_redis_py_lock.t — redis-py's Lock (Debian's python3-redis 4.3.4),
# whose release, extend and reacquire are Lua scripts run by EVALSHA (with
# SCRIPT LOAD after a NOSCRIPT), against zarisd (2 workers) and the same
# steps against redis-server: acquire, a second client's non-blocking
# acquire refused, a second client blocked until the release, extend (added
# and replaced TTL), reacquire, release, and LockNotOwnedError for a lock
# whose key another owner holds; then redis-py's Script objects themselves
# (after SCRIPT FLUSH, in a transaction pipeline). Every step's result is
# checked, and the list of results must be redis-server's.

import os
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from zaris import *  # noqa: E402,F403

try:
    import redis
    from redis.exceptions import LockError, LockNotOwnedError
except ImportError:
    skip_all("python3-redis is not installed (apt-get install python3-redis)")

WAIT = 20.0 * SLOW  # bound of every wait below; no check depends on it


def outcome(fn):
    """What FN did: its value, or the name of the exception it raised."""
    try:
        return fn()
    except Exception as e:  # noqa: BLE001 -- the exception's class is the result
        return type(e).__name__


def set_calls(admin):
    """SET calls so far (INFO commandstats), to see a blocked acquire retry."""
    stats = admin.info("commandstats").get("cmdstat_set") or {}
    return int(stats.get("calls", 0))


def steps(srv):
    """Runs the lock steps on SRV; returns [(step, result)]."""
    r1 = redis.Redis(port=srv.port, socket_timeout=WAIT)
    r2 = redis.Redis(port=srv.port, socket_timeout=WAIT)
    r1.flushall()
    r1.script_flush()
    out = []

    def step(name, value):
        out.append((name, value))

    lock = r1.lock("res", timeout=100)
    step("acquire", outcome(lambda: lock.acquire(blocking=False)))
    step("locked", lock.locked())
    step("owned", lock.owned())
    step("other client sees it locked", r2.lock("res").locked())
    step("other client's non-blocking acquire", outcome(lambda: r2.lock("res").acquire(blocking=False)))
    step("other client's acquire with a short wait", outcome(
        lambda: r2.lock("res", sleep=0.01).acquire(blocking_timeout=0.05)))
    step("pttl within timeout", 0 < r1.pttl("res") <= 100000)

    step("extend by 50 s", outcome(lambda: lock.extend(50)))
    step("pttl above the timeout after extend", r1.pttl("res") > 100000)
    step("extend replacing the ttl", outcome(lambda: lock.extend(10, replace_ttl=True)))
    step("pttl at most 10 s", 0 < r1.pttl("res") <= 10000)
    r1.script_flush()  # the next script call meets NOSCRIPT and loads it again
    step("reacquire", outcome(lambda: lock.reacquire()))
    step("pttl back within timeout, above 10 s", 10000 < r1.pttl("res") <= 100000)

    # a second client blocked until the release: it retries (its SETs are
    # counted by the server) and is still waiting while the lock is held
    waiter = r2.lock("res", sleep=0.01, thread_local=False)
    got = {}
    before = set_calls(r1)
    t = threading.Thread(target=lambda: got.update(v=outcome(lambda: waiter.acquire(blocking_timeout=WAIT))))
    t.start()
    deadline = time.monotonic() + WAIT
    while set_calls(r1) < before + 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    step("the waiter retried while the lock was held", set_calls(r1) >= before + 3)
    step("the waiter has not acquired it", "v" not in got and t.is_alive())
    step("release", outcome(lambda: lock.release()))
    t.join(WAIT)
    step("the waiter acquired it after the release", got.get("v"))
    step("the waiter owns it", waiter.owned())
    step("the first lock does not", lock.owned())
    step("the waiter releases", outcome(lambda: waiter.release()))
    step("key gone", r1.exists("res"))

    # a lock whose key went (as if it expired) and another client took it
    lost = r1.lock("res3", timeout=100)
    step("acquire res3", outcome(lambda: lost.acquire(blocking=False)))
    r1.delete("res3")
    taker = r2.lock("res3", timeout=100)
    step("another client takes res3", outcome(lambda: taker.acquire(blocking=False)))
    step("extend of a lock another holds", outcome(lambda: lost.extend(1)))
    step("reacquire of a lock another holds", outcome(lambda: lost.reacquire()))
    step("release of a lock another holds", outcome(lambda: lost.release()))
    step("the taker still owns res3", taker.owned())
    step("the taker releases res3", outcome(lambda: taker.release()))

    # the key overwritten behind the owner's back
    lock = r1.lock("res", timeout=100)
    step("acquire again", outcome(lambda: lock.acquire(blocking=False)))
    r2.set("res", "someone else")
    step("release after the key was overwritten", outcome(lambda: lock.release()))
    step("the other value stays", r1.get("res"))
    r1.delete("res")
    step("release of an unlocked lock", outcome(lambda: lock.release()))
    step("extend of an unlocked lock", outcome(lambda: lock.extend(1)))
    forever = r1.lock("res2")
    step("lock without timeout: acquire", outcome(lambda: forever.acquire(blocking=False)))
    step("lock without timeout: extend", outcome(lambda: forever.extend(1)))
    step("lock without timeout: no ttl", r1.pttl("res2"))

    # redis-py's Script objects (what Lock is built on): EVALSHA, NOSCRIPT
    # then SCRIPT LOAD and again, in a transaction pipeline
    incr_by = r1.register_script("return redis.call('INCRBY', KEYS[1], ARGV[1])")
    step("script: first call", outcome(lambda: incr_by(keys=["n"], args=[5])))
    r1.script_flush()
    step("script: after SCRIPT FLUSH", outcome(lambda: incr_by(keys=["n"], args=[2])))
    def piped():
        p = r1.pipeline(transaction=True)
        incr_by(keys=["n"], args=[1], client=p)
        p.get("n")
        incr_by(keys=["n"], args=[10], client=p)
        return p.execute()
    r1.script_flush()
    step("script: in a pipeline after SCRIPT FLUSH", outcome(piped))
    step("script: an error", outcome(lambda: r1.register_script("return redis.call('INCR', KEYS[1])")(keys=["res2"])))
    step("script: eval", outcome(lambda: r1.eval("return {KEYS[1], ARGV[1]}", 1, "a", "b")))

    # the context manager, and a lock on a key with a hash tag
    with r1.lock("{tag}res", timeout=5) as held:
        step("context manager holds", held.owned())
    step("context manager released", r1.exists("{tag}res"))
    r1.close()
    r2.close()
    return out


EXPECTED = {
    "acquire": True, "locked": True, "owned": True, "other client sees it locked": True,
    "other client's non-blocking acquire": False, "other client's acquire with a short wait": False,
    "pttl within timeout": True, "extend by 50 s": True, "pttl above the timeout after extend": True,
    "extend replacing the ttl": True, "pttl at most 10 s": True, "reacquire": True,
    "pttl back within timeout, above 10 s": True, "the waiter retried while the lock was held": True,
    "the waiter has not acquired it": True, "release": None,
    "the waiter acquired it after the release": True, "the waiter owns it": True,
    "the first lock does not": False, "release of a lock another holds": "LockNotOwnedError",
    "extend of a lock another holds": "LockNotOwnedError",
    "reacquire of a lock another holds": "LockNotOwnedError", "the waiter releases": None, "acquire res3": True, "another client takes res3": True,
    "the taker still owns res3": True, "the taker releases res3": None,
    "key gone": 0, "acquire again": True,
    "release after the key was overwritten": "LockNotOwnedError", "the other value stays": b"someone else",
    "release of an unlocked lock": "LockError", "extend of an unlocked lock": "LockError",
    "lock without timeout: acquire": True, "lock without timeout: extend": "LockError",
    "lock without timeout: no ttl": -1, "context manager holds": True, "context manager released": 0,
    "script: first call": 5, "script: after SCRIPT FLUSH": 7, "script: in a pipeline after SCRIPT FLUSH": [8, b"8", 18],
    "script: an error": "ResponseError", "script: eval": [b"a", b"b"],
}


def main():
    z = start_zarisd(threads=2)
    require_eval(z)
    want = steps(start_redis())
    got = steps(z)
    for (name, w), (_, g) in zip(want, got):
        ok(g == w and g == EXPECTED.get(name, "(no expectation)"), "%s: zarisd %r, redis-server %r" % (name, g, w))
    is_(len(got), len(want), "as many steps as redis-server")
    return done_testing()


if __name__ == "__main__":
    sys.exit(main())
