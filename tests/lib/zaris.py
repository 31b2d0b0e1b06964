"""zaris.py — the one helper every Zaris integration test uses.

What it owns (memcached's new_memcached() habit, in Python):

  * servers:  start_zarisd(...) / start_redis(...) pick a free loopback port,
    start the binary, wait (bounded) until it answers PING, send its output to
    a temp log file, and stop it at exit (SIGTERM, wait, SIGKILL after a
    timeout).  Only the PID this module started is ever signalled.
  * a raw RESP client (Client): sends one command as a RESP multibulk, reads
    exactly one reply, returns its raw bytes and a parsed Reply that keeps the
    RESP type byte (RESP2 and RESP3: + - : $ * _ , # ! = ( % ~ > |).
  * a TAP emitter: plan, ok, is_, diag, note, skip_all, done_testing.

Environment:
  ZARIS_BUILD       build dir holding zarisd (default <repo>/build)
  ZARIS_IO_BACKEND  passed as --io-backend to zarisd when set
  ZARIS_STANDIN     "redis-server": start_zarisd() starts a redis-server
                    instead; only for developing the harness itself before
                    zarisd runs (never set it in make test)
  ZARIS_KEEP_LOGS   keep server log files after the test (path printed)

Usage:
  import os, sys
  sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
  from zaris import *
"""

import atexit
import os
import random
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

__all__ = [
    "REPO", "build_dir", "zarisd_path", "free_port", "Server", "start_zarisd",
    "start_redis", "Client", "Reply", "ProtocolError", "encode_command",
    "parse_reply", "io_uring_available", "SLOW", "blocked_clients", "wait_blocked", "start_blocked", "compare_scenarios", "diag_steps", "start_on_data",
    "sweep_size", "todo", "require_eval", "guarded", "shutdown_nosave_while_busy", "worker_of", "client_on_other_worker", "same_worker_client", "client_on_worker", "clients_per_worker", "send_and_wait_read", "wait_until",
    "reply_within", "ping_until",
    "connect_on_worker", "stop_process", "run_until_exit", "plan", "ok", "is_", "diag", "note", "skip_all", "done_testing", "bail_out", "seeded_rng",
]

# Sanitizer builds (ZARIS_SAN=asan|tsan, set by make asan/tsan) run several
# times slower: every wait of this module scales by this factor.
SLOW = 4.0 if os.environ.get("ZARIS_SAN") else 1.0


def sweep_size(env_name, full, sanitized):
    """How many rounds (commands, cycles, keys) a sweep runs: the environment
    variable ENV_NAME when set, else FULL, or SANITIZED under a sanitizer
    build. A sanitizer run hunts memory errors and races, which a shorter
    sweep over the same paths finds as well; the statistical figures (cycles
    without a lost write, say) come from the plain run, and CI's time limit
    holds only with the sanitizer runs shortened."""
    given = os.environ.get(env_name)
    if given:
        return int(given)
    return sanitized if os.environ.get("ZARIS_SAN") else full

REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
HOST = "127.0.0.1"


def build_dir():
    return os.path.abspath(os.environ.get("ZARIS_BUILD") or os.path.join(REPO, "build"))


def zarisd_path():
    return os.path.join(build_dir(), "zarisd")


def io_uring_available():
    """False when the kernel forbids io_uring for us (sysctl io_uring_disabled)."""
    try:
        with open("/proc/sys/kernel/io_uring_disabled") as f:
            return f.read().strip() == "0"
    except OSError:
        # Kernels before 6.6 have no such sysctl; io_uring is on if built in.
        return os.path.exists("/proc/sys/kernel") and os.uname().release >= "5.19"


# --------------------------------------------------------------------------- TAP

_tap = {"planned": None, "run": 0, "failed": 0, "done": False}


def _out(line):
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def plan(n):
    _tap["planned"] = n
    _out("1..%d" % n)


def skip_all(reason):
    _out("1..0 # SKIP %s" % reason)
    _tap["done"] = True
    sys.exit(0)


def bail_out(reason):
    _out("Bail out! %s" % reason)
    _tap["done"] = True
    sys.exit(255)


def _comment(prefix, msg, stream=None):
    for line in str(msg).split("\n"):
        if stream is None:
            _out("# " + prefix + line)
        else:
            sys.stdout.flush()
            stream.write("# " + prefix + line + "\n")
            stream.flush()


def diag(msg):
    """A diagnostic: on stderr, as Test::More's diag, so that a plain
    (not verbose) prove run -- CI's log -- shows why a check failed."""
    _comment("", msg, sys.stderr)


def note(msg):
    _comment("", msg)


