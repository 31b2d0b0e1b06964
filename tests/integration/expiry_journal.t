#!/usr/bin/python3
# expiry_journal.t — expiry is the primary's, and its log says so.
#
# 1. With appendonly yes, every key the active cycle expires and every key a
#    command meets expired (GET, INCR, DEL, inside MULTI/EXEC) is a DEL
#    record in the log: a lazy expiry's DEL comes right before the record of
#    the command that met the key (SET and MSET over an expired key expire it
#    first, as Redis's setKey: expired_keys counts it), inside EXEC it
#    carries the transaction's id, and a command whose only effect was the expiry (GET, DEL of an
#    expired key) has no record and counts no change (INFO
#    rdb_changes_since_last_save, as redis-server: the old binary counted
#    one and journaled the GET). A restart recovers the same keyspace.
# 2. Replica mode (DEBUG REPLICA-MODE 1, zarisd only): expired keys are
#    hidden, not deleted (GET nil, EXISTS 0, TYPE none, TTL -2, KEYS/SCAN
#    skip them, RANDOMKEY answers a live key, DBSIZE counts them), the
#    active cycle and eviction leave them, no DEL is journaled, and a DEL
#    still removes one — the replies compared with a redis-server replica
#    of a redis-server primary (DEBUG SET-ACTIVE-EXPIRE 0 there), whose
#    primary's DEL removes a hidden key as zarisd's DEL does (the replica
#    link that will carry zarisd's is the next issue's).
#
# The log is read from its segment files (journal/format.h): the records'
# fixed fields and commands; whatever follows them in a payload is skipped.
import os
import shutil
import struct
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from zaris import start_redis, start_zarisd, ok, is_, diag, done_testing  # noqa: E402

JR_CMD, JR_COMMIT = 1, 2
POLL = 0.05
POLL_STEPS = 400  # 20 s at most for anything the server does on its own


def varint(b, i):
    v = shift = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << shift
        shift += 7
        if not c & 0x80:
            return v, i


def read_log(logdir):
    """Every JR_CMD / JR_COMMIT of the segments in LOGDIR, in file order:
    ("cmd", seq, txn, [argv, ...]) or ("commit", seq, txn)."""
    out = []
    for name in sorted(f for f in os.listdir(logdir) if f.endswith(".zj")):
        data = open(os.path.join(logdir, name), "rb").read()
        i = 16
        while i + 8 <= len(data):
            plen, _crc = struct.unpack_from("<II", data, i)
            if i + 8 + plen > len(data):
                break  # a record being written
            p = data[i + 8:i + 8 + plen]
            i += 8 + plen
            if p[0] == JR_CMD:
                seq, _now, _db, txn, ncmds = struct.unpack_from("<QqIQI", p, 1)
                j = 1 + 8 + 8 + 4 + 8 + 4
                cmds = []
                for _ in range(ncmds):
                    argc, j = varint(p, j)
                    argv = []
                    for _ in range(argc):
                        n, j = varint(p, j)
                        argv.append(p[j:j + n].decode("latin-1"))
                        j += n
                    cmds.append(argv)
                out.append(("cmd", seq, txn, cmds))
            elif p[0] == JR_COMMIT:
                seq, txn = struct.unpack_from("<QQ", p, 1)
                out.append(("commit", seq, txn))
    return out


def argvs(log):
    """(seq, txn, argv) of every command of LOG, argv[0] upper-cased."""
    return [(r[1], r[2], [c[0].upper()] + c[1:]) for r in log if r[0] == "cmd" for c in r[3]]


def info_field(cl, field):
    text = cl.call("INFO", "all").py().decode()
    for line in text.split("\r\n"):
        if line.startswith(field + ":"):
            return line.split(":", 1)[1]
    return None


def changes(cl):
    return int(info_field(cl, "rdb_changes_since_last_save"))


def wait_for(what, cond):
    for _ in range(POLL_STEPS):
        if cond():
            return True
        time.sleep(POLL)
    diag("gave up waiting: %s" % what)
    return False


def dump(cl):
    """Every key with its type, value and whether it has a TTL."""
    out = {}
    for k in sorted(cl.call("KEYS", "*").py()):
        t = cl.call("TYPE", k).py()
        t = t.decode() if isinstance(t, bytes) else t
        v = cl.call("GET", k).py() if t == "string" else cl.call("LRANGE", k, 0, -1).py()
        out[k] = (t, v, cl.call("PTTL", k).py() >= 0)
    return out


