# Sourced by the scripts that run a Go client's own tests against redis-server and
# hotkv-server (go-redis-suite.sh, rueidis-suite.sh). Those tests dial port 6379
# whatever they are told, so each server runs there in turn.
#
#   go_tests_prepare WORK        checks for Go, redis-server and a free port 6379
#   go_tests_build MODULE@VERSION BINARY
#                                fetches the module from the Go module proxy (its
#                                module carries its tests) into WORK/src and builds
#                                its test binary once
#   go_tests_run NAME SERVER...  starts SERVER... on 6379 in an empty directory, runs
#                                `run_tests` (the caller's function) in WORK/src with
#                                its output in WORK/NAME.out, then stops the server
#   go_tests_compare             calls the caller's `run_against NAME SERVER...` (which
#                                leaves the failed tests' names in WORK/NAME.failed)
#                                for redis-server, then hotkv-server (HOTKV_ENGINE,
#                                default memory), and lists what fails on hotkv only
go_tests_prepare() {
    go_tests_work=$1
    command -v go >/dev/null || { echo "needs Go"; exit 1; }
    command -v redis-server >/dev/null || { echo "needs redis-server (apt-get install redis-server)"; exit 1; }
    if redis-cli -p 6379 ping >/dev/null 2>&1; then
        echo "port 6379 is in use: the tests need it for the server under test"
        exit 1
    fi
    mkdir -p "$go_tests_work"
}

go_tests_build() {
    local module=$1 binary=$2
    [ -x "$binary" ] && return
    local fetch source
    fetch=$(mktemp -d)
    (cd "$fetch" && go mod init fetch >/dev/null 2>&1 &&
        GOFLAGS=-mod=mod go mod download -json "$module") > "$go_tests_work/download.json"
    source=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["Dir"])' "$go_tests_work/download.json")
    rm -rf "$go_tests_work/src" "$fetch"
    cp -r "$source" "$go_tests_work/src"
    chmod -R u+w "$go_tests_work/src"
    (cd "$go_tests_work/src" && go test -c -o "$binary" .)
}

go_tests_run() {
    local name=$1
    shift
    local data
    data=$(mktemp -d)
    (cd "$data" && exec "$@" >/dev/null 2>&1) &
    local pid=$!
    for _ in $(seq 100); do redis-cli -p 6379 ping >/dev/null 2>&1 && break; sleep 0.1; done
    (cd "$go_tests_work/src" && run_tests) > "$go_tests_work/$name.out" 2>&1 || true
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    rm -rf "$data"
}

go_tests_compare() {
    run_against redis redis-server --port 6379 --save "" --appendonly no
    run_against hotkv "$(pwd)/target/release/hotkv-server" --port 6379 --engine "${HOTKV_ENGINE:-memory}"
    echo "pass on redis-server, fail on hotkv:"
    comm -13 "$go_tests_work/redis.failed" "$go_tests_work/hotkv.failed" | sed 's/^/  /'
    echo "(outputs: $go_tests_work/redis.out, $go_tests_work/hotkv.out)"
}
