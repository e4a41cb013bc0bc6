//! Token usage from a real provider stream (the fake OpenAI and Anthropic servers, speaking the
//! captured wire formats) to every place a client reads it: the run (`GET /v1/runs/{id}`, the
//! final `run_status`), the message's metadata, the AI SDK's message metadata, AG-UI's
//! `RUN_FINISHED.usage`, AgentScope's final response, and `/metrics`.

#![allow(clippy::unwrap_used)]

mod common;

use agentwire_brain::{AnthropicBrain, AnthropicConfig, OpenAiBrain, OpenAiConfig};
use agentwire_core::{EventKind, Usage};
use agentwire_runtime::Agent;
use agentwire_server::Settings;
use agentwire_testkit::fake_anthropic;
use agentwire_testkit::fake_openai::ChatStream;
use agentwire_testkit::fake_provider::{FakeProvider, FakeResponse};
use common::{SseClient, TestServer, run_body};
use serde_json::{Value, json};

/// An OpenAI answer of 11 prompt and 4 completion tokens, as the usage chunk after the finish
/// reports them.
fn answer() -> FakeResponse {
    FakeResponse::sse(
        ChatStream::new()
            .role()
            .text("Hi")
            .text(" there")
            .finish("stop")
            .usage(11, 4)
            .done()
            .to_sse(),
    )
}

fn openai_agent(provider: &FakeProvider) -> Agent {
    let mut config = OpenAiConfig::new("gpt-test");
    config.connection.base_url = format!("{}/v1", provider.url());
    Agent::builder("priced")
        .brain(OpenAiBrain::new(config).unwrap())
        .build()
        .unwrap()
}

fn anthropic_agent(provider: &FakeProvider) -> Agent {
    let mut config = AnthropicConfig::new(fake_anthropic::MODEL);
    config.connection.base_url = provider.url().to_owned();
    config.connection.api_key = Some("sk-ant-test".into());
    Agent::builder("claude")
        .brain(AnthropicBrain::new(config).unwrap())
        .build()
        .unwrap()
}

async fn post(server: &TestServer, path: &str, body: &Value) -> String {
    let response = server.post_json(path, body).await;
    assert_eq!(response.status(), 200, "{path}");
    response.text().await.unwrap()
}

