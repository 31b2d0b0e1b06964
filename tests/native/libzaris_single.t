#!/usr/bin/python3
# libzaris_single.t — libzaris against one real zarisd (no cluster): every
# operation's result compared with the RESP3 reply the same server gives
# the Redis command it stands for, from the same starting state (set up
# over RESP, once for each side); SET's flags, TTL and metadata; db
# numbers; COMMAND (maps, doubles, errors, a refused MULTI); pipelined
# batches in flight together; a request timing out on a zarisd stopped
# with SIGSTOP; reconnecting after kill -9 and a restart on the same ports.
import os
import signal
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
sys.path.insert(0, HERE)
from zaris import Reply, diag, done_testing, is_, ok, skip_all, start_zarisd, stop_process  # noqa: E402
import zdriver  # noqa: E402

if not os.access(zdriver.driver_path(), os.X_OK):
    skip_all("no %s (make builds it)" % zdriver.driver_path())

srv = start_zarisd(native=True)
native = srv.native_port
r = srv.client()
is_(r.call("HELLO", "3").kind, "%", "a RESP3 client beside")
d = zdriver.Driver()
rc, text = d.connect(port=native, timeout=5000, rmin=20, rmax=200)
is_((rc, text), (0, "single"), "connect to the native port: not cluster mode")


def setup(cmds):
    r.call("FLUSHALL")
    for c in cmds:
        rep = r.call(*c)
        assert not rep.is_error(), (c, rep)


def unversioned(rep):
    """REP without METAGET's "version" (a counter that moves on every write)."""
    if isinstance(rep, Reply) and rep.kind == "%":
        return Reply("%", [(k, v) for k, v in rep.value if k.value != b"version"])
    return rep


def same(name, setup_cmds, op, resp_cmd, status=0, after=None):
    """OP (verb, args, opts) natively and RESP_CMD over RESP, each from
    SETUP_CMDS: equal replies; AFTER (a RESP command) reads the same too."""
    setup(setup_cmds)
    st, got = d.one(op[0], *op[1], **(op[2] if len(op) > 2 else {}))
    after_n = r.call(*after) if after else None
    setup(setup_cmds)
    want = r.call(*resp_cmd)
    after_r = r.call(*after) if after else None
    got, want, after_n, after_r = map(unversioned, (got, want, after_n, after_r))
    good = st == status and got == want and after_n == after_r
    ok(good, "%s: %r" % (name, want))
    if not good:
        diag("native: status %s %r (after %r); RESP: %r (after %r)" % (st, got, after_n, want, after_r))


K = [("SET", "k", "v1")]
same("GET", K, ("get", [b"k"]), ("GET", "k"))
same("GET missing", [], ("get", [b"k"]), ("GET", "k"))
same("GET binary", [("SET", b"k\x00\r\n", b"\x00\xff\r\n")], ("get", [b"k\x00\r\n"]), ("GET", b"k\x00\r\n"))
same("SET", [], ("set", [b"k", b"v"]), ("SET", "k", "v"), after=("GET", "k"))
same("SET NX on existing", K, ("set", [b"k", b"v"], {"nx": True}), ("SET", "k", "v", "NX"), after=("GET", "k"))
same("SET XX on missing", [], ("set", [b"k", b"v"], {"xx": True}), ("SET", "k", "v", "XX"), after=("EXISTS", "k"))
same("SET GET", K, ("set", [b"k", b"v2"], {"get": True}), ("SET", "k", "v2", "GET"), after=("GET", "k"))
same("SET NX GET", K, ("set", [b"k", b"v2"], {"get": True, "nx": True}), ("SET", "k", "v2", "NX", "GET"),
     after=("GET", "k"))
same("SET KEEPTTL", [("SET", "k", "v", "PX", "100000")], ("set", [b"k", b"w"], {"keepttl": True}),
     ("SET", "k", "w", "KEEPTTL"), after=("EXPIRETIME", "k"))
same("SET on a list", [("RPUSH", "k", "a")], ("set", [b"k", b"v"]), ("SET", "k", "v"), after=("TYPE", "k"))
same("SET negative ttl", [], ("set", [b"k", b"v"], {"ttl": -5}), ("SET", "k", "v", "PX", "-5"), status=1)
st, _ = d.one("set", b"t", b"v", ttl=100000)
pttl = r.call("PTTL", "t").value
ok(st == 0 and 0 < pttl <= 100000, "SET ttl=100000: PTTL %s in (0, 100000]" % pttl)
same("DEL", K, ("del", [b"k"]), ("DEL", "k"), after=("EXISTS", "k"))
same("DEL missing", [], ("del", [b"k"]), ("DEL", "k"))
same("EXISTS", K, ("exists", [b"k"]), ("EXISTS", "k"))
same("INCRBY", [("SET", "n", "40")], ("incrby", [b"n"], {"d": 2}), ("INCRBY", "n", "2"), after=("GET", "n"))
same("INCRBY negative", [], ("incrby", [b"n"], {"d": -7}), ("INCRBY", "n", "-7"))
same("INCRBY WRONGTYPE", [("RPUSH", "n", "a")], ("incrby", [b"n"], {"d": 1}), ("INCRBY", "n", "1"), status=2)
same("INCRBY not an integer", [("SET", "n", "x")], ("incrby", [b"n"], {"d": 1}), ("INCRBY", "n", "1"), status=1)
same("INCRBY overflow", [("SET", "n", str(2**63 - 1))], ("incrby", [b"n"], {"d": 1}), ("INCRBY", "n", "1"),
     status=1)
