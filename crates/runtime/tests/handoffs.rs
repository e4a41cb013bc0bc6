//! Handoffs: the model passes the conversation to another agent, which answers from there on
//! in the same run and stream; what it waits for is answered through the run, a checkpoint
//! takes it up again, and the session speaks with it next.
#![allow(clippy::unwrap_used)]

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use agentwire_core::communication::StateName;
use agentwire_core::{Awaiting, EventKind, Message, Part, RunStatus};
use agentwire_runtime::{Agent, Agents, RunResume, RunStart, SequentialIds};
use common::{Client, Recording, agent, answer, approval, call, finish, part_types, tool};
use futures::FutureExt;
use serde_json::{Value, json};

/// A turn that hands the conversation to `target`.
fn transfer(target: &str) -> Value {
    let mut turn = vec![json!({"type": "text_delta", "text": "Let me pass you on."})];
    turn.extend(call(
        "call_t",
        &format!("transfer_to_{target}"),
        json!({"reason": "billing question"}),
    ));
    finish(turn, "tool_calls")
}

fn billing(brain: &Recording) -> agentwire_runtime::AgentBuilder {
    Agent::builder("billing")
        .description("Answers billing questions.")
        .brain(brain.clone())
        .system("You are billing.")
        .ids(SequentialIds::default())
}

#[tokio::test]
async fn the_agent_handed_to_answers_in_the_same_run_and_its_schema_and_name_carry_on() {
    let billing_brain = Recording::new(json!({"turns": [answer("Your invoice is paid.")]}));
    let triage_brain = Recording::new(json!({"turns": [transfer("billing")]}));
    let triage = agent(&triage_brain)
        .handoff("billing", "Answers billing questions.")
        .build()
        .unwrap();
    assert!(
        triage
            .tools()
            .iter()
            .any(|tool| tool.name == "transfer_to_billing")
    );
    let agents = Agents::new([triage.clone(), billing(&billing_brain).build().unwrap()]);
    let run = triage
        .start(
            RunStart::new(vec![Message::user("Is my invoice paid?")])
                .with_session("ses_1")
                .with_agents(agents),
        )
        .unwrap();
    let mut client = Client::new(run.events);
    assert_eq!(client.until_end().await, RunStatus::Completed);
    client.check_agrees_with(&run.handle);

    // One conversation: the transfer, answered, then billing's answer as the run's own.
    let output = run.handle.output();
    assert_eq!(output.len(), 2);
    assert_eq!(
        part_types(&output[0]),
        ["step_start", "text", "tool_call", "tool_result"]
    );
    assert_eq!(output[0].metadata.agent_name.as_deref(), Some("assistant"));
    assert_eq!(output[1].content(), "Your invoice is paid.");
    assert_eq!(output[1].metadata.agent_name.as_deref(), Some("billing"));
    // Billing saw the whole conversation, the transfer included, under its own prompt.
    let seen = &billing_brain.requests()[0];
    assert_eq!(seen.system.as_deref(), Some("You are billing."));
    assert_eq!(seen.messages.len(), 2);
    assert_eq!(seen.messages[0].content(), "Is my invoice paid?");
    // The session speaks with billing next, from the state billing's schema is in.
    assert_eq!(run.handle.speaker(), "billing");
    assert_eq!(run.handle.session_state(), StateName::idle());
    // Billing's run is nested (its statuses), its messages are not.
    let nested: Vec<&str> = client
        .seen
        .iter()
        .filter(|event| !event.is_own())
        .map(|event| event.name())
        .collect();
    assert_eq!(
        nested,
        ["run_created", "run_status", "run_status"],
        "only billing's run's own statuses are nested"
    );
    assert_eq!(
        client.accumulator.children().next().unwrap().agent(),
        Some("billing")
    );
    // Tokens roll up: triage's call and billing's.
    assert_eq!(run.handle.usage().unwrap().total_tokens, 30);
}

