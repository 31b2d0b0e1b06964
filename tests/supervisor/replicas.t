#!/usr/bin/python3
"""The supervisor manages replicas: a node declared replica-of starts as a
replica of its primary (its address and port from the file, masterauth its
requirepass); zarisctl status shows role, link, offset and lag from INFO;
kill -9 of the replica and of the primary (each restarted by the
supervisor; the replica resyncs: link up again, data equal, nothing
acknowledged lost, with appendfsync always); a reload re-points without a
restart: replica-of removed (the replica becomes a primary and takes
writes), added back (a replica again, the primary's data), the primary's
port changed (its replica follows it there); a REPLICAOF by hand shows as
'!' in status and a reload puts the file's role back."""
import os
import re
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from svlib import *  # noqa: E402,F401

require_binaries()
why = replication_unsupported()
if why:
    skip_all(why)

PW = "s3cret"
pa, pb, pa2 = free_ports(3)
CLUSTER = 'requirepass = "%s"; appendonly = true; appendfsync = "always";' % PW


def conf(a_port=None, b_replica=True):
    a = {"name": "a", "port": a_port or pa}
    b = {"name": "b", "port": pb}
    if b_replica:
        b["replica-of"] = '"a"'
    return node_conf([a, b], cluster=CLUSTER)


def write_keys(port, prefix, n):
    r = client(port, PW)
    p = r.pipeline(transaction=False)
    for k in range(n):
        p.set("%s:%d" % (prefix, k), "v%d" % k)
    acked = sum(1 for x in p.execute() if x is True)
    r.close()
    return acked


def equal_data(primary, replica):
    a, b = keyspace(primary, PW), keyspace(replica, PW)
    return a == b and a, len(a), len(b)


