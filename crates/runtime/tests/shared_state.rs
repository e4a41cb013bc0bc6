//! The session's shared state through the orchestrator: shown at a run's start, changed by
//! `update_state` while its arguments stream, rolled back when a call fails (the model told
//! why), held to the agent's state schema, changed by any tool through its context, and one
//! for a run and its sub-agents.
#![allow(clippy::unwrap_used)]

mod common;

use agentwire_core::{Event, EventKind, Message, Part, RunStatus, ToolErrorKind};
use agentwire_runtime::{Agent, RunStart};
use agentwire_tools::{StateSchema, UpdateState};
use common::{Client, Recording, agent, answer, call, finish, tool};
use futures::FutureExt;
use serde_json::{Value, json};

/// A scripted `update_state` call whose argument text arrives in pieces of `size` bytes.
fn streamed_call(id: &str, args: &Value, size: usize) -> Vec<Value> {
    let text = args.to_string();
    let mut events = vec![json!({"type": "tool_call_start", "id": id, "name": UpdateState::NAME})];
    let mut at = 0;
    while at < text.len() {
        let mut end = (at + size).min(text.len());
        while !text.is_char_boundary(end) {
            end += 1;
        }
        events.push(json!({"type": "tool_call_delta", "id": id, "args": &text[at..end]}));
        at = end;
    }
    events.push(json!({"type": "tool_call_end", "id": id}));
    events
}

fn with_update_state(brain: &Recording) -> agentwire_runtime::AgentBuilder {
    agent(brain).tool(UpdateState::new())
}

/// The state events of a stream, as their JSON (`state_snapshot`, `state_delta`).
fn state_events(events: &[Event]) -> Vec<Value> {
    events
        .iter()
        .filter(|event| {
            matches!(
                event.kind,
                EventKind::StateSnapshot { .. } | EventKind::StateDelta { .. }
            )
        })
        .map(|event| {
            let mut value = serde_json::to_value(event).unwrap();
            value.as_object_mut().unwrap().remove("seq");
            value
        })
        .collect()
}

fn tool_error(message: &Message) -> Option<&agentwire_core::ToolError> {
    message.parts.iter().find_map(|part| match part {
        Part::ToolError(error) => Some(error),
        _ => None,
    })
}

#[tokio::test]
async fn update_state_streams_its_arguments_into_the_state_as_they_arrive() {
    let args = json!({"ops": [
        {"op": "add", "path": "/todo/-", "value": {"title": "Write the docs", "tags": ["docs", "urgent"]}},
        {"op": "replace", "path": "/status", "value": "busy"}
    ]});
    let brain = Recording::new(json!({"turns": [
        finish(streamed_call("tc_1", &args, 5), "tool_calls"),
        answer("Added it."),
    ]}));
    let agent = with_update_state(&brain).build().unwrap();
    let start = RunStart::new(vec![Message::user("Add a task")])
        .with_shared_state(json!({"todo": [], "status": "idle"}));
    let run = agent.start(start).unwrap();
    let mut client = Client::new(run.events);
    assert_eq!(client.until_end().await, RunStatus::Completed);
    client.check_agrees_with(&run.handle);

    let expect = json!({"todo": [{"title": "Write the docs", "tags": ["docs", "urgent"]}], "status": "busy"});
    assert_eq!(run.handle.shared_state(), expect);
    assert_eq!(
        client.accumulator.state(),
        &expect,
        "the client's copy agrees"
    );

    // The run starts by showing the state, right after `run_created`.
    assert_eq!(client.seen[0].name(), "run_created");
    assert_eq!(
        state_events(&client.seen[1..2]),
        [json!({"event": "state_snapshot", "state": {"todo": [], "status": "idle"}})]
    );
    // The changes came while the call streamed, each value once it was whole.
    let call_complete = client
        .seen
        .iter()
        .position(|event| {
            matches!(
                &event.kind,
                EventKind::PartComplete {
                    part: Part::ToolCall(_),
                    ..
                }
            )
        })
        .unwrap();
    let deltas: Vec<Value> = state_events(&client.seen[..call_complete])
        .into_iter()
        .filter(|event| event["event"] == "state_delta")
        .flat_map(|event| event["patch"].as_array().unwrap().clone())
        .collect();
    assert_eq!(
        deltas,
        [
            json!({"op": "add", "path": "/todo/0", "value": {}}),
            json!({"op": "add", "path": "/todo/0/title", "value": "Write the docs"}),
            json!({"op": "add", "path": "/todo/0/tags", "value": []}),
            json!({"op": "add", "path": "/todo/0/tags/0", "value": "docs"}),
            json!({"op": "add", "path": "/todo/0/tags/1", "value": "urgent"}),
            json!({"op": "replace", "path": "/status", "value": "busy"}),
        ]
    );
    let first_delta = client
        .seen
        .iter()
        .position(|event| event.name() == "state_delta")
        .unwrap();
    assert!(
        client.seen[first_delta + 1..call_complete]
            .iter()
            .any(|event| event.name() == "part_delta"),
        "the state changed before the call's arguments had all arrived"
    );

    // The call is answered, and the model's next call sees the state in its instructions.
    let output = run.handle.output();
    assert!(output[0].parts.iter().any(|part| matches!(
        part,
        Part::ToolResult(result) if result.result == json!({"applied": 2})
    )));
    let system = brain.requests()[1].system.clone().unwrap();
    assert!(system.starts_with("You are a test."), "{system}");
    assert!(system.ends_with(&expect.to_string()), "{system}");
}

