#!/usr/bin/python3
# format.t — every C file of the repository is formatted as the repo's
# .clang-format says (clang-format --dry-run --Werror), one TAP line per file.
# Files: those git tracks plus untracked ones git does not ignore (so a file
# shows up before its first commit).  Fix a failure with `make format` or
# `clang-format -i FILE`.

import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from zaris import REPO, plan, ok, diag, skip_all, done_testing  # noqa: E402


def c_files():
    out = subprocess.run(["git", "-C", REPO, "ls-files", "--cached", "--others", "--exclude-standard",
                          "-z", "--", "*.c", "*.h"], capture_output=True, check=True).stdout
    return sorted(set(p.decode() for p in out.split(b"\0") if p and os.path.isfile(os.path.join(REPO, p.decode()))))


def main():
    exe = shutil.which("clang-format")
    if exe is None:
        # clang-format is in DEPS_TEST; its absence is a broken setup, not a skip
        plan(1)
        ok(False, "clang-format is installed")
        done_testing()
    if not os.path.isfile(os.path.join(REPO, ".clang-format")):
        plan(1)
        ok(False, ".clang-format exists at the repository root")
        done_testing()
    files = c_files()
    if not files:
        skip_all("no C files in the repository")
    plan(len(files))
    for f in files:
        p = subprocess.run([exe, "--style=file", "--dry-run", "--Werror", f], cwd=REPO,
                           capture_output=True, text=True, timeout=120)
        good = p.returncode == 0
        ok(good, "clang-format: %s" % f)
        if not good:
            lines = [l for l in p.stderr.splitlines() if ": error:" in l or ": warning:" in l]
            diag("  %d places differ, first: %s" % (len(lines), lines[0] if lines else p.stderr[:300]))
    done_testing()


if __name__ == "__main__":
    main()
