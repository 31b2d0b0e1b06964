#!/usr/bin/python3
# script_compare.t — the scripting corpus (tests/integration/script_corpus/*.cases)
# run against redis-server (Debian's 7.0) and zarisd (2 workers), RESP2 and
# RESP3 (HELLO 3), raw replies compared byte for byte.  One TAP line per
# (corpus file, protocol); a mismatch prints file:line, the command and both
# replies.  Each file starts on a new connection after FLUSHALL, SCRIPT
# FLUSH and FUNCTION FLUSH.  Then: the script registry from two connections (two workers);
# INFO's command and error counts after script errors; and zarisd's own
# expectations, where it differs from Redis on purpose: a key a script did
# not declare in KEYS, or a command that needs every shard, is refused
# unless the script says allow-undeclared-keys (or the setting is on).
# Known divergences are TAP TODOs (script_corpus/DIVERGENCES.md).
#
# Corpus format (one command a line, split as redis-cli splits):
#   # comment               ignored
#   @name                   starts a script body named NAME; each following
#   | text                  line "| text" is one line of it ("|" alone: an
#                           empty line); the body ends at the first other line
#   EVAL @name 1 k          an argument "@name" is the body, "@name.sha" its
#                           SHA1 (lower case), "@name.SHA" in upper case
#   !resp2 / !resp3         the next command runs only in that protocol
#   !ignore                 the next command's reply is not compared
#   !match REGEX            the next reply must match REGEX on both servers
#   !divergence WHY         the next command is a known divergence of zarisd
#                           (DIVERGENCES.md): its comparison is a TAP TODO
#   !divergence-file WHY    the same for the whole file
#   !own-servers            the file runs on a fresh redis-server and a fresh
#                           zarisd with one thread, stopped after it (for
#                           cases that may break the server's Lua state)
#
#   script_compare.t --show FILE..   prints redis-server's replies (RESP2 and
#                                    RESP3), to write or check a corpus file
# Env: ZARIS_CASES=regex picks corpus files by name.

import glob
import hashlib
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from zaris import *  # noqa: E402,F403
from zaris import split_args  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "script_corpus")
MAX_SHOWN = 300
sys.setrecursionlimit(60000)  # the reply parser recurses once per nesting level (sizes.cases)
DIRECTIVES = {"resp2", "resp3", "ignore", "match", "divergence", "divergence-file", "own-servers"}
OWN_SERVERS = set()   # corpus files run on a fresh pair of one-thread servers
FILE_DIVERGENCE = {}  # corpus file -> why the whole file is a TODO


class Case:
    __slots__ = ("where", "text", "args", "dirs")

    def __init__(self, where, text, args, dirs):
        self.where, self.text, self.args, self.dirs = where, text, args, dirs


def expand(arg, bodies, where):
    """An argument with the script references of the corpus format resolved."""
    m = re.fullmatch(rb"@([A-Za-z0-9_]+)(\.sha|\.SHA)?", arg)
    if not m:
        return arg
    name = m.group(1).decode()
    if name not in bodies:
        raise ValueError("%s: no script named @%s above" % (where, name))
    body = bodies[name]
    if m.group(2) is None:
        return body
    sha = hashlib.sha1(body).hexdigest()
    return (sha.upper() if m.group(2) == b".SHA" else sha).encode()


