#!/usr/bin/python3
# redis_config_names.t — every setting name of redis-server 7.0.15 is one of
# zarisd's: CONFIG GET * lists them (zarisd may add its own: threads, cores,
# io-backend, shard-bits), with redis-server's defaults, and CONFIG SET /
# GET of them answer as redis-server does — values Redis takes and shows
# back in its format, its error texts, "can't set immutable config" for
# start-up-only ones (before any value is looked at), aliases (slaveof,
# lua-time-limit, slave-*, *-ziplist-*) sharing their setting's value, and
# hidden settings (watchdog-period ...) shown for their exact name only.
#
# Both servers as start_redis()/start_zarisd() start them. Defaults that
# differ on purpose (EXCLUDED, with why) are left out of the comparison.
#
# Most of these settings mean nothing to zarisd yet (replication, cluster
# bus, TLS, scripting, streams, defrag, lazy free): zarisd takes them as
# Redis does, shows them back and does not act on them. Those for a feature
# it lacks take only their default, with Redis's own error where Redis
# cannot do it either (tls-port, tls-replication, activedefrag). On the
# command line a start-up-only one takes only its default (zarisd must not
# start believing it runs daemonized or in cluster mode). They are not keys
# of the cluster file: zarisctl check-config and zarisd refuse one alike.

import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from zaris import *  # noqa: E402,F403

EXCLUDED = {
    "port": "a free port each",
    "dir": "each server's own temp dir",
    "save": "start_redis passes --save ''; zarisd snapshots by Redis's default rules",
    "dbfilename": "zarisd's snapshot format is its own (dump.zdb)",
    "protected-mode": "start_redis passes --protected-mode no",
    "client-output-buffer-limit": "zarisd limits normal clients by default (an appliance)",
}
ZARISD_OWN = ["threads", "cores", "io-backend", "shard-bits", "replica-ack", "replica-ack-timeout",
              "write-lease", "allow-undeclared-keys", "meta-max-labels",
              "meta-max-label-length", "native-port", "native-rf1"]  # not Redis's: left out of GET *
HIDDEN = ["watchdog-period", "use-exit-on-panic", "rdb-key-save-delay", "key-load-delay",
          "loading-process-events-interval-bytes"]

