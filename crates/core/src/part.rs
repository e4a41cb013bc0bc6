//! [`Part`]: the typed pieces a [`Message`](crate::Message) is made of.
//!
//! The native JSON spelling is AgentX's: `"type": "tool_call"`, snake_case fields. Viber's
//! camelCase spelling (`"type": "tool-call"`, `toolCallId`) is accepted on input through
//! aliases; producing it is the job of `camel`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::ids::{ApprovalId, ArtifactId, PlanId, SourceId, StepId, ToolCallId};
use crate::json_bounds::{JsonBounds, MAX_DEPTH};

/// One piece of a message. Parts are the unit of streaming: text, reasoning, refusals and tool
/// calls arrive in deltas; every other part arrives whole.
///
/// ```json
/// {"type": "text", "text": "Hello"}
/// {"type": "tool_call", "tool_call_id": "tc_123", "tool_name": "write_file", "args": {"path": "/hello.txt"}}
/// {"type": "tool_error", "tool_call_id": "tc_456", "error_type": "VALIDATION", "message": "…"}
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Part {
    /// Text for the reader.
    Text(TextPart),
    /// The model's reasoning, shown apart from the answer.
    Reasoning(ReasoningPart),
    /// A request to run a tool.
    #[serde(alias = "tool-call")]
    ToolCall(ToolCall),
    /// A tool's output.
    #[serde(alias = "tool-result")]
    ToolResult(ToolResult),
    /// A tool call that failed validation or execution; the model reads it and corrects itself.
    #[serde(alias = "tool-error")]
    ToolError(ToolError),
    /// A file, image or audio clip, by URL or inline data.
    File(FilePart),
    /// Named structured data for the client.
    Data(DataPart),
    /// The model declined to answer.
    Refusal(RefusalPart),
    /// The start of a step of a multi-step operation (one model call and its tool calls).
    #[serde(alias = "step-start")]
    StepStart(StepStart),
    /// A reference to an artifact the agent produced.
    Artifact(Artifact),
    /// A change to the agent's plan.
    #[serde(alias = "plan-update")]
    PlanUpdate(PlanUpdate),
    /// The run asks a person to approve a tool call before it runs.
    #[serde(alias = "approval-request")]
    ApprovalRequest(ApprovalRequest),
    /// A person's answer to an approval request.
    #[serde(alias = "approval-response")]
    ApprovalResponse(ApprovalResponse),
    /// A source the answer draws on (a citation).
    Source(Source),
}

/// `{"type": "text", "text": "…"}`
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TextPart {
    /// The text.
    pub text: String,
}

/// `{"type": "reasoning", "text": "…"}`; Viber spells the field `content`, which is accepted.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReasoningPart {
    /// The reasoning text.
    #[serde(alias = "content")]
    pub text: String,
}

/// `{"type": "refusal", "text": "…"}`
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RefusalPart {
    /// Why the model declined.
    #[serde(alias = "refusal")]
    pub text: String,
}

/// A tool call: `{"type": "tool_call", "tool_call_id", "tool_name", "args"}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The id results and errors refer back to.
    #[serde(alias = "toolCallId")]
    pub tool_call_id: ToolCallId,
    /// The tool to run.
    #[serde(alias = "toolName")]
    pub tool_name: String,
    /// The arguments, as the model wrote them.
    #[serde(default, alias = "input")]
    pub args: ToolArgs,
}

/// A tool's arguments: the JSON value the model wrote.
///
/// Models do not always write valid JSON. When the argument text does not parse, `ToolArgs`
/// holds that text as a JSON string, so nothing the model said is lost and argument validation
/// reports it back to the model. So does text nested deeper than [`MAX_DEPTH`] levels: the
/// arguments are stored and sent inside events and messages, which must read back. Argument text that is empty or only white space (as some
/// OpenAI-compatible servers send for tools without parameters) means `{}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ToolArgs(pub Value);

impl ToolArgs {
    /// The arguments of a call whose argument text was `text`; see the type's docs for text
    /// that is not valid JSON.
    pub fn from_json_text(text: &str) -> Self {
        if text.trim_ascii().is_empty() {
            return Self::default();
        }
        match serde_json::from_str(text) {
            Ok(value) if Self::nests_within_bound(&value) => Self(value),
            _ => Self(Value::String(text.to_owned())),
        }
    }

    /// Whether `value` nests no deeper than arguments may (see the type's docs).
    pub(crate) fn nests_within_bound(value: &Value) -> bool {
        let bounds = JsonBounds {
            max_depth: MAX_DEPTH,
            max_bytes: usize::MAX,
        };
        bounds.check(value).is_ok()
    }

    /// The JSON text to send a provider, or to stream as argument deltas.
    pub fn to_json_text(&self) -> String {
        self.0.to_string()
    }

