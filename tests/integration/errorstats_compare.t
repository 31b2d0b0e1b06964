#!/usr/bin/python3
# errorstats_compare.t — error statistics against redis-server 7.0: each
# scenario (CONFIG RESETSTAT, then a sequence of commands over a few
# clients) runs on both servers, then INFO stats total_error_replies, the
# whole Errorstats section (codes, counts, order) and every INFO
# commandstats line's calls, rejected_calls and failed_calls are compared.
#
# Redis counts every error reply (afterErrorReply): unknown commands
# (counted for no command), refusals before running (rejected_calls of the
# command: arity, NOAUTH, the container without subcommand, inside MULTI),
# errors of handlers (failed_calls), EXECABORT, errors of commands inside
# EXEC (theirs, not EXEC's), protocol errors, muted errors (CLIENT REPLY
# OFF), RESP3. Scripts: an error of a command run by redis.call is counted
# there (that command's failed_calls, or rejected_calls when scriptCall
# refused it) and not again when it reaches the client (EVAL's
# failed_calls only); a script's own error (error(), redis.error_reply) is
# counted when replied. Blocked commands: a timeout is no error, a
# WRONGTYPE when served is, CLIENT UNBLOCK counts the command failed. The
# code is the first word when the space is within the first 32 bytes
# (else ERR), '#' and ':' shown as '_'. CONFIG RESETSTAT clears it all.
#
# A replica's error applying its primary's command (a writable replica
# whose key differs) counts in total_error_replies, errorstats and
# unexpected_error_replies, as Redis's errors sent to the master.
#
# The limit of 128 distinct codes is Redis 7.4's (7.0 has none): checked
# on zarisd alone (ERRORSTATS_DISABLED, the log line, RESETSTAT enables it
# again) after the first 128 codes are compared with redis-server.

import os
import re
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from zaris import *  # noqa: E402,F403
from zaris import HOST  # noqa: E402


def info(c, section):
    r = c.call("INFO", section)
    return r.value.decode() if not r.is_error() else ""


def stats(c):
    """The figures compared: total_error_replies, the Errorstats lines in
    order, and commandstats without timings (INFO itself is left out: the
    calls made to read these)."""
    total = re.search(r"total_error_replies:(\d+)", info(c, "stats"))
    errs = [l for l in info(c, "errorstats").splitlines() if l.startswith("errorstat_")]
    cmds = {}
    for m in re.finditer(r"cmdstat_(\S+?):calls=(\d+),.*rejected_calls=(\d+),failed_calls=(\d+)",
                         info(c, "commandstats")):
        if m.group(1) != "info":
            cmds[m.group(1)] = "calls=%s rejected=%s failed=%s" % m.groups()[1:]
    return {"total_error_replies": total and int(total.group(1)), "errorstats": errs,
            "commandstats": cmds}


def wait_blocked(c, n):
    for _ in range(500):
        m = re.search(r"blocked_clients:(\d+)", info(c, "clients"))
        if m and int(m.group(1)) >= n:
            return True
        time.sleep(0.01)
    return False


def run(srv, steps):
    """Runs STEPS, a list of (client index, args) or callables taking the
    list of clients; returns the raw replies and the figures after."""
    clients = [srv.client() for _ in range(3)]
    admin = srv.client()
    admin.call("FLUSHALL")
    admin.call("CONFIG", "RESETSTAT")
    replies = []
    for st in steps:
        if callable(st):
            replies.append(st(clients, admin))
        else:
            i, args = st[0], st[1]
            mode = st[2] if len(st) > 2 else "compare"
            if mode == "send":  # CLIENT REPLY OFF: no reply comes
                clients[i].send(*args)
            else:
                r = clients[i].call(*args).raw
                replies.append(r if mode == "compare" else b"(not compared)")
    figures = stats(admin)
    for c in clients + [admin]:
        c.close()
    return replies, figures


def script(body):
    """EVAL of BODY with the key l declared (zarisd refuses undeclared keys)."""
    return ("EVAL", body, "1", "l")


