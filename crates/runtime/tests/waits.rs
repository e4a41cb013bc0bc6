//! Runs that wait for the client: approvals granted and denied, client tools, all of them in
//! one step, and input the schema refuses.
#![allow(clippy::unwrap_used)]

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use agentwire_core::communication::CommunicationSchema;
use agentwire_core::{Awaiting, Message, Part, Role, RunStatus, ToolErrorKind, ToolSpec};
use agentwire_runtime::{AgentError, Checkpoint, InputError, RunResume, RunStart, StartError};
use common::{Client, Recording, agent, answer, approval, call, finish, output, part_types, tool};
use futures::FutureExt;
use serde_json::{Value, json};

/// A `delete_file` tool that counts its calls.
fn delete_file(calls: Arc<AtomicUsize>) -> common::FnTool {
    tool("delete_file", json!({"type": "object"}), move |args, _| {
        calls.fetch_add(1, Ordering::SeqCst);
        async move { Ok(json!({"deleted": args["path"]})) }.boxed()
    })
}

fn deleting_agent(brain: &Recording, calls: Arc<AtomicUsize>) -> agentwire_runtime::Agent {
    agent(brain)
        .tool(delete_file(calls))
        .approval(["delete_file"])
        .build()
        .unwrap()
}

fn delete_script() -> Value {
    let mut turn = vec![json!({"type": "text_delta", "text": "I will delete old.log."})];
    turn.extend(call("call_1", "delete_file", json!({"path": "old.log"})));
    json!({"turns": [finish(turn, "tool_calls"), answer("Done.")]})
}

#[tokio::test]
async fn an_approved_call_runs_and_the_run_goes_on_in_a_new_message() {
    let brain = Recording::new(delete_script());
    let calls = Arc::new(AtomicUsize::new(0));
    let agent = deleting_agent(&brain, Arc::clone(&calls));
    let run = agent
        .start(RunStart::new(vec![Message::user("Delete old.log")]))
        .unwrap();
    let mut client = Client::new(run.events);
    assert_eq!(
        client.until_settled().await,
        RunStatus::Awaiting(Awaiting::Approval)
    );
    assert_eq!(run.handle.status(), RunStatus::Awaiting(Awaiting::Approval));
    assert_eq!(run.handle.state(), "awaiting_approval");
    assert_eq!(
        calls.load(Ordering::SeqCst),
        0,
        "nothing ran before approval"
    );
    let first = &run.handle.output()[0];
    let Some(Part::ApprovalRequest(request)) = first.parts.last() else {
        panic!("the message ends with the request: {first:?}");
    };
    assert_eq!(request.approval_id, "apr_1");
    assert_eq!(request.tool_call_id, "call_1");

    run.handle.input(approval("apr_1", true, None)).unwrap();
    assert_eq!(client.until_end().await, RunStatus::Completed);
    client.check_agrees_with(&run.handle);
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert_eq!(run.handle.state(), "idle");

    let output = run.handle.output();
    assert_eq!(output.len(), 2, "the run went on in a new message");
    assert_eq!(
        part_types(&output[1]),
        ["approval_response", "tool_result", "step_start", "text"]
    );
    // The model's second call saw the call, the request and the result.
    let seen = &brain.requests()[1].messages;
    assert_eq!(
        seen.len(),
        3,
        "question, first message, second message so far"
    );
    assert!(
        matches!(&seen[2].parts[1], Part::ToolResult(result) if result.tool_call_id == "call_1")
    );
    // The conversation for the session: the question and both messages.
    let messages = run.handle.messages();
    assert_eq!(
        messages.iter().map(|m| m.role).collect::<Vec<_>>(),
        [Role::User, Role::Assistant, Role::Assistant]
    );
}

#[tokio::test]
async fn a_denied_call_does_not_run_and_the_model_is_told_why() {
    let brain = Recording::new(delete_script());
    let calls = Arc::new(AtomicUsize::new(0));
    let agent = deleting_agent(&brain, Arc::clone(&calls));
    let run = agent
        .start(RunStart::new(vec![Message::user("Delete old.log")]))
        .unwrap();
    let mut client = Client::new(run.events);
    client.until_settled().await;
    run.handle
        .input(approval("apr_1", false, Some("keep the logs")))
        .unwrap();
    assert_eq!(client.until_end().await, RunStatus::Completed);
    client.check_agrees_with(&run.handle);
    assert_eq!(calls.load(Ordering::SeqCst), 0, "a denied call never runs");

    let seen = brain.requests()[1].messages.last().unwrap().clone();
    assert_eq!(
        part_types(&seen),
        ["approval_response", "tool_error", "step_start"]
    );
    let Part::ToolError(error) = &seen.parts[1] else {
        unreachable!()
    };
    assert_eq!(error.tool_call_id, "call_1");
    assert_eq!(error.error_type, ToolErrorKind::Execution);
    assert_eq!(
        error.message,
        "The user denied this call to tool 'delete_file', so it did not run. Their reason: keep the logs"
    );
}

