//! AgentScope Runtime's `POST /process`: an `AgentRequest`, answered with the run as
//! AgentScope `response`, `message` and `content` objects over SSE, or, for `"stream": false`,
//! with the final `response` object as JSON (AgentApp streams either way; the protocol's
//! `stream` flag says what a client asks for). Its generation settings (`model`, `temperature`,
//! …, `n`) are the run's, its `tools` the run's client tools.
//!
//! A request in a session whose run waits (for an approval, or a client tool's output) and
//! whose input answers it (`mcp_approval_response`, `function_call_output` messages) continues
//! that run, as a new response of the same run; one that answers nothing of it is refused as
//! busy. Calls of the agent's MCP tools, plugins and components go out as `mcp_call`,
//! `plugin_call` and `component_call` messages; `created_at` and `completed_at` are the run's
//! real times.
//!
//! A request with a new user message in a session whose run is still going goes into the
//! session's inbox ([`super::busy`]) with the mode in the body's `mode` (`queue`, `steer`,
//! `interrupt`, `rollback`, `reject`; the agent's `input_mode` when absent), the message's `id`
//! as its client message id. The response is an AgentScope response of the run that answers it:
//! for a steer, the rest of the current run (the steer a `message` of role `user`); for a
//! queued message (interrupt, rollback), the run it starts, once it starts. AgentScope has no
//! object for an outcome, so outcomes are not sent (`GET /v1/sessions/{id}/messages` has them).
//! `reject` is the `409 session_busy` of before.

use std::time::{SystemTime, UNIX_EPOCH};

use agentwire_dialects::Encoder;
use agentwire_dialects::agentscope::{self, AgentScopeEncoder};
use agentwire_runtime::{Agent, RunStart};
use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderValue, header};
use axum::response::Response;
use axum::routing::post;
use serde_json::Value;

use agentwire_core::Role;

use super::busy::{self, BusyMessage};
use super::{Params, SSE_HEADERS, Shared, agent, answer_waiting, bad_request, stream_reader};
use crate::body::JsonBody;
use crate::caller::Caller;
use crate::error::ApiError;
use crate::runs::{Reader, RunsError, Until};
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
    if let Some(session_id) = &request.session_id
        && let Some((reader, run_id)) =
            answer_waiting(&state, &caller, session_id.as_str(), &request.input).await?
    {
        let encoder = encoder(agent).with_run(&run_id, Some(session_id.as_str()));
        return Ok(respond(reader, &run_id, encoder, request.stream).await);
    }
    let newest = request
        .input
        .iter()
        .rfind(|message| message.role == Role::User)
        .cloned();
    let start = RunStart::new(request.input)
        .with_client_tools(request.client_tools)
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
            let encoder = encoder(agent).with_run(&answer.run_id, Some(session.as_str()));
            return Ok(respond(answer.reader, &answer.run_id, encoder, request.stream).await);
        }
        Err(error) => return Err(error.into()),
    };
    let run_id = live.handle.id().to_string();
    let reader = state.runs.follow_live(live, 0, Until::Settled, false);
    Ok(respond(reader, &run_id, encoder(agent), request.stream).await)
}

/// The encoder of a response of `agent`'s run: its tools' kinds, and the real times.
fn encoder(agent: &Agent) -> AgentScopeEncoder {
    AgentScopeEncoder::with_created_at(unix_now())
        .with_clock(unix_now)
        .with_tool_kinds(agent.tool_kinds())
}

/// The run `reader` reads, as an SSE stream or, when the client asked for no stream, as the
/// final response object once the run has settled.
async fn respond(
    mut reader: Reader,
    run_id: &str,
    mut encoder: AgentScopeEncoder,
    stream: bool,
) -> Response {
    if stream {
        return stream_reader(reader, run_id, Box::new(encoder), &SSE_HEADERS);
    }
    let mut out = Vec::new();
    while reader.next(|event| encoder.encode(event, &mut out)).await {}
    encoder.finish(&mut out);
    let body = final_response(&out).unwrap_or_default();
    let mut response = Response::new(Body::from(body));
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    if let Ok(value) = HeaderValue::from_str(run_id) {
        response.headers_mut().insert("x-agentwire-run-id", value);
    }
    response
}

/// The JSON of the last `response` object of an encoded stream (the encoder stays the one
/// place where the run becomes AgentScope objects; this reads its output once).
fn final_response(out: &[u8]) -> Option<Vec<u8>> {
    out.split(|&byte| byte == b'\n')
        .filter_map(|line| line.strip_prefix(b"data: "))
        .rev()
        .find(|object| {
            serde_json::from_slice::<Value>(object).is_ok_and(|value| value["object"] == "response")
        })
        .map(<[u8]>::to_vec)
}

/// Now, in Unix seconds (AgentScope's `created_at`/`completed_at`).
fn unix_now() -> i64 {
    let since_epoch = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    i64::try_from(since_epoch.as_secs()).unwrap_or(i64::MAX)
}
