#!/usr/bin/env bash
# Redis's own test suite (Tcl, from the Redis 7.0.15 source) run against hotkv-server,
# as Redis runs it against an external server: `--host --port --singledb`, leaving
# out the tests tagged as needing DEBUG, replication or PFDEBUG, which hotkv does not
# have. Each test file gets a fresh hotkv-server (some files change settings and a
# failure midway leaves them changed). Prints per file the tests that passed, those
# that failed, and the error that stopped the file, if one did (the suite stops a file
# at the first command it does not know).
#
#   bash scripts/redis-tcl-suite.sh [UNIT ...]      e.g. unit/type/zset unit/scripting
#       default: the units listed below
#
# REDIS_TCL_UNSKIP=1 also runs the tests Redis tags `external:skip` (they need a server
# of their own, mostly for settings they change), in a copy of the source with the tag
# taken out of the units named: a failure there may be the test's, so compare with
# redis-server run the same way before calling it hotkv's.
#
# REDIS_TCL_DEBUG=1 also runs the tests tagged `needs:debug`, with the server started
# with `--enable-debug-command yes` (hotkv has DEBUG's common subcommands, not those
# that look inside Redis's own structures: a test using one of those stops its file).
#
# HOTKV_ENGINE=lsm runs the durable engine (default: memory); REDIS_TCL_TIMEOUT bounds
# each file (seconds, default 900: a test waiting for a reply hotkv never sends hangs). Needs tclsh (installed
# if missing) and network access to deb.debian.org for the source. Takes about ten
# minutes, so CI does not run it; DEVELOPERS.md says what its last run found.
set -euo pipefail
version=7.0.15
work=${REDIS_TCL_WORK:-/tmp/redis-tcl-suite}
port=${REDIS_TCL_PORT:-6390}
units=("$@")
[ ${#units[@]} -gt 0 ] || units=(unit/type/string unit/type/incr unit/keyspace unit/type/hash
    unit/type/set unit/type/zset unit/type/list unit/type/list-2 unit/type/list-3 unit/expire
    unit/sort unit/hyperloglog unit/multi unit/pubsub unit/scan unit/info-command unit/protocol
    unit/bitops unit/dump unit/quit unit/scripting unit/functions unit/introspection unit/tracking
    unit/latency-monitor unit/slowlog unit/geo unit/type/stream unit/type/stream-cgroups
    unit/pause unit/introspection-2 unit/other)

command -v tclsh >/dev/null || { apt-get update -qq && apt-get install -y -qq tcl >/dev/null; }
mkdir -p "$work"
src="$work/redis-$version"
if [ ! -d "$src" ]; then
    curl -fsSL "http://deb.debian.org/debian/pool/main/r/redis/redis_$version.orig.tar.gz" |
        tar -xz -C "$work"
fi
if [ -n "${REDIS_TCL_UNSKIP:-}" ]; then
    unskipped="$work/unskipped/redis-$version"
    if [ ! -d "$unskipped" ]; then
        mkdir -p "$work/unskipped"
        cp -r "$src" "$unskipped"
    fi
    for unit in "${units[@]}"; do
        sed -i 's/ external:skip//; s/external:skip //; s/"external:skip"/""/' "$unskipped/tests/$unit.tcl"
    done
    src=$unskipped
fi
cargo build --release -q -p server
bin=$PWD/target/release/hotkv-server
tags="-needs:debug -needs:repl -needs:pfdebug"
debug=()
if [ -n "${REDIS_TCL_DEBUG:-}" ]; then
    tags="-needs:repl -needs:pfdebug"
    debug=(--enable-debug-command yes)
fi
server=
trap '[ -n "$server" ] && kill "$server" 2>/dev/null || true' EXIT
cd "$src"
for unit in "${units[@]}"; do
    data=$(mktemp -d)
    "$bin" --engine "${HOTKV_ENGINE:-memory}" --dir "$data" --port "$port" "${debug[@]}" 2>/dev/null &
    server=$!
    for _ in $(seq 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
    log="$work/$(echo "$unit" | tr / _).log"
    timeout "${REDIS_TCL_TIMEOUT:-900}" ./runtest --host 127.0.0.1 --port "$port" --singledb --single "$unit" \
        --tags "$tags" --clients 1 >"$log" 2>&1 || true
    ok=$(grep -ac '\[.\[0;32;49mok' "$log" || true)
    err=$(grep -ac '^\[.\[0;31;49merr' "$log" || true)
    stop=$(grep -a -m1 'exception' "$log" | sed 's/.*test client: //' | cut -c1-120 || true)
    printf '%-22s passed %4s  failed %3s  %s\n' "$unit" "$ok" "$err" "${stop:+stopped: $stop}"
    # As Redis, hotkv lets a busy script end before it exits on SIGTERM; a failed
    # test can leave one that never ends.
    kill "$server" 2>/dev/null || true
    for _ in $(seq 100); do kill -0 "$server" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$server" 2>/dev/null || true
    wait "$server" 2>/dev/null || true
    server=
    rm -rf "$data"
done
