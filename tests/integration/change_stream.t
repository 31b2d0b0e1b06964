#!/usr/bin/python3
"""change_stream: every write makes its journal record in the change stream,
with or without the append-only log (zarisd only: INFO persistence's
journal_seq, DEBUG CHANGE-STREAM).

With appendonly no and nothing consuming the stream, writes are numbered
and no record is kept; with the backlog on (DEBUG CHANGE-STREAM BACKLOG
1, what a replica's attach will do): a write advances journal_seq by one record, a read or
a write that changed nothing by none; MULTI/EXEC gives one record per
queued write, all with one txn id, then a commit; SPOP's record is its
effect (DEL, then the rebuild), not SPOP; an eviction is a DEL record of
the evicted key. With appendonly yes (appendfsync always) the same
commands: the records DEBUG CHANGE-STREAM shows are those the log's
segment files hold, seq for seq."""
import os
import shutil
import struct
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from zaris import *  # noqa: F401,F403

DIRS = []


def tmpdir():
    d = tempfile.mkdtemp(prefix="zaris-stream-")
    DIRS.append(d)
    return d


def start(d, *flags):
    return start_zarisd(threads=2, extra=["--dir", d, "--enable-debug-command", "local", "--save", ""]
                        + list(flags))


def journal_seq(c):
    text = c.callv("INFO", "persistence").decode()
    for line in text.splitlines():
        if line.startswith("journal_seq:"):
            return int(line.split(":", 1)[1])
    return None


def info_field(c, field):
    text = c.callv("INFO", "all").decode()
    for line in text.splitlines():
        if line.startswith(field + ":"):
            return line.split(":", 1)[1]
    return None


def records(c, n):
    """DEBUG CHANGE-STREAM n as (seq, txn, kind, [argv, ...]) tuples."""
    out = []
    for r in c.callv("DEBUG", "CHANGE-STREAM", str(n)):
        out.append((r[0], r[1], r[2].decode(), [list(a) for a in r[3:]]))
    return out


def scenario(c, label):
    """The commands both runs make; returns the checks' failures."""
    bad = []
    s0 = journal_seq(c)
    if s0 is None:
        return ["%s: no journal_seq in INFO persistence" % label]

    def expect(delta, what):
        got = journal_seq(c)
        if got != s0 + delta:
            bad.append("%s: after %s journal_seq %s, want %d" % (label, what, got, s0 + delta))

    c.call("SET", "a", "1")
    expect(1, "SET")
    rec = records(c, 1)
    if rec != [(s0 + 1, 0, "cmd", [[b"SET", b"a", b"1"]])]:
        bad.append("%s: SET's record %r" % (label, rec))
    c.call("GET", "a")
    c.call("EXISTS", "a", "nokey")
    c.call("DEL", "nokey")  # changes nothing: no record, as Redis propagates none
    c.call("SMEMBERS", "nokey")
    expect(1, "reads and a DEL of a missing key")

    c.call("MULTI")
    c.call("SET", "b", "1")
    c.call("INCR", "b")
    c.call("GET", "b")
    c.call("EXEC")
    expect(4, "MULTI SET INCR GET EXEC")
    rec = records(c, 3)
    txn = rec[0][1] if rec else 0
    want = [(s0 + 2, txn, "cmd", [[b"SET", b"b", b"1"]]), (s0 + 3, txn, "cmd", [[b"INCR", b"b"]]),
            (s0 + 4, txn, "commit", [])]
    if txn == 0 or rec != want:
        bad.append("%s: the transaction's records %r" % (label, rec))

    c.call("SADD", "s", "x", "y", "z")
    popped = c.callv("SPOP", "s")
    expect(6, "SADD SPOP")
    rec = records(c, 1)
    if not rec or rec[0][0] != s0 + 6 or rec[0][2] != "cmd":
        bad.append("%s: SPOP's record %r" % (label, rec))
    else:
        cmds = rec[0][3]
        members = sorted(m for cmd in cmds[1:] for m in cmd[2:])
        rest = sorted({b"x", b"y", b"z"} - {popped})
        if cmds[0] != [b"DEL", b"s"] or any(cmd[0].upper() == b"SPOP" for cmd in cmds) or members != rest:
            bad.append("%s: SPOP's record is not its effect: %r (popped %r)" % (label, cmds, popped))

    # an eviction: allkeys-random over a limit just above what is used
    value = b"v" * 1024  # small: every record of this part stays in the ring's 64 KiB tail
    for i in range(40):
        c.call("SET", "fill:%d" % i, value)
    base = journal_seq(c)
    evicted0 = int(info_field(c, "evicted_keys"))
    used = int(info_field(c, "used_memory"))
    c.call("CONFIG", "SET", "maxmemory-policy", "allkeys-random")
    c.call("CONFIG", "SET", "maxmemory", str(used + 16 * 1024))
    writes = 0
    for i in range(400):  # bounded: 400 kB over a 16 kB margin evicts
        c.call("SET", "more:%d" % i, value)
        writes += 1
        if int(info_field(c, "evicted_keys")) > evicted0 + 3:
            break
    c.call("CONFIG", "SET", "maxmemory", "0")
    evicted = int(info_field(c, "evicted_keys")) - evicted0
    got = journal_seq(c)
    if evicted <= 0 or got != base + writes + evicted:
        bad.append("%s: %d SETs and %d evictions took journal_seq from %d to %d" % (label, writes, evicted, base, got))
    dels = [r for r in records(c, writes + evicted) if r[2] == "cmd" and r[3][0][0] == b"DEL"]
    gone = [r for r in dels if len(r[3]) == 1 and len(r[3][0]) == 2 and c.callv("EXISTS", r[3][0][1]) == 0]
    if evicted <= 0 or len(dels) != evicted or len(gone) != evicted:
        bad.append("%s: %d evictions, DEL records %r" % (label, evicted, dels[:4]))
    return bad


