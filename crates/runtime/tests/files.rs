//! Runs with the built-in workspace file tools: the write_file flow, and
//! attempts to write outside the workspace.
#![allow(clippy::unwrap_used)]

mod common;

use agentwire_core::{Message, Part, RunStatus, ToolErrorKind};
use agentwire_runtime::RunStart;
use agentwire_tools::Workspace;
use common::{Client, Recording, agent, answer, call, finish, part_types};
use serde_json::{Value, json};

fn write_call(id: &str, args: Value) -> Value {
    finish(call(id, "write_file", args), "tool_calls")
}

/// The write_file flow: the assistant explains and calls `write_file`; the file is written, the
/// result joins the same message, and the model's final answer follows.
#[tokio::test]
async fn the_write_file_flow_of_seed_000() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = Workspace::open(dir.path()).unwrap();
    let mut turn1 = vec![
        json!({"type": "text_delta", "text": "Sure, I can write that file for you. I will now call the tool."}),
    ];
    turn1.extend(call(
        "tc_123",
        "write_file",
        json!({"path": "/hello.txt", "content": "Hello, world!"}),
    ));
    let brain = Recording::new(json!({"turns": [
        finish(turn1, "tool_calls"),
        answer("I have successfully written the file to `/hello.txt`."),
    ]}));
    let agent = agent(&brain).tools(workspace.tools()).build().unwrap();
    let run = agent
        .start(RunStart::new(vec![Message::user(
            "Write 'Hello, world!' to /hello.txt",
        )]))
        .unwrap();
    let mut client = Client::new(run.events);
    assert_eq!(client.until_end().await, RunStatus::Completed);
    client.check_agrees_with(&run.handle);

    assert_eq!(
        std::fs::read_to_string(dir.path().join("hello.txt")).unwrap(),
        "Hello, world!"
    );
    let message = &run.handle.output()[0];
    assert_eq!(
        part_types(message),
        [
            "step_start",
            "text",
            "tool_call",
            "tool_result",
            "step_start",
            "text"
        ]
    );
    let Part::ToolResult(result) = &message.parts[3] else {
        unreachable!()
    };
    assert_eq!(result.tool_call_id, "tc_123");
    assert_eq!(
        result.result,
        json!({"path": "/hello.txt", "bytes_written": 13})
    );
    // The model's second call saw the result, and every file tool was offered.
    let requests = brain.requests();
    assert_eq!(
        requests[1].messages.last().unwrap().parts[3],
        message.parts[3]
    );
    let offered: Vec<&str> = requests[0]
        .tools
        .iter()
        .map(|tool| tool.name.as_str())
        .collect();
    assert_eq!(offered, ["write_file", "read_file", "list_files"]);
}

/// `..` and a symlink pointing out of the workspace are both refused; nothing is written
/// outside, the model reads why, and the run goes on.
#[tokio::test]
async fn writes_outside_the_workspace_are_refused() {
    let outside = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("workspace");
    let workspace = Workspace::open(&root).unwrap();
    std::os::unix::fs::symlink(outside.path(), root.join("out")).unwrap();
    let brain = Recording::new(json!({"turns": [
        write_call("c1", json!({"path": "../escape.txt", "content": "x"})),
        write_call("c2", json!({"path": "/out/escape.txt", "content": "x"})),
        answer("I cannot write outside the workspace."),
    ]}));
    let agent = agent(&brain).tools(workspace.tools()).build().unwrap();
    let run = agent
        .start(RunStart::new(vec![Message::user("escape")]))
        .unwrap();
    let mut client = Client::new(run.events);
    assert_eq!(client.until_end().await, RunStatus::Completed);
    client.check_agrees_with(&run.handle);

    assert!(!dir.path().join("escape.txt").exists());
    assert!(!outside.path().join("escape.txt").exists());
    let errors: Vec<(ToolErrorKind, String)> = run.handle.output()[0]
        .parts
        .iter()
        .filter_map(|part| match part {
            Part::ToolError(error) => Some((error.error_type, error.message.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(errors.len(), 2, "{errors:?}");
    assert_eq!(errors[0].0, ToolErrorKind::Validation);
    assert!(errors[0].1.contains(".."), "{}", errors[0].1);
    assert_eq!(errors[1].0, ToolErrorKind::Execution);
    // Each error reached the model in its next call.
    let requests = brain.requests();
    for (step, error) in [(1, "c1"), (2, "c2")] {
        let seen = requests[step].messages.last().unwrap();
        assert!(
            seen.parts
                .iter()
                .any(|part| matches!(part, Part::ToolError(e) if e.tool_call_id == error)),
            "step {step} saw the error of {error}"
        );
    }
}