    /// The arguments as a JSON value.
    pub fn as_value(&self) -> &Value {
        &self.0
    }
}

impl Default for ToolArgs {
    /// No arguments: `{}`.
    fn default() -> Self {
        Self(Value::Object(serde_json::Map::new()))
    }
}

impl From<Value> for ToolArgs {
    fn from(value: Value) -> Self {
        Self(value)
    }
}

/// A tool's output: `{"type": "tool_result", "tool_call_id", "tool_name"?, "result", "is_error"?}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolResult {
    /// The call this answers.
    #[serde(alias = "toolCallId")]
    pub tool_call_id: ToolCallId,
    /// The tool that ran. `None` only in input that left it out (AgentX's examples do).
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "toolName")]
    pub tool_name: Option<String>,
    /// The structured output.
    #[serde(default, alias = "output")]
    pub result: Value,
    /// Whether the output describes a failure the tool itself reported. `None` means not
    /// stated, which reads as `false`; kept apart so input re-serializes as it came.
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "isError")]
    pub is_error: Option<bool>,
}

impl ToolResult {
    /// Whether the result describes a failure.
    pub fn is_error(&self) -> bool {
        self.is_error.unwrap_or(false)
    }
}

/// A failed tool call, sent back to the model so it can correct itself.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolError {
    /// The call that failed.
    #[serde(alias = "toolCallId")]
    pub tool_call_id: ToolCallId,
    /// The tool that was called. `None` only in input that left it out (AgentX's examples do).
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "toolName")]
    pub tool_name: Option<String>,
    /// Whether the arguments were invalid or the execution failed.
    #[serde(alias = "errorType")]
    pub error_type: ToolErrorKind,
    /// What went wrong, written for the model to read.
    pub message: String,
}

/// Why a tool call failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ToolErrorKind {
    /// The arguments did not match the tool's schema; the tool did not run.
    Validation,
    /// The tool ran and failed, panicked or timed out.
    Execution,
}

/// A file: `{"type": "file", "media_type", "url" | "data", "filename"?}`. Images and audio are
/// files too. Viber's `mimeType` and the AI SDK's `mediaType` are accepted.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FilePart {
    /// The IANA media type, e.g. `image/png`.
    #[serde(alias = "mimeType", alias = "mediaType")]
    pub media_type: String,
    /// Where the bytes are.
    #[serde(flatten)]
    pub source: FileSource,
    /// The file's name, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filename: Option<String>,
}

/// Where a file's bytes are: a URL (which may be a `data:` URL) or inline base64 data.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FileSource {
    /// `"url": "https://…"`
    Url(String),
    /// `"data": "<base64>"`
    Data(String),
}

/// Named structured data: `{"type": "data", "name", "data"}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DataPart {
    /// What the data is, e.g. `weather`; clients pick a renderer by it.
    pub name: String,
    /// The payload.
    #[serde(default)]
    pub data: Value,
}

/// `{"type": "step_start", "step_id", "step_name"?}`
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepStart {
    /// The step's id.
    #[serde(alias = "stepId")]
    pub step_id: StepId,
    /// A name to show, e.g. `step 2`.
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "stepName")]
    pub step_name: Option<String>,
}

/// `{"type": "artifact", "artifact_id", "title", "version"?, "preview"?}`
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Artifact {
    /// The artifact's id.
    #[serde(alias = "artifactId")]
    pub artifact_id: ArtifactId,
    /// Its title.
    pub title: String,
    /// Its version, counting from 1, when it is versioned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<u32>,
    /// A short preview of its content.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preview: Option<String>,
}

/// `{"type": "plan_update", "plan_id", "action", "details"?}`
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PlanUpdate {
    /// The plan's id.
    #[serde(alias = "planId")]
    pub plan_id: PlanId,
    /// What happened to the plan.
    pub action: PlanAction,
    /// The plan's content or the change, free-form.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
}

/// What happened to a plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PlanAction {
    /// The plan was made.
    Created,
    /// The plan changed.
    Updated,
    /// The plan was carried out.
    Completed,
    /// The plan could not be carried out.
    Failed,
}

