//! OpenAI's Responses API: `POST /v1/responses`, `GET /v1/responses/{id}` and `POST
//! /v1/responses/{id}/cancel`, what the official `openai` SDKs' `client.responses` call.
//!
//! `model` names the agent, as OpenAI-compatible gateways do (under `/agents/{name}` the path
//! does, and `model` is only echoed); an unknown one is OpenAI's 404 `model_not_found`. A
//! response is a run, from its start or from where it waited for the client, to where it
//! settles: its id is the run's, or `<run id>.<seq>` for the part of the run after event `seq`
//! (the answer to a call or an approval). `previous_response_id` continues that run's session:
//! when the run waits and the input answers it (`function_call_output`, `mcp_approval_response`
//! items), the run goes on and the new response is its next part; otherwise a new run starts in
//! the session (409 while its last run is still going). Calls of the client's `tools` end a
//! response with `function_call` items; the agent's own tools are `mcp_call` items.
//!
//! `stream: true` answers with the events; otherwise the response once it has settled; with
//! `background: true` the response at once (`queued`), to be read with `GET`, which also
//! streams (`?stream=true`, from the start or `starting_after` a sequence number). `cancel`
//! cancels the run and answers the response once it has ended. Every error on these routes,
//! the extractors' too, is OpenAI's `{"error": {"message", "type", "param", "code"}}`.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use agentwire_core::{Message, Part, ToolKind};
use agentwire_dialects::Encoder;
use agentwire_dialects::openai_responses::{
    self, ResponseInfo, ResponsesEncoder, ResponsesRequest, error_body,
};
use agentwire_runtime::{Agent, RunStart};
use axum::Router;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use serde_json::Value;

use super::{Params, SSE_HEADERS, Shared, answers, answers_to, last_seq, stream_reader};
use crate::body::JsonBody;
use crate::caller::Caller;
use crate::error::ApiError;
use crate::runs::{Found, Reader, RunsError, Until, Waiting};
use crate::state::AppState;

pub(super) fn routes() -> Router<Arc<AppState>> {
    Router::new()
        .route("/v1/responses", post(create))
        .route("/v1/responses/{id}", get(retrieve))
        .route("/v1/responses/{id}/cancel", post(cancel))
        .route_layer(middleware::from_fn(openai_errors))
}

/// An error in OpenAI's shape: the server's error, and the request field at fault.
struct OpenAiError {
    error: ApiError,
    param: Option<&'static str>,
}

impl OpenAiError {
    fn about(mut self, param: &'static str) -> Self {
        self.param = Some(param);
        self
    }
}

impl<E: Into<ApiError>> From<E> for OpenAiError {
    fn from(error: E) -> Self {
        Self {
            error: error.into(),
            param: None,
        }
    }
}

impl IntoResponse for OpenAiError {
    fn into_response(self) -> Response {
        let body = error_body(
            &self.error.message,
            error_type(self.error.status),
            self.param,
            self.error.code,
        );
        let mut response = (self.error.status, axum::Json(body)).into_response();
        response.extensions_mut().insert(OpenAiShaped);
        response
    }
}

/// Marks a response already in OpenAI's error shape.
#[derive(Clone, Copy, Debug)]
struct OpenAiShaped;

/// OpenAI's error `type` for a status.
fn error_type(status: StatusCode) -> &'static str {
    match status {
        StatusCode::UNAUTHORIZED => "authentication_error",
        StatusCode::FORBIDDEN => "permission_error",
        StatusCode::TOO_MANY_REQUESTS => "rate_limit_error",
        status if status.is_server_error() => "server_error",
        _ => "invalid_request_error",
    }
}

/// Gives every error answer of these routes OpenAI's shape, also those the extractors (auth,
/// body type and size) and axum (a method the route does not have) answer before a handler
/// runs: an [`ApiError`]'s code and message are read from the response, not its body; what
/// axum answered by itself gets a code and message after its status, as on every route.
async fn openai_errors(request: Request, next: Next) -> Response {
    let response = next.run(request).await;
    let status = response.status();
    if !(status.is_client_error() || status.is_server_error())
        || response.extensions().get::<OpenAiShaped>().is_some()
    {
        return response;
    }
    let (parts, body) = response.into_parts();
    let error = match parts.extensions.get::<ApiError>() {
        Some(error) => error.clone(),
        None => {
            let bytes = axum::body::to_bytes(body, 4096).await.unwrap_or_default();
            ApiError::from_status(status, &String::from_utf8_lossy(&bytes))
        }
    };
    let mut answer = OpenAiError::from(error).into_response();
    for (name, value) in &parts.headers {
        if name != header::CONTENT_TYPE && name != header::CONTENT_LENGTH {
            answer.headers_mut().append(name.clone(), value.clone());
        }
    }
    answer
}

