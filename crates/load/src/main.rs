//! `agentwire-load`: many concurrent streaming runs against `agentwire serve`, reported as a
//! table (see the crate docs for what each number measures).
//!
//! ```sh
//! cargo build --release -p agentwire-cli -p agentwire-load
//! target/release/agentwire-load --runs 1000 --tokens 200 --rate 20 --ramp-ms 2000
//! target/release/agentwire-load --unpaced --conns 100 --duration 10 --endpoint ai-sdk
//! target/release/agentwire-load --soak 600 --idle 120 --csv soak.csv --plot soak.png
//! target/release/agentwire-load --webhooks --runs 10000 --tokens 20 --ramp-ms 20000 \
//!     --kill-after 10s --receiver-down 4s..9s --record deliveries.ndjson
//! ```

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use agentwire_load::soak::Soak;
use agentwire_load::unpaced::Unpaced;
use agentwire_load::webhooks::{Webhooks, Window};
use agentwire_load::{Cores, Endpoint, Options, Target};
use anyhow::Context;
use clap::{Parser, Subcommand};

/// Load agentwire with concurrent streaming runs of a scripted agent.
///
/// By default, paced runs: `--runs` streams at `--rate` tokens/s each. `--unpaced`: closed-loop
/// throughput of an endpoint beside a bare axum floor. `--soak`: minutes of that load with the
/// server's memory, files and database sampled. `--webhooks`: background runs with a webhook,
/// timed from each status change to its delivery.
#[derive(Debug, Parser)]
#[command(name = "agentwire-load", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Option<Hidden>,
    /// Concurrent streaming runs (default 100; with `--webhooks`, background runs, default
    /// 10,000).
    #[arg(long)]
    runs: Option<usize>,
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

    /// Webhooks: `--runs` background runs (default 10,000 here) with a webhook to a receiver in
    /// this program; latency from each status change to its delivery, and whether every status
    /// change was delivered.
    #[arg(long, conflicts_with_all = ["unpaced", "soak", "server"])]
    webhooks: bool,
    /// With `--webhooks`: kill the server with SIGKILL this long after the first run's start
    /// (`10s`), then start it again on the same configuration and store; the runs still to
    /// start go to it.
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration, requires = "webhooks")]
    kill_after: Option<Duration>,
    /// With `--webhooks`: the receiver answers 503 from `FROM` to `TO` after the first run's
    /// start (`4s..9s`). Latency is reported only for the status changes committed while it
    /// was up (and not owed across the kill); the others are counted apart.
    #[arg(long, value_name = "FROM..TO", requires = "webhooks")]
    receiver_down: Option<Window>,
    /// With `--webhooks`: write every request the receiver took to this file, one JSON object
    /// a line (the webhook's secret, when it arrived, the answer, the three `webhook-*` headers
    /// and the exact body), for `peers/webhooks/verify_recorded.py`.
    #[arg(long, value_name = "PATH", requires = "webhooks")]
    record: Option<PathBuf>,

    /// Closed-loop throughput: `--conns` connections post runs back to back for `--duration`
    /// seconds, to agentwire and then to a bare axum server streaming the same frames, each alone
    /// on `--server-core`.
    #[arg(long, conflicts_with_all = ["soak", "server", "runs", "rate", "ramp_ms"])]
    unpaced: bool,
    /// Soak: the closed loop against agentwire for this many seconds, the server sampled every
    /// `--sample-every` seconds, then `--idle` seconds more of samples without load.
    #[arg(long, value_name = "SECONDS", conflicts_with_all = ["server", "runs", "rate", "ramp_ms"])]
    soak: Option<u64>,
    /// Connections of `--unpaced` and `--soak`, each with one run at a time.
    #[arg(long, default_value_t = 100)]
    conns: usize,
    /// How long `--unpaced` posts runs to each server, seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 10)]
    duration: u64,
    /// The endpoint `--unpaced` and `--soak` post runs to.
    #[arg(long, value_enum, default_value_t = Endpoint::Native)]
    endpoint: Endpoint,
    /// Seconds between two samples of `--soak`.
    #[arg(long, value_name = "SECONDS", default_value_t = 5)]
    sample_every: u64,
    /// Seconds `--soak` goes on sampling after its load stops.
    #[arg(long, value_name = "SECONDS", default_value_t = 120)]
    idle: u64,
    /// Write `--soak`'s samples to this CSV file as they are taken.
    #[arg(long, value_name = "PATH")]
    csv: Option<PathBuf>,
    /// Draw `--soak`'s samples in this PNG file.
    #[arg(long, value_name = "PATH")]
    plot: Option<PathBuf>,
    /// With `--unpaced`: agentwire exports OpenTelemetry traces and metrics (`[telemetry]
    /// otlp_endpoint`) to a stand-in collector this program runs, to measure what tracing costs.
    #[arg(long, requires = "unpaced")]
    otlp: bool,
    /// The core the server under test runs on alone in `--unpaced` and `--soak`.
    #[arg(long, default_value_t = Cores::default().server)]
    server_core: usize,
    /// The core this generator runs on in `--unpaced` and `--soak`.
    #[arg(long, default_value_t = Cores::default().load)]
    load_core: usize,
}

