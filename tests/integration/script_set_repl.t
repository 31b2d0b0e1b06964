#!/usr/bin/python3
# script_set_repl.t — redis.set_repl(flags) decides where a script's later
# writes propagate, as in Redis 7.0: REPL_ALL (the default) to the
# append-only log and the replicas, REPL_AOF to the log only, REPL_REPLICA
# (and its alias REPL_SLAVE) to the replicas only, REPL_NONE nowhere. What
# shows it: each key written under one mode, read (a) on the primary, (b) on
# its replica, linked before the writes, (c) on a replica of that replica (a
# chain: it gets what the replica applied), (d) on the primary restarted from
# its append-only log alone (appendonly yes, save ""), (e) on the replica
# restarted from its own append-only log alone (no replicaof): Redis's
# replica logs what it applied, so (e) is (b). zarisd's replica used to keep
# the primary's tags in its own stream: its log replayed the REPL_AOF writes
# and passed over the REPL_REPLICA ones, and so did its own replica.
#
#   * one script per mode (and one with no set_repl at all); one script that
#     switches modes between its writes; a REPL_AOF script inside MULTI/EXEC
#     after a plain SET; a function writing under REPL_NONE (its FUNCTION
#     LOAD replicates and is logged as usual);
#   * set_repl's refusals (a bad flag, no argument, two) and the REPL_*
#     values, replies compared raw. Redis takes a string argument without
#     complaint (lua_tonumber: 'x' is 0, REPL_NONE), so that one writes a
#     key too;
#   * the same run on redis-server and on zarisd: the observation tables and
#     the replies equal, and both tables are EXPECTED below (so both engines
#     losing or leaking a write the same way fails too).

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from zaris import *  # noqa: E402,F403
from zaris_sys import start_server  # noqa: E402
from repl import HOST, data_dir, sync_state, wait_in_sync, wait_link  # noqa: E402

LIBRARY = "(library replib)"  # the observation row of the function library


def under(mode):
    """A script that sets MODE, then SETs KEYS[1] to ARGV[1]."""
    return "redis.set_repl(redis.%s) return redis.call('set', KEYS[1], ARGV[1])" % mode


MIXED = ("local r = {redis.call('set', KEYS[1], 'm1')}\n"
         "redis.set_repl(redis.REPL_NONE) r[2] = redis.call('set', KEYS[2], 'm2')\n"
         "redis.set_repl(redis.REPL_AOF) r[3] = redis.call('set', KEYS[3], 'm3')\n"
         "redis.set_repl(redis.REPL_ALL) r[4] = redis.call('incr', KEYS[4])\n"
         "return r")
LIB_CODE = ("#!lua name=replib\nredis.register_function('quiet_set', function(keys, args) "
            "redis.set_repl(redis.REPL_NONE) return redis.call('set', keys[1], args[1]) end)")
VALUES = "return {redis.REPL_ALL, redis.REPL_AOF, redis.REPL_REPLICA, redis.REPL_SLAVE, redis.REPL_NONE}"
REFUSALS = ("redis.set_repl(99)", "redis.set_repl()", "redis.set_repl(1, 2)")

# {key: (on the primary, on the replica, on the replica's replica, on the
#  primary restarted from its log, on the replica restarted from its log)}
EXPECTED = {
    "k:all": (b"plain", b"plain", b"plain", b"plain", b"plain"),
    "k:all2": (b"REPL_ALL", b"REPL_ALL", b"REPL_ALL", b"REPL_ALL", b"REPL_ALL"),
    "k:aof": (b"REPL_AOF", None, None, b"REPL_AOF", None),
    "k:replica": (b"REPL_REPLICA", b"REPL_REPLICA", b"REPL_REPLICA", None, b"REPL_REPLICA"),
    "k:slave": (b"REPL_SLAVE", b"REPL_SLAVE", b"REPL_SLAVE", None, b"REPL_SLAVE"),
    "k:none": (b"REPL_NONE", None, None, None, None),
    "k:string": (b"string", None, None, None, None),
    "m1": (b"m1", b"m1", b"m1", b"m1", b"m1"),
    "m2": (b"m2", None, None, None, None),
    "m3": (b"m3", None, None, b"m3", None),
    "m4": (b"1", b"1", b"1", b"1", b"1"),
    "t:plain": (b"multi", b"multi", b"multi", b"multi", b"multi"),
    "t:aof": (b"in-multi", None, None, b"in-multi", None),
    "f:none": (b"fn", None, None, None, None),
    "fence": (b"1", b"1", b"1", b"1", b"1"),
    LIBRARY: (b"replib", b"replib", b"replib", b"replib", b"replib"),
}
KEYS = [k for k in EXPECTED if k != LIBRARY]


