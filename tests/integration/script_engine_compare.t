#!/usr/bin/python3
# script_compare.t — EVAL / EVALSHA / EVAL_RO / SCRIPT against redis-server
# and zarisd, raw replies compared, over RESP2 and RESP3 (HELLO 3 on the
# connection; redis.setresp(3) inside the script).
#
# Covered: the Lua -> RESP conversions (integers, floats cut to integers,
# strings, booleans, nil, arrays cut at the first nil, nested arrays, the
# {ok=} and {err=} tables, redis.status_reply / error_reply, double,
# big_number, map, set, verbatim_string tables), RESP -> Lua through
# redis.call (status, error, nil bulk, arrays, and with setresp(3) the
# RESP3 map, set, double, null and boolean of HGETALL, SMEMBERS, ZSCORE,
# GET, ...), redis.call / pcall errors with Redis's "script: <sha>, on
# @user_script:N." text, the sandbox (nonexistent globals, read-only
# globals and libraries, no os / print / dofile / loadfile), argument
# conversion (numbers as %.17g, tables refused), EVAL's argument errors,
# EVALSHA's NOSCRIPT, SCRIPT LOAD / EXISTS / FLUSH, shebang flags and their
# errors, EVAL_RO, the commands a script may not run, and the OOM rules
# (first growing write refused, allow-oom, no-writes).
#
# The scripts touch keys they do not declare, as Redis allows: zarisd runs
# with allow-undeclared-keys yes here (script_keys.t has the refusal).

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from zaris import *  # noqa: E402,F403

RETURNS = [
    "return 1", "return -7", "return 3.99", "return -3.99", "return 'str'", "return ''",
    "return true", "return false", "return nil", "return {}", "return {1,2,3,'x',nil,4}",
    "return {1,{2,{3,'deep'}},'z'}", "return {ok='FINE'}", "return {ok='two\\r\\nlines'}",
    "return {err='My Error'}", "return {err='ERR with code'}", "return {err='-X leading dash'}",
    "return redis.status_reply('PONG')", "return redis.error_reply('My Error')",
    "return redis.error_reply('-WRONG code kept')", "return redis.error_reply()",
    "return {double=3.5}", "return {double=-0.25}", "return {double=1e300}",
    "return {big_number='1234567890123456789012345678901234567890'}",
    "return {map={a=1}}", "return {set={x=true}}",
    "return {verbatim_string={format='txt', string='hello'}}",
    "return {1, true, false, 'a'}", "return {{ok='in array'}, {err='ERR in array'}}",
    "return 1e20", "return 2^53", "return 0/0",
    "return redis.sha1hex('abc')", "return redis.REDIS_VERSION_NUM > 0",
    "return type(redis.call)", "return redis.replicate_commands()", "return redis.breakpoint()",
    "return tostring(KEYS[1]) .. tostring(ARGV[1])", "return #KEYS + #ARGV",
    "return {KEYS[1], KEYS[2], ARGV[1]}",
]

ERRORS = [
    "return x", "x = 1", "redis.call = nil", "string.foo = 1", "_G.y = 2", "return os",
    "return print", "return dofile", "return loadfile", "return type(loadstring)",
    "error('boom')", "error({err='ERR table error'})", "error()", "local t = nil; return t.x",
    "return 1 +", "return redis.call()", "return redis.call('nosuch')", "return redis.call('get')",
    "return redis.call('eval', 'return 1', 0)", "return redis.call('multi')",
    "return redis.call('get', {})", "return redis.pcall('nosuch')", "return redis.pcall()",
    "return redis.call('incr', 'str')", "return redis.pcall('incr', 'str')",
    "return pcall(function() redis.call('nosuch') end)",
    "local ok, e = pcall(function() redis.call('incr', 'str') end); return e",
    "return redis.setresp(4)", "return redis.setresp()", "return redis.log()",
    "return redis.log('x', 'y')", "return redis.log(99, 'y')", "return redis.set_repl(99)",
    "return redis.set_repl()", "return redis.sha1hex()", "return rawset(_G, 'z', 1)",
    "return setmetatable(_G, {})", "return math.random(0)",
    "getmetatable('').__index.upper = nil", "getmetatable('').__index = nil",
    "return type(getmetatable(_G))", "return type(getmetatable(_G).__index)",
    "getmetatable(_G).__index = nil", "setfenv(0, {})", "return getfenv", "return newproxy",
    "local n = 0 for k, v in pairs(redis) do n = n + 1 end return n",
    "local n = 0 for k, v in pairs(string) do n = n + 1 end return n",
    "return ('abc'):upper()", "return type(__redis__err__handler)", "return next({})",
]

