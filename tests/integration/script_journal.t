#!/usr/bin/python3
# script_journal.t — a script's writes are records of one transaction, as
# EXEC's are (commands/propagate.h, CMD_SCRIPT), so the append-only log and
# the replicas see a script whole.
#
#  * DEBUG CHANGE-STREAM: the write commands a script ran are its records,
#    one txn id, closed by a commit; a script that wrote nothing has none;
#    a script that failed after a write keeps that write (as Redis: the
#    commands that ran are propagated) and still commits it;
#  * inside MULTI a script's commands are records of EXEC's transaction and
#    EVAL itself is none (its record as well ran the script a second time
#    on replay, and crashed a replica), its change counted once;
#  * restart from the append-only log: every key the scripts wrote comes
#    back with its value; a log of an earlier build, with EVAL's own
#    records inside MULTI, loads with each write applied once;
#  * a replica: the scripts' writes reach it, its keyspace is the primary's.

import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from zaris import *  # noqa: E402,F403
from repl import *  # noqa: E402,F403

d = tempfile.mkdtemp(prefix="zaris-script-")


def records(c, n):
    out = []
    for r in c.callv("DEBUG", "CHANGE-STREAM", str(n)):
        out.append((r[0], r[1], r[2].decode(), [list(a) for a in r[3:]]))
    return out


WRITES = "redis.call('set', KEYS[1], ARGV[1]); redis.call('incr', KEYS[2]); " \
         "redis.call('rpush', KEYS[3], 'a', 'b'); return redis.call('get', KEYS[1])"

srv = start_zarisd(threads=2, extra=["--dir", d, "--appendonly", "yes", "--save", "",
                                     "--enable-debug-command", "local"])
c = srv.client()
is_(c.call("EVAL", WRITES, 3, "{s}str", "{s}n", "{s}list", "v1").py(), b"v1", "a script of three writes")
rec = records(c, 4)
txn = rec[0][1] if rec else 0
cmds = [x[3] for x in rec]
ok(len(rec) == 4 and txn != 0 and all(x[1] == txn for x in rec) and rec[3][2] == "commit" and
   [x[2] for x in rec[:3]] == ["cmd"] * 3, "three records of one transaction, then its commit") or diag(rec)
ok(cmds[:3] == [[[b"set", b"{s}str", b"v1"]], [[b"incr", b"{s}n"]], [[b"rpush", b"{s}list", b"a", b"b"]]],
   "the records are the commands the script ran") or diag(cmds)
seq = rec[-1][0] if rec else 0
c.call("EVAL", "return redis.call('get', KEYS[1])", 1, "{s}str")
rec2 = records(c, 1)
ok(rec2 and rec2[-1][0] == seq, "a script that only read made no record") or diag(rec2)
r = c.call("EVAL", "redis.call('incr', KEYS[1]); return redis.call('incr', KEYS[2])", 2, "{s}n", "{s}str")
ok(r.is_error(), "a script failing after a write: %s" % r.value)
rec3 = records(c, 2)
ok(len(rec3) == 2 and rec3[0][2] == "cmd" and rec3[0][3] == [[b"incr", b"{s}n"]] and rec3[1][2] == "commit"
   and rec3[0][1] == rec3[1][1] != 0, "its write is a record of its transaction, committed") or diag(rec3)
c.call("EVAL", "#!lua flags=allow-undeclared-keys\nredis.call('set', 'u1', 'x'); "
       "redis.call('hset', 'u2', 'f', 'v'); return 1", 0)
for i in range(20):
    c.call("EVAL", "return redis.call('incrby', KEYS[1], ARGV[1])", 1, "counter", str(i))
# inside MULTI the script's commands are records of EXEC's transaction and
# the EVAL is none (its record as well made the replay run the script again)
changes = int(c.call("INFO", "persistence").py().decode().split("rdb_changes_since_last_save:")[1].split()[0])
multi = [c.call("MULTI").raw, c.call("SET", "inmulti", "1").raw,
         c.call("EVAL", "return redis.call('incrby', KEYS[1], 10)", 1, "inmulti").raw, c.call("EXEC").raw]
