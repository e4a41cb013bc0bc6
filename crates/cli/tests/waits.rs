//! Runs that wait for a person outlive `kill -9`: a run awaiting an approval when its server
//! is killed waits on in the store, and goes on when the approval arrives — at the restarted
//! server (SQLite), or at another node once the dead one's lease lapses (PostgreSQL,
//! `AGENTWIRE_TEST_DATABASE_URL`; skipped without it). Its stream is numbered on without a gap,
//! and the approved call runs once.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use agentwire_core::{Event, EventKind, Part};
use common::{Server, read, serve};
use serde_json::{Value, json};

/// Writes the configuration `name.toml`: an agent whose `write_file` needs approval, scripted
/// to write `note.txt` and then say so.
fn configure(dir: &Path, name: &str, node: Option<&str>) -> String {
    let script = json!({"turns": [
        [{"type": "tool_call_start", "id": "c1", "name": "write_file"},
         {"type": "tool_call_delta", "id": "c1", "args": "{\"path\": \"note.txt\", \"content\": \"kept\"}"},
         {"type": "tool_call_end", "id": "c1"},
         {"type": "finish", "reason": "tool_calls"}],
        [{"type": "text_delta", "text": "written"}, {"type": "finish", "reason": "stop"}]
    ]});
    std::fs::write(dir.join("script.json"), script.to_string()).unwrap();
    let server = match node {
        Some(node) => format!("[server]\nnode_id = \"{node}\"\nlease_seconds = 2\n\n"),
        None => String::new(),
    };
    let config = format!("{name}.toml");
    std::fs::write(
        dir.join(&config),
        format!(
            "{server}[[agents]]\nname = \"assistant\"\nprovider = \"scripted\"\n\
             script = \"script.json\"\ntools = [\"write_file\"]\nworkspace = \"ws\"\n\
             approval = [\"write_file\"]\n"
        ),
    )
    .unwrap();
    config
}

/// Reads a native SSE stream to its end (heartbeats dropped).
async fn events(mut response: reqwest::Response) -> Vec<Event> {
    let mut events = Vec::new();
    read(&mut response, &mut events, |_| false).await;
    events
}

/// Starts a run that waits for the approval of its call; its id, approval id and events.
async fn waiting_run(http: &reqwest::Client, url: &str) -> (String, String, Vec<Event>) {
    let response = http
        .post(format!("{url}/v1/runs"))
        .header("accept", "text/event-stream")
        .json(&json!({"input": [{"role": "user", "parts": [{"type": "text", "text": "note it"}]}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let id = response.headers()["x-agentwire-run-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let events = events(response).await;
    let approval_id = events
        .iter()
        .find_map(|event| match &event.kind {
            EventKind::PartComplete {
                part: Part::ApprovalRequest(request),
                ..
            } => Some(request.approval_id.to_string()),
            _ => None,
        })
        .expect("an approval request");
    assert!(is_status(events.last().unwrap(), "awaiting"));
    (id, approval_id, events)
}

fn is_status(event: &Event, name: &str) -> bool {
    matches!(&event.kind, EventKind::RunStatus { status, .. } if status.name() == name)
}

async fn approve(http: &reqwest::Client, url: &str, id: &str, approval_id: &str) -> u16 {
    http.post(format!("{url}/v1/runs/{id}/input"))
        .json(&json!({"role": "user", "parts": [{"type": "approval_response", "approval_id": approval_id, "approved": true}]}))
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

/// The run's whole stream through `url`: numbered 1.. without a gap, what was seen before the
/// kill as it was, ending `status`.
async fn check_whole(http: &reqwest::Client, url: &str, id: &str, before: &[Event], status: &str) {
    let response = http
        .get(format!("{url}/v1/runs/{id}/events"))
        .send()
        .await
        .unwrap();
    let whole = events(response).await;
    let seqs: Vec<u64> = whole.iter().map(|event| event.seq).collect();
    assert_eq!(seqs, (1..=whole.len() as u64).collect::<Vec<_>>());
    assert_eq!(&whole[..before.len()], before);
    assert!(
        is_status(whole.last().unwrap(), status),
        "{:?}",
        whole.last()
    );
}

fn kill(mut server: Server) {
    server.child.kill().unwrap();
    server.child.wait().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_run_survives_kill_9_and_goes_on_after_the_restart() {
    let dir = tempfile::tempdir().unwrap();
    let config = configure(dir.path(), "agentwire", None);
    let http = reqwest::Client::new();
    let server = serve(dir.path(), &["--config", &config]);
    let (id, approval_id, before) = waiting_run(&http, &server.url).await;
    kill(server);

    let server = serve(dir.path(), &["--config", &config]);
    let run: Value = http
        .get(format!("{}/v1/runs/{id}", server.url))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(run["run"]["status"], "awaiting", "{run}");
    assert_eq!(approve(&http, &server.url, &id, &approval_id).await, 202);
    check_whole(&http, &server.url, &id, &before, "completed").await;
    let written = std::fs::read_to_string(dir.path().join("ws/note.txt")).unwrap();
    assert_eq!(written, "kept");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_waiting_on_a_killed_node_goes_on_through_another() {
    let Some(url) = agentwire_testkit::postgres::schema_url().await else {
        eprintln!("AGENTWIRE_TEST_DATABASE_URL is not set: skipped");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let name = dir
        .path()
        .file_name()
        .unwrap()
        .to_string_lossy()
        .replace('.', "_");
    let start = |node: &str| {
        let config = configure(dir.path(), node, Some(node));
        serve(dir.path(), &["--config", &config, "--database-url", &url])
    };
    let doomed = start(&format!("{name}_a"));
    let survivor = start(&format!("{name}_b"));
    let http = reqwest::Client::new();
    let (approved, approval_id, before) = waiting_run(&http, &doomed.url).await;
    let (canceled, _, _) = waiting_run(&http, &doomed.url).await;
    kill(doomed);

    // Through the other node at once, one answered and one canceled: it takes each over once
    // the dead node's lease lapses, and answers or cancels it then.
    let asked = Instant::now();
    let (approval, cancel) = tokio::join!(
        approve(&http, &survivor.url, &approved, &approval_id),
        http.post(format!("{}/v1/runs/{canceled}/cancel", survivor.url))
            .send(),
    );
    let took = asked.elapsed();
    assert_eq!(approval, 202);
    let cancel = cancel.unwrap().status();
    assert!(cancel.is_success(), "{cancel}");
    assert!(took < Duration::from_secs(10), "done after {took:?}");
    eprintln!("answered and canceled {took:?} after the kill");

    check_whole(&http, &survivor.url, &approved, &before, "completed").await;
    let written = std::fs::read_to_string(dir.path().join("ws/note.txt")).unwrap();
    assert_eq!(written, "kept");
    check_whole(&http, &survivor.url, &canceled, &[], "canceled").await;
}
