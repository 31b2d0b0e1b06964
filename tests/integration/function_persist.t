#!/usr/bin/python3
# function_persist.t — function libraries are server state that persists and
# replicates (zarisd): FUNCTION LOAD / LOAD REPLACE / DELETE / RESTORE /
# FLUSH are journal records, so a restart from the append-only log alone
# (no snapshot yet) has the libraries and the data the FCALLs wrote, and so
# does one from a rewrite's snapshot and the log after it; a
# snapshot holds them (one JR_SNAP_FUNCTION frame each), so a restart from
# the snapshot alone (appendonly no) has them; a snapshot taken after
# FUNCTION FLUSH restores no library; a replica has the
# primary's libraries and data after a full sync (libraries loaded before
# it started) and from the stream (loaded, replaced, deleted while it
# runs), and its own libraries are replaced by the primary's on a full
# sync; FCALL on the replica reads what FCALL wrote on the primary.

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from zaris import *  # noqa: E402,F403
from repl import data_dir, start_node, wait_in_sync  # noqa: E402

LIB_A = "#!lua name=liba\nredis.register_function('incr_by', function(keys, args) " \
        "return redis.call('incrby', keys[1], args[1]) end)\n" \
        "redis.register_function{function_name='read', callback=function(keys) return redis.call('get', keys[1]) end, " \
        "flags={'no-writes'}}"
LIB_B = "#!lua name=libb\nredis.register_function{function_name='b1', callback=function() return 'b one' end, " \
        "flags={'no-writes'}}"
LIB_B2 = "#!lua name=libb\nredis.register_function{function_name='b2', callback=function() return 'b two' end, " \
         "flags={'no-writes'}}"
LIB_C = "#!lua name=libc\nredis.register_function('c1', function() return 'c' end)"


def libs(c):
    """FUNCTION LIST WITHCODE as {library: code}."""
    out = {}
    for lib in c.call("FUNCTION", "LIST", "WITHCODE").py():
        d = dict(zip(lib[::2], lib[1::2]))
        out[d[b"library_name"].decode()] = d[b"library_code"].decode()
    return out


def fill(c):
    """Libraries and data by functions; returns the libraries wanted."""
    for cmd in (("FUNCTION", "LOAD", LIB_A), ("FUNCTION", "LOAD", LIB_B), ("FUNCTION", "LOAD", "REPLACE", LIB_B2),
                ("FUNCTION", "LOAD", LIB_C), ("FUNCTION", "DELETE", "libc")):
        r = c.call(*cmd)
        if r.is_error():
            raise RuntimeError("%s: %s" % (" ".join(cmd[:2]), r.value))
    for i in range(10):
        c.call("FCALL", "incr_by", "1", "counter", str(i + 1))
    return {"liba": LIB_A, "libb": LIB_B2}


def check(c, want, what):
    is_(libs(c), want, "%s: the libraries" % what)
    is_(c.call("FCALL_RO", "read", "1", "counter").raw, b"$2\r\n55\r\n", "%s: the data the functions wrote" % what)
    is_(c.call("FCALL", "b2", "0").raw, b"$5\r\nb two\r\n", "%s: the replaced library's function runs" % what)
    is_(c.call("FCALL", "b1", "0").raw, b"-ERR Function not found\r\n", "%s: the replaced function is gone" % what)
    is_(c.call("FCALL", "c1", "0").raw, b"-ERR Function not found\r\n", "%s: the deleted library is gone" % what)


# restart from the log alone
d = data_dir("zaris-fn-log-")
z = start_zarisd(threads=2, extra=["--dir", d, "--appendonly", "yes", "--save", ""])
c = z.client()
want = fill(c)
c.close()
z.restart()
c = z.client()
check(c, want, "restart from the log")
# FUNCTION RESTORE and FLUSH are records too
dump = c.call("FUNCTION", "DUMP").value
is_(c.call("FUNCTION", "FLUSH").raw, b"+OK\r\n", "FLUSH")
is_(c.call("FUNCTION", "RESTORE", dump).raw, b"+OK\r\n", "RESTORE of the DUMP")
c.call("FUNCTION", "DELETE", "liba")
c.close()
z.restart()
c = z.client()
is_(libs(c), {"libb": LIB_B2}, "restart from the log: FLUSH, RESTORE and DELETE replayed")
# a rewrite: the libraries go to its snapshot, a later LOAD to the log after it
is_(c.call("BGREWRITEAOF").is_error(), False, "BGREWRITEAOF")
deadline = time.monotonic() + 30 * SLOW
while time.monotonic() < deadline and b"aof_rewrite_in_progress:0" not in c.call("INFO", "persistence").py():
    time.sleep(0.02)
c.call("FUNCTION", "LOAD", LIB_C)
c.close()
z.restart()
c = z.client()
is_(libs(c), {"libb": LIB_B2, "libc": LIB_C}, "restart from a rewrite's snapshot and the log after it")
is_(c.call("GET", "counter").raw, b"$2\r\n55\r\n", "and the data")
c.close()
z.stop()

# restart from the snapshot alone
d = data_dir("zaris-fn-snap-")
z = start_zarisd(threads=2, extra=["--dir", d, "--appendonly", "no", "--save", ""])
c = z.client()
want = fill(c)
is_(c.call("SAVE").raw, b"+OK\r\n", "SAVE")
c.close()
z.restart()
c = z.client()
check(c, want, "restart from the snapshot")
is_(c.call("FUNCTION", "FLUSH").raw, b"+OK\r\n", "FLUSH")
is_(c.call("SAVE").raw, b"+OK\r\n", "SAVE with no library")
c.close()
z.restart()
c = z.client()
is_(libs(c), {}, "restart from a snapshot with no library: none")
is_(c.call("GET", "counter").raw, b"$2\r\n55\r\n", "and the data")
c.close()
z.stop()

# a replica: full sync, then the stream
p = start_node("fn-primary", threads=2)
pc = p.client()
want = fill(pc)
r = start_node("fn-replica", threads=2)
rcl = r.client()
rcl.call("FUNCTION", "LOAD", LIB_C)  # its own, which the full sync replaces
rcl.call("REPLICAOF", "127.0.0.1", str(p.port))
ok(wait_in_sync(pc, rcl), "replica in sync after a full sync")
check(rcl, want, "replica after a full sync")
pc.call("FUNCTION", "LOAD", LIB_C)
pc.call("FUNCTION", "LOAD", "REPLACE", "#!lua name=liba\nredis.register_function{function_name='read', "
        "callback=function(keys) return 'v2:' .. redis.call('get', keys[1]) end, flags={'no-writes'}}\n"
        "redis.register_function('incr_by', function(keys, args) return redis.call('incrby', keys[1], args[1]) end)")
pc.call("FCALL", "incr_by", "1", "counter", "45")
pc.call("FUNCTION", "DELETE", "libb")
ok(wait_in_sync(pc, rcl), "replica in sync after the stream")
is_(sorted(libs(rcl)), ["liba", "libc"], "replica from the stream: a library loaded, one deleted")
is_(rcl.call("FCALL_RO", "read", "1", "counter").raw, b"$6\r\nv2:100\r\n",
    "replica from the stream: the replaced library reads what FCALL wrote on the primary")
is_(libs(rcl), libs(pc), "replica's libraries are the primary's")
is_(rcl.call("FUNCTION", "LOAD", LIB_B).raw[:10], b"-READONLY ", "FUNCTION LOAD on the replica: READONLY")
for x in (pc, rcl):
    x.close()
r.stop()
p.stop()
sys.exit(done_testing())