#[tokio::test]
async fn a_call_that_does_not_apply_is_rolled_back_and_the_model_corrects_it() {
    let broken = json!({"ops": [
        {"op": "add", "path": "/todo/-", "value": {"title": "Plan"}},
        {"op": "replace", "path": "/todo/7/title", "value": "Nope"}
    ]});
    let fixed = json!({"ops": [{"op": "add", "path": "/todo/-", "value": {"title": "Plan"}}]});
    let brain = Recording::new(json!({"turns": [
        finish(streamed_call("tc_1", &broken, 7), "tool_calls"),
        finish(streamed_call("tc_2", &fixed, 7), "tool_calls"),
        answer("Done."),
    ]}));
    let agent = with_update_state(&brain).build().unwrap();
    let start = RunStart::new(vec![Message::user("Plan")]).with_shared_state(json!({"todo": []}));
    let run = agent.start(start).unwrap();
    let mut client = Client::new(run.events);
    assert_eq!(client.until_end().await, RunStatus::Completed);
    client.check_agrees_with(&run.handle);

    let expect = json!({"todo": [{"title": "Plan"}]});
    assert_eq!(run.handle.shared_state(), expect);
    assert_eq!(client.accumulator.state(), &expect);

    // The first call's changes showed, then a snapshot took them back.
    let events = state_events(&client.seen);
    let rollback = events
        .iter()
        .rposition(|event| event == &json!({"event": "state_snapshot", "state": {"todo": []}}))
        .unwrap();
    assert!(
        rollback > 1,
        "a snapshot after the first call's deltas: {events:?}"
    );

    let error = tool_error(&run.handle.output()[0]).unwrap().clone();
    assert_eq!(error.error_type, ToolErrorKind::Validation);
    assert_eq!(
        error.message,
        "Validation failed for tool 'update_state': operation 1 (replace '/todo/7/title') \
         cannot be applied: its path is not in the state."
    );
    // The model read the error before it corrected the call.
    let second = brain.requests()[1].clone();
    assert!(
        second
            .messages
            .iter()
            .any(|message| tool_error(message).is_some())
    );
}

#[tokio::test]
async fn a_state_its_schema_refuses_is_rolled_back_with_the_problem_named() {
    let schema = StateSchema::compile(&json!({
        "type": "object",
        "properties": {"todo": {"type": "array", "items": {
            "type": "object",
            "properties": {"done": {"type": "boolean"}},
            "required": ["done"]
        }}}
    }))
    .unwrap();
    let wrong = json!({"ops": [{"op": "add", "path": "/todo/-", "value": {"done": "yes"}}]});
    let brain = Recording::new(json!({"turns": [
        finish(streamed_call("tc_1", &wrong, 4), "tool_calls"),
        answer("Sorry."),
    ]}));
    let agent = with_update_state(&brain)
        .state_schema(schema)
        .build()
        .unwrap();
    let start = RunStart::new(vec![Message::user("Add")]).with_shared_state(json!({"todo": []}));
    let run = agent.start(start).unwrap();
    let mut client = Client::new(run.events);
    assert_eq!(client.until_end().await, RunStatus::Completed);

    assert_eq!(run.handle.shared_state(), json!({"todo": []}));
    assert_eq!(client.accumulator.state(), &json!({"todo": []}));
    let error = tool_error(&run.handle.output()[0]).unwrap().clone();
    assert_eq!(error.error_type, ToolErrorKind::Validation);
    assert_eq!(
        error.message,
        "Validation failed for tool 'update_state': the state would not match its schema: \
         at '/todo/0/done': \"yes\" is not of type \"boolean\"."
    );
    assert!(
        agent.check_state(&json!({"todo": [{"done": 1}]})).is_err(),
        "hosts check what clients set the same way"
    );
}