def parse_corpus(path):
    """Returns the list of Case of one corpus file; ValueError names file:line."""
    cases, bodies, pending = [], {}, {}
    current = None  # (name, [lines]) of the body being read
    base = os.path.basename(path)
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    for lineno, line in enumerate(lines, 1):
        where = "%s:%d" % (base, lineno)
        if current is not None:
            if line == "|" or line.startswith("| "):
                current[1].append(line[2:])
                continue
            bodies[current[0]] = "\n".join(current[1]).encode()
            current = None
        s = line.strip()
        if not s or s.startswith("#"):
            continue
        if s.startswith("@"):
            name = s[1:]
            if not re.fullmatch(r"[A-Za-z0-9_]+", name):
                raise ValueError("%s: bad script name %r" % (where, name))
            current = (name, [])
            continue
        if s.startswith("!"):
            name, _, arg = s[1:].partition(" ")
            if name not in DIRECTIVES:
                raise ValueError("%s: unknown directive !%s" % (where, name))
            if name == "match":
                pending["match"] = re.compile(arg.strip().encode("latin-1"), re.S)
            elif name == "own-servers":
                OWN_SERVERS.add(path)
            elif name in ("divergence", "divergence-file"):
                if not arg.strip():
                    raise ValueError("%s: !%s needs a reason" % (where, name))
                if name == "divergence-file":
                    FILE_DIVERGENCE[path] = arg.strip()
                else:
                    pending["divergence"] = arg.strip()
            else:
                pending[name] = True
            continue
        try:
            args = [expand(a, bodies, where) for a in split_args(s)]
        except ValueError as e:
            raise ValueError("%s: %s" % (where, e))
        cases.append(Case(where, s, args, pending))
        pending = {}
    if current is not None:
        raise ValueError("%s: script @%s at the end of the file is never used" % (base, current[0]))
    if pending:
        raise ValueError("%s: directive(s) %s at the end of the file" % (base, sorted(pending)))
    return cases


def show(b):
    s = repr(bytes(b[:MAX_SHOWN]))
    return s + ("... (%d bytes)" % len(b) if len(b) > MAX_SHOWN else "")


def open_session(srv, proto):
    cl = srv.client()
    for cmd in (("FLUSHALL",), ("SCRIPT", "FLUSH"), ("FUNCTION", "FLUSH"), ("SELECT", "0")):
        r = cl.call(*cmd)
        if r.is_error():
            raise RuntimeError("%s: %s: %s" % (srv.name, " ".join(cmd), r.value))
    if proto == 3:
        r = cl.call("HELLO", "3")
        if r.is_error():
            raise RuntimeError("%s: HELLO 3: %s" % (srv.name, r.value))
    return cl


def run_one(cl, case):
    """(what is compared, raw reply) of one case."""
    r = cl.call(*case.args)
    if case.dirs.get("ignore"):
        return b"(ignored)", r.raw
    if case.dirs.get("match"):
        return (b"(matched)" if case.dirs["match"].search(r.raw) else b"(no match)"), r.raw
    return r.raw, r.raw


def applies(case, proto):
    return not (case.dirs.get("resp2") and proto != 2 or case.dirs.get("resp3") and proto != 3)


def compare_file(cases, ref, tgt, proto):
    """Runs CASES on both servers; returns (number run, mismatch texts,
    [(case, matched, text)] of the cases marked !divergence)."""
    problems, known = [], []
    try:
        rc, tc = open_session(ref, proto), open_session(tgt, proto)
    except (OSError, RuntimeError, ProtocolError) as e:
        return 0, ["session failed: %s" % e], []
    n = 0
    try:
        for case in cases:
            if not applies(case, proto):
                continue
            n += 1
            want, want_raw = run_one(rc, case)
            try:
                got, got_raw = run_one(tc, case)
            except (OSError, ProtocolError) as e:
                problems.append("%s: %s\n    redis:  %s\n    zarisd: no reply (%s)"
                                % (case.where, case.text, show(want_raw), e))
                break  # the connection is out of step now
            text = "%s: %s\n    redis:  %s\n    zarisd: %s" % (case.where, case.text, show(want_raw), show(got_raw))
            if case.dirs.get("divergence"):
                known.append((case, got == want, text))
            elif got != want:
                problems.append(text)
    finally:
        rc.close()
        tc.close()
    return n, problems, known


def corpus_files():
    files = sorted(glob.glob(os.path.join(CORPUS, "*.cases")))
    pick = os.environ.get("ZARIS_CASES")
    return [f for f in files if re.search(pick, os.path.basename(f))] if pick else files


