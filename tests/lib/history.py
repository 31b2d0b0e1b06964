"""history.py — a Jepsen-style workload against a Zaris cluster, and the
checker of what it recorded.

Workload(nodes, shard_slots, enter=None):
  * nodes: every (ip, port) of the cluster; shard_slots: one slot per shard
    (shard k = whoever serves slot shard_slots[k]); enter(): called first in
    every thread the workload starts (Hosts.enter_client: the sockets then
    live in the clients' namespace).
  * one worker thread per shard: SET of a fresh key (hash-tagged into the
    shard's slot, value "w<shard>:<seq>") and INCR of the shard's counter,
    alternating; every attempt is one Op with invoke/complete monotonic
    times, the node it went to and its outcome:
        ok    acknowledged (INCR: the value it returned)
        fail  a reply that says nothing was done: MOVED, ASK, CLUSTERDOWN,
              READONLY, TRYAGAIN, MASTERDOWN, LOADING (unless the text says
              the write "may or may not" be applied: zarisd's fenced primary
              dropping a held replica-ack reply), or a connection that
              could not even be opened
        info  anything else — timeout, connection lost after sending, and
              NOREPLICAS (zarisd: applied here, not acknowledged by enough
              replicas: may or may not survive)
    Routing is its own: MOVED goes to the named node; CLUSTERDOWN or a
    connection error refreshes the slot map (CLUSTER SLOTS from the first
    node that answers, each tried once per refresh).
  * a sampler thread per node polls INFO every ~100 ms: Sample(invoke,
    complete, node, role, epoch, lease) from `role:`,
    `cluster_topology_epoch:` and `write_lease:` (None when absent).
  * faults are marked by the test: mark_fault(kind, shards) at injection
    (shards: {shard: node that was its primary}), end_fault() when healed.

check(workload, final) -> Result: FINAL is {key: value or None} read back
from the final primaries (read_back() does it). Counts, all as lists of
evidence so a failure can print it:
  lost        acknowledged SETs whose key is absent or holds another value,
              and counters whose final value is below the largest
              acknowledged INCR result
  duplicated  keys holding a value some other attempt wrote (never, as keys
              are unique), keys present whose only write definitely failed,
              and counters above acked + indeterminate INCRs
  split_brain two acknowledged INCRs of one counter returning the same value
  overlaps    two nodes of one shard seen as primary with write_lease held
              at overlapping times. SAMPLED: a node counts as held from the
              start of the first to the end of the last sample of a run of
              held samples less than 0.5 s apart; a primary that held its
              lease only between two samples is not seen. A primary without
              a write_lease field (no fencing) counts as held.
  failover    per fault and affected shard: from injection to the first
              acknowledged write of the shard on another node than its
              primary at injection, among the writes invoked in the fault's
              cycle (before end_fault)
  kept        no write of the cycle acknowledged elsewhere: the primary came
              back and kept the shard (a restarted primary with its log
              fsynced per write may win the election); its time is from
              the fault to the first acknowledged write invoked after the
              cycle's first unacknowledged one (0 when every write was
              acknowledged)
Results are grouped by fault kind (ops by invoke time into the window of the
fault cycle they fall in; "none" before the first fault).
"""

import os
import random
import threading
import time

import redis
from redis.crc import key_slot

__all__ = ["Op", "Sample", "Workload", "check", "read_back", "summary_table", "tag_for_slot",
           "classify_error"]

DEFINITE = ("MOVED", "ASK", "CLUSTERDOWN", "READONLY", "TRYAGAIN", "MASTERDOWN", "LOADING")


class Op:
    __slots__ = ("kind", "shard", "key", "value", "invoke", "complete", "node", "outcome", "result",
                 "error")

    def __init__(self, kind, shard, key, value, invoke, node):
        self.kind, self.shard, self.key, self.value = kind, shard, key, value
        self.invoke, self.node = invoke, node
        self.complete = None
        self.outcome = None
        self.result = None
        self.error = None

    def __repr__(self):
        return "%s(%s %s=%s @%s:%s %.3f-%.3f %s %r)" % (
            self.kind, self.shard, self.key, self.value, self.node[0], self.node[1], self.invoke,
            self.complete or 0, self.outcome, self.result if self.error is None else self.error)


class Sample:
    __slots__ = ("invoke", "complete", "node", "role", "epoch", "lease")

    def __init__(self, invoke, complete, node, role, epoch=None, lease=None):
        self.invoke, self.complete, self.node = invoke, complete, node
        self.role, self.epoch, self.lease = role, epoch, lease

    def held(self):
        return self.role == "master" and self.lease in (None, "held")


def tag_for_slot(slot):
    """A hash tag whose keys land in SLOT."""
    for n in range(1 << 20):
        t = "s%d" % n
        if key_slot(t.encode()) == slot:
            return t
    raise ValueError("no tag for slot %d" % slot)


