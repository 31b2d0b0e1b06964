#!/usr/bin/python3
# repl_sync_wait.t — a replica that asks for a full sync while its primary
# is still writing a snapshot of its own (a BGSAVE) waits for the answer to
# PSYNC for as long as repl-timeout allows, as Redis's replica waits in
# every handshake state. The primary answers once its BGSAVE is done, so
# the wait can be long. Before, the replica gave up on the PSYNC reply after
# a fixed 5 s, dropped the link and asked again: the primary counted a
# full sync per attempt and queued a useless snapshot for each
# (sync_full:3 after 13 s).
#
# rdb-key-save-delay holds the BGSAVE open: the replica connects, the test
# lets 7 s pass (time itself is what is tested: more than the old fixed
# wait), then lets the save end and waits (bounded) for the replica's link.
# Checks: one full sync on the primary, no link lost on the replica, the
# replica's keyspace is the primary's.

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from zaris import *  # noqa: E402,F403
from repl import *  # noqa: E402,F403

KEYS = 2000
WAIT_PAST_OLD_LIMIT = 7.0  # seconds; the old fixed wait was 5 s

plan(6)
p = start_node("primary", threads=2)
pc = p.client()
fill(pc, KEYS, size=50)
pc.call("CONFIG", "SET", "rdb-key-save-delay", "1000000")  # 1 s a key: the save holds
pc.call("BGSAVE")
ok(wait_for(lambda: info(pc, "persistence").get("rdb_bgsave_in_progress") == "1", 10),
   "the primary's BGSAVE runs")
r = start_node("replica", threads=2, replicaof=(HOST, p.port))
rc = r.client()
ok(wait_for(lambda: info_int(pc, "sync_full", "stats") >= 1, 20),
   "the replica asked for a full sync")
time.sleep(WAIT_PAST_OLD_LIMIT)  # deliberate: longer than the old fixed PSYNC wait
pc.call("CONFIG", "SET", "rdb-key-save-delay", "0")
ok(wait_link(rc, "up", 60), "the replica's link comes up once the BGSAVE ended")
is_(info_int(pc, "sync_full", "stats"), 1, "one full sync: the replica waited for the PSYNC reply")
lost = r.log_tail(20000).count("Connection with master lost")
is_(lost, 0, "the replica never dropped the link")
ok(wait_in_sync(pc, rc, 30) and not differences(dump(pc), dump(rc)),
   "the replica's keyspace is the primary's")
sys.exit(done_testing())
