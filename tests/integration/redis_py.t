#!/usr/bin/python3
# redis_py.t — zarisd driven by a real client library: Debian's python3-redis
# (4.3.4).  Strings, keys, expiry, pipelines, transactions (MULTI/EXEC, WATCH), every data type,
# errors as exceptions, many connections from one pool.  RESP3 is exercised
# only when the library supports it (redis-py >= 5 has protocol=3; 4.3.4 has
# not, so that part is skipped there).

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from zaris import *  # noqa: E402,F403

try:
    import redis
except ImportError:
    skip_all("python3-redis is not installed (apt-get install python3-redis)")


def raises(fn, exc, text=None):
    try:
        fn()
    except exc as e:
        return text is None or text in str(e)
    except Exception:
        return False
    return False


def strings(r):
    ok(r.ping(), "PING")
    ok(r.set("s:1", "hello"), "SET")
    is_(r.get("s:1"), b"hello", "GET")
    is_(r.get("s:none"), None, "GET of a missing key is None")
    ok(r.set("s:1", "x", nx=True) is None, "SET NX on an existing key does nothing")
    ok(r.set("s:2", "y", nx=True), "SET NX on a new key")
    ok(r.set("s:2", "z", xx=True), "SET XX on an existing key")
    is_(r.getset("s:2", "w"), b"z", "GETSET returns the old value")
    is_(r.append("s:1", " world"), 11, "APPEND returns the new length")
    is_(r.strlen("s:1"), 11, "STRLEN")
    is_(r.getrange("s:1", 0, 4), b"hello", "GETRANGE")
    is_(r.setrange("s:1", 6, "WORLD"), 11, "SETRANGE")
    is_(r.get("s:1"), b"hello WORLD", "SETRANGE changed the value")
    is_(r.incr("n"), 1, "INCR of a missing key")
    is_(r.incrby("n", 41), 42, "INCRBY")
    is_(r.decr("n"), 41, "DECR")
    is_(r.decrby("n", 40), 1, "DECRBY")
    is_(r.incrbyfloat("f", 1.5), 1.5, "INCRBYFLOAT")
    ok(raises(lambda: r.incr("s:1"), redis.ResponseError, "not an integer"), "INCR of a non-number raises")
    ok(r.mset({"m:1": "a", "m:2": "b", "m:3": "c"}), "MSET")
    is_(r.mget("m:1", "m:2", "nokey", "m:3"), [b"a", b"b", None, b"c"], "MGET with a missing key")
    is_(r.msetnx({"m:1": "z", "m:9": "z"}), False, "MSETNX with one existing key sets nothing")
    is_(r.get("m:9"), None, "MSETNX left the new key unset")
    is_(r.getdel("m:3"), b"c", "GETDEL")
    is_(r.exists("m:3"), 0, "GETDEL removed the key")
    binval = bytes(range(256)) * 4
    r.set(b"bin\x00key", binval)
    is_(r.get(b"bin\x00key"), binval, "binary key and value round-trip")
    big = b"v" * (1 << 20)
    r.set("big", big)
    is_(r.get("big"), big, "1 MB value round-trip")


