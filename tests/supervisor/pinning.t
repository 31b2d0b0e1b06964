#!/usr/bin/python3
"""Two local instances pinned to different cores: every thread of each
zarisd runs only on its node's cores (Cpus_allowed_list in /proc), and each
runs with its own maxmemory (CONFIG GET), as the cluster file says."""
import glob
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from svlib import *  # noqa: E402,F401

require_binaries()
cpus = sorted(os.sched_getaffinity(0))
if len(cpus) < 2:
    skip_all("needs two CPUs (have %d)" % len(cpus))
c0, c1 = cpus[0], cpus[1]
pa, pb = free_ports(2)
sv = Supervisor(node_conf([
    {"name": "a", "port": pa, "cores": '"%d"' % c0, "maxmemory": '"48mb"', "threads": "2"},
    {"name": "b", "port": pb, "cores": "[%d]" % c1, "maxmemory": '"80mb"', "threads": "2"},
], cluster='maxmemory-policy = "allkeys-lru";'))


def threads_cpus(pid):
    out = {}
    for st in glob.glob("/proc/%d/task/*/status" % pid):
        try:
            with open(st) as f:
                for line in f:
                    if line.startswith("Cpus_allowed_list:"):
                        out[st.split("/")[4]] = line.split(":", 1)[1].strip()
        except OSError:
            pass
    return out


try:
    inst = sv.wait_all_up()
    ok(inst, "a and b up")
    for name, cpu, port, mem in (("a", c0, pa, 48 << 20), ("b", c1, pb, 80 << 20)):
        pid = inst[name]["pid"]
        tc = threads_cpus(pid)
        diag("%s pid %d threads: %s" % (name, pid, tc))
        ok(len(tc) >= 2, "%s: zarisd runs several threads (%d)" % (name, len(tc)))
        ok(tc and all(v == str(cpu) for v in tc.values()), "%s: every thread pinned to CPU %d" % (name, cpu))
        r = client(port)
        ok(r.config_get("maxmemory").get("maxmemory") == str(mem), "%s: CONFIG GET maxmemory = %d" % (name, mem))
        ok(r.config_get("maxmemory-policy").get("maxmemory-policy") == "allkeys-lru",
           "%s: cluster-wide maxmemory-policy applied" % name)
        ok(inst[name]["cores"] == str(cpu), "%s: status shows cores %d" % (name, cpu))
        ok(inst[name]["maxmemory"] == mem, "%s: status shows the memory limit" % name)
    rc, out, _ = sv.ctl("status")
    ok(rc == 0 and "/48.0M" in out and "/80.0M" in out, "text status shows used/limit memory")
    note(out)
finally:
    sv.cleanup()
done()
