#!/usr/bin/python3
# repl_txn_overlap.t — transactions that overlap in the change stream reach
# a replica whole and in order. Four clients on a 2-thread primary run
# MULTI / INCR / RPUSH / SET / EXEC on keys of their own (other shards),
# so EXECs on the two workers interleave their records and one commits
# while another is still open; the replica must apply every one and hold
# the primary's keyspace. (A first version appended a JR_COMMIT that came
# while another transaction was open before that transaction's held
# records: the replica's stream refused the seq, and the link closed and
# resynced into the same record for ever.)

import os
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from zaris import *  # noqa: E402,F403
from repl import *  # noqa: E402,F403

TXNS = sweep_size("ZARIS_REPL_TXNS", 1500, 500)
CLIENTS = 4

plan(4)
p = start_node("primary", threads=2)
r = start_node("replica", threads=1, replicaof=(HOST, p.port))
pc, rc = p.client(), r.client()
ok(wait_link(rc), "the replica's link is up")
errors = []


def run(k):
    c = p.client()
    try:
        for i in range(TXNS):
            c.send("MULTI")
            c.send("INCR", "n:%d" % k)
            c.send("RPUSH", "l:%d:%d" % (k, i % 7), "e%d" % i)
            c.send("SET", "s:%d:%d" % (k, i % 11), "v%d" % i)
            c.send("EXEC")
            for _ in range(5):
                rep = c.read_reply()
                if rep.is_error():
                    errors.append(rep.value)
    except Exception as e:  # noqa: BLE001
        errors.append(repr(e))


ts = [threading.Thread(target=run, args=(k,)) for k in range(CLIENTS)]
for t in ts:
    t.start()
for t in ts:
    t.join(300)
ok(not errors, "%d transactions of %d clients ran on the primary" % (TXNS * CLIENTS, CLIENTS)) or diag(errors[:3])
ok(wait_in_sync(pc, rc, timeout=60), "the replica reaches the primary's offset") or \
    diag(sync_state(pc, rc)) or diag(r.log_tail(2000))
a, b = dump(pc), dump(rc)
lines = differences(a, b)
ok(not lines and len(a) == CLIENTS * (1 + 7 + 11), "the replica's keyspace is the primary's (%d keys)" % len(a)) or \
    [diag(x) for x in lines]
sys.exit(done_testing())
