//! The Responses API stream (`POST /v1/responses` with `stream: true`), read without IO: feed
//! each SSE `data:` payload to an [`EventParser`] (a [`StreamParser`]) and get brain events.
//!
//! Every payload names its own kind in `type` (the SSE `event:` line repeats it), and carries a
//! `sequence_number`. The stream ends with `response.completed`, `response.incomplete` or
//! `response.failed`; there is no `[DONE]`. What each event becomes:
//!
//! - `response.output_text.delta` → text, `response.refusal.delta` → refusal,
//!   `response.reasoning_summary_text.delta` (OpenAI's reasoning models) and
//!   `response.reasoning_text.delta` (open models served with the Responses API) → reasoning.
//!   The summary parts of one reasoning item are separated by a blank line.
//! - A `function_call` item: `response.output_item.added` starts the call under its `call_id`
//!   (the id its output refers to), `response.function_call_arguments.delta` streams the
//!   arguments, found by `item_id` (else `output_index`), and
//!   `response.function_call_arguments.done` or the item's `response.output_item.done` ends it.
//!   A server that sends the arguments only whole (in the added item, the `done` event or the
//!   done item) is read too: what did not stream goes out once, before the end.
//! - A `reasoning` item, once done, is kept whole as a [`BrainEvent::Data`] named
//!   [`REASONING_ITEM`] (its `id`, `summary` and, because agentwire asks for it,
//!   `encrypted_content`): with `store: false` the model's reasoning lives only there, and the
//!   API wants the item back in the next turn's input. It follows the reasoning text it holds,
//!   so it becomes a `data` part right after the `reasoning` part: parts carry no provider
//!   metadata, and a part keeps its place through storage and dialect round trips.
//! - Annotations of an output text, from `response.output_text.annotation.added`, are given
//!   once the text they annotate is done, so they do not cut it in two: a `url_citation`
//!   (`{"type", "url", "title", "start_index", "end_index"}`) as a [`BrainEvent::Source`], each
//!   URL once per stream (the character range has no place in a source part); any other
//!   (`file_citation`, `container_file_citation`, `file_path`) kept as it came, as a
//!   [`BrainEvent::Data`] named [`ANNOTATION`].
//! - An output item of another type (a built-in tool's call, such as `web_search_call`) is kept
//!   whole at its `response.output_item.done`, as a [`BrainEvent::Data`] named `openai.<type>`.
//! - `response.completed` finishes with `tool_calls` when the response called a function, else
//!   `stop`; `response.incomplete` finishes with its `incomplete_details.reason`
//!   (`max_output_tokens` → `length`, `content_filter` → `content_filter`). Both carry the
//!   usage, reasoning and cached tokens included.
//! - `response.failed` and an `error` event are [`BrainError::Model`] with the provider's
//!   message and code: terminal, as the Chat Completions adapter's error chunk is.
//!
//! Read and not needed: the response's lifecycle (`created`, `in_progress`, `queued`), content
//! and summary part boundaries, and the `done` events whose deltas already streamed. An event
//! type this parser does not know (a built-in tool's progress, a newer event) is logged as a
//! `tracing` warning, once per type and stream; what such a tool produced arrives in its item.

use agentwire_core::Usage;
use serde::Deserialize;
use serde_json::Value;

use crate::http::excerpt;
use crate::{BrainError, BrainEvent, FinishReason, StreamParser};

/// The name of the [`BrainEvent::Data`] holding a reasoning item as the API sent it, for the
/// next turn's input.
pub const REASONING_ITEM: &str = "openai.reasoning";

/// The name of the [`BrainEvent::Data`] holding one annotation of the answer's text that is not
/// a URL citation (a `file_citation`, a `file_path`, …) as the API sent it.
pub const ANNOTATION: &str = "openai.annotation";

/// Turns Responses API stream events into brain events, one event at a time.
#[derive(Debug, Default)]
pub struct EventParser {
    /// Function calls started and not yet ended.
    calls: Vec<OpenCall>,
    /// Whether the response called a function: its finish is then `tool_calls`.
    called: bool,
    /// The reasoning item streaming a summary, and the summary part it is at.
    summary_at: Option<(String, u64)>,
    /// Annotations of the text streaming, given once the text is done.
    annotations: Vec<Value>,
    /// The URLs cited as sources so far: each is given once.
    cited: Vec<String>,
    done: bool,
    n_events: u64,
    /// Unknown event types logged in this stream.
    logged: Vec<String>,
}

