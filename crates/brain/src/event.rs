//! [`BrainEvent`]: what a model call streams, in the order the model produces it.

use agentwire_core::Usage;
use agentwire_core::part::{FilePart, FileSource};
use serde::{Deserialize, Serialize};

/// One thing a model produced. Tool-call events carry the provider's call id, so parallel calls
/// can interleave.
///
/// The JSON form is the scripted brain's:
/// `{"type": "text_delta", "text": "Hi"}`, `{"type": "reasoning_delta", "text": "…"}`,
/// `{"type": "refusal_delta", "text": "I can't help with that."}`, `{"type": "tool_call_start",
/// "id": "c1", "name": "write_file"}`, `{"type": "tool_call_delta", "id": "c1", "args": "{\"pa"}`,
/// `{"type": "tool_call_end", "id": "c1"}`, `{"type": "data", "name": "…", "data": {…}}`,
/// `{"type": "source", "url": "https://…", "title": "…"}`, `{"type": "file", "media_type":
/// "image/png", "url": "data:image/png;base64,…"}`,
/// `{"type": "finish", "reason": "stop", "usage": {…}}`, `{"type": "error", "message": "…"}`,
/// `{"type": "response_start", "id": "chatcmpl-…", "model": "gpt-4o-2024-08-06"}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum BrainEvent {
    /// The provider names its answer: the response's id and the model that actually answered
    /// (often a dated version of the one asked for). Given at most once, before the answer's
    /// content, when the provider says either: the first Chat Completions chunk's `id` and
    /// `model`, Anthropic's `message_start`, the Responses API's `response.created`. It adds
    /// nothing to the message; telemetry records it (`gen_ai.response.id`,
    /// `gen_ai.response.model`).
    ResponseStart {
        /// The provider's id of the response, e.g. `chatcmpl-…`, `msg_…`, `resp_…`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        /// The model that answered, as the provider names it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        model: Option<String>,
    },
    /// More of the answer's text.
    TextDelta {
        /// The text to append.
        text: String,
    },
    /// More of the model's reasoning.
    ReasoningDelta {
        /// The text to append.
        text: String,
    },
    /// More of the model's refusal: it declined to answer, in words meant for the person
    /// (OpenAI's `refusal`, e.g. when a structured output would break its policies). It
    /// becomes a `refusal` part.
    RefusalDelta {
        /// The text to append.
        text: String,
    },
    /// The model starts a tool call.
    ToolCallStart {
        /// The call's id, unique within the model call.
        id: String,
        /// The tool called.
        name: String,
    },
    /// More of a tool call's arguments, as raw JSON text.
    ToolCallDelta {
        /// The call the text belongs to.
        id: String,
        /// The JSON text to append.
        args: String,
    },
    /// A tool call's arguments are complete.
    ToolCallEnd {
        /// The call.
        id: String,
    },
    /// Provider output that has no other place in the message, kept where it came: data the
    /// provider needs back with the history (Anthropic's thinking signatures and redacted
    /// thinking), and output no other event can carry (an unknown content block, a server tool's
    /// call and result, citations), so that nothing the provider sends is dropped; see
    /// [`crate::anthropic`]. The runtime adds it as a whole `data` part, which also completes
    /// the reasoning or text streaming before it. The adapters send back only the data they
    /// know the provider wants.
    Data {
        /// What the data is, namespaced by provider, e.g. `anthropic.thinking_signature`.
        name: String,
        /// The payload.
        data: serde_json::Value,
    },
    /// A source the answer draws on: the URL of a citation or of a search result the provider
    /// found (OpenAI's `url_citation` annotations, Anthropic's web search results and the
    /// citations of its text). The runtime adds it as a whole `source` part, once per URL and
    /// message, with an id it mints. Adapters give a text block's sources when the block ends,
    /// so they do not cut the text they annotate into pieces.
    Source {
        /// Where the source is.
        url: String,
        /// Its title, when the provider gave one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        title: Option<String>,
    },
    /// A file the model produced, whole: an image it generated (OpenRouter's `images` on a Chat
    /// Completions delta, an `image` block from an Anthropic-compatible server). The runtime
    /// adds it as a `file` part, as it came: a URL (which may be a `data:` URL) or base64 data.
    File(FilePart),
    /// The model call ended normally; nothing follows.
    Finish {
        /// Why the model stopped.
        reason: FinishReason,
        /// Tokens used, when the provider reported them.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        usage: Option<Usage>,
    },
    /// The model failed at this point (a scripted failure). The stream yields it as an `Err`.
    Error {
        /// What went wrong.
        message: String,
    },
}

/// Short constructors, for brains that make events and tests that expect them.
impl BrainEvent {
    /// [`BrainEvent::TextDelta`].
    pub fn text_delta(text: impl Into<String>) -> Self {
        Self::TextDelta { text: text.into() }
    }

    /// [`BrainEvent::ReasoningDelta`].
    pub fn reasoning_delta(text: impl Into<String>) -> Self {
        Self::ReasoningDelta { text: text.into() }
    }

    /// [`BrainEvent::RefusalDelta`].
    pub fn refusal_delta(text: impl Into<String>) -> Self {
        Self::RefusalDelta { text: text.into() }
    }

    /// [`BrainEvent::ToolCallStart`].
    pub fn tool_call_start(id: impl Into<String>, name: impl Into<String>) -> Self {
        Self::ToolCallStart {
            id: id.into(),
            name: name.into(),
        }
    }

