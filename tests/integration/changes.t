#!/usr/bin/env python3
# changes.t — Redis's change count (server.dirty: INFO persistence
# rdb_changes_since_last_save, which the save rules "save <secs> <changes>"
# compare against) moves by the same amount for every write command as in
# redis-server: one per key for strings and keys, one per element added or
# removed for collections, the inner commands' sum for MULTI/EXEC, nothing
# for a write that changed nothing.
#
# Each step sends one command on one connection and reads the count on
# another (zarisd --threads 2: the two connections may sit on different
# workers, whose counts must add up).
#
# They were zarisd bugs: collections counted one per command, SETRANGE /
# SETBIT creating a key and INCR / APPEND / SETRANGE on an existing one
# counted two, LMOVE three, EXEC counted its commands a second time, a
# SET whose new value needed a new block counted the old one's free too,
# BITFIELD SET / INCRBY counted a write of the value already there
# (Redis counts a field only when it changed, or the string grew), COPY
# REPLACE over a key counted two (Redis: one), SWAPDB counted nothing
# (Redis: one; and so it was not journaled either, journal_keys.t).

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from zaris import *  # noqa: E402,F403

GROUPS = [
    ("strings", """
        set a 1
        incr a
        incrby a 3
        incrbyfloat a 1.5
        append a x
        append nk x
        setrange s 2 x
        setrange s 0 j
        set s hello
        set s LONG
        set s hello
        setnx s y
        getset s z
        getdel s
        mset m1 1 m2 2 m3 3
        msetnx q1 1 q2 2
        msetnx q1 1 q3 3
        setex se 100 v
        psetex pse 100000 v
        getex se persist
        getex se ex 100
        set g 1 get
        set g 2 keepttl
    """),
    ("keys", """
        set k1 v
        set k2 v
        del k1 k2 nope
        set c1 v
        copy c1 c2
        renamenx c2 c1
        renamenx c2 c3
        move c3 1
        rename c1 c4
        set c5 v
        copy c4 c5 replace
        copy c4 c5
        expire c4 100
        persist c4
        expire nope 10
        pexpireat c4 99999999999999
        expire c4 0
        unlink c4
    """),
    ("bitmaps and hyperloglog", """
        setbit b 3 1
        setbit b 3 1
        setbit b 100 0
        setbit nb 5 0
        bitop or bo nb b
        bitfield bf set u8 0 1 set u8 8 2
        bitfield bf incrby u8 0 1
        bitfield bf set u8 0 2
        bitfield bf set u8 0 2 set u8 8 5
        bitfield bf incrby u8 0 0
        bitfield bf set i8 0 -1 set i8 0 -1
        bitfield bf overflow fail incrby u8 0 300
        bitfield bf set u8 40 0
        bitfield bf set u8 40 0
        pfadd h a b c
        pfadd h a
        pfadd h d
        pfadd h2
        pfcount h
        pfcount h
        pfmerge h3 h h2
    """),
    ("lists", """
        lpush l a b c
        lpush l d e
        rpushx l f g
        lpushx nol a b
        lpop l
        lpop l 2
        rpop l 5
        rpop l 0
        rpush l a b c d e f
        ltrim l 1 3
        ltrim l 0 10
        rpush l c c x c
        lrem l 2 c
        lrem l 0 c
        lrem l 0 nothere
        linsert l before nothere y
        linsert l before x y
        lset l 0 q
        lmove l l2 left right
        rpoplpush l2 l
        lmpop 1 l left count 2
        lmpop 2 nol l2 right count 5
    """),
    ("sets", """
        sadd st a b c
        sadd st a d
        srem st a b x
        srem st x
        spop st
        sadd st2 a b c d e f
        spop st2 2
        spop st2 10
        sadd st3 a b 1
        smove st3 st4 a
        smove st4 st4 a
        sinterstore st5 st3 st3
        sinterstore st6 nope1 nope2
        sunionstore su st4 st5
        sdiffstore sd st5 st4
    """),
    ("hashes", """
        hset hh a 1 b 2
        hset hh a 1
        hmset hh c 3 d 4
        hsetnx hh c 5
        hsetnx hh e 5
        hincrby hh a 5
        hincrbyfloat hh f 1.5
        hdel hh a b x
        hdel hh c d e f
        hset nh a 1 b 2 c 3
    """),
    ("sorted sets", """
        zadd z 1 a 2 b
        zadd z 1 a
        zadd z 3 a 4 c
        zadd z ch 5 a 4 c
        zadd z incr 1 a
        zadd z nx 9 a 9 d
        zincrby z 2 a
        zrem z a x
        zrem z b c d
        zadd z2 1 a 2 b 3 c 4 d 5 e
        zremrangebyscore z2 1 2
        zremrangebyrank z2 0 0
        zremrangebylex z2 - +
        zadd z3 1 a 2 b 3 c 4 d
        zpopmin z3
        zpopmax z3 2
        zmpop 1 z3 min count 3
        zadd z4 1 a 2 b
        zunionstore z5 1 z4
        zinterstore z6 2 z4 z5
        zrangestore z7 z4 0 -1
        zdiffstore z8 1 z4
    """),
    ("transactions", """
        multi
        set m 1
        sadd ms a b c
        lpush ml a b
        exec
        multi
        set m 2
        discard
        multi
        incr m
        hset mh a 1 b 2
        exec
    """),
    ("flushes", """
        mset f1 1 f2 2 f3 3
        sadd f4 a b c
        select 1
        set f5 1
        select 0
        flushdb
        flushall
        flushall
    """),
    ("swapdb", """
        swapdb 0 1
        set w1 v
        swapdb 0 1
        swapdb 1 1
        select 1
        swapdb 0 1
        select 0
    """),
]


LONG = "x" * 300


def scenarios(srv):
    cmd = srv.client()
    info = srv.client()

    def changes():
        raw = info.call("INFO", "persistence").raw.decode()
        return int(raw.split("rdb_changes_since_last_save:")[1].split("\r\n")[0])

    out = []
    for name, text in GROUPS:
        steps = []
        for line in text.strip().splitlines():
            before = changes()
            # LONG: a value too big for the old block, whatever the allocator
            reply = cmd.call(*[LONG if w == "LONG" else w for w in line.split()]).raw
            if line.split()[0] == "spop":  # random members: their number only
                reply = reply.split(b"\r\n")[0]
            steps.append((line.strip(), reply, changes() - before))
        out.append(("%s: the change count moves as in redis-server (%d commands)" % (name, len(steps)), steps))
    cmd.close()
    info.close()
    return out


compare_scenarios(scenarios)
