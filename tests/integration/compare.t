#!/usr/bin/python3
# compare.t — run every tests/integration/cases/*.txt against zarisd and
# redis-server and compare the raw replies byte for byte.
#
# One TAP line per (case file, io backend, RESP protocol).  A mismatch prints
# file:line, the command, Redis's reply and zarisd's reply.  One zarisd per
# backend (uring, epoll) and one redis-server serve every file; each file
# starts on a new connection after FLUSHALL and SELECT 0.  The case-file
# format and its directives are described in tests/integration/README.md.
#
#   compare.t                 the TAP test (prove runs it)
#   compare.t --show FILE..   print each command and redis-server's reply
#                             (RESP2 and RESP3), to write or check a case file
# Env: ZARIS_CASES=regex picks case files by name; ZARIS_BACKENDS="epoll"
# limits the backends; ZARIS_STANDIN=redis-server compares redis with redis.

import glob
import os
import re
import socket
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from zaris import *  # noqa: E402,F403
from zaris import split_args  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
CASES = os.path.join(HERE, "cases")
NOREPLY_WAIT = 0.2
MAX_SHOWN = 400          # bytes of a reply shown in a mismatch
MAX_MISMATCHES = 25      # per TAP line, the rest are only counted

BY_COMMAND = {}          # command name -> mismatches, for the closing summary
DIRECTIVES = {"sort", "ignore", "match", "type", "noreply", "inline", "resp2", "resp3"}


class Case:
    __slots__ = ("path", "lineno", "text", "args", "dirs")

    def __init__(self, path, lineno, text, args, dirs):
        self.path, self.lineno, self.text, self.args, self.dirs = path, lineno, text, args, dirs


def parse_case_file(path):
    """Returns a list of Case; raises ValueError naming file:line on bad syntax."""
    cases = []
    pending = {}
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            line = line.rstrip("\r\n")
            s = line.strip()
            if not s or s.startswith("#"):
                continue
            where = "%s:%d" % (os.path.basename(path), lineno)
            if s.startswith("!"):
                name, _, arg = s[1:].partition(" ")
                if name not in DIRECTIVES:
                    raise ValueError("%s: unknown directive !%s" % (where, name))
                if name == "match":
                    if not arg.strip():
                        raise ValueError("%s: !match needs a regex" % where)
                    try:
                        pending["match"] = re.compile(arg.strip().encode("latin-1"), re.S)
                    except re.error as e:
                        raise ValueError("%s: bad regex: %s" % (where, e))
                else:
                    pending[name] = True
                continue
            if pending.get("inline"):
                args = None
            else:
                try:
                    args = split_args(s)
                except ValueError as e:
                    raise ValueError("%s: %s" % (where, e))
                if not args:
                    raise ValueError("%s: empty command" % where)
            cases.append(Case(path, lineno, s, args, pending))
            pending = {}
    if pending:
        raise ValueError("%s: directive(s) %s at end of file" % (os.path.basename(path), sorted(pending)))
    return cases


def canon(r, sort):
    """Raw bytes of a reply; with sort, every aggregate's elements (and map
    pairs) are sorted by their own canonical bytes, at every depth."""
    if not sort or r.kind not in "*~%>" or r.value is None:
        return r.raw
    if r.kind == "%":
        items = sorted(canon(k, sort) + canon(v, sort) for k, v in r.value)
    else:
        items = sorted(canon(x, sort) for x in r.value)
    return b"%s%d\r\n" % (r.kind.encode(), len(r.value)) + b"".join(items)


def show(b):
    if b is None:
        return "(no reply)"
    s = repr(bytes(b[:MAX_SHOWN]))
    if len(b) > MAX_SHOWN:
        s += "... (%d bytes)" % len(b)
    return s


def no_reply_within(cl, seconds):
    """True when nothing arrives on cl within seconds (for !noreply)."""
    if cl.buf:
        return False
    cl.sock.settimeout(seconds)
    try:
        data = cl.sock.recv(65536)
    except socket.timeout:
        return True
    finally:
        cl.sock.settimeout(10.0)
    if data:
        cl.buf += data
    return False


