#!/usr/bin/python3
# admin.t — server administration commands that a case file cannot show:
# CLIENT LIST/KILL across worker threads, CLIENT PAUSE WRITE, the slow log,
# the latency monitor, INFO's sections and fields, CONFIG RESETSTAT,
# COMMAND COUNT against the command table, DEBUG against redis-server (with
# enable-debug-command), SHUTDOWN NOSAVE.
#
# Servers: one zarisd --threads 2, one redis-server for DEBUG replies, and a
# second zarisd that SHUTDOWN stops. No assertion on speed: pauses are
# checked by ordering (a GET answered while a SET still waits).

import os
import re
import select
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from zaris import *  # noqa: E402,F403
from zaris_sys import start_server  # noqa: E402

REPO_TABLE = os.path.join(REPO, "zarisd", "commands", "table.c")


def info(cl, *sections):
    r = cl.call("INFO", *sections)
    text = r.value if isinstance(r.value, str) else r.value.decode()
    if r.kind == "=":
        text = text[4:]  # "txt:"
    return text


def info_fields(text):
    out = {}
    for line in text.split("\r\n"):
        if line and not line.startswith("#") and ":" in line:
            k, _, v = line.partition(":")
            out[k] = v
    return out


def worker_commands(cl):
    """commands_processed of each worker, from INFO threads."""
    f = info_fields(info(cl, "threads"))
    res = {}
    for k, v in f.items():
        m = re.match(r"worker(\d+)$", k)
        if m:
            fields = dict(x.split("=") for x in v.split(","))
            res[int(m.group(1))] = int(fields["commands_processed"])
    return res


def worker_of(probe, other):
    """The worker index that serves PROBE, seen from OTHER's INFO. Only
    PROBE sends commands between the two samples (other's INFO counts on
    its own worker, at most 1 per sample)."""
    before = worker_commands(other)
    for _ in range(20):
        probe.call("PING")
    after = worker_commands(other)
    for w in after:
        if after[w] - before.get(w, 0) >= 20:
            return w
    return None


def readable(cl, timeout):
    if cl.buf:
        return True
    r, _, _ = select.select([cl.sock], [], [], timeout)
    return bool(r)


srv = start_zarisd(threads=2, extra=["--enable-debug-command", "local"])
ref = start_redis(extra=["--enable-debug-command", "yes"])

# ---- CLIENT LIST / KILL across workers --------------------------------------
k = srv.client()
k.call("CLIENT", "SETNAME", "killer")
kw = worker_of(k, k)
ok(kw is not None, "the killer's worker is found from INFO threads")
victim = None
others = []
for _ in range(64):
    c = srv.client()
    w = worker_of(c, k)
    if w is not None and w != kw:
        victim = c
        break
    others.append(c)
ok(victim is not None, "a connection landed on the other worker")
if victim is None:
    bail_out("cannot place a client on a second worker")
victim.call("CLIENT", "SETNAME", "victim")
vid = victim.call("CLIENT", "ID").value
lst = k.call("CLIENT", "LIST").py().decode()
lines = lst.splitlines()
is_(len(lines), 2 + len(others), "CLIENT LIST shows the clients of both workers")
ok(all(re.match(r"id=\d+ addr=\S+ laddr=\S+ fd=\d+ name=\S* age=\d+ idle=\d+ flags=\w+ db=\d+ sub=0 psub=0 ssub=0 "
                r"multi=-1 qbuf=\d+ qbuf-free=\d+ argv-mem=\d+ multi-mem=0 rbs=\d+ rbp=\d+ obl=0 oll=0 omem=\d+ "
                r"tot-mem=\d+ events=r\w* cmd=\S+ user=default redir=-1 resp=[23]$", l) for l in lines),
   "every CLIENT LIST line has Redis 7.0's fields in order")
vline = [l for l in lines if "name=victim" in l]
ok(len(vline) == 1 and "cmd=client|id" in vline[0], "the other worker's client shows its name and last command")
is_(k.call("CLIENT", "LIST", "ID", str(vid)).py().decode().count("\n"), 1, "CLIENT LIST ID picks one client")
is_(k.call("CLIENT", "KILL", "ID", str(vid)).py(), 1, "CLIENT KILL ID on another worker's client answers 1")
ok(victim.is_closed_by_peer(5.0), "the killed client's connection is really closed by its worker")
is_(k.call("CLIENT", "KILL", "ID", str(vid)).py(), 0, "killing it again finds nobody")

