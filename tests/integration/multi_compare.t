#!/usr/bin/python3
# multi_compare.t — what RESET resets and when EXEC is refused for memory,
# each scenario run against redis-server and zarisd, raw replies compared.
#
# RESET (Redis's resetCommand / clearClientConnectionState): the
# transaction is discarded (EXEC then answers "EXEC without MULTI" and the
# queued SET never ran), WATCHed keys are forgotten, the database is 0
# again, RESP 2, no name, CLIENT REPLY ON, no subscriptions; with
# requirepass the client is no longer authenticated. CLIENT NO-EVICT stays
# on, and a RESET right after CLIENT REPLY SKIP is the command skipped.
#
# EXEC and maxmemory (Redis's processCommand): EXEC of a queue holding a
# command that may grow memory (SET) is refused with "EXECABORT Transaction
# discarded because of: OOM ..." when memory is over the limit after
# eviction — under noeviction and allkeys-lru alike (with maxmemory 1 the
# eviction cannot get under it); a queue of reads or of DELs runs; a
# command queued while over the limit is refused and dooms the
# transaction; a command queued after an error is not kept (Redis's
# queueMultiCommand), so it does not turn EXEC's answer into OOM. The limit
# is set by a second client between MULTI and EXEC.
#
# The slow log of MULTI ... EXEC: the queued commands, not EXEC.

import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from zaris import *  # noqa: E402,F403


def client_fields(raw, names=("db", "name", "resp", "flags", "sub", "multi")):
    """The CLIENT INFO fields that RESET changes (the rest differ by server)."""
    m = re.search(rb"\$\d+\r\n(.*)\r\n$", raw, re.S)
    line = m.group(1).decode() if m else raw.decode()
    fields = dict(kv.split("=", 1) for kv in line.split() if "=" in kv)
    return " ".join("%s=%s" % (n, fields.get(n)) for n in names)


def exec_stats(c):
    """INFO commandstats' exec line without its timings."""
    info = c.call("INFO", "commandstats").value.decode()
    m = re.search(r"cmdstat_exec:calls=(\d+),.*rejected_calls=(\d+),failed_calls=(\d+)", info)
    return "calls=%s rejected=%s failed=%s" % m.groups() if m else "none"


def steps(c, cmds):
    return [c.call(*cmd).raw for cmd in cmds]


def reset_scenarios(srv):
    out = []
    c = srv.client()
    c.call("FLUSHALL")
    out.append(("MULTI SET RESET EXEC: no transaction left, the SET never ran",
                steps(c, [("MULTI",), ("SET", "a", "1"), ("RESET",), ("EXEC",), ("GET", "a"),
                          ("DISCARD",)])))
    other = srv.client()
    r = steps(c, [("SET", "w", "1"), ("WATCH", "w"), ("RESET",)])
    r += steps(other, [("SET", "w", "2")])
    r += steps(c, [("MULTI",), ("INCR", "w"), ("EXEC",)])
    out.append(("WATCH RESET: the key is no longer watched, EXEC runs", r))
    r = steps(c, [("MULTI",), ("SET", "q"), ("RESET",), ("MULTI",), ("SET", "q", "1"), ("EXEC",)])
    out.append(("RESET of a doomed transaction: the next one runs", r))
    r = steps(c, [("SELECT", "3"), ("CLIENT", "SETNAME", "foo"), ("SET", "k3", "v")])
    c.call("HELLO", "3")
    r += steps(c, [("RESET",)])
    r.append(client_fields(c.call("CLIENT", "INFO").raw).encode())
    r += steps(c, [("GET", "k3"), ("CLIENT", "GETNAME"), ("SELECT", "3"), ("GET", "k3")])
    out.append(("SELECT SETNAME HELLO 3 RESET: db 0, no name, RESP2", r))
    r = steps(c, [("CLIENT", "NO-EVICT", "on"), ("RESET",)])
    r.append(client_fields(c.call("CLIENT", "INFO").raw, ("flags",)).encode())
    c.call("CLIENT", "NO-EVICT", "off")
    out.append(("CLIENT NO-EVICT stays on after RESET (flag e)", r))
    c.send("CLIENT", "REPLY", "OFF")
    r = steps(c, [("RESET",), ("PING",)])
    out.append(("CLIENT REPLY OFF then RESET: RESET answers, replies are on", r))
    c.send("CLIENT", "REPLY", "SKIP")
    c.send("RESET")
    r = steps(c, [("PING",)])
    out.append(("CLIENT REPLY SKIP then RESET: RESET is the skipped reply", r))
    r = steps(c, [("SUBSCRIBE", "ch"), ("RESET",), ("PING",)])
    r.append(client_fields(c.call("CLIENT", "INFO").raw, ("sub", "flags")).encode())
    out.append(("SUBSCRIBE RESET: no subscription left, PING answers PONG", r))
    r = steps(c, [("MULTI",), ("RESET",)])
    r.append(client_fields(c.call("CLIENT", "INFO").raw, ("flags", "multi")).encode())
    out.append(("MULTI RESET: CLIENT INFO shows no transaction", r))
    other.close()
    c.close()
    return out