#[tokio::test]
async fn a_handoff_to_an_agent_the_run_was_not_given_is_an_error_the_model_reads() {
    let brain =
        Recording::new(json!({"turns": [transfer("billing"), answer("I will answer myself.")]}));
    let triage = agent(&brain)
        .handoff("billing", "Answers billing questions.")
        .build()
        .unwrap();
    let run = triage
        .start(RunStart::new(vec![Message::user("Invoice?")]))
        .unwrap();
    let mut client = Client::new(run.events);
    assert_eq!(client.until_end().await, RunStatus::Completed);
    let output = run.handle.output();
    let error = output[0]
        .parts
        .iter()
        .find_map(|part| match part {
            Part::ToolError(error) => Some(error.message.clone()),
            _ => None,
        })
        .unwrap();
    assert!(error.contains("no agent 'billing'"), "{error}");
    assert_eq!(run.handle.speaker(), "assistant");
    assert!(
        output
            .last()
            .unwrap()
            .content()
            .ends_with("I will answer myself.")
    );
}

#[tokio::test]
async fn an_approval_of_the_agent_handed_to_is_answered_through_the_run_and_survives_a_checkpoint()
{
    let refunds = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&refunds);
    let make_billing = move || {
        let counted = Arc::clone(&counted);
        let mut refund_turn = vec![];
        refund_turn.extend(call("call_r", "refund", json!({"amount": 10})));
        billing(&Recording::new(json!({"turns": [
            finish(refund_turn, "tool_calls"),
            answer("Refunded."),
        ]})))
        .tool(tool("refund", json!({"type": "object"}), move |_, _| {
            counted.fetch_add(1, Ordering::SeqCst);
            async { Ok(json!({"refunded": true})) }.boxed()
        }))
        .approval(["refund"])
        .build()
        .unwrap()
    };
    let make_triage = || {
        agent(&Recording::new(json!({"turns": [transfer("billing")]})))
            .handoff("billing", "")
            .build()
            .unwrap()
    };
    let triage = make_triage();
    let agents = Agents::new([triage.clone(), make_billing()]);
    let run = triage
        .start(
            RunStart::new(vec![Message::user("Refund me")])
                .with_session("ses_1")
                .with_agents(agents)
                .with_stored_events(),
        )
        .unwrap();
    let mut first = Client::new(run.events);
    assert_eq!(
        first.until_settled().await,
        RunStatus::Awaiting(Awaiting::Approval)
    );
    // The request is billing's, in the run's own message.
    let request = first
        .messages()
        .last()
        .unwrap()
        .parts
        .iter()
        .find_map(|part| match part {
            Part::ApprovalRequest(request) => Some(request.approval_id.clone()),
            _ => None,
        })
        .unwrap();
    let checkpoint = run
        .handle
        .checkpoint()
        .expect("a handed-off wait is written down");
    let checkpoint: agentwire_runtime::Checkpoint =
        serde_json::from_str(&serde_json::to_string(&checkpoint).unwrap()).unwrap();
    let last_seq = first.seen.last().unwrap().seq;
    run.handle.abort();
    drop(first);

    // Another process takes it up and the answer goes to billing.
    let triage = make_triage();
    let resumed = triage
        .resume(RunResume {
            run_id: run.handle.id().clone(),
            session_id: Some("ses_1".into()),
            conversation: vec![Message::user("Refund me")],
            checkpoint,
            next_seq: last_seq + 1,
            slots: None,
            telemetry: None,
            agents: Some(Agents::new([triage.clone(), make_billing()])),
            shared_state: serde_json::Value::Null,
        })
        .unwrap();
    assert_eq!(
        resumed.handle.status(),
        RunStatus::Awaiting(Awaiting::Approval)
    );
    assert_eq!(resumed.handle.speaker(), "billing");
    resumed.handle.stored_through(u64::MAX);
    resumed
        .handle
        .input(approval(request.as_str(), true, None))
        .unwrap();
    let mut second = Client::new(resumed.events);
    loop {
        let event = tokio::time::timeout(std::time::Duration::from_secs(10), second.events.recv())
            .await
            .unwrap_or_else(|_| panic!("stalled after {:#?}", common::shape(&second.seen)))
            .unwrap();
        resumed.handle.stored_through(event.seq);
        let done = event.own_status() == Some(RunStatus::Completed);
        second.seen.push(event);
        if done {
            break;
        }
    }
    assert_eq!(refunds.load(Ordering::SeqCst), 1);
    let output = resumed.handle.output();
    assert_eq!(output.last().unwrap().content(), "Refunded.");
    assert_eq!(
        output.last().unwrap().metadata.agent_name.as_deref(),
        Some("billing")
    );
    assert!(second.seen.iter().all(|event| !matches!(
        &event.kind,
        EventKind::RunStatus {
            status: RunStatus::Completed,
            ..
        }
    ) || event.is_own()
        || event.namespace.depth() == 1));
}
