//! AgentX's `POST /chat`: new messages, optionally in a session, answered with the
//! run's message packets over SSE. Messages in a session whose run waits that answer it (approval
//! responses, client tool outputs) continue that run; messages that answer nothing of it are
//! refused as busy.
//!
//! New messages in a session whose run is still going go into the session's inbox
//! ([`super::busy`]): the last user message, with the mode in the body's `mode` (`queue`,
//! `steer`, `interrupt`, `rollback`, `reject`; the agent's `input_mode` when absent), its `id`
//! as the client message id. The response is the packets of the run that answers it: for a
//! steer, the rest of the current run (AgentX packets are the agent's turn: the steer itself is
//! not sent); for a queued message (interrupt, rollback), the run it starts, once it starts.
//! `reject` is the `409 session_busy` of before.

use agentwire_dialects::agentx::{self, AgentxEncoder};
use agentwire_runtime::RunStart;
use axum::Router;
use axum::extract::State;
use axum::response::Response;
use axum::routing::post;

use agentwire_core::Role;
use serde_json::Value;

use super::busy::{self, BusyMessage};
use super::{
    Params, SSE_HEADERS, Shared, agent, answer_waiting, bad_request, stream, stream_reader,
};
use crate::body::JsonBody;
use crate::caller::Caller;
use crate::error::ApiError;
use crate::runs::RunsError;
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
    let newest = request
        .messages
        .iter()
        .rfind(|message| message.role == Role::User)
        .cloned();
    let start = RunStart::new(request.messages)
        .with_client_tools(request.tools)
        .with_settings(request.settings);
    let session = request.session_id.clone();
    let live = match state
        .runs
        .start(agent, &caller, session.clone(), start)
        .await
    {
        Ok(live) => live,
        Err(RunsError::SessionBusy { .. }) if session.is_some() && newest.is_some() => {
            let (Some(session), Some(message)) = (session, newest) else {
                return Err(ApiError::from(RunsError::no_session("")));
            };
            let body: Value = serde_json::from_slice(&bytes).unwrap_or_default();
            let busy_message = BusyMessage {
                mode: busy::mode_in(body.get("mode"), "mode")?,
                client_message_id: message.id.as_ref().map(ToString::to_string),
                message,
            };
            let answer = busy::post_busy(&state, agent, &caller, &session, busy_message).await?;
            let encoder = Box::new(AgentxEncoder::default());
            return Ok(stream_reader(
                answer.reader,
                &answer.run_id,
                encoder,
                &SSE_HEADERS,
            ));
        }
        Err(error) => return Err(error.into()),
    };
    Ok(stream(
        &state,
        live,
        0,
        Box::new(AgentxEncoder::default()),
        &SSE_HEADERS,
    ))
}
