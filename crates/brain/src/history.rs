//! The conversation as every provider reads it: a sequence of [`Entry`]s, without IO and without
//! any provider's format. The provider adapters map these entries to their request bodies.
//!
//! Our model keeps ONE assistant message per turn, its steps marked by `step_start` parts, with
//! tool results and errors as parts of that same message, or (for tools the client ran) in a
//! later user or tool message. Providers want one assistant message per model call, each
//! followed by the answer to every call it made. So:
//!
//! - An assistant message is cut into [`Step`]s: at each `step_start`, and where output
//!   (reasoning, text, a refusal, data, a tool call) follows a tool result or error, so that a
//!   history written without `step_start`s (a call, its error and the fix as separate messages)
//!   maps too. A step keeps the output parts in order; everything else in the message is left
//!   out of it. Its `data` parts are there for the adapters to pick what their provider wants
//!   back (Anthropic's thinking signatures); each adapter leaves out every other data part, such
//!   as the provider output kept only so that it is not lost (server tool blocks, citations, stop
//!   details).
//! - Each step that calls tools is followed by [`Entry::Outcomes`]: one [`Outcome`] per call, in
//!   call order, found wherever the history has it (the assistant message itself, or a later
//!   user or tool message). The first outcome of a call counts.
//! - A call with no outcome in the history (a turn cut short by a cancel or a crash) is kept,
//!   with a `tool_error` EXECUTION saying it did not finish ([`UNFINISHED`]): the model learns it
//!   made the call and that it did not run, and both APIs refuse a call without its answer.
//! - An outcome whose call is nowhere in the history is left out: there is nothing to attach it
//!   to, and the APIs refuse an answer without its call.
//! - `system` messages are [`Entry::System`], user and tool-role messages [`Entry::User`] (their
//!   outcome parts belong to the calls and are for the adapter to skip); `data`-role messages,
//!   which are for the client only, are left out, outcomes in them too.

use std::borrow::Cow;
use std::collections::HashMap;

use agentwire_core::part::DataPart;
use agentwire_core::{Message, Part, Role, ToolCall, ToolErrorKind, ToolResult};
use serde_json::{Value, json};

/// What the model reads for a call whose outcome is not in the history.
pub(crate) const UNFINISHED: &str =
    "The call did not finish (the run was canceled or interrupted before it returned).";

/// One entry of the conversation, in order.
#[derive(Debug)]
pub(crate) enum Entry<'a> {
    /// A `system` message.
    System(&'a Message),
    /// A user or tool-role message. Its tool results and errors are not its content: they sit
    /// in the [`Entry::Outcomes`] after their call.
    User(&'a Message),
    /// One model call's output.
    Step(Step<'a>),
    /// The outcomes of the step just before, one per call, in call order.
    Outcomes(Vec<Outcome<'a>>),
}

/// One model call's output: its reasoning, text, refusal, data and tool-call parts, in order.
#[derive(Debug, Default)]
pub(crate) struct Step<'a> {
    /// The parts, in order.
    pub(crate) parts: Vec<&'a Part>,
}

impl<'a> Step<'a> {
    /// The tool calls the step made, in order.
    pub(crate) fn calls(&self) -> impl Iterator<Item = &'a ToolCall> + '_ {
        self.parts.iter().filter_map(|part| match part {
            Part::ToolCall(call) => Some(call),
            _ => None,
        })
    }
}

/// A tool call's outcome.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Outcome<'a> {
    /// The call answered.
    pub(crate) call: &'a ToolCall,
    /// What came of it.
    pub(crate) answer: Answer<'a>,
}

/// What came of a tool call.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Answer<'a> {
    /// The tool's result, perhaps marked `is_error` by the tool itself.
    Result(&'a ToolResult),
    /// A tool error: the history's, or [`UNFINISHED`] for a call without an outcome.
    Error {
        /// VALIDATION or EXECUTION.
        kind: ToolErrorKind,
        /// What went wrong, for the model.
        message: &'a str,
    },
}

impl<'a> Answer<'a> {
    /// The answer as the model reads it: a string result as is, any other result as JSON
    /// text, an error as [`tool_error_text`]. Whether a result is marked `is_error` is for the
    /// adapter to say.
    pub(crate) fn text(self) -> Cow<'a, str> {
        match self {
            Answer::Result(ToolResult {
                result: Value::String(text),
                ..
            }) => Cow::Borrowed(text),
            Answer::Result(result) => Cow::Owned(result.result.to_string()),
            Answer::Error { kind, message } => Cow::Owned(tool_error_text(kind, message)),
        }
    }
}

/// A tool error as the model reads it, `{"error": {"type": "VALIDATION" | "EXECUTION",
/// "message": "…"}}`, the shape it corrects itself from.
pub(crate) fn tool_error_text(kind: ToolErrorKind, message: &str) -> String {
    json!({"error": {"type": kind, "message": message}}).to_string()
}

