#!/usr/bin/python3
# journal_keys.t — the journal records the version of every key a command
# names, the keys a count argument names included (commands/keyiter.h),
# and a restart from the log restores those versions.
#
# With appendonly yes (appendfsync always: a reply means the record is in
# the file), LMPOP, ZMPOP, BLMPOP (served at once) and ZUNIONSTORE name
# keys through their numkeys argument. The test reads the log segments
# (journal/format.h: 16-byte file header, frames of u32 length, u32 CRC,
# payload; a JR_CMD payload is kind, seq, now, db, txn, the commands and
# then the versions: a varint count of (key, u64 version)) and checks each
# record's version list: the keys that exist after the command, in the
# order the command names them, none for a key the command emptied or that
# never existed. Then zarisd restarts from the log, SAVEs, and the
# snapshot's entries (JR_SNAP_OBJ: db, type, expire, version, key) carry
# those same versions: replay restored them. (Before the one key
# iterator, such records carried no version for counted keys, and a
# replayed key took a new one.) SWAPDB is journaled: it stamps no key, and
# a command that stamped and freed nothing was not journaled at all, so a
# restart from the log undid every SWAPDB.

import os
import shutil
import struct
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from zaris import *  # noqa: E402,F403

JR_CMD, JR_SNAP_OBJ = 1, 12


def varint(b, p):
    v = shift = 0
    while True:
        x = b[p]
        p += 1
        v |= (x & 0x7F) << shift
        shift += 7
        if not x & 0x80:
            return v, p


def blob(b, p):
    n, p = varint(b, p)
    return b[p:p + n], p + n


def frames(path):
    """(kind, payload) of every frame of the file at PATH, or [] when it is
    not a journal or snapshot file."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 16 or data[:8] not in (b"ZARISJNL", b"ZARISSNP"):
        return []
    out, p = [], 16
    while p + 8 <= len(data):
        plen, _ = struct.unpack_from("<II", data, p)
        out.append((data[p + 8], data[p + 8:p + 8 + plen]))
        p += 8 + plen
    return out


def data_files(d, magic):
    found = []
    for root, _, names in os.walk(d):
        for n in names:
            path = os.path.join(root, n)
            with open(path, "rb") as f:
                if f.read(8) == magic:
                    found.append(path)
    return sorted(found)


def records(d):
    """Every JR_CMD of the log: (commands as lists of bytes, [(key, version)])."""
    out = []
    for path in data_files(d, b"ZARISJNL"):
        for kind, pl in frames(path):
            if kind != JR_CMD:
                continue
            p = 1 + 8 + 8 + 4 + 8
            (ncmds,) = struct.unpack_from("<I", pl, p)
            p += 4
            cmds = []
            for _ in range(ncmds):
                argc, p = varint(pl, p)
                argv = []
                for _ in range(argc):
                    a, p = blob(pl, p)
                    argv.append(a)
                cmds.append(argv)
            nver, p = varint(pl, p)
            vers = []
            for _ in range(nver):
                k, p = blob(pl, p)
                (v,) = struct.unpack_from("<Q", pl, p)
                p += 8
                vers.append((k, v))
            out.append((cmds, vers))
    return out


def snapshot_versions(d):
    out = {}
    for path in data_files(d, b"ZARISSNP"):
        for kind, pl in frames(path):
            if kind == JR_SNAP_OBJ:
                p = 1 + 4 + 1 + 8
                (v,) = struct.unpack_from("<Q", pl, p)
                k, _ = blob(pl, p + 8)
                out[k] = v
    return out


plan(8)
d = tempfile.mkdtemp(prefix="zaris-journal-keys-")
z = start_zarisd(threads=2, extra=["--dir", d, "--save", "", "--appendonly", "yes", "--appendfsync", "always"])
c = z.client()
setup = [("RPUSH", "l", "a", "b", "c"), ("RPUSH", "l2", "x"), ("ZADD", "z", "1", "a", "2", "b"),
         ("ZADD", "za", "1", "m"), ("ZADD", "zb", "2", "n"), ("RPUSH", "bl", "p", "q")]
for cmd in setup:
    c.callv(*cmd)
cases = [
    # command, the keys whose versions its record must carry
    (("LMPOP", "1", "l", "LEFT"), [b"l"]),
    (("LMPOP", "2", "nolist", "l2", "RIGHT"), []),  # l2 emptied: deleted; nolist never was
    (("ZMPOP", "2", "nozset", "z", "MIN"), [b"z"]),
    (("BLMPOP", "0", "1", "bl", "LEFT"), [b"bl"]),
    (("ZUNIONSTORE", "zu", "2", "za", "zb"), [b"zu", b"za", b"zb"]),
]
for cmd, _ in cases:
    r = c.call(*cmd)
    if r.is_error():
        diag("%r -> %r" % (cmd, r.value))
recs = records(d)
ok(len(recs) >= len(setup) + len(cases), "the log holds %d records" % len(recs))
by_name = {}
for cmds, vers in recs:
    by_name.setdefault(tuple(cmds[0]), vers)
want_versions = {}
for cmd, keys in cases:
    vers = by_name.get(tuple(a.encode() for a in cmd))
    is_([k for k, _ in vers] if vers is not None else None, keys,
        "%s: the record carries the versions of %s" % (" ".join(cmd), keys or "no key"))
    for k, v in vers or []:
        want_versions[k] = v
c.callv("SET", "swapped", "1")
c.callv("SWAPDB", "0", "1")
c.close()

z.restart()
c = z.client()
c.callv("SAVE")
snap = snapshot_versions(d)
restored = {k: snap.get(k) for k in (b"l", b"z", b"bl", b"zu")}
is_(restored, {k: want_versions.get(k) for k in restored},
    "after a restart from the log, LMPOP's, ZMPOP's, BLMPOP's and ZUNIONSTORE's keys have the versions recorded")
where = [c.callv("SELECT", db) and c.callv("EXISTS", "swapped") for db in ("0", "1")]
is_(where, [0, 1], "SWAPDB is journaled: after the restart the key set in db 0 is in db 1")
c.close()
z.cleanup()
shutil.rmtree(d, ignore_errors=True)
sys.exit(done_testing())
