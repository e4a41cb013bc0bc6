//! OpenTelemetry through the orchestrator, into the SDK's in-memory exporters: the span tree of
//! a run with a tool call (`invoke_agent` → `chat`, `execute_tool`, `chat`), the GenAI
//! attributes, content only when asked for, errors as `error.type` with status ERROR, and the
//! model-call metrics.
#![allow(clippy::unwrap_used)]

mod common;

use agentwire_core::RunStatus;
use agentwire_runtime::{RunStart, Telemetry};
use common::{Client, Recording, agent, answer, call, finish, tool};
use futures::FutureExt;
use opentelemetry::trace::{SpanKind, Status};
use opentelemetry::{KeyValue, Value};
use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData};
use opentelemetry_sdk::metrics::{InMemoryMetricExporter, PeriodicReader, SdkMeterProvider};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use serde_json::json;

/// Providers whose spans and metrics stay in memory.
struct Exporters {
    spans: InMemorySpanExporter,
    metrics: InMemoryMetricExporter,
    tracers: SdkTracerProvider,
    meters: SdkMeterProvider,
}

impl Exporters {
    fn new() -> Self {
        let spans = InMemorySpanExporter::default();
        let metrics = InMemoryMetricExporter::default();
        let tracers = SdkTracerProvider::builder()
            .with_simple_exporter(spans.clone())
            .build();
        let meters = SdkMeterProvider::builder()
            .with_reader(PeriodicReader::builder(metrics.clone()).build())
            .build();
        Self {
            spans,
            metrics,
            tracers,
            meters,
        }
    }

    fn telemetry(&self) -> Telemetry {
        Telemetry::new(&self.tracers, &self.meters)
    }

    fn spans(&self) -> Vec<SpanData> {
        self.tracers.force_flush().unwrap();
        self.spans.get_finished_spans().unwrap()
    }
}

fn attribute<'a>(span: &'a SpanData, key: &str) -> Option<&'a Value> {
    span.attributes
        .iter()
        .find(|KeyValue { key: name, .. }| name.as_str() == key)
        .map(|pair| &pair.value)
}

#[track_caller]
fn check_attribute(span: &SpanData, key: &str, expect: Value) {
    assert_eq!(
        attribute(span, key),
        Some(&expect),
        "{key} of span {}",
        span.name
    );
}

fn named<'a>(spans: &'a [SpanData], name: &str) -> Vec<&'a SpanData> {
    spans.iter().filter(|span| span.name == name).collect()
}

fn echo_tool() -> common::FnTool {
    tool(
        "echo",
        json!({"type": "object", "properties": {"text": {"type": "string"}}}),
        |args, _| async move { Ok(json!({"echoed": args["text"]})) }.boxed(),
    )
}

async fn run_with_tool(telemetry: Telemetry) -> RunStatus {
    let brain = Recording::new(json!({"turns": [
        finish(call("tc_1", "echo", json!({"text": "secret words"})), "tool_calls"),
        answer("Done."),
    ]}));
    let agent = agent(&brain).tool(echo_tool()).build().unwrap();
    let run = agent
        .start(
            RunStart::new(vec![agentwire_core::Message::user("Echo my secret words")])
                .with_session("ses_1")
                .with_telemetry(telemetry),
        )
        .unwrap();
    Client::new(run.events).until_end().await
}

