//! The AI SDK UI message stream, v1 (npm `ai` 5 to 7; checked against `ai` 7.0.173): what
//! `useChat` and `readUIMessageStream` read, and the body `useChat`'s `DefaultChatTransport`
//! posts.
//!
//! # Framing
//!
//! SSE with one chunk per frame, `data: {"type": "text-delta", …}`, and `data: [DONE]` at the
//! end. The client ignores `event:` and `id:`, so the encoder writes neither; heartbeats are the
//! comment `: keep-alive`. The response headers are [`RESPONSE_HEADERS`]. One stream carries one
//! assistant `UIMessage`; a continuation (approval answers, client tool outputs) appends to the
//! message the client already has: see [`AiSdkEncoder::continuing`].
//!
//! # Mapping
//!
//! | canonical | chunks |
//! |---|---|
//! | `message_start` | `start {messageId, messageMetadata?}` |
//! | text / reasoning part at index *i* | `text-start`/`-delta`/`-end` with `id: "t<i>"`; `reasoning-*` with `id: "r<i>"` |
//! | refusal | a text part whose `text-start` carries `providerMetadata.agentwire.refusal: true` |
//! | tool call | `tool-input-start`, `tool-input-delta`* (coalesced, below), `tool-input-available {input}` |
//! | tool result | `tool-output-available {output}` |
//! | tool error, `EXECUTION` | `tool-output-error {errorText}` |
//! | tool error, `VALIDATION` | `tool-input-error {toolName, input, errorText}` when the call is known to the encoder, else `tool-output-error` |
//! | approval request | `tool-approval-request {approvalId, toolCallId, reason?}` |
//! | approval response | `tool-approval-response {approvalId, approved, reason?}`, then `tool-output-denied` when denied and the call is known |
//! | step start | `finish-step` (if a step is open), `start-step` |
//! | file | `file {url, mediaType}` (inline data as a `data:` URL; the filename in `providerMetadata.agentwire.filename`) |
//! | source | `source-url {sourceId, url, title?}` |
//! | data | `data-<name> {data}` |
//! | artifact, plan update | `data-artifact`, `data-plan_update` with the part's native JSON (without `type`) as `data` and the artifact's or plan's id as `id`: the client replaces the part of that type and id in place, so a message holds each artifact and plan once, as it stands |
//! | message metadata, `created_at` | `start.messageMetadata`, then `message-metadata` if it changed by `message_complete`: `{agentName?, usage?, createdAt?, …}`, usage as `{inputTokens, outputTokens, totalTokens, reasoningTokens?, cachedInputTokens?}` |
//! | `run_status` usage | `message-metadata {usage}` |
//! | `run_status` completed / awaiting input | `finish {finishReason: "stop"}` |
//! | `run_status` awaiting approval or function output | `finish {finishReason: "tool-calls"}` |
//! | `run_status` incomplete | `finish {finishReason: "other"}` |
//! | `run_status` failed / rejected | `error {errorText}`, `finish {finishReason: "error"}` |
//! | `run_status` canceled | `abort {reason?}` (the SDK's own server ends an aborted stream so) |
//! | `error` | `error {errorText}` |
//! | `heartbeat` | `: keep-alive` |
//! | a sub-agent's events (namespace `[run]`, the child of a call in the message) | its progress: `tool-output-available {toolCallId: the call, output, preliminary: true}`, `output` the child's `UIMessage` so far (below), when its status changes and whenever what changed since reaches an eighth of what was sent (at least [`MIN_TOOL_INPUT_DELTA`] bytes), and before the run's message ends; its answer is the call's own (final) output as for any call |
//! | a nested run's `run_status` awaiting | what it waits for as tool parts of the message, in a step of their own at its end (`finish-step`, `start-step`): `tool-input-available {toolCallId: "<run>:<call>", toolName, input, providerMetadata: {"agentwire": {"runId"}}}` per call it waits on, with `tool-approval-request {approvalId: "<run>:<approval>", toolCallId, reason?, providerMetadata}` when it waits for an approval |
//! | a nested run's result, error or denial of a call shown so | `tool-output-available`, `tool-output-error` or `tool-output-denied` for `<run>:<call>`, with the same `providerMetadata` |
//! | `state_snapshot`, `state_delta` | `data-agentwire-state {id: "state", data: <the state>}`, sent whole at the next event that is not a delta (and at the start of each message of a run that has a state): the client replaces the message's part with that id in place, so `message.parts` holds the current state once. Each delta also goes as the transient `data-agentwire-state-delta {data: {patch}}`, which only `onData` sees. A call streaming into the state thus costs its patches and the state once, not the state per delta |
//!
//! # Sub-agents
//!
//! A sub-agent's run is shown the way the AI SDK's own sub-agent tools show theirs (`ai`'s
//! "Subagents" guide): as the preliminary output of the parent's tool part for the call, a
//! `UIMessage` that grows, `{id: <run id>, role: "assistant", metadata: {runId, agentName?,
//! status}, parts}`, every message of the child's in it (text and reasoning still streaming are
//! `streaming`, a call whose arguments stream `input-streaming`); in the tool part of each call
//! of the child's that started a sub-agent of its own, that grandchild's progress is the
//! preliminary output, and so on down. The client keeps the last one; the call's final output is
//! the child's answer, as its parent's model read it.
//!
//! What a waiting sub-agent asks of the client must be answerable where the client answers the
//! run's own requests: in the tool parts of the message. So each of its waiting calls becomes a
//! tool part of the message (ids prefixed with its run's, so they never meet the run's own), in
//! a last step of their own, so that `lastAssistantMessageIsCompleteWithApprovalResponses` (and
//! `…WithToolCalls`) see exactly them and `useChat` sends the answers by itself. The request
//! decoder turns the answered parts back into the sub-agent's own ids (an `approval_response`
//! for `apr_1`, a `tool_result` for its call) and lists them in
//! [`ChatRequest::subagent_calls`]; the encoder of the stream that continues learns them
//! ([`AiSdkEncoder::knowing_subagent_calls`]) and sends their outcomes to those parts.
//!
//! Decided: the progress is sent whole each time (the client replaces a preliminary output, it
//! cannot append to one) but geometrically less often as it grows, so a child's whole stream
//! costs the client O(its size) bytes; the final output stays the answer, not the child's
//! `UIMessage`, so that the message read back as a request is the conversation the parent's
//! model saw. A stream that continues after an answer does not show the progress of children
//! that started before it (their earlier parts are not in it, and a progress replaces the
//! client's whole view); their calls' answers still arrive as outputs.
//!
//! The stream decoder reads the same chunks back ([`AiSdkDecoder`]); a message ends at `finish`,
//! `abort`, a `start` with another id, `[DONE]` or the end of the stream, and `finish` becomes
//! the run's status: `stop` → completed, `tool-calls` → awaiting approval (when an approval is
//! unanswered) or function output, `error` → failed (with the last `error` chunk's text),
//! `length`, `content-filter`, `other` → incomplete, `interrupted` → canceled; `abort` →
//! canceled. The request decoder ([`decode_request`]) reads `UIMessage`s, and the body's extras
//! (useChat's `body` option) as generation settings (`maxOutputTokens`, `topP`, …) and `tools`
//! the client runs; [`to_ui_message`] writes the `UIMessage` the client builds from a message's
//! stream.
//!
//! # Tool-input deltas are coalesced
//!
//! The client re-parses a call's whole partial input at every `tool-input-delta`, so n tiny
//! deltas cost it O(n²). The encoder buffers argument text per call and writes it as one delta
//! when the buffer holds at least [`MIN_TOOL_INPUT_DELTA`] bytes and at least an eighth of what
//! was already sent, and always before `tool-input-available`. Delta sizes then grow
//! geometrically, so the client parses O(total) bytes per call, the argument text is unchanged,
//! and a call's input shows in the UI at most an eighth behind what the model wrote.
//!
//! # Losses
//!
//! What the format cannot carry, and what the decoder puts in its place:
//! - `run_created` and the run id: nothing is sent. In-progress statuses: nothing is sent.
//! - Roles: every streamed message is the assistant's; the decoder says `assistant`. A message
//!   that arrives whole (`message_complete` without `message_start`, an echo of input) is not sent.
//! - A second message in one stream gets its own `start`; the decoder keeps them apart, but the
//!   client renames its one message to the new id and keeps appending.
//! - A stream that reports an `error` and ends without `finish` decodes as a failed run.
//! - Step ids and names: `start-step` has no fields; the decoder numbers steps `step_1`,
//!   `step_2`, … within a message.
//! - A tool result's `tool_name` and `is_error`: the decoder takes the name from the call earlier
//!   in the stream (`None` if it is not there) and leaves `is_error` unset.
//! - A validation error for a call the encoder has not seen becomes `tool-output-error`: the
//!   decoder reads it as an `EXECUTION` error. Error codes (`run_status` and `error` events):
//!   only the message is sent; the decoder's code is `error`.
//! - A tool error for a call whose approval was just denied (the runtime's words to the model)
//!   is not sent: for the client the denial ends the call (`tool-output-denied`), as the AI SDK's
//!   own server does it; an error after it would turn the part into `output-error`.
//! - Incomplete runs' reasons; awaiting input reads back as completed (the question is its
//!   `ask_user` tool call, and the next user message answers it); rejected as failed (its
//!   reason is the `error` chunk's text). `queued` has no chunk: the stream opens and is
//!   quiet until the run works.
//! - A file URL that is a `data:<media type>;base64,` URL reads back as inline data.
//! - A data part named `artifact` or `plan_update` whose payload is such a part reads back as one.
//!   The client keeps one part per artifact or plan (the latest); the decoder reads every chunk
//!   of the stream, so it reads each update, and a `UIMessage` (the client's, or one this crate
//!   writes) holds the latest only.
//! - Metadata is deep-merged by the client: a key removed between `message_start` and
//!   `message_complete` stays. `createdAt` is read from `start` only.
//! - Deltas of two text parts interleaved by id (never sent by the encoder) split into parts.
//!   A `tool-input-available` whose input disagrees with the streamed argument text keeps the
//!   text (the canonical stream says a completion agrees with its deltas).
//! - Sub-agents: the decoder reads the run's own message only; a sub-agent's progress
//!   (preliminary outputs) and its requests and their outcomes (the chunks marked with
//!   `providerMetadata.agentwire.runId`, and the `start-step` right before the first of them)
//!   are skipped, except that a run stopping for tool calls with a sub-agent's approval
//!   unanswered reads back awaiting approval.
//! - The shared state: the decoder reads `data-agentwire-state` as a `state_snapshot` and
//!   `data-agentwire-state-delta` as a `state_delta`; the state is sent whole only at settle
//!   points, so the snapshots it reads back are fewer than the deltas, and agree with them.
//! - Chunks without a canonical part (`source-document`, `reasoning-file`, `custom`,
//!   `steering-message`, `reset-step`, other transient `data-*`, preliminary tool outputs) are skipped;
//!   a `tool-output-denied` for a call whose approval request is not in the stream becomes an
//!   `EXECUTION` tool error saying the call was denied.
//!
//! In requests, a tool part holds the call and its outcome together, so the decoded call is
//! followed at once by its approval request, approval response and result or error; an
//! `output-error` is always an `EXECUTION` error; a preliminary output is no result; a
//! sub-agent's part gives only the client's answer to it, and the step it opened is dropped.

