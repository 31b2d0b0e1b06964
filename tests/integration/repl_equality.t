#!/usr/bin/python3
# repl_equality.t — after random write streams on a primary, its replica's
# keyspace is the primary's: every key of every database with its type, its
# value, its absolute expiry (PEXPIRETIME) and, on zarisd, its version
# (DEBUG KEY-VERSION).
#
# 0. Command by command: short fixed sequences (strings, lists, MOVE, COPY
#    DB, RENAME, SWAPDB, FLUSHDB, PFCOUNT, SPOP, TTLs, MULTI/EXEC across
#    databases, sorted-set pops, bit ops, a lazy expiry, blocking pops
#    served at once and a waiter served by a push), each on an empty
#    keyspace, then the dumps compared: which command breaks equality.
# 1. A small matrix of pairs (io backends uring and epoll, 1 and 2 threads,
#    on each side; the replica started with --replicaof): three clients at
#    once on the primary, each a random stream (tests/lib/repl.py's
#    Workload over tests/lib/cmdgen.py: every type, three databases with
#    SELECT, MOVE, COPY DB, SWAPDB, FLUSHDB, SPOP, MULTI/EXEC, TTLs that
#    run out while the streams run, long TTLs, past EXPIREATs). Then, once
#    the replica's offset has reached the primary's and the short TTLs
#    have passed, the two dumps are equal; a 2-thread replica applied
#    records both in parallel batches and alone (INFO replication).
# 2. Full sync of an existing keyspace: a primary holding 12,000 keys of
#    every type (big and compact encodings) plus a random stream's keys; a
#    replica with stale keys of its own attached by REPLICAOF at run time
#    drops them and has the primary's keyspace.
# 3. Writes during the full sync: the streams keep running on the primary
#    from before REPLICAOF until after the link is up; once they stop, the
#    dumps are equal.
# 4. A replica of that replica (a chain, issue 15): after more streams on
#    the primary its keyspace is the primary's.
# 5. Keys whose TTL runs out while a full sync runs, made persistent on the
#    primary meanwhile (PERSIST right after REPLICAOF): the replica must
#    keep what the snapshot gave it, expired or not, until the primary's
#    records say otherwise (Redis's replica loads expired keys), so it
#    has them too.
#
# ZARIS_REPL_ENGINE=redis runs it on redis-server pairs (the matrix is one
# pair then, versions are not compared). Seeded (ZARIS_SEED repeats a run);
# ZARIS_REPL_COMMANDS (default 1500 per client, 600 under a sanitizer) and ZARIS_REPL_ROUNDS
# (default 1 per matrix entry) make longer runs.

import os
import random
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from zaris import *  # noqa: E402,F403
from zaris_sys import skip  # noqa: E402
from cmdgen import arities  # noqa: E402
from repl import *  # noqa: E402,F403

COMMANDS = sweep_size("ZARIS_REPL_COMMANDS", 1500, 600)
ROUNDS = sweep_size("ZARIS_REPL_ROUNDS", 1, 1)
CLIENTS = 3
FILL = 12000

rng = seeded_rng()
ref = start_redis()
arity = arities(ref.client())
ref.stop()

uring = "uring" if io_uring_available() else "epoll"
if uring == "epoll":
    diag("io_uring is disabled on this kernel: epoll on both sides")
# (primary backend, threads, replica backend, threads): each side sees both
# backends and both thread counts
MATRIX = [(uring, 1, uring, 1), (uring, 2, "epoll", 1), ("epoll", 1, uring, 2), ("epoll", 2, "epoll", 2)]
if is_redis():
    MATRIX = [(None, None, None, None)]


def workloads(n, flush=True):
    return [Workload(random.Random(rng.randrange(1 << 30)), arity, flush=flush) for _ in range(n)]


def check_equal(pc, rc, what, min_keys=20):
    """The replica's dump equals the primary's (one TAP point, and one for
    the versions on zarisd)."""
    ok(wait_in_sync(pc, rc), "%s: the replica reaches the primary's offset" % what) or diag(sync_state(pc, rc))
    a, b = dump(pc), dump(rc)
    lines = differences(a, b)
    ttls = sum(1 for v in a.values() if v[2] != -1)
    note("%s: %d keys, %d with a TTL; expired_keys %s" % (what, len(a), ttls, info(pc, "stats").get("expired_keys")))
    if not ok(len(a) >= min_keys and not lines, "%s: the replica's keyspace is the primary's (%d keys)"
              % (what, len(a))):
        for line in lines or ["only %d keys" % len(a)]:
            diag(line)
    if is_redis():
        skip("%s: versions (DEBUG KEY-VERSION) are zarisd's" % what)
    else:
        bad = [(k, v[3]) for k, v in a.items() if not isinstance(v[3], int)]
        ok(a and not bad, "%s: DEBUG KEY-VERSION answers an integer for every key" % what) or \
            diag("e.g. %r" % (bad[:3],))
    return a


