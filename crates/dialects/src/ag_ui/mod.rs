//! The AG-UI 1.0 dialect (npm `@ag-ui/client` 1.0.0, `HttpAgent`): the client posts a
//! `RunAgentInput` and reads the run as server-sent events.
//!
//! # Framing
//!
//! One event per frame, `data: {json}\n\n`, LF only (the client splits frames on `\n\n` alone,
//! so CRLF framing breaks it). Optional fields are left out, never `null` (the client rejects a
//! `null` in any of them). Heartbeats are the comment `: keepalive`.
//!
//! # Mapping
//!
//! | canonical | AG-UI |
//! |---|---|
//! | `run_created` | `RUN_STARTED {threadId, runId, protocolVersion: "1.0"}`: the request's ids, given to [`AgUiEncoder::for_input`] (and `parentRunId`), else the run's session and id |
//! | `run_status` completed | `RUN_FINISHED {outcome: {type: "success"}}` |
//! | `run_status` awaiting `function_output` | `RUN_FINISHED {outcome: {type: "success", pendingToolCallIds}}`: the run's calls without a result |
//! | `run_status` awaiting `input` | `RUN_FINISHED {outcome: {type: "interrupt", interrupts}}`, one `{id: tool_call_id, reason: "input_required", responseSchema: {type: "string"}}` per unanswered `ask_user` call (the question is the call's arguments); the next user message answers it |
//! | `run_status` awaiting `approval` | `RUN_FINISHED {outcome: {type: "interrupt", interrupts}}`, one `{id: approval_id, reason: "tool_call", toolCallId, message: reason, responseSchema}` per unanswered `approval_request` |
//! | `run_status` canceled | `RUN_FINISHED {outcome: {type: "cancelled"}}` |
//! | `run_status` failed, rejected, incomplete | `RUN_ERROR {message, code}` |
//! | `usage` of the final status | `usage: [{inputTokens, outputTokens, totalTokens, …}]` |
//! | `text` | `TEXT_MESSAGE_START {messageId, role}` / `_CONTENT` / `_END` |
//! | `refusal` | the same, with `metadata: {"agentwire": {"refusal": true}}` |
//! | `reasoning` | `REASONING_START`, `REASONING_MESSAGE_START {role: "reasoning"}` / `_CONTENT` / `_END`, `REASONING_END` |
//! | `tool_call` | `TOOL_CALL_START {toolCallId, toolCallName, parentMessageId}` / `_ARGS` (the raw argument text) / `_END` |
//! | `tool_result` | `TOOL_CALL_RESULT {messageId, toolCallId, content}`: `content` is the result's JSON text, or the string itself when it is not JSON text; nothing for a result the request's history already holds (a frontend tool's output: the client has that tool message) |
//! | `tool_error` | `TOOL_CALL_RESULT` with the error message as `content` and `metadata: {"agentwire": {"errorType": "VALIDATION" \| "EXECUTION"}}`, which the client keeps on the tool message |
//! | `step_start` | `STEP_STARTED {stepName, metadata: {"agentwire": {messageId, stepId}}}`; `STEP_FINISHED` before the next step, at the end of the message and before the run ends |
//! | `plan_update` | an activity message per plan, `messageId` `plan:<plan_id>`, `activityType: "agentwire.plan"`, `content` the part's native JSON without `type`: `ACTIVITY_SNAPSHOT {messageId, activityType, content, metadata: {"agentwire": {messageId}}}` the first time, then `ACTIVITY_DELTA {patch}` replacing, adding or removing the top-level keys that changed (an empty patch when none did) |
//! | `artifact` | the same, per artifact: `messageId` `artifact:<artifact_id>`, `activityType: "agentwire.artifact"` |
//! | `file`, `data`, `source`, `approval_request`, `approval_response` | `CUSTOM {name: "agentwire.part", value: {messageId, part}}` (the part's native JSON) |
//! | `error` | `CUSTOM {name: "agentwire.error", value: {code, message}}` (`RUN_ERROR` would end the run) |
//! | `input` (what became of a message sent while the run worked) | `CUSTOM {name: "agentwire.input", value: {client_message_id, outcome, step?, reason?}}`; a steer the run took follows as a user `TEXT_MESSAGE_START {role: "user"}` / `_CONTENT` / `_END` |
//! | `state_snapshot` | `STATE_SNAPSHOT {snapshot}`: the session's shared state is the thread's (the client's `agent.state`) |
//! | `state_delta` | `STATE_DELTA {delta}`: the RFC 6902 operations as they are |
//! | the thread's conversation, when the server gives it (see below) | `MESSAGES_SNAPSHOT {messages}` right after `RUN_STARTED` |
//! | `message_start`, `message_complete`, `part_start` of whole parts | nothing of their own |
//! | a sub-agent's `run_created` (namespace `[…, run]`) | `SUBAGENT_STARTED {subagentRunId: run, name: agent, parentSubagentRunId?, parentToolCallId, parentMessageId?}` (the parent's id when the parent is itself a sub-agent; the AG-UI message that holds the call) |
//! | a sub-agent's events | the same events as the run's own, each with `subagentRunId`; its AG-UI message ids and tool call ids are prefixed `<run>:` (`run_b:msg_1`, `run_b:call_1`), so they never meet another run's in the client's one list |
//! | a sub-agent's `run_status` completed | `SUBAGENT_FINISHED {subagentRunId, result: its answer (its last message's text), outcome: {type: "success"}, metadata: {"agentwire": {usage?}}}` |
//! | a sub-agent's `run_status` failed, canceled, rejected, incomplete | `SUBAGENT_ERROR {subagentRunId, message, code, metadata: {"agentwire": {status, usage?}}}` (the code is the error's, else the status name) |
//! | a sub-agent's `run_status` awaiting | nothing yet; when the run finishes (its own wait), `SUBAGENT_FINISHED {outcome: {type: "suspended", interruptIds?}, metadata: {"agentwire": {awaiting, usage?}}}` for each waiting sub-agent, innermost first (AG-UI refuses `RUN_FINISHED` while a subagent is open) |
//! | a sub-agent's wait, in the run's awaiting status | approvals and `ask_user` questions are interrupts carrying `subagentRunId` (and the prefixed `toolCallId`); a sub-agent's frontend tool call is in `pendingToolCallIds` under its prefixed id, the call that started a sub-agent never |
//!
//! AG-UI messages hold text and tool calls (assistant), reasoning, or one tool result, so one
//! canonical message becomes several AG-UI messages: the first takes the message's id, the next
//! `<id>.1`, `<id>.2`, … Each text part is its own AG-UI message; tool calls attach to the message
//! of the text or call just before them, or else to a new one (`parentMessageId`); every tool
//! result is a tool message. The decoder reverses this: one canonical assistant message per run,
//! with the id of the run's first AG-UI message, complete when the run ends; a run left
//! unanswered tool calls awaits `function_output`, as the client concludes too.
//!
//! The request ([`decode_request`]): the history becomes canonical messages (one assistant
//! message per turn, tool messages as `tool_result`/`tool_error` parts of it), `tools` are the
//! client-executed tools, each `resume` entry an `approval_response` in a last user message, and
//! generation settings among `forwardedProps`' keys (`model`, `temperature`, `topP`, …) the run's.
//! `state` is kept as the client sent it ([`RunAgentInput::state`]); the server makes a
//! non-empty one (not `null`, not `{}`) the session's shared state before the run, so a client
//! that set its `agent.state` finds it in the run (`HttpAgent` sends `{}` when it has none,
//! which leaves the session's as it is).
//!
//! # Sub-agents
//!
//! A sub-agent's run is an AG-UI subagent. The client keeps its messages in `agent.messages`
//! tagged with `subagentRunId` and sends them back in the next request's history;
//! [`decode_request`] leaves them out (they are the sub-agent's run's, which the server keeps,
//! not the conversation's), but keeps the client's answer to a sub-agent's frontend tool (a tool
//! message for its prefixed call id) as a `tool_result` for the call's own id. An interrupt's id
//! is the approval's own, whichever run asked, so its `resume` entry decodes to the
//! `approval_response` the runtime hands down to that run. The stream that continues after an
//! answer is a new AG-UI run: a sub-agent that started before it is started again (AG-UI ids are
//! per run) when its first event comes, its parents first, named by its run id (its agent's name
//! was in the earlier stream).
//!
//! # Messages snapshot
//!
//! The client treats a `MESSAGES_SNAPSHOT` as the whole conversation and drops what it leaves out,
//! so it is sent only where the server knows the thread's conversation and the client's list has
//! drifted from it: [`AgUiEncoder::with_snapshot`] opens the stream with the conversation the run
//! starts from (the server gives it when a message rolled the thread's run back, which the
//! client still shows). Its messages are cut and named as the stream cuts them, so the client
//! replaces each message it holds with the same message and drops only what the thread dropped.
//! The client keeps its own order for the messages it holds and appends the rest, so a snapshot
//! cannot put earlier turns before a client's new question: a client new to a thread reads the
//! thread's messages from the server instead. Not before an interrupting `RUN_FINISHED` (the
//! spec suggests it there): the client's reducer already holds every message the stream made.
//!
//! # Losses
//!
//! What AG-UI cannot carry, and what the decoder gives instead:
//! - Message `metadata` and `created_at`: dropped. The role is the first text's (`user`,
//!   `system`, else `assistant`); `tool` and `data` messages come back as `assistant`.
//! - Several messages in one run come back as one, and a message with no parts as none.
//! - A `step_start` whose `step_name` equals its `step_id` comes back without the name; a
//!   `tool_result`/`tool_error` without `tool_name` comes back with its call's name when the call
//!   is in the run. `approval_request` parts that only an interrupt carries (another server's)
//!   come last in the message.
//! - Awaiting `input` without an `ask_user` call to answer is sent as success and comes back
//!   `completed`; so does awaiting approval with no request to approve. `queued` has no AG-UI
//!   event: the run is started and says nothing until it works. Rejected and incomplete runs come back `failed` (the code is
//!   the error's, or the status name). A completed run that left a tool call unanswered comes
//!   back awaiting `function_output`, as the client sees it.
//! - Heartbeats are comments and are not decoded; usage keeps only the canonical counts.
//! - A sub-agent's `session_id` is the thread's; one started before the stream has its run id as
//!   its agent and no call; a sub-agent's `result` is not read back (its messages are).
//!   Attribution without `SUBAGENT_STARTED` (another server's) starts the sub-agent at its first
//!   event, under the run; one still open when the run ends ends waiting for what it left
//!   unanswered, else incomplete.
//! - From other servers: `MESSAGES_SNAPSHOT`, `RAW`, `REASONING_ENCRYPTED_VALUE`, other `CUSTOM`
//!   events and interrupts without a tool call are skipped; an activity of another
//!   `activityType` becomes a `data` part named after it, each time it changes; an
//!   `ACTIVITY_DELTA` operation below the top level of its content is skipped.
//! - In requests: `encryptedValue`, message `name`s and `activity` messages are dropped; a
//!   `file` content source (a provider's file id) becomes a URL; reasoning in the history is kept.
//!
//! The client keeps none of the `CUSTOM` parts in its messages (subscribers see them in
//! `onCustomEvent`), nor steps. It keeps plans and artifacts as `activity` messages, updated in
//! place, which it never sends back.

mod decoder;
mod encoder;
mod request;
mod run;
mod snapshot;
mod wire;

pub use decoder::AgUiDecoder;
pub use encoder::AgUiEncoder;
pub use request::{Context, ResumeEntry, ResumeStatus, RunAgentInput, Tool, decode_request};