mod decoder;
mod encoder;
mod request;
mod ui_message;

pub use decoder::AiSdkDecoder;
pub use encoder::{
    AiSdkEncoder, INPUT_DATA, MIN_TOOL_INPUT_DELTA, RESPONSE_HEADERS, STATE_DATA, STATE_DELTA_DATA,
    STATE_PART_ID,
};
pub use request::{ChatRequest, SubagentCall, Trigger, decode_request};
pub use ui_message::to_ui_message;

use agentwire_core::message::Metadata;
use agentwire_core::part::{Artifact, DataPart, FileSource, PlanUpdate};
use agentwire_core::{Part, Timestamp, Usage};
use serde_json::{Map, Value};

/// The `providerMetadata` key under which agentwire keeps what a chunk has no field for.
const PROVIDER_KEY: &str = "agentwire";

/// The data part names that carry the parts the AI SDK has no chunk for.
const ARTIFACT: &str = "artifact";
const PLAN_UPDATE: &str = "plan_update";

/// The message metadata as the client sees it: `{agentName?, usage?, createdAt?, …extra}`.
fn metadata_json(metadata: &Metadata, created_at: Option<Timestamp>) -> Map<String, Value> {
    let mut json = Map::new();
    if let Some(agent_name) = &metadata.agent_name {
        json.insert("agentName".into(), Value::from(agent_name.as_str()));
    }
    if let Some(usage) = &metadata.usage {
        json.insert("usage".into(), usage_json(usage));
    }
    if let Some(Timestamp(ms)) = created_at {
        json.insert("createdAt".into(), Value::from(ms));
    }
    for (key, value) in &metadata.extra {
        json.insert(key.clone(), value.clone());
    }
    json
}

