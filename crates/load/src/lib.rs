//! agentwire-load: the server's load generator. It starts the real
//! `agentwire serve` as a child process (or uses one already running) with a `scripted` agent
//! that streams `tokens` text deltas per run at `rate` tokens/s, opens `runs` streaming runs at
//! once over real HTTP (`POST /v1/runs`, `Accept: text/event-stream`, one connection each),
//! started evenly over `ramp`, and reports:
//!
//! - **delivered tokens/s**: text deltas received by all clients / wall time (first request to
//!   last byte);
//! - **added latency** per token (p50, p99, max): how late each delta reaches its client
//!   compared with the brain's schedule. The scripted brain sends delta `i` of a run at
//!   `start + i/rate` on a deadline schedule, so arrival `a_i - i/rate` would be constant if
//!   nothing in between ever waited. Each run's least delayed delta fixes that constant (the
//!   anchor), and a delta's added latency is how much later than the anchor it came. It
//!   includes everything between the brain's timer and the client's read: the brain's own
//!   timer lateness on a busy runtime, the orchestrator, the store's commit, the event log, the
//!   SSE encoder, the kernel's loopback, and the client's own scheduling on the same machine.
//!   It leaves out the constant part every delta of a run shares (at least the best case of
//!   all that); the **first token** time (request sent → first delta, which also includes
//!   starting the run and committing its input) bounds that part from above;
//! - **memory per run**: the server's peak resident memory (`VmHWM`) minus its resident memory
//!   before the runs (`VmRSS`), divided by the number of runs (only for a server it started);
//! - errors, and how many runs delivered every token and ended `completed`.
//!
//! Two more modes load the server as fast as it goes, with a scripted agent that answers with no
//! pacing: [`unpaced::compare`] (closed-loop throughput of an endpoint, side by side with a bare
//! axum server streaming the same frames, `floor.rs`) and [`soak::soak`] (minutes of that load
//! with the server's memory, open files and database sampled, then an idle period). A fourth,
//! [`webhooks::webhooks`], times background runs' status changes on their way to a webhook
//! receiver in this program, through a `kill -9` of the server and a window in which the
//! receiver refuses, and checks that every status change arrived.

mod chunked;
mod client;
pub mod collector;
mod connection;
mod endpoint;
mod floor;
mod pin;
pub mod plot;
mod report;
mod request;
mod sample;
pub mod soak;
mod spawn;
pub mod unpaced;
pub mod webhooks;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use anyhow::Context;
use tokio::time::Instant;

pub use endpoint::Endpoint;
pub use floor::{LISTENING as FLOOR_LISTENING, serve as serve_floor};
pub use pin::Cores;
pub use report::{Latency, Report};
pub use sample::Sample;
pub use spawn::ServerProcess;

/// One load test.
#[derive(Clone, Debug)]
pub struct Options {
    /// Concurrent streaming runs.
    pub runs: usize,
    /// Text deltas per run.
    pub tokens: u32,
    /// The scripted brain's pace, tokens per second per run (must be > 0: latency is measured
    /// against the pace).
    pub rate: f64,
    /// The runs start evenly spread over this time.
    pub ramp: Duration,
    /// The server to load.
    pub target: Target,
}

/// Which server is loaded.
#[derive(Clone, Debug)]
pub enum Target {
    /// Start `agentwire serve` from this binary with a generated configuration (its memory is
    /// measured).
    Spawn {
        /// The `agentwire` binary.
        agentwire: PathBuf,
        /// Passed as `--database-url` (default: SQLite in a temporary directory).
        database_url: Option<String>,
    },
    /// A server already running at this address, with a scripted agent named [`AGENT`] pacing
    /// at the same rate and tokens (memory is not measured).
    Running(SocketAddr),
}

/// The name of the scripted agent the runs ask for.
pub const AGENT: &str = "load";

/// Runs the load test and reports it.
///
/// # Errors
/// When the server cannot be started or reached, or the options make no test; failed runs are
/// counted in the report, not returned as errors.
pub async fn run(options: &Options) -> anyhow::Result<Report> {
    anyhow::ensure!(options.runs > 0, "--runs must be at least 1");
    anyhow::ensure!(options.tokens > 0, "--tokens must be at least 1");
    anyhow::ensure!(
        options.rate.is_finite() && options.rate > 0.0,
        "--rate must be a positive number of tokens per second"
    );
    raise_file_limit(options.runs, "runs")?;
    let (server, addr) = match &options.target {
        Target::Spawn {
            agentwire,
            database_url,
        } => {
            let server = ServerProcess::start(
                agentwire,
                options.tokens,
                options.rate,
                database_url.as_deref(),
            )?;
            let addr = server.addr;
            (Some(server), addr)
        }
        Target::Running(addr) => (None, *addr),
    };
    // Let the fresh server settle (migrations, first allocations) before its baseline.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let rss_before = server.as_ref().map(ServerProcess::memory).transpose()?;
    let cpu_before = server.as_ref().map(ServerProcess::cpu).transpose()?;

    let open = Arc::new(AtomicUsize::new(0));
    let peak_open = Arc::new(AtomicUsize::new(0));
    let spec = Arc::new(client::RunSpec::new(addr, options.tokens, options.rate));
    let budget = options.ramp
        + Duration::from_secs_f64(f64::from(options.tokens) / options.rate)
        + Duration::from_secs(60);
    let started = Instant::now();
    let gap = options.ramp.div_f64(options.runs as f64);
    let mut tasks = Vec::with_capacity(options.runs);
    for index in 0..options.runs {
        let spec = Arc::clone(&spec);
        let open = Arc::clone(&open);
        let peak_open = Arc::clone(&peak_open);
        let at = started + gap.mul_f64(index as f64);
        tasks.push(tokio::spawn(async move {
            tokio::time::sleep_until(at).await;
            let now_open = open.fetch_add(1, Ordering::Relaxed) + 1;
            peak_open.fetch_max(now_open, Ordering::Relaxed);
            let outcome = tokio::time::timeout(budget, client::stream_run(&spec))
                .await
                .unwrap_or_else(|_| client::Outcome::failed("timed out"));
            open.fetch_sub(1, Ordering::Relaxed);
            outcome
        }));
    }
    let mut outcomes = Vec::with_capacity(options.runs);
    for task in tasks {
        outcomes.push(
            task.await
                .unwrap_or_else(|error| client::Outcome::failed(&error.to_string())),
        );
    }
    let wall = started.elapsed();

    let memory = match (&server, rss_before) {
        (Some(server), Some(before)) => Some(report::Memory {
            rss_before: before.rss,
            peak: server.memory()?.peak,
        }),
        _ => None,
    };
    let server_cpu = match (&server, cpu_before) {
        (Some(server), Some(before)) => Some(server.cpu()?.saturating_sub(before)),
        _ => None,
    };
    Ok(Report::new(
        options,
        &outcomes,
        wall,
        peak_open.load(Ordering::Relaxed),
        memory,
        server_cpu,
    ))
}

/// Raises this process's open-file limit for `sockets` connections (`what` names them in the
/// error): each holds a socket here and one in the server, which inherits the raised limit.
fn raise_file_limit(sockets: usize, what: &str) -> anyhow::Result<()> {
    let files = u64::try_from(sockets)
        .unwrap_or(u64::MAX)
        .saturating_add(256);
    let allowed = rlimit::increase_nofile_limit(files).context("cannot raise RLIMIT_NOFILE")?;
    anyhow::ensure!(
        allowed >= files,
        "{sockets} {what} need {files} open files, but the hard limit is {allowed}"
    );
    Ok(())
}
