//! The Anthropic Messages stream, read without IO: feed each SSE `data:` payload to an
//! [`EventParser`] (a [`StreamParser`]) and get brain events.
//!
//! The stream is `message_start`, then per content block `content_block_start`,
//! `content_block_delta`* and `content_block_stop` (blocks are numbered by `index`, so parallel
//! `tool_use` blocks are told apart by it), then `message_delta` (stop reason, cumulative usage)
//! and `message_stop`; `ping` may come anywhere. Each payload names its event in `"type"`, which
//! is what is read (the SSE `event:` line repeats it).
//!
//! What becomes what:
//! - `text_delta` → [`BrainEvent::TextDelta`]; `thinking_delta` → [`BrainEvent::ReasoningDelta`].
//! - a `tool_use` block → [`BrainEvent::ToolCallStart`], each `input_json_delta` →
//!   [`BrainEvent::ToolCallDelta`], its `content_block_stop` → [`BrainEvent::ToolCallEnd`].
//! - a thinking block's signature (`signature_delta`) → at the block's stop, a
//!   [`BrainEvent::Data`] named [`THINKING_SIGNATURE`]; a `redacted_thinking` block → one named
//!   [`REDACTED_THINKING`]. Anthropic refuses a tool-use turn whose thinking comes back without
//!   them, so they are kept in the message right after the reasoning they sign.
//! - `message_stop` → [`BrainEvent::Finish`] with the stop reason (`end_turn` and
//!   `stop_sequence` → stop, `tool_use` → tool calls, `max_tokens` → length, `refusal` →
//!   content filter, anything else kept as it came) and the usage: input from `message_start`
//!   (with the prompt cache's reads and writes, which Anthropic counts apart, added in), output
//!   from the last `message_delta` (its counts are cumulative, so the last one wins). The
//!   `stop_details` a `message_delta` may carry (why the streaming classifiers refused: type,
//!   category, explanation) come just before, as a [`BrainEvent::Data`] named
//!   [`STOP_DETAILS`].
//! - an `error` event (e.g. `overloaded_error` mid-stream) → [`BrainError::Model`] naming the
//!   error type. It is terminal and not retried: the transport retries only HTTP statuses and
//!   broken connections, and output has usually streamed by then, so only the caller can decide
//!   to run the step again.
//!
//! Nothing is dropped unseen, and newer streams keep working:
//! Sources and images:
//! - a citation with a URL (`web_search_result_location`'s `url`; `search_result_location`'s
//!   `source` when it is an http(s) URL), in a text block's `citations` or a `citations_delta`,
//!   becomes a [`BrainEvent::Source`] when its text block stops, so it does not cut the text
//!   it annotates into pieces; each URL once per stream. The cited text and its encrypted index
//!   are not kept (a source part has no place for them, and they are not sent back). A citation
//!   without a URL (`char_location`, `page_location`, `content_block_location`: places in the
//!   request's documents) is kept as data, as below;
//! - a `web_search_tool_result` block is kept as data (below), then each of its results with a
//!   URL becomes a [`BrainEvent::Source`];
//! - an `image` block (the Messages API sends none in answers; a compatible server may) becomes
//!   a [`BrainEvent::File`]: its base64 `source` as data, a `url` source as a URL.
//!
//! - a content block of a type this parser does not know (`server_tool_use`,
//!   `web_search_tool_result`, whatever comes next) is kept whole: at its stop, a
//!   [`BrainEvent::Data`] named `anthropic.<block type>` holding the block as it started, its
//!   `input` completed from its `input_json_delta`s (parsed, or the text if it does not parse)
//!   and any other deltas it got listed under `"deltas"`, as sent;
//! - a delta of a type this parser does not know in a known block (a `citations_delta` without
//!   a URL, or outside a text block) is a
//!   [`BrainEvent::Data`] named `anthropic.<delta type>` holding the delta, where it came;
//! - an event type this parser does not know is logged as a `tracing` warning, once per type
//!   and stream, with the start of its payload (it belongs to no block, so there is no place in
//!   the message for it). `ping` is read and ignored.
//!
//! The payload of an unknown block or delta is read a second time as plain JSON, to keep it as
//! sent; such events are rare, so the common ones stay on the typed path.
//!
//! A known event with a bad payload, a delta for a block that never started, and a stream that
//! ends before `message_stop` are [`BrainError::MalformedStream`].

use agentwire_core::Usage;
use agentwire_core::part::{FilePart, FileSource};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::event::image_at;
use crate::http::excerpt;
use crate::{BrainError, BrainEvent, FinishReason, StreamParser};

