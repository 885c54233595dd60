#!/usr/bin/env bash
# Streams, hotkv-server against redis-server in alternating rounds; prints each round
# and the median requests/s per server and command:
# - XADD to a stream kept near 1,000 entries by MAXLEN ~ (from empty each round);
# - XADD to a stream that grows to REQUESTS / 2 entries (from empty each round);
# - XRANGE and XREVRANGE of 10 entries at the ends of that stream;
# - XREADGROUP COUNT 1 from a new group on that stream, each call leaving one more
#   entry pending (to REQUESTS / 2).
#   ROUNDS=3 REQUESTS=40000 bash scripts/bench-streams.sh
# TESTS picks commands by their first two words, e.g. TESTS="XADD_log XREADGROUP_GROUP"
# for the growing stream and its pending list alone (with REQUESTS=400000, 200,000
# entries pending at the end).
# HOTKV_ENGINE=lsm compares the durable setups (see scripts/servers.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
REQUESTS=${REQUESTS:-40000}
REDIS_PORT=${REDIS_PORT:-6401}
HOTKV_PORT=${HOTKV_PORT:-6402}
# Each: whether the keys are flushed first (or the group made anew), the requests,
# the command.
commands=(
  "flush|$REQUESTS|XADD capped MAXLEN ~ 1000 * f v"
  "flush|$((REQUESTS / 2))|XADD log * f v"
  "keep|$REQUESTS|XRANGE log - + COUNT 10"
  "keep|$REQUESTS|XREVRANGE log + - COUNT 10"
  "group|$((REQUESTS / 2))|XREADGROUP GROUP g c COUNT 1 STREAMS log >"
)
. scripts/servers.sh
start_servers "$REDIS_PORT" "$HOTKV_PORT"
out=$(mktemp)
set -f # the commands' * and ~ are redis-benchmark's, not the shell's
for r in $(seq "$ROUNDS"); do
  order=$(round_order "$r")
  for spec in "${commands[@]}"; do
    IFS='|' read -r mode n command <<<"$spec"
    picked=$(echo "$command" | cut -d' ' -f1-2 | tr ' ' _)
    if [ -n "${TESTS:-}" ] && [[ " $TESTS " != *" $picked "* ]]; then continue; fi
    test=$(echo "$command" | cut -d' ' -f1-3 | tr ' ' _)
    for s in $order; do
      name=${s%%:*}; port=${s##*:}
      if [ "$mode" = flush ]; then redis-cli -p "$port" flushall >/dev/null; fi
      if [ "$mode" = group ]; then
        redis-cli -p "$port" xgroup destroy log g >/dev/null
        redis-cli -p "$port" xgroup create log g 0 >/dev/null
      fi
      # shellcheck disable=SC2086 # the command's words are redis-benchmark's arguments
      redis-benchmark -p "$port" -c 50 -n "$n" -q $command 2>/dev/null | tr '\r' '\n' |
        awk -v n="$name" -v t="$test" -v r="$r" '/requests per second/ {for (i = 1; i <= NF; i++) if ($i == "requests") print n, "P1", t, r, $(i - 1)}' | tee -a "$out"
    done
  done
done
print_medians "$out"
