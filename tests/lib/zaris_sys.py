"""zaris_sys.py — what netns.t and server_limits.t need beyond zaris.py:
private network namespaces, servers behind a password, TAP skips.

What it owns:

  * NetnsPair: two network namespaces zt-<pid>-a and zt-<pid>-b joined by one
    veth pair, addresses 10.200.<n>.1/30 (a) and .2/30 (b).  Both veth ends
    are created inside the namespaces, so the host gets no interface, address
    or route, and a namespace's only routes are its /30 and its loopback: no
    packet can leave the machine.  The namespaces are deleted by close(), by
    the with-block, and at exit (atexit), whichever comes first.
  * inside(ns): a with-block that moves the calling thread into a namespace
    (setns(2)) and back.  Sockets created and processes started inside stay
    in that namespace after the block: zaris.start_zarisd(), start_redis()
    and Client all work unchanged in there.
  * start_server(...): like zaris.start_zarisd/start_redis, but the start-up
    check also accepts "-NOAUTH" and "-DENIED" replies, so a server started
    with --requirepass or answering in protected mode counts as up.
  * skip(reason): one TAP test point "ok N # skip reason", counted like ok().

Needs root (CAP_SYS_ADMIN, CAP_NET_ADMIN); NetnsPair raises NetnsUnavailable
when `ip netns add` fails, so a test can skip.
"""

import atexit
import ctypes
import os
import subprocess
import time

import zaris

__all__ = ["NetnsPair", "NetnsUnavailable", "inside", "start_server", "skip"]

_CLONE_NEWNET = 0x40000000
_libc = ctypes.CDLL(None, use_errno=True)


class NetnsUnavailable(Exception):
    pass


def _setns(fd):
    if _libc.setns(fd, _CLONE_NEWNET) != 0:
        e = ctypes.get_errno()
        raise OSError(e, "setns: " + os.strerror(e))


class inside:
    """with inside("zt-1-a"): ... runs the block in that network namespace."""

    def __init__(self, name):
        self.name = name
        self._home = None

    def __enter__(self):
        self._home = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
        fd = os.open("/run/netns/" + self.name, os.O_RDONLY)
        try:
            _setns(fd)
        except OSError:
            os.close(self._home)
            raise
        finally:
            os.close(fd)
        return self

    def __exit__(self, *exc):
        try:
            _setns(self._home)
        finally:
            os.close(self._home)
        return False


def _ip(*args, check=True):
    r = subprocess.run(["ip"] + list(args), stdin=subprocess.DEVNULL,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=20)
    if check and r.returncode != 0:
        raise RuntimeError("ip %s: %s" % (" ".join(args), r.stdout.decode(errors="replace").strip()))
    return r


_pairs = []


class NetnsPair:
    """Namespaces .a and .b (names), addresses .addr_a and .addr_b."""

    def __init__(self):
        pid = os.getpid()
        self.a = "zt-%d-a" % pid
        self.b = "zt-%d-b" % pid
        # Addresses only exist inside the pair, so clashes with other tests'
        # pairs are harmless; the PID still keeps diagnostics apart.
        n = pid % 250 + 1
        self.addr_a = "10.200.%d.1" % n
        self.addr_b = "10.200.%d.2" % n
        self._made = []
        r = _ip("netns", "add", self.a, check=False)
        if r.returncode != 0:
            raise NetnsUnavailable(r.stdout.decode(errors="replace").strip())
        self._made.append(self.a)
        _pairs.append(self)
        try:
            _ip("netns", "add", self.b)
            self._made.append(self.b)
            # Both ends are born inside the namespaces: the host never sees them.
            _ip("-n", self.a, "link", "add", "veth0", "type", "veth", "peer", "name", "veth0", "netns", self.b)
            for ns, addr in ((self.a, self.addr_a), (self.b, self.addr_b)):
                _ip("-n", ns, "link", "set", "lo", "up")
                _ip("-n", ns, "addr", "add", addr + "/30", "dev", "veth0")
                _ip("-n", ns, "link", "set", "veth0", "up")
        except Exception:
            self.close()
            raise
        self._wait_link()

    def _wait_link(self, timeout=5.0):
        """A fresh veth carries packets once both ends are up and DAD is not
        in the way (IPv4 has none); wait for the operstate, bounded."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            states = [_ip("-n", ns, "-br", "link", "show", "veth0").stdout.split()[1]
                      for ns in (self.a, self.b)]
            if all(s == b"UP" for s in states):
                return
            time.sleep(0.05)
        raise RuntimeError("veth pair did not come up within %.0fs" % timeout)

    def close(self):
        while self._made:
            _ip("netns", "del", self._made.pop(), check=False)
        if self in _pairs:
            _pairs.remove(self)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


def _close_all():
    if _pairs:
        # atexit runs this before zaris's own hook (registered first): stop
        # the servers now, while their namespaces still have names.
        zaris._cleanup_all()
    while _pairs:
        _pairs[-1].close()


atexit.register(_close_all)


class _Server(zaris.Server):
    """zaris.Server whose start-up check accepts NOAUTH/DENIED as "up"."""

    def _is_up(self, reply):
        return reply.value == "PONG" or (reply.kind == "-" and reply.value.split(" ")[0] in ("NOAUTH", "DENIED"))


def start_server(kind, extra=(), threads=None, io_backend=None, name=None, **kw):
    """kind "zarisd" or "redis": the same argv as zaris.start_zarisd() /
    start_redis() (loopback bind, no persistence for redis), then extra;
    later flags win, so extra may rebind or turn protected mode back on."""
    if kind == "redis":
        exe = "/usr/bin/redis-server"

        def argv(port):
            return [exe, "--port", str(port), "--bind", zaris.HOST, "--save", "", "--appendonly", "no",
                    "--daemonize", "no", "--protected-mode", "no"] + list(extra)
        return _Server(name or "redis-server", argv, **kw)
    exe = zaris.zarisd_path()
    if not os.access(exe, os.X_OK):
        raise RuntimeError("no zarisd at %s (set ZARIS_BUILD)" % exe)
    if io_backend is None:
        io_backend = os.environ.get("ZARIS_IO_BACKEND") or None

    def zargv(port):
        a = [exe, "--port", str(port), "--bind", zaris.HOST]
        if threads is not None:
            a += ["--threads", str(threads)]
        if io_backend:
            a += ["--io-backend", io_backend]
        return a + list(extra)
    return _Server(name or "zarisd", zargv, **kw)


def skip(reason):
    """A skipped test point (a real TAP skip: ok() would escape the '#')."""
    zaris._tap["run"] += 1
    zaris._out("ok %d # skip %s" % (zaris._tap["run"], str(reason).replace("\n", " ")))
