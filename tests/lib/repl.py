"""repl.py — what the replication tests (tests/integration/repl_*.t) share:
primaries and replicas, waiting until a replica is in sync, whole keyspace
dumps and their comparison, random write streams over every type.

The engine is zarisd, or redis-server when ZARIS_REPL_ENGINE=redis (both
primary and replica redis-server: a redis replica of a redis primary behaves
as zarisd's replication must, so the tests can be checked against it).
Checks only zarisd can pass (DEBUG KEY-VERSION, replica-ack) are skipped by
the tests for redis (is_redis()).

What it owns:

  * start_node(...): a zarisd or redis-server on a free loopback port
    (zaris_sys.start_server, so it also starts inside a network namespace),
    optionally a replica of (host, port) from the start (--replicaof
    "host port"), DEBUG allowed; start_group(n) a primary and n replicas;
    data_dir() gives a temp directory removed at exit.
  * info(cl, section): INFO as a dict; wait_in_sync(primary, replica):
    bounded wait until the replica's link is up, no sync in progress and
    its slave_repl_offset has reached the primary's master_repl_offset
    (read first: call it after the writes stop).
  * dump(cl): every key of every database: (type, value, absolute expiry
    in ms or -1, version or None); differences(a, b) describes the first
    keys where two dumps differ.
  * Workload: random commands (tests/lib/cmdgen.py's generator, plus
    TTLs, SPOP, MOVE/COPY/SWAPDB between databases, FLUSHDB (unless
    flush=False), big values and
    collections past the compact encodings, MULTI/EXEC), one stream per
    client; run_clients() runs several such clients at once.

Environment: ZARIS_REPL_ENGINE (zarisd, the default, or redis).
"""

import atexit
import os
import re
import shutil
import tempfile
import threading
import time

import zaris
from zaris import Client, ProtocolError, SLOW, HOST
from zaris_sys import start_server
from cmdgen import random_command

__all__ = ["ENGINE", "HOST", "is_redis", "start_node", "start_group", "data_dir", "info", "info_int", "wait_for", "wait_in_sync",
           "replicas_online", "wait_link", "sync_state", "dump", "differences", "Workload", "Writers", "run_clients",
           "databases", "fill", "fill_value", "scan_keys"]

ENGINE = os.environ.get("ZARIS_REPL_ENGINE") or "zarisd"
if ENGINE not in ("zarisd", "redis"):
    raise RuntimeError("ZARIS_REPL_ENGINE must be zarisd or redis, not %r" % ENGINE)


def is_redis():
    return ENGINE == "redis"


_dirs = []


def data_dir(prefix="zaris-repl-"):
    """A fresh temp directory, removed at exit."""
    d = tempfile.mkdtemp(prefix=prefix)
    _dirs.append(d)
    return d


@atexit.register
def _rm_dirs():
    if os.environ.get("ZARIS_KEEP_LOGS"):
        return
    while _dirs:
        shutil.rmtree(_dirs.pop(), ignore_errors=True)


def start_node(name, threads=None, io_backend=None, extra=(), replicaof=None, **kw):
    """A server of ENGINE on a free port of the current network namespace.
    REPLICAOF: (host, port) to start as its replica. EXTRA: further flags
    (later flags win). threads/io_backend only apply to zarisd. redis-server
    gets --repl-diskless-sync-delay 0 (its default waits 5 s for more
    replicas before a full sync)."""
    args = ["--enable-debug-command", "yes"]
    if is_redis():
        args += ["--repl-diskless-sync-delay", "0"]
    if replicaof is not None:
        args += ["--replicaof", "%s %d" % (replicaof[0], replicaof[1])]
    args += list(extra)
    if is_redis():
        return start_server("redis", extra=args, name="redis-" + name, **kw)
    return start_server("zarisd", extra=args, threads=threads, io_backend=io_backend, name="zarisd-" + name, **kw)


