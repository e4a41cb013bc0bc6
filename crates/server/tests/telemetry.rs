//! OpenTelemetry through the live server: a run of an OpenAI agent (the fake provider) that
//! calls a tool is the span tree `invoke_agent` → `chat gpt-test`, `execute_tool echo`,
//! `chat gpt-test`, with the GenAI attributes (the SDK's in-memory exporter); and the real OTLP
//! exporter of `[telemetry]` posts them, in protobuf and in JSON, to a receiver on loopback.

#![allow(clippy::unwrap_used)]

mod common;

use std::sync::{Arc, Mutex};

use agentwire_brain::{OpenAiBrain, OpenAiConfig};
use agentwire_runtime::{Agent, Telemetry};
use agentwire_server::{OtlpProtocol, Server, Settings, TelemetrySettings};
use agentwire_testkit::fake_openai::ChatStream;
use agentwire_testkit::fake_provider::{FakeProvider, FakeResponse};
use agentwire_tools::{FnTool, JsonSchema};
use axum::body::Bytes;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::routing::post;
use common::{SseClient, TestServer, run_body};
use opentelemetry::Value;
use opentelemetry::metrics::noop::NoopMeterProvider;
use opentelemetry::trace::{SpanKind, Status};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use prost::Message as _;
use serde::Deserialize;
use serde_json::json;

#[derive(Deserialize, JsonSchema)]
#[schemars(crate = "agentwire_tools::schemars")]
struct Echo {
    text: String,
}

/// An OpenAI agent on the fake provider, with an `echo` tool: it calls the tool, then answers.
fn agent(provider: &FakeProvider) -> Agent {
    script(provider);
    let mut config = OpenAiConfig::new("gpt-test");
    config.connection.base_url = format!("{}/v1", provider.url());
    let echo = FnTool::new("echo", "Says it back", |args: Echo, _| async move {
        Ok(args.text)
    });
    Agent::builder("echoer")
        .brain(OpenAiBrain::new(config).unwrap())
        .tool(echo)
        .build()
        .unwrap()
}

/// Queues one run's answers on the fake provider: a call of `echo`, then the answer.
fn script(provider: &FakeProvider) {
    provider.push(FakeResponse::sse(
        ChatStream::new()
            .role()
            .tool_call(0, "call_1", "echo")
            .arguments(0, r#"{"text": "hi"}"#)
            .finish("tool_calls")
            .usage(11, 4)
            .done()
            .to_sse(),
    ));
    provider.push(FakeResponse::sse(
        ChatStream::new()
            .role()
            .text("hi")
            .finish("stop")
            .usage(20, 1)
            .done()
            .to_sse(),
    ));
}

/// Runs one turn in session `ses_otel` and reads it to its end.
async fn one_turn(server: &TestServer) {
    let mut body = run_body(Some("echoer"), "say hi");
    body["session_id"] = json!("ses_otel");
    let response = server
        .http
        .post(server.url("/v1/runs"))
        .header("accept", "text/event-stream")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    SseClient::new(response).until_end().await;
}

fn attribute<'a>(span: &'a SpanData, key: &str) -> Option<&'a Value> {
    span.attributes
        .iter()
        .find(|pair| pair.key.as_str() == key)
        .map(|pair| &pair.value)
}

