#!/usr/bin/env bash
# go-redis's own test suite (its ginkgo specs), another third party's view of
# compatibility: runs the chosen spec files against redis-server and then against
# hotkv-server, and lists the specs that pass on Redis but fail on hotkv.
#
#   bash scripts/go-redis-suite.sh [FOCUS-FILE-REGEX]
#       default: the command, pipeline, transaction, pub/sub, client, iterator, ACL
#       and pool specs (not cluster, sentinel, ring or the modules: search, JSON,
#       time series, probabilistic)
#   GO_REDIS_VERSION (default 9.23.0), HOTKV_ENGINE=memory|lsm (default memory)
#
# The suite talks to port 6379 whatever it is told (RE_CLUSTER=true: one server, no
# cluster, sentinels or replicas of its own), so each server runs there in turn and
# the port must be free. REDIS_VERSION=7.0 skips the specs of newer Redis features,
# which redis-server 7.0 lacks. Needs Go, network access to the Go module proxy, and
# redis-server. Takes a few minutes, so CI does not run it; DEVELOPERS.md says what
# its last run found.
set -euo pipefail
cd "$(dirname "$0")/.."
version=${GO_REDIS_VERSION:-9.23.0}
work=${GO_REDIS_WORK:-/tmp/go-redis-suite}
focus=${1:-'(commands|pipeline|tx|tx_unwatch|pubsub|redis|iterator|bitmap_commands|command|pool|monitor|acl_commands|array_commands|error|digest|hotkeys_commands|script_server_sha_integration)_test.go'}
# Sets requirepass, then asks for database 1 (hotkv has database 0 only): the refused
# SELECT panics a goroutine, which ends the run with the password still set.
skip='MinIdleConns'
command -v go >/dev/null || { echo "needs Go"; exit 1; }
command -v redis-server >/dev/null || { echo "needs redis-server (apt-get install redis-server)"; exit 1; }
if redis-cli -p 6379 ping >/dev/null 2>&1; then
    echo "port 6379 is in use: the suite needs it for the server under test"
    exit 1
fi
mkdir -p "$work"
if [ ! -x "$work/suite-$version.test" ]; then
    module=$(mktemp -d)
    (cd "$module" && go mod init fetch >/dev/null 2>&1 &&
        GOFLAGS=-mod=mod go mod download -json "github.com/redis/go-redis/v9@v$version") > "$work/download.json"
    source=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["Dir"])' "$work/download.json")
    rm -rf "$work/src" "$module"
    cp -r "$source" "$work/src"
    chmod -R u+w "$work/src"
    (cd "$work/src" && go test -c -o "$work/suite-$version.test" .)
fi
cargo build --release -q -p server

run_against() {
    local name=$1
    shift
    local data
    data=$(mktemp -d)
    (cd "$data" && exec "$@" >/dev/null 2>&1) &
    local pid=$!
    for _ in $(seq 100); do redis-cli -p 6379 ping >/dev/null 2>&1 && break; sleep 0.1; done
    (cd "$work/src" && RE_CLUSTER=true REDIS_VERSION=7.0 timeout 900 "$work/suite-$version.test" \
        --ginkgo.focus-file "$focus" --ginkgo.skip "$skip" --ginkgo.no-color) > "$work/$name.out" 2>&1 || true
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    rm -rf "$data"
    # A spec's outcome line is followed by its name.
    grep -A1 -E '^• \[(FAILED|PANICKED|INTERRUPTED)\]' "$work/$name.out" | grep -vE '^• |^--$' | sort -u > "$work/$name.failed" || true
    echo "$name: $(grep -E '^Ran [0-9]+ of' "$work/$name.out" || echo 'no summary (the run ended early)');" \
        "$(grep -oE '[0-9]+ Passed \| [0-9]+ Failed' "$work/$name.out" || true)"
}

run_against redis redis-server --port 6379 --save "" --appendonly no
hotkv=$(pwd)/target/release/hotkv-server
run_against hotkv "$hotkv" --port 6379 --engine "${HOTKV_ENGINE:-memory}"
echo "pass on redis-server, fail on hotkv:"
comm -13 "$work/redis.failed" "$work/hotkv.failed" | sed 's/^/  /'
echo "(outputs: $work/redis.out, $work/hotkv.out)"