/// A model's `update_state` that would pass the state's bounds (root copies doubling it past
/// `max_state_bytes`, then a copy of the root into itself past the depth bound) is refused
/// before it takes effect: a VALIDATION error the model reads, the state as it was.
#[tokio::test]
async fn a_call_past_the_state_bounds_is_a_validation_error_and_changes_nothing() {
    let doubling = json!({"ops": (0..12)
        .map(|i| json!({"op": "copy", "from": "", "path": format!("/c{i}")}))
        .collect::<Vec<_>>()});
    let mut deep = json!({});
    for _ in 0..60 {
        deep = json!({"d": deep});
    }
    let deeper = json!({"ops": [
        {"op": "add", "path": "/deep", "value": deep},
        {"op": "copy", "from": "/deep", "path": format!("/deep{}/again", "/d".repeat(59))}
    ]});
    let brain = Recording::new(json!({"turns": [
        finish(streamed_call("tc_1", &doubling, 9), "tool_calls"),
        finish(streamed_call("tc_2", &deeper, 9), "tool_calls"),
        answer("I could not."),
    ]}));
    let agent = with_update_state(&brain).build().unwrap();
    let state = json!({"note": "x".repeat(80)});
    let limits = agentwire_runtime::RunLimits {
        max_state_bytes: Some(4096),
        ..Default::default()
    };
    let start = RunStart::new(vec![Message::user("Grow")])
        .with_shared_state(state.clone())
        .with_limits(limits);
    let run = agent.start(start).unwrap();
    let mut client = Client::new(run.events);
    assert_eq!(client.until_end().await, RunStatus::Completed);
    client.check_agrees_with(&run.handle);

    assert_eq!(run.handle.shared_state(), state);
    assert_eq!(client.accumulator.state(), &state);
    let output = run.handle.output();
    let errors: Vec<_> = output
        .iter()
        .flat_map(|message| &message.parts)
        .filter_map(|part| match part {
            Part::ToolError(error) => Some(error),
            _ => None,
        })
        .collect();
    assert_eq!(errors.len(), 2, "{output:?}");
    assert!(
        errors
            .iter()
            .all(|error| error.error_type == ToolErrorKind::Validation)
    );
    assert!(
        errors[0]
            .message
            .ends_with("is refused: the state would be larger than 4096 bytes as JSON."),
        "{}",
        errors[0].message
    );
    let into = format!("/deep{}/again", "/d".repeat(59));
    assert_eq!(
        errors[1].message,
        format!(
            "Validation failed for tool 'update_state': operation 1 (copy '{into}') is \
             refused: the state would be nested more than 100 levels deep."
        )
    );
    // The model read both errors.
    let last = brain.requests().last().unwrap().clone();
    let read = serde_json::to_string(&last.messages).unwrap();
    assert_eq!(read.matches("is refused: the state would be").count(), 2);
}

#[tokio::test]
async fn a_call_cut_short_changes_nothing() {
    let args = json!({"ops": [{"op": "add", "path": "/notes", "value": ["one", "two", "three"]}]});
    let mut events = streamed_call("tc_1", &args, 6);
    // The model fails after a few pieces: the call never ends.
    events.truncate(11);
    events.push(json!({"type": "error", "message": "the provider went away"}));
    let brain = Recording::new(json!({"turns": [events]}));
    let agent = with_update_state(&brain).build().unwrap();
    let start = RunStart::new(vec![Message::user("Note")]).with_shared_state(json!({}));
    let run = agent.start(start).unwrap();
    let mut client = Client::new(run.events);
    assert_eq!(client.until_end().await, RunStatus::Failed);

    assert_eq!(run.handle.shared_state(), json!({}));
    assert_eq!(client.accumulator.state(), &json!({}));
    let events = state_events(&client.seen);
    assert!(
        events.iter().any(|event| event["event"] == "state_delta"),
        "it had begun to change: {events:?}"
    );
    assert_eq!(
        events.last().unwrap(),
        &json!({"event": "state_snapshot", "state": {}})
    );
    let output = run.handle.output();
    let error = tool_error(&output[0]).unwrap();
    assert_eq!(
        error.error_type,
        ToolErrorKind::Execution,
        "answered as not run"
    );
}

