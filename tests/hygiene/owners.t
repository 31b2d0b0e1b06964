#!/usr/bin/python3
# owners.t — "one owner" rules of zarisd (DESIGN.md §9, STYLE.md "In our
# own code"), held by a test as layers.t holds the layering:
#   one write bracket: the thread's open bracket (store_write_cur) is set
#     in store/write.c only, and store_write_begin is called only by the
#     writers listed below (a new writer is added here on purpose, with
#     the place its bracket is opened);
#   no thread-local side channels: every per-thread variable of zarisd is
#     listed below with why it is per-thread and not part of a context
#     (a scratch buffer, a generator's state, a cache); a new one fails
#     until it is listed, and the write state the bracket replaced (write
#     intent, the command's clock, the dirty count, the said count, the
#     transaction) may not come back as one.

import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from zaris import REPO, plan, ok, diag, done_testing, zarisd_sources  # noqa: E402

# file -> why its thread-locals are per-thread (each file's count must match)
THREAD_LOCALS = {
    "zarisd/store/write.c": (1, "the open write bracket itself, set by begin/end only"),
    "zarisd/store/store_int.h": (2, "declarations of write.c's bracket and store.c's all-locked mark"),
    "zarisd/store/store.c": (3, "lock state (all shards held), the wait hook, a random generator"),
    "zarisd/store/evict.c": (1, "the eviction pool, a per-thread cache of candidates"),
    "zarisd/store/zset_sl.c": (1, "a random generator (skiplist levels)"),
    "zarisd/persist/persist.c": (2, "a per-thread change-count slot (per-thread stats, summed)"),
    "zarisd/script/script.c": (2, "each worker's own Lua states"),
    "zarisd/core/util.c": (2, "the thread's wall-clock anchor"),
    "zarisd/core/mem.c": (1, "the thread's allocation-count slot"),
    "zarisd/core/thread.c": (2, "the thread's identity (kernel id, worker index) for the owner checks"),
    "zarisd/core/lock.c": (1, "the count of zr_locks the thread holds (owner checks)"),
    "zarisd/core/lock.h": (1, "the declaration of lock.c's count"),
    "zarisd/commands/cmd_script.c": (1, "each worker's script client"),
    "zarisd/commands/pubsub.c": (1, "the publisher served inline (pub/sub's own bracket)"),
    "zarisd/commands/dispatch.c": (2, "the key-hash memo (a cache) and the wait-serving guard"),
    "zarisd/commands/cmd_zset.c": (1, "a random generator"),
    "zarisd/commands/cmd_set.c": (1, "a random generator"),
    "zarisd/commands/cmd_hash.c": (1, "a random generator"),
    "zarisd/commands/propagate.c": (2, "record scratch buffers, reused from record to record"),
    "zarisd/commands/blocking.c": (2, "the keys signalled by this thread's command, served after it"),
}
# names of the write state the bracket holds: never a thread-local again
FORBIDDEN = re.compile(r"write_intent|cmd_now|dirty|changes_said|tl_txn|in_exec|tl_marked")
# store_write_begin's callers: the writers of store/write.h
WRITERS = {
    "zarisd/store/write.c",          # the definition
    "zarisd/store/write.h",          # the declaration
    "zarisd/commands/propagate.c",   # every command: dispatcher, EXEC, scripts, replay
    "zarisd/commands/replay_apply.c",  # a replayed record, a snapshot entry rebuilt
    "zarisd/commands/blocking.c",    # a blocked client's serve
    "zarisd/store/expire.c",         # the active expiry cycle
    "zarisd/store/evict.c",          # eviction
    "zarisd/persist/load.c",         # a snapshot's load threads
    "zarisd/repl/replica.c",         # a full sync's flush
    "zarisd/store/store.c",          # store_destroy (the teardown)
}

TL = re.compile(r"\b(_Thread_local|__thread)\b")



def lines(path):
    with open(os.path.join(REPO, path), encoding="utf-8", errors="replace") as f:
        for n, line in enumerate(f, 1):
            code = line.split("//")[0]
            if code.lstrip().startswith(("/*", "*")):
                continue
            yield n, code


plan(4)
found, bad_names, setters, callers = {}, [], [], set()
for path in zarisd_sources():
    for n, code in lines(path):
        if TL.search(code):
            found[path] = found.get(path, 0) + 1
            if FORBIDDEN.search(code):
                bad_names.append("%s:%d: %s" % (path, n, code.strip()))
        if re.search(r"\bstore_write_cur\s*=[^=]", code) and path != "zarisd/store/write.c":
            setters.append("%s:%d" % (path, n))
        if re.search(r"\bstore_write_begin\s*\(", code):
            callers.add(path)

unlisted = ["%s: %d thread-local(s), listed %d" % (p, found.get(p, 0), THREAD_LOCALS.get(p, (0, ""))[0])
            for p in sorted(set(found) | set(THREAD_LOCALS)) if found.get(p, 0) != THREAD_LOCALS.get(p, (0, ""))[0]]
ok(not unlisted, "every thread-local of zarisd is listed with its reason") or \
    [diag(u) for u in unlisted]
ok(not bad_names, "no write state kept in a thread-local outside the bracket") or \
    [diag(b) for b in bad_names]
ok(not setters, "the open bracket is set by store/write.c only") or [diag(s) for s in setters]
extra = sorted(callers - WRITERS)
ok(not extra, "store_write_begin is called by the listed writers only") or \
    [diag("%s opens a bracket: add it to WRITERS with its reason" % e) for e in extra]
sys.exit(done_testing())
