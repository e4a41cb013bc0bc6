//! Streams a whole message through the real [`MessageBuilder`], cut into deltas and interleaved
//! as the test's choices say, so that a property can be checked for every way a model might have
//! streamed it.

use agentwire_core::{Emitter, Event, Message, MessageBuilder, MessageStart, Part, ToolArgs};
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::Index;

/// The choices that decide how a message is streamed: where its text and argument text are cut
/// into deltas, and how parallel tool calls interleave. Any list works; it is used cyclically,
/// and an empty list streams every part in one delta.
#[derive(Clone, Debug)]
pub struct Choices {
    picks: Vec<Index>,
    next: usize,
}

impl Choices {
    /// Choices from proptest indexes.
    pub fn new(picks: Vec<Index>) -> Self {
        Self { picks, next: 0 }
    }

    /// A choice among `n` options (`n > 0`).
    pub fn pick(&mut self, n: usize) -> usize {
        if self.picks.is_empty() {
            return 0;
        }
        let index = self.picks[self.next % self.picks.len()].index(n);
        self.next += 1;
        index
    }

    /// Cuts `text` at char boundaries into up to `1 + 2·len` non-empty pieces.
    fn cut<'t>(&mut self, text: &'t str) -> Vec<&'t str> {
        let mut pieces = Vec::new();
        let mut rest = text;
        while !rest.is_empty() {
            let boundaries: Vec<usize> = rest
                .char_indices()
                .map(|(at, c)| at + c.len_utf8())
                .collect();
            // Favour small pieces, as models stream them.
            let at = boundaries[self.pick(boundaries.len().min(6))];
            pieces.push(&rest[..at]);
            rest = &rest[at..];
        }
        pieces
    }
}

impl Arbitrary for Choices {
    type Parameters = ();
    type Strategy = BoxedStrategy<Choices>;

    fn arbitrary_with((): ()) -> Self::Strategy {
        vec(any::<Index>(), 0..64).prop_map(Choices::new).boxed()
    }
}

/// The events of `message` (which must have an id), streamed through a [`MessageBuilder`]: text,
/// reasoning and refusals cut into deltas, runs of adjacent tool calls streamed in parallel with
/// their argument deltas interleaved and their ends in any order, other parts whole.
pub fn events_for(message: &Message, choices: &mut Choices) -> Vec<Event> {
    events_with_args(message, choices, &|args, _| args.to_json_text())
}

/// As [`events_for`], with each tool call's argument text as `args_text` writes it from the
/// call's arguments (and the choices): a model's text need not be the canonical JSON.
pub fn events_with_args(
    message: &Message,
    choices: &mut Choices,
    args_text: &dyn Fn(&ToolArgs, &mut Choices) -> String,
) -> Vec<Event> {
    let mut out = Emitter::default();
    let start = MessageStart {
        message_id: message.id.clone().unwrap_or_else(|| "msg_unnamed".into()),
        role: message.role,
        metadata: message.metadata.clone(),
        created_at: message.created_at,
    };
    let mut builder = MessageBuilder::start(&mut out, start);
    let parts = &message.parts;
    let mut at = 0;
    while at < parts.len() {
        match &parts[at] {
            Part::Text(part) if !part.text.is_empty() => {
                for piece in choices.cut(&part.text) {
                    builder.text_delta(&mut out, piece);
                }
                builder.close_text(&mut out);
            }
            Part::Reasoning(part) if !part.text.is_empty() => {
                for piece in choices.cut(&part.text) {
                    builder.reasoning_delta(&mut out, piece);
                }
                builder.close_text(&mut out);
            }
            Part::Refusal(part) if !part.text.is_empty() => {
                for piece in choices.cut(&part.text) {
                    builder.refusal_delta(&mut out, piece);
                }
                builder.close_text(&mut out);
            }
            Part::ToolCall(_) => {
                at +=
                    stream_parallel_calls(&mut builder, &mut out, &parts[at..], choices, args_text);
                continue;
            }
            whole => builder.part(&mut out, whole.clone()),
        }
        at += 1;
    }
    builder.finish(&mut out);
    out.drain().collect()
}