# (command ...): each run on both, raw replies compared; a SET is followed
# by a GET of the name (and of its alias, where it has one)
SETS = [
    ("list-compress-depth", "5"), ("list-compress-depth", "-1"), ("list-compress-depth", "x"),
    ("lua-time-limit", "100"), ("busy-reply-threshold", "200"), ("LUA-TIME-LIMIT", "7"),
    ("busy-reply-threshold", "5000"),
    ("slave-priority", "50"), ("replica-priority", "100"), ("slave-read-only", "NO"),
    ("replica-read-only", "yes"), ("slave-read-only", "maybe"),
    ("hash-max-ziplist-entries", "100"), ("hash-max-listpack-entries", "512"),
    ("maxmemory-clients", "10%"), ("maxmemory-clients", "101%"), ("maxmemory-clients", "-5"),
    ("maxmemory-clients", "18446744073709551615"), ("maxmemory-clients", "1mb"),
    ("maxmemory-clients", "0"),
    ("oom-score-adj", "maybe"), ("oom-score-adj", "no"),
    ("oom-score-adj-values", "1 2"), ("oom-score-adj-values", "0 x 800"),
    ("oom-score-adj-values", "0 200 800"),
    ("shutdown-on-sigint", "save now"), ("shutdown-on-sigint", "now force"),
    ("shutdown-on-sigint", "save nosave"), ("shutdown-on-sigint", "bogus"),
    ("shutdown-on-sigint", ""), ("shutdown-on-sigint", "save  now"), ("shutdown-on-sigint", "default"),
    ("latency-tracking-info-percentiles", "1.50 0x10 99.999"),
    ("latency-tracking-info-percentiles", "101"), ("latency-tracking-info-percentiles", "abc"),
    ("latency-tracking-info-percentiles", ""), ("latency-tracking-info-percentiles", "50 99 99.9"),
    ("proc-title-template", "{title}"), ("proc-title-template", "{nosuch} x"),
    ("proc-title-template", "x {port} {{"), ("proc-title-template", "{title} {listen-addr} {server-mode}"),
    ("cluster-announce-hostname", "a_b"), ("cluster-announce-hostname", "host-1.example"),
    ("cluster-announce-hostname", ""),
    ("tls-port", "0"), ("tls-port", "1"), ("tls-port", "70000"), ("tls-replication", "yes"),
    ("tls-cluster", "no"), ("tls-auth-clients", "optional"), ("tls-auth-clients", "yes"),
    ("tls-ciphers", "DEFAULT"), ("tls-ciphers", ""),
    ("activedefrag", "yes"), ("activedefrag", "no"),
    ("cluster-link-sendbuf-limit", "18446744073709551615"), ("cluster-link-sendbuf-limit", "-1"),
    ("cluster-link-sendbuf-limit", "0"),
    ("repl-backlog-size", "0"), ("repl-backlog-size", "100"), ("repl-backlog-size", "1mb"),
    ("repl-backlog-size", "1048576"),
    ("stream-node-max-bytes", "1kb"), ("stream-node-max-bytes", "4096"),
    ("tracking-table-max-keys", "-1"), ("active-defrag-ignore-bytes", "0"),
    ("repl-diskless-load", "SWAPDB"), ("repl-diskless-load", "disabled"),
    ("acl-pubsub-default", "allchannels"), ("acl-pubsub-default", "resetchannels"),
    ("sanitize-dump-payload", "clients"), ("sanitize-dump-payload", "no"),
    ("cluster-preferred-endpoint-type", "x"), ("propagation-error-behavior", "panic-on-replicas"),
    ("propagation-error-behavior", "ignore"),
    ("min-slaves-to-write", "0"), ("min-replicas-max-lag", "2147483648"),
    ("repl-timeout", "0"), ("maxmemory-eviction-tenacity", "101"), ("stop-writes-on-bgsave-error", "no"),
    ("stop-writes-on-bgsave-error", "yes"), ("masterauth", "secret"), ("masterauth", ""),
    ("watchdog-period", "x"), ("use-exit-on-panic", "no"),
    # start-up only: refused whatever the value
    ("daemonize", "yes"), ("daemonize", "no"), ("databases", "1"), ("cluster-enabled", "yes"),
    ("io-threads", "2"), ("unixsocketperm", "700"), ("slaveof", "no one"), ("replicaof", "x 1"),
    ("supervised", "systemd"), ("aclfile", "x"), ("syslog-facility", "local1"),
    ("enable-protected-configs", "yes"), ("socket-mark-id", "1"), ("set-proc-title", "no"),
]
MULTI_SETS = [
    ("maxmemory-samples", "7", "daemonize", "yes"),
    ("daemonize", "yes", "nosuch", "1"),
    ("maxmemory-samples", "x", "cluster-enabled", "no"),
    ("lua-time-limit", "1", "busy-reply-threshold", "2"),
    ("list-compress-depth", "3", "list-compress-depth", "4"),
    ("list-compress-depth", "0", "maxmemory-samples", "5"),
]
GETS = [("lua-time-limit",), ("slaveof", "replicaof"), ("*lua*",), ("slave-*",), ("*ziplist*",),
        ("Busy-Reply-Threshold",), ("tls-*",), ("nosuch",), ("*",)] + [(h,) for h in HIDDEN]


def config_map(c, *patterns):
    flat = c.call("CONFIG", "GET", *patterns).py()
    return dict(zip(flat[0::2], flat[1::2]))


def sweep(srv):
    """Raw replies of SETS / MULTI_SETS (each SET then GET) and GETS (sorted)."""
    c = srv.client()
    out = []
    for name, value in SETS:
        out.append(("CONFIG SET %s %r" % (name, value), c.call("CONFIG", "SET", name, value).raw,
                    c.call("CONFIG", "GET", name).raw))
    for args in MULTI_SETS:
        out.append(("CONFIG SET " + " ".join(args), c.call("CONFIG", "SET", *args).raw,
                    sorted(config_map(c, *args[0::2]).items())))
    for pats in GETS:
        got = config_map(c, *pats)
        for name in list(EXCLUDED) + ZARISD_OWN:
            got.pop(name.encode(), None)
        out.append(("CONFIG GET " + " ".join(pats), sorted(got.items()), None))
    c.close()
    return out


