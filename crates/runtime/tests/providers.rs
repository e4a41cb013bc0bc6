//! Runs on real provider brains: the OpenAI and Anthropic adapters over HTTP against the fake
//! provider server of the test kit, streaming each provider's own SSE format, with real tools.
//! The conversation a run writes (one assistant message per turn, answers to waits at the start
//! of the next) reaches the provider as a valid history: tool results, validation errors the
//! model corrects itself from, signed thinking. A cancel aborts the HTTP request at once.
//! Nothing the provider sends is lost: refusals stream as refusal parts, a provider's stop for
//! its policies ends the run `incomplete`, server tool blocks are kept as data parts.
#![allow(clippy::unwrap_used)]

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use agentwire_brain::{AnthropicBrain, AnthropicConfig, OpenAiBrain, OpenAiConfig, RetryPolicy};
use agentwire_core::{Accumulator, Awaiting, Message, Part, RunStatus, Timestamp, ToolSpec, Usage};
use agentwire_runtime::{Agent, FixedClock, RunStart, SequentialIds};
use agentwire_testkit::fake_anthropic;
use agentwire_testkit::fake_openai::ChatStream;
use agentwire_testkit::fake_provider::{FakeProvider, FakeResponse};
use agentwire_tools::Workspace;
use common::{Client, approval, output, part_types, shape, tool};
use futures::FutureExt;
use serde_json::{Value, json};

fn openai_agent(server: &FakeProvider, deleted: Arc<AtomicUsize>) -> Agent {
    let mut config = OpenAiConfig::new("gpt-test");
    config.connection.base_url = format!("{}/v1", server.url());
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
    run.handle
        .cancel()
        .expect("the schema allows the client's cancel");
    assert_eq!(client.until_end().await, RunStatus::Canceled);
    client.check_agrees_with(&run.handle);
    tokio::time::timeout(Duration::from_secs(5), server.wait_aborted(1))
        .await
        .expect("the provider saw the request aborted");
    assert_eq!(run.handle.output()[0].content(), "Thinking about it");
}

/// Runs one turn to its end: the status, and the messages as a client rebuilt them.
async fn run(agent: &Agent, start: RunStart) -> (RunStatus, Option<Usage>, Vec<Message>) {
    let mut run = agent.start(start).unwrap();
    let mut client = Accumulator::default();
    while let Some(event) = run.events.recv().await {
        client.push(&event).unwrap();
    }
    (
        client.status().unwrap(),
        client.usage(),
        client.messages().to_vec(),
    )
}

fn with_files(agent: agentwire_runtime::AgentBuilder, root: &std::path::Path) -> Agent {
    let mut agent = agent;
    for tool in Workspace::open(root).unwrap().tools() {
        agent = agent.tool_arc(tool);
    }
    agent.build().unwrap()
}