def fence(cl, i):
    """With appendfsync always, a write's reply means every record before it
    is in the file (the log is written in sequence order)."""
    ok(cl.call("SET", "fence", i).py() == "OK", "fence %d written" % i)


def journal_part():
    d = tempfile.mkdtemp(prefix="zaris-expiry-")
    z = start_zarisd(threads=2, extra=["--enable-debug-command", "yes", "--dir", d, "--appendonly", "yes",
                                       "--appendfsync", "always", "--hz", "50"])
    logdir = os.path.join(d, "appendonlydir")
    cl = z.client()
    r = start_redis(extra=["--enable-debug-command", "yes"])
    rc = r.client()

    # --- the active cycle -------------------------------------------------------------
    for i in range(20):
        cl.call("SET", "act:%d" % i, "v", "PX", 30)
        cl.call("SET", "keep:%d" % i, "v")
    cl.call("RPUSH", "keep:list", "a", "b")
    cl.call("PEXPIRE", "keep:list", 3600000)
    ok(wait_for("the active cycle", lambda: cl.call("DBSIZE").py() == 21), "the active cycle expired 20 keys")
    fence(cl, 1)
    recs = argvs(read_log(logdir))
    dels = [a[1] for _, _, a in recs if a[0] == "DEL"]
    is_(sorted(dels), sorted("act:%d" % i for i in range(20)), "a DEL record for each key the cycle expired")
    sets = {a[1]: s for s, _, a in recs if a[0] == "SET"}
    ok(all(s > sets[a[1]] for s, _, a in recs if a[0] == "DEL"), "each after its key's SET")
    ok(all(t == 0 for _, t, a in recs if a[0] == "DEL"), "outside any transaction")

    # --- lazy expiry ----------------------------------------------------------------------
    for srv in (cl, rc):
        ok(srv.call("DEBUG", "SET-ACTIVE-EXPIRE", "0").py() == "OK", "DEBUG SET-ACTIVE-EXPIRE 0")
    cl.call("CONFIG", "SET", "hz", 1)  # the old binary has no SET-ACTIVE-EXPIRE: a rare cycle, retried
    steps = [
        ("GET", ["GET", "lz:get"]),
        ("INCR", ["INCR", "lz:incr"]),
        ("DEL", ["DEL", "lz:del"]),
        ("EXISTS", ["EXISTS", "lz:exists"]),
        ("APPEND", ["APPEND", "lz:append", "x"]),
        ("SET XX", ["SET", "lz:xx", "new", "XX"]),
        ("SET", ["SET", "lz:set", "new"]),
        ("MSET", ["MSET", "lz:mset", "new", "lz:other", "x"]),
    ]
    for name, cmd in steps:
        row = []
        for srv in (cl, rc):
            for _ in range(10):  # until the command, not a cycle, met the key expired
                srv.call("SET", cmd[1], "5", "PX", 20)
                time.sleep(0.1)  # past its TTL, nobody touched it
                expired, before = int(info_field(srv, "expired_keys")), changes(srv)
                reply = srv.call(*cmd).py()
                lazy = int(info_field(srv, "expired_keys")) == expired + 1
                if lazy:
                    break
            row.append((reply, changes(srv) - before, lazy))
        is_(row[0], row[1], "%s of an expired key: reply, change count, expiry as redis-server's %r" % (name, row[1]))
    cl.call("SET", "lz:x", "v", "PX", 20)
    time.sleep(0.1)
    is_(cl.pipeline([["MULTI"], ["GET", "lz:x"], ["SET", "lz:y", "1"], ["EXEC"]])[-1].py(), [None, "OK"],
        "MULTI GET <expired> SET EXEC")
    cl.call("SET", "lz:only", "v", "PX", 20)
    time.sleep(0.1)
    is_(cl.pipeline([["MULTI"], ["GET", "lz:only"], ["EXEC"]])[-1].py(), [None],
        "MULTI GET <expired> EXEC (the DEL its only record)")
    # a command that leaves its key past its TTL: Redis sets it so; expiry comes later
    is_(cl.call("SET", "lz:past", "v", "PXAT", 1).py(), "OK", "SET PXAT <past>")
    is_(cl.call("GET", "lz:past").py(), None, "then GET expires it")
    is_(cl.pipeline([["MULTI"], ["SET", "lz:tp", "v", "PXAT", 1], ["GET", "lz:tp"], ["EXEC"]])[-1].py(),
        ["OK", None], "MULTI SET PXAT <past>, GET EXEC")
    fence(cl, 2)
    log = read_log(logdir)
    recs = argvs(log)
    lz = [(s, t, a) for s, t, a in recs if len(a) > 1 and a[1].startswith("lz:")]
    seqs = {}
    for s, t, a in lz:
        seqs.setdefault((a[0], a[1]), []).append((s, t))
    for key in ("lz:get", "lz:incr", "lz:del", "lz:exists", "lz:append", "lz:xx", "lz:set", "lz:mset", "lz:x",
                "lz:only", "lz:past", "lz:tp"):
        is_(len(seqs.get(("DEL", key), [])), 1, "one DEL record for the expiry of %s" % key)
    is_([a for _, _, a in lz if a[0] in ("GET", "EXISTS")], [], "no record of a read that met an expired key")
    is_([a for _, _, a in lz if a == ["DEL", "lz:del"]], [["DEL", "lz:del"]],
        "DEL of an expired key: only the expiry's DEL")
    for cmd, key in (("INCR", "lz:incr"), ("APPEND", "lz:append"), ("SET", "lz:set"), ("MSET", "lz:mset")):
        d_seq = [s + 1 for s, _ in seqs.get(("DEL", key), [])]
        c_seq = [s for s, _, a in lz if a[:2] == [cmd, key] and "PX" not in a]  # not the set-up's
        is_(c_seq, d_seq, "%s on an expired key: DEL %s, then %s" % (cmd, key, cmd))
    is_([a for _, _, a in lz if a[:2] == ["SET", "lz:xx"] and "XX" in a], [],
        "SET XX on an expired key: the DEL, no SET record (it did nothing)")
    (dx, tx), = seqs.get(("DEL", "lz:x"), [(0, 0)])
    (sy, ty), = seqs.get(("SET", "lz:y"), [(0, 0)])
    commits = {r[2]: r[1] for r in log if r[0] == "commit"}
    ok(tx != 0 and tx == ty and dx < sy < commits.get(tx, 0),
       "inside EXEC the DEL is the transaction's (txn %d/%d), before SET and the commit" % (tx, ty))
    for key in ("lz:past", "lz:tp"):
        is_([(a[0], t != 0) for _, t, a in lz if a[1] == key], [("SET", key == "lz:tp"), ("DEL", key == "lz:tp")],
            "%s: SET <past> then the DEL of the GET that met it%s" % (key, " (both in the transaction)"
                                                                   if key == "lz:tp" else ""))
    (do, to), = seqs.get(("DEL", "lz:only"), [(0, 0)])
    ok(to != 0 and commits.get(to, 0) > do, "a transaction whose only record is a DEL is committed")

    before = dump(cl)
    z.restart()
    cl = z.client()
    is_(dump(cl), before, "a restart recovers the same keyspace (%d keys)" % len(before))
    is_(cl.call("DBSIZE").py(), len(before), "DBSIZE after the restart: no expired key came back")
    z.stop()
    shutil.rmtree(d, ignore_errors=True)


