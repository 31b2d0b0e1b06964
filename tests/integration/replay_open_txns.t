#!/usr/bin/python3
# replay_open_txns.t — the loader gates transactions with the writer's
# bound (JR_MAX_OPEN_TXN, 256 open at once), not a smaller one of its own.
# Logs written here frame by frame (format 1, which both this zarisd and
# c7244ab read): a record, then 65 transactions open at once, the first 64
# committed, the 65th never (a crash before its commit). Loading must leave
# out the 65th and, as for any transaction left open, every record after
# its first (the log is cut there): the first record only loads. c7244ab's
# loader kept only 64 open transactions, lost track of the 65th and applied
# everything, the 65th's records too, once the other 64 committed. 257 open
# transactions (more than a writer ever has) are refused, naming the file
# and offset; 256 load.

import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from zaris import *  # noqa: E402,F403
from zaris import HOST, SLOW, Client  # noqa: E402

_T = []
for _i in range(256):
    _c = _i
    for _ in range(8):
        _c = (_c >> 1) ^ 0x82F63B78 if _c & 1 else _c >> 1
    _T.append(_c)


def crc32c(b):
    c = 0xFFFFFFFF
    for x in b:
        c = _T[(c ^ x) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def varint(n):
    out = b""
    while n >= 0x80:
        out += bytes([(n & 0x7F) | 0x80])
        n >>= 7
    return out + bytes([n])


def bstr(s):
    s = s.encode() if isinstance(s, str) else s
    return varint(len(s)) + s


def frame(payload):
    return struct.pack("<II", len(payload), crc32c(payload)) + payload


def cmd(seq, txn, *argv):
    p = struct.pack("<BQQIQI", 1, seq, int(time.time() * 1000), 0, txn, 1)
    p += varint(len(argv)) + b"".join(bstr(a) for a in argv)
    return frame(p + varint(0))


def commit(seq, txn):
    return frame(struct.pack("<BQQ", 2, seq, txn))


def segment(frames):
    head = b"ZARISJNL" + struct.pack("<I", 1)
    head += struct.pack("<I", crc32c(head))
    return head + frame(struct.pack("<BQIQ", 3, 1, 0, int(time.time() * 1000))) + b"".join(frames)


def write_log(d, frames):
    os.makedirs(os.path.join(d, "appendonlydir"))
    with open(os.path.join(d, "appendonlydir", "appendonly.aof.%020d.zj" % 1), "wb") as f:
        f.write(segment(frames))


def start(d):
    """("started", {key: value}) or ("refused", output)."""
    return start_on_data(d, lambda c: {k: c.call("GET", k).py() for k in c.call("KEYS", "*").py()})


def open_txns(n, committed):
    """N transactions open at once (one record each: SET t<i>, then
    INCR partial for the last), the first COMMITTED committed."""
    frames, seq = [cmd(1, 0, "SET", "before", "1")], 1
    for t in range(1, n + 1):
        seq += 1
        frames.append(cmd(seq, t, "SET", "t%d" % t, "x"))
    seq += 1
    frames.append(cmd(seq, n, "INCR", "partial"))
    for t in range(1, committed + 1):
        seq += 1
        frames.append(commit(seq, t))
    return frames


plan(5)
d = tempfile.mkdtemp(prefix="zaris-replay-txns-")
try:
    write_log(os.path.join(d, "a"), open_txns(65, 64))
    how, got = start(os.path.join(d, "a"))
    ok(how == "started" and got.get(b"before") == b"1", "65 open transactions, 64 committed: started, "
       "the record before them loaded")
    ok(how == "started" and b"t65" not in got and b"partial" not in got and len(got) == 1,
       "the 65th, never committed, and what follows its first record are left out (c7244ab applied "
       "them): %s" % (sorted(got)[:5] if how == "started" else got))

    write_log(os.path.join(d, "b"), open_txns(256, 256))
    how, got = start(os.path.join(d, "b"))
    ok(how == "started" and len(got) == 258, "256 open at once, all committed: all loaded (%s)" % how)

    write_log(os.path.join(d, "c"), open_txns(257, 257))
    how, got = start(os.path.join(d, "c"))
    ok(how == "refused" and got.startswith("exit 1\n") and "more than 256 transactions open at once" in got,
       "257 open at once: refused")
    ok(how == "refused" and "appendonly.aof.%020d.zj at offset" % 1 in got, "naming the file and offset")
    if how == "refused":
        diag(got.strip().splitlines()[-1])
finally:
    shutil.rmtree(d, ignore_errors=True)
done_testing()
