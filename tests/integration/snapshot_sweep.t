#!/usr/bin/python3
# snapshot_sweep.t — every write path run while a snapshot is taken, against
# every consumer of the snapshot: the image of instant S plus the change
# stream after S must be the live keyspace.
#
# A snapshot is taken without fork (store/snap.c): at its instant every shard
# records its clock, and a writer keeps a pre-image of an entry before it
# first changes it. A writer that changes an entry in place without that
# (outside the dispatcher's write bracket) takes the key out of the image:
# after a restart, or on a replica, the key is gone or holds only what the
# records after S did to it.
#
# Columns (consumers), each a fresh zarisd (2 threads) per round:
#   bgsave+log   appendonly yes, BGSAVE; SHUTDOWN NOSAVE and a restart on the
#                same directory load the image and replay the log after S:
#                the result must be the keyspace before the shutdown.
#   bgsave-only  appendonly no (and native-rf1 yes: the native row's batches
#                are RF1 batches here), BGSAVE; the restart loads the image
#                alone: it must be the keyspace dumped just before BGSAVE
#                (nothing runs between that dump and S: the waiters are
#                blocked, active expiry is off, no writer runs).
#   full sync    a second zarisd is made a replica (REPLICAOF) while the
#                writes run on the primary; once in sync, its keyspace must
#                be the primary's.
#   chained sync the writes run on a primary, the snapshot on its replica,
#                for a replica of that replica: the writer there is the
#                replica's applier (records of every row, in parallel
#                batches); the last replica must hold the primary's keyspace.
#   rewrite+log  appendonly yes, BGREWRITEAOF (the log's new base), then as
#                bgsave+log.
# Rows (writer classes), each on keys of its own prefix, all in one snapshot
# per column: strings / bitmaps / HyperLogLogs, lists, hashes, sets, sorted
# sets, key operations (DEL, RENAME, COPY, COPY DB, MOVE, EXPIRE/PERSIST,
# SWAPDB and FLUSHDB on databases of their own), one row per blocking
# command (a client blocked before S, served by another client's push,
# LMOVE, COPY, RENAME, MOVE, MULTI or script after S; BLMOVE's and
# BRPOPLPUSH's destinations exist before S: a pop alone meets no key of the
# instant, its source was empty then), active and lazy expiry (keys whose short TTL
# lapses during the save: deleted by the active cycle, or met by reads and
# writes with the cycle off), EVAL/EVALSHA, FCALL (and a FUNCTION LOAD
# after S), MULTI/EXEC, metadata (METAPUT, METASET, METAINVALIDATE and the
# label index), native protocol batches (single-key ops, grouped by shard
# on an RF1 node, and OP_COMMAND / MSET / INVALIDATE in order). Eviction
# (allkeys-lru or -random under a maxmemory set after S) runs on a server of
# its own per column: it takes keys of any prefix. Its maxmemory is set
# 200 KB under what maxmemory bounds (used_memory less
# mem_not_counted_for_evict: the snapshot's pre-images and the change
# stream's ring); it must evict, and must leave most keys: with the
# pre-images counted, evicting freed nothing and every key went.
#
# rdb-key-save-delay holds the snapshot open: filler keys in slot 0 (shard 0,
# the first a snapshot writes) make it sleep right after the instant; the
# writes start once INFO shows those keys written (S has passed) and the
# test checks that the snapshot still runs after them (rdb_bgsave_in_progress,
# aof_rewrite_in_progress, the replica's master_sync_in_progress), then sets
# the delay to 0 to let it end. No wall-clock assertion: every wait is a
# bounded poll.
#
# The comparison dumps every key of every database: TYPE, the value by type
# (a set's members and a hash's pairs sorted; a HyperLogLog without its
# cached cardinality, which PFCOUNT may write), PEXPIRETIME (set or not,
# within 1 s), METAGET's labels, entity and content-type, and DEBUG
# KEY-VERSION; keys whose TTL runs out by the comparison (or within 2 s)
# are left out.
# Plus FUNCTION LIST WITHCODE and METASCAN of every label and entity used.
# One TAP check per (row, column) and round, the mismatches (row, column,
# database, key, both sides) as diagnostics, a table at the end.
#
# Last, SHUTDOWN NOSAVE while a BGSAVE sleeps on rdb-key-save-delay: the
# server drops the delay and exits (Redis kills its child).
#
# ZARIS_SNAPSWEEP_ROUNDS (default 1) repeats the whole
# matrix with fresh random choices; ZARIS_SEED repeats a run;
# ZARIS_SNAPSWEEP_TRACE=<part of a row's name> prints that row's writes and
# their replies on stderr.

import os
import random
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from zaris import *  # noqa: E402,F403
from repl import info, wait_for, wait_in_sync, sync_state, data_dir, scan_keys  # noqa: E402
import native as nw  # noqa: E402

ROUNDS = sweep_size("ZARIS_SNAPSWEEP_ROUNDS", 1, 1)
FILL_TAG = "{sfbl0}"  # CRC16 slot 0: shard 0 whatever shard-bits, the first shard a snapshot writes
FILLER = 300
DELAY_US = 200000  # after shard 0: FILLER x 200 ms = a minute at most; the test ends it sooner
TTL_TOL_MS = 1000
SHORT_TTL_MS = 300
LABELS = ["mlab:a", "mlab:b", "mlab:c"]
ENTITIES = ["ment:1", "ment:2"]
NATIVE_LABELS = ["nlab:x", "nlab:y"]
FLAGS = ["--save", "", "--enable-debug-command", "yes"]

TRACE = os.environ.get("ZARIS_SNAPSWEEP_TRACE")  # a row name's part: its writes to stderr

rng = seeded_rng()


def server_ms(c):
    s, us = c.callv("TIME")
    return int(s) * 1000 + int(us) // 1000


def info_num(c, section, field):
    try:
        return int(info(c, section).get(field, "-1"))
    except ValueError:
        return -1


# ------------------------------------------------------------------------- the run's state

class Run:
    """One column's servers and clients, and what the rows did."""

    def __init__(self, column, rnd, rng_):
        self.column, self.rnd, self.rng = column, rnd, rng_
        self.cmds = {}  # row -> commands run during the snapshot
        self.problems = {}  # row -> lines: what a row could not do as planned
        self.waiters = []  # (row, client, what)
        self.expiry_deadline = 0  # server ms by which every short TTL has run out
        self.c = self.c1 = None
        self.began = self.still = False  # the snapshot passed S before the writes / ran after them

    def client(self):
        return self.rng.choice((self.c, self.c1))

    def count(self, row, n=1):
        self.cmds[row] = self.cmds.get(row, 0) + n

    def problem(self, row, line):
        self.problems.setdefault(row, []).append(line)

    def w(self, row, *args, cl=None):
        """One write of ROW during the snapshot (an error reply is an answer)."""
        self.count(row)
        r = (cl or self.client()).call(*args)
        if TRACE and TRACE in row:
            sys.stderr.write("# trace %s: %s -> %s\n" % (row, " ".join(map(str, args)), short(r.raw, 120)))
        return r


def short_expiry(run):
    """An absolute PEXPIREAT time SHORT_TTL_MS from the server's clock."""
    at = server_ms(run.c) + SHORT_TTL_MS
    run.expiry_deadline = max(run.expiry_deadline, at)
    return str(at)


# ------------------------------------------------------------------------- rows

