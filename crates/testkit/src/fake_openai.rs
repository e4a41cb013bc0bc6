//! Chat Completions streams in the real wire format, for a [`FakeProvider`] to play.
//!
//! The shapes follow the providers' documentation of `chat.completion.chunk`: every chunk
//! carries `id`, `object`, `created`, `model`, `system_fingerprint`, one choice (`index`,
//! `delta`, `logprobs`, `finish_reason`) and, because agentwire asks for
//! `stream_options.include_usage`, `"usage": null`; the usage comes last in a chunk whose
//! `choices` is empty; the stream ends with `data: [DONE]`. The first delta carries the role;
//! a tool call's first delta carries `index`, `id`, `type` and the name with empty arguments,
//! and the later ones only `index` and an argument fragment. DeepSeek (and vLLM) send
//! reasoning as `reasoning_content` with `content: null`; OpenRouter (and Ollama) as
//! `reasoning`.
//!
//! ```
//! use agentwire_testkit::fake_openai::ChatStream;
//!
//! let sse = ChatStream::new().role().text("Hi").finish("stop").usage(5, 1).done().to_sse();
//! assert!(sse.ends_with(b"data: [DONE]\n\n"));
//! ```
//!
//! [`FakeProvider`]: crate::fake_provider::FakeProvider

use serde_json::{Value, json};

/// A Chat Completions stream under construction: chunks in order, then `[DONE]` if asked for.
#[derive(Clone, Debug)]
pub struct ChatStream {
    frames: Vec<String>,
}

impl Default for ChatStream {
    fn default() -> Self {
        Self::new()
    }
}

impl ChatStream {
    /// An empty stream.
    pub fn new() -> Self {
        Self { frames: Vec::new() }
    }

    /// The first chunk: the role, empty content.
    pub fn role(self) -> Self {
        self.delta(json!({"role": "assistant", "content": "", "refusal": null}))
    }

    /// A piece of the answer.
    pub fn text(self, text: &str) -> Self {
        self.delta(json!({"content": text}))
    }

    /// A piece of reasoning as DeepSeek sends it.
    pub fn reasoning_content(self, text: &str) -> Self {
        self.delta(json!({"content": null, "reasoning_content": text}))
    }

    /// A piece of reasoning as OpenRouter sends it.
    pub fn reasoning(self, text: &str) -> Self {
        self.delta(json!({
            "role": "assistant",
            "content": "",
            "reasoning": text,
            "reasoning_details": [{"type": "reasoning.text", "text": text, "format": "unknown", "index": 0}]
        }))
    }

    /// The first delta of tool call `index`: its id and name, empty arguments.
    pub fn tool_call(self, index: u64, id: &str, name: &str) -> Self {
        self.delta(json!({"tool_calls": [{
            "index": index,
            "id": id,
            "type": "function",
            "function": {"name": name, "arguments": ""}
        }]}))
    }

    /// A fragment of tool call `index`'s arguments.
    pub fn arguments(self, index: u64, fragment: &str) -> Self {
        self.delta(json!({"tool_calls": [{"index": index, "function": {"arguments": fragment}}]}))
    }

    /// The chunk with the finish reason and an empty delta.
    pub fn finish(self, reason: &str) -> Self {
        self.choice(json!({}), json!(reason))
    }

    /// The usage chunk: `choices` empty.
    pub fn usage(self, prompt_tokens: u64, completion_tokens: u64) -> Self {
        let mut chunk = envelope(json!([]));
        chunk["usage"] = json!({
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
            "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
            "completion_tokens_details": {
                "reasoning_tokens": 0,
                "audio_tokens": 0,
                "accepted_prediction_tokens": 0,
                "rejected_prediction_tokens": 0
            }
        });
        self.chunk(chunk)
    }

    /// A chunk with one choice holding this delta and no finish reason.
    pub fn delta(self, delta: Value) -> Self {
        self.choice(delta, Value::Null)
    }

    /// A chunk with one choice holding this delta and finish reason.
    pub fn choice(self, delta: Value, finish_reason: Value) -> Self {
        self.chunk(envelope(json!([{
            "index": 0,
            "delta": delta,
            "logprobs": null,
            "finish_reason": finish_reason
        }])))
    }

    /// Any chunk, as given (for the odd shapes some servers send).
    pub fn chunk(mut self, chunk: Value) -> Self {
        self.frames.push(chunk.to_string());
        self
    }

    /// The `data: [DONE]` that ends an OpenAI stream.
    pub fn done(mut self) -> Self {
        self.frames.push("[DONE]".into());
        self
    }

    /// The stream as SSE bytes: `data: <payload>\n\n` per chunk.
    pub fn to_sse(&self) -> Vec<u8> {
        let mut sse = Vec::new();
        for frame in &self.frames {
            sse.extend_from_slice(b"data: ");
            sse.extend_from_slice(frame.as_bytes());
            sse.extend_from_slice(b"\n\n");
        }
        sse
    }
}

/// A chunk's common fields around these choices.
fn envelope(choices: Value) -> Value {
    json!({
        "id": "chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG",
        "object": "chat.completion.chunk",
        "created": 1_741_570_283,
        "model": "gpt-4o-mini-2024-07-18",
        "service_tier": "default",
        "system_fingerprint": "fp_06737a9306",
        "choices": choices,
        "usage": null
    })
}
