//! The Chat Completions stream, as OpenAI and every OpenAI-compatible server (vLLM, Ollama,
//! llama.cpp, LM Studio, OpenRouter, DeepSeek) send it, read without IO: feed each SSE `data:`
//! payload to a [`ChunkParser`] (a [`StreamParser`]) and get brain events.
//!
//! A delta's `content` is text, `refusal` is a refusal (the model declined, e.g. a structured
//! output it will not write), `reasoning_content` (DeepSeek, vLLM) or `reasoning` (OpenRouter,
//! Ollama) is reasoning, `tool_calls` are calls by `index`.
//!
//! Tolerated, because real servers do it: tool-call deltas without `index` (matched by id, else
//! the last call); a usage-only chunk with `choices` empty, null or missing; finish reasons that
//! are empty or unknown; extra fields anywhere. The finish is held until `[DONE]` or the end of
//! the stream, because the usage chunk follows the chunk with the finish reason. A stream that
//! ends without `[DONE]` and without a finish reason is [`BrainError::MalformedStream`].
//!
//! Choices after the first (a run asked for `n` > 1) are not the run's answer: the first choice
//! is what the run continues with (its calls run), and each other choice is collected whole and
//! given, just before the finish, as a [`BrainEvent::Data`] named [`OTHER_CHOICE`]: `{"index",
//! "content", "refusal"?, "reasoning"?, "tool_calls": [{"id", "name", "arguments"}],
//! "finish_reason"}`, so a client sees every choice it paid for while the run stays one
//! conversation.
//!
//! A delta's `annotations` of type `url_citation` (`{"type": "url_citation", "url_citation":
//! {"url", "title", "start_index", "end_index"}}`, as search models send them; the same fields
//! flat beside `type` are read too) become [`BrainEvent::Source`]s, given just before the finish
//! so they do not cut the answer's text into pieces; each URL once per stream, the character
//! range not kept (a source part has no place for it). A delta's `images` (OpenRouter's image
//! output: `[{"type": "image_url", "image_url": {"url": "data:image/png;base64,…"}}]`) become
//! [`BrainEvent::File`]s where they come.
//!
//! Nothing in a delta is dropped unseen: a key this parser does not read (`audio`, a server's
//! own extension), and an annotation or image it cannot read, is logged as a `tracing` warning,
//! once per key and stream, unless its value is empty (`null`, `""`, `[]`, `{}`, which servers send for fields
//! they leave unused). Read and not logged although they add nothing: `role` (always the
//! assistant's) and OpenRouter's `reasoning_details` (the `reasoning` text again, structured).

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;

use agentwire_core::Usage;
use serde::de::{IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::{Value, json};

use crate::event::image_at;
use crate::http::excerpt;
use crate::{BrainError, BrainEvent, FinishReason, StreamParser};

/// The name of the [`BrainEvent::Data`] that carries one choice after the first.
pub const OTHER_CHOICE: &str = "openai.choice";

/// Turns Chat Completions chunks into brain events, one chunk at a time.
#[derive(Debug, Default)]
pub struct ChunkParser {
    /// Choices after the first, by index, collected until the end.
    others: BTreeMap<u64, OtherChoice>,
    /// Tool calls seen, by position: `(index, id)`; open until the finish.
    calls: Vec<(u64, String)>,
    finish: Option<FinishReason>,
    usage: Option<Usage>,
    /// Sources cited so far, `(url, title)`, each URL once; given before the finish.
    sources: Vec<(String, Option<String>)>,
    /// Whether the response's id and model were given ([`BrainEvent::ResponseStart`]).
    started: bool,
    done: bool,
    n_chunks: u64,
    /// Delta keys not read that were logged in this stream.
    logged: Vec<String>,
}

#[derive(Deserialize)]
struct Chunk<'a> {
    /// Borrowed: every chunk repeats them, and only the first one's are read.
    #[serde(default, borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    model: Option<Cow<'a, str>>,
    #[serde(default)]
    choices: Option<Vec<Choice>>,
    #[serde(default)]
    usage: Option<ChunkUsage>,
    #[serde(default)]
    error: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct Choice {
    #[serde(default)]
    index: Option<u64>,
    #[serde(default)]
    delta: Option<Delta>,
    #[serde(default)]
    finish_reason: Option<String>,
}

/// A choice's `delta`, read by hand (below) so that a key it does not read is noticed without
/// buffering the whole object, as serde's `flatten` would for every chunk.
#[derive(Default)]
struct Delta {
    content: Option<String>,
    reasoning_content: Option<String>,
    reasoning: Option<String>,
    refusal: Option<String>,
    tool_calls: Option<Vec<ToolCallDelta>>,
    annotations: Option<Value>,
    images: Option<Value>,
    /// Keys not read whose value is not empty, with that value.
    unread: Vec<(String, Value)>,
}

#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "snake_case")]
enum DeltaKey {
    Content,
    ReasoningContent,
    Reasoning,
    Refusal,
    ToolCalls,
    Annotations,
    Images,
    Role,
    ReasoningDetails,
    Other(String),
}

impl<'de> Deserialize<'de> for Delta {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(DeltaVisitor)
    }
}

