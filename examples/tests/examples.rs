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

/// The `custom_handler` example, started on port 0: the process (killed on drop) and its URL.
struct Served {
    child: std::process::Child,
    url: String,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve_custom_handler() -> Served {
    use std::io::BufRead;
    let mut child = Command::new(example("custom_handler"))
        .arg("127.0.0.1:0")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|error| panic!("custom_handler is built by cargo test: {error}"));
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("says where it listens: {line}"))
        .to_owned();
    Served { child, url }
}

/// POSTs `body` to `path` and decodes the stream in `dialect` into the strict accumulator:
/// the final status and the last message.
async fn dialect_run(
    url: &str,
    path: &str,
    body: serde_json::Value,
    dialect: agentwire_dialects::Dialect,
) -> (Option<agentwire_core::RunStatus>, Message) {
    let response = reqwest::Client::new()
        .post(format!("{url}{path}"))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200, "{path}");
    let wire = response.bytes().await.unwrap();
    let mut decoder = dialect.decoder();
    let mut events = Vec::new();
    decoder.decode(&wire, &mut events).unwrap();
    decoder.finish(&mut events).unwrap();
    let mut accumulator = agentwire_core::Accumulator::default();
    for event in &events {
        accumulator.push(event).unwrap();
    }
    let status = accumulator.status();
    let last = accumulator.into_messages().pop().unwrap();
    (status, last)
}

fn has_stats_and_chart(message: &Message, words: u64) -> bool {
    use agentwire_core::Part;
    let stats = message.parts.iter().any(|part| {
        matches!(part, Part::Data(data) if data.name == "word_stats" && data.data["words"] == words)
    });
    let chart = message
        .parts
        .iter()
        .any(|part| matches!(part, Part::File(file) if file.media_type == "image/svg+xml"));
    stats && chart
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_custom_handler_is_served_through_every_dialect() {
    use agentwire_core::RunStatus;
    use agentwire_dialects::Dialect;
    use serde_json::json;

    let served = serve_custom_handler();
    let url = served.url.clone();

    // The native API, through the Rust SDK.
    let client = Client::new(&url).unwrap();
    let output = client
        .run(&StartRun::new(Message::user("count these three")).agent("wordsmith"))
        .await
        .unwrap();
    assert_eq!(output.run.status, RunStatus::Completed);
    let answer = output.output.last().unwrap();
    assert_eq!(answer.content(), "You wrote 3 words: count these three");
    assert!(has_stats_and_chart(answer, 3), "{answer:?}");

    // The AI SDK's chat endpoint.
    let body = json!({"id": "chat_1", "trigger": "submit-message",
        "messages": [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": "two words"}]}]});
    let (status, answer) = dialect_run(&url, "/api/chat", body, Dialect::AiSdk).await;
    assert_eq!(status, Some(RunStatus::Completed));
    assert_eq!(answer.content(), "You wrote 2 words: two words");
    assert!(has_stats_and_chart(&answer, 2), "{answer:?}");

    // AG-UI.
    let body = json!({"threadId": "t1", "runId": "r1", "state": {}, "tools": [], "context": [],
        "forwardedProps": {}, "messages": [{"id": "m1", "role": "user", "content": "one"}]});
    let (status, answer) = dialect_run(&url, "/agents/wordsmith/ag-ui", body, Dialect::AgUi).await;
    assert_eq!(status, Some(RunStatus::Completed));
    assert_eq!(answer.content(), "You wrote 1 words: one");

    // AgentScope's Agent API.
    let body = json!({"stream": true, "session_id": "s1",
        "input": [{"role": "user", "type": "message", "content": [{"type": "text", "text": "a b c d"}]}]});
    let (status, answer) = dialect_run(&url, "/process", body, Dialect::AgentScope).await;
    assert_eq!(status, Some(RunStatus::Completed));
    assert_eq!(answer.content(), "You wrote 4 words: a b c d");
    assert!(has_stats_and_chart(&answer, 4), "{answer:?}");

    // A handler's error fails the run with its code.
    let output = client
        .run(&StartRun::new(Message::user("   ")).agent("wordsmith"))
        .await
        .unwrap();
    assert_eq!(output.run.status, RunStatus::Failed);
    assert_eq!(output.run.error.unwrap().code, "empty_question");

    // A cancel stops the handler mid-answer; what streamed is kept.
    let long = vec!["word"; 500].join(" ");
    let mut run = client
        .start(&StartRun::new(Message::user(&long)).agent("wordsmith"))
        .await
        .unwrap();
    while let Some(event) = run.next().await.unwrap() {
        if event.name() == "part_delta"
            && run
                .state()
                .messages()
                .iter()
                .any(|m| m.content().contains("word word"))
        {
            break;
        }
    }
    run.cancel().await.unwrap();
    assert_eq!(run.finish().await.unwrap(), Some(RunStatus::Canceled));
    let kept = run.into_messages().pop().unwrap().content();
    assert!(kept.starts_with("You wrote 500 words: word word"), "{kept}");
    assert!(kept.len() < long.len(), "stopped before the end");
}
