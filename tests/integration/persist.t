#!/usr/bin/python3
"""persist.t — zarisd persistence end to end: every type and TTL through the
snapshot, the log and both; kill -9 under a write load with appendfsync
always and everysec, checked against what the clients saw acknowledged; a
save under concurrent writers is one instant (monotonic counter pairs);
truncated and corrupted files give the right trim or error, and
--check-data reports and repairs; SPOP's random picks replay as what it
removed.  Each server gets its own --dir."""
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from zaris import *  # noqa

import redis

DIRS = []


def tmpdir():
    d = tempfile.mkdtemp(prefix="zaris-persist-")
    DIRS.append(d)
    return d


def rc(srv):
    return redis.Redis(host="127.0.0.1", port=srv.port, socket_timeout=20)


def kill9(srv):
    srv.proc.send_signal(signal.SIGKILL)
    srv.proc.wait()


def start(d, *flags, threads=2):
    # DEBUG JOURNAL-STALL (a slow disk) needs DEBUG
    return start_zarisd(threads=threads, extra=["--dir", d, "--enable-debug-command", "local"] + list(flags))


def restart(srv):
    """Starts the same argv again after the process is gone (kill -9)."""
    if srv.alive():
        srv.stop()
    srv._start(15.0)


# --------------------------------------------------------------- round trip

BUILDERS = {
    "string": [("SET", "k:string", "v1"), ("APPEND", "k:string", "-x"), ("SET", "k:int", "12345")],
    "hash": [("HSET", "k:hash", "f1", "v1", "f2", "v2"), ("HINCRBY", "k:hash", "n", "5")],
    "list": [("RPUSH", "k:list", "a", "b", "c"), ("LPUSH", "k:list", "z")],
    "set": [("SADD", "k:set", "m1", "m2", "m3"), ("SADD", "k:set", "1", "2")],
    "zset": [("ZADD", "k:zset", "1", "a", "2.5", "b", "-inf", "c")],
}


def dump_keyspace(r):
    out = {}
    for k in sorted(r.keys("*")):
        t = r.type(k).decode()
        if t == "string":
            v = r.get(k)
        elif t == "hash":
            v = sorted(r.hgetall(k).items())
        elif t == "list":
            v = r.lrange(k, 0, -1)
        elif t == "set":
            v = sorted(r.smembers(k))
        elif t == "zset":
            v = r.zrange(k, 0, -1, withscores=True)
        else:
            v = None
        ttl = r.pttl(k)
        out[k] = (t, v, ttl > 0)
    return out


def populate(r, types):
    for t in types:
        for cmd in BUILDERS[t]:
            r.execute_command(*cmd)
        r.pexpire(BUILDERS[t][0][1], 600000)  # a TTL on one key of each type
    r.set("k:ttl", "v", px=600000)
    r.set("k:gone", "v", px=300)  # expires while the server is down


def supported_types(srv):
    """The types whose building commands this zarisd has (new types are
    covered as soon as their commands exist)."""
    c = srv.client()
    got = []
    for t, cmds in BUILDERS.items():
        rep = c.call("COMMAND", "INFO", cmds[0][0])
        if rep.value and rep.value[0].value is not None:
            got.append(t)
        else:
            diag("type %s skipped: %s unknown to this zarisd" % (t, cmds[0][0]))
    c.close()
    return got


def round_trip(mode):
    d = tmpdir()
    flags = ["--appendonly", "yes" if mode in ("log", "both") else "no", "--save", ""]
    srv = start(d, *flags)
    r = rc(srv)
    types = supported_types(srv)
    populate(r, types)
    r.execute_command("SELECT", 0)
    if mode in ("snapshot", "both"):
        r.execute_command("SAVE")
    if mode == "both":  # tail after the snapshot
        r.set("k:tail", "after-save")
        r.hset("k:hash", "tail", "1") if "hash" in types else r.set("k:tail2", "x")
    before = dump_keyspace(r)
    before.pop(b"k:gone", None)
    time.sleep(0.4)
    kill9(srv)
    restart(srv)
    r = rc(srv)
    after = dump_keyspace(r)
    is_(after, before, "round trip through %s: every type (%s) and TTL, expired key gone" % (mode, ",".join(types)))
    ok(r.pttl("k:ttl") > 500000, "%s: absolute TTL kept" % mode)
    srv.stop()


