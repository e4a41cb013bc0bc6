//! The core's speed targets (numbers in the README):
//! - accumulate ≥ 10 million text deltas per second on one core;
//! - one 78 KiB tool argument arriving as 20,000 deltas, with the partial view read after every
//!   delta, in ≤ 20 ms in total;
//! - build and serialize the native JSON of ≥ 2 million events per second on one core;
//! - a 78 KiB shared state built by one `update_state` call whose arguments arrive as 20,000
//!   deltas emits all its `state_delta` patches, as the deltas arrive, in ≤ 20 ms in total.

use std::hint::black_box;

use agentwire_core::patch_stream::PatchStream;
use agentwire_core::{
    Accumulator, Emitter, Event, EventKind, MessageBuilder, MessageStart, Part, Role,
};
use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use serde_json::{Value, json};

const TEXT_DELTAS: usize = 200_000;
const ARGS_BYTES: usize = 78 * 1024;
const ARGS_DELTAS: usize = 20_000;

/// The events of one assistant message streaming `n` four-byte text deltas.
fn text_events(n: usize) -> Vec<Event> {
    let mut out = Emitter::default();
    let mut builder =
        MessageBuilder::start(&mut out, MessageStart::new("msg_bench", Role::Assistant));
    for _ in 0..n {
        builder.text_delta(&mut out, "tok ");
    }
    builder.finish(&mut out);
    out.drain().collect()
}

/// The events of one tool call whose argument text (`args`, serialized) arrives in `n` deltas.
fn tool_call_events(args: &Value, n: usize) -> Vec<Event> {
    let text = args.to_string();
    let mut out = Emitter::default();
    let mut builder =
        MessageBuilder::start(&mut out, MessageStart::new("msg_bench", Role::Assistant));
    builder
        .tool_call_start(&mut out, "call_1", "write_file")
        .expect("starts");
    let mut rest = text.as_str();
    for remaining in (1..=n).rev() {
        let mut at = rest.len().div_ceil(remaining);
        while !rest.is_char_boundary(at) {
            at += 1;
        }
        let (piece, tail) = rest.split_at(at);
        builder
            .tool_call_delta(&mut out, "call_1", piece)
            .expect("streams");
        rest = tail;
    }
    builder.tool_call_end(&mut out, "call_1").expect("ends");
    builder.finish(&mut out);
    out.drain().collect()
}

/// A `write_file` call whose content is about 78 KiB of source code: long strings with escapes.
fn file_args() -> Value {
    let line =
        "    let greeting = \"hello\\tworld\"; // a line of code with \"quotes\" and a tab\n";
    let content = line.repeat(ARGS_BYTES / (line.len() + 2));
    json!({"path": "src/generated.rs", "content": content})
}

/// A call whose arguments are about 78 KiB of records: many small keys, numbers and strings.
fn record_args() -> Value {
    let records: Vec<Value> = (0..1_000)
        .map(|i| json!({"id": i, "name": format!("item {i}"), "price": i as f64 * 1.25, "tags": ["a", "b"], "ok": true}))
        .collect();
    let mut args = json!({"table": "items", "rows": records});
    while args.to_string().len() < ARGS_BYTES {
        if let Some(rows) = args["rows"].as_array_mut() {
            rows.push(
                json!({"id": rows.len(), "name": "pad", "price": 0.5, "tags": [], "ok": false}),
            );
        }
    }
    args
}

fn accumulate(events: &[Event]) -> Accumulator {
    let mut accumulator = Accumulator::default();
    for event in events {
        accumulator.push(event).expect("valid stream");
    }
    accumulator
}

fn bench_accumulate(c: &mut Criterion) {
    let mut group = c.benchmark_group("accumulate");
    group.throughput(Throughput::Elements(TEXT_DELTAS as u64));
    let events = text_events(TEXT_DELTAS);
    group.bench_function("text_deltas", |b| b.iter(|| black_box(accumulate(&events))));
    // Decoded events own their ids: the accumulator compares strings, not pointers.
    let decoded: Vec<Event> = events
        .iter()
        .map(|event| {
            serde_json::from_str(&serde_json::to_string(event).expect("serializes"))
                .expect("parses")
        })
        .collect();
    group.bench_function("text_deltas_decoded", |b| {
        b.iter(|| black_box(accumulate(&decoded)))
    });
    group.finish();
}

