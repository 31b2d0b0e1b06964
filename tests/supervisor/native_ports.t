#!/usr/bin/python3
"""Native ports through the supervisor, real zarisd: a 3-node cluster file
on loopback (cluster mode) whose p1 takes the cluster's native-port and p2,
p3 their own starts every instance with --native-port N (CONFIG GET
native-port over RESP answers the declared port on each node); the
document pushed to every node, and the supervisor's state file, carry
`native <port>` on each node line; zarisctl status shows the NATIVE column
and --json native_port; a reload that moves p2's native port restarts p2
only and pushes epoch + 1 with the new port everywhere. Skips while zarisd
has no native-port setting or no cluster mode."""
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from svlib import *  # noqa: E402,F401

require_binaries()


def zarisd_takes_native_port():
    """Whether this zarisd starts with --native-port and --cluster-enabled yes
    and answers CONFIG GET native-port with the port and CLUSTER TOPOLOGY."""
    port, nport = free_ports(2)
    tmp = tempfile.mkdtemp(prefix="znat-probe-")
    p = subprocess.Popen([ZARISD, "--port", str(port), "--bind", "127.0.0.1", "--dir", tmp,
                          "--cluster-enabled", "yes", "--native-port", str(nport)],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        if not wait_for(lambda: p.poll() is not None or ping(port), 5) or p.poll() is not None:
            return False
        try:
            c = client(port)
            c.execute_command("CLUSTER", "TOPOLOGY")
            return config_native(port) == nport
        except redis.ResponseError:
            return False
    finally:
        if p.poll() is None:
            p.kill()
        p.wait()
        shutil.rmtree(tmp, ignore_errors=True)


def config_native(port):
    """CONFIG GET native-port of the instance on PORT, as an int (None on error)."""
    try:
        r = client(port).config_get("native-port")
        return int(r.get("native-port", r.get(b"native-port")))
    except Exception as e:  # noqa: BLE001
        diag("CONFIG GET native-port on %d: %s" % (port, e))
        return None


def doc(port):
    try:
        d = client(port).execute_command("CLUSTER", "TOPOLOGY")
        return d.decode() if isinstance(d, bytes) else d
    except Exception as e:  # noqa: BLE001
        return "error: %s" % e


def node_lines(d):
    """{node name: its line} of topology document D."""
    out = {}
    for line in d.splitlines():
        w = line.split("#")[0].split()
        if len(w) >= 6 and w[0] == "node":
            out[w[2]] = " ".join(w)
    return out


def native_in(line):
    w = line.split()
    return int(w[-1]) if len(w) >= 2 and w[-2] == "native" else 0


if not zarisd_takes_native_port():
    skip_all("zarisd has no native-port setting or no cluster mode yet")

names = ["p1", "p2", "p3"]
ports = free_ports(7)
P = dict(zip(names, ports[:3]))


def conf(p2_native):
    """p1 inherits the cluster's native-port, p2 and p3 declare their own."""
    natives = {"p1": None, "p2": p2_native, "p3": ports[5]}
    nodes = []
    for n in names:
        d = {"name": n, "port": P[n]}
        if natives[n]:
            d["native-port"] = str(natives[n])
        nodes.append(d)
    return node_conf(nodes, cluster="enabled = true; native-port = %d;" % ports[3])


def synced(sv, epoch):
    sup, inst = sv.status()
    return sup and sup["cluster_epoch"] == epoch and inst and all(i["topology_synced"] for i in inst.values())


want = {"p1": ports[3], "p2": ports[4], "p3": ports[5]}
sv = Supervisor(conf(ports[4]))
try:
    ok(sv.wait_all_up(20), "three instances up in cluster mode")
    ok(wait_for(lambda: synced(sv, 1), 15), "all have the topology at epoch 1")
    got = {n: config_native(P[n]) for n in names}
    ok(got == want, "CONFIG GET native-port answers the declared port on each node: %s (want %s)" % (got, want))

    docs = {n: doc(P[n]) for n in names}
    every = all({m: native_in(l) for m, l in node_lines(docs[n]).items()} == want for n in names)
    if not ok(every, "every node's pushed document has each node's native port"):
        diag(docs["p1"])
    ok(all(node_lines(docs["p1"])[n].endswith(" native %d" % want[n]) for n in names),
       "as the last two words of its node line")
    state = open(os.path.join(sv.dir, "supervisor-topology")).read()
    ok({m: native_in(l) for m, l in node_lines(state).items()} == want,
       "the supervisor's state file keeps them")

    rc, out, _ = sv.ctl("status")
    head = next((l for l in out.splitlines() if l.startswith("INSTANCE")), "")
    row = next((l for l in out.splitlines() if l.startswith("p2 ")), "")
    ok(rc == 0 and "NATIVE" in head and (" %d " % ports[4]) in row, "zarisctl status: NATIVE column: %s" % row)
    sup, inst = sv.status()
    ok({n: inst[n]["native_port"] for n in names} == want, "--json status: native_port of each instance")

    # --- reload: p2's native port moves; only p2 restarts -------------------
    pids = {n: i["pid"] for n, i in inst.items()}
    sv.write_conf(conf(ports[6]))
    rc, out, err = sv.ctl("reload")
    ok(rc == 0, "reload moving p2's native port (%s)" % (err.strip() or "ok"))
    want2 = dict(want, p2=ports[6])
    ok(wait_for(lambda: synced(sv, 2), 20), "epoch 2 pushed everywhere")
    ok(wait_for(lambda: config_native(P["p2"]) == ports[6], 10), "p2 runs with its new native port")
    ok(all({m: native_in(l) for m, l in node_lines(doc(P[n])).items()} == want2 for n in names),
       "every document has p2's new native port")
    inst = sv.status()[1]
    ok(all(inst[n]["pid"] == pids[n] for n in ("p1", "p3")) and inst["p2"]["pid"] != pids["p2"],
       "only p2 restarted")

    # --- a reload with a native port that collides is refused ---------------
    sv.write_conf(conf(P["p1"]))
    rc, out, err = sv.ctl("reload")
    ok(rc == 1 and "is node 'p1''s port" in err, "a native port on p1's port is refused: %s" % err.strip())
    ok(synced(sv, 2) and config_native(P["p2"]) == ports[6], "and the cluster is as it was")
finally:
    sv.cleanup()
done()