# old form by address, again on the other worker
victim2 = None
for _ in range(64):
    c = srv.client()
    w = worker_of(c, k)
    if w is not None and w != kw:
        victim2 = c
        break
    others.append(c)
addr = [l.split()[1][5:] for l in k.call("CLIENT", "LIST").py().decode().splitlines()
        if "id=%d " % victim2.call("CLIENT", "ID").value in l][0]
is_(k.call("CLIENT", "KILL", addr).value, "OK", "CLIENT KILL addr:port answers +OK")
ok(victim2.is_closed_by_peer(5.0), "and closes that connection")
r = k.call("CLIENT", "KILL", addr)
is_((r.kind, r.value), ("-", "ERR No such client"), "the same address again: No such client")

# filters: SKIPME yes keeps the caller, TYPE normal takes the rest
n = k.call("CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes").py()
is_(n, len(others), "CLIENT KILL TYPE normal SKIPME yes kills every other client")
ok(all(c.is_closed_by_peer(5.0) for c in others), "all of them are closed")
is_(k.call("PING").value, "PONG", "the caller survives SKIPME yes")
self_id = k.call("CLIENT", "ID").value
is_(k.call("CLIENT", "KILL", "ID", str(self_id), "SKIPME", "no").py(), 1, "killing oneself with SKIPME no answers 1")
ok(k.is_closed_by_peer(5.0), "then the connection closes")

# ---- CLIENT PAUSE WRITE ---------------------------------------------------------
p, w, r = srv.client(), srv.client(), srv.client()
w.call("SET", "pk", "before")
is_(p.call("CLIENT", "PAUSE", "3000", "WRITE").value, "OK", "CLIENT PAUSE 3000 WRITE")
w.send("SET", "pk", "after")
is_(r.call("GET", "pk").py(), b"before", "a GET is answered during a WRITE pause")
ok(not readable(w, 0), "while the SET issued before it still waits")
is_(p.call("CLIENT", "UNPAUSE").value, "OK", "CLIENT UNPAUSE")
w.settimeout(10)
is_(w.read_reply().value, "OK", "the held SET runs after UNPAUSE")
is_(r.call("GET", "pk").py(), b"after", "and its value is visible")
is_(p.call("CLIENT", "PAUSE", "3000", "ALL").value, "OK", "CLIENT PAUSE 3000 ALL")
r.send("GET", "pk")
ok(not readable(r, 0.3), "a GET waits during an ALL pause")
# every client is paused now, the pauser too: the pause simply runs out
r.settimeout(15)
is_(r.read_reply().py(), b"after", "the GET is answered when the pause ends")
for c in (p, w, r):
    c.close()

# ---- slow log ---------------------------------------------------------------------
c = srv.client()
c.call("CLIENT", "SETNAME", "slowpoke")
is_(c.call("CONFIG", "SET", "slowlog-log-slower-than", "0").value, "OK", "slowlog-log-slower-than 0")
c.call("SLOWLOG", "RESET")
c.call("SET", "slowkey", "v")
e = c.call("SLOWLOG", "GET", "1").py()
ok(len(e) == 1 and len(e[0]) == 6, "SLOWLOG GET 1 gives one 6-field entry")
if e:
    ent = e[0]
    ok(isinstance(ent[0], int) and abs(ent[1] - time.time()) < 3600 and ent[2] >= 0,
       "id, unix time and duration are integers")
    is_(ent[3], [b"SET", b"slowkey", b"v"], "the entry keeps the command's arguments")
    ok(re.match(rb"127\.0\.0\.1:\d+$", ent[4]) is not None, "and the client's address")
    is_(ent[5], b"slowpoke", "and the client's name")
