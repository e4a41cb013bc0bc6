//! The Anthropic brain against a fake Anthropic server on port 0 streaming real-format SSE:
//! what each stream becomes, the request it sends, retries, and cancellation.

#![allow(clippy::unwrap_used)]

mod common;

use agentwire_brain::anthropic::THINKING_SIGNATURE;
use agentwire_brain::{
    AnthropicBrain, AnthropicConfig, Brain, BrainError, BrainEvent, BrainRequest, FinishReason,
    GenerationSettings, ToolSpec,
};
use agentwire_core::{Message, Usage};
use agentwire_testkit::fake_anthropic::{self as fake, INPUT_TOKENS, OUTPUT_TOKENS};
use agentwire_testkit::fake_provider::{FakeProvider, FakeResponse};
use common::{call, call_text, dropping_the_stream_aborts, hi, ok, quick_retries};
use futures::StreamExt;
use serde_json::{Value, json};

fn config(server: &FakeProvider) -> AnthropicConfig {
    let mut config = AnthropicConfig::new("claude-sonnet-4-5");
    config.connection.base_url = server.url().into();
    config.connection.api_key = Some("sk-ant-test".into());
    config.connection.retry = quick_retries();
    config
}

fn brain(server: &FakeProvider) -> AnthropicBrain {
    AnthropicBrain::new(config(server)).unwrap()
}

/// Every item of one model call answered with `response`, the error (if any) as the last item.
async fn call_with(
    server: &FakeProvider,
    response: FakeResponse,
) -> Vec<Result<BrainEvent, String>> {
    server.push(response);
    call_text(&brain(server), hi()).await
}

fn usage() -> Option<Usage> {
    Some(Usage::new(INPUT_TOKENS, OUTPUT_TOKENS))
}

/// The events [`fake::tool_use`] must become, arguments joined into one delta.
fn tool_use_events() -> Vec<BrainEvent> {
    vec![
        BrainEvent::text_delta("Okay."),
        BrainEvent::ToolCallStart {
            id: fake::TOOL_USE_ID.into(),
            name: "write_file".into(),
        },
        BrainEvent::ToolCallDelta {
            id: fake::TOOL_USE_ID.into(),
            args: fake::TOOL_ARGS.into(),
        },
        BrainEvent::ToolCallEnd {
            id: fake::TOOL_USE_ID.into(),
        },
        BrainEvent::Finish {
            reason: FinishReason::ToolCalls,
            usage: Some(Usage {
                cached_input_tokens: Some(fake::CACHE_READ_TOKENS),
                ..Usage::new(INPUT_TOKENS + fake::CACHE_READ_TOKENS, OUTPUT_TOKENS)
            }),
        },
    ]
}

/// Joins consecutive argument deltas of one call, so streams cut differently compare equal.
fn join_args(items: Vec<Result<BrainEvent, String>>) -> Vec<Result<BrainEvent, String>> {
    let mut joined: Vec<Result<BrainEvent, String>> = Vec::new();
    for item in items {
        if let (
            Ok(BrainEvent::ToolCallDelta { id, args }),
            Some(Ok(BrainEvent::ToolCallDelta {
                id: last_id,
                args: last_args,
            })),
        ) = (&item, joined.last_mut())
            && id == last_id
        {
            last_args.push_str(args);
            continue;
        }
        joined.push(item);
    }
    joined
}

