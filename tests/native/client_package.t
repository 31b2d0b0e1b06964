#!/usr/bin/python3
# client_package.t — libzaris as the .deb installs it: `make deb`, the
# package extracted with dpkg-deb -x into a temporary root, its files and
# the library's soname and exported symbols checked, zarisd/client/example.c
# compiled with `pkg-config --cflags --libs zaris` (PKG_CONFIG_SYSROOT_DIR
# and PKG_CONFIG_LIBDIR pointing into that root) and run against a zarisd
# this test starts with --native-port; the example linked statically with
# the package's libzaris.a runs too.
import fcntl
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
from zaris import REPO, build_dir, diag, done_testing, is_, ok, skip_all, start_zarisd  # noqa: E402

for tool in ("dpkg-deb", "pkg-config", "cc", "make", "readelf"):
    if not shutil.which(tool):
        skip_all("%s not installed" % tool)
build = build_dir()
if "san" in os.environ.get("ZARIS_SAN", ""):
    skip_all("the package ships the plain build")


def run(argv, **kw):
    return subprocess.run(argv, capture_output=True, text=True, timeout=600, **kw)


# the image tests build the .deb under the same lock
with open(os.path.join(build, ".deb.lock"), "w") as lock:
    fcntl.flock(lock, fcntl.LOCK_EX)
    p = run(["make", "-s", "--no-print-directory", "-C", REPO, "BUILD=" + build, "deb"])
ok(p.returncode == 0, "make deb")
if p.returncode:
    diag(p.stdout[-2000:] + p.stderr[-2000:])
    done_testing()
deb = p.stdout.strip().splitlines()[-1]
if not os.path.isabs(deb):
    deb = os.path.join(REPO, deb)

work = tempfile.mkdtemp(prefix="zaris-clientpkg-")
try:
    root = os.path.join(work, "root")
    p = run(["dpkg-deb", "-x", deb, root])
    ok(p.returncode == 0, "dpkg-deb -x into a temporary root")
    ma = run(["dpkg-architecture", "-qDEB_HOST_MULTIARCH"]).stdout.strip() or \
        run(["cc", "-print-multiarch"]).stdout.strip()
    lib = os.path.join(root, "usr/lib", ma)
    files = ["usr/lib/%s/libzaris.so.1" % ma, "usr/lib/%s/libzaris.a" % ma, "usr/include/zaris/zaris.h",
             "usr/lib/%s/pkgconfig/zaris.pc" % ma]
    is_([f for f in files if not os.path.isfile(os.path.join(root, f))], [],
        "the library, its archive, header and .pc are in the package")
    is_(os.readlink(os.path.join(lib, "libzaris.so")), "libzaris.so.1", "libzaris.so links to libzaris.so.1")
    dyn = run(["readelf", "-d", os.path.join(lib, "libzaris.so.1")]).stdout
    ok("Library soname: [libzaris.so.1]" in dyn, "soname libzaris.so.1")
    syms = run(["readelf", "--dyn-syms", "-W", os.path.join(lib, "libzaris.so.1")]).stdout
    exported = sorted(set(l.split()[7].split("@")[0] for l in syms.splitlines()
                          if len(l.split()) >= 8 and l.split()[4] == "GLOBAL" and l.split()[6] != "UND"))
    is_([s for s in exported if not s.startswith("zaris_") and s != "LIBZARIS_1"], [],
        "it exports zaris_* only (%d symbols)" % len(exported))
    with open(os.path.join(root, "usr/include/zaris/zaris.h")) as f:
        ok("#include \"" not in f.read(), "zaris.h includes no other header of the project")

    env = dict(os.environ, PKG_CONFIG_SYSROOT_DIR=root, PKG_CONFIG_LIBDIR=os.path.join(lib, "pkgconfig"))
    env.pop("PKG_CONFIG_PATH", None)
    pc = run(["pkg-config", "--cflags", "--libs", "zaris"], env=env)
    flags = pc.stdout.split()
    ok(pc.returncode == 0 and "-I%s/usr/include/zaris" % root in flags and "-L%s" % lib in flags,
       "pkg-config --cflags --libs zaris: %s" % pc.stdout.strip())
    ex = os.path.join(work, "example")
    p = run(["cc", "-Wall", "-Werror", os.path.join(REPO, "zarisd/client/example.c"), "-o", ex] + flags)
    ok(p.returncode == 0, "example.c compiles against the package")
    if p.returncode:
        diag(p.stderr[-2000:])
    exs = os.path.join(work, "example-static")
    p = run(["cc", os.path.join(REPO, "zarisd/client/example.c"), "-I%s/usr/include/zaris" % root, "-o", exs,
             os.path.join(lib, "libzaris.a"), "-pthread"])
    ok(p.returncode == 0, "and links with the package's libzaris.a")

    srv = start_zarisd(native=True)
    native = srv.native_port
    renv = dict(os.environ, LD_LIBRARY_PATH=lib)
    ldd = run(["ldd", ex], env=renv).stdout
    ok(os.path.join(lib, "libzaris.so.1") in ldd, "the example loads the package's libzaris.so.1")
    for name, exe in (("shared", ex), ("static", exs)):
        p = run([exe, "127.0.0.1", str(native)], env=renv)
        ok(p.returncode == 0 and p.stdout.rstrip().endswith("ok") and "PING: PONG" in p.stdout,
           "the example (%s) runs against zarisd's native port" % name)
        if p.returncode:
            diag(p.stdout + p.stderr)
    r = srv.client()
    is_(r.call("GET", "example:counter").value, b"10", "its INCRBYs (5 each run) are seen over RESP")
    is_(r.call("EXISTS", "example:key").value, 0, "its labelled key was invalidated")
finally:
    shutil.rmtree(work, ignore_errors=True)
done_testing()
