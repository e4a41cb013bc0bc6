//! AG-UI's `POST /ag-ui`: a `RunAgentInput` (the thread's whole history, frontend tools),
//! answered with AG-UI events for the run the request names. The thread is the session, so only
//! the messages after the last assistant message are new; frontend tools are the run's client
//! tools, and generation settings in `forwardedProps` the run's settings.
//!
//! A request that answers the thread's waiting run (a `tool` message with a frontend tool's
//! output, or `resume` entries answering its approval interrupts) continues that run rather than
//! starting one, streamed as the new AG-UI run the request names: AG-UI has one run per request.
//!
//! The agent's communication schema is not published here. AG-UI's capability discovery
//! (`AgentCapabilities`, read through `AbstractAgent.getCapabilities()`) is declared by the
//! agent object in the client's process; the protocol defines no request or event that carries
//! it from a server, and `HttpAgent` asks the server nothing but `RunAgentInput`. The schema is
//! in the A2A agent card (`capabilities.extensions`) and `GET /v1/agents/{name}` instead; a
//! message it refuses is a 409 `input_refused` here as everywhere.
//!
//! A `RunAgentInput` with a new user message for a thread whose run is still going (not waiting
//! for an answer) goes into the thread's inbox ([`super::busy`]) with the mode in
//! `forwardedProps.mode` (`queue`, `steer`, `interrupt`, `rollback`, `reject`; the agent's
//! `input_mode` when absent), the message's `id` as its client message id. The response is the
//! AG-UI run the request names, as `HttpAgent` expects: for a steer, the rest of the thread's
//! current run, in which the steer is a user `TEXT_MESSAGE_*` and its outcome a `CUSTOM`
//! `agentwire.input`; for a queued message (interrupt, rollback), the run it starts, once it
//! starts. `reject` is the `409 session_busy` of before. A rollback's run opens with a
//! `MESSAGES_SNAPSHOT` of the conversation it starts from: the client still holds the run rolled
//! back, and the snapshot takes it out of the client's list.

use agentwire_core::{InputMode, Message, Part, Role, ToolSpec};
use agentwire_dialects::ag_ui::{self, AgUiEncoder};
use agentwire_runtime::RunStart;
use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::post;
use serde_json::{Value, json};

use super::busy::{self, BusyMessage};
use super::{
    Params, SSE_HEADERS, Shared, agent, answers, answers_to, bad_request, last_seq, stream,
    stream_reader,
};
use crate::body::JsonBody;
use crate::caller::Caller;
use crate::error::ApiError;
use crate::runs::{RunsError, Waiting};
use crate::state::AppState;

pub(super) fn routes() -> Router<std::sync::Arc<AppState>> {
    Router::new().route("/ag-ui", post(run))
}