/// A data part as the model reads it: its native JSON.
pub(crate) fn data_text(data: &DataPart) -> String {
    json!({"type": "data", "name": data.name, "data": data.data}).to_string()
}

/// The history as entries.
pub(crate) fn entries(history: &[Message]) -> Vec<Entry<'_>> {
    let answers = answers(history);
    let mut entries = Vec::with_capacity(history.len());
    for message in history {
        match message.role {
            Role::System => entries.push(Entry::System(message)),
            Role::User | Role::Tool => entries.push(Entry::User(message)),
            Role::Assistant => steps(&message.parts, &answers, &mut entries),
            Role::Data => {}
        }
    }
    entries
}

/// Every tool outcome outside `data`-role messages, by call id; the first one counts.
fn answers(history: &[Message]) -> HashMap<&str, Answer<'_>> {
    let mut answers = HashMap::new();
    let parts = history
        .iter()
        .filter(|message| matches!(message.role, Role::User | Role::Tool | Role::Assistant))
        .flat_map(|message| &message.parts);
    for part in parts {
        let (id, answer) = match part {
            Part::ToolResult(result) => (result.tool_call_id.as_str(), Answer::Result(result)),
            Part::ToolError(error) => (
                error.tool_call_id.as_str(),
                Answer::Error {
                    kind: error.error_type,
                    message: &error.message,
                },
            ),
            _ => continue,
        };
        answers.entry(id).or_insert(answer);
    }
    answers
}

/// An assistant message's steps, each followed by its calls' outcomes.
fn steps<'a>(parts: &'a [Part], answers: &HashMap<&str, Answer<'a>>, out: &mut Vec<Entry<'a>>) {
    let mut step = Step::default();
    let mut after_outcome = false;
    for part in parts {
        match part {
            Part::StepStart(_) => {
                close(std::mem::take(&mut step), answers, out);
                after_outcome = false;
            }
            Part::ToolResult(_) | Part::ToolError(_) => after_outcome = true,
            Part::Reasoning(_)
            | Part::Text(_)
            | Part::Refusal(_)
            | Part::Data(_)
            | Part::ToolCall(_) => {
                if after_outcome {
                    close(std::mem::take(&mut step), answers, out);
                    after_outcome = false;
                }
                step.parts.push(part);
            }
            _ => {}
        }
    }
    close(step, answers, out);
}