def seeded_rng():
    """A random.Random for a seeded sweep: the seed is $ZARIS_SEED, or a
    fresh one; printed as a TAP note, and again as a diagnostic by
    done_testing() when a check failed, so that the run can be repeated."""
    seed = int(os.environ.get("ZARIS_SEED") or random.randrange(1 << 30))
    note("seed %d (ZARIS_SEED=%d repeats this run)" % (seed, seed))
    _tap["seed"] = seed
    return random.Random(seed)


def ok(cond, name=""):
    _tap["run"] += 1
    name = str(name).replace("\n", " ").replace("#", "\\#")
    _out("%sok %d - %s" % ("" if cond else "not ", _tap["run"], name))
    if not cond:
        _tap["failed"] += 1
        fr = sys._getframe(1)
        # Point at the test's own line, not at is_() in this file.
        if fr.f_code.co_filename == __file__ and fr.f_back is not None:
            fr = fr.f_back
        diag("  Failed test '%s' at %s line %d." % (name, os.path.basename(fr.f_code.co_filename), fr.f_lineno))
    return bool(cond)


def todo(cond, name, reason):
    """A TAP TODO check: a known divergence, reported without failing the
    test ("not ok ... # TODO reason"); prove shows it as a bonus when COND
    holds, the sign to drop the TODO."""
    _tap["run"] += 1
    name = str(name).replace("\n", " ").replace("#", "\\#")
    reason = str(reason).replace("\n", " ").replace("#", "\\#")
    _out("%sok %d - %s # TODO %s" % ("" if cond else "not ", _tap["run"], name, reason))
    return bool(cond)


def is_(got, expected, name=""):
    good = got == expected
    if not ok(good, name):
        diag("         got: %r" % (got,))
        diag("    expected: %r" % (expected,))
    return good


def done_testing():
    """Print the plan if none was given, and exit with Test::More's code."""
    if _tap["planned"] is None:
        _out("1..%d" % _tap["run"])
    elif _tap["planned"] != _tap["run"]:
        diag("Looks like you planned %d tests but ran %d." % (_tap["planned"], _tap["run"]))
    _tap["done"] = True
    failed = _tap["failed"]
    if failed and _tap.get("seed") is not None:
        # prove shows diagnostics, not notes: the seed that repeats a failed sweep
        diag("ZARIS_SEED=%d repeats this run" % _tap["seed"])
    if _tap["planned"] is not None and _tap["planned"] != _tap["run"]:
        failed = max(failed, 1)
    sys.stdout.flush()
    sys.exit(min(failed, 254))


# ------------------------------------------------------------------------ servers

_servers = []



def zarisd_sources():
    """zarisd's .c and .h files (tracked or new, not ignored), the client
    library's left out: what the hygiene tests read."""
    out = subprocess.run(["git", "-C", REPO, "ls-files", "--cached", "--others", "--exclude-standard",
                          "-z", "--", "zarisd/*.c", "zarisd/*.h"], capture_output=True, check=True).stdout
    return sorted(p.decode() for p in out.split(b"\0")
                  if p and not p.startswith(b"zarisd/client/") and os.path.isfile(os.path.join(REPO, p.decode())))