/// The JSON objects of a stream's `data:` lines.
fn data(wire: &str) -> Vec<Value> {
    wire.lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .filter_map(|data| serde_json::from_str(data).ok())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn provider_usage_reaches_the_run_and_every_dialect() {
    let openai = FakeProvider::start();
    for _ in 0..5 {
        openai.push(answer());
    }
    let anthropic = FakeProvider::start();
    anthropic.push(FakeResponse::sse(fake_anthropic::text()));
    let server = TestServer::start(
        vec![openai_agent(&openai), anthropic_agent(&anthropic)],
        Settings::default(),
    )
    .await;
    // The usage chunk also reports zero reasoning and zero cached tokens.
    let expected = Usage {
        reasoning_tokens: Some(0),
        cached_input_tokens: Some(0),
        ..Usage::new(11, 4)
    };

    // Native: the final status and the message carry it, and so does the run.
    let response = server
        .http
        .post(server.url("/v1/runs"))
        .header("accept", "text/event-stream")
        .json(&run_body(Some("priced"), "hi"))
        .send()
        .await
        .unwrap();
    let mut client = SseClient::new(response);
    client.until_end().await;
    let last_status = client
        .events
        .iter()
        .rev()
        .find_map(|event| match &event.kind {
            EventKind::RunStatus { usage, .. } => Some(*usage),
            _ => None,
        });
    assert_eq!(last_status, Some(Some(expected)));
    assert_eq!(client.messages()[0].metadata.usage, Some(expected));
    let run_id = client
        .events
        .iter()
        .find_map(|event| match &event.kind {
            EventKind::RunCreated { run_id, .. } => Some(run_id.to_string()),
            _ => None,
        })
        .unwrap();
    let run = server.completed_run(&run_id).await;
    let usage: Usage = serde_json::from_value(run["run"]["usage"].clone()).unwrap();
    assert_eq!(usage, expected);
    // The provider was asked for its usage.
    assert_eq!(
        openai.requests()[0].body["stream_options"],
        json!({"include_usage": true})
    );

    // The AI SDK: the message's metadata, before `finish`.
    let body = json!({"id": "chat_u", "trigger": "submit-message",
        "messages": [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": "hi"}]}]});
    let chunks = data(&post(&server, "/agents/priced/api/chat", &body).await);
    let metadata = chunks
        .iter()
        .rev()
        .find(|chunk| chunk["type"] == "message-metadata")
        .unwrap();
    let usage = &metadata["messageMetadata"]["usage"];
    assert_eq!(
        [
            &usage["inputTokens"],
            &usage["outputTokens"],
            &usage["totalTokens"]
        ],
        [11, 4, 15]
    );
    assert_eq!(chunks.last().unwrap()["type"], "finish");

    // AG-UI: `RUN_FINISHED.usage`, one entry per model.
    let body = json!({"threadId": "t_u", "runId": "r_u", "state": {}, "tools": [], "context": [],
        "forwardedProps": {}, "messages": [{"id": "m1", "role": "user", "content": "hi"}]});
    let events = data(&post(&server, "/agents/priced/ag-ui", &body).await);
    let finished = events.last().unwrap();
    assert_eq!(finished["type"], "RUN_FINISHED");
    assert_eq!(finished["usage"][0]["inputTokens"], 11);
    assert_eq!(finished["usage"][0]["outputTokens"], 4);
    assert_eq!(finished["usage"][0]["totalTokens"], 15);

    // AgentScope: the final response's `usage`, and the message's.
    let body = json!({"stream": true, "input": [{"role": "user", "type": "message",
        "content": [{"type": "text", "text": "hi"}]}]});
    let objects = data(&post(&server, "/agents/priced/process", &body).await);
    let last = objects.last().unwrap();
    assert_eq!(last["object"], "response");
    assert_eq!(last["status"], "completed");
    let usage: Usage = serde_json::from_value(last["usage"].clone()).unwrap();
    assert_eq!(usage, expected);
    assert_eq!(
        last["output"].as_array().unwrap().last().unwrap()["usage"]["output_tokens"],
        4
    );

    // A2A: the final status update's agentwire metadata.
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage",
        "params": {"message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "hi"}]}}});
    let wire = post(&server, "/agents/priced/a2a", &body).await;
    assert!(wire.contains("\"total_tokens\":15"), "{wire}");

    // Anthropic: input from `message_start`, output from the last `message_delta`.
    let output: Value = server
        .post_json("/v1/runs", &run_body(Some("claude"), "hi"))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(
        output["run"]["usage"]["input_tokens"],
        fake_anthropic::INPUT_TOKENS
    );
    assert_eq!(
        output["run"]["usage"]["output_tokens"],
        fake_anthropic::OUTPUT_TOKENS
    );

    // /metrics: five OpenAI runs and one Anthropic run, by agent.
    let metrics = server
        .http
        .get(server.url("/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    for (line, value) in [
        (
            "agentwire_tokens_total{agent=\"priced\",kind=\"input\"}",
            55,
        ),
        (
            "agentwire_tokens_total{agent=\"priced\",kind=\"output\"}",
            20,
        ),
        (
            "agentwire_tokens_total{agent=\"claude\",kind=\"output\"}",
            fake_anthropic::OUTPUT_TOKENS,
        ),
    ] {
        assert!(
            metrics
                .lines()
                .any(|candidate| candidate == format!("{line} {value}")),
            "{line} {value}: {metrics}"
        );
    }
    server.shutdown().await;
}
