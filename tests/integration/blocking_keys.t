#!/usr/bin/python3
# blocking_keys.t — clients blocked on a key are served when a list or a
# sorted set arrives there through a key command rather than a push:
# RENAME, RENAMENX, COPY (same db and DB n), MOVE, SWAPDB (Redis signals
# these through dbAdd's signalKeyAsReady and SWAPDB's
# scanDatabaseForReadyKeys; zarisd through blocking_signal_key /
# blocking_signal_db).
#
# Each scenario runs the same steps on redis-server and on zarisd (2 worker
# threads, so waiter and writer may sit on different workers) and compares
# the raw replies byte for byte: the writer's reply, what the waiter
# receives, and what is left. Negative cases: a value of the wrong type
# (a string, a list under BZPOPMIN) arriving does not serve, and the waiter
# is then served by a later push. A writer starts only once the server
# reports the waiter in INFO's blocked_clients (bounded polling).

import os
import re
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from zaris import *  # noqa: E402,F403



def block(srv, admin, expect_blocked, *cmd, db=0):
    """A new client (in DB) that sends CMD and is known to be blocked."""
    return start_blocked(srv, admin, expect_blocked, *cmd, setup=[("SELECT", str(db))] if db else [])


def served(w):
    """The waiter's reply, or a marker when none comes within 5 s (so a
    server that never wakes the waiter fails the step instead of the
    script)."""
    w.settimeout(5.0)
    try:
        return w.read_reply()
    except (TimeoutError, OSError):
        return b"<no reply within 5 s>"