ROWS = []


def row(name, prefix):
    def reg(cls):
        cls.name, cls.prefix = name, prefix
        ROWS.append(cls())
        return cls
    return reg


class Row:
    late = False  # set up after bgsave-only's dump (a SCAN meeting a lapsed TTL deletes the key)
    after = None  # finish(run): after the interleaved writes

    def setup(self, run):
        pass

    def ops(self, run):
        return []

    def k(self, *parts):
        return self.prefix + ":" + ":".join(str(p) for p in parts)


@row("strings/bitmaps/HLL", "str")
class Strings(Row):
    def setup(self, run):
        c = run.c
        for i in range(6):
            c.callv("SET", self.k("s", i), "value-%d" % i)
            c.callv("SET", self.k("n", i), str(i * 7))
            c.callv("SETBIT", self.k("b", i), str(run.rng.randrange(200)), "1")
            c.callv("PFADD", self.k("h", i), *["e%d" % j for j in range(i * 5 + 1)])
        c.callv("SET", self.k("s", "ttl"), "t", "EX", "86400")
        c.callv("PFADD", self.k("h", "dense"), *["d%d" % j for j in range(3000)])
        c.callv("SET", self.k("bd"), "dest")
        c.callv("PFCOUNT", self.k("h", 1))  # a valid cache, then PFADDs invalidate it

    def ops(self, run):
        r, k = run.rng, self.k
        s = lambda: k("s", r.randrange(6))  # noqa: E731
        n = lambda: k("n", r.randrange(6))  # noqa: E731
        b = lambda: k("b", r.randrange(6))  # noqa: E731
        h = lambda: k("h", r.choice([0, 1, 2, 3, 4, 5, "dense"]))  # noqa: E731
        choices = [
            lambda: run.w(self.name, "SET", s(), "new%d" % r.randrange(99)),
            lambda: run.w(self.name, "SET", k("s", "ttl"), "kept", "KEEPTTL", "GET"),
            lambda: run.w(self.name, "APPEND", s(), "+a"),
            lambda: run.w(self.name, "SETRANGE", s(), str(r.randrange(12)), "R"),
            lambda: run.w(self.name, "INCRBY", n(), str(r.randrange(-9, 9))),
            lambda: run.w(self.name, "INCRBYFLOAT", n(), "1.5"),
            lambda: run.w(self.name, "GETSET", s(), "gs"),
            lambda: run.w(self.name, "GETDEL", s()),
            lambda: run.w(self.name, "GETEX", s(), "EX", "90000"),
            lambda: run.w(self.name, "GETEX", k("s", "ttl"), "PERSIST"),
            lambda: run.w(self.name, "SETBIT", b(), str(r.randrange(300)), str(r.randrange(2))),
            lambda: run.w(self.name, "BITFIELD", b(), "INCRBY", "u8", str(8 * r.randrange(4)), "3"),
            lambda: run.w(self.name, "BITOP", "OR", k("bd"), b(), b()),
            lambda: run.w(self.name, "PFADD", h(), "x%d" % r.randrange(5000)),
            lambda: run.w(self.name, "PFMERGE", h(), h()),
            lambda: run.w(self.name, "PFCOUNT", h()),
            lambda: run.w(self.name, "MSET", s(), "m1", n(), "5"),
            lambda: run.w(self.name, "MSETNX", k("new", r.randrange(50)), "nx"),
            lambda: run.w(self.name, "SETEX", k("new", r.randrange(50)), "86400", "se"),
            lambda: run.w(self.name, "SET", k("new", r.randrange(50)), "n", "PX", "90000000"),
        ]
        return [r.choice(choices) for _ in range(r.randrange(25, 45))]


@row("lists", "list")
class Lists(Row):
    def setup(self, run):
        for i in range(6):
            n = 200 if i % 3 == 2 else 3 + i  # past the compact encoding, or not
            run.c.callv("RPUSH", self.k(i), *["e%d" % j for j in range(n)])

    def ops(self, run):
        r = run.rng
        key = lambda: self.k(r.randrange(7))  # noqa: E731  (6: a new key)
        side = lambda: r.choice(["LEFT", "RIGHT"])  # noqa: E731
        choices = [
            lambda: run.w(self.name, "LPUSH", key(), "l%d" % r.randrange(99)),
            lambda: run.w(self.name, "RPUSH", key(), "r1", "r2"),
            lambda: run.w(self.name, "LPUSHX", key(), "x"),
            lambda: run.w(self.name, "RPUSHX", key(), "y"),
            lambda: run.w(self.name, "LPOP", key()),
            lambda: run.w(self.name, "RPOP", key(), "2"),
            lambda: run.w(self.name, "LSET", key(), "0", "set"),
            lambda: run.w(self.name, "LINSERT", key(), "BEFORE", "e1", "ins"),
            lambda: run.w(self.name, "LREM", key(), "0", "e2"),
            lambda: run.w(self.name, "LTRIM", key(), "0", str(r.randrange(2, 150))),
            lambda: run.w(self.name, "LMOVE", key(), key(), side(), side()),
            lambda: run.w(self.name, "RPOPLPUSH", key(), key()),
            lambda: run.w(self.name, "LMPOP", "2", key(), key(), side(), "COUNT", "2"),
        ]
        return [r.choice(choices) for _ in range(r.randrange(25, 45))]


@row("hashes", "hash")
class Hashes(Row):
    def setup(self, run):
        for i in range(5):
            n = 150 if i % 2 else 4
            args = []
            for j in range(n):
                args += ["f%d" % j, "v%d" % j]
            run.c.callv("HSET", self.k(i), *args)

    def ops(self, run):
        r = run.rng
        key = lambda: self.k(r.randrange(6))  # noqa: E731
        f = lambda: "f%d" % r.randrange(160)  # noqa: E731
        choices = [
            lambda: run.w(self.name, "HSET", key(), f(), "new", f(), "new2"),
            lambda: run.w(self.name, "HSETNX", key(), f(), "nx"),
            lambda: run.w(self.name, "HDEL", key(), f(), f()),
            lambda: run.w(self.name, "HINCRBY", key(), "cnt", "3"),
            lambda: run.w(self.name, "HINCRBYFLOAT", key(), "flt", "0.25"),
            lambda: run.w(self.name, "HMSET", key(), f(), "hm"),
        ]
        return [r.choice(choices) for _ in range(r.randrange(20, 35))]


@row("sets", "set")
class Sets(Row):
    def setup(self, run):
        for i in range(6):
            if i % 3 == 0:
                members = [str(j) for j in range(8)]  # an intset
            elif i % 3 == 1:
                members = ["m%d" % j for j in range(6)]
            else:
                members = ["m%d" % j for j in range(200)]
            run.c.callv("SADD", self.k(i), *members)

    def ops(self, run):
        r = run.rng
        key = lambda: self.k(r.randrange(7))  # noqa: E731
        m = lambda: r.choice(["m%d" % r.randrange(220), str(r.randrange(20))])  # noqa: E731
        choices = [
            lambda: run.w(self.name, "SADD", key(), m(), m()),
            lambda: run.w(self.name, "SREM", key(), m(), m()),
            lambda: run.w(self.name, "SPOP", key()),
            lambda: run.w(self.name, "SPOP", key(), "3"),
            lambda: run.w(self.name, "SMOVE", key(), key(), m()),
            lambda: run.w(self.name, "SINTERSTORE", key(), key(), key()),
            lambda: run.w(self.name, "SUNIONSTORE", key(), key(), key()),
            lambda: run.w(self.name, "SDIFFSTORE", key(), key(), key()),
        ]
        return [r.choice(choices) for _ in range(r.randrange(20, 35))]


