"""cmdgen — random commands for the seeded sweeps that compare zarisd with
redis-server (command_fuzz.t, notify_fuzz.t).

random_command(rng, arity) gives one argv: a command of NAMES, nine times
in ten with the argument count its arity allows (ARITY maps each name to
redis-server's COMMAND INFO arity: arities(client)), the first argument a
key of the command's type, the others a mix of keys, edge values and
option words. NAMES holds only commands whose replies Redis fixes: no
SMEMBERS/SPOP/RANDOMKEY..., no hash or set listings (their order is
Redis's hashtable order once a value grows past 64 bytes), and nothing
that sets a relative TTL (a key expiring between the two servers' calls
would make them differ for no fault of either). UNORDERED are the
listings among those (SMEMBERS, SUNION, HGETALL ...), for a caller that
compares them with unordered_form.
"""

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
         "EXPIRETIME", "PEXPIRETIME", "PTTL", "SUNIONSTORE", "SINTERSTORE", "SDIFFSTORE"]
# Replies whose element order Redis leaves open: compared as sorted
# listings (unordered_form), never byte for byte.
UNORDERED = ["SMEMBERS", "SUNION", "SINTER", "SDIFF", "HGETALL", "HKEYS", "HVALS"]


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


def arities(client):
    """{name: arity} of NAMES and UNORDERED, from CLIENT's COMMAND INFO."""
    return {n: client.call("COMMAND", "INFO", n).py()[0][1] for n in NAMES + UNORDERED}


def unordered_form(reply):
    """REPLY (a zaris.Reply) with the order of its elements taken out: the
    type byte and the sorted raw elements (map entries as pairs); the raw
    bytes for anything that is not an aggregate."""
    if reply.kind in ("*", "~") and reply.value is not None:
        return reply.kind, sorted(x.raw for x in reply.value)
    if reply.kind == "%":
        return reply.kind, sorted((a.raw, b.raw) for a, b in reply.value)
    return reply.raw


def random_command(rng, arity, names=NAMES):
    """One argv of a random command of NAMES (ARITY from arities())."""
    name = rng.choice(names)
    a = arity[name]
    n = a - 1 if a > 0 else -a - 1 + rng.randrange(5)
    if rng.random() < 0.1:
        n = rng.randrange(7)
    return [name] + [key_for(rng, name) if j == 0 else argument(rng, name) for j in range(n)]
