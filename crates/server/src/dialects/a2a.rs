//! A2A 1.0 over JSON-RPC: the agent card at `/.well-known/agent-card.json` and `POST /a2a`
//! (`SendMessage`, `SendStreamingMessage`, `GetTask`, `CancelTask`, `SubscribeToTask`,
//! `ListTasks`).
//!
//! A task is a run and its `contextId` the session. A message naming a `taskId` answers that
//! task while it is `INPUT_REQUIRED` (approval responses, tool outputs), so the waiting run goes
//! on. `GetTask` answers the run as a task (its status and artifacts folded from its event log,
//! in memory or in the store; its history is the run's input), `CancelTask` cancels it and
//! answers it once it has ended (A2A has no "canceling" state), `SubscribeToTask` streams it
//! again from its `task` item. `SendMessage` with `returnImmediately` (0.3: `blocking: false`)
//! answers with the task as soon as it exists, and the run goes on with nobody connected.
//! `ListTasks` reads the runs list of `GET /v1/runs` (the caller's tasks of this agent, newest
//! first by creation, its cursor as `pageToken`; A2A's SDKs order by the last status change,
//! which would move a task between pages while a client pages). Every JSON-RPC failure is an error object with the standard code
//! (A2A's own for a task that is not there, not cancelable, or over), in an HTTP 200 answer, as
//! JSON-RPC clients expect.
//!
//! Every method works through any node, and the client cannot tell which one executes its task.
//! An answer to a task waiting on another node goes there through the store, and the task
//! streams on from the store and that node's live notices, as the other dialects' answers do
//! (a task waiting in the store with no process holding it is taken over here); a subscription
//! reads a task elsewhere the same way, and a cancel waits for the store to show the task's end.
//!
//! A message naming a `contextId` whose task is still working, or naming that working task by
//! its `taskId` (not `INPUT_REQUIRED`: that path answers the waiting task; and not a message of
//! answers, approval responses or tool outputs, which waits for the task to ask for them), goes
//! into the context's inbox ([`super::busy`]) with the mode in the request's `metadata.mode`
//! (`queue`, `steer`, `interrupt`, `rollback`, `reject`; the agent's `input_mode` when absent)
//! and its `messageId` as the client message id. A steer joins the working task: the stream is
//! that task (a `task` item, WORKING, then its updates from the moment of the post, WORKING
//! until it ends), where the steer is a status update whose message is the user's and each
//! outcome a status update's `metadata.agentwire.input`. A queued message (interrupt, rollback)
//! is a new task of the context: the stream is that task from its start, once it starts. Without
//! streaming, the answer is the task once settled (`returnImmediately` is not honoured: the task
//! of a queued message does not exist until it starts). `reject` is the JSON-RPC error of the
//! `409 session_busy` of before (`InvalidParamsError`, `session_busy` in its details).

use std::time::Duration;

use agentwire_core::{Event, EventKind, InputMode, Message, Part, Role, RunStatus, SessionId};
use agentwire_dialects::Encoder;
use agentwire_dialects::a2a::{
    self, A2aEncoder, A2aListRequest, A2aMethod, A2aTaskRequest, AgentDescription, AgentExtension,
    AgentSkill,
};
use agentwire_runtime::{InputError, RunStart};
use agentwire_store::{RunFilter, RunRecord};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{Map, Value, json};

use super::busy::{self, BusyMessage};
use super::{
    Params, SSE_HEADERS, Shared, agent, answers, last_seq, settled, stream, stream_reader,
};
use crate::body::JsonBody;
use crate::caller::Caller;
use crate::error::ApiError;
use crate::runs::{Found, LiveRun, Reader, RunsError, Until, Waiting};
use crate::state::AppState;
use crate::webhooks;

pub(super) fn routes() -> Router<std::sync::Arc<AppState>> {
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
    let agent = agent(&state, &params)?;
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
        extensions: vec![AgentExtension::communication_schema(agent.schema())],
        bearer_auth: !state.keys.is_empty(),
        description,
    })))
}