async fn run(
    State(state): Shared,
    params: Params,
    caller: Caller,
    JsonBody(bytes): JsonBody,
) -> Result<Response, ApiError> {
    let input = ag_ui::decode_request(&bytes).map_err(|error| bad_request(&error))?;
    state.check_message_count(input.messages.len())?;
    let agent = agent(&state, &params)?;
    let encoder = AgUiEncoder::for_input(&input);
    let thread_id = input.thread_id.to_string();
    match state.runs.waiting(&caller, &thread_id).await? {
        Some(Waiting::Here(live)) => {
            let found = answers_to(&live.handle, &last_turn(&input.messages));
            if found.parts.is_empty() {
                return Err(busy(&thread_id, live.handle.id().as_str()));
            }
            live.log.settled().await;
            let after = last_seq(&live);
            state.runs.answer(&live, found).await?;
            return Ok(stream(&state, live, after, Box::new(encoder), &SSE_HEADERS));
        }
        Some(Waiting::Elsewhere(record)) => {
            // Another node executes the thread's waiting run: the answer goes there through the
            // store, and the run streams on from the store and that node's notices.
            let run_id = record.id.to_string();
            let (_, output) = state.runs.status(&run_id, &caller).await?;
            let found = answers(&output, &last_turn(&input.messages));
            if found.parts.is_empty() {
                return Err(busy(&thread_id, &run_id));
            }
            let reader = state.runs.continue_elsewhere(*record, found).await?;
            return Ok(stream_reader(
                reader,
                &run_id,
                Box::new(encoder),
                &SSE_HEADERS,
            ));
        }
        None => {}
    }
    let new_from = input
        .messages
        .iter()
        .rposition(|message| message.role == Role::Assistant)
        .map_or(0, |last| last + 1);
    let messages = input.messages[new_from..].to_vec();
    let tools: Vec<ToolSpec> = input
        .tools
        .iter()
        .map(|tool| {
            let parameters = tool
                .parameters
                .clone()
                .unwrap_or_else(|| json!({"type": "object", "properties": {}}));
            ToolSpec::new(&tool.name, &tool.description, parameters)
        })
        .collect();
    let mode = busy::mode_in(
        input
            .forwarded_props
            .as_ref()
            .and_then(|props| props.get("mode")),
        "forwardedProps.mode",
    )?;
    let newest = messages
        .iter()
        .rfind(|message| message.role == Role::User)
        .cloned();
    let mut start = RunStart::new(messages).with_settings(input.settings);
    if !tools.is_empty() {
        start = start.with_client_tools(tools);
    }
    // The client sends its `agent.state` with every run: one it has set becomes the session's
    // before the run (checked against the agent's state schema); `{}`, what `HttpAgent` sends
    // when it has none, leaves the session's as it is (and the run shows it).
    if let Some(sent) = input.state.filter(|state| !is_empty_state(state)) {
        start = start.with_shared_state(sent);
    }
    let thread = input.thread_id.clone();
    match state
        .runs
        .start(agent, &caller, Some(thread.clone()), start)
        .await
    {
        Ok(live) => Ok(stream(&state, live, 0, Box::new(encoder), &SSE_HEADERS)),
        Err(RunsError::SessionBusy { .. }) if newest.is_some() => {
            let Some(message) = newest else {
                return Err(busy(&thread_id, ""));
            };
            // The client still shows the run a rollback takes out: the conversation without it
            // (read before the message rolls it back) replaces the client's list.
            let owner = caller.owner_id();
            let kept = match mode.unwrap_or(agent.input_mode()) {
                InputMode::Rollback => match state.store.last_session_run(owner, &thread).await? {
                    Some(run) => {
                        let kept = state.store.messages_before_run(owner, &thread, &run.id);
                        kept.await?
                    }
                    None => None,
                },
                _ => None,
            };
            let busy_message = BusyMessage {
                client_message_id: message.id.as_ref().map(ToString::to_string),
                message: message.clone(),
                mode,
            };
            let answer = busy::post_busy(&state, agent, &caller, &thread, busy_message).await?;
            let encoder = match kept {
                Some(mut kept) if answer.rolled_back => {
                    kept.push(message);
                    encoder.with_snapshot(&kept)
                }
                _ => encoder,
            };
            Ok(stream_reader(
                answer.reader,
                &answer.run_id,
                Box::new(encoder),
                &SSE_HEADERS,
            ))
        }
        Err(error) => Err(error.into()),
    }
}

/// Whether a client's state says nothing: `null`, or an empty object.
fn is_empty_state(state: &Value) -> bool {
    match state {
        Value::Null => true,
        Value::Object(members) => members.is_empty(),
        _ => false,
    }
}

/// The parts of the thread's last turn onwards: the assistant message holding the tool
/// messages, and the user message holding the `resume` answers.
fn last_turn(messages: &[Message]) -> Vec<Part> {
    let turn_from = messages
        .iter()
        .rposition(|message| message.role == Role::Assistant)
        .unwrap_or(0);
    messages[turn_from..]
        .iter()
        .flat_map(|message| message.parts.clone())
        .collect()
}

/// 409: the thread's run waits, and the request answers none of what it waits for.
fn busy(thread_id: &str, run_id: &str) -> ApiError {
    ApiError::new(
        StatusCode::CONFLICT,
        "session_busy",
        format!(
            "thread '{thread_id}' has run '{run_id}' waiting; answer its tool calls or interrupts first"
        ),
    )
}
