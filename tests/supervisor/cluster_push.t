#!/usr/bin/python3
"""The supervisor's side of the topology contract, against a stand-in
zarisd (fake_cluster_zarisd.py) that keeps and checks what is pushed: a
3+3 cluster file on loopback gets every instance its document (its own
`myself`, node ids = sha1("<cluster>/<node>"), the redis-cli split) at one
epoch kept in <dir>/supervisor-topology; kill -9 of an instance restarts
it and it is pushed again; an instance that restarts with a newer epoch
than ours is passed; a reload moving a node's address restarts that node
only and pushes epoch + 1 everywhere; a reload moving slots (or switching
cluster mode) is refused and nothing changes. CLUSTER_PUSH_ZARISD=real
runs the same against zarisd itself (cluster.t has the client side)."""
import hashlib
import os
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from svlib import *  # noqa: E402,F401

require_binaries()
# CLUSTER_PUSH_ZARISD=real runs it against zarisd itself
FAKE = ZARISD if os.environ.get("CLUSTER_PUSH_ZARISD") == "real" else os.path.join(HERE, "fake_cluster_zarisd.py")
ports = free_ports(7)
names = ["p1", "p2", "p3", "r1", "r2", "r3"]


def nodes(p3_port=ports[2], p1_slots=None):
    out = []
    for k, n in enumerate(names):
        d = {"name": n, "port": ports[k] if not (n == "p3") else p3_port}
        if n.startswith("r"):
            d["replica-of"] = '"p%s"' % n[1]
        elif p1_slots:
            d["slots"] = '"%s"' % p1_slots[n]
        out.append(d)
    return out


def conf(**kw):
    return node_conf(nodes(**kw), cluster="enabled = true;")


def nid(n):
    return hashlib.sha1(("test/" + n).encode()).hexdigest()


def topo(port):
    try:
        return client(port).execute_command("CLUSTER", "TOPOLOGY")
    except Exception as e:  # noqa: BLE001
        return "error: %s" % e


def epochs(inst_ports):
    out = {}
    for n, p in inst_ports.items():
        d = topo(p)
        out[n] = int(d.split("\n")[0].split()[1]) if d and d.startswith("epoch ") else None
    return out


def all_at(sv, epoch, inst_ports, timeout=10.0):
    return wait_for(lambda: set(epochs(inst_ports).values()) == {epoch}, timeout)


sv = Supervisor(conf(), zarisd=FAKE)
try:
    inst = sv.wait_all_up()
    ok(inst and len(inst) == 6, "six instances up with --cluster-enabled yes")
    P = dict(zip(names, ports[:6]))
    ok(all_at(sv, 1, P), "every instance got a document at epoch 1: %s" % epochs(P))
    d = topo(P["p2"])
    lines = d.splitlines()
    ok(lines[0] == "epoch 1" and "myself %s" % nid("p2") in lines, "p2's document names p2 as myself")
    want = ["node %s p1 127.0.0.1 %d primary 0-5460" % (nid("p1"), P["p1"]),
            "node %s p2 127.0.0.1 %d primary 5461-10922" % (nid("p2"), P["p2"]),
            "node %s p3 127.0.0.1 %d primary 10923-16383" % (nid("p3"), P["p3"]),
            "node %s r1 127.0.0.1 %d replica %s" % (nid("r1"), P["r1"], nid("p1"))]
    if not ok(all(w in lines for w in want) and "cluster test" in lines,
              "nodes, redis-cli's split and replicas by primary id"):
        diag(d)
    state = os.path.join(sv.dir, "supervisor-topology")
    ok(os.path.exists(state) and "epoch 1" in open(state).read(), "epoch kept in %s" % state)
    rc, out, _ = sv.ctl("status")
    ok("topology epoch 1, 6/6" in out and "0-5460 e1" in out and "(0-5460) e1" in out,
       "zarisctl status: epoch and each instance's slots")
    sup, inst = sv.status()
    ok(sup["cluster_epoch"] == 1 and inst["p1"]["slots"] == "0-5460" and inst["p1"]["topology_synced"],
       "--json status: cluster_epoch, slots, topology_synced")

    # --- kill -9: restarted and pushed again ---------------------------------
    old = inst["p2"]["pid"]
    os.unlink(os.path.join(sv.dir, "p2", "cluster-topology"))
    os.kill(old, signal.SIGKILL)
    ok(sv.wait_state("p2", "up", pred=lambda i: i["pid"] != old), "p2 restarted after kill -9")
    ok(wait_for(lambda: epochs({"p2": P["p2"]})["p2"] == 1, 10), "and pushed epoch 1 again")

    # --- an instance ahead of us: the epoch passes it ------------------------
    c = client(P["r3"])
    ahead = topo(P["r3"]).replace("epoch 1\n", "epoch 7\n")
    ok(c.execute_command("CLUSTER", "SETTOPOLOGY", ahead) in (b"OK", "OK", True), "r3 given epoch 7 by hand")
    ok(all_at(sv, 8, P), "every instance moves to epoch 8: %s" % epochs(P))

    # --- reload: p3 moves to another port (not its slots) --------------------
    pids = {n: i["pid"] for n, i in sv.status()[1].items()}
    sv.write_conf(conf(p3_port=ports[6]))
    rc, out, err = sv.ctl("reload")
    ok(rc == 0, "reload with p3 on a new port (%s)" % (err.strip() or "ok"))
    P2 = dict(P, p3=ports[6])
    ok(all_at(sv, 9, P2), "epoch 9 pushed everywhere: %s" % epochs(P2))
    ok("node %s p3 127.0.0.1 %d primary 10923-16383" % (nid("p3"), ports[6]) in topo(P["p1"]),
       "p1's document has p3's new address")
    inst = sv.status()[1]
    ok(all(inst[n]["pid"] == pids[n] for n in names if n != "p3") and inst["p3"]["pid"] != pids["p3"],
       "only p3 restarted")

    # --- reload moving slots: refused, nothing changes -----------------------
    moved = {"p1": "0-5000", "p2": "5001-10922", "p3": "10923-16383"}
    sv.write_conf(node_conf(nodes(p3_port=ports[6], p1_slots=moved), cluster="enabled = true;"))
    rc, out, err = sv.ctl("reload")
    ok(rc == 1 and "slot moves come later" in err and "5001-5460 from p1 to p2" in err,
       "a reload moving slots is refused: %s" % err.strip())
    ok(epochs(P2) == {n: 9 for n in names} and sv.status()[0]["cluster_epoch"] == 9,
       "the running cluster is as it was (epoch 9)")
    sv.write_conf(node_conf(nodes(p3_port=ports[6]), cluster=""))
    rc, out, err = sv.ctl("reload")
    ok(rc == 1 and "cluster mode cannot be switched off" in err, "switching cluster mode off is refused")
finally:
    sv.cleanup()
done()
