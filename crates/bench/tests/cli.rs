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
        assert_eq!(
            row["batch"].as_u64(),
            Some(1),
            "one pin per operation by default"
        );
    }
    let chain = rows.iter().find(|r| r["impl"] == "chain").unwrap();
    assert_eq!(chain["ratio_vs_chain"].as_f64(), Some(1.0));
    let ring = rows.iter().find(|r| r["impl"] == "hotring-s").unwrap();
    // Zipf 1.22 at 8 keys per ring: the head finds most reads in one step.
    assert!(ring["items_per_read"].as_f64().unwrap() < chain["items_per_read"].as_f64().unwrap());
}

/// Batches with writes and read-modify-writes (two places in a batch) reach every map.
#[test]
fn index_serves_batches_of_operations() {
    let (rows, _) = run_json(
        "batch",
        &[
            "index",
            "--impl",
            "hotring-s,chain,dashmap,papaya",
            "--workload",
            "f",
            "--value-size",
            "100",
            "--keys",
            "20000",
            "--seconds",
            "0.2",
            "--rounds",
            "1",
            "--batch",
            "32",
        ],
    );
    assert_eq!(rows.len(), 4);
    for row in &rows {
        assert_eq!(row["batch"].as_u64(), Some(32), "{row}");
        assert!(row["ops_per_sec"].as_f64().unwrap() > 0.0, "{row}");
    }
}

/// `--ops` runs every round for the same operations, whatever the time they take.
#[test]
fn index_with_ops_runs_that_many_operations_a_thread() {
    let (rows, _) = run_json(
        "ops",
        &[
            "index",
            "--impl",
            "hotring-s,chain",
            "--workload",
            "a",
            "--keys",
            "20000",
            "--threads",
            "2",
            "--ops",
            "30000",
            "--rounds",
            "3",
        ],
    );
    assert_eq!(rows.len(), 2);
    for row in &rows {
        assert_eq!(row["ops"].as_u64(), Some(30_000), "{row}");
        let rounds: Vec<u64> = row["rounds_operations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n.as_u64().unwrap())
            .collect();
        assert_eq!(rounds, [60_000; 3], "{row}");
    }
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
        (vec!["index", "--batch", "0"], "--batch"),
    ] {
        let out = bench().args(&args).output().unwrap();
        assert!(!out.status.success(), "{args:?} succeeded");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(expect), "{args:?}: {err}");
    }
}

/// A stand-in Redis for `hotkv-bench resp`: answers SET with +OK and GET with the
/// value last set (or nil), on every connection, counting the commands it served.
fn fake_redis() -> (String, std::sync::Arc<std::sync::atomic::AtomicU64>) {
    use std::collections::HashMap;
    use std::io::{Read, Write};
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::{Arc, Mutex};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let served = Arc::new(AtomicU64::new(0));
    let store = Arc::new(Mutex::new(HashMap::<Vec<u8>, Vec<u8>>::new()));
    let counter = served.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let (mut stream, store, served) = (stream.unwrap(), store.clone(), counter.clone());
            std::thread::spawn(move || {
                let mut input = Vec::new();
                let mut buf = [0u8; 65536];
                let limits = resp::RequestLimits::default();
                loop {
                    let n = match stream.read(&mut buf) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => n,
                    };
                    input.extend_from_slice(&buf[..n]);
                    let mut out = Vec::new();
                    let mut at = 0;
                    while let Some((args, used)) =
                        resp::parse_request(&input[at..], &limits).unwrap()
                    {
                        at += used;
                        served.fetch_add(1, Ordering::Relaxed);
                        let mut store = store.lock().unwrap();
                        match args[0].as_slice() {
                            b"SET" => {
                                store.insert(args[1].clone(), args[2].clone());
                                out.extend_from_slice(b"+OK\r\n");
                            }
                            b"GET" => match store.get(&args[1]) {
                                Some(v) => {
                                    out.extend_from_slice(format!("${}\r\n", v.len()).as_bytes());
                                    out.extend_from_slice(v);
                                    out.extend_from_slice(b"\r\n");
                                }
                                None => out.extend_from_slice(b"$-1\r\n"),
                            },
                            other => panic!("unexpected command {other:?}"),
                        }
                    }
                    input.drain(..at);
                    stream.write_all(&out).unwrap();
                }
            });
        }
    });
    (addr, served)
}

