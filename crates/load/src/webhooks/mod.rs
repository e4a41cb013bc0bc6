//! The webhooks scenario (`--webhooks`), the webhook target in one run: `runs` background runs
//! (`POST /v1/runs` with `"background": true`, answered 202 at once) of the scripted agent,
//! started evenly over `ramp`, with one webhook subscribed to every status change and delivered
//! to a receiver on loopback in this program (`receiver.rs`). On request the server is killed
//! with SIGKILL once (`kill_after`) and started again on the same configuration and store, the
//! runs still to start going to it (a start the kill cut is tried again there), and the
//! receiver answers 503 for a window (`receiver_down`). It reports:
//!
//! - **counts**: every status change of every run the server stored (its `run_status` events,
//!   read back from its event log once all runs have ended, `log.rs`; the runs the kill cut end
//!   `incomplete` on the restart, and those changes count too) and how many of them were
//!   delivered at least once, by `webhook-id`, which names the run and the seq; refusals and
//!   repeated deliveries apart;
//! - **latency** from status change to delivery (p50, p99, max): a delivery's arrival minus its
//!   payload's `timestamp`, the time the server committed the status change (the server and
//!   this program read the same clock; the payload's time has millisecond precision), for the
//!   first arrival of each change, and only for changes committed while the receiver was up
//!   whose way met neither outage (`outage.rs` says which are left out, and the report how
//!   many and why);
//! - with `record`, every request the receiver took, for the reference library to verify.

mod log;
mod outage;
mod receiver;
mod report;

use std::collections::{BTreeMap, HashSet};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::Context;
use serde_json::json;
use tokio::sync::watch;
use tokio::time::Instant;

pub use outage::{Exclusion, Outages, Way, Window, WindowError};
pub use report::WebhookReport;

use crate::request::post_json;
use crate::spawn::ServerProcess;
use crate::{AGENT, raise_file_limit};
use receiver::Receiver;

/// Statuses after which a run changes no more.
const TERMINAL: [&str; 5] = ["completed", "failed", "canceled", "rejected", "incomplete"];

/// How long deliveries the killed server had claimed stay claimed: the server's `[webhooks]
/// timeout` (10 s by default; this scenario keeps the defaults) and 5 s to record the outcome.
const CLAIM_LAPSE: Duration = Duration::from_secs(15);

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
    /// Kill the server with SIGKILL this long after the first run's start, then start it again.
    pub kill_after: Option<Duration>,
    /// The receiver answers 503 over this window.
    pub receiver_down: Option<Window>,
    /// Write every request the receiver took to this file, one JSON object a line: `secret`,
    /// `received_at` (seconds since the Unix epoch), `answered`, `headers` (the three
    /// `webhook-*`) and `body_base64` (the exact bytes).
    pub record: Option<PathBuf>,
}

/// Where the server listens, as the runs' starts see it.
#[derive(Clone, Copy, Debug)]
struct Live {
    /// `None` from the kill until the restarted server listens.
    addr: Option<SocketAddr>,
    /// Raised by the kill: a start that fails after it was cut by it.
    generation: u32,
}

/// A run started.
enum Started {
    /// On the first try.
    Run(String),
    /// After the kill cut the first try.
    Cut(String),
}

