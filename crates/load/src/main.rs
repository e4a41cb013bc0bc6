//! `agentwire-load`: many concurrent streaming runs against `agentwire serve`, reported as a
//! table (see the crate docs for what each number measures).
//!
//! ```sh
//! cargo build --release -p agentwire-cli -p agentwire-load
//! target/release/agentwire-load --runs 1000 --tokens 200 --rate 20 --ramp-ms 2000
//! ```

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use agentwire_load::{Options, Target};
use anyhow::Context;
use clap::Parser;

/// Load agentwire with concurrent streaming runs of a scripted agent.
#[derive(Debug, Parser)]
#[command(name = "agentwire-load", version, about)]
struct Cli {
    /// Concurrent streaming runs.
    #[arg(long, default_value_t = 100)]
    runs: usize,
    /// Text deltas per run.
    #[arg(long, default_value_t = 200)]
    tokens: u32,
    /// The scripted brain's pace, tokens per second per run.
    #[arg(long, default_value_t = 20.0)]
    rate: f64,
    /// Start the runs evenly over this many milliseconds.
    #[arg(long, default_value_t = 1000)]
    ramp_ms: u64,
    /// Load a server already running here (`127.0.0.1:8080`) instead of starting one; it must
    /// have a scripted agent named `load` with the same tokens and rate. Memory is not measured.
    #[arg(long)]
    server: Option<SocketAddr>,
    /// The `agentwire` binary to start (default: the one next to this program).
    #[arg(long)]
    agentwire: Option<PathBuf>,
    /// The started server's store, e.g. `postgres://…` (default: SQLite in a temporary
    /// directory).
    #[arg(long)]
    database_url: Option<String>,
    /// Also print the report as one line of JSON.
    #[arg(long)]
    json: bool,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // One thread: the generator shares the cores with the server it measures, and its work
    // (reading sockets, timing deltas) fits in one; a multi-threaded runtime cost it about an
    // eighth more CPU, in wake-ups between its threads (measured at 10,000 streams).
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("agentwire-load: cannot start the async runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(load(cli)) {
        Ok(code) => code,
        Err(error) => {
            eprintln!("agentwire-load: {error:#}");
            ExitCode::FAILURE
        }
    }
}

async fn load(cli: Cli) -> anyhow::Result<ExitCode> {
    let target = match cli.server {
        Some(addr) => Target::Running(addr),
        None => {
            let agentwire = match cli.agentwire {
                Some(path) => path,
                None => std::env::current_exe()?
                    .parent()
                    .context("this program has no directory")?
                    .join("agentwire"),
            };
            Target::Spawn {
                agentwire,
                database_url: cli.database_url,
            }
        }
    };
    let options = Options {
        runs: cli.runs,
        tokens: cli.tokens,
        rate: cli.rate,
        ramp: Duration::from_millis(cli.ramp_ms),
        target,
    };
    let report = agentwire_load::run(&options).await?;
    println!("{report}");
    if cli.json {
        println!("{}", serde_json::to_string(&report)?);
    }
    // A run that lost tokens or failed makes the whole test fail.
    Ok(if report.all_complete() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
