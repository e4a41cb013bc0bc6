//! The AgentScope Runtime Agent API (PyPI `agentscope-runtime` 1.1.6.post2): the SSE
//! stream `POST /process` answers with, and the `AgentRequest` body it takes.
//!
//! # Framing
//!
//! Every event is one frame, `data: ` + one compact JSON object + a blank line; no `event:` or
//! `id:` lines and no `[DONE]`: the stream ends after the terminal `response` object. Objects are
//! told apart by `object` (`response`, `message`, `content`) and carry a gapless
//! `sequence_number` from 0; nulls are written, as `model_dump_json()` does. The decoder skips a
//! `[DONE]` and objects of other kinds, and reads the bare `{"error": "…"}` frame AgentApp sends
//! for a request it refuses as a rejected run ([`REQUEST_REFUSED`]).
//!
//! # Mapping
//!
//! AgentScope splits a turn into several messages, each of one `type`; agentwire keeps a turn as
//! one assistant message of parts. So one canonical message becomes a run of AgentScope
//! messages (the first has its id, the next `<id>_1`, `<id>_2`, …) and every message of a
//! response decodes into one canonical message, whose id is the first one's.
//!
//! | canonical | AgentScope |
//! |---|---|
//! | `run_created` | `response` `created` (`id` = run id, `session_id`), then `sequence_number` 0 |
//! | `run_status` in progress / queued | `response` `in_progress` / `queued`; `in_progress` also before the first message when the source said none (an AI SDK stream), as their Runner always sends it |
//! | `run_status` completed, awaiting | `response` `completed`, `completed_at`, `output` = the completed messages in completion order, `usage` |
//! | `run_status` failed, canceled, rejected, incomplete | a message of type `error` (`code`, `message`), then the `response` of that status with `error {code, message}`; `output` as far as it got, that message last |
//! | text | `text` content of a `message` message: `delta: true` pieces, then `completed` with the whole text |
//! | refusal | `refusal` content, streamed the same way |
//! | reasoning | `text` content of a `reasoning` message |
//! | tool call | a `function_call` message with one `data` content: the first delta `{call_id, name, arguments: ""}`, then `{arguments: "<piece>"}`, completed `{call_id, name, arguments}`; `mcp_call` (data with `server_label`), `plugin_call` or `component_call` for a tool of that kind ([`AgentScopeEncoder::with_tool_kinds`]) |
//! | tool result | a `function_call_output` message (role `tool`), or the `_output` of the call's type: `data {call_id, name, output}`, `output` the result's JSON text; `is_error` when set |
//! | tool error | the same, `output` = the message, plus `error_type` (`VALIDATION`/`EXECUTION`) |
//! | file | `image` (`image_url`; inline data as a `data:` URL), inline `audio` (`data`, `format`), else `file` (`file_url`/`file_data`, `filename`); each with our `media_type` key |
//! | data, source, artifact, plan update | a `data` content whose dict is the part's own JSON (`{"type": "source", …}`) |
//! | approval request / response | `mcp_approval_request` `data {id, call_id, reason}` / `mcp_approval_response` `data {approval_request_id, approve, reason}` |
//! | message metadata | `metadata` (without usage) on each message; the usage in `usage` of the last one |
//! | `error` event | a `message` of type `error` with `code` and `message` |
//! | heartbeat | a message of type `heartbeat` (`MessageType.HEARTBEAT`), status `in_progress`, no content; the decoder skips it; before the response starts or after it ends, an SSE comment |
//!
//! Contents of consecutive parts of one kind share a message (text, files and data in one
//! `message`; reasoning in one `reasoning`); every call, output and approval is a message of its
//! own. A message completes when the next one opens and its contents are complete, so that the
//! last one, which carries the usage, completes with the canonical message.
//!
//! The decoder also reads what AgentScope's own adapters send: `plugin_call`, `mcp_call` and
//! `component_call` (and their `_output`s) as tool calls and results; argument snapshots
//! (`delta: false` while in progress, each replacing the last) and contents that never stream,
//! which become parts when they complete; contents before their message (the `text` framework);
//! interleaved messages; contents that never complete (closed by their message's `completed`
//! copy, or as they stand when the response ends: a failed run leaves them open). Each
//! AgentScope content is one part: the `reasoning` adapter's answer split in two contents (its
//! shared-index bug) stays two text parts. A `completed` response that ends with an unanswered
//! approval request decodes as awaiting approval, one with a call without output as awaiting
//! function output, one whose only unanswered call is an `ask_user` (agentwire's built-in
//! question to the user) as awaiting input: AgentScope has no waiting status, and that is its
//! input-required form. `queued` and `rejected` responses map both ways. `unknown` (a status a
//! server could not tell) is read and skipped: the canonical stream has no status for it,
//! and agentwire's own runs always know theirs (a run's row says its status, and a run of a
//! node that stopped is ended by the lease sweep rather than left unknown), so no run of ours
//! is ever written `unknown`. A request's generation settings (`model`, `temperature`, …, `n`) and `tools`
//! (OpenAI's function format) are read and checked: the run's settings and client tools.
//!
//! # Losses
//!
//! - Sub-agents' runs nested in the stream are not sent: an AgentScope response is one agent's
//!   messages, its `output` exactly them, and its messages name no run or agent a sub-agent's
//!   could be told apart by (their client folds every message of a response into its output).
//!   The sub-agent's answer is its call's `function_call_output`, as for any tool; a run that
//!   waits because a sub-agent does is written, like any wait, from what the run's own messages
//!   leave unanswered (its call of the sub-agent), so it reads back awaiting function output.
//! - The session's shared state (`state_snapshot`, `state_delta`): the Agent API has no place
//!   for it, so it is not sent; a client reads it with `GET /v1/sessions/{id}/state`.
//! - Step starts have no AgentScope form: they are dropped (AgentScope's message boundaries
//!   already show the steps).
//! - Awaiting input is written as completed and read back as awaiting input only from an
//!   unanswered `ask_user` call (awaiting approval and function output are inferred, see
//!   above).
//! - Canonical sequence numbers, `created_at` of messages, `agent` of the run, and the run's
//!   creation time are not carried; responses carry the time given to
//!   [`AgentScopeEncoder::with_created_at`] (0 by default), and `completed_at` is read from the
//!   clock given to [`AgentScopeEncoder::with_clock`] (else `created_at`).
//! - An MCP call's `name` is the tool's name as the model called it (`<server>_<tool>`), not the
//!   server's own name for it; `server_label` names the server. The kind of a call is not read
//!   back: every call type decodes as a tool call.
//! - An `error` message decodes as an `error` event, so a failed run read back has one beside
//!   its failed status.
//! - Role `data` is written as `assistant`. A message that starts with a tool result or error
//!   (whose AgentScope role is `tool`) decodes as an assistant message.
//! - Several canonical messages in one run decode as one.
//! - An image given by a `data:` URL decodes as inline data; data of a part kind of ours whose
//!   `data` dict does not read back as that part becomes a data part named `data`, as does any
//!   dict AgentScope sends.
//! - Tool arguments of a call that arrives whole are sent as their JSON text (so invalid
//!   argument text kept as a string comes back as that string, not as the text).

mod decode;
mod encode;
mod request;
mod wire;

pub use decode::{AgentScopeDecoder, REQUEST_REFUSED};
pub use encode::AgentScopeEncoder;
pub use request::{AgentRequest, decode_request};