/// A call that needs approval but cannot run is not put to a person: the model hears of its
/// bad arguments at once, and asks again properly.
#[tokio::test]
async fn an_invalid_call_is_refused_before_anyone_is_asked_to_approve_it() {
    let mut bad = vec![json!({"type": "text_delta", "text": "Deleting."})];
    bad.extend(call("call_1", "delete_file", json!({"file": "old.log"})));
    let mut good = Vec::new();
    good.extend(call("call_2", "delete_file", json!({"path": "old.log"})));
    let brain = Recording::new(json!({"turns": [
        finish(bad, "tool_calls"),
        finish(good, "tool_calls"),
        answer("Done.")
    ]}));
    let calls = Arc::new(AtomicUsize::new(0));
    let strict = tool(
        "delete_file",
        json!({"type": "object", "required": ["path"], "properties": {"path": {"type": "string"}}}),
        {
            let calls = Arc::clone(&calls);
            move |_, _| {
                calls.fetch_add(1, Ordering::SeqCst);
                async move { Ok(json!({"deleted": true})) }.boxed()
            }
        },
    );
    let agent = agent(&brain)
        .tool(strict)
        .approval(["delete_file"])
        .build()
        .unwrap();
    let run = agent
        .start(RunStart::new(vec![Message::user("Delete old.log")]))
        .unwrap();
    let mut client = Client::new(run.events);
    assert_eq!(
        client.until_settled().await,
        RunStatus::Awaiting(Awaiting::Approval)
    );
    let first = &run.handle.output()[0];
    assert_eq!(
        part_types(first),
        [
            "step_start",
            "text",
            "tool_call",
            "tool_error",
            "step_start",
            "tool_call",
            "approval_request"
        ]
    );
    let Some(Part::ToolError(error)) = first.parts.get(3) else {
        panic!("{first:?}");
    };
    assert_eq!(error.error_type, ToolErrorKind::Validation);
    assert!(error.message.contains("'path'"), "{}", error.message);
    let Some(Part::ApprovalRequest(request)) = first.parts.last() else {
        panic!("{first:?}");
    };
    assert_eq!(request.tool_call_id, "call_2");
    assert_eq!(calls.load(Ordering::SeqCst), 0);

    run.handle
        .input(approval(request.approval_id.as_str(), true, None))
        .unwrap();
    assert_eq!(client.until_end().await, RunStatus::Completed);
    client.check_agrees_with(&run.handle);
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_client_tool_waits_for_its_output() {
    let brain = Recording::new(json!({"turns": [
        finish(call("call_1", "get_location", json!({"precision": "city"})), "tool_calls"),
        answer("You are in Paris."),
    ]}));
    let agent = agent(&brain).build().unwrap();
    let location = ToolSpec::new(
        "get_location",
        "Where the user is",
        json!({"type": "object"}),
    );
    let run = agent
        .start(RunStart::new(vec![Message::user("Where am I?")]).with_client_tools(vec![location]))
        .unwrap();
    let mut client = Client::new(run.events);
    assert_eq!(
        client.until_settled().await,
        RunStatus::Awaiting(Awaiting::FunctionOutput)
    );
    assert_eq!(run.handle.state(), "awaiting_function_output");

    // An output for a call the run does not wait for changes nothing.
    let wrong = run.handle.input(output("call_9", json!("?")));
    assert!(
        matches!(&wrong, Err(InputError::UnknownToolCall { tool_call_id }) if tool_call_id == "call_9"),
        "{wrong:?}"
    );
    assert_eq!(run.handle.state(), "awaiting_function_output");

    run.handle
        .input(output("call_1", json!({"city": "Paris"})))
        .unwrap();
    assert_eq!(client.until_end().await, RunStatus::Completed);
    client.check_agrees_with(&run.handle);
    let second = &run.handle.output()[1];
    let Part::ToolResult(result) = &second.parts[0] else {
        panic!("the output opens the next message: {second:?}");
    };
    assert_eq!(result.tool_name.as_deref(), Some("get_location"));
    assert_eq!(result.result, json!({"city": "Paris"}));
    assert_eq!(
        brain.requests()[1].messages.last().unwrap().parts[0],
        second.parts[0]
    );
}

/// One step calls the agent's tool, a tool that needs approval and a client tool: the agent's
/// tool runs at once, then the run waits for the approval, then for the client's output.
#[tokio::test]
async fn mixed_calls_in_one_step() {
    let mut calls = call("c1", "echo", json!({"n": 1}));
    calls.extend(call("c2", "delete_file", json!({"path": "old.log"})));
    calls.extend(call("c3", "get_location", json!({})));
    let brain =
        Recording::new(json!({"turns": [finish(calls, "tool_calls"), answer("All done.")]}));
    let deleted = Arc::new(AtomicUsize::new(0));
    let echo = tool("echo", json!({"type": "object"}), |args, _| {
        async move { Ok(args) }.boxed()
    });
    let agent = agent(&brain)
        .tool(echo)
        .tool(delete_file(Arc::clone(&deleted)))
        .approval(["delete_file"])
        .build()
        .unwrap();
    let location = ToolSpec::new(
        "get_location",
        "Where the user is",
        json!({"type": "object"}),
    );
    let run = agent
        .start(RunStart::new(vec![Message::user("go")]).with_client_tools(vec![location]))
        .unwrap();
    let mut client = Client::new(run.events);
    assert_eq!(
        client.until_settled().await,
        RunStatus::Awaiting(Awaiting::Approval)
    );
    assert_eq!(
        part_types(&run.handle.output()[0]),
        [
            "step_start",
            "tool_call",
            "tool_call",
            "tool_call",
            "approval_request",
            "tool_result"
        ]
    );

    // The client's output comes too early: the run still waits for the approval.
    let early = run.handle.input(output("c3", json!({"city": "Paris"})));
    assert_eq!(
        early.unwrap_err().to_string(),
        "in state 'awaiting_approval' the client may not send function_output; allowed: client approval_response, client cancel"
    );

    run.handle.input(approval("apr_1", true, None)).unwrap();
    assert_eq!(
        client.until_settled().await,
        RunStatus::Awaiting(Awaiting::FunctionOutput)
    );
    assert_eq!(run.handle.state(), "awaiting_function_output");
    assert_eq!(
        deleted.load(Ordering::SeqCst),
        0,
        "it runs once all is answered"
    );

    run.handle
        .input(output("c3", json!({"city": "Paris"})))
        .unwrap();
    assert_eq!(client.until_end().await, RunStatus::Completed);
    client.check_agrees_with(&run.handle);
    assert_eq!(deleted.load(Ordering::SeqCst), 1);
    assert_eq!(
        part_types(&run.handle.output()[1]),
        [
            "approval_response",
            "tool_result",
            "tool_result",
            "step_start",
            "text"
        ]
    );
}

/// One message may answer everything at once, as the AI SDK sends it.
#[tokio::test]
async fn one_message_may_answer_approvals_and_outputs_together() {
    let mut calls = call("c2", "delete_file", json!({"path": "old.log"}));
    calls.extend(call("c3", "get_location", json!({})));
    let brain =
        Recording::new(json!({"turns": [finish(calls, "tool_calls"), answer("All done.")]}));
    let agent = deleting_agent(&brain, Arc::default());
    let location = ToolSpec::new(
        "get_location",
        "Where the user is",
        json!({"type": "object"}),
    );
    let run = agent
        .start(RunStart::new(vec![Message::user("go")]).with_client_tools(vec![location]))
        .unwrap();
    let mut client = Client::new(run.events);
    client.until_settled().await;
    let mut both = approval("apr_1", false, None);
    both.parts.extend(output("c3", json!("Paris")).parts);
    run.handle.input(both).unwrap();
    assert_eq!(client.until_end().await, RunStatus::Completed);
    client.check_agrees_with(&run.handle);
    assert_eq!(
        part_types(&run.handle.output()[1]),
        [
            "approval_response",
            "tool_error",
            "tool_result",
            "step_start",
            "text"
        ]
    );
}

#[tokio::test]
async fn input_in_the_wrong_state_is_refused_naming_the_state() {
    let brain = Recording::new(delete_script());
    let agent = deleting_agent(&brain, Arc::default());
    let run = agent
        .start(RunStart::new(vec![Message::user("Delete old.log")]))
        .unwrap();
    let mut client = Client::new(run.events);
    client.until_settled().await;

    let refused = run.handle.input(Message::user("Never mind"));
    assert_eq!(
        refused.unwrap_err().to_string(),
        "in state 'awaiting_approval' the client may not send user_message; allowed: client approval_response, client cancel"
    );
    let unknown = run.handle.input(approval("apr_7", true, None));
    assert_eq!(
        unknown.unwrap_err().to_string(),
        "the run is not waiting for an answer to approval request apr_7"
    );
    let role = run.handle.input(Message::assistant("I approve"));
    assert!(matches!(role, Err(InputError::Role { role: "assistant" })));
    assert_eq!(
        run.handle.state(),
        "awaiting_approval",
        "refusals change nothing"
    );
    assert_eq!(run.handle.status(), RunStatus::Awaiting(Awaiting::Approval));

    run.handle.input(approval("apr_1", true, None)).unwrap();
    let again = run.handle.input(approval("apr_1", true, None));
    assert!(again.is_err(), "an approval is answered once: {again:?}");
    assert_eq!(client.until_end().await, RunStatus::Completed);
    let finished = run.handle.input(Message::user("And now?"));
    assert_eq!(
        finished.unwrap_err().to_string(),
        "the run is completed; it takes no more input"
    );
}

#[tokio::test]
async fn a_new_question_for_a_running_run_is_refused() {
    // A schema that lets the client speak while the agent works; a run still answers one turn.
    let schema = CommunicationSchema::from_json(
        r#"{
        "idle": [{"party": "client", "type": "user_message", "schema": [{"contentType": "text/plain", "required": true}], "nextState": "running"}],
        "running": [
            {"party": "server", "type": "agent_message", "schema": [{"contentType": "text/plain", "required": true}], "nextState": "idle"},
            {"party": "client", "type": "user_message", "schema": [{"contentType": "text/plain", "required": true}], "nextState": "running"}
        ]
    }"#,
    )
    .unwrap();
    let brain = Recording::paced(json!({"turns": [answer("slow answer")]}), 1.0);
    let agent = agent(&brain).schema(schema).build().unwrap();
    let run = agent
        .start(RunStart::new(vec![Message::user("hi")]))
        .unwrap();
    assert!(matches!(
        run.handle.input(Message::user("more")),
        Err(InputError::NewTurn)
    ));
    // This schema has no cancel: the host stops the run.
    run.handle.abort();
}

