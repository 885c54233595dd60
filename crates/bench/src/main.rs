//! hotkv-bench: measures hotkv against named baselines, side by side in one run.

mod counting_alloc;
mod index_bench;
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
}

fn main() {
    let cli = Cli::parse();
    let outcome = match cli.command {
        Command::Index(args) => {
            let json = args.json.clone();
            index_bench::run(args).and_then(|results| {
                index_bench::print_table(&results);
                match json {
                    Some(path) => std::fs::write(
                        &path,
                        serde_json::to_string_pretty(&results).expect("serialisable"),
                    )
                    .map_err(|e| format!("cannot write {}: {e}", path.display())),
                    None => Ok(()),
                }
            })
        }
    };
    if let Err(e) = outcome {
        eprintln!("hotkv-bench: {e}");
        std::process::exit(2);
    }
}
