#!/usr/bin/python3
# lock_order.t — zarisd's lock order is written once, complete
# (zarisd/core/lock_order.h; STYLE.md "Memory and threads": the whole lock
# order in one comment, memcached's thread.c).
#
# Every lock declared in zarisd/ (libzaris, zarisd/client/, excepted): a
# pthread mutex, rwlock or spinlock, a semaphore, or a struct zr_lock, as a
# struct field or a variable. Each is named in lock_order.h's comment on a
# line that also names its file (relative to zarisd/): a field as
# "struct <type>.<field>" (an anonymous struct's by its variable:
# "<var>.<field>"), a variable by its name. Checked, each a TAP line:
#   every declared lock is placed in the order (a new lock must be);
#   every lock the order names is still declared where it says (no stale
#     entry survives a rename or a removal);
#   the levels are numbered 1, 2, 3 ... in order, none skipped.

import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from zaris import REPO, plan, ok, diag, done_testing, zarisd_sources  # noqa: E402

ORDER = "zarisd/core/lock_order.h"
DECL = re.compile(r"^\s*(?:static\s+)?(?:pthread_mutex_t|pthread_rwlock_t|pthread_spinlock_t|sem_t|"
                  r"struct\s+zr_lock)\s+(\w+)\s*[;=\[]")
ENTRY = re.compile(r"^\s*\*\s+(?:\d+\s+)?([a-z_]+/[a-z_]+\.[ch])\s+((?:struct\s+)?\w+(?:\.\w+)?)")
LEVEL = re.compile(r"^\s*\*\s+(\d+)\s+")



def code_only(text):
    """TEXT with comments, strings and character literals blanked (newlines
    kept), so that braces and names are counted in code only."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(c + re.sub(r"[^\n]", " ", text[i + 1:j]) + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def declared_locks(path):
    """(name, line) of each lock declared in PATH: 'struct T.f', 'var.f'
    (a field of an anonymous struct variable) or 'var'."""
    with open(os.path.join(REPO, path), encoding="utf-8", errors="replace") as f:
        code = code_only(f.read())
    lines = code.split("\n")
    # the line each line's innermost open brace was opened on (None: top level)
    opener, stack = [], []
    for n, line in enumerate(lines):
        opener.append(stack[-1] if stack else None)
        for ch in line:
            if ch == "{":
                stack.append(n)
            elif ch == "}" and stack:
                stack.pop()
    found = []
    for n, line in enumerate(lines):
        m = DECL.match(line)
        if not m:
            continue
        name, at = m.group(1), opener[n]
        if at is None:
            found.append((name, n + 1))
            continue
        head = " ".join(lines[max(0, at - 1):at + 1])
        sm = re.search(r"struct\s+(\w+)\s*\{[^{]*$", head)
        if sm:
            found.append(("struct %s.%s" % (sm.group(1), name), n + 1))
            continue
        # an anonymous struct: its variable follows the closing brace
        depth, var = 0, None
        for later in lines[at:]:
            depth += later.count("{") - later.count("}")
            if depth <= 0:
                vm = re.search(r"\}\s*(\w+)", later)
                var = vm.group(1) if vm else None
                break
        found.append(("%s.%s" % (var or "?", name), n + 1))
    return found


def order_entries():
    entries, levels = set(), []
    with open(os.path.join(REPO, ORDER), encoding="utf-8") as f:
        for line in f:
            m = ENTRY.match(line)
            if m:
                entries.add((m.group(1), re.sub(r"\s+", " ", m.group(2))))
            lm = LEVEL.match(line)
            if lm:
                levels.append(int(lm.group(1)))
    return entries, levels


plan(3)
declared = {}
for path in zarisd_sources():
    if path == ORDER:
        continue
    for name, line in declared_locks(path):
        declared[(path[len("zarisd/"):], name)] = line
entries, levels = order_entries()

missing = sorted(k for k in declared if k not in entries)
ok(not missing, "every lock declared in zarisd/ is placed in %s (%d locks)" % (ORDER, len(declared))) or \
    [diag("zarisd/%s:%d: %s is not in the lock order: place it" % (p, declared[(p, n)], n)) for p, n in missing]
stale = sorted(k for k in entries if k not in declared)
ok(not stale, "every lock the order names is declared where it says") or \
    [diag("%s names %s in zarisd/%s, which declares no such lock" % (ORDER, n, p)) for p, n in stale]
ok(levels == list(range(1, len(levels) + 1)), "the levels are numbered 1..%d in order" % len(levels)) or \
    diag("levels as written: %s" % levels)
sys.exit(done_testing())