/// JSON-RPC 2.0 error codes (the standard ones, and A2A's `TaskNotFoundError`,
/// `TaskNotCancelableError`, `UnsupportedOperationError`).
const PARSE_ERROR: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;
const METHOD_NOT_FOUND: i64 = -32601;
const INVALID_PARAMS: i64 = -32602;
const INTERNAL_ERROR: i64 = -32603;
const TASK_NOT_FOUND: i64 = -32001;
const TASK_NOT_CANCELABLE: i64 = -32002;
const UNSUPPORTED_OPERATION: i64 = -32004;

/// A JSON-RPC error: the request it answers, its code and message, and the server's own error
/// code when there is one.
///
/// The server's code travels as A2A 1.0 wants error details (and as the a2a-sdk client reads
/// them, dropping a `data` of any other shape): `data` is a list led by a
/// `google.rpc.ErrorInfo` whose `reason` names the JSON-RPC error and whose `metadata` is
/// `{"code": …}`, which the SDK raises as the typed error's `data`.
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
        let code = match (error.status, error.code) {
            (StatusCode::NOT_FOUND, _) => TASK_NOT_FOUND,
            (_, TASK_NOT_CANCELABLE_CODE) => TASK_NOT_CANCELABLE,
            (_, "run_finished") => UNSUPPORTED_OPERATION,
            (status, _) if status.is_client_error() => INVALID_PARAMS,
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
        if let Some(code) = self.data {
            error["data"] = json!([{
                "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                "reason": reason(self.code),
                "domain": "a2a-protocol.org",
                "metadata": {"code": code},
            }]);
        }
        Json(json!({"jsonrpc": "2.0", "id": self.id, "error": error})).into_response()
    }
}

/// The `ErrorInfo.reason` of JSON-RPC error `code`, as A2A 1.0 names it.
fn reason(code: i64) -> &'static str {
    match code {
        PARSE_ERROR => "PARSE_ERROR",
        INVALID_REQUEST => "INVALID_REQUEST",
        METHOD_NOT_FOUND => "METHOD_NOT_FOUND",
        INVALID_PARAMS => "INVALID_PARAMS",
        TASK_NOT_FOUND => "TASK_NOT_FOUND",
        TASK_NOT_CANCELABLE => "TASK_NOT_CANCELABLE",
        UNSUPPORTED_OPERATION => "UNSUPPORTED_OPERATION",
        _ => "INTERNAL_ERROR",
    }
}

async fn rpc(
    State(state): Shared,
    params: Params,
    // Authentication and the body's type and limit are HTTP matters, answered as the other
    // routes do.
    caller: Caller,
    JsonBody(bytes): JsonBody,
) -> Result<Response, ApiError> {
    let request = match classify(&bytes) {
        Ok(request) => request,
        Err(error) => return Ok(error.into_response()),
    };
    let (id, answered) = match request {
        Call::Push { id, method, params } => {
            let answered = super::a2a_push::answer(&state, &caller, &method, &params).await;
            return Ok(match answered {
                Ok(result) => {
                    Json(json!({"jsonrpc": "2.0", "id": id, "result": result})).into_response()
                }
                Err(super::a2a_push::PushError::Params(message)) => {
                    RpcError::new(id, INVALID_PARAMS, message).into_response()
                }
                Err(super::a2a_push::PushError::Refused(error)) => {
                    RpcError::refused(id, error).into_response()
                }
            });
        }
        Call::Send(request) => (
            request.id.clone(),
            send(&state, &params, &caller, request).await,
        ),
        Call::Task(request) => (
            request.id.clone(),
            on_task(&state, &params, &caller, request).await,
        ),
        Call::List(request) => (
            request.id.clone(),
            list_tasks(&state, &params, &caller, request).await,
        ),
    };
    Ok(match answered {
        Ok(response) => response,
        Err(error) => RpcError::refused(id, error).into_response(),
    })
}

/// A decoded JSON-RPC request: a message to send, a task to read, cancel or follow, or a page
/// of tasks to list.
enum Call {
    Send(a2a::A2aRequest),
    Task(A2aTaskRequest),
    List(A2aListRequest),
    /// A push-notification config method (`a2a_push`).
    Push {
        id: Value,
        method: String,
        params: Value,
    },
}

