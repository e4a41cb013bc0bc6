//! The native API: agents, runs and their event streams, input and cancel, and sessions.
//! Every handler takes its [`Caller`] first (authenticated), then its [`JsonBody`] (JSON by
//! content type, within the size and time limits), and answers bad input with an [`ApiError`]
//! before anything changes.

use std::sync::Arc;

use agentwire_core::{Message, RunStatus, ToolSpec, Usage};
use agentwire_dialects::native::RunRequest;
use agentwire_runtime::{Agent, RunStart};
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::auth::Caller;
use crate::body::JsonBody;
use crate::error::ApiError;
use crate::state::{AppState, FoundRun, LiveRun};
use crate::stream::sse_body;

type Shared = State<Arc<AppState>>;

/// The routes of the native API over `state`.
pub(crate) fn router(state: Arc<AppState>) -> Router {
    Router::new()
        .route("/", get(crate::webui::page))
        .route("/ui/{file}", get(crate::webui::file))
        .route("/healthz", get(|| async { Json(json!({"status": "ok"})) }))
        .route("/metrics", get(crate::metrics::scrape))
        .route("/v1/agents", get(list_agents))
        .route("/v1/agents/{name}", get(agent_card))
        .route("/v1/runs", post(create_run))
        .route("/v1/runs/{id}", get(get_run))
        .route("/v1/runs/{id}/events", get(run_events))
        .route("/v1/runs/{id}/input", post(run_input))
        .route("/v1/runs/{id}/cancel", post(cancel_run))
        .route("/v1/sessions", get(crate::session_list::list))
        .route("/v1/sessions/{id}", get(get_session).delete(delete_session))
        .route("/v1/ws", get(crate::ws::upgrade))
        .route("/openapi.json", get(crate::openapi::serve))
        .route("/docs", get(crate::docs::page))
        .fallback(|| async {
            ApiError::new(StatusCode::NOT_FOUND, "not_found", "no such endpoint")
        })
        .with_state(Arc::clone(&state))
        .merge(crate::dialects::router(state))
}

/// Refuses a request carrying more messages than the server takes.
pub(crate) fn check_message_count(state: &AppState, count: usize) -> Result<(), ApiError> {
    let limit = state.settings.max_input_messages;
    if count > limit {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "too_many_messages",
            format!("a request may carry at most {limit} messages; this one has {count}"),
        ));
    }
    Ok(())
}

fn parse<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    serde_json::from_slice(bytes).map_err(|error| ApiError::from_json(&error))
}

/// What `GET /v1/agents/{name}` tells about an agent.
fn card(agent: &Agent) -> Value {
    json!({
        "name": agent.name(),
        "description": agent.description(),
        "brain": agent.describe(),
        "tools": agent.tools(),
        "schema": agent.schema().as_ref(),
    })
}

async fn list_agents(State(state): Shared, _: Caller) -> Result<Response, ApiError> {
    let agents: Vec<Value> = state
        .agents
        .iter()
        .map(|agent| json!({"name": agent.name(), "description": agent.description()}))
        .collect();
    Ok(Json(json!({"agents": agents})).into_response())
}

async fn agent_card(
    State(state): Shared,
    _: Caller,
    Path(name): Path<String>,
) -> Result<Response, ApiError> {
    Ok(Json(card(state.agent(Some(&name))?)).into_response())
}

/// The body of `POST /v1/runs`: the native request (with the run's generation settings), plus
/// the tools the client runs itself.
#[derive(Deserialize)]
pub(crate) struct CreateRun {
    #[serde(flatten)]
    request: RunRequest,
    #[serde(default, deserialize_with = "client_tools")]
    tools: Vec<ToolSpec>,
}

/// `tools`: each `{name, description, parameters}` or an OpenAI function, checked so that an
/// error names the entry (`tools[1].name`).
fn client_tools<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Vec<ToolSpec>, D::Error> {
    let values = Vec::<serde_json::Value>::deserialize(deserializer)?;
    ToolSpec::from_declarations(&values, "tools").map_err(serde::de::Error::custom)
}

/// A run as the API shows it.
#[derive(Serialize)]
pub(crate) struct RunView {
    id: String,
    session_id: Option<String>,
    agent: String,
    #[serde(flatten)]
    status: RunStatus,
    state: String,
    usage: Option<Usage>,
    error: Option<agentwire_core::ErrorInfo>,
}

pub(crate) fn view(live: &LiveRun) -> RunView {
    let handle = &live.handle;
    RunView {
        id: handle.id().to_string(),
        session_id: handle.session_id().map(ToString::to_string),
        agent: handle.agent().name().to_owned(),
        status: handle.status(),
        state: handle.state().to_string(),
        usage: handle.usage(),
        error: handle.error(),
    }
}

fn run_json(live: &LiveRun) -> Response {
    let output: Vec<Message> = live.handle.output();
    Json(json!({"run": view(live), "output": output})).into_response()
}

fn wants_sse(headers: &HeaderMap) -> bool {
    headers
        .get(header::ACCEPT)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|accept| accept.contains("text/event-stream"))
}