def run_one(cl, case):
    """Run one case.  Returns (what is compared, the raw reply to show)."""
    if case.args is None:
        cl.send_raw(case.text.encode() + b"\r\n")
    else:
        cl.send(*case.args)
    if case.dirs.get("noreply"):
        if no_reply_within(cl, NOREPLY_WAIT):
            return b"(no reply)", b"(no reply)"
        return b"(a reply arrived)", bytes(cl.buf)
    r = cl.read_reply()
    if case.dirs.get("ignore"):
        return b"(ignored)", r.raw
    if case.dirs.get("type"):
        return r.raw[:1], r.raw
    if case.dirs.get("match"):
        return (b"(matched)" if case.dirs["match"].search(r.raw) else b"(no match)"), r.raw
    return canon(r, bool(case.dirs.get("sort"))), r.raw


_restart_noted = set()


def open_session(srv, proto):
    """A new connection on an empty keyspace, db 0, in RESP `proto`.  When
    FLUSHALL fails (a zarisd without it) the server is restarted instead, so
    the file still starts on an empty keyspace."""
    cl = srv.client()
    r = cl.call("FLUSHALL")
    if r.is_error():
        cl.close()
        if srv.name not in _restart_noted:
            _restart_noted.add(srv.name)
            diag("%s: FLUSHALL -> %s; restarting it before each file instead" % (srv.name, r.value))
        srv.restart()
        cl = srv.client()
    r = cl.call("SELECT", "0")
    if r.is_error():
        raise RuntimeError("SELECT 0: %s" % r.value)
    # a file whose client subscribes to its own events leaves pushes unread
    # (each PING filler adds a reply of its own), so the CONFIG SET that
    # ends it may be lost with its connection: every file starts with
    # notifications off, on redis-server too (shared by the backends' passes)
    r = cl.call("CONFIG", "SET", "notify-keyspace-events", "")
    if r.is_error():
        raise RuntimeError("CONFIG SET notify-keyspace-events: %s" % r.value)
    if proto == 3:
        r = cl.call("HELLO", "3")
        if r.is_error():
            raise RuntimeError("HELLO 3: %s" % r.value)
    return cl


def applies(case, proto):
    if case.dirs.get("resp2") and proto != 2:
        return False
    if case.dirs.get("resp3") and proto != 3:
        return False
    return True


def compare_file(cases, ref, tgt, proto):
    """Runs cases on both servers.  Returns (number run, list of mismatch texts)."""
    problems = []
    bycmd = BY_COMMAND
    try:
        rc = open_session(ref, proto)
    except (OSError, RuntimeError, ProtocolError) as e:
        return 0, ["redis-server session failed: %s" % e]
    try:
        tc = open_session(tgt, proto)
    except (OSError, RuntimeError, ProtocolError) as e:
        rc.close()
        return 0, ["zarisd session failed: %s" % e]
    n = 0
    try:
        for case in cases:
            if not applies(case, proto):
                continue
            n += 1
            try:
                want, want_raw = run_one(rc, case)
            except (OSError, ProtocolError) as e:
                problems.append("%s:%d: %s\n    redis-server failed: %s"
                                % (os.path.basename(case.path), case.lineno, case.text, e))
                break
            try:
                got, got_raw = run_one(tc, case)
            except (OSError, ProtocolError) as e:
                name = case.text.split()[0].upper() if case.text.split() else "?"
                bycmd[name] = bycmd.get(name, 0) + 1
                problems.append("%s:%d: %s\n    redis: %s\n    zarisd: no reply (%s: %s)"
                                % (os.path.basename(case.path), case.lineno, case.text, show(want_raw),
                                   type(e).__name__, e))
                break  # the connection is out of step now
            if got != want:
                name = case.text.split()[0].upper().strip('"\'') if case.text.split() else "?"
                bycmd[name] = bycmd.get(name, 0) + 1
                what = ""
                if case.dirs.get("match"):
                    what = " (!match %s: redis %s, zarisd %s)" % (
                        case.dirs["match"].pattern.decode("latin-1"), want.decode(), got.decode())
                elif case.dirs.get("type"):
                    what = " (!type)"
                problems.append("%s:%d: %s%s\n    redis:  %s\n    zarisd: %s"
                                % (os.path.basename(case.path), case.lineno, case.text, what,
                                   show(want_raw), show(got_raw)))
    finally:
        rc.close()
        tc.close()
    return n, problems


def case_files():
    files = sorted(glob.glob(os.path.join(CASES, "*.txt")))
    pick = os.environ.get("ZARIS_CASES")
    if pick:
        files = [f for f in files if re.search(pick, os.path.basename(f))]
    return files


