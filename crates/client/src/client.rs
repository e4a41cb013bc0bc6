//! [`Client`]: one agentwire server, its native API as typed calls. Runs are
//! streamed by [`RunStream`]; everything else is a JSON request and answer.

use std::time::Duration;

use agentwire_core::{
    ErrorInfo, GenerationSettings, InputMode, Message, RunId, RunStatus, SessionId, ToolSpec, Usage,
};
use agentwire_dialects::native::RunRequest;
use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderValue};
use reqwest::{RequestBuilder, Response};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::ClientError;
use crate::stream::RunStream;

/// A client of one agentwire server. Cheap to clone: clones share one connection pool.
#[derive(Clone, Debug)]
pub struct Client {
    http: reqwest::Client,
    base: reqwest::Url,
    authorization: Option<HeaderValue>,
    pub(crate) reconnect: Reconnect,
}

/// How a [`RunStream`] resumes a broken stream: up to `max_attempts` reconnects in a row (the
/// count starts again once an event arrives), waiting `backoff`, doubled per attempt, before
/// each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reconnect {
    /// Reconnects in a row before giving up with [`ClientError::Disconnected`]; 0 never resumes.
    pub max_attempts: u32,
    /// The wait before the first reconnect.
    pub backoff: Duration,
}

impl Default for Reconnect {
    /// 5 attempts, from 100 ms (3.1 s of waiting in all).
    fn default() -> Self {
        Self {
            max_attempts: 5,
            backoff: Duration::from_millis(100),
        }
    }
}

/// What to start: the native `POST /v1/runs` body plus the tools this client executes itself.
#[derive(Clone, Debug, PartialEq)]
pub struct StartRun {
    /// Agent, session and input messages.
    pub request: RunRequest,
    /// Tools the model may call that the client runs (answered with
    /// [`RunStream::tool_output`]).
    pub tools: Vec<ToolSpec>,
}

impl StartRun {
    /// A run of the default agent in a new session, with one input message.
    pub fn new(input: Message) -> Self {
        Self {
            request: RunRequest {
                agent: None,
                session_id: None,
                input: vec![input],
                background: false,
                settings: GenerationSettings::default(),
            },
            tools: Vec::new(),
        }
    }

    /// Runs this agent instead of the server's default.
    pub fn agent(mut self, agent: impl Into<String>) -> Self {
        self.request.agent = Some(agent.into());
        self
    }

    /// Continues this session: the run sees its history (the next message of a conversation).
    pub fn session(mut self, session_id: impl Into<SessionId>) -> Self {
        self.request.session_id = Some(session_id.into());
        self
    }

    /// Sets the run's generation settings (model, temperature, …), which override the agent's.
    pub fn settings(mut self, settings: GenerationSettings) -> Self {
        self.request.settings = settings;
        self
    }

    /// Offers the model a tool this client executes.
    pub fn tool(mut self, tool: ToolSpec) -> Self {
        self.tools.push(tool);
        self
    }
}

/// The body `POST /v1/runs` reads.
#[derive(Serialize)]
struct RunBody<'a> {
    #[serde(flatten)]
    request: &'a RunRequest,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    tools: &'a [ToolSpec],
}

/// An agent as `GET /v1/agents` lists it.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct AgentSummary {
    /// Its name, what [`StartRun::agent`] takes.
    pub name: String,
    /// What it is for.
    #[serde(default)]
    pub description: String,
}

/// An agent as `GET /v1/agents/{name}` describes it.
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct AgentCard {
    /// Its name.
    pub name: String,
    /// What it is for.
    #[serde(default)]
    pub description: String,
    /// Its brain, e.g. `openai gpt-4o-mini` or `demo`.
    #[serde(default)]
    pub brain: String,
    /// The tools it may call.
    #[serde(default)]
    pub tools: Vec<ToolSpec>,
    /// Its communication schema, as JSON.
    #[serde(default)]
    pub schema: Value,
}

