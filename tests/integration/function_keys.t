#!/usr/bin/python3
# function_keys.t — FCALL's keys and locks (zarisd, 2 workers), as EVAL's:
# a function reads and writes its declared keys; a key it did not declare,
# or a command that needs every shard, is refused unless the function is
# flagged allow-undeclared-keys (then it runs with every shard lock, counted
# in INFO); FCALL_RO and the no-writes flag refuse writes with Redis's text
# (compared with redis-server); the library registry is the server's: a
# library loaded, replaced or deleted from one worker's connection is what
# FCALL on the other worker's sees at once; two functions on keys of
# different shards run at the same time on the two workers (each sees the
# other's key while it runs); cluster mode: the declared keys must share a
# slot (CROSSSLOT), a call outside it is refused, no-cluster refuses the
# function; INFO's command and error counts after functions, as redis-server.

import binascii
import hashlib
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from zaris import *  # noqa: E402,F403

LIB = """#!lua name=keys
redis.register_function('get1', function(keys) return redis.call('get', keys[1]) end)
redis.register_function('set1', function(keys, args) return redis.call('set', keys[1], args[1]) end)
redis.register_function('get_other', function(keys, args) return redis.call('get', args[1]) end)
redis.register_function('dbsize', function() return redis.call('dbsize') end)
redis.register_function{function_name='get_any', callback=function(keys, args) return redis.call('get', args[1]) end,
  flags={'allow-undeclared-keys'}}
"""
# redis-server has no allow-undeclared-keys: the read-only checks' own library
LIB_RO = """#!lua name=ro
redis.register_function('set1', function(keys, args) return redis.call('set', keys[1], args[1]) end)
redis.register_function{function_name='ro_set', callback=function(keys) return redis.call('set', keys[1], 'x') end,
  flags={'no-writes'}}
redis.register_function{function_name='ro_get', callback=function(keys) return redis.call('get', keys[1]) end,
  flags={'no-writes'}}
"""

UNDECLARED = ("ERR Script attempted to access key 'other', which was not declared in KEYS (declare it, or flag "
              "the script allow-undeclared-keys) script: get_other, on @user_function:4.")


def key_in_half(prefix, upper):
    """A key whose slot is in the lower or upper half of the 16384: two such
    keys are in different shards for any shard-bits above 0."""
    for i in range(1000):
        k = "%s:%d" % (prefix, i)
        if (binascii.crc_hqx(k.encode(), 0) % 16384 >= 8192) == upper:
            return k
    raise RuntimeError("no key found")


def all_locked(c):
    for line in c.call("INFO", "stats").py().decode().split("\r\n"):
        if line.startswith("scripts_all_shards_locked:"):
            return int(line.split(":")[1])
    return None


def readonly_replies(srv):
    c = srv.client()
    c.call("FUNCTION", "FLUSH")
    c.call("FUNCTION", "LOAD", LIB_RO)
    c.call("SET", "k", "v")
    out = [c.call(*cmd).raw for cmd in (("FCALL_RO", "set1", "1", "k", "w"), ("FCALL", "ro_set", "1", "k"),
                                        ("FCALL_RO", "ro_get", "1", "k"), ("FCALL_RO", "ro_set", "1", "k"),
                                        ("GET", "k"))]
    c.close()
    return out


z = start_zarisd(threads=2)
c = z.client()
is_(c.call("FUNCTION", "LOAD", LIB).raw, b"$4\r\nkeys\r\n", "the library loads")
is_(c.call("FCALL", "set1", "1", "k", "v").raw, b"+OK\r\n", "a declared key is written")
is_(c.call("FCALL", "get1", "1", "k").raw, b"$1\r\nv\r\n", "and read")
c.call("SET", "other", "o")
r = c.call("FCALL", "get_other", "1", "k", "other")
is_(r.value if r.is_error() else r.raw, UNDECLARED, "a key not in KEYS is refused, naming the key and the function")
r = c.call("FCALL", "dbsize", "0")
ok(r.is_error() and "which needs every shard" in str(r.value), "DBSIZE (every shard) refused: %s" % r.value)
before = all_locked(c)
is_(c.call("FCALL", "get_any", "1", "k", "other").raw, b"$1\r\no\r\n", "allow-undeclared-keys: any key is read")
is_(all_locked(c), (before or 0) + 1, "the run with every shard lock is counted in INFO")

# FCALL_RO and no-writes: Redis's texts
want = readonly_replies(start_redis())
got = readonly_replies(z)
ok(want[0] == b"-ERR Can not execute a script with write flag using *_ro command.\r\n",
   "redis-server refuses FCALL_RO's write (the test reads it right): %r" % want[0])
for cmd, w, g in zip(("FCALL_RO set1", "FCALL ro_set", "FCALL_RO ro_get", "FCALL_RO ro_set", "GET k"), want, got):
    is_(g, w, "%s as redis-server" % cmd)

