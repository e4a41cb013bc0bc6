//! The OpenAI brain against a real HTTP server on port 0 playing Chat Completions streams in the
//! providers' documented format: deltas, tool calls (split at every byte, interleaved, without
//! `index`), reasoning spellings, usage, odd finishes, truncation, retries and cancellation.

#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use agentwire_brain::openai::OTHER_CHOICE;
use agentwire_brain::{
    Brain, BrainError, BrainEvent, BrainRequest, FinishReason, GenerationSettings, OpenAiBrain,
    OpenAiConfig, RetryPolicy,
};
use agentwire_core::{Message, ToolSpec, Usage};
use agentwire_testkit::fake_openai::ChatStream;
use agentwire_testkit::fake_provider::{FakeProvider, FakeResponse};
use common::{call, dropping_the_stream_aborts, events, hi, quick_retries};
use serde_json::{Value, json};
use tokio::time::Instant;

/// A brain on the fake server, with retries that do not wait.
fn brain(server: &FakeProvider) -> OpenAiBrain {
    brain_with(server, |_| {})
}

fn brain_with(server: &FakeProvider, adjust: impl FnOnce(&mut OpenAiConfig)) -> OpenAiBrain {
    let mut config = OpenAiConfig::new("gpt-4o-mini");
    config.connection.base_url = format!("{}/v1/", server.url());
    config.connection.api_key = Some("sk-test".into());
    config.connection.retry = quick_retries();
    adjust(&mut config);
    OpenAiBrain::new(config).unwrap()
}

/// The usage [`ChatStream::usage`] reports.
fn usage(input: u64, output: u64) -> Option<Usage> {
    Some(Usage {
        reasoning_tokens: Some(0),
        cached_input_tokens: Some(0),
        ..Usage::new(input, output)
    })
}

#[tokio::test]
async fn text_streams_with_its_usage() {
    let server = FakeProvider::start();
    let sse = ChatStream::new()
        .role()
        .text("Hel")
        .text("lo!")
        .finish("stop")
        .usage(9, 2)
        .done();
    server.push(FakeResponse::sse(sse.to_sse()));
    let brain = brain(&server);
    assert_eq!(brain.describe(), "openai:gpt-4o-mini");
    assert_eq!(
        events(&brain, hi()).await,
        &[
            BrainEvent::text_delta("Hel"),
            BrainEvent::text_delta("lo!"),
            BrainEvent::finish(FinishReason::Stop, usage(9, 2)),
        ],
    );
    let request = &server.requests()[0];
    assert_eq!(request.method, "POST");
    assert_eq!(request.path, "/v1/chat/completions");
    assert_eq!(request.header("authorization"), Some("Bearer sk-test"));
    assert_eq!(request.header("content-type"), Some("application/json"));
    assert_eq!(request.header("accept"), Some("text/event-stream"));
    assert_eq!(
        request.body,
        json!({
            "model": "gpt-4o-mini",
            "messages": [{"role": "user", "content": "Hi"}],
            "stream": true,
            "stream_options": {"include_usage": true}
        })
    );
}

/// One tool call whose arguments arrive in fragments, after some text.
fn one_call() -> ChatStream {
    ChatStream::new()
        .role()
        .text("Let me write it. ")
        .tool_call(0, "call_w9sq2", "write_file")
        .arguments(0, "{\"pa")
        .arguments(0, "th\": \"a.txt\", \"con")
        .arguments(0, "tent\": \"h\u{e9}llo \u{1f30d}\"}")
        .finish("tool_calls")
        .usage(30, 12)
        .done()
}