/// A run as the server shows it.
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct RunInfo {
    /// The run.
    pub id: RunId,
    /// Its session.
    #[serde(default)]
    pub session_id: Option<SessionId>,
    /// The agent running it.
    pub agent: String,
    /// Where it is in its life.
    #[serde(flatten)]
    pub status: RunStatus,
    /// Its communication-schema state, e.g. `awaiting_approval`.
    #[serde(default)]
    pub state: String,
    /// Tokens used so far.
    #[serde(default)]
    pub usage: Option<Usage>,
    /// Why it did not complete, when it did not.
    #[serde(default)]
    pub error: Option<ErrorInfo>,
}

/// A run with its output messages (`GET /v1/runs/{id}`).
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct RunOutput {
    /// The run.
    pub run: RunInfo,
    /// What it produced.
    pub output: Vec<Message>,
}

/// Which runs [`Client::runs`] lists: every field narrows the list when set. The default is
/// the caller's runs, newest first, the server's page size.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RunQuery {
    /// Only this session's runs.
    pub session_id: Option<SessionId>,
    /// Only this agent's runs.
    pub agent: Option<String>,
    /// Only runs in these statuses, by name (`in_progress`, `awaiting`, `completed`, …).
    pub statuses: Vec<String>,
    /// At most this many runs (1 to 100; the server's default is 20).
    pub limit: Option<u32>,
    /// The page after this one: the [`RunPage::next`] of the page before.
    pub cursor: Option<String>,
}

/// One page of runs (`GET /v1/runs`).
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct RunPage {
    /// The runs, newest first.
    pub runs: Vec<RunInfo>,
    /// The cursor of the next page ([`RunQuery::cursor`]); `None` on the last page.
    #[serde(default)]
    pub next: Option<String>,
}

/// A session's history (`GET /v1/sessions/{id}`).
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct Session {
    /// The session.
    pub id: SessionId,
    /// Every message of it, oldest first.
    pub messages: Vec<Message>,
}

/// A message sent into a session (`POST /v1/sessions/{id}/messages`), busy or not.
#[derive(Clone, Debug, Serialize)]
pub struct SessionMessage {
    /// The user's message.
    pub message: Message,
    /// What to do if the session is busy; the agent's default (`input_mode`) when `None`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode: Option<InputMode>,
    /// The client's name for the message: sending it again is answered as it stands.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_message_id: Option<String>,
}

/// Where a message sent into a session stands.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct InboxEntry {
    /// The client's name for it (made up by the server when the client gave none).
    pub client_message_id: String,
    /// Its place in the session's inbox, from 1.
    pub position: i64,
    /// `queued`, `starting`, `steering`, `delivered` or `not_delivered`.
    pub outcome: String,
    /// The run it started or was given to.
    #[serde(default)]
    pub run_id: Option<RunId>,
    /// The model calls that run had made when it took it (0: the run's own input).
    #[serde(default)]
    pub step: Option<u32>,
    /// Why it was not delivered.
    #[serde(default)]
    pub reason: Option<String>,
}

impl InboxEntry {
    /// Whether it has settled: delivered or not, it changes no more.
    pub fn is_settled(&self) -> bool {
        matches!(self.outcome.as_str(), "delivered" | "not_delivered")
    }
}

#[derive(Deserialize)]
struct Agents {
    agents: Vec<AgentSummary>,
}

#[derive(Deserialize)]
struct RunAnswer {
    run: RunInfo,
}

#[derive(Deserialize)]
struct ErrorBody {
    error: ErrorInfo,
}

/// `url` parsed, if it is an http(s) URL.
pub(crate) fn http_url(url: &str) -> Result<reqwest::Url, ClientError> {
    let invalid = |reason: String| ClientError::InvalidUrl {
        url: url.to_owned(),
        reason,
    };
    let parsed = reqwest::Url::parse(url).map_err(|error| invalid(error.to_string()))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(invalid("only http and https are spoken".to_owned()));
    }
    Ok(parsed)
}

