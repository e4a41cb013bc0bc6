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

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use agentwire_core::{MessageId, Role, RunId, SessionId};
use agentwire_dialects::ai_sdk::{self, AiSdkEncoder};
use agentwire_runtime::RunStart;
use axum::Router;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};

use super::{Dialects, Params, Shared, answers, bad_request, last_seq, settled};
use crate::auth::Caller;
use crate::body::JsonBody;
use crate::error::ApiError;
use crate::state::{FoundRun, LiveRun};

/// Each chat's current stream, so a continuation finds its run and a reload resumes it.
#[derive(Debug, Default)]
pub(super) struct Chats(Mutex<HashMap<(Caller, String), ChatStream>>);

/// The stream a chat's last request opened.
#[derive(Debug, Clone)]
struct ChatStream {
    run_id: RunId,
    /// The stream starts after this event of the run (a continuation starts mid-run).
    after: u64,
    /// The assistant message it continues, if it does.
    continues: Option<MessageId>,
}

impl Chats {
    fn get(&self, owner: &Caller, chat_id: &str) -> Option<ChatStream> {
        let chats = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        chats.get(&(owner.clone(), chat_id.to_owned())).cloned()
    }

    fn set(&self, owner: &Caller, chat_id: &str, stream: ChatStream) {
        let mut chats = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        chats.insert((owner.clone(), chat_id.to_owned()), stream);
    }
}

pub(super) fn routes() -> Router<Dialects> {
    Router::new()
        .route("/api/chat", post(chat))
        .route("/api/chat/{id}/stream", get(resume))
}

fn encoder(stream: &ChatStream) -> AiSdkEncoder {
    match &stream.continues {
        Some(id) => AiSdkEncoder::continuing(id.clone()),
        None => AiSdkEncoder::default(),
    }
}

async fn chat(
    axum::extract::State(state): Shared,
    params: Params,
    caller: Caller,
    JsonBody(bytes): JsonBody,
) -> Result<Response, ApiError> {
    let request = ai_sdk::decode_request(&bytes).map_err(|error| bad_request(&error))?;
    state.check_count(request.messages.len())?;
    let agent = state.agent(&params)?;
    let Some(last) = request.messages.last() else {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "no_input",
            "a chat request needs at least one message",
        ));
    };
    let chat_id = request.chat_id.clone();
    let stream = match (last.role, request.continues(), &chat_id) {
        (Role::Assistant, Some(continues), Some(chat_id)) => {
            let live = awaiting_run(&state, &caller, chat_id).await?;
            live.log.settled().await;
            let after = last_seq(&live);
            live.handle.input(answers(&live, &last.parts))?;
            let stream = ChatStream {
                run_id: live.handle.id().clone(),
                after,
                continues: Some(continues.clone()),
            };
            (live, stream)
        }
        (Role::Assistant, _, _) => {
            return Err(ApiError::new(
                StatusCode::BAD_REQUEST,
                "invalid_request",
                "an assistant message continues a chat only with the chat's `id` and `messageId`",
            ));
        }
        _ => {
            let start = RunStart::new(vec![last.clone()])
                .with_client_tools(request.tools.clone())
                .with_settings(request.settings.clone());
            let session = chat_id.clone().map(SessionId::from);
            let live = state.app.start(agent, &caller, session, start).await?;
            let stream = ChatStream {
                run_id: live.handle.id().clone(),
                after: 0,
                continues: None,
            };
            (live, stream)
        }
    };
    let (live, stream) = stream;
    if let Some(chat_id) = &chat_id {
        state.chats.set(&caller, chat_id, stream.clone());
    }
    let encoder = encoder(&stream).knowing(&request.messages);
    Ok(state.stream(
        live,
        stream.after,
        Box::new(encoder),
        &ai_sdk::RESPONSE_HEADERS,
    ))
}

/// The chat's run, which must be awaiting the client.
async fn awaiting_run(
    state: &Dialects,
    owner: &Caller,
    chat_id: &str,
) -> Result<Arc<LiveRun>, ApiError> {
    let stream = state
        .chats
        .get(owner, chat_id)
        .ok_or_else(|| ApiError::not_found("chat", chat_id))?;
    state.app.live_run(stream.run_id.as_str(), owner).await
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
    let Some(stream) = state.chats.get(&caller, chat_id) else {
        return Ok(StatusCode::NO_CONTENT.into_response());
    };
    // A run that has ended is read from the store: nothing is going.
    let live = match state.app.run(stream.run_id.as_str(), &caller).await? {
        FoundRun::Live(live) => live,
        FoundRun::Stored(_) => return Ok(StatusCode::NO_CONTENT.into_response()),
    };
    if settled(&live) {
        return Ok(StatusCode::NO_CONTENT.into_response());
    }
    let encoder = Box::new(encoder(&stream));
    Ok(state.stream(live, stream.after, encoder, &ai_sdk::RESPONSE_HEADERS))
}
