//! The OpenAI Responses brain against a real HTTP server on port 0 playing Responses API streams
//! in the documented format: the request it sends, a tool call split at every byte, reasoning
//! kept for the next turn, the transport's retry rules, errors in the stream, and cancellation.

#![allow(clippy::unwrap_used)]

mod common;

use agentwire_brain::openai_responses::REASONING_ITEM;
use agentwire_brain::{
    Brain, BrainEvent, BrainRequest, FinishReason, GenerationSettings, OpenAiResponsesBrain,
    OpenAiResponsesConfig,
};
use agentwire_core::{Message, Usage};
use agentwire_testkit::fake_openai_responses::ResponsesStream;
use agentwire_testkit::fake_provider::{FakeProvider, FakeResponse};
use common::{call_text, dropping_the_stream_aborts, events, hi, ok, quick_retries};
use serde_json::json;

fn brain(server: &FakeProvider) -> OpenAiResponsesBrain {
    let mut config = OpenAiResponsesConfig::new("o4-mini");
    config.connection.base_url = format!("{}/v1/", server.url());
    config.connection.api_key = Some("sk-test".into());
    config.connection.retry = quick_retries();
    config.reasoning_summary = Some("auto".into());
    OpenAiResponsesBrain::new(config).unwrap()
}

fn usage(input: u64, output: u64, reasoning: u64) -> Option<Usage> {
    Some(Usage {
        reasoning_tokens: Some(reasoning),
        cached_input_tokens: Some(0),
        ..Usage::new(input, output)
    })
}

const ENCRYPTED: &str = "gAAAAABoISQ24OyVRYbkYfukLbSRHz0Q8Y8T1gl1MyyOnyYTr0p2Njs4yqo1Z3vD";

#[tokio::test]
async fn the_request_goes_to_responses_with_the_key_and_store_false() {
    let server = FakeProvider::start();
    server.push(FakeResponse::sse(
        ResponsesStream::new()
            .message("msg_1", &["Hel", "lo!"])
            .completed(9, 2, 0)
            .to_sse(),
    ));
    let brain = brain(&server);
    assert_eq!(brain.describe(), "openai-responses:o4-mini");
    assert_eq!(
        events(&brain, hi()).await,
        [
            BrainEvent::text_delta("Hel"),
            BrainEvent::text_delta("lo!"),
            BrainEvent::finish(FinishReason::Stop, usage(9, 2, 0)),
        ]
    );
    let request = &server.requests()[0];
    assert_eq!(request.method, "POST");
    assert_eq!(request.path, "/v1/responses");
    assert_eq!(request.header("authorization"), Some("Bearer sk-test"));
    assert_eq!(request.header("accept"), Some("text/event-stream"));
    assert_eq!(
        request.body,
        json!({
            "model": "o4-mini",
            "input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Hi"}]}],
            "stream": true,
            "store": false,
            "include": ["reasoning.encrypted_content"],
            "reasoning": {"summary": "auto"}
        })
    );
}

/// Reasoning, then a call whose arguments arrive in fragments.
fn reasoning_and_call() -> ResponsesStream {
    ResponsesStream::new()
        .reasoning("rs_1", &[&["Write ", "it."]], ENCRYPTED)
        .function_call(
            "fc_1",
            "call_w9sq2",
            "write_file",
            &[
                "{\"pa",
                "th\": \"a.txt\", \"con",
                "tent\": \"h\u{e9}llo \u{1f30d}\"}",
            ],
        )
        .completed(30, 12, 8)
}

fn reasoning_and_call_events() -> Vec<BrainEvent> {
    vec![
        BrainEvent::reasoning_delta("Write "),
        BrainEvent::reasoning_delta("it."),
        BrainEvent::Data {
            name: REASONING_ITEM.into(),
            data: json!({
                "id": "rs_1", "type": "reasoning", "encrypted_content": ENCRYPTED,
                "summary": [{"type": "summary_text", "text": "Write it."}]
            }),
        },
        BrainEvent::tool_call_start("call_w9sq2", "write_file"),
        BrainEvent::tool_call_delta("call_w9sq2", "{\"pa"),
        BrainEvent::tool_call_delta("call_w9sq2", "th\": \"a.txt\", \"con"),
        BrainEvent::tool_call_delta("call_w9sq2", "tent\": \"h\u{e9}llo \u{1f30d}\"}"),
        BrainEvent::tool_call_end("call_w9sq2"),
        BrainEvent::finish(FinishReason::ToolCalls, usage(30, 12, 8)),
    ]
}

#[tokio::test]
async fn a_call_with_reasoning_split_at_every_byte() {
    let server = FakeProvider::start();
    let brain = brain(&server);
    let sse = reasoning_and_call().to_sse();
    let expected = reasoning_and_call_events();
    for split in 0..=sse.len() {
        server.push(FakeResponse::sse_split(&sse, &[split]));
        assert_eq!(events(&brain, hi()).await, expected, "split at {split}");
    }
    let every_byte: Vec<usize> = (1..sse.len()).collect();
    server.push(FakeResponse::sse_split(&sse, &every_byte));
    assert_eq!(events(&brain, hi()).await, expected);
}