/// The [`BrainEvent::Data`] name of a thinking block's signature: `{"signature": "…"}`. It
/// follows the reasoning it signs.
pub const THINKING_SIGNATURE: &str = "anthropic.thinking_signature";

/// The [`BrainEvent::Data`] name of a `redacted_thinking` block (thinking the provider
/// encrypted): `{"data": "…"}`, opaque, sent back as it came.
pub const REDACTED_THINKING: &str = "anthropic.redacted_thinking";

/// The [`BrainEvent::Data`] name of a message's `stop_details`, e.g. `{"type": "refusal",
/// "category": "cyber", "explanation": "…"}` when the streaming classifiers refused. It comes
/// last, before the finish.
pub const STOP_DETAILS: &str = "anthropic.stop_details";

/// Turns the payloads of an Anthropic Messages stream into brain events, one at a time.
#[derive(Debug, Default)]
pub struct EventParser {
    /// Content blocks started and not yet stopped, by index.
    open: Vec<(u64, Block)>,
    usage: Counts,
    stop_reason: Option<String>,
    stop_details: Option<Value>,
    /// The URLs given as sources in this stream.
    sourced: Vec<String>,
    done: bool,
    n_events: u64,
    /// Unknown event types logged in this stream.
    logged: Vec<String>,
}

/// A content block in progress.
#[derive(Debug)]
enum Block {
    /// Redacted thinking or an image, which have no deltas: nothing to do at its stop.
    Plain,
    /// Text, with the sources its citations named, given at its stop.
    Text {
        sources: Vec<(String, Option<String>)>,
    },
    /// A block type this parser does not know, kept to be sent whole at its stop.
    Unknown {
        /// The `content_block` as it started.
        block: Value,
        /// Its `input_json_delta`s, joined.
        input_json: String,
        /// Its other deltas, as sent.
        deltas: Vec<Value>,
    },
    Thinking {
        signature: String,
    },
    ToolUse {
        id: String,
        /// The `input` the start carried, when it was not the usual `{}`: sent as the arguments
        /// at the stop if no `input_json_delta` came (some compatible servers send it whole).
        whole_input: Option<String>,
        streamed: bool,
    },
}

