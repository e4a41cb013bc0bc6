//! `agentwire serve` killed with SIGKILL mid-run and started again on the same store: the run is
//! `incomplete` (code `interrupted`), everything a client saw up to its last completion is
//! stored as it saw it, no seq it saw is given to another event, a resume from the last event
//! it saw ends with the run's terminal status, and the parts the run completed join its session. A property over where the kill falls, on
//! SQLite and (when `AGENTWIRE_TEST_DATABASE_URL` is set) on PostgreSQL.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::Path;

use agentwire_core::{Event, EventKind, RunStatus};
use common::{Server, read, serve};
use proptest::prelude::*;
use serde_json::{Value, json};

/// Starts the server on `dir` with the test's configuration, on the store `database_url` (the
/// data dir's SQLite file when `None`).
fn start(dir: &Path, database_url: Option<&str>) -> Server {
    match database_url {
        Some(url) => serve(dir, &["--config", "agentwire.toml", "--database-url", url]),
        None => serve(dir, &["--config", "agentwire.toml"]),
    }
}

/// Whether readers may see the event before it is stored (what a crash may lose).
fn may_precede_commit(event: &Event) -> bool {
    matches!(
        event.kind,
        EventKind::PartDelta { .. } | EventKind::PartStart { .. } | EventKind::MessageStart { .. }
    )
}

/// One crash: a client reads `read_before_kill` events of a streaming run, the server is
/// killed, started again, and the client resumes from the last event it saw.
async fn crash_after(read_before_kill: usize, database_url: Option<&str>) {
    let dir = tempfile::tempdir().unwrap();
    let mut turn: Vec<Value> = (0..4)
        .map(|_| json!({"type": "reasoning_delta", "text": "hmm "}))
        .collect();
    turn.extend((0..400).map(|_| json!({"type": "text_delta", "text": "word "})));
    turn.push(json!({"type": "finish", "reason": "stop"}));
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
    std::fs::write(
        dir.path().join("agentwire.toml"),
        format!(
            "[server]\nnode_id = \"{node}\"\n\n[[agents]]\nname = \"assistant\"\n\
             provider = \"scripted\"\nscript = \"script.json\"\ntokens_per_second = 200\n"
        ),
    )
    .unwrap();

    let mut server = start(dir.path(), database_url);
    let url = server.url.clone();
    let http = reqwest::Client::new();
    let mut response = http
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
    let mut seen = Vec::new();
    read(&mut response, &mut seen, |events| {
        events.len() >= read_before_kill
    })
    .await;
    server.child.kill().unwrap();
    server.child.wait().unwrap();
    drop(response);
    let last_seen = seen.last().map_or(0, |event| event.seq);

    let server = start(dir.path(), database_url);
    let url = server.url.clone();
    let run: Value = http
        .get(format!("{url}/v1/runs/{id}"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(run["run"]["status"], "incomplete", "{run}");
    assert_eq!(run["run"]["error"]["code"], "interrupted");

    // The client resumes from the last event it saw: the stream ends with the run's end.
    let mut resumed = http
        .get(format!("{url}/v1/runs/{id}/events?after={last_seen}"))
        .send()
        .await
        .unwrap();
    assert_eq!(resumed.status(), 200);
    let mut after = Vec::new();
    read(&mut resumed, &mut after, |_| false).await;
    let end = after
        .last()
        .expect("the resumed stream ends with the run's status");
    assert!(
        matches!(
            &end.kind,
            EventKind::RunStatus {
                status: RunStatus::Incomplete,
                ..
            }
        ),
        "{after:?}"
    );
    assert!(after.iter().all(|event| event.seq > last_seen), "{after:?}");

    // The whole replay: stored events with no gap, then the end after every seq seen.
    let mut replay = http
        .get(format!("{url}/v1/runs/{id}/events"))
        .send()
        .await
        .unwrap();
    let mut events = Vec::new();
    read(&mut replay, &mut events, |_| false).await;
    let (end, stored) = events.split_last().unwrap();
    let seqs: Vec<u64> = stored.iter().map(|event| event.seq).collect();
    assert_eq!(
        seqs,
        (1..=stored.len() as u64).collect::<Vec<_>>(),
        "no gap"
    );
    assert!(
        end.seq > last_seen,
        "the end's seq {} was seen before",
        end.seq
    );
    // Everything seen up to its last completion was stored before it was sent; deltas after
    // it may be lost, but no stored event took the seq of one the client saw.
    let completed = seen
        .iter()
        .rposition(|event| !may_precede_commit(event))
        .map_or(0, |at| at + 1);
    assert_eq!(&stored[..completed], &seen[..completed]);
    for event in stored {
        if let Some(saw) = seen.iter().find(|saw| saw.seq == event.seq) {
            assert_eq!(saw, event, "seq {} was given twice", event.seq);
        }
    }

    // The Rust SDK reads the whole run too: the skip before the end is the one it allows.
    let sdk = agentwire_client::Client::new(&url).unwrap();
    let mut stream = sdk.events(&id.as_str().into());
    assert_eq!(stream.finish().await.unwrap(), Some(RunStatus::Incomplete));

    // What the run completed joined its session, marked as cut short.
    let session_id = run["run"]["session_id"].as_str().unwrap();
    let session: Value = http
        .get(format!("{url}/v1/sessions/{session_id}"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let messages = session["messages"].as_array().unwrap();
    let completed_parts: Vec<Value> = stored
        .iter()
        .filter_map(|event| match &event.kind {
            EventKind::PartComplete { part, .. } => Some(serde_json::to_value(part).unwrap()),
            _ => None,
        })
        .collect();
    if completed_parts
        .iter()
        .all(|part| part["type"] == "step_start")
    {
        assert_eq!(messages.len(), 1, "only the input: {session}");
    } else {
        assert_eq!(messages.len(), 2, "{session}");
        assert_eq!(messages[1]["metadata"]["incomplete"], true, "{session}");
        assert_eq!(messages[1]["parts"].as_array().unwrap(), &completed_parts);
    }
    drop(server);
}

fn cases() -> ProptestConfig {
    ProptestConfig {
        cases: std::env::var("AGENTWIRE_KILL9_CASES")
            .ok()
            .and_then(|cases| cases.parse().ok())
            .unwrap_or(6),
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(cases())]

    /// Wherever the kill falls (from right after the run's start to deep in its text), on the
    /// data dir's SQLite file.
    #[test]
    fn seqs_are_never_reused_across_a_kill_9_on_sqlite(read_before_kill in 1usize..300) {
        runtime().block_on(crash_after(read_before_kill, None));
    }

    /// The same on PostgreSQL, with a stable node name.
    #[test]
    fn seqs_are_never_reused_across_a_kill_9_on_postgres(read_before_kill in 1usize..300) {
        runtime().block_on(async {
            if let Some(url) = agentwire_testkit::postgres::schema_url().await {
                crash_after(read_before_kill, Some(&url)).await;
            }
        });
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}