def start_group(replicas=1, threads=None, io_backend=None, extra=(), replica_extra=(), tag=""):
    """A primary and REPLICAS replicas of it (started with --replicaof):
    (primary, [replica, ...]); the links are not waited for."""
    p = start_node("primary" + tag, threads=threads, io_backend=io_backend, extra=extra)
    rs = [start_node("replica%d%s" % (i, tag), threads=threads, io_backend=io_backend, replicaof=(HOST, p.port),
                     extra=list(extra) + list(replica_extra)) for i in range(replicas)]
    return p, rs


# ------------------------------------------------------------------ INFO, waits

def info(cl, section="replication"):
    """INFO SECTION through CL as {field: value} (str)."""
    text = cl.call("INFO", section).value
    if isinstance(text, (bytes, bytearray)):
        text = text.decode("utf-8", "replace")
    out = {}
    for line in text.split("\r\n"):
        if line and not line.startswith("#") and ":" in line:
            k, v = line.split(":", 1)
            out[k] = v
    return out


def info_int(cl, field, section="replication", default=-1):
    v = info(cl, section).get(field)
    try:
        return int(v)
    except (TypeError, ValueError):
        return default


def wait_for(cond, timeout=20.0, step=0.02):
    """Polls COND() until true or TIMEOUT (scaled by SLOW) passes; returns
    its last value."""
    deadline = time.monotonic() + timeout * SLOW
    while True:
        v = cond()
        if v or time.monotonic() > deadline:
            return v
        time.sleep(step)


def sync_state(pc, rc):
    """A one-line picture of the pair for diagnostics."""
    p, r = info(pc), info(rc)
    keep = ("role", "master_link_status", "master_sync_in_progress", "slave_repl_offset", "master_repl_offset",
            "connected_slaves", "slave0")
    return "primary {%s} replica {%s}" % (", ".join("%s=%s" % (k, p[k]) for k in keep if k in p),
                                          ", ".join("%s=%s" % (k, r[k]) for k in keep if k in r))


def replicas_online(pi):
    """Whether INFO replication PI (a dict) of a primary lists replicas and
    all of them are state=online (Redis puts a replica online at its first
    ACK after the sync, up to a second after the replica's link is up)."""
    lines = [v for k, v in pi.items() if re.match(r"slave\d+$", k)]
    return bool(lines) and all("state=online" in v.split(",") for v in lines)


def wait_in_sync(pc, rc, timeout=30.0):
    """Waits (bounded) until the replica behind client RC has its link up, no
    sync in progress and slave_repl_offset >= the primary's (client PC)
    master_repl_offset, read before each look at the replica, and the
    primary lists its replicas online: call it once the writes have
    stopped. True when in sync."""
    def synced():
        try:
            p = info(pc)
            off = int(p["master_repl_offset"])
            r = info(rc)
            return (r.get("master_link_status") == "up" and r.get("master_sync_in_progress") == "0"
                    and int(r.get("slave_repl_offset", "-1")) >= off and replicas_online(p))
        except (KeyError, ValueError):
            return False
    return bool(wait_for(synced, timeout))


def wait_link(rc, status="up", timeout=30.0):
    """Waits (bounded) until the replica's master_link_status is STATUS."""
    return bool(wait_for(lambda: info(rc).get("master_link_status") == status, timeout))


# ------------------------------------------------------------------ dumps

_READ = {"string": ("GET",), "list": ("LRANGE", "0", "-1"), "zset": ("ZRANGE", "0", "-1", "WITHSCORES"),
         "set": ("SMEMBERS",), "hash": ("HGETALL",), "stream": ("XRANGE", "-", "+")}


def databases(cl):
    r = cl.call("CONFIG", "GET", "databases").py()
    return int(r[1]) if isinstance(r, list) and len(r) == 2 else 16


def scan_keys(cl):
    """Every key of CL's current database (SCAN, duplicates taken out)."""
    keys, cur = set(), "0"
    for _ in range(1 << 22):
        cur, batch = cl.call("SCAN", cur, "COUNT", "1000").py()
        keys.update(batch)
        if cur in (b"0", "0"):
            return keys
    raise RuntimeError("SCAN did not finish")


