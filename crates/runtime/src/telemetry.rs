//! OpenTelemetry in the GenAI semantic conventions: a span `invoke_agent {agent}` per run, a
//! span `chat {model}` (kind CLIENT) per model call and a span `execute_tool {tool}` per call of
//! the agent's own tools, nested in that order, and the metrics `gen_ai.client.token.usage`,
//! `gen_ai.client.operation.duration` and `gen_ai.client.operation.time_to_first_chunk` per
//! model call.
//!
//! The runtime only speaks the OpenTelemetry API: a host builds providers (an SDK with an OTLP
//! exporter, an in-memory one in tests) and hands the runs a [`Telemetry`]
//! ([`RunStart::telemetry`](crate::RunStart::telemetry)). A run given none makes nothing: no
//! span, no attribute, no clock read. Nothing is done per delta either way: a model call
//! notes the time of its first event once, and everything else happens when a run, a call or a
//! tool starts or ends.
//!
//! Message content (the model's input and output, a tool's arguments and result) goes into
//! spans only when [`Telemetry::capture_content`] asks for it, as the conventions' opt-in
//! attributes (`gen_ai.input.messages`, `gen_ai.output.messages`,
//! `gen_ai.system_instructions`, `gen_ai.tool.call.arguments`, `gen_ai.tool.call.result`).
//!
//! Outbound calls continue the trace: a model call's request carries the `chat` span's W3C
//! `traceparent` (and `tracestate`), a tool's call the `execute_tool` span's
//! ([`TraceContext`], written by the SDK's `TraceContextPropagator`). A `chat` span carries
//! `gen_ai.response.id` and `gen_ai.response.model` when the provider names them
//! ([`BrainEvent::ResponseStart`](agentwire_brain::BrainEvent::ResponseStart)).

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;
use std::time::Instant;

use agentwire_brain::{BrainRequest, FinishReason};
use agentwire_core::{
    ErrorInfo, Message, Part, Role, RunId, SessionId, ToolCall, ToolErrorKind, ToolKind,
    TraceContext, Usage,
};
use opentelemetry::global::{BoxedTracer, ObjectSafeTracerProvider};
use opentelemetry::metrics::{Histogram, MeterProvider};
use opentelemetry::propagation::{Injector, TextMapPropagator};
use opentelemetry::trace::{SpanKind, Status, TraceContextExt, Tracer};
use opentelemetry::{Context, InstrumentationScope, KeyValue, Value as OtelValue};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use serde_json::{Value, json};

/// The instruments runs record into, and the trace they join. Clones share the instruments.
///
/// ```
/// use agentwire_runtime::Telemetry;
/// use opentelemetry::metrics::noop::NoopMeterProvider;
/// use opentelemetry::trace::noop::NoopTracerProvider;
///
/// let telemetry = Telemetry::new(&NoopTracerProvider::new(), &NoopMeterProvider::new())
///     .capture_content(false);
/// assert!(!telemetry.captures_content());
/// ```
#[derive(Clone)]
pub struct Telemetry {
    instruments: Arc<Instruments>,
    /// The trace a run's span joins (a request's W3C `traceparent`); `None` starts a trace.
    parent: Option<Context>,
    capture_content: bool,
}

struct Instruments {
    tracer: BoxedTracer,
    token_usage: Histogram<u64>,
    duration: Histogram<f64>,
    first_chunk: Histogram<f64>,
}

/// The span of a run (`invoke_agent`), which its model calls and tools are children of.
pub(crate) struct RunTrace {
    telemetry: Telemetry,
    cx: Context,
    session: Option<SessionId>,
}

/// One model call's span and clock, ended by [`ChatTrace::end`].
pub(crate) struct ChatTrace {
    telemetry: Telemetry,
    cx: Context,
    started: Instant,
    first_chunk: Option<Instant>,
    /// The metrics' attributes: operation, provider and model.
    labels: Vec<KeyValue>,
}

/// One tool call's span. Dropped without [`ToolTrace::end`] (the run stopped while the tool
/// ran), it ends as canceled.
pub(crate) struct ToolTrace {
    cx: Option<Context>,
    capture_content: bool,
}