# ---- 0. command by command ----------------------------------------------------------------------
CASES = [
    [["SET", "a", "1"], ["APPEND", "a", "x"], ["SETRANGE", "a", "5", "y"], ["GETSET", "a", "2"]],
    [["MSET", "a", "1", "b", "2"], ["INCRBYFLOAT", "a", "1.5"], ["GETDEL", "b"]],
    [["RPUSH", "l", "a", "b", "c"], ["LMOVE", "l", "l2", "LEFT", "RIGHT"], ["LMPOP", "1", "l", "LEFT", "COUNT", "2"]],
    [["SET", "a", "1"], ["MOVE", "a", "1"]],
    [["SET", "a", "1"], ["COPY", "a", "b"], ["COPY", "a", "a", "DB", "2"]],
    [["SET", "a", "1"], ["RENAME", "a", "b"], ["RENAMENX", "b", "c"]],
    [["SET", "a", "1"], ["SELECT", "1"], ["SET", "a", "2"], ["SWAPDB", "0", "1"], ["SELECT", "0"]],
    [["SET", "a", "1"], ["SELECT", "1"], ["SET", "b", "2"], ["FLUSHDB"], ["SELECT", "0"]],
    [["PFADD", "p", "a", "b"], ["PFCOUNT", "p"]],
    [["SADD", "s", "a", "b", "c", "d"], ["SPOP", "s"], ["SPOP", "s", "2"], ["SMOVE", "s", "s2", "a"]],
    [["SET", "a", "1"], ["EXPIRE", "a", "1000"], ["SET", "b", "1", "PX", "100000"], ["GETEX", "b", "PERSIST"],
     ["SET", "c", "1", "EX", "100"], ["SET", "c", "2", "KEEPTTL"], ["PEXPIREAT", "c", "1"]],
    [["HSET", "h", "a", "1"], ["HINCRBYFLOAT", "h", "a", "1.5"], ["HDEL", "h", "x"]],
    [["MULTI"], ["SET", "a", "1"], ["INCR", "a"], ["SELECT", "1"], ["SET", "b", "x"], ["EXEC"], ["SELECT", "0"]],
    [["ZADD", "z", "1", "a", "2", "b"], ["ZUNIONSTORE", "z2", "1", "z"], ["ZPOPMIN", "z"], ["ZMPOP", "1", "z2", "MAX"]],
    [["SETBIT", "b", "7", "1"], ["BITOP", "NOT", "b2", "b"], ["BITFIELD", "b", "INCRBY", "u8", "0", "300"]],
    [["SET", "a", "1", "PX", "1"], ["DEBUG", "SLEEP", "0.01"], ["GET", "a"], ["SET", "b", "2"]],
    [["RPUSH", "l", "x"], ["BLPOP", "l", "1"], ["BLMOVE", "l", "l2", "LEFT", "LEFT", "0.01"]],
]

plan_note = "command by command"
p = start_node("primary-cmds", threads=2)
r = start_node("replica-cmds", threads=2, replicaof=(HOST, p.port))
pc, rc = p.client(), r.client()
ok(wait_in_sync(pc, rc), "%s: the replica is in sync" % plan_note) or diag(sync_state(pc, rc))
for case in CASES + ["a waiter served"]:
    pc.call("FLUSHALL")
    if case == "a waiter served":
        # BLPOP blocked before the push: the primary's records are the push
        # and the pop (Redis propagates RPUSH, then LPOP)
        waiter = p.client()
        waiter.send("BLPOP", "wl", "5")
        wait_blocked(pc, 1)
        pc.call("RPUSH", "wl", "a", "b")
        waiter.read_reply()
        waiter.close()
    else:
        for args in case:
            pc.call(*args)
    name = case if isinstance(case, str) else " ; ".join(" ".join(a) for a in case)
    if not ok(wait_in_sync(pc, rc), "%s: in sync after %s" % (plan_note, name)):
        diag(sync_state(pc, rc))
    a, b = dump(pc), dump(rc)
    lines = differences(a, b)
    if not ok(not lines, "%s: %s: the replica's keys are the primary's (%d keys)" % (plan_note, name, len(a))):
        for line in lines:
            diag(line)
r.cleanup()
p.cleanup()

