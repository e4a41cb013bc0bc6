//! Closed-loop throughput (`--unpaced`): `conns` keep-alive connections each post a new run back
//! to back for a while, against a scripted agent that answers with no pacing, so the server runs
//! as fast as it can and its rate is what it can sustain. Every stream is read to its end and
//! checked (all its deltas, a proper end).
//!
//! The same client code, connections and duration then load the bare floor (`floor.rs`), each
//! server alone on the same core (`pin.rs`), one after the other; the ratio of their rates is
//! how much of axum and hyper's own speed the full path keeps.
//!
//! The rate counts the runs that ended within the duration, like wrk: runs still streaming when
//! it is up are read to their end and checked, but not counted. Latency is per run, from the
//! request's first byte sent to the stream's last byte read, over every run.

use std::collections::BTreeMap;
use std::fmt;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use agentwire_dialects::sse::{SseFrame, SseReader};
use serde::Serialize;
use tokio::time::Instant;

use crate::connection::Connection;
use crate::endpoint::{Endpoint, StreamCheck};
use crate::pin::Cores;
use crate::report::{Latency, latency};
use crate::spawn::{ServerProcess, cpu_of};

/// A closed-loop test.
#[derive(Clone, Debug)]
pub struct Unpaced {
    /// The endpoint every run is posted to.
    pub endpoint: Endpoint,
    /// Connections, each with one run at a time.
    pub conns: usize,
    /// How long new runs are posted.
    pub duration: Duration,
    /// Text deltas per run.
    pub tokens: u32,
    /// The `agentwire` binary.
    pub agentwire: PathBuf,
    /// This program, started again as the floor.
    pub load: PathBuf,
    /// Passed as `--database-url` (default: SQLite in a temporary directory).
    pub database_url: Option<String>,
    /// Where the servers and the generator run.
    pub cores: Cores,
    /// agentwire exports its OpenTelemetry traces and metrics to a stand-in collector this
    /// program runs (`collector.rs`): what tracing costs.
    pub otlp: bool,
}

/// What one server did under the closed loop.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Throughput {
    /// `agentwire` or `floor`.
    pub server: &'static str,
    /// The endpoint loaded.
    pub endpoint: Endpoint,
    /// Connections.
    pub conns: usize,
    /// How long runs were posted, seconds.
    pub duration_s: f64,
    /// Runs that ended, checked, within the duration (what the rate counts).
    pub runs: u64,
    /// `runs / duration_s`.
    pub runs_per_s: f64,
    /// Deltas of those runs per second.
    pub deltas_per_s: f64,
    /// Bytes of response body per run, on average (the floor's should be the server's).
    pub bytes_per_run: f64,
    /// Per run: request sent → stream's last byte.
    pub run_latency: Latency,
    /// Per run: request sent → first delta.
    pub first_delta: Latency,
    /// Every run read, the ones after the duration included.
    pub total_runs: u64,
    /// Runs that got every delta and ended properly.
    pub complete_runs: u64,
    /// Runs that did not, by what went wrong.
    pub errors: BTreeMap<String, u64>,
    /// CPU time the server used, seconds, and as a share of its core over the test.
    pub server_cpu_s: f64,
    /// The server's CPU time over the test's wall time (1.0: its core was never idle).
    pub server_busy: f64,
    /// The same for this generator, on its own core: near 1.0 it, not the server, may be the
    /// limit.
    pub load_busy: f64,
}

/// agentwire and the floor under the same closed loop.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Comparison {
    /// The full path.
    pub full: Throughput,
    /// The bare floor.
    pub floor: Throughput,
    /// `full.runs_per_s / floor.runs_per_s`.
    pub ratio: f64,
}

impl Comparison {
    /// Every run of both got every delta and ended properly.
    pub fn all_complete(&self) -> bool {
        [&self.full, &self.floor]
            .iter()
            .all(|throughput| throughput.errors.is_empty() && throughput.total_runs > 0)
    }
}

/// Loads agentwire, then the floor, each alone on the server core, and compares them.
///
/// # Errors
/// When a server cannot be started or pinned; failed runs are counted, not returned.
pub async fn compare(test: &Unpaced) -> anyhow::Result<Comparison> {
    anyhow::ensure!(test.conns > 0, "--conns must be at least 1");
    anyhow::ensure!(test.tokens > 0, "--tokens must be at least 1");
    crate::raise_file_limit(test.conns, "connections")?;
    test.cores.pin_generator()?;
    let collector = match test.otlp {
        true => Some(crate::collector::start().await?),
        false => None,
    };
    let server = ServerProcess::start_pinned(
        &test.agentwire,
        test.tokens,
        0.0,
        test.database_url.as_deref(),
        test.cores,
        collector.as_ref().map(|(endpoint, _)| endpoint.as_str()),
    )?;
    let full = measure(test, "agentwire", &server).await?;
    drop(server);
    if let Some((endpoint, received)) = &collector {
        use std::sync::atomic::Ordering::Relaxed;
        eprintln!(
            "the collector at {endpoint} took {} posts, {} bytes",
            received.posts.load(Relaxed),
            received.bytes.load(Relaxed)
        );
    }
    let floor_server = ServerProcess::start_floor(&test.load, test.tokens, test.cores)?;
    let floor = measure(test, "floor", &floor_server).await?;
    drop(floor_server);
    let ratio = full.runs_per_s / floor.runs_per_s.max(f64::EPSILON);
    Ok(Comparison { full, floor, ratio })
}