def auth_scenarios(srv):
    admin, c = srv.client(), srv.client()
    admin.call("CONFIG", "SET", "requirepass", "pw")
    r = steps(c, [("AUTH", "pw"), ("SET", "k", "v"), ("SELECT", "2"), ("RESET",), ("GET", "k"),
                  ("MULTI",), ("AUTH", "pw"), ("GET", "k")])
    admin.call("CONFIG", "SET", "requirepass", "")
    c.close()
    admin.close()
    return [("requirepass: RESET de-authenticates (the default user needs the password)", r)]


def oom_scenario(srv, policy, queued):
    """MULTI, QUEUED, then another client sets maxmemory 1, then EXEC."""
    c, admin = srv.client(), srv.client()
    admin.call("FLUSHALL")
    r = steps(admin, [("CONFIG", "SET", "maxmemory-policy", policy), ("SET", "x", "old"),
                      ("SET", "y", "1")])
    r += steps(c, [("MULTI",)] + queued)
    r += steps(admin, [("CONFIG", "SET", "maxmemory", "1")])
    r += steps(c, [("EXEC",), ("EXEC",)])
    r += steps(admin, [("CONFIG", "SET", "maxmemory", "0"), ("GET", "x"), ("DBSIZE",)])
    r.append(exec_stats(admin).encode())
    admin.call("CONFIG", "RESETSTAT")
    admin.call("CONFIG", "SET", "maxmemory-policy", "noeviction")
    c.close()
    admin.close()
    return r


def oom_scenarios(srv):
    out = []
    for policy in ("noeviction", "allkeys-lru"):
        out.append(("%s: MULTI SET GET, over maxmemory, EXEC -> EXECABORT OOM" % policy,
                    oom_scenario(srv, policy, [("SET", "x", "1"), ("GET", "x")])))
        out.append(("%s: a queue of reads runs over maxmemory" % policy,
                    oom_scenario(srv, policy, [("GET", "x"), ("EXISTS", "y"), ("STRLEN", "x")])))
        out.append(("%s: a queue of DELs (write, not deny-oom) runs" % policy,
                    oom_scenario(srv, policy, [("DEL", "x"), ("GET", "x")])))
        out.append(("%s: a SET queued after an error is not kept: EXECABORT of the error" % policy,
                    oom_scenario(srv, policy, [("SET", "x"), ("SET", "x", "1")])))
    c, admin = srv.client(), srv.client()
    admin.call("FLUSHALL")
    r = steps(admin, [("CONFIG", "SET", "maxmemory", "1")])
    r += steps(c, [("MULTI",), ("GET", "x"), ("PING",), ("EXEC",), ("DISCARD",)])
    r += steps(admin, [("CONFIG", "SET", "maxmemory", "0")])
    out.append(("over maxmemory: commands queued in MULTI are refused, EXEC aborts", r))
    r = steps(admin, [("CONFIG", "SET", "maxmemory", "1")])
    r += steps(c, [("MULTI",), ("DISCARD",), ("MULTI",), ("RESET",)])
    r += steps(admin, [("CONFIG", "SET", "maxmemory", "0")])
    out.append(("over maxmemory: MULTI, DISCARD and RESET still run", r))
    admin.call("CONFIG", "RESETSTAT")
    c.close()
    admin.close()
    return out


def debug_scenarios(srv):
    """DEBUG OBJECT queued after a write of the same key: zarisd's worker
    used to take that key's shard lock again inside EXEC (a self-deadlock:
    the worker hung for good). The reply's address and lru vary: only its
    shape is compared."""
    c = srv.client()
    c.call("FLUSHALL")
    r = steps(c, [("MULTI",), ("SET", "k", "1"), ("DEBUG", "OBJECT", "k"), ("DEBUG", "OBJECT", "nokey"),
                  ("GET", "k"), ("EXEC",)])
    shape = re.sub(rb"Value at:[^\r]*", b"Value at:...", r[-1])
    return [("MULTI SET k; DEBUG OBJECT k; EXEC: answered, the key's lock not taken twice", r[:-1] + [shape])]


def slowlog_scenarios(srv):
    """EXEC is not in the slow log, the commands it ran are (Redis's
    skip_slowlog flag on EXEC): the logged commands' arguments, newest
    first."""
    c = srv.client()
    c.call("CONFIG", "SET", "slowlog-log-slower-than", "0")
    c.call("SLOWLOG", "RESET")
    steps(c, [("MULTI",), ("SET", "a", "1"), ("INCR", "a"), ("EXEC",)])
    logged = [e[3] for e in c.callv("SLOWLOG", "GET", "10")]
    c.call("CONFIG", "SET", "slowlog-log-slower-than", "10000")
    return [("MULTI SET INCR EXEC: the slow log has MULTI and the commands, not EXEC", logged)]


def run(srv):
    return (reset_scenarios(srv) + oom_scenarios(srv) + auth_scenarios(srv) + debug_scenarios(srv) +
            slowlog_scenarios(srv))


compare_scenarios(run, extra=["--enable-debug-command", "yes"])
