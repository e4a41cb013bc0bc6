//! A whole run's log as a proptest strategy: what a store keeps, folds and replays. Its
//! messages stream through the real builder (text cut anywhere, parallel tool calls whose
//! argument deltas interleave and that end out of order, argument text with odd whitespace or
//! not valid JSON), some arrive whole, and the run may be cut off in the middle of a message.

use agentwire_core::{ErrorInfo, Event, EventKind, Message, RunStatus, ToolArgs, Usage};
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::Index;
use serde_json::Value;

use crate::strategy::message;
use crate::stream::{Choices, events_with_args};

/// How a generated run ends.
#[derive(Clone, Copy, Debug)]
enum Ending {
    Completed,
    Failed,
    Canceled,
    Incomplete,
    Rejected,
}

/// The log of a run that ended (completed, failed, canceled, incomplete or rejected), seqs
/// from 1 without a gap: `run_created`, `in_progress`, one to three messages, perhaps an
/// `error`, and the ending status with usage.
pub fn ended_run() -> impl Strategy<Value = Vec<Event>> {
    let ending = prop_oneof![
        3 => Just(Ending::Completed),
        1 => Just(Ending::Failed),
        1 => Just(Ending::Canceled),
        1 => Just(Ending::Incomplete),
        1 => Just(Ending::Rejected),
    ];
    (
        vec((message(), 0..6u8), 1..4),
        any::<Choices>(),
        ending,
        any::<Index>(),
        proptest::option::of((0u64..1000, 0u64..1000)),
    )
        .prop_map(|(messages, mut choices, ending, cut, usage)| {
            let messages: Vec<(Message, bool)> = messages
                .into_iter()
                .enumerate()
                .map(|(at, (mut message, whole))| {
                    message.id = Some(format!("msg_{at}").into());
                    (message, whole == 0)
                })
                .collect();
            run_log(&messages, &mut choices, ending, cut, usage)
        })
}

fn run_log(
    messages: &[(Message, bool)],
    choices: &mut Choices,
    ending: Ending,
    cut: Index,
    usage: Option<(u64, u64)>,
) -> Vec<Event> {
    let mut kinds = vec![
        EventKind::RunCreated {
            run_id: "run_1".into(),
            session_id: Some("ses_1".into()),
            agent: Some("assistant".into()),
            parent_run_id: None,
            parent_tool_call_id: None,
        },
        status(RunStatus::InProgress, None, None),
    ];
    for (at, (message, whole)) in messages.iter().enumerate() {
        let mut events = if *whole {
            vec![EventKind::MessageComplete {
                message: message.clone(),
            }]
        } else {
            events_with_args(message, choices, &odd_args_text)
                .into_iter()
                .map(|event| event.kind)
                .collect()
        };
        // A run that did not complete may stop in the middle of its last message.
        if at + 1 == messages.len() && !matches!(ending, Ending::Completed) {
            events.truncate(cut.index(events.len() + 1));
        }
        kinds.extend(events);
    }
    let usage = usage.map(|(input, output)| Usage::new(input, output));
    let (ended, error) = match ending {
        Ending::Completed => (RunStatus::Completed, None),
        Ending::Failed => (
            RunStatus::Failed,
            Some(ErrorInfo::new("provider_error", "the model is gone")),
        ),
        Ending::Canceled => (RunStatus::Canceled, None),
        Ending::Incomplete => (
            RunStatus::Incomplete,
            Some(ErrorInfo::new("max_steps", "too many steps")),
        ),
        Ending::Rejected => (RunStatus::Rejected, None),
    };
    if let Some(error) = &error {
        kinds.push(EventKind::Error(error.clone()));
    }
    kinds.push(status(ended, error, usage));
    kinds
        .into_iter()
        .zip(1..)
        .map(|(kind, seq)| Event::new(seq, kind))
        .collect()
}

fn status(status: RunStatus, error: Option<ErrorInfo>, usage: Option<Usage>) -> EventKind {
    EventKind::RunStatus {
        status,
        error,
        usage,
    }
}

/// Argument text as models write it: canonical, pretty-printed, padded with whitespace, or,
/// for arguments kept as a string, that string (a model that wrote text that is not JSON).
fn odd_args_text(args: &ToolArgs, choices: &mut Choices) -> String {
    match choices.pick(4) {
        0 => args.to_json_text(),
        1 => serde_json::to_string_pretty(&args.0).unwrap_or_else(|_| args.to_json_text()),
        2 => format!(" \n{}\t ", args.to_json_text()),
        _ => match &args.0 {
            Value::String(text) => text.clone(),
            _ => args.to_json_text(),
        },
    }
}
