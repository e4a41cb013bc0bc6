//! Dialect endpoints: the routes real clients of other ecosystems call, each decoding
//! its dialect's request into a run of the right agent and streaming the run's event log back
//! through the dialect's encoder. Every route is mounted at the root (the default agent) and
//! under `/agents/{name}/…`.

mod a2a;
mod a2a_push;
mod ag_ui;
mod agentscope;
mod agentx;
mod ai_sdk;
mod busy;
mod openai_responses;
mod viber;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use agentwire_core::{Message, Part, Role};
use agentwire_dialects::{DecodeError, Encoder};
use agentwire_runtime::{Agent, AskUser, RunHandle};
use axum::Router;
use axum::extract::Path;
use axum::http::{HeaderName, HeaderValue, StatusCode};
use axum::response::Response;

use crate::caller::Caller;
use crate::error::ApiError;
use crate::runs::{LiveRun, Reader, RunsError, Until, Waiting};
use crate::state::AppState;

type Shared = axum::extract::State<Arc<AppState>>;

/// The path parameters of a route (`name` when mounted under `/agents/{name}`).
type Params = Path<HashMap<String, String>>;

/// The dialect routes, at the root and under `/agents/{name}`.
pub(crate) fn router() -> Router<Arc<AppState>> {
    let routes = || {
        Router::new()
            .merge(ai_sdk::routes())
            .merge(agentx::routes())
            .merge(agentscope::routes())
            .merge(ag_ui::routes())
            .merge(a2a::routes())
            .merge(viber::routes())
            .merge(openai_responses::routes())
    };
    Router::new()
        .merge(routes())
        .nest("/agents/{name}", routes())
}

/// The agent the route names, or the default one.
fn agent<'a>(state: &'a AppState, params: &Params) -> Result<&'a Agent, RunsError> {
    state.agent(params.get("name").map(String::as_str))
}

/// `live`'s events after `after`, through `encoder`, with `headers`. `continues` says the
/// stream picks up a settled run just answered.
fn stream(
    state: &AppState,
    live: Arc<LiveRun>,
    after: u64,
    encoder: Box<dyn Encoder + Send>,
    headers: &[(&'static str, &'static str)],
) -> Response {
    let run_id = live.handle.id().to_string();
    let reader = state
        .runs
        .follow_live(live, after, Until::Settled, after > 0);
    stream_reader(reader, &run_id, encoder, headers)
}

/// A response streaming `reader` through `encoder`, with the dialect's headers and the run's id.
fn stream_reader(
    reader: Reader,
    run_id: &str,
    encoder: Box<dyn Encoder + Send>,
    headers: &[(&'static str, &'static str)],
) -> Response {
    let mut response = Response::new(crate::stream::body(reader, encoder));
    let map = response.headers_mut();
    for (name, value) in headers {
        map.insert(
            HeaderName::from_static(name),
            HeaderValue::from_static(value),
        );
    }
    if let Ok(value) = HeaderValue::from_str(run_id) {
        map.insert("x-agentwire-run-id", value);
    }
    response
}

/// The headers of an SSE stream in a dialect without its own.
const SSE_HEADERS: [(&str, &str); 2] = [
    ("content-type", "text/event-stream"),
    ("cache-control", "no-cache"),
];

/// 400 `invalid_request` for a body the dialect's request decoder refused.
fn bad_request(error: &DecodeError) -> ApiError {
    ApiError::new(
        StatusCode::BAD_REQUEST,
        "invalid_request",
        error.to_string(),
    )
}

/// The sequence number of the last event logged for `live` (0 when none is).
fn last_seq(live: &LiveRun) -> u64 {
    live.log.last_seq()
}

/// The parts among `parts` that answer what a run with this `output` still waits for, as one
/// user message:
/// approval responses for unanswered requests and outputs for calls without a result. (Clients
/// re-send their whole history, which repeats the calls, the requests and earlier answers.)
/// When none is there and the run waits for the user's answer to its question (an `ask_user`
/// call without a result), the message's text and files are that answer.
pub(crate) fn answers(output: &[Message], parts: &[Part]) -> Message {
    answers_with(output, parts, |_| false)
}

