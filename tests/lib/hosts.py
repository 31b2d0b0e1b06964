"""hosts.py — simulated machines for failover tests: network namespaces,
fault injection, an etcd member per host.

What it owns:

  * Hosts(n): n network namespaces zh<pid>-1..n ("hosts") and one more,
    zh<pid>-br, holding the bridge br0 they are all joined to by veth pairs
    (each pair created inside the namespaces: the root namespace gets no
    interface, address or route). Host i has 10.<x>.<y>.i/24, the bridge
    namespace 10.<x>.<y>.254 — the test's clients live there (client()).
    x.y come from the pid, so parallel tests use different subnets (they
    could not collide anyway: each test has its own bridge).
  * run(i, argv): a process inside host i (ip netns exec, which execs: the
    pid is the process's own), tracked per host.
  * faults: kill_host(i) (SIGKILL to every process in host i's namespace:
    all of them are this test's), partition(i)/heal(i) (an nft table in
    host i's namespace dropping traffic to and from the other hosts; the
    clients' address .254 still reaches it, so a partitioned primary still
    sees writes — what fencing must refuse), stop(pid)/cont(pid).
  * etcd: start_etcd(i, members), wait_etcd_healthy(), etcdctl(i, ...).
  * clean-up (close(), the with-block, atexit): SIGTERM, wait, SIGKILL every
    process in the namespaces and every tracked pid, delete the namespaces
    and the data dirs under /dev/shm.

Needs root; Hosts() raises HostsUnavailable when not root or `ip netns`
fails, which a test turns into a TAP skip of the whole file (1..0 # SKIP).
"""

import atexit
import os
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from zaris_sys import inside, _setns  # noqa: E402

__all__ = ["Hosts", "HostsUnavailable", "enter_netns"]


class HostsUnavailable(Exception):
    pass


def _ip(*args, check=True):
    r = subprocess.run(["ip"] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=20)
    if check and r.returncode != 0:
        raise HostsUnavailable("ip %s: %s" % (" ".join(args), r.stderr.decode().strip()))
    return r


def enter_netns(name):
    """Moves the calling thread into namespace NAME for good (a worker thread
    calls it first: every socket it makes then lives there)."""
    fd = os.open("/run/netns/" + name, os.O_RDONLY)
    try:
        _setns(fd)
    finally:
        os.close(fd)


def _alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(") ", 1)[1][0] != "Z"
    except (OSError, IndexError):
        return False


_all = []