fn sse_response(state: &AppState, live: Arc<LiveRun>, after: u64) -> Response {
    let run_id = live.handle.id().to_string();
    let body = sse_body(live, after, state.settings.heartbeat);
    sse_headers(Response::new(body), &run_id)
}

fn sse_headers(mut response: Response, run_id: &str) -> Response {
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(
        header::CACHE_CONTROL,
        header::HeaderValue::from_static("no-cache"),
    );
    if let Ok(value) = header::HeaderValue::from_str(run_id) {
        headers.insert("x-agentwire-run-id", value);
    }
    response
}

async fn create_run(
    State(state): Shared,
    caller: Caller,
    headers: HeaderMap,
    JsonBody(bytes): JsonBody,
) -> Result<Response, ApiError> {
    let live = start_run(&state, &caller, parse(&bytes)?).await?;
    if wants_sse(&headers) {
        return Ok(sse_response(&state, live, 0));
    }
    live.log.settled().await;
    Ok(run_json(&live))
}

/// Starts the run a `POST /v1/runs` body asks for (also the WebSocket's `start`).
pub(crate) async fn start_run(
    state: &Arc<AppState>,
    caller: &Caller,
    CreateRun { request, tools }: CreateRun,
) -> Result<Arc<LiveRun>, ApiError> {
    check_message_count(state, request.input.len())?;
    let agent = state.agent(request.agent.as_deref())?;
    let start = RunStart::new(request.input)
        .with_client_tools(tools)
        .with_settings(request.settings);
    state.start(agent, caller, request.session_id, start).await
}

async fn get_run(
    State(state): Shared,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    match state.run(&id, &caller).await? {
        FoundRun::Live(live) => Ok(run_json(&live)),
        FoundRun::Stored(record) => crate::stored::run_json(&state, &record).await,
    }
}

/// `?after=N`: resume after event N.
#[derive(Deserialize)]
struct After {
    after: Option<u64>,
}

async fn run_events(
    State(state): Shared,
    caller: Caller,
    headers: HeaderMap,
    Path(id): Path<String>,
    query: Result<Query<After>, QueryRejection>,
) -> Result<Response, ApiError> {
    let Query(After { after }) = query.map_err(|rejection| {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            "invalid_query",
            rejection.body_text(),
        )
    })?;
    let last_event_id = match headers.get("last-event-id") {
        None => None,
        Some(value) => Some(
            value
                .to_str()
                .ok()
                .and_then(|text| text.trim().parse::<u64>().ok())
                .ok_or_else(|| {
                    ApiError::new(
                        StatusCode::BAD_REQUEST,
                        "invalid_last_event_id",
                        "Last-Event-ID must be an event's sequence number",
                    )
                })?,
        ),
    };
    let found = state.run(&id, &caller).await?;
    // The header is what a reconnecting EventSource sends; it wins over the query it reuses.
    let after = last_event_id.or(after).unwrap_or(0);
    Ok(match found {
        FoundRun::Live(live) => sse_response(&state, live, after),
        FoundRun::Stored(record) => {
            let body = crate::stored::sse_body(Arc::clone(&state), &record, after);
            sse_headers(Response::new(body), &id)
        }
    })
}

async fn run_input(
    State(state): Shared,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(bytes): JsonBody,
) -> Result<Response, ApiError> {
    let live = state.live_run(&id, &caller).await?;
    input_run(&live, parse(&bytes)?)?;
    Ok((StatusCode::ACCEPTED, Json(json!({"run": view(&live)}))).into_response())
}

/// Gives a run the client's input (also the WebSocket's `input`); checked by the runtime
/// against the run's wait and schema, so a refusal changes nothing.
pub(crate) fn input_run(live: &LiveRun, message: Message) -> Result<(), ApiError> {
    live.handle.input(message)?;
    Ok(())
}

async fn cancel_run(
    State(state): Shared,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let view = cancel(&state, &caller, &id).await?;
    Ok((StatusCode::ACCEPTED, Json(json!({"run": view}))).into_response())
}

/// Cancels a run, here or on the node executing it (also the WebSocket's `cancel`); the run
/// as it was when asked.
pub(crate) async fn cancel(state: &AppState, caller: &Caller, id: &str) -> Result<Value, ApiError> {
    let live = match state.run(id, caller).await? {
        FoundRun::Live(live) => live,
        FoundRun::Stored(record) => {
            // The node executing it cancels it when it hears the notice.
            let notice = agentwire_store::Notice::Cancel {
                run_id: record.id.clone(),
            };
            state
                .store
                .notify(&notice)
                .await
                .map_err(crate::state::store_error)?;
            return Ok(crate::stored::view(&record));
        }
    };
    live.handle.cancel();
    Ok(json!(view(&live)))
}

async fn get_session(
    State(state): Shared,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let messages = state.session(&id, &caller).await?;
    let last_run = crate::session_list::last_run(&state, &id).await?;
    Ok(Json(json!({"id": id, "messages": messages, "last_run": last_run})).into_response())
}

async fn delete_session(
    State(state): Shared,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    state.delete_session(&id, &caller).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}