#[track_caller]
fn check(span: &SpanData, key: &str, expect: impl Into<Value>) {
    assert_eq!(
        attribute(span, key),
        Some(&expect.into()),
        "{key} of {}",
        span.name
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_through_the_server_is_a_tree_of_genai_spans() {
    let provider = FakeProvider::start();
    let spans = InMemorySpanExporter::default();
    let tracers = SdkTracerProvider::builder()
        .with_simple_exporter(spans.clone())
        .build();
    let telemetry = Telemetry::new(&tracers, &NoopMeterProvider::new());
    let server = TestServer::start_with_telemetry(vec![agent(&provider)], telemetry).await;
    one_turn(&server).await;
    server.shutdown().await;
    tracers.force_flush().unwrap();
    let spans = spans.get_finished_spans().unwrap();
    assert_eq!(spans.len(), 4, "{spans:#?}");

    let run = spans
        .iter()
        .find(|span| span.name == "invoke_agent echoer")
        .unwrap();
    assert_eq!(run.span_kind, SpanKind::Internal);
    check(run, "gen_ai.operation.name", "invoke_agent");
    check(run, "gen_ai.agent.name", "echoer");
    check(run, "gen_ai.conversation.id", "ses_otel");
    check(run, "gen_ai.provider.name", "openai");
    check(run, "gen_ai.request.model", "gpt-test");
    check(run, "gen_ai.usage.input_tokens", 31_i64);
    check(run, "gen_ai.usage.output_tokens", 5_i64);
    assert_eq!(run.status, Status::Ok);

    let chats: Vec<&SpanData> = spans
        .iter()
        .filter(|span| span.name == "chat gpt-test")
        .collect();
    assert_eq!(chats.len(), 2);
    for chat in &chats {
        assert_eq!(chat.span_kind, SpanKind::Client);
        assert_eq!(chat.parent_span_id, run.span_context.span_id());
        check(chat, "gen_ai.operation.name", "chat");
        check(chat, "gen_ai.provider.name", "openai");
        check(chat, "gen_ai.request.model", "gpt-test");
        check(chat, "gen_ai.conversation.id", "ses_otel");
        assert!(attribute(chat, "gen_ai.response.time_to_first_chunk").is_some());
        assert!(attribute(chat, "gen_ai.input.messages").is_none());
        // What the provider says answered, from its stream.
        check(chat, "gen_ai.response.model", "gpt-4o-mini-2024-07-18");
        check(
            chat,
            "gen_ai.response.id",
            "chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG",
        );
    }
    check(chats[0], "gen_ai.usage.input_tokens", 11_i64);
    check(chats[0], "gen_ai.usage.output_tokens", 4_i64);
    assert_eq!(
        attribute(chats[0], "gen_ai.response.finish_reasons")
            .unwrap()
            .to_string(),
        r#"["tool_call"]"#
    );

    let tool = spans
        .iter()
        .find(|span| span.name == "execute_tool echo")
        .unwrap();
    assert_eq!(tool.parent_span_id, run.span_context.span_id());
    check(tool, "gen_ai.operation.name", "execute_tool");
    check(tool, "gen_ai.tool.name", "echo");
    check(tool, "gen_ai.tool.call.id", "call_1");
    assert_eq!(tool.status, Status::Ok);
}

/// The caller's trace: a W3C `traceparent` (trace id, parent span id) and a `tracestate`.
const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CALLER_SPAN: &str = "00f067aa0ba902b7";

/// A request's `traceparent` makes the run's span a child of the caller's span, in the caller's
/// trace, whichever route started it (the native one and a dialect here); every model call's
/// request carries the `traceparent` of its `chat` span, so the provider continues the trace.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_requests_traceparent_is_the_runs_parent_and_the_provider_continues_the_chat_span() {
    let provider = FakeProvider::start();
    let spans = InMemorySpanExporter::default();
    let tracers = SdkTracerProvider::builder()
        .with_simple_exporter(spans.clone())
        .build();
    let telemetry = Telemetry::new(&tracers, &NoopMeterProvider::new());
    let server = TestServer::start_with_telemetry(vec![agent(&provider)], telemetry).await;
    let traceparent = format!("00-{TRACE_ID}-{CALLER_SPAN}-01");
    let native = server
        .http
        .post(server.url("/v1/runs"))
        .header("accept", "text/event-stream")
        .header("traceparent", &traceparent)
        .header("tracestate", "caller=7")
        .json(&run_body(Some("echoer"), "say hi"))
        .send()
        .await
        .unwrap();
    assert_eq!(native.status(), 200);
    SseClient::new(native).until_end().await;
    script(&provider);
    let responses = server
        .http
        .post(server.url("/v1/responses"))
        .header("traceparent", &traceparent)
        .json(&json!({"model": "echoer", "input": "say hi"}))
        .send()
        .await
        .unwrap();
    assert_eq!(responses.status(), 200);
    responses.bytes().await.unwrap();
    server.shutdown().await;
    tracers.force_flush().unwrap();
    let spans = spans.get_finished_spans().unwrap();
    assert_eq!(spans.len(), 8, "{spans:#?}");

    for span in &spans {
        assert_eq!(
            span.span_context.trace_id().to_string(),
            TRACE_ID,
            "{}",
            span.name
        );
    }
    let runs: Vec<&SpanData> = spans
        .iter()
        .filter(|span| span.name == "invoke_agent echoer")
        .collect();
    assert_eq!(runs.len(), 2);
    for run in &runs {
        assert_eq!(run.parent_span_id.to_string(), CALLER_SPAN);
        assert!(run.parent_span_is_remote);
    }
    let chats: Vec<&SpanData> = spans
        .iter()
        .filter(|span| span.name == "chat gpt-test")
        .collect();
    let requests = provider.requests();
    assert_eq!(requests.len(), 4);
    for request in &requests {
        let sent = request.header("traceparent").unwrap();
        let [version, trace_id, parent, flags] = sent.split('-').collect::<Vec<_>>()[..] else {
            panic!("not a traceparent: {sent}");
        };
        assert_eq!((version, trace_id, flags), ("00", TRACE_ID, "01"));
        // The provider's parent is one of the `chat` spans, each one's own.
        let chat = chats
            .iter()
            .find(|chat| chat.span_context.span_id().to_string() == parent)
            .unwrap_or_else(|| panic!("{parent} is not a chat span"));
        assert!(
            runs.iter()
                .any(|run| run.span_context.span_id() == chat.parent_span_id)
        );
    }
    let parents: std::collections::HashSet<&str> = requests
        .iter()
        .map(|request| request.header("traceparent").unwrap())
        .collect();
    assert_eq!(parents.len(), 4, "one chat span per model call");
    // The caller's `tracestate` goes on with its trace.
    assert_eq!(requests[0].header("tracestate"), Some("caller=7"));
}

/// Without telemetry nothing is read or sent: the provider gets no `traceparent`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_telemetry_no_trace_context_goes_out() {
    let provider = FakeProvider::start();
    let settings = Settings {
        addr: "127.0.0.1:0".parse().unwrap(),
        ..Settings::default()
    };
    let server = TestServer::start(vec![agent(&provider)], settings).await;
    let response = server
        .http
        .post(server.url("/v1/runs"))
        .header("accept", "text/event-stream")
        .header("traceparent", format!("00-{TRACE_ID}-{CALLER_SPAN}-01"))
        .json(&run_body(Some("echoer"), "say hi"))
        .send()
        .await
        .unwrap();
    SseClient::new(response).until_end().await;
    server.shutdown().await;
    let requests = provider.requests();
    assert_eq!(requests.len(), 2);
    assert!(
        requests
            .iter()
            .all(|request| request.header("traceparent").is_none())
    );
}