@row("sorted sets", "zset")
class Zsets(Row):
    # zset:lex:0 and :1 hold members of score 0 only: a lex range over
    # members of unequal scores is unspecified (its result follows the
    # skiplist's random levels, so a replay may differ)
    def setup(self, run):
        for i in range(6):
            n = 200 if i % 3 == 2 else 5
            args = []
            for j in range(n):
                args += [str(j * 1.5), "z%d" % j]
            run.c.callv("ZADD", self.k(i), *args)
        for i, n in enumerate((200, 6)):
            run.c.callv("ZADD", self.k("lex", i), *[x for j in range(n) for x in ("0", "z%d" % j)])

    def ops(self, run):
        r = run.rng
        key = lambda: self.k(r.randrange(7))  # noqa: E731
        m = lambda: "z%d" % r.randrange(220)  # noqa: E731
        sc = lambda: str(r.randrange(-50, 400) / 2)  # noqa: E731
        choices = [
            lambda: run.w(self.name, "ZADD", key(), sc(), m(), sc(), m()),
            lambda: run.w(self.name, "ZADD", key(), r.choice(["NX", "XX", "GT", "LT"]), sc(), m()),
            lambda: run.w(self.name, "ZADD", key(), "INCR", "2", m()),
            lambda: run.w(self.name, "ZINCRBY", key(), "-1", m()),
            lambda: run.w(self.name, "ZREM", key(), m(), m()),
            lambda: run.w(self.name, "ZPOPMIN", key()),
            lambda: run.w(self.name, "ZPOPMAX", key(), "2"),
            lambda: run.w(self.name, "ZMPOP", "2", key(), key(), r.choice(["MIN", "MAX"]), "COUNT", "2"),
            lambda: run.w(self.name, "ZREMRANGEBYSCORE", key(), "0", "3"),
            lambda: run.w(self.name, "ZREMRANGEBYRANK", key(), "0", "1"),
            lambda: run.w(self.name, "ZREMRANGEBYLEX", self.k("lex", r.randrange(2)), "[z1", "(z2"),
            lambda: run.w(self.name, "ZADD", self.k("lex", r.randrange(2)), "0", m()),
            lambda: run.w(self.name, "ZREM", self.k("lex", r.randrange(2)), m()),
            lambda: run.w(self.name, "ZUNIONSTORE", key(), "2", key(), key()),
            lambda: run.w(self.name, "ZINTERSTORE", key(), "2", key(), key(), "AGGREGATE", "MAX"),
            lambda: run.w(self.name, "ZDIFFSTORE", key(), "2", key(), key()),
            lambda: run.w(self.name, "ZRANGESTORE", key(), key(), "0", "3"),
        ]
        return [r.choice(choices) for _ in range(r.randrange(25, 45))]


@row("key ops", "kop")
class KeyOps(Row):
    # databases 0 and 1 for DEL / RENAME / COPY / MOVE, 2 and 3 for SWAPDB,
    # 4 for FLUSHDB: no other row has keys there
    def setup(self, run):
        c = run.c
        for db in (0, 1, 2, 3, 4):
            c.callv("SELECT", db)
            for i in range(5):
                kind = i % 4
                key = self.k(db, i)
                if kind == 0:
                    c.callv("SET", key, "v%d-%d" % (db, i))
                elif kind == 1:
                    c.callv("RPUSH", key, "a", "b", "c")
                elif kind == 2:
                    c.callv("HSET", key, "f", "v", "g", "w")
                else:
                    c.callv("ZADD", key, "1", "a", "2", "b")
                if i == 3:
                    c.callv("EXPIRE", key, "86400")
        c.callv("SELECT", 0)

    def ops(self, run):
        r = run.rng
        key = lambda db=0: self.k(db, r.randrange(6))  # noqa: E731

        def in_db(db, *args):
            cl = run.client()
            cl.call("SELECT", db)
            run.w(self.name, *args, cl=cl)
            cl.call("SELECT", 0)

        choices = [
            lambda: run.w(self.name, "DEL", key(), key()),
            lambda: run.w(self.name, "UNLINK", key()),
            lambda: run.w(self.name, "RENAME", key(), key()),
            lambda: run.w(self.name, "RENAMENX", key(), key()),
            lambda: run.w(self.name, "COPY", key(), key(), "REPLACE"),
            lambda: run.w(self.name, "COPY", key(), key(), "DB", "1", "REPLACE"),
            lambda: run.w(self.name, "MOVE", key(), "1"),
            lambda: in_db(1, "MOVE", key(1), "0"),
            lambda: in_db(1, "RENAME", key(1), key(1)),
            lambda: run.w(self.name, "EXPIRE", key(), str(86400 + r.randrange(9999))),
            lambda: run.w(self.name, "PEXPIREAT", key(), str(int(time.time() * 1000) + 90000000)),
            lambda: run.w(self.name, "PERSIST", key()),
            lambda: run.w(self.name, "TOUCH", key()),
            lambda: run.w(self.name, "SWAPDB", "2", "3"),
            lambda: in_db(2, "SET", key(2), "after-swap"),
            lambda: in_db(3, "RPUSH", key(3), "pushed"),
            lambda: in_db(4, "FLUSHDB"),
        ]
        return [r.choice(choices) for _ in range(r.randrange(20, 35))]


class Blocking(Row):
    """A blocking command's row: clients blocked before S on sources that do
    not exist, each served after S by a feed (another client's push, LMOVE,
    RPOPLPUSH, COPY, RENAME, MOVE from database 1, MULTI or a script) from
    keys that existed at S; BLMOVE and BRPOPLPUSH move into destinations
    that existed at S (short lists, or past the compact encoding). A pop
    alone cannot meet a key of the instant (its source was empty then):
    those rows hold as long as the serve's pops and the feeds do."""
    zset = False
    dest = False
    LIST_FEEDS = ["push", "lmove", "rpoplpush", "copy", "rename", "move", "multi", "eval"]
    ZSET_FEEDS = ["zadd", "zunionstore", "zrangestore", "copy", "move", "eval"]

    def waiter_cmd(self, j):
        raise NotImplementedError

    def setup(self, run):
        r, c = run.rng, run.c
        self.n = r.randrange(1, 4)
        self.feeds = [r.choice(self.ZSET_FEEDS if self.zset else self.LIST_FEEDS) for _ in range(self.n)]
        for j in range(self.n):
            for db, key in ((0, self.k("pre", j)), (1, self.src(j))):
                if db == 1 and self.feeds[j] != "move":
                    continue
                c.callv("SELECT", db)
                if self.zset:
                    c.callv("ZADD", key, "1", "p1", "2", "p2", "3", "p3")
                else:
                    c.callv("RPUSH", key, "p1", "p2", "p3")
            c.callv("SELECT", 0)
            if self.dest:
                big = r.random() < 0.3
                c.callv("RPUSH", self.k("dst", j), *(["d%d" % i for i in range(200)] if big else ["d1", "d2"]))
            w = run.srv.client()
            w.send(*self.waiter_cmd(j))
            run.waiters.append((self.name, w, " ".join(self.waiter_cmd(j))))

    def src(self, j):
        return self.k("src", j)

    def feed(self, run, j):
        pre, src, way = self.k("pre", j), self.src(j), self.feeds[j]
        cl = run.client()
        if way == "move":
            cl.call("SELECT", 1)
            run.w(self.name, "MOVE", src, "0", cl=cl)
            return cl.call("SELECT", 0)
        if way in ("multi", "eval") and not self.zset:
            if way == "eval":
                return run.w(self.name, "EVAL", "return redis.call('RPUSH', KEYS[1], 'ev1', 'ev2')", "1", src, cl=cl)
            cl.call("MULTI")
            cl.call("LPUSH", src, "m1")
            cl.call("RPUSH", pre, "m2")
            run.count(self.name)
            return cl.call("EXEC")
        args = {"push": ("RPUSH", src, "f1", "f2", "f3"), "lmove": ("LMOVE", pre, src, "LEFT", "RIGHT"),
                "rpoplpush": ("RPOPLPUSH", pre, src), "copy": ("COPY", pre, src), "rename": ("RENAME", pre, src),
                "zadd": ("ZADD", src, "5", "f1", "6", "f2"), "zunionstore": ("ZUNIONSTORE", src, "1", pre),
                "zrangestore": ("ZRANGESTORE", src, pre, "0", "1"),
                "eval": ("EVAL", "return redis.call('ZINCRBY', KEYS[1], 1, 'ev')", "1", src)}[way]
        return run.w(self.name, *args, cl=cl)

    def ops(self, run):
        return [lambda j=j: self.feed(run, j) for j in range(self.n)]


