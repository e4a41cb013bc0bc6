//! The webhooks scenario (`--webhooks`): `runs` background runs (`POST /v1/runs` with
//! `"background": true`, answered 202 at once) of the scripted agent, started evenly over
//! `ramp`, with one webhook subscribed to every status change and delivered to a receiver on
//! loopback in this program, which answers 204 at once. It reports:
//!
//! - **latency** from status change to delivery (p50, p99, max): a delivery's arrival minus its
//!   payload's `timestamp`, the time the server committed the status change (the server and
//!   this program read the same clock; the payload's time has millisecond precision). Only the
//!   first arrival of each status change counts; later ones are retries, counted apart;
//! - **counts**: every status change of every run (its `run_status` events, read back from its
//!   event log once all runs have ended) and how many of them were delivered at least once,
//!   by `webhook-id`, which names the run and the seq.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use agentwire_dialects::sse::{SseFrame, SseReader};
use anyhow::Context;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use serde::{Deserialize, Serialize};
use serde_json::json;
use tokio::time::Instant;

use crate::connection::Connection;
use crate::report::{Latency, latency};
use crate::request::post_json;
use crate::spawn::ServerProcess;
use crate::{AGENT, raise_file_limit};

/// Statuses after which a run changes no more.
const TERMINAL: [&str; 5] = ["completed", "failed", "canceled", "rejected", "incomplete"];

/// Event logs read back at once when counting the status changes.
const LOG_READERS: usize = 16;

/// One webhooks test.
#[derive(Clone, Debug)]
pub struct Webhooks {
    /// Background runs.
    pub runs: usize,
    /// Text deltas per run.
    pub tokens: u32,
    /// The scripted brain's pace, tokens per second per run.
    pub rate: f64,
    /// The runs start evenly spread over this time.
    pub ramp: Duration,
    /// The `agentwire` binary to start.
    pub agentwire: PathBuf,
    /// Passed as `--database-url` (default: SQLite in a temporary directory).
    pub database_url: Option<String>,
}

/// What the webhooks test measured.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct WebhookReport {
    /// Background runs asked for.
    pub runs: usize,
    /// Runs the server started (answered 202).
    pub started: usize,
    /// Runs that a terminal status was delivered for.
    pub ended: usize,
    /// Status changes in the started runs' event logs.
    pub status_changes: usize,
    /// Those delivered at least once.
    pub delivered: usize,
    /// Deliveries of a status change that had already arrived (retries).
    pub repeated: usize,
    /// From a status change's commit to its first delivery.
    pub latency: Latency,
    /// From the first run started to the last status change delivered, seconds.
    pub wall_s: f64,
    /// First deliveries per second over the wall time.
    pub deliveries_per_s: f64,
    /// Runs not started, or event logs not read, by what went wrong.
    pub errors: BTreeMap<String, usize>,
}

impl WebhookReport {
    /// Every run started and every status change of every run was delivered.
    pub fn passed(&self) -> bool {
        self.errors.is_empty()
            && self.started == self.runs
            && self.delivered == self.status_changes
            && self.status_changes > 0
    }
}