/// Token counts as Anthropic reports them; `None` when not (yet) reported.
#[derive(Clone, Copy, Debug, Default, Deserialize)]
struct Counts {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
    #[serde(default)]
    cache_creation_input_tokens: Option<u64>,
    #[serde(default)]
    cache_read_input_tokens: Option<u64>,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum StreamEvent {
    MessageStart {
        message: MessageStart,
    },
    ContentBlockStart {
        index: u64,
        content_block: ContentBlock,
    },
    ContentBlockDelta {
        index: u64,
        delta: Delta,
    },
    ContentBlockStop {
        index: u64,
    },
    MessageDelta {
        #[serde(default)]
        delta: MessageDelta,
        #[serde(default)]
        usage: Option<Counts>,
    },
    MessageStop,
    Error {
        error: WireError,
    },
    Ping,
    /// Event types added after this parser was written.
    #[serde(other)]
    Unknown,
}

#[derive(Deserialize)]
struct MessageStart {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    usage: Option<Counts>,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum ContentBlock {
    Text {
        #[serde(default)]
        text: String,
        #[serde(default)]
        citations: Option<Vec<Value>>,
    },
    Image {
        source: ImageSource,
    },
    Thinking {
        #[serde(default)]
        thinking: String,
        #[serde(default)]
        signature: String,
    },
    RedactedThinking {
        data: String,
    },
    ToolUse {
        id: String,
        name: String,
        #[serde(default)]
        input: Option<Value>,
    },
    #[serde(other)]
    Unknown,
}

/// A `content_block_delta`'s `delta`; the wire names end in `_delta`.
#[derive(Deserialize)]
#[serde(tag = "type")]
enum Delta {
    #[serde(rename = "text_delta")]
    Text { text: String },
    #[serde(rename = "thinking_delta")]
    Thinking { thinking: String },
    #[serde(rename = "signature_delta")]
    Signature { signature: String },
    #[serde(rename = "input_json_delta")]
    InputJson {
        #[serde(default)]
        partial_json: String,
    },
    #[serde(rename = "citations_delta")]
    Citations { citation: Value },
    #[serde(other)]
    Unknown,
}

/// An `image` block's `source`.
#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum ImageSource {
    Base64 { media_type: String, data: String },
    Url { url: String },
}

#[derive(Default, Deserialize)]
struct MessageDelta {
    #[serde(default)]
    stop_reason: Option<String>,
    #[serde(default)]
    stop_details: Option<Value>,
}

#[derive(Deserialize)]
struct WireError {
    #[serde(default, rename = "type")]
    kind: Option<String>,
    #[serde(default)]
    message: Option<String>,
}

impl StreamParser for EventParser {
    /// Reads one SSE `data:` payload, appending the events it completes.
    ///
    /// # Errors
    /// [`BrainError::Model`] for an `error` event; [`BrainError::MalformedStream`] for a payload
    /// that is not JSON, a known event whose fields are wrong, or a block delta or stop for an
    /// index that is not open. All are terminal.
    fn push(&mut self, data: &str, out: &mut Vec<BrainEvent>) -> Result<(), BrainError> {
        if self.done {
            return Ok(());
        }
        self.n_events += 1;
        let event: StreamEvent = serde_json::from_str(data)
            .map_err(|error| self.malformed(format!("does not parse: {error}")))?;
        match event {
            StreamEvent::MessageStart { message } => {
                if let Some(usage) = message.usage {
                    self.usage.update(usage);
                }
                if message.id.is_some() || message.model.is_some() {
                    out.push(BrainEvent::ResponseStart {
                        id: message.id,
                        model: message.model,
                    });
                }
            }
            StreamEvent::ContentBlockStart {
                index,
                content_block,
            } => self.start(index, content_block, data, out)?,
            StreamEvent::ContentBlockDelta { index, delta } => {
                self.delta(index, delta, data, out)?;
            }
            StreamEvent::ContentBlockStop { index } => {
                let position = self.position(index)?;
                let (_, block) = self.open.remove(position);
                self.stop(block, out);
            }
            StreamEvent::MessageDelta { delta, usage } => {
                if let Some(reason) = delta.stop_reason {
                    self.stop_reason = Some(reason);
                }
                if let Some(details) = delta.stop_details {
                    self.stop_details = Some(details);
                }
                if let Some(usage) = usage {
                    self.usage.update(usage);
                }
            }
            StreamEvent::MessageStop => self.end(out),
            StreamEvent::Error { error } => {
                let kind = error.kind.unwrap_or_else(|| "error".into());
                let message = match error.message {
                    Some(message) => format!("{kind}: {message}"),
                    None => kind,
                };
                return Err(BrainError::Model { message });
            }
            StreamEvent::Ping => {}
            StreamEvent::Unknown => self.log_unknown(data),
        }
        Ok(())
    }

    /// The stream ended.
    ///
    /// # Errors
    /// [`BrainError::MalformedStream`] when it ended before `message_stop`.
    fn finish(&mut self, _out: &mut Vec<BrainEvent>) -> Result<(), BrainError> {
        if self.done {
            return Ok(());
        }
        Err(BrainError::MalformedStream {
            message: "the stream ended before message_stop".into(),
        })
    }
}

impl EventParser {
    fn start(
        &mut self,
        index: u64,
        content_block: ContentBlock,
        data: &str,
        out: &mut Vec<BrainEvent>,
    ) -> Result<(), BrainError> {
        if self.open.iter().any(|(open, _)| *open == index) {
            return Err(self.malformed(format!("block {index} starts twice")));
        }
        let block = match content_block {
            ContentBlock::Text { text, citations } => {
                push_text(out, text);
                let mut sources = Vec::new();
                for citation in citations.unwrap_or_default() {
                    match cited_url(&citation) {
                        Some(source) => sources.push(source),
                        // As a `citations_delta` would have brought it.
                        None => out.push(BrainEvent::Data {
                            name: "anthropic.citations_delta".into(),
                            data: json!({"type": "citations_delta", "citation": citation}),
                        }),
                    }
                }
                Block::Text { sources }
            }
            ContentBlock::Image { source } => {
                out.push(BrainEvent::File(match source {
                    ImageSource::Base64 { media_type, data } => FilePart {
                        media_type,
                        source: FileSource::Data(data),
                        filename: None,
                    },
                    ImageSource::Url { url } => image_at(url),
                }));
                Block::Plain
            }
            ContentBlock::Thinking {
                thinking,
                signature,
            } => {
                push_reasoning(out, thinking);
                Block::Thinking { signature }
            }
            ContentBlock::RedactedThinking { data } => {
                out.push(BrainEvent::Data {
                    name: REDACTED_THINKING.into(),
                    data: json!({ "data": data }),
                });
                Block::Plain
            }
            ContentBlock::ToolUse { id, name, input } => {
                out.push(BrainEvent::ToolCallStart {
                    id: id.clone(),
                    name,
                });
                let whole_input = input
                    .filter(|input| input.as_object().is_none_or(|object| !object.is_empty()))
                    .map(|input| input.to_string());
                Block::ToolUse {
                    id,
                    whole_input,
                    streamed: false,
                }
            }
            ContentBlock::Unknown => Block::Unknown {
                block: reread(data, "content_block"),
                input_json: String::new(),
                deltas: Vec::new(),
            },
        };
        self.open.push((index, block));
        Ok(())
    }

