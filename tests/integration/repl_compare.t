#!/usr/bin/python3
# repl_compare.t — replication's client surface against redis-server's: a
# redis-server pair (primary, replica) and a zarisd pair side by side, the
# same requests to each, answers compared with ports and offsets taken out:
#
#   * ROLE on the primary and on the replica (the reply's shape: types,
#     role, replica address, link state; offsets only as integers);
#   * INFO replication: every field name redis-server has on a primary and
#     on a replica (and in slave0's value) is zarisd's too; zarisd's extras
#     are reported, not refused; the values of the fields that do not
#     depend on timing (role, connected_slaves, master_host/port,
#     master_link_status, ...); the replica's master_replid is the primary's;
#   * WAIT: WAIT 0 0, WAIT 1 after a write, WAIT 2 with one replica (its
#     timeout), argument errors, WAIT on a replica (Redis's error);
#   * the READONLY error on a replica for writes (alone and queued in
#     MULTI), reads and PUBLISH served;
#   * REPLICAOF and SLAVEOF: "Already connected", bad ports, wrong arity, NO
#     ONE on a primary and on a replica (then a primary), back to a replica
#     of the same primary; REPLICAOF to the server itself: redis-server 7.0
#     answers +OK and then loops on "-NOMASTERLINK" (shown as a diagnostic);
#     zarisd refuses it with an error and stays a primary (issue 15);
#   * master_link_down_since_seconds: -1 on a replica whose primary never
#     answered (never in sync), a count of seconds once a primary it was in
#     sync with stops (the supervisor takes a replica's freshness from it).
#
# ZARIS_REPL_ENGINE=redis puts a second redis-server pair in zarisd's
# place (a check of the test itself; zarisd-only points are skipped).

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from zaris import *  # noqa: E402,F403
from zaris_sys import skip  # noqa: E402
import repl  # noqa: E402
from repl import HOST, info, wait_for, wait_in_sync, wait_link, sync_state  # noqa: E402

STABLE_PRIMARY = ["role", "connected_slaves", "master_replid2", "second_repl_offset", "repl_backlog_active"]
STABLE_REPLICA = ["role", "master_host", "master_port", "master_link_status", "master_sync_in_progress",
                  "slave_read_only", "connected_slaves", "master_replid2", "second_repl_offset"]


def form(reply, subs):
    """REPLY as nested (type byte, value) with the integers (and numeric
    bulk strings) of offsets as "<int>" and the ports in SUBS replaced by
    their names."""
    if reply.kind in ("*", "~") and reply.value is not None:
        return (reply.kind, [form(x, subs) for x in reply.value])
    v = reply.value
    if isinstance(v, bytes):
        v = v.decode("utf-8", "replace")
    if str(v) in subs:
        return (reply.kind, subs[str(v)])
    if reply.kind == ":" or (reply.kind == "$" and isinstance(v, str) and v.lstrip("-").isdigit()):
        return (reply.kind, "<int>")
    return (reply.kind, v)


def slave0_fields(text):
    return dict(kv.split("=", 1) for kv in text.split(",")) if text else {}


def pair(engine_redis, tag):
    """A primary and a replica of the engine (redis-server when
    ENGINE_REDIS), linked and in sync."""
    saved = repl.ENGINE
    repl.ENGINE = "redis" if engine_redis else "zarisd"
    try:
        p = repl.start_node("primary-" + tag, threads=2)
        r = repl.start_node("replica-" + tag, threads=2, replicaof=(HOST, p.port))
    finally:
        repl.ENGINE = saved
    return p, r


