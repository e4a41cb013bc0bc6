//! Sub-agents: a parent's model calls other agents like tools; each call is a run of the
//! child's own, streamed nested in the parent's, whose answer is the call's result. Parallel
//! children, the depth limit, cancel, failures, and what a child waits for (an approval three
//! levels down, a client tool) answered through the top run.
#![allow(clippy::unwrap_used)]

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use agentwire_core::{
    Accumulator, Awaiting, EventKind, Message, Part, RunId, RunStatus, ToolErrorKind, ToolSpec,
};
use agentwire_runtime::{Agent, IdKind, IdSource, InputError, RunStart, SequentialIds};
use common::{Client, Recording, agent, answer, approval, call, finish, output, part_types, tool};
use futures::FutureExt;
use serde_json::{Value, json};

/// A turn that calls the agents `(call id, agent, input)` in parallel.
fn calling(calls: &[(&str, &str, &str)]) -> Value {
    let mut turn = vec![json!({"type": "text_delta", "text": "Let me ask."})];
    for (id, agent, input) in calls {
        turn.extend(call(id, agent, json!({"input": input})));
    }
    finish(turn, "tool_calls")
}

/// A final answer streamed as `n` deltas `"{word} "`.
fn words(word: &str, n: usize) -> Value {
    let deltas = (0..n)
        .map(|_| json!({"type": "text_delta", "text": format!("{word} ")}))
        .collect();
    finish(deltas, "stop")
}

/// Sequential ids named after their agent (`north_run_1`), so that the runs of a tree differ.
#[derive(Debug)]
struct NamedIds {
    name: String,
    ids: SequentialIds,
}

impl IdSource for NamedIds {
    fn next_id(&self, kind: IdKind) -> String {
        format!("{}_{}", self.name, self.ids.next_id(kind))
    }
}

/// An agent called `name` on `brain`.
fn child(name: &str, brain: &Recording) -> agentwire_runtime::AgentBuilder {
    Agent::builder(name)
        .description(format!("The {name}."))
        .brain(brain.clone())
        .ids(NamedIds {
            name: name.to_owned(),
            ids: SequentialIds::default(),
        })
}

/// The nested run under `path` (child run ids from the top).
fn nested<'a>(client: &'a Client, path: &[&RunId]) -> &'a Accumulator {
    let path: Vec<RunId> = path.iter().map(|id| (*id).clone()).collect();
    client
        .accumulator
        .descendant(&path)
        .unwrap_or_else(|| panic!("no nested run {path:?}"))
}

/// The ids of the top run's children, in the order they were created.
fn children(client: &Client) -> Vec<RunId> {
    client
        .accumulator
        .children()
        .map(|child| child.run_id().unwrap().clone())
        .collect()
}

