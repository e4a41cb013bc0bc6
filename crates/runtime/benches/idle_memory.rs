//! Memory per idle run (target: ≤ 16 KiB beyond its messages), per sub-agent's run (target:
//! ≤ 8 KiB more than its parent holds without it), measured with a counting global allocator,
//! and heap allocations per streamed token.
//!
//! 1,000 runs each stream a short turn that ends in a call needing approval, and wait. The
//! live heap they hold, less the heap their messages take (measured by cloning them), divided
//! by the number of runs, is what a waiting run costs: its shared state, its orchestrator task
//! and its event queue. The event readers are kept, as a server keeps them. Run with
//! `cargo bench -p agentwire-runtime --bench idle_memory`; `cargo test` runs it too and fails
//! if the limit is passed, or if the ended runs leave memory behind.

use std::alloc::System;

use agentwire_brain::ScriptedBrain;
use agentwire_core::{Awaiting, Message, RunStatus, ToolSpec};
use agentwire_runtime::{Agent, Run, RunStart};
use agentwire_tools::{Tool, ToolContext, ToolFuture};
use serde_json::{Value, json};
use stats_alloc::{INSTRUMENTED_SYSTEM, StatsAlloc};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

const RUNS: usize = 1_000;
const LIMIT: usize = 16 * 1024;
/// Trees of a parent waiting on `CHILDREN` sub-agents' runs, each waiting for an approval.
const TREES: usize = 250;
const CHILDREN: usize = 4;
const CHILD_LIMIT: usize = 8 * 1024;
const TOKENS: usize = 10_000;

/// Bytes allocated and not freed, now (`stats_alloc` counts what a reallocation grows or
/// shrinks in these two as well).
fn live() -> isize {
    let stats = GLOBAL.stats();
    stats.bytes_allocated as isize - stats.bytes_deallocated as isize
}

struct DeleteFile(ToolSpec);

impl Tool for DeleteFile {
    fn spec(&self) -> &ToolSpec {
        &self.0
    }

    fn call(&self, _: Value, _: ToolContext) -> ToolFuture<'_> {
        Box::pin(async { Ok(json!({"deleted": true})) })
    }
}

fn fail(error: impl std::fmt::Display) -> ! {
    panic!("{error}")
}

fn approval_agent() -> Agent {
    approval_agent_named("assistant")
}

fn approval_agent_named(name: &str) -> Agent {
    let brain = ScriptedBrain::from_json(
        r#"{"turns": [[
            {"type": "reasoning_delta", "text": "The user wants old.log gone."},
            {"type": "text_delta", "text": "I will delete "},
            {"type": "text_delta", "text": "old.log."},
            {"type": "tool_call_start", "id": "call_1", "name": "delete_file"},
            {"type": "tool_call_delta", "id": "call_1", "args": "{\"path\": "},
            {"type": "tool_call_delta", "id": "call_1", "args": "\"old.log\"}"},
            {"type": "tool_call_end", "id": "call_1"},
            {"type": "finish", "reason": "tool_calls", "usage": {"input_tokens": 40, "output_tokens": 12}}
        ]]}"#,
    )
    .unwrap_or_else(|error| fail(error));
    let tool = DeleteFile(ToolSpec::new(
        "delete_file",
        "Deletes a file",
        json!({"type": "object", "properties": {"path": {"type": "string"}}}),
    ));
    Agent::builder(name)
        .brain(brain)
        .system("You are a careful assistant.")
        .tool(tool)
        .approval(["delete_file"])
        .build()
        .unwrap_or_else(|error| fail(error))
}

/// Starts a run and reads its events until it waits for approval.
async fn idle_run(agent: &Agent) -> Run {
    let mut run = agent
        .start(RunStart::new(vec![Message::user("Delete old.log")]))
        .unwrap_or_else(|error| fail(error));
    while let Some(event) = run.events.recv().await {
        // The run's own status: a sub-agent's, nested, comes before its parent waits.
        if event.own_status() == Some(RunStatus::Awaiting(Awaiting::Approval)) {
            return run;
        }
    }
    fail("the run ended without waiting for approval")
}

/// An agent whose model asks `children` sub-agents at once, each of which waits for an
/// approval: its runs wait on their children.
fn tree_agent(children: usize) -> Agent {
    let mut turn = Vec::new();
    let mut builder = Agent::builder("parent").system("You delegate.");
    for n in 0..children {
        let name = format!("child_{n}");
        turn.push(json!({"type": "tool_call_start", "id": format!("call_{n}"), "name": name}));
        turn.push(json!({"type": "tool_call_delta", "id": format!("call_{n}"), "args": "{\"input\": \"Delete old.log\"}"}));
        turn.push(json!({"type": "tool_call_end", "id": format!("call_{n}")}));
        builder = builder.subagent(approval_agent_named(&name));
    }
    turn.push(json!({"type": "finish", "reason": "tool_calls"}));
    let brain = ScriptedBrain::from_json(&json!({"turns": [turn]}).to_string())
        .unwrap_or_else(|error| fail(error));
    builder
        .brain(brain)
        .build()
        .unwrap_or_else(|error| fail(error))
}

