#!/usr/bin/python3
# allocator.t — jemalloc-bg-thread, Redis's switch for jemalloc's
# background purging thread (on by default in Redis 7 and in zarisd).
#
# CONFIG GET / SET and a bad value answer as redis-server does. On a
# jemalloc build the switch is visible in the process: jemalloc names its
# threads jemalloc_bg_thd; they run by default, stop on CONFIG SET
# jemalloc-bg-thread no, start again on yes, and are absent when zarisd
# starts with --jemalloc-bg-thread no. With them, the memory of a FLUSHALL
# goes back to the system on an idle server (RSS falls by half of what the
# values took, within a bounded wait).

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from zaris import *  # noqa: E402,F403

BG = "jemalloc_bg_thd"
VALUE = b"a" * 8192
NKEYS = 8000  # 64 MB of values


def bg_threads(pid):
    n = 0
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/comm" % (pid, tid)) as f:
                n += f.read().strip() == BG
        except OSError:
            pass  # a thread that ended while we looked
    return n


def wait_for(cond, limit=10.0):
    """Polls COND until it holds or LIMIT seconds pass; its last value."""
    deadline = time.monotonic() + limit
    while True:
        v = cond()
        if v or time.monotonic() > deadline:
            return v
        time.sleep(0.05)


CONFIG_STEPS = (("CONFIG", "GET", "jemalloc-bg-thread"),
                ("CONFIG", "SET", "jemalloc-bg-thread", "no"),
                ("CONFIG", "GET", "jemalloc-bg-thread"),
                ("CONFIG", "SET", "jemalloc-bg-thread", "maybe"),
                ("CONFIG", "SET", "jemalloc-bg-thread", "yes"))


def config_replies(srv):
    with srv.client() as cl:
        return [cl.call(*cmd).py() for cmd in CONFIG_STEPS]


redis = start_redis()
want = config_replies(redis)
redis.stop()
ok(want[0] == [b"jemalloc-bg-thread", b"yes"] and want[1] == "OK" and "ERR" in str(want[3]),
   "redis-server: on by default, settable, a bad value refused") or diag(want)

z = start_zarisd()
is_(config_replies(z), want, "CONFIG GET / SET / a bad value: the replies of redis-server")

jemalloc = not os.environ.get("ZARIS_SAN")
why = "# SKIP sanitizer build: libc malloc, no jemalloc"
if jemalloc:
    # waited for: the thread names itself once it runs (a flake under load)
    ok(wait_for(lambda: bg_threads(z.pid) > 0), "default: jemalloc's background thread runs")
    with z.client() as cl:
        cl.call("CONFIG", "SET", "jemalloc-bg-thread", "no")
        ok(wait_for(lambda: bg_threads(z.pid) == 0), "CONFIG SET no: it stops")
        cl.call("CONFIG", "SET", "jemalloc-bg-thread", "yes")
        ok(wait_for(lambda: bg_threads(z.pid) > 0), "CONFIG SET yes: it runs again")

        # memory back to the system after a FLUSHALL, nothing else running
        for start in range(0, NKEYS, 500):
            cl.pipeline([("SET", "v:%d" % i, VALUE) for i in range(start, min(NKEYS, start + 500))])
        full = z.rss_kb()
        cl.call("FLUSHALL")
        target = full - NKEYS * len(VALUE) // 1024 // 2
        fell = wait_for(lambda: z.rss_kb() < target, limit=60.0)
        ok(fell, "after FLUSHALL of %d MB RSS falls from %d to under %d kB (now %d kB)"
           % (NKEYS * len(VALUE) >> 20, full, target, z.rss_kb()))
else:
    for name in ("default: it runs", "CONFIG SET no: it stops", "CONFIG SET yes: it runs again",
                 "after FLUSHALL RSS falls"):
        ok(True, "%s %s" % (name, why))
z.stop()

z = start_zarisd(extra=["--jemalloc-bg-thread", "no"], name="zarisd-nobg")
with z.client() as cl:
    is_(cl.call("CONFIG", "GET", "jemalloc-bg-thread").py(), [b"jemalloc-bg-thread", b"no"],
        "--jemalloc-bg-thread no: CONFIG GET shows no")
if jemalloc:
    ok(bg_threads(z.pid) == 0, "--jemalloc-bg-thread no: no background thread")
else:
    ok(True, "--jemalloc-bg-thread no: no background thread %s" % why)
z.stop()
done_testing()