#[tokio::test]
async fn a_childs_answer_is_the_calls_result_and_its_events_stream_nested() {
    let child_brain = Recording::new(json!({"turns": [answer("Paris is the capital.")]}));
    let researcher = child("researcher", &child_brain).build().unwrap();
    let brain = Recording::new(json!({"turns": [
        calling(&[("call_1", "researcher", "What is the capital of France?")]),
        answer("It is Paris."),
    ]}));
    let parent = agent(&brain).subagent(researcher).build().unwrap();
    assert!(parent.tools().iter().any(|tool| tool.name == "researcher"));

    let run = parent
        .start(RunStart::new(vec![Message::user("Capital of France?")]).with_session("ses_1"))
        .unwrap();
    let mut client = Client::new(run.events);
    assert_eq!(client.until_end().await, RunStatus::Completed);
    client.check_agrees_with(&run.handle);

    // The call's result is the child's answer, which the parent's model saw.
    let output = run.handle.output();
    assert_eq!(
        part_types(&output[0]),
        [
            "step_start",
            "text",
            "tool_call",
            "tool_result",
            "step_start",
            "text"
        ]
    );
    let Part::ToolResult(result) = &output[0].parts[3] else {
        panic!("a result")
    };
    assert_eq!(result.result, json!("Paris is the capital."));
    assert_eq!(result.tool_name.as_deref(), Some("researcher"));
    // The child was asked the input alone, as a user message.
    let asked = &child_brain.requests()[0].messages;
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].content(), "What is the capital of France?");

    // Its run streamed nested, under its own id, naming its parent and the call.
    let ids = children(&client);
    assert_eq!(ids.len(), 1);
    let researcher = nested(&client, &[&ids[0]]);
    assert_eq!(researcher.agent(), Some("researcher"));
    assert_eq!(researcher.status(), Some(RunStatus::Completed));
    assert_eq!(
        researcher.parent_tool_call_id().map(|id| id.as_str()),
        Some("call_1")
    );
    assert_eq!(researcher.messages().len(), 1);
    assert_eq!(researcher.messages()[0].content(), "Paris is the capital.");
    let created = client
        .seen
        .iter()
        .find_map(|event| match &event.kind {
            EventKind::RunCreated {
                run_id,
                session_id,
                parent_run_id,
                ..
            } if !event.is_own() => {
                Some((run_id.clone(), session_id.clone(), parent_run_id.clone()))
            }
            _ => None,
        })
        .unwrap();
    assert_eq!(created.0, ids[0]);
    assert_eq!(created.1.as_ref().map(|id| id.as_str()), Some("ses_1"));
    assert_eq!(created.2.as_ref(), Some(run.handle.id()));
    // Every event of the child comes before the result it gives.
    let result_at = client
        .seen
        .iter()
        .position(|event| {
            matches!(
                &event.kind,
                EventKind::PartComplete {
                    part: Part::ToolResult(_),
                    ..
                }
            )
        })
        .unwrap();
    let last_nested = client
        .seen
        .iter()
        .rposition(|event| !event.is_own())
        .unwrap();
    assert!(last_nested < result_at);

    // Tokens roll up: two parent calls and one child call of 15 each.
    assert_eq!(run.handle.usage().unwrap().total_tokens, 45);
}

#[tokio::test]
async fn parallel_children_interleave_and_each_answers_its_own_call() {
    let names = ["north", "south", "east", "west"];
    let calls: Vec<(String, &str)> = names
        .iter()
        .enumerate()
        .map(|(idx, name)| (format!("call_{idx}"), *name))
        .collect();
    let turn: Vec<(&str, &str, &str)> = calls
        .iter()
        .map(|(id, name)| (id.as_str(), *name, "go"))
        .collect();
    let brain = Recording::new(json!({"turns": [calling(&turn), answer("All four answered.")]}));
    let mut builder = agent(&brain);
    for name in names {
        let brain = Recording::paced(json!({"turns": [words(name, 6)]}), 400.0);
        builder = builder.subagent(child(name, &brain).build().unwrap());
    }
    let parent = builder.build().unwrap();

    let run = parent
        .start(RunStart::new(vec![Message::user("Ask all four")]))
        .unwrap();
    let mut client = Client::new(run.events);
    assert_eq!(client.until_end().await, RunStatus::Completed);
    client.check_agrees_with(&run.handle);

    let ids = children(&client);
    assert_eq!(ids.len(), 4);
    // They ran at once: some child's delta came between two deltas of another.
    let nested_runs: Vec<&RunId> = client
        .seen
        .iter()
        .filter(|event| matches!(event.kind, EventKind::PartDelta { .. }))
        .filter_map(|event| event.namespace.run())
        .collect();
    let switches = nested_runs
        .windows(2)
        .filter(|pair| pair[0] != pair[1])
        .count();
    assert!(
        switches > 3,
        "the children's deltas interleave ({switches} switches)"
    );
    let output = run.handle.output();
    for (idx, name) in names.iter().enumerate() {
        let result = output[0]
            .parts
            .iter()
            .find_map(|part| match part {
                Part::ToolResult(result)
                    if result.tool_call_id == format!("call_{idx}").as_str() =>
                {
                    Some(result.result.clone())
                }
                _ => None,
            })
            .unwrap();
        assert_eq!(result, json!(format!("{name} ").repeat(6)));
    }
    // The parent's second call saw all four results.
    let seen = &brain.requests()[1].messages;
    let results = seen
        .iter()
        .flat_map(|message| &message.parts)
        .filter(|part| matches!(part, Part::ToolResult(_)))
        .count();
    assert_eq!(results, 4);
}