    /// [`BrainEvent::ToolCallDelta`].
    pub fn tool_call_delta(id: impl Into<String>, args: impl Into<String>) -> Self {
        Self::ToolCallDelta {
            id: id.into(),
            args: args.into(),
        }
    }

    /// [`BrainEvent::ToolCallEnd`].
    pub fn tool_call_end(id: impl Into<String>) -> Self {
        Self::ToolCallEnd { id: id.into() }
    }

    /// [`BrainEvent::Source`].
    pub fn source(url: impl Into<String>, title: Option<&str>) -> Self {
        Self::Source {
            url: url.into(),
            title: title.map(str::to_owned),
        }
    }

    /// [`BrainEvent::Finish`].
    pub fn finish(reason: FinishReason, usage: Option<Usage>) -> Self {
        Self::Finish { reason, usage }
    }
}

/// A file part for an image a provider gave by URL: the media type is the `data:` URL's, else
/// the one the path's extension names, else `image/*` (an image of a type not said).
pub(crate) fn image_at(url: String) -> FilePart {
    let media_type = match url.strip_prefix("data:") {
        Some(rest) => rest
            .split([';', ','])
            .next()
            .filter(|media_type| media_type.contains('/'))
            .unwrap_or("image/*")
            .to_owned(),
        None => {
            let path = url.split(['?', '#']).next().unwrap_or_default();
            let extension = path
                .rsplit_once('.')
                .map(|(_, ext)| ext.to_ascii_lowercase());
            match extension.as_deref() {
                Some("png") => "image/png",
                Some("jpg" | "jpeg") => "image/jpeg",
                Some("gif") => "image/gif",
                Some("webp") => "image/webp",
                Some("svg") => "image/svg+xml",
                _ => "image/*",
            }
            .to_owned()
        }
    };
    FilePart {
        media_type,
        source: FileSource::Url(url),
        filename: None,
    }
}

/// Why a model stopped.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", from = "String", into = "String")]
pub enum FinishReason {
    /// The answer is complete.
    Stop,
    /// The model wants its tool calls run.
    ToolCalls,
    /// The output hit the token limit.
    Length,
    /// The provider stopped the output for its policies: OpenAI's content filter, Anthropic's
    /// streaming refusal classifiers (`refusal`).
    ContentFilter,
    /// A reason the provider named that none of the above covers, kept as it came.
    Other(String),
}

impl From<String> for FinishReason {
    fn from(reason: String) -> Self {
        match reason.as_str() {
            "stop" | "end_turn" | "stop_sequence" => FinishReason::Stop,
            "tool_calls" | "tool_use" | "function_call" => FinishReason::ToolCalls,
            "length" | "max_tokens" => FinishReason::Length,
            "content_filter" | "refusal" => FinishReason::ContentFilter,
            _ => FinishReason::Other(reason),
        }
    }
}

impl From<FinishReason> for String {
    fn from(reason: FinishReason) -> Self {
        match reason {
            FinishReason::Stop => "stop".into(),
            FinishReason::ToolCalls => "tool_calls".into(),
            FinishReason::Length => "length".into(),
            FinishReason::ContentFilter => "content_filter".into(),
            FinishReason::Other(reason) => reason,
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_script_spelling_round_trips() {
        let events = json!([
            {"type": "text_delta", "text": "Let me write it. "},
            {"type": "tool_call_start", "id": "c1", "name": "write_file"},
            {"type": "tool_call_delta", "id": "c1", "args": "{\"path\": \"a.txt\", "},
            {"type": "tool_call_end", "id": "c1"},
            {"type": "data", "name": "anthropic.thinking_signature", "data": {"signature": "c2ln"}},
            {"type": "source", "url": "https://example.com/a", "title": "A"},
            {"type": "source", "url": "https://example.com/b"},
            {"type": "file", "media_type": "image/png", "url": "data:image/png;base64,iVBORw0K"},
            {"type": "file", "media_type": "image/png", "data": "iVBORw0K"},
            {"type": "finish", "reason": "tool_calls"},
            {"type": "reasoning_delta", "text": "Done."},
            {"type": "refusal_delta", "text": "I can't help with that."},
            {"type": "finish", "reason": "stop", "usage": {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}},
            {"type": "error", "message": "boom"}
        ]);
        let parsed: Vec<BrainEvent> = serde_json::from_value(events.clone()).expect("parses");
        assert_eq!(serde_json::to_value(&parsed).expect("serializes"), events);
    }

    #[test]
    fn an_image_s_media_type_comes_from_its_url() {
        let media = |url: &str| image_at(url.to_owned()).media_type;
        assert_eq!(media("data:image/webp;base64,UklG"), "image/webp");
        assert_eq!(media("data:,x"), "image/*");
        assert_eq!(media("https://x.test/a/cat.JPG?size=2"), "image/jpeg");
        assert_eq!(media("https://x.test/render"), "image/*");
    }

    #[test]
    fn provider_reasons_map_to_ours() {
        assert_eq!(
            FinishReason::from("end_turn".to_owned()),
            FinishReason::Stop
        );
        assert_eq!(
            FinishReason::from("tool_use".to_owned()),
            FinishReason::ToolCalls
        );
        assert_eq!(
            FinishReason::from("max_tokens".to_owned()),
            FinishReason::Length
        );
        assert_eq!(
            FinishReason::from("eos".to_owned()),
            FinishReason::Other("eos".into())
        );
    }
}