c.call("SET", "k" * 300, "v")
c.call("MSET", *(["a", "b"] * 20))
e = c.call("SLOWLOG", "GET", "2").py()
is_(e[0][3][-1], b"... (10 more arguments)", "more than 32 arguments end with '... (N more arguments)'")
is_(len(e[0][3]), 32, "and keep 32")
is_(e[1][3][1], b"k" * 128 + b"... (172 more bytes)", "a long argument keeps 128 bytes and says how many more")
c.call("AUTH", "nopass")
e = c.call("SLOWLOG", "GET", "1").py()
is_(e[0][3], [b"AUTH", b"(redacted)"], "AUTH's password is redacted")
is_(c.call("CONFIG", "SET", "slowlog-max-len", "3").value, "OK", "slowlog-max-len 3")
for i in range(6):
    c.call("PING")
is_(c.call("SLOWLOG", "LEN").py(), 3, "the log is trimmed to slowlog-max-len")
ids = [x[0] for x in c.call("SLOWLOG", "GET", "-1").py()]
ok(ids == sorted(ids, reverse=True) and len(ids) == 3, "SLOWLOG GET -1 lists newest first")
is_(c.call("SLOWLOG", "RESET").value, "OK", "SLOWLOG RESET")
is_(c.call("SLOWLOG", "LEN").py(), 1, "leaves only the RESET itself (logged after it ran)")
c.call("CONFIG", "SET", "slowlog-log-slower-than", "10000")
c.call("CONFIG", "SET", "slowlog-max-len", "128")

# ---- latency monitor ------------------------------------------------------------------
is_(c.call("LATENCY", "RESET").kind, ":", "LATENCY RESET")
c.call("CONFIG", "SET", "latency-monitor-threshold", "10")
c.call("DEBUG", "SLEEP", "0.05")
lat = c.call("LATENCY", "LATEST").py()
ev = [x for x in lat if x[0] == b"command"]
ok(len(ev) == 1 and ev[0][2] >= 50 and ev[0][3] >= 50, "LATENCY LATEST has the 'command' event of DEBUG SLEEP")
h = c.call("LATENCY", "HISTORY", "command").py()
ok(len(h) == 1 and len(h[0]) == 2 and h[0][1] >= 50, "LATENCY HISTORY command has its sample")
doc = c.call("LATENCY", "DOCTOR")
ok(doc.kind in ("$", "=") and b"command" in (doc.value if isinstance(doc.value, bytes) else doc.value.encode()),
   "LATENCY DOCTOR reports the event")
is_(c.call("LATENCY", "RESET", "command", "nosuch").py(), 1, "LATENCY RESET command resets one event")
is_(c.call("LATENCY", "LATEST").py(), [], "and it is gone")
c.call("CONFIG", "SET", "latency-monitor-threshold", "0")

# ---- INFO ---------------------------------------------------------------------------------
fields_by_section = {
    "server": ["redis_version", "zaris_version", "redis_mode", "os", "arch_bits", "multiplexing_api", "process_id",
               "run_id", "tcp_port", "uptime_in_seconds", "uptime_in_days", "hz", "executable", "config_file",
               "io_threads_active"],
    "clients": ["connected_clients", "maxclients", "blocked_clients"],
    "memory": ["used_memory", "used_memory_human", "used_memory_rss", "used_memory_peak", "maxmemory",
               "maxmemory_human", "maxmemory_policy", "mem_allocator", "mem_fragmentation_ratio"],
    "persistence": ["loading", "rdb_last_save_time", "aof_enabled"],
    "stats": ["total_connections_received", "total_commands_processed", "instantaneous_ops_per_sec",
              "total_net_input_bytes", "total_net_output_bytes", "rejected_connections", "expired_keys",
              "evicted_keys", "keyspace_hits", "keyspace_misses", "total_error_replies"],
    "replication": ["role", "connected_slaves", "master_replid"],
    "cpu": ["used_cpu_sys", "used_cpu_user", "used_cpu_sys_children", "used_cpu_user_children"],
    "cluster": ["cluster_enabled"],
    "threads": ["worker_threads", "worker0", "worker1"],
}
everything = info(c, "everything")
for sec, names in fields_by_section.items():
    f = info_fields(info(c, sec))
    missing = [n for n in names if n not in f]
    ok(not missing, "INFO %s has %s" % (sec, ", ".join(names)) + (" (missing %s)" % missing if missing else ""))
    ok(all(n in info_fields(everything) for n in names), "INFO everything includes the %s fields" % sec)