same("GETSET", K, ("getset", [b"k", b"v9"]), ("GETSET", "k", "v9"), after=("GET", "k"))
same("GETDEL", K, ("getdel", [b"k"]), ("GETDEL", "k"), after=("EXISTS", "k"))
M = [("MSET", "a", "1", "b", "2")]
same("MGET", M, ("mget", [b"a", b"x", b"b"]), ("MGET", "a", "x", "b"))
same("MSET", [], ("mset", [b"a", b"1", b"b", b"2"]), ("MSET", "a", "1", "b", "2"), after=("MGET", "a", "b"))
same("PTTL no TTL", K, ("pttl", [b"k"]), ("PTTL", "k"))
same("PTTL no key", [], ("pttl", [b"k"]), ("PTTL", "k"))
same("PEXPIRE", K, ("pexpire", [b"k"], {"ms": 100000}), ("PEXPIRE", "k", "100000"), after=("TTL", "k"))
same("PEXPIRE 0 deletes", K, ("pexpire", [b"k"], {"ms": 0}), ("PEXPIRE", "k", "0"), after=("EXISTS", "k"))
same("PEXPIRE missing", [], ("pexpire", [b"k"], {"ms": 1000}), ("PEXPIRE", "k", "1000"))
same("PERSIST", [("SET", "k", "v", "EX", "100")], ("persist", [b"k"]), ("PERSIST", "k"), after=("TTL", "k"))
same("PERSIST without TTL", K, ("persist", [b"k"]), ("PERSIST", "k"))
META = [("METAPUT", "p", "v", "LABELS", "2", "a", "b", "ENTITY", "user:1", "CONTENTTYPE", "text/plain")]
same("METAGET", META, ("metaget", [b"p"]), ("METAGET", "p"))
same("METAGET none", [], ("metaget", [b"p"]), ("METAGET", "p"))
same("METASET", META, ("metaset", [b"p"], {"labels": [b"x"], "entity": b"e2"}),
     ("METASET", "p", "CLEAR", "LABELS", "1", "x", "ENTITY", "e2"), after=("METAGET", "p"))
same("METASET clears", META, ("metaset", [b"p"]), ("METASET", "p", "CLEAR"), after=("METAGET", "p"))
same("SET with metadata", [], ("set", [b"p", b"v"], {"labels": [b"a", b"b"], "entity": b"user:1",
                                                    "ct": b"text/plain"}),
     ("METAPUT", "p", "v", "LABELS", "2", "a", "b", "ENTITY", "user:1", "CONTENTTYPE", "text/plain"),
     after=("METAGET", "p"))
INV = META + [("METAPUT", "q", "v", "LABELS", "1", "a"), ("METAPUT", "s", "v", "LABELS", "1", "a", "ENTITY", "e")]
same("INVALIDATE", INV, ("invalidate", [b"a"]), ("METAINVALIDATE", "a"), after=("DBSIZE",))
same("INVALIDATE with entity", INV, ("invalidate", [b"a", b"e"]), ("METAINVALIDATE", "a", "ENTITY", "e"),
     after=("DBSIZE",))
same("COMMAND PING", [], ("command", [b"PING"]), ("PING",))
same("COMMAND HGETALL (a map)", [("HSET", "h", "f", "1", "g", "2")], ("command", [b"HGETALL", b"h"]),
     ("HGETALL", "h"))
same("COMMAND ZSCORE (a double)", [("ZADD", "z", "1.5", "m")], ("command", [b"ZSCORE", b"z", b"m"]),
     ("ZSCORE", "z", "m"))
same("COMMAND SMEMBERS (a set)", [("SADD", "s", "x")], ("command", [b"SMEMBERS", b"s"]), ("SMEMBERS", "s"))
same("COMMAND unknown", [], ("command", [b"NOSUCH", b"x"]), ("NOSUCH", "x"), status=1)
st, got = d.one("command", b"MULTI")
ok(st == 1 and got == Reply("-", "ERR command not allowed over the native protocol"),
   "COMMAND MULTI refused with the spec's text: %r" % (got,))

st, topo = d.one("topology")
t = topo.py() if topo else {}
ok(st == 0 and t.get(b"epoch", t.get("epoch")) == 0 and len(t.get(b"nodes", t.get("nodes", []))) == 1,
   "TOPOLOGY outside cluster mode: epoch 0, one node (%r)" % (t,))