class Hosts:
    def __init__(self, n, subnet=None):
        if os.geteuid() != 0:
            raise HostsUnavailable("not root")
        pid = os.getpid()
        self.n = n
        self.prefix = "zh%d" % pid
        if subnet is None:
            subnet = "10.%d.%d" % (100 + (pid >> 8) % 100, pid & 255)
        self.subnet = subnet
        self.bridge_ns = self.prefix + "-br"
        self.names = {i: "%s-%d" % (self.prefix, i) for i in range(1, n + 1)}
        self.client_addr = subnet + ".254"
        self.dir = "/dev/shm/%s-%d" % (self.prefix, int(time.time() * 1000) % 1000000)
        self.procs = {i: [] for i in range(1, n + 1)}   # Popen objects per host
        self.etcd = {}        # host -> Popen of its member
        self.etcd_args = {}   # host -> argv, for restart_etcd
        self.partitioned = set()
        self.created = []
        self.closed = False
        _all.append(self)
        try:
            self._setup()
        except Exception:
            self.close()
            raise
        os.makedirs(self.dir, exist_ok=True)

    def _setup(self):
        b = self.bridge_ns
        _ip("netns", "add", b)
        self.created.append(b)
        _ip("-n", b, "link", "set", "lo", "up")
        _ip("-n", b, "link", "add", "br0", "type", "bridge")
        _ip("-n", b, "addr", "add", self.client_addr + "/24", "dev", "br0")
        _ip("-n", b, "link", "set", "br0", "up")
        for i, name in self.names.items():
            _ip("netns", "add", name)
            self.created.append(name)
            _ip("-n", name, "link", "set", "lo", "up")
            _ip("-n", name, "link", "add", "eth0", "type", "veth", "peer", "name", "p%d" % i, "netns", b)
            _ip("-n", b, "link", "set", "p%d" % i, "master", "br0", "up")
            _ip("-n", name, "addr", "add", "%s/24" % self.addr(i), "dev", "eth0")
            _ip("-n", name, "link", "set", "eth0", "up")
        # with STP off a bridge port forwards as soon as it is up: wait
        # (bounded) for every veth end to report it
        end = time.monotonic() + 10
        for i, name in self.names.items():
            while b"state UP" not in _ip("-n", name, "link", "show", "eth0").stdout:
                if time.monotonic() > end:
                    raise HostsUnavailable("host %d: eth0 does not come up" % i)
                time.sleep(0.02)

    def addr(self, i):
        return "%s.%d" % (self.subnet, i)

    def client(self):
        """with hosts.client(): ... — the block runs in the clients' namespace."""
        return inside(self.bridge_ns)

    def enter_client(self):
        """Moves the calling thread into the clients' namespace for good."""
        enter_netns(self.bridge_ns)

    # ---- processes ---------------------------------------------------------
    def run(self, i, argv, **popen):
        p = subprocess.Popen(["ip", "netns", "exec", self.names[i]] + list(argv), **popen)
        self.procs[i].append(p)
        return p

    def sh(self, i, argv, timeout=30):
        """Runs ARGV in host i to its end: (rc, stdout+stderr text)."""
        try:
            r = subprocess.run(["ip", "netns", "exec", self.names[i]] + list(argv),
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout)
        except subprocess.TimeoutExpired:
            return 124, "timed out after %ss" % timeout
        return r.returncode, r.stdout.decode(errors="replace")

    def pids_in(self, i):
        """Every process in host i's namespace (all of them this test's)."""
        r = _ip("netns", "pids", self.names[i], check=False)
        pids = set(int(x) for x in r.stdout.split() if x.strip().isdigit())
        pids.update(p.pid for p in self.procs[i] if p.poll() is None)
        pids.discard(os.getpid())   # a thread of ours may be in there (setns)
        return sorted(pids)

    def kill_host(self, i):
        """The machine dies: SIGKILL to every process there, at once."""
        for pid in self.pids_in(i):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        end = time.monotonic() + 10
        for p in self.procs[i]:
            try:
                p.wait(max(0.1, end - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
        self.procs[i] = [p for p in self.procs[i] if p.poll() is None]
        self.etcd.pop(i, None)

    def stop(self, pid):
        os.kill(pid, signal.SIGSTOP)

    def cont(self, pid):
        """SIGCONT; False when PID is gone (a supervisor may have replaced a
        stopped instance meanwhile)."""
        try:
            os.kill(pid, signal.SIGCONT)
            return True
        except ProcessLookupError:
            return False

    # ---- network faults ------------------------------------------------------
    def partition(self, i):
        """Host i loses the other hosts (both ways); the clients still reach it."""
        others = ", ".join(self.addr(j) for j in self.names if j != i)
        rules = ("table inet zchaos {\n"
                 "  chain i {\n"
                 "    type filter hook input priority 0; policy accept;\n"
                 "    ip saddr { %s } drop\n"
                 "  }\n"
                 "  chain o {\n"
                 "    type filter hook output priority 0; policy accept;\n"
                 "    ip daddr { %s } drop\n"
                 "  }\n"
                 "}\n") % (others, others)
        path = os.path.join(self.dir, "partition-%d.nft" % i)
        with open(path, "w") as f:
            f.write(rules)
        rc, out = self.sh(i, ["nft", "-f", path])
        if rc != 0:
            raise RuntimeError("nft -f in host %d: %s" % (i, out))
        self.partitioned.add(i)

    def heal(self, i):
        if i in self.partitioned:
            rc, out = self.sh(i, ["nft", "delete", "table", "inet", "zchaos"])
            if rc != 0:
                raise RuntimeError("nft delete table in host %d: %s" % (i, out))
            self.partitioned.discard(i)

    def heal_all(self):
        for i in list(self.partitioned):
            self.heal(i)

    # ---- etcd ----------------------------------------------------------------
    def etcd_endpoint(self, i):
        return "http://%s:2379" % self.addr(i)

    def etcd_endpoints(self, members=None):
        return ",".join(self.etcd_endpoint(i) for i in (members or sorted(self.names)))

    def start_etcd(self, i, members=None):
        """An etcd member on host i (client 2379, peer 2380 on its address) of
        a cluster of MEMBERS (host numbers, default all); data under
        /dev/shm. A second call after kill restarts it from its data dir."""
        members = members or sorted(self.names)
        if i not in self.etcd_args:
            cl = ",".join("h%d=http://%s:2380" % (j, self.addr(j)) for j in members)
            a = self.addr(i)
            self.etcd_args[i] = [
                "etcd", "--name", "h%d" % i, "--data-dir", os.path.join(self.dir, "etcd%d" % i),
                "--listen-client-urls", "http://%s:2379" % a, "--advertise-client-urls", "http://%s:2379" % a,
                "--listen-peer-urls", "http://%s:2380" % a, "--initial-advertise-peer-urls", "http://%s:2380" % a,
                "--initial-cluster", cl, "--initial-cluster-token", self.prefix,
                "--initial-cluster-state", "new", "--heartbeat-interval", "100", "--election-timeout", "1000",
                "--logger", "zap", "--log-outputs", os.path.join(self.dir, "etcd%d.log" % i)]
        p = self.run(i, self.etcd_args[i], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.etcd[i] = p
        return p

    def kill_etcd(self, i):
        p = self.etcd.pop(i, None)
        if p is not None and p.poll() is None:
            p.kill()
            p.wait(10)

    def etcdctl(self, i, *args, timeout="500ms", endpoints=None):
        """etcdctl run in host i against ENDPOINTS (default its own member):
        (rc, output)."""
        ep = endpoints or self.etcd_endpoint(i)
        return self.sh(i, ["etcdctl", "--endpoints=" + ep, "--dial-timeout=500ms",
                           "--command-timeout=" + timeout] + list(args), timeout=20)

    def etcd_healthy(self, i):
        rc, out = self.etcdctl(i, "endpoint", "health", timeout="1s")
        return rc == 0 and "is healthy" in out

    def wait_etcd_healthy(self, members=None, timeout=20.0):
        """Until every member of MEMBERS (default the running ones) answers
        `endpoint health` (a committed proposal); bounded. True or False."""
        members = members or sorted(self.etcd)
        end = time.monotonic() + timeout
        while True:
            if all(self.etcd_healthy(i) for i in members):
                return True
            if time.monotonic() > end:
                return False
            time.sleep(0.1)

    # ---- clean-up --------------------------------------------------------------
    def close(self):
        if self.closed:
            return
        self.closed = True
        for i in list(self.partitioned):
            try:
                self.heal(i)
            except Exception:
                pass
        tracked = [p for ps in self.procs.values() for p in ps]
        pids = set(p.pid for p in tracked if p.poll() is None)
        for i in self.names:
            if self.names[i] in self.created:
                pids.update(self.pids_in(i))
        for pid in pids:
            for sig in (signal.SIGCONT, signal.SIGTERM):
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    pass
        end = time.monotonic() + 5
        while time.monotonic() < end and any(_alive(p) for p in pids):
            for p in tracked:
                p.poll()
            time.sleep(0.05)
        for pid in pids:
            if _alive(pid):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        for p in tracked:
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                pass
        for name in reversed(self.created):
            _ip("netns", "del", name, check=False)
        self.created = []
        if not os.environ.get("ZARIS_KEEP_LOGS"):
            shutil.rmtree(self.dir, ignore_errors=True)
        else:
            sys.stderr.write("# hosts: logs kept in %s\n" % self.dir)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


@atexit.register
def _close_all():
    for h in _all:
        try:
            h.close()
        except Exception:
            pass