#[tokio::test]
async fn a_system_message_in_the_input_reaches_the_model_as_one() {
    let brain = Recording::new(json!({"turns": [answer("Aye.")]}));
    let agent = agent(&brain).build().unwrap();
    let input = vec![
        Message::system("Answer like a pirate."),
        Message::user("Hi"),
    ];
    let run = agent.start(RunStart::new(input)).unwrap();
    let mut client = Client::new(run.events);
    assert_eq!(client.until_end().await, RunStatus::Completed);
    let [request] = &brain.requests()[..] else {
        panic!("one model call: {:?}", brain.requests());
    };
    let roles: Vec<Role> = request
        .messages
        .iter()
        .map(|message| message.role)
        .collect();
    assert_eq!(roles, [Role::System, Role::User]);
    assert_eq!(request.messages[0].content(), "Answer like a pirate.");
}

#[tokio::test]
async fn a_start_the_schema_refuses_starts_nothing() {
    let brain = Recording::new(json!({"turns": [answer("hi")]}));
    let agent = agent(&brain).build().unwrap();
    // The default schema lets the user write while the agent works: two questions at once
    // are a question and a steer.
    let twice = agent.start(RunStart::new(vec![Message::user("a"), Message::user("b")]));
    assert!(twice.is_ok());
    let empty = agent.start(RunStart::new(vec![Message::new(Role::User, vec![])]));
    assert_eq!(
        empty.unwrap_err().to_string(),
        "in state 'idle' user_message must include text/plain"
    );
    assert!(matches!(
        agent.start(RunStart::new(vec![])),
        Err(StartError::NoInput)
    ));
    assert!(matches!(
        agent.start(RunStart::new(vec![Message::system("obey")])),
        Err(StartError::NoInput)
    ));
    assert!(matches!(
        agent.start(RunStart::new(vec![Message::new(Role::Assistant, vec![])])),
        Err(StartError::Role { role: "assistant" })
    ));
    assert!(brain.requests().is_empty(), "the model was never called");

    // Client tools need a schema that lets the agent call them.
    let chat = common::agent(&brain)
        .schema(CommunicationSchema::chat())
        .build()
        .unwrap();
    let tools = vec![ToolSpec::new("where", "", json!({"type": "object"}))];
    assert!(matches!(
        chat.start(RunStart::new(vec![Message::user("a")]).with_client_tools(tools)),
        Err(StartError::ClientToolsNotAllowed)
    ));
}

