//! The statuses a host's limits and the user's answers give a run: `queued` while it waits for
//! one of the host's slots, `rejected` when their line is full, and `awaiting input` while the
//! model's question (`ask_user`) waits for the user's answer.
#![allow(clippy::unwrap_used)]

mod common;

use std::sync::Arc;

use agentwire_core::communication::CommunicationSchema;
use agentwire_core::{Awaiting, EventKind, Message, Part, RunStatus};
use agentwire_runtime::{AgentError, InputError, RunResume, RunSlots, RunStart};
use agentwire_tools::AskUser;
use common::{Client, Recording, agent, answer, call, finish, part_types};
use serde_json::{Value, json};

fn ask_script() -> Value {
    let mut turn = vec![json!({"type": "text_delta", "text": "One question first."})];
    turn.extend(call(
        "call_1",
        "ask_user",
        json!({"question": "Which city?"}),
    ));
    json!({"turns": [finish(turn, "tool_calls"), answer("Paris it is.")]})
}

fn asking_agent(brain: &Recording) -> agentwire_runtime::Agent {
    agent(brain).tool(AskUser::new()).build().unwrap()
}

fn statuses(client: &Client) -> Vec<&'static str> {
    client
        .seen
        .iter()
        .filter_map(|event| match &event.kind {
            EventKind::RunStatus { status, .. } => Some(status.name()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_run_queues_for_a_slot_and_works_once_one_is_free_in_order() {
    let slots = RunSlots::new(1, None);
    let slow = Recording::paced(json!({"turns": [answer("A long answer indeed.")]}), 50.0);
    let brain = Recording::new(json!({"turns": [answer("Two.")]}));
    let first = asking_agent(&slow)
        .start(RunStart::new(vec![Message::user("Hi")]).with_slots(slots.clone()))
        .unwrap();
    let agent = asking_agent(&brain);
    let second = agent
        .start(RunStart::new(vec![Message::user("Hi")]).with_slots(slots.clone()))
        .unwrap();
    let third = asking_agent(&Recording::new(json!({"turns": [answer("Three.")]})))
        .start(RunStart::new(vec![Message::user("Hi")]).with_slots(slots.clone()))
        .unwrap();
    let mut first_client = Client::new(first.events);
    let mut second_client = Client::new(second.events);
    let mut third_client = Client::new(third.events);
    assert_eq!(third_client.until_end().await, RunStatus::Completed);
    // The third ended last of all: the second, ahead of it in line, had ended before.
    assert_eq!(second.handle.status(), RunStatus::Completed);
    assert_eq!(first.handle.status(), RunStatus::Completed);
    assert_eq!(first_client.until_end().await, RunStatus::Completed);
    assert_eq!(second_client.until_end().await, RunStatus::Completed);
    assert_eq!(statuses(&first_client), ["in_progress", "completed"]);
    assert_eq!(
        statuses(&second_client),
        ["queued", "in_progress", "completed"]
    );
    assert_eq!(
        statuses(&third_client),
        ["queued", "in_progress", "completed"]
    );
    assert_eq!((slots.working(), slots.queued()), (0, 0));
}

#[tokio::test]
async fn a_run_waiting_for_its_client_holds_no_slot() {
    let slots = RunSlots::new(1, Some(0));
    let asking = asking_agent(&Recording::new(ask_script()));
    let first = asking
        .start(RunStart::new(vec![Message::user("Plan a trip")]).with_slots(slots.clone()))
        .unwrap();
    let mut first_client = Client::new(first.events);
    assert_eq!(
        first_client.until_settled().await,
        RunStatus::Awaiting(Awaiting::Input)
    );
    assert_eq!(slots.working(), 0);
    let second = asking_agent(&Recording::new(json!({"turns": [answer("Two.")]})))
        .start(RunStart::new(vec![Message::user("Hi")]).with_slots(slots.clone()))
        .unwrap();
    let mut second_client = Client::new(second.events);
    assert_eq!(second_client.until_end().await, RunStatus::Completed);
    assert_eq!(statuses(&second_client), ["in_progress", "completed"]);
    first.handle.input(Message::user("Paris")).unwrap();
    assert_eq!(first_client.until_end().await, RunStatus::Completed);
}

#[tokio::test]
async fn past_the_line_a_run_is_rejected_and_a_queued_run_can_be_canceled() {
    let slots = RunSlots::new(1, Some(1));
    let brain = Recording::paced(json!({"turns": [answer("A long answer indeed.")]}), 20.0);
    let agent = asking_agent(&brain);
    let working = agent
        .start(RunStart::new(vec![Message::user("Hi")]).with_slots(slots.clone()))
        .unwrap();
    let queued = agent
        .start(RunStart::new(vec![Message::user("Hi")]).with_slots(slots.clone()))
        .unwrap();
    let rejected = agent
        .start(RunStart::new(vec![Message::user("Hi")]).with_slots(slots.clone()))
        .unwrap();
    let mut rejected_client = Client::new(rejected.events);
    assert_eq!(rejected_client.until_end().await, RunStatus::Rejected);
    let error = rejected.handle.error().unwrap();
    assert_eq!(error.code, "queue_full");
    assert!(rejected.handle.output().is_empty(), "it never ran");

    let mut queued_client = Client::new(queued.events);
    assert_eq!(queued.handle.status(), RunStatus::Queued);
    queued
        .handle
        .cancel()
        .expect("the schema allows the client's cancel");
    assert_eq!(queued_client.until_end().await, RunStatus::Canceled);
    assert_eq!(statuses(&queued_client), ["queued", "canceled"]);
    assert!(queued.handle.output().is_empty(), "it never ran");
    assert_eq!(
        brain.requests().len(),
        1,
        "only the working run called the model"
    );

    let mut working_client = Client::new(working.events);
    assert_eq!(working_client.until_end().await, RunStatus::Completed);
}

#[tokio::test]
async fn ask_user_waits_for_input_and_the_next_user_message_answers_it() {
    let brain = Recording::new(ask_script());
    let agent = asking_agent(&brain);
    let run = agent
        .start(RunStart::new(vec![Message::user("Plan a trip")]))
        .unwrap();
    let mut client = Client::new(run.events);
    assert_eq!(
        client.until_settled().await,
        RunStatus::Awaiting(Awaiting::Input)
    );
    assert_eq!(run.handle.state(), "awaiting_input");
    let first = &run.handle.output()[0];
    assert_eq!(part_types(first), ["step_start", "text", "tool_call"]);
    // Answers of other kinds do not fit.
    assert!(matches!(
        run.handle.input(common::output("call_1", json!("Paris"))),
        Err(InputError::Refused(_) | InputError::UnknownToolCall { .. })
    ));

    run.handle.input(Message::user("Paris")).unwrap();
    assert_eq!(client.until_end().await, RunStatus::Completed);
    client.check_agrees_with(&run.handle);
    assert_eq!(run.handle.state(), "idle");
    let output = run.handle.output();
    assert_eq!(
        part_types(&output[1]),
        ["tool_result", "step_start", "text"]
    );
    let Part::ToolResult(result) = &output[1].parts[0] else {
        unreachable!()
    };
    assert_eq!(result.result, json!({"answer": "Paris"}));
    // The model saw its question answered.
    let seen = brain.requests()[1].messages.last().unwrap().clone();
    assert_eq!(part_types(&seen), ["tool_result", "step_start"]);
    // A finished run takes no more input.
    assert!(run.handle.input(Message::user("Lyon")).is_err());
}

#[tokio::test]
async fn a_question_is_checkpointed_and_answered_after_a_restart() {
    let brain = Recording::new(ask_script());
    let agent = asking_agent(&brain);
    let run = agent
        .start(RunStart::new(vec![Message::user("Plan a trip")]))
        .unwrap();
    let mut first = Client::new(run.events);
    first.until_settled().await;
    let text = serde_json::to_string(&run.handle.checkpoint().unwrap()).unwrap();
    run.handle
        .cancel()
        .expect("the schema allows the client's cancel");

    let restarted = asking_agent(&Recording::new(ask_script()));
    let resumed = restarted
        .resume(RunResume {
            run_id: run.handle.id().clone(),
            session_id: None,
            conversation: run.handle.messages()[..1].to_vec(),
            checkpoint: serde_json::from_str(&text).unwrap(),
            next_seq: first.seen.last().unwrap().seq + 1,
            slots: Some(RunSlots::new(1, Some(0))),
            telemetry: None,
            agents: None,
            shared_state: serde_json::Value::Null,
        })
        .unwrap();
    // A resumed run's host stores its events; here everything counts as stored.
    resumed.handle.stored_through(u64::MAX);
    assert_eq!(
        resumed.handle.status(),
        RunStatus::Awaiting(Awaiting::Input)
    );
    resumed.handle.input(Message::user("Paris")).unwrap();
    let mut second = Client::new(resumed.events);
    assert_eq!(second.until_end().await, RunStatus::Completed);
    let last = resumed.handle.output().pop().unwrap();
    assert_eq!(part_types(&last), ["tool_result", "step_start", "text"]);
}

#[test]
fn ask_user_needs_a_schema_that_asks() {
    let brain = Recording::new(ask_script());
    let refused = agent(&brain)
        .tool(AskUser::new())
        .schema(Arc::new(CommunicationSchema::chat()))
        .build();
    assert!(matches!(refused, Err(AgentError::SchemaLacksInput { .. })));
}
