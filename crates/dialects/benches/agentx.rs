//! Encoding speed of the native dialect (SSE and NDJSON) and of AgentX packets, in events per
//! second, over a long realistic run (reasoning, word-by-word text, streamed tool arguments).

use agentwire_dialects::Encoder;
use agentwire_dialects::StreamDecoder;
use agentwire_dialects::agentx::{AgentxDecoder, AgentxEncoder};
use agentwire_dialects::native::{NativeNdjsonEncoder, NativeSseEncoder};
use agentwire_testkit::scenarios;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

fn encode(encoder: &mut dyn Encoder, events: &[agentwire_core::Event], out: &mut Vec<u8>) {
    out.clear();
    for event in events {
        encoder.encode(event, out);
    }
    encoder.finish(out);
}

fn encoders(c: &mut Criterion) {
    let events = scenarios::long_run(8);
    let mut group = c.benchmark_group("encode");
    group.throughput(Throughput::Elements(events.len() as u64));
    let mut out = Vec::with_capacity(1 << 20);
    group.bench_function("native_sse", |b| {
        b.iter(|| encode(&mut NativeSseEncoder, &events, &mut out));
    });
    group.bench_function("native_ndjson", |b| {
        b.iter(|| encode(&mut NativeNdjsonEncoder, &events, &mut out));
    });
    group.bench_function("agentx", |b| {
        b.iter(|| encode(&mut AgentxEncoder::default(), &events, &mut out));
    });
    group.finish();

    let mut wire = Vec::new();
    encode(&mut AgentxEncoder::default(), &events, &mut wire);
    let mut group = c.benchmark_group("decode");
    group.throughput(Throughput::Bytes(wire.len() as u64));
    let mut decoded = Vec::with_capacity(events.len());
    group.bench_function("agentx", |b| {
        b.iter(|| {
            decoded.clear();
            let mut decoder = AgentxDecoder::default();
            decoder.decode(&wire, &mut decoded).expect("decodes");
            decoder.finish(&mut decoded).expect("ends");
        });
    });
    group.finish();
}

criterion_group!(benches, encoders);
criterion_main!(benches);