def blmove_wrongtype(clients, admin):
    # a waiter whose destination becomes a string: WRONGTYPE when served
    clients[0].send("BLMOVE", "src", "dst", "LEFT", "RIGHT", "0")
    if not wait_blocked(admin, 1):
        return b"not blocked"
    admin.call("SET", "dst", "string")
    admin.call("RPUSH", "src", "x")
    return clients[0].read_reply().raw


def unblock(reason):
    def step(clients, admin):
        cid = clients[1].call("CLIENT", "ID").value
        clients[1].send("BLPOP", "nolist", "0")
        if not wait_blocked(admin, 1):
            return b"not blocked"
        r = admin.call("CLIENT", "UNBLOCK", str(cid), reason).raw
        return r + clients[1].read_reply().raw
    return step


def timeout_step(clients, admin):
    return clients[2].call("BLPOP", "nolist", "0.01").raw


SCENARIOS = [
    ("rejections: unknown command and subcommand, arity, the container alone", [
        (0, ("NOSUCHCMD", "a", "b")),
        (0, ("CONFIG", "NOSUCHSUB")),
        (0, ("CONFIG",)),
        (0, ("INCR",)),
        (0, ("GET", "a", "b")),
        (1, ("SET", "a", "1")),
        (1, ("GET", "a")),
    ]),
    ("handler errors: WRONGTYPE, not an integer, syntax; muted and RESP3 alike", [
        (0, ("RPUSH", "l", "x")),
        (0, ("INCR", "l")),
        (0, ("SET", "s", "abc")),
        (0, ("INCR", "s")),
        (0, ("SET", "s", "v", "NX", "XX")),
        (1, ("HELLO", "3"), "ignore"),
        (1, ("INCR", "l")),
        (1, ("LPUSH", "s", "x")),
        (2, ("CLIENT", "REPLY", "OFF"), "send"),
        (2, ("INCR", "l"), "send"),
        (2, ("NOSUCHCMD",), "send"),
        (2, ("CLIENT", "REPLY", "ON")),
        (0, ("EXEC",)),
        (0, ("DISCARD",)),
    ]),
    ("MULTI/EXEC: queued refusals, EXECABORT, errors inside EXEC are the commands'", [
        (0, ("RPUSH", "l", "x")),
        (0, ("MULTI",)),
        (0, ("INCR",)),
        (0, ("NOSUCHCMD",)),
        (0, ("SET", "a", "1")),
        (0, ("EXEC",)),
        (1, ("MULTI",)),
        (1, ("SET", "b", "1")),
        (1, ("INCR", "l")),
        (1, ("LPUSH", "b", "x")),
        (1, ("MULTI",)),
        (1, ("EXEC",)),
        (2, ("MULTI",)),
        (2, ("WATCH", "x")),
        (2, ("EXEC",)),
    ]),
    ("scripts: redis.call's errors counted once, rejections, the script's own errors", [
        (0, ("RPUSH", "l", "x")),
        (0, script("return redis.call('incr', 'l')")),
        (0, script("return redis.pcall('incr', 'l')")),
        (0, script("redis.pcall('incr', 'l'); return 1")),
        (0, script("redis.pcall('incr', 'l'); return redis.error_reply('MINE after pcall')")),
        (0, script("return redis.call('nosuchcmd')")),
        (0, script("return redis.pcall('incr')")),
        (0, script("redis.pcall('nosuchcmd'); return 'ok'")),
        (0, script("error('boom')")),
        (0, script("return redis.error_reply('MYCODE some text')")),
        (0, script("return redis.error_reply('NOSPACE')")),
        (0, script("return {err='RAW table error'}")),
        (1, ("EVAL_RO", "return redis.call('set', KEYS[1], 'v')", "1", "k")),
        (1, ("EVALSHA", "0" * 40, "0")),
        (1, ("EVAL", "return 1", "-1")),
        (1, ("HELLO", "3"), "ignore"),
        (1, script("return redis.call('incr', 'l')")),
        (2, ("MULTI",)),
        (2, script("return redis.call('incr', 'l')")),
        (2, ("INCR", "l")),
        (2, ("EXEC",)),
    ]),
    ("codes: the 32-byte window, sanitised characters, an empty code", [
        (0, script("return redis.error_reply('%s x')" % ("A" * 30))),
        (0, script("return redis.error_reply('%s x')" % ("B" * 31))),
        (0, script("return redis.error_reply('%s x')" % ("C" * 40))),
        (0, script("return redis.error_reply('MY:CODE#1 x')")),
        (0, script("return redis.error_reply('-LEAD dash')")),
        (0, script("return {err=' leading space'}")),
        (0, script("return {err='ZZZ'}")),
        (0, script("return redis.error_reply('AAB x')")),
        (0, script("return redis.error_reply('AA x')")),
    ]),
    ("maxmemory: OOM rejected, queued and at EXEC (EXECABORT rejected)", [
        (0, ("MULTI",)),
        (0, ("SET", "a", "1")),
        (1, ("MULTI",)),
        (2, ("CONFIG", "SET", "maxmemory", "1")),
        (2, ("SET", "b", "1")),
        (2, ("GET", "b")),
        (0, ("EXEC",)),
        (1, ("SET", "c", "1")),
        (1, ("EXEC",)),
        (2, ("CONFIG", "SET", "maxmemory", "0")),
    ]),
    ("blocked commands: timeout, WRONGTYPE when served, CLIENT UNBLOCK", [
        timeout_step,
        blmove_wrongtype,
        unblock("ERROR"),
        unblock("TIMEOUT"),
    ]),
]