#[tokio::test]
async fn text_streams_with_usage_and_the_request_is_anthropic_s() {
    let server = FakeProvider::start();
    let items = call_with(&server, FakeResponse::sse(fake::text())).await;
    assert_eq!(
        items,
        ok(vec![
            BrainEvent::text_delta("Hello"),
            BrainEvent::text_delta("!"),
            BrainEvent::Finish {
                reason: FinishReason::Stop,
                usage: usage(),
            },
        ])
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    assert_eq!(
        (request.method.as_str(), request.path.as_str()),
        ("POST", "/v1/messages")
    );
    assert_eq!(request.header("x-api-key"), Some("sk-ant-test"));
    assert_eq!(request.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(request.header("content-type"), Some("application/json"));
    assert_eq!(
        request.body,
        json!({
            "model": "claude-sonnet-4-5",
            "max_tokens": 4096,
            "stream": true,
            "messages": [{"role": "user", "content": [{"type": "text", "text": "Hi"}]}]
        })
    );
    assert_eq!(brain(&server).describe(), "anthropic:claude-sonnet-4-5");
}

#[tokio::test]
async fn thinking_streams_as_reasoning_and_keeps_its_signature() {
    let server = FakeProvider::start();
    let items = call_with(&server, FakeResponse::sse(fake::thinking())).await;
    assert_eq!(
        items,
        ok(vec![
            BrainEvent::ReasoningDelta {
                text: "Let me".into()
            },
            BrainEvent::ReasoningDelta {
                text: " think.".into()
            },
            BrainEvent::Data {
                name: THINKING_SIGNATURE.into(),
                data: json!({"signature": fake::SIGNATURE}),
            },
            BrainEvent::text_delta("4"),
            BrainEvent::Finish {
                reason: FinishReason::Stop,
                usage: usage(),
            },
        ])
    );
}

#[tokio::test]
async fn tool_use_arguments_arrive_in_pieces() {
    let server = FakeProvider::start();
    let items = call_with(&server, FakeResponse::sse(fake::tool_use(3))).await;
    let deltas = items
        .iter()
        .filter(|item| matches!(item, Ok(BrainEvent::ToolCallDelta { .. })))
        .count();
    assert!(deltas > 20, "{deltas} argument deltas");
    assert_eq!(join_args(items), ok(tool_use_events()));
}

#[tokio::test]
async fn a_tool_use_stream_split_at_every_byte_gives_the_same_events() {
    let server = FakeProvider::start();
    let body = fake::tool_use(7);
    let brain = brain(&server);
    // Every cut point once, then every byte apart.
    for at in 1..body.len() {
        server.push(FakeResponse::sse_split(body.as_bytes(), &[at]));
    }
    let every_byte: Vec<usize> = (1..body.len()).collect();
    server.push(FakeResponse::sse_split(body.as_bytes(), &every_byte));
    // The answers are alike but for their cuts, so calls may overlap: the test takes a fraction
    // of the time.
    let calls = futures::stream::iter(0..body.len())
        .map(|_| call_text(&brain, hi()))
        .buffer_unordered(8);
    let mut calls = std::pin::pin!(calls);
    while let Some(items) = calls.next().await {
        assert_eq!(join_args(items), ok(tool_use_events()));
    }
    assert_eq!(server.pending(), 0);
}

#[tokio::test]
async fn parallel_tool_use_blocks_stay_apart() {
    let server = FakeProvider::start();
    let items = call_with(&server, FakeResponse::sse(fake::parallel_tool_use())).await;
    let call = |id: &str, name: &str, args: &str| {
        vec![
            Ok(BrainEvent::ToolCallStart {
                id: id.into(),
                name: name.into(),
            }),
            Ok(BrainEvent::ToolCallDelta {
                id: id.into(),
                args: args.into(),
            }),
            Ok(BrainEvent::ToolCallEnd { id: id.into() }),
        ]
    };
    let mut expect = call(fake::TOOL_USE_ID, "read_file", r#"{"path": "a.txt"}"#);
    expect.extend(call(
        fake::SECOND_TOOL_USE_ID,
        "list_files",
        r#"{"dir": "/"}"#,
    ));
    expect.push(Ok(BrainEvent::Finish {
        reason: FinishReason::ToolCalls,
        usage: usage(),
    }));
    assert_eq!(join_args(items), expect);
}

#[tokio::test]
async fn an_error_event_mid_stream_fails_the_call_after_what_streamed() {
    let server = FakeProvider::start();
    let items = call_with(&server, FakeResponse::sse(fake::error_mid_stream())).await;
    assert_eq!(
        items,
        vec![
            Ok(BrainEvent::text_delta("Hel")),
            Err("the model failed: overloaded_error: Overloaded".into())
        ]
    );
    assert_eq!(server.requests().len(), 1, "not retried after output");
}

#[tokio::test]
async fn a_stream_without_message_stop_is_malformed() {
    let server = FakeProvider::start();
    let items = call_with(&server, FakeResponse::sse(fake::truncated())).await;
    assert_eq!(
        items,
        vec![
            Ok(BrainEvent::text_delta("Hello")),
            Err("the provider's stream is malformed: the stream ended before message_stop".into())
        ]
    );

    // A connection cut after output is not retried either.
    let items = call_with(&server, FakeResponse::sse(fake::truncated()).cut()).await;
    assert_eq!(items[0], Ok(BrainEvent::text_delta("Hello")));
    assert!(
        matches!(&items[1], Err(message) if message.starts_with("the provider could not be reached")),
        "{items:?}"
    );
    assert_eq!(items.len(), 2);
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn overloaded_and_server_errors_are_retried_before_output() {
    let server = FakeProvider::start();
    server.push(FakeResponse::new(529).body(fake::error_body("overloaded_error", "Overloaded")));
    server
        .push(FakeResponse::new(500).body(fake::error_body("api_error", "Internal server error")));
    let items = call_with(&server, FakeResponse::sse(fake::text())).await;
    assert_eq!(items.len(), 3);
    assert_eq!(items[0], Ok(BrainEvent::text_delta("Hello")));
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(
        requests[0].body, requests[2].body,
        "the same request each time"
    );
}

#[tokio::test]
async fn a_bad_request_is_not_retried() {
    let server = FakeProvider::start();
    let answer = fake::error_body("invalid_request_error", "max_tokens: Field required");
    server.push(FakeResponse::new(400).body(answer.clone()));
    server.push(FakeResponse::sse(fake::text()));
    let items = call(&brain(&server), hi()).await;
    assert_eq!(items.len(), 1);
    match &items[0] {
        Err(BrainError::ProviderRejected { status, body }) => {
            assert_eq!(*status, 400);
            assert_eq!(body, &answer);
        }
        other => panic!("expected a rejection, got {other:?}"),
    }
    assert_eq!(server.requests().len(), 1);
    assert_eq!(server.pending(), 1);
}

#[tokio::test]
async fn dropping_the_stream_aborts_the_request() {
    let server = FakeProvider::start();
    let mut body = fake::text();
    body.truncate(body.find("event: content_block_stop").unwrap());
    server.push(FakeResponse::sse(body).hang());
    let first = [BrainEvent::text_delta("Hello"), BrainEvent::text_delta("!")];
    dropping_the_stream_aborts(&server, &brain(&server), &first).await;
}

#[tokio::test]
async fn a_multi_step_history_is_sent_as_alternating_messages() {
    let server = FakeProvider::start();
    server.push(FakeResponse::sse(fake::text()));
    let message = |json: Value| -> Message { serde_json::from_value(json).unwrap() };
    let request = BrainRequest {
        system: Some("You write files.".into()),
        messages: vec![
            message(
                json!({"role": "user", "parts": [{"type": "text", "text": "Write hello.txt"}]}),
            ),
            message(json!({"role": "assistant", "parts": [
                {"type": "step_start", "step_id": "s1"},
                {"type": "reasoning", "text": "A file."},
                {"type": "data", "name": THINKING_SIGNATURE, "data": {"signature": "c2ln"}},
                {"type": "tool_call", "tool_call_id": "toolu_1", "tool_name": "write_file", "args": {"content": "Hi"}},
                {"type": "tool_error", "tool_call_id": "toolu_1", "tool_name": "write_file",
                 "error_type": "VALIDATION", "message": "Missing required argument 'path'."},
                {"type": "step_start", "step_id": "s2"},
                {"type": "text", "text": "Fixed."},
                {"type": "tool_call", "tool_call_id": "toolu_2", "tool_name": "write_file",
                 "args": {"path": "hello.txt", "content": "Hi"}},
                {"type": "tool_call", "tool_call_id": "toolu_3", "tool_name": "read_file", "args": {"path": "x"}},
                {"type": "tool_error", "tool_call_id": "toolu_3", "tool_name": "read_file",
                 "error_type": "EXECUTION", "message": "no such file: x"},
                {"type": "tool_result", "tool_call_id": "toolu_2", "tool_name": "write_file",
                 "result": {"status": "success"}},
                {"type": "step_start", "step_id": "s3"},
                {"type": "text", "text": "Done."}
            ]})),
            message(json!({"role": "user", "parts": [{"type": "text", "text": "Thanks"}]})),
        ],
        tools: vec![ToolSpec::new(
            "write_file",
            "Write a file",
            json!({"type": "object", "required": ["path", "content"]}),
        )]
        .into(),
        step: 0,
        settings: Default::default(),
        trace_context: Default::default(),
    };
    let mut config = config(&server);
    config.max_tokens = 8000;
    config.thinking_budget = Some(2000);
    config.connection.headers = vec![(
        "anthropic-beta".into(),
        "interleaved-thinking-2025-05-14".into(),
    )];
    let items = call_text(&AnthropicBrain::new(config).unwrap(), request).await;
    assert!(items.iter().all(Result::is_ok), "{items:?}");
    let recorded = &server.requests()[0];
    assert_eq!(
        recorded.header("anthropic-beta"),
        Some("interleaved-thinking-2025-05-14")
    );
    assert_eq!(
        recorded.body,
        json!({
            "model": "claude-sonnet-4-5",
            "max_tokens": 8000,
            "stream": true,
            "system": "You write files.",
            "thinking": {"type": "enabled", "budget_tokens": 2000},
            "tools": [{"name": "write_file", "description": "Write a file",
                       "input_schema": {"type": "object", "required": ["path", "content"]}}],
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "Write hello.txt"}]},
                {"role": "assistant", "content": [
                    {"type": "thinking", "thinking": "A file.", "signature": "c2ln"},
                    {"type": "tool_use", "id": "toolu_1", "name": "write_file", "input": {"content": "Hi"}}
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "is_error": true,
                     "content": r#"{"error":{"type":"VALIDATION","message":"Missing required argument 'path'."}}"#}
                ]},
                {"role": "assistant", "content": [
                    {"type": "text", "text": "Fixed."},
                    {"type": "tool_use", "id": "toolu_2", "name": "write_file", "input": {"path": "hello.txt", "content": "Hi"}},
                    {"type": "tool_use", "id": "toolu_3", "name": "read_file", "input": {"path": "x"}}
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_2", "content": r#"{"status":"success"}"#},
                    {"type": "tool_result", "tool_use_id": "toolu_3", "is_error": true,
                     "content": r#"{"error":{"type":"EXECUTION","message":"no such file: x"}}"#}
                ]},
                {"role": "assistant", "content": [{"type": "text", "text": "Done."}]},
                {"role": "user", "content": [{"type": "text", "text": "Thanks"}]}
            ]
        })
    );
}

#[tokio::test]
async fn a_configuration_that_cannot_work_is_refused_up_front() {
    let server = FakeProvider::start();
    let refused = |change: fn(&mut AnthropicConfig)| {
        let mut config = config(&server);
        change(&mut config);
        AnthropicBrain::new(config).unwrap_err().to_string()
    };
    assert_eq!(
        refused(|config| {
            config.max_tokens = 1000;
            config.thinking_budget = Some(1024);
        }),
        "invalid brain configuration: the thinking budget (1024 tokens) must be less than max_tokens (1000)"
    );
    assert!(
        refused(|config| config.connection.base_url = "ftp://example.com".into())
            .contains("not http or https")
    );
    assert!(
        refused(|config| config.connection.api_key = Some("key\nwith a newline".into()))
            .contains("API key")
    );
    assert!(server.requests().is_empty());

    let mut config = config(&server);
    config.connection.base_url = format!("{}/v1/", server.url());
    assert!(format!("{config:?}").contains("<redacted>"));
    assert!(!format!("{config:?}").contains("sk-ant-test"));
    server.push(FakeResponse::sse(fake::text()));
    let items = call_text(&AnthropicBrain::new(config).unwrap(), hi()).await;
    assert_eq!(items.len(), 3);
    assert_eq!(
        server.requests()[0].path,
        "/v1/messages",
        "a base ending in /v1"
    );
}

#[tokio::test]
async fn a_run_s_settings_reach_the_provider_under_anthropic_s_names() {
    let server = FakeProvider::start();
    server.push(FakeResponse::sse(fake::text()));
    let mut request = hi();
    request.settings = GenerationSettings {
        model: Some("claude-opus-4-1".into()),
        temperature: Some(0.75),
        top_p: Some(0.5),
        max_tokens: Some(77),
        stop: vec!["END".into()],
        n: Some(1),
        ..GenerationSettings::default()
    };
    assert_eq!(brain(&server).check_settings(&request.settings), Ok(()));
    call_text(&brain(&server), request).await;
    assert_eq!(
        server.requests()[0].body,
        json!({
            "model": "claude-opus-4-1",
            "max_tokens": 77,
            "temperature": 0.75,
            "top_p": 0.5,
            "stop_sequences": ["END"],
            "stream": true,
            "messages": [{"role": "user", "content": [{"type": "text", "text": "Hi"}]}]
        })
    );
}

#[test]
fn settings_the_messages_api_lacks_are_refused_naming_them() {
    let server = FakeProvider::start();
    let plain = brain(&server);
    let refused = |brain: &AnthropicBrain, settings: GenerationSettings| {
        brain.check_settings(&settings).unwrap_err().to_string()
    };
    let with = GenerationSettings::default;
    assert_eq!(
        refused(
            &plain,
            GenerationSettings {
                seed: Some(1),
                ..with()
            }
        ),
        "`seed` is not supported by Anthropic's Messages API (this agent's provider)"
    );
    assert_eq!(
        refused(
            &plain,
            GenerationSettings {
                presence_penalty: Some(0.0),
                ..with()
            }
        ),
        "`presence_penalty` is not supported by Anthropic's Messages API (this agent's provider)"
    );
    assert_eq!(
        refused(
            &plain,
            GenerationSettings {
                frequency_penalty: Some(1.0),
                ..with()
            }
        ),
        "`frequency_penalty` is not supported by Anthropic's Messages API (this agent's provider)"
    );
    assert_eq!(
        refused(
            &plain,
            GenerationSettings {
                n: Some(2),
                ..with()
            }
        ),
        "`n` must be 1: Anthropic's Messages API makes one choice, got 2"
    );
    assert_eq!(
        refused(
            &plain,
            GenerationSettings {
                temperature: Some(1.5),
                ..with()
            }
        ),
        "`temperature` must be between 0 and 1 for Anthropic, got 1.5"
    );
    let mut thinking = config(&server);
    thinking.thinking_budget = Some(2048);
    let thinking = AnthropicBrain::new(thinking).unwrap();
    assert!(
        refused(
            &thinking,
            GenerationSettings {
                temperature: Some(0.5),
                ..with()
            }
        )
        .starts_with("`temperature` cannot be set: this agent uses extended thinking")
    );
    assert_eq!(
        refused(
            &thinking,
            GenerationSettings {
                top_p: Some(0.9),
                ..with()
            }
        ),
        "`top_p` must be between 0.95 and 1 with extended thinking, got 0.9"
    );
    assert_eq!(
        refused(
            &thinking,
            GenerationSettings {
                max_tokens: Some(2048),
                ..with()
            }
        ),
        "`max_tokens` must be more than this agent's thinking budget (2048 tokens), got 2048"
    );
    assert_eq!(
        thinking.check_settings(&GenerationSettings {
            top_p: Some(0.95),
            max_tokens: Some(4000),
            ..with()
        }),
        Ok(())
    );
}

/// A web search answer split at every byte: the server tool's blocks are data, the results
/// sources (each URL once), and the cited text stays one piece, its sources given at its stop.
#[tokio::test]
async fn a_web_search_answer_split_at_every_byte_gives_sources_once() {
    let server = FakeProvider::start();
    let body = fake::web_search();
    let brain = brain(&server);
    let expected = |events: Vec<Result<BrainEvent, String>>| {
        let events: Vec<BrainEvent> = events.into_iter().map(Result::unwrap).collect();
        let names: Vec<String> = events
            .iter()
            .map(|event| match event {
                BrainEvent::Data { name, .. } => name.clone(),
                BrainEvent::Source { url, .. } => format!("source {url}"),
                BrainEvent::TextDelta { text } => format!("text {text}"),
                other => format!("{other:?}"),
            })
            .collect();
        let (first, second) = (fake::SEARCH_RESULT, fake::OTHER_RESULT);
        assert_eq!(
            names[..7],
            [
                "anthropic.server_tool_use".to_owned(),
                "anthropic.web_search_tool_result".to_owned(),
                format!("source {}", first.0),
                format!("source {}", second.0),
                "text Events are separated by a blank line".to_owned(),
                "text , and a line starting with a colon is a comment.".to_owned(),
                "text  Both from the standard.".to_owned(),
            ]
        );
        assert_eq!(events.len(), 8);
        assert_eq!(events[2], BrainEvent::source(first.0, Some(first.1)));
        assert!(matches!(events[7], BrainEvent::Finish { .. }));
    };
    for at in 1..body.len() {
        server.push(FakeResponse::sse_split(body.as_bytes(), &[at]));
    }
    let every_byte: Vec<usize> = (1..body.len()).collect();
    server.push(FakeResponse::sse_split(body.as_bytes(), &every_byte));
    let calls = futures::stream::iter(0..body.len())
        .map(|_| call_text(&brain, hi()))
        .buffer_unordered(8);
    let mut calls = std::pin::pin!(calls);
    while let Some(items) = calls.next().await {
        expected(items);
    }
    assert_eq!(server.pending(), 0);
}
