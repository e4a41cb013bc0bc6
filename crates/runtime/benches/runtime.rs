//! The runtime's speed target (numbers in the README): the orchestrator and the
//! builder, driven by the unpaced scripted brain, stream ≥ 1 million tokens (text deltas) per
//! second on one core, the events read by one reader as a server's would be.
//!
//! `brain_only` measures the scripted brain alone, to show what of the time is the brain's own.

use std::hint::black_box;

use agentwire_brain::{Brain, BrainEvent, BrainRequest, FinishReason, ScriptedBrain};
use agentwire_core::{Message, ToolSpec, Usage};
use agentwire_runtime::{Agent, RunStart};
use agentwire_tools::{Tool, ToolContext, ToolFuture};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use futures::StreamExt;
use serde_json::{Value, json};

const TOKENS: usize = 100_000;
const STEPS: usize = 8;

fn text(text: &str) -> BrainEvent {
    BrainEvent::TextDelta { text: text.into() }
}

fn finish(reason: FinishReason) -> BrainEvent {
    BrainEvent::Finish {
        reason,
        usage: Some(Usage::new(10, 10)),
    }
}

/// One turn of `TOKENS` word deltas.
fn text_brain() -> ScriptedBrain {
    let mut turn: Vec<BrainEvent> = (0..TOKENS)
        .map(|i| text(["The ", "quick ", "brown ", "fox "][i % 4]))
        .collect();
    turn.push(finish(FinishReason::Stop));
    ScriptedBrain::new(vec![turn]).unwrap_or_else(|error| panic!("{error}"))
}

/// `STEPS` steps of 100 reasoning deltas, 500 text deltas and a tool call whose arguments
/// stream in 50 deltas, then a short answer: 5,200 tokens in all.
fn steps_brain() -> ScriptedBrain {
    let mut turns = Vec::new();
    for step in 0..STEPS {
        let mut turn: Vec<BrainEvent> = (0..100)
            .map(|_| BrainEvent::ReasoningDelta {
                text: "think ".into(),
            })
            .collect();
        turn.extend((0..500).map(|i| text(["The ", "quick ", "brown ", "fox "][i % 4])));
        let id = format!("call_{step}");
        turn.push(BrainEvent::ToolCallStart {
            id: id.clone(),
            name: "echo".into(),
        });
        let mut pieces = vec!["{\"rows\": [".to_owned()];
        pieces.extend(std::iter::repeat_n(
            "{\"a\": 1, \"b\": \"xy\"}, ".to_owned(),
            48,
        ));
        pieces.push("{\"a\": 2, \"b\": \"z\"}]}".to_owned());
        turn.extend(pieces.into_iter().map(|args| BrainEvent::ToolCallDelta {
            id: id.clone(),
            args,
        }));
        turn.push(BrainEvent::ToolCallEnd { id });
        turn.push(finish(FinishReason::ToolCalls));
        turns.push(turn);
    }
    turns.push(vec![text("Done."), finish(FinishReason::Stop)]);
    ScriptedBrain::new(turns).unwrap_or_else(|error| panic!("{error}"))
}

/// Answers with how many rows it was given.
struct Echo(ToolSpec);

impl Tool for Echo {
    fn spec(&self) -> &ToolSpec {
        &self.0
    }

    fn call(&self, args: Value, _: ToolContext) -> ToolFuture<'_> {
        let rows = args["rows"].as_array().map_or(0, Vec::len);
        Box::pin(async move { Ok(json!({"rows": rows})) })
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|error| panic!("{error}"))
}

/// Starts a run and reads all its events in batches; returns how many there were.
async fn run_to_end(agent: &Agent) -> usize {
    let start = RunStart::new(vec![Message::user("Go")]);
    let mut run = agent.start(start).unwrap_or_else(|error| panic!("{error}"));
    let mut batch = Vec::with_capacity(1024);
    let mut events = 0;
    loop {
        let n = run.events.recv_many(&mut batch).await;
        if n == 0 {
            break;
        }
        events += n;
        black_box(&batch);
        batch.clear();
    }
    events
}

fn stream(c: &mut Criterion) {
    let runtime = runtime();
    let mut group = c.benchmark_group("stream");

    let agent = Agent::builder("bench")
        .brain(text_brain())
        .build()
        .unwrap_or_else(|error| panic!("{error}"));
    group.throughput(Throughput::Elements(TOKENS as u64));
    group.bench_function("text_deltas", |b| {
        b.iter(|| runtime.block_on(run_to_end(&agent)));
    });

    let echo = Echo(ToolSpec::new(
        "echo",
        "Counts rows",
        json!({"type": "object", "properties": {"rows": {"type": "array"}}}),
    ));
    let agent = Agent::builder("bench")
        .brain(steps_brain())
        .tool(echo)
        .max_steps(STEPS as u32 + 1)
        .build()
        .unwrap_or_else(|error| panic!("{error}"));
    group.throughput(Throughput::Elements((STEPS * 650 + 1) as u64));
    group.bench_function("steps_with_tools", |b| {
        b.iter(|| runtime.block_on(run_to_end(&agent)));
    });
    group.finish();

    let brain = text_brain();
    let mut group = c.benchmark_group("brain_only");
    group.throughput(Throughput::Elements(TOKENS as u64));
    group.bench_function("text_deltas", |b| {
        b.iter(|| {
            runtime.block_on(async {
                brain
                    .stream(BrainRequest::default())
                    .fold(0usize, |n, event| async move {
                        black_box(&event);
                        n + 1
                    })
                    .await
            })
        });
    });
    group.finish();
}

criterion_group!(benches, stream);
criterion_main!(benches);