/// `TREES` runs of `agent` waiting on their children: the heap they hold, the part of it their
/// own messages take, and what is left once they ended.
async fn trees_held(agent: &Agent) -> (isize, isize, isize) {
    for _ in 0..10 {
        end(idle_run(agent).await).await;
    }
    let before = live();
    let mut trees = Vec::with_capacity(TREES);
    let trees_vec = live() - before;
    for _ in 0..TREES {
        trees.push(idle_run(agent).await);
    }
    let held = live() - before - trees_vec;
    let at_messages = live();
    let messages: Vec<Vec<Message>> = trees.iter().map(|run| run.handle.messages()).collect();
    let own_messages = live() - at_messages - (TREES * size_of::<Vec<Message>>()) as isize;
    drop(messages);
    for run in trees {
        end(run).await;
    }
    tokio::task::yield_now().await;
    (held, own_messages, live() - before)
}

/// Cancels a run and reads its events to the end.
async fn end(mut run: Run) {
    run.handle
        .cancel()
        .expect("the schema allows the client's cancel");
    while run.events.recv().await.is_some() {}
}

fn main() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|error| fail(error));
    let agent = approval_agent();

    runtime.block_on(async {
        // Warm up: what is built once (the default schema, the runtime's buffers) is not a cost
        // of each run.
        for _ in 0..10 {
            let run = idle_run(&agent).await;
            end(run).await;
        }
        let before = live();
        let mut runs = Vec::with_capacity(RUNS);
        let runs_vec = live() - before;
        for _ in 0..RUNS {
            runs.push(idle_run(&agent).await);
        }
        let held = live() - before - runs_vec;
        let at_messages = live();
        let messages: Vec<Vec<Message>> = runs.iter().map(|run| run.handle.messages()).collect();
        let message_bytes = live() - at_messages - (RUNS * size_of::<Vec<Message>>()) as isize;
        drop(messages);
        let per_run = (held - message_bytes) / RUNS as isize;
        println!(
            "idle run (awaiting approval): {per_run} bytes beyond its messages ({} bytes of messages, {} bytes in all per run)",
            message_bytes / RUNS as isize,
            held / RUNS as isize,
        );
        for run in runs {
            end(run).await;
        }
        tokio::task::yield_now().await;
        let left = live() - before;
        println!("after the runs ended: {left} bytes left");
        assert!(
            per_run <= LIMIT as isize,
            "an idle run holds {per_run} bytes beyond its messages, over {LIMIT}"
        );
        assert!(left < 4096, "ended runs left {left} bytes behind: a leak");

        // Sub-agents' runs: trees of a parent and its waiting children. What a child costs is
        // the slope: what trees of `CHILDREN` hold beyond trees of one, per child they add
        // (less the children's messages, each the same conversation as an idle run's above):
        // the child's own run, and what its parent keeps for it.
        let (one, one_messages, left_one) = trees_held(&tree_agent(1)).await;
        let (many, many_messages, left_many) = trees_held(&tree_agent(CHILDREN)).await;
        let added = (TREES * (CHILDREN - 1)) as isize;
        let child_messages = message_bytes / RUNS as isize;
        let per_child = ((many - many_messages) - (one - one_messages)) / added - child_messages;
        println!(
            "sub-agent's run (waiting for an approval): {per_child} bytes beyond its messages, its own run and what its parent keeps for it"
        );
        let left = left_one.max(left_many);
        println!("after the trees ended: {left} bytes left");
        assert!(
            per_child <= CHILD_LIMIT as isize,
            "a sub-agent's run holds {per_child} bytes, over {CHILD_LIMIT}"
        );
        assert!(left < 4096, "ended trees left {left} bytes behind: a leak");
    });

    // Heap allocations per streamed token.
    let mut turn = String::from(r#"{"turns": [["#);
    for _ in 0..TOKENS {
        turn.push_str(r#"{"type": "text_delta", "text": "tok "}, "#);
    }
    turn.push_str(r#"{"type": "finish", "reason": "stop"}]]}"#);
    let brain = ScriptedBrain::from_json(&turn).unwrap_or_else(|error| fail(error));
    let agent = Agent::builder("bench")
        .brain(brain)
        .build()
        .unwrap_or_else(|error| fail(error));
    runtime.block_on(async {
        let before = GLOBAL.stats().allocations;
        let mut run = agent
            .start(RunStart::new(vec![Message::user("Go")]))
            .unwrap_or_else(|error| fail(error));
        let mut batch = Vec::with_capacity(4 * TOKENS);
        while run.events.recv_many(&mut batch).await > 0 {}
        let allocations = GLOBAL.stats().allocations - before;
        println!(
            "streaming: {:.2} heap allocations per token ({} events read)",
            allocations as f64 / TOKENS as f64,
            batch.len()
        );
    });
}