@row("blocking BLPOP", "blpop")
class BLPop(Blocking):
    def waiter_cmd(self, j):
        return ["BLPOP", self.k("other", j), self.src(j), "0"]


@row("blocking BRPOP", "brpop")
class BRPop(Blocking):
    def waiter_cmd(self, j):
        return ["BRPOP", self.src(j), "0"]


@row("blocking BLMOVE", "blmove")
class BLMove(Blocking):
    dest = True

    def waiter_cmd(self, j):
        return ["BLMOVE", self.src(j), self.k("dst", j), ["LEFT", "RIGHT"][j % 2], "RIGHT", "0"]


@row("blocking BRPOPLPUSH", "brpoplpush")
class BRPopLPush(Blocking):
    dest = True

    def waiter_cmd(self, j):
        return ["BRPOPLPUSH", self.src(j), self.k("dst", j), "0"]


@row("blocking BLMPOP", "blmpop")
class BLMPop(Blocking):
    def waiter_cmd(self, j):
        return ["BLMPOP", "0", "2", self.k("other", j), self.src(j), "LEFT", "COUNT", "2"]


@row("blocking BZPOPMIN", "bzpopmin")
class BZPopMin(Blocking):
    zset = True

    def waiter_cmd(self, j):
        return ["BZPOPMIN", self.src(j), "0"]


@row("blocking BZPOPMAX", "bzpopmax")
class BZPopMax(Blocking):
    zset = True

    def waiter_cmd(self, j):
        return ["BZPOPMAX", self.k("other", j), self.src(j), "0"]


@row("blocking BZMPOP", "bzmpop")
class BZMPop(Blocking):
    zset = True

    def waiter_cmd(self, j):
        return ["BZMPOP", "0", "2", self.src(j), self.k("other", j), "MAX", "COUNT", "2"]


@row("expiry (active)", "expa")
class ExpireActive(Row):
    """Keys of every type whose TTL runs out during the save; the active
    cycle (off from the setup on) is turned back on after the writes and
    must delete them all while the snapshot still runs."""
    late = True

    def setup(self, run):
        at = short_expiry(run)
        for i in range(8):
            key = self.k(i)
            [lambda: run.c.callv("SET", key, "v"), lambda: run.c.callv("RPUSH", key, "a", "b"),
             lambda: run.c.callv("HSET", key, "f", "v"), lambda: run.c.callv("SADD", key, "m"),
             lambda: run.c.callv("ZADD", key, "1", "m")][i % 5]()
            run.c.callv("PEXPIREAT", key, at)
        self.n = 8


@row("expiry (lazy)", "expl")
class ExpireLazy(Row):
    """Keys whose TTL has run out, met after S by reads and writes while the
    active cycle is off (each a DEL before the command's own record)."""
    late = True

    def setup(self, run):
        at = short_expiry(run)
        for i in range(12):
            key = self.k(i)
            t = i % 4
            if t == 0:
                run.c.callv("SET", key, str(i))
            elif t == 1:
                run.c.callv("RPUSH", key, "a", "b")
            elif t == 2:
                run.c.callv("HSET", key, "f", "v")
            else:
                run.c.callv("ZADD", key, "1", "m")
            run.c.callv("PEXPIREAT", key, at)

    def touch(self, run):
        r = run.rng
        for i in range(12):
            key, t = self.k(i), i % 4
            ways = [("GET", key), ("EXISTS", key), ("TYPE", key), ("DEL", key), ("PERSIST", key),
                    ("EXPIRE", key, "86400")]
            ways += [[("INCR", key), ("APPEND", key, "x"), ("SET", key, "new", "XX"), ("SET", key, "fresh")],
                     [("RPUSH", key, "n"), ("LPOP", key), ("LPUSHX", key, "n")],
                     [("HSET", key, "g", "w"), ("HINCRBY", key, "c", "1")],
                     [("ZADD", key, "2", "n"), ("ZINCRBY", key, "1", "m")]][t]
            args = r.choice(ways)
            if r.random() < 0.2:
                cl = run.client()
                cl.call("MULTI")
                cl.call(*args)
                cl.call("SET", self.k("multi", i), "in-exec")
                run.count(self.name, 2)
                cl.call("EXEC")
            else:
                run.w(self.name, *args)


@row("EVAL/EVALSHA", "eval")
class Eval(Row):
    S1 = ("redis.call('RPUSH', KEYS[1], ARGV[1]); redis.call('HSET', KEYS[2], ARGV[1], ARGV[1]); "
          "redis.call('SADD', KEYS[3], ARGV[1]); redis.call('ZADD', KEYS[4], ARGV[2], ARGV[1]); "
          "return redis.call('SETRANGE', KEYS[5], 1, ARGV[1])")
    S2 = ("local v = redis.call('LPOP', KEYS[1]); if v then redis.call('RPUSH', KEYS[2], v) end; "
          "redis.call('HDEL', KEYS[3], 'f1'); redis.call('SREM', KEYS[4], ARGV[1]); "
          "redis.call('ZPOPMIN', KEYS[5]); return 1")
    S3 = "redis.call('SPOP', KEYS[1]); return redis.call('INCR', KEYS[2])"

    def setup(self, run):
        c = run.c
        for i in range(3):
            c.callv("RPUSH", self.k("l", i), "a", "b", "c")
            c.callv("HSET", self.k("h", i), "f1", "1", "f2", "2")
            c.callv("SADD", self.k("s", i), "x", "y", "z")
            c.callv("ZADD", self.k("z", i), "1", "x", "2", "y")
            c.callv("SET", self.k("str", i), "abcdef")
        self.sha = c.callv("SCRIPT", "LOAD", self.S1)

    def keys5(self, r):
        i = lambda: r.randrange(3)  # noqa: E731
        return [self.k("l", i()), self.k("h", i()), self.k("s", i()), self.k("z", i()), self.k("str", i())]

    def ops(self, run):
        r = run.rng
        choices = [
            lambda: run.w(self.name, "EVAL", self.S1, "5", *self.keys5(r), "v%d" % r.randrange(9), "3"),
            lambda: run.w(self.name, "EVALSHA", self.sha, "5", *self.keys5(r), "w%d" % r.randrange(9), "4"),
            lambda: run.w(self.name, "EVAL", self.S2, "5", self.k("l", r.randrange(3)), self.k("l", r.randrange(3)),
                          self.k("h", r.randrange(3)), self.k("s", r.randrange(3)), self.k("z", r.randrange(3)), "x"),
            lambda: run.w(self.name, "EVAL", self.S3, "2", self.k("s", r.randrange(3)), self.k("cnt")),
        ]
        return [r.choice(choices) for _ in range(r.randrange(10, 20))]


