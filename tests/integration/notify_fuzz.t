#!/usr/bin/python3
# notify_fuzz.t — keyspace notifications of random commands, compared with
# redis-server: with notify-keyspace-events KEA on both, a PSUBSCRIBE
# "__key*__:*" connection to each receives the events of every command of
# the sweep (tests/lib/cmdgen.py, as command_fuzz.t), and each command's
# reply and its events — which, on which key, in which order — must be
# redis-server's. After each command a PUBLISH of a fresh marker marks the
# end of its events (zarisd may deliver them from another worker; they
# still come in order before the marker). notify_types.t has the fixed
# cases per type; this is its random twin.

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from zaris import *  # noqa: E402,F403
from cmdgen import arities, random_command  # noqa: E402

COMMANDS = 10000


def events_until(sub, marker):
    """The (channel, message) pairs SUB receives before MARKER's."""
    got = []
    for _ in range(10000):  # bounded: a command makes a handful of events
        r = sub.read_reply().py()
        if r[2] == marker:
            return got
        got.append((r[2], r[3]))
    return got + ["(more than 10000 events)"]


rng = seeded_rng()
plan(3)
servers = (start_redis(), start_zarisd(threads=2))
clients, subs = [], []
for srv in servers:
    c = srv.client()
    c.call("CONFIG", "SET", "notify-keyspace-events", "KEA")
    s = srv.client()
    s.call("PSUBSCRIBE", "__key*__:*")
    clients.append(c)
    subs.append(s)
arity = arities(clients[0])
diffs, events = [], 0
for i in range(COMMANDS):
    args = random_command(rng, arity)
    marker = b"__keyspace@0__:marker-%d" % i
    seen = []
    for c, s in zip(clients, subs):
        reply = c.call(*args).raw
        c.call("PUBLISH", marker, "end")
        seen.append((reply, events_until(s, marker)))
    events += len(seen[0][1])
    if seen[1] != seen[0]:
        diffs.append((args, seen[0], seen[1]))
        for c, s in zip(clients, subs):  # start again from empty keyspaces
            c.call("FLUSHALL")
            c.call("PUBLISH", marker + b"-flush", "end")
            events_until(s, marker + b"-flush")
for args, want, got in diffs[:3]:
    diag("%r\n# redis-server: %r\n# zarisd:       %r" % (args, want, got))
is_(len(diffs), 0, "%d random commands: zarisd's replies and keyspace events are redis-server's"
    % COMMANDS)
ok(events > COMMANDS // 10, "the sweep made events (%d)" % events)
is_(clients[1].call("PING").raw, b"+PONG\r\n", "zarisd is up and answering after the sweep")
sys.exit(done_testing())
