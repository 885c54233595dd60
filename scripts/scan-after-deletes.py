# What 100,000 deleted keys still cost a server: deleted by FLUSHDB, then by DEL.
# Usage: python3 scripts/scan-after-deletes.py PORT (flushes the server).
import redis, sys, time, statistics
r = redis.Redis(port=int(sys.argv[1]))
ms = lambda v: round(v * 1000, 2)


def timed(f):
    a = time.perf_counter()
    f()
    return time.perf_counter() - a


def fill():
    p = r.pipeline(transaction=False)
    for i in range(100000):
        p.set(f'k{i}', 'v')
    p.execute()


def full_scan():
    cursor, calls = 0, 0
    while True:
        cursor, _ = r.scan(cursor)
        calls += 1
        if cursor == 0:
            return calls


r.flushall()
fill()
big = timed(r.flushdb)
flush, scan = [], []
for i in range(7):
    r.set('x', 'y')
    scan.append(timed(lambda: r.scan(0)))
    flush.append(timed(r.flushdb))
print(f"flushdb of 100k: {ms(big)} ms; then, one key: first SCAN 0 {ms(scan[0])} ms, SCAN 0 median {ms(statistics.median(scan))} ms, FLUSHDB median {ms(statistics.median(flush))} ms")

fill()
p = r.pipeline(transaction=False)
for i in range(100000):
    p.delete(f'k{i}')
p.execute()
r.set('x', 'y')
first = timed(lambda: r.scan(0))
calls = []
first_full = timed(lambda: calls.append(full_scan()))
time.sleep(1)
scan = [timed(lambda: r.scan(0)) for _ in range(7)]
full = timed(lambda: calls.append(full_scan()))
rk = statistics.median(timed(r.randomkey) for _ in range(7))
keys = statistics.median(timed(lambda: r.keys('*')) for _ in range(7))
print(f"DEL of 100k, one key left: first SCAN 0 {ms(first)} ms, first full scan {calls[0]} calls {ms(first_full)} ms; "
      f"a second later: SCAN 0 median {ms(statistics.median(scan))} ms, full scan {calls[1]} calls {ms(full)} ms, "
      f"RANDOMKEY {ms(rk)} ms, KEYS * {ms(keys)} ms")