# --------------------------------------------------------------- crash test

def crash_test(fsync):
    d = tmpdir()
    srv = start(d, "--appendonly", "yes", "--appendfsync", fsync, "--save", "")
    acked = [set() for _ in range(4)]
    stop = threading.Event()

    def writer(i):
        r = rc(srv)
        n = 0
        while not stop.is_set() and n < 200000:
            key = "w%d:%d" % (i, n)
            try:
                r.set(key, n)
            except Exception:
                return
            acked[i].add(key)
            n += 1

    ts = [threading.Thread(target=writer, args=(i,)) for i in range(4)]
    for t in ts:
        t.start()
    time.sleep(1.5)
    kill9(srv)
    stop.set()
    for t in ts:
        t.join(10)
    restart(srv)
    r = rc(srv)
    total = sum(len(a) for a in acked)
    keys = set(k.decode() for k in r.keys("w*"))
    lost = sum(len(a - keys) for a in acked)
    diag("appendfsync %s: writes acknowledged %d, recovered %d, lost %d" % (fsync, total, len(keys), lost))
    ok(total > 100, "%s: the load ran (%d acknowledged writes)" % (fsync, total))
    if fsync == "always":
        is_(lost, 0, "appendfsync always: no acknowledged write lost after kill -9")
    else:
        # at most about one second of writes (the rate is total / 1.5 s)
        ok(lost <= total / 1.5 + 100, "appendfsync %s: at most ~1 s of acknowledged writes lost (%d)" % (fsync, lost))
    srv.stop()


# --------------------------------------------------------------- consistency

def consistency_test():
    d = tmpdir()
    srv = start(d, "--appendonly", "no", "--save", "")
    r = rc(srv)
    pipe = r.pipeline(transaction=False)
    for i in range(60000):
        pipe.set("fill:%d" % i, "x" * 50)
        if i % 5000 == 4999:
            pipe.execute()
    pipe.execute()
    PAIRS = 200
    for i in range(PAIRS):
        r.set("a:%d" % i, 0)
        r.set("b:%d" % i, 0)
    stop = threading.Event()
    WRITERS = 4

    def writer(seed):
        w = rc(srv)
        j = seed
        while not stop.is_set():
            i = (j * 7919) % PAIRS
            w.incr("a:%d" % i)  # always a before b: at any instant 0 <= a - b <= writers
            w.incr("b:%d" % i)
            j += 1

    ts = [threading.Thread(target=writer, args=(s,)) for s in range(WRITERS)]
    for t in ts:
        t.start()
    time.sleep(0.3)
    saves = 0
    for _ in range(5):
        r.execute_command("BGSAVE")
        deadline = time.time() + 30
        while time.time() < deadline and int(r.info("persistence")["rdb_bgsave_in_progress"]):
            time.sleep(0.05)
        saves += 1
    cow = r.info("persistence").get("rdb_last_cow_size")
    stop.set()
    for t in ts:
        t.join(10)
    kill9(srv)
    restart(srv)
    r = rc(srv)
    bad = []
    for i in range(PAIRS):
        a, b = int(r.get("a:%d" % i)), int(r.get("b:%d" % i))
        if not (0 <= a - b <= WRITERS):
            bad.append((i, a, b))
    diag("%d saves under %d writers; last copy-before-write peak %s bytes" % (saves, WRITERS, cow))
    is_(bad, [], "the loaded snapshot is one instant of the keyspace (a-b pairs consistent)")
    is_(r.dbsize(), 60000 + 2 * PAIRS, "every key of the image loaded")
    srv.stop()


# --------------------------------------------------------------- damage

def shutdown_nosave(srv, r):
    try:
        r.execute_command("SHUTDOWN", "NOSAVE")
    except redis.ConnectionError:
        pass  # no reply: the connection closes, as with Redis
    srv.proc.wait(10)


def segments(d):
    ad = os.path.join(d, "appendonlydir")
    return sorted(os.path.join(ad, f) for f in os.listdir(ad) if f.endswith(".zj"))