/// Decodes a request, or answers it with the JSON-RPC error that says what is wrong with it:
/// not JSON, not a JSON-RPC request, a method this server does not have, or bad params.
fn classify(bytes: &[u8]) -> Result<Call, RpcError> {
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
    if super::a2a_push::METHODS.contains(&method.as_str()) {
        return Ok(Call::Push {
            id,
            method: method.clone(),
            params: value.get("params").cloned().unwrap_or(Value::Null),
        });
    }
    let Ok(known) = serde_json::from_value::<A2aMethod>(Value::String(method.clone())) else {
        let message = format!(
            "no method '{method}'; this server has SendMessage, SendStreamingMessage, GetTask, \
             CancelTask, SubscribeToTask, ListTasks and the TaskPushNotificationConfig methods"
        );
        return Err(RpcError::new(id, METHOD_NOT_FOUND, message));
    };
    let invalid = |error: agentwire_dialects::DecodeError| {
        RpcError::new(id.clone(), INVALID_PARAMS, error.to_string())
    };
    if known.sends_message() {
        a2a::decode_request(bytes).map(Call::Send).map_err(invalid)
    } else if known == A2aMethod::ListTasks {
        a2a::decode_list_request(bytes)
            .map(Call::List)
            .map_err(invalid)
    } else {
        a2a::decode_task_request(bytes)
            .map(Call::Task)
            .map_err(invalid)
    }
}

/// Starts the run the message asks for, or answers the task it names, and responds as the
/// method says: the stream, or the task once the run is settled.
async fn send(
    state: &AppState,
    params: &Params,
    owner: &Caller,
    request: a2a::A2aRequest,
) -> Result<Response, ApiError> {
    let agent = agent(state, params)?;
    state.check_message_count(request.input.len())?;
    let mut snapshot = None;
    let (live, after) = match request.task_id.clone() {
        Some(task_id) => {
            let context_id = request.context_id.as_deref();
            if let Some(session) = working_task(state, agent, owner, &task_id, &request).await? {
                check_context(&task_id, Some(&session), context_id)?;
                return send_busy(state, agent, owner, &session, request).await;
            }
            let live = match settled_task(state, owner, &task_id).await? {
                Waiting::Here(live) => live,
                Waiting::Elsewhere(record) => {
                    check_context(&task_id, record.session_id.as_ref(), context_id)?;
                    return answer_elsewhere(state, owner, *record, request).await;
                }
            };
            check_context(&task_id, live.handle.session_id(), context_id)?;
            let mut webhook = None;
            if let Some(config) = &request.push_config {
                let new = super::a2a_push::new_webhook(config, live.handle.id().clone());
                webhook = Some(webhooks::create(state, owner, new).await?);
            }
            let after = last_seq(&live);
            // A2A task streams begin with the task, a follow-up's too: the task as it waits.
            let task = task_of(&live, encoder_for(&live, Value::Null)).await;
            snapshot = Some((task, live.handle.status()));
            let message = answer_of(&live.handle.output(), request.input);
            if let Err(error) = state.runs.answer(&live, message).await {
                // A refused message leaves no config behind.
                if let Some(webhook) = &webhook {
                    webhooks::discard(state, owner, webhook).await;
                }
                return Err(error.into());
            }
            (live, after)
        }
        None => {
            let session = request.context_id.clone().map(SessionId::from);
            let mut start = RunStart::new(request.input.clone());
            // A push config given with the message is stored before the task's first status
            // change, so it hears every one: the task's id is minted here for it.
            let mut webhook = None;
            if let Some(config) = &request.push_config {
                let run_id = agent.new_run_id();
                start = start.with_run_id(run_id.clone());
                let new = super::a2a_push::new_webhook(config, run_id);
                webhook = Some(webhooks::create_for_new_run(state, owner, new).await?);
            }
            let started = state.runs.start(agent, owner, session.clone(), start).await;
            // A task that was not created has no config: its webhook goes.
            if let (Err(_), Some(webhook)) = (&started, &webhook) {
                webhooks::discard(state, owner, webhook).await;
            }
            match started {
                Ok(live) => (live, 0),
                Err(RunsError::SessionBusy { .. }) if session.is_some() => {
                    let session = session.unwrap_or_else(|| SessionId::from(""));
                    return send_busy(state, agent, owner, &session, request).await;
                }
                Err(error) => return Err(error.into()),
            }
        }
    };
    let encoder = encoder_for(&live, request.id.clone());
    if request.method == A2aMethod::SendStreamingMessage {
        let encoder = TaskFirst::new(&request.id, snapshot, encoder);
        return Ok(stream(state, live, after, Box::new(encoder), &SSE_HEADERS));
    }
    if request.return_immediately {
        // The task at once, but as it exists: its first event (or the answer's) logged.
        live.log.past(after).await;
    } else {
        settled_after(&live, after).await;
    }
    let task = task_of(&live, encoder).await;
    Ok(task_result(request.id, task))
}