sv = Supervisor(conf())
try:
    inst = sv.wait_all_up()
    ok(inst, "a and b up")
    ok(re.search(r"b: starts as a replica of a \(127\.0\.0\.1 %d\)" % pa, sv.log_text()),
       "the log says b starts as a replica of a, at a's address")
    ok("not supported yet" not in sv.log_text(), "no 'not supported yet' warning any more")
    ri = repl_info(pb, PW)
    ok(ri.get("role") == "slave" and ri.get("master_port") == pa and ri.get("master_host") == "127.0.0.1",
       "b runs as a replica of 127.0.0.1:%d (INFO: %s %s:%s)" % (pa, ri.get("role"), ri.get("master_host"),
                                                                ri.get("master_port")))
    ok(sv.wait_state("b", "up", pred=lambda i: i["link"] == "up", timeout=20),
       "b's link comes up (masterauth taken from the primary's requirepass)")

    # --- status: roles, link, offsets, lag ------------------------------------
    ok(write_keys(pa, "first", 200) == 200, "200 writes on a acknowledged")
    ok(wait_synced(pa, pb, PW), "b has applied them (offsets equal)")
    off = repl_info(pa, PW).get("master_repl_offset", -1)
    # offsets move on their own (a primary pings its replicas through the
    # stream): compare a's and b's within one status answer
    def caught_up():
        _, inst = sv.status()
        a, b = inst.get("a"), inst.get("b")
        return (a, b) if (a and b and isinstance(a["offset"], int) and a["offset"] >= off
                          and b["offset"] == a["offset"] and b["lag_bytes"] == 0) else None
    st = wait_for(caught_up, 10, step=0.05)
    a, b = st or (sv.instance("a"), sv.instance("b"))
    ok(st, "status: b's offset equals a's and its lag is 0 bytes (%s / %s, lag %s)"
       % (a["offset"], b["offset"], b["lag_bytes"]))
    ok(a["role"] == "primary" and a["declared_role"] == "primary" and a["as_declared"] is True,
       "status: a is a primary, as declared")
    ok(a["connected_replicas"] == 1 and a["link"] is None, "a: 1 connected replica, no link of its own")
    ok(isinstance(a["offset"], int) and a["offset"] >= off > 0,
       "a's offset is its master_repl_offset (%s, INFO said %s before)" % (a["offset"], off))
    ok(b["role"] == "replica" and b["replica_of"] == "a" and b["replicating_from"] == "a"
       and b["as_declared"] is True, "status: b is a replica of a, as declared")
    ok(b["link"] == "up" and b["sync_in_progress"] is False, "b's link is up, no sync in progress")
    ok(isinstance(b["last_io_seconds"], int) and b["last_io_seconds"] >= 0,
       "b: seconds since a was last heard (%s)" % b["last_io_seconds"])

    def text_rows():
        rc, out, _ = sv.ctl("status")
        ra = re.search(r"^a\s+\d+\s+primary\s+1 replica\s+(\d+)\s+-\s", out, re.M)
        rb = re.search(r"^b\s+\d+\s+replica of a\s+up\s+(\d+)\s+0B/\d+s\s", out, re.M)
        return out if ra and rb and ra.group(1) == rb.group(1) else None
    out = wait_for(text_rows, 10, step=0.05)
    if not ok(out, "text rows: a 'primary, 1 replica, OFFSET', b 'replica of a, up, the same OFFSET, 0B/Ns'"):
        diag(sv.ctl("status")[1])
    out = out or sv.ctl("status")[1]
    head = next((l for l in out.splitlines() if l.startswith("INSTANCE")), "")
    ok(all(h in head for h in ("ROLE", "LINK", "OFFSET", "LAG")), "text status has ROLE LINK OFFSET LAG")
    ok("!" not in out and "*" not in out, "no footnote: both run as declared")

    # --- the primary stopped: the replica's link shows down --------------------
    rc, _, _ = sv.ctl("stop", "a")
    ok(rc == 0 and sv.wait_state("b", "up", pred=lambda i: i["link"] == "down", timeout=10),
       "a stopped: status shows b's link down")
    rc, out, _ = sv.ctl("status")
    ok(re.search(r"^b\s+\d+\s+replica of a\s+down\s", out, re.M), "in the text too")
    ok(sv.ctl("start", "a")[0] == 0 and sv.wait_state("b", "up", pred=lambda i: i["link"] == "up", timeout=20),
       "a started again: b's link up")
    inst = sv.status()[1]

    # --- kill -9 of the replica -------------------------------------------------
    b0 = inst["b"]["pid"]
    os.kill(b0, signal.SIGKILL)
    ok(write_keys(pa, "while-b-down", 100) == 100, "100 writes on a while b is down")
    b1 = sv.wait_state("b", "up", pred=lambda i: i["pid"] != b0, timeout=20)
    ok(b1, "kill -9 of b: the supervisor restarts it (pid %s -> %s)" % (b0, b1 and b1["pid"]))
    ok(b1 and repl_info(pb, PW).get("role") == "slave", "restarted as a replica")
    ok(sv.wait_state("b", "up", pred=lambda i: i["link"] == "up", timeout=20), "b's link is up again")
    ok(wait_synced(pa, pb, PW), "b resynced")
    same, na, nb = equal_data(pa, pb)
    ok(same and na == 300, "data equal on a and b, the writes b missed included (%d / %d keys)" % (na, nb))

    # --- kill -9 of the primary -------------------------------------------------
    a0 = sv.instance("a")["pid"]
    os.kill(a0, signal.SIGKILL)
    a1 = sv.wait_state("a", "up", pred=lambda i: i["pid"] != a0, timeout=20)
    ok(a1, "kill -9 of a: the supervisor restarts it (pid %s -> %s)" % (a0, a1 and a1["pid"]))
    ok(sv.wait_state("b", "up", pred=lambda i: i["link"] == "up", timeout=20), "b's link is up again")
    ok(write_keys(pa, "after-a", 50) == 50, "a takes writes again")
    ok(wait_synced(pa, pb, PW), "b resynced with the restarted a")
    same, na, nb = equal_data(pa, pb)
    ok(same and na == 350, "data equal, nothing acknowledged lost (%d / %d keys)" % (na, nb))
    ok(sv.instance("b")["pid"] == b1["pid"], "b was not restarted for a's crash")

    # --- reload: replica-of removed -> b becomes a primary ----------------------
    bpid = sv.instance("b")["pid"]
    sv.write_conf(conf(b_replica=False))
    rc, out, err = sv.ctl("reload")
    ok(rc == 0, "reload without b's replica-of (%s)" % (out + err).strip())
    ok(wait_for(lambda: repl_info(pb, PW).get("role") == "master", 10), "b is a primary now (INFO role:master)")
    i = sv.wait_state("b", "up", pred=lambda i: i["role"] == "primary" and i["as_declared"])
    ok(i and i["pid"] == bpid, "status: b primary as declared, same pid (no restart)")
    ok(re.search(r"b: REPLICAOF NO ONE applied without restart", sv.log_text()), "logged as applied live")
    ok(sv.wait_state("a", "up", pred=lambda i: i["connected_replicas"] == 0), "a has no replica any more")
    try:
        client(pb, PW).set("only-on-b", "1")
        took = True
    except Exception as e:
        took = False
        diag(str(e))
    ok(took, "b takes writes")

    # --- reload: replica-of added back -> a replica again ----------------------
    sv.write_conf(conf())
    rc, out, err = sv.ctl("reload")
    ok(rc == 0, "reload with b's replica-of again")
    i = sv.wait_state("b", "up", pred=lambda i: i["role"] == "replica" and i["link"] == "up", timeout=20)
    ok(i and i["pid"] == bpid, "b is a replica of a again with its link up, same pid")
    ok(wait_synced(pa, pb, PW), "b synced with a")
    same, na, nb = equal_data(pa, pb)
    ok(same and na == 350, "b holds a's data again, its own write gone (%d / %d keys)" % (na, nb))
    try:
        client(pb, PW).set("x", "1")
        refused = None
    except Exception as e:
        refused = str(e)
    # (redis-py drops the READONLY code from the message)
    ok(refused and ("READONLY" in refused or "read only replica" in refused),
       "b refuses writes as a replica (%s)" % refused)

    # --- REPLICAOF by hand: '!' in status; a reload puts the file's role back --
    client(pb, PW).execute_command("REPLICAOF", "NO", "ONE")
    i = sv.wait_state("b", "up", pred=lambda i: i["role"] == "primary")
    ok(i and i["as_declared"] is False, "status: b runs as a primary against the file (as_declared false)")
    rc, out, _ = sv.ctl("status")
    ok(re.search(r"^b\s+\d+\s+primary!", out, re.M) and "not the role the file declares" in out,
       "text status marks it with '!' and explains")
    rc, out, err = sv.ctl("reload")
    i = sv.wait_state("b", "up", pred=lambda i: i["role"] == "replica" and i["as_declared"], timeout=10)
    ok(rc == 0 and i and i["pid"] == bpid, "a reload of the same file makes b a replica of a again")

    # --- reload: the primary moves to another port; its replica follows -------
    apid = sv.instance("a")["pid"]
    sv.write_conf(conf(a_port=pa2))
    rc, out, err = sv.ctl("reload", timeout=60)
    ok(rc == 0 and "restarting a" in out, "reload with a on another port restarts a (%s)" % (out + err).strip())
    i = sv.wait_state("b", "up", pred=lambda i: i["link"] == "up", timeout=20)
    ri = repl_info(pb, PW)
    ok(ri.get("master_port") == pa2 and i and i["pid"] == bpid,
       "b re-pointed to a's new port %d without a restart (master_port %s)" % (pa2, ri.get("master_port")))
    ok(i and i["replicating_from"] == "a" and i["as_declared"], "status: b replicates from a, as declared")
    ok(re.search(r"b: re-pointed live to a \(127\.0\.0\.1 %d\)" % pa2, sv.log_text()), "logged")
    ok(wait_synced(pa2, pb, PW), "b synced with a at its new port")
    same, na, nb = equal_data(pa2, pb)
    ok(same and na == 350, "data equal (%d / %d keys)" % (na, nb))
    ok(apid != sv.instance("a")["pid"], "a itself was restarted for its port")
finally:
    sv.cleanup()
done()
