#!/usr/bin/python3
# script_set_repl.t — redis.set_repl(flags) decides where a script's later
# writes propagate, as in Redis 7.0: REPL_ALL (the default) to the
# append-only log and the replicas, REPL_AOF to the log only, REPL_REPLICA
# (and its alias REPL_SLAVE) to the replicas only, REPL_NONE nowhere. What
# shows it: each key written under one mode, read (a) on the primary, (b) on
# its replica, linked before the writes, (c) on the primary restarted from
# its append-only log alone (appendonly yes, save "").
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

# {key: (on the primary, on the replica, on the primary restarted from its log)}
EXPECTED = {
    "k:all": (b"plain", b"plain", b"plain"),
    "k:all2": (b"REPL_ALL", b"REPL_ALL", b"REPL_ALL"),
    "k:aof": (b"REPL_AOF", None, b"REPL_AOF"),
    "k:replica": (b"REPL_REPLICA", b"REPL_REPLICA", None),
    "k:slave": (b"REPL_SLAVE", b"REPL_SLAVE", None),
    "k:none": (b"REPL_NONE", None, None),
    "k:string": (b"string", None, None),
    "m1": (b"m1", b"m1", b"m1"),
    "m2": (b"m2", None, None),
    "m3": (b"m3", None, b"m3"),
    "m4": (b"1", b"1", b"1"),
    "t:plain": (b"multi", b"multi", b"multi"),
    "t:aof": (b"in-multi", None, b"in-multi"),
    "f:none": (b"fn", None, None),
    "fence": (b"1", b"1", b"1"),
    LIBRARY: (b"replib", b"replib", b"replib"),
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
    p = start_server(engine, extra=redis_only + ["--dir", pdir, "--appendonly", "yes", "--save", ""],
                     threads=threads, name=engine + "-primary")
    r = start_server(engine, extra=["--dir", rdir, "--appendonly", "no", "--save", "",
                                    "--replicaof", "%s %d" % (HOST, p.port)], threads=threads, name=engine + "-replica")
    pc, rc = p.client(), r.client()
    ok(wait_link(rc), "%s: the replica is linked before the writes" % engine) or diag(sync_state(pc, rc))
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
    on_primary, on_replica = look(pc), look(rc)
    rc.close()
    pc.close()
    r.cleanup()
    p.restart(same_port=True)
    with p.client() as lc:
        after_restart = look(lc)
    p.cleanup()
    return {k: (on_primary[k], on_replica[k], after_restart[k]) for k in EXPECTED}, replies


redis_table, redis_replies = scenario("redis")
zaris_table, zaris_replies = scenario("zarisd")
for key in EXPECTED:
    is_(redis_table[key], EXPECTED[key], "redis-server: %s on the primary, the replica, after the restart" % key)
    is_(zaris_table[key], EXPECTED[key], "zarisd: %s on the primary, the replica, after the restart" % key)
    is_(zaris_table[key], redis_table[key], "zarisd: %s on the primary, the replica, after the restart as "
        "redis-server" % key)
is_(len(zaris_replies), len(redis_replies), "zarisd: as many replies as redis-server")
for i, (z, rd) in enumerate(zip(zaris_replies, redis_replies)):
    is_(z, rd, "zarisd: reply %d as redis-server's (%r)" % (i, rd[:60]))
sys.exit(done_testing())