/// Runs the webhooks test and reports it.
///
/// # Errors
/// When the server or the receiver cannot be started, or the webhook not created; runs that
/// fail to start are counted in the report.
pub async fn webhooks(test: &Webhooks) -> anyhow::Result<WebhookReport> {
    anyhow::ensure!(test.runs > 0, "--runs must be at least 1");
    anyhow::ensure!(
        test.rate.is_finite() && test.rate > 0.0,
        "--rate must be a positive number of tokens per second"
    );
    raise_file_limit(LOG_READERS + 1024, "connections")?;
    let receiver = Receiver::default();
    let hook = receiver.start().await?;
    // Loopback is a private address: allowed for this test only.
    let server = ServerProcess::start_with(
        &test.agentwire,
        test.tokens,
        test.rate,
        test.database_url.as_deref(),
        "[webhooks]\nallow_private = true\n",
    )?;
    let addr = server.addr;
    let (status, webhook) = post_json(addr, "/v1/webhooks", &json!({"url": hook})).await?;
    anyhow::ensure!(
        status == 201,
        "creating the webhook: HTTP {status}: {webhook}"
    );

    let started = Instant::now();
    let gap = test.ramp.div_f64(test.runs as f64);
    let mut tasks = Vec::with_capacity(test.runs);
    for index in 0..test.runs {
        let at = started + gap.mul_f64(index as f64);
        tasks.push(tokio::spawn(async move {
            tokio::time::sleep_until(at).await;
            start_background(addr).await
        }));
    }
    let mut errors = BTreeMap::new();
    let mut runs = Vec::with_capacity(test.runs);
    for task in tasks {
        match task.await.map_err(anyhow::Error::from).and_then(|run| run) {
            Ok(run_id) => runs.push(run_id),
            Err(error) => *errors.entry(format!("{error:#}")).or_insert(0) += 1,
        }
    }

    // Every started run ends within its script's time and a minute more.
    let budget = test.ramp + Duration::from_secs_f64(f64::from(test.tokens) / test.rate);
    let deadline = Instant::now() + budget + Duration::from_secs(60);
    while receiver.ended() < runs.len() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let expected = status_changes(addr, &runs, &mut errors).await;
    // Deliveries of the last status changes may still be on their way.
    let deadline = Instant::now() + Duration::from_secs(30);
    while !receiver.has_all(&expected) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let taken = receiver.taken();
    let wall = taken
        .last_at
        .map_or(started.elapsed(), |last| last.duration_since(started));
    let mut latencies: Vec<u32> = expected
        .iter()
        .filter_map(|id| taken.first.get(id).copied())
        .collect();
    let delivered = latencies.len();
    drop(server);
    Ok(WebhookReport {
        runs: test.runs,
        started: runs.len(),
        ended: taken.ended.len(),
        status_changes: expected.len(),
        delivered,
        repeated: taken.repeated,
        latency: latency(&mut latencies),
        wall_s: wall.as_secs_f64(),
        deliveries_per_s: delivered as f64 / wall.as_secs_f64().max(f64::EPSILON),
        errors,
    })
}

impl fmt::Display for WebhookReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "| runs | started | ended | status changes | delivered | repeated | latency p50 / p99 / max | deliveries/s | errors |"
        )?;
        writeln!(f, "|---|---|---|---|---|---|---|---|---|")?;
        writeln!(
            f,
            "| {} | {} | {} | {} | {} | {} | {:.1} / {:.1} / {:.1} ms | {:.0} | {} |",
            self.runs,
            self.started,
            self.ended,
            self.status_changes,
            self.delivered,
            self.repeated,
            self.latency.p50_ms,
            self.latency.p99_ms,
            self.latency.max_ms,
            self.deliveries_per_s,
            self.errors.values().sum::<usize>(),
        )?;
        writeln!(f, "\nwall {:.1} s", self.wall_s)?;
        for (error, count) in &self.errors {
            writeln!(f, "error ×{count}: {error}")?;
        }
        Ok(())
    }
}

/// The receiver on loopback: what it took, shared with its handler.
#[derive(Clone, Default)]
struct Receiver {
    taken: Arc<Mutex<Taken>>,
}

#[derive(Clone, Default)]
struct Taken {
    /// The latency of each status change's first delivery, microseconds, by `webhook-id`.
    first: HashMap<String, u32>,
    /// Runs a terminal status arrived for.
    ended: HashSet<String>,
    /// Deliveries of a status change that had already arrived.
    repeated: usize,
    /// When the last first delivery arrived.
    last_at: Option<Instant>,
}

/// The part of a payload the receiver reads.
#[derive(Deserialize)]
struct Payload {
    timestamp: String,
    data: PayloadData,
}

#[derive(Deserialize)]
struct PayloadData {
    run_id: String,
    status: String,
}

