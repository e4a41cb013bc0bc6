//! Runs on a real provider brain: the OpenAI adapter over HTTP against the fake provider server
//! of the test kit. The conversation a run writes (one assistant message per turn, answers to
//! waits at the start of the next) reaches the provider as a valid Chat Completions history,
//! and a cancel aborts the HTTP request at once.
#![allow(clippy::unwrap_used)]

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use agentwire_brain::{OpenAiBrain, OpenAiConfig};
use agentwire_core::{Awaiting, Message, RunStatus, Timestamp, ToolSpec};
use agentwire_runtime::{Agent, FixedClock, RunStart, SequentialIds};
use agentwire_testkit::fake_openai::ChatStream;
use agentwire_testkit::fake_provider::{FakeProvider, FakeResponse};
use common::{Client, approval, output, tool};
use futures::FutureExt;
use serde_json::json;

fn openai_agent(server: &FakeProvider, deleted: Arc<AtomicUsize>) -> Agent {
    let mut config = OpenAiConfig::new("gpt-test");
    config.base_url = format!("{}/v1", server.url());
    let delete_file = tool(
        "delete_file",
        json!({"type": "object", "required": ["path"], "properties": {"path": {"type": "string"}}}),
        move |args, _| {
            deleted.fetch_add(1, Ordering::SeqCst);
            async move { Ok(json!({"deleted": args["path"]})) }.boxed()
        },
    );
    Agent::builder("assistant")
        .brain(OpenAiBrain::new(config).unwrap())
        .system("Be careful.")
        .tool(delete_file)
        .approval(["delete_file"])
        .ids(SequentialIds::default())
        .clock(FixedClock(Timestamp(0)))
        .build()
        .unwrap()
}

/// A step calling a tool that needs approval and a client tool, answered in two inputs: the
/// next request holds the first step as one assistant message with both calls, then one tool
/// message per call.
#[tokio::test]
async fn waits_resume_into_a_valid_chat_completions_history() {
    let server = FakeProvider::start();
    server.push(FakeResponse::sse(
        ChatStream::new()
            .role()
            .text("Let me do both.")
            .tool_call(0, "call_a", "delete_file")
            .arguments(0, "{\"path\": ")
            .tool_call(1, "call_b", "get_location")
            .arguments(0, "\"old.log\"}")
            .arguments(1, "{}")
            .finish("tool_calls")
            .usage(40, 12)
            .done()
            .to_sse(),
    ));
    server.push(FakeResponse::sse(
        ChatStream::new()
            .role()
            .text("Deleted old.log; you are in Paris.")
            .finish("stop")
            .usage(60, 9)
            .done()
            .to_sse(),
    ));
    let deleted = Arc::new(AtomicUsize::new(0));
    let agent = openai_agent(&server, Arc::clone(&deleted));
    let location = ToolSpec::new(
        "get_location",
        "Where the user is",
        json!({"type": "object"}),
    );
    let run = agent
        .start(
            RunStart::new(vec![Message::user("Delete old.log and tell me where I am")])
                .with_client_tools(vec![location]),
        )
        .unwrap();
    let mut client = Client::new(run.events);
    assert_eq!(
        client.until_settled().await,
        RunStatus::Awaiting(Awaiting::Approval)
    );
    run.handle.input(approval("apr_1", true, None)).unwrap();
    assert_eq!(
        client.until_settled().await,
        RunStatus::Awaiting(Awaiting::FunctionOutput)
    );
    run.handle
        .input(output("call_b", json!({"city": "Paris"})))
        .unwrap();
    assert_eq!(client.until_end().await, RunStatus::Completed);
    client.check_agrees_with(&run.handle);
    assert_eq!(deleted.load(Ordering::SeqCst), 1);
    assert_eq!(
        run.handle
            .usage()
            .map(|usage| (usage.input_tokens, usage.output_tokens)),
        Some((100, 21))
    );

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let first_tools: Vec<&str> = requests[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(first_tools, ["delete_file", "get_location"]);
    let messages = &requests[1].body["messages"];
    assert_eq!(
        messages,
        &json!([
            {"role": "system", "content": "Be careful."},
            {"role": "user", "content": "Delete old.log and tell me where I am"},
            {"role": "assistant", "content": "Let me do both.", "tool_calls": [
                {"id": "call_a", "type": "function", "function": {"name": "delete_file", "arguments": "{\"path\":\"old.log\"}"}},
                {"id": "call_b", "type": "function", "function": {"name": "get_location", "arguments": "{}"}}
            ]},
            {"role": "tool", "tool_call_id": "call_a", "content": "{\"deleted\":\"old.log\"}"},
            {"role": "tool", "tool_call_id": "call_b", "content": "{\"city\":\"Paris\"}"}
        ])
    );
}

/// Cancel while the provider streams: the HTTP request is aborted at once.
#[tokio::test]
async fn cancel_aborts_the_provider_request() {
    let server = FakeProvider::start();
    server.push(
        FakeResponse::sse(ChatStream::new().role().text("Thinking about it").to_sse()).hang(),
    );
    let agent = openai_agent(&server, Arc::default());
    let run = agent
        .start(RunStart::new(vec![Message::user("Take your time")]))
        .unwrap();
    let mut client = Client::new(run.events);
    // Wait for the first text to arrive, then cancel.
    while !client
        .seen
        .iter()
        .any(|event| matches!(event.kind, agentwire_core::EventKind::PartDelta { .. }))
    {
        let event = client.events.recv().await.unwrap();
        client.accumulator.push(&event).unwrap();
        client.seen.push(event);
    }
    run.handle.cancel();
    assert_eq!(client.until_end().await, RunStatus::Canceled);
    client.check_agrees_with(&run.handle);
    tokio::time::timeout(Duration::from_secs(5), server.wait_aborted(1))
        .await
        .expect("the provider saw the request aborted");
    assert_eq!(run.handle.output()[0].content(), "Thinking about it");
}