@row("FCALL", "fcall")
class Fcall(Row):
    LIB = ("#!lua name=sweeplib\n"
           "redis.register_function('sweep_push', function(keys, args) "
           "return redis.call('RPUSH', keys[1], args[1]) end)\n"
           "redis.register_function('sweep_mix', function(keys, args) "
           "redis.call('HINCRBY', keys[1], 'n', 1); redis.call('SADD', keys[2], args[1]); "
           "redis.call('ZINCRBY', keys[3], 1, args[1]); redis.call('LPOP', keys[4]); "
           "return redis.call('APPEND', keys[5], args[1]) end)\n")
    LIB2 = ("#!lua name=sweeplib_after\n"
            "redis.register_function('sweep_after', function(keys, args) "
            "return redis.call('SET', keys[1], args[1]) end)\n")

    def setup(self, run):
        c = run.c
        c.callv("FUNCTION", "LOAD", "REPLACE", self.LIB)
        for i in range(3):
            c.callv("RPUSH", self.k("l", i), "a", "b", "c", "d")
            c.callv("HSET", self.k("h", i), "n", "0")
            c.callv("SADD", self.k("s", i), "x")
            c.callv("ZADD", self.k("z", i), "1", "x")
            c.callv("SET", self.k("str", i), "s")

    def ops(self, run):
        r = run.rng
        i = lambda: r.randrange(3)  # noqa: E731
        choices = [
            lambda: run.w(self.name, "FCALL", "sweep_push", "1", self.k("l", i()), "p%d" % r.randrange(9)),
            lambda: run.w(self.name, "FCALL", "sweep_mix", "5", self.k("h", i()), self.k("s", i()), self.k("z", i()),
                          self.k("l", i()), self.k("str", i()), "m%d" % r.randrange(9)),
        ]
        out = [r.choice(choices) for _ in range(r.randrange(8, 16))]
        out.append(lambda: run.w(self.name, "FUNCTION", "LOAD", self.LIB2))
        out.append(lambda: run.w(self.name, "FCALL", "sweep_after", "1", self.k("after"), "1"))
        return out


@row("MULTI/EXEC", "multi")
class Multi(Row):
    def setup(self, run):
        c = run.c
        for i in range(3):
            c.callv("SET", self.k("str", i), "s%d" % i)
            c.callv("RPUSH", self.k("l", i), "a", "b")
            c.callv("HSET", self.k("h", i), "f", "v")
            c.callv("SADD", self.k("s", i), "a", "b")
            c.callv("ZADD", self.k("z", i), "1", "a", "2", "b")

    def ops(self, run):
        r = run.rng

        def txn():
            cl = run.client()
            cmds = []
            for _ in range(r.randrange(2, 7)):
                i = r.randrange(3)
                cmds.append(r.choice([
                    ("APPEND", self.k("str", i), "t"), ("INCR", self.k("n", i)),
                    ("RPUSH", self.k("l", i), "t"), ("LPOP", self.k("l", i)),
                    ("HSET", self.k("h", i), "g%d" % r.randrange(5), "t"), ("HDEL", self.k("h", i), "f"),
                    ("SADD", self.k("s", i), "t%d" % r.randrange(5)), ("SPOP", self.k("s", i)),
                    ("ZINCRBY", self.k("z", i), "2", "a"), ("ZPOPMAX", self.k("z", i)),
                    ("DEL", self.k("str", i)), ("EXPIRE", self.k("l", i), "86400")]))
            cl.call("MULTI")
            for a in cmds:
                cl.call(*a)
            run.count(self.name, len(cmds) + 2)
            cl.call("EXEC")
        return [txn for _ in range(r.randrange(6, 12))]


@row("metadata", "meta")
class Meta(Row):
    def labels(self, r):
        n = r.randrange(0, 3)
        return ["LABELS", str(n)] + r.sample(LABELS, n)

    def setup(self, run):
        c, r = run.c, run.rng
        for i in range(10):
            key = self.k(i)
            t = i % 5
            if t == 0:
                c.callv("METAPUT", key, "v%d" % i, *self.labels(r), "ENTITY", r.choice(ENTITIES),
                        "CONTENTTYPE", "text/plain")
            else:
                [lambda: c.callv("RPUSH", key, "a", "b"), lambda: c.callv("HSET", key, "f", "v"),
                 lambda: c.callv("SADD", key, "m1", "m2"), lambda: c.callv("ZADD", key, "1", "m")][t - 1]()
                c.callv("METASET", key, *self.labels(r), "ENTITY", r.choice(ENTITIES))
        c.callv("METASET", self.k(3), "LABELS", "1", "mlab:c")  # at least one key for METAINVALIDATE

    def ops(self, run):
        r = run.rng
        key = lambda: self.k(r.randrange(11))  # noqa: E731
        lab = lambda: r.choice(LABELS)  # noqa: E731
        choices = [
            lambda: run.w(self.name, "METAPUT", key(), "put%d" % r.randrange(9), *self.labels(r),
                          "ENTITY", r.choice(ENTITIES)),
            lambda: run.w(self.name, "METASET", key(), "ADDLABELS", "1", lab()),
            lambda: run.w(self.name, "METASET", key(), "REMLABELS", "1", lab()),
            lambda: run.w(self.name, "METASET", key(), "CLEAR"),
            lambda: run.w(self.name, "METASET", key(), "ENTITY", r.choice(ENTITIES), "CONTENTTYPE", "a/b"),
            lambda: run.w(self.name, "RPUSH", self.k(1), "kept-meta"),
            lambda: run.w(self.name, "HSET", self.k(2), "g", "kept-meta"),
            lambda: run.w(self.name, "SET", self.k(0), "plain-set-keeps-meta"),
            lambda: run.w(self.name, "RENAME", key(), key()),
            lambda: run.w(self.name, "COPY", key(), key(), "REPLACE"),
            lambda: run.w(self.name, "COPY", key(), key(), "DB", "1", "REPLACE"),
            lambda: run.w(self.name, "MOVE", key(), "1"),
        ]
        out = [r.choice(choices) for _ in range(r.randrange(15, 30))]
        out.append(lambda: run.w(self.name, "METAINVALIDATE", "mlab:c"))
        out.append(lambda: run.w(self.name, "METAINVALIDATE", "mlab:b", "ENTITY", r.choice(ENTITIES)))
        return out