is_(multi, [b"+OK\r\n", b"+QUEUED\r\n", b"+QUEUED\r\n", b"*2\r\n+OK\r\n:11\r\n"], "EVAL inside MULTI")
rec4 = records(c, 3)
ok([x[2] for x in rec4] == ["cmd", "cmd", "commit"] and len({x[1] for x in rec4}) == 1 and
   [x[3] for x in rec4[:2]] == [[[b"SET", b"inmulti", b"1"]], [[b"incrby", b"inmulti", b"10"]]],
   "inside MULTI: the SET and the script's INCRBY, one transaction, no record of EVAL") or diag(rec4)
after = int(c.call("INFO", "persistence").py().decode().split("rdb_changes_since_last_save:")[1].split()[0])
is_(after - changes, 2, "and two changes counted (the script's one once)")
want = {"{s}str": b"v1", "{s}n": b"2", "u1": b"x", "counter": b"190", "inmulti": b"11"}
got = {k: c.call("GET", k).py() for k in want}
is_(got, want, "the values before the restart")

srv.restart()
c = srv.client()
got = {k: c.call("GET", k).py() for k in want}
is_(got, want, "after a restart from the append-only log, every value is back")
is_(c.call("LRANGE", "{s}list", 0, -1).py(), [b"a", b"b"], "the list too")
is_(c.call("HGETALL", "u2").py(), [b"f", b"v"], "and the undeclared key's hash")
srv.stop()
shutil.rmtree(d, ignore_errors=True)

# a log an earlier build wrote with records of EVAL inside MULTI (cases/eval-in-multi-data/README.md)
d = tempfile.mkdtemp(prefix="zaris-script-old-")
shutil.copytree(os.path.join(os.path.dirname(os.path.abspath(__file__)), "cases", "eval-in-multi-data", "appendonlydir"),
                os.path.join(d, "appendonlydir"))
srv = start_zarisd(threads=2, extra=["--dir", d, "--appendonly", "yes", "--save", ""])
c = srv.client()
is_([c.call("GET", k).py() for k in ("before", "inmulti", "after")] + [c.call("LRANGE", "list", 0, -1).py()],
    [b"1", b"11", b"1", [b"a", b"b"]], "an earlier build's log with EVAL records inside MULTI: each write applied once")
srv.stop()
shutil.rmtree(d, ignore_errors=True)

p = start_node("primary", threads=2)
r = start_node("replica", threads=1, replicaof=(HOST, p.port))
pc, rc = p.client(), r.client()
ok(wait_link(rc), "the replica's link is up")
for i in range(50):
    pc.call("EVAL", WRITES, 3, "{k%d}str" % i, "{k%d}n" % i, "{k%d}list" % i, "v%d" % i)
pc.call("EVAL", "redis.call('set', KEYS[1], 'x'); return redis.call('incr', KEYS[1])", 1, "failing")
for cmd in (("MULTI",), ("SET", "inmulti", "1"), ("EVAL", "return redis.call('incrby', KEYS[1], 10)", 1, "inmulti"),
            ("EXEC",)):
    pc.call(*cmd)
ok(wait_in_sync(pc, rc, timeout=60), "the replica reaches the primary's offset") or diag(sync_state(pc, rc))
a, b = dump(pc), dump(rc)
lines = differences(a, b)
ok(not lines and len(a) == 50 * 3 + 2, "the replica's keyspace is the primary's (%d keys)" % len(a)) or \
    [diag(x) for x in lines]
is_(rc.call("GET", "{k7}str").py(), b"v7", "a script's write read on the replica")
is_(rc.call("GET", "inmulti").py(), b"11", "a script's write inside MULTI, applied once (the replica ran EVAL too, "
    "and crashed on its refused write)")
sys.exit(done_testing())