def keys(r):
    r.flushdb()
    r.mset({"k:a": 1, "k:b": 2, "k:c": 3, "other": 4})
    is_(r.dbsize(), 4, "DBSIZE")
    is_(r.exists("k:a", "k:b", "nokey"), 2, "EXISTS counts")
    is_(sorted(r.keys("k:*")), [b"k:a", b"k:b", b"k:c"], "KEYS with a pattern")
    is_(sorted(r.scan_iter(match="k:*", count=2)), [b"k:a", b"k:b", b"k:c"], "scan_iter with MATCH and a small COUNT")
    is_(r.type("k:a"), b"string", "TYPE")
    is_(r.delete("k:a", "nokey"), 1, "DEL")
    is_(r.unlink("k:b"), 1, "UNLINK")
    ok(r.rename("k:c", "k:d"), "RENAME")
    ok(raises(lambda: r.rename("nokey", "x"), redis.ResponseError, "no such key"), "RENAME of a missing key raises")
    is_(r.renamenx("k:d", "other"), False, "RENAMENX onto an existing key")
    is_(r.ttl("k:d"), -1, "TTL without expiry is -1")
    is_(r.ttl("nokey"), -2, "TTL of a missing key is -2")
    ok(r.expire("k:d", 1000), "EXPIRE")
    t = r.ttl("k:d")
    ok(990 <= t <= 1000, "TTL after EXPIRE 1000 is about 1000 (%s)" % t)
    ok(r.expireat("k:d", 4102444800), "EXPIREAT")
    is_(r.execute_command("EXPIRETIME", "k:d"), 4102444800, "EXPIRETIME")
    ok(r.persist("k:d"), "PERSIST")
    is_(r.pttl("k:d"), -1, "PTTL after PERSIST")
    ok(r.set("tmp", "v", px=1), "SET PX 1")
    # The key expires 1 ms later; poll (bounded) instead of sleeping a fixed time.
    gone = False
    for _ in range(200):
        if r.get("tmp") is None:
            gone = True
            break
        time.sleep(0.01)
    ok(gone, "a key with PX 1 expires")
    ok(r.copy("k:d", "k:e"), "COPY")
    ok(r.move("k:e", 1), "MOVE to db 1")
    r1 = redis.Redis(port=r.connection_pool.connection_kwargs["port"], db=1)
    is_(r1.get("k:e"), b"3", "the moved key is in db 1 (a client with db=1 SELECTs it)")
    r1.flushdb()
    r1.close()
    ok(r.flushdb(), "FLUSHDB")
    is_(r.dbsize(), 0, "DBSIZE after FLUSHDB")
    is_(r.randomkey(), None, "RANDOMKEY of an empty db")


def pipelines(r):
    p = r.pipeline(transaction=False)
    for i in range(100):
        p.set("p:%d" % i, i)
    for i in range(100):
        p.get("p:%d" % i)
    p.incr("p:count")
    p.incr("p:0x")
    p.get("p:0")
    res = p.execute(raise_on_error=False)
    is_(res[:100], [True] * 100, "pipeline: 100 SETs")
    is_(res[100:200], [str(i).encode() for i in range(100)], "pipeline: 100 GETs in order")
    is_(res[200:203], [1, 1, b"0"], "pipeline: INCRs and a GET after them")
    p = r.pipeline(transaction=False)
    p.set("p:s", "x")
    p.incr("p:s")
    p.get("p:s")
    res = p.execute(raise_on_error=False)
    ok(res[0] is True and isinstance(res[1], redis.ResponseError) and res[2] == b"x",
       "pipeline: an error reply in the middle does not disturb the others")


def transactions(r):
    p = r.pipeline(transaction=True)
    p.set("t:1", "a")
    p.incr("t:n")
    p.get("t:1")
    is_(p.execute(), [True, 1, b"a"], "MULTI/EXEC pipeline")
    # optimistic locking with WATCH, the way applications write it
    r.set("t:bal", 10)

    def withdraw(pipe):
        bal = int(pipe.get("t:bal"))
        pipe.multi()
        pipe.set("t:bal", bal - 3)
    r.transaction(withdraw, "t:bal")
    is_(r.get("t:bal"), b"7", "WATCH/MULTI/EXEC through redis.transaction()")
    other = redis.Redis(connection_pool=r.connection_pool)
    with r.pipeline() as pipe:
        pipe.watch("t:bal")
        other.set("t:bal", 100)  # another connection changes the key
        pipe.multi()
        pipe.set("t:bal", 0)
        raises(pipe.execute, redis.WatchError)
    is_(r.get("t:bal"), b"100", "a watched key changed by another client aborts EXEC")
    p = r.pipeline(transaction=True)
    p.set("t:s", "x")
    p.incr("t:s")
    p.get("t:s")
    res = p.execute(raise_on_error=False)
    ok(res[0] is True and isinstance(res[1], redis.ResponseError) and res[2] == b"x",
       "an error inside EXEC stays in its slot")


