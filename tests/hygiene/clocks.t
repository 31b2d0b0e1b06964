#!/usr/bin/python3
# clocks.t — failover's timing never reads the wall clock, so a clock jump
# (NTP step, an operator's `date -s`) cannot lengthen or shorten a lease.
#
# Leases are etcd's: the etcd leader counts a lease's TTL on its monotonic
# clock. The supervisor times keepalives, grants and elections on
# CLOCK_MONOTONIC, and zarisd checks its write lease (an absolute
# CLOCK_MONOTONIC time in ms, CLUSTER LEASE) against zr_mono_us(). This
# test keeps it so:
#   - no source of supervisor/ or config/ reads the wall clock
#     (CLOCK_REALTIME, time(), gettimeofday(), zr_wall_*);
#   - every zarisd function that reads or writes write_lease_until_ms reads
#     no wall clock, and compares it with zr_mono_us() or through
#     server_write_lease_remaining() (which does).
# Key expiry stays on the wall clock, as Redis's (EXPIREAT is wall time).

import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from zaris import REPO, ok, diag, done_testing  # noqa: E402

WALL = re.compile(r"CLOCK_REALTIME|(?<![\w.>])time\s*\(|gettimeofday|\bzr_wall_\w+|\bftime\s*\(")


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def sources(folder):
    base = os.path.join(REPO, folder)
    for root, _, files in os.walk(base):
        for f in sorted(files):
            if f.endswith((".c", ".h")):
                yield os.path.join(root, f)


def functions(text):
    """(name, body) of each top-level function: a line opening with '{' in
    column 0 after its signature, to the next '}' in column 0."""
    lines = text.split("\n")
    out = []
    for i, line in enumerate(lines):
        if line.startswith("{"):
            j = i
            sig = ""
            while j > 0 and not sig:
                j -= 1
                m = re.search(r"(\w+)\s*\(", lines[j])
                sig = m.group(1) if m else ""
            end = next((k for k in range(i + 1, len(lines)) if lines[k].startswith("}")), len(lines) - 1)
            out.append((sig, "\n".join(lines[i:end + 1])))
    return out


for folder in ("supervisor", "config"):
    bad = []
    files = list(sources(folder))
    for path in files:
        text = strip_comments(open(path, encoding="utf-8", errors="replace").read())
        for n, line in enumerate(text.split("\n"), 1):
            if WALL.search(line):
                bad.append("%s:%d: %s" % (os.path.relpath(path, REPO), n, line.strip()))
    for b in bad:
        diag(b)
    ok(files and not bad, "%s/: %d files, none reads the wall clock" % (folder, len(files)))

readers = []
bad = []
for path in sources("zarisd"):
    text = strip_comments(open(path, encoding="utf-8", errors="replace").read())
    for name, body in functions(text):
        if "write_lease_until_ms" not in body:
            continue
        where = "%s: %s()" % (os.path.relpath(path, REPO), name)
        readers.append(where)
        if WALL.search(body):
            bad.append(where + " reads the wall clock")
        if "zr_mono_us" not in body and "server_write_lease_remaining(" not in body:
            bad.append(where + " compares the lease neither with zr_mono_us() nor through "
                       "server_write_lease_remaining()")
for b in bad:
    diag(b)
diag("functions using write_lease_until_ms: " + ", ".join(readers))
ok(len(readers) >= 2 and not bad,
   "zarisd: the %d functions that set or check the write lease read only the monotonic clock" % len(readers))
sys.exit(done_testing())