def classify_error(e):
    """(outcome, text) for exception E: redis-py says "connecting to" (or
    "Timeout connecting") when the connection could not even be opened, so
    nothing was sent."""
    text = str(e)
    if isinstance(e, redis.ResponseError):
        word = text.split(" ", 1)[0].upper()
        # zarisd's fenced primary dropping a held replica-ack reply says
        # CLUSTERDOWN too, but the write was applied (and replicated, maybe)
        if word in DEFINITE and "may or may not" not in text:
            return "fail", text
        return "info", text
    if "connecting to" in text or "Timeout connecting" in text:
        return "fail", text
    return "info", text


class Workload:
    runs = 0

    def __init__(self, nodes, shard_slots, enter=None, timeout=1.0, pause=0.002, seed=None):
        Workload.runs += 1
        # keys of this run only: a second workload on the same cluster starts
        # with fresh keys and counters
        self.run = "r%d.%d" % (os.getpid(), Workload.runs)
        self.nodes = [tuple(n) for n in nodes]
        self.shard_slots = list(shard_slots)
        self.tags = [tag_for_slot(s) for s in self.shard_slots]
        self.enter = enter
        self.timeout = timeout
        self.pause = pause
        self.rng = random.Random(seed)
        self.ops = []
        self.samples = []
        self.faults = []      # [kind, t_inject, t_end, {shard: node}]
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.threads = []
        self.slot_map = {}    # slot -> node (primary by CLUSTER SLOTS)

    def counter_key(self, shard):
        return "{%s}:%s:ctr" % (self.tags[shard], self.run)

    # ---- connections ---------------------------------------------------
    def _conn(self, cache, node):
        c = cache.get(node)
        if c is None:
            # a pool (connecting lazily, on the first command, inside its
            # try) used by one thread: one connection
            c = redis.Redis(host=node[0], port=node[1], socket_timeout=self.timeout,
                            socket_connect_timeout=self.timeout / 2, decode_responses=True)
            cache[node] = c
        return c

    def _drop(self, cache, node):
        c = cache.pop(node, None)
        if c is not None:
            try:
                c.close()
            except Exception:
                pass

    def refresh(self, cache, shard=None):
        """The primary of SHARD's slot from CLUSTER SLOTS of the first node
        that answers (each node tried once); None when none does."""
        order = list(self.nodes)
        self.rng.shuffle(order)
        for node in order:
            try:
                ranges = self._conn(cache, node).execute_command("CLUSTER", "SLOTS")
            except Exception:
                self._drop(cache, node)
                continue
            found = {}
            for r in ranges:
                lo, hi, primary = int(r[0]), int(r[1]), r[2]
                ip = primary[0].decode() if isinstance(primary[0], bytes) else primary[0]
                for s in self.shard_slots:
                    if lo <= s <= hi:
                        found[s] = (ip, int(primary[1]))
            if shard is None or self.shard_slots[shard] in found:
                return found.get(self.shard_slots[shard]) if shard is not None else found
        return None

    # ---- threads ---------------------------------------------------------------
    def _worker(self, shard):
        if self.enter:
            self.enter()
        cache = {}
        node = None
        seq = 0
        tag = self.tags[shard]
        while not self.stopping.is_set():
            if node is None:
                node = self.refresh(cache, shard)
                if node is None:
                    time.sleep(0.05)
                    continue
            seq += 1
            if seq % 2:
                op = Op("set", shard, "{%s}:%s:k%d" % (tag, self.run, seq), "w%d:%d" % (shard, seq),
                        time.monotonic(), node)
                args = ("SET", op.key, op.value)
            else:
                op = Op("incr", shard, self.counter_key(shard), None, time.monotonic(), node)
                args = ("INCR", op.key)
            try:
                r = self._conn(cache, node).execute_command(*args)
                op.complete = time.monotonic()
                op.outcome = "ok"
                op.result = int(r) if op.kind == "incr" else r
            except Exception as e:
                op.complete = time.monotonic()
                op.outcome, op.error = classify_error(e)
                if isinstance(e, redis.ResponseError):
                    text = str(e)
                    if text.startswith("MOVED ") or text.startswith("ASK "):
                        host, _, port = text.split(" ")[2].rpartition(":")
                        node = (host, int(port))
                    elif text.startswith("NOREPLICAS"):
                        self._drop(cache, node)   # zarisd closes it after NOREPLICAS
                    else:
                        node = None
                        time.sleep(0.02)
                else:
                    self._drop(cache, node)
                    node = None
                    time.sleep(0.02)
            with self.lock:
                self.ops.append(op)
            if self.pause:
                time.sleep(self.pause)
        for n in list(cache):
            self._drop(cache, n)

    def _sampler(self, node):
        if self.enter:
            self.enter()
        cache = {}
        while not self.stopping.is_set():
            t0 = time.monotonic()
            try:
                info = self._conn(cache, node).info()
                s = Sample(t0, time.monotonic(), node, info.get("role"),
                           info.get("cluster_topology_epoch"), info.get("write_lease"))
            except Exception as e:
                self._drop(cache, node)
                s = Sample(t0, time.monotonic(), node, None, None, "error: %s" % e)
            with self.lock:
                self.samples.append(s)
            self.stopping.wait(0.1)
        for n in list(cache):
            self._drop(cache, n)

    def start(self):
        for k in range(len(self.shard_slots)):
            self.threads.append(threading.Thread(target=self._worker, args=(k,), daemon=True))
        for node in self.nodes:
            self.threads.append(threading.Thread(target=self._sampler, args=(node,), daemon=True))
        for t in self.threads:
            t.start()

    def stop(self):
        self.stopping.set()
        for t in self.threads:
            t.join(10 + 2 * self.timeout)
        return all(not t.is_alive() for t in self.threads)

    def mark_fault(self, kind, shards):
        with self.lock:
            self.faults.append([kind, time.monotonic(), None, dict(shards)])

    def end_fault(self):
        with self.lock:
            if self.faults and self.faults[-1][2] is None:
                self.faults[-1][2] = time.monotonic()

    def acked(self, shard, since):
        """Acknowledged writes of SHARD invoked after SINCE."""
        with self.lock:
            return sum(1 for o in self.ops if o.shard == shard and o.outcome == "ok" and o.invoke > since)