/// How a model call ended, for its span and metrics.
pub(crate) enum ChatEnd<'a> {
    /// The model finished.
    Finished(&'a FinishReason, Option<Usage>),
    /// The call failed or was stopped; `error.type` is the code.
    Failed(&'a str),
}

impl Telemetry {
    /// Instruments from a tracer provider and a meter provider (the scope is `agentwire`),
    /// not capturing message content.
    pub fn new<T, M>(tracers: &T, meters: &M) -> Self
    where
        T: ObjectSafeTracerProvider + ?Sized,
        M: MeterProvider + ?Sized,
    {
        let scope = InstrumentationScope::builder("agentwire")
            .with_version(env!("CARGO_PKG_VERSION"))
            .build();
        let meter = meters.meter_with_scope(scope.clone());
        let token_usage = meter
            .u64_histogram("gen_ai.client.token.usage")
            .with_unit("{token}")
            .with_description("Number of input and output tokens used.")
            .with_boundaries(vec![
                1.0, 4.0, 16.0, 64.0, 256.0, 1024.0, 4096.0, 16384.0, 65536.0, 262144.0, 1048576.0,
                4194304.0, 16777216.0, 67108864.0,
            ])
            .build();
        let duration = meter
            .f64_histogram("gen_ai.client.operation.duration")
            .with_unit("s")
            .with_description("GenAI operation duration.")
            .with_boundaries(vec![
                0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96,
                81.92,
            ])
            .build();
        let first_chunk = meter
            .f64_histogram("gen_ai.client.operation.time_to_first_chunk")
            .with_unit("s")
            .with_description("Time to receive the first chunk of a streamed response.")
            .with_boundaries(vec![
                0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0,
                7.5, 10.0,
            ])
            .build();
        Self {
            instruments: Arc::new(Instruments {
                tracer: BoxedTracer::new(tracers.boxed_tracer(scope)),
                token_usage,
                duration,
                first_chunk,
            }),
            parent: None,
            capture_content: false,
        }
    }

    /// Whether spans carry message content (off unless asked: prompts and answers are often
    /// personal data).
    pub fn capture_content(mut self, capture: bool) -> Self {
        self.capture_content = capture;
        self
    }

    /// Whether spans carry message content.
    pub fn captures_content(&self) -> bool {
        self.capture_content
    }

    /// The same instruments, for a run whose span joins the trace of `parent` (a context a
    /// propagator extracted from a request's `traceparent`).
    pub fn child_of(&self, parent: Context) -> Self {
        Self {
            instruments: Arc::clone(&self.instruments),
            parent: Some(parent),
            capture_content: self.capture_content,
        }
    }

    /// Opens a run's `invoke_agent` span.
    pub(crate) fn start_run(
        &self,
        agent: &str,
        run_id: &RunId,
        session: Option<&SessionId>,
        model: Option<(&'static str, Option<&str>)>,
    ) -> RunTrace {
        let mut attributes = vec![
            KeyValue::new("gen_ai.operation.name", "invoke_agent"),
            KeyValue::new("gen_ai.agent.name", agent.to_owned()),
            KeyValue::new("agentwire.run.id", run_id.as_str().to_owned()),
        ];
        if let Some(session) = session {
            attributes.push(conversation(session));
        }
        if let Some((provider, model)) = model {
            attributes.push(KeyValue::new("gen_ai.provider.name", provider));
            if let Some(model) = model {
                attributes.push(KeyValue::new("gen_ai.request.model", model.to_owned()));
            }
        }
        let tracer = &self.instruments.tracer;
        let span = tracer
            .span_builder(format!("invoke_agent {agent}"))
            .with_kind(SpanKind::Internal)
            .with_attributes(attributes)
            .start_with_context(tracer, self.parent.as_ref().unwrap_or(&Context::new()));
        RunTrace {
            telemetry: self.clone(),
            cx: Context::new().with_span(span),
            session: session.cloned(),
        }
    }
}

impl fmt::Debug for Telemetry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Telemetry")
            .field("capture_content", &self.capture_content)
            .field("parent", &self.parent.is_some())
            .finish_non_exhaustive()
    }
}

