"""svlib — shared harness of the zaris-supervisor tests (tests/supervisor/*.t).

A test builds a cluster file in a private temp dir, starts zaris-supervisor
against $ZARIS_BUILD/zarisd with its own NOTIFY_SOCKET (an AF_UNIX datagram
socket this harness reads, playing systemd) and its own control socket, then
drives it with zarisctl and real Redis clients. Everything it started is
stopped by PID at the end (never by name); every wait is bounded.

TAP: ok(), diag() (stderr), note(), skip_all(), done() print a plain TAP stream
for prove.
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

import redis

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
BUILD = os.path.abspath(os.environ.get("ZARIS_BUILD", os.path.join(REPO, "build")))
ZARISD = os.path.join(BUILD, "zarisd")
SUPERVISOR = os.path.join(BUILD, "zaris-supervisor")
ZARISCTL = os.path.join(BUILD, "zarisctl")

# ---- TAP ---------------------------------------------------------------------
_n = 0
_failed = 0


def ok(cond, name):
    global _n, _failed
    _n += 1
    if not cond:
        _failed += 1
    print("%sok %d - %s" % ("" if cond else "not ", _n, name), flush=True)
    return bool(cond)


def skip(why):
    """One test point skipped, with its reason."""
    global _n
    _n += 1
    print("ok %d # SKIP %s" % (_n, why), flush=True)


def diag(msg):
    """A diagnostic on stderr (as Test::More's diag and tests/lib/zaris.py's),
    so that a plain prove run -- CI's log -- shows why a check failed."""
    for line in str(msg).splitlines() or [""]:
        print("# " + line, file=sys.stderr, flush=True)


def note(msg):
    """A comment on stdout: shown by a verbose prove run only."""
    for line in str(msg).splitlines() or [""]:
        print("# " + line, flush=True)


def failed():
    """How many checks failed so far."""
    return _failed


def skip_all(why):
    print("1..0 # SKIP " + why, flush=True)
    sys.exit(0)


def done():
    print("1..%d" % _n, flush=True)
    sys.exit(1 if _failed else 0)


def require_binaries():
    for b in (ZARISD, SUPERVISOR, ZARISCTL):
        if not os.access(b, os.X_OK):
            skip_all("%s is not built (run make)" % b)


# ---- helpers -------------------------------------------------------------------
def free_ports(n):
    """N distinct free TCP ports on 127.0.0.1 (held open together so they
    differ; a tiny race with other tests remains, as everywhere)."""
    socks, ports = [], []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
        ports.append(s.getsockname()[1])
    for s in socks:
        s.close()
    return ports


def wait_for(pred, timeout=10.0, step=0.02):
    """Polls PRED until it returns a true value or TIMEOUT passes; returns the
    last value."""
    end = time.monotonic() + timeout
    while True:
        v = pred()
        if v or time.monotonic() >= end:
            return v
        time.sleep(step)


def ping(port, timeout=1.0, password=None):
    try:
        r = redis.Redis(host="127.0.0.1", port=port, socket_timeout=timeout,
                        socket_connect_timeout=timeout, password=password)
        ok_ = r.ping()
        r.close()
        return ok_
    except Exception:
        return False


def client(port, password=None):
    return redis.Redis(host="127.0.0.1", port=port, socket_timeout=2,
                       socket_connect_timeout=2, password=password, decode_responses=True)


