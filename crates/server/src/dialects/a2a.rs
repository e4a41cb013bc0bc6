//! A2A 1.0 over JSON-RPC: the agent card at `/.well-known/agent-card.json` and `POST /a2a`
//! (`SendMessage`, `SendStreamingMessage`).
//!
//! A task is a run and its `contextId` the session. A message naming a `taskId` answers that
//! task while it is `INPUT_REQUIRED` (approval responses, tool outputs), so the waiting run goes
//! on. Every JSON-RPC failure is an error object with the standard code, in an HTTP 200 answer,
//! as JSON-RPC clients expect.

use std::sync::Arc;

use agentwire_core::SessionId;
use agentwire_dialects::Encoder;
use agentwire_dialects::a2a::{self, A2aEncoder, A2aMethod, AgentDescription, AgentSkill};
use agentwire_runtime::RunStart;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{Map, Value, json};

use super::{Dialects, Params, SSE_HEADERS, Shared, answers, last_seq};
use crate::error::ApiError;
use crate::state::{LiveRun, Owner};

pub(super) fn routes() -> Router<Arc<Dialects>> {
    Router::new()
        .route("/.well-known/agent-card.json", get(card))
        .route("/a2a", post(rpc))
}

/// The agent's card; its interface URL is this server's `/a2a` for the agent, as the client
/// reached the server (`Host`, and `X-Forwarded-Proto` behind a proxy).
async fn card(
    State(state): Shared,
    params: Params,
    headers: HeaderMap,
) -> Result<Json<Value>, ApiError> {
    let agent = state.agent(&params)?;
    let host = headers
        .get(header::HOST)
        .and_then(|value| value.to_str().ok())
        .ok_or_else(|| {
            ApiError::new(
                StatusCode::BAD_REQUEST,
                "missing_host",
                "the card's URL is made from the request's `Host` header, which is missing",
            )
        })?;
    let scheme = headers
        .get("x-forwarded-proto")
        .and_then(|value| value.to_str().ok())
        .unwrap_or("http");
    let prefix = params
        .get("name")
        .map_or_else(String::new, |name| format!("/agents/{name}"));
    let description = agent.description().to_owned();
    Ok(Json(a2a::agent_card(&AgentDescription {
        name: agent.name().to_owned(),
        url: format!("{scheme}://{host}{prefix}/a2a"),
        version: env!("CARGO_PKG_VERSION").to_owned(),
        skills: vec![AgentSkill {
            id: "chat".into(),
            name: agent.name().to_owned(),
            description: description.clone(),
            tags: vec!["chat".into()],
            examples: Vec::new(),
        }],
        description,
    })))
}

/// JSON-RPC 2.0 error codes (the standard ones, and A2A's `TaskNotFoundError`).
const PARSE_ERROR: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;
const METHOD_NOT_FOUND: i64 = -32601;
const INVALID_PARAMS: i64 = -32602;
const INTERNAL_ERROR: i64 = -32603;
const TASK_NOT_FOUND: i64 = -32001;

/// A JSON-RPC error: the request it answers, its code and message, and the server's own error
/// code (`data.code`) when there is one.
struct RpcError {
    id: Value,
    code: i64,
    message: String,
    data: Option<&'static str>,
}

impl RpcError {
    fn new(id: Value, code: i64, message: impl Into<String>) -> Self {
        Self {
            id,
            code,
            message: message.into(),
            data: None,
        }
    }

    /// The JSON-RPC error for a request the server refused.
    fn refused(id: Value, error: ApiError) -> Self {
        let code = match error.status {
            StatusCode::NOT_FOUND => TASK_NOT_FOUND,
            status if status.is_client_error() => INVALID_PARAMS,
            _ => INTERNAL_ERROR,
        };
        Self {
            data: Some(error.code),
            ..Self::new(id, code, error.message)
        }
    }
}

impl IntoResponse for RpcError {
    fn into_response(self) -> Response {
        let mut error = json!({"code": self.code, "message": self.message});
        if let Some(data) = self.data {
            error["data"] = json!({"code": data});
        }
        Json(json!({"jsonrpc": "2.0", "id": self.id, "error": error})).into_response()
    }
}

async fn rpc(
    State(state): Shared,
    params: Params,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    // Authentication and the body limit are HTTP matters, answered as the other routes do.
    let (owner, bytes) = state.begin(&headers, body).await?;
    let request = match classify(&bytes) {
        Ok(request) => request,
        Err(error) => return Ok(error.into_response()),
    };
    let id = request.id.clone();
    Ok(match send(&state, &params, &owner, request).await {
        Ok(response) => response,
        Err(error) => RpcError::refused(id, error).into_response(),
    })
}

/// Decodes a request, or answers it with the JSON-RPC error that says what is wrong with it:
/// not JSON, not a JSON-RPC request, a method this server does not have, or bad params.
fn classify(bytes: &[u8]) -> Result<a2a::A2aRequest, RpcError> {
    let value: Value = serde_json::from_slice(bytes)
        .map_err(|error| RpcError::new(Value::Null, PARSE_ERROR, error.to_string()))?;
    let id = match value.get("id") {
        Some(id @ (Value::String(_) | Value::Number(_) | Value::Null)) => id.clone(),
        None => Value::Null,
        Some(_) => {
            let message = "`id` must be a string, a number or null";
            return Err(RpcError::new(Value::Null, INVALID_REQUEST, message));
        }
    };
    let method = match (value.get("jsonrpc"), value.get("method")) {
        (Some(Value::String(version)), Some(Value::String(method))) if version == "2.0" => method,
        _ => {
            let message = "a JSON-RPC 2.0 request needs `\"jsonrpc\": \"2.0\"` and a `method`";
            return Err(RpcError::new(id, INVALID_REQUEST, message));
        }
    };
    if serde_json::from_value::<A2aMethod>(Value::String(method.clone())).is_err() {
        let message =
            format!("no method '{method}'; this server has SendMessage and SendStreamingMessage");
        return Err(RpcError::new(id, METHOD_NOT_FOUND, message));
    }
    a2a::decode_request(bytes).map_err(|error| RpcError::new(id, INVALID_PARAMS, error.to_string()))
}