def scenarios(srv):
    """Runs every scenario on SRV; returns [(name, [raw replies])]."""
    out = []
    admin = srv.client()

    def rec(name, replies):
        out.append((name, [r.raw if hasattr(r, "raw") else r for r in replies]))

    def fresh():
        admin.call("SELECT", "0")
        admin.call("FLUSHALL")

    # --- lists under BLPOP / BLMPOP ---
    fresh()
    admin.call("RPUSH", "a", "x", "y")
    w = block(srv, admin, 1, "BLPOP", "b", "0")
    rec("RENAME list onto a BLPOP key", [admin.call("RENAME", "a", "b"), served(w),
                                          admin.call("LRANGE", "b", "0", "-1"), admin.call("EXISTS", "a")])
    w.close()

    fresh()
    admin.call("RPUSH", "a", "only")
    w = block(srv, admin, 1, "BRPOP", "b", "0")
    rec("RENAMENX list empties on serve", [admin.call("RENAMENX", "a", "b"), served(w),
                                           admin.call("EXISTS", "b")])
    w.close()

    fresh()
    admin.call("RPUSH", "a", "1", "2", "3")
    w = block(srv, admin, 1, "BLMPOP", "0", "2", "nokey", "b", "RIGHT", "COUNT", "2")
    rec("COPY list", [admin.call("COPY", "a", "b"), served(w), admin.call("LRANGE", "a", "0", "-1"),
                      admin.call("LRANGE", "b", "0", "-1")])
    w.close()

    fresh()
    admin.call("RPUSH", "a", "1", "2")
    admin.call("SET", "b", "old")
    w = block(srv, admin, 1, "BLPOP", "b", "0", db=1)
    admin.call("SELECT", "1")
    admin.call("DEL", "b")
    admin.call("SELECT", "0")
    rec("COPY list DB 1 REPLACE", [admin.call("COPY", "a", "b", "DB", "1", "REPLACE"), served(w),
                                    admin.call("SELECT", "1"), admin.call("LRANGE", "b", "0", "-1")])
    w.close()

    fresh()
    admin.call("RPUSH", "m", "x", "y")
    w = block(srv, admin, 1, "BLPOP", "m", "0", db=2)
    rec("MOVE list to a waiter's db", [admin.call("MOVE", "m", "2"), served(w),
                                       admin.call("SELECT", "2"), admin.call("LRANGE", "m", "0", "-1")])
    w.close()

    fresh()
    admin.call("SELECT", "1")
    admin.call("RPUSH", "s", "from1")
    admin.call("SELECT", "0")
    admin.call("RPUSH", "t", "from0")
    w0 = block(srv, admin, 1, "BLPOP", "s", "0")
    w1 = block(srv, admin, 2, "BLPOP", "t", "0", db=1)
    rec("SWAPDB serves both dbs", [admin.call("SWAPDB", "0", "1"), served(w0), served(w1),
                                   admin.call("DBSIZE")])
    w0.close()
    w1.close()

    fresh()
    admin.call("RPUSH", "a", "x")
    w = block(srv, admin, 1, "BLPOP", "b", "0")
    m = srv.client()
    rec("RENAME inside MULTI serves after EXEC", [m.call("MULTI"), m.call("RENAME", "a", "b"),
                                                  m.call("LLEN", "b"), m.call("EXEC"), served(w),
                                                  admin.call("EXISTS", "b")])
    m.close()
    w.close()

    fresh()
    admin.call("SELECT", "3")
    admin.call("RPUSH", "k", "v")
    admin.call("SELECT", "0")
    w = block(srv, admin, 1, "BLPOP", "k", "0")
    m = srv.client()
    rec("SWAPDB inside MULTI", [m.call("MULTI"), m.call("SWAPDB", "3", "0"), m.call("EXEC"), served(w)])
    m.close()
    w.close()

    # --- sorted sets under BZPOPMIN / BZMPOP ---
    fresh()
    admin.call("ZADD", "za", "1", "a", "2", "b")
    w = block(srv, admin, 1, "BZPOPMIN", "zb", "0")
    rec("RENAME zset onto a BZPOPMIN key", [admin.call("RENAME", "za", "zb"), served(w),
                                             admin.call("ZRANGE", "zb", "0", "-1", "WITHSCORES")])
    w.close()

    fresh()
    admin.call("ZADD", "za", "1", "a", "2", "b", "3", "c")
    w = block(srv, admin, 1, "BZMPOP", "0", "1", "zb", "MAX", "COUNT", "2")
    rec("COPY zset", [admin.call("COPY", "za", "zb"), served(w), admin.call("ZCARD", "za"),
                      admin.call("ZRANGE", "zb", "0", "-1")])
    w.close()

    fresh()
    admin.call("ZADD", "z", "5", "m")
    w = block(srv, admin, 1, "BZPOPMAX", "z", "0", db=4)
    rec("MOVE zset", [admin.call("MOVE", "z", "4"), served(w), admin.call("SELECT", "4"),
                      admin.call("EXISTS", "z")])
    w.close()

    fresh()
    admin.call("SELECT", "5")
    admin.call("ZADD", "z", "1", "one", "2", "two")
    admin.call("SELECT", "0")
    w = block(srv, admin, 1, "BZPOPMIN", "z", "0")
    rec("SWAPDB zset", [admin.call("SWAPDB", "5", "0"), served(w),
                        admin.call("ZRANGE", "z", "0", "-1")])
    w.close()

    # --- the wrong type arriving does not serve ---
    fresh()
    admin.call("SET", "a", "string")
    admin.call("HSET", "h", "f", "v")
    w = block(srv, admin, 1, "BLPOP", "b", "0")
    r1 = admin.call("RENAME", "a", "b")
    r2 = admin.call("COPY", "h", "c")
    admin.call("DEL", "b")
    r3 = admin.call("RENAME", "c", "b")
    still = wait_blocked(admin, 1)
    admin.call("DEL", "b")
    rec("a string or hash does not serve BLPOP", [r1, r2, r3, b"blocked" if still else b"served",
                                                   admin.call("RPUSH", "b", "late"), served(w)])
    w.close()

    fresh()
    admin.call("RPUSH", "l", "x")
    w = block(srv, admin, 1, "BZPOPMIN", "z", "0")
    r1 = admin.call("RENAME", "l", "z")
    still = wait_blocked(admin, 1)
    admin.call("DEL", "z")
    rec("a list does not serve BZPOPMIN", [r1, b"blocked" if still else b"served",
                                            admin.call("ZADD", "z", "1", "late"), served(w)])
    w.close()

    fresh()
    admin.call("RPUSH", "a", "x")
    w = block(srv, admin, 1, "BLPOP", "a", "0", db=1)
    r1 = admin.call("RENAME", "a", "b")
    still = wait_blocked(admin, 1)
    rec("same key name in another db does not serve", [r1, b"blocked" if still else b"served"])
    w.close()
    wait_blocked(admin, 0)

    admin.close()
    return out


compare_scenarios(scenarios)