# db numbers
r.call("FLUSHALL")
d.cmd("db", n=3)
d.add("set", b"dbk", b"in3")
d.cmd("db", n=-1)
d.add("get", b"dbk")
rc, res = d.exec()
r.call("SELECT", "3")
in3 = r.call("GET", "dbk").value
r.call("SELECT", "0")
ok(rc == 0 and in3 == b"in3" and res[1] == (0, Reply("_", None)), "db 3 for one op, db 0 for the next")

# a batch with every kind of answer at once
r.call("FLUSHALL")
for i in range(100):
    d.add("set", b"b%d" % i, b"v%d" % i)
d.add("mget", *[b"b%d" % i for i in range(100)])
d.add("incrby", b"b1", d=1)
rc, res = d.exec()
vals = res[100][1].py() if res[100][1] else None
ok(rc == 0 and all(s == 0 for s, _ in res[:100]) and vals == [b"v%d" % i for i in range(100)] and res[101][0] == 1,
   "one batch of 100 SETs, an MGET of them and a failing INCRBY")

# pipelining: many batches in flight, each answered with its own results
r.call("FLUSHALL")
nb, per = 40, 25
for b in range(nb):
    for i in range(per):
        d.add("incrby", b"ctr", d=1)
    d.send()
done = d.waitall()
seq = [res[1].value for _, rs in done for res in rs]
ok(len(done) == nb and all(x for x, _ in done) and seq == list(range(1, nb * per + 1)),
   "%d batches in flight together: every INCRBY answered, in send order" % nb)
is_(r.call("GET", "ctr").value, b"%d" % (nb * per), "the counter over RESP")

# a deep pipeline: more bytes in flight than the sockets hold (12 MB), so
# sending must also read answers (the library drains past 8 MB of backlog)
r.call("FLUSHALL")
big = b"x" * 2048
for b in range(60):
    for i in range(100):
        d.add("set", b"big:%d:%d" % (b, i), big + b"%d" % i)
    d.send()
done = d.waitall()
ok(len(done) == 60 and all(x and all(s == 0 for s, _ in rs) for x, rs in done), "60 batches of 100 2 KiB SETs: all OK")
ok(r.call("DBSIZE").value == 6000 and r.call("GET", "big:59:99").value == big + b"99", "all 6000 keys are there")

# timeout: a stopped server
d2 = zdriver.Driver()
rc, _ = d2.connect(port=native, timeout=300, rmin=20, rmax=100)
stop_process(srv.pid)
try:
    st, v = d2.one("get", b"k")
    rc2 = d2.rc
finally:
    os.kill(srv.pid, signal.SIGCONT)
ok(rc == 0 and rc2 == zdriver.E_TIMEOUT and st == zdriver.E_TIMEOUT and v is None,
   "a SIGSTOPped server: the request fails with ZARIS_E_TIMEOUT (rc %s, status %s)" % (rc2, st))
st, v = d2.one("command", b"PING")
ok(st == 0 and v == Reply("+", "PONG"), "after SIGCONT the client reconnects and is answered")
d2.close()

# kill -9, restart on the same ports
r.close()
srv.kill()
st, _ = d.one("get", b"k")
ok(st == zdriver.E_IO and d.rc == zdriver.E_IO, "after kill -9: ZARIS_E_IO (status %s)" % st)
srv.restart(same_port=True)
r = srv.client()
r.call("SET", "back", "yes")
got = None
for _ in range(200):  # bounded: backoff is at most 200 ms here
    st, got = d.one("get", b"back")
    if st == 0:
        break
    time.sleep(0.02)
ok(st == 0 and got == Reply("$", b"yes"), "after the restart the same client reconnects and reads")
st = d.stats()
ok(st["connects"] == 2 and st["retries"] == 1,
   "stats: the first connect and the one after the restart; the GET in flight at the kill retried once (%r)" % st)
d.close()

# a server with requirepass: HELLO's password
srv2 = start_zarisd(native=True, name="zarisd-auth")
native2 = srv2.native_port
is_(srv2.client().call("CONFIG", "SET", "requirepass", "s3cret").value, "OK", "requirepass set on a second zarisd")
d3 = zdriver.Driver()
rc, text = d3.connect(port=native2)
ok(rc == zdriver.E_AUTH and "NOAUTH Authentication required." in text, "no password: ZARIS_E_AUTH, NOAUTH (%s)" % text)
rc, text = d3.connect(port=native2, password=b"wrong")
ok(rc == zdriver.E_AUTH and "WRONGPASS invalid username-password pair or user is disabled." in text,
   "a wrong password: ZARIS_E_AUTH, WRONGPASS (%s)" % text)
rc, text = d3.connect(port=native2, password=b"s3cret")
st, v = d3.one("command", b"PING")
ok(rc == 0 and st == 0 and v == Reply("+", "PONG"), "the right password: connected, PING answered")
d3.close()
done_testing()