#[tokio::test]
async fn tool_call_arguments_split_at_every_byte() {
    let server = FakeProvider::start();
    let brain = brain(&server);
    let sse = one_call().to_sse();
    let expected = [
        BrainEvent::text_delta("Let me write it. "),
        BrainEvent::tool_call_start("call_w9sq2", "write_file"),
        BrainEvent::tool_call_delta("call_w9sq2", "{\"pa"),
        BrainEvent::tool_call_delta("call_w9sq2", "th\": \"a.txt\", \"con"),
        BrainEvent::tool_call_delta("call_w9sq2", "tent\": \"h\u{e9}llo \u{1f30d}\"}"),
        BrainEvent::tool_call_end("call_w9sq2"),
        BrainEvent::finish(FinishReason::ToolCalls, usage(30, 12)),
    ];
    for split in 0..=sse.len() {
        server.push(FakeResponse::sse_split(&sse, &[split]));
        assert_eq!(events(&brain, hi()).await, expected, "split at {split}");
    }
    // And every byte on its own.
    let every_byte: Vec<usize> = (1..sse.len()).collect();
    server.push(FakeResponse::sse_split(&sse, &every_byte));
    assert_eq!(events(&brain, hi()).await, expected);
}

#[tokio::test]
async fn parallel_calls_interleave_by_index() {
    let server = FakeProvider::start();
    let sse = ChatStream::new()
        .role()
        .tool_call(0, "call_a", "get_weather")
        .tool_call(1, "call_b", "get_time")
        .arguments(1, "{\"tz\":")
        .arguments(0, "{\"city\":")
        .arguments(0, "\"Oslo\"}")
        .arguments(1, "\"CET\"}")
        .finish("tool_calls")
        .usage(20, 8)
        .done();
    server.push(FakeResponse::sse(sse.to_sse()));
    assert_eq!(
        events(&brain(&server), hi()).await,
        &[
            BrainEvent::tool_call_start("call_a", "get_weather"),
            BrainEvent::tool_call_start("call_b", "get_time"),
            BrainEvent::tool_call_delta("call_b", "{\"tz\":"),
            BrainEvent::tool_call_delta("call_a", "{\"city\":"),
            BrainEvent::tool_call_delta("call_a", "\"Oslo\"}"),
            BrainEvent::tool_call_delta("call_b", "\"CET\"}"),
            BrainEvent::tool_call_end("call_a"),
            BrainEvent::tool_call_end("call_b"),
            BrainEvent::finish(FinishReason::ToolCalls, usage(20, 8)),
        ],
    );
}

#[tokio::test]
async fn reasoning_in_either_spelling() {
    let server = FakeProvider::start();
    let brain = brain(&server);
    // DeepSeek: reasoning_content with content null, then the answer.
    let deepseek = ChatStream::new()
        .role()
        .reasoning_content("2+2 is ")
        .reasoning_content("4.")
        .text("4")
        .finish("stop")
        .usage(7, 9)
        .done();
    server.push(FakeResponse::sse(deepseek.to_sse()));
    assert_eq!(
        events(&brain, hi()).await,
        &[
            BrainEvent::reasoning_delta("2+2 is "),
            BrainEvent::reasoning_delta("4."),
            BrainEvent::text_delta("4"),
            BrainEvent::finish(FinishReason::Stop, usage(7, 9)),
        ],
    );
    // OpenRouter: reasoning (with reasoning_details beside it).
    let openrouter = ChatStream::new()
        .reasoning("Thinking")
        .text("Done")
        .finish("stop")
        .done();
    server.push(FakeResponse::sse(openrouter.to_sse()));
    assert_eq!(
        events(&brain, hi()).await,
        &[
            BrainEvent::reasoning_delta("Thinking"),
            BrainEvent::text_delta("Done"),
            BrainEvent::finish(FinishReason::Stop, None),
        ],
    );
}