#[test]
fn resp_compares_servers_and_writes_json_and_plot() {
    use std::sync::atomic::Ordering;
    let (a, served_a) = fake_redis();
    let (b, served_b) = fake_redis();
    let dir = std::env::temp_dir().join(format!("hotkv-bench-plot-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let plot = dir.join("plot.svg");
    let (rows, table) = run_json(
        "resp",
        &[
            "resp",
            "--addr",
            &format!("{a},{b}"),
            "--workload",
            "f",
            "--keys",
            "500",
            "--clients",
            "3",
            "--pipeline",
            "4",
            "--seconds",
            "0.3",
            "--rounds",
            "2",
            "--plot",
            plot.to_str().unwrap(),
        ],
    );
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0]["addr"], a.as_str());
    assert_eq!(rows[0]["ratio_vs_first"], 1.0);
    for r in &rows {
        assert!(r["ops_per_sec"].as_f64().unwrap() > 0.0);
        assert_eq!(r["rounds_ops_per_sec"].as_array().unwrap().len(), 2);
        let (p50, p99, p999) = (
            r["p50_us"].as_f64().unwrap(),
            r["p99_us"].as_f64().unwrap(),
            r["p999_us"].as_f64().unwrap(),
        );
        assert!(0.0 < p50 && p50 <= p99 && p99 <= p999, "{r}");
        assert_eq!(r["timeline_ops_per_sec"].as_array().unwrap().len(), 3);
        let cdf = r["latency_cdf"].as_array().unwrap();
        assert!((cdf.last().unwrap()[1].as_f64().unwrap() - 1.0).abs() < 1e-9);
    }
    // Both servers got the 500 loaded keys, then the measured load.
    assert!(served_a.load(Ordering::Relaxed) > 500 && served_b.load(Ordering::Relaxed) > 500);
    assert!(table.contains("p99 µs") && table.contains(&b));
    let svg = std::fs::read_to_string(&plot).unwrap();
    assert!(
        svg.starts_with("<svg")
            && svg.contains("Latency CDF")
            && svg.matches("<polyline").count() == 4
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn engine_compares_lsm_with_memory_and_reports_amplification() {
    let dir = std::env::temp_dir().join(format!("hotkv-bench-stores-{}", std::process::id()));
    let (rows, table) = run_json(
        "engine",
        &[
            "engine",
            "--engine",
            "lsm,memory",
            "--keys",
            "2000",
            "--rounds",
            "2",
            "--threads",
            "2",
            "--memtable-bytes",
            "65536",
            "--dir",
            dir.to_str().unwrap(),
        ],
    );
    assert_eq!(rows.len(), 2, "{table}");
    let lsm = &rows[0];
    assert_eq!(lsm["engine"], "lsm");
    let names: Vec<_> = lsm["benchmarks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["benchmark"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "fillrandom",
            "readrandom",
            "readwhilewriting",
            "overwrite",
            "seekrandom"
        ]
    );
    for b in lsm["benchmarks"].as_array().unwrap() {
        assert!(b["ops_per_sec"].as_f64().unwrap() > 0.0);
        assert_eq!(b["rounds_ops_per_sec"].as_array().unwrap().len(), 2);
        assert!(b["ratio"].is_null(), "the first engine is the baseline");
    }
    // Small memtables: the log and flushed tables were both written.
    assert!(lsm["write_amplification"].as_f64().unwrap() > 1.0);
    assert!(lsm["space_amplification"].as_f64().unwrap() > 0.0);
    // The memory engine has no order, so no seekrandom, and ratios against lsm.
    let memory = rows[1]["benchmarks"].as_array().unwrap();
    assert_eq!(memory.len(), 4);
    assert!(memory.iter().all(|b| b["ratio"].as_f64().unwrap() > 0.0));
    assert!(!dir.exists(), "the benchmark removes its stores");
    assert!(table.contains("write amplification"));
}

#[test]
fn engine_refuses_unknown_engines_clearly() {
    let out = bench()
        .args(["engine", "--engine", "leveldb", "--keys", "10"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("unknown engine \"leveldb\""), "{err}");
}