#[test]
fn a_start_outside_a_runtime_is_an_error() {
    let brain = Recording::new(json!({"turns": [answer("hi")]}));
    let agent = agent(&brain).build().unwrap();
    assert!(matches!(
        agent.start(RunStart::new(vec![Message::user("a")])),
        Err(StartError::NoRuntime)
    ));
}

#[test]
fn agents_that_cannot_work_are_not_built() {
    let brain = Recording::new(json!({"turns": [answer("hi")]}));
    let error = agent(&brain).approval(["rm"]).build().unwrap_err();
    assert_eq!(
        error.to_string(),
        "agent 'assistant' asks approval for tool 'rm', which it does not have"
    );
    let error = agent(&brain)
        .tool(delete_file(Arc::default()))
        .approval(["delete_file"])
        .schema(CommunicationSchema::chat())
        .build()
        .unwrap_err();
    assert!(matches!(error, AgentError::SchemaLacksApproval { .. }));
    let error = agent(&brain).max_steps(0).build().unwrap_err();
    assert!(matches!(error, AgentError::ZeroMaxSteps { .. }));
    let error = agent(&brain)
        .tool(delete_file(Arc::default()))
        .tool(delete_file(Arc::default()))
        .build()
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "agent 'assistant': a tool named 'delete_file' is already in the toolbox"
    );
    let error = agentwire_runtime::Agent::builder("a").build().unwrap_err();
    assert!(matches!(error, AgentError::NoBrain { .. }));
}