def show_mode(paths):
    ref = start_redis()
    for proto in (2, 3):
        for p in paths:
            print("=== %s RESP%d" % (p, proto))
            cl = open_session(ref, proto)
            for case in parse_corpus(p):
                if applies(case, proto):
                    print("%s %s\n    %s" % (case.where, case.text, show(cl.call(*case.args).raw)))
            cl.close()


def error_text(r):
    return r.value if r.is_error() else None


def across_workers(srv):
    """The script registry seen from two connections (on two workers of
    zarisd): raw replies of SCRIPT LOAD on one and EVALSHA on the other,
    SCRIPT FLUSH on one and NOSCRIPT on the other, an EVAL's body cached
    for the other."""
    a = srv.client()
    b = client_on_other_worker(srv, a)
    body = "return {'across', KEYS[1], ARGV[1]}"
    sha = hashlib.sha1(body.encode()).hexdigest()
    steps = [(a, ("SCRIPT", "FLUSH")), (b, ("EVALSHA", sha, "1", "k", "v")), (a, ("SCRIPT", "LOAD", body)),
             (b, ("SCRIPT", "EXISTS", sha)), (b, ("EVALSHA", sha, "1", "k", "v")),
             (a, ("EVALSHA", sha, "1", "k2", "v2")), (b, ("SCRIPT", "FLUSH")), (a, ("SCRIPT", "EXISTS", sha)),
             (a, ("EVALSHA", sha, "1", "k", "v")), (b, ("EVAL", body, "1", "k3", "v3")),
             (a, ("EVALSHA", sha, "1", "k4", "v4")), (a, ("SCRIPT", "FLUSH", "ASYNC")),
             (b, ("EVALSHA", sha, "0"))]
    out = [c.call(*cmd).raw for c, cmd in steps]
    a.close()
    b.close()
    return [" ".join(cmd) for _, cmd in steps], out


STATS_STEPS = [
    ("EVAL", "return redis.call('SET', KEYS[1], 'v')", "1", "k"),
    ("EVAL", "return redis.call('GET', KEYS[1])", "1", "k"),
    ("EVAL", "return redis.call('INCR', KEYS[1])", "1", "k"),
    ("EVAL", "return redis.pcall('INCR', KEYS[1])", "1", "k"),
    ("EVAL", "return redis.call('nosuchcommand')", "0"),
    ("EVAL", "return redis.call('get')", "0"),
    ("EVAL", "error('x')", "0"),
    ("EVAL", "return {err = 'CUSTOM code'}", "0"),
    ("EVAL", "return redis.error_reply('MINE here')", "0"),
    ("EVAL", "return (", "0"),
    ("EVAL", "return 1", "-1"),
    ("EVALSHA", "0000000000000000000000000000000000000000", "0"),
    ("EVAL_RO", "return redis.call('SET', KEYS[1], 'w')", "1", "k"),
    ("EVAL", "#!lua flags=bogus\nreturn 1", "0"),
    ("SCRIPT", "LOAD", "return 'x'"),
]


# INFO fields known to differ after STATS_STEPS (DIVERGENCES.md): none
# since the error statistics are Redis's (errorstats_compare.t)
KNOWN_STATS = {}


def script_stats(srv):
    """INFO after CONFIG RESETSTAT and STATS_STEPS: the calls, rejected and
    failed calls of each command (the script's own and those it ran), the
    error counts by code, total_error_replies."""
    cl = srv.client()
    cl.call("FLUSHALL")
    cl.call("CONFIG", "RESETSTAT")
    for cmd in STATS_STEPS:
        cl.call(*cmd)
    info = cl.call("INFO", "all").value
    info = info.decode() if isinstance(info, bytes) else info
    cl.close()
    out = {}
    for name, calls, rej, fail in re.findall(
            r"cmdstat_([^:]+):calls=(\d+),usec=\d+,usec_per_call=[\d.]+,rejected_calls=(\d+),failed_calls=(\d+)", info):
        if name not in ("config|resetstat", "info", "flushall"):
            out["cmdstat_" + name] = (int(calls), int(rej), int(fail))
    for line in re.findall(r"^(errorstat_[^\r\n]+)", info, re.M):
        out[line.split(":")[0]] = line.split(":", 1)[1]
    m = re.search(r"total_error_replies:(\d+)", info)
    out["total_error_replies"] = m and int(m.group(1))
    return out