@row("native batches", "native")
class Native(Row):
    def setup(self, run):
        c = run.c
        for i in range(6):
            c.callv("SET", self.k("s", i), "s%d" % i)
            c.callv("SET", self.k("n", i), str(i))
            c.callv("RPUSH", self.k("l", i), "a", "b")
            c.callv("HSET", self.k("h", i), "f", "v")
        c.callv("METASET", self.k("l", 0), "LABELS", "1", "nlab:x")
        c.callv("METAPUT", self.k("s", 5), "m", "LABELS", "1", "nlab:x")
        run.nc = nw.NativeClient(run.srv.native_port, timeout=10.0 * SLOW)

    def ops(self, run):
        r = run.rng
        i = lambda: r.randrange(7)  # noqa: E731
        meta = lambda: {"labels": [r.choice(NATIVE_LABELS)], "entity": b"", "ctype": b""}  # noqa: E731

        def single():  # single-key ops only: an RF1 node runs them grouped by shard
            ops = []
            for _ in range(r.randrange(8, 20)):
                ops.append(r.choice([
                    lambda: nw.op_set(self.k("s", i()), "ns%d" % r.randrange(9)),
                    lambda: nw.op_set(self.k("s", i()), "kt", keepttl=True),
                    lambda: nw.op_set(self.k("s", i()), "ttl", ttl_ms=90000000),
                    lambda: nw.op_incrby(self.k("n", i()), r.randrange(-5, 9)),
                    lambda: nw.op_getset(self.k("s", i()), "gs"),
                    lambda: nw.op_getdel(self.k("s", i())),
                    lambda: nw.op_del(self.k("n", i())),
                    lambda: nw.op_pexpire(self.k(r.choice("slh"), i()), 90000000),
                    lambda: nw.op_persist(self.k(r.choice("slh"), i())),
                    lambda: nw.op_metaset(self.k(r.choice("lhs"), i()), meta()),
                    lambda: nw.op_get(self.k("s", i())),
                ])())
            return self.send(run, ops)

        def in_order():
            ops = [nw.op_command("RPUSH", self.k("l", i()), "nc"), nw.op_command("HSET", self.k("h", i()), "g", "nc"),
                   nw.op_mset([(self.k("s", i()), "ms1"), (self.k("n", i()), "7")]),
                   nw.op_command("LPOP", self.k("l", i()))]
            if r.random() < 0.5:
                ops.append(nw.op_invalidate("nlab:x"))
            r.shuffle(ops)
            return self.send(run, ops)
        return [single for _ in range(r.randrange(2, 5))] + [in_order for _ in range(r.randrange(1, 3))]

    def send(self, run, ops):
        resp = run.nc.call(ops)
        run.count(self.name, len(ops))
        if resp.problems:
            run.problem(self.name, "native response: %s" % "; ".join(resp.problems[:3]))


class Evict(Row):
    """Eviction (a server of its own): keys of every type, then after S a
    small maxmemory under allkeys-lru or allkeys-random, and writes that
    make it evict while the snapshot runs."""
    name, prefix = "eviction", "evict"

    def setup(self, run):
        c = run.c
        pipe = []
        for i in range(3000):
            key = self.k(i)
            t = i % 4
            if t == 0:
                pipe.append(("SET", key, "v" * 200))
            elif t == 1:
                pipe.append(("RPUSH", key, *["e%d" % j for j in range(20)]))
            elif t == 2:
                pipe.append(("HSET", key, *["f", "v" * 50, "g", "w" * 50]))
            else:
                pipe.append(("ZADD", key, "1", "a" * 40, "2", "b" * 40))
            if len(pipe) >= 500:
                c.pipeline(pipe)
                pipe = []
        c.pipeline(pipe)

    def ops(self, run):
        c, r = run.c, run.rng
        used = info_num(c, "memory", "used_memory") - info_num(c, "memory", "mem_not_counted_for_evict")
        self.policy = r.choice(["allkeys-lru", "allkeys-random"])
        self.before = info_num(c, "stats", "evicted_keys")
        c.callv("CONFIG", "SET", "maxmemory-policy", self.policy)
        c.callv("CONFIG", "SET", "maxmemory", str(used - 200 * 1024))
        out = []
        for _ in range(r.randrange(150, 250)):
            i = r.randrange(3300)
            out.append(r.choice([
                lambda i=i: run.w(self.name, "SET", self.k(i), "n" * 500),
                lambda i=i: run.w(self.name, "RPUSH", self.k(i), "x" * 100),
                lambda i=i: run.w(self.name, "HSET", self.k(i), "h%d" % r.randrange(9), "y" * 100),
                lambda i=i: run.w(self.name, "ZADD", self.k(i), "3", "c" * 80),
                lambda i=i: run.w(self.name, "GET", self.k(i)),
            ]))
        return out

    def after(self, run):
        evicted = info_num(run.c, "stats", "evicted_keys") - self.before
        run.c.callv("CONFIG", "SET", "maxmemory", "0")
        left = run.c.callv("DBSIZE")
        note("%s, round %d: %s evicted %d keys during the snapshot, %d left"
             % (run.column.name, run.rnd, self.policy, evicted, left))
        if evicted <= 0:
            run.problem(self.name, "%s evicted no key during the snapshot" % self.policy)
        # 200 KB of room and ~200 writes evict about 1,050 keys with no
        # snapshot running (evict_snapshot.t compares the two); during one
        # zarisd still evicts up to ~2x that (an open gap: a full sync's
        # lagging consumer grows the change stream's ring, whose capacity
        # counts), and before pre-images were left out of the figure it
        # evicted every key
        if left < 500:
            run.problem(self.name, "%s left %d keys of about 3000: eviction ran away" % (self.policy, left))


EVICT = Evict()
ALL_ROWS = ROWS + [EVICT]
ROW_OF = {r.prefix: r.name for r in ALL_ROWS}

# ------------------------------------------------------------------------- dumps

READ = {"string": ("GET",), "list": ("LRANGE", "0", "-1"), "hash": ("HGETALL",), "set": ("SMEMBERS",),
        "zset": ("ZRANGE", "0", "-1", "WITHSCORES")}


def norm_value(kind, v):
    if kind == "string" and isinstance(v, bytes) and v[:4] == b"HYLL" and len(v) >= 16:
        return v[:8] + v[16:]  # PFCOUNT writes its cached cardinality (bytes 8..15) in place
    if kind == "set":
        return sorted(v)
    if kind == "hash":
        return sorted(zip(v[0::2], v[1::2]))
    return v


def norm_meta(m):
    if not isinstance(m, list):
        return m
    d = dict(zip(m[0::2], m[1::2]))
    return (tuple(sorted(d.get(b"labels") or [])), d.get(b"entity"), d.get(b"content-type"))


