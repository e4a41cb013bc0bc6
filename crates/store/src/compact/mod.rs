//! The compact form of an ended run's log: the same events, in far fewer bytes.
//!
//! Most of a run's log is `part_delta`s, and the text they carry is stored three more times: in
//! the `part_complete` that ends the part, in the `message_complete` that ends its message, and
//! in the session's history, which holds that message too. [`CompactLog::fold`] keeps every
//! other event as it was and drops the deltas, keeping for each streamed part only the seqs of
//! its deltas and their lengths; it drops each `part_complete` whose part its
//! `message_complete` holds byte for byte, and each `message_complete` whose message the
//! session's history holds byte for byte, keeping their seqs (and the message's place in the
//! history).
//!
//! [`CompactLog::expand`] gives the original events back: each delta is the next `length` bytes
//! of its part's final text (a tool call's: its arguments' JSON text, or the text itself when
//! the arguments were kept as a string for not being JSON), at its seq. Where that text is not
//! what streamed (argument text with other whitespace, a part cut off by the run's end), the
//! streamed text is kept as it was.
//!
//! So a replay from any seq of a compacted log is exactly the replay of the original log:
//! gapless, every seq as it was, nothing repeated. [`CompactLog::fold`] checks that on every
//! log it folds and gives `None` for one it cannot give back exactly.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use agentwire_core::{Event, EventKind, Message, MessageId, Part};

use self::lengths::Lengths;
use crate::error::StoreError;

mod lengths;

/// An ended run's log in compact form: stored as one JSON object where batches are arrays.
#[derive(Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct CompactLog {
    /// The events kept as they were, in seq order.
    events: Vec<Event>,
    /// `message_complete`s left out because the session's history holds the same message:
    /// `[seq, its position in the history]`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    held: Vec<[u64; 2]>,
    /// `part_complete`s left out because their message's `message_complete` holds the same
    /// part: `[seq, seq of that message_complete, index]`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    completes: Vec<[u64; 3]>,
    /// The folded deltas of each streamed part that had any.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    deltas: Vec<FoldedDeltas>,
}

/// One streamed part's deltas, without their text.
#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct FoldedDeltas {
    /// The seq of the part's `part_start`, which names its message and index.
    start: u64,
    /// The deltas' seqs, as runs of consecutive seqs: `[first, count]`.
    seqs: Vec<[u64; 2]>,
    /// Each delta's length in bytes, in order.
    lens: Lengths,
    /// Where the deltas' text is.
    #[serde(default, skip_serializing_if = "DeltaText::is_final")]
    text: DeltaText,
}

/// Where a folded part's streamed text is found.
#[derive(Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum DeltaText {
    /// The text of the part's `part_complete`; for a tool call, its arguments as JSON text.
    #[default]
    Final,
    /// A tool call's arguments are a JSON string holding the text: arguments that were not
    /// valid JSON (see `ToolArgs::from_json_text`).
    ArgsString,
    /// As streamed (no completion holds it).
    Kept(String),
}

impl DeltaText {
    fn is_final(&self) -> bool {
        matches!(self, DeltaText::Final)
    }
}

/// A part's key within a run: its message and index.
type PartKey = (MessageId, u32);

