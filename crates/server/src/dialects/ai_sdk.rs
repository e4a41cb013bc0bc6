//! The AI SDK's chat endpoints: `POST /api/chat`, which `useChat`'s `DefaultChatTransport` posts,
//! and `GET /api/chat/{id}/stream`, which its `resumeStream` calls.
//!
//! A chat is a session named by the chat's `id`; the client sends its whole history, but the
//! session already holds it, so only the last message is new. A user message starts a run;
//! an assistant message with approval answers or client tool outputs (a submit naming the
//! message in `messageId`) continues the chat's run that awaits them, and the response
//! continues that assistant message. The body's extras (useChat's `body` option) carry the new
//! run's generation settings (`model`, `temperature`, `maxOutputTokens`, …) and `tools` the
//! client executes itself.
//!
//! A user message to a chat whose run is still going (a second `submit-message` while the first
//! streams) goes into the chat's inbox ([`super::busy`]) with the mode in `body.mode` (`queue`,
//! `steer`, `interrupt`, `rollback`, `reject`; the agent's `input_mode` when absent) and the
//! message's own `id` as its client message id (or `body.clientMessageId`). The response is
//! what useChat expects of a send, an assistant message: for a steer, the rest of the current
//! run's answer, with the steer as a `steering-message` part for clients that say they are
//! `ai` 7 (`body.aiSdkVersion`) and each outcome as a transient `data-agentwire-input`; for a
//! queued message (and interrupt, rollback), the answer of the run the message starts, once it
//! starts. `reject` is the `409 session_busy` of before.

use agentwire_core::{MessageId, Role, SessionId};
use agentwire_dialects::ai_sdk::{self, AiSdkEncoder};
use agentwire_runtime::RunStart;
use axum::Router;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};

use super::busy::{self, BusyMessage};
use super::{
    Params, Shared, agent, answer_waiting, answers, answers_to, bad_request, last_seq, settled,
    stream, stream_reader,
};
use crate::body::JsonBody;
use crate::caller::Caller;
use crate::error::ApiError;
use crate::runs::{RunsError, Waiting};
use crate::state::AppState;

pub(super) fn routes() -> Router<std::sync::Arc<AppState>> {
    Router::new()
        .route("/api/chat", post(chat))
        .route("/api/chat/{id}/stream", get(resume))
}

/// The encoder of a chat's stream: a fresh assistant message, or the one it continues.
fn encoder(continues: Option<&MessageId>) -> AiSdkEncoder {
    match continues {
        Some(id) => AiSdkEncoder::continuing(id.clone()),
        None => AiSdkEncoder::default(),
    }
}

/// The encoder of the response to `request`, continuing `continues`.
fn request_encoder(request: &ai_sdk::ChatRequest, continues: Option<&MessageId>) -> AiSdkEncoder {
    encoder(continues)
        .knowing(&request.messages)
        .knowing_subagent_calls(&request.subagent_calls)
        .with_steering(request.sdk_major >= 7)
}

