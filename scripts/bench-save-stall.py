#!/usr/bin/env python3
"""How long clients wait while a server saves: for each server, N keys are loaded
(redis-benchmark -t set -r N, VALUE_SIZE bytes), then one client sends GETs back to
back while another asks for BGSAVE and waits for INFO's rdb_bgsave_in_progress to
fall to 0. Prints, per server and round, how long BGSAVE took to answer, how long the
save ran, and the slowest GET and the GETs' 99.9th percentile while it ran.

    python3 scripts/bench-save-stall.py PORT [PORT ...]
        KEYS (default 1000000), VALUE_SIZE (100), ROUNDS (3): servers are measured in
        turn, round after round. The servers must be running, with persistence off
        otherwise (redis-server --save "" --appendonly no), and hold nothing you need:
        each is flushed and loaded.
"""
import os
import subprocess
import sys
import threading
import time

import redis


def load(port, keys, value_size):
    r = redis.Redis(port=port)
    r.flushall()
    subprocess.run(
        ["redis-benchmark", "-p", str(port), "-t", "set", "-r", str(keys),
         "-n", str(keys * 2), "-P", "16", "-d", str(value_size), "-q"],
        check=True, stdout=subprocess.DEVNULL)
    return r.dbsize()


def measure(port):
    r = redis.Redis(port=port)
    probe = redis.Redis(port=port)
    latencies = []
    stop = threading.Event()

    def gets():
        while not stop.is_set():
            start = time.perf_counter()
            probe.get("key:000000000042")
            latencies.append(time.perf_counter() - start)

    thread = threading.Thread(target=gets)
    thread.start()
    time.sleep(0.5)
    first = len(latencies)
    start = time.perf_counter()
    r.bgsave()
    answered = time.perf_counter() - start
    while r.info("persistence")["rdb_bgsave_in_progress"]:
        time.sleep(0.01)
    ran = time.perf_counter() - start
    stop.set()
    thread.join()
    during = sorted(latencies[first:])
    p999 = during[min(len(during) - 1, int(len(during) * 0.999))]
    return answered, ran, during[-1], p999


def main():
    ports = [int(p) for p in sys.argv[1:]]
    keys = int(os.environ.get("KEYS", 1000000))
    value_size = int(os.environ.get("VALUE_SIZE", 100))
    rounds = int(os.environ.get("ROUNDS", 3))
    for port in ports:
        print(f"port {port}: {load(port, keys, value_size)} keys loaded")
    for n in range(rounds):
        for port in ports:
            answered, ran, slowest, p999 = measure(port)
            print(f"round {n} port {port}: BGSAVE answered in {answered * 1000:.1f} ms, "
                  f"saved in {ran:.2f} s; GETs meanwhile: slowest {slowest * 1000:.1f} ms, "
                  f"p99.9 {p999 * 1000:.2f} ms")


if __name__ == "__main__":
    main()
