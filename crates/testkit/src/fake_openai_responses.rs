//! Responses API streams (`POST /v1/responses`, `stream: true`) in the real wire format, for a
//! [`FakeProvider`] to play.
//!
//! The shapes follow the API reference's streaming events: each frame is `event: <type>` and
//! `data: <json>` whose `type` repeats the event name and whose `sequence_number` counts from 0.
//! A stream opens with `response.created` and `response.in_progress` (the response object with
//! `status: "in_progress"` and empty `output`), then each output item: `response.output_item.added`
//! (the item, empty), its content (`response.content_part.added`, the deltas, their `done`
//! event, `response.content_part.done`; a reasoning item's `response.reasoning_summary_part.*`
//! and `response.reasoning_summary_text.*`; a function call's
//! `response.function_call_arguments.delta`/`done`) and `response.output_item.done` (the item,
//! whole). It ends with `response.completed`, `response.incomplete` or `response.failed` (the
//! response object with every item and the usage), or an `error` event.
//!
//! ```
//! use agentwire_testkit::fake_openai_responses::ResponsesStream;
//!
//! let sse = ResponsesStream::new().message("msg_1", &["Hi"]).completed(5, 1, 0).to_sse();
//! let text = String::from_utf8(sse).unwrap();
//! assert!(text.starts_with("event: response.created\ndata: {"));
//! assert!(text.ends_with("\"type\":\"response.completed\"}\n\n"));
//! ```
//!
//! [`FakeProvider`]: crate::fake_provider::FakeProvider

use serde_json::{Value, json};

/// The response id every stream uses.
pub const RESPONSE_ID: &str = "resp_67ccd2bed1ec8190b14f964abc0542670bb6a6b452d3795b";
/// The model every stream names.
pub const MODEL: &str = "o4-mini-2025-04-16";

/// A Responses stream under construction: its events in order, each numbered.
#[derive(Clone, Debug)]
pub struct ResponsesStream {
    frames: Vec<(String, String)>,
    /// The items output so far, whole, for the final response object.
    output: Vec<Value>,
}

impl Default for ResponsesStream {
    fn default() -> Self {
        Self::new()
    }
}

impl ResponsesStream {
    /// A stream opened with `response.created` and `response.in_progress`.
    pub fn new() -> Self {
        let mut stream = Self {
            frames: Vec::new(),
            output: Vec::new(),
        };
        let response = stream.response("in_progress", Value::Null);
        stream.event("response.created", json!({"response": response.clone()}));
        stream.event("response.in_progress", json!({"response": response}));
        stream
    }

    /// A reasoning item `id`: each summary part's text in the given deltas, then the item with
    /// its summary and `encrypted_content`.
    pub fn reasoning(mut self, id: &str, summary: &[&[&str]], encrypted_content: &str) -> Self {
        let index = self.output.len();
        self.event(
            "response.output_item.added",
            json!({"output_index": index, "item": {"id": id, "type": "reasoning", "summary": []}}),
        );
        let mut parts = Vec::new();
        for (summary_index, deltas) in summary.iter().enumerate() {
            let at = json!({"item_id": id, "output_index": index, "summary_index": summary_index});
            self.event(
                "response.reasoning_summary_part.added",
                with(&at, json!({"part": {"type": "summary_text", "text": ""}})),
            );
            for delta in *deltas {
                self.event(
                    "response.reasoning_summary_text.delta",
                    with(&at, json!({"delta": delta, "obfuscation": "xK3"})),
                );
            }
            let text = deltas.concat();
            self.event(
                "response.reasoning_summary_text.done",
                with(&at, json!({"text": text})),
            );
            let part = json!({"type": "summary_text", "text": text});
            self.event(
                "response.reasoning_summary_part.done",
                with(&at, json!({"part": part.clone()})),
            );
            parts.push(part);
        }
        self.item_done(json!({
            "id": id,
            "type": "reasoning",
            "summary": parts,
            "encrypted_content": encrypted_content
        }))
    }

