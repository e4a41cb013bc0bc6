//! `agentwire serve` killed with SIGKILL mid-run and started again on the same data dir: the run
//! is `incomplete` (code `interrupted`), everything a client saw before the kill is stored, and
//! its event stream replays to the end with no gap.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::Path;
use std::time::Duration;

use agentwire_core::{Event, EventKind, RunStatus};
use agentwire_dialects::StreamDecoder;
use agentwire_dialects::native::NativeSseDecoder;
use common::{Server, serve};
use serde_json::{Value, json};

/// Starts the server on `dir` with the test's configuration.
fn start(dir: &Path) -> Server {
    serve(dir, &["--config", "agentwire.toml"])
}

/// Reads SSE chunks into events until `done` says so or the body ends.
async fn read(
    response: &mut reqwest::Response,
    events: &mut Vec<Event>,
    done: impl Fn(&[Event]) -> bool,
) {
    let mut decoder = NativeSseDecoder::default();
    while !done(events) {
        let chunk = tokio::time::timeout(Duration::from_secs(10), response.chunk())
            .await
            .expect("a chunk within 10 s")
            .unwrap();
        let Some(chunk) = chunk else { break };
        decoder.decode(&chunk, events).unwrap();
    }
    events.retain(|event| event.name() != "heartbeat");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_cut_by_kill_9_is_incomplete_and_replays_after_restart() {
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
    std::fs::write(
        dir.path().join("agentwire.toml"),
        "[[agents]]\nname = \"assistant\"\nprovider = \"scripted\"\nscript = \"script.json\"\ntokens_per_second = 40\n",
    )
    .unwrap();

    let mut server = start(dir.path());
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
    // Past the reasoning part's completion and a few words into the text.
    let mut seen = Vec::new();
    read(&mut response, &mut seen, |events| {
        events
            .iter()
            .filter(|event| event.name() == "part_delta")
            .count()
            >= 8
    })
    .await;
    assert!(seen.iter().any(|event| event.name() == "part_complete"));
    server.child.kill().unwrap();
    server.child.wait().unwrap();
    drop(response);

    let server = start(dir.path());
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

    let mut replay = http
        .get(format!("{url}/v1/runs/{id}/events"))
        .send()
        .await
        .unwrap();
    assert_eq!(replay.status(), 200);
    let mut events = Vec::new();
    read(&mut replay, &mut events, |_| false).await;
    let seqs: Vec<u64> = events.iter().map(|event| event.seq).collect();
    assert_eq!(
        seqs,
        (1..=events.len() as u64).collect::<Vec<_>>(),
        "no gap"
    );
    // Everything the client saw up to its last completion was stored before it was sent;
    // deltas go ahead of their commit, so the ones after it may be lost.
    let completed = seen
        .iter()
        .rposition(|event| {
            !matches!(
                event.kind,
                EventKind::PartDelta { .. }
                    | EventKind::PartStart { .. }
                    | EventKind::MessageStart { .. }
                    | EventKind::Heartbeat { .. }
            )
        })
        .unwrap()
        + 1;
    assert!(
        seen[..completed]
            .iter()
            .any(|event| event.name() == "part_complete")
    );
    assert_eq!(&events[..completed], &seen[..completed]);
    assert!(matches!(
        &events.last().unwrap().kind,
        EventKind::RunStatus {
            status: RunStatus::Incomplete,
            ..
        }
    ));
    drop(server);
}