# ---- 1. the matrix --------------------------------------------------------------------------
for pb, pt, rb, rt in MATRIX:
    for rnd in range(ROUNDS):
        what = "primary %s/%s, replica %s/%s" % (pb, pt, rb, rt) if pb else "redis-server pair"
        if ROUNDS > 1:
            what += " round %d" % rnd
        p = start_node("primary", threads=pt, io_backend=pb)
        r = start_node("replica", threads=rt, io_backend=rb, replicaof=(HOST, p.port))
        pc, rc = p.client(), r.client()
        ok(wait_link(rc), "%s: the replica's link is up" % what) or diag(sync_state(pc, rc))
        ws = workloads(CLIENTS)
        sent, errs = run_clients([p.client() for _ in ws], ws, COMMANDS)
        ok(not errs, "%s: %d random stream items from %d clients" % (what, sent, CLIENTS)) or diag(errs)
        ws[0].quiesce()
        check_equal(pc, rc, what)
        if not is_redis():
            # a 2-thread replica applies one-shard records in parallel
            # batches and the others (several shards, transactions,
            # whole keyspace) alone: the streams have both kinds
            par, alone = info_int(rc, "replica_applied_parallel"), info_int(rc, "replica_applied_alone")
            if rt == 2:
                ok(par > 0 and alone > 0, "%s: records applied in parallel (%d) and alone (%d)"
                   % (what, par, alone))
            else:
                ok(par == 0 and alone > 0, "%s: a 1-thread replica applies every record alone (%d)" % (what, alone))
        r.cleanup()
        p.cleanup()

# ---- 2. full sync of an existing keyspace --------------------------------------------------------
p = start_node("primary-full", threads=2)
pc = p.client()
for db in range(3):
    fill(pc, FILL // 3, prefix="fill%d:" % db, db=db, mixed=True)
ws = workloads(2, flush=False)  # no FLUSHDB: the filled keys stay
sent, errs = run_clients([p.client() for _ in ws], ws, COMMANDS // 2)
ok(not errs, "full sync: the primary holds %d filled keys and %d stream items' keys" % (FILL, sent)) or diag(errs)
ws[0].quiesce()
r = start_node("replica-full", threads=2)
rc = r.client()
fill(rc, 500, prefix="stale:", db=1)
is_(rc.call("REPLICAOF", HOST, p.port).py(), "OK", "full sync: REPLICAOF at run time")
check_equal(pc, rc, "full sync of an existing keyspace", min_keys=FILL)
r.cleanup()

# ---- 3. writes during the full sync --------------------------------------------------------------
r = start_node("replica-during", threads=2)
rc = r.client()
ws = workloads(CLIENTS, flush=False)
wr = Writers([p.client() for _ in ws], ws).start()
wait_for(lambda: wr.total() > 50, 10)
before = wr.total()
rc.call("REPLICAOF", HOST, p.port)
linked = wait_link(rc, timeout=60)
during = wr.total() - before
wait_for(lambda: wr.total() > before + during + 200, 10)
wr.stop()
ok(linked and not wr.errors, "writes during the full sync: the link came up, %d items went to the primary "
   "between REPLICAOF and the link being up, %d in all" % (during, wr.total())) or diag(wr.errors)
ok(during > 0, "writes during the full sync: streams ran while the replica synced")
ws[0].quiesce()
check_equal(pc, rc, "writes during the full sync", min_keys=FILL)

# ---- 4. a replica of the replica ---------------------------------------------------------------
what = "a replica of the replica"
r2 = start_node("replica-of-replica", threads=1, replicaof=(HOST, r.port))
r2c = r2.client()
ok(wait_link(r2c, timeout=60), "%s: its link is up" % what) or diag(sync_state(rc, r2c))
ws = workloads(2, flush=False)
sent, errs = run_clients([p.client() for _ in ws], ws, COMMANDS // 2)
ok(not errs, "%s: %d more stream items on the primary" % (what, sent)) or diag(errs)
ws[0].quiesce()
ok(wait_in_sync(pc, rc) and wait_in_sync(rc, r2c), "%s: both replicas reach their primary's offset" % what) or \
    diag(sync_state(rc, r2c))
a, b = dump(pc), dump(r2c)
lines = differences(a, b, lb="replica of the replica")
if not ok(len(a) >= FILL and not lines, "%s: its keyspace is the primary's (%d keys)" % (what, len(a))):
    for line in lines or ["only %d keys" % len(a)]:
        diag(line)

# ---- 5. TTLs that run out during the full sync, kept by the primary --------------------------------
what = "TTLs running out during a full sync"
r3 = start_node("replica-ttl", threads=2)
r3c = r3.client()
pc.pipeline([("SET", "ttl:%d" % i, "v%d" % i, "PX", str(20 + 5 * i)) for i in range(200)])
r3c.call("REPLICAOF", HOST, p.port)
seen = wait_for(lambda: info(r3c).get("master_sync_in_progress") == "1", 10, step=0.001)
kept = sum(x.py() for x in pc.pipeline([("PERSIST", "ttl:%d" % i) for i in range(200)]))
ok(wait_link(r3c, timeout=60), "%s: 200 keys with TTLs of 20..1015 ms, REPLICAOF, once the sync is in progress "
   "(seen: %s) PERSIST of those left (%d)" % (what, bool(seen), kept)) or diag(sync_state(pc, r3c))
check_equal(pc, r3c, what, min_keys=FILL)
sys.exit(done_testing())
