#!/usr/bin/python3
# half_close.t — a client that sends its requests and then closes its side
# of the connection (shutdown(SHUT_WR), as `printf 'PING\r\n' | nc -N`
# does) still gets every reply before the server closes, as from
# redis-server. The EOF used to close the connection at once when it came
# in the same loop turn as the requests, dropping the replies (io_uring
# delivers both completions together). Both I/O backends; many rounds,
# since it depended on how the completions fell.

import os
import socket
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from zaris import *  # noqa: E402,F403
from zaris import HOST, SLOW  # noqa: E402

ROUNDS = 200
REQUEST = b"PING\r\n" * 3 + b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\n"


def half_close_round(port):
    s = socket.create_connection((HOST, port), timeout=10.0 * SLOW)
    try:
        s.sendall(REQUEST)
        s.shutdown(socket.SHUT_WR)
        got = b""
        while True:
            x = s.recv(4096)
            if not x:
                return got
            got += x
    finally:
        s.close()


def rounds(port):
    """Distinct answers over ROUNDS rounds, with their counts."""
    seen = {}
    for _ in range(ROUNDS):
        a = half_close_round(port)
        seen[a] = seen.get(a, 0) + 1
    return seen


backends = ["epoll"] + (["uring"] if io_uring_available() else [])
plan(1 + len(backends))
redis = start_redis()
expected = half_close_round(redis.port)
ok(expected == b"+PONG\r\n" * 3 + b"+OK\r\n$1\r\nv\r\n", "redis-server answers every request (%r)" % expected)
redis.stop()
for b in backends:
    z = start_zarisd(io_backend=b, extra=["--save", ""])
    seen = rounds(z.port)
    ok(seen == {expected: ROUNDS}, "zarisd (%s): %d rounds, every one answered as redis-server (%s)"
       % (b, ROUNDS, {k[:40]: v for k, v in seen.items()}))
    z.stop()
done_testing()