/// The agent a request addresses: the path's, else the one `model` names, else the default.
fn agent_for<'a>(
    state: &'a AppState,
    params: &Params,
    model: Option<&str>,
) -> Result<&'a Agent, OpenAiError> {
    if let Some(name) = params.get("name") {
        return Ok(state.agent(Some(name))?);
    }
    match model {
        Some(model) => state.agent(Some(model)).map_err(|_| {
            OpenAiError::from(ApiError::new(
                StatusCode::NOT_FOUND,
                "model_not_found",
                format!("The model `{model}` does not exist or you do not have access to it."),
            ))
            .about("model")
        }),
        None => Ok(state.agent(None)?),
    }
}

/// The id of the part of run `run_id` after event `after`.
fn response_id(run_id: &str, after: u64) -> String {
    match after {
        0 => run_id.to_owned(),
        after => format!("{run_id}.{after}"),
    }
}

/// The run a response id names, and the event its response starts after.
async fn find_response(
    state: &AppState,
    caller: &Caller,
    id: &str,
) -> Result<(Found, u64), OpenAiError> {
    match state.runs.find(id, caller).await {
        Ok(found) => return Ok((found, 0)),
        Err(RunsError::NotFound { .. }) => {}
        Err(error) => return Err(error.into()),
    }
    if let Some((run_id, after)) = id.rsplit_once('.')
        && let Ok(after) = after.parse::<u64>()
    {
        match state.runs.find(run_id, caller).await {
            Ok(found) => return Ok((found, after)),
            Err(RunsError::NotFound { .. }) => {}
            Err(error) => return Err(error.into()),
        }
    }
    Err(ApiError::new(
        StatusCode::NOT_FOUND,
        "not_found",
        format!("Response with id '{}' not found.", crate::error::echo(id)),
    )
    .into())
}

/// The agent's own tools, by name, with the `server_label` their calls carry: the MCP server
/// of an MCP tool, the agent for the others.
fn agent_tools(agent: &Agent) -> Vec<(String, String)> {
    agent
        .tools()
        .iter()
        .map(|tool| {
            let label = match agent.tool_kind(&tool.name) {
                ToolKind::Mcp { server } => server.clone(),
                _ => agent.name().to_owned(),
            };
            (tool.name.clone(), label)
        })
        .collect()
}

/// The encoder of a response of `agent` (if it is still configured).
fn encoder(info: ResponseInfo, agent: Option<&Agent>) -> ResponsesEncoder {
    let tools = agent.map(agent_tools).unwrap_or_default();
    ResponsesEncoder::new(info).with_agent_tools(tools)
}

/// What a new response echoes of its request.
fn info(request: &ResponsesRequest, id: String, model: &str) -> ResponseInfo {
    ResponseInfo {
        id,
        model: model.to_owned(),
        created_at: unix_now(),
        background: request.background,
        previous_response_id: request.previous_response_id.clone(),
        instructions: request.instructions.clone(),
        tools: request.tools.clone(),
        temperature: request.settings.temperature,
        top_p: request.settings.top_p,
        max_output_tokens: request.settings.max_tokens,
    }
}

