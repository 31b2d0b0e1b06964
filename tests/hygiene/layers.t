#!/usr/bin/python3
# layers.t — zarisd's layering and file sizes (STYLE.md "Layers", "Sizes").
#
# Data flows net -> proto -> commands -> store; a file never includes a
# header from a layer above its own.  Rules checked (each a TAP line):
#   zarisd/store/    includes nothing from commands/ proto/ net/
#   zarisd/proto/    includes nothing from commands/ net/ store/
#   zarisd/commands/ includes nothing from net/
#   zarisd/core/     includes nothing from net/ proto/ commands/ store/
# Sizes: a .c file over 1500 lines fails; over 800 lines (.c) or 200 lines
# (.h) is reported with diag only.

import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from zaris import REPO, plan, ok, diag, skip_all, done_testing  # noqa: E402

RULES = [
    ("zarisd/store", ("zarisd/commands", "zarisd/proto", "zarisd/net")),
    ("zarisd/proto", ("zarisd/commands", "zarisd/net", "zarisd/store")),
    ("zarisd/commands", ("zarisd/net",)),
    ("zarisd/core", ("zarisd/net", "zarisd/proto", "zarisd/commands", "zarisd/store")),
]
C_FAIL, C_WARN, H_WARN = 1500, 800, 200
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')


def c_files():
    out = subprocess.run(["git", "-C", REPO, "ls-files", "--cached", "--others", "--exclude-standard",
                          "-z", "--", "*.c", "*.h"], capture_output=True, check=True).stdout
    return sorted(set(p.decode() for p in out.split(b"\0") if p and os.path.isfile(os.path.join(REPO, p.decode()))))


def includes(path):
    """(line number, repo-relative path) of each #include "..." in path.
    The build uses -I. (repo root); a name not found there is taken relative
    to the including file, as the compiler does first."""
    out = []
    with open(os.path.join(REPO, path), encoding="utf-8", errors="replace") as f:
        for n, line in enumerate(f, 1):
            m = INCLUDE.match(line)
            if not m:
                continue
            name = m.group(1)
            rel = os.path.normpath(os.path.join(os.path.dirname(path), name))
            if os.path.exists(os.path.join(REPO, rel)):
                out.append((n, rel))
            else:
                out.append((n, os.path.normpath(name)))
    return out


def under(path, folder):
    return path == folder or path.startswith(folder + "/")


def main():
    files = c_files()
    if not [f for f in files if f.startswith("zarisd/")]:
        skip_all("no zarisd sources yet")
    plan(len(RULES) + 1)
    for layer, banned in RULES:
        bad = []
        members = [f for f in files if under(f, layer)]
        for f in members:
            for n, inc in includes(f):
                for b in banned:
                    if under(inc, b):
                        bad.append("%s:%d includes %s" % (f, n, inc))
        ok(not bad, "%s/ (%d files) includes nothing from %s" % (layer, len(members), " ".join(b + "/" for b in banned)))
        for b in bad:
            diag("  " + b)
    too_big = []
    for f in files:
        with open(os.path.join(REPO, f), "rb") as fh:
            n = fh.read().count(b"\n")
        if f.endswith(".c") and n > C_FAIL:
            too_big.append("%s: %d lines" % (f, n))
        elif f.endswith(".c") and n > C_WARN:
            diag("note: %s has %d lines (split by responsibility past ~%d)" % (f, n, C_FAIL))
        elif f.endswith(".h") and n > H_WARN:
            diag("note: %s has %d lines (headers mostly under %d)" % (f, n, H_WARN))
    ok(not too_big, "no .c file is over %d lines" % C_FAIL)
    for t in too_big:
        diag("  " + t)
    done_testing()


if __name__ == "__main__":
    main()