/// Streams the run of tool calls at the start of `parts` in parallel; returns its length.
fn stream_parallel_calls(
    builder: &mut MessageBuilder,
    out: &mut Emitter,
    parts: &[Part],
    choices: &mut Choices,
    args_text: &dyn Fn(&ToolArgs, &mut Choices) -> String,
) -> usize {
    let mut calls = Vec::new();
    for part in parts {
        let Part::ToolCall(call) = part else { break };
        // Ids of calls streaming at once are distinct; a repeated id starts the next run.
        if calls.iter().any(|(id, _)| id == &call.tool_call_id) {
            break;
        }
        calls.push((call.tool_call_id.clone(), args_text(&call.args, choices)));
    }
    let mut pending: Vec<(usize, Vec<&str>)> = Vec::new();
    for (position, (_, text)) in calls.iter().enumerate() {
        let Part::ToolCall(call) = &parts[position] else {
            continue;
        };
        builder
            .tool_call_start(out, call.tool_call_id.clone(), call.tool_name.clone())
            .expect("distinct ids start");
        let mut pieces = choices.cut(text);
        pieces.reverse();
        pending.push((position, pieces));
    }
    while !pending.is_empty() {
        let slot = choices.pick(pending.len());
        let (position, pieces) = &mut pending[slot];
        if let Some(piece) = pieces.pop() {
            builder
                .tool_call_delta(out, calls[*position].0.as_str(), piece)
                .expect("started calls take deltas");
        } else {
            builder
                .tool_call_end(out, calls[*position].0.as_str())
                .expect("started calls end");
            pending.swap_remove(slot);
        }
    }
    calls.len()
}

/// The stream of a run with sub-agents, each run's message streamed as [`events_for`] streams it
/// and the runs interleaved as `interleaving` picks: run `run_a` writes `parent`; its children
/// `run_b` (answering its call `call_1`) and `run_c` (`call_2`) write `first` and `second`; the
/// grandchild `run_d` (under `run_b`, answering `call_9`) writes `grandchild`, and lives within
/// its parent's run. Every run is created, works, and completes; a parent completes after its
/// children. Every message takes the id `msg_1`: nesting, not ids, keeps them apart.
pub fn tree_events(
    [parent, first, second, grandchild]: [&Message; 4],
    choices: &mut Choices,
    interleaving: &[Index],
) -> Vec<Event> {
    use std::collections::VecDeque;

    use agentwire_core::{EventKind, Namespace, RunId, RunStatus};

    let run = |run_id: &str,
               parent_run: Option<(&str, &str)>,
               message: &Message,
               choices: &mut Choices| {
        let mut message = message.clone();
        message.id = Some("msg_1".into());
        let mut kinds = VecDeque::from([
            EventKind::RunCreated {
                run_id: run_id.into(),
                session_id: Some("ses_1".into()),
                agent: Some(format!("agent_{run_id}")),
                parent_run_id: parent_run.map(|(run, _)| run.into()),
                parent_tool_call_id: parent_run.map(|(_, call)| call.into()),
            },
            EventKind::RunStatus {
                status: RunStatus::InProgress,
                error: None,
                usage: None,
            },
        ]);
        kinds.extend(
            events_for(&message, choices)
                .into_iter()
                .map(|event| event.kind),
        );
        kinds.push_back(EventKind::RunStatus {
            status: RunStatus::Completed,
            error: None,
            usage: None,
        });
        kinds
    };
    let path = |ids: &[&str]| Namespace::new(ids.iter().map(|id| RunId::from(*id)));
    let mut streams = [
        (path(&[]), run("run_a", None, parent, choices)),
        (
            path(&["run_b"]),
            run("run_b", Some(("run_a", "call_1")), first, choices),
        ),
        (
            path(&["run_c"]),
            run("run_c", Some(("run_a", "call_2")), second, choices),
        ),
    ];
    let mut grand = run("run_d", Some(("run_b", "call_9")), grandchild, choices);
    // A parent ends after the runs inside it: hold the terminal statuses back.
    let parent_end = streams[0].1.pop_back();
    let first_end = streams[1].1.pop_back();
    let mut kinds = Vec::new();
    let mut picks = interleaving.iter().cycle();
    let mut first_started = false;
    loop {
        let mut live: Vec<usize> = (0..streams.len())
            .filter(|&at| !streams[at].1.is_empty())
            .collect();
        if !grand.is_empty() && first_started {
            live.push(streams.len());
        }
        if live.is_empty() {
            break;
        }
        let pick = picks.next().map_or(0, |index| index.index(live.len()));
        let chosen = live[pick];
        if chosen == streams.len() {
            if let Some(kind) = grand.pop_front() {
                kinds.push((path(&["run_b", "run_d"]), kind));
            }
        } else {
            first_started |= chosen == 1;
            let (namespace, queue) = &mut streams[chosen];
            if let Some(kind) = queue.pop_front() {
                kinds.push((namespace.clone(), kind));
            }
        }
    }
    kinds.extend(first_end.map(|kind| (path(&["run_b"]), kind)));
    kinds.extend(parent_end.map(|kind| (path(&[]), kind)));
    kinds
        .into_iter()
        .zip(1..)
        .map(|((namespace, kind), seq)| Event {
            seq,
            namespace,
            kind,
        })
        .collect()
}
