"""Requests SKIP to SKIP + N of a seeded sequence, in the Redis protocol, for
`redis-cli --pipe`: the same requests every run, so that two builds (or two runs of
one) are given the same collection and the same writes into it. redis-benchmark's keys
are random each run, and a collection filled by them differed run to run in its nodes'
sizes, and so in a write's cost, by up to 5%.

    python3 scripts/seeded_requests.py TEST R SKIP N

TEST is one of set, get, hset, sadd, zadd, worded as redis-benchmark words them, each
number (its __rand_int__) drawn anew below R.
"""
import random
import sys

FORMS = {
    "set": "SET key:{} xxx",
    "get": "GET key:{}",
    "hset": "HSET myhash element:{} xxx",
    "sadd": "SADD myset element:{}",
    "zadd": "ZADD myzset {} element:{}",
}


def main():
    test, space, skip, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    if test not in FORMS:
        sys.exit(f"seeded requests are of TEST {', '.join(FORMS)}, not {test}")
    form, rng, out = FORMS[test], random.Random(86), sys.stdout.buffer
    for i in range(skip + n):
        words = form.format(*(f"{rng.randrange(space):012}" for _ in range(form.count("{}")))).split()
        if i >= skip:
            out.write(f"*{len(words)}\r\n".encode())
            for w in words:
                out.write(f"${len(w)}\r\n{w}\r\n".encode())


main()
