//! The store's retention from the server: `[store]` is read, and with `compact_after = "0s"` a
//! finished run's stored log is compacted and replays through the native SSE from every point
//! exactly as it streamed.
#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use agentwire_brain::ScriptedBrain;
use agentwire_core::{Accumulator, Event};
use agentwire_runtime::Agent;
use agentwire_server::{ConfigFile, Settings};
use agentwire_tools::{FnTool, JsonSchema};
use common::{TestServer, run_body};
use serde::Deserialize;
use serde_json::json;

#[test]
fn the_store_table_reads_durations() {
    let read = |store: &str| ConfigFile::from_toml(&format!("[server]\n[store]\n{store}"));
    let settings = read("compact_after = \"10m\"\ndelete_after = \"30d\"")
        .unwrap()
        .settings(|_| None)
        .unwrap();
    assert_eq!(settings.compact_after, Duration::from_secs(600));
    assert_eq!(
        settings.delete_after,
        Some(Duration::from_secs(30 * 86_400))
    );
    let defaults = read("").unwrap().settings(|_| None).unwrap();
    assert_eq!(defaults.compact_after, Duration::from_secs(3600));
    assert_eq!(defaults.delete_after, None, "kept for ever");
    assert_eq!(
        read("compact_after = \"0s\"").unwrap().store.compact_after,
        Some(Duration::ZERO)
    );
    for (bad, says) in [
        ("compact_after = \"soon\"", "not a duration"),
        ("delete_after = 30", "invalid type"),
        ("keep_for = \"1d\"", "unknown field"),
    ] {
        let error = read(bad).unwrap_err().to_string();
        assert!(error.contains(says), "{bad}: {error}");
        assert!(error.contains("line 3"), "{bad}: {error}");
    }
}

/// The arguments of `look`.
#[derive(Deserialize, JsonSchema)]
#[schemars(crate = "agentwire_tools::schemars")]
struct Look {
    #[allow(dead_code)]
    at: String,
}

/// Reasoning, text, two tool calls streamed at once with odd whitespace in their argument
/// text (ending in the other order), their results, then the answer.
fn looker() -> Agent {
    let script = json!({"turns": [
        [{"type": "reasoning_delta", "text": "Two "}, {"type": "reasoning_delta", "text": "places."},
         {"type": "text_delta", "text": "Looking "}, {"type": "text_delta", "text": "now."},
         {"type": "tool_call_start", "id": "c1", "name": "look"},
         {"type": "tool_call_start", "id": "c2", "name": "look"},
         {"type": "tool_call_delta", "id": "c1", "args": "{ \"at\" :"},
         {"type": "tool_call_delta", "id": "c2", "args": "{\"at\": \"b\"}\n"},
         {"type": "tool_call_delta", "id": "c1", "args": "\t\"a\" }"},
         {"type": "tool_call_end", "id": "c2"},
         {"type": "tool_call_end", "id": "c1"},
         {"type": "finish", "reason": "tool_calls"}],
        [{"type": "text_delta", "text": "Both "}, {"type": "text_delta", "text": "are "},
         {"type": "text_delta", "text": "fine."},
         {"type": "finish", "reason": "stop", "usage": {"input_tokens": 9, "output_tokens": 7, "total_tokens": 16}}]
    ]});
    let look = FnTool::new("look", "Looks somewhere", |_: Look, _| async move {
        Ok("fine".to_owned())
    });
    Agent::builder("looker")
        .brain(ScriptedBrain::from_json(&script.to_string()).unwrap())
        .tool(look)
        .build()
        .unwrap()
}

/// Whether the run's log is one row in compact form.
async fn is_compacted(url: &str, run_id: &str) -> bool {
    let pool = sqlx::SqlitePool::connect(url).await.unwrap();
    let rows: Vec<(i64, String)> = sqlx::query_as(
        "SELECT compacted, events FROM runs JOIN event_batches ON run_id = id WHERE id = $1",
    )
    .bind(run_id)
    .fetch_all(&pool)
    .await
    .unwrap();
    pool.close().await;
    matches!(rows.as_slice(), [(1, events)] if events.starts_with('{'))
}

fn messages(events: &[Event]) -> Vec<agentwire_core::Message> {
    let mut accumulator = Accumulator::default();
    for event in events {
        accumulator.push(event).unwrap();
    }
    accumulator.into_messages()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_finished_runs_stored_replay_is_compacted_and_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("aw.db").display());
    let settings = |compact_after| Settings {
        database_url: Some(url.clone()),
        compact_after,
        ..Settings::default()
    };

    // The run as it streamed, live, from a server that compacts nothing yet.
    let first = TestServer::start(vec![looker()], settings(Duration::from_secs(3600))).await;
    let mut body = run_body(Some("looker"), "look at a and b");
    body["session_id"] = json!("ses_looked");
    let mut live = first.post_sse(&body).await;
    live.until_end().await;
    let streamed: Vec<Event> = live
        .events
        .iter()
        .filter(|event| event.name() != "heartbeat")
        .cloned()
        .collect();
    let id = live.accumulator.run_id().unwrap().to_string();
    assert!(!is_compacted(&url, &id).await);
    first.shutdown().await;

    // A restarted server compacts it at once (and reads it from the store: it is not in memory).
    let second = TestServer::start(vec![looker()], settings(Duration::ZERO)).await;
    let mut waited = 0;
    while !is_compacted(&url, &id).await {
        assert!(waited < 600, "compacted within a minute");
        tokio::time::sleep(Duration::from_millis(100)).await;
        waited += 1;
    }
    let last = streamed.last().unwrap().seq;
    assert_eq!(streamed.len() as u64, last, "one event per seq");
    for after in 0..=last {
        let replayed = second.events_after(&id, after).await;
        let replayed: Vec<Event> = replayed
            .events
            .into_iter()
            .filter(|event| event.name() != "heartbeat")
            .collect();
        let expected: Vec<Event> = streamed
            .iter()
            .filter(|event| event.seq > after)
            .cloned()
            .collect();
        assert_eq!(replayed, expected, "after {after}");
        let seen = streamed.iter().filter(|event| event.seq <= after);
        assert_eq!(
            messages(&seen.cloned().chain(replayed).collect::<Vec<_>>()),
            messages(&streamed)
        );
    }
    let run = second.completed_run(&id).await;
    assert_eq!(
        run["output"],
        serde_json::to_value(messages(&streamed)).unwrap()
    );
    second.shutdown().await;
}
