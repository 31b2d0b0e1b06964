#!/usr/bin/python3
# zset_blocking.t — BZPOPMIN, BZPOPMAX, BZMPOP against zarisd and redis-server.
#
# Each scenario runs the same steps on both servers (zarisd with 2 worker
# threads, so waiters and writers sit on different workers) and compares the
# raw replies byte for byte: immediate pops, timeouts, a waiter served by
# ZADD / ZINCRBY / ZUNIONSTORE / ZRANGESTORE creating the key, FIFO order of
# waiters, BZMPOP's COUNT, RESP3 shapes, MULTI (no blocking inside EXEC),
# errors, and a waiter that disconnects. A writer starts only once the
# server reports the waiter in INFO's blocked_clients (bounded polling).

import os
import re
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from zaris import *  # noqa: E402,F403



def block(srv, admin, expect_blocked, *cmd, resp3=False):
    """A new client that sends CMD and is known to be blocked afterwards."""
    return start_blocked(srv, admin, expect_blocked, *cmd, setup=[("HELLO", "3")] if resp3 else [])


def scenarios(srv):
    """Runs every scenario on SRV; returns [(name, [raw replies])]."""
    out = []
    admin = srv.client()

    def rec(name, replies):
        out.append((name, [r.raw if hasattr(r, "raw") else r for r in replies]))

    def fresh():
        admin.call("FLUSHALL")

    fresh()
    admin.call("ZADD", "z", "1", "a", "2", "b", "3", "c")
    rec("immediate pops", [admin.call("BZPOPMIN", "nokey", "z", "0"), admin.call("BZPOPMAX", "z", "0"),
                           admin.call("BZMPOP", "0", "2", "nokey", "z", "MIN", "COUNT", "5"),
                           admin.call("EXISTS", "z")])

    fresh()
    t0 = time.monotonic()
    r = admin.call("BZPOPMIN", "nokey1", "nokey2", "0.2")
    rec("timeout", [r, b"slept" if time.monotonic() - t0 >= 0.15 else b"too fast",
                    admin.call("BZMPOP", "0.05", "1", "nokey", "MAX")])

    fresh()
    w = block(srv, admin, 1, "BZPOPMIN", "k1", "k2", "0")
    rec("served by ZADD", [admin.call("ZADD", "k2", "2", "b", "1", "a"), w.read_reply(),
                           admin.call("ZRANGE", "k2", "0", "-1", "WITHSCORES")])
    w.close()

    fresh()
    w = block(srv, admin, 1, "BZPOPMAX", "k", "0")
    rec("BZPOPMAX served", [admin.call("ZADD", "k", "2", "b", "1", "a", "3", "c"), w.read_reply(),
                            admin.call("ZCARD", "k")])
    w.close()

    fresh()
    w = block(srv, admin, 1, "BZMPOP", "0", "2", "k1", "k2", "MIN", "COUNT", "2")
    rec("BZMPOP served", [admin.call("ZADD", "k1", "1", "a", "2", "b", "3", "c"), w.read_reply(),
                          admin.call("ZRANGE", "k1", "0", "-1")])
    w.close()

    fresh()
    w = block(srv, admin, 1, "BZMPOP", "0", "1", "k", "MAX", "COUNT", "10")
    rec("BZMPOP empties the key", [admin.call("ZADD", "k", "1", "a", "2", "b"), w.read_reply(),
                                   admin.call("EXISTS", "k")])
    w.close()

    fresh()
    w1 = block(srv, admin, 1, "BZPOPMIN", "q", "0")
    w2 = block(srv, admin, 2, "BZPOPMIN", "q", "0")
    r1 = admin.call("ZADD", "q", "1", "first")
    a1 = w1.read_reply()
    still = wait_blocked(admin, 1)
    r2 = admin.call("ZADD", "q", "2", "second")
    a2 = w2.read_reply()
    rec("FIFO waiters", [r1, a1, b"one left" if still else b"none left", r2, a2, admin.call("EXISTS", "q")])
    w1.close()
    w2.close()

    fresh()
    w = block(srv, admin, 1, "BZPOPMIN", "i", "0")
    rec("served by ZINCRBY", [admin.call("ZINCRBY", "i", "5", "m"), w.read_reply()])
    w.close()

    fresh()
    admin.call("ZADD", "src", "1", "a", "2", "b")
    w = block(srv, admin, 1, "BZPOPMAX", "u", "0")
    rec("served by ZUNIONSTORE", [admin.call("ZUNIONSTORE", "u", "1", "src"), w.read_reply(),
                                  admin.call("ZRANGE", "u", "0", "-1")])
    w.close()
    w = block(srv, admin, 1, "BZMPOP", "0", "1", "r", "MIN")
    rec("served by ZRANGESTORE", [admin.call("ZRANGESTORE", "r", "src", "0", "-1"), w.read_reply()])
    w.close()

    fresh()
    w = block(srv, admin, 1, "BZPOPMIN", "k", "0", resp3=True)
    w2 = block(srv, admin, 2, "BZMPOP", "0", "1", "k", "MAX", "COUNT", "2", resp3=True)
    rec("RESP3 shapes", [admin.call("ZADD", "k", "1.5", "a", "2", "b", "3", "c"), w.read_reply(),
                         w2.read_reply()])
    w.close()
    w2.close()
    c3 = srv.client()
    c3.call("HELLO", "3")
    rec("RESP3 timeout", [c3.call("BZPOPMIN", "nokey", "0.01"), c3.call("BZMPOP", "0.01", "1", "nokey", "MIN")])
    c3.close()

    fresh()
    admin.call("SET", "str", "v")
    rec("errors", [admin.call("BZPOPMIN", "str", "0"), admin.call("BZPOPMIN", "nokey", "str", "0"),
                   admin.call("BZPOPMIN", "k", "-1"), admin.call("BZPOPMIN", "k", "x"),
                   admin.call("BZPOPMIN", "k"), admin.call("BZMPOP", "0", "0", "k", "MIN"),
                   admin.call("BZMPOP", "x", "1", "k", "MIN"), admin.call("BZMPOP", "0", "1", "k"),
                   admin.call("BZMPOP", "0", "1", "k", "MIN", "COUNT", "0"),
                   admin.call("BZMPOP", "-1", "1", "k", "MIN"), admin.call("BZMPOP", "0", "2", "k", "MIN"),
                   admin.call("BZPOPMAX", "k", "inf"), admin.call("BZMPOP", "0", "1", "str", "MAX")])

    fresh()
    m = srv.client()
    rec("MULTI does not block", [m.call("MULTI"), m.call("BZPOPMIN", "nokey", "0"),
                                 m.call("BZMPOP", "0", "1", "nokey", "MIN"), m.call("ZADD", "k", "1", "a"),
                                 m.call("BZPOPMAX", "k", "0"), m.call("EXEC")])
    m.close()

    fresh()
    w = block(srv, admin, 1, "BZPOPMIN", "gone", "0")
    w.close()
    gone = wait_blocked(admin, 0)
    rec("waiter disconnects", [b"left" if gone else b"still blocked", admin.call("ZADD", "gone", "1", "a"),
                               admin.call("ZCARD", "gone")])

    fresh()
    w = block(srv, admin, 1, "BZPOPMIN", "t", "0")
    admin.call("SET", "t", "string")
    admin.call("DEL", "t")
    rec("a string in between does not serve", [admin.call("ZADD", "t", "1", "a"), w.read_reply()])
    w.close()
    admin.close()
    return out


compare_scenarios(scenarios)