impl CompactLog {
    /// The compact form of `events` (a whole log, in seq order), or `None` when it would not
    /// give back exactly these events. `held` gives the position in the session's history of
    /// a message the history holds byte for byte as this log does.
    pub(crate) fn fold(
        events: &[Event],
        held: impl Fn(&Message) -> Option<u64>,
    ) -> Option<CompactLog> {
        let completions = message_completions(events);
        let mut log = CompactLog::default();
        let mut history = HashMap::new();
        // Parts started and not yet complete: where their folded deltas are, and their text.
        let mut open: HashMap<PartKey, (Option<usize>, String)> = HashMap::new();
        for event in events {
            // A sub-agent's events, nested in the run's, are kept as they are: their messages
            // are not in the session's history, and their ids are their run's.
            if !event.is_own() {
                log.events.push(event.clone());
                continue;
            }
            match &event.kind {
                EventKind::PartStart {
                    message_id, index, ..
                } => {
                    open.insert((message_id.clone(), *index), (None, String::new()));
                    log.events.push(event.clone());
                }
                EventKind::PartDelta {
                    message_id,
                    index,
                    delta,
                } => match open.get_mut(&(message_id.clone(), *index)) {
                    Some((folded, text)) => {
                        let at = match folded {
                            Some(at) => *at,
                            None => {
                                let start =
                                    FoldedDeltas::starting(&log.events, message_id, *index)?;
                                log.deltas.push(start);
                                *folded.insert(log.deltas.len() - 1)
                            }
                        };
                        log.deltas[at].push(event.seq, delta.len());
                        text.push_str(delta);
                    }
                    None => log.events.push(event.clone()),
                },
                EventKind::PartComplete {
                    message_id,
                    index,
                    part,
                } => {
                    if let Some((Some(at), text)) = open.remove(&(message_id.clone(), *index)) {
                        log.deltas[at].text = DeltaText::of(part, text);
                    }
                    match completions.get(message_id) {
                        Some((seq, message))
                            if *seq > event.seq && same_part(message, *index, part) =>
                        {
                            log.completes.push([event.seq, *seq, u64::from(*index)]);
                        }
                        _ => log.events.push(event.clone()),
                    }
                }
                EventKind::MessageComplete { message } => match held(message) {
                    Some(position) => {
                        log.held.push([event.seq, position]);
                        history.insert(position, message.clone());
                    }
                    None => log.events.push(event.clone()),
                },
                _ => log.events.push(event.clone()),
            }
        }
        // Parts that never completed keep their text as it streamed.
        for (folded, text) in open.into_values() {
            if let Some(at) = folded {
                log.deltas[at].text = DeltaText::Kept(text);
            }
        }
        let same = log.expand(&history).ok().is_some_and(|expanded| {
            expanded.len() == events.len()
                && expanded
                    .iter()
                    .zip(events)
                    .all(|(a, b)| serde_json::to_string(a).ok() == serde_json::to_string(b).ok())
        });
        same.then_some(log)
    }

    /// The positions in the session's history of the messages [`CompactLog::expand`] needs.
    pub(crate) fn held_positions(&self) -> impl Iterator<Item = u64> + '_ {
        self.held.iter().map(|&[_, position]| position)
    }

    /// The events this form was folded from, in seq order. `history` holds the session's
    /// messages at [`CompactLog::held_positions`].
    pub(crate) fn expand(&self, history: &HashMap<u64, Message>) -> Result<Vec<Event>, StoreError> {
        let mut kept = self.events.clone();
        for &[seq, position] in &self.held {
            let message = history
                .get(&position)
                .ok_or_else(|| corrupt(seq, "the session's history lacks the message"))?;
            kept.push(Event::new(
                seq,
                EventKind::MessageComplete {
                    message: message.clone(),
                },
            ));
        }
        kept.sort_by_key(|event| event.seq);
        let find = |seq: u64| {
            kept.binary_search_by_key(&seq, |event| event.seq)
                .ok()
                .map(|at| &kept[at].kind)
        };
        let mut out = Vec::new();
        for &[seq, complete_seq, index] in &self.completes {
            let Some(EventKind::MessageComplete { message }) = find(complete_seq) else {
                return Err(corrupt(seq, "no message_complete to take the part from"));
            };
            let (Some(message_id), Some(part), Ok(index)) = (
                message.id.clone(),
                usize::try_from(index)
                    .ok()
                    .and_then(|index| message.parts.get(index)),
                u32::try_from(index),
            ) else {
                return Err(corrupt(seq, "the message_complete has no such part"));
            };
            out.push(Event::new(
                seq,
                EventKind::PartComplete {
                    message_id,
                    index,
                    part: part.clone(),
                },
            ));
        }
        // The completions, kept and derived, hold the final text of the folded parts.
        let finals: HashMap<(&MessageId, u32), &Part> = kept
            .iter()
            .chain(&out)
            .filter_map(|event| match &event.kind {
                EventKind::PartComplete {
                    message_id,
                    index,
                    part,
                } => Some(((message_id, *index), part)),
                _ => None,
            })
            .collect();
        let mut deltas = Vec::new();
        for folded in &self.deltas {
            let Some(EventKind::PartStart {
                message_id, index, ..
            }) = find(folded.start)
            else {
                return Err(corrupt(
                    folded.start,
                    "folded deltas without their part_start",
                ));
            };
            let final_part = finals.get(&(message_id, *index)).copied();
            let text = folded.text.resolve(final_part, folded.start)?;
            folded.expand(message_id, *index, &text, &mut deltas)?;
        }
        out.extend(deltas);
        out.extend(kept);
        out.sort_by_key(|event| event.seq);
        if out.windows(2).any(|pair| pair[0].seq == pair[1].seq) {
            return Err(StoreError::Corrupt(
                "compact log: a seq is used twice".into(),
            ));
        }
        Ok(out)
    }
}