def auth_steps(srv):
    """NOAUTH refusals, WRONGPASS (AUTH's own failure), then the password
    removed again."""
    admin = srv.client()
    admin.call("CONFIG", "RESETSTAT")
    admin.call("CONFIG", "SET", "requirepass", "pw")
    c = srv.client()
    out = [c.call("GET", "a").raw, c.call("AUTH", "bad").raw, c.call("NOSUCHCMD").raw,
           c.call("AUTH", "pw").raw, c.call("GET", "a").raw]
    admin.call("CONFIG", "SET", "requirepass", "")
    figures = stats(admin)
    c.close()
    admin.close()
    return out, figures


def protocol_steps(srv):
    """A protocol error is an error reply too (the connection closes)."""
    admin = srv.client()
    admin.call("CONFIG", "RESETSTAT")
    c = srv.client()
    c.send_raw(b"*1\r\nx\r\n")
    data, closed = c.recv_until_closed()
    c.close()
    figures = stats(admin)
    admin.close()
    return [data, closed], figures


def resetstat_steps(srv):
    """After errors, CONFIG RESETSTAT leaves no error figure."""
    admin = srv.client()
    admin.call("RPUSH", "l", "x")
    admin.call("INCR", "l")
    admin.call("NOSUCHCMD")
    admin.call("INCR")
    admin.call("CONFIG", "RESETSTAT")
    figures = stats(admin)
    admin.close()
    return [], figures


def replica_steps(start):
    """A writable replica whose key the primary does not have: the
    primary's INCR answers WRONGTYPE there (Redis's error to its master),
    total_error_replies, errorstats and unexpected_error_replies on the
    replica."""
    p = start(name="primary")
    r = start(name="replica", extra=["--replica-read-only", "no"])
    pc, rc = p.client(), r.client()
    rc.call("REPLICAOF", HOST, str(p.port))
    for _ in range(1000):
        if "master_link_status:up" in info(rc, "replication"):
            break
        time.sleep(0.01)
    rc.call("RPUSH", "k", "x")
    rc.call("CONFIG", "RESETSTAT")
    pc.call("INCR", "k")
    pc.call("SET", "done", "1")
    for _ in range(1000):
        if rc.call("GET", "done").raw == b"$1\r\n1\r\n":
            break
        time.sleep(0.01)
    f = stats(rc)
    m = re.search(r"unexpected_error_replies:(\d+)", info(rc, "stats"))
    f["unexpected_error_replies"] = m and int(m.group(1))
    # what the replica's client commands show depends on the server:
    # Redis counts the primary's commands there, zarisd does not
    f["commandstats"] = {k: v for k, v in f["commandstats"].items() if k not in ("incr", "set", "get", "select")}
    pc.close()
    rc.close()
    r.stop()
    p.stop()
    return f


