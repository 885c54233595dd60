#!/usr/bin/env bash
# rueidis's own tests (a Go client built on RESP3 and client-side caching), another
# third party's view of compatibility: runs its test binary against redis-server and
# then against hotkv-server on port 6379, and lists the tests that pass on Redis but
# fail on hotkv.
#
#   bash scripts/rueidis-suite.sh [GO-TEST-RUN-REGEX]    (default: every test)
#   RUEIDIS_VERSION (default 1.0.80), HOTKV_ENGINE=memory|lsm (default memory)
#
# Most of its tests talk to a mock connection; those that need a server dial
# 127.0.0.1:6379 (the single-client integration: client-side caching, MULTI, blocking
# pops, XREAD, pub/sub, sharded pub/sub, Lua), so each server runs there in turn and the
# port must be free. The sentinel, cluster, Redis 5, KeyDB, Dragonfly and Kvrocks tests
# need servers of their own on other ports and fail on both. Needs Go, network access
# to the Go module proxy, and redis-server. Takes about 4 minutes per server, so CI
# does not run it; DEVELOPERS.md says what its last run found.
set -euo pipefail
cd "$(dirname "$0")/.."
version=${RUEIDIS_VERSION:-1.0.80}
work=${RUEIDIS_WORK:-/tmp/rueidis-suite}
run=${1:-.}
command -v go >/dev/null || { echo "needs Go"; exit 1; }
command -v redis-server >/dev/null || { echo "needs redis-server (apt-get install redis-server)"; exit 1; }
if redis-cli -p 6379 ping >/dev/null 2>&1; then
    echo "port 6379 is in use: the tests need it for the server under test"
    exit 1
fi
mkdir -p "$work"
if [ ! -x "$work/rueidis-$version.test" ]; then
    module=$(mktemp -d)
    (cd "$module" && go mod init fetch >/dev/null 2>&1 &&
        GOFLAGS=-mod=mod go mod download -json "github.com/redis/rueidis@v$version") > "$work/download.json"
    source=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["Dir"])' "$work/download.json")
    rm -rf "$work/src" "$module"
    cp -r "$source" "$work/src"
    chmod -R u+w "$work/src"
    (cd "$work/src" && go test -c -o "$work/rueidis-$version.test" .)
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
    (cd "$work/src" && timeout 900 "$work/rueidis-$version.test" -test.v -test.timeout 850s \
        -test.run "$run") > "$work/$name.out" 2>&1 || true
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    rm -rf "$data"
    grep -E '^--- FAIL' "$work/$name.out" | sed 's/ (.*//' | sort -u > "$work/$name.failed" || true
    echo "$name: $(grep -cE '^--- PASS' "$work/$name.out") tests passed, $(wc -l < "$work/$name.failed") failed"
}

run_against redis redis-server --port 6379 --save "" --appendonly no
hotkv=$(pwd)/target/release/hotkv-server
run_against hotkv "$hotkv" --port 6379 --engine "${HOTKV_ENGINE:-memory}"
echo "pass on redis-server, fail on hotkv:"
comm -13 "$work/redis.failed" "$work/hotkv.failed" | sed 's/^/  /'
echo "(outputs: $work/redis.out, $work/hotkv.out)"
