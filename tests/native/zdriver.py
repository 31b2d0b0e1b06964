"""zdriver — a libzaris client for tests: runs $ZARIS_BUILD/native/zaris_driver
(tests/native/zaris_driver.c) and speaks its line protocol, so a test drives
the C library step by step and gets every result back as a RESP3 Reply
(tests/lib/zaris.py's), comparable with what a RESP3 client gets from the
same server.

    d = Driver()
    d.connect(port=native_port, timeout=2000)      -> (rc, text)
    d.add("set", b"k", b"v", ttl=1500, nx=True, labels=[b"a"])
    rc, results = d.exec()                          -> [(status, Reply|None)]

Every read from the driver is bounded (select, 30 s): a hung library fails
the test instead of hanging it."""

import os
import select
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from zaris import build_dir, parse_reply  # noqa: E402

# zaris.h's client errors
E_IO, E_TIMEOUT, E_PROTO, E_AUTH, E_NOMEM, E_INVAL, E_SERVER, E_BUSY, E_NOROUTE = range(-1, -10, -1)
STATUS = {"OK": 0, "ERR": 1, "WRONGTYPE": 2, "MOVED": 3, "ASK": 4}


def driver_path():
    return os.path.join(build_dir(), "native", "zaris_driver")


def _hex(b):
    if isinstance(b, str):
        b = b.encode()
    return b.hex() if b else ""


class Driver:
    def __init__(self, timeout=30.0):
        self.timeout = timeout
        self.proc = subprocess.Popen([driver_path()], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.buf = b""

    def close(self):
        if self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def _readline(self):
        while b"\n" not in self.buf:
            r, _, _ = select.select([self.proc.stdout], [], [], self.timeout)
            if not r:
                raise TimeoutError("zaris_driver did not answer in %.0fs" % self.timeout)
            chunk = os.read(self.proc.stdout.fileno(), 1 << 20)
            if not chunk:
                raise EOFError("zaris_driver exited (status %s)" % self.proc.poll())
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return line.decode()

    def cmd(self, verb, *args, **opts):
        """Sends one line; returns the lines of its answer (without '.')."""
        words = [verb]
        for a in args:
            h = _hex(a)
            if not h:
                raise ValueError("the driver takes no empty positional argument")
            words.append(h)
        for k, v in opts.items():
            if v is True:
                words.append(k)
            elif v is False or v is None:
                continue
            elif isinstance(v, int):
                words.append("%s=%d" % (k, v))
            elif isinstance(v, (list, tuple)):
                words.append("%s=%s" % (k, ",".join(_hex(x) for x in v)))
            else:
                words.append("%s=%s" % (k, _hex(v)))
        self.proc.stdin.write((" ".join(words) + "\n").encode())
        self.proc.stdin.flush()
        out = []
        while True:
            line = self._readline()
            if line == ".":
                return out
            out.append(line)

    def connect(self, **opts):
        line = self.cmd("connect", **opts)[0].split(" ", 2)
        return int(line[1]), line[2] if len(line) > 2 else ""

    def add(self, verb, *args, **opts):
        line = self.cmd(verb, *args, **opts)[0]
        if not line.startswith("added "):
            raise ValueError("%s: %s" % (verb, line))
        return int(line.split()[1])

    @staticmethod
    def _result(line):
        _, status, hexv = line.split(" ")
        if hexv == "-":
            return int(status), None
        r, rest = parse_reply(bytes.fromhex(hexv))
        assert r is not None and rest == b"", "driver printed a bad value %r" % hexv
        return int(status), r

    def exec(self):
        """Runs the current batch: (rc, [(status, Reply or None)]), and the
        error text as self.err."""
        lines = self.cmd("exec")
        head = lines[0].split(" ", 2)
        self.err = head[2] if len(head) > 2 else ""
        return int(head[1]), [self._result(l) for l in lines[1:]]

    def one(self, verb, *args, **opts):
        """One operation alone: (status, Reply or None), rc in self.rc."""
        self.add(verb, *args, **opts)
        self.rc, res = self.exec()
        return res[0]

    def send(self):
        return int(self.cmd("send")[0].split()[2])

    def waitall(self):
        """Every sent batch, in send order: [(done, [(status, Reply)])]."""
        out = []
        for line in self.cmd("waitall"):
            if line.startswith("batch "):
                out.append((line.split()[3] == "1", []))
            else:
                out[-1][1].append(self._result(line))
        return out

    def stats(self):
        w = self.cmd("stats")[0].split()[1:]
        return {w[i]: int(w[i + 1]) for i in range(0, len(w), 2)}

    def nodes(self, *keys):
        return [int(l.split()[1]) for l in self.cmd("nodes", *keys)]
