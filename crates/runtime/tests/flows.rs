//! End-to-end runs through the orchestrator loop: a model correcting its own bad tool call,
//! really concurrent tools, a panicking tool, the step and time limits, a failing model, and a
//! run nobody reads.
#![allow(clippy::unwrap_used)]

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use agentwire_core::{ErrorInfo, Message, Part, RunStatus, ToolErrorKind};
use agentwire_runtime::RunStart;
use common::{Client, Recording, agent, answer, call, finish, part_types, tool};
use futures::FutureExt;
use serde_json::json;

fn write_file_tool(written: Arc<AtomicUsize>) -> common::FnTool {
    tool(
        "write_file",
        json!({"type": "object", "required": ["path", "content"], "additionalProperties": false,
               "properties": {"path": {"type": "string"}, "content": {"type": "string"}}}),
        move |_, _| {
            let written = Arc::clone(&written);
            async move {
                written.fetch_add(1, Ordering::SeqCst);
                Ok(json!({"status": "success", "message": "File written successfully."}))
            }
            .boxed()
        },
    )
}

fn tool_errors(message: &Message) -> Vec<&agentwire_core::ToolError> {
    message
        .parts
        .iter()
        .filter_map(|part| match part {
            Part::ToolError(error) => Some(error),
            _ => None,
        })
        .collect()
}

/// Self-correction: a call missing `path` is answered with a VALIDATION error that names it; the
/// model reads the error in its next request and corrects the call, which then runs.
#[tokio::test]
async fn a_validation_error_reaches_the_model_which_corrects_its_call() {
    let mut corrected = vec![
        json!({"type": "text_delta", "text": "My apologies, I missed a required parameter. I will correct it now."}),
    ];
    corrected.extend(call(
        "tc_789",
        "write_file",
        json!({"path": "/corrected.txt", "content": "This call should now be valid."}),
    ));
    let brain = Recording::new(json!({"turns": [
        finish(call("tc_456", "write_file", json!({"content": "This call is missing the path."})), "tool_calls"),
        finish(corrected, "tool_calls"),
        answer("I have successfully written the file to `/corrected.txt`."),
    ]}));
    let written = Arc::new(AtomicUsize::new(0));
    let agent = agent(&brain)
        .tool(write_file_tool(Arc::clone(&written)))
        .build()
        .unwrap();
    let run = agent
        .start(RunStart::new(vec![Message::user("Write a file")]))
        .unwrap();
    let mut client = Client::new(run.events);
    assert_eq!(client.until_end().await, RunStatus::Completed);
    client.check_agrees_with(&run.handle);
    assert_eq!(
        written.load(Ordering::SeqCst),
        1,
        "only the corrected call ran"
    );

    // The second model call saw the first call and its validation error, naming `path`.
    let requests = brain.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(
        requests
            .iter()
            .map(|request| request.step)
            .collect::<Vec<_>>(),
        [0, 1, 2]
    );
    let seen = requests[1].messages.last().unwrap();
    assert_eq!(seen.role, agentwire_core::Role::Assistant);
    let errors = tool_errors(seen);
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].tool_call_id, "tc_456");
    assert_eq!(errors[0].error_type, ToolErrorKind::Validation);
    assert!(
        errors[0].message.contains("path"),
        "the error names the missing field: {}",
        errors[0].message
    );
    assert_eq!(requests[1].system.as_deref(), Some("You are a test."));
    assert_eq!(requests[1].tools[0].name, "write_file");

    // One assistant message holds the three steps.
    let output = run.handle.output();
    assert_eq!(output.len(), 1);
    assert_eq!(
        part_types(&output[0]),
        [
            "step_start",
            "tool_call",
            "tool_error",
            "step_start",
            "text",
            "tool_call",
            "tool_result",
            "step_start",
            "text"
        ]
    );
    assert_eq!(run.handle.usage(), Some(agentwire_core::Usage::new(30, 15)));
    assert_eq!(output[0].metadata.usage, run.handle.usage());
    assert_eq!(run.handle.state(), "idle");
    // The run's conversation: the input, then the answer.
    assert_eq!(run.handle.messages().len(), 2);
}