async fn chat(
    axum::extract::State(state): Shared,
    params: Params,
    caller: Caller,
    JsonBody(bytes): JsonBody,
) -> Result<Response, ApiError> {
    let request = ai_sdk::decode_request(&bytes).map_err(|error| bad_request(&error))?;
    state.check_message_count(request.messages.len())?;
    let agent = agent(&state, &params)?;
    let Some(last) = request.messages.last() else {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "no_input",
            "a chat request needs at least one message",
        ));
    };
    let chat_id = request.chat_id.clone();
    let (live, after, continues) = match (last.role, request.continues(), &chat_id) {
        (Role::Assistant, Some(continues), Some(chat_id)) => {
            let live = match awaiting_run(&state, &caller, chat_id).await? {
                Waiting::Here(live) => live,
                Waiting::Elsewhere(record) => {
                    // Another node executes it: the answer goes there through the store, and
                    // the run streams on from the store and that node's notices.
                    let run_id = record.id.to_string();
                    let (_, output) = state.runs.status(&run_id, &caller).await?;
                    let answer = answers(&output, &last.parts);
                    let reader = state.runs.continue_elsewhere(*record, answer).await?;
                    let encoder = request_encoder(&request, Some(continues));
                    return Ok(stream_reader(
                        reader,
                        &run_id,
                        Box::new(encoder),
                        &ai_sdk::RESPONSE_HEADERS,
                    ));
                }
            };
            live.log.settled().await;
            let after = last_seq(&live);
            state
                .runs
                .answer(&live, answers_to(&live.handle, &last.parts))
                .await?;
            // A reload resumes this stream: the same message, from the same point.
            state
                .runs
                .streamed(&caller, chat_id, after, Some(continues.clone()));
            (live, after, Some(continues.clone()))
        }
        (Role::Assistant, _, _) => {
            return Err(ApiError::new(
                StatusCode::BAD_REQUEST,
                "invalid_request",
                "an assistant message continues a chat only with the chat's `id` and `messageId`",
            ));
        }
        _ => {
            // A user message to a chat whose run asked the user a question is its answer.
            if let Some(chat_id) = &chat_id
                && let Some((reader, run_id)) =
                    answer_waiting(&state, &caller, chat_id, std::slice::from_ref(last)).await?
            {
                let encoder = request_encoder(&request, None);
                return Ok(stream_reader(
                    reader,
                    &run_id,
                    Box::new(encoder),
                    &ai_sdk::RESPONSE_HEADERS,
                ));
            }
            let start = RunStart::new(vec![last.clone()])
                .with_client_tools(request.tools.clone())
                .with_settings(request.settings.clone());
            let session = chat_id.clone().map(SessionId::from);
            match state
                .runs
                .start(agent, &caller, session.clone(), start)
                .await
            {
                Ok(live) => (live, 0, None),
                Err(RunsError::SessionBusy { .. }) if session.is_some() => {
                    let session = session.unwrap_or_else(|| SessionId::from(""));
                    let message = BusyMessage {
                        message: last.clone(),
                        mode: request.mode,
                        client_message_id: request.client_message_id.clone(),
                    };
                    let answer = busy::post_busy(&state, agent, &caller, &session, message).await?;
                    return Ok(stream_reader(
                        answer.reader,
                        &answer.run_id,
                        Box::new(request_encoder(&request, None)),
                        &ai_sdk::RESPONSE_HEADERS,
                    ));
                }
                Err(error) => return Err(error.into()),
            }
        }
    };
    let encoder = request_encoder(&request, continues.as_ref());
    Ok(stream(
        &state,
        live,
        after,
        Box::new(encoder),
        &ai_sdk::RESPONSE_HEADERS,
    ))
}

/// The chat's run, which must be going on (awaiting the client), here (taken over from the
/// store if it waits there) or on another node. A chat whose last run has ended has nothing to
/// answer (409); one the caller does not have is not found.
async fn awaiting_run(
    state: &AppState,
    owner: &Caller,
    chat_id: &str,
) -> Result<Waiting, ApiError> {
    if let Some(current) = state.runs.current(owner, chat_id) {
        return Ok(Waiting::Here(current.live));
    }
    state.session(chat_id, owner).await?;
    if let Some(waiting) = state.runs.waiting(owner, chat_id).await? {
        return Ok(waiting);
    }
    Err(ApiError::new(
        StatusCode::CONFLICT,
        "run_finished",
        format!("chat '{chat_id}' has no run waiting for an answer"),
    ))
}

/// `GET /api/chat/{id}/stream`: the chat's stream again from its start while it is going;
/// 204 when the chat has none going (what `resumeStream` expects).
async fn resume(
    axum::extract::State(state): Shared,
    params: Params,
    caller: Caller,
) -> Result<Response, ApiError> {
    let Some(chat_id) = params.get("id") else {
        return Err(ApiError::not_found("chat", ""));
    };
    // A chat whose run has ended has nothing going.
    let Some(current) = state.runs.current(&caller, chat_id) else {
        return Ok(StatusCode::NO_CONTENT.into_response());
    };
    if settled(&current.live) {
        return Ok(StatusCode::NO_CONTENT.into_response());
    }
    let encoder = Box::new(encoder(current.continues.as_ref()));
    let headers = &ai_sdk::RESPONSE_HEADERS;
    Ok(stream(
        &state,
        current.live,
        current.after,
        encoder,
        headers,
    ))
}