    fn delta(
        &mut self,
        index: u64,
        delta: Delta,
        data: &str,
        out: &mut Vec<BrainEvent>,
    ) -> Result<(), BrainError> {
        let position = self.position(index)?;
        match (delta, &mut self.open[position].1) {
            (Delta::InputJson { partial_json }, Block::Unknown { input_json, .. }) => {
                input_json.push_str(&partial_json);
            }
            (_, Block::Unknown { deltas, .. }) => deltas.push(reread(data, "delta")),
            (Delta::Citations { citation }, Block::Text { sources })
                if cited_url(&citation).is_some() =>
            {
                sources.extend(cited_url(&citation));
            }
            (Delta::Unknown | Delta::Citations { .. }, _) => {
                let delta = reread(data, "delta");
                out.push(BrainEvent::Data {
                    name: data_name(&delta),
                    data: delta,
                });
            }
            (Delta::Text { text }, _) => push_text(out, text),
            (Delta::Thinking { thinking }, _) => push_reasoning(out, thinking),
            (Delta::Signature { signature: more }, Block::Thinking { signature }) => {
                signature.push_str(&more);
            }
            (Delta::InputJson { partial_json }, Block::ToolUse { id, streamed, .. }) => {
                if !partial_json.is_empty() {
                    *streamed = true;
                    out.push(BrainEvent::ToolCallDelta {
                        id: id.clone(),
                        args: partial_json,
                    });
                }
            }
            (Delta::Signature { .. } | Delta::InputJson { .. }, _) => {
                return Err(
                    self.malformed(format!("block {index} got a delta of another block type"))
                );
            }
        }
        Ok(())
    }

    fn stop(&mut self, block: Block, out: &mut Vec<BrainEvent>) {
        match block {
            Block::Plain => {}
            Block::Text { sources } => {
                for (url, title) in sources {
                    self.source(url, title, out);
                }
            }
            Block::Unknown {
                mut block,
                input_json,
                deltas,
            } => {
                if let Value::Object(fields) = &mut block {
                    if !input_json.is_empty() {
                        let input =
                            serde_json::from_str(&input_json).unwrap_or(Value::String(input_json));
                        fields.insert("input".into(), input);
                    }
                    if !deltas.is_empty() {
                        fields.insert("deltas".into(), Value::Array(deltas));
                    }
                }
                let results = match block.get("type").and_then(Value::as_str) {
                    Some("web_search_tool_result") => search_results(&block),
                    _ => Vec::new(),
                };
                out.push(BrainEvent::Data {
                    name: data_name(&block),
                    data: block,
                });
                for (url, title) in results {
                    self.source(url, title, out);
                }
            }
            Block::Thinking { signature } => {
                if !signature.is_empty() {
                    out.push(BrainEvent::Data {
                        name: THINKING_SIGNATURE.into(),
                        data: json!({ "signature": signature }),
                    });
                }
            }
            Block::ToolUse {
                id,
                whole_input,
                streamed,
            } => {
                if let (Some(args), false) = (whole_input, streamed) {
                    out.push(BrainEvent::ToolCallDelta {
                        id: id.clone(),
                        args,
                    });
                }
                out.push(BrainEvent::ToolCallEnd { id });
            }
        }
    }

    /// `message_stop`: ends what is still open (tolerated, though Anthropic stops every block)
    /// and finishes.
    fn end(&mut self, out: &mut Vec<BrainEvent>) {
        self.done = true;
        for (_, block) in std::mem::take(&mut self.open) {
            self.stop(block, out);
        }
        if let Some(details) = self.stop_details.take() {
            out.push(BrainEvent::Data {
                name: STOP_DETAILS.into(),
                data: details,
            });
        }
        out.push(BrainEvent::Finish {
            reason: self
                .stop_reason
                .take()
                .map_or(FinishReason::Stop, FinishReason::from),
            usage: self.usage.total(),
        });
    }