/// What the receiver was sent: span names, and the number of metric posts.
#[derive(Default)]
struct Received {
    spans: Vec<String>,
    metric_posts: usize,
}

/// A tiny OTLP/HTTP receiver on port 0: `POST /v1/traces` in protobuf or JSON (by its
/// content type), `POST /v1/metrics` counted.
async fn receiver() -> (String, Arc<Mutex<Received>>) {
    async fn traces(
        State(received): State<Arc<Mutex<Received>>>,
        headers: HeaderMap,
        body: Bytes,
    ) -> &'static str {
        let json = headers
            .get("content-type")
            .is_some_and(|value| value.as_bytes().starts_with(b"application/json"));
        let names: Vec<String> = if json {
            let request: serde_json::Value = serde_json::from_slice(&body).unwrap();
            request["resourceSpans"]
                .as_array()
                .unwrap()
                .iter()
                .flat_map(|resource| resource["scopeSpans"].as_array().unwrap())
                .flat_map(|scope| scope["spans"].as_array().unwrap())
                .map(|span| span["name"].as_str().unwrap().to_owned())
                .collect()
        } else {
            let request = ExportTraceServiceRequest::decode(body).unwrap();
            request
                .resource_spans
                .iter()
                .flat_map(|resource| &resource.scope_spans)
                .flat_map(|scope| &scope.spans)
                .map(|span| span.name.clone())
                .collect()
        };
        received.lock().unwrap().spans.extend(names);
        ""
    }
    async fn metrics(State(received): State<Arc<Mutex<Received>>>) -> &'static str {
        received.lock().unwrap().metric_posts += 1;
        ""
    }
    let received = Arc::new(Mutex::new(Received::default()));
    let app = axum::Router::new()
        .route("/v1/traces", post(traces))
        .route("/v1/metrics", post(metrics))
        .with_state(Arc::clone(&received));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, received)
}