def types(r):
    # hashes: a session store
    r.hset("sess:1", mapping={"user": "ann", "visits": 1})
    r.hincrby("sess:1", "visits", 2)
    is_(r.hgetall("sess:1"), {b"user": b"ann", b"visits": b"3"}, "hash: HSET mapping, HINCRBY, HGETALL")
    is_(sorted(r.hkeys("sess:1")), [b"user", b"visits"], "hash: HKEYS")
    # lists: a job queue with a blocking pop
    r.rpush("jobs", "j1", "j2")
    is_(r.blpop("jobs", timeout=1), (b"jobs", b"j1"), "list: BLPOP gets the oldest job")
    is_(r.lrange("jobs", 0, -1), [b"j2"], "list: LRANGE")
    is_(r.blpop("empty-queue", timeout=1), None, "list: BLPOP times out with None")
    # sets: feature flags
    r.sadd("flags", "a", "b", "c")
    is_(r.smembers("flags"), {b"a", b"b", b"c"}, "set: SADD, SMEMBERS")
    is_(r.sismember("flags", "b"), True, "set: SISMEMBER")
    r.sadd("flags2", "b", "c", "d")
    is_(r.sinter("flags", "flags2"), {b"b", b"c"}, "set: SINTER")
    # sorted sets: a leaderboard
    r.zadd("board", {"ann": 10, "bob": 30, "cid": 20})
    r.zincrby("board", 15, "ann")
    is_(r.zrevrange("board", 0, 1, withscores=True), [(b"bob", 30.0), (b"ann", 25.0)],
        "zset: ZADD, ZINCRBY, ZREVRANGE WITHSCORES")
    is_(r.zrank("board", "cid"), 0, "zset: ZRANK")
    # rate limiter: INCR + EXPIRE in one transaction
    p = r.pipeline(transaction=True)
    p.incr("rl:ann")
    p.expire("rl:ann", 60)
    is_(p.execute(), [1, True], "rate limiter: INCR + EXPIRE in MULTI")
    ok(0 < r.ttl("rl:ann") <= 60, "rate limiter key has its TTL")
    # bitmaps and HyperLogLog: analytics
    r.setbit("seen", 7, 1)
    r.setbit("seen", 100, 1)
    is_(r.bitcount("seen"), 2, "bitmap: SETBIT, BITCOUNT")
    r.pfadd("uv", *["u%d" % i for i in range(1000)])
    n = r.pfcount("uv")
    ok(980 <= n <= 1020, "HyperLogLog: PFCOUNT of 1000 distinct is %d" % n)
    # pub/sub: cache invalidation fan-out
    ps = r.pubsub()
    ps.subscribe("inval")
    is_(ps.get_message(timeout=2)["type"], "subscribe", "pub/sub: subscribe confirmation")
    is_(r.publish("inval", "key:1"), 1, "pub/sub: PUBLISH reaches one subscriber")
    m = ps.get_message(timeout=2)
    is_((m["type"], m["channel"], m["data"]) if m else None, ("message", b"inval", b"key:1"),
        "pub/sub: the subscriber gets the message")
    ps.close()
    is_(r.type("board"), b"zset", "TYPE of a sorted set")


def pool(r):
    port = r.connection_pool.connection_kwargs["port"]
    pool_ = redis.ConnectionPool(port=port, max_connections=50)
    clients = [redis.Redis(connection_pool=pool_) for _ in range(50)]
    conns = [pool_.get_connection("PING") for _ in range(50)]
    for i, c in enumerate(conns):
        c.send_command("SET", "pool:%d" % i, i)
    good = all(c.read_response() == b"OK" for c in conns)
    for c in conns:
        pool_.release(c)
    ok(good, "50 connections from one pool each SET a key")
    is_(clients[0].mget(["pool:%d" % i for i in range(50)]), [str(i).encode() for i in range(50)],
        "all 50 keys are there")
    pool_.disconnect()


def resp3(port):
    try:
        r3 = redis.Redis(port=port, protocol=3)
    except TypeError:
        ok(True, "# SKIP redis-py %s has no RESP3 support" % redis.__version__)
        return
    r3.set("r3", "v")
    is_(r3.get("r3"), b"v", "RESP3 GET")


def main():
    z = start_zarisd(threads=2)
    diag("zarisd: %s; redis-py %s" % (" ".join(z.argv), redis.__version__))
    r = redis.Redis(host="127.0.0.1", port=z.port, socket_timeout=30)
    sections = (("strings", lambda: strings(r)), ("keys", lambda: keys(r)),
                ("pipelines", lambda: pipelines(r)), ("transactions", lambda: transactions(r)),
                ("types", lambda: types(r)), ("pool", lambda: pool(r)),
                ("resp3", lambda: resp3(z.port)))
    for name, fn in sections:
        try:
            fn()
        except redis.RedisError as e:
            ok(False, "%s: redis-py raised %s: %s" % (name, type(e).__name__, e))
            if not z.alive():
                diag(z.log_tail())
                z.restart()
                r = redis.Redis(host="127.0.0.1", port=z.port, socket_timeout=30)
    ok(z.alive(), "zarisd is still running")
    r.close()
    done_testing()


if __name__ == "__main__":
    main()
