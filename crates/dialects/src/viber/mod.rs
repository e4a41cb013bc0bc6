//! Viber's message stream: a turn streams as `XMessage` packets in the camelCase
//! spelling (`"type": "tool-call"`, `toolCallId`, `isError`), sharing one message id, over one
//! connection; beside them, the chat's status (`idle | streaming | awaiting-approval`) for
//! `useXChat`, with the space (`spaceId`) the chat lives in.
//!
//! ```text
//! event: status
//! data: {"status":"streaming","spaceId":"ses_1","runId":"run_1","runStatus":"in_progress"}
//!
//! id: 5
//! data: {"id":"msg_1","role":"assistant","parts":[{"type":"text","text":"Hello"}],"content":"Hello"}
//!
//! id: 6
//! data: {"id":"msg_1","role":"assistant","parts":[{"type":"text","text":" there!"}],"content":" there!"}
//! ```
//!
//! # Framing
//!
//! SSE. A packet is a `data:` frame of the default event type holding one `XMessage`: its `id`,
//! `role`, the parts that are new (one per packet) and, when they hold text, the plain-text
//! `content` of that packet, so a client that reads only `content` (Viber keeps it for backward
//! compatibility) appends it as it appends parts. The chat's status is an `event: status` frame;
//! an in-band error an `event: error` frame `{"code", "message"}`; heartbeats are the comment
//! `: heartbeat`. The last frame written for an event has `id:` = its sequence number, so
//! `Last-Event-ID` resumes.
//!
//! # Mapping
//!
//! | canonical | Viber |
//! |---|---|
//! | text delta | a packet with `{"type": "text", "text": <delta>}` |
//! | reasoning delta | `{"type": "reasoning", "content": <delta>}` |
//! | refusal delta | `{"type": "refusal", "text": <delta>}` (not in Viber's parts; its text is in `content`) |
//! | tool call | `{"type": "tool-call", "toolCallId", "toolName", "args"}`, whole when its arguments are |
//! | tool result | `{"type": "tool-result", "toolCallId", "toolName", "result", "isError"?}` |
//! | tool error | `{"type": "tool-result", …, "result": {"errorType", "message"}, "isError": true}` |
//! | file | `{"type": "file", "data", "mimeType", "filename"?}`: `data` is the base64 data or the URL |
//! | step start | `{"type": "step-start", "stepId", "stepName"?}` |
//! | artifact | `{"type": "artifact", "artifactId", "title", "version"?, "preview"?}` |
//! | plan update | `{"type": "plan-update", "planId", "action", "details"?}` |
//! | data | `{"type": "data", "name", "data"}` (not in Viber's parts) |
//! | approval request / response | `{"type": "approval-request", "approvalId", "toolCallId", "reason"?}` / `{"type": "approval-response", "approvalId", "approved", "reason"?}` (not in Viber's parts) |
//! | source | `{"type": "source", "sourceId", "url", "title"?}` (not in Viber's parts) |
//! | message metadata, `created_at` | one last packet without parts: `metadata: {agentName?, timestamp?, usage?, …}` (`timestamp` is `created_at` in ms; usage as `{inputTokens, outputTokens, totalTokens, …}`) |
//! | `run_created` | `status: streaming` with `spaceId` (the session), `runId`, `agent` |
//! | `run_status` created / queued / in progress | `status: streaming` |
//! | `run_status` awaiting approval | `status: awaiting-approval` |
//! | any other `run_status` | `status: idle` |
//! | `error` | `event: error`, `{"code", "message"}` |
//!
//! Every status frame after `run_created` also carries agentwire's own status, so nothing is
//! lost: `runStatus` (`in_progress`, `awaiting`, `completed`, …), `awaiting`, `error` and
//! `usage`. Packets go out in part order (see `packet.rs`), because the receiver knows no
//! part indexes.
//!
//! # Where Viber is silent
//!
//! Viber's format gives the message and part shapes, the packets and the status values of
//! `useXChat`, and nothing else on the wire. What agentwire chose, as a Viber client would
//! expect it:
//! - Tool errors are tool results with `isError: true`, the only failure Viber's parts know,
//!   so the client's `ToolResultDisplay` shows them.
//! - Parts agentwire has and Viber lacks (`refusal`, `data`, `approval-request`,
//!   `approval-response`, `source`) keep their names in Viber's spelling; Viber's own renderer
//!   skips types it does not draw (its `default: return null`), and the client needs the
//!   approval request to answer it.
//! - A run that waits for a client tool's output or for input is `idle`: Viber has no status
//!   for it; `runStatus` says which.
//! - The request ([`decode_request`]) is what `useXChat({spaceId})` would post: `{"spaceId",
//!   "messages"}` or `{"spaceId", "message"}`, or a bare message; an approval is answered by a
//!   message holding `approval-response` parts, a client tool by one holding `tool-result`s.
//!
//! # Losses
//! - Sub-agents' runs nested in the stream are not sent: a space is one conversation whose
//!   messages `useXChat` shows as they come, and Viber has no place for another agent's run
//!   (its packets name a message, not a run, and every agent's first message may share an id).
//!   A sub-agent's answer is its call's `tool-result`, as for any tool. A run that waits because
//!   a sub-agent does reports its own status (`awaiting-approval` …), but the request it waits
//!   on is in the sub-agent's messages, which are not sent.
//! - The session's shared state (`state_snapshot`, `state_delta`): Viber has no shared state,
//!   so it is not sent; a client reads it with `GET /v1/sessions/{id}/state`.
//! - Two adjacent parts of the same text kind arrive as one part; the packets carry no part
//!   boundary. Tool-call arguments do not stream: the call arrives whole.
//! - A tool result with `isError: true` whose result is exactly `{"errorType", "message"}` reads
//!   back as a tool error.
//! - A file whose `data` holds a `:` reads back as a URL, anything else as base64 data (base64
//!   has no `:`, every URL has one).
//! - A metadata key `timestamp` is `created_at`; one that is not a number stays a free key.
//! - Sequence numbers: the decoder numbers the events it makes from 1.