impl RunTrace {
    /// Opens a `chat` span for one model call.
    pub(crate) fn chat(
        &self,
        provider: &'static str,
        model: Option<&str>,
        request: &BrainRequest,
    ) -> ChatTrace {
        let mut labels = vec![
            KeyValue::new("gen_ai.operation.name", "chat"),
            KeyValue::new("gen_ai.provider.name", provider),
        ];
        if let Some(model) = model {
            labels.push(KeyValue::new("gen_ai.request.model", model.to_owned()));
        }
        let mut attributes = labels.clone();
        attributes.push(KeyValue::new("gen_ai.request.stream", true));
        if let Some(session) = &self.session {
            attributes.push(conversation(session));
        }
        let settings = &request.settings;
        if let Some(max_tokens) = settings.max_tokens {
            attributes.push(KeyValue::new(
                "gen_ai.request.max_tokens",
                i64::from(max_tokens),
            ));
        }
        if let Some(temperature) = settings.temperature {
            attributes.push(KeyValue::new("gen_ai.request.temperature", temperature));
        }
        if let Some(top_p) = settings.top_p {
            attributes.push(KeyValue::new("gen_ai.request.top_p", top_p));
        }
        if self.telemetry.captures_content() {
            if let Some(system) = &request.system {
                let instructions = json!([{"type": "text", "content": system}]);
                attributes.push(KeyValue::new(
                    "gen_ai.system_instructions",
                    instructions.to_string(),
                ));
            }
            let messages: Vec<Value> = request.messages.iter().map(message_json).collect();
            attributes.push(KeyValue::new(
                "gen_ai.input.messages",
                Value::Array(messages).to_string(),
            ));
        }
        let name = match model {
            Some(model) => format!("chat {model}"),
            None => "chat".to_owned(),
        };
        let tracer = &self.telemetry.instruments.tracer;
        let span = tracer
            .span_builder(name)
            .with_kind(SpanKind::Client)
            .with_attributes(attributes)
            .start_with_context(tracer, &self.cx);
        ChatTrace {
            telemetry: self.telemetry.clone(),
            cx: Context::new().with_span(span),
            started: Instant::now(),
            first_chunk: None,
            labels,
        }
    }

    /// Opens an `execute_tool` span for a call of the agent's own tool.
    pub(crate) fn tool(&self, call: &ToolCall, kind: &ToolKind) -> ToolTrace {
        let mut attributes = vec![
            KeyValue::new("gen_ai.operation.name", "execute_tool"),
            KeyValue::new("gen_ai.tool.name", call.tool_name.clone()),
            KeyValue::new("gen_ai.tool.call.id", call.tool_call_id.as_str().to_owned()),
            KeyValue::new(
                "gen_ai.tool.type",
                match kind {
                    ToolKind::Function => "function",
                    _ => "extension",
                },
            ),
        ];
        if let Some(session) = &self.session {
            attributes.push(conversation(session));
        }
        let capture_content = self.telemetry.captures_content();
        if capture_content {
            attributes.push(KeyValue::new(
                "gen_ai.tool.call.arguments",
                call.args.0.to_string(),
            ));
        }
        let tracer = &self.telemetry.instruments.tracer;
        let span = tracer
            .span_builder(format!("execute_tool {}", call.tool_name))
            .with_kind(SpanKind::Internal)
            .with_attributes(attributes)
            .start_with_context(tracer, &self.cx);
        ToolTrace {
            cx: Some(Context::new().with_span(span)),
            capture_content,
        }
    }

    /// Ends the run's span: its usage, and `error.type` with status ERROR when it failed or
    /// ended incomplete (a cancel is not an error).
    pub(crate) fn end(self, usage: Option<Usage>, error: Option<&ErrorInfo>, canceled: bool) {
        let span = self.cx.span();
        if let Some(usage) = usage {
            span.set_attributes(usage_attributes(usage));
        }
        match error {
            Some(error) if !canceled => fail(&span, &error.code, &error.message),
            _ => span.set_status(Status::Ok),
        }
        span.end();
    }
}