struct DeltaVisitor;

impl<'de> Visitor<'de> for DeltaVisitor {
    type Value = Delta;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a delta object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Delta, A::Error> {
        let mut delta = Delta::default();
        while let Some(key) = map.next_key::<DeltaKey>()? {
            match key {
                DeltaKey::Content => delta.content = map.next_value()?,
                DeltaKey::ReasoningContent => delta.reasoning_content = map.next_value()?,
                DeltaKey::Reasoning => delta.reasoning = map.next_value()?,
                DeltaKey::Refusal => delta.refusal = map.next_value()?,
                DeltaKey::ToolCalls => delta.tool_calls = map.next_value()?,
                DeltaKey::Annotations => delta.annotations = map.next_value()?,
                DeltaKey::Images => delta.images = map.next_value()?,
                DeltaKey::Role | DeltaKey::ReasoningDetails => {
                    map.next_value::<IgnoredAny>()?;
                }
                DeltaKey::Other(key) => {
                    let value: Value = map.next_value()?;
                    if !is_empty(&value) {
                        delta.unread.push((key, value));
                    }
                }
            }
        }
        Ok(delta)
    }
}

/// What servers send for a field they leave unused.
fn is_empty(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::String(text) => text.is_empty(),
        Value::Array(items) => items.is_empty(),
        Value::Object(fields) => fields.is_empty(),
        Value::Bool(_) | Value::Number(_) => false,
    }
}

#[derive(Deserialize)]
struct ToolCallDelta {
    #[serde(default)]
    index: Option<u64>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<FunctionDelta>,
}

#[derive(Deserialize)]
struct FunctionDelta {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
}

#[derive(Deserialize)]
struct ChunkUsage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
    #[serde(default)]
    completion_tokens_details: Option<TokenDetails>,
    #[serde(default)]
    prompt_tokens_details: Option<TokenDetails>,
}

#[derive(Deserialize)]
struct TokenDetails {
    #[serde(default)]
    reasoning_tokens: Option<u64>,
    #[serde(default)]
    cached_tokens: Option<u64>,
}

/// Chat Completions names no SSE events: every payload is a chunk or `[DONE]`.
impl StreamParser for ChunkParser {
    /// Reads one SSE `data:` payload (a JSON chunk, or `[DONE]`), appending the events it
    /// completes.
    ///
    /// # Errors
    /// [`BrainError::MalformedStream`] for a payload that is not a chunk, and
    /// [`BrainError::Model`] for an error the provider reports in the stream. Both are terminal.
    fn push(&mut self, data: &str, out: &mut Vec<BrainEvent>) -> Result<(), BrainError> {
        if self.done {
            return Ok(());
        }
        self.n_chunks += 1;
        if data.trim() == "[DONE]" {
            self.done = true;
            self.end(out);
            return Ok(());
        }
        let chunk: Chunk =
            serde_json::from_str(data).map_err(|error| BrainError::MalformedStream {
                message: format!("chunk {} does not parse: {error}", self.n_chunks),
            })?;
        if let Some(error) = chunk.error {
            let message = error
                .get("message")
                .and_then(serde_json::Value::as_str)
                .map_or_else(|| error.to_string(), str::to_owned);
            return Err(BrainError::Model { message });
        }
        if !self.started && (chunk.id.is_some() || chunk.model.is_some()) {
            self.started = true;
            out.push(BrainEvent::ResponseStart {
                id: chunk.id.map(Cow::into_owned),
                model: chunk.model.map(Cow::into_owned),
            });
        }
        if let Some(usage) = chunk.usage {
            let mut total = Usage::new(usage.prompt_tokens, usage.completion_tokens);
            total.reasoning_tokens = usage
                .completion_tokens_details
                .and_then(|details| details.reasoning_tokens);
            total.cached_input_tokens = usage
                .prompt_tokens_details
                .and_then(|details| details.cached_tokens);
            self.usage = Some(total);
        }
        for choice in chunk.choices.unwrap_or_default() {
            let index = choice.index.unwrap_or(0);
            if index != 0 {
                self.others.entry(index).or_default().push(choice);
                continue;
            }
            if let Some(delta) = choice.delta {
                self.delta(delta, out);
            }
            if let Some(reason) = choice.finish_reason.filter(|reason| !reason.is_empty()) {
                self.finish = Some(FinishReason::from(reason));
                for (_, id) in self.calls.drain(..) {
                    out.push(BrainEvent::ToolCallEnd { id });
                }
            }
        }
        Ok(())
    }

