//! Runs the real `hotkv-bench` binary on a small load and checks its report.

use std::process::Command;

fn bench() -> Command {
    Command::new(env!("CARGO_BIN_EXE_hotkv-bench"))
}

/// Runs `hotkv-bench` with `args` plus `--json FILE` and returns the parsed report
/// rows and the printed table.
fn run_json(name: &str, args: &[&str]) -> (Vec<serde_json::Value>, String) {
    let dir = std::env::temp_dir().join(format!("hotkv-bench-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let json = dir.join("out.json");
    let out = bench()
        .args(args)
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    (
        v.as_array().unwrap().clone(),
        String::from_utf8(out.stdout).unwrap(),
    )
}

#[test]
fn index_writes_the_documented_json() {
    let (rows, table) = run_json(
        "cli",
        &[
            "index",
            "--impl",
            "hotring-s,hotring-r,chain,dashmap,papaya",
            "--workload",
            "b",
            "--dist",
            "zipf:1.22",
            "--keys",
            "20000",
            "--ratio",
            "8",
            "--threads",
            "2",
            "--seconds",
            "0.2",
            "--rounds",
            "2",
        ],
    );
    assert!(
        table.contains("hotring-s") && table.contains("papaya"),
        "{table}"
    );
    assert_eq!(rows.len(), 5);
    for row in &rows {
        for field in [
            "impl",
            "ops_per_sec",
            "items_per_read",
            "head_hit_rate",
            "bytes_per_key",
            "ratio_vs_chain",
        ] {
            assert!(row.get(field).is_some(), "missing {field} in {row}");
        }
        assert!(row["ops_per_sec"].as_f64().unwrap() > 0.0);
        assert_eq!(row["rounds_ops_per_sec"].as_array().unwrap().len(), 2);
        assert!(row["bytes_per_key"].as_f64().unwrap() > 8.0, "{row}");
    }
    let chain = rows.iter().find(|r| r["impl"] == "chain").unwrap();
    assert_eq!(chain["ratio_vs_chain"].as_f64(), Some(1.0));
    let ring = rows.iter().find(|r| r["impl"] == "hotring-s").unwrap();
    // Zipf 1.22 at 8 keys per ring: the head finds most reads in one step.
    assert!(ring["items_per_read"].as_f64().unwrap() < chain["items_per_read"].as_f64().unwrap());
}

#[test]
fn shift_at_reports_a_timeline_and_a_reaction_delay() {
    let (rows, _) = run_json(
        "shift",
        &[
            "index",
            "--impl",
            "hotring-s,chain",
            "--workload",
            "c",
            "--dist",
            "zipf:1.22",
            "--keys",
            "20000",
            "--seconds",
            "1",
            "--rounds",
            "1",
            "--shift-at",
            "0.5",
        ],
    );
    for row in &rows {
        let timeline = row["timeline_ops_per_sec"].as_array().unwrap();
        assert!(
            (9..=11).contains(&timeline.len()),
            "{} samples",
            timeline.len()
        );
        assert!(row.get("reaction_delay_ms").is_some());
    }
}

#[test]
fn bad_arguments_get_a_clear_error() {
    for (args, expect) in [
        (
            vec!["index", "--impl", "btree"],
            "unknown implementation 'btree'",
        ),
        (vec!["index", "--dist", "zipf:-2"], "theta"),
        (vec!["index", "--workload", "e"], "scans"),
        (vec!["index", "--workload", "q"], "unknown workload 'q'"),
        (
            vec!["index", "--seconds", "1", "--shift-at", "3"],
            "--shift-at",
        ),
    ] {
        let out = bench().args(&args).output().unwrap();
        assert!(!out.status.success(), "{args:?} succeeded");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(expect), "{args:?}: {err}");
    }
}
