//! The A2A encoder's speed target: ≥ 2 million events per second on one core, over a realistic
//! turn (a long streamed answer around a few tool calls, their results and steps).

use std::hint::black_box;

use agentwire_core::part::StepStart;
use agentwire_core::{
    Emitter, Event, EventKind, MessageBuilder, MessageStart, Part, Role, RunStatus,
};
use agentwire_dialects::Encoder;
use agentwire_dialects::a2a::A2aEncoder;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use serde_json::json;

/// A run: created, in progress, one assistant message of 4 steps (each 2,000 text deltas of a
/// few words and a tool call with streamed arguments and its result), completed.
fn run_events() -> Vec<Event> {
    let mut out = Emitter::default();
    out.emit(EventKind::RunCreated {
        run_id: "run_bench".into(),
        session_id: Some("ses_bench".into()),
        agent: Some("assistant".into()),
    });
    out.emit(EventKind::RunStatus {
        status: RunStatus::InProgress,
        error: None,
        usage: None,
    });
    let mut builder =
        MessageBuilder::start(&mut out, MessageStart::new("msg_bench", Role::Assistant));
    for step in 0..4 {
        builder.part(
            &mut out,
            Part::StepStart(StepStart {
                step_id: format!("step_{step}").into(),
                step_name: None,
            }),
        );
        for _ in 0..2_000 {
            builder.text_delta(&mut out, "the weather is \"fine\" ");
        }
        let id = format!("call_{step}");
        let streamed = (|| {
            builder.tool_call_start(&mut out, id.as_str(), "get_weather")?;
            for piece in ["{\"city\": ", "\"Paris\", ", "\"unit\": \"celsius\"}"] {
                builder.tool_call_delta(&mut out, &id, piece)?;
            }
            builder.tool_call_end(&mut out, &id)
        })();
        streamed.expect("well formed");
        builder.part(
            &mut out,
            Part::ToolResult(agentwire_core::ToolResult {
                tool_call_id: id.into(),
                tool_name: Some("get_weather".into()),
                result: json!({"temperature": 18, "condition": "sunny"}),
                is_error: None,
            }),
        );
    }
    builder.finish(&mut out);
    out.emit(EventKind::RunStatus {
        status: RunStatus::Completed,
        error: None,
        usage: None,
    });
    out.drain().collect()
}

fn encode(c: &mut Criterion) {
    let events = run_events();
    let mut group = c.benchmark_group("a2a");
    group.throughput(Throughput::Elements(events.len() as u64));
    let mut wire = Vec::with_capacity(4 << 20);
    group.bench_function("encode", |b| {
        b.iter(|| {
            wire.clear();
            let mut encoder = A2aEncoder::default();
            for event in &events {
                encoder.encode(event, &mut wire);
            }
            encoder.finish(&mut wire);
            black_box(wire.len())
        });
    });
    group.finish();
}

criterion_group!(benches, encode);
criterion_main!(benches);