impl Client {
    /// A client of the server at `base_url` (`http://127.0.0.1:8080`, or with a path prefix).
    pub fn new(base_url: &str) -> Result<Self, ClientError> {
        let url = http_url(base_url)?;
        if url.cannot_be_a_base() {
            return Err(ClientError::InvalidUrl {
                url: base_url.to_owned(),
                reason: "it cannot be a base URL".to_owned(),
            });
        }
        let http = reqwest::Client::builder()
            .build()
            .map_err(ClientError::Http)?;
        Ok(Self {
            http,
            base: url,
            authorization: None,
            reconnect: Reconnect::default(),
        })
    }

    /// Sends `Authorization: Bearer <key>` with every request (a server with `api_keys`).
    pub fn with_api_key(mut self, key: &str) -> Result<Self, ClientError> {
        self.authorization = Some(bearer(key)?);
        Ok(self)
    }

    /// Sends every request through `http` rather than a default client: one with a resolver,
    /// redirect policy, proxy or TLS roots of the caller's (a remote agent's is held to the
    /// outbound address policy this way).
    pub fn with_http_client(mut self, http: reqwest::Client) -> Self {
        self.http = http;
        self
    }

    /// Resumes broken streams by this policy instead of [`Reconnect::default`].
    pub fn with_reconnect(mut self, reconnect: Reconnect) -> Self {
        self.reconnect = reconnect;
        self
    }

    /// The server's base URL.
    pub fn base_url(&self) -> &reqwest::Url {
        &self.base
    }

    /// The agents the server runs (`GET /v1/agents`).
    pub async fn agents(&self) -> Result<Vec<AgentSummary>, ClientError> {
        let agents: Agents = self.get_json(self.url(&["v1", "agents"])).await?;
        Ok(agents.agents)
    }

    /// One agent's card (`GET /v1/agents/{name}`).
    pub async fn agent(&self, name: &str) -> Result<AgentCard, ClientError> {
        self.get_json(self.url(&["v1", "agents", name])).await
    }

    /// Starts a run and streams its events (`POST /v1/runs` as SSE). The stream resumes by
    /// itself if the connection breaks.
    pub async fn start(&self, start: &StartRun) -> Result<RunStream, ClientError> {
        let body = RunBody {
            request: &start.request,
            tools: &start.tools,
        };
        let response = self
            .request(self.http.post(self.url(&["v1", "runs"])))
            .header(ACCEPT, "text/event-stream")
            .json(&body)
            .send()
            .await?;
        let response = checked(response).await?;
        let run_id = response
            .headers()
            .get("x-agentwire-run-id")
            .and_then(|value| value.to_str().ok())
            .map(RunId::new);
        Ok(RunStream::new(self.clone(), run_id, Some(response)))
    }

    /// Starts a run and waits for it to settle (`POST /v1/runs` as JSON): its status and output.
    pub async fn run(&self, start: &StartRun) -> Result<RunOutput, ClientError> {
        let body = RunBody {
            request: &start.request,
            tools: &start.tools,
        };
        let response = self
            .request(self.http.post(self.url(&["v1", "runs"])))
            .json(&body)
            .send()
            .await?;
        json(checked(response).await?).await
    }

    /// Starts a run in the background (`POST /v1/runs` with `background: true`): the server
    /// answers at once with the run, which goes on with nobody connected. Follow it with
    /// [`Client::events`], poll it with [`Client::get_run`], cancel it with [`Client::cancel`],
    /// from this client or any other.
    pub async fn start_background(&self, start: &StartRun) -> Result<RunInfo, ClientError> {
        let request = RunRequest {
            background: true,
            ..start.request.clone()
        };
        let body = RunBody {
            request: &request,
            tools: &start.tools,
        };
        let response = self
            .request(self.http.post(self.url(&["v1", "runs"])))
            .json(&body)
            .send()
            .await?;
        let answer: RunAnswer = json(checked(response).await?).await?;
        Ok(answer.run)
    }

    /// A page of the caller's runs, newest first (`GET /v1/runs`).
    pub async fn runs(&self, query: &RunQuery) -> Result<RunPage, ClientError> {
        let mut url = self.url(&["v1", "runs"]);
        {
            let mut pairs = url.query_pairs_mut();
            if let Some(session_id) = &query.session_id {
                pairs.append_pair("session_id", session_id.as_str());
            }
            if let Some(agent) = &query.agent {
                pairs.append_pair("agent", agent);
            }
            if !query.statuses.is_empty() {
                pairs.append_pair("status", &query.statuses.join(","));
            }
            if let Some(limit) = query.limit {
                pairs.append_pair("limit", &limit.to_string());
            }
            if let Some(cursor) = &query.cursor {
                pairs.append_pair("cursor", cursor);
            }
        }
        self.get_json(url).await
    }

