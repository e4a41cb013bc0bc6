//! The A2A 1.0 objects as they arrive (ProtoJSON: camelCase names, enum names as strings), and
//! the mapping of one A2A part to a canonical part, shared by the stream and request decoders.
//!
//! ProtoJSON readers accept a field's original snake_case name too, so every two-word field
//! has that alias. Only what the decoders use is declared; other fields are ignored.

use agentwire_core::part::{DataPart, FilePart, FileSource, ReasoningPart, RefusalPart};
use agentwire_core::{Part, Role, StreamedPart};
use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};

/// The namespace of agentwire's own keys in A2A `metadata` objects.
pub(crate) const NAMESPACE: &str = "agentwire";

/// The media type of a file part that does not name one.
pub(crate) const DEFAULT_MEDIA_TYPE: &str = "application/octet-stream";

/// Canonical part types that travel as a DataPart holding the part's native JSON. Text and
/// files have A2A parts of their own; reasoning and refusals stream (see [`Chunk`]).
const DATA_PART_TYPES: &[&str] = &[
    "tool_call",
    "tool-call",
    "tool_result",
    "tool-result",
    "tool_error",
    "tool-error",
    "data",
    "step_start",
    "step-start",
    "artifact",
    "plan_update",
    "plan-update",
    "approval_request",
    "approval-request",
    "approval_response",
    "approval-response",
    "source",
];

/// `Task`
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Task {
    pub(crate) id: String,
    #[serde(default, alias = "context_id")]
    pub(crate) context_id: String,
    #[serde(default)]
    pub(crate) status: Option<TaskStatus>,
    #[serde(default)]
    pub(crate) artifacts: Vec<Artifact>,
    #[serde(default)]
    pub(crate) metadata: Option<Map<String, Value>>,
}

/// `TaskStatus`
#[derive(Debug, Deserialize)]
pub(crate) struct TaskStatus {
    pub(crate) state: TaskState,
    #[serde(default)]
    pub(crate) message: Option<Message>,
}

/// `TaskState`, by its 1.0 name; the 0.3 names are accepted too.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
pub(crate) enum TaskState {
    #[serde(rename = "TASK_STATE_UNSPECIFIED", alias = "unknown")]
    Unspecified,
    #[serde(rename = "TASK_STATE_SUBMITTED", alias = "submitted")]
    Submitted,
    #[serde(rename = "TASK_STATE_WORKING", alias = "working")]
    Working,
    #[serde(rename = "TASK_STATE_COMPLETED", alias = "completed")]
    Completed,
    #[serde(rename = "TASK_STATE_FAILED", alias = "failed")]
    Failed,
    #[serde(rename = "TASK_STATE_CANCELED", alias = "canceled")]
    Canceled,
    #[serde(rename = "TASK_STATE_INPUT_REQUIRED", alias = "input-required")]
    InputRequired,
    #[serde(rename = "TASK_STATE_REJECTED", alias = "rejected")]
    Rejected,
    #[serde(rename = "TASK_STATE_AUTH_REQUIRED", alias = "auth-required")]
    AuthRequired,
}

/// `Message`
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Message {
    #[serde(alias = "message_id")]
    pub(crate) message_id: String,
    #[serde(default, alias = "context_id")]
    pub(crate) context_id: Option<String>,
    #[serde(default, alias = "task_id")]
    pub(crate) task_id: Option<String>,
    pub(crate) role: MessageRole,
    pub(crate) parts: Vec<A2aPart>,
    #[serde(default)]
    pub(crate) metadata: Option<Map<String, Value>>,
}

/// `Role`
#[derive(Clone, Copy, Debug, Deserialize)]
pub(crate) enum MessageRole {
    #[serde(rename = "ROLE_USER", alias = "user")]
    User,
    #[serde(rename = "ROLE_AGENT", alias = "agent")]
    Agent,
}

impl MessageRole {
    pub(crate) fn canonical(self) -> Role {
        match self {
            MessageRole::User => Role::User,
            MessageRole::Agent => Role::Assistant,
        }
    }
}

/// `Part`: one of `text`, `raw` (base64), `url`, `data`, with optional metadata.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct A2aPart {
    #[serde(default)]
    pub(crate) text: Option<String>,
    #[serde(default)]
    pub(crate) raw: Option<String>,
    #[serde(default)]
    pub(crate) url: Option<String>,
    /// `Some(Value::Null)` when the part is `{"data": null}`.
    #[serde(default, deserialize_with = "present")]
    pub(crate) data: Option<Value>,
    #[serde(default)]
    pub(crate) metadata: Option<Map<String, Value>>,
    #[serde(default)]
    pub(crate) filename: Option<String>,
    #[serde(default, alias = "media_type")]
    pub(crate) media_type: Option<String>,
}

/// `Artifact`
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Artifact {
    #[serde(alias = "artifact_id")]
    pub(crate) artifact_id: String,
    #[serde(default)]
    pub(crate) parts: Vec<A2aPart>,
    #[serde(default)]
    pub(crate) metadata: Option<Map<String, Value>>,
}