def _value(kind, reply):
    v = reply.py()
    if reply.is_error():
        return ("error", v)
    if kind == "set":
        return sorted(v)
    if kind == "hash":
        if isinstance(v, dict):
            return sorted(v.items())
        return sorted(zip(v[0::2], v[1::2]))
    if kind == "zset" and v and isinstance(v[0], list):  # RESP3 pairs
        return [x for pair in v for x in pair]
    return v


def dump(cl, versions=None, batch=500):
    """Every key of every database through client CL:
    {(db, key): (type, value, expiry, version)}: value by type (a string's
    bytes, a list's elements, a set's sorted members, a sorted set's members
    and scores in order, a hash's sorted pairs, a stream's entries), expiry
    PEXPIRETIME (absolute ms, -1 none), version DEBUG KEY-VERSION's reply
    when VERSIONS (default: on zarisd), else None. A key gone between SCAN
    and TYPE (expired meanwhile) is left out. Leaves CL on database 0."""
    if versions is None:
        versions = not is_redis()
    out = {}
    n = databases(cl)
    sizes = [r.py() for r in cl.pipeline([("SELECT", db) if i % 2 == 0 else ("DBSIZE",)
                                           for db in range(n) for i in range(2)])[1::2]]
    for db in range(n):
        if not sizes[db]:
            continue
        cl.call("SELECT", db)
        keys = sorted(scan_keys(cl))
        for i in range(0, len(keys), batch):
            part = keys[i:i + batch]
            per = 3 if versions else 2
            cmds = []
            for k in part:
                cmds += [("TYPE", k), ("PEXPIRETIME", k)] + ([("DEBUG", "KEY-VERSION", k)] if versions else [])
            head = cl.pipeline(cmds)
            kinds = [head[j * per].py() for j in range(len(part))]
            live = [(k, t, j) for j, (k, t) in enumerate(zip(part, kinds)) if t != "none"]
            vals = cl.pipeline([(_READ.get(t, ("TYPE",))[0], k) + _READ.get(t, ("TYPE",))[1:] for k, t, _ in live])
            for (k, t, j), v in zip(live, vals):
                ver = head[j * per + 2].py() if versions else None
                out[(db, k)] = (t, _value(t, v), head[j * per + 1].py(), ver)
    cl.call("SELECT", 0)
    return out


def _short(x, n=160):
    s = repr(x)
    return s if len(s) <= n else s[:n] + "...(%d chars)" % len(s)


def differences(a, b, la="primary", lb="replica", limit=5):
    """Lines describing where dumps A and B differ (at most LIMIT keys, then
    a count); [] when equal."""
    if a == b:
        return []
    lines = []
    only_a = sorted(k for k in a if k not in b)
    only_b = sorted(k for k in b if k not in a)
    diff = sorted(k for k in a if k in b and a[k] != b[k])
    lines.append("%d keys on %s, %d on %s: %d only on %s, %d only on %s, %d differ"
                 % (len(a), la, len(b), lb, len(only_a), la, len(only_b), lb, len(diff)))
    for k in only_a[:limit]:
        lines.append("db %d key %r only on %s: %s" % (k[0], k[1], la, _short(a[k])))
    for k in only_b[:limit]:
        lines.append("db %d key %r only on %s: %s" % (k[0], k[1], lb, _short(b[k])))
    for k in diff[:limit]:
        fields = ("type", "value", "expiry", "version")
        for f, x, y in zip(fields, a[k], b[k]):
            if x != y:
                lines.append("db %d key %r %s: %s %s, %s %s" % (k[0], k[1], f, la, _short(x), lb, _short(y)))
    return lines


# ------------------------------------------------------------------ workloads

# cmdgen's key names; a workload gives each command a suffix ":<n>" so that
# there are more keys than cmdgen's dozen (the same for all of a command's
# keys, so that two-key commands still meet).
_KEYS = {"k1", "k2", "l1", "l2", "h1", "z1", "z2", "s1", "s2", "p1", "x"}