/// A function call whose arguments are streaming.
#[derive(Debug)]
struct OpenCall {
    item_id: String,
    output_index: Option<u64>,
    /// The id the brain events and the call's output use (`call_id`).
    call_id: String,
    /// Whether any argument text went out.
    streamed: bool,
}

/// One event, with the fields any kind of event may carry; each kind reads its own.
#[derive(Deserialize)]
struct WireEvent {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    item_id: Option<String>,
    #[serde(default)]
    output_index: Option<u64>,
    #[serde(default)]
    summary_index: Option<u64>,
    /// A string for every delta this parser reads; other events may put anything here.
    #[serde(default)]
    delta: Option<Value>,
    #[serde(default)]
    arguments: Option<String>,
    #[serde(default)]
    item: Option<Value>,
    #[serde(default)]
    annotation: Option<Value>,
    #[serde(default)]
    response: Option<WireResponse>,
    /// The `error` event's fields (top level, or in `error` for some servers).
    #[serde(default)]
    message: Option<String>,
    #[serde(default)]
    code: Option<Value>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Default, Deserialize)]
struct WireResponse {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    incomplete_details: Option<IncompleteDetails>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct IncompleteDetails {
    #[serde(default)]
    reason: Option<String>,
}

#[derive(Deserialize)]
struct WireUsage {
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
    #[serde(default)]
    input_tokens_details: Option<TokenDetails>,
    #[serde(default)]
    output_tokens_details: Option<TokenDetails>,
}

#[derive(Deserialize)]
struct TokenDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
    #[serde(default)]
    reasoning_tokens: Option<u64>,
}

impl StreamParser for EventParser {
    /// Reads one SSE `data:` payload (a JSON event), appending the events it completes.
    ///
    /// # Errors
    /// [`BrainError::MalformedStream`] for a payload that is not an event or arguments for a
    /// call never started, and [`BrainError::Model`] for `response.failed` and `error`. All
    /// are terminal.
    fn push(&mut self, data: &str, out: &mut Vec<BrainEvent>) -> Result<(), BrainError> {
        if self.done {
            return Ok(());
        }
        self.n_events += 1;
        let event: WireEvent =
            serde_json::from_str(data).map_err(|error| BrainError::MalformedStream {
                message: format!("event {} does not parse: {error}", self.n_events),
            })?;
        match event.kind.as_str() {
            "response.output_text.delta" => {
                if let Some(text) = delta_text(&event) {
                    out.push(BrainEvent::TextDelta { text });
                }
            }
            "response.refusal.delta" => {
                if let Some(text) = delta_text(&event) {
                    out.push(BrainEvent::RefusalDelta { text });
                }
            }
            "response.reasoning_summary_text.delta" => self.summary_delta(event, out),
            "response.reasoning_text.delta" => {
                if let Some(text) = delta_text(&event) {
                    out.push(BrainEvent::ReasoningDelta { text });
                }
            }
            "response.output_item.added" => self.item_added(event, out),
            "response.function_call_arguments.delta" => self.arguments_delta(event, out)?,
            "response.function_call_arguments.done" => {
                if let Some(position) = self.call_position(&event) {
                    self.end_call(position, event.arguments.as_deref(), out);
                }
            }
            "response.output_item.done" => self.item_done(event, out),
            "response.output_text.annotation.added" | "response.output_text_annotation.added" => {
                self.annotations.extend(event.annotation);
            }
            "response.output_text.done" => self.flush_annotations(out),
            "response.completed" => self.end(FinishReason::Stop, event.response, out),
            "response.incomplete" => {
                let response = event.response.unwrap_or_default();
                let reason = match response
                    .incomplete_details
                    .as_ref()
                    .and_then(|details| details.reason.as_deref())
                {
                    Some("max_output_tokens") => FinishReason::Length,
                    Some("content_filter") => FinishReason::ContentFilter,
                    Some(other) => FinishReason::Other(other.to_owned()),
                    None => FinishReason::Other("incomplete".into()),
                };
                self.end(reason, Some(response), out);
            }
            "response.failed" => {
                let error = event.response.and_then(|response| response.error);
                return Err(model_error(error.as_ref(), None, None));
            }
            "error" => {
                return Err(model_error(
                    event.error.as_ref(),
                    event.message,
                    event.code.as_ref(),
                ));
            }
            "response.created" => {
                if let Some(response) = event.response
                    && (response.id.is_some() || response.model.is_some())
                {
                    out.push(BrainEvent::ResponseStart {
                        id: response.id,
                        model: response.model,
                    });
                }
            }
            "response.in_progress"
            | "response.queued"
            | "response.content_part.added"
            | "response.content_part.done"
            | "response.refusal.done"
            | "response.reasoning_summary_part.added"
            | "response.reasoning_summary_part.done"
            | "response.reasoning_summary_text.done"
            | "response.reasoning_text.done" => {}
            _ => self.unknown(event.kind, data),
        }
        Ok(())
    }

