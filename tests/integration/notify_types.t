#!/usr/bin/python3
# notify_types.t — keyspace notifications of the list, bitmap and
# HyperLogLog commands, compared with redis-server's.
#
# One connection runs each command; a second one, subscribed to every
# keyspace and keyevent channel, reads what the command sent. The command's
# connection then publishes a marker, which arrives after the command's
# events (delivery is in order per publishing thread), so each command's
# events are compared exactly: none missing, none extra, same order.
# Then the same commands again on a RESP3 connection subscribed to its own
# events: Redis writes each event inline, before or after the command's
# reply depending on the command, and the raw stream up to the marker is
# compared byte for byte.
#
# It was a zarisd bug: lists, SETBIT/BITFIELD/BITOP and PFADD/PFMERGE sent
# no events at all.

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from zaris import *  # noqa: E402,F403

GROUPS = [
    ("lists", """
        RPUSH l a b c
        LPUSH l z
        LPUSHX nol a
        RPUSHX nol a
        RPUSHX l d
        LINSERT l BEFORE b x
        LINSERT l BEFORE nothere x
        LSET l 0 q
        LREM l 1 x
        LREM l 0 nothere
        LTRIM l 0 10
        LTRIM l 1 2
        LPOP l
        RPOP l 2
        LPOP l
        RPUSH l a b c d
        LMOVE l l2 LEFT RIGHT
        LMOVE l l LEFT RIGHT
        RPOPLPUSH l l2
        LMPOP 2 nol l RIGHT COUNT 5
        LPOP l2 10
        RPUSH l a
        LTRIM l 5 10
        RPUSH l a b
        LREM l 0 a
        LREM l 0 b
        RPUSH l a b c
        BLPOP l 0
        BRPOP nol l 0
        BLMOVE l l3 RIGHT LEFT 0
        RPUSH l a b
        BLMPOP 0 2 nol l LEFT COUNT 9
        LPOP l3
        RPUSH l a
        LMOVE l l LEFT LEFT
        LMOVE l nol RIGHT LEFT
        DEL nol
    """),
    ("bitmaps and hyperloglog", """
        SETBIT b 1 1
        SETBIT b 1 1
        SETBIT nb 100 0
        BITFIELD bf SET u8 0 1 GET u8 0
        BITFIELD bf OVERFLOW FAIL INCRBY u2 0 10
        BITFIELD bf INCRBY u8 0 1 INCRBY u8 8 1
        BITFIELD_RO bf GET u8 0
        BITOP OR bo b bf
        BITOP AND bo2 nope1 nope2
        SET bo3 x
        BITOP AND bo3 nope1 nope2
        PFADD h a b
        PFADD h a
        PFADD h2
        PFMERGE h3 h h2
        PFCOUNT h
        PFMERGE h3
    """),
]


def scenarios(srv):
    cmd = srv.client()
    sub = srv.client()
    cmd.call("CONFIG", "SET", "notify-keyspace-events", "KEA")
    sub.call("PSUBSCRIBE", "__key*@0__:*")
    sub.call("SUBSCRIBE", "notify-types-marker")
    out = []
    for name, text in GROUPS:
        cmd.call("FLUSHALL")
        cmd.call("PUBLISH", "notify-types-marker", "flushed")
        while sub.read_reply().py()[0] != b"message":
            pass
        steps = []
        for line in text.strip().splitlines():
            reply = cmd.call(*line.split()).raw
            cmd.call("PUBLISH", "notify-types-marker", "end")
            events = []
            while True:
                r = sub.read_reply().py()
                if r[0] == b"message":
                    break
                events.append((r[2], r[3]))
            steps.append((line.strip(), reply, events))
        nev = sum(len(e) for _, _, e in steps)
        out.append(("%s: replies and keyspace events as redis-server's (%d commands, %d events)"
                    % (name, len(steps), nev), steps))
    sub.close()
    own = srv.client()
    own.call("HELLO", "3")
    own.call("PSUBSCRIBE", "__keyevent@0__:*")
    own.call("SUBSCRIBE", "notify-types-marker")
    for name, text in GROUPS:
        cmd.call("FLUSHALL")
        own.send("PING")
        while own.read_reply().raw != b"+PONG\r\n":
            pass
        steps = []
        for line in text.strip().splitlines():
            own.send(*line.split())
            own.send("PUBLISH", "notify-types-marker", "end")
            stream = []
            while True:
                r = own.read_reply()
                stream.append(r.raw)
                if b"notify-types-marker" in r.raw and r.raw.startswith(b">"):
                    stream.append(own.read_reply().raw)  # PUBLISH's own reply
                    break
            steps.append((line.strip(), stream))
        out.append(("%s: RESP3, own events inline around the reply as redis-server's" % name, steps))
    own.close()
    cmd.call("CONFIG", "SET", "notify-keyspace-events", "")
    cmd.close()
    return out


compare_scenarios(scenarios)