class Workload:
    """Random write-heavy commands for one client. next() gives a list of
    argvs to send in order (one command, or MULTI ... EXEC).

    DBS databases (0..DBS-1), KEYS suffixes per cmdgen key name, SHORT_MS:
    the longest short TTL (keys that expire while the workload runs); long
    TTLs are a day or more. After the last command, quiesce() sleeps past
    every short TTL, so that no key expires between two dumps."""

    def __init__(self, rng, arity, dbs=3, keys=6, short_ms=400, flush=True):
        self.rng = rng
        self.flush = flush
        self.arity = arity
        self.dbs = dbs
        self.keys = keys
        self.short_ms = short_ms

    def _key(self, base="k1"):
        return "%s:%d" % (base, self.rng.randrange(self.keys))

    def _ttl(self):
        r, rng = self.rng, self.rng
        k = self._key(rng.choice(sorted(_KEYS)))
        short = str(rng.randrange(1, self.short_ms))
        day = str(86400 + rng.randrange(86400))
        far = str(int(time.time()) + 86400 * 3 + rng.randrange(1000))
        past = str(int(time.time() * 1000) - rng.randrange(1, 100000))
        return rng.choice([
            ["SET", k, "v" + short, "PX", short], ["PEXPIRE", k, short], ["EXPIRE", k, day],
            ["PEXPIREAT", k, past], ["EXPIREAT", k, far], ["GETEX", k, "PX", short], ["GETEX", k, "EX", day],
            ["PERSIST", k], ["SET", k, "d" + day, "EX", day], ["SET", k, "k", "KEEPTTL"],
            ["PEXPIRE", k, short, rng.choice(["NX", "XX", "GT", "LT"])], ["EXPIRE", k, day, "NX"],
            ["SETEX", k, day, "x"], ["PSETEX", k, short, "y"], ["GETDEL", k], ["SET", k, r.choice(["a", "7"])]])

    def _big(self):
        rng = self.rng
        n = rng.randrange(60, 300)
        kind = rng.randrange(6)
        if kind == 0:
            return ["RPUSH", self._key("l1")] + ["e%d" % rng.randrange(1000) for _ in range(n)]
        if kind == 1:
            return ["SADD", self._key("s1")] + [str(rng.randrange(10000)) for _ in range(n)]
        if kind == 2:
            return ["SADD", self._key("s2")] + ["m%d" % rng.randrange(10000) for _ in range(n)]
        if kind == 3:
            args = ["HSET", self._key("h1")]
            for _ in range(n):
                args += ["f%d" % rng.randrange(1000), "v" * rng.randrange(1, 80)]
            return args
        if kind == 4:
            args = ["ZADD", self._key("z1")]
            for _ in range(n):
                args += [str(rng.randrange(-500, 500) / 4), "m%d" % rng.randrange(1000)]
            return args
        return ["SET", self._key("k1"), os.urandom(rng.randrange(65, 5000))]

    def _other(self):
        rng = self.rng
        db = str(rng.randrange(self.dbs))
        r = rng.random()
        if r < 0.3:
            return ["SPOP", self._key("s1"), str(rng.randrange(1, 4))]
        if r < 0.45:
            return ["SPOP", self._key(rng.choice(["s1", "s2"]))]
        if r < 0.6:
            return ["MOVE", self._key(rng.choice(sorted(_KEYS))), db]
        if r < 0.75:
            b = rng.choice(sorted(_KEYS))
            return ["COPY", self._key(b), self._key(b), "DB", db] + (["REPLACE"] if rng.random() < 0.5 else [])
        if r < 0.85:
            return ["SRANDMEMBER", self._key("s1"), "3"]
        if r < 0.93:
            return ["SWAPDB", db, str(rng.randrange(self.dbs))]
        if r < 0.97 or not self.flush:
            return ["RENAME", self._key(rng.choice(sorted(_KEYS))), self._key(rng.choice(sorted(_KEYS)))]
        return ["FLUSHDB"]

    def _one(self):
        rng = self.rng
        r = rng.random()
        if r < 0.05:
            return ["SELECT", str(rng.randrange(self.dbs))]
        if r < 0.15:
            return self._ttl()
        if r < 0.19:
            return self._big()
        if r < 0.23:
            return self._other()
        cmd = random_command(rng, self.arity)
        sfx = ":%d" % rng.randrange(self.keys)
        return [a + sfx if isinstance(a, str) and a in _KEYS else a for a in cmd]

    def next(self):
        if self.rng.random() < 0.06:
            return [["MULTI"]] + [self._one() for _ in range(self.rng.randrange(1, 6))] + [["EXEC"]]
        return [self._one()]

    def quiesce(self):
        time.sleep(self.short_ms / 1000.0 + 0.3)