    /// An assistant message `id` whose one output text streams in these deltas.
    pub fn message(self, id: &str, deltas: &[&str]) -> Self {
        self.annotated_message(id, deltas, &[])
    }

    /// An assistant message whose output text streams in these deltas and carries these
    /// annotations (each sent as `response.output_text.annotation.added` after the text).
    pub fn annotated_message(mut self, id: &str, deltas: &[&str], annotations: &[Value]) -> Self {
        let index = self.open_message(id);
        let at = json!({"item_id": id, "output_index": index, "content_index": 0});
        self.event(
            "response.content_part.added",
            with(
                &at,
                json!({"part": {"type": "output_text", "text": "", "annotations": [], "logprobs": []}}),
            ),
        );
        for delta in deltas {
            self.event(
                "response.output_text.delta",
                with(&at, json!({"delta": delta, "logprobs": []})),
            );
        }
        for (annotation_index, annotation) in annotations.iter().enumerate() {
            self.event(
                "response.output_text.annotation.added",
                with(
                    &at,
                    json!({"annotation_index": annotation_index, "annotation": annotation}),
                ),
            );
        }
        let text = deltas.concat();
        self.event(
            "response.output_text.done",
            with(&at, json!({"text": text, "logprobs": []})),
        );
        let part = json!({"type": "output_text", "text": text, "annotations": annotations, "logprobs": []});
        self.event(
            "response.content_part.done",
            with(&at, json!({"part": part.clone()})),
        );
        self.close_message(id, part)
    }

    /// An assistant message `id` whose one content is a refusal streaming in these deltas.
    pub fn refusal(mut self, id: &str, deltas: &[&str]) -> Self {
        let index = self.open_message(id);
        let at = json!({"item_id": id, "output_index": index, "content_index": 0});
        self.event(
            "response.content_part.added",
            with(&at, json!({"part": {"type": "refusal", "refusal": ""}})),
        );
        for delta in deltas {
            self.event("response.refusal.delta", with(&at, json!({"delta": delta})));
        }
        let refusal = deltas.concat();
        self.event(
            "response.refusal.done",
            with(&at, json!({"refusal": refusal})),
        );
        let part = json!({"type": "refusal", "refusal": refusal});
        self.event(
            "response.content_part.done",
            with(&at, json!({"part": part.clone()})),
        );
        self.close_message(id, part)
    }

    /// A function call item `id` (`fc_…`) with call id `call_id`, its arguments streaming in
    /// these fragments.
    pub fn function_call(
        mut self,
        id: &str,
        call_id: &str,
        name: &str,
        fragments: &[&str],
    ) -> Self {
        let index = self.output.len();
        let item = |arguments: &str, status: &str| {
            json!({
                "id": id,
                "type": "function_call",
                "status": status,
                "arguments": arguments,
                "call_id": call_id,
                "name": name
            })
        };
        self.event(
            "response.output_item.added",
            json!({"output_index": index, "item": item("", "in_progress")}),
        );
        let at = json!({"item_id": id, "output_index": index});
        for fragment in fragments {
            self.event(
                "response.function_call_arguments.delta",
                with(&at, json!({"delta": fragment, "obfuscation": "a1"})),
            );
        }
        let arguments = fragments.concat();
        self.event(
            "response.function_call_arguments.done",
            with(&at, json!({"arguments": arguments})),
        );
        self.item_done(item(&arguments, "completed"))
    }

    /// `response.completed`, with the usage: input, output and, of the output, reasoning tokens.
    pub fn completed(self, input_tokens: u64, output_tokens: u64, reasoning_tokens: u64) -> Self {
        let usage = usage(input_tokens, output_tokens, reasoning_tokens);
        self.end("response.completed", "completed", usage, |_| {})
    }

    /// `response.incomplete` for this reason (`max_output_tokens`, `content_filter`).
    pub fn incomplete(self, reason: &str, input_tokens: u64, output_tokens: u64) -> Self {
        let usage = usage(input_tokens, output_tokens, 0);
        self.end("response.incomplete", "incomplete", usage, |response| {
            response["incomplete_details"] = json!({"reason": reason});
        })
    }