/// Two calls in one step run at the same time: each waits for the other at a barrier, so run
/// one after the other they would never finish.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_of_one_step_run_concurrently() {
    let barrier = Arc::new(tokio::sync::Barrier::new(2));
    let meet = {
        let barrier = Arc::clone(&barrier);
        tool("meet", json!({"type": "object"}), move |args, _| {
            let barrier = Arc::clone(&barrier);
            async move {
                barrier.wait().await;
                Ok(json!({"met": args["who"]}))
            }
            .boxed()
        })
    };
    let mut calls = call("c1", "meet", json!({"who": "a"}));
    calls.extend(call("c2", "meet", json!({"who": "b"})));
    let brain =
        Recording::new(json!({"turns": [finish(calls, "tool_calls"), answer("Both met.")]}));
    let agent = agent(&brain).tool(meet).build().unwrap();
    let run = agent
        .start(RunStart::new(vec![Message::user("meet")]))
        .unwrap();
    let mut client = Client::new(run.events);
    assert_eq!(client.until_end().await, RunStatus::Completed);
    client.check_agrees_with(&run.handle);
    let types = part_types(&run.handle.output()[0]);
    assert_eq!(
        types,
        [
            "step_start",
            "tool_call",
            "tool_call",
            "tool_result",
            "tool_result",
            "step_start",
            "text"
        ]
    );
}

/// A tool that panics is a tool_error EXECUTION the model reads, and the run goes on.
#[tokio::test]
async fn a_panicking_tool_is_an_execution_error_and_the_run_goes_on() {
    let explode = tool("explode", json!({"type": "object"}), |_, _| {
        async { panic!("boom") }.boxed()
    });
    let brain = Recording::new(json!({"turns": [
        finish(call("c1", "explode", json!({})), "tool_calls"),
        answer("The tool crashed; sorry."),
    ]}));
    let agent = agent(&brain).tool(explode).build().unwrap();
    let run = agent
        .start(RunStart::new(vec![Message::user("go")]))
        .unwrap();
    let mut client = Client::new(run.events);
    assert_eq!(client.until_end().await, RunStatus::Completed);
    client.check_agrees_with(&run.handle);
    let requests = brain.requests();
    let errors = tool_errors(requests[1].messages.last().unwrap());
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].error_type, ToolErrorKind::Execution);
    assert!(errors[0].message.contains("boom"), "{}", errors[0].message);
}

/// A model that keeps calling tools is stopped after `max_steps` calls: the run is incomplete,
/// says why, and keeps what it did.
#[tokio::test]
async fn max_steps_ends_the_run_incomplete() {
    let count = Arc::new(AtomicUsize::new(0));
    let counter = {
        let count = Arc::clone(&count);
        tool("count", json!({"type": "object"}), move |_, _| {
            let n = count.fetch_add(1, Ordering::SeqCst) + 1;
            async move { Ok(json!(n)) }.boxed()
        })
    };
    // The last turn repeats: the model never stops calling.
    let brain =
        Recording::new(json!({"turns": [finish(call("c1", "count", json!({})), "tool_calls")]}));
    let agent = agent(&brain).tool(counter).max_steps(3).build().unwrap();
    let run = agent
        .start(RunStart::new(vec![Message::user("count")]))
        .unwrap();
    let mut client = Client::new(run.events);
    assert_eq!(client.until_end().await, RunStatus::Incomplete);
    client.check_agrees_with(&run.handle);
    assert_eq!(brain.requests().len(), 3);
    assert_eq!(count.load(Ordering::SeqCst), 3, "the last step's call ran");
    let error = run.handle.error().unwrap();
    assert_eq!(error.code, "max_steps");
    assert_eq!(
        error.message,
        "the run stopped after 3 model calls (max_steps) without a final answer"
    );
    assert_eq!(client.accumulator.errors(), [error]);
    assert_eq!(
        client.accumulator.usage().map(|usage| usage.total_tokens),
        Some(45)
    );
    let types = part_types(&run.handle.output()[0]);
    assert_eq!(types.iter().filter(|t| **t == "tool_result").count(), 3);
    assert_eq!(run.handle.state(), "running", "the agent never answered");
}

