#!/usr/bin/python3
# script_info.t — INFO memory's scripting fields against redis-server 7.0:
# used_memory_lua / _vm_eval / _lua_human, used_memory_scripts_eval,
# number_of_cached_scripts / _functions / _libraries,
# used_memory_vm_functions / _vm_total(_human), used_memory_functions,
# used_memory_scripts(_human).
#
#  * the same fields in the same order, between total_system_memory_human
#    and maxmemory, with Redis's relations between them (lua = vm_eval,
#    vm_total = vm_eval + vm_functions, scripts = scripts_eval + functions,
#    each _human the bytesToHuman of its figure);
#  * EVAL of a script holding a 200,000-byte string: the Lua state and the
#    scripts' bytes both grow by at least that; SCRIPT FLUSH gives it back
#    (zarisd: each worker closes its stale state at its next timer tick,
#    waited for, bounded);
#  * FUNCTION LOAD / FCALL / FUNCTION FLUSH: the library and function
#    counts, used_memory_functions growing by at least the code and back to
#    its empty figure;
#  * zarisd only: each worker has its own Lua state, so the same script
#    run on a second worker is counted again (the sum over the workers).

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from zaris import *  # noqa: E402,F403

FIELDS = ["used_memory_lua", "used_memory_vm_eval", "used_memory_lua_human", "used_memory_scripts_eval",
          "number_of_cached_scripts", "number_of_functions", "number_of_libraries",
          "used_memory_vm_functions", "used_memory_vm_total", "used_memory_vm_total_human",
          "used_memory_functions", "used_memory_scripts", "used_memory_scripts_human"]
BIG = 200000
BIG_SCRIPT = "return #'" + "x" * BIG + "'"
LIB = ("#!lua name=infolib\n"
       "redis.register_function('info_f1', function() return 1 end)\n"
       "redis.register_function{function_name='info_f2', callback=function() return 2 end, "
       "description='" + "d" * 5000 + "'}\n")


def memory(c):
    """INFO memory as (names in order, {name: value})."""
    names, vals = [], {}
    for line in c.callv("INFO", "memory").decode().split("\r\n"):
        if ":" in line and not line.startswith("#"):
            k, v = line.split(":", 1)
            names.append(k)
            vals[k] = v
    return names, vals


def num(vals, k):
    return int(vals[k])