REPLICA_READS = [
    ["GET", "a"], ["EXISTS", "a", "b"], ["TYPE", "a"], ["TTL", "a"], ["PTTL", "a"], ["STRLEN", "a"],
    ["MGET", "a", "b"], ["LRANGE", "l", 0, -1], ["LLEN", "l"], ["OBJECT", "ENCODING", "a"], ["TOUCH", "a", "l"],
    ["KEYS", "*"], ["RANDOMKEY"], ["DBSIZE"],
]


def scan_all(cl):
    keys, cur = [], "0"
    while True:
        cur, batch = cl.call("SCAN", cur).py()
        keys += batch
        if cur in (b"0", "0"):
            return sorted(keys)


def replica_reads(cl):
    out = [(c, cl.call(*c).py()) for c in REPLICA_READS]
    out.append((["SCAN", "..."], scan_all(cl)))
    return out


def fill(cl):
    cl.call("SET", "a", "1", "PX", 100)
    cl.call("SET", "b", "2")
    cl.call("RPUSH", "l", "x")
    cl.call("PEXPIRE", "l", 100)
    cl.call("SET", "c", "3", "PX", 100)


def redis_replica_part():
    p = start_redis(extra=["--enable-debug-command", "yes"], name="redis-primary")
    r = start_redis(extra=["--replicaof", "127.0.0.1", str(p.port), "--replica-read-only", "no"],
                    name="redis-replica")
    pc, rc = p.client(), r.client()
    ok(wait_for("the redis replica's link",
                lambda: "master_link_status:up" in rc.call("INFO", "replication").py().decode()),
       "redis-server replica linked")
    pc.call("DEBUG", "SET-ACTIVE-EXPIRE", "0")
    fill(pc)
    off = info_field(pc, "master_repl_offset")
    ok(wait_for("the replica to catch up", lambda: info_field(rc, "slave_repl_offset") == off),
       "redis-server replica caught up")
    time.sleep(0.3)  # past every TTL
    reads = replica_reads(rc)
    steps = [("DEL c", rc.call("DEL", "c").py()), ("DBSIZE", rc.call("DBSIZE").py())]
    pc.call("GET", "a")  # the primary expires it and sends DEL a
    ok(wait_for("the primary's DEL", lambda: rc.call("DBSIZE").py() == 2),
       "redis-server: the primary's DEL removes the hidden key from its replica")
    return reads, steps, int(info_field(rc, "expired_keys"))


