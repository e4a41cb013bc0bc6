//! The native API's handlers: agents, runs and their event streams, input and cancel, and
//! sessions. Every handler takes its [`Caller`] first (authenticated), then its [`JsonBody`]
//! (JSON by content type, within the size and time limits), and answers bad input with an
//! [`ApiError`] before anything changes. The WebSocket transport starts runs through
//! [`start_run`], as `POST /v1/runs` does.
//!
//! `POST /v1/runs` in a session whose run waits for the user's answer to a question the agent
//! asked (`awaiting input`, its `ask_user`) gives the message to that run as the answer and
//! streams the run on from where it waited (the next user message to the session answers
//! it), rather than answering 409 `session_busy`. Refusals that come before any run exists
//! (a body the schema or the limits refuse) stay 4xx answers: clients branch on them, and no
//! run is there to carry a status; only a run turned away by the server's queue for slots
//! (`max_concurrent_runs`, `max_queued_runs`) exists and ends `rejected`.

use std::sync::Arc;

use agentwire_core::{Message, MessageId, ToolSpec};
use agentwire_dialects::native::{NativeSseEncoder, RunRequest};
use agentwire_runtime::{Agent, RunStart};
use agentwire_store::WebhookRecord;
use axum::Json;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::body::JsonBody;
use crate::caller::Caller;
use crate::error::ApiError;
use crate::runs::{LiveRun, Reader, RunView, Until};
use crate::state::AppState;
use crate::webhooks::{self, RunWebhook};

type Shared = State<Arc<AppState>>;

/// A JSON body as `T`, or 400 naming what is wrong with it.
pub(crate) fn parse<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    serde_json::from_slice(bytes).map_err(|error| ApiError::from_json(&error))
}

/// What `GET /v1/agents/{name}` tells about an agent.
fn card(agent: &Agent) -> Value {
    json!({
        "name": agent.name(),
        "description": agent.description(),
        "brain": agent.describe(),
        "tools": agent.tools(),
        "subagents": subagents(agent),
        "schema": agent.schema().as_ref(),
    })
}

/// The names of the agents `agent`'s model may call like tools, sorted: a client tells a
/// sub-agent's call from a tool's by them (the web UI shows the run such a call started).
fn subagents(agent: &Agent) -> Vec<&str> {
    let mut names: Vec<&str> = agent.subagents().map(Agent::name).collect();
    names.sort_unstable();
    names
}

pub(crate) async fn list_agents(State(state): Shared, _: Caller) -> Response {
    let agents: Vec<Value> = state
        .agents
        .iter()
        .map(|agent| {
            json!({
                "name": agent.name(),
                "description": agent.description(),
                "subagents": subagents(agent),
            })
        })
        .collect();
    Json(json!({"agents": agents})).into_response()
}

pub(crate) async fn agent_card(
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
    /// `webhook: {url, events?}`: a webhook of this run alone, stored before the run's first
    /// status change (`crate::webhooks::create_for_new_run`).
    #[serde(default)]
    webhook: Option<RunWebhook>,
}

/// A run started by [`start_run`], and its webhook if the body asked for one.
pub(crate) struct Started {
    pub(crate) live: Arc<LiveRun>,
    pub(crate) webhook: Option<WebhookRecord>,
}

impl CreateRun {
    /// Whether the client asked for the run in the background (answered at once).
    pub(crate) fn background(&self) -> bool {
        self.request.background
    }
}

/// `tools`: each `{name, description, parameters}` or an OpenAI function, checked so that an
/// error names the entry (`tools[1].name`).
fn client_tools<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Vec<ToolSpec>, D::Error> {
    let values = Vec::<serde_json::Value>::deserialize(deserializer)?;
    ToolSpec::from_declarations(&values, "tools").map_err(serde::de::Error::custom)
}

fn wants_sse(headers: &HeaderMap) -> bool {
    headers
        .get(header::ACCEPT)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|accept| accept.contains("text/event-stream"))
}