/// Runs the webhooks test and reports it.
///
/// # Errors
/// When the server or the receiver cannot be started, the webhook not created, or the server
/// not started again after the kill; runs that fail to start are counted in the report.
pub async fn webhooks(test: &Webhooks) -> anyhow::Result<WebhookReport> {
    anyhow::ensure!(test.runs > 0, "--runs must be at least 1");
    anyhow::ensure!(
        test.rate.is_finite() && test.rate > 0.0,
        "--rate must be a positive number of tokens per second"
    );
    // The server's connections to the receiver (256 at most), the starts that the restart
    // lets go at once, and the event logs read at the end.
    raise_file_limit(1024 + 16, "connections")?;
    let receiver = Receiver::new(test.record.is_some());
    let hook = receiver.start().await?;
    // Loopback is a private address: allowed for this test only. A node name of its own that
    // the restart keeps, so the restarted server ends the runs the kill cut at once (as a
    // server with a `node_id` does on PostgreSQL; on SQLite it always does).
    let node = format!(
        "load_{}_{}",
        std::process::id(),
        SystemTime::now().duration_since(UNIX_EPOCH)?.as_millis()
    );
    let mut server = ServerProcess::start_with(
        &test.agentwire,
        test.tokens,
        test.rate,
        test.database_url.as_deref(),
        &format!("[server]\nnode_id = \"{node}\"\n\n[webhooks]\nallow_private = true\n"),
    )?;
    let since = SystemTime::now();
    let (status, webhook) = post_json(server.addr, "/v1/webhooks", &json!({"url": hook})).await?;
    anyhow::ensure!(
        status == 201,
        "creating the webhook: HTTP {status}: {webhook}"
    );
    let secret = webhook["secret"]
        .as_str()
        .context("the webhook came without its secret")?
        .to_owned();

    let (live_sender, live) = watch::channel(Live {
        addr: Some(server.addr),
        generation: 0,
    });
    let started = Instant::now();
    let started_wall = SystemTime::now();
    let outage = test.receiver_down.map(|window| {
        let receiver = receiver.clone();
        tokio::spawn(async move {
            tokio::time::sleep_until(started + window.from).await;
            receiver.set_down(true);
            tokio::time::sleep_until(started + window.to).await;
            receiver.set_down(false);
        })
    });
    let gap = test.ramp.div_f64(test.runs as f64);
    let mut tasks = Vec::with_capacity(test.runs);
    for index in 0..test.runs {
        let at = started + gap.mul_f64(index as f64);
        let live = live.clone();
        tasks.push(tokio::spawn(async move {
            tokio::time::sleep_until(at).await;
            start_run(live).await
        }));
    }
    let mut server_down = None;
    if let Some(after) = test.kill_after {
        tokio::time::sleep_until(started + after).await;
        let (restarted, down) = kill_and_restart(server, &live_sender).await?;
        server = restarted;
        server_down = Some(down);
    }
    let addr = server.addr;
    let mut errors = BTreeMap::new();
    let mut runs = Vec::with_capacity(test.runs);
    let mut cut_starts = 0;
    for task in tasks {
        match task.await.map_err(anyhow::Error::from).and_then(|run| run) {
            Ok(Started::Run(run_id)) => runs.push(run_id),
            Ok(Started::Cut(run_id)) => {
                cut_starts += 1;
                runs.push(run_id);
            }
            Err(error) => *errors.entry(format!("{error:#}")).or_insert(0) += 1,
        }
    }
    if let Some(outage) = outage {
        outage.await?;
    }

    // Every started run ends within its script's time and a minute more, its last status
    // delivered after a claim the kill left lapses and a retry's wait after the outage.
    let outage_length = test
        .receiver_down
        .map_or(Duration::ZERO, |window| window.to - window.from);
    let late = CLAIM_LAPSE + outage_length;
    let script = Duration::from_secs_f64(f64::from(test.tokens) / test.rate);
    let deadline = Instant::now() + script + late + Duration::from_secs(60);
    while receiver.ended() < runs.len() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let mut all: HashSet<String> = runs.iter().cloned().collect();
    let runs_stored = match log::created_since(addr, since).await {
        Ok(stored) => {
            let count = stored.len();
            all.extend(stored);
            count
        }
        Err(error) => {
            *errors.entry(format!("{error:#}")).or_insert(0) += 1;
            0
        }
    };
    let all: Vec<String> = all.into_iter().collect();
    let logs = log::status_changes(addr, &all, &mut errors).await;
    let expected: HashSet<String> = logs.changes.keys().cloned().collect();
    // Deliveries of the last status changes may still be on their way.
    let deadline = Instant::now() + late + Duration::from_secs(30);
    while !receiver.has_all(&expected) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let taken = receiver.taken();
    let recorded = match &test.record {
        Some(path) => Some(receiver.write_records(path, &secret)?),
        None => None,
    };
    drop(server);

    let outages = Outages {
        receiver_down: taken.down,
        server_down,
    };
    let since_start = |at: SystemTime| {
        at.duration_since(started_wall)
            .unwrap_or_default()
            .as_secs_f64()
    };
    let wall = taken
        .last_at
        .map_or(started.elapsed(), |last| last.duration_since(started));
    let mut report = WebhookReport {
        runs: test.runs,
        started: runs.len(),
        cut_starts,
        runs_stored,
        ended: logs.ended.clone(),
        status_changes: expected.len(),
        refused: taken.refused,
        repeated: taken.repeated,
        killed_at_s: server_down.map(|(killed, _)| since_start(killed)),
        server_down_s: server_down
            .map(|(killed, up)| up.duration_since(killed).unwrap_or_default().as_secs_f64()),
        receiver_down_s: taken
            .down
            .map(|(from, to)| [since_start(from), since_start(to)]),
        recorded,
        wall_s: wall.as_secs_f64(),
        errors,
        ..WebhookReport::default()
    };
    if taken.unreadable > 0 {
        report.errors.insert(
            "requests the receiver could not read".to_owned(),
            taken.unreadable,
        );
    }
    report::tally(&logs.changes, &taken, &outages).into_report(&mut report);
    report.deliveries_per_s = report.delivered as f64 / wall.as_secs_f64().max(f64::EPSILON);
    Ok(report)
}

/// Kills the server with SIGKILL and starts it again, the starts meanwhile waiting for it;
/// the restarted server, and when it was down.
async fn kill_and_restart(
    mut server: ServerProcess,
    live: &watch::Sender<Live>,
) -> anyhow::Result<(ServerProcess, (SystemTime, SystemTime))> {
    let generation = live.borrow().generation + 1;
    live.send_replace(Live {
        addr: None,
        generation,
    });
    let killed = SystemTime::now();
    // Starting the server blocks until it listens: not on this program's one thread, which
    // serves the receiver.
    let server =
        tokio::task::spawn_blocking(move || server.kill_and_restart().map(|()| server)).await??;
    let up = SystemTime::now();
    live.send_replace(Live {
        addr: Some(server.addr),
        generation,
    });
    Ok((server, (killed, up)))
}

/// Starts one background run on the server listening now, or, if the kill cut the start,
/// once more on the restarted server.
async fn start_run(mut live: watch::Receiver<Live>) -> anyhow::Result<Started> {
    let mut cut = false;
    loop {
        let now = *live.wait_for(|live| live.addr.is_some()).await?;
        let addr = now.addr.context("the server is down")?;
        match start_background(addr).await {
            Ok(run_id) if cut => return Ok(Started::Cut(run_id)),
            Ok(run_id) => return Ok(Started::Run(run_id)),
            Err(_) if !cut && live.borrow().generation != now.generation => cut = true,
            Err(error) => return Err(error),
        }
    }
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