/// A message to a context whose task works: into the context's inbox (see the module docs).
async fn send_busy(
    state: &AppState,
    agent: &agentwire_runtime::Agent,
    owner: &Caller,
    session: &SessionId,
    request: a2a::A2aRequest,
) -> Result<Response, ApiError> {
    let mode = busy::mode_in(request.metadata.get("mode"), "metadata.mode")?;
    let Some(message) = request.input.into_iter().next() else {
        return Err(RunsError::SessionBusy {
            session: session.to_string(),
            run: None,
        }
        .into());
    };
    let busy_message = BusyMessage {
        client_message_id: message.id.as_ref().map(ToString::to_string),
        message,
        mode,
    };
    let client_message_id = busy_message.client_message_id.clone();
    let steer = busy_message.mode.unwrap_or(agent.input_mode()) == InputMode::Steer;
    let answer = busy::post_busy(state, agent, owner, session, busy_message).await?;
    if request.method == A2aMethod::SendStreamingMessage {
        if steer && !matches!(answer.reader, Reader::Posted(_)) {
            // The client had the task's earlier items: it gets the task as working, then the
            // rest.
            let task = json!({"id": answer.run_id, "contextId": session.as_str(),
                              "status": {"state": "TASK_STATE_WORKING"}});
            let encoder = task_encoder(&answer.run_id, Some(session), request.id.clone());
            let snapshot = Some((task, RunStatus::InProgress));
            let encoder = TaskFirst::new(&request.id, snapshot, encoder);
            return Ok(stream_reader(
                answer.reader,
                &answer.run_id,
                Box::new(encoder),
                &SSE_HEADERS,
            ));
        }
        let encoder = A2aEncoder::answering(request.id.clone());
        return Ok(stream_reader(
            answer.reader,
            &answer.run_id,
            Box::new(encoder),
            &SSE_HEADERS,
        ));
    }
    read_through(answer.reader).await;
    let run_id = match &client_message_id {
        Some(id) => state
            .runs
            .inbox_entry(owner, session, id)
            .await?
            .and_then(|entry| entry.run_id)
            .map(|run_id| run_id.to_string()),
        None => None,
    }
    .unwrap_or(answer.run_id);
    let task = match state.runs.find(&run_id, owner).await? {
        Found::Live(live) => task_of(&live, encoder_for(&live, Value::Null)).await,
        Found::Stored(record) => stored_task(state, &record).await?,
    };
    Ok(task_result(request.id, task))
}

