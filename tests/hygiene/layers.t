#!/usr/bin/python3
# layers.t — zarisd's folder layering and file sizes (STYLE.md "Layers",
# "Sizes"; zarisd/README.md "Layers").
#
# Each folder of zarisd/ has a floor (FLOORS below); a file may include
# headers of its own folder and of folders on LOWER floors only, never of
# one on its own floor or above. So calls go net -> commands -> persist ->
# server -> journal -> store/proto -> core, and nothing climbs back up.
# Checked, each a TAP line:
#   every folder of zarisd/ has a floor (a new folder must be placed);
#   for each folder: it includes nothing from a folder on its floor or above;
#   the folder include graph has no cycle (Tarjan's strongly connected
#     components; a cycle needs a back-edge, so this holds the floor table
#     itself to account: an edge between two folders in a cycle is named);
#   persist/ and journal/ include nothing from commands/ (they reach the
#     dispatcher through callbacks that main wires, never by name).
# Sizes: a .c file over 1500 lines fails; over 800 lines (.c) or 200 lines
# (.h) is reported with diag only.

import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from zaris import REPO, plan, ok, diag, skip_all, done_testing  # noqa: E402

# zarisd's folders by floor, lowest first; "zarisd" is the top-level
# files (main.c). Two folders on one floor must not include each other.
# persist/ stands above server/ for the settings it reads (struct
# settings, the one schema's values) and nothing more: it is handed a
# persist_env (store, stream, settings, a durability callback), never
# struct server, and reaches the dispatcher only through the applier
# main installs.
FLOORS = {
    "zarisd/core": 0,
    "zarisd/proto": 1,
    "zarisd/store": 1,
    "zarisd/journal": 2,
    "zarisd/cluster": 2,
    "zarisd/client": 2,
    "zarisd/server": 3,
    "zarisd/persist": 4,
    "zarisd/repl": 5,
    "zarisd/script": 5,
    "zarisd/commands": 6,
    "zarisd/net": 7,
    "zarisd": 8,
}
# repl/ stands above persist/ (a full sync is a snapshot to a socket, and a
# replica's load replaces the data on disk) and below commands/: it applies
# records only through the applier main installs, as the loader does.
NEVER = [("zarisd/persist", "zarisd/commands"), ("zarisd/journal", "zarisd/commands"),
         ("zarisd/repl", "zarisd/commands")]
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


def folder_of(path):
    """The zarisd folder a file belongs to ("zarisd" for top-level files),
    or None outside zarisd/."""
    if not path.startswith("zarisd/"):
        return None
    parts = path.split("/")
    return "zarisd" if len(parts) == 2 else "/".join(parts[:2])


def cycles(graph):
    """The strongly connected components of more than one node (Tarjan)."""
    index, low, on, stack, out = {}, {}, set(), [], []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def main():
    files = c_files()
    zfiles = [f for f in files if f.startswith("zarisd/")]
    if not zfiles:
        skip_all("no zarisd sources yet")
    folders = sorted(set(folder_of(f) for f in zfiles))
    plan(len(folders) + 3 + len(NEVER))

    unplaced = [d for d in folders if d not in FLOORS]
    ok(not unplaced, "every folder of zarisd/ has a floor in layers.t")
    for d in unplaced:
        diag("  %s has no floor: place it in FLOORS (and in zarisd/README.md)" % d)

    edges = {}  # (from folder, to folder) -> first "file:line includes header"
    for f in zfiles:
        src = folder_of(f)
        for n, inc in includes(f):
            dst = folder_of(inc)
            if dst and dst != src:
                edges.setdefault((src, dst), "%s:%d includes %s" % (f, n, inc))
    for d in folders:
        if d not in FLOORS:
            continue
        bad = [where for (src, dst), where in sorted(edges.items())
               if src == d and dst in FLOORS and FLOORS[dst] >= FLOORS[d]]
        below = sorted(x for x in FLOORS if FLOORS[x] < FLOORS[d])
        ok(not bad, "%s/ (floor %d) includes only folders below it (%s)"
           % (d, FLOORS[d], " ".join(x + "/" for x in below) or "none"))
        for b in bad:
            diag("  " + b)

    graph = {}
    for src, dst in edges:
        graph.setdefault(src, set()).add(dst)
    found = cycles(graph)
    ok(not found, "the folder include graph of zarisd/ has no cycle")
    for comp in found:
        diag("  cycle among " + ", ".join(comp) + ":")
        for (src, dst), where in sorted(edges.items()):
            if src in comp and dst in comp:
                diag("    " + where)

    for src, dst in NEVER:
        bad = [where for (s_, d_), where in sorted(edges.items()) if s_ == src and d_ == dst]
        ok(not bad, "%s/ includes nothing from %s/" % (src, dst))
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