async fn create(
    State(state): Shared,
    params: Params,
    caller: Caller,
    JsonBody(bytes): JsonBody,
) -> Result<Response, OpenAiError> {
    let request = openai_responses::decode_request(&bytes).map_err(|error| {
        let param = match &error {
            agentwire_dialects::DecodeError::InvalidField(field) => {
                // The field's top-level name, as OpenAI's `param` gives it.
                match field.field.split(['[', '.']).next() {
                    Some("input") => Some("input"),
                    Some("tools") => Some("tools"),
                    Some("temperature") => Some("temperature"),
                    Some("top_p") => Some("top_p"),
                    Some("max_output_tokens") => Some("max_output_tokens"),
                    _ => None,
                }
            }
            _ => None,
        };
        let error = OpenAiError::from(super::bad_request(&error));
        match param {
            Some(param) => error.about(param),
            None => error,
        }
    })?;
    state.check_message_count(request.input.len())?;
    let agent = agent_for(&state, &params, request.model.as_deref())?;
    let model = request.model.as_deref().unwrap_or(agent.name()).to_owned();
    let mut session = None;
    if let Some(previous) = &request.previous_response_id {
        let (found, _) = find_response(&state, &caller, previous)
            .await
            .map_err(|error| error.about("previous_response_id"))?;
        session = found.session_id().cloned();
        if let Some(session) = &session
            && let Some(continued) =
                answer_waiting(&state, &caller, session.as_str(), &request.input).await?
        {
            let id = response_id(&continued.run_id, continued.after);
            let encoder =
                encoder(info(&request, id, &model), Some(agent)).knowing(&continued.output);
            return Ok(respond(continued.reader, &continued.run_id, encoder, &request).await);
        }
    }
    let start = RunStart::new(request.input.clone())
        .with_client_tools(request.client_tools.clone())
        .with_settings(request.settings.clone());
    let live = state.runs.start(agent, &caller, session, start).await?;
    let run_id = live.handle.id().to_string();
    let encoder = encoder(info(&request, run_id.clone(), &model), Some(agent));
    let reader = state.runs.follow_live(live, 0, Until::Settled, false);
    Ok(respond(reader, &run_id, encoder, &request).await)
}

/// A waiting run the input answers, going on.
struct Continued {
    reader: Reader,
    run_id: String,
    /// The last event before the answer: the new response starts after it.
    after: u64,
    /// The run's output before the answer.
    output: Vec<Message>,
}

/// Gives the session's waiting run what `input` answers of what it waits for, here or on the
/// node that executes it. `None` when nothing waits or nothing is answered.
async fn answer_waiting(
    state: &AppState,
    caller: &Caller,
    session: &str,
    input: &[Message],
) -> Result<Option<Continued>, OpenAiError> {
    let parts: Vec<Part> = input
        .iter()
        .flat_map(|message| message.parts.iter().cloned())
        .collect();
    match state.runs.waiting(caller, session).await? {
        Some(Waiting::Here(live)) => {
            live.log.settled().await;
            let output = live.handle.output();
            let found = answers_to(&live.handle, &parts);
            if found.parts.is_empty() {
                return Ok(None);
            }
            let after = last_seq(&live);
            state.runs.answer(&live, found).await?;
            let run_id = live.handle.id().to_string();
            let reader = state.runs.follow_live(live, after, Until::Settled, true);
            Ok(Some(Continued {
                reader,
                run_id,
                after,
                output,
            }))
        }
        Some(Waiting::Elsewhere(record)) => {
            let run_id = record.id.to_string();
            let after = record.last_seq;
            let (_, output) = state.runs.status(&run_id, caller).await?;
            let found = answers(&output, &parts);
            if found.parts.is_empty() {
                return Ok(None);
            }
            let reader = state.runs.continue_elsewhere(*record, found).await?;
            Ok(Some(Continued {
                reader,
                run_id,
                after,
                output,
            }))
        }
        None => Ok(None),
    }
}

/// The response `reader` reads: its events, the response at once (background), or the
/// response once it has settled.
async fn respond(
    mut reader: Reader,
    run_id: &str,
    mut encoder: ResponsesEncoder,
    request: &ResponsesRequest,
) -> Response {
    if request.stream {
        return stream_reader(reader, run_id, Box::new(encoder), &SSE_HEADERS);
    }
    if !request.background {
        let mut scratch = Vec::new();
        while reader
            .next(|event| {
                encoder.encode(event, &mut scratch);
                scratch.clear();
            })
            .await
        {}
    }
    json_response(&encoder.response(), run_id)
}

fn json_response(body: &Value, run_id: &str) -> Response {
    let mut response = axum::Json(body).into_response();
    if let Ok(value) = HeaderValue::from_str(run_id) {
        response.headers_mut().insert("x-agentwire-run-id", value);
    }
    response
}

/// `?stream=true&starting_after=N`.
#[derive(Deserialize)]
struct RetrieveQuery {
    #[serde(default)]
    stream: Option<bool>,
    #[serde(default)]
    starting_after: Option<u64>,
}

/// The response id of the path.
fn path_id(params: &Params) -> Result<String, OpenAiError> {
    params
        .get("id")
        .cloned()
        .ok_or_else(|| ApiError::not_found("response", "").into())
}