/// The context of task `task_id` when it works (submitted or working, here or on another node)
/// and `request` is a new message for it rather than an answer (it holds no approval response
/// and no tool output): such a message goes into the context's inbox, as one naming the context
/// does. `None` for a task that waits or has ended, or for an answer, which waits for the task
/// to ask for it ([`settled_task`]).
async fn working_task(
    state: &AppState,
    agent: &agentwire_runtime::Agent,
    owner: &Caller,
    task_id: &str,
    request: &a2a::A2aRequest,
) -> Result<Option<SessionId>, ApiError> {
    let answers = request
        .input
        .iter()
        .flat_map(|message| &message.parts)
        .any(|part| {
            matches!(
                part,
                Part::ApprovalResponse(_) | Part::ToolResult(_) | Part::ToolError(_)
            )
        });
    if answers {
        return Ok(None);
    }
    let found = state.runs.find(task_id, owner).await?;
    let status = found.status();
    if status.is_terminal() || matches!(status, RunStatus::Awaiting(_)) {
        return Ok(None);
    }
    // Each agent is an A2A agent of its own, with only its own tasks.
    if found.agent() != agent.name() {
        return Err(ApiError::not_found("task", task_id));
    }
    Ok(found.session_id().cloned())
}

/// The task a follow-up names, once it is settled, as its answer must find it (a task still
/// working is waited for): here (taken over from the store if it waits there with no process
/// holding it), or waiting on another node. A task that has ended takes no answer.
async fn settled_task(
    state: &AppState,
    owner: &Caller,
    task_id: &str,
) -> Result<Waiting, RunsError> {
    loop {
        let record = match state.runs.find(task_id, owner).await? {
            Found::Live(live) => {
                live.log.settled().await;
                return Ok(Waiting::Here(live));
            }
            Found::Stored(record) => record,
        };
        if record.status.is_terminal() {
            return Err(RunsError::RunFinished(task_id.to_owned()));
        }
        if let Some(live) = state.runs.adopt(&record).await? {
            return Ok(Waiting::Here(live));
        }
        if matches!(record.status, RunStatus::Awaiting(_)) {
            return Ok(Waiting::Elsewhere(record));
        }
        // Still working on another node: read on from the store until it settles.
        let after = record.last_seq;
        let reader = state
            .runs
            .follow_found(Found::Stored(record), after, Until::Settled);
        read_through(reader).await;
    }
}

/// 400 unless the follow-up's `contextId`, if it names one, is the task's (its run's session).
fn check_context(
    task_id: &str,
    session: Option<&SessionId>,
    context_id: Option<&str>,
) -> Result<(), ApiError> {
    match context_id {
        Some(context_id) if session.map(SessionId::as_str) != Some(context_id) => {
            Err(ApiError::new(
                StatusCode::BAD_REQUEST,
                "context_mismatch",
                format!("task '{task_id}' is not in context '{context_id}'"),
            ))
        }
        _ => Ok(()),
    }
}

/// What a follow-up gives a task whose run has `output`: the answers the run waits for;
/// anything else (a reply to a question) goes as sent, and the runtime says whether the run
/// takes it.
fn answer_of(output: &[Message], input: Vec<Message>) -> Message {
    let parts: Vec<_> = input.iter().flat_map(|m| m.parts.clone()).collect();
    let found = answers(output, &parts);
    match input.into_iter().next() {
        Some(sent) if found.parts.is_empty() => sent,
        _ => found,
    }
}

/// Answers a task that waits on another node as one here is answered: the answer goes to that
/// node through the store, and the response (the stream from where the task waited, beginning
/// with the task as it waited; or the task once settled again) is read from the store and that
/// node's live notices.
async fn answer_elsewhere(
    state: &AppState,
    owner: &Caller,
    record: RunRecord,
    request: a2a::A2aRequest,
) -> Result<Response, ApiError> {
    let task_id = record.id.to_string();
    let (_, output) = state.runs.status(&task_id, owner).await?;
    let snapshot = stored_task(state, &record).await?;
    let message = answer_of(&output, request.input);
    let reader = state
        .runs
        .continue_elsewhere(record.clone(), message)
        .await?;
    if request.method == A2aMethod::SendStreamingMessage {
        let encoder = task_encoder(&task_id, record.session_id.as_ref(), request.id.clone());
        let encoder = TaskFirst::new(&request.id, Some((snapshot, record.status)), encoder);
        return Ok(stream_reader(
            reader,
            &task_id,
            Box::new(encoder),
            &SSE_HEADERS,
        ));
    }
    if !request.return_immediately {
        read_through(reader).await;
    }
    let task = stored_task(state, &record).await?;
    Ok(task_result(request.id, task))
}