    /// The stream ended: completes the call, or fails if it ended too soon.
    ///
    /// # Errors
    /// [`BrainError::MalformedStream`] when neither `[DONE]` nor a finish reason came.
    fn finish(&mut self, out: &mut Vec<BrainEvent>) -> Result<(), BrainError> {
        if self.done {
            return Ok(());
        }
        if self.finish.is_none() {
            return Err(BrainError::MalformedStream {
                message: "the stream ended before the model finished".into(),
            });
        }
        self.done = true;
        self.end(out);
        Ok(())
    }
}

impl ChunkParser {
    fn delta(&mut self, delta: Delta, out: &mut Vec<BrainEvent>) {
        let reasoning = delta.reasoning_content.or(delta.reasoning);
        if let Some(text) = reasoning.filter(|text| !text.is_empty()) {
            out.push(BrainEvent::ReasoningDelta { text });
        }
        if let Some(text) = delta.content.filter(|text| !text.is_empty()) {
            out.push(BrainEvent::TextDelta { text });
        }
        if let Some(text) = delta.refusal.filter(|text| !text.is_empty()) {
            out.push(BrainEvent::RefusalDelta { text });
        }
        for call in delta.tool_calls.unwrap_or_default() {
            self.tool_call(call, out);
        }
        let mut unread = delta.unread;
        if let Some(annotations) = delta.annotations {
            self.annotations(annotations, &mut unread);
        }
        if let Some(images) = delta.images {
            images_of(images, out, &mut unread);
        }
        for (key, value) in unread {
            if !self.logged.contains(&key) {
                let value = value.to_string();
                tracing::warn!(
                    key = key.as_str(),
                    value = excerpt(&value),
                    "the stream's delta has a key agentwire does not read; it is not kept",
                );
                self.logged.push(key);
            }
        }
    }

    /// Keeps the `url_citation`s among `annotations` as sources; anything else is unread.
    fn annotations(&mut self, annotations: Value, unread: &mut Vec<(String, Value)>) {
        let Value::Array(items) = annotations else {
            if !is_empty(&annotations) {
                unread.push(("annotations".into(), annotations));
            }
            return;
        };
        let mut other = Vec::new();
        for item in items {
            let citation = (item.get("type").and_then(Value::as_str) == Some("url_citation"))
                .then(|| item.get("url_citation").unwrap_or(&item))
                .and_then(|citation| {
                    let url = citation.get("url").and_then(Value::as_str)?;
                    let title = citation.get("title").and_then(Value::as_str);
                    Some((
                        url.to_owned(),
                        title.filter(|t| !t.is_empty()).map(str::to_owned),
                    ))
                });
            match citation {
                Some((url, title)) => {
                    if !self.sources.iter().any(|(known, _)| *known == url) {
                        self.sources.push((url, title));
                    }
                }
                None => other.push(item),
            }
        }
        if !other.is_empty() {
            unread.push(("annotations".into(), Value::Array(other)));
        }
    }