/// `TaskStatusUpdateEvent`
#[derive(Debug, Deserialize)]
pub(crate) struct StatusUpdate {
    pub(crate) status: TaskStatus,
    #[serde(default)]
    pub(crate) metadata: Option<Map<String, Value>>,
}

/// `TaskArtifactUpdateEvent`. `append` is not read: a chunk of the open artifact continues it,
/// another artifact starts a new message.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ArtifactUpdate {
    pub(crate) artifact: Artifact,
    #[serde(default, alias = "last_chunk")]
    pub(crate) last_chunk: bool,
}

/// `StreamResponse`: exactly one of its fields is set; none is an item of a newer version.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct StreamResponse {
    #[serde(default)]
    pub(crate) task: Option<Task>,
    #[serde(default)]
    pub(crate) message: Option<Message>,
    #[serde(default, alias = "status_update")]
    pub(crate) status_update: Option<StatusUpdate>,
    #[serde(default, alias = "artifact_update")]
    pub(crate) artifact_update: Option<ArtifactUpdate>,
}

/// A JSON-RPC 2.0 response: a `result` or an `error`.
#[derive(Debug, Deserialize)]
pub(crate) struct Response {
    #[serde(default)]
    pub(crate) result: Option<StreamResponse>,
    #[serde(default)]
    pub(crate) error: Option<RpcError>,
}

/// A JSON-RPC error object.
#[derive(Debug, Deserialize)]
pub(crate) struct RpcError {
    pub(crate) code: i64,
    #[serde(default)]
    pub(crate) message: String,
}

/// An A2A part, read for the canonical model: text that may continue the part before it, or a
/// whole part.
#[derive(Debug)]
pub(crate) enum Chunk {
    /// Text, reasoning or refusal text.
    Streamed(StreamedPart, String),
    /// A part that arrives whole.
    Whole(Part),
}

impl Chunk {
    /// The canonical part this chunk is when it stands alone (as in a request).
    pub(crate) fn into_part(self) -> Part {
        match self {
            Chunk::Streamed(StreamedPart::Reasoning, text) => {
                Part::Reasoning(ReasoningPart { text })
            }
            Chunk::Streamed(StreamedPart::Refusal, text) => Part::Refusal(RefusalPart { text }),
            Chunk::Streamed(_, text) => Part::text(text),
            Chunk::Whole(part) => part,
        }
    }
}

impl A2aPart {
    /// Reads the part: `text` is text; `url` and `raw` are files; `data` is the canonical part
    /// whose native JSON it holds (`{"type": "tool_call", …}`), reasoning or refusal text
    /// (`{"type": "reasoning", "text"}`), or else named data `data`. `None` for a part with no
    /// content at all.
    pub(crate) fn into_chunk(self) -> Option<Chunk> {
        if let Some(text) = self.text {
            return Some(Chunk::Streamed(StreamedPart::Text, text));
        }
        let media_type = || {
            self.media_type
                .clone()
                .unwrap_or_else(|| DEFAULT_MEDIA_TYPE.to_owned())
        };
        if let Some(url) = self.url {
            let source = FileSource::Url(url);
            return Some(file(media_type(), source, self.filename));
        }
        if let Some(raw) = self.raw {
            let source = FileSource::Data(raw);
            return Some(file(media_type(), source, self.filename));
        }
        self.data.map(data_chunk)
    }

    /// Whether agentwire marked this part as the start of a new canonical part.
    pub(crate) fn starts_new_part(&self) -> bool {
        self.metadata
            .as_ref()
            .and_then(|metadata| metadata.get(NAMESPACE))
            .and_then(|ours| ours.get("new_part"))
            .and_then(Value::as_bool)
            .unwrap_or(false)
    }
}

fn file(media_type: String, source: FileSource, filename: Option<String>) -> Chunk {
    Chunk::Whole(Part::File(FilePart {
        media_type,
        source,
        filename,
    }))
}

fn data_chunk(data: Value) -> Chunk {
    let kind = data.get("type").and_then(Value::as_str);
    let streamed = match kind {
        Some("reasoning") => Some(StreamedPart::Reasoning),
        Some("refusal") => Some(StreamedPart::Refusal),
        _ => None,
    };
    if let Some(streamed) = streamed
        && let Some(Value::String(text)) = data.get("text")
    {
        return Chunk::Streamed(streamed, text.clone());
    }
    if kind.is_some_and(|kind| DATA_PART_TYPES.contains(&kind))
        && let Ok(part) = Part::deserialize(&data)
    {
        return Chunk::Whole(part);
    }
    // Data of another agent, or data that only looks like ours: kept whole, as data.
    Chunk::Whole(Part::Data(DataPart {
        name: "data".to_owned(),
        data,
    }))
}

/// Reads a field that is present as `Some`, even when it is `null`.
fn present<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(deserializer).map(Some)
}
