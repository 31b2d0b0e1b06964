#!/usr/bin/python3
# disk_full.t — the append-only log on a full disk: nothing acknowledged is
# lost, and nothing is acknowledged that is not in the file.
#
# zarisd runs with its data directory on a small tmpfs mounted in a mount
# namespace of its own (unshare -m; the test reaches the files through
# /proc/PID/root). A filler file leaves room for a few records; then:
#  - the write whose record does not fit gets no reply (it is held, not
#    acknowledged), other writes are refused with Redis's -MISCONF error
#    (in MULTI too: EXEC answers EXECABORT; the refusals are compared with
#    redis-server's on the same full disk), reads and PING are served and
#    INFO says aof_last_write_status:err; a BGSAVE (which cuts the log into
#    a new segment) fails on the full disk;
#  - once the filler is removed the kept records are written: the held
#    write is acknowledged, writes are accepted again, status ok;
#  - a zarisd started on a copy of the log has every acknowledged write and
#    none of the refused ones (the log is not torn by the failed writes).
# Both fsync policies that hold replies for the log (always, everysec).
#
# It was a zarisd bug: a failed write dropped the records, marked them
# durable and acknowledged them, so a restart silently lost them.

import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from zaris import *  # noqa: E402,F403
from zaris import HOST, Server  # noqa: E402

if os.geteuid() != 0 or shutil.which("unshare") is None:
    skip_all("needs root and unshare(1) (util-linux) for a private tmpfs")

VALUE = "v" * 8192
TMPFS = 1024 * 1024
FILLER = 768 * 1024


def start_on_tmpfs(d, fsync, redis=False):
    """zarisd (or redis-server) with --dir D on a tmpfs of its own, the
    filler in place."""
    exe = (shutil.which("redis-server") or "/usr/bin/redis-server") if redis else zarisd_path()
    extra = "" if redis else "--threads 2"

    def argv(port):
        inner = ("mount -t tmpfs -o size=%d zaris-full %s && exec %s --port %d --bind %s %s "
                 "--dir %s --appendonly yes --appendfsync %s --save ''"
                 % (TMPFS, d, exe, port, HOST, extra, d, fsync))
        return ["unshare", "-m", "--propagation", "private", "sh", "-c", inner]
    srv = Server(("redis-server" if redis else "zarisd") + "-tmpfs-" + fsync, argv)
    with open(os.path.join("/proc/%d/root%s" % (srv.pid, d), "filler"), "wb") as f:
        f.write(b"\0" * FILLER)
    return srv


def fill(w):
    """SETs 8 KiB values until one is not answered +OK within 2 s: returns
    the keys acknowledged, and the key and reply (None: held) that stopped."""
    acked = []
    # bounded: 200 x 8 KiB is more than the room left
    for i in range(200):
        key = "k%d" % i
        w.send("SET", key, VALUE)
        w.settimeout(2.0 * SLOW)
        try:
            r = w.read_reply().raw
        except OSError:  # socket.timeout: the reply is held
            return acked, key, None
        if r != b"+OK\r\n":
            return acked, key, r
        acked.append(key)
    return acked, None, None


def refusals(srv, m):
    """What a full log's refusals look like; M queued a SET before."""
    c = srv.client()
    got = [c.call("SET", "refused", "x").raw,
           c.call("MULTI").raw, c.call("SET", "refused2", "x").raw, c.call("EXEC").raw,
           m.call("EXEC").raw]
    c.close()
    return got


def redis_refusals():
    """redis-server 7.0 on the same full disk (everysec: with always it
    exits on the first failed write)."""
    d = tempfile.mkdtemp(prefix="redis-full-")
    srv = start_on_tmpfs(d, "everysec", redis=True)
    m = srv.client()
    m.call("MULTI")
    m.call("SET", "queued-before", "1")
    w = srv.client()
    fill(w)
    # a write it put off (a background fsync still running) fails later:
    # the refusals are read once its error is on
    with srv.client() as c:
        wait_until(lambda: info_field(c, "persistence", "aof_last_write_status") == "err")
    got = refusals(srv, m)
    m.close()
    w.close()
    srv.stop()
    srv.cleanup()
    os.rmdir(d)
    return got