impl ChatTrace {
    /// The W3C headers the provider request carries, continuing this span.
    pub(crate) fn trace_context(&self) -> TraceContext {
        trace_context_of(&self.cx)
    }

    /// Records what the provider named its answer: `gen_ai.response.id` and
    /// `gen_ai.response.model`.
    pub(crate) fn response(&self, id: Option<&str>, model: Option<&str>) {
        let span = self.cx.span();
        if let Some(id) = id {
            span.set_attribute(KeyValue::new("gen_ai.response.id", id.to_owned()));
        }
        if let Some(model) = model {
            span.set_attribute(KeyValue::new("gen_ai.response.model", model.to_owned()));
        }
    }

    /// Notes the first event of the model's stream (only the first call counts).
    pub(crate) fn first_chunk(&mut self) {
        if self.first_chunk.is_none() {
            self.first_chunk = Some(Instant::now());
        }
    }

    /// Ends the model call's span and records its metrics. `output` is what the call added to
    /// the message (recorded only when content is captured).
    pub(crate) fn end(self, end: ChatEnd<'_>, output: &[Part]) {
        let span = self.cx.span();
        let instruments = &self.telemetry.instruments;
        let mut labels = self.labels;
        if let Some(first) = self.first_chunk {
            let seconds = first.duration_since(self.started).as_secs_f64();
            span.set_attribute(KeyValue::new(
                "gen_ai.response.time_to_first_chunk",
                seconds,
            ));
            if matches!(end, ChatEnd::Finished(..)) {
                instruments.first_chunk.record(seconds, &labels);
            }
        }
        match end {
            ChatEnd::Finished(reason, usage) => {
                let reason = finish_reason(reason);
                span.set_attribute(KeyValue::new(
                    "gen_ai.response.finish_reasons",
                    OtelValue::Array(
                        vec![opentelemetry::StringValue::from(reason.to_string())].into(),
                    ),
                ));
                if self.telemetry.capture_content {
                    let parts: Vec<Value> = output.iter().filter_map(part_json).collect();
                    let message =
                        json!([{"role": "assistant", "parts": parts, "finish_reason": reason}]);
                    span.set_attribute(KeyValue::new(
                        "gen_ai.output.messages",
                        message.to_string(),
                    ));
                }
                if let Some(usage) = usage {
                    span.set_attributes(usage_attributes(usage));
                    for (kind, count) in [
                        ("input", usage.input_tokens),
                        ("output", usage.output_tokens),
                    ] {
                        let mut token_labels = labels.clone();
                        token_labels.push(KeyValue::new("gen_ai.token.type", kind));
                        instruments.token_usage.record(count, &token_labels);
                    }
                }
                span.set_status(Status::Ok);
            }
            ChatEnd::Failed(code) => {
                fail(&span, code, code);
                labels.push(KeyValue::new("error.type", code.to_owned()));
            }
        }
        let seconds = self.started.elapsed().as_secs_f64();
        instruments.duration.record(seconds, &labels);
        span.end();
    }
}

impl ToolTrace {
    /// The span's context, for a sub-agent's run whose `invoke_agent` span is its child.
    pub(crate) fn context(&self) -> Option<Context> {
        self.cx.clone()
    }

    /// The W3C headers a tool's outbound call carries, continuing this span.
    pub(crate) fn trace_context(&self) -> TraceContext {
        self.cx.as_ref().map(trace_context_of).unwrap_or_default()
    }

    /// Ends the span with the tool's answer: a `tool_error` is `error.type` with status ERROR.
    pub(crate) fn end(mut self, answer: &Part) {
        let Some(cx) = self.cx.take() else { return };
        let span = cx.span();
        match answer {
            Part::ToolError(error) => {
                let kind = match error.error_type {
                    ToolErrorKind::Validation => "validation",
                    ToolErrorKind::Execution => "execution",
                };
                fail(&span, kind, &error.message);
            }
            Part::ToolResult(result) => {
                if self.capture_content {
                    span.set_attribute(KeyValue::new(
                        "gen_ai.tool.call.result",
                        result.result.to_string(),
                    ));
                }
                if result.is_error == Some(true) {
                    fail(&span, "tool_error", "the tool reported a failure");
                } else {
                    span.set_status(Status::Ok);
                }
            }
            _ => span.set_status(Status::Ok),
        }
        span.end();
    }
}

