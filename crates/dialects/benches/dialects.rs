//! The speed of every dialect over one long realistic run (reasoning, word-by-word text, tool
//! calls with streamed arguments and their results, several steps): encoding in events per
//! second, and decoding plus strict accumulation in frames (chunks) per second.

use std::hint::black_box;

use agentwire_core::{Accumulator, Event};
use agentwire_dialects::Dialect;
use agentwire_testkit::scenarios;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

fn encode(dialect: Dialect, events: &[Event], wire: &mut Vec<u8>) {
    wire.clear();
    let mut encoder = dialect.encoder();
    for event in events {
        encoder.encode(event, wire);
    }
    encoder.finish(wire);
}

fn decode_and_accumulate(dialect: Dialect, wire: &[u8], events: &mut Vec<Event>) -> usize {
    events.clear();
    let mut decoder = dialect.decoder();
    decoder.decode(wire, events).expect("decodes");
    decoder.finish(events).expect("ends");
    let mut accumulator = Accumulator::default();
    for event in events.iter() {
        accumulator.push(event).expect("accumulates");
    }
    accumulator.messages().len()
}

fn dialects(c: &mut Criterion) {
    let events = scenarios::long_run(8);
    let mut wire = Vec::with_capacity(4 << 20);

    let mut group = c.benchmark_group("encode");
    group.throughput(Throughput::Elements(events.len() as u64));
    for &dialect in Dialect::ALL {
        group.bench_function(dialect.name(), |b| {
            b.iter(|| encode(dialect, &events, &mut wire));
        });
    }
    group.finish();

    let mut group = c.benchmark_group("decode_accumulate");
    let mut decoded = Vec::with_capacity(events.len());
    for &dialect in Dialect::ALL {
        let mut wire = Vec::new();
        encode(dialect, &events, &mut wire);
        // Frames are what a client parses one by one: SSE frames, or NDJSON lines.
        let separator: &[u8] = if dialect == Dialect::NativeNdjson {
            b"\n"
        } else {
            b"\n\n"
        };
        let frames = wire
            .windows(separator.len())
            .filter(|w| *w == separator)
            .count();
        group.throughput(Throughput::Elements(frames as u64));
        group.bench_function(dialect.name(), |b| {
            b.iter(|| black_box(decode_and_accumulate(dialect, &wire, &mut decoded)));
        });
    }
    group.finish();
}

criterion_group!(benches, dialects);
criterion_main!(benches);