/// Reads `reader` to where its stream would end.
async fn read_through(mut reader: Reader) {
    while reader.next(|_| {}).await {}
}

/// The answer to JSON-RPC request `id` that is `task`.
fn task_result(id: Value, task: Value) -> Response {
    Json(json!({"jsonrpc": "2.0", "id": id, "result": {"task": task}})).into_response()
}

/// An A2A encoder whose stream begins with `task`, when set: the snapshot a follow-up's
/// stream starts with (the encoder writes the `task` item only for `run_created`), with the
/// run status it shows, which the items after it that report no new status repeat.
struct TaskFirst {
    task: Option<Vec<u8>>,
    encoder: A2aEncoder,
}

impl TaskFirst {
    /// `encoder`'s stream for JSON-RPC request `request_id`, beginning with `task` (in its run
    /// status) if set.
    fn new(request_id: &Value, task: Option<(Value, RunStatus)>, encoder: A2aEncoder) -> Self {
        match task {
            Some((task, status)) => {
                let item = json!({"jsonrpc": "2.0", "id": request_id, "result": {"task": task}});
                Self {
                    task: Some(format!("data: {item}\n\n").into_bytes()),
                    encoder: encoder.continuing(status),
                }
            }
            None => Self {
                task: None,
                encoder,
            },
        }
    }
}

impl Encoder for TaskFirst {
    fn encode(&mut self, event: &Event, out: &mut Vec<u8>) {
        if let Some(task) = self.task.take() {
            out.extend_from_slice(&task);
        }
        self.encoder.encode(event, out);
    }

    fn finish(&mut self, out: &mut Vec<u8>) {
        if let Some(task) = self.task.take() {
            out.extend_from_slice(&task);
        }
        self.encoder.finish(out);
    }
}

/// Waits until `live` is settled with an event after `after` (an answered run must move first).
async fn settled_after(live: &LiveRun, after: u64) {
    let mut changes = live.log.subscribe();
    loop {
        changes.borrow_and_update();
        let moved = after == 0 || live.log.last_seq() > after || live.handle.status().is_terminal();
        if settled(live) && moved {
            return;
        }
        if changes.changed().await.is_err() {
            return;
        }
    }
}

/// The task as it stands: the run's stream items folded as an A2A client folds them (see
/// [`fold_task`]).
async fn task_of(live: &LiveRun, mut encoder: A2aEncoder) -> Value {
    let mut out = Vec::new();
    crate::runs::read_all(live, |event| encoder.encode(event, &mut out)).await;
    encoder.finish(&mut out);
    fold_task(&out)
}

