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
. scripts/go-module-tests.sh
go_tests_prepare "$work"
go_tests_build "github.com/redis/rueidis@v$version" "$work/rueidis-$version.test"
cargo build --release -q -p server

run_tests() {
    timeout 900 "$work/rueidis-$version.test" -test.v -test.timeout 850s -test.run "$run"
}

run_against() {
    local name=$1
    shift
    go_tests_run "$name" "$@"
    grep -E '^--- FAIL' "$work/$name.out" | sed 's/ (.*//' | sort -u > "$work/$name.failed" || true
    echo "$name: $(grep -cE '^--- PASS' "$work/$name.out") tests passed, $(wc -l < "$work/$name.failed") failed"
}

go_tests_compare