/// Starts the run the message asks for, or answers the task it names, and responds as the
/// method says: the stream, or the task once the run is settled.
async fn send(
    state: &Dialects,
    params: &Params,
    owner: &Owner,
    request: a2a::A2aRequest,
) -> Result<Response, ApiError> {
    let agent = state.agent(params)?;
    state.check_count(request.input.len())?;
    let (live, after) = match &request.task_id {
        Some(task_id) => {
            let live = state.app.live_run(task_id, owner).await?;
            if let Some(context_id) = &request.context_id
                && live.handle.session_id().map(SessionId::as_str) != Some(context_id.as_str())
            {
                return Err(ApiError::new(
                    StatusCode::BAD_REQUEST,
                    "context_mismatch",
                    format!("task '{task_id}' is not in context '{context_id}'"),
                ));
            }
            live.log.settled().await;
            let after = last_seq(&live);
            // The answers the run waits for; anything else (a reply to a question) goes as
            // sent, and the runtime says whether the run takes it.
            let parts: Vec<_> = request.input.iter().flat_map(|m| m.parts.clone()).collect();
            let found = answers(&live, &parts);
            let message = match request.input.into_iter().next() {
                Some(sent) if found.parts.is_empty() => sent,
                _ => found,
            };
            live.handle.input(message)?;
            (live, after)
        }
        None => {
            let session = request.context_id.clone().map(SessionId::from);
            let start = RunStart::new(request.input);
            (state.app.start(agent, owner, session, start).await?, 0)
        }
    };
    let task_id = live.handle.id().to_string();
    let context_id = live
        .handle
        .session_id()
        .map_or_else(|| task_id.clone(), ToString::to_string);
    let encoder = A2aEncoder::new(request.id.clone(), task_id, context_id);
    if request.method == A2aMethod::SendStreamingMessage {
        return Ok(state.stream(live, after, Box::new(encoder), &SSE_HEADERS));
    }
    if !request.return_immediately {
        settled_after(&live, after).await;
    }
    let task = task_of(&live, encoder);
    Ok(Json(json!({"jsonrpc": "2.0", "id": request.id, "result": {"task": task}})).into_response())
}

/// Waits until `live` is settled with an event after `after` (an answered run must move first).
async fn settled_after(live: &LiveRun, after: u64) {
    let mut changes = live.log.subscribe();
    loop {
        changes.borrow_and_update();
        let read = live.log.read_after(after, live.handle.status(), |_| {});
        let moved = after == 0 || read.last_seq.is_some() || live.handle.status().is_terminal();
        if read.complete && moved {
            return;
        }
        if changes.changed().await.is_err() {
            return;
        }
    }
}

/// The task as it stands: the run's stream items folded as an A2A client folds them (the task,
/// then each status replacing the status, each artifact chunk appended to its artifact). The
/// encoder stays the one place where parts become A2A parts; this reads its output once.
fn task_of(live: &LiveRun, mut encoder: A2aEncoder) -> Value {
    let mut out = Vec::new();
    live.log.read_after(0, live.handle.status(), |event| {
        encoder.encode(event, &mut out);
    });
    encoder.finish(&mut out);
    let mut task = Map::new();
    let mut artifacts: Vec<Value> = Vec::new();
    let items = out
        .split(|&byte| byte == b'\n')
        .filter_map(|line| line.strip_prefix(b"data: "))
        .filter_map(|data| serde_json::from_slice::<Value>(data).ok());
    for mut item in items {
        let result = item["result"].take();
        if let Value::Object(first) = &result["task"] {
            task.clone_from(first);
        } else if let Some(status) = result["statusUpdate"].get("status") {
            task.insert("status".into(), status.clone());
        } else if let Some(update) = result.get("artifactUpdate") {
            let artifact = update["artifact"].clone();
            let continues = update["append"] == true;
            match artifacts.last_mut() {
                Some(last) if continues && last["artifactId"] == artifact["artifactId"] => {
                    append_chunk(last, artifact);
                }
                _ => artifacts.push(artifact),
            }
        }
    }
    task.insert("artifacts".into(), Value::Array(artifacts));
    Value::Object(task)
}

/// Adds a chunk's parts (and metadata) to the artifact it continues.
fn append_chunk(artifact: &mut Value, mut chunk: Value) {
    if let (Some(parts), Value::Array(more)) = (
        artifact.get_mut("parts").and_then(Value::as_array_mut),
        chunk["parts"].take(),
    ) {
        parts.extend(more);
    }
    if let Value::Object(more) = chunk["metadata"].take() {
        let metadata = artifact
            .as_object_mut()
            .map(|artifact| artifact.entry("metadata").or_insert_with(|| json!({})));
        if let Some(Value::Object(metadata)) = metadata {
            for (key, value) in more {
                match (metadata.get_mut(&key), value) {
                    (Some(Value::Object(ours)), Value::Object(theirs)) => ours.extend(theirs),
                    (_, value) => {
                        metadata.insert(key, value);
                    }
                }
            }
        }
    }
}