/// Writes a step, when it holds anything, and its calls' outcomes.
fn close<'a>(step: Step<'a>, answers: &HashMap<&str, Answer<'a>>, out: &mut Vec<Entry<'a>>) {
    if step.parts.is_empty() {
        return;
    }
    let outcomes: Vec<Outcome<'a>> = step
        .calls()
        .map(|call| Outcome {
            call,
            answer: answers
                .get(call.tool_call_id.as_str())
                .copied()
                .unwrap_or(Answer::Error {
                    kind: ToolErrorKind::Execution,
                    message: UNFINISHED,
                }),
        })
        .collect();
    out.push(Entry::Step(step));
    if !outcomes.is_empty() {
        out.push(Entry::Outcomes(outcomes));
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// The entries of a history given as native JSON, one line each: `system`, `user`,
    /// `step <part types, calls by id>`, `outcomes <id=answer text>`.
    fn sketch(messages: Value) -> Vec<String> {
        let history: Vec<Message> = serde_json::from_value(messages).expect("messages");
        entries(&history)
            .iter()
            .map(|entry| match entry {
                Entry::System(_) => "system".to_owned(),
                Entry::User(_) => "user".to_owned(),
                Entry::Step(step) => {
                    let parts: Vec<String> = step
                        .parts
                        .iter()
                        .map(|part| match part {
                            Part::ToolCall(call) => format!("call:{}", call.tool_call_id),
                            Part::Text(text) => format!("text:{}", text.text),
                            Part::Reasoning(_) => "reasoning".to_owned(),
                            Part::Refusal(_) => "refusal".to_owned(),
                            Part::Data(data) => format!("data:{}", data.name),
                            other => format!("{other:?}"),
                        })
                        .collect();
                    format!("step {}", parts.join(" "))
                }
                Entry::Outcomes(outcomes) => {
                    let answers: Vec<String> = outcomes
                        .iter()
                        .map(|outcome| {
                            format!("{}={}", outcome.call.tool_call_id, outcome.answer.text())
                        })
                        .collect();
                    format!("outcomes {}", answers.join(" "))
                }
            })
            .collect()
    }

    #[test]
    fn a_turn_is_cut_at_step_starts_with_each_step_s_outcomes_in_call_order() {
        let entries = sketch(json!([
            {"role": "system", "parts": [{"type": "text", "text": "Rules."}]},
            {"role": "user", "parts": [{"type": "text", "text": "Go"}]},
            {"role": "assistant", "parts": [
                {"type": "step_start", "step_id": "s1"},
                {"type": "reasoning", "text": "Two tools."},
                {"type": "text", "text": "Calling."},
                {"type": "tool_call", "tool_call_id": "a", "tool_name": "t", "args": {}},
                {"type": "tool_call", "tool_call_id": "b", "tool_name": "t", "args": {}},
                {"type": "tool_result", "tool_call_id": "b", "result": "B"},
                {"type": "tool_error", "tool_call_id": "a", "error_type": "VALIDATION",
                 "message": "no path"},
                {"type": "approval_request", "approval_id": "p", "tool_call_id": "a"},
                {"type": "step_start", "step_id": "s2"},
                {"type": "refusal", "text": "No."},
                {"type": "step_start", "step_id": "s3"},
                {"type": "text", "text": "Done."}
            ]}
        ]));
        assert_eq!(
            entries,
            [
                "system",
                "user",
                "step reasoning text:Calling. call:a call:b",
                r#"outcomes a={"error":{"type":"VALIDATION","message":"no path"}} b=B"#,
                "step refusal",
                "step text:Done.",
            ]
        );
    }

    #[test]
    fn without_step_starts_output_after_an_outcome_starts_a_step() {
        // Self-correction as AgentX writes it: the call, its error and the correction as three
        // messages.
        let entries = sketch(json!([
            {"role": "assistant", "parts": [
                {"type": "tool_call", "tool_call_id": "tc_456", "tool_name": "write_file", "args": {}}
            ]},
            {"role": "assistant", "parts": [
                {"type": "tool_error", "tool_call_id": "tc_456", "error_type": "VALIDATION",
                 "message": "Missing 'path'."}
            ]},
            {"role": "assistant", "parts": [
                {"type": "text", "text": "Sorry."},
                {"type": "tool_call", "tool_call_id": "tc_789", "tool_name": "write_file", "args": {}},
                {"type": "tool_result", "tool_call_id": "tc_789", "result": {"ok": true}},
                {"type": "data", "name": "note", "data": 1},
                {"type": "text", "text": "Written."}
            ]}
        ]));
        assert_eq!(
            entries,
            [
                "step call:tc_456",
                r#"outcomes tc_456={"error":{"type":"VALIDATION","message":"Missing 'path'."}}"#,
                "step text:Sorry. call:tc_789",
                r#"outcomes tc_789={"ok":true}"#,
                "step data:note text:Written.",
            ]
        );
    }

    #[test]
    fn client_outcomes_follow_their_call_and_the_first_one_counts() {
        let entries = sketch(json!([
            {"role": "assistant", "parts": [
                {"type": "tool_call", "tool_call_id": "loc", "tool_name": "get_location", "args": {}}
            ]},
            {"role": "user", "parts": [
                {"type": "text", "text": "Here."},
                {"type": "tool_result", "tool_call_id": "loc", "result": "Oslo"}
            ]},
            {"role": "tool", "parts": [
                {"type": "tool_result", "tool_call_id": "loc", "result": "a second answer"}
            ]}
        ]));
        assert_eq!(
            entries,
            ["step call:loc", "outcomes loc=Oslo", "user", "user"]
        );
    }

    #[test]
    fn a_call_without_an_outcome_is_answered_as_unfinished_and_an_orphan_outcome_is_dropped() {
        let entries = sketch(json!([
            {"role": "assistant", "parts": [
                {"type": "tool_call", "tool_call_id": "slow", "tool_name": "t", "args": {}},
                {"type": "tool_call", "tool_call_id": "fast", "tool_name": "t", "args": {}},
                {"type": "tool_result", "tool_call_id": "fast", "result": "ok"},
                {"type": "tool_result", "tool_call_id": "nowhere", "result": "lost"}
            ]},
            {"role": "data", "parts": [
                {"type": "tool_result", "tool_call_id": "slow", "result": "for the client only"}
            ]}
        ]));
        let unfinished = tool_error_text(ToolErrorKind::Execution, UNFINISHED);
        assert_eq!(
            entries,
            [
                "step call:slow call:fast".to_owned(),
                format!("outcomes slow={unfinished} fast=ok"),
            ]
        );
        assert_eq!(
            unfinished,
            r#"{"error":{"type":"EXECUTION","message":"The call did not finish (the run was canceled or interrupted before it returned)."}}"#
        );
    }

    #[test]
    fn an_assistant_message_with_nothing_for_the_model_has_no_step() {
        let entries = sketch(json!([
            {"role": "assistant", "parts": [
                {"type": "step_start", "step_id": "s1"},
                {"type": "file", "media_type": "image/png", "url": "https://x.test/a.png"},
                {"type": "step_start", "step_id": "s2"}
            ]},
            {"role": "assistant", "parts": []}
        ]));
        assert!(entries.is_empty(), "{entries:?}");
    }
}
