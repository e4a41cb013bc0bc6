//! AG-UI's `POST /ag-ui`: a `RunAgentInput` (the thread's whole history, frontend tools),
//! answered with AG-UI events for the run the request names. The thread is the session, so only
//! the messages after the last assistant message are new; frontend tools are the run's client
//! tools, and generation settings in `forwardedProps` the run's settings.
//!
//! A request that answers the thread's waiting run (a `tool` message with a frontend tool's
//! output, or `resume` entries answering its approval interrupts) continues that run rather than
//! starting one, streamed as the new AG-UI run the request names: AG-UI has one run per request.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use agentwire_core::{Part, Role, RunId, ToolSpec};
use agentwire_dialects::ag_ui::{self, AgUiEncoder};
use agentwire_runtime::RunStart;
use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::post;
use serde_json::json;

use super::{Dialects, Params, SSE_HEADERS, Shared, answers, bad_request, last_seq};
use crate::auth::Caller;
use crate::body::JsonBody;
use crate::error::ApiError;
use crate::state::LiveRun;

/// Each thread's last run, so a request answering it finds the run that waits.
#[derive(Debug, Default)]
pub(super) struct Threads(Mutex<HashMap<(Caller, String), RunId>>);

impl Threads {
    fn get(&self, owner: &Caller, thread_id: &str) -> Option<RunId> {
        let threads = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        threads.get(&(owner.clone(), thread_id.to_owned())).cloned()
    }

    fn set(&self, owner: &Caller, thread_id: &str, run_id: RunId) {
        let mut threads = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        threads.insert((owner.clone(), thread_id.to_owned()), run_id);
    }
}

pub(super) fn routes() -> Router<Dialects> {
    Router::new().route("/ag-ui", post(run))
}

async fn run(
    State(state): Shared,
    params: Params,
    caller: Caller,
    JsonBody(bytes): JsonBody,
) -> Result<Response, ApiError> {
    let input = ag_ui::decode_request(&bytes).map_err(|error| bad_request(&error))?;
    state.check_count(input.messages.len())?;
    let agent = state.agent(&params)?;
    let encoder = AgUiEncoder::for_input(&input);
    let thread_id = input.thread_id.to_string();
    if let Some(live) = waiting_run(&state, &caller, &thread_id).await {
        // The thread's last turn onwards: the assistant message holding the tool messages, and
        // the user message holding the `resume` answers.
        let turn_from = input
            .messages
            .iter()
            .rposition(|message| message.role == Role::Assistant)
            .unwrap_or(0);
        let parts: Vec<Part> = input.messages[turn_from..]
            .iter()
            .flat_map(|message| message.parts.clone())
            .collect();
        let found = answers(&live, &parts);
        if found.parts.is_empty() {
            return Err(ApiError::new(
                StatusCode::CONFLICT,
                "session_busy",
                format!(
                    "thread '{thread_id}' has run '{}' waiting; answer its tool calls or interrupts first",
                    live.handle.id()
                ),
            ));
        }
        live.log.settled().await;
        let after = last_seq(&live);
        live.handle.input(found)?;
        return Ok(state.stream(live, after, Box::new(encoder), &SSE_HEADERS));
    }
    let new_from = input
        .messages
        .iter()
        .rposition(|message| message.role == Role::Assistant)
        .map_or(0, |last| last + 1);
    let messages = input.messages[new_from..].to_vec();
    let tools: Vec<ToolSpec> = input
        .tools
        .iter()
        .map(|tool| {
            let parameters = tool
                .parameters
                .clone()
                .unwrap_or_else(|| json!({"type": "object", "properties": {}}));
            ToolSpec::new(&tool.name, &tool.description, parameters)
        })
        .collect();
    let mut start = RunStart::new(messages).with_settings(input.settings);
    if !tools.is_empty() {
        start = start.with_client_tools(tools);
    }
    let live = state
        .app
        .start(agent, &caller, Some(input.thread_id), start)
        .await?;
    state
        .threads
        .set(&caller, &thread_id, live.handle.id().clone());
    Ok(state.stream(live, 0, Box::new(encoder), &SSE_HEADERS))
}

/// The thread's last run, if it waits for the client.
async fn waiting_run(state: &Dialects, owner: &Caller, thread_id: &str) -> Option<Arc<LiveRun>> {
    let run_id = state.threads.get(owner, thread_id)?;
    let live = state.app.live_run(run_id.as_str(), owner).await.ok()?;
    matches!(live.handle.status(), agentwire_core::RunStatus::Awaiting(_)).then_some(live)
}