/// The model fails mid-answer: the run fails with `provider_error`, and the text that streamed
/// is kept in a complete message.
#[tokio::test]
async fn a_model_failure_fails_the_run_and_keeps_what_streamed() {
    let brain = Recording::new(json!({"turns": [[
        {"type": "text_delta", "text": "Let me look that "},
        {"type": "text_delta", "text": "up"},
        {"type": "tool_call_start", "id": "c1", "name": "search"},
        {"type": "tool_call_delta", "id": "c1", "args": "{\"q\": \"x"},
        {"type": "error", "message": "the model provider answered HTTP 500"}
    ]]}));
    let agent = agent(&brain).build().unwrap();
    let run = agent
        .start(RunStart::new(vec![Message::user("Look it up")]))
        .unwrap();
    let mut client = Client::new(run.events);
    assert_eq!(client.until_end().await, RunStatus::Failed);
    client.check_agrees_with(&run.handle);
    let error = run.handle.error().unwrap();
    assert_eq!(error.code, "provider_error");
    assert!(error.message.contains("HTTP 500"), "{}", error.message);
    let message = &run.handle.output()[0];
    assert_eq!(message.content(), "Let me look that up");
    // The cut-off call is kept as it streamed, and answered so the history stays valid.
    assert_eq!(
        part_types(message),
        ["step_start", "text", "tool_call", "tool_error"]
    );
    assert_eq!(
        tool_errors(message)[0].message,
        "The call to tool 'search' was not completed: the run failed."
    );
    assert_eq!(client.accumulator.usage(), None);
}

/// A stream that ends without a finish is a provider error too.
#[tokio::test]
async fn a_stream_without_a_finish_fails_the_run() {
    let brain = Recording::new(json!({"turns": [[{"type": "text_delta", "text": "Hi"}]]}));
    let agent = agent(&brain).build().unwrap();
    let run = agent
        .start(RunStart::new(vec![Message::user("Hi")]))
        .unwrap();
    let mut client = Client::new(run.events);
    assert_eq!(client.until_end().await, RunStatus::Failed);
    assert_eq!(
        run.handle.error(),
        Some(ErrorInfo::new(
            "provider_error",
            "the model's stream ended without a finish"
        ))
    );
}

/// A run with `max_duration` stops when its working time is up.
#[tokio::test(start_paused = true)]
async fn max_duration_ends_the_run_incomplete() {
    let brain = Recording::paced(
        json!({"turns": [[{"type": "text_delta", "text": "a"}, {"type": "text_delta", "text": "b"},
                         {"type": "text_delta", "text": "c"}, {"type": "finish", "reason": "stop"}]]}),
        1.0,
    );
    let agent = agent(&brain)
        .max_duration(Duration::from_millis(1500))
        .build()
        .unwrap();
    let run = agent
        .start(RunStart::new(vec![Message::user("slowly")]))
        .unwrap();
    let mut client = Client::new(run.events);
    assert_eq!(client.until_end().await, RunStatus::Incomplete);
    client.check_agrees_with(&run.handle);
    assert_eq!(run.handle.error().unwrap().code, "max_duration");
    assert_eq!(run.handle.output()[0].content(), "ab");
}

