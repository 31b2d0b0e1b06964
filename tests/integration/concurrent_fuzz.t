#!/usr/bin/python3
# concurrent_fuzz.t — four clients at once on a zarisd with two workers,
# each sending its own stream of random commands (tests/lib/cmdgen.py:
# multi-key ones included — RENAME, SMOVE, LMOVE, ZUNIONSTORE, BITOP,
# COPY ...) to a database of its own, so that the streams cannot interact
# and each one's replies are fixed. Then the same four streams, one after
# another, on redis-server: every client's replies must be redis-server's.
# What it checks is that commands running at the same time on the two
# workers (shard locks, shared tables, the workers' own buffers) change
# nothing a client sees; under make tsan it is also a race hunt.

import os
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from zaris import *  # noqa: E402,F403
from cmdgen import arities, random_command  # noqa: E402

CLIENTS = 4
COMMANDS = 5000


def run(srv, i, streams, out):
    c = srv.client()
    c.call("SELECT", str(i + 1))
    out[i] = [c.call(*args).raw for args in streams[i]]
    c.close()


rng = seeded_rng()
plan(3)
redis = start_redis()
zaris = start_zarisd(threads=2)
arity = arities(redis.client())
streams = [[random_command(rng, arity) for _ in range(COMMANDS)] for _ in range(CLIENTS)]
got = [None] * CLIENTS
threads = [threading.Thread(target=run, args=(zaris, i, streams, got), daemon=True) for i in range(CLIENTS)]
for t in threads:
    t.start()
for t in threads:
    t.join(600 * SLOW)
ok(all(g is not None and len(g) == COMMANDS for g in got),
   "%d clients sent %d commands each to zarisd at once" % (CLIENTS, COMMANDS))
want = [None] * CLIENTS
for i in range(CLIENTS):
    run(redis, i, streams, want)
first = []
for i in range(CLIENTS):
    for k, (w, g) in enumerate(zip(want[i], got[i] or [])):
        if w != g:
            first.append((i, k, streams[i][k], w[:200], g[:200]))
            break
for i, k, args, w, g in first:
    diag("client %d, command %d %r\n# redis-server: %r\n# zarisd:       %r" % (i, k, args, w, g))
is_(len(first), 0, "every client's replies are redis-server's for the same stream")
c = zaris.client()
is_(c.call("PING").raw, b"+PONG\r\n", "zarisd is up and answering after the sweep")
c.close()
sys.exit(done_testing())