fn bench_partial_args(c: &mut Criterion) {
    let mut group = c.benchmark_group("partial_args_78KiB_20000_deltas");
    group.sample_size(30);
    for (name, args) in [("file_content", file_args()), ("records", record_args())] {
        let events = tool_call_events(&args, ARGS_DELTAS);
        assert_eq!(
            events.len(),
            ARGS_DELTAS + 4,
            "message_start, part_start, the deltas, part_complete, message_complete"
        );
        group.bench_function(name, |b| {
            b.iter(|| {
                let mut accumulator = Accumulator::default();
                for event in &events {
                    accumulator.push(event).expect("valid stream");
                    // What a UI does after every delta: read the arguments so far.
                    if let Some(Part::ToolCall(call)) = accumulator.messages()[0].parts.first() {
                        black_box(&call.args);
                    }
                }
                let Part::ToolCall(call) = &accumulator.messages()[0].parts[0] else {
                    panic!("a tool call")
                };
                assert_eq!(call.args.0, args);
            })
        });
    }
    group.finish();
}

/// `text` cut into `n` pieces of about the same size, on char boundaries.
fn pieces(text: &str, n: usize) -> Vec<&str> {
    let mut pieces = Vec::with_capacity(n);
    let mut rest = text;
    for remaining in (1..=n).rev() {
        let mut at = rest.len().div_ceil(remaining);
        while !rest.is_char_boundary(at) {
            at += 1;
        }
        let (piece, tail) = rest.split_at(at);
        pieces.push(piece);
        rest = tail;
    }
    pieces
}

/// The state a run builds with one `update_state` call: the arguments add each member of
/// `state` to an empty document, and arrive in 20,000 deltas. Each delta's definite
/// operations become one `state_delta` event, as the orchestrator emits them.
fn bench_state_patches(c: &mut Criterion) {
    let mut group = c.benchmark_group("state_patches_78KiB_20000_deltas");
    group.sample_size(30);
    for (name, state) in [("file_content", file_args()), ("records", record_args())] {
        let ops: Vec<Value> = state
            .as_object()
            .expect("an object")
            .iter()
            .map(|(key, value)| json!({"op": "add", "path": format!("/{key}"), "value": value}))
            .collect();
        let args = json!({ "ops": ops }).to_string();
        let deltas = pieces(&args, ARGS_DELTAS);
        let emit = || {
            let mut document = json!({});
            let mut stream = PatchStream::new(
                &document,
                agentwire_core::json_bounds::JsonBounds::default(),
            );
            let mut out = Emitter::default();
            for delta in &deltas {
                let patch = stream.push(&mut document, delta).expect("applies");
                if !patch.is_empty() {
                    out.emit(EventKind::StateDelta {
                        patch: json_patch::Patch(patch),
                    });
                }
            }
            let finished = stream.finish(&mut document).expect("finishes");
            assert!(!finished.resynced);
            (document, stream, out)
        };
        let (document, ..) = emit();
        assert_eq!(document, state);
        // What is timed is the emitting; the document and the events are dropped after.
        group.bench_function(name, |b| b.iter_with_large_drop(emit));
    }
    group.finish();
}

fn bench_build_serialize(c: &mut Criterion) {
    let mut group = c.benchmark_group("build_serialize");
    group.throughput(Throughput::Elements(TEXT_DELTAS as u64 + 4));
    group.bench_function("native_ndjson", |b| {
        b.iter_batched_ref(
            || Vec::with_capacity(TEXT_DELTAS * 96),
            |buffer: &mut Vec<u8>| {
                let mut out = Emitter::default();
                let mut builder = MessageBuilder::start(
                    &mut out,
                    MessageStart::new("msg_bench", Role::Assistant),
                );
                let write = |out: &mut Emitter, buffer: &mut Vec<u8>| {
                    for event in out.drain() {
                        serde_json::to_writer(&mut *buffer, &event).expect("serializes");
                        buffer.push(b'\n');
                    }
                };
                for _ in 0..TEXT_DELTAS {
                    builder.text_delta(&mut out, "tok ");
                    write(&mut out, buffer);
                }
                builder.finish(&mut out);
                write(&mut out, buffer);
            },
            BatchSize::LargeInput,
        )
    });
    group.finish();
}

criterion_group!(
    benches,
    bench_accumulate,
    bench_partial_args,
    bench_state_patches,
    bench_build_serialize
);
criterion_main!(benches);