class Writers:
    """Clients each running its workload in a thread of its own: for
    COMMANDS items each, or (COMMANDS None) until stop(). .sent[i] counts
    client i's items so far; .errors the exceptions that ended a thread."""

    def __init__(self, clients, workloads, commands=None):
        self.clients, self.workloads, self.commands = clients, workloads, commands
        self.sent = [0] * len(clients)
        self.errors = []
        self._stop = threading.Event()
        self._threads = []

    def _run(self, i):
        c, w = self.clients[i], self.workloads[i]
        try:
            while not self._stop.is_set() and (self.commands is None or self.sent[i] < self.commands):
                seq = w.next()
                for args in seq:
                    c.call(*args)
                if len(seq) > 1:
                    c.call("DISCARD")  # none left open after an error inside
                self.sent[i] += 1
            c.call("SELECT", "0")
        except (OSError, ConnectionError, ProtocolError) as e:
            self.errors.append("client %d after %d: %s" % (i, self.sent[i], e))

    def total(self):
        return sum(self.sent)

    def start(self):
        self._threads = [threading.Thread(target=self._run, args=(i,), daemon=True)
                         for i in range(len(self.clients))]
        for t in self._threads:
            t.start()
        return self

    def join(self, timeout=600.0):
        for t in self._threads:
            t.join(timeout * SLOW)
            if t.is_alive():
                self.errors.append("a client thread did not finish within %.0fs" % timeout)
        return self

    def stop(self):
        self._stop.set()
        return self.join()


def run_clients(clients, workloads, commands):
    """Runs each client's workload for COMMANDS items, all at once. Returns
    (items sent, errors that ended a thread: [str])."""
    w = Writers(clients, workloads, commands).start().join()
    return w.total(), w.errors


def fill_value(key, size):
    """The value fill() gives KEY (bytes of SIZE, derived from the key, so a
    copy can be checked without the original)."""
    k = key.encode() if isinstance(key, str) else key
    return (k + b"|") * (size // (len(k) + 1)) + b"#" * (size % (len(k) + 1))


def fill(cl, n, prefix="fill:", size=300, db=0, mixed=False, batch=1000):
    """Writes N keys PREFIX0..PREFIXn-1 into database DB, pipelined: strings
    of fill_value(key, SIZE), or when MIXED one key in five each a string,
    list, hash, set (integers or not) or sorted set of 2..20 elements, one
    in ten of these of 150..300 (past the compact encodings), one key in
    ten with a TTL of two days."""
    cl.call("SELECT", db)
    for i in range(0, n, batch):
        cmds = []
        for j in range(i, min(n, i + batch)):
            k = "%s%d" % (prefix, j)
            m = 150 + j % 151 if j % 50 < 5 else 2 + j % 19
            if not mixed or j % 5 == 0:
                cmds.append(("SET", k, fill_value(k, size)))
            elif j % 5 == 1:
                cmds.append(("RPUSH", k) + tuple("e%d" % x for x in range(m)))
            elif j % 5 == 2:
                cmds.append(("HSET", k) + tuple(x for y in range(m) for x in ("f%d" % y, "v%d" % j)))
            elif j % 5 == 3:
                cmds.append(("SADD", k) + tuple(("%d" if j % 2 else "m%d") % (x * (1 + j % 3)) for x in range(m)))
            else:
                cmds.append(("ZADD", k) + tuple(x for y in range(m) for x in (str(y / 3), "m%d" % y)))
            if mixed and j % 10 == 7:
                cmds.append(("EXPIRE", k, str(172800 + j)))
        for r in cl.pipeline(cmds):
            if r.is_error():
                raise ProtocolError("fill: %s" % r.value)
    cl.call("SELECT", 0)