def show_mode(paths):
    ref = start_redis()
    for proto in (2, 3):
        for p in paths:
            print("=== %s RESP%d" % (p, proto))
            cl = open_session(ref, proto)
            for case in parse_case_file(p):
                if not applies(case, proto):
                    continue
                if case.args is None:
                    cl.send_raw(case.text.encode() + b"\r\n")
                else:
                    cl.send(*case.args)
                if case.dirs.get("noreply"):
                    print("%4d %-50s %s" % (case.lineno, case.text,
                                           "(no reply)" if no_reply_within(cl, NOREPLY_WAIT) else "REPLY!"))
                    continue
                r = cl.read_reply()
                print("%4d %-50s %s%s" % (case.lineno, case.text, show(r.raw),
                                          "  " + " ".join("!" + d for d in case.dirs) if case.dirs else ""))
            cl.close()


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--show":
        show_mode(sys.argv[2:] or case_files())
        return
    files = case_files()
    if not files:
        skip_all("no case files in %s" % CASES)
    parsed = []
    for f in files:
        try:
            parsed.append((f, parse_case_file(f), None))
        except (ValueError, UnicodeDecodeError) as e:
            parsed.append((f, [], str(e)))
    backends = os.environ.get("ZARIS_BACKENDS", "uring epoll").split()
    protos = (2, 3)
    plan(len(parsed) * len(backends) * len(protos) + len(backends))

    ref = start_redis()
    targets = {}
    for b in backends:
        if b == "uring" and not io_uring_available():
            targets[b] = "io_uring is disabled on this kernel"
            continue
        try:
            targets[b] = start_zarisd(threads=2, io_backend=b, name="zarisd-" + b)
        except RuntimeError as e:
            targets[b] = "zarisd --io-backend %s did not start: %s" % (b, e)
    for b in backends:
        tgt = targets[b]
        if isinstance(tgt, str):
            ok("disabled" in tgt, "zarisd --io-backend %s%s" % (b, " # SKIP " + tgt if "disabled" in tgt else ""))
            if "disabled" not in tgt:
                diag(tgt)
            continue
        want = {"uring": "io_uring", "epoll": "epoll"}.get(b, b)
        if os.environ.get("ZARIS_STANDIN"):
            want = "epoll"
        try:
            with tgt.client() as c:
                info = c.call("INFO", "server").py() or b""
            m = re.search(rb"multiplexing_api:(\S+)", info if isinstance(info, bytes) else b"")
            got = m.group(1).decode() if m else None
        except (OSError, ProtocolError) as e:
            got = "error: %s" % e
        is_(got, want, "zarisd --io-backend %s runs on %s (INFO multiplexing_api)" % (b, want))
    total_cmds = total_bad = 0
    for path, cases, err in parsed:
        name = os.path.basename(path)
        for b in backends:
            for proto in protos:
                label = "%s %s RESP%d" % (name, b, proto)
                tgt = targets[b]
                if isinstance(tgt, str):
                    if "disabled" in tgt:
                        ok(True, "%s # SKIP %s" % (label, tgt))
                    else:
                        ok(False, label)
                        diag(tgt)
                    continue
                if err:
                    ok(False, label)
                    diag(err)
                    continue
                n, problems = compare_file(cases, ref, tgt, proto)
                total_cmds += n
                total_bad += len(problems)
                ok(not problems, "%s (%d commands%s)" % (label, n, ", %d differ" % len(problems) if problems else ""))
                for p in problems[:MAX_MISMATCHES]:
                    diag(p)
                if len(problems) > MAX_MISMATCHES:
                    diag("... and %d more mismatches" % (len(problems) - MAX_MISMATCHES))
                for srv in (ref, tgt):
                    if not srv.alive():
                        diag("%s died (status %s); log tail:\n%s" % (srv.name, srv.proc.returncode, srv.log_tail()))
                        try:
                            srv.restart()
                        except RuntimeError as e:
                            bail_out("cannot restart %s: %s" % (srv.name, e))
    diag("%d commands compared, %d mismatches" % (total_cmds, total_bad))
    if BY_COMMAND:
        diag("mismatches by command (all files, backends, protocols): " + ", ".join(
            "%s %d" % kv for kv in sorted(BY_COMMAND.items(), key=lambda kv: (-kv[1], kv[0]))))
    done_testing()


if __name__ == "__main__":
    main()
