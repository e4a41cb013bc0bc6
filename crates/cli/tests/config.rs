//! `agentwire serve --config` with a whole `[server]` table: every setting takes effect (the
//! address, the SQLite file, API keys, CORS, body size, the tool output and run duration
//! ceilings), and the environment beats the flags, which beat the file.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::Path;
use std::process::Command;

use common::{Server, serve_with};
use serde_json::{Value, json};

const KEY: &str = "secret-key";

/// The configuration: `[server]` with everything, a `reader` agent that reads a 5,000-byte
/// file (over the 1,000-byte ceiling), and a `slow` agent that talks past `max_run_seconds`.
fn write_config(dir: &Path, server: &str) {
    let reader = json!({"turns": [
        [{"type": "tool_call_start", "id": "c1", "name": "read_file"},
         {"type": "tool_call_delta", "id": "c1", "args": "{\"path\": \"big.txt\"}"},
         {"type": "tool_call_end", "id": "c1"},
         {"type": "finish", "reason": "tool_calls"}],
        [{"type": "text_delta", "text": "read"},
         {"type": "finish", "reason": "stop", "usage": {"input_tokens": 7, "output_tokens": 1}}]
    ]});
    let slow: Vec<Value> = (0..20)
        .map(|_| json!({"type": "text_delta", "text": "word "}))
        .chain([json!({"type": "finish", "reason": "stop"})])
        .collect();
    std::fs::write(dir.join("reader.json"), reader.to_string()).unwrap();
    std::fs::write(dir.join("slow.json"), json!({"turns": [slow]}).to_string()).unwrap();
    std::fs::create_dir_all(dir.join("ws")).unwrap();
    std::fs::write(dir.join("ws/big.txt"), "z".repeat(5000)).unwrap();
    let agents = r#"
[[agents]]
name = "reader"
provider = "scripted"
script = "reader.json"
tools = ["read_file"]
workspace = "ws"

[[agents]]
name = "slow"
provider = "scripted"
script = "slow.json"
tokens_per_second = 5
"#;
    std::fs::write(dir.join("agentwire.toml"), format!("{server}\n{agents}")).unwrap();
}