redis = start_redis()
zaris = start_zarisd(threads=2)
rc, zc = redis.client(), zaris.client()
want, got = config_map(rc, "*"), config_map(zc, "*")
missing = sorted(n.decode() for n in set(want) - set(got))
is_(missing, [], "every one of redis-server's %d CONFIG GET * names is zarisd's" % len(want))
differ = sorted((n.decode(), want[n], got.get(n)) for n in want
                if n.decode() not in EXCLUDED and n in got and want[n] != got[n])
for d in differ[:10]:
    diag("default of %s: redis %r zarisd %r" % d)
is_(len(differ), 0, "the defaults are redis-server's (but %s)" % ", ".join(sorted(EXCLUDED)))
ok(not any(h.encode() in got for h in HIDDEN), "hidden settings are not listed by CONFIG GET *")
rc.close()
zc.close()

w, g = sweep(redis), sweep(zaris)
bad = [(a, b) for a, b in zip(w, g) if a != b]
for a, b in bad[:8]:
    if isinstance(a[1], list):  # a GET: only the pairs that differ
        a, b = (a[0], sorted(set(a[1]) - set(b[1])), None), (b[0], sorted(set(b[1]) - set(a[1])), None)
    diag("%s\n#   redis-server: %r %r\n#   zarisd:       %r %r" % (a[0], a[1], a[2], b[1], b[2]))
is_(len(bad), 0, "%d CONFIG SET / GET of Redis's names (aliases, hidden, immutable, multi-pair) "
    "answer as redis-server's" % len(w))

# the command line: a start-up-only Redis setting takes only its default
for flags, want_up in ((["--daemonize", "yes"], False), (["--rdbchecksum", "no"], False),
                       (["--daemonize", "no", "--list-compress-depth", "3"], True)):
    if want_up:
        s = start_zarisd(extra=flags)
        c = s.client()
        is_(config_map(c, "list-compress-depth"), {b"list-compress-depth": b"3"},
            "zarisd %s: taken, CONFIG GET shows it" % " ".join(flags))
        c.close()
        s.stop()
    else:
        p = subprocess.run([zarisd_path(), "--port", str(free_port()), "--bind", "127.0.0.1"] + flags,
                           capture_output=True, text=True, timeout=30)
        ok(p.returncode == 2 and "only" in p.stderr,
           "zarisd %s: refused at start-up (exit %s: %s)" % (" ".join(flags), p.returncode,
                                                             p.stderr.strip()[:120]))

# the cluster file knows none of them: zarisctl check-config and zarisd agree
zarisctl = os.path.join(build_dir(), "zarisctl")
if os.access(zarisctl, os.X_OK):
    tmp = tempfile.mkdtemp(prefix="zaris-redisnames-")
    path = os.path.join(tmp, "zaris.conf")
    with open(path, "w") as f:
        f.write('cluster = { name = "t"; threads = 1; list-compress-depth = 3; };\n'
                'nodes = ( { name = "n1"; address = "127.0.0.1"; port = %d; } );\n' % free_port())
    a = subprocess.run([zarisctl, "check-config", path], capture_output=True, text=True, timeout=30)
    b = subprocess.run([zarisd_path(), "--config", path, "--dir", tmp], capture_output=True, text=True,
                       timeout=30)
    ok(a.returncode == 1 and b.returncode == 1 and "list-compress-depth" in a.stdout + a.stderr
       and "list-compress-depth" in b.stdout + b.stderr,
       "a Redis-only name in the cluster file: zarisctl check-config (exit %d) and zarisd (exit %d) "
       "both refuse it" % (a.returncode, b.returncode))
else:
    ok(True, "# SKIP zarisctl is not built")
sys.exit(done_testing())
