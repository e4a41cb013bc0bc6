//! `agentwire serve` with no arguments but a free port: it prints where it listens, answers
//! `/healthz` and runs the default agent, and exits cleanly on SIGTERM.
#![allow(clippy::unwrap_used)]

mod common;

use std::process::Command;

use common::serve;

#[tokio::test]
async fn serve_starts_with_no_configuration_and_stops_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = serve(dir.path(), &[]);
    let url = server.url.clone();
    let http = reqwest::Client::new();
    let health = http.get(format!("{url}/healthz")).send().await.unwrap();
    assert_eq!(health.status(), 200);
    let agents: serde_json::Value = http
        .get(format!("{url}/v1/agents"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(agents["agents"][0]["name"], "assistant");
    let card: serde_json::Value = http
        .get(format!("{url}/v1/agents/assistant"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(card["brain"].as_str().unwrap().contains("demo"), "{card}");
    assert!(dir.path().join(".agentwire/workspace").is_dir());

    let killed = Command::new("kill")
        .args(["-TERM", &server.child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let status = server.child.wait().unwrap();
    assert!(status.success(), "exits cleanly on SIGTERM: {status}");
}