mod decoder;
mod encoder;
mod request;

pub use decoder::ViberDecoder;
pub use encoder::ViberEncoder;
pub use request::{ChatRequest, decode_request};

use std::borrow::Cow;

use agentwire_core::ids::{ApprovalId, ArtifactId, PlanId, SourceId, StepId};
use agentwire_core::part::{
    ApprovalRequest, ApprovalResponse, Artifact, DataPart, FilePart, FileSource, PlanAction,
    PlanUpdate, ReasoningPart, RefusalPart, Source, StepStart, TextPart,
};
use agentwire_core::{Metadata, Part, Timestamp, ToolArgs, ToolCallId, ToolErrorKind, Usage};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The `useXChat` status a run's status shows as.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
enum ChatStatus {
    /// Nothing is streaming: the run ended, or waits for the client in another way.
    Idle,
    /// The run is going.
    Streaming,
    /// The run waits for a person to approve a tool call.
    AwaitingApproval,
}

/// An `XMessagePart`, plus the parts agentwire has and Viber lacks. Text-like fields borrow, so
/// a delta is written without a copy.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
enum WirePart<'a> {
    Text {
        text: Cow<'a, str>,
    },
    Reasoning {
        content: Cow<'a, str>,
    },
    Refusal {
        text: Cow<'a, str>,
    },
    #[serde(rename_all = "camelCase")]
    ToolCall {
        tool_call_id: ToolCallId,
        tool_name: String,
        #[serde(default = "empty_object")]
        args: Value,
    },
    #[serde(rename_all = "camelCase")]
    ToolResult {
        tool_call_id: ToolCallId,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tool_name: Option<String>,
        #[serde(default)]
        result: Value,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        is_error: Option<bool>,
    },
    #[serde(rename_all = "camelCase")]
    File {
        data: String,
        mime_type: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        filename: Option<String>,
    },
    #[serde(rename_all = "camelCase")]
    StepStart {
        step_id: StepId,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        step_name: Option<String>,
    },
    #[serde(rename_all = "camelCase")]
    Artifact {
        artifact_id: ArtifactId,
        title: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        version: Option<u32>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        preview: Option<String>,
    },
    #[serde(rename_all = "camelCase")]
    PlanUpdate {
        plan_id: PlanId,
        action: PlanAction,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        details: Option<Value>,
    },
    Data {
        name: String,
        #[serde(default)]
        data: Value,
    },
    #[serde(rename_all = "camelCase")]
    ApprovalRequest {
        approval_id: ApprovalId,
        tool_call_id: ToolCallId,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    #[serde(rename_all = "camelCase")]
    ApprovalResponse {
        approval_id: ApprovalId,
        approved: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    #[serde(rename_all = "camelCase")]
    Source {
        source_id: SourceId,
        url: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        title: Option<String>,
    },
    /// A part type neither Viber nor agentwire defines: skipped, so newer peers keep working.
    #[serde(other, skip_serializing)]
    Unknown,
}

/// What a tool error's `result` holds.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ErrorResult {
    error_type: ToolErrorKind,
    message: String,
}

/// Token usage as the camelCase spelling writes it.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireUsage {
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
    #[serde(default)]
    total_tokens: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    reasoning_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    cached_input_tokens: Option<u64>,
}

