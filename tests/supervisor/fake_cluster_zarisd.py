#!/usr/bin/python3
"""A stand-in zarisd for the supervisor's side of the topology contract
(zarisd/cluster/topology.h) while zarisd's cluster mode is built: takes
zarisd's flags, answers AUTH, PING, INFO (process_id, role), CONFIG SET,
REPLICAOF, and CLUSTER SETTOPOLOGY / TOPOLOGY with the contract's epoch
rules, keeping the document in <dir>/cluster-topology. It checks only
what the supervisor relies on (epoch first, myself, the epoch rules);
zarisd's own parser is tested on zarisd. Listens on --bind:--port only."""
import os
import socket
import sys
import threading


def flags(argv):
    out, k = {}, 1
    while k + 1 < len(argv):
        out[argv[k].lstrip("-")] = argv[k + 1]
        k += 2
    return out


F = flags(sys.argv)
DIR = F.get("dir", ".")
STATE = os.path.join(DIR, "cluster-topology")
lock = threading.Lock()
doc = open(STATE).read() if os.path.exists(STATE) else None


def epoch_of(d):
    first = [l for l in d.splitlines() if l.strip() and not l.strip().startswith("#")]
    if not first or not first[0].startswith("epoch "):
        return None
    try:
        return int(first[0].split()[1])
    except ValueError:
        return None


def canon(d):
    return sorted(" ".join(l.split("#")[0].split()) for l in d.splitlines() if l.split("#")[0].strip())


def settopology(new):
    global doc
    e = epoch_of(new)
    if e is None:
        return "-ERR topology line 1: the first line must be epoch <E>"
    ids = [l.split()[1] for l in new.splitlines() if l.startswith("node ")]
    me = [l.split()[1] for l in new.splitlines() if l.startswith("myself ")]
    if len(me) != 1 or me[0] not in ids:
        return "-ERR topology line 1: myself must name a node line"
    with lock:
        if doc is not None:
            c = epoch_of(doc)
            if e < c:
                return "-ERR topology epoch %d is older than the current epoch %d" % (e, c)
            if e == c and canon(doc) != canon(new):
                return "-ERR topology epoch %d is the current epoch with a different layout" % e
        tmp = STATE + ".tmp"
        with open(tmp, "w") as f:
            f.write(new)
        os.rename(tmp, STATE)
        doc = new
    return "+OK"


def bulk(s):
    if s is None:
        return b"$-1\r\n"
    b = s.encode()
    return b"$%d\r\n%s\r\n" % (len(b), b)


def answer(args):
    cmd = args[0].upper()
    if cmd in ("AUTH", "REPLICAOF") or (cmd == "CONFIG" and len(args) > 1):
        return b"+OK\r\n"
    if cmd == "PING":
        return b"+PONG\r\n"
    if cmd == "INFO":
        return bulk("# Server\r\nprocess_id:%d\r\n# Replication\r\nrole:master\r\nconnected_slaves:0\r\n"
                    "master_repl_offset:0\r\n" % os.getpid())
    if cmd == "CLUSTER" and len(args) == 3 and args[1].upper() == "SETTOPOLOGY":
        return (settopology(args[2]) + "\r\n").encode()
    if cmd == "CLUSTER" and len(args) == 2 and args[1].upper() == "TOPOLOGY":
        with lock:
            return bulk(doc)
    return b"-ERR unknown command\r\n"


def serve(conn):
    f = conn.makefile("rb")
    try:
        while True:
            line = f.readline()
            if not line:
                return
            n = int(line[1:])
            args = []
            for _ in range(n):
                ln = int(f.readline()[1:])
                args.append(f.read(ln + 2)[:-2].decode())
            conn.sendall(answer(args))
    except (OSError, ValueError):
        return
    finally:
        conn.close()


if F.get("cluster-enabled") != "yes":
    sys.exit("fake zarisd: started without --cluster-enabled yes")
srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind((F.get("bind", "127.0.0.1").split()[0], int(F["port"])))
srv.listen(16)
while True:
    c, _ = srv.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