def damage_tests():
    d = tmpdir()
    srv = start(d, "--appendonly", "yes", "--save", "")
    r = rc(srv)
    for i in range(100):
        r.set("d:%d" % i, i)
    shutdown_nosave(srv, r)
    seg = segments(d)[-1]
    size = os.path.getsize(seg)
    with open(seg, "r+b") as f:
        f.truncate(size - 5)  # crash mid-write: the last record is cut
    restart(srv)
    r = rc(srv)
    is_(r.dbsize(), 99, "truncated tail: trimmed, the 99 whole records load")
    ok("trimming" in srv.log_tail(20000), "truncated tail: the trim is logged")
    shutdown_nosave(srv, r)

    # aof-load-truncated no: refuse
    seg = segments(d)[0]
    with open(seg, "ab") as f:
        f.write(b"\x40\x00\x00\x00\x00")
    p = subprocess.run([zarisd_path(), "--port", str(free_port()), "--dir", d, "--appendonly", "yes",
                        "--aof-load-truncated", "no"], capture_output=True, timeout=20)
    out = p.stdout.decode() + p.stderr.decode()
    ok(p.returncode != 0 and "offset" in out and seg.split("/")[-1] in out and "truncated: " in out,
       "aof-load-truncated no: refuses to start, names file and offset, says truncated")

    # corruption in the middle: clear error, never a partial load
    with open(seg, "r+b") as f:
        f.seek(200)
        b = f.read(1)
        f.seek(200)
        f.write(bytes([b[0] ^ 0xff]))
    p = subprocess.run([zarisd_path(), "--port", str(free_port()), "--dir", d, "--appendonly", "yes"],
                       capture_output=True, timeout=20)
    out = p.stdout.decode() + p.stderr.decode()
    ok(p.returncode != 0 and "Bad file format" in out and "offset" in out,
       "corrupt record: start stops with file and offset")
    c = subprocess.run([zarisd_path(), "--check-data", d], capture_output=True, timeout=20)
    ok(c.returncode == 1 and b"CORRUPT" in c.stdout, "--check-data reports the corruption")
    c = subprocess.run([zarisd_path(), "--check-data", d, "--fix"], capture_output=True, timeout=20)
    ok(c.returncode == 0 and b"fixed" in c.stdout, "--check-data --fix cuts back to the last good record")
    restart(srv)
    r = rc(srv)
    n = r.dbsize()
    ok(0 < n < 100, "after --fix the records before the damage load (%d keys)" % n)
    r.execute_command("SAVE")
    shutdown_nosave(srv, r)

    # corrupt snapshot: clear error
    snap = os.path.join(d, "dump.zdb")
    with open(snap, "r+b") as f:
        f.seek(40)
        b = f.read(1)
        f.seek(40)
        f.write(bytes([b[0] ^ 0x55]))
    p = subprocess.run([zarisd_path(), "--port", str(free_port()), "--dir", d, "--appendonly", "no"],
                       capture_output=True, timeout=20)
    out = p.stdout.decode() + p.stderr.decode()
    ok(p.returncode != 0 and "dump.zdb" in out and "offset" in out, "corrupt snapshot: refuses, names file and offset")
    with open(snap, "r+b") as f:
        f.truncate(os.path.getsize(snap) - 3)
    p = subprocess.run([zarisd_path(), "--port", str(free_port()), "--dir", d, "--appendonly", "no"],
                       capture_output=True, timeout=20)
    ok(p.returncode != 0, "truncated snapshot: never a partial load")


def config_tests():
    d = tmpdir()
    srv = start(d, "--appendonly", "no", "--save", "")
    r = rc(srv)
    r.set("before", 1)
    r.config_set("appendonly", "yes")
    r.set("during", 2)
    deadline = time.time() + 20
    while time.time() < deadline and int(r.info("persistence")["aof_rewrites"]) < 1:
        time.sleep(0.05)
    is_(int(r.info("persistence")["aof_enabled"]), 1, "CONFIG SET appendonly yes at run time")
    r.set("after", 3)
    ok(srv.client().call("LASTSAVE").value >= int(time.time()) - 60, "LASTSAVE after the rewrite")
    kill9(srv)
    srv = start(d, "--appendonly", "yes", "--save", "")  # as the config file would now say
    r = rc(srv)
    is_([r.get(k) for k in ("before", "during", "after")], [b"1", b"2", b"3"],
        "appendonly turned on at run time: everything survives kill -9")
    info = r.info("persistence")
    ok(all(k in info for k in ("rdb_changes_since_last_save", "rdb_last_bgsave_status", "aof_enabled",
                               "aof_last_write_status", "aof_current_size")), "INFO persistence fields")
    srv.stop()