/// The tool messages of a recorded Chat Completions request: call id → content.
fn tool_messages(body: &Value) -> Vec<(String, String)> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|message| message["role"] == "tool")
        .map(|message| {
            (
                message["tool_call_id"].as_str().unwrap().to_owned(),
                message["content"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

#[tokio::test]
async fn openai_the_model_corrects_its_call_after_a_validation_error() {
    let server = FakeProvider::start();
    // Call 1 forgets the path; its arguments arrive in pieces.
    server.push(FakeResponse::sse(
        ChatStream::new()
            .role()
            .text("I will write it.")
            .tool_call(0, "call_1", "write_file")
            .arguments(0, r#"{"cont"#)
            .arguments(0, r#"ent": "Hello, world!"}"#)
            .finish("tool_calls")
            .usage(100, 20)
            .done()
            .to_sse(),
    ));
    // Call 2 corrects it.
    server.push(FakeResponse::sse(
        ChatStream::new()
            .role()
            .text("I missed the path.")
            .tool_call(0, "call_2", "write_file")
            .arguments(0, r#"{"path": "/hello.txt", "content": "Hello, world!"}"#)
            .finish("tool_calls")
            .usage(150, 25)
            .done()
            .to_sse(),
    ));
    server.push(FakeResponse::sse(
        ChatStream::new()
            .role()
            .text("Written to /hello.txt.")
            .finish("stop")
            .usage(200, 8)
            .done()
            .to_sse(),
    ));
    let mut config = OpenAiConfig::new("gpt-4o-mini");
    config.connection.base_url = format!("{}/v1", server.url());
    config.connection.api_key = Some("sk-test".into());
    let brain = OpenAiBrain::new(config).unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let agent = with_files(
        Agent::builder("writer").brain(brain).system("Write files."),
        workspace.path(),
    );

    let (status, usage, messages) = run(
        &agent,
        RunStart::new(vec![Message::user("Write hello.txt")]),
    )
    .await;
    assert_eq!(status, RunStatus::Completed);
    let usage = usage.unwrap();
    assert_eq!(
        (usage.input_tokens, usage.output_tokens),
        (450, 53),
        "summed over the 3 calls"
    );
    let written = std::fs::read_to_string(workspace.path().join("hello.txt")).unwrap();
    assert_eq!(written, "Hello, world!");

    let answer = messages.last().unwrap();
    let kinds: Vec<&str> = answer.parts.iter().map(Part::type_name).collect();
    assert_eq!(
        kinds,
        [
            "step_start",
            "text",
            "tool_call",
            "tool_error",
            "step_start",
            "text",
            "tool_call",
            "tool_result",
            "step_start",
            "text"
        ]
    );

    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    // The second call sees the validation error as a tool message naming the missing field.
    let second = tool_messages(&requests[1].body);
    assert_eq!(second.len(), 1);
    assert_eq!(second[0].0, "call_1");
    let error: Value = serde_json::from_str(&second[0].1).unwrap();
    assert_eq!(error["error"]["type"], "VALIDATION");
    let message = error["error"]["message"].as_str().unwrap();
    assert!(message.contains("'path'"), "{message}");
    // The third sees both outcomes, in order, the second a success.
    let third = tool_messages(&requests[2].body);
    assert_eq!(third.len(), 2);
    assert_eq!(third[1].0, "call_2");
    let result: Value = serde_json::from_str(&third[1].1).unwrap();
    assert_eq!(result["bytes_written"], 13);
    assert_eq!(requests[2].body["messages"][0]["content"], "Write files.");
}

fn anthropic_agent(server: &FakeProvider, workspace: &std::path::Path) -> Agent {
    let mut config = AnthropicConfig::new(fake_anthropic::MODEL);
    config.connection.base_url = server.url().to_owned();
    config.connection.api_key = Some("sk-ant-test".into());
    config.connection.retry = RetryPolicy {
        max_attempts: 1,
        ..RetryPolicy::default()
    };
    let brain = AnthropicBrain::new(config).unwrap();
    with_files(Agent::builder("claude").brain(brain), workspace)
}

#[tokio::test]
async fn anthropic_a_tool_call_runs_and_its_result_goes_back() {
    let server = FakeProvider::start();
    server.push(FakeResponse::sse(fake_anthropic::tool_use(7)));
    server.push(FakeResponse::sse(fake_anthropic::text()));
    let workspace = tempfile::tempdir().unwrap();
    let agent = anthropic_agent(&server, workspace.path());

    let (status, _, messages) = run(
        &agent,
        RunStart::new(vec![Message::user("Write hello.txt")]),
    )
    .await;
    assert_eq!(status, RunStatus::Completed);
    let expected: Value = serde_json::from_str(fake_anthropic::TOOL_ARGS).unwrap();
    let written = std::fs::read_to_string(workspace.path().join("hello.txt")).unwrap();
    assert_eq!(written, expected["content"].as_str().unwrap());
    assert_eq!(messages.last().unwrap().content(), "Okay.\nHello!");

    // The second request carries the call and, in the next user message, its result.
    let body = &server.requests()[1].body;
    let turns = body["messages"].as_array().unwrap();
    let call = &turns[1]["content"].as_array().unwrap()[1];
    assert_eq!(call["type"], "tool_use");
    assert_eq!(call["id"], fake_anthropic::TOOL_USE_ID);
    assert_eq!(call["input"], expected);
    let result = &turns[2]["content"][0];
    assert_eq!(result["type"], "tool_result");
    assert_eq!(result["tool_use_id"], fake_anthropic::TOOL_USE_ID);
    assert!(result.get("is_error").is_none_or(|error| error == false));
}

#[tokio::test]
async fn anthropic_signed_thinking_is_kept_and_sent_back_with_the_history() {
    let server = FakeProvider::start();
    server.push(FakeResponse::sse(fake_anthropic::thinking()));
    server.push(FakeResponse::sse(fake_anthropic::text()));
    let workspace = tempfile::tempdir().unwrap();
    let agent = anthropic_agent(&server, workspace.path());

    let question = Message::user("What is 2 + 2?");
    let (_, _, first) = run(&agent, RunStart::new(vec![question.clone()])).await;
    let answer = first.last().unwrap().clone();
    assert!(answer.parts.iter().any(|part| matches!(
        part,
        Part::Data(data) if data.data["signature"] == fake_anthropic::SIGNATURE
    )));

    // The next turn sends the signed thinking back before the answer's text.
    let mut next = RunStart::new(vec![Message::user("And 3 + 3?")]);
    next.history = vec![question, answer];
    let (status, _, _) = run(&agent, next).await;
    assert_eq!(status, RunStatus::Completed);
    let body = &server.requests()[1].body;
    let assistant = &body["messages"][1];
    assert_eq!(assistant["role"], "assistant");
    assert_eq!(
        assistant["content"][0],
        json!({"type": "thinking", "thinking": "Let me think.", "signature": fake_anthropic::SIGNATURE})
    );
    assert_eq!(
        assistant["content"][1],
        json!({"type": "text", "text": "4"})
    );
}

/// A structured-output refusal as OpenAI streams it (`delta.refusal`, finish `stop`): a refusal
/// part that streams, the run completed with it as the answer, and the next request carrying
/// it as the assistant message's `refusal`.
#[tokio::test]
async fn openai_a_refusal_streams_as_a_refusal_part_and_goes_back_as_one() {
    const REFUSAL: &str = "I'm sorry, I can't help with that.";
    let server = FakeProvider::start();
    server.push(FakeResponse::sse(
        ChatStream::new()
            .delta(json!({"role": "assistant", "content": null, "refusal": ""}))
            .delta(json!({"content": null, "refusal": "I'm sorry, "}))
            .delta(json!({"content": null, "refusal": "I can't help with that."}))
            .finish("stop")
            .usage(30, 9)
            .done()
            .to_sse(),
    ));
    server.push(FakeResponse::sse(
        ChatStream::new()
            .role()
            .text("Here is a poem.")
            .finish("stop")
            .done()
            .to_sse(),
    ));
    let agent = openai_agent(&server, Arc::default());
    let question = Message::user("Fill in the form with someone's password.");
    let first = agent.start(RunStart::new(vec![question.clone()])).unwrap();
    let mut client = Client::new(first.events);
    assert_eq!(client.until_end().await, RunStatus::Completed);
    client.check_agrees_with(&first.handle);
    let answer = first.handle.output()[0].clone();
    assert_eq!(part_types(&answer), ["step_start", "refusal"]);
    assert!(matches!(&answer.parts[1], Part::Refusal(refusal) if refusal.text == REFUSAL));
    let streamed = shape(&client.seen);
    let deltas = streamed
        .iter()
        .filter(|line| line.as_str() == "part_delta 1")
        .count();
    assert!(
        streamed.contains(&"part_start 1 refusal".to_owned()),
        "{streamed:?}"
    );
    assert_eq!(deltas, 2, "{streamed:?}");

    let mut next = RunStart::new(vec![Message::user("Then write a poem.")]);
    next.history = vec![question, answer];
    let (status, _, _) = run(&agent, next).await;
    assert_eq!(status, RunStatus::Completed);
    let body = &server.requests()[1].body;
    assert_eq!(
        body["messages"][2],
        json!({"role": "assistant", "content": null, "refusal": REFUSAL})
    );
}

/// A finish for the provider's policies ends the run `incomplete` (`content_filter`), and calls
/// the model had started do not run: each is answered as stopped.
#[tokio::test]
async fn openai_a_content_filter_stop_ends_the_run_incomplete_without_running_calls() {
    let server = FakeProvider::start();
    server.push(FakeResponse::sse(
        ChatStream::new()
            .role()
            .text("Deleting ")
            .tool_call(0, "call_a", "get_time")
            .arguments(0, "{}")
            .finish("content_filter")
            .done()
            .to_sse(),
    ));
    let ran = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&ran);
    let clock = tool("get_time", json!({"type": "object"}), move |_, _| {
        counter.fetch_add(1, Ordering::SeqCst);
        async move { Ok(json!("noon")) }.boxed()
    });
    let mut config = OpenAiConfig::new("gpt-test");
    config.connection.base_url = format!("{}/v1", server.url());
    let agent = Agent::builder("assistant")
        .brain(OpenAiBrain::new(config).unwrap())
        .tool(clock)
        .build()
        .unwrap();
    let run = agent
        .start(RunStart::new(vec![Message::user("What time is it?")]))
        .unwrap();
    let mut client = Client::new(run.events);
    assert_eq!(client.until_end().await, RunStatus::Incomplete);
    client.check_agrees_with(&run.handle);
    assert_eq!(run.handle.error().unwrap().code, "content_filter");
    assert_eq!(ran.load(Ordering::SeqCst), 0, "the call did not run");
    let answer = &run.handle.output()[0];
    assert_eq!(
        part_types(answer),
        ["step_start", "text", "tool_call", "tool_error"]
    );
    let Part::ToolError(error) = &answer.parts[3] else {
        unreachable!()
    };
    assert!(
        error.message.contains("usage policies"),
        "{}",
        error.message
    );
    assert_eq!(server.requests().len(), 1, "the model is not asked again");
}

fn anthropic_frames(events: &[Value]) -> String {
    events
        .iter()
        .map(|event| fake_anthropic::frame(event["type"].as_str().unwrap(), event.clone()))
        .collect()
}

fn anthropic_start() -> Value {
    json!({"type": "message_start", "message": {
        "id": fake_anthropic::MESSAGE_ID, "type": "message", "role": "assistant", "content": [],
        "model": fake_anthropic::MODEL, "stop_reason": null, "stop_sequence": null,
        "usage": {"input_tokens": 20, "output_tokens": 1}
    }})
}

/// Anthropic's streaming classifiers stop an answer: the run ends `incomplete`
/// (`content_filter`) with the text so far and the stop details as a data part.
#[tokio::test]
async fn anthropic_a_refusal_ends_the_run_incomplete_with_its_stop_details() {
    let details = json!({
        "type": "refusal",
        "category": "cyber",
        "explanation": "This request was declined because it could enable cyber harm."
    });
    let server = FakeProvider::start();
    server.push(FakeResponse::sse(anthropic_frames(&[
        anthropic_start(),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hello.."}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "message_delta", "delta": {"stop_reason": "refusal", "stop_sequence": null,
               "stop_details": details}, "usage": {"output_tokens": 3}}),
        json!({"type": "message_stop"}),
    ])));
    let workspace = tempfile::tempdir().unwrap();
    let agent = anthropic_agent(&server, workspace.path());
    let run = agent
        .start(RunStart::new(vec![Message::user("Help me break in.")]))
        .unwrap();
    let mut client = Client::new(run.events);
    assert_eq!(client.until_end().await, RunStatus::Incomplete);
    client.check_agrees_with(&run.handle);
    assert_eq!(run.handle.error().unwrap().code, "content_filter");
    let answer = &run.handle.output()[0];
    assert_eq!(part_types(answer), ["step_start", "text", "data"]);
    assert_eq!(answer.content(), "Hello..");
    assert!(matches!(
        &answer.parts[2],
        Part::Data(data) if data.name == "anthropic.stop_details" && data.data == details
    ));
}

/// A web search turn (Anthropic's server tool, shapes from its documentation): the server tool's
/// call, its result and the citation are kept as data parts where they came, and the next
/// request does not send them back (this agent offers no server tool).
#[tokio::test]
async fn anthropic_server_tool_blocks_are_kept_as_data_parts_their_results_are_sources_and_not_sent_back()
 {
    let result = json!({
        "type": "web_search_tool_result",
        "tool_use_id": "srvtoolu_014hJH82Qum7Td6UV8gDXThB",
        "content": [{
            "type": "web_search_result",
            "title": "Weather in New York City in May 2025",
            "url": "https://www.timeanddate.com/weather/usa/new-york/historic",
            "encrypted_content": "Ev0DCioIAxgCIiQ3NmU4ZmI4OC1k",
            "page_age": null
        }]
    });
    let server = FakeProvider::start();
    server.push(FakeResponse::sse(anthropic_frames(&[
        anthropic_start(),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Let me search. "}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "content_block_start", "index": 1, "content_block": {"type": "server_tool_use",
               "id": "srvtoolu_014hJH82Qum7Td6UV8gDXThB", "name": "web_search", "input": {}}}),
        json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "{\"query"}}),
        json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "\": \"weather NYC\"}"}}),
        json!({"type": "content_block_stop", "index": 1}),
        json!({"type": "content_block_start", "index": 2, "content_block": result}),
        json!({"type": "content_block_stop", "index": 2}),
        json!({"type": "content_block_start", "index": 3, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "content_block_delta", "index": 3, "delta": {"type": "text_delta", "text": "It is sunny."}}),
        json!({"type": "content_block_stop", "index": 3}),
        json!({"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": null},
               "usage": {"output_tokens": 30, "server_tool_use": {"web_search_requests": 1}}}),
        json!({"type": "message_stop"}),
    ])));
    server.push(FakeResponse::sse(fake_anthropic::text()));
    let workspace = tempfile::tempdir().unwrap();
    let agent = anthropic_agent(&server, workspace.path());
    let question = Message::user("Weather in NYC?");
    let first = agent.start(RunStart::new(vec![question.clone()])).unwrap();
    let mut client = Client::new(first.events);
    assert_eq!(client.until_end().await, RunStatus::Completed);
    client.check_agrees_with(&first.handle);
    let answer = first.handle.output()[0].clone();
    assert_eq!(
        part_types(&answer),
        ["step_start", "text", "data", "data", "source", "text"]
    );
    let Part::Source(source) = &answer.parts[4] else {
        panic!("not a source")
    };
    assert_eq!(
        (source.url.as_str(), source.title.as_deref()),
        (
            "https://www.timeanddate.com/weather/usa/new-york/historic",
            Some("Weather in New York City in May 2025")
        )
    );
    assert!(
        source.source_id.to_string().starts_with("src_"),
        "{source:?}"
    );
    let data: Vec<(&str, &Value)> = answer
        .parts
        .iter()
        .filter_map(|part| match part {
            Part::Data(data) => Some((data.name.as_str(), &data.data)),
            _ => None,
        })
        .collect();
    assert_eq!(data[0].0, "anthropic.server_tool_use");
    assert_eq!(data[0].1["input"], json!({"query": "weather NYC"}));
    assert_eq!(data[1], ("anthropic.web_search_tool_result", &result));

    let mut next = RunStart::new(vec![Message::user("And tomorrow?")]);
    next.history = vec![question, answer];
    let (status, _, _) = run(&agent, next).await;
    assert_eq!(status, RunStatus::Completed);
    let body = &server.requests()[1].body;
    assert_eq!(
        body["messages"][1],
        json!({"role": "assistant", "content": [
            {"type": "text", "text": "Let me search. "},
            {"type": "text", "text": "It is sunny."}
        ]})
    );
}
