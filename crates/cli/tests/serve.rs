//! `agentwire serve` with no arguments but a free port: it prints where it listens, answers
//! `/healthz` and runs the default agent, and exits cleanly on SIGTERM.
#![allow(clippy::unwrap_used)]

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

#[tokio::test]
async fn serve_starts_with_no_configuration_and_stops_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_agentwire"))
        .args(["serve", "--addr", "127.0.0.1:0"])
        .current_dir(dir.path())
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("AGENTWIRE_ADDR")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line
        .trim()
        .strip_prefix("agentwire listening on ")
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
        .to_owned();
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
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let status = child.wait().unwrap();
    assert!(status.success(), "exits cleanly on SIGTERM: {status}");
}
