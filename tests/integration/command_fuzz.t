#!/usr/bin/python3
# command_fuzz.t — random commands with awkward arguments, each sent to
# redis-server and then to zarisd, each on a RESP2 or a RESP3 connection
# (HELLO 3) at random: the raw replies must be the same, byte for byte. compare.t has the fixed cases; this is its random twin, for the
# argument parsing and edge values nobody thought to write down.
#
# About 90 commands over strings, lists, hashes, sorted sets, sets,
# bitmaps, HyperLogLog and keys. The argument count follows the command's
# arity (redis-server's COMMAND INFO) nine times in ten; the first argument
# is a key of the command's type, the others a mix of keys and values:
# empty, signs, 64-bit limits and one past them, floats, inf/nan spellings,
# "0x10", padded numbers, option words (NX XX GT LT CH INCR GET WITHSCORES
# LIMIT BYSCORE BYLEX REV COUNT LEFT RIGHT ...) and range syntax ("(1",
# "[a", "-", "+"). Left out: replies whose order or value Redis leaves open
# (SMEMBERS, SUNION ..., SPOP, RANDOMKEY, and HGETALL/HKEYS/HVALS/HSCAN and
# ZSCAN, whose order is Redis's hashtable order once a value grows past 64
# bytes, as HINCRBYFLOAT's results do), and anything that sets a relative
# TTL — a key expiring between the two servers' calls would make them differ
# for no fault of either. Seeded: the seed is
# printed, ZARIS_SEED repeats a run.

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from zaris import *  # noqa: E402,F403

COMMANDS = 20000
VALUES = ["", "0", "1", "-1", "2", "3", "10", "1.5", "-2.5", "inf", "-inf", "+inf", "nan",
          "9223372036854775807", "9223372036854775808", "-9223372036854775808", "1e400", "0x10",
          " 1", "1 ", "abc", "a", "b", "c", "1e3", "01", "-0", "3.0", "17", "100"]
WORDS = ["NX", "XX", "GT", "LT", "CH", "INCR", "GET", "WITHSCORES", "LIMIT", "BYSCORE", "BYLEX", "REV",
         "COUNT", "LEFT", "RIGHT", "BEFORE", "AFTER", "AGGREGATE", "SUM", "MIN", "MAX", "WEIGHTS", "(1",
         "[a", "-", "+", "(a", "[", "RANK", "MAXLEN", "IDX", "LEN", "MINMATCHLEN", "WITHMATCHLEN", "AND",
         "OR", "XOR", "NOT", "BIT", "BYTE"]
NAMES = ["SET", "GET", "GETDEL", "SETNX", "MSET", "MSETNX", "MGET", "APPEND", "STRLEN", "INCR", "DECR",
         "INCRBY", "DECRBY", "INCRBYFLOAT", "GETRANGE", "SETRANGE", "GETSET", "LCS",
         "LPUSH", "RPUSH", "LPUSHX", "RPUSHX", "LPOP", "RPOP", "LLEN", "LRANGE", "LINDEX", "LSET",
         "LINSERT", "LREM", "LTRIM", "LPOS", "LMOVE", "RPOPLPUSH", "LMPOP",
         "HSET", "HGET", "HMGET", "HDEL", "HLEN", "HEXISTS", "HINCRBY", "HINCRBYFLOAT", "HSETNX",
         "HSTRLEN",
         "ZADD", "ZINCRBY", "ZSCORE", "ZMSCORE", "ZRANGE", "ZRANGEBYSCORE", "ZREVRANGEBYSCORE",
         "ZRANGEBYLEX", "ZREVRANGEBYLEX", "ZCOUNT", "ZLEXCOUNT", "ZRANK", "ZREVRANK", "ZREM",
         "ZREMRANGEBYSCORE", "ZREMRANGEBYRANK", "ZREMRANGEBYLEX", "ZCARD", "ZPOPMIN", "ZPOPMAX",
         "ZUNIONSTORE", "ZINTERSTORE", "ZDIFFSTORE", "ZRANGESTORE", "ZMPOP", "ZINTERCARD",
         "SADD", "SREM", "SCARD", "SISMEMBER", "SMISMEMBER", "SINTERCARD", "SMOVE",
         "DEL", "EXISTS", "TYPE", "RENAME", "RENAMENX", "COPY", "PERSIST", "TOUCH", "UNLINK", "TTL",
         "SETBIT", "GETBIT", "BITCOUNT", "BITPOS", "BITOP", "BITFIELD", "BITFIELD_RO", "PFADD",
         "PFCOUNT", "ECHO", "DBSIZE", "ZUNION", "ZINTER", "ZDIFF", "ZREVRANGE", "GETEX", "SUBSTR",
         "EXPIRETIME", "PEXPIRETIME", "PTTL"]


def key_for(rng, name):
    """A key of the type NAME works on (so that not every reply is
    WRONGTYPE)."""
    if name in ("RPUSH", "RPUSHX", "RPOP", "RPOPLPUSH") or name[0] == "L" and name != "LCS":
        return rng.choice(["l1", "l2"])
    if name[0] == "H":
        return "h1"
    if name[0] == "Z":
        return rng.choice(["z1", "z2"])
    if name[0] == "S" and name not in ("SET", "SETNX", "SETRANGE", "SETBIT"):
        return rng.choice(["s1", "s2"])
    if name.startswith("PF"):
        return "p1"
    return rng.choice(["k1", "k2"])


def argument(rng, name):
    r = rng.random()
    if r < 0.2:
        return key_for(rng, name)
    if r < 0.3:
        return rng.choice(["k1", "l1", "h1", "z1", "s1", "x"])
    if r < 0.75:
        return rng.choice(VALUES)
    return rng.choice(WORDS)


plan(3)
rng = seeded_rng()
redis = start_redis()
zaris = start_zarisd(threads=2)
# a RESP2 and a RESP3 connection to each; every command goes to one pair
pairs = [(redis.client(), zaris.client()), (redis.client(), zaris.client())]
for c in pairs[1]:
    c.call("HELLO", "3")
rc, zc = pairs[0]
arity = {n: rc.call("COMMAND", "INFO", n).py()[0][1] for n in NAMES}
diffs, errors = [], 0
for i in range(COMMANDS):
    name = rng.choice(NAMES)
    a = arity[name]
    n = a - 1 if a > 0 else -a - 1 + rng.randrange(5)
    if rng.random() < 0.1:
        n = rng.randrange(7)
    args = [name] + [key_for(rng, name) if j == 0 else argument(rng, name) for j in range(n)]
    proto = rng.randrange(2)
    want = pairs[proto][0].call(*args).raw
    got = pairs[proto][1].call(*args).raw
    errors += want.startswith(b"-")
    if got != want:
        diffs.append((["RESP%d" % (proto + 2)] + args, want[:300], got[:300]))
        # start again from empty keyspaces, so one difference is not many
        rc.call("FLUSHALL")
        zc.call("FLUSHALL")
for args, want, got in diffs[:5]:
    diag("%r\n# redis-server: %r\n# zarisd:       %r" % (args, want, got))
is_(len(diffs), 0, "%d random commands: zarisd's replies are redis-server's" % COMMANDS)
ok(COMMANDS // 5 < errors < COMMANDS * 4 // 5,
   "the sweep had both errors (%d) and replies that are not errors" % errors)
is_(zc.call("DBSIZE").raw, rc.call("DBSIZE").raw, "the keyspaces end the same size")
for pair in pairs:
    for c in pair:
        c.close()
sys.exit(done_testing())