impl Receiver {
    /// Serves on `127.0.0.1:0` in a task of this runtime; the webhook's URL.
    async fn start(&self) -> anyhow::Result<String> {
        let app = axum::Router::new()
            .route("/hook", axum::routing::post(take))
            .with_state(self.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let url = format!("http://{}/hook", listener.local_addr()?);
        tokio::spawn(async move { axum::serve(listener, app).await });
        Ok(url)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Taken> {
        // A handler that panicked left nothing half-written: each change is one insert.
        self.taken
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn ended(&self) -> usize {
        self.lock().ended.len()
    }

    fn has_all(&self, ids: &HashSet<String>) -> bool {
        let taken = self.lock();
        ids.iter().all(|id| taken.first.contains_key(id))
    }

    fn taken(&self) -> Taken {
        self.lock().clone()
    }
}

async fn take(State(receiver): State<Receiver>, headers: HeaderMap, body: Bytes) -> StatusCode {
    let arrived = SystemTime::now();
    let (Some(id), Ok(payload)) = (
        headers.get("webhook-id").and_then(|id| id.to_str().ok()),
        serde_json::from_slice::<Payload>(&body),
    ) else {
        return StatusCode::BAD_REQUEST;
    };
    let Ok(changed) = humantime::parse_rfc3339(&payload.timestamp) else {
        return StatusCode::BAD_REQUEST;
    };
    let micros = arrived
        .duration_since(changed)
        .unwrap_or_default()
        .as_micros();
    let mut taken = receiver.lock();
    if taken.first.contains_key(id) {
        taken.repeated += 1;
        return StatusCode::NO_CONTENT;
    }
    taken
        .first
        .insert(id.to_owned(), u32::try_from(micros).unwrap_or(u32::MAX));
    taken.last_at = Some(Instant::now());
    if TERMINAL.contains(&payload.data.status.as_str()) {
        taken.ended.insert(payload.data.run_id);
    }
    StatusCode::NO_CONTENT
}

/// Starts one background run; its id.
async fn start_background(addr: SocketAddr) -> anyhow::Result<String> {
    let body = json!({
        "agent": AGENT,
        "background": true,
        "input": [{"role": "user", "parts": [{"type": "text", "text": "go"}]}],
    });
    let (status, answer) = post_json(addr, "/v1/runs", &body).await?;
    anyhow::ensure!(status == 202, "HTTP {status}: {answer}");
    answer["run"]["id"]
        .as_str()
        .map(str::to_owned)
        .context("the 202 names no run")
}

/// The `webhook-id` of every status change of `runs`, read from their event logs (each read
/// until its end: a run that has not ended is waited for).
async fn status_changes(
    addr: SocketAddr,
    runs: &[String],
    errors: &mut BTreeMap<String, usize>,
) -> HashSet<String> {
    let mut readers = tokio::task::JoinSet::new();
    for share in runs.chunks(runs.len().div_ceil(LOG_READERS).max(1)) {
        let share = share.to_vec();
        readers.spawn(async move {
            let mut connection = Connection::new(addr);
            let mut ids = Vec::new();
            let mut failed = Vec::new();
            for run_id in share {
                match run_status_seqs(&mut connection, &run_id).await {
                    Ok(seqs) => ids.extend(seqs.iter().map(|seq| format!("msg_{run_id}_{seq}"))),
                    Err(error) => failed.push(format!("reading the event log: {error:#}")),
                }
            }
            (ids, failed)
        });
    }
    let mut all = HashSet::new();
    while let Some(result) = readers.join_next().await {
        match result {
            Ok((ids, failed)) => {
                all.extend(ids);
                for error in failed {
                    *errors.entry(error).or_insert(0) += 1;
                }
            }
            Err(error) => *errors.entry(error.to_string()).or_insert(0) += 1,
        }
    }
    all
}

/// The seqs of a run's `run_status` events.
async fn run_status_seqs(connection: &mut Connection, run_id: &str) -> anyhow::Result<Vec<u64>> {
    #[derive(Deserialize)]
    struct Seq {
        seq: u64,
    }
    let request = format!(
        "GET /v1/runs/{run_id}/events HTTP/1.1\r\nhost: {}\r\naccept: text/event-stream\r\n\r\n",
        connection.addr()
    );
    let mut reader = SseReader::default();
    let mut frames: Vec<SseFrame> = Vec::new();
    connection
        .exchange(request.as_bytes(), |data| {
            Ok(reader.feed(data, &mut frames)?)
        })
        .await?;
    reader.finish()?;
    frames
        .iter()
        .filter(|frame| frame.event.as_deref() == Some("run_status"))
        .map(|frame| Ok(serde_json::from_str::<Seq>(&frame.data)?.seq))
        .collect()
}
