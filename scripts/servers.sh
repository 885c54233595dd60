# Sourced by the server benchmarks: start_servers REDIS_PORT HOTKV_PORT starts
# redis-server and a release hotkv-server, stops both on exit, and returns once both
# answer PING. By default both keep data in memory only (redis-server with no
# persistence, hotkv-server --engine memory). HOTKV_ENGINE=lsm compares the durable
# setups instead: hotkv's LSM engine against redis-server's append-only file, both
# syncing once a second, both in a temporary directory. HOTKV_BIN runs another
# hotkv-server binary (a build of an earlier commit, for an A/B).
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
    # shellcheck disable=SC2064 # expand the pids and the directory now
    trap "kill $redis $hotkv 2>/dev/null || true; sleep 1; rm -rf '$data'" EXIT
    for p in "$1" "$2"; do
        for _ in $(seq 100); do redis-cli -p "$p" ping >/dev/null 2>&1 && break; sleep 0.1; done
    done
}