def info_field(c, section, name):
    raw = c.call("INFO", section).raw.decode()
    for line in raw.split("\r\n"):
        if line.startswith(name + ":"):
            return line.split(":", 1)[1]
    return None


def story(fsync, want_refusals):
    d = tempfile.mkdtemp(prefix="zaris-full-")
    srv = start_on_tmpfs(d, fsync)
    inside = "/proc/%d/root%s" % (srv.pid, d)
    m = srv.client()
    m.call("MULTI")
    m.call("SET", "queued-before", "1")
    w = srv.client()
    acked, held, r = fill(w)
    ok(held is not None and r is None and len(acked) > 5,
       "%s: the write that does not fit is held without a reply (%d acknowledged before; %r)"
       % (fsync, len(acked), r))
    got = refusals(srv, m)
    is_(got[0], b"-MISCONF Errors writing to the AOF file: No space left on device\r\n",
        "%s: other writes get Redis's -MISCONF error" % fsync)
    is_(got, want_refusals,
        "%s: the refusals as redis-server's on a full disk: the write, a write queued in "
        "MULTI (EXEC aborts), EXEC of a transaction queued before" % fsync)
    c = srv.client()
    is_([c.call("GET", acked[0]).raw[:6], c.call("PING").raw, info_field(c, "persistence",
                                                                          "aof_last_write_status")],
        [b"$8192\r", b"+PONG\r\n", "err"],
        "%s: reads and PING are served; aof_last_write_status:err" % fsync)

    # a snapshot meanwhile cuts the log (a new segment); its bytes wait
    # behind the kept ones, and the snapshot itself fails on the full disk
    bg = c.call("BGSAVE").raw
    for _ in range(100):
        if info_field(c, "persistence", "rdb_bgsave_in_progress") == "0":
            break
        time.sleep(0.05)
    is_([bg, info_field(c, "persistence", "rdb_last_bgsave_status")],
        [b"+Background saving started\r\n", "err"],
        "%s: BGSAVE on the full disk starts and fails" % fsync)
    os.unlink(os.path.join(inside, "filler"))
    w.settimeout(10.0 * SLOW)
    try:
        r = w.read_reply().raw
    except OSError as e:
        r = "no reply: %s" % e
    is_(r, b"+OK\r\n", "%s: with room again the held write is acknowledged" % fsync)
    if r == b"+OK\r\n":
        acked.append(held)
    is_([w.call("SET", "after", "y").raw, info_field(c, "persistence", "aof_last_write_status")],
        [b"+OK\r\n", "ok"], "%s: writes are accepted again, status ok" % fsync)
    acked.append("after")

    copy = tempfile.mkdtemp(prefix="zaris-full-copy-")
    shutil.copytree(os.path.join(inside, "appendonlydir"), os.path.join(copy, "appendonlydir"))
    segs = sorted(os.listdir(os.path.join(copy, "appendonlydir")))
    ok(len(segs) == 2, "%s: the snapshot's cut waited for the kept records, then opened its segment (%s)"
       % (fsync, " ".join(segs)))
    w.close()
    c.close()
    m.close()
    srv.stop()
    srv.cleanup()
    again = start_zarisd(threads=2, extra=["--dir", copy, "--appendonly", "yes", "--save", ""],
                         name="zarisd-reload-" + fsync)
    r = again.client()
    missing = [k for k in acked if r.call("EXISTS", k).raw != b":1\r\n"]
    is_(missing, [], "%s: a restart from the log has all %d acknowledged writes" % (fsync, len(acked)))
    is_([r.call("EXISTS", "refused").raw, r.call("EXISTS", "refused2").raw,
         r.call("EXISTS", "queued-before").raw,
         r.call("GET", "after").raw, r.call("STRLEN", acked[0]).raw],
        [b":0\r\n", b":0\r\n", b":0\r\n", b"$1\r\ny\r\n", b":8192\r\n"],
        "%s: none of the refused ones, values intact" % fsync)
    r.close()
    again.stop()
    again.cleanup()
    shutil.rmtree(copy, ignore_errors=True)
    os.rmdir(d)


plan(20)
want = redis_refusals()
note("redis-server on a full disk: %r" % (want,))
for policy in ("always", "everysec"):
    story(policy, want)
sys.exit(done_testing())
