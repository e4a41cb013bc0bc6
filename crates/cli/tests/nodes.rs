//! Two `agentwire serve` nodes on one PostgreSQL (`AGENTWIRE_TEST_DATABASE_URL`; skipped
//! without it): one is killed with SIGKILL while it runs, and the other, once the dead node's
//! lease lapses, ends its runs `incomplete`, so a client following a run through the live node
//! sees it end within 10 s, after every seq it saw; a cancel through the live node ends a run
//! of the dead one at once.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use agentwire_core::{Event, EventKind, RunStatus};
use agentwire_dialects::StreamDecoder;
use agentwire_dialects::native::NativeSseDecoder;
use common::{Server, serve};
use serde_json::{Value, json};

/// Starts a node named `node` of the test's configuration on `url`.
fn start(dir: &Path, node: &str, url: &str) -> Server {
    let config = format!("{node}.toml");
    std::fs::write(
        dir.join(&config),
        format!(
            "[server]\nnode_id = \"{node}\"\nlease_seconds = 2\n\n[[agents]]\n\
             name = \"assistant\"\nprovider = \"scripted\"\nscript = \"script.json\"\n\
             tokens_per_second = 20\n"
        ),
    )
    .unwrap();
    serve(dir, &["--config", &config, "--database-url", url])
}

/// A run's event stream as a client reads it.
struct Follower {
    response: reqwest::Response,
    decoder: NativeSseDecoder,
    events: Vec<Event>,
}

impl Follower {
    fn new(response: reqwest::Response) -> Self {
        Self {
            response,
            decoder: NativeSseDecoder::default(),
            events: Vec::new(),
        }
    }

    /// Reads the next chunk (within 15 s); false at the stream's end. Heartbeats are dropped.
    async fn chunk(&mut self) -> bool {
        let chunk = tokio::time::timeout(Duration::from_secs(15), self.response.chunk())
            .await
            .expect("a chunk within 15 s")
            .unwrap();
        let Some(chunk) = chunk else { return false };
        self.decoder.decode(&chunk, &mut self.events).unwrap();
        self.events.retain(|event| event.name() != "heartbeat");
        true
    }

    /// Reads until `done` says so or the stream ends.
    async fn until(&mut self, done: impl Fn(&[Event]) -> bool) {
        while !done(&self.events) && self.chunk().await {}
    }

    /// Reads `deltas` more text deltas, with when each arrived.
    async fn arrivals(&mut self, deltas: usize) -> Vec<(u64, Instant)> {
        let mut arrived = Vec::new();
        while arrived.len() < deltas {
            let before = self.events.len();
            assert!(self.chunk().await, "the stream goes on");
            let at = Instant::now();
            arrived.extend(
                self.events[before..]
                    .iter()
                    .filter(|event| event.name() == "part_delta")
                    .map(|event| (event.seq, at)),
            );
        }
        arrived
    }
}

async fn start_run(http: &reqwest::Client, url: &str) -> (String, reqwest::Response) {
    let response = http
        .post(format!("{url}/v1/runs"))
        .header("accept", "text/event-stream")
        .json(&json!({"input": [{"role": "user", "parts": [{"type": "text", "text": "go"}]}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let id = response.headers()["x-agentwire-run-id"]
        .to_str()
        .unwrap()
        .to_owned();
    (id, response)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_runs_of_a_killed_node_end_through_the_others_within_10_s() {
    let Some(url) = agentwire_testkit::postgres::schema_url().await else {
        eprintln!("AGENTWIRE_TEST_DATABASE_URL is not set: skipped");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let turn: Vec<Value> = (0..400)
        .map(|_| json!({"type": "text_delta", "text": "word "}))
        .chain([json!({"type": "finish", "reason": "stop"})])
        .collect();
    std::fs::write(
        dir.path().join("script.json"),
        json!({"turns": [turn]}).to_string(),
    )
    .unwrap();
    let name = dir
        .path()
        .file_name()
        .unwrap()
        .to_string_lossy()
        .replace('.', "_");
    let mut doomed = start(dir.path(), &format!("{name}_a"), &url);
    let survivor = start(dir.path(), &format!("{name}_b"), &url);
    let http = reqwest::Client::new();

    let (followed, on_a) = start_run(&http, &doomed.url).await;
    let (canceled, _second) = start_run(&http, &doomed.url).await;
    let mut on_a = Follower::new(on_a);
    on_a.until(|events| events.len() >= 6).await;
    // The same run through the other node.
    let on_b = http
        .get(format!("{}/v1/runs/{followed}/events", survivor.url))
        .send()
        .await
        .unwrap();
    assert_eq!(on_b.status(), 200);
    let mut on_b = Follower::new(on_b);
    on_b.until(|events| !events.is_empty()).await;

    // Live tail: each delta reaches the other node's reader about when it reaches this one's
    // (without the owner publishing them, deltas reach the store, and so the other node, in
    // batches up to 3 s apart).
    let (at_a, at_b) = tokio::join!(on_a.arrivals(40), on_b.arrivals(40));
    let mut lags: Vec<Duration> = at_b
        .iter()
        .filter_map(|(seq, at)| {
            let on_a = at_a.iter().find(|(other, _)| other == seq)?;
            Some(at.saturating_duration_since(on_a.1))
        })
        .collect();
    lags.sort();
    assert!(lags.len() >= 20, "{} deltas seen on both nodes", lags.len());
    let p99 = lags[(lags.len() * 99).div_ceil(100) - 1];
    eprintln!(
        "cross-node lag over {} deltas: p50 {:?}, p99 {p99:?}",
        lags.len(),
        lags[lags.len() / 2]
    );
    assert!(
        p99 < Duration::from_secs(1),
        "deltas reached the other node {p99:?} later"
    );

    doomed.child.kill().unwrap();
    doomed.child.wait().unwrap();
    let killed_at = Instant::now();
    let seen = on_a.events.clone();
    drop(on_a);
    on_b.until(|events| {
        events.last().is_some_and(|event| {
            matches!(&event.kind, EventKind::RunStatus { status, .. } if status.is_terminal())
        })
    })
    .await;
    let ended_after = killed_at.elapsed();
    let through_b = &on_b.events;
    let end = through_b.last().unwrap();
    assert!(
        matches!(
            &end.kind,
            EventKind::RunStatus {
                status: RunStatus::Incomplete,
                ..
            }
        ),
        "{end:?}"
    );
    assert!(
        ended_after < Duration::from_secs(10),
        "ended {ended_after:?} after the kill"
    );
    let last_seen = seen
        .iter()
        .chain(&through_b[..through_b.len() - 1])
        .map(|event| event.seq)
        .max()
        .unwrap();
    assert!(
        end.seq > last_seen,
        "the end's seq {} was seen before",
        end.seq
    );

    // A cancel through the live node of the dead node's other run: it has ended already, or
    // ends now.
    let answer = http
        .post(format!("{}/v1/runs/{canceled}/cancel", survivor.url))
        .send()
        .await
        .unwrap();
    assert!(answer.status().is_success(), "{}", answer.status());
    let run: Value = http
        .get(format!("{}/v1/runs/{canceled}", survivor.url))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(run["run"]["status"], "incomplete", "{run}");
    drop(survivor);
}