/// Runs the closed loop against `server` and measures it.
async fn measure(
    test: &Unpaced,
    name: &'static str,
    server: &ServerProcess,
) -> anyhow::Result<Throughput> {
    // Let the fresh server settle (migrations, first allocations) before it is measured.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let server_before = server.cpu()?;
    let load_before = cpu_of("/proc/self/stat")?;
    let started = Instant::now();
    let tally = drive(
        server.addr,
        test.endpoint,
        test.conns,
        test.tokens,
        started + test.duration,
        &Arc::default(),
    )
    .await;
    let wall = started.elapsed().as_secs_f64().max(f64::EPSILON);
    let server_cpu = server.cpu()?.saturating_sub(server_before);
    let load_cpu = cpu_of("/proc/self/stat")?.saturating_sub(load_before);
    Ok(tally.throughput(name, test, server_cpu, load_cpu, wall))
}

/// What the connections saw, added up.
#[derive(Debug, Default)]
pub(crate) struct Tally {
    /// Runs that ended within the duration.
    pub(crate) in_window: u64,
    /// Their deltas.
    pub(crate) deltas_in_window: u64,
    /// Their bytes of response body.
    pub(crate) bytes_in_window: u64,
    /// Every run.
    pub(crate) total: u64,
    pub(crate) complete: u64,
    pub(crate) errors: BTreeMap<String, u64>,
    /// Per run, microseconds.
    latency_us: Vec<u32>,
    first_delta_us: Vec<u32>,
}

impl Tally {
    fn merge(&mut self, other: Tally) {
        self.in_window += other.in_window;
        self.deltas_in_window += other.deltas_in_window;
        self.bytes_in_window += other.bytes_in_window;
        self.total += other.total;
        self.complete += other.complete;
        for (error, count) in other.errors {
            *self.errors.entry(error).or_insert(0) += count;
        }
        self.latency_us.extend(other.latency_us);
        self.first_delta_us.extend(other.first_delta_us);
    }

    fn throughput(
        mut self,
        server: &'static str,
        test: &Unpaced,
        server_cpu: Duration,
        load_cpu: Duration,
        wall: f64,
    ) -> Throughput {
        let duration = test.duration.as_secs_f64().max(f64::EPSILON);
        Throughput {
            server,
            endpoint: test.endpoint,
            conns: test.conns,
            duration_s: test.duration.as_secs_f64(),
            runs: self.in_window,
            runs_per_s: self.in_window as f64 / duration,
            deltas_per_s: self.deltas_in_window as f64 / duration,
            bytes_per_run: self.bytes_in_window as f64 / (self.in_window.max(1) as f64),
            run_latency: latency(&mut self.latency_us),
            first_delta: latency(&mut self.first_delta_us),
            total_runs: self.total,
            complete_runs: self.complete,
            errors: self.errors,
            server_cpu_s: server_cpu.as_secs_f64(),
            server_busy: server_cpu.as_secs_f64() / wall,
            load_busy: load_cpu.as_secs_f64() / wall,
        }
    }
}

/// `conns` connections posting runs to `addr` back to back until `until`, each stream read
/// to its end and checked; `ended` counts the runs as they end (for a sampler to read).
pub(crate) async fn drive(
    addr: SocketAddr,
    endpoint: Endpoint,
    conns: usize,
    tokens: u32,
    until: Instant,
    ended: &Arc<AtomicU64>,
) -> Tally {
    let tasks: Vec<_> = (0..conns)
        .map(|index| {
            let ended = Arc::clone(ended);
            tokio::spawn(async move {
                connection_loop(addr, endpoint, index, tokens, until, &ended).await
            })
        })
        .collect();
    let mut tally = Tally::default();
    for task in tasks {
        match task.await {
            Ok(one) => tally.merge(one),
            Err(error) => *tally.errors.entry(error.to_string()).or_insert(0) += 1,
        }
    }
    tally
}

/// How long a connection waits after a failed run before its next: a server that refuses
/// everything at once must not turn the loop into a busy one.
const AFTER_FAILURE: Duration = Duration::from_millis(100);

