//! A2A 1.0 (the Agent2Agent protocol), JSON-RPC binding: the SSE stream of a
//! `SendStreamingMessage` response, the `SendMessage` / `SendStreamingMessage` request, the
//! `GetTask` / `CancelTask` / `SubscribeToTask` request, the `ListTasks` request, and the agent
//! card. A client of another A2A agent uses the same codec the other way round:
//! [`decode_card`] reads the agent's card, [`encode_request`] and [`encode_task_request`] write
//! its requests, and [`A2aDecoder`] reads its stream.
//!
//! # Framing
//!
//! Every SSE frame is `data: <one JSON-RPC 2.0 response>`, whose `result` is a `StreamResponse`
//! with exactly one of `task`, `message`, `statusUpdate`, `artifactUpdate`. JSON is ProtoJSON:
//! camelCase names, enums by name (`TASK_STATE_WORKING`, `ROLE_AGENT`).
//!
//! ```text
//! data: {"jsonrpc":"2.0","id":1,"result":{"task":{"id":"run_1","contextId":"ses_1","status":{"state":"TASK_STATE_SUBMITTED"}}}}
//! data: {"jsonrpc":"2.0","id":1,"result":{"artifactUpdate":{"taskId":"run_1","contextId":"ses_1","artifact":{"artifactId":"msg_1","parts":[{"text":"Hel"}]},"append":false,"lastChunk":false}}}
//! ```
//!
//! A JSON-RPC error response (also as an `event: error` frame) ends the stream.
//!
//! # Mapping
//!
//! | canonical | A2A |
//! |---|---|
//! | `run_created` | the first item: `task` {`id` = run id, `contextId` = session id, `status` SUBMITTED, `metadata.agentwire.agent`} (ids from [`A2aEncoder::new`] win); a stream that begins with another event (converted from a dialect without runs) gets this task first, made up, unless the encoder is [`A2aEncoder::continuing`] a task its client has |
//! | `run_status` | `statusUpdate`: created/queued → SUBMITTED, in_progress → WORKING, awaiting (approval, function_output, input) → INPUT_REQUIRED, completed → COMPLETED, failed and incomplete → FAILED, canceled → CANCELED, rejected → REJECTED; `metadata.agentwire` = the native `run_status` (`status`, `awaiting`, `error`, `usage`); an error's text is also the status `message` (`messageId` `<task>-status-<seq>`) |
//! | `error` | `statusUpdate` in the current state, the error's text as status `message`, `metadata.agentwire.error` |
//! | `input` (what became of a message sent while the task worked) | `statusUpdate` in the current state, `metadata.agentwire.input` = `{client_message_id, outcome, step?, reason?}`; the decoder reads it back |
//! | a steer the task took (a user message after its `input` delivered) | `statusUpdate` in the current state whose `message` is the user's (`role: ROLE_USER`, its text and file parts), never an artifact, which is the agent's output |
//! | a message | ONE artifact, `artifactId` = message id: its parts, in order, in `artifactUpdate`s (one A2A part each); the first has `append: false`, the rest `append: true`, the last `lastChunk: true` |
//! | `text` | TextPart `{"text"}`; streamed: one TextPart per delta |
//! | `reasoning`, `refusal` | DataPart `{"data": {"type": "reasoning", "text"}}`; streamed: one per delta |
//! | `file` | `{"url"}` or `{"raw"}` (base64), `mediaType`, `filename` |
//! | `tool_call`, `tool_result`, `tool_error`, `data`, `step_start`, `artifact`, `plan_update`, `approval_request`, `approval_response`, `source` | DataPart holding the part's native JSON: `{"data": {"type": "tool_call", "tool_call_id", "tool_name", "args"}}`; a tool call is sent whole when complete |
//! | `heartbeat` | an SSE comment |
//! | a sub-agent's message (namespace `[…, run]`) | an artifact of the task like the run's own, `artifactId` `<run>:<message id>`, whose first and last chunks say whose it is: `metadata.agentwire.namespace` (the path of run ids) |
//! | a sub-agent's other events (`run_created`, `run_status`, `error`, …) | `statusUpdate` in the task's current state (a sub-agent never moves it), `metadata.agentwire` = the native event without `seq` (`{"namespace", "event": "run_created", "run_id", "agent", "parent_run_id", "parent_tool_call_id", …}`) |
//!
//! **Sub-agents.** A sub-agent's run is part of the task: its messages are artifacts beside the
//! run's, its lifecycle status updates that keep the task's state. Not child tasks: the a2a-sdk
//! client keeps one task per stream (its `TaskManager` refuses an item of another task id), and
//! an A2A client that follows the task should see one task that works until the run itself
//! waits or ends. What a waiting sub-agent asks is in its artifact (an `approval_request`
//! DataPart with its own ids); the client answers it on the task like the run's own requests,
//! with the approval's id, and the runtime hands the answer down. The status updates of
//! sub-agents' events replace `metadata.agentwire` in the a2a-sdk's task for a while (its fold
//! merges status metadata into the task's); the run's own next status puts its own back.
//!
//! **Where the answer is.** The assistant's answer is the artifact, not a status message: the
//! a2a-sdk client (its `TaskManager` applies `artifactUpdate`s) rebuilds the task with one
//! artifact per message, holding every part in order; streamed text arrives as consecutive
//! TextParts that `get_artifact_text(artifact, delimiter="")` joins. Status messages carry only
//! why a run failed, and are kept out of the conversation by the decoder.
//!
//! **Part boundaries.** A text (or reasoning, or refusal) chunk continues the part before it
//! when that part is of the same kind. An A2A part that starts a new canonical part right after
//! one of the same kind says so: `"metadata": {"agentwire": {"new_part": true}}`.
//!
//! **Message facts.** `artifact.metadata.agentwire` carries `role` and `created_at` on the
//! first chunk when they are not assistant / unset, and the final message `metadata` (usage…)
//! on the last.
//!
//! **Waiting.** `INPUT_REQUIRED` is used both for approvals and for tools the client executes;
//! `auth-required` is not used. The client answers with a message on the same `taskId` whose
//! DataPart holds a canonical `approval_response` (`{"type": "approval_response",
//! "approval_id", "approved", "reason"?}`) or `tool_result` (`{"type": "tool_result",
//! "tool_call_id", "tool_name"?, "result", "is_error"?}`) or `tool_error`; the camelCase
//! spelling (`"type": "tool-result", "toolCallId"`) is accepted too.
//!
//! # The encoder holds one chunk back
//!
//! A2A artifacts must have a part in every update, so the end of a message cannot be an update
//! of its own: the encoder holds a message's latest chunk until the next event says whether it
//! was the last. A chunk reaches the client one event late; nothing is re-serialized. Parts are
//! written in canonical order: a part that completes while an earlier tool call still streams
//! (parallel calls end in any order) waits for it.
//!
//! # Decoding other agents' streams
//!
//! Without agentwire's metadata: a status maps back as in the table (SUBMITTED →
//! created, AUTH_REQUIRED → awaiting input, INPUT_REQUIRED → awaiting what the last message
//! asked for: an approval, a tool call's output, else input); the status message of FAILED,
//! CANCELED or REJECTED becomes the run's error (code `failed`, `canceled`, `rejected`), any
//! other status message a whole assistant (or user) message; a message-only response is one
//! message. A DataPart that is not a canonical part is `data` named `data`; a file without a
//! `mediaType` is `application/octet-stream`. A JSON-RPC error fails the run with a code named
//! after it (`task_not_found`, `invalid_params`, … `jsonrpc_error_<n>` otherwise). Items after
//! the run ended, and `task` snapshots after the first, are dropped.
//!
//! # Losses
//!
//! - The session's shared state (`state_snapshot`, `state_delta`): A2A has no shared state
//!   beside a task, so it is not sent; an A2A client reads it with `GET /v1/sessions/{id}/state`.
//! - Tool-call arguments do not stream: the call is sent whole when complete (decoded as a
//!   `part_complete` alone; the message is the same).
//! - `incomplete` travels as FAILED; A2A clients see a failure (the decoder restores it from the
//!   metadata).
//! - `heartbeat`s are SSE comments: the decoder sees none.
//! - The start metadata of `message_start` is not sent (the final metadata is).
//! - A message without parts is not sent (an artifact needs a part).
//! - A `run_status` or `error` in the middle of a message sends the held chunk first, so that
//!   message's end is not marked `lastChunk` and its final metadata is not sent.
//! - The decoder's sequence numbers are its own, counted from 1.
//! - A sub-agent's message is read back under its namespace from its artifact; the chunks
//!   between the first and the last are found by the artifact id. The run's own status updates
//!   do not end a sub-agent's message (only its own, or the run's end, do).
//! - In the a2a-sdk client (not in this codec): data numbers become doubles
//!   (`google.protobuf.Value`), so integers beyond 2^53 lose precision; appended text stays
//!   separate parts; an appended chunk's `metadata` replaces the artifact's top-level keys, so
//!   when the last chunk carries `agentwire` (the final metadata) the first chunk's
//!   `agentwire.role` / `created_at` are gone from the task it keeps (the server's own fold, in
//!   `GetTask`, merges them).

mod card;
mod decode;
mod encode;
mod push;
mod request;
mod wire;

pub use card::{
    AgentDescription, AgentExtension, AgentInterface, AgentSkill, COMMUNICATION_SCHEMA_EXTENSION,
    RemoteCard, agent_card, decode_card,
};
pub use decode::A2aDecoder;
pub use encode::A2aEncoder;
pub use push::{
    PushConfig, PushConfigRef, decode_push_config, decode_push_config_ref, encode_push_config,
    push_notification,
};
pub use request::{
    A2aListRequest, A2aMethod, A2aRequest, A2aTaskRequest, decode_list_request, decode_request,
    decode_task_request, encode_request, encode_task_request,
};
