//! OpenAI's Responses API as a server speaks it (the Open Responses specification; checked
//! against the official clients, npm `openai` 7.57.0 and PyPI `openai` 3.57.0): the semantic
//! events of `POST /v1/responses` with `"stream": true`, the `response` object a request without
//! a stream (and `GET /v1/responses/{id}`) answers with, and the request body.
//!
//! # Framing
//!
//! SSE, one event per frame: `event: <type>` and `data: {json}`, every event carrying its
//! `sequence_number`, gapless from 0 within a response. No `[DONE]`: the stream ends after the
//! terminal lifecycle event. Heartbeats are the comment `: keep-alive`. A resumed stream
//! ([`ResponsesEncoder::starting_after`]) is the same stream with every event up to that number
//! left out, so its numbers go on where the client stopped.
//!
//! # Mapping
//!
//! One response is one run from its start (or from where it waited for the client) to where it
//! settles; one canonical message becomes a run of output items, in part order.
//!
//! | canonical | Responses |
//! |---|---|
//! | the first event | `response.created` (status `queued` for a background request, else `in_progress`) |
//! | `run_status` queued / in progress | the status on the response; `response.in_progress` once |
//! | text | a `message` item (role `assistant`): `response.content_part.added` of an `output_text`, `response.output_text.delta`*, `response.output_text.done`, `response.content_part.done`; consecutive text and refusal parts share one item, closed (`response.output_item.done`) by the next part of another kind or the message's end |
//! | refusal | a `refusal` content of that item: `response.refusal.delta`*, `response.refusal.done` |
//! | reasoning | a `reasoning` item with one summary part: `response.reasoning_summary_part.added`, `response.reasoning_summary_text.delta`*, `response.reasoning_summary_text.done`, `response.reasoning_summary_part.done` |
//! | tool call of a tool the client runs | a `function_call` item (`id` `fc_<call id>`, `call_id` the call id): `response.function_call_arguments.delta`*, `response.function_call_arguments.done`, done |
//! | tool call of the agent's own tools ([`ResponsesEncoder::with_agent_tools`]) | an `mcp_call` item (`id` `mcp_<call id>`, `server_label` the agent or its MCP server): `response.mcp_call.in_progress`, `response.mcp_call_arguments.delta`*, `response.mcp_call_arguments.done`; its result sets `output` (`response.mcp_call.completed`), its error sets `error` (`response.mcp_call.failed`), then done |
//! | approval request | an `mcp_approval_request` item (`id` the approval id, the call's `name`, `arguments`, `server_label`), added and done |
//! | `run_status` completed / awaiting | `response.completed` (a call for the client, or an approval, is in its output: the client answers with `previous_response_id`) |
//! | `run_status` failed / rejected | `response.failed`, `error {code, message}` |
//! | `run_status` incomplete | `response.incomplete`, `incomplete_details.reason` `max_output_tokens` (for `max_tokens`), `content_filter`, or the code; `error` too for other codes |
//! | `run_status` canceled | `response.incomplete` with status `cancelled` (the API has no event of its own for it) |
//! | `run_status` usage | `usage {input_tokens, input_tokens_details.cached_tokens, output_tokens, output_tokens_details.reasoning_tokens, total_tokens}` |
//! | `error` | `error {code, message, param: null}` |
//! | `heartbeat` | `: keep-alive` |
//!
//! Items still open when the response ends are closed first (an `mcp_call` waiting for its
//! approval keeps status `in_progress`). The terminal event's `response` holds every item as
//! done; [`ResponsesEncoder::response`] is that object as it stands at any point.
//!
//! The stream decoder ([`ResponsesDecoder`]) reads the same events back (also what OpenAI's own
//! API streams: unknown item and event types are skipped) through a `MessageBuilder`: one
//! assistant message per response; `response.completed` with a `function_call` that has no
//! output in the stream is awaiting function output, with an unanswered
//! `mcp_approval_request` awaiting approval. The request decoder ([`decode_request`]) reads the
//! body of `POST /v1/responses`.
//!
//! # Losses
//!
//! - Sub-agents' runs nested in the stream: a response's output items are its model's, and the
//!   API has no item for another agent's work, so a sub-agent's messages and statuses are not
//!   sent; its answer is its call's `mcp_call` output, as for any agent tool. Only what a
//!   waiting sub-agent asks for approval is: an `mcp_approval_request` (id: the approval's,
//!   name and arguments: the sub-agent's call's), answered like the run's own. A sub-agent's
//!   call of a client tool is not shown (it is not the model's `function_call`), so a run whose
//!   sub-agent waits for one cannot be answered in this dialect.
//! - The session's shared state (`state_snapshot`, `state_delta`): the Responses API has no place
//!   for it, so it is not sent; a client reads it with `GET /v1/sessions/{id}/state`.
//! - Parts the API has no item for are not sent: step starts, files, data, sources, artifacts
//!   and plan updates. Messages of other roles (the run's input) are not sent either.
//! - A tool result's JSON is sent as its JSON text in `output` (a string result as it is); the
//!   decoder reads output that parses as JSON back as that JSON. Tool error kinds: every error
//!   reads back as `EXECUTION`.
//! - A result for a call made in an earlier response (after an approval) is a whole `mcp_call`
//!   item; its arguments are known only when the encoder was told the run's calls
//!   ([`ResponsesEncoder::knowing`]), else `{}`.
//! - Awaiting input reads back as completed; rejected as failed; error codes of `error` events
//!   stay, those of a response's `error` too.
//! - The decoder names the message after the response (`<response id>_msg`) and makes the
//!   approval request's call id the call of the most recent `mcp_call` of the same name.
//! - Requests: `tool_choice`, `parallel_tool_calls`, `text.format` (structured output),
//!   `reasoning`, `include`, `store`, `truncation`, `metadata` and `user` are accepted and not
//!   acted on; tools of other types than `function` (built-in tools) and inputs by `file_id`
//!   are refused, naming the field.

mod decoder;
mod encoder;
mod request;
mod wire;

pub use decoder::ResponsesDecoder;
pub use encoder::{ResponseInfo, ResponsesEncoder};
pub use request::{ResponsesRequest, decode_request};
pub use wire::error_body;