/// Many runs at once on a multi-threaded runtime, each answered from its own task as soon as
/// it waits: every one completes, and its events rebuild its messages.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_runs_answered_concurrently() {
    let brain = Recording::new(delete_script());
    let calls = Arc::new(AtomicUsize::new(0));
    let agent = deleting_agent(&brain, Arc::clone(&calls));
    let mut tasks = Vec::new();
    for n in 0..50 {
        let agent = agent.clone();
        tasks.push(tokio::spawn(async move {
            let run = agent
                .start(RunStart::new(vec![Message::user(format!(
                    "Delete {n}.log"
                ))]))
                .unwrap();
            let handle = run.handle.clone();
            let answer = tokio::spawn(async move {
                assert_eq!(
                    handle.settled().await,
                    RunStatus::Awaiting(Awaiting::Approval)
                );
                let Some(Part::ApprovalRequest(request)) = handle.output()[0].parts.last().cloned()
                else {
                    panic!("the first message asks for approval");
                };
                handle
                    .input(approval(request.approval_id.as_str(), n % 2 == 0, None))
                    .unwrap();
            });
            let mut client = Client::new(run.events);
            client.until_settled().await;
            assert_eq!(client.until_end().await, RunStatus::Completed);
            answer.await.unwrap();
            client.check_agrees_with(&run.handle);
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    assert_eq!(calls.load(Ordering::SeqCst), 25, "the approved half ran");
}

/// A waiting run written down goes on in another "process" from its checkpoint: same calls,
/// the answer given there, its events numbered on from where the first left off.
#[tokio::test]
async fn a_checkpointed_run_goes_on_where_it_waited() {
    let brain = Recording::new(delete_script());
    let calls = Arc::new(AtomicUsize::new(0));
    let agent = deleting_agent(&brain, Arc::clone(&calls));
    let run = agent
        .start(RunStart::new(vec![Message::user("Delete old.log")]).with_session("ses_1"))
        .unwrap();
    let mut first = Client::new(run.events);
    first.until_settled().await;
    let checkpoint = run
        .handle
        .checkpoint()
        .expect("a waiting run has a checkpoint");
    let text = serde_json::to_string(&checkpoint).unwrap();
    let checkpoint: Checkpoint = serde_json::from_str(&text).unwrap();
    let last_seq = first.seen.last().unwrap().seq;

    let conversation = run.handle.messages()[..1].to_vec();
    let resumed = agent
        .resume(RunResume {
            run_id: run.handle.id().clone(),
            session_id: Some("ses_1".into()),
            conversation,
            checkpoint,
            next_seq: last_seq + 1,
            slots: None,
            telemetry: None,
            agents: None,
            shared_state: serde_json::Value::Null,
        })
        .unwrap();
    assert_eq!(
        resumed.handle.status(),
        RunStatus::Awaiting(Awaiting::Approval)
    );
    assert_eq!(resumed.handle.state(), "awaiting_approval");
    assert_eq!(resumed.handle.output(), run.handle.output());
    // An answer the run does not wait for is refused there as it was here.
    assert!(matches!(
        resumed.handle.input(approval("apr_9", true, None)),
        Err(InputError::UnknownApproval { .. })
    ));

    // The host stores what it is given at once.
    resumed.handle.stored_through(u64::MAX);
    resumed.handle.input(approval("apr_1", true, None)).unwrap();
    let mut second = Client::new(resumed.events);
    assert_eq!(second.until_end().await, RunStatus::Completed);
    assert_eq!(
        second.seen[0].seq,
        last_seq + 1,
        "numbered on: {:?}",
        second.seen[0]
    );
    assert_eq!(
        calls.load(Ordering::SeqCst),
        1,
        "the approved call ran once"
    );
    let output = resumed.handle.output();
    assert_eq!(output.len(), 2);
    assert_eq!(
        part_types(&output[1]),
        ["approval_response", "tool_result", "step_start", "text"]
    );
    // The model's second call saw the question, the first message and the result.
    let seen = &brain.requests()[1].messages;
    assert_eq!(seen.len(), 3);
    assert_eq!(seen[1], output[0]);
    assert_eq!(resumed.handle.messages().len(), 3);
    assert!(resumed.handle.checkpoint().is_none(), "it no longer waits");
}

/// A checkpointed run canceled before it is answered closes its calls as a run canceled in its
/// wait does.
#[tokio::test]
async fn a_checkpointed_run_can_be_canceled() {
    let brain = Recording::new(delete_script());
    let calls = Arc::new(AtomicUsize::new(0));
    let agent = deleting_agent(&brain, Arc::clone(&calls));
    let run = agent
        .start(RunStart::new(vec![Message::user("Delete old.log")]))
        .unwrap();
    let mut first = Client::new(run.events);
    first.until_settled().await;
    let resumed = agent
        .resume(RunResume {
            run_id: run.handle.id().clone(),
            session_id: None,
            conversation: run.handle.messages()[..1].to_vec(),
            checkpoint: run.handle.checkpoint().unwrap(),
            next_seq: first.seen.last().unwrap().seq + 1,
            slots: None,
            telemetry: None,
            agents: None,
            shared_state: serde_json::Value::Null,
        })
        .unwrap();
    resumed
        .handle
        .cancel()
        .expect("the schema allows the client's cancel");
    let mut second = Client::new(resumed.events);
    assert_eq!(second.until_end().await, RunStatus::Canceled);
    assert_eq!(calls.load(Ordering::SeqCst), 0);
    let last = resumed.handle.output().pop().unwrap();
    assert_eq!(part_types(&last), ["tool_error"]);
}

/// A run whose host stores its events runs an allowed call only once the host has stored that
/// the run went on: a copy taken up from its checkpoint after a crash then cannot run it again.
#[tokio::test]
async fn with_stored_events_an_allowed_call_waits_until_the_run_going_on_is_stored() {
    let brain = Recording::new(delete_script());
    let calls = Arc::new(AtomicUsize::new(0));
    let agent = deleting_agent(&brain, Arc::clone(&calls));
    let run = agent
        .start(RunStart::new(vec![Message::user("Delete old.log")]).with_stored_events())
        .unwrap();
    let mut client = Client::new(run.events);
    client.until_settled().await;
    run.handle.input(approval("apr_1", true, None)).unwrap();
    // The run reports it goes on, then waits for that to be stored.
    let going_on = tokio::time::timeout(std::time::Duration::from_secs(5), client.events.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(going_on.name(), "run_status");
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    assert_eq!(calls.load(Ordering::SeqCst), 0, "not before it is stored");
    run.handle.stored_through(going_on.seq - 1);
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    assert_eq!(calls.load(Ordering::SeqCst), 0, "not before that event is");
    run.handle.stored_through(going_on.seq);
    let mut rest = Vec::new();
    while let Some(event) = client.events.recv().await {
        rest.push(event);
    }
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert_eq!(run.handle.status(), RunStatus::Completed);
}