def read_back(wl, cache=None, retries=20):
    """{key: value or None} for every key the workload touched, read from the
    primary CLUSTER SLOTS names now (bounded retries per shard); raises
    RuntimeError when a shard cannot be read."""
    cache = {} if cache is None else cache
    keys = {}
    for o in wl.ops:
        keys.setdefault(o.shard, set()).add(o.key)
    final = {}
    for shard, ks in keys.items():
        ks = sorted(ks)
        for attempt in range(retries):
            node = wl.refresh(cache, shard)
            if node is None:
                time.sleep(0.25)
                continue
            try:
                c = wl._conn(cache, node)
                got = {}
                for i in range(0, len(ks), 500):
                    part = ks[i:i + 500]
                    got.update(zip(part, c.execute_command("MGET", *part)))
                final.update(got)
                break
            except Exception:
                wl._drop(cache, node)
                time.sleep(0.25)
        else:
            raise RuntimeError("shard %d cannot be read back" % shard)
    for n in list(cache):
        wl._drop(cache, n)
    return final


class Result:
    def __init__(self):
        self.kinds = {}

    def kind(self, k):
        return self.kinds.setdefault(k, {"cycles": 0, "acked": 0, "lost": [], "duplicated": [],
                                         "split_brain": [], "overlaps": [], "failover": [], "kept": []})


def _window_kind(faults, t):
    """The fault kind whose cycle T falls in: from a fault's injection to the
    next one's ("none" before the first)."""
    kind = "none"
    for f in faults:
        if f[1] <= t:
            kind = f[0]
        else:
            break
    return kind


def _held_spans(samples, gap=0.5):
    spans = []
    cur = None
    last = None
    for s in samples:
        if s.held() and cur is not None and s.invoke - last.complete < gap:
            cur[1] = s.complete
        elif s.held():
            cur = [s.invoke, s.complete]
            spans.append(cur)
        else:
            cur = None
        last = s
    return spans