def free_port():
    """A port the kernel just handed out on 127.0.0.1.  Racy by nature: the
    Server start retries on another port when the server cannot bind."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.bind((HOST, 0))
        return s.getsockname()[1]
    finally:
        s.close()


class Server:
    """One server process this test started.  argv_fn(port) builds its argv."""

    def __init__(self, name, argv_fn, start_timeout=10.0 * SLOW, attempts=3):
        self.name = name
        self.proc = None
        self.port = None
        self.argv = None
        self._logdir = tempfile.mkdtemp(prefix="zaris-itest-")
        self.logpath = os.path.join(self._logdir, name + ".log")
        self._argv_fn = argv_fn
        self._next_port = None
        # start_zarisd(native=True): the ports its argv chose, by name
        self._native_choice = {}
        _servers.append(self)
        last = None
        for _ in range(attempts):
            try:
                self._start(start_timeout)
                return
            except RuntimeError as e:
                last = e
        raise last

    @property
    def pid(self):
        return self.proc.pid if self.proc else None

    def _is_up(self, reply):
        """Whether the start-up PING's REPLY means the server runs (one
        started with a password answers NOAUTH: it runs)."""
        return reply.value == "PONG" or (reply.kind == "-" and str(reply.value).startswith("NOAUTH"))

    @property
    def native_port(self):
        """The --native-port of a start_zarisd(native=True) server."""
        return self._native_choice["native"]

    def _start(self, timeout):
        self.port = self._next_port or free_port()
        self.argv = self._argv_fn(self.port)
        log = open(self.logpath, "ab")
        log.write(("=== %s\n" % " ".join(self.argv)).encode())
        log.flush()
        self.proc = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=log,
                                     stderr=subprocess.STDOUT, cwd=self._logdir)
        log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("%s exited with %s during start; log:\n%s"
                                   % (self.name, self.proc.returncode, self.log_tail()))
            try:
                c = Client(self.port, timeout=1.0)
                try:
                    if self._is_up(c.call("PING")):
                        return
                finally:
                    c.close()
            except (OSError, ProtocolError):
                pass
            time.sleep(0.05)
        self.stop()
        raise RuntimeError("%s did not answer PING within %.0fs; log:\n%s"
                           % (self.name, timeout, self.log_tail()))

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def client(self, timeout=10.0 * SLOW, rcvbuf=None):
        return Client(self.port, timeout=timeout, rcvbuf=rcvbuf)

    def rss_kb(self):
        """VmRSS of the server process in kB (0 when gone)."""
        try:
            with open("/proc/%d/status" % self.proc.pid) as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        return int(line.split()[1])
        except OSError:
            pass
        return 0

    def log_tail(self, nbytes=4000):
        try:
            with open(self.logpath, "rb") as f:
                f.seek(0, 2)
                size = f.tell()
                f.seek(max(0, size - nbytes))
                return f.read().decode("utf-8", "replace")
        except OSError:
            return "(no log)"

    def stop(self, timeout=10.0 * SLOW):
        """SIGTERM, wait up to timeout, then SIGKILL.  Returns the exit status."""
        p = self.proc
        if p is None:
            return None
        if p.poll() is None:
            try:
                p.send_signal(signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                p.wait(timeout)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        return p.returncode

    def kill(self):
        """SIGKILL (kill -9) and reap; returns the exit status."""
        p = self.proc
        if p is not None and p.poll() is None:
            try:
                p.kill()
            except ProcessLookupError:
                pass
            p.wait()
        return None if p is None else p.returncode

    def restart(self, timeout=10.0 * SLOW, same_port=False):
        """stop() and start again; SAME_PORT keeps the port (e.g. a
        primary its replicas point at) instead of taking a fresh one."""
        self.stop()
        self._next_port = self.port if same_port else None
        last = None
        for _ in range(3):
            try:
                self._start(timeout)
                return
            except RuntimeError as e:
                last = e
        raise last

    def cleanup(self):
        self.stop()
        if os.environ.get("ZARIS_KEEP_LOGS"):
            sys.stderr.write("# %s log kept at %s\n" % (self.name, self.logpath))
        else:
            shutil.rmtree(self._logdir, ignore_errors=True)


def _cleanup_all():
    while _servers:
        _servers.pop().cleanup()


atexit.register(_cleanup_all)


def _on_signal(signum, frame):
    # Turn SIGTERM/SIGHUP (prove killed, timeout) into a normal exit so the
    # atexit hook still stops the servers we started.
    sys.exit(128 + signum)


for _sig in (signal.SIGTERM, signal.SIGHUP):
    try:
        signal.signal(_sig, _on_signal)
    except (ValueError, OSError):
        pass


def stop_process(pid, timeout=5.0 * SLOW):
    """SIGSTOP PID and wait (bounded) until every one of its threads is
    stopped: kill() returns before a multi-threaded process has stopped
    them all, and a zarisd worker or replication thread still running
    answers or acknowledges what the test meant to find held."""
    os.kill(pid, signal.SIGSTOP)
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            states = []
            for t in os.listdir("/proc/%d/task" % pid):
                with open("/proc/%d/task/%s/stat" % (pid, t)) as f:
                    states.append(f.read().rsplit(")", 1)[1].split()[0])
        except OSError:
            states = []
        if states and all(st in ("T", "t") for st in states):
            return True
        time.sleep(0.005)
    return False


def run_until_exit(argv, timeout, prefix="zaris-run-"):
    """Runs ARGV (a server expected to refuse to start) in a temporary
    directory, removed afterwards; returns (its exit status, or None if it
    was still running after TIMEOUT seconds and was stopped, its output)."""
    d = tempfile.mkdtemp(prefix=prefix)
    with tempfile.TemporaryFile() as out:
        p = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=d)
        try:
            rc = p.wait(timeout)
        except subprocess.TimeoutExpired:
            p.terminate()
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
            rc = None
        out.seek(0)
        text = out.read().decode("utf-8", "replace")
    shutil.rmtree(d, ignore_errors=True)
    return rc, text


def start_redis(extra=(), name="redis-server", **kw):
    """A redis-server on a free loopback port, without persistence."""
    exe = shutil.which("redis-server") or "/usr/bin/redis-server"

    extra = list(extra)
    # In cluster mode redis-server also listens on a bus port, by default
    # port + 10000, and refuses to start when that passes 65535 -- as a free
    # port above 55535 would.  A bus port of its own avoids both that and a
    # clash with whatever holds port + 10000.
    cluster_bus = "--cluster-enabled" in extra and "--cluster-port" not in extra

    def argv(port):
        bus = ["--cluster-port", str(free_port())] if cluster_bus else []
        return [exe, "--port", str(port), "--bind", HOST, "--save", "", "--appendonly", "no",
                "--daemonize", "no", "--protected-mode", "no"] + bus + extra
    return Server(name, argv, **kw)


def start_zarisd(threads=None, io_backend=None, extra=(), name="zarisd", native=False, **kw):
    """A zarisd from $ZARIS_BUILD on a free loopback port.

    io_backend: "uring"/"epoll"/"auto"; None takes $ZARIS_IO_BACKEND if set.
    extra: further flags, e.g. ["--maxmemory", "64mb"].
    native: also --native-port on a free port, srv.native_port.  The port is
    picked afresh with each start attempt, as the RESP port is (a port
    picked once up front can be taken by then, and every retry would fail
    on it), and kept by restart(same_port=True)."""
    if os.environ.get("ZARIS_STANDIN") == "redis-server":
        return start_redis(name=name + "(standin)", **kw)
    exe = zarisd_path()
    if not os.access(exe, os.X_OK):
        raise RuntimeError("no zarisd at %s (set ZARIS_BUILD)" % exe)
    if io_backend is None:
        io_backend = os.environ.get("ZARIS_IO_BACKEND") or None
    chosen = {}

    def argv(port):
        a = [exe, "--port", str(port), "--bind", HOST]
        if threads is not None:
            a += ["--threads", str(threads)]
        if io_backend:
            a += ["--io-backend", io_backend]
        if native:
            if chosen.get("resp") != port:  # same RESP port again: a same-port restart
                chosen["native"] = free_port()
                chosen["resp"] = port
            a += ["--native-port", str(chosen["native"])]
        return a + [str(x) for x in extra]
    srv = Server(name, argv, **kw)
    srv._native_choice = chosen
    return srv


# --------------------------------------------------------------------------- RESP

class ProtocolError(Exception):
    pass


class Reply:
    """One RESP reply.  kind is its type byte as a str ('+', '$', '*', ...).

    value by kind:  + - ( , = !  str (text as received; '=' keeps "fmt:data")
                    $ !          bytes, or None for $-1 (RESP2 null bulk)
                    :            int           #  bool        _  None
                    , (double)   str as sent (e.g. "inf", "1.5")
                    * ~ >        list of Reply, or None for *-1
                    %            list of (Reply, Reply) pairs
    attrs: the '|' attribute map that preceded this reply, or None.
    raw: the exact bytes of this reply (attribute included)."""

    __slots__ = ("kind", "value", "raw", "attrs")

    def __init__(self, kind, value, raw=b"", attrs=None):
        self.kind = kind
        self.value = value
        self.raw = raw
        self.attrs = attrs

    def is_error(self):
        return self.kind in ("-", "!")

    def py(self):
        """Plain Python value (bytes stay bytes, errors become str 'ERR ...')."""
        k, v = self.kind, self.value
        if k in ("*", "~", ">"):
            return None if v is None else [x.py() for x in v]
        if k == "%":
            return {_hashable(a.py()): b.py() for a, b in v}
        if k == ",":
            return float(v)
        if k == "(":
            return int(v)
        return v

    def __eq__(self, other):
        return isinstance(other, Reply) and self.kind == other.kind and self.value == other.value

    def __repr__(self):
        return "Reply(%r, %r)" % (self.kind, self.value)


def _hashable(x):
    return tuple(x) if isinstance(x, list) else x


def _arg_bytes(a):
    if isinstance(a, bytes):
        return a
    if isinstance(a, (bytearray, memoryview)):
        return bytes(a)
    return str(a).encode()


def encode_command(*args):
    """RESP multibulk encoding of one command."""
    parts = [b"*%d\r\n" % len(args)]
    for a in args:
        b = _arg_bytes(a)
        parts.append(b"$%d\r\n" % len(b))
        parts.append(b)
        parts.append(b"\r\n")
    return b"".join(parts)


class _Incomplete(Exception):
    pass


def _line(buf, pos):
    end = buf.find(b"\r\n", pos)
    if end < 0:
        raise _Incomplete()
    return buf[pos:end], end + 2


def _int(s, what):
    try:
        return int(s)
    except ValueError:
        raise ProtocolError("bad %s %r" % (what, s))


def _parse(buf, pos):
    """Parse one reply at buf[pos:].  Returns (Reply, next_pos) or raises _Incomplete."""
    if pos >= len(buf):
        raise _Incomplete()
    start = pos
    kind = chr(buf[pos])
    line, pos = _line(buf, pos + 1)
    if kind == "|":
        n = _int(line, "attribute count")
        attrs = []
        for _ in range(n):
            k, pos = _parse(buf, pos)
            v, pos = _parse(buf, pos)
            attrs.append((k, v))
        r, pos = _parse(buf, pos)
        r.attrs = attrs
        r.raw = bytes(buf[start:pos])
        return r, pos
    if kind in "+-(,":
        val = line.decode("utf-8", "surrogateescape")
    elif kind == ":":
        val = _int(line, "integer")
    elif kind == "_":
        val = None
    elif kind == "#":
        if line not in (b"t", b"f"):
            raise ProtocolError("bad boolean %r" % line)
        val = line == b"t"
    elif kind in "$!=":
        if line == b"?":  # RESP3 streamed string: ;len chunks until ;0
            chunks = []
            while True:
                cl, pos = _line(buf, pos)
                if cl[:1] != b";":
                    raise ProtocolError("bad streamed chunk %r" % cl)
                n = _int(cl[1:], "chunk length")
                if n == 0:
                    break
                if len(buf) < pos + n + 2:
                    raise _Incomplete()
                chunks.append(bytes(buf[pos:pos + n]))
                pos += n + 2
            val = b"".join(chunks)
        else:
            n = _int(line, "bulk length")
            if n < 0:
                if kind != "$" or n != -1:
                    raise ProtocolError("bad bulk length %d" % n)
                val = None
            else:
                if len(buf) < pos + n + 2:
                    raise _Incomplete()
                if buf[pos + n:pos + n + 2] != b"\r\n":
                    raise ProtocolError("bulk not terminated by CRLF")
                val = bytes(buf[pos:pos + n])
                pos += n + 2
        if kind in "!=" and val is not None:
            val = val.decode("utf-8", "surrogateescape")
    elif kind in "*~>%":
        if line == b"?":  # RESP3 streamed aggregate, ends with "."
            items = []
            while True:
                if pos < len(buf) and buf[pos:pos + 3] == b".\r\n":
                    pos += 3
                    break
                r, pos = _parse(buf, pos)
                items.append(r)
            n = None
        else:
            n = _int(line, "aggregate length")
            items = None
            if n >= 0:
                items = []
                for _ in range(n * 2 if kind == "%" else n):
                    r, pos = _parse(buf, pos)
                    items.append(r)
            elif kind != "*" or n != -1:
                raise ProtocolError("bad aggregate length %d" % n)
        if kind == "%" and items is not None:
            items = list(zip(items[0::2], items[1::2]))
        val = items
    else:
        raise ProtocolError("unknown reply type byte %r" % kind)
    return Reply(kind, val, bytes(buf[start:pos])), pos


def parse_reply(data):
    """Parse one complete reply from bytes; returns (Reply, rest) or (None, data)."""
    try:
        r, pos = _parse(data, 0)
    except _Incomplete:
        return None, data
    return r, data[pos:]


class Client:
    """A minimal raw RESP client over one TCP connection.

    call(*args)     send one command, return its Reply (r.raw = exact bytes)
    send(*args)     send without reading;  send_raw(bytes) for anything else
    read_reply()    read exactly one reply (pushes '>' included)
    recv_until_closed() read what arrives until EOF (for protocol errors)"""

    def __init__(self, port, host=HOST, timeout=10.0 * SLOW, rcvbuf=None):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if rcvbuf:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        self.sock.settimeout(timeout)
        try:
            self.sock.connect((host, port))
        except OSError:
            self.sock.close()
            raise
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = bytearray()
        self.closed = False

    def close(self):
        if not self.closed:
            self.sock.close()
            self.closed = True

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def settimeout(self, t):
        self.sock.settimeout(t)

    def send_raw(self, data):
        self.sock.sendall(data)

    def send(self, *args):
        self.sock.sendall(encode_command(*args))

    def _fill(self):
        chunk = self.sock.recv(1 << 20)
        if not chunk:
            raise ConnectionError("connection closed by server")
        self.buf += chunk

    def read_reply(self):
        while True:
            try:
                r, pos = _parse(self.buf, 0)
                del self.buf[:pos]
                return r
            except _Incomplete:
                self._fill()

    def call(self, *args):
        self.send(*args)
        return self.read_reply()

    def callv(self, *args):
        """call() and return the plain Python value; raises on error replies."""
        r = self.call(*args)
        if r.is_error():
            raise ProtocolError("%s -> %s" % (" ".join(map(str, args)), r.value))
        return r.py()

    def pipeline(self, commands):
        """Send all commands in one write, then read as many replies."""
        self.sock.sendall(b"".join(encode_command(*c) for c in commands))
        return [self.read_reply() for _ in commands]

    def recv_until_closed(self, timeout=5.0, limit=1 << 26):
        """Read until EOF.  Returns (data, closed): closed is False on timeout.
        A reset counts as closed."""
        data = bytes(self.buf)
        self.buf = bytearray()
        deadline = time.monotonic() + timeout
        while len(data) < limit:
            left = deadline - time.monotonic()
            if left <= 0:
                return data, False
            r, _, _ = select.select([self.sock], [], [], left)
            if not r:
                return data, False
            try:
                chunk = self.sock.recv(1 << 20)
            except ConnectionResetError:
                return data, True
            if not chunk:
                return data, True
            data += chunk
        return data, False

    def is_closed_by_peer(self, timeout=5.0):
        data, closed = self.recv_until_closed(timeout)
        return closed and not data


# ------------------------------------------------------------ case-file helpers

def split_args(line):
    """Split a line the way redis-cli does (sdssplitargs): words separated by
    blanks; "..." with \\xHH \\n \\r \\t \\b \\a \\\\ \\" escapes; '...' with \\'.
    A closing quote must be followed by a blank or the end.  Returns a list of
    bytes, or raises ValueError on unbalanced quotes."""
    out = []
    i, n = 0, len(line)
    esc = {"n": "\n", "r": "\r", "t": "\t", "b": "\b", "a": "\a"}
    while True:
        while i < n and line[i].isspace():
            i += 1
        if i >= n:
            return out
        cur = []
        inq = insq = False
        while True:
            if inq:
                if i >= n:
                    raise ValueError("unbalanced quotes")
                c = line[i]
                if c == "\\" and i + 3 < n and line[i + 1] == "x" and \
                        re.match(r"[0-9a-fA-F]{2}", line[i + 2:i + 4]):
                    cur.append(int(line[i + 2:i + 4], 16))
                    i += 3
                elif c == "\\" and i + 1 < n:
                    i += 1
                    cur.append(esc.get(line[i], line[i]))
                elif c == '"':
                    if i + 1 < n and not line[i + 1].isspace():
                        raise ValueError("closing quote must be followed by a space")
                    i += 1
                    break
                else:
                    cur.append(c)
            elif insq:
                if i >= n:
                    raise ValueError("unbalanced quotes")
                c = line[i]
                if c == "\\" and i + 1 < n and line[i + 1] == "'":
                    i += 1
                    cur.append("'")
                elif c == "'":
                    if i + 1 < n and not line[i + 1].isspace():
                        raise ValueError("closing quote must be followed by a space")
                    i += 1
                    break
                else:
                    cur.append(c)
            else:
                if i >= n:
                    break
                c = line[i]
                if c.isspace():
                    break
                if c == '"':
                    inq = True
                elif c == "'":
                    insq = True
                else:
                    cur.append(c)
            i += 1
        # \xHH escapes are single bytes (ints); other text is UTF-8.
        out.append(b"".join(bytes([x]) if isinstance(x, int) else x.encode("utf-8") for x in cur))


__all__.append("split_args")


# ------------------------------------------------------------ blocking pops

def blocked_clients(cl):
    """INFO clients' blocked_clients through CL (-1 when absent)."""
    info = cl.call("INFO", "clients").value
    if isinstance(info, (bytes, bytearray)):
        info = info.decode()
    m = re.search(r"blocked_clients:(\d+)", info)
    return int(m.group(1)) if m else -1


def wait_until(cond, timeout=10.0 * SLOW, step=0.02):
    """Polls COND() until it returns a true value or TIMEOUT seconds pass;
    returns its last value. The bounded wait for a state (a server has
    taken a request, an error is on, a writer is done) where a fixed sleep
    would guess how long that takes."""
    deadline = time.monotonic() + timeout
    while True:
        v = cond()
        if v or time.monotonic() >= deadline:
            return v
        time.sleep(step)


def wait_blocked(cl, n, timeout=10.0 * SLOW):
    """Polls (bounded) until the server reports N blocked clients."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if blocked_clients(cl) == n:
            return True
        time.sleep(0.01)
    return False


def start_blocked(srv, admin, expect_blocked, *cmd, setup=()):
    """A new client that runs the SETUP commands, sends CMD and is known to
    be blocked afterwards (ADMIN sees EXPECT_BLOCKED blocked clients)."""
    c = srv.client()
    for s in setup:
        c.call(*s)
    c.send(*cmd)
    if not wait_blocked(admin, expect_blocked):
        raise RuntimeError("client did not block on %r" % (cmd,))
    return c


# ------------------------------------------------------------ scripting

def guarded(srv, fn):
    """The results of FN(SRV, results); those it had when a connection was
    lost (the later checks then fail), with the server's state and the end
    of its log as a diagnostic."""
    res = {}
    try:
        fn(srv, res)
    except (OSError, ProtocolError, RuntimeError) as e:
        diag("%s: %s: %s (server %s); log:\n%s" % (fn.__name__, type(e).__name__, e,
                                                 "up" if srv.alive() else "gone", srv.log_tail(1500)))
    return res


def shutdown_nosave_while_busy(srv, runner, other, res, wait, runner_name="script's client"):
    """SHUTDOWN NOSAVE from OTHER while RUNNER's script is busy: into RES
    the reply and whether OTHER's connection closed, whether RUNNER's did,
    and the server's exit status (None while it is still up after WAIT)."""
    other.send("SHUTDOWN", "NOSAVE")
    res["shutdown nosave: reply, closed"] = other.recv_until_closed(wait)
    res[runner_name + " closed"] = runner.recv_until_closed(wait)[1]
    try:
        srv.proc.wait(wait)
    except Exception:  # noqa: BLE001 -- a server still up is the result
        pass
    res["exit status"] = srv.proc.poll()
    runner.close()
    other.close()


def require_eval(srv):
    """Skips the whole test when SRV has no EVAL (unknown command); bails
    out, with the end of its log, when EVAL "return 1" 0 does not answer
    :1 (a crash closes the connection)."""
    try:
        with srv.client() as probe:
            r = probe.call("EVAL", "return 1", "0")
    except (OSError, ProtocolError) as e:
        bail_out("%s: no reply to EVAL \"return 1\" 0 (%s); log:\n%s" % (srv.name, e, srv.log_tail(1500)))
    if r.is_error() and r.value.startswith("ERR unknown command"):
        skip_all("%s has no EVAL" % srv.name)
    if r.raw != b":1\r\n":
        bail_out("%s: EVAL \"return 1\" 0 answered %r" % (srv.name, r.raw))


# ------------------------------------------------------------ workers

def _worker_commands(cl):
    info = cl.call("INFO", "threads").value
    info = info.decode() if isinstance(info, bytes) else (info or "")
    return {int(w): int(n) for w, n in re.findall(r"worker(\d+):commands_processed=(\d+)", info)}


def clients_per_worker(ctrl):
    """{worker name: connected_clients} from zarisd's INFO threads, read on
    the connection CTRL."""
    out = {}
    for line in ctrl.callv("INFO", "threads").decode().split("\r\n"):
        if line.startswith("worker") and ":" in line:
            name, rest = line.split(":", 1)
            if not name[6:].isdigit():
                continue
            fields = dict(kv.split("=", 1) for kv in rest.split(","))
            out[name] = int(fields["connected_clients"])
    return out


def connect_on_worker(srv, ctrl, wait=5.0):
    """Opens a client of SRV and returns (client, worker name), the name as
    INFO threads spells it ("worker0"), found by worker_of (the worker whose
    commands_processed rose by the client's own PINGs); None when no one
    worker alone rose within WAIT s (scaled by SLOW). CTRL is not used any
    more: watching connected_clients rise there took a close still being
    handled on the same worker for the new client's and hid it, and the
    callers then took None for a worker of its own."""
    c = srv.client()
    end = time.monotonic() + wait * SLOW
    while True:
        w = worker_of(c)
        if w is not None:
            return c, "worker%d" % w
        if time.monotonic() >= end:
            return c, None
        time.sleep(0.005)


def worker_of(cl):
    """The zarisd worker serving the connection CL: the one whose
    commands_processed (INFO threads) rose by the 50 PINGs CL sends. None
    without INFO threads (redis-server) or when no one worker alone rose
    (another client was busy meanwhile)."""
    before = _worker_commands(cl)
    if not before:
        return None
    cl.pipeline([("PING",)] * 50)
    after = _worker_commands(cl)
    grown = [w for w in after if after[w] - before.get(w, 0) >= 50]
    return grown[0] if len(grown) == 1 else None


def _worker_input_bytes(cl):
    info = cl.call("INFO", "threads").value
    info = info.decode() if isinstance(info, bytes) else (info or "")
    return {int(w): int(n) for w, n in re.findall(r"worker(\d+):\S*?net_input_bytes=(\d+)", info)}


def send_and_wait_read(cl, worker, ctrl, *cmd, timeout=10.0 * SLOW):
    """Sends CMD on CL (served by WORKER, as worker_of gives it) without
    reading its reply, and waits (bounded) until that worker has taken the
    request's bytes, as its net_input_bytes in INFO threads read through
    CTRL (a connection of another worker) shows: from then on the worker
    runs CMD before it serves anything else. For a long command (DEBUG
    SLEEP, an EXEC around one) that must be running, instead of a sleep as
    a head start. False when the bytes were not taken within TIMEOUT."""
    before = _worker_input_bytes(ctrl).get(worker)
    req = encode_command(*cmd)
    cl.send_raw(req)
    if before is None:
        return False
    deadline = time.monotonic() + timeout
    while True:
        if _worker_input_bytes(ctrl).get(worker, 0) >= before + len(req):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.01)