#[tokio::test]
async fn calls_without_index_and_usage_without_choices() {
    let server = FakeProvider::start();
    // Some servers leave out `index`: the id, else the last call, tells which call continues.
    let sse = ChatStream::new()
        .delta(json!({"tool_calls": [{"id": "c1", "type": "function",
            "function": {"name": "f", "arguments": "{\"a\""}}]}))
        .delta(json!({"tool_calls": [{"function": {"arguments": ":1}"}}]}))
        .delta(json!({"tool_calls": [{"id": "c2", "function": {"name": "g", "arguments": "{}"}}]}))
        .finish("tool_calls")
        .chunk(json!({"id": "x", "usage": {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7}}))
        .done();
    server.push(FakeResponse::sse(sse.to_sse()));
    assert_eq!(
        events(&brain(&server), hi()).await,
        &[
            BrainEvent::tool_call_start("c1", "f"),
            BrainEvent::tool_call_delta("c1", "{\"a\""),
            BrainEvent::tool_call_delta("c1", ":1}"),
            BrainEvent::tool_call_start("c2", "g"),
            BrainEvent::tool_call_delta("c2", "{}"),
            BrainEvent::tool_call_end("c1"),
            BrainEvent::tool_call_end("c2"),
            BrainEvent::finish(FinishReason::ToolCalls, Some(Usage::new(3, 4))),
        ],
    );
}

#[tokio::test]
async fn odd_finish_reasons_and_unknown_fields_are_tolerated() {
    let server = FakeProvider::start();
    let brain = brain(&server);
    // Extra fields anywhere; an empty finish reason is no finish; an unknown one is kept.
    let sse = ChatStream::new()
        .chunk(json!({
            "id": "x", "object": "chat.completion.chunk", "obfuscation": "a1b2",
            "x_groq": {"id": "req_1"},
            "choices": [{"index": 0, "delta": {"content": "a", "annotations": [], "refusal": null},
                         "logprobs": null, "finish_reason": "", "stop_reason": null}]
        }))
        .choice(json!({"content": "b"}), json!("eos"))
        .to_sse();
    // No [DONE] and no usage: a finish reason is enough to end well.
    server.push(FakeResponse::sse(sse));
    assert_eq!(
        events(&brain, hi()).await,
        &[
            BrainEvent::text_delta("a"),
            BrainEvent::text_delta("b"),
            BrainEvent::finish(FinishReason::Other("eos".into()), None),
        ],
    );
    // Anthropic-style and null finish reasons from proxies.
    let sse = ChatStream::new()
        .text("c")
        .choice(json!({}), Value::Null)
        .finish("end_turn")
        .done()
        .to_sse();
    server.push(FakeResponse::sse(sse));
    assert_eq!(
        events(&brain, hi()).await,
        &[
            BrainEvent::text_delta("c"),
            BrainEvent::finish(FinishReason::Stop, None)
        ],
    );
}