/// One connection's runs, back to back until `until`.
async fn connection_loop(
    addr: SocketAddr,
    endpoint: Endpoint,
    index: usize,
    tokens: u32,
    until: Instant,
    ended: &AtomicU64,
) -> Tally {
    let mut tally = Tally::default();
    let mut connection = Connection::new(addr);
    let mut number: u64 = 0;
    while Instant::now() < until {
        let run = one_run(
            &mut connection,
            endpoint,
            &format!("{index}-{number}"),
            tokens,
        )
        .await;
        number += 1;
        ended.fetch_add(1, Ordering::Relaxed);
        tally.total += 1;
        match run.outcome {
            Ok(()) => {
                tally.complete += 1;
                if run.ended <= until {
                    tally.in_window += 1;
                    tally.deltas_in_window += u64::from(run.deltas);
                    tally.bytes_in_window += run.bytes;
                }
                tally.latency_us.push(micros(run.latency));
                if let Some(first) = run.first_delta {
                    tally.first_delta_us.push(micros(first));
                }
            }
            Err(error) => {
                *tally.errors.entry(error).or_insert(0) += 1;
                tokio::time::sleep(AFTER_FAILURE).await;
            }
        }
    }
    tally
}

/// One run as its client saw it.
#[derive(Debug)]
pub(crate) struct Run {
    /// Every delta arrived and the stream ended properly; what was wrong if not.
    pub(crate) outcome: Result<(), String>,
    /// Text deltas read.
    pub(crate) deltas: u32,
    /// Bytes of the response body.
    pub(crate) bytes: u64,
    /// When the stream's last byte was read.
    pub(crate) ended: Instant,
    /// Request sent → last byte.
    pub(crate) latency: Duration,
    /// Request sent → first delta.
    pub(crate) first_delta: Option<Duration>,
}

/// Posts one run to `endpoint` on `connection` (its ids made unique by `key`) and reads its
/// stream to the end, checking it.
pub(crate) async fn one_run(
    connection: &mut Connection,
    endpoint: Endpoint,
    key: &str,
    tokens: u32,
) -> Run {
    let request = endpoint.request(connection.addr(), key);
    let mut reader = SseReader::default();
    let mut frames: Vec<SseFrame> = Vec::new();
    let mut check = StreamCheck::new(endpoint);
    let mut first_delta = None;
    let mut bytes = 0;
    let sent = Instant::now();
    let result = connection
        .exchange(&request, |data| {
            bytes += data.len() as u64;
            reader.feed(data, &mut frames)?;
            for frame in frames.drain(..) {
                check.frame(&frame)?;
            }
            if first_delta.is_none() && check.deltas > 0 {
                first_delta = Some(Instant::now());
            }
            Ok(())
        })
        .await
        .and_then(|()| Ok(reader.finish()?));
    let ended = Instant::now();
    Run {
        outcome: result
            .map_err(|error| format!("{error:#}"))
            .and_then(|()| check.verdict(tokens)),
        deltas: check.deltas,
        bytes,
        ended,
        latency: ended - sent,
        first_delta: first_delta.map(|first| first - sent),
    }
}

fn micros(duration: Duration) -> u32 {
    u32::try_from(duration.as_micros()).unwrap_or(u32::MAX)
}

fn percent(share: f64) -> String {
    format!("{:.0}%", share * 100.0)
}

impl fmt::Display for Comparison {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "| server | endpoint | conns | runs/s | deltas/s | bytes/run | run latency p50 / p99 / max | first delta p50 / p99 | server core busy | load core busy | complete | errors |"
        )?;
        writeln!(f, "|---|---|---|---|---|---|---|---|---|---|---|---|")?;
        for row in [&self.full, &self.floor] {
            writeln!(
                f,
                "| {} | {} | {} | {:.0} | {:.0} | {:.0} | {:.1} / {:.1} / {:.1} ms | {:.1} / {:.1} ms | {} | {} | {} of {} | {} |",
                row.server,
                row.endpoint,
                row.conns,
                row.runs_per_s,
                row.deltas_per_s,
                row.bytes_per_run,
                row.run_latency.p50_ms,
                row.run_latency.p99_ms,
                row.run_latency.max_ms,
                row.first_delta.p50_ms,
                row.first_delta.p99_ms,
                percent(row.server_busy),
                percent(row.load_busy),
                row.complete_runs,
                row.total_runs,
                row.errors.values().sum::<u64>(),
            )?;
        }
        writeln!(
            f,
            "\nfull / floor: {:.2} of the floor's runs/s ({:.0} s each, {} runs counted of agentwire, {} of the floor)",
            self.ratio, self.full.duration_s, self.full.runs, self.floor.runs
        )?;
        for row in [&self.full, &self.floor] {
            if row.load_busy > 0.9 {
                writeln!(
                    f,
                    "note: the generator's core was {} busy during the {} test: it may have been the limit",
                    percent(row.load_busy),
                    row.server
                )?;
            }
            for (error, count) in &row.errors {
                writeln!(f, "{} error ×{count}: {error}", row.server)?;
            }
        }
        Ok(())
    }
}