/// `{"type": "approval_request", "approval_id", "tool_call_id", "reason"?}`
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApprovalRequest {
    /// The id the response refers to.
    #[serde(alias = "approvalId")]
    pub approval_id: ApprovalId,
    /// The tool call waiting for approval.
    #[serde(alias = "toolCallId")]
    pub tool_call_id: ToolCallId,
    /// Why approval is needed, for the person asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// `{"type": "approval_response", "approval_id", "approved", "reason"?}`
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApprovalResponse {
    /// The request this answers.
    #[serde(alias = "approvalId")]
    pub approval_id: ApprovalId,
    /// Whether the tool may run.
    pub approved: bool,
    /// The person's reason, passed on to the model when the call is denied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// `{"type": "source", "source_id", "url", "title"?}`
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Source {
    /// The source's id within its message.
    #[serde(alias = "sourceId")]
    pub source_id: SourceId,
    /// Where it is.
    pub url: String,
    /// Its title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
}

impl Part {
    /// The part's type as its native JSON spells it, e.g. `"tool_call"`.
    pub fn type_name(&self) -> &'static str {
        match self {
            Part::Text(_) => "text",
            Part::Reasoning(_) => "reasoning",
            Part::ToolCall(_) => "tool_call",
            Part::ToolResult(_) => "tool_result",
            Part::ToolError(_) => "tool_error",
            Part::File(_) => "file",
            Part::Data(_) => "data",
            Part::Refusal(_) => "refusal",
            Part::StepStart(_) => "step_start",
            Part::Artifact(_) => "artifact",
            Part::PlanUpdate(_) => "plan_update",
            Part::ApprovalRequest(_) => "approval_request",
            Part::ApprovalResponse(_) => "approval_response",
            Part::Source(_) => "source",
        }
    }

    /// A text part.
    pub fn text(text: impl Into<String>) -> Self {
        Part::Text(TextPart { text: text.into() })
    }

    /// A reasoning part.
    pub fn reasoning(text: impl Into<String>) -> Self {
        Part::Reasoning(ReasoningPart { text: text.into() })
    }

    /// A tool call part.
    pub fn tool_call(
        tool_call_id: impl Into<ToolCallId>,
        tool_name: impl Into<String>,
        args: Value,
    ) -> Self {
        Part::ToolCall(ToolCall {
            tool_call_id: tool_call_id.into(),
            tool_name: tool_name.into(),
            args: ToolArgs(args),
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[track_caller]
    fn check(json: Value, expect: Part) {
        let part: Part = serde_json::from_value(json.clone()).expect("parses");
        assert_eq!(part, expect);
        assert_eq!(serde_json::to_value(&part).expect("serializes"), json);
    }

    #[test]
    fn native_spelling_round_trips() {
        check(json!({"type": "text", "text": "hi"}), Part::text("hi"));
        check(
            json!({"type": "file", "media_type": "image/png", "url": "https://x/y.png"}),
            Part::File(FilePart {
                media_type: "image/png".into(),
                source: FileSource::Url("https://x/y.png".into()),
                filename: None,
            }),
        );
        check(
            json!({"type": "file", "media_type": "text/plain", "data": "aGk=", "filename": "a.txt"}),
            Part::File(FilePart {
                media_type: "text/plain".into(),
                source: FileSource::Data("aGk=".into()),
                filename: Some("a.txt".into()),
            }),
        );
        check(
            json!({"type": "plan_update", "plan_id": "p1", "action": "created", "details": {"steps": 2}}),
            Part::PlanUpdate(PlanUpdate {
                plan_id: "p1".into(),
                action: PlanAction::Created,
                details: Some(json!({"steps": 2})),
            }),
        );
    }

    #[test]
    fn camel_spelling_is_accepted() {
        let part: Part = serde_json::from_value(
            json!({"type": "file", "mimeType": "image/png", "data": "AAAA"}),
        )
        .expect("parses");
        assert_eq!(part.type_name(), "file");
        let part: Part = serde_json::from_value(
            json!({"type": "step-start", "stepId": "s1", "stepName": "one"}),
        )
        .expect("parses");
        assert_eq!(
            part,
            Part::StepStart(StepStart {
                step_id: "s1".into(),
                step_name: Some("one".into())
            })
        );
        let part: Part =
            serde_json::from_value(json!({"type": "reasoning", "content": "hmm"})).expect("parses");
        assert_eq!(part, Part::reasoning("hmm"));
    }

    #[test]
    fn a_known_type_with_a_bad_payload_is_an_error() {
        let err = serde_json::from_value::<Part>(json!({"type": "tool_call", "tool_name": "x"}))
            .expect_err("missing id");
        assert!(err.to_string().contains("tool_call_id"), "{err}");
        assert!(
            serde_json::from_value::<Part>(json!({"type": "file", "media_type": "a/b"})).is_err()
        );
    }

    #[test]
    fn tool_args_keep_what_is_not_json() {
        assert_eq!(ToolArgs::from_json_text(" ").0, json!({}));
        assert_eq!(ToolArgs::from_json_text(r#"{"a":1}"#).0, json!({"a": 1}));
        assert_eq!(ToolArgs::from_json_text(r#"{"a":"#).0, json!(r#"{"a":"#));
        let deep = format!("{}{}", "[".repeat(101), "]".repeat(101));
        assert_eq!(ToolArgs::from_json_text(&deep).0, json!(deep));
        let within = format!("{}{}", "[".repeat(100), "]".repeat(100));
        assert!(ToolArgs::from_json_text(&within).0.is_array());
    }
}