def all_shards_count(cl):
    """INFO's scripts_all_shards_locked, or None without it."""
    info = cl.call("INFO", "all").value
    info = info.decode() if isinstance(info, bytes) else (info or "")
    m = re.search(r"scripts_all_shards_locked:(\d+)", info)
    return int(m.group(1)) if m else None


def counted(cond, name, field):
    """A check of the INFO count: a TODO while INFO has no such field
    (DIVERGENCES.md), a real check once it has."""
    if field is None:
        return todo(cond, name, "INFO has no scripts_all_shards_locked yet")
    return ok(cond, name)


def undeclared_keys(z):
    """zarisd only: declared keys run, undeclared ones are refused, the
    allow-undeclared-keys flag (or setting) lifts the refusal and the script
    runs with every shard locked, counted in INFO (redis-server has none of
    this: it runs them all and refuses the flag as an unknown one)."""
    cl = z.client()
    cl.call("FLUSHALL")
    cl.call("SET", "other", "v")
    r = cl.call("EVAL", "return redis.call('get', KEYS[1])", "1", "other")
    is_(r.raw, b"$1\r\nv\r\n", "undeclared keys: a declared key is read")
    r = cl.call("EVAL", "return redis.call('get', 'other')", "0")
    e = error_text(r)
    ok(e is not None and "other" in e and "KEYS" in e,
       "undeclared keys: GET of a key not in KEYS refused, naming the key and KEYS (%r)" % (e,))
    r = cl.call("EVAL", "return redis.call('set', 'other', 'w')", "1", "declared")
    ok(r.is_error(), "undeclared keys: SET of a key not in KEYS refused (%r)" % (r.value,))
    r = cl.call("EVAL", "return redis.pcall('get', 'other')", "0")
    ok(r.is_error() and "other" in r.value, "undeclared keys: pcall gets the refusal as an error table (%r)" % (r.value,))
    is_(cl.call("GET", "other").raw, b"$1\r\nv\r\n", "undeclared keys: the refused SET wrote nothing")
    before = all_shards_count(cl)
    counted(before is not None, "undeclared keys: INFO has scripts_all_shards_locked", before)
    r = cl.call("EVAL", "#!lua flags=allow-undeclared-keys\nreturn redis.call('set', 'other', 'x')", "0")
    is_(r.raw, b"+OK\r\n", "undeclared keys: a script flagged allow-undeclared-keys writes any key")
    is_(cl.call("GET", "other").raw, b"$1\r\nx\r\n", "undeclared keys: its write is there")
    after = all_shards_count(cl)
    counted(before is not None and after == before + 1, "undeclared keys: counted in INFO (%r -> %r)" % (before, after), before)
    r = cl.call("EVAL", "return redis.call('DBSIZE')", "0")
    ok(r.is_error() and "allow-undeclared-keys" in r.value,
       "undeclared keys: DBSIZE (every shard) refused without the flag (%r)" % (r.value,))
    r = cl.call("EVAL", "#!lua flags=allow-undeclared-keys\nreturn redis.call('DBSIZE')", "0")
    is_(r.raw, cl.call("DBSIZE").raw, "undeclared keys: DBSIZE with the flag as outside a script")
    for cmd in (("KEYS", "*"), ("SCAN", "0"), ("RANDOMKEY",), ("FLUSHDB",)):
        args = ", ".join("'%s'" % a for a in cmd)
        r = cl.call("EVAL", "return redis.call(%s)" % args, "0")
        ok(r.is_error() and "allow-undeclared-keys" in r.value,
           "undeclared keys: %s (every shard) refused without the flag" % cmd[0])
        r = cl.call("EVAL", "#!lua flags=allow-undeclared-keys\nreturn redis.call(%s)" % args, "0")
        ok(not r.is_error(), "undeclared keys: %s runs with the flag (%r)" % (cmd[0], r.raw[:60]))
    # the check is by shard: a key with a declared key's hash tag is in its shard
    r = cl.call("EVAL", "return redis.call('SET', '{tag}undeclared', 'same shard')", "1", "{tag}declared")
    is_(r.raw, b"+OK\r\n", "undeclared keys: a key in a declared key's shard (same hash tag) runs")
    cl.close()
    try:
        z2 = start_zarisd(threads=2, extra=["--allow-undeclared-keys", "yes"], name="zarisd-undeclared")
    except RuntimeError as e:
        ok(False, "undeclared keys: zarisd starts with --allow-undeclared-keys yes (%s)" % str(e).split("\n")[0])
        return
    cl = z2.client()
    cl.call("SET", "other", "v")
    before = all_shards_count(cl)
    r = cl.call("EVAL", "return redis.call('get', 'other')", "0")
    is_(r.raw, b"$1\r\nv\r\n", "allow-undeclared-keys yes: an unflagged script reads any key")
    after = all_shards_count(cl)
    counted(before is not None and after == before + 1,
            "allow-undeclared-keys yes: counted in INFO (%r -> %r)" % (before, after), before)
    cl.close()
    z2.stop()