def client_on_other_worker(srv, cl, attempts=64):
    """A new connection of SRV served by another worker than CL's (the
    kernel spreads connections over the workers' SO_REUSEPORT listeners),
    or just a new connection when SRV has no INFO threads (redis-server).
    Raises RuntimeError after ATTEMPTS connections on CL's worker."""
    w0 = worker_of(cl)
    if w0 is None:
        return srv.client()
    spare = []
    try:
        for _ in range(attempts):
            c = srv.client()
            w = worker_of(c)
            if w is not None and w != w0:
                return c
            spare.append(c)
    finally:
        for s in spare:
            s.close()
    raise RuntimeError("%d connections, all on worker %d" % (attempts, w0))


def client_on_worker(srv, want, timeout=10.0 * SLOW):
    """A new connection of SRV served by worker WANT (an index, as
    worker_of gives), with TIMEOUT; any new one on redis-server (no INFO
    threads). Raises RuntimeError after 64 connections elsewhere."""
    for _ in range(64):
        c = srv.client(timeout=timeout)
        w = worker_of(c)
        if w is None or w == want:
            return c
        c.close()
    raise RuntimeError("no connection landed on worker %d" % want)


def reply_within(cl, what, wait):
    """CL's next reply's bytes, or ("no reply", WHAT, the error's name) when
    none came within WAIT seconds: for a worker that may be serving nobody
    (a busy script) without the test waiting on it for good."""
    cl.settimeout(wait)
    try:
        return cl.read_reply().raw
    except (OSError, ProtocolError) as e:
        return ("no reply", what, type(e).__name__)