def look(c):
    """What client C's server has: {key: GET's value or None, LIBRARY: the
    library's name or None}."""
    seen = {k: c.call("GET", k).py() for k in KEYS}
    libs = c.call("FUNCTION", "LIST", "LIBRARYNAME", "replib").py()
    seen[LIBRARY] = libs[0][1] if libs else None
    return seen


def scenario(engine):
    """The writes through a primary ENGINE with its replica: returns
    ({key: (primary, replica, after restart)}, [raw replies])."""
    pdir, rdir = data_dir("zaris-setrepl-p-"), data_dir("zaris-setrepl-r-")
    redis_only = ["--repl-diskless-sync-delay", "0", "--appendfsync", "always"] if engine == "redis" else []
    threads = None if engine == "redis" else 2
    sdir = data_dir("zaris-setrepl-s-")
    p = start_server(engine, extra=redis_only + ["--dir", pdir, "--appendonly", "yes", "--save", ""],
                     threads=threads, name=engine + "-primary")
    logged = ["--dir", rdir, "--appendonly", "yes", "--save", ""]
    r = start_server(engine, extra=redis_only + logged + ["--replicaof", "%s %d" % (HOST, p.port)],
                     threads=threads, name=engine + "-replica")
    sub = start_server(engine, extra=["--dir", sdir, "--appendonly", "no", "--save", "",
                                      "--replicaof", "%s %d" % (HOST, r.port)], threads=threads,
                       name=engine + "-replica-of-replica")
    pc, rc, sc = p.client(), r.client(), sub.client()
    ok(wait_link(rc), "%s: the replica is linked before the writes" % engine) or diag(sync_state(pc, rc))
    ok(wait_link(sc), "%s: the replica's replica is linked before the writes" % engine) or diag(sync_state(rc, sc))
    replies = []

    def call(*args):
        replies.append(pc.call(*args).raw)

    call("EVAL", "return redis.call('set', KEYS[1], 'plain')", "1", "k:all")
    for key, mode in (("k:all2", "REPL_ALL"), ("k:aof", "REPL_AOF"), ("k:replica", "REPL_REPLICA"),
                      ("k:slave", "REPL_SLAVE"), ("k:none", "REPL_NONE")):
        call("EVAL", under(mode), "1", key, mode)
    call("EVAL", "redis.set_repl('x') return redis.call('set', KEYS[1], 'string')", "1", "k:string")
    call("EVAL", MIXED, "4", "m1", "m2", "m3", "m4")
    for args in (("MULTI",), ("SET", "t:plain", "multi"), ("EVAL", under("REPL_AOF"), "1", "t:aof", "in-multi"),
                 ("EXEC",)):
        call(*args)
    call("FUNCTION", "LOAD", LIB_CODE)
    call("FCALL", "quiet_set", "1", "f:none", "fn")
    call("EVAL", VALUES, "0")
    for body in REFUSALS:
        call("EVAL", body, "0")
    call("SET", "fence", "1")
    ok(wait_in_sync(pc, rc), "%s: the replica is in sync after the fence" % engine) or diag(sync_state(pc, rc))
    ok(wait_in_sync(rc, sc), "%s: the replica's replica is in sync after the fence" % engine) or \
        diag(sync_state(rc, sc))
    on_primary, on_replica, on_sub = look(pc), look(rc), look(sc)
    sc.close()
    sub.cleanup()
    rc.close()
    r.cleanup()  # a clean shutdown: its log is complete
    alone = start_server(engine, extra=logged, threads=threads, name=engine + "-replica-alone")
    with alone.client() as lc:
        replica_log = look(lc)
    alone.cleanup()
    pc.close()
    p.restart(same_port=True)
    with p.client() as lc:
        primary_log = look(lc)
    p.cleanup()
    return {k: (on_primary[k], on_replica[k], on_sub[k], primary_log[k], replica_log[k]) for k in EXPECTED}, replies


redis_table, redis_replies = scenario("redis")
zaris_table, zaris_replies = scenario("zarisd")
for key in EXPECTED:
    where = "on the primary, its replica, the replica's replica, the primary and the replica restarted from their logs"
    is_(redis_table[key], EXPECTED[key], "redis-server: %s %s" % (key, where))
    is_(zaris_table[key], EXPECTED[key], "zarisd: %s %s" % (key, where))
    is_(zaris_table[key], redis_table[key], "zarisd: %s %s, as redis-server" % (key, where))
is_(len(zaris_replies), len(redis_replies), "zarisd: as many replies as redis-server")
for i, (z, rd) in enumerate(zip(zaris_replies, redis_replies)):
    is_(z, rd, "zarisd: reply %d as redis-server's (%r)" % (i, rd[:60]))
sys.exit(done_testing())
