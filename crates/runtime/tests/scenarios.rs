//! Real runs look like the canonical scenarios (`agentwire_testkit::scenarios`) that every
//! dialect is tested with: the same events, event for event, once the parts that a real run
//! adds or words differently are set aside (message metadata and times, the wording of approval
//! reasons and error messages).
#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use agentwire_core::{Event, Message, RunStatus, ToolSpec};
use agentwire_runtime::RunStart;
use agentwire_testkit::scenarios;
use common::{Client, Recording, agent, tool};
use futures::FutureExt;
use serde_json::{Value, json};

/// The events as JSON without what a real run adds or words its own way.
fn normalized(events: &[Event]) -> Vec<Value> {
    fn strip(value: &mut Value) {
        match value {
            Value::Object(map) => {
                map.remove("metadata");
                map.remove("created_at");
                match map.get("type").and_then(Value::as_str) {
                    Some("approval_request") => {
                        map.remove("reason");
                    }
                    Some("tool_error") => {
                        map.insert("message".into(), json!("…"));
                    }
                    _ => {}
                }
                if let Some(Value::Object(error)) = map.get_mut("error") {
                    error.insert("message".into(), json!("…"));
                }
                map.values_mut().for_each(strip);
            }
            Value::Array(items) => items.iter_mut().for_each(strip),
            _ => {}
        }
    }
    events
        .iter()
        .map(|event| {
            let mut value = serde_json::to_value(event).unwrap();
            strip(&mut value);
            value
        })
        .collect()
}

fn start(input: &str) -> RunStart {
    RunStart::new(vec![Message::user(input).with_id("msg_user")])
        .with_run_id("run_1")
        .with_session("ses_1")
}

fn usage(input: u64, output: u64) -> Value {
    json!({"input_tokens": input, "output_tokens": output, "total_tokens": input + output})
}

fn call(id: &str, name: &str, pieces: &[&str]) -> Vec<Value> {
    let mut events = vec![json!({"type": "tool_call_start", "id": id, "name": name})];
    events.extend(
        pieces
            .iter()
            .map(|piece| json!({"type": "tool_call_delta", "id": id, "args": piece})),
    );
    events.push(json!({"type": "tool_call_end", "id": id}));
    events
}

fn turn(mut events: Vec<Value>, reason: &str, usage: Value) -> Value {
    events.push(json!({"type": "finish", "reason": reason, "usage": usage}));
    Value::Array(events)
}

fn text(text: &str) -> Value {
    json!({"type": "text_delta", "text": text})
}

#[track_caller]
fn check(name: &str, events: &[Event]) {
    let scenario = scenarios::by_name(name).unwrap();
    let expected = normalized(&scenario.events);
    let actual = normalized(events);
    for (n, (actual, expected)) in actual.iter().zip(&expected).enumerate() {
        assert_eq!(actual, expected, "{name}: event {n} differs");
    }
    assert_eq!(actual.len(), expected.len(), "{name}: number of events");
}

#[tokio::test]
async fn tool_call() {
    let mut turn1 = vec![text("Let me check the weather.")];
    turn1.extend(call(
        "call_1",
        "get_weather",
        &["{\"ci", "ty\": \"Pa", "ris\"}"],
    ));
    let brain = Recording::new(json!({"turns": [
        turn(turn1, "tool_calls", usage(50, 20)),
        turn(vec![text("It is 18 °C and sunny in Paris.")], "stop", usage(30, 11)),
    ]}));
    let weather = tool("get_weather", json!({"type": "object"}), |args, _| {
        async move { Ok(json!({"city": args["city"], "temperature": 18, "condition": "sunny"})) }
            .boxed()
    });
    let agent = agent(&brain).tool(weather).build().unwrap();
    let run = agent.start(start("What is the weather in Paris?")).unwrap();
    let mut client = Client::new(run.events);
    assert_eq!(client.until_end().await, RunStatus::Completed);
    client.check_agrees_with(&run.handle);
    check("tool_call", &client.seen);
}