def code_cap(srv, n):
    """N distinct codes through redis.error_reply."""
    c = srv.client()
    c.call("CONFIG", "RESETSTAT")
    for i in range(n):
        c.call("EVAL", "return redis.error_reply(ARGV[1] .. ' x')", "0", "CODE%03d" % i)
    f = stats(c)
    c.close()
    return f


def main():
    plan(len(SCENARIOS) + 3 + 1 + 1 + 6)
    redis = start_redis()
    zaris = start_zarisd(threads=2)

    for name, steps in SCENARIOS:
        rr, rf = run(redis, steps)
        zr, zf = run(zaris, steps)
        same = rr == zr and rf == zf
        ok(same, name)
        if not same:
            for a, b in zip(rr, zr):
                if a != b:
                    diag("reply: redis %r zarisd %r" % (a, b))
            for k in rf:
                if rf[k] != zf[k]:
                    diag("%s:\n  redis  %r\n  zarisd %r" % (k, rf[k], zf[k]))

    for name, fn in (("requirepass: NOAUTH rejected, WRONGPASS failed", auth_steps),
                     ("a protocol error is counted", protocol_steps),
                     ("CONFIG RESETSTAT clears every error figure", resetstat_steps)):
        rr, rf = fn(redis)
        zr, zf = fn(zaris)
        same = rf == zf
        ok(same, name)
        if not same:
            diag("redis  %r %r" % (rr, rf))
            diag("zarisd %r %r" % (zr, zf))

    rf, zf = replica_steps(start_redis), replica_steps(lambda **kw: start_zarisd(threads=2, **kw))
    ok(rf == zf and zf["unexpected_error_replies"] == 1,
       "a replica's error applying the primary's command: unexpected_error_replies") \
        or diag("redis %r\nzarisd %r" % (rf, zf))

    rf, zf = code_cap(redis, 128), code_cap(zaris, 128)
    ok(rf == zf and len(zf["errorstats"]) == 128, "128 distinct codes: %d lines, as redis-server's"
       % len(zf["errorstats"])) or diag("redis %r\nzarisd %r" % (rf, zf))

    # the limit (Redis 7.4's): the 129th code disables the section
    f = code_cap(zaris, 130)
    is_(f["errorstats"], ["errorstat_ERRORSTATS_DISABLED:count=1"], "the 129th code disables errorstats")
    is_(f["total_error_replies"], 130, "total_error_replies still counts every error")
    log = zaris.log_tail(20000)
    ok("Errorstats stopped adding new errors" in log and "CODE000, CODE001" in log,
       "the warning and the codes are logged") or diag(log[-2000:])
    c = zaris.client()
    c.call("EVAL", "return redis.error_reply('NEWCODE x')", "0")
    c.call("INCR")
    is_(stats(c)["errorstats"], ["errorstat_ERRORSTATS_DISABLED:count=1"], "disabled until RESETSTAT")
    c.call("CONFIG", "RESETSTAT")
    c.call("EVAL", "return redis.error_reply('NEWCODE x')", "0")
    c.call("INCR")
    is_(stats(c)["errorstats"], ["errorstat_ERR:count=1", "errorstat_NEWCODE:count=1"],
        "CONFIG RESETSTAT enables it again")
    # two workers count apart; INFO sums them
    cs = [zaris.client() for _ in range(4)]
    cs[0].call("CONFIG", "RESETSTAT")
    for c2 in cs:
        c2.call("INCR")
    is_(stats(cs[0])["errorstats"], ["errorstat_ERR:count=4"], "four clients' errors summed")
    for c2 in cs + [c]:
        c2.close()

    zaris.stop()
    redis.stop()


main()