CALLS = [
    "return redis.call('set', KEYS[1], ARGV[1])", "return redis.call('get', KEYS[1])",
    "return redis.call('get', 'nokey')", "return redis.call('incr', 'n')",
    "return redis.call('set', 'f', 3.14159265358979)", "return redis.call('get', 'f')",
    "return redis.call('set', 'i', 10)", "return redis.call('incrby', 'i', 5)",
    "return redis.call('rpush', 'l', 'a', 'b', 'c')", "return redis.call('lrange', 'l', 0, -1)",
    "return redis.call('hset', 'h', 'f1', 'v1', 'f2', 'v2')", "return redis.call('hgetall', 'h')",
    "return redis.call('sadd', 's', 'm')", "return redis.call('smembers', 's')",
    "return redis.call('zadd', 'z', 1.5, 'a')", "return redis.call('zscore', 'z', 'a')",
    "return redis.call('zrange', 'z', 0, -1, 'withscores')", "return redis.call('type', 'h')",
    "return redis.call('exists', 'h', 'nokey')", "return redis.call('ping')",
    "return redis.call('echo', 'hi')", "return redis.call('mget', 'i', 'nokey', 'f')",
    "return redis.call('lpop', 'nolist')", "return redis.call('blpop', 'nolist', 0)",
    "return redis.pcall('hget', 'l', 'x')", "return redis.call('select', 1)",
    "redis.call('select', 1); redis.call('set', 'db1', 'x'); return redis.call('get', 'db1')",
    "return redis.call('get', 'db1')",
    "return redis.call('del', 'i', 'f')",
]

RESP3 = [
    "redis.setresp(3); return redis.call('hgetall', 'h')",
    "redis.setresp(3); return redis.call('smembers', 's')",
    "redis.setresp(3); return redis.call('zscore', 'z', 'a')",
    "redis.setresp(3); return redis.call('get', 'nokey')",
    "redis.setresp(3); local r = redis.call('hgetall', 'h'); return r['map']['f1']",
    "redis.setresp(3); local r = redis.call('zscore', 'z', 'a'); return {double=r['double']}",
    "redis.setresp(3); return redis.call('exists', 'h')",
    "redis.setresp(3); return true", "redis.setresp(3); return false",
    "redis.setresp(3); return {1, true, false}",
    "redis.setresp(3); return redis.call('zrange', 'z', 0, -1, 'withscores')",
    "redis.setresp(3); return redis.call('ping')",
    "redis.setresp(3); return redis.call('lrange', 'l', 0, -1)",
]

SHEBANG = [
    "#!lua\nreturn 1", "#!lua flags=no-writes\nreturn redis.call('get', 'k')",
    "#!lua flags=no-writes\nreturn redis.call('set', 'k', 'v')",
    "#!lua flags=allow-oom,allow-stale\nreturn 2", "#!lua flags=\nreturn 3",
    "#!lua flags=bogus\nreturn 1", "#!lua", "#!py\nreturn 1", "#!lua other=1\nreturn 1",
    "#!lua flags=no-writes,bogus\nreturn 1", "#!lua\nreturn x",
]


def steps(c, cmds):
    return [c.call(*cmd).raw for cmd in cmds]


