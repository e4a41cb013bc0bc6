//! The examples, built by `cargo test`, run against a real server on port 0 with scripted
//! agents: a streamed turn and its follow-up, an approval answered from stdin, a run followed by
//! its id.
#![allow(clippy::unwrap_used)]

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use agentwire_client::{Client, StartRun};
use agentwire_core::Message;
use agentwire_runtime::config::AgentsFile;
use agentwire_server::{Server, Settings};

const CONFIG: &str = r#"
[[agents]]
name = "talker"
provider = "scripted"
script = "talker.json"

[[agents]]
name = "writer"
provider = "scripted"
script = "writer.json"
tools = ["write_file"]
approval = ["write_file"]
workspace = "ws"
"#;

const TALKER: &str = r#"{"turns": [[{"type": "text_delta", "text": "Hello "}, {"type": "text_delta", "text": "there."}, {"type": "finish", "reason": "stop"}]]}"#;

const WRITER: &str = r#"{"turns": [
  [{"type": "tool_call_start", "id": "c1", "name": "write_file"},
   {"type": "tool_call_delta", "id": "c1", "args": "{\"path\": \"a.txt\", \"content\": \"yes\"}"},
   {"type": "tool_call_end", "id": "c1"},
   {"type": "finish", "reason": "tool_calls"}],
  [{"type": "text_delta", "text": "Written."}, {"type": "finish", "reason": "stop"}]
]}"#;

async fn server() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("talker.json"), TALKER).unwrap();
    std::fs::write(dir.path().join("writer.json"), WRITER).unwrap();
    std::fs::create_dir(dir.path().join("ws")).unwrap();
    let mut agents = Vec::new();
    for config in AgentsFile::from_toml(CONFIG).unwrap().agents {
        agents.push(config.build(dir.path(), |_| None).await.unwrap());
    }
    let settings = Settings {
        addr: "127.0.0.1:0".parse().unwrap(),
        ..Settings::default()
    };
    let server = Server::open(agents, settings).await.unwrap();
    let listener = server.bind().await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(server.serve(listener, std::future::pending()));
    (dir, url)
}

/// An example's binary: `cargo test` builds examples into `target/<profile>/examples/`, beside
/// the `deps/` directory this test runs from.
fn example(name: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let profile = exe.parent().unwrap().parent().unwrap();
    profile.join("examples").join(name)
}

/// Runs an example with `AGENTWIRE_URL=url`, these arguments and this stdin; its stdout.
async fn run(name: &str, url: &str, args: &[&str], stdin: &str) -> String {
    let (name, url, stdin) = (name.to_owned(), url.to_owned(), stdin.to_owned());
    let args: Vec<String> = args.iter().map(|arg| (*arg).to_owned()).collect();
    tokio::task::spawn_blocking(move || {
        let mut child = Command::new(example(&name))
            .args(&args)
            .env("AGENTWIRE_URL", url)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|error| panic!("{name} is built by cargo test: {error}"));
        child
            .stdin
            .take()
            .unwrap()
            .write_all(stdin.as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "{stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        stdout
    })
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_examples_run_against_a_real_server() {
    let (dir, url) = server().await;

    let turn = run("chat_turn", &url, &["--agent", "talker", "hi"], "").await;
    assert_eq!(
        turn,
        "Hello there.\n[completed]\nHello there.\n[completed]\n"
    );

    let approval = run("approval", &url, &["--agent", "writer", "write"], "y\n").await;
    assert!(
        approval.starts_with(
            "allow write_file {\"path\":\"a.txt\",\"content\":\"yes\"}? [y/n]\napproved\n"
        ),
        "{approval}"
    );
    assert!(approval.ends_with("Written.\n[completed]\n"), "{approval}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("ws/a.txt")).unwrap(),
        "yes"
    );

    let client = Client::new(&url).unwrap();
    let mut started = client
        .start(&StartRun::new(Message::user("hi")).agent("talker"))
        .await
        .unwrap();
    started.finish().await.unwrap();
    let id = started.run_id().unwrap().to_string();
    let last = started.last_seq();
    let resumed = run("resume", &url, &[&id], "").await;
    assert_eq!(
        resumed,
        format!("Hello there.\n[completed after {last} events, last {last}]\n")
    );
}