/// The encoder of an existing response: its run's agent's tools, the calls before it.
async fn encoder_of(
    state: &AppState,
    caller: &Caller,
    params: &Params,
    id: &str,
    found: &Found,
    after: u64,
) -> Result<ResponsesEncoder, OpenAiError> {
    // Each agent under `/agents/{name}` has only its own responses.
    if let Some(name) = params.get("name")
        && name != found.agent()
    {
        return Err(ApiError::not_found("response", id).into());
    }
    let created_at = match found {
        Found::Stored(record) => record.created_at.0 / 1000,
        Found::Live(_) => unix_now(),
    };
    let run_id = match found {
        Found::Live(live) => live.handle.id().to_string(),
        Found::Stored(record) => record.id.to_string(),
    };
    let info = ResponseInfo {
        id: id.to_owned(),
        model: found.agent().to_owned(),
        created_at,
        ..ResponseInfo::default()
    };
    let agent = state.agent(Some(found.agent())).ok();
    let mut encoder = encoder(info, agent);
    if after > 0 {
        let (_, output) = state.runs.status(&run_id, caller).await?;
        encoder = encoder.knowing(&output);
    }
    Ok(encoder)
}

async fn retrieve(
    State(state): Shared,
    params: Params,
    caller: Caller,
    query: Result<Query<RetrieveQuery>, QueryRejection>,
) -> Result<Response, OpenAiError> {
    let Query(query) = query.map_err(|rejection| {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            "invalid_query",
            rejection.body_text(),
        )
    })?;
    let id = path_id(&params)?;
    let (found, after) = find_response(&state, &caller, &id).await?;
    let encoder = encoder_of(&state, &caller, &params, &id, &found, after).await?;
    if query.stream == Some(true) {
        let encoder = match query.starting_after {
            Some(n) => encoder.starting_after(n),
            None => encoder,
        };
        let run_id = found_run_id(&found);
        let reader = state.runs.follow_found(found, after, Until::Settled);
        return Ok(stream_reader(
            reader,
            &run_id,
            Box::new(encoder),
            &SSE_HEADERS,
        ));
    }
    let run_id = found_run_id(&found);
    let response = as_it_stands(&state, found, after, encoder).await?;
    Ok(json_response(&response, &run_id))
}

fn found_run_id(found: &Found) -> String {
    match found {
        Found::Live(live) => live.handle.id().to_string(),
        Found::Stored(record) => record.id.to_string(),
    }
}

/// The response as it stands now: the run's events after `after` that are logged, encoded.
async fn as_it_stands(
    state: &AppState,
    found: Found,
    after: u64,
    mut encoder: ResponsesEncoder,
) -> Result<Value, OpenAiError> {
    let mut scratch = Vec::new();
    let mut visit = |event: &agentwire_core::Event| {
        if event.seq > after {
            encoder.encode(event, &mut scratch);
            scratch.clear();
        }
    };
    match found {
        Found::Live(live) => {
            crate::runs::read_all(&live, &mut visit).await;
        }
        Found::Stored(record) => state.runs.each_stored_event(&record.id, &mut visit).await?,
    }
    Ok(encoder.response())
}

/// How long a cancel waits for the run to end before it answers the response as it stands.
const CANCELED_WITHIN: Duration = Duration::from_secs(10);

async fn cancel(
    State(state): Shared,
    params: Params,
    caller: Caller,
) -> Result<Response, OpenAiError> {
    let id = path_id(&params)?;
    let (found, after) = find_response(&state, &caller, &id).await?;
    let encoder = encoder_of(&state, &caller, &params, &id, &found, after).await?;
    let run_id = found_run_id(&found);
    if !found.status().is_terminal() {
        let last = match &found {
            Found::Live(live) => last_seq(live),
            Found::Stored(record) => record.last_seq,
        };
        state.runs.cancel(&run_id, &caller).await?;
        let mut ended = state
            .runs
            .follow(&run_id, &caller, last, Until::Ended)
            .await?;
        let _ = tokio::time::timeout(CANCELED_WITHIN, async { while ended.next(|_| {}).await {} })
            .await;
    }
    let (found, _) = find_response(&state, &caller, &id).await?;
    let response = as_it_stands(&state, found, after, encoder).await?;
    Ok(json_response(&response, &run_id))
}

/// Now, in Unix seconds (a response's `created_at`).
fn unix_now() -> i64 {
    let since_epoch = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    i64::try_from(since_epoch.as_secs()).unwrap_or(i64::MAX)
}