/// [`answers`] for a run waiting here: also the answers its sub-agents' runs wait for (their
/// requests are in their own output, not the run's), as the runtime hands them down.
pub(crate) fn answers_to(handle: &RunHandle, parts: &[Part]) -> Message {
    answers_with(&handle.output(), parts, |part| handle.expects(part))
}

/// [`answers`], taking as well the parts `nested` says a sub-agent waits for.
fn answers_with(output: &[Message], parts: &[Part], nested: impl Fn(&Part) -> bool) -> Message {
    let mut approvals = HashSet::new();
    let mut calls = HashSet::new();
    let mut questions = HashSet::new();
    for part in output.iter().flat_map(|message| &message.parts) {
        match part {
            Part::ApprovalRequest(request) => {
                approvals.insert(request.approval_id.clone());
            }
            Part::ApprovalResponse(response) => {
                approvals.remove(&response.approval_id);
            }
            Part::ToolCall(call) if call.tool_name == AskUser::NAME => {
                questions.insert(call.tool_call_id.clone());
            }
            Part::ToolCall(call) => {
                calls.insert(call.tool_call_id.clone());
            }
            Part::ToolResult(result) => {
                calls.remove(&result.tool_call_id);
                questions.remove(&result.tool_call_id);
            }
            Part::ToolError(error) => {
                calls.remove(&error.tool_call_id);
                questions.remove(&error.tool_call_id);
            }
            _ => {}
        }
    }
    let found: Vec<Part> = parts
        .iter()
        .filter(|part| match part {
            Part::ApprovalResponse(response) => {
                approvals.contains(&response.approval_id) || nested(part)
            }
            Part::ToolResult(result) => calls.contains(&result.tool_call_id) || nested(part),
            Part::ToolError(error) => calls.contains(&error.tool_call_id) || nested(part),
            _ => false,
        })
        .cloned()
        .collect();
    if found.is_empty() && !questions.is_empty() {
        let answer = parts
            .iter()
            .filter(|part| matches!(part, Part::Text(_) | Part::File(_)))
            .cloned()
            .collect();
        return Message::new(Role::User, answer);
    }
    Message::new(Role::User, found)
}

/// The session's waiting run, given what `input` answers of what it waits for: a reader of the
/// run from where it waited, and its id. `None` when the session has no run waiting or `input`
/// answers none of what it waits for (a new run then starts, or is refused as busy). The path
/// of every dialect whose request both starts runs and answers them (AgentScope, AgentX, and
/// the native `POST /v1/runs` for a question the run asked).
pub(crate) async fn answer_waiting(
    state: &AppState,
    caller: &Caller,
    session: &str,
    input: &[Message],
) -> Result<Option<(Reader, String)>, ApiError> {
    let parts: Vec<Part> = input
        .iter()
        .flat_map(|message| message.parts.iter().cloned())
        .collect();
    match state.runs.waiting(caller, session).await? {
        Some(Waiting::Here(live)) => {
            let found = answers_to(&live.handle, &parts);
            if found.parts.is_empty() {
                return Ok(None);
            }
            live.log.settled().await;
            let after = last_seq(&live);
            state.runs.answer(&live, found).await?;
            let run_id = live.handle.id().to_string();
            let reader = state.runs.follow_live(live, after, Until::Settled, true);
            Ok(Some((reader, run_id)))
        }
        Some(Waiting::Elsewhere(record)) => {
            // Another node executes it: the answer goes there through the store, and the run
            // streams on from the store and that node's notices.
            let run_id = record.id.to_string();
            let (_, output) = state.runs.status(&run_id, caller).await?;
            let found = answers(&output, &parts);
            if found.parts.is_empty() {
                return Ok(None);
            }
            let reader = state.runs.continue_elsewhere(*record, found).await?;
            Ok(Some((reader, run_id)))
        }
        None => Ok(None),
    }
}

/// Whether a reader that has read up to the end of `live`'s log has the whole stream for now.
fn settled(live: &LiveRun) -> bool {
    live.log
        .read_after(u64::MAX, None, live.handle.status(), |_| {})
        .complete
}
