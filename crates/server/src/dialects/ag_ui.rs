//! AG-UI's `POST /ag-ui`: a `RunAgentInput` (the thread's whole history, frontend tools),
//! answered with AG-UI events for the run the request names. The thread is the session, so only
//! the messages after the last assistant message are new; frontend tools are the run's client
//! tools, and generation settings in `forwardedProps` the run's settings.
//!
//! A request that answers the thread's waiting run (a `tool` message with a frontend tool's
//! output, or `resume` entries answering its approval interrupts) continues that run rather than
//! starting one, streamed as the new AG-UI run the request names: AG-UI has one run per request.

use std::sync::Arc;

use agentwire_core::{Part, Role, ToolSpec};
use agentwire_dialects::ag_ui::{self, AgUiEncoder};
use agentwire_runtime::RunStart;
use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::post;
use serde_json::json;

use super::{Params, SSE_HEADERS, Shared, agent, answers, bad_request, last_seq, stream};
use crate::body::JsonBody;
use crate::caller::Caller;
use crate::error::ApiError;
use crate::runs::LiveRun;
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
    if let Some(live) = waiting_run(&state, &caller, &thread_id) {
        // The thread's last turn onwards: the assistant message holding the tool messages, and
        // the user message holding the `resume` answers.
        let turn_from = input
            .messages
            .iter()
            .rposition(|message| message.role == Role::Assistant)
            .unwrap_or(0);
        let parts: Vec<Part> = input.messages[turn_from..]
            .iter()
            .flat_map(|message| message.parts.clone())
            .collect();
        let found = answers(&live.handle.output(), &parts);
        if found.parts.is_empty() {
            return Err(ApiError::new(
                StatusCode::CONFLICT,
                "session_busy",
                format!(
                    "thread '{thread_id}' has run '{}' waiting; answer its tool calls or interrupts first",
                    live.handle.id()
                ),
            ));
        }
        live.log.settled().await;
        let after = last_seq(&live);
        state.runs.answer(&live, found)?;
        return Ok(stream(&state, live, after, Box::new(encoder), &SSE_HEADERS));
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
    let mut start = RunStart::new(messages).with_settings(input.settings);
    if !tools.is_empty() {
        start = start.with_client_tools(tools);
    }
    let live = state
        .runs
        .start(agent, &caller, Some(input.thread_id), start)
        .await?;
    Ok(stream(&state, live, 0, Box::new(encoder), &SSE_HEADERS))
}

/// The thread's run, if it waits for the client.
fn waiting_run(state: &AppState, owner: &Caller, thread_id: &str) -> Option<Arc<LiveRun>> {
    let live = state.runs.current(owner, thread_id)?.live;
    matches!(live.handle.status(), agentwire_core::RunStatus::Awaiting(_)).then_some(live)
}