#[tokio::test]
async fn a_stream_cut_short_after_output_is_malformed() {
    let server = FakeProvider::start();
    let brain = brain(&server);
    // Ends properly at the HTTP level, but without a finish or [DONE].
    let sse = ChatStream::new().role().text("Hal").to_sse();
    server.push(FakeResponse::sse(sse));
    let items = call(&brain, hi()).await;
    assert_eq!(items.len(), 2);
    assert_eq!(items[0].as_ref().unwrap(), &BrainEvent::text_delta("Hal"));
    let error = items[1].as_ref().unwrap_err();
    assert!(
        matches!(error, BrainError::MalformedStream { message } if message.contains("ended before the model finished")),
        "{error}"
    );
    // Output was streamed: not retried.
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn an_error_chunk_fails_the_call() {
    let server = FakeProvider::start();
    let sse = ChatStream::new()
        .text("partial")
        .chunk(
            json!({"error": {"message": "upstream overloaded", "code": 502},
                      "choices": [{"index": 0, "delta": {}, "finish_reason": "error"}]}),
        )
        .to_sse();
    server.push(FakeResponse::sse(sse));
    let items = call(&brain(&server), hi()).await;
    assert_eq!(
        items[0].as_ref().unwrap(),
        &BrainEvent::text_delta("partial")
    );
    assert!(
        matches!(&items[1], Err(BrainError::Model { message }) if message == "upstream overloaded")
    );
    assert_eq!(items.len(), 2);
}

fn hello() -> Vec<u8> {
    ChatStream::new()
        .role()
        .text("Hello")
        .finish("stop")
        .usage(1, 1)
        .done()
        .to_sse()
}

#[tokio::test]
async fn http_500_then_success_is_retried() {
    let server = FakeProvider::start();
    server.push(FakeResponse::new(500).body(r#"{"error":{"message":"boom"}}"#));
    server.push(FakeResponse::sse(hello()));
    assert_eq!(
        events(&brain(&server), hi()).await,
        &[
            BrainEvent::text_delta("Hello"),
            BrainEvent::finish(FinishReason::Stop, usage(1, 1))
        ],
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].body, requests[1].body);
}

#[tokio::test]
async fn a_stream_cut_before_any_output_is_retried() {
    let server = FakeProvider::start();
    // The role chunk yields no event: nothing was streamed yet when the connection broke.
    let role_only = ChatStream::new().role().to_sse();
    server.push(FakeResponse::sse(role_only).cut());
    server.push(FakeResponse::sse(hello()));
    assert_eq!(
        events(&brain(&server), hi()).await,
        &[
            BrainEvent::text_delta("Hello"),
            BrainEvent::finish(FinishReason::Stop, usage(1, 1))
        ],
    );
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test(start_paused = true)]
async fn http_429_waits_as_long_as_retry_after_says() {
    let server = FakeProvider::start();
    server.push(
        FakeResponse::new(429)
            .header("retry-after", "20")
            .body(r#"{"error":{"type":"rate_limit_exceeded"}}"#),
    );
    server.push(FakeResponse::sse(hello()));
    let brain = brain_with(&server, |config| {
        config.connection.retry = RetryPolicy {
            max_attempts: 2,
            initial_delay: Duration::from_millis(10),
            max_delay: Duration::from_secs(60),
        };
    });
    let started = Instant::now();
    assert_eq!(
        events(&brain, hi()).await,
        &[
            BrainEvent::text_delta("Hello"),
            BrainEvent::finish(FinishReason::Stop, usage(1, 1))
        ],
    );
    // The paused clock only moves when the runtime has nothing to do, so it ran at least the
    // 20 s asked for (and the test took no real time).
    assert!(started.elapsed() >= Duration::from_secs(20));
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn http_500_forever_fails_after_max_attempts() {
    let server = FakeProvider::start();
    for _ in 0..5 {
        server.push(FakeResponse::new(503).body("overloaded"));
    }
    let items = call(&brain(&server), hi()).await;
    assert_eq!(items.len(), 1);
    assert!(
        matches!(&items[0], Err(BrainError::ProviderRejected { status: 503, body }) if body == "overloaded"),
        "{:?}",
        items[0]
    );
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn an_unreachable_server_is_a_connection_error_after_the_retries() {
    // A port that was just free: nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut config = OpenAiConfig::new("m");
    config.connection.base_url = format!("http://127.0.0.1:{port}/v1");
    config.connection.retry = RetryPolicy {
        max_attempts: 2,
        initial_delay: Duration::ZERO,
        max_delay: Duration::ZERO,
    };
    let items = call(&OpenAiBrain::new(config).unwrap(), hi()).await;
    assert_eq!(items.len(), 1);
    assert!(
        matches!(&items[0], Err(BrainError::Connection { message }) if message.contains("onnect")),
        "{:?}",
        items[0]
    );
}

#[tokio::test]
async fn http_400_is_not_retried() {
    let server = FakeProvider::start();
    let body = r#"{"error":{"message":"Invalid 'messages[1].tool_calls'","type":"invalid_request_error"}}"#;
    server.push(FakeResponse::new(400).body(body));
    server.push(FakeResponse::sse(hello()));
    let items = call(&brain(&server), hi()).await;
    assert_eq!(items.len(), 1);
    assert!(
        matches!(&items[0], Err(BrainError::ProviderRejected { status: 400, body: got }) if got == body)
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn a_failure_after_output_is_not_retried() {
    let server = FakeProvider::start();
    let sse = ChatStream::new().role().text("Hel").to_sse();
    server.push(FakeResponse::sse(sse).cut());
    server.push(FakeResponse::sse(hello()));
    let items = call(&brain(&server), hi()).await;
    assert_eq!(items.len(), 2);
    assert_eq!(items[0].as_ref().unwrap(), &BrainEvent::text_delta("Hel"));
    assert!(
        matches!(&items[1], Err(BrainError::Connection { .. })),
        "{:?}",
        items[1]
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn dropping_the_stream_aborts_the_request() {
    let server = FakeProvider::start();
    let sse = ChatStream::new().role().text("Once upon").to_sse();
    server.push(FakeResponse::sse(sse).hang());
    let first = [BrainEvent::text_delta("Once upon")];
    dropping_the_stream_aborts(&server, &brain(&server), &first).await;
}

#[tokio::test]
async fn a_multi_step_history_is_sent_exactly() {
    let server = FakeProvider::start();
    server.push(FakeResponse::sse(hello()));
    let brain = brain_with(&server, |config| {
        config.connection.api_key = None;
        config.connection.headers = vec![("HTTP-Referer".into(), "https://agentwire.test".into())];
        config.temperature = Some(0.2);
    });
    let messages: Vec<Message> = serde_json::from_value(json!([
        {"role": "user", "parts": [{"type": "text", "text": "Write hello to a.txt"}]},
        {"role": "assistant", "parts": [
            {"type": "step_start", "step_id": "s1"},
            {"type": "reasoning", "text": "The tool needs a path."},
            {"type": "tool_call", "tool_call_id": "call_1", "tool_name": "write_file",
             "args": {"content": "hello"}},
            {"type": "tool_error", "tool_call_id": "call_1", "tool_name": "write_file",
             "error_type": "VALIDATION", "message": "missing required field 'path'"},
            {"type": "step_start", "step_id": "s2"},
            {"type": "text", "text": "Retrying with a path."},
            {"type": "tool_call", "tool_call_id": "call_2", "tool_name": "write_file",
             "args": {"path": "a.txt", "content": "hello"}},
            {"type": "tool_call", "tool_call_id": "call_3", "tool_name": "list_files", "args": {}},
            {"type": "tool_result", "tool_call_id": "call_3", "tool_name": "list_files",
             "result": {"files": ["a.txt"]}},
            {"type": "tool_result", "tool_call_id": "call_2", "tool_name": "write_file",
             "result": {"bytes": 5}},
            {"type": "step_start", "step_id": "s3"},
            {"type": "text", "text": "Wrote a.txt."}
        ]},
        {"role": "user", "parts": [{"type": "text", "text": "Thanks"}]}
    ]))
    .unwrap();
    let request = BrainRequest {
        system: Some("You write files.".into()),
        messages,
        tools: vec![ToolSpec::new(
            "write_file",
            "Write a file in the workspace",
            json!({"type": "object", "properties": {"path": {"type": "string"},
                   "content": {"type": "string"}}, "required": ["path", "content"]}),
        )]
        .into(),
        step: 0,
        settings: Default::default(),
        trace_context: Default::default(),
    };
    events(&brain, request).await;
    let recorded = &server.requests()[0];
    assert_eq!(recorded.header("authorization"), None);
    assert_eq!(
        recorded.header("http-referer"),
        Some("https://agentwire.test")
    );
    assert_eq!(
        recorded.body,
        json!({
            "model": "gpt-4o-mini",
            "messages": [
                {"role": "system", "content": "You write files."},
                {"role": "user", "content": "Write hello to a.txt"},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "call_1", "type": "function", "function": {
                        "name": "write_file", "arguments": "{\"content\":\"hello\"}"}}
                ]},
                {"role": "tool", "tool_call_id": "call_1", "content":
                    "{\"error\":{\"type\":\"VALIDATION\",\"message\":\"missing required field 'path'\"}}"},
                {"role": "assistant", "content": "Retrying with a path.", "tool_calls": [
                    {"id": "call_2", "type": "function", "function": {
                        "name": "write_file",
                        "arguments": "{\"path\":\"a.txt\",\"content\":\"hello\"}"}},
                    {"id": "call_3", "type": "function", "function": {
                        "name": "list_files", "arguments": "{}"}}
                ]},
                {"role": "tool", "tool_call_id": "call_2", "content": "{\"bytes\":5}"},
                {"role": "tool", "tool_call_id": "call_3", "content": "{\"files\":[\"a.txt\"]}"},
                {"role": "assistant", "content": "Wrote a.txt."},
                {"role": "user", "content": "Thanks"}
            ],
            "tools": [{"type": "function", "function": {
                "name": "write_file",
                "description": "Write a file in the workspace",
                "parameters": {"type": "object", "properties": {"path": {"type": "string"},
                    "content": {"type": "string"}}, "required": ["path", "content"]}
            }}],
            "stream": true,
            "stream_options": {"include_usage": true},
            "temperature": 0.2
        })
    );
}

#[test]
fn unusable_configurations_are_refused() {
    let refused = |adjust: fn(&mut OpenAiConfig)| {
        let mut config = OpenAiConfig::new("m");
        adjust(&mut config);
        match OpenAiBrain::new(config) {
            Err(BrainError::Config { message }) => message,
            other => panic!("accepted: {other:?}"),
        }
    };
    assert!(
        refused(|config| config.connection.base_url = "not a url".into()).contains("not a URL")
    );
    assert!(
        refused(|config| config.connection.base_url = "ftp://x.test".into()).contains("not http")
    );
    assert!(
        refused(|config| config.connection.headers = vec![("bad header".into(), "v".into())])
            .contains("\"bad header\"")
    );
    assert!(
        refused(|config| config.connection.api_key = Some("line\nbreak".into()))
            .contains("API key")
    );
    let mut config = OpenAiConfig::new("m");
    config.connection.api_key = Some("sk-secret".into());
    assert!(!format!("{config:?}").contains("sk-secret"));
    let brain = OpenAiBrain::new(config).unwrap();
    assert!(!format!("{brain:?}").contains("sk-secret"));
}

/// Every generation setting a run can send, out of each setting's default.
fn every_setting() -> GenerationSettings {
    GenerationSettings {
        model: Some("gpt-4.1".into()),
        temperature: Some(1.25),
        top_p: Some(0.5),
        max_tokens: Some(321),
        stop: vec!["END".into(), "\n\n".into()],
        seed: Some(-42),
        frequency_penalty: Some(-0.5),
        presence_penalty: Some(1.5),
        n: Some(1),
    }
}

#[tokio::test]
async fn a_run_s_settings_reach_the_provider_exactly_over_the_configuration() {
    let server = FakeProvider::start();
    let stream = || ChatStream::new().text("ok").finish("stop").done().to_sse();
    server.push(FakeResponse::sse(stream()));
    server.push(FakeResponse::sse(stream()));
    let brain = brain_with(&server, |config| {
        config.temperature = Some(0.1);
        config.max_tokens = Some(10);
        config.extra_body.insert("top_p".into(), json!(0.9));
        config
            .extra_body
            .insert("reasoning_effort".into(), json!("low"));
    });
    let mut request = hi();
    request.settings = every_setting();
    events(&brain, request).await;
    events(&brain, hi()).await;
    let requests = server.requests();
    assert_eq!(
        requests[0].body,
        json!({
            "model": "gpt-4.1",
            "messages": [{"role": "user", "content": "Hi"}],
            "stream": true,
            "stream_options": {"include_usage": true},
            "temperature": 1.25,
            "max_tokens": 321,
            "top_p": 0.5,
            "reasoning_effort": "low",
            "stop": ["END", "\n\n"],
            "seed": -42,
            "frequency_penalty": -0.5,
            "presence_penalty": 1.5,
            "n": 1
        })
    );
    // Without the run's settings, the configuration's.
    assert_eq!(
        requests[1].body,
        json!({
            "model": "gpt-4o-mini",
            "messages": [{"role": "user", "content": "Hi"}],
            "stream": true,
            "stream_options": {"include_usage": true},
            "temperature": 0.1,
            "max_tokens": 10,
            "top_p": 0.9,
            "reasoning_effort": "low"
        })
    );
    assert_eq!(brain.check_settings(&every_setting()), Ok(()));
}

#[tokio::test]
async fn with_n_choices_the_first_is_the_answer_and_the_others_come_as_data() {
    let server = FakeProvider::start();
    let chunk = |choices: Value| format!("data: {}\n\n", json!({"choices": choices}));
    let body = [
        chunk(
            json!([{"index": 0, "delta": {"role": "assistant", "content": "Yes"}},
                     {"index": 1, "delta": {"role": "assistant", "content": "No"}}]),
        ),
        chunk(json!([{"index": 1, "delta": {"content": "pe"}, "finish_reason": "stop"}])),
        chunk(json!([{"index": 0, "delta": {}, "finish_reason": "stop"}])),
        "data: [DONE]\n\n".to_owned(),
    ]
    .concat();
    server.push(FakeResponse::sse(body));
    let mut request = hi();
    request.settings.n = Some(2);
    let got = events(&brain(&server), request).await;
    assert_eq!(
        got,
        &[
            BrainEvent::text_delta("Yes"),
            BrainEvent::Data {
                name: OTHER_CHOICE.into(),
                data: json!({"index": 1, "content": "Nope", "tool_calls": [], "finish_reason": "stop"}),
            },
            BrainEvent::finish(FinishReason::Stop, None),
        ]
    );
    assert_eq!(server.requests()[0].body["n"], json!(2));
}

/// A search model's answer with its `url_citation` annotations and an image-output model's
/// `images`, as one stream, split at every byte: the sources come once each before the finish,
/// the image where it came.
#[tokio::test]
async fn citations_and_images_split_at_every_byte() {
    let server = FakeProvider::start();
    let brain = brain(&server);
    let citation = json!({
        "type": "url_citation",
        "url_citation": {
            "end_index": 62,
            "start_index": 30,
            "title": "Server-sent events \u{2014} HTML Standard",
            "url": "https://html.spec.whatwg.org/multipage/server-sent-events.html"
        }
    });
    let sse = ChatStream::new()
        .delta(json!({"role": "assistant", "content": "", "refusal": null, "annotations": []}))
        .text("SSE frames end with a blank line ")
        .text("([html.spec.whatwg.org](https://html.spec.whatwg.org/multipage/server-sent-events.html)).")
        .delta(json!({"annotations": [citation]}))
        .delta(json!({"content": "", "images": [{"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}, "index": 0}]}))
        .delta(json!({"annotations": [citation]}))
        .finish("stop")
        .usage(40, 25)
        .done()
        .to_sse();
    let expected = [
        BrainEvent::text_delta("SSE frames end with a blank line "),
        BrainEvent::text_delta(
            "([html.spec.whatwg.org](https://html.spec.whatwg.org/multipage/server-sent-events.html)).",
        ),
        BrainEvent::File(agentwire_core::part::FilePart {
            media_type: "image/png".into(),
            source: agentwire_core::part::FileSource::Url(
                "data:image/png;base64,iVBORw0KGgo=".into(),
            ),
            filename: None,
        }),
        BrainEvent::source(
            "https://html.spec.whatwg.org/multipage/server-sent-events.html",
            Some("Server-sent events \u{2014} HTML Standard"),
        ),
        BrainEvent::finish(FinishReason::Stop, usage(40, 25)),
    ];
    for split in 0..=sse.len() {
        server.push(FakeResponse::sse_split(&sse, &[split]));
        assert_eq!(events(&brain, hi()).await, expected, "split at {split}");
    }
    let every_byte: Vec<usize> = (1..sse.len()).collect();
    server.push(FakeResponse::sse_split(&sse, &every_byte));
    assert_eq!(events(&brain, hi()).await, expected);
}
