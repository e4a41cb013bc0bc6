//! The shared state as tools see it: `update_state` run through a toolbox, all or nothing and
//! held to the state schema; a streamed patch refused at its end taken back with a snapshot.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use agentwire_core::{EventKind, Part, ToolArgs, ToolCall, ToolErrorKind, TraceContext};
use agentwire_tools::{SharedState, StateSchema, Toolbox, UpdateState};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

fn schema() -> Arc<StateSchema> {
    Arc::new(
        StateSchema::compile(&json!({
            "type": "object",
            "properties": {"count": {"type": "integer", "minimum": 0}}
        }))
        .unwrap(),
    )
}

async fn run(state: Option<&SharedState>, args: Value) -> Part {
    let mut toolbox = Toolbox::default();
    toolbox.add(UpdateState::new()).unwrap();
    let call = ToolCall {
        tool_call_id: "tc_1".into(),
        tool_name: UpdateState::NAME.into(),
        args: ToolArgs(args),
    };
    let limits = toolbox.limits();
    toolbox
        .run_within(
            &call,
            None,
            TraceContext::default(),
            CancellationToken::new(),
            limits,
            state.cloned(),
        )
        .await
}

fn names(events: &[EventKind]) -> Vec<&'static str> {
    events
        .iter()
        .map(|kind| match kind {
            EventKind::StateDelta { .. } => "state_delta",
            EventKind::StateSnapshot { .. } => "state_snapshot",
            _ => "other",
        })
        .collect()
}

#[tokio::test]
async fn update_state_applies_its_operations_and_queues_their_delta() {
    let state = SharedState::new(json!({"count": 0}), Some(schema()));
    let part = run(
        Some(&state),
        json!({"ops": [{"op": "replace", "path": "/count", "value": 1}, {"op": "add", "path": "/label", "value": "one"}]}),
    )
    .await;
    let Part::ToolResult(result) = part else {
        panic!("{part:?}")
    };
    assert_eq!(result.result, json!({"applied": 2}));
    assert_eq!(state.document(), json!({"count": 1, "label": "one"}));
    assert_eq!(names(&state.take_events()), ["state_delta"]);
    assert!(state.take_events().is_empty(), "taken once");
}

#[tokio::test]
async fn a_call_that_does_not_apply_or_fit_the_schema_changes_nothing() {
    let state = SharedState::new(json!({"count": 0}), Some(schema()));
    for (args, expect) in [
        (
            json!({"ops": [{"op": "replace", "path": "/count", "value": 2}, {"op": "remove", "path": "/nothing"}]}),
            "Validation failed for tool 'update_state': operation 1 (remove '/nothing') cannot be applied: its path is not in the state.",
        ),
        (
            json!({"ops": [{"op": "replace", "path": "/count", "value": -1}]}),
            "Validation failed for tool 'update_state': the state would not match its schema: at '/count': -1 is less than the minimum of 0.",
        ),
        (
            json!({"ops": [{"op": "jump", "path": "/count"}]}),
            "Validation failed for tool 'update_state': 'ops[0].op' must be one of \"add\", \"remove\", \"replace\", \"move\", \"copy\", \"test\", got \"jump\".",
        ),
    ] {
        let part = run(Some(&state), args).await;
        let Part::ToolError(error) = part else {
            panic!("{part:?}")
        };
        assert_eq!(error.error_type, ToolErrorKind::Validation);
        assert_eq!(error.message, expect);
        assert_eq!(state.document(), json!({"count": 0}));
        assert!(state.take_events().is_empty());
    }
}

#[tokio::test]
async fn without_a_state_the_call_fails_saying_so() {
    let part = run(None, json!({"ops": []})).await;
    let Part::ToolError(error) = part else {
        panic!("{part:?}")
    };
    assert_eq!(error.error_type, ToolErrorKind::Execution);
    assert!(
        error.message.contains("no shared state"),
        "{}",
        error.message
    );
}

#[test]
fn a_streamed_patch_the_schema_refuses_is_taken_back_with_a_snapshot() {
    let state = SharedState::new(json!({"count": 0}), Some(schema()));
    let mut stream = state.begin_stream();
    state
        .push_stream(
            &mut stream,
            r#"{"ops": [{"op": "replace", "path": "/count", "value": "many"}"#,
        )
        .unwrap();
    assert_eq!(
        state.document(),
        json!({"count": "many"}),
        "shown as it streams"
    );
    state.push_stream(&mut stream, "]}").unwrap();
    let error = state.finish_stream(&mut stream).unwrap_err();
    assert_eq!(
        error.to_string(),
        "the state would not match its schema: at '/count': \"many\" is not of type \"integer\""
    );
    assert_eq!(state.document(), json!({"count": 0}));
    let events = state.take_events();
    assert_eq!(names(&events), ["state_delta", "state_snapshot"]);
    assert!(
        matches!(&events[1], EventKind::StateSnapshot { state } if *state == json!({"count": 0}))
    );
}

#[test]
fn replacing_the_state_is_checked_and_shown_whole() {
    let state = SharedState::new(Value::Null, Some(schema()));
    assert!(state.replace(json!({"count": "x"})).is_err());
    assert!(state.take_events().is_empty());
    state.replace(json!({"count": 3})).unwrap();
    assert_eq!(names(&state.take_events()), ["state_snapshot"]);
    // `null` is no state, always allowed.
    state.replace(Value::Null).unwrap();
    assert_eq!(state.document(), Value::Null);
}