def scenarios(srv):
    out = []
    for resp in (2, 3):
        c = srv.client()
        if resp == 3:
            c.call("HELLO", "3")
        c.call("FLUSHALL")
        c.call("SET", "str", "notanumber")
        tag = "RESP%d " % resp
        out.append((tag + "Lua -> RESP replies",
                    steps(c, [("EVAL", s, 2, "k1", "k2", "a1") for s in RETURNS])))
        out.append((tag + "errors and the sandbox", steps(c, [("EVAL", s, 0) for s in ERRORS])))
        out.append((tag + "redis.call replies (RESP2 inside the script)",
                    steps(c, [("EVAL", s, 1, "k", "v") for s in CALLS])))
        out.append((tag + "redis.setresp(3) replies", steps(c, [("EVAL", s, 0) for s in RESP3])))
        out.append((tag + "shebang flags", steps(c, [("EVAL", s, 0) for s in SHEBANG])))
        out.append((tag + "EVAL_RO", steps(c, [
            ("EVAL_RO", "return redis.call('get', KEYS[1])", 1, "k"),
            ("EVAL_RO", "return redis.call('set', KEYS[1], 'x')", 1, "k"),
            ("EVAL_RO", "#!lua flags=no-writes\nreturn 1", 0),
            ("EVAL_RO", "#!lua\nreturn 1", 0),
            ("EVALSHA_RO", "0" * 40, 0),
        ])))
        out.append((tag + "argument errors", steps(c, [
            ("EVAL", "return 1", -1), ("EVAL", "return 1", 2, "a"), ("EVAL", "return 1", "x"),
            ("EVAL", "return 1"), ("EVALSHA", "abc", 0), ("EVALSHA", "F" * 40, 0),
            ("EVAL", "return 1", "1.5", "a"),
        ])))
        body = "return {KEYS[1], ARGV[1], %d}" % resp
        out.append((tag + "SCRIPT LOAD, EVALSHA, EXISTS, FLUSH", steps(c, [
            ("SCRIPT", "LOAD", body), ("EVALSHA", zr_sha1(body), 1, "kk", "aa"),
            ("EVALSHA", zr_sha1(body).upper(), 1, "kk", "aa"),
            ("SCRIPT", "EXISTS", zr_sha1(body), "0" * 40, "short"),
            ("SCRIPT", "FLUSH"), ("SCRIPT", "EXISTS", zr_sha1(body)),
            ("EVALSHA", zr_sha1(body), 1, "kk", "aa"), ("EVAL", body, 1, "kk", "aa"),
            ("EVALSHA", zr_sha1(body), 1, "kk", "aa"), ("SCRIPT", "FLUSH", "ASYNC"),
            ("SCRIPT", "FLUSH", "SYNC"), ("SCRIPT", "FLUSH", "bad"), ("SCRIPT", "LOAD", "return +"),
            ("SCRIPT", "LOAD", "#!lua flags=bogus\nreturn 1"), ("SCRIPT", "KILL"), ("SCRIPT", "HELP"),
            ("SCRIPT", "NOSUCH"), ("SCRIPT",),
        ])))
        c.close()
    # over maxmemory (noeviction): a script's first write of a growing
    # command is refused, a flagged script without allow-oom does not run
    c = srv.client()
    c.call("SET", "pre", "1")
    c.call("CONFIG", "SET", "maxmemory", "1")
    out.append(("over maxmemory", steps(c, [
        ("EVAL", "return redis.call('get', KEYS[1])", 1, "pre"),
        ("EVAL", "return redis.call('set', KEYS[1], 'x')", 1, "pre"),
        ("EVAL", "return redis.pcall('set', KEYS[1], 'x')", 1, "pre"),
        ("EVAL", "return redis.call('del', KEYS[1])", 1, "nokey"),
        ("EVAL", "#!lua\nreturn redis.call('get', KEYS[1])", 1, "pre"),
        ("EVAL", "#!lua flags=no-writes\nreturn redis.call('get', KEYS[1])", 1, "pre"),
        ("EVAL", "#!lua flags=allow-oom\nreturn redis.call('set', KEYS[1], 'y')", 1, "pre"),
        ("EVAL_RO", "#!lua\nreturn 1", 0),
        ("MULTI",), ("EVAL", "#!lua\nreturn 1", 0), ("EXEC",),
        ("GET", "pre"),
    ])))
    c.call("CONFIG", "SET", "maxmemory", "0")
    c.close()
    return out


def zr_sha1(s):
    import hashlib
    return hashlib.sha1(s.encode()).hexdigest()


want = scenarios(start_redis())
got = scenarios(start_zarisd(threads=2, extra=["--allow-undeclared-keys", "yes"]))
plan(len(want))
for (name, w), (_, g) in zip(want, got):
    if not ok(w == g, name):
        diag_steps(w, g)
sys.exit(done_testing())
