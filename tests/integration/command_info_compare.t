#!/usr/bin/python3
# command_info_compare.t — the command table against redis-server 7.0.15.
#
#   * COMMAND INFO <name> of every command zarisd implements, top-level and
#     subcommand, raw bytes against redis-server's, in RESP2 and RESP3
#     (HELLO 3): arity, flags, the legacy first/last/step, ACL categories,
#     tips, key specs. A container's own fields are compared byte for byte
#     and its subcommands one by one: Redis lists them in the order of a
#     dict seeded at random on every start, so the container's raw reply
#     cannot be the same twice even on redis-server itself.
#   * The differences kept on purpose are the table KEPT below, each with
#     its reason, and are checked to be exactly that: redis-server knows no
#     such command (COMMAND INFO answers null for it). A command redis-server
#     has and zarisd lacks (CLIENT TRACKING, LATENCY GRAPH ...) is not
#     compared; they are listed as a note.
#   * COMMAND GETKEYS and COMMAND GETKEYSANDFLAGS for every command with
#     keys: the argument vectors of CASES (every such command must have
#     some), then a seeded sweep of random ones per command, raw replies
#     against redis-server's in RESP2 and RESP3: the keys the key specs
#     name, their flags (SET ... GET, BITFIELD's variable ones), the
#     fallback of a count that does not parse (Redis's atoi), the errors.
# Env: ZARIS_BUILD (zarisd's dir), ZARIS_SEED.

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from zaris import *  # noqa: E402,F403

# name -> why its COMMAND INFO differs from redis-server's
KEPT = {
    "metaput": "zarisd's own (per-key metadata, DESIGN.md 8.6): redis-server has no such command",
    "metaset": "zarisd's own (per-key metadata): redis-server has no such command",
    "metaget": "zarisd's own (per-key metadata): redis-server has no such command",
    "metascan": "zarisd's own (per-key metadata): redis-server has no such command",
    "metainvalidate": "zarisd's own (per-key metadata): redis-server has no such command",
    "cluster|settopology": "zarisd's own: the topology document its supervisor pushes (no cluster bus)",
    "cluster|lease": "zarisd's own: the write lease its supervisor grants",
    "cluster|topology": "zarisd's own: the topology document in force",
    "cluster|myshardid": "Redis 7.2's; redis-server 7.0.15 has none",
}

