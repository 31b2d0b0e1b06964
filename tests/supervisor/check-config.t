#!/usr/bin/python3
"""zarisctl check-config: every file of the bad corpus (tests/supervisor/bad)
is rejected with the line and message its first line expects
("# expect: LINE: message prefix"; line 0 = no line), the default
config/zaris.conf and the examples pass, and --json reports the same."""
import glob
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from svlib import *  # noqa: E402,F401

if not os.access(ZARISCTL, os.X_OK):
    skip_all("%s is not built (run make)" % ZARISCTL)


def check(path, *extra):
    r = subprocess.run([ZARISCTL] + list(extra) + ["check-config", path], capture_output=True,
                       text=True, timeout=10)
    return r.returncode, r.stdout, r.stderr


bad = sorted(glob.glob(os.path.join(HERE, "bad", "*.conf")))
ok(len(bad) >= 20, "bad corpus has %d files" % len(bad))
for path in bad:
    first = open(path).readline()
    assert first.startswith("# expect: "), path
    line, msg = first[len("# expect: "):].rstrip("\n").split(": ", 1)
    want = ("%s:%s: %s" % (path, line, msg)) if line != "0" else ("%s: %s" % (path, msg))
    rc, out, err = check(path)
    got = err.splitlines()[0] if err else ""
    if not ok(rc == 1 and got.startswith(want), "%s rejected at line %s: %s" % (os.path.basename(path), line, msg)):
        diag("rc=%d got: %s" % (rc, got))
        diag("want: %s" % want)
    if line != "0":
        ok(len(err.splitlines()) >= 2 and err.splitlines()[1].lstrip().startswith(line + " |"),
           "%s: the offending line is shown" % os.path.basename(path))

# JSON form of one error
rc, out, err = check(os.path.join(HERE, "bad", "unknown-key.conf"), "--json")
try:
    d = json.loads(out)
except ValueError:
    d = {}
ok(rc == 1 and d.get("ok") is False and d.get("line") == 4 and "maxmemroy" in d.get("message", ""),
   "--json error has file, line and message")

good = [os.path.join(REPO, "config", "zaris.conf")] + sorted(glob.glob(os.path.join(REPO, "config", "examples", "*.conf")))
for path in good:
    rc, out, err = check(path)
    ok(rc == 0 and "ok" in out, "%s passes (%s)" % (os.path.relpath(path, REPO), (out or err).strip()))
rc, out, _ = check(os.path.join(REPO, "config", "zaris.conf"), "--json")
d = json.loads(out) if rc == 0 else {}
ok(d.get("ok") is True and d.get("local") == ["local"], "default file: one local node 'local' (%s)" % out.strip())
rc, out, err = check("/nonexistent/zaris.conf")
ok(rc == 1 and "/nonexistent/zaris.conf: cannot read: No such file or directory" in err, "missing file: " + err.strip())
done()