/// The native SSE response streaming what `reader` hands over.
fn sse_response(reader: Reader, run_id: &str) -> Response {
    let mut response = Response::new(crate::stream::body(reader, Box::new(NativeSseEncoder)));
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    if let Ok(value) = HeaderValue::from_str(run_id) {
        headers.insert("x-agentwire-run-id", value);
    }
    response
}

pub(crate) async fn create_run(
    State(state): Shared,
    caller: Caller,
    headers: HeaderMap,
    JsonBody(bytes): JsonBody,
) -> Result<Response, ApiError> {
    let create: CreateRun = parse(&bytes)?;
    let background = create.background();
    if let Some(session) = &create.request.session_id
        && let Some((mut reader, run_id)) = crate::dialects::answer_waiting(
            &state,
            &caller,
            session.as_str(),
            &create.request.input,
        )
        .await?
    {
        if background {
            let (run, _) = state.runs.status(&run_id, &caller).await?;
            return Ok(accepted(run, &run_id, None));
        }
        if wants_sse(&headers) {
            return Ok(sse_response(reader, &run_id));
        }
        while reader.next(|_| {}).await {}
        let (run, output) = state.runs.status(&run_id, &caller).await?;
        return Ok(Json(json!({"run": run, "output": output})).into_response());
    }
    let Started { live, webhook } = start_run(&state, &caller, create).await?;
    // The run's webhook, with its signing secret: shown only in this answer.
    let webhook = webhook.as_ref().map(webhooks::created_view);
    if background {
        return Ok(accepted(
            RunView::live(&live),
            live.handle.id().as_str(),
            webhook,
        ));
    }
    if wants_sse(&headers) {
        let run_id = live.handle.id().to_string();
        let reader = state.runs.follow_live(live, 0, Until::Settled, false);
        let mut response = sse_response(reader, &run_id);
        // A stream's body is events only: the webhook goes in headers.
        if let Some(webhook) = webhook {
            for (name, key) in [
                ("x-agentwire-webhook-id", "id"),
                ("x-agentwire-webhook-secret", "secret"),
            ] {
                if let Some(Ok(value)) = webhook[key].as_str().map(HeaderValue::from_str) {
                    response.headers_mut().insert(name, value);
                }
            }
        }
        return Ok(response);
    }
    live.log.settled().await;
    let output: Vec<Message> = live.handle.output();
    let mut answer = json!({"run": RunView::live(&live), "output": output});
    if let Some(webhook) = webhook {
        answer["webhook"] = webhook;
    }
    Ok(Json(answer).into_response())
}

/// The answer to a background run: `202` with the run as it stands, and where to poll it.
/// Its row and input are committed before this (see `Runs::start`), so any node finds it. The
/// run's own webhook, if it has one, is beside it.
fn accepted(run: RunView, run_id: &str, webhook: Option<Value>) -> Response {
    let mut answer = json!({"run": run});
    if let Some(webhook) = webhook {
        answer["webhook"] = webhook;
    }
    let mut response = (StatusCode::ACCEPTED, Json(answer)).into_response();
    if let Ok(value) = HeaderValue::from_str(&format!("/v1/runs/{run_id}")) {
        response.headers_mut().insert(header::LOCATION, value);
    }
    if let Ok(value) = HeaderValue::from_str(run_id) {
        response.headers_mut().insert("x-agentwire-run-id", value);
    }
    response
}