# --------------------------------------------------------------- evictions and expiry

def eviction_test():
    """A key evicted under maxmemory stays gone after a restart: the log
    holds a DEL for it (without one the replayed SET brings it back)."""
    d = tmpdir()
    srv = start(d, "--appendonly", "yes", "--appendfsync", "always", "--save", "")
    r = rc(srv)
    val = "v" * 8192
    for db in (0, 3):
        r.execute_command("SELECT", db)
        pipe = r.pipeline(transaction=False)
        for i in range(600):
            pipe.set("ev:%d" % i, val)
        pipe.execute()
    r.execute_command("SELECT", 0)
    used = int(r.info("memory")["used_memory"])
    r.config_set("maxmemory-policy", "allkeys-random")
    r.config_set("maxmemory", used - 3 * 1024 * 1024)
    for i in range(50):  # writes over the limit evict
        r.set("trigger:%d" % i, val)
    # appendfsync always: once answered, every earlier record (the DELs of
    # the evictions this SET made too) is on disk
    r.set("last", "1")
    evicted = int(r.info("stats")["evicted_keys"])
    before = {}
    for db in (0, 3):
        r.execute_command("SELECT", db)
        before[db] = sorted(r.keys("*"))
    kill9(srv)
    restart(srv)  # same argv: no maxmemory, nothing evicts at load
    r = rc(srv)
    after = {}
    for db in (0, 3):
        r.execute_command("SELECT", db)
        after[db] = sorted(r.keys("*"))
    ok(evicted > 100, "maxmemory evicted keys before the restart (%d)" % evicted)
    is_([len(after[0]), len(after[3])], [len(before[0]), len(before[3])],
        "after kill -9 and restart the keyspace has as many keys as before (evictions journaled)")
    ok(after == before, "evicted keys stay evicted after a restart, in every db")
    srv.stop()


def expiry_test():
    """A key deleted by active expiry (no command touched it) does not come
    back: replay runs each record with its original clock, so the key is
    recreated with its absolute expiry, already past."""
    d = tmpdir()
    srv = start(d, "--appendonly", "yes", "--appendfsync", "always", "--save", "")
    r = rc(srv)
    r.set("exp:short", "v", px=150)
    r.execute_command("PEXPIREAT", "exp:none", 1)  # on a missing key: no-op
    r.set("exp:keep", "v")
    deadline = time.time() + 10
    while time.time() < deadline and int(r.info("stats")["expired_keys"]) < 1:
        time.sleep(0.05)  # never reads the key: only active expiry deletes it
    is_(int(r.info("stats")["expired_keys"]), 1, "active expiry deleted the key")
    r.set("exp:last", "1")
    kill9(srv)
    restart(srv)
    r = rc(srv)
    is_([sorted(r.keys("*")), r.exists("exp:short"), r.get("exp:short")], [[b"exp:keep", b"exp:last"], 0, None],
        "an expired key does not come back after a restart")
    deadline = time.time() + 10
    while time.time() < deadline and r.dbsize() != 2:
        time.sleep(0.05)
    is_(r.dbsize(), 2, "DBSIZE after the restart: the replayed dead key is collected")
    srv.stop()


def random_commands_test():
    """SPOP picks members at random: the log must hold what it removed, not
    the command, or a replay pops other members. After kill -9 the set is
    exactly what the clients saw (the replies of SPOP and SPOP with a count
    included), and SRANDMEMBER (a read) changed nothing."""
    d = tmpdir()
    srv = start(d, "--appendonly", "yes", "--appendfsync", "always", "--save", "")
    r = rc(srv)
    r.sadd("pool", *range(200))
    popped = set()
    for _ in range(20):
        popped.add(r.spop("pool"))
        popped.update(r.spop("pool", 3))
        r.srandmember("pool", 5)
    before = r.smembers("pool")
    kill9(srv)
    restart(srv)
    r = rc(srv)
    after = r.smembers("pool")
    is_([len(before), len(popped), sorted(after) == sorted(before)], [120, 80, True],
        "SPOP replays what it removed: the set after kill -9 is the one the clients saw")
    ok(not (after & popped), "no member SPOP returned is back after the restart")
    srv.stop()