    /// A source, unless its URL was given already in this stream.
    fn source(&mut self, url: String, title: Option<String>, out: &mut Vec<BrainEvent>) {
        if !self.sourced.contains(&url) {
            self.sourced.push(url.clone());
            out.push(BrainEvent::Source { url, title });
        }
    }

    /// An event type this parser does not know: logged, once per type and stream.
    fn log_unknown(&mut self, data: &str) {
        let kind = match reread(data, "type") {
            Value::String(kind) => kind,
            other => other.to_string(),
        };
        if !self.logged.contains(&kind) {
            tracing::warn!(
                event = kind.as_str(),
                payload = excerpt(data),
                "the stream has an event type agentwire does not read; it is not kept",
            );
            self.logged.push(kind);
        }
    }

    fn position(&self, index: u64) -> Result<usize, BrainError> {
        self.open
            .iter()
            .position(|(open, _)| *open == index)
            .ok_or_else(|| self.malformed(format!("block {index} is not open")))
    }

    fn malformed(&self, what: String) -> BrainError {
        BrainError::MalformedStream {
            message: format!("event {}: {what}", self.n_events),
        }
    }
}

impl Counts {
    /// Takes the counts `newer` reports; they are cumulative, so a later count replaces an
    /// earlier one.
    fn update(&mut self, newer: Counts) {
        self.input_tokens = newer.input_tokens.or(self.input_tokens);
        self.output_tokens = newer.output_tokens.or(self.output_tokens);
        self.cache_creation_input_tokens = newer
            .cache_creation_input_tokens
            .or(self.cache_creation_input_tokens);
        self.cache_read_input_tokens = newer
            .cache_read_input_tokens
            .or(self.cache_read_input_tokens);
    }

    /// Our usage: the whole prompt as input (Anthropic's `input_tokens` leaves out the tokens
    /// read from and written to its cache), the cache reads as the cached part.
    fn total(&self) -> Option<Usage> {
        let Counts {
            input_tokens,
            output_tokens,
            cache_creation_input_tokens,
            cache_read_input_tokens,
        } = *self;
        if input_tokens.is_none() && output_tokens.is_none() {
            return None;
        }
        let input = input_tokens.unwrap_or(0)
            + cache_creation_input_tokens.unwrap_or(0)
            + cache_read_input_tokens.unwrap_or(0);
        Some(Usage {
            cached_input_tokens: cache_read_input_tokens,
            ..Usage::new(input, output_tokens.unwrap_or(0))
        })
    }
}

/// `key` of the payload `data`, read again as plain JSON (it parsed once already, typed).
fn reread(data: &str, key: &str) -> Value {
    serde_json::from_str::<Value>(data)
        .ok()
        .and_then(|mut payload| payload.get_mut(key).map(Value::take))
        .unwrap_or(Value::Null)
}

/// The URL and title a citation names, when it names a URL: a web search result's `url`, or a
/// search result's `source` when that is an http(s) URL.
fn cited_url(citation: &Value) -> Option<(String, Option<String>)> {
    let url = match citation.get("type").and_then(Value::as_str)? {
        "web_search_result_location" => citation.get("url"),
        "search_result_location" => citation.get("source"),
        _ => None,
    }
    .and_then(Value::as_str)
    .filter(|url| url.starts_with("https://") || url.starts_with("http://"))?;
    Some((url.to_owned(), title_of(citation)))
}

/// The results with a URL of a `web_search_tool_result` block (its `content` is an error
/// object, not a list, when the search failed).
fn search_results(block: &Value) -> Vec<(String, Option<String>)> {
    let Some(results) = block.get("content").and_then(Value::as_array) else {
        return Vec::new();
    };
    results
        .iter()
        .filter_map(|result| {
            let url = result.get("url").and_then(Value::as_str)?;
            Some((url.to_owned(), title_of(result)))
        })
        .collect()
}

fn title_of(value: &Value) -> Option<String> {
    value
        .get("title")
        .and_then(Value::as_str)
        .filter(|title| !title.is_empty())
        .map(str::to_owned)
}

/// `anthropic.<type>` for a block or delta kept as data.
fn data_name(value: &Value) -> String {
    let kind = value
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("unknown");
    format!("anthropic.{kind}")
}

fn push_text(out: &mut Vec<BrainEvent>, text: String) {
    if !text.is_empty() {
        out.push(BrainEvent::TextDelta { text });
    }
}

fn push_reasoning(out: &mut Vec<BrainEvent>, text: String) {
    if !text.is_empty() {
        out.push(BrainEvent::ReasoningDelta { text });
    }
}

#[cfg(test)]
mod tests;
