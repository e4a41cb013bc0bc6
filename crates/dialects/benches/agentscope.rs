//! The AgentScope encoder's speed target: encode ≥ 2 million events per second on one core, over
//! a realistic turn (a long streamed answer around tool calls with streamed arguments and their
//! results).

use std::hint::black_box;

use agentwire_core::{
    Emitter, Event, EventKind, MessageBuilder, MessageStart, Part, Role, RunStatus, ToolResult,
    Usage,
};
use agentwire_dialects::Encoder;
use agentwire_dialects::agentscope::AgentScopeEncoder;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use serde_json::json;

/// A run: text in short deltas, then (four times) a tool call with streamed arguments and its
/// result, then more text; about 10,000 events.
fn turn() -> Vec<Event> {
    let mut out = Emitter::default();
    out.emit(EventKind::RunCreated {
        run_id: "run_bench".into(),
        session_id: Some("ses_bench".into()),
        agent: None,
    });
    out.emit(EventKind::RunStatus {
        status: RunStatus::InProgress,
        error: None,
        usage: None,
    });
    let mut builder =
        MessageBuilder::start(&mut out, MessageStart::new("msg_bench", Role::Assistant));
    for call in 0..4 {
        for _ in 0..2_000 {
            builder.text_delta(&mut out, "tok ");
        }
        let id = format!("call_{call}");
        builder
            .tool_call_start(&mut out, id.as_str(), "search")
            .expect("starts");
        for piece in [
            "{\"query\": ",
            "\"weather ",
            "in Paris\", ",
            "\"limit\": 5}",
        ] {
            builder
                .tool_call_delta(&mut out, id.as_str(), piece)
                .expect("streams");
        }
        builder.tool_call_end(&mut out, id.as_str()).expect("ends");
        builder.part(
            &mut out,
            Part::ToolResult(ToolResult {
                tool_call_id: id.as_str().into(),
                tool_name: Some("search".into()),
                result: json!({"results": ["Sunny", "18 °C"], "source": "weather.example"}),
                is_error: None,
            }),
        );
    }
    for _ in 0..2_000 {
        builder.text_delta(&mut out, "tok ");
    }
    builder.finish(&mut out);
    out.emit(EventKind::RunStatus {
        status: RunStatus::Completed,
        error: None,
        usage: Some(Usage::new(1_000, 10_000)),
    });
    out.drain().collect()
}

fn encode(c: &mut Criterion) {
    let events = turn();
    let mut group = c.benchmark_group("agentscope");
    group.throughput(Throughput::Elements(events.len() as u64));
    let mut wire = Vec::with_capacity(4 << 20);
    group.bench_function("encode", |b| {
        b.iter(|| {
            wire.clear();
            let mut encoder = AgentScopeEncoder::default();
            for event in &events {
                encoder.encode(event, &mut wire);
            }
            encoder.finish(&mut wire);
            black_box(wire.len())
        })
    });
    group.finish();
}

criterion_group!(benches, encode);
criterion_main!(benches);
