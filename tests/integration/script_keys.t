#!/usr/bin/python3
# script_keys.t — zarisd's own rules for the keys of a script, and the
# registry shared by the workers (script/script.h, commands/cmd_script.c).
#
#  * SCRIPT LOAD on one worker, EVALSHA from a connection on the other
#    worker (which worker holds a connection is read from INFO threads'
#    per-worker connected_clients as connections open one by one), and
#    SCRIPT FLUSH on one worker dropping what the other compiled;
#  * a redis.call on a key the script did not declare in KEYS is refused,
#    naming the key; pcall gets the error table; nothing was written;
#  * the shebang flag allow-undeclared-keys, and the setting of that name
#    (CONFIG SET), let it run, with every shard locked: INFO stats
#    scripts_all_shards_locked counts those runs and no other;
#  * a whole-keyspace command (FLUSHDB) from a script needs every shard;
#  * a script's writes from a client are seen by another worker's client.

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from zaris import *  # noqa: E402,F403

T_WAIT = 5.0 * SLOW


def two_workers(srv, ctrl):
    first, w1 = connect_on_worker(srv, ctrl)
    for _ in range(32 if w1 is not None else 0):
        c, w = connect_on_worker(srv, ctrl)
        if w is not None and w != w1:
            return first, c, w1, w
    return first, None, w1, None


def all_locked(c):
    for line in c.callv("INFO", "stats").decode().split("\r\n"):
        if line.startswith("scripts_all_shards_locked:"):
            return int(line.split(":", 1)[1])
    return None


srv = start_zarisd(threads=2)
ctrl = srv.client()
a, b, wa, wb = two_workers(srv, ctrl)
ok(b is not None and wa != wb, "two connections on different workers (%s, %s)" % (wa, wb))

body = "return {KEYS[1], ARGV[1], redis.call('get', KEYS[1])}"
sha = a.callv("SCRIPT", "LOAD", body).decode()
a.callv("SET", "k", "v")
is_(b.call("EVALSHA", sha, 1, "k", "x").py(), [b"k", b"x", b"v"], "EVALSHA on the other worker runs the loaded body")
is_(b.call("SCRIPT", "EXISTS", sha).py(), [1], "SCRIPT EXISTS on the other worker sees it")
is_(b.call("EVALSHA", sha.upper(), 1, "k", "y").py(), [b"k", b"y", b"v"], "the SHA in upper case too")
ok(b.callv("SCRIPT", "FLUSH") == "OK", "SCRIPT FLUSH on the other worker")
r = a.call("EVALSHA", sha, 1, "k", "x")
is_(r.raw, b"-NOSCRIPT No matching script. Please use EVAL.\r\n", "after it, EVALSHA on the first worker is NOSCRIPT")
is_(a.call("EVAL", body, 1, "k", "z").py(), [b"k", b"z", b"v"], "EVAL compiles it again")
is_(b.call("EVALSHA", sha, 1, "k", "w").py(), [b"k", b"w", b"v"], "and EVAL registered it for the other worker")

# the declared-keys rule: pick a key in another shard than "k" by trying
# names until one is refused (most are: 1024 shards)
base = all_locked(a)
refused = None
for i in range(64):
    key = "undeclared:%d" % i
    r = a.call("EVAL", "return redis.call('set', '%s', 'x')" % key, 1, "k")
    if r.is_error():
        refused = (key, r)
        break
ok(refused is not None, "a key outside the declared keys' shard is refused")
key, r = refused
txt = str(r.value)
ok(("'%s'" % key) in txt and "not declared in KEYS" in txt and txt.startswith("ERR Script attempted to access key"),
   "the error names the key and says it was not declared: %s" % txt)
ok("script: " in txt and "@user_script:1." in txt, "with Redis's script/line text")
is_(a.call("EXISTS", key).py(), 0, "nothing was written")
r = a.call("EVAL", "return redis.pcall('get', '%s')" % key, 1, "k")
ok(r.is_error() and "not declared in KEYS" in str(r.value), "pcall returns the error table (an error reply)")
r = a.call("EVAL", "return redis.call('set', KEYS[1], 'declared')", 1, key)
is_(r.raw, b"+OK\r\n", "declared, the same key is written")
r = a.call("EVAL", "return redis.call('flushdb')", 0)
ok(r.is_error() and "needs every shard" in str(r.value), "FLUSHDB from a script without the flag is refused")
is_(all_locked(a), base, "no run so far held every shard lock")

flagged = "#!lua flags=allow-undeclared-keys\nreturn redis.call('set', '%s', 'flagged')" % key
is_(a.call("EVAL", flagged, 0).raw, b"+OK\r\n", "flag allow-undeclared-keys: the undeclared key is written")
is_(b.call("GET", key).py(), b"flagged", "the other worker reads it")
is_(all_locked(a), base + 1, "INFO scripts_all_shards_locked counts the run")
a.call("EVAL", "return redis.call('get', KEYS[1])", 1, "k")
is_(all_locked(a), base + 1, "a plain script is not counted")

is_(ctrl.call("CONFIG", "GET", "allow-undeclared-keys").py(), [b"allow-undeclared-keys", b"no"], "CONFIG GET allow-undeclared-keys: no")
ok(ctrl.callv("CONFIG", "SET", "allow-undeclared-keys", "yes") == "OK", "CONFIG SET allow-undeclared-keys yes")
r = a.call("EVAL", "return redis.call('incr', '%s:n')" % key, 0)
is_(r.raw, b":1\r\n", "with the setting any script may use undeclared keys")
is_(all_locked(a), base + 2, "and the run is counted")
r = a.call("EVAL", "redis.call('set', 'x1', '1'); return redis.call('flushdb')", 0)
is_(r.raw, b"+OK\r\n", "FLUSHDB from a script with every shard locked")
is_(b.call("DBSIZE").py(), 0, "it emptied the database")
ctrl.callv("CONFIG", "SET", "allow-undeclared-keys", "no")
# inside MULTI: EXEC holds its commands' shard locks, which a script needing
# every shard cannot retake in order; with a whole-keyspace command queued
# EXEC holds them all and the script runs
r = [a.call(*cmd).raw for cmd in [("MULTI",), ("EVAL", flagged, 0), ("EXEC",)]]
ok(r[2].startswith(b"*1\r\n-ERR a script that uses undeclared keys cannot run inside MULTI"),
   "MULTI: a script needing every shard is refused inside EXEC") or diag(r)
r = [a.call(*cmd).raw for cmd in [("MULTI",), ("FLUSHDB",), ("EVAL", flagged, 0), ("EXEC",)]]
is_(r[3], b"*2\r\n+OK\r\n+OK\r\n", "MULTI with FLUSHDB queued: every shard held, the script runs")
is_(b.call("GET", key).py(), b"flagged", "and wrote")
r = [a.call(*cmd).raw for cmd in [("MULTI",), ("EVAL", "return redis.call('incr', KEYS[1])", 1, "m"),
                                  ("EVAL", "return redis.call('incr', KEYS[1])", 1, "m"), ("EXEC",)]]
is_(r[3], b"*2\r\n:1\r\n:2\r\n", "scripts of declared keys inside MULTI")
r = a.call("EVAL", "return redis.call('incr', '%s:n')" % key, 0)
ok(r.is_error(), "setting off again: refused again")

sys.exit(done_testing())
