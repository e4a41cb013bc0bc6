//! AgentX's `POST /chat` (seed 000): new messages, optionally in a session, answered with the
//! run's message packets over SSE. Messages in a session whose run waits that answer it (approval
//! responses, client tool outputs) continue that run; messages that answer nothing of it are
//! refused as busy.

use agentwire_dialects::agentx::{self, AgentxEncoder};
use agentwire_runtime::RunStart;
use axum::Router;
use axum::extract::State;
use axum::response::Response;
use axum::routing::post;

use super::{
    Params, SSE_HEADERS, Shared, agent, answer_waiting, bad_request, stream, stream_reader,
};
use crate::body::JsonBody;
use crate::caller::Caller;
use crate::error::ApiError;
use crate::state::AppState;

pub(super) fn routes() -> Router<std::sync::Arc<AppState>> {
    Router::new().route("/chat", post(chat))
}

async fn chat(
    State(state): Shared,
    params: Params,
    caller: Caller,
    JsonBody(bytes): JsonBody,
) -> Result<Response, ApiError> {
    let request = agentx::decode_request(&bytes).map_err(|error| bad_request(&error))?;
    state.check_message_count(request.messages.len())?;
    // The agent in the URL wins over the one the body names.
    let agent = match (params.get("name"), &request.agent) {
        (None, Some(name)) => state.agent(Some(name))?,
        _ => agent(&state, &params)?,
    };
    if let Some(session_id) = &request.session_id
        && let Some((reader, run_id)) =
            answer_waiting(&state, &caller, session_id.as_str(), &request.messages).await?
    {
        let encoder = Box::new(AgentxEncoder::default());
        return Ok(stream_reader(reader, &run_id, encoder, &SSE_HEADERS));
    }
    let start = RunStart::new(request.messages)
        .with_client_tools(request.tools)
        .with_settings(request.settings);
    let live = state
        .runs
        .start(agent, &caller, request.session_id, start)
        .await?;
    Ok(stream(
        &state,
        live,
        0,
        Box::new(AgentxEncoder::default()),
        &SSE_HEADERS,
    ))
}