impl Drop for ToolTrace {
    fn drop(&mut self) {
        if let Some(cx) = self.cx.take() {
            let span = cx.span();
            fail(&span, "canceled", "the run stopped while the tool ran");
            span.end();
        }
    }
}

/// What a propagator injects into: the headers of a [`TraceContext`].
struct Headers(TraceContext);

impl Injector for Headers {
    fn set(&mut self, key: &str, value: String) {
        self.0.set(key, value);
    }
}

/// The W3C trace context headers of the span in `cx`.
fn trace_context_of(cx: &Context) -> TraceContext {
    let mut headers = Headers(TraceContext::default());
    TraceContextPropagator::new().inject_context(cx, &mut headers);
    headers.0
}

fn conversation(session: &SessionId) -> KeyValue {
    KeyValue::new("gen_ai.conversation.id", session.as_str().to_owned())
}

fn fail(span: &opentelemetry::trace::SpanRef<'_>, kind: &str, message: &str) {
    span.set_attribute(KeyValue::new("error.type", kind.to_owned()));
    span.set_status(Status::Error {
        description: Cow::Owned(message.to_owned()),
    });
}

fn usage_attributes(usage: Usage) -> [KeyValue; 2] {
    [
        KeyValue::new(
            "gen_ai.usage.input_tokens",
            saturating_i64(usage.input_tokens),
        ),
        KeyValue::new(
            "gen_ai.usage.output_tokens",
            saturating_i64(usage.output_tokens),
        ),
    ]
}

fn saturating_i64(count: u64) -> i64 {
    i64::try_from(count).unwrap_or(i64::MAX)
}

/// The conventions' finish reasons (`stop`, `length`, `content_filter`, `tool_call`), or the
/// provider's own word.
pub(crate) fn finish_reason(reason: &FinishReason) -> &str {
    match reason {
        FinishReason::Stop => "stop",
        FinishReason::ToolCalls => "tool_call",
        FinishReason::Length => "length",
        FinishReason::ContentFilter => "content_filter",
        FinishReason::Other(other) => other,
    }
}

/// A message in the conventions' `gen_ai.input.messages` shape: role and parts.
fn message_json(message: &Message) -> Value {
    let role = match message.role {
        Role::System => "system",
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::Tool => "tool",
        Role::Data => "data",
    };
    let parts: Vec<Value> = message.parts.iter().filter_map(part_json).collect();
    json!({"role": role, "parts": parts})
}

/// A part as the conventions write it; parts with no content for a model (step starts,
/// approvals) are left out, parts the conventions do not name keep their own type.
fn part_json(part: &Part) -> Option<Value> {
    Some(match part {
        Part::Text(text) => json!({"type": "text", "content": text.text}),
        Part::Reasoning(reasoning) => json!({"type": "reasoning", "content": reasoning.text}),
        Part::Refusal(refusal) => json!({"type": "text", "content": refusal.text}),
        Part::ToolCall(call) => json!({
            "type": "tool_call",
            "id": call.tool_call_id.as_str(),
            "name": call.tool_name,
            "arguments": call.args.0,
        }),
        Part::ToolResult(result) => json!({
            "type": "tool_call_response",
            "id": result.tool_call_id.as_str(),
            "response": result.result,
        }),
        Part::ToolError(error) => json!({
            "type": "tool_call_response",
            "id": error.tool_call_id.as_str(),
            "response": error.message,
        }),
        Part::StepStart(_) | Part::ApprovalRequest(_) | Part::ApprovalResponse(_) => return None,
        other => json!({"type": part_type(other)}),
    })
}

fn part_type(part: &Part) -> String {
    serde_json::to_value(part)
        .ok()
        .and_then(|value| value.get("type").and_then(Value::as_str).map(str::to_owned))
        .unwrap_or_else(|| "data".to_owned())
}