# --------------------------------------------------------------- CONFIG SET dir / dbfilename

def config_dir_test():
    """CONFIG SET dir changes the working directory for later saves (chdir,
    Redis's errors), the log moves there with the rewrite it starts, and
    the new directory alone restarts with everything; CONFIG SET
    dbfilename names later snapshots."""
    d1, d2 = tmpdir(), tmpdir()
    missing = os.path.join(d1, "no-such-dir")
    srv = start(d1, "--appendonly", "yes", "--save", "")
    red = start_redis(extra=["--enable-protected-configs", "yes", "--dir", tmpdir()])
    c, rcli = srv.client(), red.client()
    plain = os.path.join(d1, "plain-file")
    open(plain, "w").close()
    for args in (("dir", missing), ("dir", plain), ("dbfilename", "a/b.zdb")):
        got, want = c.call("CONFIG", "SET", *args).raw, rcli.call("CONFIG", "SET", *args).raw
        is_(got, want, "CONFIG SET %s %s: Redis's error" % args)
    rcli.close()
    red.stop()
    r = rc(srv)
    r.set("a", "1")
    is_(c.call("CONFIG", "SET", "dbfilename", "other.zdb").raw, b"+OK\r\n", "CONFIG SET dbfilename")
    is_(c.call("CONFIG", "SET", "dir", d2).raw, b"+OK\r\n", "CONFIG SET dir to an existing directory")
    is_(r.config_get("dir")["dir"], os.path.realpath(d2), "CONFIG GET dir shows the new working directory")
    r.set("b", "2")
    deadline = time.time() + 20
    while time.time() < deadline and int(r.info("persistence")["aof_rewrites"]) < 1:
        time.sleep(0.05)
    r.set("c", "3")
    segs = [f for f in os.listdir(os.path.join(d2, "appendonlydir"))] if os.path.isdir(
        os.path.join(d2, "appendonlydir")) else []
    ok(os.path.exists(os.path.join(d2, "other.zdb")) and any(f.endswith(".zj") for f in segs),
       "the rewrite after CONFIG SET dir wrote other.zdb and the log into the new directory")
    r.execute_command("SAVE")
    ok(not os.path.exists(os.path.join(d1, "other.zdb")), "later saves go to the new directory only")
    c.close()
    kill9(srv)
    srv2 = start(d2, "--appendonly", "yes", "--save", "", "--dbfilename", "other.zdb")
    r = rc(srv2)
    is_([r.get(k) for k in ("a", "b", "c")], [b"1", b"2", b"3"],
        "the new directory alone restarts with every write (snapshot + moved log)")
    srv2.stop()
    srv3 = start(d1, "--appendonly", "yes", "--save", "")
    is_(rc(srv3).get("a"), b"1", "the old directory is still consistent and loads")
    srv3.stop()


# --------------------------------------------------------------- back-pressure

def backpressure_test():
    """On a slow disk (DEBUG JOURNAL-STALL: the log writer sleeps before
    its next write) a pipelined write load waits for the writer once the
    log buffer reaches its bound, instead of growing it; nothing is lost."""
    d = tmpdir()
    srv = start(d, "--appendonly", "yes", "--appendfsync", "everysec", "--save", "")
    r = rc(srv)
    LIMIT, N, VAL = 1 << 20, 400, "x" * 16384
    is_(r.execute_command("DEBUG", "JOURNAL-STALL", "2500", LIMIT), b"OK", "DEBUG JOURNAL-STALL <ms> <limit>")
    trigger = srv.client()
    seq0 = int(r.info("persistence")["aof_last_seq"])
    trigger.send("SET", "bp:trigger", "1")  # the writer takes this batch, then sleeps

    def taken():
        i = r.info("persistence")
        return int(i["aof_last_seq"]) > seq0 and int(i["aof_buffer_length"]) == 0
    ok(wait_until(taken), "the log writer took the first write's record (then sleeps before writing it)")
    loader = srv.client(timeout=60)
    loader.send_raw(b"".join(encode_command("SET", "bp:%d" % i, VAL) for i in range(N)))
    replies = [loader.read_reply().raw for _ in range(N)]
    trigger.read_reply()
    info = r.info("persistence")
    peak = int(info.get("aof_buffer_peak", -1))
    diag("log buffer peak %d bytes, limit %d, %s appends waited" % (peak, LIMIT, info.get("aof_buffer_waits")))
    ok(0 < peak <= LIMIT + 64 * 1024, "the log buffer stays within its bound on a stalled disk (peak %d)" % peak)
    ok(int(info.get("aof_buffer_waits", 0)) > 0, "writers waited for the log writer (aof_buffer_waits)")
    is_(replies, [b"+OK\r\n"] * N, "every pipelined write answered once the disk caught up")
    loader.close()
    trigger.close()
    r.set("bp:last", "1")  # answered once its record is in the file: kill -9 keeps it

    def synced():
        i = r.info("persistence")
        return int(i["aof_synced_seq"]) >= int(i["aof_last_seq"])
    wait_until(synced)  # everysec: the last fsync too, as the power cut it stands for
    kill9(srv)
    restart(srv)
    r = rc(srv)
    is_(r.dbsize(), N + 2, "after kill -9 every write of the load is in the log")
    srv.stop()


