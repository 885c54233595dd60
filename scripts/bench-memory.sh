#!/usr/bin/env bash
# used_memory (INFO memory) of hotkv-server and redis-server after loading the same
# KEYS keys ("key:%012d", redis-benchmark's names) with VALUE_SIZE-byte values through
# redis-cli --pipe, and with READS=N again after N GETs of random keys among them
# (redis-benchmark -r KEYS -P 16: a read load can change an index's shape too).
#   KEYS=1000000 VALUE_SIZE=100 [READS=4000000] bash scripts/bench-memory.sh
set -euo pipefail
cd "$(dirname "$0")/.."
KEYS=${KEYS:-1000000}
VALUE_SIZE=${VALUE_SIZE:-100}
. scripts/servers.sh
start_servers 6411 6412
data=$(mktemp)
python3 - "$KEYS" "$VALUE_SIZE" > "$data" <<'PY'
import sys
n, size = int(sys.argv[1]), int(sys.argv[2])
value = b"v" * size
out = sys.stdout.buffer
for i in range(n):
    key = b"key:%012d" % i
    out.write(b"*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(key), key, size, value))
PY
for s in redis:6411 hotkv:6412; do
  name=${s%%:*}; port=${s##*:}
  before=$(redis-cli -p "$port" info memory | tr -d '\r' | awk -F: '/^used_memory:/ {print $2}')
  redis-cli -p "$port" --pipe < "$data" >/dev/null
  sleep 0.5
  keys=$(redis-cli -p "$port" dbsize)
  used=$(redis-cli -p "$port" info memory | tr -d '\r' | awk -F: '/^used_memory:/ {print $2}')
  line="$name keys=$keys used_memory=$used (empty: $before) bytes/key=$(( (used - before) / keys ))"
  if [ -n "${READS:-}" ]; then
    redis-benchmark -p "$port" -n "$READS" -r "$KEYS" -P 16 -c 50 -q get 'key:__rand_int__' >/dev/null
    read_used=$(redis-cli -p "$port" info memory | tr -d '\r' | awk -F: '/^used_memory:/ {print $2}')
    line+=" after $READS reads: used_memory=$read_used"
  fi
  echo "$line"
done
rm -f "$data"
