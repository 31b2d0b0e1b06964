#!/usr/bin/python3
# thp.t — disable-thp, Redis 7's switch for transparent huge pages.
#
# zarisd turns them off for itself first thing (disable-thp yes, the
# default: /proc/PID/status THP_enabled 0) and back on for disable-thp no,
# where the machine's policy applies again. CONFIG GET and the refused
# CONFIG SET (immutable) answer as redis-server does.
#
# Where the machine grants huge pages (its switch is "always" or "madvise")
# and zarisd runs on jemalloc, the effect is checked on the heap itself:
# with MALLOC_CONF=thp:always (jemalloc asks for huge pages on the memory it
# maps) loading 48 MB of values makes AnonHugePages grow under disable-thp
# no, and not at all under the default.

import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from zaris import *  # noqa: E402,F403

THP_SWITCH = "/sys/kernel/mm/transparent_hugepage/enabled"
VALUE = b"v" * 4096
NKEYS = 12000  # 48 MB of values: many 2 MiB extents


def proc_field(pid, path, name):
    """An integer field NAME of /proc/PID/PATH (kB for sizes), or None."""
    try:
        with open("/proc/%d/%s" % (pid, path)) as f:
            for line in f:
                if line.startswith(name + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def machine_thp_mode():
    try:
        with open(THP_SWITCH) as f:
            line = f.read()
    except OSError:
        return None
    for mode in ("always", "madvise", "never"):
        if "[%s]" % mode in line:
            return mode
    return None


def load(srv):
    with srv.client() as cl:
        for start in range(0, NKEYS, 500):
            cl.pipeline([("SET", "thp:%d" % i, VALUE) for i in range(start, min(NKEYS, start + 500))])
        return cl.call("DBSIZE").py()


def with_env(name, value, fn):
    old = os.environ.get(name)
    os.environ[name] = value
    try:
        return fn()
    finally:
        if old is None:
            del os.environ[name]
        else:
            os.environ[name] = old


redis = start_redis()
with redis.client() as rc:
    redis_get = rc.call("CONFIG", "GET", "disable-thp").py()
    redis_set = rc.call("CONFIG", "SET", "disable-thp", "no").py()
    redis_bad = rc.call("CONFIG", "SET", "disable-thp", "maybe").py()

ok(redis_get == [b"disable-thp", b"yes"] and "immutable" in str(redis_set) and "ERR" in str(redis_bad),
   "redis-server: disable-thp yes by default, immutable") or diag([redis_get, redis_set, redis_bad])

# 1. the default: off for the process, answered as redis-server does
z = start_zarisd()
is_(proc_field(z.pid, "status", "THP_enabled"), 0, "default: THP_enabled 0 in /proc/PID/status")
with z.client() as cl:
    is_(cl.call("CONFIG", "GET", "disable-thp").py(), redis_get, "CONFIG GET disable-thp as redis-server")
    is_(cl.call("CONFIG", "SET", "disable-thp", "no").py(), redis_set,
        "CONFIG SET disable-thp is refused as immutable, as by redis-server")
    is_(cl.call("CONFIG", "SET", "disable-thp", "maybe").py(), redis_bad,
        "CONFIG SET disable-thp with a bad value: redis-server's error")
z.stop()

# 2. disable-thp no: on again, and said in the log
z = start_zarisd(extra=["--disable-thp", "no"], name="zarisd-thp")
is_(proc_field(z.pid, "status", "THP_enabled"), 1, "disable-thp no: THP_enabled 1")
with z.client() as cl:
    is_(cl.call("CONFIG", "GET", "disable-thp").py(), [b"disable-thp", b"no"], "CONFIG GET shows no")
ok("disable-thp no: transparent huge pages follow the machine's setting" in z.log_tail(),
   "the log says the machine's setting applies") or diag(z.log_tail())
z.stop()

# 3. a bad value on the command line: a clear error, no server
p = subprocess.run([zarisd_path(), "--port", str(free_port()), "--disable-thp", "maybe"],
                   capture_output=True, text=True, timeout=30)
ok(p.returncode == 2 and "disable-thp" in p.stderr and "argument must be 'yes' or 'no'" in p.stderr,
   "--disable-thp maybe: exit 2 naming the setting, Redis's words") \
    or diag("rc=%s stderr=%s" % (p.returncode, p.stderr))

# 4. the heap itself
mode = machine_thp_mode()
if mode not in ("always", "madvise"):
    for name in ("huge pages under disable-thp no", "none under the default"):
        ok(True, "%s # SKIP the machine's THP switch is %s" % (name, mode))
elif os.environ.get("ZARIS_SAN"):
    for name in ("huge pages under disable-thp no", "none under the default"):
        ok(True, "%s # SKIP sanitizer build: libc malloc, no jemalloc" % name)
else:
    for flag, want_growth, name in (("no", True, "huge pages under disable-thp no"),
                                    ("yes", False, "none under the default")):
        z = with_env("MALLOC_CONF", "thp:always",
                     lambda: start_zarisd(extra=["--disable-thp", flag], name="zarisd-heap-" + flag))
        before = proc_field(z.pid, "smaps_rollup", "AnonHugePages")
        n = load(z)
        after = proc_field(z.pid, "smaps_rollup", "AnonHugePages")
        grew = before is not None and after is not None and after > before
        ok(n == NKEYS and grew == want_growth,
           "%s: AnonHugePages %s -> %s kB after %d MB of values" % (name, before, after,
                                                                  NKEYS * len(VALUE) >> 20))
        z.stop()

redis.stop()
done_testing()