#[tokio::test]
async fn the_reasoning_item_goes_back_with_the_call_and_its_output() {
    let server = FakeProvider::start();
    let brain = brain(&server);
    server.push(FakeResponse::sse(reasoning_and_call().to_sse()));
    let first = events(&brain, hi()).await;
    // The runtime's message for that step, with the call's result, as the next call sees it.
    let Some(BrainEvent::Data { data: item, .. }) = first.get(2).cloned() else {
        panic!("no reasoning item: {first:?}");
    };
    let assistant: Message = serde_json::from_value(json!({
        "id": "msg_a", "role": "assistant", "parts": [
            {"type": "reasoning", "text": "Write it."},
            {"type": "data", "name": REASONING_ITEM, "data": item.clone()},
            {"type": "tool_call", "tool_call_id": "call_w9sq2", "tool_name": "write_file",
             "args": {"path": "a.txt", "content": "héllo"}},
            {"type": "tool_result", "tool_call_id": "call_w9sq2", "result": {"written": 6}}
        ]
    }))
    .unwrap();
    server.push(FakeResponse::sse(
        ResponsesStream::new()
            .message("msg_2", &["Done."])
            .completed(50, 3, 0)
            .to_sse(),
    ));
    let request = BrainRequest {
        step: 1,
        ..BrainRequest::new(vec![Message::user("Hi"), assistant])
    };
    events(&brain, request).await;
    let input = &server.requests()[1].body["input"];
    assert_eq!(
        input,
        &json!([
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Hi"}]},
            item,
            {"type": "function_call", "call_id": "call_w9sq2", "name": "write_file",
             "arguments": "{\"path\":\"a.txt\",\"content\":\"héllo\"}"},
            {"type": "function_call_output", "call_id": "call_w9sq2", "output": "{\"written\":6}"}
        ])
    );
}

#[tokio::test]
async fn transient_statuses_are_retried_and_client_errors_are_not() {
    let server = FakeProvider::start();
    let brain = brain(&server);
    server.push(FakeResponse::new(500).body(r#"{"error":{"message":"boom"}}"#));
    server.push(FakeResponse::new(429).header("retry-after-ms", "1"));
    server.push(FakeResponse::sse(
        ResponsesStream::new()
            .message("msg_1", &["ok"])
            .completed(1, 1, 0)
            .to_sse(),
    ));
    assert_eq!(
        call_text(&brain, hi()).await,
        ok(vec![
            BrainEvent::text_delta("ok"),
            BrainEvent::finish(FinishReason::Stop, usage(1, 1, 0)),
        ])
    );
    assert_eq!(server.requests().len(), 3);

    let refusal = r#"{"error":{"message":"Unsupported parameter: 'temperature'","type":"invalid_request_error","param":"temperature","code":"unsupported_parameter"}}"#;
    server.push(FakeResponse::new(400).body(refusal));
    assert_eq!(
        call_text(&brain, hi()).await,
        [Err(format!("the provider answered HTTP 400: {refusal}"))]
    );
    assert_eq!(server.requests().len(), 4);
}

#[tokio::test]
async fn errors_in_the_stream_end_the_call_and_are_not_retried() {
    let server = FakeProvider::start();
    let brain = brain(&server);
    server.push(FakeResponse::sse(
        ResponsesStream::new()
            .message("msg_1", &["Par"])
            .failed("server_error", "The model failed to generate a response.")
            .to_sse(),
    ));
    assert_eq!(
        call_text(&brain, hi()).await,
        [
            Ok(BrainEvent::text_delta("Par")),
            Err("the model failed: The model failed to generate a response. (server_error)".into()),
        ]
    );
    server.push(FakeResponse::sse(
        ResponsesStream::new()
            .error("rate_limit_exceeded", "Rate limit reached.")
            .to_sse(),
    ));
    assert_eq!(
        call_text(&brain, hi()).await,
        [Err(
            "the model failed: Rate limit reached. (rate_limit_exceeded)".into()
        )]
    );
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn a_stream_cut_short_is_retried_before_output_and_malformed_after() {
    let server = FakeProvider::start();
    let brain = brain(&server);
    // No output yet (only the response's lifecycle): retried.
    server.push(FakeResponse::sse(ResponsesStream::new().to_sse()));
    server.push(FakeResponse::sse(
        ResponsesStream::new()
            .incomplete("max_output_tokens", 4, 16)
            .to_sse(),
    ));
    assert_eq!(
        call_text(&brain, hi()).await,
        ok(vec![BrainEvent::finish(
            FinishReason::Length,
            usage(4, 16, 0)
        )])
    );
    assert_eq!(server.requests().len(), 2);

    server.push(FakeResponse::sse(
        ResponsesStream::new().message("msg_1", &["Hi"]).to_sse(),
    ));
    assert_eq!(
        call_text(&brain, hi()).await,
        [
            Ok(BrainEvent::text_delta("Hi")),
            Err("the provider's stream is malformed: the stream ended before the response completed".into()),
        ]
    );
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn settings_the_api_lacks_are_refused() {
    let server = FakeProvider::start();
    let brain = brain(&server);
    let settings = |adjust: fn(&mut GenerationSettings)| {
        let mut settings = GenerationSettings::default();
        adjust(&mut settings);
        brain.check_settings(&settings).map_err(|error| error.field)
    };
    assert_eq!(
        settings(|s| {
            s.temperature = Some(0.3);
            s.top_p = Some(0.5);
            s.max_tokens = Some(9);
            s.model = Some("gpt-5".into());
        }),
        Ok(())
    );
    assert_eq!(settings(|s| s.stop = vec!["x".into()]), Err("stop".into()));
    assert_eq!(settings(|s| s.seed = Some(1)), Err("seed".into()));
    assert_eq!(settings(|s| s.n = Some(2)), Err("n".into()));
}

#[tokio::test]
async fn dropping_the_stream_aborts_the_request() {
    let server = FakeProvider::start();
    let sse = ResponsesStream::new().message("msg_1", &["Hi"]).to_sse();
    server.push(FakeResponse::sse(sse).hang());
    dropping_the_stream_aborts(&server, &brain(&server), &[BrainEvent::text_delta("Hi")]).await;
}