/// `RunLimits` are ceilings: the tighter of the agent's `max_duration` and the run's wins.
#[tokio::test(start_paused = true)]
async fn run_limits_cap_the_agents_max_duration() {
    let script = json!({"turns": [[{"type": "text_delta", "text": "a"}, {"type": "text_delta", "text": "b"},
                                   {"type": "text_delta", "text": "c"}, {"type": "finish", "reason": "stop"}]]});
    let cases = [
        (None, Some(1500), "ab", Some("1500 ms")),
        (Some(2500), Some(1500), "ab", Some("1500 ms")),
        (Some(1500), Some(2500), "ab", Some("1500 ms")),
        (None, None, "abc", None),
    ];
    for (own, ceiling, text, limit) in cases {
        let brain = Recording::paced(script.clone(), 1.0);
        let mut builder = agent(&brain);
        if let Some(own) = own {
            builder = builder.max_duration(Duration::from_millis(own));
        }
        let limits = agentwire_runtime::RunLimits {
            max_duration: ceiling.map(Duration::from_millis),
            max_tool_output_bytes: None,
            max_state_bytes: None,
        };
        let run = builder
            .build()
            .unwrap()
            .start(RunStart::new(vec![Message::user("slowly")]).with_limits(limits))
            .unwrap();
        let mut client = Client::new(run.events);
        let status = client.until_end().await;
        client.check_agrees_with(&run.handle);
        assert_eq!(
            run.handle.output()[0].content(),
            text,
            "{own:?} {ceiling:?}"
        );
        match limit {
            Some(limit) => {
                assert_eq!(status, RunStatus::Incomplete);
                let error = run.handle.error().unwrap();
                assert_eq!(error.code, "max_duration");
                assert!(error.message.contains(limit), "{}", error.message);
            }
            None => assert_eq!(status, RunStatus::Completed),
        }
    }
}

/// An answer cut off at the token limit is not a complete answer.
#[tokio::test]
async fn a_truncated_answer_is_incomplete() {
    let brain = Recording::new(
        json!({"turns": [finish(vec![json!({"type": "text_delta", "text": "The answer is"})], "length")]}),
    );
    let agent = agent(&brain).build().unwrap();
    let run = agent
        .start(RunStart::new(vec![Message::user("?")]))
        .unwrap();
    let mut client = Client::new(run.events);
    assert_eq!(client.until_end().await, RunStatus::Incomplete);
    assert_eq!(run.handle.error().unwrap().code, "max_tokens");
}

/// The agent's answer passes its schema too: a chat answer must have text.
#[tokio::test]
async fn an_answer_the_schema_refuses_fails_the_run() {
    let brain = Recording::new(json!({"turns": [[{"type": "finish", "reason": "stop"}]]}));
    let agent = agent(&brain).build().unwrap();
    let run = agent
        .start(RunStart::new(vec![Message::user("?")]))
        .unwrap();
    let mut client = Client::new(run.events);
    assert_eq!(client.until_end().await, RunStatus::Failed);
    client.check_agrees_with(&run.handle);
    let error = run.handle.error().unwrap();
    assert_eq!(error.code, "schema_violation");
    assert_eq!(
        error.message,
        "the agent's message breaks its communication schema: in state 'running' agent_message must include text/plain"
    );
    assert_eq!(run.handle.state(), "running");
}

/// Nobody reads the events for a while: the run finishes anyway, and every event is still
/// there, in order, when the reader comes.
#[tokio::test]
async fn a_run_goes_on_while_nobody_reads() {
    let brain = Recording::new(json!({"turns": [
        finish(call("c1", "echo", json!({"n": 1})), "tool_calls"),
        answer("done"),
    ]}));
    let echo = tool("echo", json!({"type": "object"}), |args, _| {
        async move { Ok(args) }.boxed()
    });
    let agent = agent(&brain).tool(echo).build().unwrap();
    let run = agent
        .start(RunStart::new(vec![Message::user("go")]))
        .unwrap();
    assert_eq!(run.handle.settled().await, RunStatus::Completed);
    let mut client = Client::new(run.events);
    assert_eq!(client.until_end().await, RunStatus::Completed);
    client.check_agrees_with(&run.handle);
}

