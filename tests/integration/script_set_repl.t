#!/usr/bin/python3
# script_set_repl.t — redis.set_repl decides where a script's later writes
# propagate, as in Redis 7.0: REPL_ALL (the default) to the append-only log
# and the replicas, REPL_AOF to the log only, REPL_REPLICA (and its alias
# REPL_SLAVE) to the replicas only, REPL_NONE nowhere. What shows it: each
# key written under one mode, read on the primary, on its replica (linked
# before the writes) and on the primary restarted from its append-only log
# alone (appendonly yes, save "").
#
#   * one script per mode, then one script switching modes between its
#     writes, a set_repl script inside MULTI/EXEC after a plain SET, and a
#     function (FUNCTION LOAD replicates as usual) that writes under
#     REPL_NONE;
#   * set_repl's refusals (a bad flag, no argument, two, a string) and the
#     REPL_* values, replies compared raw;
#   * the same run on redis-server and on zarisd: the observation tables and
#     the replies equal, and the table is the one written out below (so both
#     losing a write the same way fails too).

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from zaris import *  # noqa: E402,F403
from zaris_sys import start_server  # noqa: E402
from repl import HOST, data_dir, wait_in_sync, wait_link  # noqa: E402


def mode_script(mode):
    return "redis.set_repl(redis.%s) return redis.call('set', KEYS[1], ARGV[1])" % mode


MIXED = ("local r = {redis.call('set', KEYS[1], 'a')}\n"
         "redis.set_repl(redis.REPL_NONE) r[2] = redis.call('set', KEYS[2], 'b')\n"
         "redis.set_repl(redis.REPL_AOF) r[3] = redis.call('set', KEYS[3], 'c')\n"
         "redis.set_repl(redis.REPL_ALL) r[4] = redis.call('incr', KEYS[4])\n"
         "return r")
LIBRARY = ("#!lua name=replib\nredis.register_function('quiet_set', function(keys, args) "
           "redis.set_repl(redis.REPL_NONE) return redis.call('set', keys[1], args[1]) end)")
VALUES = "return {redis.REPL_ALL, redis.REPL_AOF, redis.REPL_REPLICA, redis.REPL_SLAVE, redis.REPL_NONE}"
REFUSALS = ("redis.set_repl(99)", "redis.set_repl()", "redis.set_repl(1, 2)", "redis.set_repl('x')")
KEYS = ["k:plain", "k:all", "k:aof", "k:replica", "k:slave", "k:none", "m1", "m2", "m3", "m4", "t:plain", "t:aof",
        "f:none", "fence"]

# (on the primary, on the replica, on the primary restarted from its log)
P, R, L = "primary", "replica", "log"
WHERE = {"k:plain": (P, R, L), "k:all": (P, R, L), "k:aof": (P, L), "k:replica": (P, R), "k:slave": (P, R),
         "k:none": (P,), "m1": (P, R, L), "m2": (P,), "m3": (P, L), "m4": (P, R, L), "t:plain": (P, R, L),
         "t:aof": (P, L), "f:none": (P,), "fence": (P, R, L)}


def scenario(engine):
    """Runs the writes on a primary ENGINE with its replica; returns
    ({key: (primary, replica, log)}, [raw replies])."""
    pdir, rdir = data_dir("zaris-setrepl-p-"), data_dir("zaris-setrepl-r-")
    common = ["--repl-diskless-sync-delay", "0"] if engine == "redis" else []
    threads = None if engine == "redis" else 2
    p = start_server(engine, extra=common + ["--dir", pdir, "--appendonly", "yes", "--save", ""],
                     threads=threads, name="%s-primary" % engine)
    r = start_server(engine, extra=common + ["--dir", rdir, "--replicaof", "%s %d" % (HOST, p.port)],
                     threads=threads, name="%s-replica" % engine)
    pc, rc = p.client(), r.client()
    ok(wait_link(rc), "%s: the replica is linked" % engine)
    replies = []

    def call(*args):
        replies.append(pc.call(*args).raw)

    call("EVAL", "return redis.call('set', KEYS[1], 'v')", "1", "k:plain")
    for key, mode in (("k:all", "REPL_ALL"), ("k:aof", "REPL_AOF"), ("k:replica", "REPL_REPLICA"),
                      ("k:slave", "REPL_SLAVE"), ("k:none", "REPL_NONE")):
        call("EVAL", mode_script(mode), "1", key, mode)
    call("EVAL", MIXED, "4", "m1", "m2", "m3", "m4")
    call("MULTI")
    call("SET", "t:plain", "p")
    call("EVAL", mode_script("REPL_AOF"), "1", "t:aof", "in-multi")
    call("EXEC")
    call("FUNCTION", "LOAD", LIBRARY)
    call("FCALL", "quiet_set", "1", "f:none", "fn")
    call("EVAL", VALUES, "0")
    for body in REFUSALS:
        call("EVAL", body, "0")
    call("SET", "fence", "1")
    ok(wait_in_sync(pc, rc), "%s: the replica is in sync after the writes" % engine)
    on_primary = {k: pc.call("GET", k).raw for k in KEYS}
    on_replica = {k: rc.call("GET", k).raw for k in KEYS}
    replies.append(rc.call("FUNCTION", "LIST").raw)  # the library replicated
    rc.close()
    r.stop()
    pc.close()
    p.restart(same_port=True)
    with p.client() as lc:
        from_log = {k: lc.call("GET", k).raw for k in KEYS}
    p.stop()
    p.cleanup()
    r.cleanup()
    return {k: (on_primary[k], on_replica[k], from_log[k]) for k in KEYS}, replies


def places(row):
    """The places of (primary, replica, log) that have the key."""
    return tuple(name for name, v in zip((P, R, L), row) if v != b"$-1\r\n")


redis_table, redis_replies = scenario("redis")
zaris_table, zaris_replies = scenario("zarisd")
for key in KEYS:
    is_(places(redis_table[key]), WHERE[key], "redis-server: %s is on %s" % (key, "+".join(WHERE[key])))
    is_(zaris_table[key], redis_table[key], "zarisd: %s on the primary, the replica, after the restart "
        "from the log, as redis-server" % key)
is_(len(zaris_replies), len(redis_replies), "as many replies")
for i, (z, rd) in enumerate(zip(zaris_replies, redis_replies)):
    is_(z, rd, "reply %d as redis-server's (%r)" % (i, rd[:60]))
sys.exit(done_testing())