def short(r):
    """A record for a note: arguments cut to 12 bytes."""
    cmds = " / ".join(" ".join(a[:12].decode(errors="replace") for a in cmd) for cmd in r[3])
    return "#%d txn %d %s %s" % (r[0], r[1], r[2], cmds)


def read_varint(b, i):
    v = shift = 0
    while True:
        x = b[i]
        i += 1
        v |= (x & 0x7F) << shift
        shift += 7
        if not x & 0x80:
            return v, i


def log_records(d):
    """Every JR_CMD / JR_COMMIT in the log's segments, as records() gives them."""
    ad = os.path.join(d, "appendonlydir")
    out = []
    for f in sorted(os.listdir(ad)):
        if not f.endswith(".zj"):
            continue
        with open(os.path.join(ad, f), "rb") as fh:
            data = fh.read()
        off = 16
        while off + 8 <= len(data):
            (plen,) = struct.unpack_from("<I", data, off)
            p = data[off + 8:off + 8 + plen]
            off += 8 + plen
            kind = p[0]
            if kind == 2:
                seq, txn = struct.unpack_from("<QQ", p, 1)
                out.append((seq, txn, "commit", []))
            elif kind == 1:
                seq, _now, _db, txn, ncmds = struct.unpack_from("<QqIQI", p, 1)
                i = 1 + 8 + 8 + 4 + 8 + 4
                cmds = []
                for _ in range(ncmds):
                    argc, i = read_varint(p, i)
                    argv = []
                    for _ in range(argc):
                        n, i = read_varint(p, i)
                        argv.append(bytes(p[i:i + n]))
                        i += n
                    cmds.append(argv)
                out.append((seq, txn, "cmd", cmds))
    return out


# --- appendonly no -------------------------------------------------------------------

d = tmpdir()
srv = start(d, "--appendonly", "no")
with srv.client() as c:
    ok(c.callv("CONFIG", "GET", "appendonly") == [b"appendonly", b"no"], "appendonly no")
    # nothing consumes the stream: writes are numbered, no record is kept
    # (as Redis keeps no backlog before a replica attaches)
    s0 = journal_seq(c)
    c.call("SET", "unkept", "1")
    c.call("INCR", "unkept")
    ok(journal_seq(c) == s0 + 2 and records(c, 10) == [],
       "appendonly no, no backlog: two writes numbered (journal_seq %d -> %s), no record kept"
       % (s0, journal_seq(c)))
    ok(c.call("DEBUG", "CHANGE-STREAM", "BACKLOG", "1").raw == b"+OK\r\n", "DEBUG CHANGE-STREAM BACKLOG 1")
    bad = scenario(c, "appendonly no")
    for b in bad:
        diag(b)
    ok(not bad, "appendonly no: one record per write, none per read, MULTI/EXEC gated by a commit, "
       "SPOP as its effect, evictions as DELs")
    seq = journal_seq(c)
    note("appendonly no: journal_seq %d; the last records: %s" % (seq, "; ".join(short(r) for r in records(c, 8))))
    ok(not os.path.exists(os.path.join(d, "appendonlydir")), "no log was written")
srv.stop()

# --- appendonly yes: the stream is what the log holds ------------------------------

d = tmpdir()
srv = start(d, "--appendonly", "yes", "--appendfsync", "always")
with srv.client() as c:
    bad = scenario(c, "appendonly yes")
    for b in bad:
        diag(b)
    ok(not bad, "appendonly yes: the same records")
    last = journal_seq(c)
    ok(info_field(c, "aof_last_seq") == str(last), "aof_last_seq is journal_seq (%d)" % last)
    in_ring = records(c, 100000)
    on_disk = log_records(d)
    # appendfsync always: every acknowledged record is in the file
    tail = [r for r in on_disk if r[0] >= in_ring[0][0]] if in_ring else []
    ok(in_ring and tail == in_ring and on_disk and on_disk[-1][0] == last,
       "the log's records are the stream's, seq for seq (%d in the ring, %d on disk, last %d)"
       % (len(in_ring), len(on_disk), last))
    if tail != in_ring:
        for a, b in zip(in_ring, tail):
            if a != b:
                diag("first difference: stream %r, log %r" % (a, b))
                break
srv.stop()

for x in DIRS:
    shutil.rmtree(x, ignore_errors=True)
done_testing()