srvf = info_fields(info(c, "server"))
is_(srvf["redis_version"], "7.0.15", "redis_version is 7.0.15")
is_(int(srvf["process_id"]), srv.pid, "process_id is zarisd's pid")
is_(int(srvf["tcp_port"]), srv.port, "tcp_port is the port")
thr = info_fields(info(c, "threads"))
is_(thr["worker_threads"], "2", "INFO threads counts 2 workers")
ok(all(re.search(r"(^|,)%s=\d+" % fld, thr["worker1"]) for fld in
       ("commands_processed", "connected_clients", "net_input_bytes", "net_output_bytes", "instantaneous_ops_per_sec")),
   "each worker line has its own counters")
ok(re.search(r"^thread_\d+:name=[^,]+,used_cpu_sys=[0-9.]+,used_cpu_user=[0-9.]+\r$", info(c, "cpu"), re.M),
   "INFO cpu lists per-thread CPU time")
multi = info(c, "clients", "server")
ok(multi.index("# Server") < multi.index("# Clients") and "# Memory" not in multi,
   "several sections come in Redis's order and nothing else")
c.call("SELECT", "5")
c.call("SET", "ks1", "v")
c.call("SET", "ks2", "v", "EX", "100")
ok(re.search(r"^db5:keys=2,expires=1,avg_ttl=\d+\r$", info(c, "keyspace"), re.M), "INFO keyspace counts keys and expires")
c.call("FLUSHDB")
c.call("SELECT", "0")

# instantaneous_ops_per_sec comes from the sampler on worker 0's timer
seen = 0
deadline = time.monotonic() + 10
while time.monotonic() < deadline and seen == 0:
    c.pipeline([("PING",)] * 200)
    seen = int(info_fields(info(c, "stats"))["instantaneous_ops_per_sec"])
ok(seen > 0, "instantaneous_ops_per_sec rises under load (%d)" % seen)

# ---- commandstats / RESETSTAT / errorstats ------------------------------------------------------
c.call("PING")
cs = info(c, "commandstats")
ok(re.search(r"^cmdstat_ping:calls=\d+,usec=\d+,usec_per_call=[0-9.]+,rejected_calls=\d+,failed_calls=\d+\r$", cs, re.M),
   "INFO commandstats has Redis's cmdstat line format")
ok("cmdstat_config|set:" in cs, "subcommands are named container|sub")
is_(c.call("CONFIG", "RESETSTAT").value, "OK", "CONFIG RESETSTAT")
cs = info(c, "commandstats")
ok("cmdstat_ping:" not in cs and "cmdstat_config|set:" not in cs, "commandstats restart from zero")
st = info_fields(info(c, "stats"))
ok(int(st["total_commands_processed"]) < 10, "total_commands_processed restarts from zero (%s)" % st["total_commands_processed"])

# ---- COMMAND COUNT against the table --------------------------------------------------------------
src = open(REPO_TABLE).read()
rows = src[src.index("command_rows[] = {"):]
rows = rows[:rows.index("\tEND,\n};")]
top = len(re.findall(r'^\s*(ROW\w*|CONTAINER)\("', rows, re.M)) + len(re.findall(r'^\s*\{ \.name = "', rows, re.M))
is_(c.call("COMMAND", "COUNT").py(), top, "COMMAND COUNT equals the top-level rows of table.c (%d)" % top)
is_(len(c.call("COMMAND").py()), top, "bare COMMAND describes every top-level row")
is_(len(c.call("COMMAND", "DOCS").py()), 2 * top, "COMMAND DOCS documents every top-level row (flat map in RESP2)")
lst = c.call("COMMAND", "LIST").py()
is_(len([x for x in lst if b"|" not in x]), top, "COMMAND LIST names the same top-level commands")

