//! The client commands against the real `agentwire serve`: `agents`, `run` (JSON out, exit code
//! by status), and `chat` through a pseudo-terminal (the y/n prompt is answered on a terminal
//! and Ctrl-C is a real SIGINT) and through pipes against the AI SDK endpoint `/api/chat`.
#![allow(clippy::unwrap_used)]

mod common;

use std::io::Write;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use common::{Server, serve};
use expectrl::process::unix::WaitStatus;
use expectrl::session::OsSession;
use expectrl::{ControlCode, Eof, Expect, Session};
use serde_json::{Value, json};

const CONFIG: &str = r#"
[[agents]]
name = "talker"
description = "Says hello"
provider = "scripted"
script = "talker.json"

[[agents]]
name = "slow"
description = "Counts slowly"
provider = "scripted"
script = "slow.json"
tokens_per_second = 20

[[agents]]
name = "writer"
description = "Writes a file after approval"
provider = "scripted"
script = "writer.json"
tools = ["write_file"]
approval = ["write_file"]
workspace = "ws"

[[agents]]
name = "tasker"
description = "Looks something up, then answers"
provider = "scripted"
script = "tasker.json"
tokens_per_second = 20
tools = ["list_files"]
workspace = "ws"

[[agents]]
name = "failer"
provider = "scripted"
script = "failer.json"
"#;

fn start() -> (tempfile::TempDir, Server) {
    let dir = tempfile::tempdir().unwrap();
    let words: Vec<Value> = (0..400)
        .map(|index| json!({"type": "text_delta", "text": format!("w{index} ")}))
        .collect();
    let file = json!({"path": "a.txt", "content": "approved"}).to_string();
    let scripts = [
        (
            "talker.json",
            json!({"turns": [[{"type": "text_delta", "text": "Hello "}, {"type": "text_delta", "text": "there."}, {"type": "finish", "reason": "stop"}]]}),
        ),
        ("slow.json", json!({"turns": [words]})),
        (
            "tasker.json",
            json!({"turns": [
                (0..20)
                    .map(|n| json!({"type": "text_delta", "text": format!("s{n} ")}))
                    .chain([
                        json!({"type": "tool_call_start", "id": "l1", "name": "list_files"}),
                        json!({"type": "tool_call_delta", "id": "l1", "args": "{}"}),
                        json!({"type": "tool_call_end", "id": "l1"}),
                        json!({"type": "finish", "reason": "tool_calls"}),
                    ])
                    .collect::<Vec<_>>(),
                [{"type": "text_delta", "text": "All done."}, {"type": "finish", "reason": "stop"}]
            ]}),
        ),
        (
            "writer.json",
            json!({"turns": [
                [{"type": "text_delta", "text": "Let me write it."},
                 {"type": "tool_call_start", "id": "c1", "name": "write_file"},
                 {"type": "tool_call_delta", "id": "c1", "args": file},
                 {"type": "tool_call_end", "id": "c1"},
                 {"type": "finish", "reason": "tool_calls"}],
                [{"type": "text_delta", "text": "Done."}, {"type": "finish", "reason": "stop"}]
            ]}),
        ),
        (
            "failer.json",
            json!({"turns": [[{"type": "text_delta", "text": "Hm"}, {"type": "error", "message": "boom"}]]}),
        ),
    ];
    for (name, script) in scripts {
        std::fs::write(dir.path().join(name), script.to_string()).unwrap();
    }
    std::fs::write(dir.path().join("agentwire.toml"), CONFIG).unwrap();
    std::fs::create_dir(dir.path().join("ws")).unwrap();
    let server = serve(dir.path(), &["--config", "agentwire.toml"]);
    (dir, server)
}

fn agentwire(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_agentwire"))
        .args(args)
        .env_remove("AGENTWIRE_URL")
        .env_remove("AGENTWIRE_API_KEY")
        .output()
        .unwrap()
}