#[tokio::test]
async fn a_run_with_a_tool_call_is_a_tree_of_genai_spans() {
    let exporters = Exporters::new();
    let status = run_with_tool(exporters.telemetry()).await;
    assert_eq!(status, RunStatus::Completed);
    let spans = exporters.spans();
    assert_eq!(spans.len(), 4, "{spans:#?}");

    let [run] = named(&spans, "invoke_agent assistant")[..] else {
        panic!("one invoke_agent span: {spans:#?}");
    };
    assert_eq!(run.span_kind, SpanKind::Internal);
    assert_eq!(run.parent_span_id, opentelemetry::trace::SpanId::INVALID);
    check_attribute(run, "gen_ai.operation.name", "invoke_agent".into());
    check_attribute(run, "gen_ai.agent.name", "assistant".into());
    check_attribute(run, "gen_ai.conversation.id", "ses_1".into());
    check_attribute(run, "gen_ai.provider.name", "scripted".into());
    check_attribute(run, "gen_ai.usage.input_tokens", 20_i64.into());
    check_attribute(run, "gen_ai.usage.output_tokens", 10_i64.into());
    assert_eq!(run.status, Status::Ok);

    // The scripted brain has no model: its calls are plain `chat`.
    let chats = named(&spans, "chat");
    assert_eq!(chats.len(), 2);
    for chat in &chats {
        assert_eq!(chat.span_kind, SpanKind::Client);
        assert_eq!(chat.parent_span_id, run.span_context.span_id());
        assert_eq!(chat.span_context.trace_id(), run.span_context.trace_id());
        check_attribute(chat, "gen_ai.operation.name", "chat".into());
        check_attribute(chat, "gen_ai.provider.name", "scripted".into());
        check_attribute(chat, "gen_ai.conversation.id", "ses_1".into());
        check_attribute(chat, "gen_ai.usage.input_tokens", 10_i64.into());
        check_attribute(chat, "gen_ai.usage.output_tokens", 5_i64.into());
        assert!(matches!(
            attribute(chat, "gen_ai.response.time_to_first_chunk"),
            Some(Value::F64(seconds)) if *seconds >= 0.0
        ));
        assert!(attribute(chat, "gen_ai.input.messages").is_none());
        assert!(attribute(chat, "gen_ai.output.messages").is_none());
    }
    let reasons: Vec<String> = chats
        .iter()
        .map(|chat| {
            attribute(chat, "gen_ai.response.finish_reasons")
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(reasons, [r#"["tool_call"]"#, r#"["stop"]"#]);

    let [tool] = named(&spans, "execute_tool echo")[..] else {
        panic!("one execute_tool span: {spans:#?}");
    };
    assert_eq!(tool.span_kind, SpanKind::Internal);
    assert_eq!(tool.parent_span_id, run.span_context.span_id());
    check_attribute(tool, "gen_ai.operation.name", "execute_tool".into());
    check_attribute(tool, "gen_ai.tool.name", "echo".into());
    check_attribute(tool, "gen_ai.tool.call.id", "tc_1".into());
    check_attribute(tool, "gen_ai.tool.type", "function".into());
    assert!(attribute(tool, "gen_ai.tool.call.arguments").is_none());
    assert_eq!(tool.status, Status::Ok);
    // The tool ran between the two model calls.
    assert!(chats[0].end_time <= tool.start_time && tool.end_time <= chats[1].start_time);
}

#[tokio::test]
async fn content_is_recorded_only_when_asked_for() {
    let exporters = Exporters::new();
    run_with_tool(exporters.telemetry().capture_content(true)).await;
    let spans = exporters.spans();
    let chats = named(&spans, "chat");
    let input = attribute(chats[0], "gen_ai.input.messages")
        .unwrap()
        .to_string();
    let input: serde_json::Value = serde_json::from_str(&input).unwrap();
    assert_eq!(
        input,
        json!([{"role": "user", "parts": [{"type": "text", "content": "Echo my secret words"}]}])
    );
    let system = attribute(chats[0], "gen_ai.system_instructions").unwrap();
    assert_eq!(
        system.to_string(),
        json!([{"type": "text", "content": "You are a test."}]).to_string()
    );
    let output = attribute(chats[1], "gen_ai.output.messages")
        .unwrap()
        .to_string();
    let output: serde_json::Value = serde_json::from_str(&output).unwrap();
    assert_eq!(
        output,
        json!([{"role": "assistant", "parts": [{"type": "text", "content": "Done."}], "finish_reason": "stop"}])
    );
    let tool = named(&spans, "execute_tool echo")[0];
    check_attribute(
        tool,
        "gen_ai.tool.call.arguments",
        json!({"text": "secret words"}).to_string().into(),
    );
    check_attribute(
        tool,
        "gen_ai.tool.call.result",
        json!({"echoed": "secret words"}).to_string().into(),
    );
}

#[tokio::test]
async fn failures_are_error_types_with_status_error() {
    let exporters = Exporters::new();
    let brain = Recording::new(json!({"turns": [
        finish(call("tc_1", "broken", json!({})), "tool_calls"),
        [{"type": "error", "message": "the provider fell over"}],
    ]}));
    let broken = tool("broken", json!({"type": "object"}), |_, _| {
        async { Err(agentwire_tools::ToolFailure::new("disk full")) }.boxed()
    });
    let agent = agent(&brain).tool(broken).build().unwrap();
    let run = agent
        .start(
            RunStart::new(vec![agentwire_core::Message::user("Go")])
                .with_telemetry(exporters.telemetry()),
        )
        .unwrap();
    assert_eq!(Client::new(run.events).until_end().await, RunStatus::Failed);
    let spans = exporters.spans();

    let tool = named(&spans, "execute_tool broken")[0];
    check_attribute(tool, "error.type", "execution".into());
    assert!(matches!(tool.status, Status::Error { .. }));

    let chats = named(&spans, "chat");
    assert_eq!(chats[0].status, Status::Ok);
    check_attribute(chats[1], "error.type", "provider_error".into());
    assert!(matches!(chats[1].status, Status::Error { .. }));

    let run = named(&spans, "invoke_agent assistant")[0];
    check_attribute(run, "error.type", "provider_error".into());
    assert!(matches!(run.status, Status::Error { .. }));
    // A run without a session has no conversation id.
    assert!(attribute(run, "gen_ai.conversation.id").is_none());
}

#[tokio::test]
async fn model_calls_record_the_genai_client_metrics() {
    let exporters = Exporters::new();
    run_with_tool(exporters.telemetry()).await;
    exporters.meters.force_flush().unwrap();
    let exported = exporters.metrics.get_finished_metrics().unwrap();
    let metrics: Vec<_> = exported
        .iter()
        .flat_map(|resource| resource.scope_metrics())
        .flat_map(|scope| scope.metrics())
        .collect();
    let find = |name: &str| {
        metrics
            .iter()
            .find(|metric| metric.name() == name)
            .unwrap_or_else(|| panic!("no {name}"))
    };

    let AggregatedMetrics::U64(MetricData::Histogram(tokens)) =
        find("gen_ai.client.token.usage").data()
    else {
        panic!("token usage is a u64 histogram");
    };
    let mut by_type: Vec<(String, u64, u64)> = tokens
        .data_points()
        .map(|point| {
            let kind = point
                .attributes()
                .find(|pair| pair.key.as_str() == "gen_ai.token.type")
                .unwrap()
                .value
                .to_string();
            (kind, point.count(), point.sum())
        })
        .collect();
    by_type.sort();
    assert_eq!(
        by_type,
        [("input".to_owned(), 2, 20), ("output".to_owned(), 2, 10)]
    );

    for name in [
        "gen_ai.client.operation.duration",
        "gen_ai.client.operation.time_to_first_chunk",
    ] {
        let AggregatedMetrics::F64(MetricData::Histogram(histogram)) = find(name).data() else {
            panic!("{name} is an f64 histogram");
        };
        let point = histogram.data_points().next().unwrap();
        assert_eq!(point.count(), 2, "{name}");
        let attributes: Vec<String> = point
            .attributes()
            .map(|pair| format!("{}={}", pair.key, pair.value))
            .collect();
        assert!(attributes.contains(&"gen_ai.operation.name=chat".to_owned()));
        assert!(attributes.contains(&"gen_ai.provider.name=scripted".to_owned()));
    }
}