def zarisd_replica_part():
    d = tempfile.mkdtemp(prefix="zaris-replica-")
    z = start_zarisd(threads=2, extra=["--enable-debug-command", "yes", "--dir", d, "--appendonly", "yes",
                                       "--appendfsync", "always", "--hz", "50"])
    cl = z.client()
    logdir = os.path.join(d, "appendonlydir")
    is_(cl.call("DEBUG", "REPLICA-MODE", "1").py(), "OK", "DEBUG REPLICA-MODE 1")
    is_(cl.call("DEBUG", "REPLICA-MODE", "2").is_error(), True, "DEBUG REPLICA-MODE 2 refused")
    fill(cl)
    time.sleep(0.3)  # past every TTL; several active cycles at hz 50 meanwhile
    reads = replica_reads(cl)
    is_(cl.call("DBSIZE").py(), 4, "replica mode: the active cycle deleted nothing")
    steps = [("DEL c", cl.call("DEL", "c").py()), ("DBSIZE", cl.call("DBSIZE").py())]
    # eviction does not run either (Redis's replica-ignore-maxmemory)
    cl.call("CONFIG", "SET", "maxmemory-policy", "allkeys-random")
    cl.call("CONFIG", "SET", "maxmemory", 1)
    is_(cl.call("SET", "big", "x" * 1000).py(), "OK", "replica mode over maxmemory: a write is taken")
    cl.call("CONFIG", "SET", "maxmemory", 0)
    is_(info_field(cl, "evicted_keys"), "0", "nothing evicted")
    cl.call("DEL", "big")
    fence(cl, 3)
    dels = [a for _, _, a in argvs(read_log(logdir)) if a[0] == "DEL"]
    is_(dels, [["DEL", "c"], ["DEL", "big"]], "replica mode: no DEL journaled but the commands'")
    is_(cl.call("DEBUG", "REPLICA-MODE", "0").py(), "OK", "DEBUG REPLICA-MODE 0")
    ok(wait_for("the active cycle", lambda: cl.call("DBSIZE").py() == 2),
       "back to a primary: the active cycle deletes the hidden keys")
    fence(cl, 4)
    dels = [a[1] for _, _, a in argvs(read_log(logdir)) if a[0] == "DEL"]
    is_(sorted(dels[2:]), ["a", "l"], "and journals their DELs")
    z.stop()
    shutil.rmtree(d, ignore_errors=True)
    return reads, steps


def main():
    journal_part()
    want_reads, want_steps, redis_expired = redis_replica_part()
    got_reads, got_steps = zarisd_replica_part()
    for (cmd, want), (_, got) in zip(want_reads, got_reads):
        is_(got, want, "replica mode %s: as a redis-server replica" % " ".join(map(str, cmd)))
    is_(got_steps, want_steps, "replica mode DEL of a hidden key, then DBSIZE: as redis-server's")
    is_(redis_expired, 0, "redis-server replica counted no expiry")
    done_testing()


if __name__ == "__main__":
    main()