# Argument vectors for COMMAND GETKEYS / GETKEYSANDFLAGS, by command: the
# shapes that matter (counts that fit, do not fit or do not parse, option
# words that look like keys, variable key flags).
CASES = {
    "get": ["get k"], "set": ["set k v", "set k v GET", "set k v EX 10 get", "set k v NX"],
    "setnx": ["setnx k v"], "setex": ["setex k 10 v"], "psetex": ["psetex k 10 v"],
    "getset": ["getset k v"], "getdel": ["getdel k"], "getex": ["getex k PERSIST"],
    "mget": ["mget a b c"], "mset": ["mset a 1 b 2", "mset a 1 b"], "msetnx": ["msetnx a 1 b 2"],
    "incr": ["incr k"], "decr": ["decr k"], "incrby": ["incrby k 2"], "decrby": ["decrby k 2"],
    "incrbyfloat": ["incrbyfloat k 1.5"], "append": ["append k v"], "strlen": ["strlen k"],
    "getrange": ["getrange k 0 1"], "setrange": ["setrange k 0 v"], "substr": ["substr k 0 1"],
    "lcs": ["lcs a b", "lcs a b LEN"],
    "del": ["del a b c"], "unlink": ["unlink a"], "exists": ["exists a b"], "type": ["type k"],
    "expire": ["expire k 10 NX"], "pexpire": ["pexpire k 10"], "expireat": ["expireat k 10"],
    "pexpireat": ["pexpireat k 10"], "expiretime": ["expiretime k"], "pexpiretime": ["pexpiretime k"],
    "ttl": ["ttl k"], "pttl": ["pttl k"], "persist": ["persist k"], "rename": ["rename a b"],
    "renamenx": ["renamenx a b"], "copy": ["copy a b", "copy a b DB 1 REPLACE"], "touch": ["touch a b"],
    "move": ["move k 1"],
    "object|encoding": ["object encoding k"], "object|freq": ["object freq k"],
    "object|idletime": ["object idletime k"], "object|refcount": ["object refcount k"],
    "memory|usage": ["memory usage k", "memory usage k SAMPLES 5"],
    "hset": ["hset h f v"], "hsetnx": ["hsetnx h f v"], "hget": ["hget h f"], "hmset": ["hmset h f v"],
    "hmget": ["hmget h f g"], "hdel": ["hdel h f"], "hexists": ["hexists h f"], "hlen": ["hlen h"],
    "hkeys": ["hkeys h"], "hvals": ["hvals h"], "hgetall": ["hgetall h"], "hincrby": ["hincrby h f 1"],
    "hincrbyfloat": ["hincrbyfloat h f 1"], "hstrlen": ["hstrlen h f"], "hrandfield": ["hrandfield h 2"],
    "hscan": ["hscan h 0 MATCH x"],
    "sadd": ["sadd s m"], "srem": ["srem s m"], "sismember": ["sismember s m"],
    "smismember": ["smismember s m n"], "smembers": ["smembers s"], "scard": ["scard s"],
    "spop": ["spop s 2"], "srandmember": ["srandmember s"], "smove": ["smove a b m"],
    "sinter": ["sinter a b"], "sintercard": ["sintercard 2 a b LIMIT 1", "sintercard 3 a b", "sintercard 2x a b"],
    "sinterstore": ["sinterstore d a b"], "sunion": ["sunion a"], "sunionstore": ["sunionstore d a b"],
    "sdiff": ["sdiff a b"], "sdiffstore": ["sdiffstore d a"], "sscan": ["sscan s 0"],
    "zadd": ["zadd z 1 m"], "zincrby": ["zincrby z 1 m"], "zrem": ["zrem z m"], "zcard": ["zcard z"],
    "zscore": ["zscore z m"], "zmscore": ["zmscore z m n"], "zrank": ["zrank z m"],
    "zrevrank": ["zrevrank z m"], "zcount": ["zcount z 0 1"], "zlexcount": ["zlexcount z - +"],
    "zrange": ["zrange z 0 1", "zrange z 0 1 BYSCORE LIMIT 0 1"], "zrangestore": ["zrangestore d z 0 1"],
    "zrevrange": ["zrevrange z 0 1"], "zrangebyscore": ["zrangebyscore z 0 1"],
    "zrevrangebyscore": ["zrevrangebyscore z 1 0"], "zrangebylex": ["zrangebylex z - +"],
    "zrevrangebylex": ["zrevrangebylex z + -"], "zremrangebyrank": ["zremrangebyrank z 0 1"],
    "zremrangebyscore": ["zremrangebyscore z 0 1"], "zremrangebylex": ["zremrangebylex z - +"],
    "zpopmin": ["zpopmin z"], "zpopmax": ["zpopmax z 2"], "zrandmember": ["zrandmember z"],
    "zscan": ["zscan z 0"], "bzpopmin": ["bzpopmin a b 0"], "bzpopmax": ["bzpopmax a 0"],
    "bzmpop": ["bzmpop 0 2 a b MIN", "bzmpop 0 3 a b MAX", "bzmpop 0 0 a MIN"],
    "zmpop": ["zmpop 2 a b MIN COUNT 2", "zmpop -1 a MIN", "zmpop 1abc a MAX"],
    "zunion": ["zunion 2 a b WITHSCORES", "zunion 0 a"], "zinter": ["zinter 2 a b"],
    "zdiff": ["zdiff 1 a"], "zintercard": ["zintercard 2 a b LIMIT 2"],
    "zunionstore": ["zunionstore d 2 a b WEIGHTS 1 2", "zunionstore d 5 a b", "zunionstore d 2abc a b",
                    "zunionstore d 02 a b", "zunionstore d +2 a b"],
    "zinterstore": ["zinterstore d 1 a"], "zdiffstore": ["zdiffstore d 2 a b"],
    "lpush": ["lpush l a"], "rpush": ["rpush l a b"], "lpushx": ["lpushx l a"], "rpushx": ["rpushx l a"],
    "linsert": ["linsert l BEFORE a b"], "llen": ["llen l"], "lindex": ["lindex l 0"],
    "lrange": ["lrange l 0 1"], "lset": ["lset l 0 v"], "lrem": ["lrem l 0 v"], "ltrim": ["ltrim l 0 1"],
    "lpop": ["lpop l"], "rpop": ["rpop l 2"], "lpos": ["lpos l v RANK 1"], "lmove": ["lmove a b LEFT RIGHT"],
    "rpoplpush": ["rpoplpush a b"], "lmpop": ["lmpop 2 a b LEFT", "lmpop 0 a LEFT", "lmpop x a LEFT"],
    "blpop": ["blpop a b 0"], "brpop": ["brpop a 0"], "blmove": ["blmove a b LEFT RIGHT 0"],
    "brpoplpush": ["brpoplpush a b 0"], "blmpop": ["blmpop 0 2 a b LEFT COUNT 2", "blmpop 0 3 a LEFT"],
    "setbit": ["setbit k 0 1"], "getbit": ["getbit k 0"], "bitcount": ["bitcount k 0 1 BIT"],
    "bitpos": ["bitpos k 1"], "bitop": ["bitop AND d a b", "bitop NOT d a"],
    "bitfield": ["bitfield k GET u8 0", "bitfield k GET u8 0 SET u8 0 1", "bitfield k OVERFLOW SAT",
                 "bitfield k", "bitfield k get u8", "bitfield k INCRBY u8 0 1 GET u8 0"],
    "bitfield_ro": ["bitfield_ro k GET u8 0"],
    "pfadd": ["pfadd h a"], "pfcount": ["pfcount a b"], "pfmerge": ["pfmerge d a b", "pfmerge d"],
    "pfdebug": ["pfdebug GETREG k"],
    "watch": ["watch a b"],
    "eval": ["eval s 2 a b x", "eval s 0", "eval s 2abc a b", "eval s 3 a"],
    "evalsha": ["evalsha s 1 a"], "eval_ro": ["eval_ro s 1 a"], "evalsha_ro": ["evalsha_ro s 0 x"],
    "fcall": ["fcall f 1 k a"], "fcall_ro": ["fcall_ro f 0"],
    # not keys: shard channels ("The command has no key arguments")
    "ssubscribe": ["ssubscribe a b"], "sunsubscribe": ["sunsubscribe a"], "spublish": ["spublish c m"],
}
# and the errors around them
ERROR_CASES = ["ping", "nosuchcommand a", "get", "get a b", "object nosuch k", "config get x",
               "client list", "multi", "keys *", "flushall"]