fn stop(mut server: Server) {
    let killed = Command::new("kill")
        .args(["-TERM", &server.child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    assert!(server.child.wait().unwrap().success());
}

async fn post_run(http: &reqwest::Client, url: &str, agent: &str) -> Value {
    let response = http
        .post(format!("{url}/v1/runs"))
        .bearer_auth(KEY)
        .json(&json!({"agent": agent, "input": [{"role": "user", "parts": [{"type": "text", "text": "go"}]}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    response.json().await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_server_setting_of_the_file_takes_effect() {
    let dir = tempfile::tempdir().unwrap();
    let database = dir.path().join("db/runs.db");
    let server_table = format!(
        r#"[server]
addr = "127.0.0.3:0"
database_url = "sqlite://{}"
api_keys = ["{KEY}"]
cors_origins = ["https://app.example"]
max_body_bytes = 20000
max_tool_output_bytes = 1000
max_run_seconds = 1
"#,
        database.display()
    );
    write_config(dir.path(), &server_table);
    let server = serve_with(dir.path(), &["--config", "agentwire.toml"], &[]);
    let url = server.url.clone();
    assert!(
        url.starts_with("http://127.0.0.3:"),
        "the file's addr: {url}"
    );
    assert!(database.is_file(), "the file's database_url");
    assert!(
        !dir.path().join(".agentwire/agentwire.db").exists(),
        "not the default store"
    );
    let http = reqwest::Client::new();

    // api_keys: nothing without the key, /metrics included.
    for path in ["/v1/agents", "/metrics"] {
        let refused = http.get(format!("{url}{path}")).send().await.unwrap();
        assert_eq!(refused.status(), 401, "{path}");
    }
    let agents = http
        .get(format!("{url}/v1/agents"))
        .bearer_auth(KEY)
        .send()
        .await
        .unwrap();
    assert_eq!(agents.status(), 200);

    // cors_origins.
    let preflight = http
        .request(reqwest::Method::OPTIONS, format!("{url}/v1/runs"))
        .header("origin", "https://app.example")
        .header("access-control-request-method", "POST")
        .header(
            "access-control-request-headers",
            "authorization,content-type",
        )
        .send()
        .await
        .unwrap();
    assert_eq!(
        preflight.headers()["access-control-allow-origin"],
        "https://app.example"
    );
    let other = http
        .request(reqwest::Method::OPTIONS, format!("{url}/v1/runs"))
        .header("origin", "https://other.example")
        .header("access-control-request-method", "POST")
        .send()
        .await
        .unwrap();
    assert!(!other.headers().contains_key("access-control-allow-origin"));

    // max_body_bytes.
    let big = http
        .post(format!("{url}/v1/runs"))
        .bearer_auth(KEY)
        .header("content-type", "application/json")
        .body(
            json!({"input": [{"role": "user", "parts": [{"type": "text", "text": "x".repeat(30_000)}]}]})
                .to_string(),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(big.status(), 413);

    // max_tool_output_bytes: the file tools' own limit would let 5,000 bytes through.
    let read = post_run(&http, &url, "reader").await;
    assert_eq!(read["run"]["status"], "completed", "{read}");
    let parts = read["output"][0]["parts"].as_array().unwrap();
    let error = parts
        .iter()
        .find(|part| part["type"] == "tool_error")
        .unwrap_or_else(|| panic!("the read is over the ceiling: {read}"));
    let why = error["message"].as_str().unwrap();
    assert!(why.contains("over the limit of 1000 bytes"), "{why}");

    // max_run_seconds: 20 words at 5 a second would take 4 s.
    let slow = post_run(&http, &url, "slow").await;
    assert_eq!(slow["run"]["status"], "incomplete", "{slow}");
    assert_eq!(slow["run"]["error"]["code"], "max_duration");

    // The database holds the run: a restarted server reads it from there.
    let run_id = read["run"]["id"].as_str().unwrap().to_owned();
    stop(server);
    let server = serve_with(dir.path(), &["--config", "agentwire.toml"], &[]);
    let url = server.url.clone();
    let stored: Value = http
        .get(format!("{url}/v1/runs/{run_id}"))
        .bearer_auth(KEY)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(stored["run"]["status"], "completed", "{stored}");
    assert_eq!(stored["run"]["usage"]["input_tokens"], 7);
    stop(server);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_environment_beats_the_flags_which_beat_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let sqlite = |name: &str| format!("sqlite://{}", dir.path().join(name).display());
    write_config(
        dir.path(),
        &format!(
            "[server]\naddr = \"127.0.0.3:0\"\ndatabase_url = \"{}\"\n",
            sqlite("file.db")
        ),
    );
    let config = ["--config", "agentwire.toml"];

    let server = serve_with(dir.path(), &config, &[]);
    assert!(
        server.url.starts_with("http://127.0.0.3:"),
        "{}",
        server.url
    );
    assert!(dir.path().join("file.db").is_file());
    stop(server);

    let flag_db = sqlite("flag.db");
    let flags = [
        &config[..],
        &["--addr", "127.0.0.4:0", "--database-url", &flag_db],
    ]
    .concat();
    let server = serve_with(dir.path(), &flags, &[]);
    assert!(
        server.url.starts_with("http://127.0.0.4:"),
        "{}",
        server.url
    );
    assert!(dir.path().join("flag.db").is_file());
    stop(server);

    let env_db = sqlite("env.db");
    let server = serve_with(
        dir.path(),
        &flags,
        &[
            ("AGENTWIRE_ADDR", "127.0.0.5:0"),
            ("AGENTWIRE_DATABASE_URL", &env_db),
        ],
    );
    assert!(
        server.url.starts_with("http://127.0.0.5:"),
        "{}",
        server.url
    );
    assert!(dir.path().join("env.db").is_file());
    stop(server);
}