def dump(c):
    """{(db, key): (type, value, expiry ms or -1, metadata, version)} of every
    database, plus ("functions",) and ("index", db, kind, name) entries."""
    out = {}
    ndb = int(c.callv("CONFIG", "GET", "databases")[1])
    sizes = [r.py() for r in c.pipeline([("SELECT", db) if i == 0 else ("DBSIZE",)
                                         for db in range(ndb) for i in range(2)])[1::2]]
    for db in range(ndb):
        if not sizes[db]:
            continue
        c.callv("SELECT", db)
        keys = sorted(scan_keys(c))
        for at in range(0, len(keys), 300):
            part = keys[at:at + 300]
            head = c.pipeline([x for k in part for x in (("TYPE", k), ("PEXPIRETIME", k), ("METAGET", k),
                                                         ("DEBUG", "KEY-VERSION", k))])
            live = [(k, head[4 * j].py(), j) for j, k in enumerate(part) if head[4 * j].py() != "none"]
            vals = c.pipeline([READ.get(t, ("TYPE",))[:1] + (k,) + READ.get(t, ("TYPE",))[1:] for k, t, _ in live])
            for (k, t, j), v in zip(live, vals):
                out[(db, k)] = (t, norm_value(t, v.py()), head[4 * j + 1].py(), norm_meta(head[4 * j + 2].py()),
                                head[4 * j + 3].py())
        for kind, names in (("LABEL", LABELS + NATIVE_LABELS), ("ENTITY", ENTITIES)):
            for name in names:
                found, cur = set(), "0"
                for _ in range(100000):
                    cur, page = c.callv("METASCAN", cur, kind, name, "COUNT", "200")
                    found.update(page)
                    if cur in (b"0", "0"):
                        break
                if found:
                    out[("index", db, kind, name)] = sorted(found)
    c.callv("SELECT", 0)
    out[("functions",)] = repr(c.callv("FUNCTION", "LIST", "WITHCODE"))
    return out


def row_of(key):
    if key[0] == "functions":
        return Fcall.name
    if key[0] == "index":
        return Native.name if key[3].startswith("nlab") else Meta.name
    name = key[1].decode("utf-8", "replace")
    return ROW_OF.get(name.split(":", 1)[0], "other keys")


def short(x, n=200):
    s = repr(x)
    return s if len(s) <= n else s[:n] + "...(%d chars)" % len(s)


def compare(want, got, now_ms):
    """{row: (keys compared, [mismatch lines])}; keys whose TTL has run out
    by NOW_MS (or is about to) on either side are left out."""
    res = {}
    for key in sorted(set(want) | set(got), key=repr):
        a, b = want.get(key), got.get(key)
        if any(isinstance(v, tuple) and v[2] not in (-1, None) and v[2] < now_ms + 2000 for v in (a, b)):
            continue
        r = row_of(key)
        n, lines = res.get(r, (0, []))
        where = ("db %d key %r" % (key[0], key[1])) if len(key) == 2 and isinstance(key[0], int) else repr(key)
        if a is None or b is None:
            lines.append("%s: expected %s, got %s" % (where, short(a) if a else "no key", short(b) if b else "no key"))
        elif not isinstance(a, tuple) or not isinstance(b, tuple):
            if a != b:
                lines.append("%s: expected %s, got %s" % (where, short(a), short(b)))
        else:
            diffs = []
            for f, x, y in zip(("type", "value", "expiry", "metadata", "version"), a, b):
                if f == "expiry":
                    same = (x == -1) == (y == -1) and (x == -1 or abs(x - y) <= TTL_TOL_MS)
                else:
                    same = x == y
                if not same:
                    diffs.append("%s expected %s, got %s" % (f, short(x), short(y)))
            if diffs:
                lines.append("%s: %s" % (where, "; ".join(diffs)))
        res[r] = (n + 1, lines)
    return res


# ------------------------------------------------------------------------- columns

class Column:
    def __init__(self, name, aof=False, trigger=None, flag="rdb_bgsave_in_progress", rf1=False, sync=False,
                 chain=False):
        self.name, self.aof, self.trigger, self.flag = name, aof, trigger, flag
        self.rf1, self.sync, self.chain = rf1, sync, chain
        self.rdb_only = not aof and not sync and not chain


COLUMNS = [
    Column("bgsave+log", aof=True, trigger="BGSAVE"),
    Column("bgsave-only", trigger="BGSAVE", rf1=True),
    Column("full sync", sync=True),
    Column("chained sync", chain=True),
    Column("rewrite+log", aof=True, trigger="BGREWRITEAOF", flag="aof_rewrite_in_progress"),
]


def start(col, d, name):
    extra = ["--dir", d, "--appendonly", "yes" if col.aof else "no"] + FLAGS
    if col.rf1:
        extra += ["--native-rf1", "yes"]
    return start_zarisd(threads=2, extra=extra, name=name, native=True)


def snapshot_state(run):
    """(in progress, keys written so far) of the column's snapshot."""
    i = info(run.snap, "persistence")
    try:
        return i.get(run.column.flag) == "1", int(i.get("current_save_keys_processed", "0"))
    except ValueError:
        return False, 0


def still_running(run):
    running, _ = snapshot_state(run)
    if run.column.sync or run.column.chain:
        running = running and info(run.rc, "replication").get("master_sync_in_progress") == "1"
    return running


def serve_waiters(run):
    for rname, w, what in run.waiters:
        w.settimeout(10.0 * SLOW)
        try:
            r = w.read_reply()
            if r.is_error() or r.value is None:
                run.problem(rname, "%s answered %r" % (what, r.raw))
        except (OSError, ProtocolError) as e:
            run.problem(rname, "%s not served: %s" % (what, e))
        w.close()
        run.count(rname)


def expiry_phases(run):
    """With every write done: the lazy row's touches once its keys' TTL ran
    out, then the active cycle back on until it deleted the active row's
    keys (both still inside the snapshot)."""
    lazy = next((r for r in ROWS if isinstance(r, ExpireLazy)), None)
    active = next((r for r in ROWS if isinstance(r, ExpireActive)), None)
    wait_for(lambda: server_ms(run.c) > run.expiry_deadline + 5, 10.0)
    if lazy:
        lazy.touch(run)
    base = info_num(run.c, "stats", "expired_keys")
    run.c.callv("DEBUG", "SET-ACTIVE-EXPIRE", "1")
    if active and not wait_for(lambda: info_num(run.c, "stats", "expired_keys") >= base + active.n, 20.0):
        run.problem(active.name, "the active cycle expired %d of %d keys during the save"
                    % (info_num(run.c, "stats", "expired_keys") - base, active.n))
    run.count(active.name, active.n)