impl From<Usage> for WireUsage {
    fn from(usage: Usage) -> Self {
        Self {
            input_tokens: usage.input_tokens,
            output_tokens: usage.output_tokens,
            total_tokens: usage.total_tokens,
            reasoning_tokens: usage.reasoning_tokens,
            cached_input_tokens: usage.cached_input_tokens,
        }
    }
}

impl From<WireUsage> for Usage {
    fn from(usage: WireUsage) -> Self {
        Self {
            input_tokens: usage.input_tokens,
            output_tokens: usage.output_tokens,
            total_tokens: usage.total_tokens,
            reasoning_tokens: usage.reasoning_tokens,
            cached_input_tokens: usage.cached_input_tokens,
        }
    }
}

fn empty_object() -> Value {
    Value::Object(Map::new())
}

impl<'a> WirePart<'a> {
    /// A canonical part in Viber's spelling.
    fn from_part(part: &'a Part) -> Self {
        match part {
            Part::Text(text) => WirePart::Text {
                text: Cow::Borrowed(&text.text),
            },
            Part::Reasoning(reasoning) => WirePart::Reasoning {
                content: Cow::Borrowed(&reasoning.text),
            },
            Part::Refusal(refusal) => WirePart::Refusal {
                text: Cow::Borrowed(&refusal.text),
            },
            Part::ToolCall(call) => WirePart::ToolCall {
                tool_call_id: call.tool_call_id.clone(),
                tool_name: call.tool_name.clone(),
                args: call.args.0.clone(),
            },
            Part::ToolResult(result) => WirePart::ToolResult {
                tool_call_id: result.tool_call_id.clone(),
                tool_name: result.tool_name.clone(),
                result: result.result.clone(),
                is_error: result.is_error,
            },
            Part::ToolError(error) => WirePart::ToolResult {
                tool_call_id: error.tool_call_id.clone(),
                tool_name: error.tool_name.clone(),
                result: serde_json::to_value(ErrorResult {
                    error_type: error.error_type,
                    message: error.message.clone(),
                })
                .unwrap_or_default(),
                is_error: Some(true),
            },
            Part::File(file) => WirePart::File {
                data: match &file.source {
                    FileSource::Url(url) => url.clone(),
                    FileSource::Data(data) => data.clone(),
                },
                mime_type: file.media_type.clone(),
                filename: file.filename.clone(),
            },
            Part::Data(data) => WirePart::Data {
                name: data.name.clone(),
                data: data.data.clone(),
            },
            Part::StepStart(step) => WirePart::StepStart {
                step_id: step.step_id.clone(),
                step_name: step.step_name.clone(),
            },
            Part::Artifact(artifact) => WirePart::Artifact {
                artifact_id: artifact.artifact_id.clone(),
                title: artifact.title.clone(),
                version: artifact.version,
                preview: artifact.preview.clone(),
            },
            Part::PlanUpdate(plan) => WirePart::PlanUpdate {
                plan_id: plan.plan_id.clone(),
                action: plan.action,
                details: plan.details.clone(),
            },
            Part::ApprovalRequest(request) => WirePart::ApprovalRequest {
                approval_id: request.approval_id.clone(),
                tool_call_id: request.tool_call_id.clone(),
                reason: request.reason.clone(),
            },
            Part::ApprovalResponse(response) => WirePart::ApprovalResponse {
                approval_id: response.approval_id.clone(),
                approved: response.approved,
                reason: response.reason.clone(),
            },
            Part::Source(source) => WirePart::Source {
                source_id: source.source_id.clone(),
                url: source.url.clone(),
                title: source.title.clone(),
            },
        }
    }