# --------------------------------------------------------------- INFO persistence

def info_test():
    """INFO persistence has Redis 7.0's field names in Redis's order (with
    the log off and on; zarisd's own fields come after), and the values
    that mean something here move as Redis's do."""
    for aof in ("no", "yes"):
        srv = start(tmpdir(), "--appendonly", aof, "--save", "")
        red = start_redis(extra=["--appendonly", aof, "--dir", tmpdir()])
        r, rr = rc(srv), redis.Redis(host="127.0.0.1", port=red.port, socket_timeout=20)
        names = [k for k in r.info("persistence")]
        want = [k for k in rr.info("persistence")]
        is_([k for k in names if k in want], want, "appendonly %s: Redis 7.0's INFO persistence fields, same order" % aof)
        ok(names[:len(want)] == want, "appendonly %s: zarisd's own fields only after Redis's" % aof)
        seen = {}
        for name, cli in (("zarisd", r), ("redis", rr)):
            cli.mset({"a": 1, "b": 2, "c": 3})
            cli.delete("a", "b")
            i1 = cli.info("persistence")
            cli.execute_command("SAVE")
            i2 = cli.info("persistence")
            cli.execute_command("BGSAVE")
            deadline = time.time() + 20
            while time.time() < deadline and int(cli.info("persistence")["rdb_bgsave_in_progress"]):
                time.sleep(0.05)
            time.sleep(0.2)
            i3 = cli.info("persistence")
            # changes counted on every worker (zarisd --threads 2: the
            # connections are spread over both) add up
            port = cli.connection_pool.connection_kwargs["port"]
            many = [redis.Redis(host="127.0.0.1", port=port, socket_timeout=20) for _ in range(8)]
            for _ in range(50):
                for i, m in enumerate(many):
                    m.incr("counter%d" % i)
            i4 = cli.info("persistence")
            for m in many:
                m.close()
            seen[name] = (i1["rdb_changes_since_last_save"], i2["rdb_changes_since_last_save"],
                          i4["rdb_changes_since_last_save"],
                          i2["rdb_last_bgsave_time_sec"], i2["rdb_saves"], i3["rdb_saves"],
                          i3["rdb_last_bgsave_status"], i3["rdb_last_bgsave_time_sec"] >= 0,
                          i3["aof_last_write_status"], i3["aof_rewrites_consecutive_failures"],
                          i3["rdb_bgsave_in_progress"], i3["aof_rewrite_in_progress"])
        is_(seen["zarisd"], seen["redis"], "appendonly %s: changes, saves, bgsave status and times as Redis's" % aof)
        red.stop()
        srv.stop()


try:
    plan(55)
    for mode in ("snapshot", "log", "both"):
        round_trip(mode)
    crash_test("always")
    crash_test("everysec")
    consistency_test()
    damage_tests()
    config_tests()
    eviction_test()
    expiry_test()
    random_commands_test()
    config_dir_test()
    backpressure_test()
    info_test()
finally:
    for d in DIRS:
        shutil.rmtree(d, ignore_errors=True)
done_testing()