/// A dropped reader does not stop or hang the run.
#[tokio::test]
async fn a_dropped_reader_does_not_stop_the_run() {
    let brain = Recording::new(json!({"turns": [answer("still here")]}));
    let agent = agent(&brain).build().unwrap();
    let run = agent
        .start(RunStart::new(vec![Message::user("go")]))
        .unwrap();
    drop(run.events);
    let status = tokio::time::timeout(Duration::from_secs(10), run.handle.settled()).await;
    assert_eq!(status.unwrap(), RunStatus::Completed);
    assert_eq!(run.handle.output()[0].content(), "still here");
}

/// Provider data the history needs (a thinking signature) is kept as a `data` part where it
/// came, and is not content the schema checks.
#[tokio::test]
async fn provider_data_is_kept_in_place() {
    let brain = Recording::new(json!({"turns": [[
        {"type": "reasoning_delta", "text": "Think."},
        {"type": "data", "name": "anthropic.thinking_signature", "data": {"signature": "sig"}},
        {"type": "text_delta", "text": "Answer."},
        {"type": "finish", "reason": "stop"}
    ]]}));
    let agent = agent(&brain).build().unwrap();
    let run = agent
        .start(RunStart::new(vec![Message::user("?")]))
        .unwrap();
    let mut client = Client::new(run.events);
    assert_eq!(client.until_end().await, RunStatus::Completed);
    client.check_agrees_with(&run.handle);
    let message = &run.handle.output()[0];
    assert_eq!(
        part_types(message),
        ["step_start", "reasoning", "data", "text"]
    );
    assert_eq!(run.handle.state(), "idle");
}

/// A long-running agent keeps the word after its messages, so each step's text with the
/// results of its tools is a message of its own (a report of its progress); under the default
/// schema, where a message hands the word to the client, the same steps are one answer.
#[tokio::test]
async fn a_long_running_agent_reports_each_step_as_a_message() {
    use agentwire_core::communication::CommunicationSchema;
    let script = || {
        let mut working = vec![json!({"type": "text_delta", "text": "Checking the first."})];
        working.extend(call("c1", "check", json!({})));
        let mut silent = call("c2", "check", json!({}));
        silent.insert(0, json!({"type": "text_delta", "text": "Now the second."}));
        json!({"turns": [
            finish(working, "tool_calls"),
            finish(silent, "tool_calls"),
            // A step with no text is no report: it stays in the message that follows.
            finish(call("c3", "check", json!({})), "tool_calls"),
            answer("All checked."),
        ]})
    };
    let checker = || {
        tool("check", json!({"type": "object"}), |_, _| {
            async { Ok(json!("fine")) }.boxed()
        })
    };
    let messages = |schema: Option<CommunicationSchema>| async move {
        let brain = Recording::new(script());
        let mut builder = agent(&brain).tool(checker());
        if let Some(schema) = schema {
            builder = builder.schema(schema);
        }
        let run = builder
            .build()
            .unwrap()
            .start(RunStart::new(vec![Message::user("check everything")]))
            .unwrap();
        let mut client = Client::new(run.events);
        assert_eq!(client.until_end().await, RunStatus::Completed);
        client.check_agrees_with(&run.handle);
        (run.handle.output(), run.handle.state().to_string())
    };

    let (reports, state) = messages(Some(CommunicationSchema::long_running())).await;
    let texts: Vec<String> = reports.iter().map(Message::content).collect();
    assert_eq!(
        texts,
        ["Checking the first.", "Now the second.", "All checked."]
    );
    assert_eq!(
        part_types(&reports[0]),
        ["step_start", "text", "tool_call", "tool_result"]
    );
    assert_eq!(
        part_types(&reports[2]),
        [
            "step_start",
            "tool_call",
            "tool_result",
            "step_start",
            "text"
        ]
    );
    assert_eq!(state, "running");

    let (answer, state) = messages(None).await;
    assert_eq!(answer.len(), 1);
    assert_eq!(
        answer[0].content(),
        "Checking the first.\nNow the second.\nAll checked."
    );
    assert_eq!(state, "idle");
}
