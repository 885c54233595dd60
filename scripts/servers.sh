# Sourced by the server benchmarks: start_servers REDIS_PORT HOTKV_PORT starts
# redis-server (no persistence) and a release hotkv-server, stops both on exit, and
# returns once both answer PING.
start_servers() {
    command -v redis-server >/dev/null || { echo "needs redis-server (apt-get install redis-server)"; exit 1; }
    cargo build --release -q -p server -p bench
    redis-server --port "$1" --save "" --appendonly no >/dev/null &
    local redis=$!
    ./target/release/hotkv-server --port "$2" 2>/dev/null &
    local hotkv=$!
    # shellcheck disable=SC2064 # expand the pids now
    trap "kill $redis $hotkv 2>/dev/null || true" EXIT
    for p in "$1" "$2"; do
        for _ in $(seq 100); do redis-cli -p "$p" ping >/dev/null 2>&1 && break; sleep 0.1; done
    done
}
