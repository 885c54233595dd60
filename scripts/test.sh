#!/usr/bin/env bash
# The whole test suite: formatting, lints, unit/property/stress/crash tests in release
# and debug builds (debug keeps overflow checks and debug assertions), the shuttle
# exploration of the index's pointer protocols, the EXEC gate and gathered writes'
# stripe locks, Miri over the index's and the memtable cursor's unsafe code, the
# server driven by its integration tests, redis-py and redis-cli on both engines
# (memory, lsm), and the protocol parsers under libFuzzer.
#
# Longer runs: PROPTEST_CASES (default 128), HOTRING_STRESS_ROUNDS (20000),
# SHUTTLE_ITERATIONS (2000), HOTRING_SEED (stress seed), LSM_CRASH_CYCLES (kill and
# reopen cycles of the LSM engine, default 50), SERVER_CRASH_CYCLES (kill -9 cycles of
# hotkv-server on the LSM engine, default 3), FUZZ_RUNS (inputs per fuzz target,
# default 300000; libFuzzer through cargo fuzz, which needs nightly Rust).
set -euo pipefail
cd "$(dirname "$0")/.."

# What a fresh machine lacks for the client tests: redis-cli (Debian's redis-tools),
# redis-server (the reference the differential test compares replies with), redis-py
# and pytest.
if ! command -v redis-cli >/dev/null || ! command -v redis-server >/dev/null; then
    apt-get update -qq
    apt-get install -y -qq redis-tools redis-server
fi
python3 -c "import redis, pytest" 2>/dev/null || python3 -m pip install -q redis pytest
# The fuzz targets' tools: a nightly toolchain (for sanitizers) and cargo-fuzz.
rustup toolchain list | grep -q '^nightly' || rustup toolchain install nightly --profile minimal
command -v cargo-fuzz >/dev/null || cargo install -q cargo-fuzz --locked

log=$(mktemp)
trap 'rm -f "$log"' EXIT
run() {
    echo "+ $*"
    "$@" 2>&1 | tee -a "$log"
}

run cargo fmt --all --check
run cargo clippy --workspace --all-targets --release -- -D warnings
run cargo clippy -p hotring --all-targets --release --features shuttle -- -D warnings
run cargo clippy -p engine --all-targets --release --features shuttle -- -D warnings
run cargo clippy -p server --all-targets --release --features shuttle -- -D warnings
run cargo test --workspace --release
# The server's tests again on the lsm engine (the run above uses the memory engine).
HOTKV_TEST_ENGINE=lsm run cargo test -p server --release --tests
run cargo test -p hotring -p workload -p engine -p lsm
run cargo test -p hotring --release --features shuttle --test shuttle
# The head hint's catch-up and the second entries after racing head moves and
# removals (directory.rs).
run cargo test -p hotring --release --features shuttle --lib directory::model
# The EXEC gate's model (the engine crate's unit tests, built on shuttle's primitives).
run cargo test -p engine --release --features shuttle --lib gate::model
# Gathered writes' stripe protocol (the server's, with its stripe locks on shuttle's),
# and the lsm engine's access clock taking over slots.
run cargo test -p server --release --features shuttle --bin hotkv-server -- engine_store::model access_clock::model
# The clients people use, against the real server: redis-py and redis-cli.
run cargo build --release --bin hotkv-server
run python3 -m pytest -q tests/clients
HOTKV_TEST_ENGINE=lsm run python3 -m pytest -q tests/clients
# The unsafe code under Miri. The index's item layout, tagged pointers and
# reclamation: Stacked Borrows is off because crossbeam's epoch collector breaks its
# rules itself (crossbeam issues #545 and #878); Miri still catches use-after-free,
# out-of-bounds and misaligned access. The leaks it would report are the epoch
# collector's per-thread garbage at exit, and the integer-to-pointer casts it would
# warn of are crossbeam-epoch's (hotring's own tagged pointers use the
# strict-provenance APIs). The LSM memtable (its arena, skiplist and index) and its
# cursor's borrow of it: every check on, Stacked Borrows and leaks included.
installed=$(rustup component list --toolchain nightly --installed)
grep -q '^miri' <<<"$installed" && grep -q '^rust-src' <<<"$installed" ||
    rustup component add miri rust-src --toolchain nightly
MIRIFLAGS="-Zmiri-disable-stacked-borrows -Zmiri-ignore-leaks -Zmiri-permissive-provenance" \
    run cargo +nightly miri test -p hotring --test miri
MIRIFLAGS="" run cargo +nightly miri test -p lsm --lib -- arena::tests iterator::tests memtable::tests
# The protocol parsers under libFuzzer, from the seed corpus in fuzz/corpus (copied,
# so the inputs libFuzzer adds stay out of the checkout).
FUZZ_RUNS=${FUZZ_RUNS:-300000}
for target in request frame; do
    work=$(mktemp -d)
    cp fuzz/corpus/"$target"/* "$work"/
    (cd fuzz && run cargo +nightly fuzz run "$target" "$work" -- -runs="$FUZZ_RUNS" -max_len=4096)
    rm -rf "$work"
    echo "1 passed (fuzz target $target, $FUZZ_RUNS inputs)" | tee -a "$log"
done

# cargo's "test result: ok. N passed; M failed; ..." and pytest's "N passed, M failed in ..."
counts=$(awk '/^test result:/ || /^[0-9]+ (passed|failed)/ { for (i = 1; i <= NF; i++) { if ($(i+1) ~ /^passed/) p += $i; if ($(i+1) ~ /^failed/) f += $i } } END { print p + 0, f + 0 }' "$log")
read -r passed failed <<<"$counts"
echo "total: $passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
