//! hotkv-bench: measures hotkv against named baselines, side by side in one run.

mod counting_alloc;
mod cpu_time;
mod engine_bench;
mod index_bench;
mod plot;
mod progress;
mod resp_bench;
mod targets;

use clap::{Parser, Subcommand};

#[global_allocator]
static ALLOC: counting_alloc::CountingAlloc = counting_alloc::CountingAlloc;

#[derive(Parser)]
#[command(
    name = "hotkv-bench",
    about = "Side-by-side benchmarks of hotkv against baselines"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// In-process load on the hash indexes: HotRing against a chaining hash, dashmap, papaya.
    Index(index_bench::IndexArgs),
    /// YCSB over TCP against Redis-protocol servers (hotkv-server, redis-server, ...),
    /// compared in alternating rounds.
    Resp(resp_bench::RespArgs),
    /// db_bench-style benchmarks of storage engines in-process: the LSM engine against
    /// RocksDB (feature `rocksdb`) and the memory engine, alternating rounds.
    Engine(engine_bench::EngineArgs),
}

/// Writes `results` as JSON to `path`, when given.
fn write_json(
    path: Option<&std::path::Path>,
    results: &impl serde::Serialize,
) -> Result<(), String> {
    let Some(path) = path else {
        return Ok(());
    };
    std::fs::write(
        path,
        serde_json::to_string_pretty(results).expect("serialisable"),
    )
    .map_err(|e| format!("cannot write {}: {e}", path.display()))
}

fn main() {
    let cli = Cli::parse();
    let outcome = match cli.command {
        Command::Index(args) => {
            let json = args.json.clone();
            index_bench::run(args).and_then(|results| {
                index_bench::print_table(&results);
                write_json(json.as_deref(), &results)
            })
        }
        Command::Engine(args) => {
            let json = args.json.clone();
            engine_bench::run(args).and_then(|results| {
                engine_bench::print_table(&results);
                write_json(json.as_deref(), &results)
            })
        }
        Command::Resp(args) => {
            let (json, plot) = (args.json.clone(), args.plot.clone());
            resp_bench::run(args).and_then(|results| {
                resp_bench::print_table(&results);
                write_json(json.as_deref(), &results)?;
                if let Some(path) = plot {
                    std::fs::write(&path, plot::svg(&results))
                        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
                }
                Ok(())
            })
        }
    };
    if let Err(e) = outcome {
        eprintln!("hotkv-bench: {e}");
        std::process::exit(2);
    }
}