#[tokio::test]
async fn a_call_past_max_depth_is_an_error_the_model_reads() {
    let leaf = child("leaf", &Recording::new(json!({"turns": [answer("leaf")]})))
        .build()
        .unwrap();
    let middle_brain = Recording::new(json!({"turns": [
        calling(&[("call_m", "leaf", "go deeper")]),
        answer("I could not go deeper."),
    ]}));
    let middle = child("middle", &middle_brain)
        .subagent(leaf)
        .build()
        .unwrap();
    let brain = Recording::new(json!({"turns": [
        calling(&[("call_1", "middle", "go")]),
        answer("Done."),
    ]}));
    let parent = agent(&brain).subagent(middle).max_depth(1).build().unwrap();

    let run = parent
        .start(RunStart::new(vec![Message::user("Dig")]))
        .unwrap();
    let mut client = Client::new(run.events);
    assert_eq!(client.until_end().await, RunStatus::Completed);
    let middle_run = nested(&client, &[&children(&client)[0]]);
    assert_eq!(middle_run.children().len(), 0, "nothing ran two deep");
    let error = middle_run.messages()[0]
        .parts
        .iter()
        .find_map(|part| match part {
            Part::ToolError(error) => Some(error.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(error.error_type, ToolErrorKind::Execution);
    assert!(error.message.contains("max_depth"), "{}", error.message);
    // The middle agent's model read the error and answered.
    let seen = &middle_brain.requests()[1].messages;
    assert!(
        seen.iter()
            .flat_map(|message| &message.parts)
            .any(|part| matches!(part, Part::ToolError(_)))
    );
}

#[tokio::test]
async fn a_call_without_its_input_is_a_validation_error_and_starts_nothing() {
    let child_brain = Recording::new(json!({"turns": [answer("never")]}));
    let researcher = child("researcher", &child_brain).build().unwrap();
    let mut turn = vec![];
    turn.extend(call(
        "call_1",
        "researcher",
        json!({"question": "wrong key"}),
    ));
    let brain = Recording::new(json!({"turns": [finish(turn, "tool_calls"), answer("Sorry.")]}));
    let parent = agent(&brain).subagent(researcher).build().unwrap();

    let run = parent
        .start(RunStart::new(vec![Message::user("Ask")]))
        .unwrap();
    let mut client = Client::new(run.events);
    assert_eq!(client.until_end().await, RunStatus::Completed);
    assert!(children(&client).is_empty());
    assert!(child_brain.requests().is_empty());
    let error = run.handle.output()[0]
        .parts
        .iter()
        .find_map(|part| match part {
            Part::ToolError(error) => Some(error.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(error.error_type, ToolErrorKind::Validation);
    assert!(error.message.contains("input"), "{}", error.message);
}

#[tokio::test]
async fn a_failed_child_is_an_execution_error_and_the_parent_goes_on() {
    let failing = Recording::new(json!({"turns": [[
        {"type": "text_delta", "text": "Start"},
        {"type": "error", "message": "the provider fell over"},
    ]]}));
    let researcher = child("researcher", &failing).build().unwrap();
    let brain = Recording::new(json!({"turns": [
        calling(&[("call_1", "researcher", "Look it up")]),
        answer("I will answer without it."),
    ]}));
    let parent = agent(&brain).subagent(researcher).build().unwrap();

    let run = parent
        .start(RunStart::new(vec![Message::user("Ask")]))
        .unwrap();
    let mut client = Client::new(run.events);
    assert_eq!(client.until_end().await, RunStatus::Completed);
    let child_run = nested(&client, &[&children(&client)[0]]);
    assert_eq!(child_run.status(), Some(RunStatus::Failed));
    let error = run.handle.output()[0]
        .parts
        .iter()
        .find_map(|part| match part {
            Part::ToolError(error) => Some(error.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(error.error_type, ToolErrorKind::Execution);
    assert!(
        error.message.contains("failed") && error.message.contains("fell over"),
        "{}",
        error.message
    );
}

#[tokio::test]
async fn canceling_the_parent_cancels_every_child() {
    let slow = || Recording::paced(json!({"turns": [words("word", 200)]}), 50.0);
    let parent_brain = Recording::new(json!({"turns": [
        calling(&[("call_1", "one", "go"), ("call_2", "two", "go")]),
        answer("never"),
    ]}));
    let parent = agent(&parent_brain)
        .subagent(child("one", &slow()).build().unwrap())
        .subagent(child("two", &slow()).build().unwrap())
        .build()
        .unwrap();

    let run = parent
        .start(RunStart::new(vec![Message::user("Go")]))
        .unwrap();
    let mut client = Client::new(run.events);
    // Read until both children stream, then cancel the parent.
    loop {
        let event = client.events.recv().await.unwrap();
        client.accumulator.push(&event).unwrap();
        let streaming = matches!(event.kind, EventKind::PartDelta { .. }) && !event.is_own();
        client.seen.push(event);
        if streaming && client.accumulator.children().len() == 2 {
            break;
        }
    }
    run.handle.cancel().unwrap();
    assert_eq!(client.until_end().await, RunStatus::Canceled);
    for id in children(&client) {
        assert_eq!(nested(&client, &[&id]).status(), Some(RunStatus::Canceled));
    }
    // Both calls are answered: the conversation stays one a model can be shown.
    let errors = run.handle.output()[0]
        .parts
        .iter()
        .filter(|part| matches!(part, Part::ToolError(_)))
        .count();
    assert_eq!(errors, 2);
}

/// `delete_file`, counting its calls.
fn delete_file(calls: Arc<AtomicUsize>) -> common::FnTool {
    tool("delete_file", json!({"type": "object"}), move |args, _| {
        calls.fetch_add(1, Ordering::SeqCst);
        async move { Ok(json!({"deleted": args["path"]})) }.boxed()
    })
}

/// A `cleaner` whose `delete_file` (counted in `deletes`) needs approval, under a `manager`
/// that asks it to delete old.log: the manager's agent, two levels of the tree.
fn cleaning_manager(deletes: &Arc<AtomicUsize>) -> Agent {
    let mut delete_turn = vec![];
    delete_turn.extend(call("call_d", "delete_file", json!({"path": "old.log"})));
    let cleaner = child(
        "cleaner",
        &Recording::new(json!({"turns": [finish(delete_turn, "tool_calls"), answer("Deleted.")]})),
    )
    .tool(delete_file(Arc::clone(deletes)))
    .approval(["delete_file"])
    .build()
    .unwrap();
    child(
        "manager",
        &Recording::new(json!({"turns": [
            calling(&[("call_c", "cleaner", "delete old.log")]),
            answer("The cleaner deleted it."),
        ]})),
    )
    .subagent(cleaner)
    .build()
    .unwrap()
}

#[tokio::test]
async fn an_approval_three_levels_down_is_answered_through_the_top_run() {
    let deletes = Arc::new(AtomicUsize::new(0));
    let manager = cleaning_manager(&deletes);
    let director = child(
        "director",
        &Recording::new(json!({"turns": [
            calling(&[("call_m", "manager", "clean up")]),
            answer("Cleaned up."),
        ]})),
    )
    .subagent(manager)
    .build()
    .unwrap();
    let top = agent(&Recording::new(json!({"turns": [
        calling(&[("call_1", "director", "please clean")]),
        answer("All clean."),
    ]})))
    .subagent(director)
    .build()
    .unwrap();

    let run = top
        .start(RunStart::new(vec![Message::user("Clean up")]))
        .unwrap();
    let mut client = Client::new(run.events);
    assert_eq!(
        client.until_settled().await,
        RunStatus::Awaiting(Awaiting::Approval)
    );
    assert_eq!(run.handle.status(), RunStatus::Awaiting(Awaiting::Approval));
    assert_eq!(deletes.load(Ordering::SeqCst), 0);
    // The request is in the stream, three runs down, before the top run waits.
    let director_id = children(&client)[0].clone();
    let director_run = nested(&client, &[&director_id]);
    let manager_id = director_run
        .children()
        .next()
        .unwrap()
        .run_id()
        .unwrap()
        .clone();
    let cleaner_run = director_run
        .descendant(std::slice::from_ref(&manager_id))
        .unwrap()
        .children()
        .next()
        .unwrap();
    assert_eq!(cleaner_run.agent(), Some("cleaner"));
    assert_eq!(
        cleaner_run.status(),
        Some(RunStatus::Awaiting(Awaiting::Approval))
    );
    let request = cleaner_run.messages()[0]
        .parts
        .iter()
        .find_map(|part| match part {
            Part::ApprovalRequest(request) => Some(request.clone()),
            _ => None,
        })
        .unwrap();
    let awaiting_at = client.seen.len() - 1;
    let request_at = client
        .seen
        .iter()
        .position(|event| {
            matches!(
                &event.kind,
                EventKind::PartComplete {
                    part: Part::ApprovalRequest(_),
                    ..
                }
            )
        })
        .unwrap();
    assert!(request_at < awaiting_at);

    // An answer nobody waits for is refused and changes nothing.
    assert!(matches!(
        run.handle.input(approval("apr_404", true, None)),
        Err(InputError::UnknownApproval { .. })
    ));
    assert_eq!(run.handle.status(), RunStatus::Awaiting(Awaiting::Approval));

    // The top run takes the answer and hands it down.
    run.handle
        .input(approval(request.approval_id.as_str(), true, None))
        .unwrap();
    assert_eq!(run.handle.status(), RunStatus::InProgress, "at once");
    assert_eq!(client.until_end().await, RunStatus::Completed);
    client.check_agrees_with(&run.handle);
    assert_eq!(deletes.load(Ordering::SeqCst), 1);
    let output = run.handle.output();
    let result = output[1]
        .parts
        .iter()
        .find_map(|part| match part {
            Part::ToolResult(result) => Some(result.result.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(result, json!("Cleaned up."));
    // The top run went awaiting once, then back in progress when the answer went down.
    let top_statuses: Vec<RunStatus> = client
        .seen
        .iter()
        .filter(|event| event.is_own())
        .filter_map(|event| match &event.kind {
            EventKind::RunStatus { status, .. } => Some(*status),
            _ => None,
        })
        .collect();
    assert_eq!(
        top_statuses,
        [
            RunStatus::InProgress,
            RunStatus::Awaiting(Awaiting::Approval),
            RunStatus::InProgress,
            RunStatus::Completed
        ]
    );
}

#[tokio::test]
async fn a_client_tool_a_child_calls_is_answered_by_the_top_runs_client() {
    let mut locate = vec![];
    locate.extend(call("call_loc", "get_location", json!({})));
    let scout = child(
        "scout",
        &Recording::new(
            json!({"turns": [finish(locate, "tool_calls"), answer("You are in Lyon.")]}),
        ),
    )
    .build()
    .unwrap();
    let top = agent(&Recording::new(json!({"turns": [
        calling(&[("call_1", "scout", "where am I?")]),
        answer("Lyon."),
    ]})))
    .subagent(scout)
    .build()
    .unwrap();
    let get_location = ToolSpec::new(
        "get_location",
        "Where the user is.",
        json!({"type": "object"}),
    );

    let run = top
        .start(
            RunStart::new(vec![Message::user("Where am I?")]).with_client_tools(vec![get_location]),
        )
        .unwrap();
    let mut client = Client::new(run.events);
    assert_eq!(
        client.until_settled().await,
        RunStatus::Awaiting(Awaiting::FunctionOutput)
    );
    run.handle
        .input(output("call_loc", json!({"city": "Lyon"})))
        .unwrap();
    assert_eq!(client.until_end().await, RunStatus::Completed);
    let scout_run = nested(&client, &[&children(&client)[0]]);
    assert_eq!(
        scout_run.messages().last().unwrap().content(),
        "You are in Lyon."
    );
    assert_eq!(run.handle.output().last().unwrap().content(), "Lyon.");
}

#[tokio::test]
async fn a_waiting_child_canceled_through_its_parent_ends_and_answers_its_call() {
    let deletes = Arc::new(AtomicUsize::new(0));
    let mut delete_turn = vec![];
    delete_turn.extend(call("call_d", "delete_file", json!({"path": "old.log"})));
    let cleaner = child(
        "cleaner",
        &Recording::new(json!({"turns": [finish(delete_turn, "tool_calls"), answer("Deleted.")]})),
    )
    .tool(delete_file(Arc::clone(&deletes)))
    .approval(["delete_file"])
    .build()
    .unwrap();
    let top = agent(&Recording::new(json!({"turns": [
        calling(&[("call_1", "cleaner", "delete it")]),
        answer("never"),
    ]})))
    .subagent(cleaner)
    .build()
    .unwrap();
    let run = top
        .start(RunStart::new(vec![Message::user("Clean")]))
        .unwrap();
    let mut client = Client::new(run.events);
    assert_eq!(
        client.until_settled().await,
        RunStatus::Awaiting(Awaiting::Approval)
    );
    run.handle.cancel().unwrap();
    assert_eq!(
        tokio::time::timeout(Duration::from_secs(10), client.until_end())
            .await
            .unwrap(),
        RunStatus::Canceled
    );
    assert_eq!(deletes.load(Ordering::SeqCst), 0);
    let cleaner_run = nested(&client, &[&children(&client)[0]]);
    assert_eq!(cleaner_run.status(), Some(RunStatus::Canceled));
    let last = run.handle.output().last().unwrap().clone();
    assert!(
        last.parts
            .iter()
            .any(|part| matches!(part, Part::ToolError(error) if error.tool_call_id == "call_1")),
        "the call is answered: {last:?}"
    );
}

#[tokio::test]
async fn a_waiting_tree_is_checkpointed_and_goes_on_where_its_child_waited() {
    let deletes = Arc::new(AtomicUsize::new(0));
    let tree = || {
        let manager = cleaning_manager(&deletes);
        agent(&Recording::new(json!({"turns": [
            calling(&[("call_1", "manager", "clean up")]),
            answer("All clean."),
        ]})))
        .subagent(manager)
        .build()
        .unwrap()
    };
    let first_agent = tree();
    let run = first_agent
        .start(
            RunStart::new(vec![Message::user("Clean up")])
                .with_session("ses_1")
                .with_stored_events(),
        )
        .unwrap();
    let mut first = Client::new(run.events);
    assert_eq!(
        first.until_settled().await,
        RunStatus::Awaiting(Awaiting::Approval)
    );
    let checkpoint = run
        .handle
        .checkpoint()
        .expect("a waiting tree is written down");
    let text = serde_json::to_string(&checkpoint).unwrap();
    assert!(text.contains("\"children\""), "{text}");
    let checkpoint: agentwire_runtime::Checkpoint = serde_json::from_str(&text).unwrap();
    let last_seq = first.seen.last().unwrap().seq;
    let cleaner_run = first
        .accumulator
        .children()
        .next()
        .unwrap()
        .children()
        .next()
        .unwrap();
    let approval_id = cleaner_run.messages()[0]
        .parts
        .iter()
        .find_map(|part| match part {
            Part::ApprovalRequest(request) => Some(request.approval_id.clone()),
            _ => None,
        })
        .unwrap();
    // The first process goes away; another takes the tree up from the checkpoint.
    run.handle.abort();
    drop(first);

    let resumed = tree()
        .resume(agentwire_runtime::RunResume {
            run_id: run.handle.id().clone(),
            session_id: Some("ses_1".into()),
            conversation: vec![Message::user("Clean up")],
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
    resumed
        .handle
        .input(approval(approval_id.as_str(), true, None))
        .unwrap();
    // The cleaner goes on, but runs the approved call only once the host has stored that.
    let mut second = Client::new(resumed.events);
    let mut cleaner_going_on = false;
    while !cleaner_going_on {
        let event = tokio::time::timeout(Duration::from_secs(10), second.events.recv())
            .await
            .unwrap_or_else(|_| panic!("stalled after {:#?}", second.seen))
            .unwrap();
        cleaner_going_on = event.namespace.depth() == 2
            && matches!(
                event.kind,
                EventKind::RunStatus {
                    status: RunStatus::InProgress,
                    ..
                }
            );
        second.seen.push(event);
    }
    for _ in 0..50 {
        tokio::task::yield_now().await;
    }
    assert_eq!(deletes.load(Ordering::SeqCst), 0, "not before it is stored");
    resumed.handle.stored_through(u64::MAX);
    loop {
        let event = tokio::time::timeout(Duration::from_secs(10), second.events.recv())
            .await
            .unwrap_or_else(|_| panic!("stalled after {:#?}", common::shape(&second.seen)));
        let Some(event) = event else { break };
        if event.is_own() && event.own_status() == Some(RunStatus::Completed) {
            second.seen.push(event);
            break;
        }
        second.seen.push(event);
    }
    assert_eq!(
        deletes.load(Ordering::SeqCst),
        1,
        "the approved call ran once"
    );
    assert_eq!(second.seen[0].seq, last_seq + 1, "numbered on");
    assert_eq!(resumed.handle.status(), RunStatus::Completed);
    assert_eq!(
        resumed.handle.output().last().unwrap().content(),
        "All clean."
    );
}