    fn tool_call(&mut self, call: ToolCallDelta, out: &mut Vec<BrainEvent>) {
        let (name, arguments) = call
            .function
            .map_or((None, None), |function| (function.name, function.arguments));
        // Which call this delta continues: by index, else by id, else the last one opened.
        let known = match (call.index, &call.id) {
            (Some(index), _) => self.calls.iter().position(|(at, _)| *at == index),
            (None, Some(id)) => self.calls.iter().position(|(_, open)| open == id),
            (None, None) => self.calls.len().checked_sub(1),
        };
        let position = match known {
            Some(position) => position,
            None => {
                let index = call.index.unwrap_or(self.calls.len() as u64);
                let id = call
                    .id
                    .filter(|id| !id.is_empty())
                    .unwrap_or_else(|| format!("call_{index}"));
                out.push(BrainEvent::ToolCallStart {
                    id: id.clone(),
                    name: name.unwrap_or_default(),
                });
                self.calls.push((index, id));
                self.calls.len() - 1
            }
        };
        if let Some(args) = arguments.filter(|args| !args.is_empty()) {
            out.push(BrainEvent::ToolCallDelta {
                id: self.calls[position].1.clone(),
                args,
            });
        }
    }

    fn end(&mut self, out: &mut Vec<BrainEvent>) {
        for (_, id) in self.calls.drain(..) {
            out.push(BrainEvent::ToolCallEnd { id });
        }
        for (url, title) in self.sources.drain(..) {
            out.push(BrainEvent::Source { url, title });
        }
        for (index, choice) in std::mem::take(&mut self.others) {
            out.push(BrainEvent::Data {
                name: OTHER_CHOICE.into(),
                data: choice.into_json(index),
            });
        }
        out.push(BrainEvent::Finish {
            reason: self.finish.take().unwrap_or(FinishReason::Stop),
            usage: self.usage.take(),
        });
    }
}

/// The `image_url` items of a delta's `images` as files, where they come; anything else is
/// unread.
fn images_of(images: Value, out: &mut Vec<BrainEvent>, unread: &mut Vec<(String, Value)>) {
    let Value::Array(items) = images else {
        if !is_empty(&images) {
            unread.push(("images".into(), images));
        }
        return;
    };
    let mut other = Vec::new();
    for item in items {
        let url = item
            .get("image_url")
            .and_then(|image| image.get("url").or(Some(image)))
            .and_then(Value::as_str)
            .filter(|url| !url.is_empty());
        match url {
            Some(url) => out.push(BrainEvent::File(image_at(url.to_owned()))),
            None => other.push(item),
        }
    }
    if !other.is_empty() {
        unread.push(("images".into(), Value::Array(other)));
    }
}

/// A choice after the first, as its deltas arrive.
#[derive(Debug, Default)]
struct OtherChoice {
    content: String,
    refusal: String,
    reasoning: String,
    /// `(index, id, name, arguments)` in the order the calls opened.
    calls: Vec<(u64, String, String, String)>,
    finish_reason: Option<String>,
}

impl OtherChoice {
    fn push(&mut self, choice: Choice) {
        if let Some(delta) = choice.delta {
            self.content
                .push_str(delta.content.as_deref().unwrap_or_default());
            self.refusal
                .push_str(delta.refusal.as_deref().unwrap_or_default());
            let reasoning = delta.reasoning_content.or(delta.reasoning);
            self.reasoning
                .push_str(reasoning.as_deref().unwrap_or_default());
            for call in delta.tool_calls.unwrap_or_default() {
                let (name, arguments) = call
                    .function
                    .map_or((None, None), |function| (function.name, function.arguments));
                let index = call.index.unwrap_or(0);
                let position = match self.calls.iter().position(|(at, ..)| *at == index) {
                    Some(position) => position,
                    None => {
                        let id = call.id.unwrap_or_else(|| format!("call_{index}"));
                        self.calls.push((index, id, String::new(), String::new()));
                        self.calls.len() - 1
                    }
                };
                let (_, _, known_name, known_arguments) = &mut self.calls[position];
                known_name.push_str(name.as_deref().unwrap_or_default());
                known_arguments.push_str(arguments.as_deref().unwrap_or_default());
            }
        }
        if let Some(reason) = choice.finish_reason.filter(|reason| !reason.is_empty()) {
            self.finish_reason = Some(reason);
        }
    }