#[tokio::test]
async fn any_tool_may_change_the_state_through_its_context() {
    let counter = tool("count", json!({"type": "object"}), |_, context| {
        async move {
            let state = context.state.expect("a run gives its tools the state");
            let patch: json_patch::Patch =
                serde_json::from_value(json!([{"op": "replace", "path": "/count", "value": 1}]))
                    .unwrap();
            state
                .patch(&patch)
                .map_err(agentwire_tools::ToolFailure::from)?;
            Ok(json!({"count": state.read(|state| state["count"].clone())}))
        }
        .boxed()
    });
    let brain = Recording::new(json!({"turns": [
        finish(call("tc_1", "count", json!({})), "tool_calls"),
        answer("Counted."),
    ]}));
    let agent = agent(&brain).tool(counter).build().unwrap();
    let start = RunStart::new(vec![Message::user("Count")]).with_shared_state(json!({"count": 0}));
    let run = agent.start(start).unwrap();
    let mut client = Client::new(run.events);
    assert_eq!(client.until_end().await, RunStatus::Completed);
    assert_eq!(run.handle.shared_state(), json!({"count": 1}));
    assert_eq!(client.accumulator.state(), &json!({"count": 1}));
    assert_eq!(
        state_events(&client.seen),
        [
            json!({"event": "state_snapshot", "state": {"count": 0}}),
            json!({"event": "state_delta", "patch": [{"op": "replace", "path": "/count", "value": 1}]}),
        ]
    );
    // An agent without `update_state` is not shown the state in its instructions.
    assert_eq!(
        brain.requests()[0].system.as_deref(),
        Some("You are a test.")
    );
}

#[tokio::test]
async fn a_run_without_a_state_shows_none() {
    let brain = Recording::new(json!({"turns": [answer("Hi.")]}));
    let agent = with_update_state(&brain).build().unwrap();
    let run = agent
        .start(RunStart::new(vec![Message::user("Hi")]))
        .unwrap();
    let mut client = Client::new(run.events);
    assert_eq!(client.until_end().await, RunStatus::Completed);
    assert!(state_events(&client.seen).is_empty());
    assert_eq!(run.handle.shared_state(), Value::Null);
}

#[tokio::test]
async fn a_sub_agent_changes_its_parents_state_and_the_top_run_emits_it() {
    let child_brain = Recording::new(json!({"turns": [
        finish(
            streamed_call("tc_c", &json!({"ops": [{"op": "add", "path": "/found", "value": [1, 2]}]}), 4),
            "tool_calls",
        ),
        answer("Found two."),
    ]}));
    let child = Agent::builder("finder")
        .description("Finds things")
        .brain(child_brain)
        .tool(UpdateState::new())
        .build()
        .unwrap();
    let brain = Recording::new(json!({"turns": [
        finish(call("tc_p", "finder", json!({"input": "find"})), "tool_calls"),
        answer("The finder found two."),
    ]}));
    let agent = with_update_state(&brain).subagent(child).build().unwrap();
    let start = RunStart::new(vec![Message::user("Find")]).with_shared_state(json!({}));
    let run = agent.start(start).unwrap();
    let mut client = Client::new(run.events);
    assert_eq!(client.until_end().await, RunStatus::Completed);

    assert_eq!(run.handle.shared_state(), json!({"found": [1, 2]}));
    assert_eq!(client.accumulator.state(), &json!({"found": [1, 2]}));
    for event in &client.seen {
        if matches!(
            event.kind,
            EventKind::StateSnapshot { .. } | EventKind::StateDelta { .. }
        ) {
            assert!(
                event.namespace.is_root(),
                "the session's state is the tree's: {event:?}"
            );
        }
    }
    let events = state_events(&client.seen);
    let ops: Vec<Value> = events
        .iter()
        .filter_map(|event| event["patch"].as_array())
        .flatten()
        .cloned()
        .collect();
    assert_eq!(events[0]["event"], "state_snapshot");
    assert_eq!(
        ops,
        [
            json!({"op": "add", "path": "/found", "value": []}),
            json!({"op": "add", "path": "/found/0", "value": 1}),
            json!({"op": "add", "path": "/found/1", "value": 2}),
        ],
        "the list and its numbers as they came, nothing twice: {events:?}"
    );
}