def story(p, r):
    """[(step, answer)] of one pair."""
    pc, rc = p.client(), r.client()
    subs = {str(p.port): "<primary port>", str(r.port): "<replica port>"}
    out = []
    linked = wait_link(rc) and wait_in_sync(pc, rc)
    if not linked:
        diag(sync_state(pc, rc))
    out.append(("linked and in sync", linked))
    out.append(("ROLE on the primary", form(pc.call("ROLE"), subs)))
    out.append(("ROLE on the replica", form(rc.call("ROLE"), subs)))
    out.append(("ROLE with an argument", pc.call("ROLE", "x").raw))
    pi, ri = info(pc), info(rc)
    out.append(("INFO replication names, primary", sorted(pi)))
    out.append(("INFO replication names, replica", sorted(ri)))
    s0 = slave0_fields(pi.get("slave0"))
    out.append(("slave0's names", sorted(s0)))
    out.append(("slave0's ip, port, state", [s0.get("ip"), subs.get(s0.get("port"), s0.get("port")),
                                            s0.get("state")]))
    out.append(("stable fields, primary", [(k, pi.get(k)) for k in STABLE_PRIMARY]))
    out.append(("stable fields, replica", [(k, subs.get(ri.get(k), ri.get(k))) for k in STABLE_REPLICA]))
    out.append(("the replica's master_replid is the primary's", ri.get("master_replid") == pi.get("master_replid")))
    # WAIT
    w = p.client()
    out.append(("WAIT 0 0 before any write", w.call("WAIT", "0", "0").raw))
    w.call("SET", "waitkey", "1")
    out.append(("WAIT 1 5000 after a write", w.call("WAIT", "1", "5000").raw))
    out.append(("WAIT 2 200 with one replica", w.call("WAIT", "2", "200").raw))
    for args in (["WAIT", "1"], ["WAIT"], ["WAIT", "1", "2", "3"], ["WAIT", "a", "1"], ["WAIT", "1", "-1"],
                 ["WAIT", "1", "b"], ["WAIT", "1.5", "10"]):
        out.append((" ".join(args), w.call(*args).raw))
    out.append(("WAIT 0 0 on the replica", rc.call("WAIT", "0", "0").raw))
    out.append(("WAIT 1 100 on the replica", rc.call("WAIT", "1", "100").raw))
    # READONLY
    wait_in_sync(pc, rc)
    for args in (["SET", "k", "v"], ["DEL", "waitkey"], ["INCR", "n"], ["EXPIRE", "waitkey", "100"],
                 ["LPUSH", "l", "a"], ["FLUSHALL"], ["FLUSHDB"], ["GET", "waitkey"], ["EXISTS", "waitkey"],
                 ["PUBLISH", "ch", "m"], ["SELECT", "1"], ["SELECT", "0"]):
        out.append(("replica: " + " ".join(args), rc.call(*args).raw))
    m = r.client()
    out.append(("replica: MULTI, SET, GET, EXEC", [x.raw for x in m.pipeline(
        [["MULTI"], ["SET", "k", "v"], ["GET", "waitkey"], ["EXEC"]])]))
    out.append(("replica: MULTI, GET, EXEC", [x.raw for x in m.pipeline(
        [["MULTI"], ["GET", "waitkey"], ["EXEC"]])]))
    # REPLICAOF / SLAVEOF
    for args in (["REPLICAOF", HOST, str(p.port)], ["SLAVEOF", HOST, str(p.port)], ["REPLICAOF", HOST, "abc"],
                 ["REPLICAOF", HOST, "70000"], ["REPLICAOF", HOST, "-1"], ["REPLICAOF"], ["REPLICAOF", "no"],
                 ["REPLICAOF", "a", "b", "c"], ["SLAVEOF", HOST]):
        out.append(("replica: " + " ".join(subs.get(a, a) for a in args), rc.call(*args).raw))
    out.append(("primary: REPLICAOF NO ONE", pc.call("REPLICAOF", "NO", "ONE").raw))
    out.append(("primary: SLAVEOF no one", pc.call("SLAVEOF", "no", "one").raw))
    out.append(("primary: REPLICAOF host abc", pc.call("REPLICAOF", HOST, "abc").raw))
    out.append(("primary still a primary", pc.call("ROLE").py()[0]))
    out.append(("replica: REPLICAOF NO ONE", rc.call("REPLICAOF", "NO", "ONE").raw))
    out.append(("then ROLE", form(rc.call("ROLE"), subs)))
    out.append(("then a write", rc.call("SET", "k", "v").raw))
    out.append(("then WAIT 0 0", rc.call("WAIT", "0", "0").raw))
    out.append(("REPLICAOF NO ONE again", rc.call("REPLICAOF", "NO", "ONE").raw))
    out.append(("SLAVEOF host port", rc.call("SLAVEOF", HOST, str(p.port)).raw))
    linked = wait_link(rc) and wait_in_sync(pc, rc)
    out.append(("linked and in sync again", linked))
    out.append(("the replica's write is gone", rc.call("GET", "k").raw))
    out.append(("the primary's key is there", rc.call("GET", "waitkey").raw))
    out.append(("ROLE on the replica again", form(rc.call("ROLE"), subs)))
    for c in (pc, rc, w, m):
        c.close()
    return out


