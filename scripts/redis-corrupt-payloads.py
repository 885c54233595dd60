#!/usr/bin/env python3
"""Feeds the corrupt DUMP payloads of Redis's own tests (integration/corrupt-dump.tcl,
from the source scripts/redis-tcl-suite.sh fetches) to a running server through
RESTORE, with DEBUG SET-SKIP-CHECKSUM-VALIDATION 1 where the server allows it, reads
back what it accepts, and fails if the connection is lost (a crash) or the server
stops answering.

    python3 scripts/redis-corrupt-payloads.py PORT [TCL_FILE]
"""
import re
import sys

import redis

DEFAULT = "/tmp/redis-tcl-suite/redis-7.0.15/tests/integration/corrupt-dump.tcl"
ESCAPES = {"n": 10, "r": 13, "t": 9}
READS = {
    b"hash": [["HGETALL", "k"]],
    b"list": [["LRANGE", "k", 0, -1]],
    b"set": [["SMEMBERS", "k"]],
    b"zset": [["ZRANGE", "k", 0, -1, "WITHSCORES"]],
    b"stream": [["XRANGE", "k", "-", "+"], ["XINFO", "STREAM", "k", "FULL"]],
    b"string": [["GET", "k"]],
}


def tcl_bytes(text):
    """A Tcl double-quoted string's bytes (\\xHH, \\n and the like, \\c for c)."""
    out, i = bytearray(), 0
    while i < len(text):
        if text[i] != "\\":
            out.append(ord(text[i]))
            i += 1
        elif text[i + 1] == "x":
            hexa = re.match(r"[0-9A-Fa-f]{1,2}", text[i + 2:]).group(0)
            out.append(int(hexa, 16))
            i += 2 + len(hexa)
        else:
            out.append(ESCAPES.get(text[i + 1], ord(text[i + 1])))
            i += 2
    return bytes(out)


def main():
    port = int(sys.argv[1])
    source = open(sys.argv[2] if len(sys.argv) > 2 else DEFAULT, encoding="latin-1").read()
    payloads = re.findall(r'(?i)restore [a-z_]+ 0 "((?:[^"\\]|\\.)*)"', source)
    r = redis.Redis(port=port)
    try:
        r.execute_command("DEBUG", "SET-SKIP-CHECKSUM-VALIDATION", 1)
    except redis.ResponseError as e:
        print(f"checksums checked ({e})")
    accepted = 0
    for i, text in enumerate(payloads):
        try:
            r.execute_command("RESTORE", "k", 0, tcl_bytes(text), "REPLACE")
        except redis.ResponseError:
            continue
        except redis.ConnectionError as e:
            sys.exit(f"payload {i}: the connection was lost ({e})")
        accepted += 1
        for read in READS.get(r.type("k"), []):
            try:
                r.execute_command(*read)
            except redis.ResponseError:
                pass
            except redis.ConnectionError as e:
                sys.exit(f"payload {i}: lost reading it back with {read[0]} ({e})")
    assert r.ping()
    print(f"{len(payloads)} payloads: {len(payloads) - accepted} refused, {accepted} accepted "
          "and read back; the server answers")


if __name__ == "__main__":
    main()
