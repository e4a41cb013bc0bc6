//! The AI SDK dialect's speed targets:
//! - encode ≥ 2 million events per second on one core;
//! - decode and accumulate ≥ 1 million UI message stream chunks per second on one core (the
//!   `ai` 7 client itself reads about 67,000 per second).
//!
//! The stream is a realistic agent turn: steps of reasoning, text in small deltas, a tool call
//! whose arguments stream, and its result.

use std::hint::black_box;

use agentwire_core::part::StepStart;
use agentwire_core::{
    Accumulator, Emitter, Event, MessageBuilder, MessageStart, Part, Role, ToolResult,
};
use agentwire_dialects::ai_sdk::{AiSdkDecoder, AiSdkEncoder};
use agentwire_dialects::{Encoder, StreamDecoder};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use serde_json::json;

const STEPS: usize = 20;

/// One assistant turn of `STEPS` steps, each: 20 reasoning deltas, 200 text deltas, a tool call
/// whose arguments arrive in 40 deltas, and its result; then a final answer.
fn turn() -> Vec<Event> {
    let mut out = Emitter::default();
    let mut builder =
        MessageBuilder::start(&mut out, MessageStart::new("msg_bench", Role::Assistant));
    for step in 0..STEPS {
        builder.part(
            &mut out,
            Part::StepStart(StepStart {
                step_id: format!("step_{step}").into(),
                step_name: None,
            }),
        );
        for _ in 0..20 {
            builder.reasoning_delta(&mut out, "think ");
        }
        for _ in 0..200 {
            builder.text_delta(&mut out, "word ");
        }
        let id = format!("call_{step}");
        let content = "fn main() {}\n".repeat(20);
        let args = json!({"path": format!("src/file_{step}.rs"), "content": content}).to_string();
        builder
            .tool_call_start(&mut out, id.as_str(), "write_file")
            .expect("starts");
        for piece in args.as_bytes().chunks(args.len().div_ceil(40)) {
            let piece = std::str::from_utf8(piece).expect("ascii");
            builder
                .tool_call_delta(&mut out, &id, piece)
                .expect("streams");
        }
        builder.tool_call_end(&mut out, &id).expect("ends");
        builder.part(
            &mut out,
            Part::ToolResult(ToolResult {
                tool_call_id: id.into(),
                tool_name: Some("write_file".into()),
                result: json!({"bytes_written": 260}),
                is_error: None,
            }),
        );
    }
    for _ in 0..200 {
        builder.text_delta(&mut out, "done ");
    }
    builder.finish(&mut out);
    out.drain().collect()
}

fn encode(events: &[Event], wire: &mut Vec<u8>) {
    let mut encoder = AiSdkEncoder::default();
    for event in events {
        encoder.encode(event, wire);
    }
    encoder.finish(wire);
}

fn bench(c: &mut Criterion) {
    let events = turn();
    let mut wire = Vec::new();
    encode(&events, &mut wire);
    let n_chunks = wire
        .split(|&byte| byte == b'\n')
        .filter(|line| line.starts_with(b"data: {"))
        .count();

    let mut group = c.benchmark_group("ai_sdk");
    group.throughput(Throughput::Elements(events.len() as u64));
    group.bench_function("encode events", |b| {
        let mut out = Vec::with_capacity(wire.len());
        b.iter(|| {
            out.clear();
            encode(black_box(&events), &mut out);
            black_box(out.len())
        });
    });

    group.throughput(Throughput::Elements(n_chunks as u64));
    group.bench_function("decode and accumulate chunks", |b| {
        let mut decoded = Vec::with_capacity(events.len());
        b.iter(|| {
            decoded.clear();
            let mut decoder = AiSdkDecoder::default();
            decoder
                .decode(black_box(&wire), &mut decoded)
                .expect("decodes");
            decoder.finish(&mut decoded).expect("ends");
            let mut accumulator = Accumulator::default();
            for event in &decoded {
                accumulator.push(event).expect("accumulates");
            }
            black_box(accumulator.messages().len())
        });
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