def check(wl, final, shard_of=None):
    """The verdict on workload WL given FINAL (read_back()). SHARD_OF maps a
    node to its shard for the overlap check (nodes absent are left out)."""
    res = Result()
    faults = sorted(wl.faults, key=lambda f: f[1])
    for f in faults:
        res.kind(f[0])["cycles"] += 1
    res.kind("none")
    writers = {}
    for o in wl.ops:
        if o.kind == "set":
            writers.setdefault(o.key, []).append(o)
    for o in wl.ops:
        k = res.kind(_window_kind(faults, o.invoke))
        if o.outcome == "ok":
            k["acked"] += 1
        if o.kind == "set" and o.outcome == "ok" and final.get(o.key) != o.value:
            k["lost"].append("%r: read back %r" % (o, final.get(o.key)))
    for key, ws in writers.items():
        v = final.get(key)
        if v is None:
            continue
        mine = [o for o in ws if o.value == v]
        if not mine:
            k = res.kind(_window_kind(faults, ws[0].invoke))
            k["duplicated"].append("%s holds %r, written by no attempt on it (%r)" % (key, v, ws))
        elif all(o.outcome == "fail" for o in mine):
            k = res.kind(_window_kind(faults, mine[0].invoke))
            k["duplicated"].append("%s = %r although its write definitely failed: %r" % (key, v, mine))
    for shard in range(len(wl.shard_slots)):
        key = wl.counter_key(shard)
        incrs = sorted((o for o in wl.ops if o.kind == "incr" and o.shard == shard), key=lambda o: o.invoke)
        if not incrs:
            continue
        seen = {}
        for o in incrs:
            if o.outcome != "ok":
                continue
            if o.result in seen:
                k = res.kind(_window_kind(faults, o.invoke))
                k["split_brain"].append("INCR %s returned %d twice: %r and %r" % (key, o.result, seen[o.result], o))
            else:
                seen[o.result] = o
        final_v = int(final.get(key) or 0)
        acked = [o for o in incrs if o.outcome == "ok"]
        maybe = sum(1 for o in incrs if o.outcome == "info")
        if acked:
            top = max(acked, key=lambda o: o.result)
            if final_v < top.result:
                res.kind(_window_kind(faults, top.invoke))["lost"].append(
                    "%s ends at %d below acknowledged %r" % (key, final_v, top))
        if final_v > len(acked) + maybe:
            res.kind(_window_kind(faults, incrs[-1].invoke))["duplicated"].append(
                "%s ends at %d above %d acknowledged + %d indeterminate INCRs" % (key, final_v, len(acked), maybe))
    if shard_of:
        by_node = {}
        for s in sorted(wl.samples, key=lambda s: s.invoke):
            by_node.setdefault(s.node, []).append(s)
        spans = {n: _held_spans(ss) for n, ss in by_node.items()}
        nodes = sorted(n for n in spans if n in shard_of)
        for i, a in enumerate(nodes):
            for b in nodes[i + 1:]:
                if shard_of[a] != shard_of[b]:
                    continue
                for sa in spans[a]:
                    for sb in spans[b]:
                        lo, hi = max(sa[0], sb[0]), min(sa[1], sb[1])
                        if lo <= hi:
                            res.kind(_window_kind(faults, lo))["overlaps"].append(
                                "shard %s: %s:%d held %.3f-%.3f and %s:%d held %.3f-%.3f (sampled)" % (
                                    shard_of[a], a[0], a[1], sa[0], sa[1], b[0], b[1], sb[0], sb[1]))
    ops_by_shard = {}
    for o in wl.ops:
        ops_by_shard.setdefault(o.shard, []).append(o)
    for f in faults:
        kind, t0, t1, shards = f
        t1 = float("inf") if t1 is None else t1
        for shard, old in shards.items():
            # the cycle's own writes only: a shard its old primary kept (a
            # restarted primary that won again) must not count the move of
            # a later cycle as this one's failover
            mine = sorted((o for o in ops_by_shard.get(shard, ()) if t0 <= o.invoke <= t1),
                          key=lambda o: o.invoke)
            moved = [o.complete for o in mine if o.outcome == "ok" and o.node != tuple(old)]
            if moved:
                res.kind(kind)["failover"].append(min(moved) - t0)
                continue
            # kept: the outage is from the fault to the first write acked
            # after the first one that was not (writes in flight at the
            # fault may still be acked by the old primary: no outage yet)
            bad = next((o for o in mine if o.outcome != "ok"), None)
            if bad is None:
                if mine:
                    res.kind(kind)["kept"].append(0.0)
                continue
            back = [o.complete for o in mine if o.outcome == "ok" and o.invoke >= bad.invoke]
            if back:
                res.kind(kind)["kept"].append(min(back) - t0)
    return res


def _pct(xs, p):
    if not xs:
        return None
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p * len(xs)))]


def summary_table(res):
    """The per-fault-kind table, as lines."""
    head = "%-16s %6s %8s %5s %5s %5s %7s %9s %7s %7s %5s %7s" % (
        "fault", "cycles", "acked", "lost", "dup", "split", "overlap", "failovers", "p50 s", "max s",
        "kept", "max s")
    lines = [head]
    for kind in sorted(res.kinds, key=lambda k: (k != "none", k)):
        k = res.kinds[kind]
        p50, mx = _pct(k["failover"], 0.5), (max(k["failover"]) if k["failover"] else None)
        kmx = max(k["kept"]) if k["kept"] else None
        lines.append("%-16s %6d %8d %5d %5d %5d %7d %9d %7s %7s %5d %7s" % (
            kind, k["cycles"], k["acked"], len(k["lost"]), len(k["duplicated"]), len(k["split_brain"]),
            len(k["overlaps"]), len(k["failover"]), "-" if p50 is None else "%.2f" % p50,
            "-" if mx is None else "%.2f" % mx, len(k["kept"]), "-" if kmx is None else "%.2f" % kmx))
    return lines