#[tokio::test]
async fn tool_error() {
    let write_file = tool(
        "write_file",
        json!({"type": "object", "required": ["path", "content"],
               "properties": {"path": {"type": "string"}, "content": {"type": "string"}}}),
        |args, _| {
            async move {
                let bytes = args["content"].as_str().map_or(0, str::len);
                Ok(json!({"path": args["path"], "bytes_written": bytes}))
            }
            .boxed()
        },
    );
    let brain = Recording::new(json!({"turns": [
        turn(call("call_1", "write_file", &["{\"path\": ", "\"notes.txt\"}"]), "tool_calls", usage(50, 20)),
        turn(call("call_2", "write_file", &["{\"path\": \"notes.txt\", ", "\"content\": \"buy milk\"}"]), "tool_calls", usage(50, 20)),
        turn(vec![text("Saved your note to notes.txt.")], "stop", usage(50, 20)),
    ]}));
    let agent = agent(&brain).tool(write_file).build().unwrap();
    let run = agent.start(start("Write 'buy milk' to notes.txt")).unwrap();
    let mut client = Client::new(run.events);
    assert_eq!(client.until_end().await, RunStatus::Completed);
    client.check_agrees_with(&run.handle);
    check("tool_error", &client.seen);
}

#[tokio::test(start_paused = true)]
async fn parallel_tools() {
    let turn1 = vec![
        json!({"type": "tool_call_start", "id": "call_1", "name": "get_weather"}),
        json!({"type": "tool_call_start", "id": "call_2", "name": "get_weather"}),
        json!({"type": "tool_call_delta", "id": "call_1", "args": "{\"city\": "}),
        json!({"type": "tool_call_delta", "id": "call_2", "args": "{\"city\": "}),
        json!({"type": "tool_call_delta", "id": "call_2", "args": "\"Tokyo\"}"}),
        json!({"type": "tool_call_delta", "id": "call_1", "args": "\"Paris\"}"}),
        json!({"type": "tool_call_end", "id": "call_2"}),
        json!({"type": "tool_call_end", "id": "call_1"}),
    ];
    let brain = Recording::new(json!({"turns": [
        turn(turn1, "tool_calls", usage(50, 20)),
        turn(vec![text("Paris: 18 °C. Tokyo: 24 °C.")], "stop", usage(40, 20)),
    ]}));
    // Paris answers later than Tokyo, so its result comes second, as in the scenario.
    let weather = tool("get_weather", json!({"type": "object"}), |args, _| {
        async move {
            let (delay, temperature) = match args["city"].as_str() {
                Some("Paris") => (20, 18),
                _ => (5, 24),
            };
            tokio::time::sleep(Duration::from_millis(delay)).await;
            Ok(json!({"city": args["city"], "temperature": temperature}))
        }
        .boxed()
    });
    let agent = agent(&brain).tool(weather).build().unwrap();
    let run = agent.start(start("Weather in Paris and Tokyo?")).unwrap();
    let mut client = Client::new(run.events);
    assert_eq!(client.until_end().await, RunStatus::Completed);
    client.check_agrees_with(&run.handle);
    check("parallel_tools", &client.seen);
}

#[tokio::test]
async fn approval() {
    let mut turn1 = vec![text("I will delete old.log.")];
    turn1.extend(call("call_1", "delete_file", &["{\"path\": \"old.log\"}"]));
    let brain = Recording::new(json!({"turns": [turn(turn1, "tool_calls", usage(40, 12))]}));
    let delete_file = tool("delete_file", json!({"type": "object"}), |_, _| {
        async { Ok(json!({"deleted": true})) }.boxed()
    });
    let agent = agent(&brain)
        .tool(delete_file)
        .approval(["delete_file"])
        .build()
        .unwrap();
    let run = agent.start(start("Delete old.log")).unwrap();
    let mut client = Client::new(run.events);
    assert_eq!(
        client.until_settled().await,
        RunStatus::Awaiting(agentwire_core::Awaiting::Approval)
    );
    client.check_agrees_with(&run.handle);
    check("approval", &client.seen);
    assert_eq!(run.handle.state(), "awaiting_approval");
}

#[tokio::test]
async fn client_tool() {
    let brain = Recording::new(json!({"turns": [turn(
        call("call_1", "get_location", &["{\"precision\": ", "\"city\"}"]),
        "tool_calls",
        usage(25, 10),
    )]}));
    let agent = agent(&brain).build().unwrap();
    let location = ToolSpec::new(
        "get_location",
        "Where the user is",
        json!({"type": "object"}),
    );
    let run = agent
        .start(start("Where am I?").with_client_tools(vec![location]))
        .unwrap();
    let mut client = Client::new(run.events);
    assert_eq!(
        client.until_settled().await,
        RunStatus::Awaiting(agentwire_core::Awaiting::FunctionOutput)
    );
    client.check_agrees_with(&run.handle);
    check("client_tool", &client.seen);
    assert_eq!(run.handle.state(), "awaiting_function_output");
    // The client was offered its tool after the agent's (none here).
    assert_eq!(brain.requests()[0].tools.len(), 1);
}
