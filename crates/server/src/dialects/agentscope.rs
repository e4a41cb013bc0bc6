//! AgentScope Runtime's `POST /process` (seed 002): an `AgentRequest`, answered with the run as
//! AgentScope `response`, `message` and `content` objects over SSE. Its generation settings
//! (`model`, `temperature`, …, `n`) are the run's, its `tools` the run's client tools.

use agentwire_dialects::agentscope::{self, AgentScopeEncoder};
use agentwire_runtime::RunStart;
use axum::Router;
use axum::extract::State;
use axum::response::Response;
use axum::routing::post;

use super::{Params, SSE_HEADERS, Shared, agent, bad_request, stream};
use crate::body::JsonBody;
use crate::caller::Caller;
use crate::error::ApiError;
use crate::state::AppState;

pub(super) fn routes() -> Router<std::sync::Arc<AppState>> {
    Router::new().route("/process", post(process))
}

async fn process(
    State(state): Shared,
    params: Params,
    caller: Caller,
    JsonBody(bytes): JsonBody,
) -> Result<Response, ApiError> {
    let request = agentscope::decode_request(&bytes).map_err(|error| bad_request(&error))?;
    state.check_message_count(request.input.len())?;
    let agent = agent(&state, &params)?;
    let start = RunStart::new(request.input)
        .with_client_tools(request.client_tools)
        .with_settings(request.settings);
    let live = state
        .runs
        .start(agent, &caller, request.session_id, start)
        .await?;
    Ok(stream(
        &state,
        live,
        0,
        Box::new(AgentScopeEncoder::default()),
        &SSE_HEADERS,
    ))
}