async fn export_through(protocol: OtlpProtocol) {
    let (endpoint, received) = receiver().await;
    let provider = FakeProvider::start();
    let settings = Settings {
        addr: "127.0.0.1:0".parse().unwrap(),
        telemetry: Some(TelemetrySettings {
            endpoint,
            protocol,
            service_name: "agentwire-test".into(),
            capture_content: false,
        }),
        ..Settings::default()
    };
    let server = Server::open(vec![agent(&provider)], settings)
        .await
        .unwrap();
    let server = TestServer::serve(server).await;
    one_turn(&server).await;
    // Shutting down flushes the batch and the metric reader.
    server.shutdown().await;

    let received = received.lock().unwrap();
    let mut names = received.spans.clone();
    names.sort();
    assert_eq!(
        names,
        [
            "chat gpt-test",
            "chat gpt-test",
            "execute_tool echo",
            "invoke_agent echoer"
        ]
    );
    assert!(received.metric_posts >= 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_otlp_exporter_posts_protobuf_to_the_collector() {
    export_through(OtlpProtocol::HttpProtobuf).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_otlp_exporter_posts_json_to_the_collector() {
    export_through(OtlpProtocol::HttpJson).await;
}

#[test]
fn telemetry_is_off_unless_configured_and_reads_the_standard_variables() {
    use agentwire_server::ConfigFile;
    let settings = |toml: &str, vars: &[(&str, &str)]| {
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(key, value)| ((*key).to_owned(), (*value).to_owned()))
            .collect();
        ConfigFile::from_toml(toml).unwrap().settings(|name| {
            vars.iter()
                .find(|(key, _)| key == name)
                .map(|(_, value)| value.clone())
        })
    };
    assert_eq!(settings("", &[]).unwrap().telemetry, None);
    let from_env = settings(
        "",
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318/"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"),
            ("OTEL_SERVICE_NAME", "chat-prod"),
        ],
    )
    .unwrap()
    .telemetry
    .unwrap();
    assert_eq!(
        from_env,
        TelemetrySettings {
            endpoint: "http://collector:4318".into(),
            protocol: OtlpProtocol::HttpJson,
            service_name: "chat-prod".into(),
            capture_content: false,
        }
    );
    let from_file = settings(
        "[telemetry]\notlp_endpoint = \"http://otel:4318\"\ncapture_content = true\n",
        &[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://ignored:4318")],
    )
    .unwrap()
    .telemetry
    .unwrap();
    assert_eq!(from_file.endpoint, "http://otel:4318");
    assert_eq!(from_file.service_name, "agentwire");
    assert!(from_file.capture_content);
    let enabled = settings("[telemetry]\nenabled = true\n", &[])
        .unwrap()
        .telemetry;
    assert_eq!(enabled.unwrap().endpoint, "http://localhost:4318");
    let disabled = settings(
        "[telemetry]\nenabled = false\n",
        &[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318")],
    );
    assert_eq!(disabled.unwrap().telemetry, None);
    // `endpoint`, the key's first spelling, is read as an alias.
    let alias = settings("[telemetry]\nendpoint = \"http://old:4318\"\n", &[]);
    assert_eq!(
        alias.unwrap().telemetry.unwrap().endpoint,
        "http://old:4318"
    );
    let grpc = settings("[telemetry]\nenabled = true\nprotocol = \"grpc\"\n", &[]);
    assert!(grpc.unwrap_err().to_string().contains("grpc"));
}