# ---- DEBUG, compared with redis-server ----------------------------------------------------------------
rc = ref.client()
for proto in ("2", "3"):
    z = srv.client()
    rr = ref.client()
    if proto == "3":
        z.call("HELLO", "3")
        rr.call("HELLO", "3")
    for t in ("string", "integer", "double", "bignum", "null", "array", "set", "map", "attrib", "verbatim", "true",
              "false", "foo", "push"):
        a = rr.call("DEBUG", "PROTOCOL", t)
        b = z.call("DEBUG", "PROTOCOL", t)
        if t == "push" and proto == "3":
            a = (a, rr.read_reply())
            b = (b, z.read_reply())
            is_([x.raw for x in b], [x.raw for x in a], "DEBUG PROTOCOL push in RESP3: push then the reply")
        else:
            is_(b.raw, a.raw, "DEBUG PROTOCOL %s in RESP%s as redis-server" % (t, proto))
    for args in (("DEBUG", "SLEEP", "0"), ("DEBUG", "SLEEP", "abc"), ("DEBUG", "OBJECT", "nokey"),
                 ("DEBUG", "foo"), ("DEBUG", "SLEEP"), ("DEBUG", "LOG", "admin.t was here")):
        is_(z.call(*args).raw, rr.call(*args).raw, " ".join(args) + " as redis-server")
    z.close()
    rr.close()
c.call("SET", "dbgkey", "hello")
r = c.call("DEBUG", "OBJECT", "dbgkey")
ok(r.kind == "+" and re.match(r"Value at:0x[0-9a-f]+ refcount:1 encoding:embstr serializedlength:\d+ lru:\d+ "
                              r"lru_seconds_idle:\d+$", r.value), "DEBUG OBJECT describes a key as Redis does")
c.call("DEL", "dbgkey")

# ---- enable-debug-command, compared with redis-server ------------------------------------------------
# Redis 7 refuses DEBUG unless enable-debug-command allows it: "no" by default,
# "local" for loopback clients only. The check comes before authentication,
# counts as a rejected call (and fails a MULTI), and the setting is immutable.
def debug_story(srv):
    cl = srv.client()
    out = [cl.call("DEBUG", "SLEEP", "0").raw, cl.call("DEBUG").raw, cl.call("AUTH", "pw").raw,
           cl.call("DEBUG", "SLEEP", "0").raw, cl.call("CONFIG", "GET", "enable-debug-command").raw,
           cl.call("CONFIG", "SET", "enable-debug-command", "yes").raw, cl.call("MULTI").raw,
           cl.call("DEBUG", "SLEEP", "0").raw, cl.call("EXEC").raw]
    stats = cl.call("INFO", "commandstats").py()
    stats = stats.decode() if isinstance(stats, bytes) else stats
    # the counts (usec differs by nature)
    out += [re.sub(r"usec=\d+,usec_per_call=[\d.]+,", "", line) for line in stats.split("\r\n")
            if line.startswith("cmdstat_debug:")]
    cl.close()
    return out


for setting in (None, "local", "yes"):
    extra = ["--requirepass", "pw"] + (["--enable-debug-command", setting] if setting else [])
    # zaris_sys's servers count NOAUTH as up
    zd = start_server("zarisd", threads=2, name="zarisd-debug-%s" % setting, extra=extra)
    rd = start_server("redis", name="redis-debug-%s" % setting, extra=extra)
    try:
        got, want = debug_story(zd), debug_story(rd)
        if not is_(got, want, "enable-debug-command %s: DEBUG refused or allowed, rejected_calls, CONFIG GET/SET "
                   "and MULTI as redis-server" % (setting or "(default no)")):
            for i, (g, w) in enumerate(zip(got, want)):
                if g != w:
                    diag("step %d: got %r, expected %r" % (i, g, w))
    finally:
        zd.stop()
        rd.stop()

# ---- SHUTDOWN -------------------------------------------------------------------------------------------
s2 = start_zarisd(threads=2, name="zarisd-shutdown")
x = s2.client()
is_(x.call("SHUTDOWN", "ABORT").value, "ERR No shutdown in progress.", "SHUTDOWN ABORT with none in progress")
x.send("SHUTDOWN", "NOSAVE")
data, closed = x.recv_until_closed(10.0)
ok(closed and data == b"", "SHUTDOWN NOSAVE gives no reply and closes the connection")
try:
    rc_code = s2.proc.wait(10)
except Exception:
    rc_code = None
is_(rc_code, 0, "zarisd exits with status 0 after SHUTDOWN")

done_testing()