    /// The stream ended: fails unless the response completed or stopped incomplete.
    ///
    /// # Errors
    /// [`BrainError::MalformedStream`] when the stream ended before either.
    fn finish(&mut self, _out: &mut Vec<BrainEvent>) -> Result<(), BrainError> {
        if self.done {
            return Ok(());
        }
        Err(BrainError::MalformedStream {
            message: "the stream ended before the response completed".into(),
        })
    }
}

impl EventParser {
    fn summary_delta(&mut self, event: WireEvent, out: &mut Vec<BrainEvent>) {
        let Some(mut text) = delta_text(&event) else {
            return;
        };
        let item_id = event.item_id.unwrap_or_default();
        let index = event.summary_index.unwrap_or(0);
        match &mut self.summary_at {
            Some((at_item, at_index)) if *at_item == item_id => {
                if *at_index != index {
                    // A new summary part of the same item: a paragraph of its own.
                    text.insert_str(0, "\n\n");
                    *at_index = index;
                }
            }
            _ => self.summary_at = Some((item_id, index)),
        }
        out.push(BrainEvent::ReasoningDelta { text });
    }

    fn item_added(&mut self, event: WireEvent, out: &mut Vec<BrainEvent>) {
        let Some(item) = event.item else {
            return;
        };
        if item_type(&item) != "function_call" {
            return;
        }
        let item_id = string_field(&item, "id").unwrap_or_default();
        let call_id = string_field(&item, "call_id")
            .or_else(|| (!item_id.is_empty()).then(|| item_id.clone()))
            .unwrap_or_else(|| format!("call_{}", event.output_index.unwrap_or(0)));
        out.push(BrainEvent::ToolCallStart {
            id: call_id.clone(),
            name: string_field(&item, "name").unwrap_or_default(),
        });
        self.called = true;
        let mut call = OpenCall {
            item_id,
            output_index: event.output_index,
            call_id,
            streamed: false,
        };
        if let Some(arguments) = string_field(&item, "arguments").filter(|args| !args.is_empty()) {
            out.push(BrainEvent::ToolCallDelta {
                id: call.call_id.clone(),
                args: arguments,
            });
            call.streamed = true;
        }
        self.calls.push(call);
    }

    fn arguments_delta(
        &mut self,
        event: WireEvent,
        out: &mut Vec<BrainEvent>,
    ) -> Result<(), BrainError> {
        let Some(position) = self.call_position(&event) else {
            return Err(BrainError::MalformedStream {
                message: format!(
                    "event {}: arguments for a function call that was not started ({})",
                    self.n_events,
                    event.item_id.as_deref().unwrap_or("no item_id"),
                ),
            });
        };
        if let Some(args) = delta_text(&event) {
            let call = &mut self.calls[position];
            call.streamed = true;
            out.push(BrainEvent::ToolCallDelta {
                id: call.call_id.clone(),
                args,
            });
        }
        Ok(())
    }

    fn item_done(&mut self, event: WireEvent, out: &mut Vec<BrainEvent>) {
        let Some(item) = event.item else {
            return;
        };
        match item_type(&item) {
            "function_call" => {
                let item_id = string_field(&item, "id");
                let position = self.calls.iter().position(|call| {
                    item_id.as_deref() == Some(call.item_id.as_str())
                        || (event.output_index.is_some() && call.output_index == event.output_index)
                });
                if let Some(position) = position {
                    let arguments = string_field(&item, "arguments");
                    self.end_call(position, arguments.as_deref(), out);
                }
            }
            "message" => self.flush_annotations(out),
            "reasoning" => out.push(BrainEvent::Data {
                name: REASONING_ITEM.into(),
                data: item,
            }),
            other => out.push(BrainEvent::Data {
                name: format!("openai.{other}"),
                data: item,
            }),
        }
    }