/// Starts the run a `POST /v1/runs` body asks for (also the WebSocket's `start`).
pub(crate) async fn start_run(
    state: &AppState,
    caller: &Caller,
    CreateRun {
        request,
        tools,
        webhook,
    }: CreateRun,
) -> Result<Started, ApiError> {
    state.check_message_count(request.input.len())?;
    let agent = state.agent(request.agent.as_deref())?;
    let mut start = RunStart::new(request.input)
        .with_client_tools(tools)
        .with_settings(request.settings);
    // The run's id is minted here so that its webhook is stored before anything of the run.
    let webhook = match &webhook {
        Some(webhook) => {
            let run_id = agent.new_run_id();
            start = start.with_run_id(run_id.clone());
            let new = webhook.new_webhook(run_id)?;
            Some(webhooks::create_for_new_run(state, caller, new).await?)
        }
        None => None,
    };
    match state
        .runs
        .start(agent, caller, request.session_id, start)
        .await
    {
        Ok(live) => Ok(Started { live, webhook }),
        Err(error) => {
            // A run that never started has no status changes: its webhook goes.
            if let Some(webhook) = &webhook {
                webhooks::discard(state, caller, webhook).await;
            }
            Err(error.into())
        }
    }
}

pub(crate) async fn get_run(
    State(state): Shared,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let (run, output) = state.runs.status(&id, &caller).await?;
    Ok(Json(json!({"run": run, "output": output})).into_response())
}

/// `?after=N`: resume after event N.
#[derive(Deserialize)]
pub(crate) struct After {
    after: Option<u64>,
}

pub(crate) async fn run_events(
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
    // The header is what a reconnecting EventSource sends; it wins over the query it reuses.
    let after = last_event_id.or(after).unwrap_or(0);
    let reader = state
        .runs
        .follow(&id, &caller, after, Until::Settled)
        .await?;
    Ok(sse_response(reader, &id))
}

pub(crate) async fn run_input(
    State(state): Shared,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(bytes): JsonBody,
) -> Result<Response, ApiError> {
    let run = state.runs.give(&id, &caller, parse(&bytes)?).await?;
    Ok((StatusCode::ACCEPTED, Json(json!({"run": run}))).into_response())
}

pub(crate) async fn cancel_run(
    State(state): Shared,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let run = state.runs.cancel(&id, &caller).await?;
    Ok((StatusCode::ACCEPTED, Json(json!({"run": run}))).into_response())
}

pub(crate) async fn get_session(
    State(state): Shared,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let (session, messages) = state.session_record(&id, &caller).await?;
    let last_run = crate::session_list::last_run(&state, &caller, &id).await?;
    // Who speaks for the session: the agent of its last answer (a handoff moves it on).
    let agent = messages.iter().rev().find_map(|message| {
        (message.role == agentwire_core::Role::Assistant)
            .then_some(message.metadata.agent_name.as_deref())
            .flatten()
    });
    let body = json!({
        "id": id,
        "agent": agent,
        "messages": messages,
        "state": schema_state(session.schema_state.as_deref()),
        "last_run": last_run,
    });
    Ok(Json(body).into_response())
}

/// Where a session's conversation stands in its agent's communication schema: the state its
/// last run that ended left it in, or `idle`, where every schema starts.
fn schema_state(stored: Option<&str>) -> &str {
    stored.unwrap_or(agentwire_core::communication::StateName::IDLE)
}

/// The body of `POST /v1/sessions/{id}/fork`: the message the copy stops before (`None`:
/// a copy of every message).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ForkSession {
    #[serde(default)]
    before: Option<MessageId>,
}

/// `POST /v1/sessions/{id}/fork`: a new session with the history before a message, to take
/// the conversation up again from there (an edited question, an answer asked again).
pub(crate) async fn fork_session(
    State(state): Shared,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(bytes): JsonBody,
) -> Result<Response, ApiError> {
    let ForkSession { before } = parse(&bytes)?;
    let (fork, messages) = state.fork_session(&id, &caller, before.as_ref()).await?;
    let body =
        json!({"id": fork, "messages": messages, "state": schema_state(None), "last_run": null});
    Ok((StatusCode::CREATED, Json(body)).into_response())
}

pub(crate) async fn delete_session(
    State(state): Shared,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    state.delete_session(&id, &caller).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}
