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
. scripts/go-module-tests.sh
go_tests_prepare "$work"
go_tests_build "github.com/redis/go-redis/v9@v$version" "$work/suite-$version.test"
cargo build --release -q -p server

run_tests() {
    RE_CLUSTER=true REDIS_VERSION=7.0 timeout 900 "$work/suite-$version.test" \
        --ginkgo.focus-file "$focus" --ginkgo.skip "$skip" --ginkgo.no-color
}

run_against() {
    local name=$1
    shift
    go_tests_run "$name" "$@"
    # A spec's outcome line is followed by its name.
    grep -A1 -E '^• \[(FAILED|PANICKED|INTERRUPTED)\]' "$work/$name.out" | grep -vE '^• |^--$' | sort -u > "$work/$name.failed" || true
    echo "$name: $(grep -E '^Ran [0-9]+ of' "$work/$name.out" || echo 'no summary (the run ended early)');" \
        "$(grep -oE '[0-9]+ Passed \| [0-9]+ Failed' "$work/$name.out" || true)"
}

go_tests_compare
