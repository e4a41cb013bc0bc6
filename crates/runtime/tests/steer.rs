//! Steering: a user message sent while the run works joins the conversation at the next step
//! boundary, the model sees it, and the run reports what became of it.
#![allow(clippy::unwrap_used)]

mod common;

use std::sync::Arc;

use agentwire_core::communication::CommunicationSchema;
use agentwire_core::{EventKind, InputOutcome, Message, Outcome, Role, RunStatus};
use agentwire_runtime::{InputError, Run, RunStart};
use common::{Client, Recording, agent, answer, call, finish, tool};
use futures::FutureExt;
use serde_json::json;
use tokio::sync::Notify;

/// A `lookup` tool that waits for `go` before it answers, so a test can act while it runs.
fn lookup(started: Arc<Notify>, go: Arc<Notify>) -> common::FnTool {
    tool("lookup", json!({"type": "object"}), move |_, _| {
        let (started, go) = (Arc::clone(&started), Arc::clone(&go));
        async move {
            started.notify_one();
            go.notified().await;
            Ok(json!({"found": "42"}))
        }
        .boxed()
    })
}

fn script() -> serde_json::Value {
    json!({"turns": [
        finish(call("call_1", "lookup", json!({})), "tool_calls"),
        answer("It is 42, in French."),
    ]})
}

/// A run of the `lookup` agent (under `schema`, if given) that has started its tool: its
/// brain, the run, and what lets the tool answer.
async fn working(schema: Option<CommunicationSchema>) -> (Recording, Run, Arc<Notify>) {
    let brain = Recording::new(script());
    let (started, go) = (Arc::new(Notify::new()), Arc::new(Notify::new()));
    let mut builder = agent(&brain).tool(lookup(Arc::clone(&started), Arc::clone(&go)));
    if let Some(schema) = schema {
        builder = builder.schema(schema);
    }
    let run = builder
        .build()
        .unwrap()
        .start(RunStart::new(vec![Message::user("Look it up")]))
        .unwrap();
    started.notified().await;
    (brain, run, go)
}

fn outcomes(client: &Client) -> Vec<(u64, InputOutcome)> {
    client
        .seen
        .iter()
        .filter_map(|event| match &event.kind {
            EventKind::Input(outcome) => Some((event.seq, outcome.clone())),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_steer_joins_at_the_next_step_and_the_model_sees_it() {
    let (brain, run, go) = working(None).await;
    run.handle
        .steer("c1", Message::user("Answer in French"))
        .unwrap();
    go.notify_one();
    let mut client = Client::new(run.events);
    assert_eq!(client.until_end().await, RunStatus::Completed);
    client.check_agrees_with(&run.handle);

    let requests = brain.requests();
    assert_eq!(requests.len(), 2);
    let roles: Vec<Role> = requests[1].messages.iter().map(|m| m.role).collect();
    assert_eq!(roles, [Role::User, Role::Assistant, Role::User]);
    assert_eq!(requests[1].messages[2].content(), "Answer in French");

    let [(seq, outcome)] = &outcomes(&client)[..] else {
        panic!("one outcome: {:?}", outcomes(&client));
    };
    assert_eq!(
        *outcome,
        InputOutcome::new("c1", Outcome::Delivered { step: 1 })
    );
    // The message follows its outcome, whole.
    let next = client
        .seen
        .iter()
        .find(|event| event.seq == seq + 1)
        .unwrap();
    assert!(
        matches!(&next.kind, EventKind::MessageComplete { message } if message.role == Role::User)
    );
    // The session's history holds the steer between the two assistant messages.
    let output: Vec<Role> = run.handle.messages().iter().map(|m| m.role).collect();
    assert_eq!(
        output,
        [Role::User, Role::Assistant, Role::User, Role::Assistant]
    );
}

#[tokio::test]
async fn a_steer_the_run_cannot_take_is_reported_not_delivered() {
    let (_brain, run, _go) = working(None).await;
    run.handle.steer("c1", Message::user("never mind")).unwrap();
    run.handle.cancel().unwrap();
    let mut client = Client::new(run.events);
    assert_eq!(client.until_end().await, RunStatus::Canceled);
    let found = outcomes(&client);
    assert_eq!(
        found.iter().map(|(_, o)| o.clone()).collect::<Vec<_>>(),
        [InputOutcome::new(
            "c1",
            Outcome::NotDelivered {
                reason: "canceled".into()
            }
        )]
    );
    // After the end, a steer is refused: the run takes nothing more.
    assert!(matches!(
        run.handle.steer("c2", Message::user("late")),
        Err(InputError::Finished { .. })
    ));
}

#[tokio::test]
async fn steers_must_be_user_questions_the_schema_allows() {
    let (_, run, go) = working(Some(CommunicationSchema::chat())).await;
    // The chat built-in takes turns: no user message while the agent works.
    assert!(matches!(
        run.handle.steer("c1", Message::user("hurry")),
        Err(InputError::Refused(_))
    ));
    assert!(matches!(
        run.handle
            .steer("c2", Message::new(Role::Assistant, vec![])),
        Err(InputError::Role { role: "assistant" })
    ));
    go.notify_one();
    let mut client = Client::new(run.events);
    assert_eq!(client.until_end().await, RunStatus::Completed);
    assert!(outcomes(&client).is_empty());
}

#[tokio::test]
async fn a_note_is_reported_at_the_runs_next_event() {
    let (_brain, run, go) = working(None).await;
    run.handle.note(InputOutcome::new("q1", Outcome::Queued));
    go.notify_one();
    let mut client = Client::new(run.events);
    assert_eq!(client.until_end().await, RunStatus::Completed);
    let found: Vec<InputOutcome> = outcomes(&client).into_iter().map(|(_, o)| o).collect();
    assert_eq!(found, [InputOutcome::new("q1", Outcome::Queued)]);
}

#[tokio::test]
async fn a_run_from_the_inbox_reports_its_message_delivered_first() {
    let brain = Recording::new(json!({"turns": [answer("hi")]}));
    let agent = agent(&brain).build().unwrap();
    let run = agent
        .start(RunStart::new(vec![Message::user("hello")]).with_client_message_id("q7"))
        .unwrap();
    let mut client = Client::new(run.events);
    assert_eq!(client.until_end().await, RunStatus::Completed);
    let found = outcomes(&client);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].0, 2, "right after run_created");
    assert_eq!(
        found[0].1,
        InputOutcome::new("q7", Outcome::Delivered { step: 0 })
    );
}