    fn into_json(self, index: u64) -> Value {
        let mut data = json!({"index": index, "content": self.content});
        if !self.refusal.is_empty() {
            data["refusal"] = self.refusal.into();
        }
        if !self.reasoning.is_empty() {
            data["reasoning"] = self.reasoning.into();
        }
        let calls: Vec<Value> = self
            .calls
            .into_iter()
            .map(|(_, id, name, arguments)| json!({"id": id, "name": name, "arguments": arguments}))
            .collect();
        data["tool_calls"] = calls.into();
        data["finish_reason"] = self.finish_reason.into();
        data
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::parse_all;

    #[track_caller]
    fn check(chunks: &[&str], expect: &[BrainEvent]) {
        assert_eq!(parse_all::<ChunkParser>(chunks).expect("parses"), expect);
    }

    #[test]
    fn the_first_chunks_id_and_model_start_the_response_once() {
        let chunk = |text: &str| {
            format!(
                r#"{{"id":"chatcmpl-1","model":"gpt-4o-2024-08-06","choices":[{{"index":0,"delta":{{"content":"{text}"}}}}]}}"#
            )
        };
        let (first, second) = (chunk("a"), chunk("b"));
        let events = crate::http::parse_all_with_start::<ChunkParser>(&[
            &first,
            &second,
            r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#,
            "[DONE]",
        ])
        .expect("parses");
        assert_eq!(
            events,
            [
                BrainEvent::ResponseStart {
                    id: Some("chatcmpl-1".into()),
                    model: Some("gpt-4o-2024-08-06".into()),
                },
                BrainEvent::text_delta("a"),
                BrainEvent::text_delta("b"),
                BrainEvent::finish(FinishReason::Stop, None),
            ]
        );
    }

    #[test]
    fn text_then_usage_then_done() {
        check(
            &[
                r#"{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}"#,
                r#"{"choices":[{"index":0,"delta":{"content":"Hel"},"finish_reason":null}]}"#,
                r#"{"choices":[{"index":0,"delta":{"content":"lo"},"finish_reason":null}]}"#,
                r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#,
                r#"{"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":2,"total_tokens":11,"completion_tokens_details":{"reasoning_tokens":0}}}"#,
                "[DONE]",
            ],
            &[
                BrainEvent::text_delta("Hel"),
                BrainEvent::text_delta("lo"),
                BrainEvent::Finish {
                    reason: FinishReason::Stop,
                    usage: Some(Usage {
                        reasoning_tokens: Some(0),
                        ..Usage::new(9, 2)
                    }),
                },
            ],
        );
    }

    #[test]
    fn parallel_calls_by_index_and_reasoning_spellings() {
        check(
            &[
                r#"{"choices":[{"delta":{"reasoning_content":"think"}}]}"#,
                r#"{"choices":[{"delta":{"reasoning":" more"}}]}"#,
                r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"a","type":"function","function":{"name":"f","arguments":""}}]}}]}"#,
                r#"{"choices":[{"delta":{"tool_calls":[{"index":1,"id":"b","function":{"name":"g","arguments":"{\"x\""}}]}}]}"#,
                r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{}"}}]}}]}"#,
                r#"{"choices":[{"delta":{"tool_calls":[{"function":{"arguments":": 1}"}}]}}]}"#,
                r#"{"choices":[{"delta":{},"finish_reason":"tool_calls"}],"usage":null}"#,
            ],
            &[
                BrainEvent::reasoning_delta("think"),
                BrainEvent::reasoning_delta(" more"),
                BrainEvent::tool_call_start("a", "f"),
                BrainEvent::tool_call_start("b", "g"),
                BrainEvent::tool_call_delta("b", "{\"x\""),
                BrainEvent::tool_call_delta("a", "{}"),
                BrainEvent::tool_call_delta("b", ": 1}"),
                BrainEvent::tool_call_end("a"),
                BrainEvent::tool_call_end("b"),
                BrainEvent::Finish {
                    reason: FinishReason::ToolCalls,
                    usage: None,
                },
            ],
        );
    }

    #[test]
    fn odd_finish_reasons_and_null_choices_are_tolerated() {
        check(
            &[
                r#"{"choices":[{"delta":{"content":"a"},"finish_reason":""}]}"#,
                r#"{"choices":[{"delta":{"content":"b"},"finish_reason":"eos"}]}"#,
                r#"{"choices":null,"usage":{"prompt_tokens":1,"completion_tokens":2}}"#,
            ],
            &[
                BrainEvent::text_delta("a"),
                BrainEvent::text_delta("b"),
                BrainEvent::Finish {
                    reason: FinishReason::Other("eos".into()),
                    usage: Some(Usage::new(1, 2)),
                },
            ],
        );
    }

    #[test]
    fn refusals_stream_as_refusal_deltas() {
        check(
            &[
                r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":null,"refusal":""},"logprobs":null,"finish_reason":null}]}"#,
                r#"{"choices":[{"index":0,"delta":{"content":null,"refusal":"I'm sorry, "},"logprobs":null,"finish_reason":null}]}"#,
                r#"{"choices":[{"index":0,"delta":{"refusal":"I can't help with that."},"logprobs":null,"finish_reason":null}]}"#,
                r#"{"choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}]}"#,
                "[DONE]",
            ],
            &[
                BrainEvent::refusal_delta("I'm sorry, "),
                BrainEvent::refusal_delta("I can't help with that."),
                BrainEvent::finish(FinishReason::Stop, None),
            ],
        );
    }

    #[test]
    fn delta_keys_not_read_are_logged_once_per_stream_and_empty_ones_not_at_all() {
        let logs = crate::http::logs_of(|| {
            check(
                &[
                    r#"{"choices":[{"delta":{"role":"assistant","content":"Hi","refusal":null,"audio":null,"annotations":[],"images":[],"function_call":null,"reasoning_details":[]}}]}"#,
                    r#"{"choices":[{"delta":{"content":" there","audio":{"id":"audio_1","data":"UklG"}}}]}"#,
                    r#"{"choices":[{"delta":{"annotations":[{"type":"file_citation","file_id":"f1"}],"x_extension":7,"audio":{"data":"AAAA"}}}]}"#,
                    r#"{"choices":[{"delta":{},"finish_reason":"stop"}]}"#,
                    "[DONE]",
                ],
                &[
                    BrainEvent::text_delta("Hi"),
                    BrainEvent::text_delta(" there"),
                    BrainEvent::finish(FinishReason::Stop, None),
                ],
            );
        });
        let lines: Vec<&str> = logs.lines().collect();
        assert_eq!(lines.len(), 3, "{logs}");
        assert!(lines[0].contains("WARN"), "{logs}");
        assert!(
            lines[0].contains("audio") && lines[0].contains("audio_1"),
            "{logs}"
        );
        assert!(
            lines[1].contains("x_extension") && lines[1].contains('7'),
            "{logs}"
        );
        assert!(
            lines[2].contains("annotations") && lines[2].contains("file_citation"),
            "{logs}"
        );
        assert!(logs.contains("does not read"), "{logs}");
    }

    /// A search model's answer: `url_citation` annotations (nested, as OpenAI sends them, and
    /// flat), one URL cited twice; the sources come once each, after the text, before the
    /// finish.
    #[test]
    fn url_citations_become_sources_before_the_finish() {
        check(
            &[
                r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null,"annotations":[]}}]}"#,
                r#"{"choices":[{"index":0,"delta":{"content":"Rust 1.0 shipped in May 2015 ([blog.rust-lang.org](https://blog.rust-lang.org/2015/05/15/Rust-1.0.html))."}}]}"#,
                r#"{"choices":[{"index":0,"delta":{"annotations":[{"type":"url_citation","url_citation":{"end_index":95,"start_index":27,"title":"Announcing Rust 1.0","url":"https://blog.rust-lang.org/2015/05/15/Rust-1.0.html"}}]}}]}"#,
                r#"{"choices":[{"index":0,"delta":{"annotations":[{"type":"url_citation","url_citation":{"end_index":95,"start_index":27,"title":"Announcing Rust 1.0","url":"https://blog.rust-lang.org/2015/05/15/Rust-1.0.html"}},{"type":"url_citation","url":"https://en.wikipedia.org/wiki/Rust_(programming_language)","title":"","start_index":0,"end_index":4}]}}]}"#,
                r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#,
                "[DONE]",
            ],
            &[
                BrainEvent::text_delta(
                    "Rust 1.0 shipped in May 2015 ([blog.rust-lang.org](https://blog.rust-lang.org/2015/05/15/Rust-1.0.html)).",
                ),
                BrainEvent::source(
                    "https://blog.rust-lang.org/2015/05/15/Rust-1.0.html",
                    Some("Announcing Rust 1.0"),
                ),
                BrainEvent::source(
                    "https://en.wikipedia.org/wiki/Rust_(programming_language)",
                    None,
                ),
                BrainEvent::finish(FinishReason::Stop, None),
            ],
        );
    }

    /// OpenRouter's image output: `images` on the delta, each a data URL, where it comes.
    #[test]
    fn images_become_files_where_they_come() {
        check(
            &[
                r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":"Here it is."}}]}"#,
                r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":"","images":[{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="},"index":0}]}}]}"#,
                r#"{"choices":[{"index":0,"delta":{"images":[{"type":"image_url","image_url":{"url":"https://cdn.example.com/out/cat.webp"}}]},"finish_reason":"stop"}]}"#,
                "[DONE]",
            ],
            &[
                BrainEvent::text_delta("Here it is."),
                BrainEvent::File(agentwire_core::part::FilePart {
                    media_type: "image/png".into(),
                    source: agentwire_core::part::FileSource::Url(
                        "data:image/png;base64,iVBORw0KGgo=".into(),
                    ),
                    filename: None,
                }),
                BrainEvent::File(agentwire_core::part::FilePart {
                    media_type: "image/webp".into(),
                    source: agentwire_core::part::FileSource::Url(
                        "https://cdn.example.com/out/cat.webp".into(),
                    ),
                    filename: None,
                }),
                BrainEvent::finish(FinishReason::Stop, None),
            ],
        );
    }

    #[test]
    fn a_stream_cut_short_or_broken_is_an_error() {
        let mut parser = ChunkParser::default();
        let mut out = Vec::new();
        parser
            .push(r#"{"choices":[{"delta":{"content":"a"}}]}"#, &mut out)
            .expect("chunk");
        let error = parser.finish(&mut out).expect_err("no finish");
        assert!(
            error
                .to_string()
                .contains("ended before the model finished")
        );

        let error = ChunkParser::default()
            .push("{not json", &mut out)
            .expect_err("bad chunk");
        assert!(error.to_string().contains("chunk 1 does not parse"));

        let error = ChunkParser::default()
            .push(
                r#"{"error":{"message":"overloaded","type":"server_error"}}"#,
                &mut out,
            )
            .expect_err("error chunk");
        assert_eq!(error.to_string(), "the model failed: overloaded");
    }
    #[test]
    fn choices_after_the_first_come_whole_as_data_before_the_finish() {
        check(
            &[
                r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":""}},{"index":1,"delta":{"role":"assistant","content":""}}]}"#,
                r#"{"choices":[{"index":1,"delta":{"content":"Bon"}}]}"#,
                r#"{"choices":[{"index":0,"delta":{"content":"Hel"}}]}"#,
                r#"{"choices":[{"index":1,"delta":{"content":"jour"}},{"index":0,"delta":{"content":"lo"}}]}"#,
                r#"{"choices":[{"index":2,"delta":{"tool_calls":[{"index":0,"id":"c9","function":{"name":"f","arguments":"{\"a\""}}]}}]}"#,
                r#"{"choices":[{"index":2,"delta":{"tool_calls":[{"index":0,"function":{"arguments":":1}"}}]},"finish_reason":"tool_calls"}]}"#,
                r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#,
                r#"{"choices":[{"index":1,"delta":{},"finish_reason":"length"}]}"#,
                r#"{"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":9}}"#,
                "[DONE]",
            ],
            &[
                BrainEvent::TextDelta { text: "Hel".into() },
                BrainEvent::TextDelta { text: "lo".into() },
                BrainEvent::Data {
                    name: OTHER_CHOICE.into(),
                    data: json!({"index": 1, "content": "Bonjour", "tool_calls": [], "finish_reason": "length"}),
                },
                BrainEvent::Data {
                    name: OTHER_CHOICE.into(),
                    data: json!({"index": 2, "content": "", "tool_calls": [{"id": "c9", "name": "f", "arguments": "{\"a\":1}"}], "finish_reason": "tool_calls"}),
                },
                BrainEvent::Finish {
                    reason: FinishReason::Stop,
                    usage: Some(Usage::new(5, 9)),
                },
            ],
        );
    }
}
