#!/usr/bin/python3
# harness.t — the test helpers themselves (tests/lib/zaris.py): the RESP
# reply parser on every RESP2/RESP3 type, the redis-cli-style line splitter
# that reads case files, and the command encoder.  No server is started.

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from zaris import *  # noqa: E402,F403
from zaris import split_args  # noqa: E402

P = [
    (b"+OK\r\n", "+", "OK"),
    (b"-ERR bad\r\n", "-", "ERR bad"),
    (b":-42\r\n", ":", -42),
    (b"$5\r\nhe\r\no\r\n", "$", b"he\r\no"),
    (b"$0\r\n\r\n", "$", b""),
    (b"$-1\r\n", "$", None),
    (b"*-1\r\n", "*", None),
    (b"_\r\n", "_", None),
    (b"#t\r\n", "#", True),
    (b"#f\r\n", "#", False),
    (b",3.14\r\n", ",", "3.14"),
    (b",inf\r\n", ",", "inf"),
    (b"(123456789012345678901234567890\r\n", "(", "123456789012345678901234567890"),
    (b"!9\r\nERR oops!\r\n", "!", "ERR oops!"),
    (b"=8\r\ntxt:abcd\r\n", "=", "txt:abcd"),
    (b"$?\r\n;2\r\nab\r\n;1\r\nc\r\n;0\r\n", "$", b"abc"),
]

plan(len(P) + 14)
for raw, kind, val in P:
    r, rest = parse_reply(raw + b"+next\r\n")
    ok(r is not None and r.kind == kind and r.value == val and r.raw == raw and rest == b"+next\r\n",
       "parse %r" % raw)

r, _ = parse_reply(b"*3\r\n:1\r\n*1\r\n$1\r\na\r\n_\r\n")
is_(r.py(), [1, [b"a"], None], "nested array")
r, _ = parse_reply(b"%2\r\n+a\r\n:1\r\n+b\r\n~2\r\n:1\r\n:2\r\n")
is_(r.py(), {"a": 1, "b": [1, 2]}, "map holding a set")
r, _ = parse_reply(b"|1\r\n+ttl\r\n:3\r\n$1\r\nv\r\n")
ok(r.kind == "$" and r.value == b"v" and r.attrs[0][0].value == "ttl" and r.raw.startswith(b"|1"),
   "attribute before a reply is kept on it")
r, _ = parse_reply(b">3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$2\r\nhi\r\n")
is_(r.kind, ">", "push type")
r, rest = parse_reply(b"*2\r\n$3\r\nfoo\r\n$3\r\nba")
ok(r is None and rest == b"*2\r\n$3\r\nfoo\r\n$3\r\nba", "an incomplete reply is not parsed")
try:
    parse_reply(b"?x\r\n")
    ok(False, "unknown type byte raises")
except ProtocolError:
    ok(True, "unknown type byte raises")

is_(encode_command("SET", b"k\r\n", 12), b"*3\r\n$3\r\nSET\r\n$3\r\nk\r\n\r\n$2\r\n12\r\n", "encode a command")
is_(split_args('SET  a   b'), [b"SET", b"a", b"b"], "split on blanks")
is_(split_args('SET "a b\\x41\\n\\"" \'c\\\'d\''), [b"SET", b'a bA\n"', b"c'd"], "quotes and escapes")
is_(split_args('ECHO "\\xff\\x00" é'), [b"ECHO", b"\xff\x00", "é".encode()], "\\x bytes and UTF-8 text")
is_(split_args('ECHO ""'), [b"ECHO", b""], "empty quoted argument")
for bad in ('SET "a', "SET 'a", 'SET "a"b'):
    try:
        split_args(bad)
        ok(False, "rejects %s" % bad)
    except ValueError:
        ok(True, "rejects %s" % bad)
done_testing()