def table_without_err(z):
    """error({}) (a table with no err field) makes redis-server 7.0.15
    crash, so it is not in the corpus: zarisd answers it with an error
    reply and goes on."""
    cl = z.client()
    r = cl.call("EVAL", "error({})", "0")
    ok(r.is_error(), "error({}): an error reply (%r)" % (r.value,))
    is_(cl.call("PING").raw, b"+PONG\r\n", "error({}): the server goes on")
    cl.close()


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--show":
        show_mode(sys.argv[2:])
        return 0
    files = corpus_files()
    parsed = []
    for p in files:
        try:
            parsed.append((p, parse_corpus(p)))
        except ValueError as e:
            bail_out(str(e))
    ref = start_redis()
    tgt = start_zarisd(threads=2)
    require_eval(tgt)
    for p, cases in parsed:
        for proto in (2, 3):
            if p in OWN_SERVERS:
                r1, t1 = start_redis(name="redis-own"), start_zarisd(threads=1, name="zarisd-own")
                n, problems, known = compare_file(cases, r1, t1, proto)
                r1.stop()
                t1.stop()
            else:
                n, problems, known = compare_file(cases, ref, tgt, proto)
            name = "%s RESP%d: %d commands as redis-server" % (os.path.basename(p), proto, n)
            if p in FILE_DIVERGENCE:
                if not todo(n > 0 and not problems, name, FILE_DIVERGENCE[p]):
                    note("%d commands differ, the first: %s" % (len(problems), problems[0] if problems else "-"))
            elif not ok(n > 0 and not problems, name):
                for t in problems[:25]:
                    diag(t)
                if len(problems) > 25:
                    diag("... and %d more" % (len(problems) - 25))
            for case, matched, text in known:
                if not todo(matched, "%s RESP%d: %s" % (case.where, proto, case.text), case.dirs["divergence"]):
                    note(text)
    names, want = across_workers(ref)
    _, got = across_workers(tgt)
    if not ok(got == want, "the script registry across two workers' connections as redis-server's"):
        for n, w, g in zip(names, want, got):
            if w != g:
                diag("%s\n    redis:  %s\n    zarisd: %s" % (n, show(w), show(g)))
    want, got = script_stats(ref), script_stats(tgt)
    for k in sorted(set(want) | set(got)):
        name = "INFO after script errors: %s as redis-server (%r, redis-server %r)" % (k, got.get(k), want.get(k))
        if k in KNOWN_STATS:
            todo(got.get(k) == want.get(k), name, KNOWN_STATS[k])
        else:
            ok(got.get(k) == want.get(k), name)
    if os.environ.get("ZARIS_STANDIN") != "redis-server":
        undeclared_keys(tgt)
        table_without_err(tgt)
    return done_testing()


if __name__ == "__main__":
    sys.exit(main())
