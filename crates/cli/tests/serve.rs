//! `agentwire serve` with no arguments but a free port: it prints where it listens, answers
//! `/healthz` and runs the default agent, and exits cleanly on SIGTERM; at the default level it
//! logs what it serves and each request, as text or JSON.
#![allow(clippy::unwrap_used)]

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

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

/// `agentwire serve ARGS` at the default log level: what it logs to stderr while it starts,
/// answers `GET /healthz` and stops on SIGTERM.
async fn logs_of_serve(args: &[&str]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_agentwire"))
        .args(["serve", "--addr", "127.0.0.1:0"])
        .args(args)
        .current_dir(dir.path())
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("AGENTWIRE_ADDR")
        .env_remove("AGENTWIRE_DATABASE_URL")
        .env_remove("RUST_LOG")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line.trim().strip_prefix("agentwire listening on ").unwrap();
    let health = reqwest::get(format!("{url}/healthz")).await.unwrap();
    assert_eq!(health.status(), 200);
    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success(), "{output:?}");
    String::from_utf8(output.stderr).unwrap()
}

#[tokio::test]
async fn serve_says_what_it_serves_and_logs_each_request() {
    let logs = logs_of_serve(&[]).await;
    for said in [
        "serving agent assistant on the demo brain, offline and scripted",
        "listening on http://127.0.0.1:",
        "database sqlite://.agentwire/agentwire.db",
        "no API keys required",
    ] {
        assert!(logs.contains(said), "{said:?} in {logs}");
    }
    let request = logs
        .lines()
        .find(|line| line.contains("uri=/healthz"))
        .unwrap_or_else(|| panic!("a line for the request in {logs}"));
    assert!(
        request.contains("method=GET") && request.contains("status=200"),
        "{request}"
    );
}

#[tokio::test]
async fn json_logs_are_one_object_a_line() {
    let logs = logs_of_serve(&["--log-format", "json"]).await;
    let lines: Vec<serde_json::Value> = logs
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|_| panic!("not JSON: {line}")))
        .collect();
    assert!(
        lines
            .iter()
            .any(|line| line["fields"]["agent"] == "assistant"),
        "{logs}"
    );
    assert!(
        lines
            .iter()
            .any(|line| line["span"]["uri"] == "/healthz" && line["fields"]["status"] == 200),
        "{logs}"
    );
}