    /// Follows a run from its first event, replayed then live (`GET /v1/runs/{id}/events`):
    /// a run started elsewhere, or by an earlier process. The connection is opened at the first
    /// [`RunStream::next`].
    pub fn events(&self, run_id: &RunId) -> RunStream {
        RunStream::new(self.clone(), Some(run_id.clone()), None)
    }

    /// A run's status and output (`GET /v1/runs/{id}`).
    pub async fn get_run(&self, run_id: &RunId) -> Result<RunOutput, ClientError> {
        self.get_json(self.url(&["v1", "runs", run_id.as_str()]))
            .await
    }

    /// Gives a waiting run the client's input: approval responses, tool outputs, or the next
    /// user message (`POST /v1/runs/{id}/input`). [`RunStream`]'s answering methods call this
    /// and go on following the run.
    pub async fn input(&self, run_id: &RunId, message: &Message) -> Result<RunInfo, ClientError> {
        let url = self.url(&["v1", "runs", run_id.as_str(), "input"]);
        let response = self
            .request(self.http.post(url))
            .json(message)
            .send()
            .await?;
        let answer: RunAnswer = json(checked(response).await?).await?;
        Ok(answer.run)
    }

    /// Asks the server to cancel a run (`POST /v1/runs/{id}/cancel`); its stream ends with the
    /// `canceled` status, what was complete kept. The run as it was when asked.
    pub async fn cancel(&self, run_id: &RunId) -> Result<RunInfo, ClientError> {
        let url = self.url(&["v1", "runs", run_id.as_str(), "cancel"]);
        let response = self.request(self.http.post(url)).send().await?;
        let answer: RunAnswer = json(checked(response).await?).await?;
        Ok(answer.run)
    }

    /// A session's history (`GET /v1/sessions/{id}`).
    pub async fn session(&self, session_id: &SessionId) -> Result<Session, ClientError> {
        self.get_json(self.url(&["v1", "sessions", session_id.as_str()]))
            .await
    }

    /// A session's shared state (`GET /v1/sessions/{id}/state`): the JSON document its
    /// clients show and its runs change; `null` when it has none.
    pub async fn session_state(&self, session_id: &SessionId) -> Result<Value, ClientError> {
        self.get_json(self.url(&["v1", "sessions", session_id.as_str(), "state"]))
            .await
    }

    /// Replaces a session's shared state (`PUT /v1/sessions/{id}/state`; the session is made
    /// if new). Refused while a run of the session is open (`session_busy`), or when the
    /// agent's state schema refuses it (`invalid_state`). The state as set.
    pub async fn set_session_state(
        &self,
        session_id: &SessionId,
        state: &Value,
    ) -> Result<Value, ClientError> {
        let url = self.url(&["v1", "sessions", session_id.as_str(), "state"]);
        let response = self.request(self.http.put(url)).json(state).send().await?;
        json(checked(response).await?).await
    }

    /// Changes a session's shared state with an RFC 6902 patch, all or nothing (`PATCH
    /// /v1/sessions/{id}/state`); refused as [`Client::set_session_state`] is, and with
    /// `patch_failed` when an operation does not apply. The state as patched.
    pub async fn patch_session_state(
        &self,
        session_id: &SessionId,
        patch: &json_patch::Patch,
    ) -> Result<Value, ClientError> {
        let url = self.url(&["v1", "sessions", session_id.as_str(), "state"]);
        let body = serde_json::to_vec(patch).map_err(ClientError::Body)?;
        let response = self
            .request(self.http.patch(url))
            .header(CONTENT_TYPE, "application/json-patch+json")
            .body(body)
            .send()
            .await?;
        json(checked(response).await?).await
    }