def human(n):
    """Redis's bytesToHuman."""
    for unit, div in (("P", 1 << 50), ("T", 1 << 40), ("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n >= div:
            return "%.2f%s" % (n / div, unit)
    return "%dB" % n


def relations(label, vals):
    ok(num(vals, "used_memory_lua") == num(vals, "used_memory_vm_eval"),
       "%s: used_memory_lua = used_memory_vm_eval (%s)" % (label, vals["used_memory_lua"]))
    ok(num(vals, "used_memory_vm_total") == num(vals, "used_memory_vm_eval") + num(vals, "used_memory_vm_functions"),
       "%s: vm_total = vm_eval + vm_functions" % label)
    ok(num(vals, "used_memory_scripts") == num(vals, "used_memory_scripts_eval") + num(vals, "used_memory_functions"),
       "%s: used_memory_scripts = scripts_eval + functions" % label)
    is_([vals["used_memory_lua_human"], vals["used_memory_vm_total_human"], vals["used_memory_scripts_human"]],
        [human(num(vals, "used_memory_vm_eval")), human(num(vals, "used_memory_vm_total")),
         human(num(vals, "used_memory_scripts"))], "%s: the _human fields are bytesToHuman's" % label)


def wait_for(c, cond, timeout=5.0 * SLOW):
    """INFO memory re-read until COND(vals) or TIMEOUT; the last vals."""
    end = time.monotonic() + timeout
    while True:
        _, vals = memory(c)
        if cond(vals) or time.monotonic() > end:
            return vals
        time.sleep(0.02)


def check_server(label, srv):
    c = srv.client()
    names, vals0 = memory(c)
    got = [n for n in names if n in FIELDS]
    is_(got, FIELDS, "%s: the scripting fields, in Redis 7.0's order" % label)
    ok(names.index("total_system_memory_human") < names.index(FIELDS[0])
       and names.index(FIELDS[-1]) < names.index("maxmemory"),
       "%s: between total_system_memory_human and maxmemory" % label)
    relations(label + ", empty", vals0)

    is_(c.call("EVAL", BIG_SCRIPT, 0).py(), BIG, "%s: EVAL of the big script" % label)
    _, vals1 = memory(c)
    relations(label + ", after EVAL", vals1)
    is_(num(vals1, "number_of_cached_scripts"), num(vals0, "number_of_cached_scripts") + 1,
        "%s: one more cached script" % label)
    grew = num(vals1, "used_memory_vm_eval") - num(vals0, "used_memory_vm_eval")
    ok(grew >= BIG, "%s: the Lua state grew by %d >= %d" % (label, grew, BIG))
    grew = num(vals1, "used_memory_scripts_eval") - num(vals0, "used_memory_scripts_eval")
    ok(grew >= BIG, "%s: the scripts' bytes grew by %d >= %d" % (label, grew, BIG))

    is_(c.callv("SCRIPT", "FLUSH"), "OK", "%s: SCRIPT FLUSH" % label)
    vals2 = wait_for(c, lambda v: num(v, "used_memory_vm_eval") <= num(vals1, "used_memory_vm_eval") - BIG)
    is_([num(vals2, "number_of_cached_scripts"), num(vals2, "used_memory_scripts_eval")], [0, 0],
        "%s: no script cached, no bytes" % label)
    ok(num(vals2, "used_memory_vm_eval") <= num(vals1, "used_memory_vm_eval") - BIG,
       "%s: the Lua state's memory given back (%s -> %s)"
       % (label, vals1["used_memory_vm_eval"], vals2["used_memory_vm_eval"]))

    is_(c.call("FUNCTION", "LOAD", LIB).py(), b"infolib", "%s: FUNCTION LOAD" % label)
    is_([c.call("FCALL", "info_f1", 0).py(), c.call("FCALL", "info_f2", 0).py()], [1, 2], "%s: FCALL" % label)
    _, vals3 = memory(c)
    relations(label + ", a library loaded", vals3)
    is_([num(vals3, "number_of_libraries"), num(vals3, "number_of_functions")], [1, 2],
        "%s: one library, two functions" % label)
    grew = num(vals3, "used_memory_functions") - num(vals0, "used_memory_functions")
    ok(grew >= len(LIB), "%s: used_memory_functions grew by %d >= the code's %d" % (label, grew, len(LIB)))
    ok(num(vals3, "used_memory_vm_functions") > 0, "%s: the FUNCTION engine's state counted (%s)"
       % (label, vals3["used_memory_vm_functions"]))
    is_(c.callv("FUNCTION", "FLUSH"), "OK", "%s: FUNCTION FLUSH" % label)
    _, vals4 = memory(c)
    is_([num(vals4, "number_of_libraries"), num(vals4, "number_of_functions"), num(vals4, "used_memory_functions")],
        [0, 0, num(vals0, "used_memory_functions")], "%s: no library left, used_memory_functions as empty" % label)
    relations(label + ", flushed", vals4)
    c.close()


def check_per_worker(srv):
    ctrl = srv.client()
    a, wa = connect_on_worker(srv, ctrl)
    b = wb = None
    for _ in range(32 if wa is not None else 0):
        cand, wb = connect_on_worker(srv, ctrl)
        if wb is not None and wb != wa:
            b = cand
            break
    ok(b is not None, "zarisd: two connections on different workers (%s, %s)" % (wa, wb))
    if b is None:
        return
    _, v0 = memory(ctrl)
    a.call("EVAL", BIG_SCRIPT, 0)
    _, v1 = memory(ctrl)
    b.call("EVAL", BIG_SCRIPT, 0)
    _, v2 = memory(ctrl)
    first = num(v1, "used_memory_vm_eval") - num(v0, "used_memory_vm_eval")
    second = num(v2, "used_memory_vm_eval") - num(v1, "used_memory_vm_eval")
    ok(first >= BIG and second >= BIG,
       "zarisd: each worker's state counted: +%d on the first, +%d on the second" % (first, second))
    is_(num(v2, "number_of_cached_scripts"), 1, "zarisd: one script in the shared cache")
    ctrl.callv("SCRIPT", "FLUSH")
    v3 = wait_for(ctrl, lambda v: num(v, "used_memory_vm_eval") <= num(v2, "used_memory_vm_eval") - 2 * BIG)
    ok(num(v3, "used_memory_vm_eval") <= num(v2, "used_memory_vm_eval") - 2 * BIG,
       "zarisd: SCRIPT FLUSH gives back both workers' states (%s -> %s)"
       % (v2["used_memory_vm_eval"], v3["used_memory_vm_eval"]))
    for c in (a, b, ctrl):
        c.close()


redis = start_redis()
zarisd = start_zarisd(threads=2)
require_eval(zarisd)
check_server("redis-server", redis)
check_server("zarisd", zarisd)
check_per_worker(zarisd)
redis.stop()
zarisd.stop()
done_testing()