/// Usage as the AI SDK spells it (`LanguageModelUsage`).
fn usage_json(usage: &Usage) -> Value {
    let mut json = Map::new();
    json.insert("inputTokens".into(), usage.input_tokens.into());
    json.insert("outputTokens".into(), usage.output_tokens.into());
    json.insert("totalTokens".into(), usage.total_tokens.into());
    if let Some(tokens) = usage.reasoning_tokens {
        json.insert("reasoningTokens".into(), tokens.into());
    }
    if let Some(tokens) = usage.cached_input_tokens {
        json.insert("cachedInputTokens".into(), tokens.into());
    }
    Value::Object(json)
}

/// Reads client metadata back: known keys into [`Metadata`], a numeric `createdAt` as the time;
/// metadata whose known keys have another shape is kept whole in `extra`.
fn metadata_from_json(mut json: Map<String, Value>) -> (Metadata, Option<Timestamp>) {
    let created_at = match json.get("createdAt").and_then(Value::as_i64) {
        Some(ms) => {
            json.remove("createdAt");
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

/// Deep-merges `patch` into `target` as the client does (`mergeObjects`): objects merge key by
/// key, anything else replaces.
fn merge_metadata(target: &mut Map<String, Value>, patch: Map<String, Value>) {
    for (key, value) in patch {
        match (target.get_mut(&key), value) {
            (Some(Value::Object(target)), Value::Object(patch)) => merge_metadata(target, patch),
            (_, value) => {
                target.insert(key, value);
            }
        }
    }
}

/// The URL of a file: inline data becomes a `data:` URL.
fn file_url(media_type: &str, source: &FileSource) -> String {
    match source {
        FileSource::Url(url) => url.clone(),
        FileSource::Data(data) => format!("data:{media_type};base64,{data}"),
    }
}

/// Where a file's bytes are: a base64 `data:` URL of the file's own media type is inline data.
fn file_source(media_type: &str, url: &str) -> FileSource {
    let inline = url
        .strip_prefix("data:")
        .and_then(|rest| rest.strip_prefix(media_type))
        .and_then(|rest| rest.strip_prefix(";base64,"));
    match inline {
        Some(data) => FileSource::Data(data.to_owned()),
        None => FileSource::Url(url.to_owned()),
    }
}

/// What agentwire put in a part's `providerMetadata`, if anything.
fn provider_fact<'v>(provider_metadata: Option<&'v Value>, key: &str) -> Option<&'v Value> {
    provider_metadata?.get(PROVIDER_KEY)?.get(key)
}

/// `providerMetadata: {"agentwire": {key: value}}`.
fn provider_metadata(key: &str, value: Value) -> Value {
    let mut fact = Map::new();
    fact.insert(key.into(), value);
    let mut metadata = Map::new();
    metadata.insert(PROVIDER_KEY.into(), Value::Object(fact));
    Value::Object(metadata)
}

/// The data part that carries an artifact or a plan update: its name, its id (the artifact's
/// or the plan's, so that the client keeps one part per artifact or plan, updated in place) and
/// its native JSON without `type`.
fn part_as_data(part: &Part) -> Option<(&'static str, &str, Value)> {
    let (name, id) = match part {
        Part::Artifact(artifact) => (ARTIFACT, artifact.artifact_id.as_str()),
        Part::PlanUpdate(plan) => (PLAN_UPDATE, plan.plan_id.as_str()),
        _ => return None,
    };
    let mut json = serde_json::to_value(part).ok()?;
    if let Some(object) = json.as_object_mut() {
        object.remove("type");
    }
    Some((name, id, json))
}

/// The part a `data-<name>` chunk or part stands for.
fn data_part(name: &str, data: Value) -> Part {
    let special = match name {
        ARTIFACT => serde_json::from_value::<Artifact>(data.clone())
            .ok()
            .map(Part::Artifact),
        PLAN_UPDATE => serde_json::from_value::<PlanUpdate>(data.clone())
            .ok()
            .map(Part::PlanUpdate),
        _ => None,
    };
    special.unwrap_or_else(|| {
        Part::Data(DataPart {
            name: name.to_owned(),
            data,
        })
    })
}

/// The id the decoders give the `n`th step of a message (counting from 1).
fn step_id(n: u32) -> String {
    format!("step_{n}")
}

/// Deserializes a key that must be present but may be `null` (`input`, `output`, `data`):
/// `Some(Value::Null)` for `null`, and `None` (by `#[serde(default)]`) only when absent.
fn present<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Option<Value>, D::Error> {
    serde::Deserialize::deserialize(deserializer).map(Some)
}