ref_p, ref_r = pair(True, "ref")
want = story(ref_p, ref_r)
got_p, got_r = pair(repl.is_redis(), "test")
got = story(got_p, got_r)
name = "redis-server (as the engine)" if repl.is_redis() else "zarisd"

NAMES = ("INFO replication names, primary", "INFO replication names, replica", "slave0's names")
for (step, w), (_, g) in zip(want, got):
    if step in NAMES:
        missing = sorted(set(w) - set(g))
        extra = sorted(set(g) - set(w))
        is_(missing, [], "%s: %s: every field redis-server has" % (name, step))
        if extra:
            diag("%s: %s: fields redis-server does not have: %s" % (name, step, ", ".join(extra)))
    else:
        is_(g, w, "%s: %s as redis-server" % (name, step))



def link_down_story(engine_redis, tag):
    """[(step, answer)]: master_link_down_since_seconds before any sync and
    after the primary stops."""
    saved = repl.ENGINE
    repl.ENGINE = "redis" if engine_redis else "zarisd"
    try:
        lone = repl.start_node("lone-" + tag, replicaof=(HOST, free_port()))
        p = repl.start_node("down-primary-" + tag)
        r = repl.start_node("down-replica-" + tag, replicaof=(HOST, p.port))
    finally:
        repl.ENGINE = saved
    out = []
    lc, pc, rc = lone.client(), p.client(), r.client()
    out.append(("never in sync: link status, down since", [info(lc).get(k) for k in (
        "master_link_status", "master_link_down_since_seconds")]))
    out.append(("in sync", wait_link(rc) and wait_in_sync(pc, rc)))
    out.append(("in sync: down since absent", info(rc).get("master_link_down_since_seconds")))
    pc.close()
    p.stop()
    down = wait_for(lambda: info(rc).get("master_link_status") == "down", 20.0 * SLOW)
    since = info(rc).get("master_link_down_since_seconds")
    out.append(("primary stopped: down, since a count of seconds",
                (down, since is not None and since.isdigit())))
    for c in (lc, rc):
        c.close()
    lone.stop()
    r.stop()
    return out


want = link_down_story(True, "ref")
got = link_down_story(repl.is_redis(), "test")
for (step, w), (_, g) in zip(want, got):
    is_(g, w, "%s: master_link_down_since_seconds: %s as redis-server" % (name, step))

# REPLICAOF to the server itself
ref = repl.start_node("self-ref") if repl.is_redis() else start_redis(extra=["--repl-diskless-sync-delay", "0"])
c = ref.client()
want_self = c.call("REPLICAOF", HOST, str(ref.port)).raw
diag("redis-server answers REPLICAOF <its own address>: %r, then ROLE %r" % (want_self, c.call("ROLE").py()))
ref.stop()
if repl.is_redis():
    skip("REPLICAOF to itself refused: zarisd's rule (redis-server takes it)")
    skip("and stays a primary: zarisd's rule")
else:
    z = repl.start_node("self", threads=2)
    zc = z.client()
    r = zc.call("REPLICAOF", HOST, str(z.port))
    ok(r.is_error(), "zarisd: REPLICAOF <its own address> is refused with an error (%r)" % r.raw)
    is_(zc.call("ROLE").py()[0], b"master", "zarisd: and it stays a primary")
sys.exit(done_testing())