def ping_until(cl, want, wait):
    """PINGs on CL until the reply's bytes are WANT (e.g. -BUSY once a
    script runs past busy-reply-threshold), none comes within WAIT s, or
    WAIT s have passed: the last reply_within() result."""
    r = None
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        cl.send("PING")
        r = reply_within(cl, "PING", wait)
        if r == want or isinstance(r, tuple):
            break
        time.sleep(0.02)
    return r


def same_worker_client(srv, other):
    """A new connection on OTHER's worker (any one on redis-server)."""
    w = worker_of(other)
    if w is None:
        return srv.client()
    for _ in range(64):
        c = srv.client()
        if worker_of(c) == w:
            return c
        c.close()
    raise RuntimeError("no connection landed on worker %d" % w)


def start_on_data(d, read, appendonly="yes"):
    """Starts zarisd on the data directory D (no save rules) and waits,
    bounded, for it to answer PING or to exit: ("started", READ(client)),
    ("refused", "exit N\n" + its output) or ("hung", None). The process is
    stopped (SIGTERM, then SIGKILL) before this returns: for tests of what
    a start-up makes of the files it finds."""
    port = free_port()
    out = tempfile.TemporaryFile()
    p = subprocess.Popen([zarisd_path(), "--port", str(port), "--bind", HOST, "--dir", d,
                          "--appendonly", appendonly, "--save", ""], stdout=out, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 15 * SLOW
    try:
        while time.monotonic() < deadline:
            if p.poll() is not None:
                out.seek(0)
                return "refused", "exit %d\n%s" % (p.returncode, out.read().decode("utf-8", "replace"))
            try:
                c = Client(port, timeout=2 * SLOW)
            except OSError:
                time.sleep(0.02)
                continue
            try:
                if c.call("PING").raw != b"+PONG\r\n":
                    continue
                return "started", read(c)
            finally:
                c.close()
        return "hung", None
    finally:
        if p.poll() is None:
            p.terminate()
            try:
                p.wait(10 * SLOW)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        out.close()


def compare_scenarios(scenarios, threads=2, extra=()):
    """Runs SCENARIOS(server) -> [(name, [raw replies])] against redis-server
    and zarisd (both started with the flags EXTRA), one TAP line per
    scenario, the differing steps as diagnostics; exits with
    done_testing()'s status."""
    want = scenarios(start_redis(extra=extra))
    got = scenarios(start_zarisd(threads=threads, extra=extra))
    plan(len(want))
    for (name, w), (_, g) in zip(want, got):
        if not ok(w == g, name):
            diag_steps(w, g)
    sys.exit(done_testing())


def diag_steps(want, got, first_only=False):
    """Diagnostics for the steps where two lists of replies differ (a step
    one list lacks shows as None); FIRST_ONLY stops at the first."""
    for i in range(max(len(want), len(got))):
        a = want[i] if i < len(want) else None
        b = got[i] if i < len(got) else None
        if a != b:
            diag("step %d: redis %r" % (i, a))
            diag("step %d: zarisd %r" % (i, b))
            if first_only:
                return