/// Commands this program gives itself.
#[derive(Debug, Subcommand)]
enum Hidden {
    /// The bare floor of `--unpaced`, started by it: serves the three endpoints' frames.
    #[command(hide = true)]
    Floor {
        /// Text deltas per run.
        #[arg(long, default_value_t = 200)]
        tokens: u32,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Some(Hidden::Floor { tokens }) = cli.command {
        return floor(tokens);
    }
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

/// The floor's process: the runtime `agentwire serve` uses (multi-threaded, as many workers as
/// the cores it may use: one, pinned), its address on the first line of stdout, then serving
/// until killed.
fn floor(tokens: u32) -> ExitCode {
    let served = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(anyhow::Error::from)
        .and_then(|runtime| {
            runtime.block_on(async {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
                println!(
                    "{}{}",
                    agentwire_load::FLOOR_LISTENING,
                    listener.local_addr()?
                );
                agentwire_load::serve_floor(listener, tokens).await?;
                Ok(())
            })
        });
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("agentwire-load floor: {error:#}");
            ExitCode::FAILURE
        }
    }
}

async fn load(cli: Cli) -> anyhow::Result<ExitCode> {
    let agentwire = match &cli.agentwire {
        Some(path) => path.clone(),
        None => std::env::current_exe()?
            .parent()
            .context("this program has no directory")?
            .join("agentwire"),
    };
    let cores = Cores {
        server: cli.server_core,
        load: cli.load_core,
    };
    if cli.unpaced {
        let test = Unpaced {
            endpoint: cli.endpoint,
            conns: cli.conns,
            duration: Duration::from_secs(cli.duration),
            tokens: cli.tokens,
            agentwire,
            load: std::env::current_exe()?,
            database_url: cli.database_url,
            cores,
            otlp: cli.otlp,
        };
        let comparison = agentwire_load::unpaced::compare(&test).await?;
        println!("{comparison}");
        if cli.json {
            println!("{}", serde_json::to_string(&comparison)?);
        }
        return Ok(exit_code(comparison.all_complete()));
    }
    if let Some(seconds) = cli.soak {
        let test = Soak {
            endpoint: cli.endpoint,
            conns: cli.conns,
            tokens: cli.tokens,
            load: Duration::from_secs(seconds),
            idle: Duration::from_secs(cli.idle),
            every: Duration::from_secs(cli.sample_every),
            agentwire,
            database_url: cli.database_url,
            cores,
            csv: cli.csv,
        };
        println!("{}", agentwire_load::soak::header());
        let report = agentwire_load::soak::soak(&test, |sample| {
            println!("{}", agentwire_load::soak::row(sample));
        })
        .await?;
        print!("{report}");
        if let Some(path) = &cli.plot {
            agentwire_load::plot::draw(&report, path)?;
            println!("plot: {}", path.display());
        }
        if cli.json {
            println!("{}", serde_json::to_string(&report)?);
        }
        return Ok(exit_code(report.passed()));
    }
    if cli.webhooks {
        let test = Webhooks {
            runs: cli.runs.unwrap_or(10_000),
            tokens: cli.tokens,
            rate: cli.rate,
            ramp: Duration::from_millis(cli.ramp_ms),
            agentwire,
            database_url: cli.database_url,
            kill_after: cli.kill_after,
            receiver_down: cli.receiver_down,
            record: cli.record,
        };
        let report = agentwire_load::webhooks::webhooks(&test).await?;
        println!("{report}");
        if cli.json {
            println!("{}", serde_json::to_string(&report)?);
        }
        return Ok(exit_code(report.passed()));
    }
    let target = match cli.server {
        Some(addr) => Target::Running(addr),
        None => Target::Spawn {
            agentwire,
            database_url: cli.database_url,
        },
    };
    let options = Options {
        runs: cli.runs.unwrap_or(100),
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
    Ok(exit_code(report.all_complete()))
}

fn exit_code(success: bool) -> ExitCode {
    if success {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
