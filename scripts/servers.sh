# Sourced by the server benchmarks: start_servers REDIS_PORT HOTKV_PORT starts
# redis-server and a release hotkv-server, stops both on exit, and returns once both
# answer PING. By default both keep data in memory only (redis-server with no
# persistence, hotkv-server --engine memory). HOTKV_ENGINE=lsm compares the durable
# setups instead: hotkv's LSM engine against redis-server's append-only file, both
# syncing once a second, both in a temporary directory. HOTKV_BIN runs another
# hotkv-server binary (a build of an earlier commit, for an A/B). With HOTKV_BASE_BIN,
# that binary also runs on BASE_PORT (default 6403), set up as hotkv-server is (a build
# of an earlier commit measured in the same rounds: round_order names it "base").
BASE_PORT=${HOTKV_BASE_BIN:+${BASE_PORT:-6403}}
start_servers() {
    command -v redis-server >/dev/null || { echo "needs redis-server (apt-get install redis-server)"; exit 1; }
    cargo build --release -q -p server -p bench
    local data
    data=$(mktemp -d)
    mkdir -p "$data/redis"
    local redis_args=(--save "" --appendonly no)
    local hotkv_args=(--engine memory)
    if [ "${HOTKV_ENGINE:-memory}" = lsm ]; then
        redis_args=(--save "" --appendonly yes --appendfsync everysec --dir "$data/redis")
        hotkv_args=(--engine lsm --fsync everysec --dir "$data/hotkv")
    fi
    redis-server --port "$1" "${redis_args[@]}" >/dev/null &
    local redis=$!
    "${HOTKV_BIN:-./target/release/hotkv-server}" --port "$2" "${hotkv_args[@]}" 2>/dev/null &
    local hotkv=$!
    local base=
    if [ -n "$BASE_PORT" ]; then
        hotkv_args=("${hotkv_args[@]/$data\/hotkv/$data/base}")
        "$HOTKV_BASE_BIN" --port "$BASE_PORT" "${hotkv_args[@]}" 2>/dev/null &
        base=$!
    fi
    # shellcheck disable=SC2064 # expand the pids and the directory now
    trap "kill $redis $hotkv $base 2>/dev/null || true; sleep 1; rm -rf '$data'" EXIT
    for p in "$1" "$2" $BASE_PORT; do
        for _ in $(seq 100); do redis-cli -p "$p" ping >/dev/null 2>&1 && break; sleep 0.1; done
    done
}

# round_order ROUND: the servers of round ROUND in the order they run, as name:port
# words (redis, hotkv, and base if BASE_PORT is set), the first alternating from
# round to round so that neither always runs on a machine the other warmed.
round_order() {
    if (( $1 % 2 )); then
        echo "redis:$REDIS_PORT hotkv:$HOTKV_PORT${BASE_PORT:+ base:$BASE_PORT}"
    else
        echo "${BASE_PORT:+base:$BASE_PORT }hotkv:$HOTKV_PORT redis:$REDIS_PORT"
    fi
}

# print_medians FILE: FILE holds lines "server P<pipeline> test round requests/s", as
# the benchmark scripts write them; prints the median per server and test, and the
# ratio of hotkv's to redis's.
print_medians() {
    echo "median requests/s (server test pipeline: median, hotkv/redis):"
    python3 - "$1" <<'PY'
import sys, statistics, collections
runs = collections.defaultdict(list)
for line in open(sys.argv[1]):
    name, p, test, _round, rps = line.split()
    runs[(p, test, name)].append(float(rps))
for (p, test) in sorted({(p, t) for p, t, _ in runs}):
    h = statistics.median(runs[(p, test, "hotkv")]); r = statistics.median(runs[(p, test, "redis")])
    line = f"{test} -P {p[1:]}: hotkv {h:,.0f}  redis {r:,.0f}  ratio {h / r:.2f}x"
    if runs[(p, test, "base")]:
        b = statistics.median(runs[(p, test, "base")])
        line += f"  base {b:,.0f}  hotkv/base {h / b:.2f}x"
    print(line)
PY
}