def proc_state(pid):
    """The state letter of /proc/PID/stat (R, S, T for stopped, Z...), or
    None when there is no such process."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(") ", 1)[1][0]
    except (OSError, IndexError):
        return None


def pid_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().split(") ")[1][0] != "Z"
    except OSError:
        return False


FAST = """supervisor = {
  health-interval = "100ms";
  health-timeout = "1s";
  health-failures = 2;
  start-timeout = "10s";
  stop-timeout = "1s";
  backoff-min = "100ms";
  backoff-max = "1600ms";
  crash-loop-restarts = 3;
  stable-after = "60s";
};
"""


def node_conf(nodes, cluster="", supervisor=FAST):
    """A cluster file: NODES is a list of dicts (name, port, and any other
    key with a ready-made libconfig value string)."""
    out = ['cluster = { name = "test"; threads = 1; %s };' % cluster, supervisor, "nodes = ("]
    items = []
    for n in nodes:
        kv = ['name = "%s"' % n["name"], 'address = "%s"' % n.get("address", "127.0.0.1"),
              "port = %d" % n["port"]]
        for k, v in n.items():
            if k not in ("name", "address", "port"):
                kv.append("%s = %s" % (k, v))
        items.append("  { " + "; ".join(kv) + "; }")
    out.append(",\n".join(items))
    out.append(");")
    return "\n".join(out) + "\n"


class Supervisor:
    """One zaris-supervisor under test, with a fake systemd notify socket."""

    def __init__(self, conf_text, watchdog_usec=300000, extra_args=(), zarisd_via_env=False, zarisd=None,
                 workdir=None):
        """WORKDIR: run in that directory (the caller's: kept at cleanup, so
        a supervisor started again there finds its data), else a new one."""
        self.own_dir = workdir is None
        self.dir = tempfile.mkdtemp(prefix="zsup-") if self.own_dir else workdir
        os.makedirs(self.dir, exist_ok=True)
        self.conf = os.path.join(self.dir, "zaris.conf")
        self.sock = os.path.join(self.dir, "ctl.sock")
        self.log = os.path.join(self.dir, "supervisor.log")
        self.write_conf(conf_text)
        self.notify_path = os.path.join(self.dir, "notify.sock")
        if os.path.exists(self.notify_path):   # a supervisor before this one in WORKDIR
            os.unlink(self.notify_path)
        self.nsock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.nsock.bind(self.notify_path)
        self.nsock.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
        self.nsock.settimeout(0.1)
        self.messages = []   # (monotonic time, sender pid, text)
        self.lock = threading.Lock()
        self.stop_reader = False
        self.reader = threading.Thread(target=self._read_notify, daemon=True)
        self.reader.start()
        env = dict(os.environ)
        env["NOTIFY_SOCKET"] = self.notify_path
        if watchdog_usec:
            env["WATCHDOG_USEC"] = str(watchdog_usec)
        env.pop("WATCHDOG_PID", None)
        zargs = ["--zarisd", zarisd or ZARISD]
        if zarisd_via_env:
            env["ZARISD"] = ZARISD
            zargs = []
        self.logf = open(self.log, "w")
        self.proc = subprocess.Popen(
            [SUPERVISOR, "--config", self.conf, "--control-socket", self.sock] + zargs
            + list(extra_args),
            # in its own directory: a node without `dir` keeps its files in
            # ./<node name>, which must not land in the checkout
            env=env, stdout=self.logf, stderr=subprocess.STDOUT, cwd=self.dir)
        self.known_pids = set()

    def write_conf(self, text):
        tmp = self.conf + ".tmp"
        with open(tmp, "w") as f:
            f.write(text)
        os.rename(tmp, self.conf)

    def _read_notify(self):
        while not self.stop_reader:
            try:
                msg, anc, _, _ = self.nsock.recvmsg(4096, socket.CMSG_SPACE(12))
            except socket.timeout:
                continue
            except OSError:
                return
            pid = None
            for level, typ, data in anc:
                if level == socket.SOL_SOCKET and typ == socket.SCM_CREDENTIALS:
                    pid = int.from_bytes(data[0:4], "little")
            with self.lock:
                self.messages.append((time.monotonic(), pid, msg.decode()))

    def notify_lines(self, since=0.0):
        """Every KEY=VALUE line received after monotonic time SINCE."""
        with self.lock:
            msgs = list(self.messages)
        out = []
        for t, pid, text in msgs:
            if t >= since:
                out.extend((t, pid, l) for l in text.split("\n") if l)
        return out

    def wait_notify(self, prefix, since=0.0, timeout=10.0):
        def find():
            for t, pid, l in self.notify_lines(since):
                if l.startswith(prefix):
                    return (t, pid, l)
            return None
        return wait_for(find, timeout)

    def mark(self, timeout=10.0):
        """Sends a line of the test's own to the notify socket and waits
        (bounded) until the reader has taken it; returns the time it was
        taken (None if never). A datagram socket keeps its order, so every
        message sent before the mark is in notify_lines() by then, and
        notify_lines(that time) holds only what was sent after it: a
        message's time is when the reader took it, which on a loaded
        machine can be well after it was sent."""
        self.marks = getattr(self, "marks", 0) + 1
        text = "X-TEST-MARK=%d" % self.marks
        s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        try:
            s.sendto(text.encode(), self.notify_path)
        finally:
            s.close()
        got = wait_for(lambda: [t for t, _, l in self.notify_lines() if l == text], timeout)
        return got[0] if got else None

    def ctl(self, *args, timeout=30):
        r = subprocess.run([ZARISCTL, "--control-socket", self.sock] + list(args),
                           capture_output=True, text=True, timeout=timeout)
        return r.returncode, r.stdout, r.stderr

    def status(self):
        """(supervisor dict, {name: instance dict}) or (None, {})."""
        rc, out, _ = self.ctl("--json", "status")
        if rc != 0:
            return None, {}
        sup, inst = None, {}
        for line in out.splitlines():
            d = json.loads(line)
            if d.get("type") == "supervisor":
                sup = d
            elif d.get("type") == "instance":
                inst[d["name"]] = d
                if d["pid"] > 0:
                    self.known_pids.add(d["pid"])
        return sup, inst

    def instance(self, name):
        return self.status()[1].get(name)

    def wait_state(self, name, state, timeout=10.0, pred=None):
        def check():
            i = self.instance(name)
            if i and i["state"] == state and (pred is None or pred(i)):
                return i
            return None
        return wait_for(check, timeout, step=0.05)

    def wait_all_up(self, timeout=15.0):
        def check():
            sup, inst = self.status()
            return inst if inst and all(i["state"] == "up" for i in inst.values()) else None
        return wait_for(check, timeout, step=0.05)

    def log_text(self):
        self.logf.flush()
        with open(self.log, errors="replace") as f:
            return f.read()

    def stop(self, timeout=10.0):
        """SIGTERM, wait, SIGKILL; returns the exit code (None if killed)."""
        rc = None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                rc = self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        else:
            rc = self.proc.returncode
        return rc

    def cleanup(self):
        self.stop()
        # Instances die with the supervisor (PDEATHSIG); make sure of the
        # ones we saw, by PID only.
        for pid in self.known_pids:
            if pid_alive(pid):
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
        log = self.log_text()
        if "Sanitizer" in log:
            ok(False, "no sanitizer report in the supervisor's log")
            diag(log[log.find("=="):][:3000])
        self.stop_reader = True
        self.reader.join(2)
        self.nsock.close()
        self.logf.close()
        if os.environ.get("ZARIS_KEEP_TMP"):
            diag("kept " + self.dir)
        elif self.own_dir:
            shutil.rmtree(self.dir, ignore_errors=True)


def port_blocker(port):
    """A listening socket on PORT that never answers (zarisd cannot bind it,
    health checks connect but get nothing). Close it to release the port."""
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", port))
    s.listen(64)
    return s


# ---- replication ---------------------------------------------------------------
def replication_unsupported():
    """Whether $ZARIS_BUILD/zarisd can start as a replica (--replicaof): None
    if so, else the reason to skip (zarisd refusing the flag as not built
    yet). Any other failure to start is not a reason: the test then runs
    and fails."""
    d = tempfile.mkdtemp(prefix="zrepl-probe-")
    port, dead = free_ports(2)
    p = subprocess.Popen([ZARISD, "--port", str(port), "--bind", "127.0.0.1", "--threads", "1",
                          "--dir", d, "--replicaof", "127.0.0.1 %d" % dead],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=d)
    try:
        wait_for(lambda: ping(port) or p.poll() is not None, 5)
        if p.poll() is None:
            return None
        err = p.stderr.read().decode(errors="replace")
        for why in ("does not replicate", "unknown setting", "replicaof"):
            if why in err:
                return "zarisd does not take --replicaof yet (%s)" % err.strip().splitlines()[-1]
        return None
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        p.stderr.close()
        shutil.rmtree(d, ignore_errors=True)


def repl_info(port, password=None):
    """INFO replication of the instance at PORT as a dict ({} when it does
    not answer)."""
    try:
        r = client(port, password)
        d = r.info("replication")
        r.close()
        return d
    except Exception:
        return {}


def wait_synced(primary, replica, password=None, timeout=20.0):
    """Waits until REPLICA's link is up and its slave_repl_offset equals
    PRIMARY's master_repl_offset (writes stopped); returns whether so."""
    def synced():
        p, r = repl_info(primary, password), repl_info(replica, password)
        return (r.get("master_link_status") == "up" and "master_repl_offset" in p
                and r.get("slave_repl_offset") == p["master_repl_offset"])
    return wait_for(synced, timeout, step=0.05)


def keyspace(port, password=None):
    """{key: value} of every string key of db 0 at PORT."""
    r = client(port, password)
    keys = sorted(r.scan_iter(count=1000))
    vals = r.mget(keys) if keys else []
    r.close()
    return dict(zip(keys, vals))
