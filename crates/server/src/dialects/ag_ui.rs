//! AG-UI's `POST /ag-ui`: a `RunAgentInput` (the thread's whole history, frontend tools),
//! answered with AG-UI events for the run the request names. The thread is the session, so only
//! the messages after the last assistant message are new; frontend tools are the run's client
//! tools.

use std::sync::Arc;

use agentwire_core::{Role, ToolSpec};
use agentwire_dialects::ag_ui::{self, AgUiEncoder};
use agentwire_runtime::RunStart;
use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use axum::routing::post;
use serde_json::json;

use super::{Dialects, Params, SSE_HEADERS, Shared, bad_request};
use crate::error::ApiError;

pub(super) fn routes() -> Router<Arc<Dialects>> {
    Router::new().route("/ag-ui", post(run))
}

async fn run(
    State(state): Shared,
    params: Params,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let (owner, bytes) = state.begin(&headers, body).await?;
    let input = ag_ui::decode_request(&bytes).map_err(|error| bad_request(&error))?;
    state.check_count(input.messages.len())?;
    if !input.resume.is_empty() {
        return Err(ApiError::new(
            StatusCode::NOT_IMPLEMENTED,
            "not_implemented",
            "answering an interrupt with `resume` is not supported yet",
        ));
    }
    let agent = state.agent(&params)?;
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
    let mut start = RunStart::new(messages);
    if !tools.is_empty() {
        start = start.with_client_tools(tools);
    }
    let encoder = AgUiEncoder::for_input(&input);
    let live = state
        .app
        .start(agent, &owner, Some(input.thread_id), start)?;
    Ok(state.stream(live, 0, Box::new(encoder), &SSE_HEADERS))
}