    /// Sends a message into a session, busy or not (`POST /v1/sessions/{id}/messages`): a
    /// free session starts a run of it; a busy one queues it, steers the run going on with it,
    /// or interrupts that run, as `message.mode` says. Where it stands now.
    pub async fn send_message(
        &self,
        session_id: &SessionId,
        message: &SessionMessage,
    ) -> Result<InboxEntry, ClientError> {
        let url = self.url(&["v1", "sessions", session_id.as_str(), "messages"]);
        let response = self
            .request(self.http.post(url))
            .json(message)
            .send()
            .await?;
        json(checked(response).await?).await
    }

    /// Where a message sent into a session stands now
    /// (`GET /v1/sessions/{id}/messages/{client_message_id}`).
    pub async fn message_outcome(
        &self,
        session_id: &SessionId,
        client_message_id: &str,
    ) -> Result<InboxEntry, ClientError> {
        let path = [
            "v1",
            "sessions",
            session_id.as_str(),
            "messages",
            client_message_id,
        ];
        self.get_json(self.url(&path)).await
    }

    /// Deletes a session with its runs (`DELETE /v1/sessions/{id}`).
    pub async fn delete_session(&self, session_id: &SessionId) -> Result<(), ClientError> {
        let url = self.url(&["v1", "sessions", session_id.as_str()]);
        let response = self.request(self.http.delete(url)).send().await?;
        checked(response).await?;
        Ok(())
    }

    /// Opens `GET /v1/runs/{id}/events` after `after`, for [`RunStream`]'s reconnects.
    pub(crate) async fn open_events(
        &self,
        run_id: &RunId,
        after: u64,
    ) -> Result<Response, ClientError> {
        let mut url = self.url(&["v1", "runs", run_id.as_str(), "events"]);
        url.query_pairs_mut()
            .append_pair("after", &after.to_string());
        // `Last-Event-ID` is what the server reads first; `?after=` says the same for proxies
        // that drop unknown headers.
        let response = self
            .request(self.http.get(url))
            .header(ACCEPT, "text/event-stream")
            .header("last-event-id", after.to_string())
            .send()
            .await?;
        checked(response).await
    }

    async fn get_json<T: DeserializeOwned>(&self, url: reqwest::Url) -> Result<T, ClientError> {
        let response = self.request(self.http.get(url)).send().await?;
        json(checked(response).await?).await
    }

    /// The base URL with these path segments added, each percent-encoded (an id cannot reach
    /// another route).
    fn url(&self, segments: &[&str]) -> reqwest::Url {
        let mut url = self.base.clone();
        if let Ok(mut path) = url.path_segments_mut() {
            path.pop_if_empty().extend(segments);
        }
        url
    }

    fn request(&self, builder: RequestBuilder) -> RequestBuilder {
        match &self.authorization {
            Some(value) => builder.header(AUTHORIZATION, value.clone()),
            None => builder,
        }
    }
}

/// The response if its status is a success; else the server's error, typed.
pub(crate) async fn checked(response: Response) -> Result<Response, ClientError> {
    let status = response.status();
    if status.is_success() {
        return Ok(response);
    }
    let bytes = response.bytes().await?;
    Err(match serde_json::from_slice::<ErrorBody>(&bytes) {
        Ok(ErrorBody { error }) => ClientError::Api {
            status: status.as_u16(),
            code: error.code,
            message: error.message,
        },
        Err(_) => ClientError::UnexpectedStatus {
            status: status.as_u16(),
            body: String::from_utf8_lossy(&bytes[..bytes.len().min(512)]).into_owned(),
        },
    })
}

async fn json<T: DeserializeOwned>(response: Response) -> Result<T, ClientError> {
    let bytes = response.bytes().await?;
    serde_json::from_slice(&bytes).map_err(ClientError::Body)
}

/// The `Authorization` value for an API key, marked sensitive so it is never logged.
pub(crate) fn bearer(key: &str) -> Result<HeaderValue, ClientError> {
    let mut value =
        HeaderValue::from_str(&format!("Bearer {key}")).map_err(|_| ClientError::InvalidApiKey)?;
    value.set_sensitive(true);
    Ok(value)
}