    /// `response.failed` with this error code and message.
    pub fn failed(self, code: &str, message: &str) -> Self {
        self.end("response.failed", "failed", Value::Null, |response| {
            response["error"] = json!({"code": code, "message": message});
        })
    }

    /// An `error` event with this code and message.
    pub fn error(mut self, code: &str, message: &str) -> Self {
        self.event(
            "error",
            json!({"code": code, "message": message, "param": null}),
        );
        self
    }

    /// Any event, as given; its `type` and `sequence_number` are added.
    pub fn event(&mut self, kind: &str, fields: Value) {
        let mut event = json!({"type": kind, "sequence_number": self.frames.len()});
        if let (Some(event), Value::Object(fields)) = (event.as_object_mut(), fields) {
            event.extend(fields);
            // The type last, as the API writes it.
            if let Some(kind) = event.remove("type") {
                event.insert("type".into(), kind);
            }
        }
        self.frames.push((kind.to_owned(), event.to_string()));
    }

    /// The stream as SSE bytes: `event: <type>\ndata: <json>\n\n` per event.
    pub fn to_sse(&self) -> Vec<u8> {
        let mut sse = Vec::new();
        for (kind, data) in &self.frames {
            sse.extend_from_slice(format!("event: {kind}\ndata: {data}\n\n").as_bytes());
        }
        sse
    }

    /// Each event's `data` payload, in order.
    pub fn payloads(&self) -> Vec<&str> {
        self.frames.iter().map(|(_, data)| data.as_str()).collect()
    }

    fn open_message(&mut self, id: &str) -> usize {
        let index = self.output.len();
        self.event(
            "response.output_item.added",
            json!({"output_index": index, "item": {
                "id": id, "type": "message", "status": "in_progress", "content": [], "role": "assistant"
            }}),
        );
        index
    }

    fn close_message(self, id: &str, part: Value) -> Self {
        self.item_done(json!({
            "id": id,
            "type": "message",
            "status": "completed",
            "content": [part],
            "role": "assistant"
        }))
    }

    fn item_done(mut self, item: Value) -> Self {
        let index = self.output.len();
        self.event(
            "response.output_item.done",
            json!({"output_index": index, "item": item.clone()}),
        );
        self.output.push(item);
        self
    }

    fn end(mut self, kind: &str, status: &str, usage: Value, adjust: impl Fn(&mut Value)) -> Self {
        let mut response = self.response(status, usage);
        adjust(&mut response);
        self.event(kind, json!({"response": response}));
        self
    }

    /// The response object, with the items output so far.
    fn response(&self, status: &str, usage: Value) -> Value {
        json!({
            "id": RESPONSE_ID,
            "object": "response",
            "created_at": 1_741_476_542,
            "status": status,
            "background": false,
            "error": null,
            "incomplete_details": null,
            "instructions": null,
            "max_output_tokens": null,
            "model": MODEL,
            "output": self.output,
            "parallel_tool_calls": true,
            "previous_response_id": null,
            "reasoning": {"effort": "medium", "summary": "auto"},
            "store": false,
            "temperature": 1.0,
            "text": {"format": {"type": "text"}},
            "tool_choice": "auto",
            "tools": [],
            "top_p": 1.0,
            "truncation": "disabled",
            "usage": usage,
            "user": null,
            "metadata": {}
        })
    }
}

/// `base` with `fields` added.
fn with(base: &Value, fields: Value) -> Value {
    let mut merged = base.clone();
    if let (Some(merged), Value::Object(fields)) = (merged.as_object_mut(), fields) {
        merged.extend(fields);
    }
    merged
}

fn usage(input_tokens: u64, output_tokens: u64, reasoning_tokens: u64) -> Value {
    json!({
        "input_tokens": input_tokens,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": output_tokens,
        "output_tokens_details": {"reasoning_tokens": reasoning_tokens},
        "total_tokens": input_tokens + output_tokens
    })
}