WORDS = ["k", "a", "b", "0", "1", "2", "3", "-1", "2x", "01", "GET", "get", "SET", "u8", "COUNT",
         "LEFT", "DB", "STORE", "WEIGHTS", "LIMIT", "OVERFLOW", ""]


def entry_of(cl, name):
    """The COMMAND INFO entry of NAME (a Reply), or None when the server
    knows no such command."""
    r = cl.call("COMMAND", "INFO", name)
    e = r.value[0]
    return None if e.kind in ("$", "_") and e.value is None else e


def subcommands(entry):
    """{full name: raw entry} of a container's subcommands."""
    subs = entry.value[9].value or []
    return {s.value[0].value.decode(): s.raw for s in subs}


def header(entry):
    """An entry's raw bytes but its subcommands."""
    return b"".join(x.raw for x in entry.value[:9])


def compare_info(rc, zc, name):
    """None when NAME's COMMAND INFO is redis-server's on the connections
    RC and ZC (one protocol), else what differs. A container's own fields
    and its subcommands are compared apart (Redis's order is random); the
    subcommands redis-server has alone are not zarisd's to show, zarisd's
    own must be KEPT ones."""
    raw_r = rc.call("COMMAND", "INFO", name).raw
    raw_z = zc.call("COMMAND", "INFO", name).raw
    if raw_r == raw_z:
        return None
    er, ez = entry_of(rc, name), entry_of(zc, name)
    if er is None or ez is None or header(er) != header(ez):
        return "redis %r\n  zarisd %r" % (raw_r, raw_z)
    sr, sz = subcommands(er), subcommands(ez)
    if not sr and not sz:
        return "redis %r\n  zarisd %r" % (raw_r, raw_z)
    bad = [s for s in sz if s not in sr and s not in KEPT]
    bad += [s for s in sz if s in sr and sr[s] != sz[s]]
    return ("subcommands %s" % bad) if bad else None