/// `agentwire chat ARGS` on a pseudo-terminal.
fn chat_on_terminal(args: &[&str]) -> OsSession {
    let mut command = Command::new(env!("CARGO_BIN_EXE_agentwire"));
    command.arg("chat").args(args).env_remove("NO_COLOR");
    let mut session = Session::spawn(command).unwrap();
    session.set_expect_timeout(Some(Duration::from_secs(20)));
    session
}

/// `agentwire chat ARGS` with these lines piped in; its output once stdin ends.
fn chat_piped(args: &[&str], lines: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_agentwire"))
        .arg("chat")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(lines.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn agents_lists_names_and_descriptions() {
    let (_dir, server) = start();
    let out = agentwire(&["agents", &server.url]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let listing = text(&out.stdout);
    assert!(listing.contains("talker  Says hello"), "{listing}");
    assert!(
        listing.contains("writer  Writes a file after approval"),
        "{listing}"
    );
    let out = agentwire(&["agents", "--json", &server.url]);
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["agents"].as_array().unwrap().len(), 5);
}

#[test]
fn run_prints_the_messages_as_json_and_exits_by_status() {
    let (_dir, server) = start();
    let url = server.url.as_str();
    let out = agentwire(&["run", "--agent", "talker", url, "hi"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let first: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(first["status"], "completed");
    let roles: Vec<&str> = first["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|message| message["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["assistant"], "the run's output");
    let texts: Vec<&Value> = first["messages"][0]["parts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|part| part["type"] == "text")
        .collect();
    assert_eq!(texts[0]["text"], "Hello there.");
    let session = first["session_id"].as_str().unwrap();

    // The next message of the same session.
    let out = agentwire(&[
        "run",
        "--agent",
        "talker",
        "--session",
        session,
        url,
        "again",
    ]);
    assert_eq!(out.status.code(), Some(0));
    let second: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(second["session_id"], session);

    let out = agentwire(&["run", "--agent", "writer", url, "write"]);
    assert_eq!(out.status.code(), Some(3), "awaiting approval");
    let waiting: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (waiting["status"].as_str(), waiting["awaiting"].as_str()),
        (Some("awaiting"), Some("approval"))
    );

    let out = agentwire(&["run", "--agent", "failer", url, "go"]);
    assert_eq!(out.status.code(), Some(1), "failed");
    let failed: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(failed["status"], "failed");
    assert!(
        failed["errors"][0]["message"]
            .as_str()
            .unwrap()
            .contains("boom"),
        "{failed}"
    );

    let out = agentwire(&["run", "--agent", "nobody", url, "go"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("unknown_agent"),
        "{}",
        text(&out.stderr)
    );
}

#[tokio::test]
async fn run_joins_the_words_of_the_message() {
    let (_dir, server) = start();
    let url = server.url.as_str();
    let out = agentwire(&["run", "--agent", "talker", url, "hello", "world"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let run: Value = serde_json::from_slice(&out.stdout).unwrap();
    let session = run["session_id"].as_str().unwrap();
    let history: Value = reqwest::get(format!("{url}/v1/sessions/{session}"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(history["messages"][0]["role"], "user", "{history}");
    assert_eq!(
        history["messages"][0]["parts"][0]["text"], "hello world",
        "{history}"
    );
}

#[test]
fn chat_sends_what_is_typed_while_the_agent_answers() {
    let (_dir, server) = start();
    let mut chat = chat_on_terminal(&["--agent", "tasker", &server.url]);
    chat.expect("> ").unwrap();
    chat.send_line("look it up").unwrap();
    chat.expect("s1 ").unwrap();
    // A steer joins this answer at its next step; a plain line is queued for the next turn.
    chat.send_line("/steer in French").unwrap();
    chat.expect("↳ steering").unwrap();
    chat.send_line("and then the weather").unwrap();
    chat.expect("↳ queued").unwrap();
    chat.expect("taken in at step 1").unwrap();
    chat.expect("All done.").unwrap();
    // The queued line's own run streams after the answer, then the prompt comes back.
    chat.expect("s19 ").unwrap();
    chat.expect("All done.").unwrap();
    chat.expect("> ").unwrap();
    chat.send(ControlCode::EndOfTransmission).unwrap();
    chat.expect(Eof).unwrap();
}

#[test]
fn chat_asks_approvals_on_the_terminal_no_denies_and_yes_runs_the_tool() {
    let (dir, server) = start();
    let written = dir.path().join("ws/a.txt");
    let mut chat = chat_on_terminal(&["--agent", "writer", &server.url]);
    chat.expect("> ").unwrap();
    chat.send_line("write it").unwrap();
    chat.expect("Let me write it.").unwrap();
    chat.expect("? allow write_file").unwrap();
    chat.expect("[y/n] ").unwrap();
    chat.send_line("n").unwrap();
    chat.expect("denied").unwrap();
    chat.expect("Done.").unwrap();
    chat.expect("> ").unwrap();
    assert!(!written.exists(), "a denied call does not run");

    chat.send_line("write it again").unwrap();
    chat.expect("[y/n] ").unwrap();
    chat.send_line("y").unwrap();
    chat.expect("approved").unwrap();
    chat.expect("✓ write_file").unwrap();
    chat.expect("Done.").unwrap();
    chat.expect("> ").unwrap();
    assert_eq!(std::fs::read_to_string(&written).unwrap(), "approved");
    chat.send(ControlCode::EndOfTransmission).unwrap();
    chat.expect(Eof).unwrap();
}

#[test]
fn ctrl_c_cancels_the_run_and_a_second_ctrl_c_quits() {
    let (_dir, server) = start();
    let mut chat = chat_on_terminal(&["--agent", "slow", &server.url]);
    chat.expect("> ").unwrap();
    chat.send_line("count").unwrap();
    chat.expect("w3 ").unwrap();
    chat.send(ControlCode::EndOfText).unwrap();
    // "■ canceled" is the run's status from the server, which canceled it long before its
    // 400 words.
    let canceled = chat.expect("■ canceled").unwrap();
    assert!(!text(canceled.before()).contains("w399 "));
    chat.expect("> ").unwrap();

    chat.send_line("count again").unwrap();
    chat.expect("w3 ").unwrap();
    chat.send(ControlCode::EndOfText).unwrap();
    chat.expect("stopping").unwrap();
    // The words the server sent before it canceled the run are not printed after "stopping".
    let stopped = chat.expect("■ canceled").unwrap();
    let after = text(stopped.before());
    assert!(!after.contains(" w"), "{after:?}");
    chat.expect("> ").unwrap();

    chat.send_line("count once more").unwrap();
    chat.expect("w3 ").unwrap();
    chat.send(ControlCode::EndOfText).unwrap();
    chat.expect("stopping").unwrap();
    chat.send(ControlCode::EndOfText).unwrap();
    chat.expect(Eof).unwrap();
    let status = chat.get_process_mut().wait().unwrap();
    assert!(matches!(status, WaitStatus::Exited(_, 0)), "{status:?}");
}

#[test]
fn chat_speaks_the_ai_sdk_endpoint_of_agentwire() {
    let (dir, server) = start();
    let out = chat_piped(
        &[&format!("{}/agents/talker/api/chat", server.url)],
        "hi\nhi again\n",
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let shown = text(&out.stdout);
    assert!(shown.contains("(ai-sdk)"), "{shown}");
    assert_eq!(shown.matches("Hello there.").count(), 2, "{shown}");
    assert!(!shown.contains('\u{1b}'), "no styles into a pipe: {shown}");

    // The approval round trip, answered through the AI SDK format (the answer continues the
    // message that asked).
    let out = chat_piped(
        &[
            "--dialect",
            "ai-sdk",
            &format!("{}/agents/writer/api/chat", server.url),
        ],
        "write it\ny\n",
    );
    let shown = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(shown.contains("? allow write_file"), "{shown}");
    assert!(shown.contains("✓ write_file"), "{shown}");
    assert!(shown.contains("Done."), "{shown}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("ws/a.txt")).unwrap(),
        "approved"
    );
}