def run_column(run, rows, tag):
    """One snapshot of RUN's column with ROWS writing; returns {row: (keys,
    lines)}. RUN keeps the counts, the problems, and whether the snapshot
    began before the writes and still ran after them."""
    col = run.column
    run.srv = srv = start(col, data_dir("zaris-snapsweep-"), "zarisd-%s" % tag)
    run.c = c = srv.client()
    run.c1 = client_on_other_worker(srv, run.c)
    run.snap = c  # the client of the server whose snapshot runs
    replicas = []
    if col.chain:  # the snapshot runs on a replica of the writers' server, for its own replica
        replicas.append(start_zarisd(threads=2, extra=["--dir", data_dir("zaris-snapsweep-r-"), "--appendonly", "no",
                                                       "--replicaof", "127.0.0.1 %d" % srv.port] + FLAGS,
                                     name="zarisd-%s-middle" % tag))
        run.snap = replicas[0].client()
    if col.sync or col.chain:
        replicas.append(start_zarisd(threads=2, extra=["--dir", data_dir("zaris-snapsweep-r-"), "--appendonly", "no"]
                                     + FLAGS, name="zarisd-%s-replica" % tag))
        run.rc = replicas[-1].client()
    for at in range(0, FILLER, 100):
        c.callv("SELECT", 15)
        c.pipeline([("SET", "%sfill:%d" % (FILL_TAG, i), "f" * 50) for i in range(at, at + 100)])
    c.callv("SELECT", 0)
    c.callv("DEBUG", "SET-ACTIVE-EXPIRE", "0")
    for r in rows:
        if not r.late:
            r.setup(run)
    if not wait_blocked(c, len(run.waiters)):
        run.problem(rows[0].name, "%d waiters did not all block" % len(run.waiters))
    before = dump(c) if col.rdb_only else None
    for r in rows:
        if r.late:
            r.setup(run)
    if col.chain and not wait_in_sync(c, run.snap, timeout=60.0):
        diag("%s: the middle replica is not in sync: %s" % (tag, sync_state(c, run.snap)))
    run.snap.callv("CONFIG", "SET", "rdb-key-save-delay", str(DELAY_US))
    if col.sync or col.chain:
        run.rc.callv("REPLICAOF", "127.0.0.1", str((replicas[0] if col.chain else srv).port))
    else:
        r = c.call(col.trigger)
        if r.is_error():
            diag("%s: %s answered %s" % (tag, col.trigger, r.value))
    run.began = wait_for(lambda: snapshot_state(run) >= (True, FILLER), 30.0, 0.005)
    if not run.began:
        diag("%s: INFO persistence before the writes: %r" % (tag, snapshot_state(run)))
    ops = []
    for r in rows:
        ops += r.ops(run)
    run.rng.shuffle(ops)
    for op in ops:
        op()
    serve_waiters(run)
    for r in rows:
        if r.after:
            r.after(run)
    if any(isinstance(r, ExpireActive) for r in rows):
        expiry_phases(run)
    if col.chain and not wait_in_sync(c, run.snap, timeout=60.0):  # the middle applied every write
        diag("%s: the middle replica did not catch up: %s" % (tag, sync_state(c, run.snap)))
    run.still = still_running(run)
    if not run.still:
        diag("%s: a snapshot that ended before the writes did tests less than this test claims: %r"
             % (tag, snapshot_state(run)))
    run.snap.callv("CONFIG", "SET", "rdb-key-save-delay", "0")
    if not wait_for(lambda: not snapshot_state(run)[0], 60.0):
        diag("%s: the snapshot did not end" % tag)
    wait_for(lambda: server_ms(c) > run.expiry_deadline + 50, 10.0)
    if getattr(run, "nc", None):
        run.nc.close()
    if replicas:
        for up, down in ((c, run.snap), (run.snap, run.rc)) if col.chain else ((c, run.rc),):
            if not wait_in_sync(up, down, timeout=60.0):
                diag("%s: a replica is not in sync: %s" % (tag, sync_state(up, down)))
        want, got = dump(c), dump(run.rc)
        now = server_ms(c)
        for x in replicas:
            x.cleanup()
    else:
        want = before if before is not None else dump(c)
        run.c1.close()
        c.send("SHUTDOWN", "NOSAVE")
        c.recv_until_closed(10.0 * SLOW)
        c.close()
        srv.proc.wait(30 * SLOW)
        srv.restart()
        c = srv.client()
        got = dump(c)
        now = server_ms(c)
    c.close()
    srv.cleanup()
    return compare(want, got, now)


# ------------------------------------------------------------------------- main

plan(ROUNDS * len(COLUMNS) * (len(ALL_ROWS) + 5) + 1)
table = {}  # (row, column) -> [rounds, keys, commands, mismatches]
for rnd in range(ROUNDS):
    for col in COLUMNS:
        results = {}
        for rows, tag in ((ROWS, col.name.replace(" ", "-")), ([EVICT], col.name.replace(" ", "-") + "-evict")):
            run = Run(col, rnd, random.Random(rng.randrange(1 << 30)))
            broke = None
            try:
                res = run_column(run, rows, tag)
            except (OSError, ProtocolError, RuntimeError, nw.Closed, nw.Goodbye) as e:
                broke = "the run broke off: %s: %s" % (type(e).__name__, e)
                diag("round %d, %s: %s" % (rnd, tag, broke))
                res = {}
            what = "eviction" if rows is not ROWS else "every row"
            ok(run.began, "round %d, %s: the snapshot's instant passed before the writes of %s (%s:1, filler "
               "written)" % (rnd, col.name, what, col.flag))
            ok(run.still, "round %d, %s: the snapshot still ran after the writes of %s" % (rnd, col.name, what))
            for r in rows:
                keys, lines = res.get(r.name, (0, []))
                probs = run.problems.get(r.name, []) + ([broke] if broke else [])
                results[r.name] = (keys, run.cmds.get(r.name, 0), lines, probs)
            if rows is ROWS:
                keys, lines = res.get("other keys", (0, []))
                if not ok(not broke and not lines, "round %d, %s: keys of no row (filler) as expected (%d)"
                          % (rnd, col.name, keys)):
                    for line in lines[:5]:
                        diag("other keys, %s: %s" % (col.name, line))
        for r in ALL_ROWS:
            keys, cmds, lines, probs = results[r.name]
            good = not lines and not probs and cmds > 0
            if not ok(good, "round %d: %s x %s: %d keys compared after %d commands during the snapshot, %d mismatches"
                      % (rnd, r.name, col.name, keys, cmds, len(lines))):
                for line in probs:
                    diag("%s x %s: %s" % (r.name, col.name, line))
                for line in lines[:8]:
                    diag("%s x %s: %s" % (r.name, col.name, line))
                if len(lines) > 8:
                    diag("%s x %s: ... %d more" % (r.name, col.name, len(lines) - 8))
            t = table.setdefault((r.name, col.name), [0, 0, 0, 0, 0])
            t[0] += 1
            t[1] += keys
            t[2] += cmds
            t[3] += len(lines)
            t[4] += len(probs)

# SHUTDOWN NOSAVE while a save sleeps: FILLER keys x 1 s to go
srv = start_zarisd(threads=2, extra=["--dir", data_dir("zaris-snapsweep-"), "--appendonly", "no"] + FLAGS)
c = srv.client()
c.pipeline([("SET", "%sfill:%d" % (FILL_TAG, i), "f") for i in range(FILLER)])
c.callv("CONFIG", "SET", "rdb-key-save-delay", "1000000")
c.callv("BGSAVE")
run = Run(COLUMNS[1], 0, rng)
run.snap = c
wait_for(lambda: snapshot_state(run) >= (True, 1), 30.0)
c.send("SHUTDOWN", "NOSAVE")
c.recv_until_closed(10.0 * SLOW)
try:
    srv.proc.wait(30 * SLOW)
except Exception:  # noqa: BLE001 -- still running: the check fails
    pass
ok(srv.proc.poll() == 0, "SHUTDOWN NOSAVE while a BGSAVE sleeps on rdb-key-save-delay: exit status %r"
   % (srv.proc.poll(),)) or diag(srv.log_tail(1500))
srv.cleanup()

note("")
note("writer class x consumer: keys compared / commands during the snapshot / mismatches (all rounds)")
w = max(len(r.name) for r in ALL_ROWS)
note("%-*s  %s" % (w, "", "  ".join("%-22s" % c.name for c in COLUMNS)))
for r in ALL_ROWS:
    cells = []
    for c in COLUMNS:
        t = table.get((r.name, c.name), [0, 0, 0, 0, 0])
        mark = "FAIL" if t[3] or t[4] else "ok"
        cells.append("%-22s" % ("%s %d/%d/%d" % (mark, t[1], t[2], t[3])))
    note("%-*s  %s" % (w, r.name, "  ".join(cells)))
sys.exit(done_testing())