impl FoldedDeltas {
    /// The folded deltas of the part whose `part_start` is the last kept one for it.
    fn starting(kept: &[Event], message_id: &MessageId, index: u32) -> Option<FoldedDeltas> {
        let start = kept.iter().rev().find(|event| {
            matches!(&event.kind, EventKind::PartStart { message_id: of, index: at, .. }
                if of == message_id && *at == index)
        })?;
        Some(FoldedDeltas {
            start: start.seq,
            seqs: Vec::new(),
            lens: Lengths::default(),
            text: DeltaText::Final,
        })
    }

    fn push(&mut self, seq: u64, len: usize) {
        match self.seqs.last_mut() {
            Some([first, count]) if *first + *count == seq => *count += 1,
            _ => self.seqs.push([seq, 1]),
        }
        self.lens.0.push(len);
    }

    /// The deltas again: `text` cut into the lengths, at the seqs.
    fn expand(
        &self,
        message_id: &MessageId,
        index: u32,
        text: &str,
        out: &mut Vec<Event>,
    ) -> Result<(), StoreError> {
        let n_seqs: u64 = self.seqs.iter().map(|[_, count]| count).sum();
        if usize::try_from(n_seqs).ok() != Some(self.lens.0.len()) {
            return Err(corrupt(
                self.start,
                "folded deltas with more seqs than lengths",
            ));
        }
        let seqs = self
            .seqs
            .iter()
            .flat_map(|&[first, count]| first..first.saturating_add(count));
        let mut rest = text;
        for (seq, &len) in seqs.zip(&self.lens.0) {
            // False past the end too.
            if !rest.is_char_boundary(len) {
                return Err(corrupt(
                    seq,
                    "a delta's length does not fit the part's text",
                ));
            }
            let (delta, after) = rest.split_at(len);
            rest = after;
            out.push(Event::new(
                seq,
                EventKind::PartDelta {
                    message_id: message_id.clone(),
                    index,
                    delta: delta.to_owned(),
                },
            ));
        }
        if !rest.is_empty() {
            return Err(corrupt(
                self.start,
                "the deltas do not add up to the part's text",
            ));
        }
        Ok(())
    }
}

impl DeltaText {
    /// Where to find `streamed`, the text of a part that completed as `part`.
    fn of(part: &Part, streamed: String) -> DeltaText {
        match final_text(part) {
            Some(text) if text == streamed => DeltaText::Final,
            _ => match part {
                Part::ToolCall(call) if call.args.0.as_str() == Some(streamed.as_str()) => {
                    DeltaText::ArgsString
                }
                _ => DeltaText::Kept(streamed),
            },
        }
    }

    /// The streamed text, given the part's completion.
    fn resolve(&self, part: Option<&Part>, start: u64) -> Result<String, StoreError> {
        let missing = || corrupt(start, "folded deltas without the part's completion");
        Ok(match self {
            DeltaText::Final => final_text(part.ok_or_else(missing)?).ok_or_else(missing)?,
            DeltaText::ArgsString => match part {
                Some(Part::ToolCall(call)) => call.args.0.as_str().ok_or_else(missing)?.to_owned(),
                _ => return Err(missing()),
            },
            DeltaText::Kept(text) => text.clone(),
        })
    }
}

/// The text a streamed part's deltas add up to when it streamed canonically.
fn final_text(part: &Part) -> Option<String> {
    match part {
        Part::Text(part) => Some(part.text.clone()),
        Part::Reasoning(part) => Some(part.text.clone()),
        Part::Refusal(part) => Some(part.text.clone()),
        Part::ToolCall(call) => Some(call.args.to_json_text()),
        _ => None,
    }
}

/// Each message's `message_complete`: its seq and message.
fn message_completions(events: &[Event]) -> HashMap<&MessageId, (u64, &Message)> {
    events
        .iter()
        .filter(|event| event.is_own())
        .filter_map(|event| match &event.kind {
            EventKind::MessageComplete { message } => {
                Some((message.id.as_ref()?, (event.seq, message)))
            }
            _ => None,
        })
        .collect()
}

/// Whether `message` holds `part` at `index`, byte for byte as stored.
fn same_part(message: &Message, index: u32, part: &Part) -> bool {
    usize::try_from(index)
        .ok()
        .and_then(|index| message.parts.get(index))
        .is_some_and(|held| serde_json::to_string(held).ok() == serde_json::to_string(part).ok())
}

fn corrupt(seq: u64, what: &str) -> StoreError {
    StoreError::Corrupt(format!("compact log at seq {seq}: {what}"))
}

#[cfg(test)]
mod tests;