    /// The canonical part; `None` for a part type nobody defines.
    fn into_part(self) -> Option<Part> {
        Some(match self {
            WirePart::Text { text } => Part::Text(TextPart { text: text.into() }),
            WirePart::Reasoning { content } => Part::Reasoning(ReasoningPart {
                text: content.into(),
            }),
            WirePart::Refusal { text } => Part::Refusal(RefusalPart { text: text.into() }),
            WirePart::ToolCall {
                tool_call_id,
                tool_name,
                args,
            } => Part::ToolCall(agentwire_core::ToolCall {
                tool_call_id,
                tool_name,
                args: ToolArgs(args),
            }),
            WirePart::ToolResult {
                tool_call_id,
                tool_name,
                result,
                is_error,
            } => {
                let error = (is_error == Some(true))
                    .then(|| serde_json::from_value::<ErrorResult>(result.clone()).ok())
                    .flatten();
                match error {
                    Some(error) => Part::ToolError(agentwire_core::ToolError {
                        tool_call_id,
                        tool_name,
                        error_type: error.error_type,
                        message: error.message,
                    }),
                    None => Part::ToolResult(agentwire_core::ToolResult {
                        tool_call_id,
                        tool_name,
                        result,
                        is_error,
                    }),
                }
            }
            WirePart::File {
                data,
                mime_type,
                filename,
            } => Part::File(FilePart {
                media_type: mime_type,
                // Base64 has no `:`; every URL (`https:`, `data:`) has one.
                source: match data.contains(':') {
                    true => FileSource::Url(data),
                    false => FileSource::Data(data),
                },
                filename,
            }),
            WirePart::Data { name, data } => Part::Data(DataPart { name, data }),
            WirePart::StepStart { step_id, step_name } => {
                Part::StepStart(StepStart { step_id, step_name })
            }
            WirePart::Artifact {
                artifact_id,
                title,
                version,
                preview,
            } => Part::Artifact(Artifact {
                artifact_id,
                title,
                version,
                preview,
            }),
            WirePart::PlanUpdate {
                plan_id,
                action,
                details,
            } => Part::PlanUpdate(PlanUpdate {
                plan_id,
                action,
                details,
            }),
            WirePart::ApprovalRequest {
                approval_id,
                tool_call_id,
                reason,
            } => Part::ApprovalRequest(ApprovalRequest {
                approval_id,
                tool_call_id,
                reason,
            }),
            WirePart::ApprovalResponse {
                approval_id,
                approved,
                reason,
            } => Part::ApprovalResponse(ApprovalResponse {
                approval_id,
                approved,
                reason,
            }),
            WirePart::Source {
                source_id,
                url,
                title,
            } => Part::Source(Source {
                source_id,
                url,
                title,
            }),
            WirePart::Unknown => return None,
        })
    }
}

/// An `XMessage` as read, in a stream or a request: `parts`, or the plain-text `content`
/// alone (read as one text part; next to `parts` it is derived from them and ignored).
#[derive(Deserialize)]
struct WireMessage {
    #[serde(default)]
    id: Option<agentwire_core::MessageId>,
    role: agentwire_core::Role,
    #[serde(default)]
    parts: Option<Vec<WirePart<'static>>>,
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    metadata: Map<String, Value>,
}

impl WireMessage {
    /// The canonical parts, metadata and time.
    fn into_parts(self) -> (Vec<Part>, Metadata, Option<Timestamp>) {
        let parts = match (self.parts, self.content) {
            (Some(parts), _) => parts.into_iter().filter_map(WirePart::into_part).collect(),
            (None, Some(content)) if !content.is_empty() => vec![Part::text(content)],
            (None, _) => Vec::new(),
        };
        let (metadata, created_at) = metadata_from_json(self.metadata);
        (parts, metadata, created_at)
    }

    /// The canonical message.
    fn into_message(self) -> agentwire_core::Message {
        let id = self.id.clone();
        let role = self.role;
        let (parts, metadata, created_at) = self.into_parts();
        agentwire_core::Message {
            id,
            role,
            parts,
            metadata,
            created_at,
        }
    }
}

/// The metadata of a message's last packet: `{agentName?, timestamp?, usage?, …free keys}`.
fn metadata_json(metadata: &Metadata, created_at: Option<Timestamp>) -> Map<String, Value> {
    let mut json = Map::new();
    if let Some(agent_name) = &metadata.agent_name {
        json.insert("agentName".into(), Value::from(agent_name.as_str()));
    }
    if let Some(Timestamp(ms)) = created_at {
        json.insert("timestamp".into(), Value::from(ms));
    }
    if let Some(usage) = metadata.usage {
        json.insert(
            "usage".into(),
            serde_json::to_value(WireUsage::from(usage)).unwrap_or_default(),
        );
    }
    for (key, value) in &metadata.extra {
        json.entry(key.clone()).or_insert_with(|| value.clone());
    }
    json
}

/// Reads metadata back: a numeric `timestamp` as the time, known keys into [`Metadata`];
/// metadata whose known keys have another shape is kept whole as free keys.
fn metadata_from_json(mut json: Map<String, Value>) -> (Metadata, Option<Timestamp>) {
    let created_at = match json.get("timestamp").and_then(Value::as_i64) {
        Some(ms) => {
            json.remove("timestamp");
            Some(Timestamp(ms))
        }
        None => None,
    };
    let metadata = match serde_json::from_value(Value::Object(json.clone())) {
        Ok(metadata) => metadata,
        Err(_) => Metadata {
            extra: json,
            ..Metadata::default()
        },
    };
    (metadata, created_at)
}
