#!/usr/bin/env python3
"""Lua's memory after a client reloads a library before each call, as Redis's suite
does ("EVAL does not leak in the Lua stack", functions variant), or after as many EVALs.

    python3 scripts/lua-memory-after-reloads.py [--eval] [--rounds N] [--port P] [BINARY]

Starts a fresh `hotkv-server --engine memory` (default target/release/hotkv-server)
per round, pipelines 10,000 `FUNCTION LOAD REPLACE` + `FCALL` pairs (or `EVAL`s) from
redis-py, and prints each round's `used_memory_lua`, sorted."""
import argparse
import subprocess
import tempfile
import time

import redis

LIBRARY = ("#!lua name=test\nredis.register_function('test', function(KEYS, ARGV)\n"
           " return redis.call('incr',KEYS[1]) \nend)")


def one_round(binary, port, use_eval):
    with tempfile.TemporaryDirectory() as data:
        server = subprocess.Popen(
            [binary, "--engine", "memory", "--port", str(port), "--dir", data],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            client = redis.Redis(port=port)
            for _ in range(100):
                try:
                    client.ping()
                    break
                except redis.ConnectionError:
                    time.sleep(0.1)
            client.set("x", 0)
            pipe = client.pipeline(transaction=False)
            for _ in range(10_000):
                if use_eval:
                    pipe.eval('return redis.call("incr",KEYS[1])', 1, "x")
                else:
                    pipe.execute_command("FUNCTION", "LOAD", "REPLACE", LIBRARY)
                    pipe.execute_command("FCALL", "test", 1, "x")
            pipe.execute()
            return client.info("memory")["used_memory_lua"]
        finally:
            server.terminate()
            server.wait()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("binary", nargs="?", default="target/release/hotkv-server")
    parser.add_argument("--eval", action="store_true", help="EVALs instead of reloads")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--port", type=int, default=6471)
    args = parser.parse_args()
    print(sorted(one_round(args.binary, args.port, args.eval) for _ in range(args.rounds)))


if __name__ == "__main__":
    main()
