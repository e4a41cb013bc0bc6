//! The AG-UI encoder's speed target: ≥ 2 million events per second on one core, over a
//! realistic run (steps of streamed text, parallel tool calls with streamed arguments, their
//! results, and a final answer). Decoding the same transcript is measured beside it.

use std::hint::black_box;

use agentwire_core::{
    Emitter, Event, EventKind, MessageBuilder, MessageStart, Part, Role, RunStatus, ToolResult,
    Usage,
};
use agentwire_dialects::ag_ui::{AgUiDecoder, AgUiEncoder};
use agentwire_dialects::{Encoder, StreamDecoder};
use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use serde_json::json;

const STEPS: usize = 20;
const TEXT_DELTAS: usize = 400;
const ARG_DELTAS: usize = 40;

/// One run: per step, a streamed text and two tool calls whose arguments interleave, and their
/// results; then the answer.
fn run_events() -> Vec<Event> {
    let mut out = Emitter::default();
    out.emit(EventKind::RunCreated {
        run_id: "run_bench".into(),
        session_id: Some("ses_bench".into()),
        agent: None,
    });
    let mut builder =
        MessageBuilder::start(&mut out, MessageStart::new("msg_bench", Role::Assistant));
    for step in 0..STEPS {
        builder.part(
            &mut out,
            Part::StepStart(agentwire_core::part::StepStart {
                step_id: format!("step_{step}").into(),
                step_name: None,
            }),
        );
        for _ in 0..TEXT_DELTAS {
            builder.text_delta(&mut out, "tok ");
        }
        builder.close_text(&mut out);
        let calls = [format!("call_{step}_a"), format!("call_{step}_b")];
        let streamed = (|| {
            for id in &calls {
                builder.tool_call_start(&mut out, id.as_str(), "search")?;
            }
            builder.tool_call_delta(&mut out, &calls[0], "{\"q\": \"")?;
            builder.tool_call_delta(&mut out, &calls[1], "{\"q\": \"")?;
            for _ in 0..ARG_DELTAS {
                builder.tool_call_delta(&mut out, &calls[0], "word ")?;
                builder.tool_call_delta(&mut out, &calls[1], "term ")?;
            }
            for id in &calls {
                builder.tool_call_delta(&mut out, id, "\"}")?;
                builder.tool_call_end(&mut out, id.as_str())?;
            }
            Ok::<(), agentwire_core::BuildError>(())
        })();
        streamed.expect("well-formed calls");
        for id in &calls {
            builder.part(
                &mut out,
                Part::ToolResult(ToolResult {
                    tool_call_id: id.as_str().into(),
                    tool_name: Some("search".into()),
                    result: json!({"hits": [{"title": "A result", "url": "https://example.com/a"}], "total": 1}),
                    is_error: None,
                }),
            );
        }
    }
    for _ in 0..TEXT_DELTAS {
        builder.text_delta(&mut out, "done ");
    }
    builder.finish(&mut out);
    out.emit(EventKind::RunStatus {
        status: RunStatus::Completed,
        error: None,
        usage: Some(Usage::new(1000, 500)),
    });
    out.drain().collect()
}

fn encode(events: &[Event], wire: &mut Vec<u8>) {
    let mut encoder = AgUiEncoder::new("thread_bench", "run_bench");
    for event in events {
        encoder.encode(event, wire);
    }
    encoder.finish(wire);
}

fn bench_ag_ui(c: &mut Criterion) {
    let events = run_events();
    let mut group = c.benchmark_group("ag_ui");
    group.throughput(Throughput::Elements(events.len() as u64));
    group.bench_function("encode", |b| {
        b.iter_batched_ref(
            || Vec::with_capacity(events.len() * 96),
            |wire: &mut Vec<u8>| encode(black_box(&events), wire),
            BatchSize::LargeInput,
        )
    });
    let mut wire = Vec::new();
    encode(&events, &mut wire);
    group.throughput(Throughput::Bytes(wire.len() as u64));
    group.bench_function("decode", |b| {
        b.iter(|| {
            let mut decoder = AgUiDecoder::default();
            let mut out = Vec::with_capacity(events.len());
            for piece in wire.chunks(4096) {
                decoder.decode(piece, &mut out).expect("valid");
            }
            decoder.finish(&mut out).expect("complete");
            black_box(out)
        })
    });
    group.finish();
}

criterion_group!(benches, bench_ag_ui);
criterion_main!(benches);