    /// The open call an event is about: by `item_id`, else by `output_index`.
    fn call_position(&self, event: &WireEvent) -> Option<usize> {
        match &event.item_id {
            Some(item_id) if !item_id.is_empty() => self
                .calls
                .iter()
                .position(|call| call.item_id == *item_id)
                .or_else(|| self.call_at_index(event.output_index)),
            _ => self.call_at_index(event.output_index),
        }
    }

    fn call_at_index(&self, output_index: Option<u64>) -> Option<usize> {
        let output_index = output_index?;
        self.calls
            .iter()
            .position(|call| call.output_index == Some(output_index))
    }

    /// Ends a call; `arguments` (the whole text, from a `done` event or item) go out first
    /// when nothing streamed.
    fn end_call(&mut self, position: usize, arguments: Option<&str>, out: &mut Vec<BrainEvent>) {
        let call = self.calls.remove(position);
        if let Some(arguments) = arguments.filter(|args| !call.streamed && !args.is_empty()) {
            out.push(BrainEvent::ToolCallDelta {
                id: call.call_id.clone(),
                args: arguments.to_owned(),
            });
        }
        out.push(BrainEvent::ToolCallEnd { id: call.call_id });
    }

    fn flush_annotations(&mut self, out: &mut Vec<BrainEvent>) {
        for annotation in self.annotations.drain(..) {
            let url = (item_type(&annotation) == "url_citation")
                .then(|| string_field(&annotation, "url"))
                .flatten();
            let Some(url) = url else {
                out.push(BrainEvent::Data {
                    name: ANNOTATION.into(),
                    data: annotation,
                });
                continue;
            };
            if !self.cited.contains(&url) {
                let title = string_field(&annotation, "title").filter(|title| !title.is_empty());
                self.cited.push(url.clone());
                out.push(BrainEvent::Source { url, title });
            }
        }
    }

    /// The response ended (completed or incomplete): ends what is open, then finishes.
    fn end(
        &mut self,
        reason: FinishReason,
        response: Option<WireResponse>,
        out: &mut Vec<BrainEvent>,
    ) {
        self.flush_annotations(out);
        for call in self.calls.drain(..) {
            out.push(BrainEvent::ToolCallEnd { id: call.call_id });
        }
        let reason = match reason {
            FinishReason::Stop if self.called => FinishReason::ToolCalls,
            reason => reason,
        };
        let usage = response.and_then(|response| response.usage).map(|usage| {
            let mut total = Usage::new(usage.input_tokens, usage.output_tokens);
            total.reasoning_tokens = usage
                .output_tokens_details
                .and_then(|details| details.reasoning_tokens);
            total.cached_input_tokens = usage
                .input_tokens_details
                .and_then(|details| details.cached_tokens);
            total
        });
        out.push(BrainEvent::Finish { reason, usage });
        self.done = true;
    }

    /// An event type this parser does not know: logged, once per type and stream.
    fn unknown(&mut self, kind: String, data: &str) {
        if !self.logged.contains(&kind) {
            tracing::warn!(
                kind = kind.as_str(),
                data = excerpt(data),
                "the Responses stream has an event type agentwire does not read; it is not kept",
            );
            self.logged.push(kind);
        }
    }
}

/// A delta event's text, when it is a string that is not empty.
fn delta_text(event: &WireEvent) -> Option<String> {
    match &event.delta {
        Some(Value::String(text)) if !text.is_empty() => Some(text.clone()),
        _ => None,
    }
}

fn item_type(item: &Value) -> &str {
    item.get("type").and_then(Value::as_str).unwrap_or_default()
}

fn string_field(item: &Value, key: &str) -> Option<String> {
    item.get(key).and_then(Value::as_str).map(str::to_owned)
}

/// A failure the provider reported: its message, with its code when it has one.
fn model_error(error: Option<&Value>, message: Option<String>, code: Option<&Value>) -> BrainError {
    let message = message
        .or_else(|| error.and_then(|error| string_field(error, "message")))
        .unwrap_or_else(|| error.map_or_else(|| "the response failed".into(), Value::to_string));
    let code = code
        .or_else(|| error.and_then(|error| error.get("code")))
        .and_then(|code| match code {
            Value::String(code) => Some(code.clone()),
            Value::Number(code) => Some(code.to_string()),
            _ => None,
        });
    let message = match code {
        Some(code) if !code.is_empty() => format!("{message} ({code})"),
        _ => message,
    };
    BrainError::Model { message }
}

#[cfg(test)]
mod tests;
