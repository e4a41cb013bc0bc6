//! Cancellation: mid-stream, while tools run, and while the run waits for the client. The
//! model's stream and the tools stop at once, what was complete is kept, and every call that
//! did not finish is answered.
#![allow(clippy::unwrap_used)]

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use agentwire_core::communication::CommunicationSchema;
use agentwire_core::{ErrorInfo, EventKind, Message, Part, RunStatus};
use agentwire_runtime::{RunHandle, RunStart};
use common::{Client, Recording, agent, part_types, tool};
use futures::FutureExt;
use serde_json::{Value, json};

/// Sets its flag when dropped: tells that a tool's future was stopped.
struct DropFlag(Arc<AtomicBool>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

#[tokio::test(start_paused = true)]
async fn cancel_mid_stream_stops_the_model_at_once() {
    // 1,000 words at 10 per second: 100 s of streaming, and a call cut off in the middle.
    let mut turn: Vec<Value> =
        vec![json!({"type": "tool_call_start", "id": "c1", "name": "search"})];
    turn.push(json!({"type": "tool_call_delta", "id": "c1", "args": "{\"q\": "}));
    turn.push(json!({"type": "text_delta", "text": "word "}));
    turn.extend((0..1000).map(|_| json!({"type": "text_delta", "text": "word "})));
    turn.push(json!({"type": "finish", "reason": "stop"}));
    let brain = Recording::paced(json!({"turns": [turn]}), 10.0);
    let agent = agent(&brain).build().unwrap();
    let run = agent
        .start(RunStart::new(vec![Message::user("talk")]))
        .unwrap();
    let mut client = Client::new(run.events);
    let mut deltas = 0;
    while deltas < 5 {
        let event = client.events.recv().await.unwrap();
        client.accumulator.push(&event).unwrap();
        if matches!(event.kind, EventKind::PartDelta { .. }) {
            deltas += 1;
        }
        client.seen.push(event);
    }
    let canceled_at = tokio::time::Instant::now();
    run.handle
        .cancel()
        .expect("the schema allows the client's cancel");
    assert_eq!(client.until_end().await, RunStatus::Canceled);
    assert!(
        canceled_at.elapsed() < Duration::from_millis(100),
        "the run ended at once, not after {:?}",
        canceled_at.elapsed()
    );
    client.check_agrees_with(&run.handle);
    let message = &run.handle.output()[0];
    let words = message.content().matches("word").count();
    assert!((4..10).contains(&words), "{words} words streamed");
    assert_eq!(
        part_types(message),
        ["step_start", "tool_call", "text", "tool_error"]
    );
    // The cut-off call keeps the text it received, and is answered as canceled.
    assert!(matches!(&message.parts[1], Part::ToolCall(call) if call.args.0 == json!("{\"q\": ")));
    assert!(matches!(&message.parts[3], Part::ToolError(error)
        if error.message == "The call to tool 'search' was not completed: the run was canceled."));
    assert_eq!(run.handle.status(), RunStatus::Canceled);
    assert_eq!(run.handle.error(), None);
}

#[tokio::test]
async fn cancel_stops_running_tools_at_once() {
    let dropped = Arc::new(AtomicBool::new(false));
    let token_fired = Arc::new(AtomicBool::new(false));
    let (started_tx, started) = tokio::sync::oneshot::channel::<()>();
    let started_tx = std::sync::Mutex::new(Some(started_tx));
    let slow = {
        let dropped = Arc::clone(&dropped);
        let token_fired = Arc::clone(&token_fired);
        tool("slow", json!({"type": "object"}), move |_, context| {
            let guard = DropFlag(Arc::clone(&dropped));
            let token_fired = Arc::clone(&token_fired);
            if let Some(started) = started_tx.lock().unwrap().take() {
                let _ = started.send(());
            }
            // The tool's own work elsewhere watches the token.
            tokio::spawn({
                let cancel = context.cancel.clone();
                async move {
                    cancel.cancelled().await;
                    token_fired.store(true, Ordering::SeqCst);
                }
            });
            async move {
                let _guard = guard;
                tokio::time::sleep(Duration::from_secs(3600)).await;
                Ok(json!("never"))
            }
            .boxed()
        })
    };
    let quick = tool("quick", json!({"type": "object"}), |_, _| {
        async { Ok(json!("done")) }.boxed()
    });
    let calls = json!([
        {"type": "tool_call_start", "id": "c1", "name": "slow"},
        {"type": "tool_call_end", "id": "c1"},
        {"type": "tool_call_start", "id": "c2", "name": "quick"},
        {"type": "tool_call_end", "id": "c2"},
        {"type": "finish", "reason": "tool_calls"}
    ]);
    let brain = Recording::new(json!({"turns": [calls]}));
    let agent = agent(&brain).tool(slow).tool(quick).build().unwrap();
    let run = agent
        .start(RunStart::new(vec![Message::user("go")]))
        .unwrap();
    let mut client = Client::new(run.events);
    started.await.unwrap();
    run.handle
        .cancel()
        .expect("the schema allows the client's cancel");
    assert_eq!(client.until_end().await, RunStatus::Canceled);
    client.check_agrees_with(&run.handle);
    // Give the aborted task and the watcher a moment to observe the cancellation.
    tokio::time::timeout(Duration::from_secs(5), async {
        while !(dropped.load(Ordering::SeqCst) && token_fired.load(Ordering::SeqCst)) {
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("the tool's future was dropped and its token fired");
    let message = &run.handle.output()[0];
    let answers: Vec<String> = message
        .parts
        .iter()
        .filter_map(|part| match part {
            Part::ToolResult(result) => Some(format!("{} ok", result.tool_call_id)),
            Part::ToolError(error) => Some(format!("{} {}", error.tool_call_id, error.message)),
            _ => None,
        })
        .collect();
    assert_eq!(
        answers,
        [
            "c2 ok",
            "c1 The call to tool 'slow' was not completed: the run was canceled."
        ]
    );
    assert_eq!(brain.requests().len(), 1, "no model call after the cancel");
}

/// A run whose model called `rm`, which needs approval, waiting for the answer.
async fn waiting_for_approval() -> (RunHandle, Client) {
    let brain = Recording::new(json!({"turns": [[
        {"type": "tool_call_start", "id": "c1", "name": "rm"},
        {"type": "tool_call_end", "id": "c1"},
        {"type": "finish", "reason": "tool_calls"}
    ]]}));
    let rm = tool("rm", json!({"type": "object"}), |_, _| {
        async { Ok(json!("removed")) }.boxed()
    });
    let agent = agent(&brain).tool(rm).approval(["rm"]).build().unwrap();
    let run = agent
        .start(RunStart::new(vec![Message::user("rm")]))
        .unwrap();
    let mut client = Client::new(run.events);
    client.until_settled().await;
    (run.handle, client)
}

#[tokio::test]
async fn cancel_while_waiting_answers_the_waiting_calls() {
    let (handle, mut client) = waiting_for_approval().await;
    handle
        .cancel()
        .expect("the schema allows the client's cancel");
    assert_eq!(client.until_end().await, RunStatus::Canceled);
    client.check_agrees_with(&handle);
    let output = handle.output();
    assert_eq!(output.len(), 2);
    assert_eq!(part_types(&output[1]), ["tool_error"]);
    // Cancel again, or after the end: nothing changes.
    handle
        .cancel()
        .expect("the schema allows the client's cancel");
    assert_eq!(handle.status(), RunStatus::Canceled);
}

#[tokio::test]
async fn an_interrupt_by_the_host_ends_the_run_incomplete_with_its_reason() {
    let (handle, mut client) = waiting_for_approval().await;
    let state = handle.state();
    handle.interrupt(ErrorInfo::new("shutdown", "the server shut down"));
    assert_eq!(client.until_end().await, RunStatus::Incomplete);
    client.check_agrees_with(&handle);
    assert_eq!(handle.error().unwrap().code, "shutdown");
    // Not the client's cancel: the schema's state is left as it was.
    assert_eq!(handle.state(), state);
    // The waiting call is answered all the same.
    assert_eq!(part_types(&handle.output()[1]), ["tool_error"]);
    // A cancel after the end changes nothing.
    handle
        .cancel()
        .expect("the schema allows the client's cancel");
    assert_eq!(handle.status(), RunStatus::Incomplete);
}

#[tokio::test]
async fn an_interruptible_schema_records_the_cancel() {
    let brain = Recording::paced(
        json!({"turns": [[{"type": "text_delta", "text": "a"}, {"type": "text_delta", "text": "b"},
                         {"type": "finish", "reason": "stop"}]]}),
        1.0,
    );
    let agent = agent(&brain)
        .schema(CommunicationSchema::interruptible())
        .build()
        .unwrap();
    let run = agent
        .start(RunStart::new(vec![Message::user("hi")]))
        .unwrap();
    assert_eq!(run.handle.state(), "running");
    run.handle
        .cancel()
        .expect("the schema allows the client's cancel");
    assert_eq!(run.handle.state(), "idle");
    let mut client = Client::new(run.events);
    assert_eq!(client.until_end().await, RunStatus::Canceled);
    client.check_agrees_with(&run.handle);
}

/// Canceled as it resumes: the approval's answer is kept, and the approved call, which never
/// ran, is answered as canceled.
#[tokio::test]
async fn cancel_as_the_run_resumes_answers_the_approved_call() {
    let brain = Recording::new(json!({"turns": [[
        {"type": "tool_call_start", "id": "c1", "name": "rm"},
        {"type": "tool_call_end", "id": "c1"},
        {"type": "finish", "reason": "tool_calls"}
    ]]}));
    let ran = Arc::new(AtomicBool::new(false));
    let rm = {
        let ran = Arc::clone(&ran);
        tool("rm", json!({"type": "object"}), move |_, _| {
            ran.store(true, Ordering::SeqCst);
            async { Ok(json!("removed")) }.boxed()
        })
    };
    let agent = agent(&brain).tool(rm).approval(["rm"]).build().unwrap();
    let run = agent
        .start(RunStart::new(vec![Message::user("rm")]))
        .unwrap();
    let mut client = Client::new(run.events);
    client.until_settled().await;
    // On this one-thread runtime the run cannot move between these two calls.
    run.handle
        .input(common::approval("apr_1", true, None))
        .unwrap();
    run.handle
        .cancel()
        .expect("the schema allows the client's cancel");
    assert_eq!(client.until_end().await, RunStatus::Canceled);
    client.check_agrees_with(&run.handle);
    assert!(!ran.load(Ordering::SeqCst));
    assert_eq!(
        part_types(&run.handle.output()[1]),
        ["approval_response", "tool_error"]
    );
    assert_eq!(brain.requests().len(), 1);
}

/// Canceled while an approved call runs: the call is stopped and answered in the message that
/// resumed the run.
#[tokio::test]
async fn cancel_while_an_approved_call_runs() {
    let brain = Recording::new(json!({"turns": [[
        {"type": "tool_call_start", "id": "c1", "name": "slow_rm"},
        {"type": "tool_call_end", "id": "c1"},
        {"type": "finish", "reason": "tool_calls"}
    ]]}));
    let (started_tx, started) = tokio::sync::oneshot::channel::<()>();
    let started_tx = std::sync::Mutex::new(Some(started_tx));
    let slow_rm = tool("slow_rm", json!({"type": "object"}), move |_, _| {
        if let Some(started) = started_tx.lock().unwrap().take() {
            let _ = started.send(());
        }
        async {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            Ok(json!("removed"))
        }
        .boxed()
    });
    let agent = agent(&brain)
        .tool(slow_rm)
        .approval(["slow_rm"])
        .build()
        .unwrap();
    let run = agent
        .start(RunStart::new(vec![Message::user("rm")]))
        .unwrap();
    let mut client = Client::new(run.events);
    client.until_settled().await;
    run.handle
        .input(common::approval("apr_1", true, None))
        .unwrap();
    started.await.unwrap();
    run.handle
        .cancel()
        .expect("the schema allows the client's cancel");
    assert_eq!(client.until_end().await, RunStatus::Canceled);
    client.check_agrees_with(&run.handle);
    let resumed = &run.handle.output()[1];
    assert_eq!(part_types(resumed), ["approval_response", "tool_error"]);
    assert!(matches!(&resumed.parts[1], Part::ToolError(error)
        if error.message == "The call to tool 'slow_rm' was not completed: the run was canceled."));
}

#[tokio::test]
async fn a_schema_without_cancel_refuses_the_clients_cancel_but_not_the_hosts() {
    let brain = Recording::paced(
        json!({"turns": [[{"type": "text_delta", "text": "a"}, {"type": "text_delta", "text": "b"},
                         {"type": "finish", "reason": "stop"}]]}),
        1.0,
    );
    let agent = agent(&brain)
        .schema(CommunicationSchema::chat())
        .build()
        .unwrap();
    let run = agent
        .start(RunStart::new(vec![Message::user("hi")]))
        .unwrap();
    let refusal = run.handle.cancel().unwrap_err();
    assert_eq!(
        refusal.to_string(),
        "in state 'running' the client may not send cancel; allowed: server agent_message"
    );
    assert_eq!(run.handle.state(), "running");
    // The host's stop is no message of the schema: the run ends, its session keeps `idle`.
    run.handle.abort();
    let mut client = Client::new(run.events);
    assert_eq!(client.until_end().await, RunStatus::Canceled);
    assert_eq!(run.handle.session_state(), "idle");
}

#[tokio::test]
async fn a_run_starts_from_its_sessions_state_and_says_where_it_leaves_it() {
    let brain = Recording::new(json!({"turns": [
        [{"type": "text_delta", "text": "answer"}, {"type": "finish", "reason": "stop"}]
    ]}));
    let agent = agent(&brain)
        .schema(CommunicationSchema::one_shot())
        .build()
        .unwrap();
    let run = agent
        .start(RunStart::new(vec![Message::user("q")]).with_schema_state(None))
        .unwrap();
    let mut client = Client::new(run.events);
    assert_eq!(client.until_end().await, RunStatus::Completed);
    assert_eq!(run.handle.session_state(), "done");
    // The session is over: a second question is refused where the first left it.
    let again = agent
        .start(RunStart::new(vec![Message::user("more?")]).with_schema_state(Some("done".into())));
    assert_eq!(
        again.err().map(|error| error.to_string()).as_deref(),
        Some("in state 'done' nothing may be sent")
    );
    // A state the schema does not have (the session changed agents) starts from idle.
    let other = agent.start(
        RunStart::new(vec![Message::user("q")]).with_schema_state(Some("awaiting_x".into())),
    );
    assert!(other.is_ok());
}

#[tokio::test]
async fn a_run_that_fails_leaves_its_session_where_it_started() {
    let brain = Recording::new(json!({"turns": [
        [{"type": "text_delta", "text": "no"}, {"type": "error", "message": "boom"}]
    ]}));
    let agent = agent(&brain)
        .schema(CommunicationSchema::one_shot())
        .build()
        .unwrap();
    let run = agent
        .start(RunStart::new(vec![Message::user("q")]))
        .unwrap();
    let mut client = Client::new(run.events);
    assert_eq!(client.until_end().await, RunStatus::Failed);
    assert_eq!(run.handle.state(), "running");
    assert_eq!(run.handle.session_state(), "idle");
}
