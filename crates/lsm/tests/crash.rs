//! Drives the crash harness (`src/bin/lsm-crash.rs`). `LSM_CRASH_CYCLES` sets how
//! many kill-and-reopen cycles to run (default 50); the binary runs thousands with
//! `--cycles`.

use std::process::Command;

fn run(args: &[&str]) {
    let output = Command::new(env!("CARGO_BIN_EXE_lsm-crash"))
        .args(args)
        .output()
        .expect("run lsm-crash");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        output.status.success(),
        "lsm-crash {args:?} failed:\n{text}"
    );
    println!("{text}");
}

#[test]
fn acknowledged_writes_survive_sigkill() {
    let cycles = std::env::var("LSM_CRASH_CYCLES").unwrap_or_else(|_| "50".into());
    run(&["--cycles", &cycles]);
}

#[test]
fn a_full_disk_fails_writes_and_keeps_reads() {
    run(&["full-disk"]);
}
