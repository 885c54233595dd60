# FLUSHDB and SCAN on a server that has just deleted 100,000 keys: what the deleted
# keys still cost. Usage: python3 scripts/scan-after-deletes.py PORT (flushes the server).
import redis, sys, time, statistics
r = redis.Redis(port=int(sys.argv[1]))
r.flushall()
p = r.pipeline(transaction=False)
for i in range(100000):
    p.set(f'k{i}', 'v')
p.execute()
a = time.perf_counter(); r.flushdb(); big = time.perf_counter() - a
flush, scan = [], []
for i in range(7):
    r.set('x', 'y')
    a = time.perf_counter(); r.scan(0); scan.append(time.perf_counter() - a)
    a = time.perf_counter(); r.flushdb(); flush.append(time.perf_counter() - a)
ms = lambda v: round(v * 1000, 2)
print(f"flushdb of 100k: {ms(big)} ms; then, one key: first SCAN 0 {ms(scan[0])} ms, SCAN 0 median {ms(statistics.median(scan))} ms, FLUSHDB median {ms(statistics.median(flush))} ms")
