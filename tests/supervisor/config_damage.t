#!/usr/bin/python3
"""config_damage.t — the documented cluster file (config/zaris.conf)
damaged at random, each copy given to `zarisctl check-config` and to
`zarisd --config`. Every copy is accepted (exit 0) or refused with exit 1
and an error that names a file and line ("FILE:LINE: ..."). zarisd's
refusal says the same, and neither tool crashes or shows a sanitizer report.

Damages (a seeded sweep; the seed is printed and ZARIS_SEED repeats it),
one to four per copy: a token inserted ("=", ";", braces, brackets, quotes,
huge and negative numbers, names of settings ...), a character deleted, a
line duplicated or deleted, an example line uncommented.

Under `make asan`, tests/lsan.supp hides one leak inside libconfig 1.5
itself (its scanner's string buffer on some syntax errors; zconf.c calls
config_destroy on every path)."""
import os
import random
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from svlib import *  # noqa: E402,F401

if not os.access(ZARISCTL, os.X_OK) or not os.access(ZARISD, os.X_OK):
    skip_all("zarisctl or zarisd is not built (run make)")

COPIES = 150
TOKENS = ["=", ";", "{", "}", "(", ")", "[", "]", ",", "\"", "0", "-1", "99999999999999999999",
          "\"x\"", "name", "port", "nodes", "cores", "1e309", "0x7fffffff", "true", "\\", "#", "/*",
          "L", "\"\"", "-9223372036854775808", "maxmemory = \"1kb\";", "memory = \"200%\";"]

seed = int(os.environ.get("ZARIS_SEED") or random.randrange(1 << 30))
rng = random.Random(seed)
print("# seed %d (ZARIS_SEED=%d repeats this run)" % (seed, seed), flush=True)
lines = open(os.path.join(REPO, "config", "zaris.conf")).read().split("\n")


def mutate():
    ls = list(lines)
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(5)
        i = rng.randrange(len(ls))
        if op == 0 and ls[i]:
            j = rng.randrange(len(ls[i]))
            ls[i] = ls[i][:j] + rng.choice(TOKENS) + ls[i][j:]
        elif op == 1 and ls[i]:
            j = rng.randrange(len(ls[i]))
            ls[i] = ls[i][:j] + ls[i][j + 1:]
        elif op == 2:
            ls.insert(i, ls[rng.randrange(len(ls))])
        elif op == 3:
            del ls[i]
        else:
            ls[i] = ls[i].replace("#", "", 1)
    return "\n".join(ls)


def sane(rc, out, path):
    """Exit 0, or exit 1 naming PATH (with the line, where the damage has
    one: "no 'nodes' list" has none); no sanitizer report."""
    if "Sanitizer" in out or "runtime error" in out:
        return False
    return rc == 0 or (rc == 1 and re.search(re.escape(path) + r"(:\d+)?: ", out) is not None)


tmp = tempfile.mkdtemp(prefix="zaris-config-damage-")
path = os.path.join(tmp, "zaris.conf")
bad, accepted, refused = [], 0, 0
for n in range(COPIES):
    text = mutate()
    with open(path, "w") as f:
        f.write(text)
    p = subprocess.run([ZARISCTL, "check-config", path], capture_output=True, text=True, timeout=30)
    out = p.stdout + p.stderr
    if not sane(p.returncode, out, path):
        bad.append(("zarisctl", n, p.returncode, out[-400:]))
    if p.returncode == 0:
        accepted += 1
        continue
    refused += 1
    # zarisd reads the same file the same way and refuses before serving
    # (on a loopback port and a private dir all the same, should it not)
    z = subprocess.Popen([ZARISD, "--config", path, "--port", str(free_ports(1)[0]), "--bind",
                          "127.0.0.1", "--dir", tmp], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True)
    try:
        zout, _ = z.communicate(timeout=30)
        if z.returncode != 1 or not sane(1, zout, path):
            bad.append(("zarisd", n, z.returncode, zout[-400:]))
    except subprocess.TimeoutExpired:
        z.kill()
        z.communicate()
        bad.append(("zarisd", n, "still running on a file zarisctl refused", ""))
    if len(bad) == 1 and not os.path.exists(os.path.join(tmp, "first-bad.conf")):
        with open(os.path.join(tmp, "first-bad.conf"), "w") as f:
            f.write(text)

ok(refused >= 10 and accepted >= 10,
   "the sweep hit both outcomes: %d accepted, %d refused of %d copies" % (accepted, refused, COPIES))
ok(not bad, "every copy accepted, or refused naming the file (and line) by zarisctl and zarisd; "
   "no crash")
for b in bad[:3]:
    diag(repr(b))
if not bad:
    for f in os.listdir(tmp):
        os.unlink(os.path.join(tmp, f))
    os.rmdir(tmp)
else:
    diag("copies kept in %s" % tmp)
done()