/// The task a run's encoded stream items make: the first `task`, then each status replacing
/// the status, each artifact chunk appended to its artifact. The encoder stays the one place
/// where parts become A2A parts; this reads its output once.
fn fold_task(out: &[u8]) -> Value {
    let mut task = Map::new();
    let mut artifacts: Vec<Value> = Vec::new();
    for mut item in items(out) {
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

/// The JSON-RPC responses in an encoder's SSE output.
fn items(out: &[u8]) -> impl Iterator<Item = Value> + '_ {
    out.split(|&byte| byte == b'\n')
        .filter_map(|line| line.strip_prefix(b"data: "))
        .filter_map(|data| serde_json::from_slice::<Value>(data).ok())
}

/// The encoder answering JSON-RPC request `request_id` about `live`'s task.
fn encoder_for(live: &LiveRun, request_id: Value) -> A2aEncoder {
    task_encoder(
        live.handle.id().as_str(),
        live.handle.session_id(),
        request_id,
    )
}

/// The encoder answering JSON-RPC request `request_id` about task `task_id`, whose context is
/// its run's session (the task itself when it has none).
fn task_encoder(task_id: &str, session: Option<&SessionId>, request_id: Value) -> A2aEncoder {
    let context_id = session.map_or(task_id, SessionId::as_str);
    A2aEncoder::new(request_id, task_id, context_id)
}

/// How long a cancel of a task another node executes waits for the task to end there before
/// it answers the task as it stands.
const CANCELED_WITHIN: Duration = Duration::from_secs(10);

/// The `code` of a cancel refused because the task is over (→ `TaskNotCancelableError`).
const TASK_NOT_CANCELABLE_CODE: &str = "task_not_cancelable";

/// `GetTask`, `CancelTask` and `SubscribeToTask` of one of this agent's tasks.
async fn on_task(
    state: &AppState,
    params: &Params,
    owner: &Caller,
    request: A2aTaskRequest,
) -> Result<Response, ApiError> {
    let agent = agent(state, params)?;
    let task_id = request.task_id.as_str();
    let found = state.runs.find(task_id, owner).await?;
    let (run_agent, status) = (found.agent(), found.status());
    // Each agent is an A2A agent of its own, with only its own tasks.
    if run_agent != agent.name() {
        return Err(ApiError::not_found("task", task_id));
    }
    match request.method {
        A2aMethod::CancelTask if status.is_terminal() => {
            return Err(ApiError::new(
                StatusCode::CONFLICT,
                TASK_NOT_CANCELABLE_CODE,
                format!(
                    "task '{task_id}' is over ({}): nothing to cancel",
                    status.name()
                ),
            ));
        }
        A2aMethod::CancelTask => match &found {
            Found::Live(live) => {
                let after = last_seq(live);
                live.handle
                    .cancel()
                    .map_err(|refusal| RunsError::Input(InputError::Refused(refusal)))?;
                settled_after(live, after).await;
            }
            Found::Stored(record) => {
                state.runs.cancel_elsewhere(record).await?;
                // Answered once it has ended, as here: its node heard the cancel (or it was
                // taken over and canceled here), and the store shows the end.
                let ended = state
                    .runs
                    .follow(task_id, owner, record.last_seq, Until::Ended)
                    .await?;
                let _ = tokio::time::timeout(CANCELED_WITHIN, read_through(ended)).await;
            }
        },
        A2aMethod::SubscribeToTask => {
            if status.is_terminal() {
                return Err(ApiError::new(
                    StatusCode::CONFLICT,
                    "run_finished",
                    format!("task '{task_id}' is over; GetTask reads it"),
                ));
            }
            // From the start: the stream begins with the `task`, as A2A wants. A task another
            // node executes streams from the store and that node's live notices.
            let encoder = task_encoder(task_id, found.session_id(), request.id);
            let reader = state.runs.follow_found(found, 0, Until::Settled);
            return Ok(stream_reader(
                reader,
                task_id,
                Box::new(encoder),
                &SSE_HEADERS,
            ));
        }
        _ => {}
    }
    // The history is the run's input: still in memory while the run is, else in its session.
    let (mut task, input) = match found {
        Found::Live(live) => {
            let task = task_of(&live, encoder_for(&live, Value::Null)).await;
            let input: Vec<Message> = live
                .handle
                .messages()
                .into_iter()
                .take_while(|message| message.role != Role::Assistant)
                .collect();
            (task, input)
        }
        Found::Stored(record) => {
            let input = state.store.run_input(&record).await?;
            (stored_task(state, &record).await?, input)
        }
    };
    with_history(&mut task, &input, task_id, request.history_length);
    Ok(Json(json!({"jsonrpc": "2.0", "id": request.id, "result": task})).into_response())
}

/// Sets the task's `history` to its run's `input`, the last `keep` messages of it if set.
fn with_history(task: &mut Value, input: &[Message], task_id: &str, keep: Option<u32>) {
    let context_id = task["contextId"].as_str().unwrap_or(task_id).to_owned();
    let keep = keep.map_or(usize::MAX, |keep| {
        usize::try_from(keep).unwrap_or(usize::MAX)
    });
    let history: Vec<Value> = input
        .iter()
        .enumerate()
        .skip(input.len().saturating_sub(keep))
        .map(|(index, message)| history_message(message, index, task_id, &context_id))
        .collect();
    task["history"] = Value::Array(history);
}

/// `ListTasks`' page size when the client does not say (A2A 1.0).
const DEFAULT_PAGE_SIZE: i32 = 50;

/// `ListTasks`: a page of the caller's tasks of this agent, newest first, each as `GetTask`
/// shows it without its artifacts unless `includeArtifacts`, with the total that the filter
/// holds.
async fn list_tasks(
    state: &AppState,
    params: &Params,
    owner: &Caller,
    request: A2aListRequest,
) -> Result<Response, ApiError> {
    let agent = agent(state, params)?;
    let page_size = request.page_size.unwrap_or(DEFAULT_PAGE_SIZE);
    let limit = u32::try_from(page_size)
        .ok()
        .filter(|size| (1..=crate::run_list::MAX_LIMIT).contains(size))
        .ok_or_else(|| {
            ApiError::new(
                StatusCode::BAD_REQUEST,
                "invalid_page_size",
                format!(
                    "pageSize must be between 1 and {}",
                    crate::run_list::MAX_LIMIT
                ),
            )
        })?;
    let session = request.context_id.clone().map(SessionId::from);
    let statuses = request.statuses.clone().unwrap_or_default();
    let filter = RunFilter {
        owner: owner.owner_id(),
        session_id: session.as_ref(),
        agent: Some(agent.name()),
        statuses: &statuses,
    };
    // A state no run is ever in (AUTH_REQUIRED) holds no task.
    let (page, total) = match &request.statuses {
        Some(statuses) if statuses.is_empty() => (crate::run_list::RunPage::default(), 0),
        _ => {
            let page =
                crate::run_list::list_page(state, &filter, request.page_token.as_deref(), limit)
                    .await?;
            (page, state.store.count_runs(&filter).await?)
        }
    };
    let mut tasks = Vec::with_capacity(page.runs.len());
    for record in &page.runs {
        let mut task = stored_task(state, record).await?;
        if !request.include_artifacts
            && let Some(task) = task.as_object_mut()
        {
            task.remove("artifacts");
        }
        let input = state.store.run_input(record).await?;
        with_history(
            &mut task,
            &input,
            record.id.as_str(),
            request.history_length,
        );
        tasks.push(task);
    }
    let result = json!({
        "tasks": tasks,
        "nextPageToken": page.next.unwrap_or_default(),
        "pageSize": page_size,
        "totalSize": total,
    });
    Ok(Json(json!({"jsonrpc": "2.0", "id": request.id, "result": result})).into_response())
}

/// The task of a run only the store knows, folded from its event log.
async fn stored_task(state: &AppState, record: &RunRecord) -> Result<Value, ApiError> {
    let mut encoder = task_encoder(record.id.as_str(), record.session_id.as_ref(), Value::Null);
    let mut out = Vec::new();
    state
        .runs
        .each_stored_event(&record.id, |event| {
            encoder.encode(event, &mut out);
        })
        .await?;
    encoder.finish(&mut out);
    Ok(fold_task(&out))
}

/// A message of the task's history as an A2A `Message`, its parts made by the encoder.
fn history_message(message: &Message, index: usize, task_id: &str, context_id: &str) -> Value {
    let mut encoder = A2aEncoder::new(Value::Null, task_id, context_id);
    let mut out = Vec::new();
    let whole = Event::new(
        0,
        EventKind::MessageComplete {
            message: message.clone(),
        },
    );
    encoder.encode(&whole, &mut out);
    encoder.finish(&mut out);
    let parts: Vec<Value> = items(&out)
        .filter_map(
            |mut item| match item["result"]["artifactUpdate"]["artifact"]["parts"].take() {
                Value::Array(parts) => Some(parts),
                _ => None,
            },
        )
        .flatten()
        .collect();
    let message_id = message
        .id
        .as_ref()
        .map_or_else(|| format!("{task_id}-input-{index}"), ToString::to_string);
    let role = match message.role {
        Role::Assistant => "ROLE_AGENT",
        _ => "ROLE_USER",
    };
    json!({
        "messageId": message_id,
        "contextId": context_id,
        "taskId": task_id,
        "role": role,
        "parts": parts,
    })
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
