#!/usr/bin/env bash
# Writes into one large collection, hotkv-server against redis-server in alternating
# rounds: COUNT SADDs of new members to one set, COUNT HSETs of new fields to one hash,
# and, as the control, COUNT SADDs each to a new key; each sent pipelined in one write
# by one client, timed until the last reply. Prints each round and the median adds/s
# per server. What it measures is the layout of a large set or hash (field_nodes.rs),
# since the command path is the same as the control's.
#   ROUNDS=3 COUNT=200000 bash scripts/bench-large-collection.sh
# HOTKV_BASE_BIN=path/to/hotkv-server also measures that build in the same rounds.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
COUNT=${COUNT:-200000}
REDIS_PORT=${REDIS_PORT:-6401}
HOTKV_PORT=${HOTKV_PORT:-6402}
. scripts/servers.sh
start_servers "$REDIS_PORT" "$HOTKV_PORT"
# adds PORT TEST: prints the adds per second of one pipelined run of TEST.
adds() {
  python3 - "$1" "$2" "$COUNT" <<'PY'
import socket, sys, time
port, test, count = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
def bulk(b):
    return b"$%d\r\n%s\r\n" % (len(b), b)
def request(i):
    n = b"%d" % i
    if test == "SADD_one_set":
        return b"*3\r\n$4\r\nSADD\r\n" + bulk(b"bench:set") + bulk(n)
    if test == "HSET_one_hash":
        return b"*4\r\n$4\r\nHSET\r\n" + bulk(b"bench:hash") + bulk(n) + bulk(b"v" + n)
    return b"*3\r\n$4\r\nSADD\r\n" + bulk(b"bench:key:" + n) + bulk(n)
s = socket.create_connection(("127.0.0.1", port))
s.sendall(b"*1\r\n$8\r\nFLUSHALL\r\n")
assert s.recv(64) == b"+OK\r\n"
payload = b"".join(request(i) for i in range(count))
start = time.perf_counter()
s.sendall(payload)
seen, tail = 0, b""
while seen < count:
    data = s.recv(1 << 20)
    if not data:
        sys.exit("the server closed the connection")
    assert not data.startswith(b"-"), data[:200]
    seen += data.count(b"\r\n")
took = time.perf_counter() - start
print(f"{count / took:.0f}")
PY
}
out=$(mktemp)
for r in $(seq "$ROUNDS"); do
  order=$(round_order "$r")
  for s in $order; do
    name=${s%%:*}; port=${s##*:}
    for test in SADD_one_set HSET_one_hash SADD_new_keys; do
      echo "$name P$COUNT $test $r $(adds "$port" "$test")" | tee -a "$out"
    done
  done
done
print_medians "$out"
