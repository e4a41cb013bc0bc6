//! Webhooks across `kill -9`: background runs going with a webhook subscribed, the receiver
//! down (answering 503), `agentwire serve` killed with SIGKILL and started again on the same
//! store, more runs, then the receiver up: every status change of every run (its `run_status`
//! events, read back from its log, including the `incomplete` the restart gives the runs it cut)
//! is delivered at least once, deduplicated by `webhook-id`. On SQLite, and on PostgreSQL when
//! `AGENTWIRE_TEST_DATABASE_URL` is set. Signatures are checked by the reference library in
//! `peers/webhooks`.
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::{BTreeSet, HashMap};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agentwire_core::{EventKind, RunStatus};
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use common::{Server, read, serve};
use serde_json::{Value, json};

/// Background runs started before the kill, and as many after it.
const RUNS: usize = 30;

/// A status change: the run and the seq of its `run_status` event.
type Change = (String, u64);

/// A webhook receiver on `127.0.0.1:0`: 503 while `down`, else 204 and the delivery kept by
/// its `webhook-id` (a retry of a status change taken before replaces nothing).
#[derive(Clone, Default)]
struct Receiver {
    down: Arc<AtomicBool>,
    refused: Arc<AtomicUsize>,
    taken: Arc<Mutex<HashMap<String, Change>>>,
}

impl Receiver {
    async fn start(&self) -> String {
        let app = axum::Router::new()
            .route("/hook", axum::routing::post(take))
            .with_state(self.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/hook", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        url
    }

    fn delivered(&self) -> BTreeSet<Change> {
        self.taken.lock().unwrap().values().cloned().collect()
    }
}

async fn take(State(receiver): State<Receiver>, headers: HeaderMap, body: Bytes) -> StatusCode {
    if receiver.down.load(Ordering::SeqCst) {
        receiver.refused.fetch_add(1, Ordering::SeqCst);
        return StatusCode::SERVICE_UNAVAILABLE;
    }
    let body: Value = serde_json::from_slice(&body).unwrap();
    let change = (
        body["data"]["run_id"].as_str().unwrap().to_owned(),
        body["data"]["seq"].as_u64().unwrap(),
    );
    let id = headers["webhook-id"].to_str().unwrap().to_owned();
    assert_eq!(id, format!("msg_{}_{}", change.0, change.1));
    receiver.taken.lock().unwrap().insert(id, change);
    StatusCode::NO_CONTENT
}

fn start(dir: &Path, database_url: Option<&str>) -> Server {
    match database_url {
        Some(url) => serve(dir, &["--config", "agentwire.toml", "--database-url", url]),
        None => serve(dir, &["--config", "agentwire.toml"]),
    }
}

async fn start_background(http: &reqwest::Client, url: &str) -> String {
    let response = http
        .post(format!("{url}/v1/runs"))
        .json(&json!({
            "background": true,
            "input": [{"role": "user", "parts": [{"type": "text", "text": "go"}]}],
        }))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 202);
    let answer: Value = response.json().await.unwrap();
    answer["run"]["id"].as_str().unwrap().to_owned()
}

/// The run's status changes, from its whole log (the stream ends once the run has), and the
/// status it ended with.
async fn status_changes(
    http: &reqwest::Client,
    url: &str,
    run_id: &str,
) -> (Vec<Change>, RunStatus) {
    let mut response = http
        .get(format!("{url}/v1/runs/{run_id}/events"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let mut events = Vec::new();
    read(&mut response, &mut events, |_| false).await;
    let changes: Vec<Change> = events
        .iter()
        .filter(|event| matches!(event.kind, EventKind::RunStatus { .. }))
        .map(|event| (run_id.to_owned(), event.seq))
        .collect();
    match events.last().map(|event| &event.kind) {
        Some(EventKind::RunStatus { status, .. }) if status.is_terminal() => (changes, *status),
        _ => panic!("run {run_id} has not ended: {events:?}"),
    }
}

async fn kill_and_restart(database_url: Option<&str>) {
    let dir = tempfile::tempdir().unwrap();
    // About a second per run, so the kill cuts some of them.
    let turn: Vec<Value> = (0..20)
        .map(|_| json!({"type": "text_delta", "text": "word "}))
        .chain([json!({"type": "finish", "reason": "stop"})])
        .collect();
    std::fs::write(
        dir.path().join("script.json"),
        json!({"turns": [turn]}).to_string(),
    )
    .unwrap();
    // A node name of its own, so a shared PostgreSQL's other runs are not this node's.
    let node = dir
        .path()
        .file_name()
        .unwrap()
        .to_string_lossy()
        .replace('.', "_");
    // A short timeout: a claim the kill left lapses that long (plus 5 s) after it was taken.
    std::fs::write(
        dir.path().join("agentwire.toml"),
        format!(
            "[server]\nnode_id = \"{node}\"\n\n[webhooks]\nallow_private = true\n\
             timeout = \"1s\"\nmax_backoff = \"500ms\"\n\n[[agents]]\nname = \"assistant\"\n\
             provider = \"scripted\"\nscript = \"script.json\"\ntokens_per_second = 20\n"
        ),
    )
    .unwrap();
    let receiver = Receiver::default();
    let hook = receiver.start().await;
    let http = reqwest::Client::new();

    let mut server = start(dir.path(), database_url);
    let response = http
        .post(format!("{}/v1/webhooks", server.url))
        .json(&json!({"url": hook}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 201);
    let mut runs = Vec::new();
    for _ in 0..RUNS {
        runs.push(start_background(&http, &server.url).await);
    }
    // Some deliveries taken, then the receiver goes down while the runs go on, and the server
    // is killed with deliveries owed, some of them claimed.
    let deadline = Instant::now() + Duration::from_secs(20);
    while receiver.delivered().len() < RUNS {
        assert!(Instant::now() < deadline, "no deliveries before the kill");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    receiver.down.store(true, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(300)).await;
    server.child.kill().unwrap();
    server.child.wait().unwrap();

    let server = start(dir.path(), database_url);
    for _ in 0..RUNS {
        runs.push(start_background(&http, &server.url).await);
    }
    let (mut expected, mut cut) = (BTreeSet::new(), 0);
    for run_id in &runs {
        let (changes, end) = status_changes(&http, &server.url, run_id).await;
        expected.extend(changes);
        cut += usize::from(end == RunStatus::Incomplete);
    }
    assert!(cut > 0, "the kill cut some runs");
    assert!(
        receiver.refused.load(Ordering::SeqCst) > 0,
        "the receiver was down for some"
    );
    receiver.down.store(false, Ordering::SeqCst);

    // A claim cut by the kill lapses after the timeout and 5 s, then the retry's backoff.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let missing: Vec<_> = expected
            .difference(&receiver.delivered())
            .cloned()
            .collect();
        if missing.is_empty() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{} of {} status changes never delivered, e.g. {:?}",
            missing.len(),
            expected.len(),
            &missing[..missing.len().min(5)]
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Nothing was delivered that did not happen.
    assert!(receiver.delivered().is_subset(&expected));
    drop(server);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_status_change_is_delivered_across_a_kill_9_on_sqlite() {
    kill_and_restart(None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_status_change_is_delivered_across_a_kill_9_on_postgres() {
    if let Some(url) = agentwire_testkit::postgres::schema_url().await {
        kill_and_restart(Some(&url)).await;
    }
}