# INFO's command and error counts after functions ran, failed and were
# refused (calls, rejected_calls, failed_calls; errorstats)
STATS_STEPS = [
    ("FUNCTION", "LOAD", "#!lua name=st\nredis.register_function('ok', function(k) return redis.call('set', k[1], 'v') end)\n"
     "redis.register_function('bad', function() error('x') end)\n"
     "redis.register_function{function_name='ro', callback=function(k) return redis.call('get', k[1]) end, "
     "flags={'no-writes'}}"),
    ("FCALL", "ok", "1", "k"), ("FCALL", "bad", "0"), ("FCALL", "nosuch", "0"), ("FCALL_RO", "ok", "1", "k"),
    ("FCALL_RO", "ro", "1", "k"), ("FUNCTION", "LOAD", "junk"), ("FUNCTION", "LIST"), ("FUNCTION", "DELETE", "nope"),
    ("FCALL", "ok", "x"), ("FUNCTION", "DELETE", "st"),
]


def stats_after(srv):
    cl = srv.client()
    cl.call("CONFIG", "RESETSTAT")
    for st in STATS_STEPS:
        cl.call(*st)
    text = cl.call("INFO", "commandstats").py().decode() + cl.call("INFO", "errorstats").py().decode()
    cl.close()
    out = {}
    for line in text.split("\r\n"):
        if line.startswith(("cmdstat_f", "cmdstat_set", "cmdstat_get", "errorstat_")):
            name, _, val = line.partition(":")
            out[name] = re.sub(r"usec=\d+,usec_per_call=[\d.]+,", "", val)
    return out


want = stats_after(start_redis())
got = stats_after(z)
ok(want.get("cmdstat_fcall") == "calls=4,rejected_calls=0,failed_calls=3",
   "redis-server counts the FCALLs (the test reads it right): %r" % want.get("cmdstat_fcall"))
for name in sorted(set(want) | set(got)):
    is_(got.get(name), want.get(name), "INFO after functions: %s as redis-server" % name)

# the registry from the other worker
c.call("FUNCTION", "FLUSH")
b = client_on_other_worker(z, c)
is_(c.call("FUNCTION", "LOAD", "#!lua name=x\nredis.register_function('v', function() return 1 end)").raw,
    b"$1\r\nx\r\n", "loaded on one worker")
is_(b.call("FCALL", "v", "0").raw, b":1\r\n", "called on the other")
is_(b.call("FUNCTION", "LOAD", "REPLACE", "#!lua name=x\nredis.register_function('v', function() return 2 end)").raw,
    b"$1\r\nx\r\n", "replaced on the other")
is_(c.call("FCALL", "v", "0").raw, b":2\r\n", "the first worker runs the new version")
is_(b.call("FCALL", "v", "0").raw, b":2\r\n", "and so does the other")
is_(c.call("FUNCTION", "DELETE", "x").raw, b"+OK\r\n", "deleted on the first")
is_(b.call("FCALL", "v", "0").raw, b"-ERR Function not found\r\n", "gone on the other")

# two functions on keys of different shards at once (one per worker): each
# writes its key, then polls INFO keyspace (no key, no lock) until it sees
# both keys or its bound runs out; only running together can both see both
SPIN = """#!lua name=spin
redis.register_function('spin', function(keys, args)
  redis.call('SET', keys[1], args[1])
  for i = 1, tonumber(args[2]) do
    local info = redis.call('INFO', 'keyspace')
    if tonumber(string.match(info, 'db0:keys=(%d+)') or '0') >= 2 then return 'saw the other' end
  end
  return 'gave up'
end)"""
c.call("FLUSHALL")
c.call("CONFIG", "SET", "busy-reply-threshold", "600000")
is_(c.call("FUNCTION", "LOAD", SPIN).raw, b"$4\r\nspin\r\n", "the spinning library")
ka, kb = key_in_half("spin", False), key_in_half("spin", True)
c.send("FCALL", "spin", "1", ka, "a", "300000")
b.send("FCALL", "spin", "1", kb, "b", "300000")
ra, rb = c.read_reply().raw, b.read_reply().raw
is_((ra, rb), (b"$13\r\nsaw the other\r\n",) * 2, "two functions on two shards ran at the same time")
c.close()
b.close()

# cluster mode
srv = start_zarisd(threads=2, extra=["--cluster-enabled", "yes"])
cc = srv.client()
nid = hashlib.sha1(b"function-keys/n0").hexdigest()
doc = "epoch 1\ncluster function-keys\nmyself %s\nnode %s n0 127.0.0.1 %d primary 0-16383\n" % (nid, nid, srv.port)
is_(cc.call("CLUSTER", "SETTOPOLOGY", doc).raw, b"+OK\r\n", "cluster: one node owning every slot")
cc.call("FUNCTION", "LOAD", LIB)
cc.call("FUNCTION", "LOAD", "#!lua name=nc\nredis.register_function{function_name='nc', callback=function() return 1 end, "
        "flags={'no-cluster'}}")
is_(cc.call("FCALL", "set1", "1", "{t}a", "v").raw, b"+OK\r\n", "cluster: a declared key")
is_(cc.call("FCALL", "get1", "2", "a", "b").raw, b"-CROSSSLOT Keys in request don't hash to the same slot\r\n",
    "cluster: declared keys of two slots: CROSSSLOT")
r = cc.call("FCALL", "get_any", "1", "{t}a", "other")
ok(r.is_error() and str(r.value).startswith(
    "ERR Script attempted to access keys that do not hash to the same slot script: get_any"),
   "cluster: a call outside the slot: %s" % r.value)
is_(cc.call("FCALL", "nc", "0").raw, b"-ERR Can not run script on cluster, 'no-cluster' flag is set.\r\n",
    "cluster: no-cluster refused")
cc.close()
sys.exit(done_testing())