def getkeys_replies(cl, argvs):
    cmds = []
    for a in argvs:
        cmds.append(("COMMAND", "GETKEYS") + tuple(a))
        cmds.append(("COMMAND", "GETKEYSANDFLAGS") + tuple(a))
    return [r.raw for r in cl.pipeline(cmds)]


def sweep(rng, name, arity, n):
    """N random argument vectors for NAME (a container's subcommand: both
    words) of its arity or a few words more."""
    words = name.split("|")
    base = max(abs(arity), 2)
    out = []
    for _ in range(n):
        argc = base if arity > 0 else base + rng.randrange(5)
        out.append([w.encode() for w in words] + [rng.choice(WORDS).encode() for _ in range(argc - len(words))])
    return out


def main():
    rng = seeded_rng()
    redis = start_redis()
    zarisd = start_zarisd(threads=2)
    rc2, zc2 = redis.client(), zarisd.client()
    rc3, zc3 = redis.client(), zarisd.client()
    for cl in (rc3, zc3):
        cl.callv("HELLO", "3")

    names, arity = [], {}
    for e in zc2.callv("COMMAND"):
        names.append(e[0].decode())
        arity[names[-1]] = e[1]
        for s in (e[9] if isinstance(e[9], list) else []):
            names.append(s[0].decode())
            arity[names[-1]] = s[1]
    names.sort()

    # COMMAND INFO of every command, both protocols
    same, differ, redis_only = 0, [], set()
    for name in names:
        if name in KEPT:
            continue
        why = [w for w in (compare_info(rc2, zc2, name), compare_info(rc3, zc3, name)) if w]
        if ok(not why, "COMMAND INFO %s: redis-server's bytes, RESP2 and RESP3" % name):
            same += 1
        else:
            differ.append(name)
            diag("  %s" % why[0])
        er = entry_of(rc2, name)
        if er is not None and "|" not in name:
            redis_only |= set(subcommands(er)) - set(names)
    for name, why in sorted(KEPT.items()):
        er, ez = entry_of(rc2, name), entry_of(zc2, name)
        ok(er is None and ez is not None and ez.value[0].value.decode() == name,
           "kept: %s (%s): redis-server has no such command, zarisd shows it" % (name, why))
    compared = len(names) - len(KEPT)
    note("COMMAND INFO: %d of %d commands identical to redis-server's; %d kept apart (KEPT); "
         "not compared, redis-server's alone: %s" % (same, compared, len(KEPT), " ".join(sorted(redis_only))))

    # COMMAND GETKEYS / GETKEYSANDFLAGS of every command with keys
    keyed = [n for n in names if n not in KEPT and (entry_of(zc2, n).value[8].value or [])]
    missing = [n for n in keyed if n not in CASES]
    ok(not missing, "every command with keys has GETKEYS cases (%d commands)" % len(keyed))
    if missing:
        diag("  no cases: %s" % " ".join(missing))
    for name in keyed:
        argvs = [split_args(line) for line in CASES.get(name, [])] + sweep(rng, name, arity[name], 12)
        bad = None
        for rc, zc, proto in ((rc2, zc2, "RESP2"), (rc3, zc3, "RESP3")):
            want, got = getkeys_replies(rc, argvs), getkeys_replies(zc, argvs)
            for i, (w, g) in enumerate(zip(want, got)):
                if w != g and bad is None:
                    bad = "%s %s %s: redis %r, zarisd %r" % (
                        proto, ("GETKEYS", "GETKEYSANDFLAGS")[i % 2],
                        b" ".join(argvs[i // 2]).decode("utf-8", "replace"), w, g)
        if not ok(bad is None, "COMMAND GETKEYS/GETKEYSANDFLAGS %s: %d argument vectors as redis-server"
                  % (name, len(argvs))):
            diag("  " + bad)
    errs = [split_args(line) for line in ERROR_CASES]
    for rc, zc, proto in ((rc2, zc2, "RESP2"), (rc3, zc3, "RESP3")):
        is_(getkeys_replies(zc, errs), getkeys_replies(rc, errs),
            "COMMAND GETKEYS/GETKEYSANDFLAGS of keyless, unknown and misfit commands (%s)" % proto)
    return done_testing()


main()
