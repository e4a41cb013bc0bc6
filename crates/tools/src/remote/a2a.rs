//! [`A2aAgent`]: an agent spoken to in A2A 1.0 over JSON-RPC: its card read at connect, runs
//! sent as `SendStreamingMessage` and read with the dialects' A2A stream decoder.

use std::sync::Arc;
use std::time::Duration;

use agentwire_core::{Event, EventKind, RunId, RunStatus};
use agentwire_dialects::StreamDecoder;
use agentwire_dialects::a2a::{self, A2aDecoder, A2aMethod, RemoteCard};
use futures::future::BoxFuture;
use futures::{StreamExt, stream};
use reqwest::Url;
use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderValue};
use serde::Deserialize;
use serde_json::json;

use super::{RemoteAgent, RemoteError, RemoteEvents, RemoteRequest};
use crate::address;

/// The protocol version every request names (`A2A-Version`): servers take a request without it
/// for A2A 0.3.
const A2A_VERSION: &str = "1.0";

/// How long a connection may take to open, and a `CancelTask` to be answered.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// The most of an error body kept for the message.
const BODY_EXCERPT: usize = 512;

/// An A2A agent, as its card describes it. Cheap to clone.
///
/// ```no_run
/// # async fn demo() -> Result<(), agentwire_tools::remote::RemoteError> {
/// use std::time::Duration;
/// use agentwire_tools::remote::{A2aAgent, RemoteAgent};
///
/// let agent = A2aAgent::connect(
///     "http://127.0.0.1:41241/.well-known/agent-card.json",
///     None,
///     Duration::from_secs(10),
///     true,
/// )
/// .await?;
/// println!("{}: {}", agent.describe(), agent.description());
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct A2aAgent {
    inner: Arc<Inner>,
}

#[derive(Clone)]
struct Inner {
    http: reqwest::Client,
    /// The JSON-RPC endpoint every request is posted to.
    endpoint: String,
    card: RemoteCard,
    description: String,
    authorization: Option<HeaderValue>,
}

impl std::fmt::Debug for A2aAgent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("A2aAgent")
            .field("name", &self.inner.card.name)
            .field("endpoint", &self.inner.endpoint)
            .finish_non_exhaustive()
    }
}

impl A2aAgent {
    /// Reads the agent card at `card_url` (within `timeout`) and picks its JSON-RPC interface
    /// of A2A 1.x. `api_key`, when given, is sent as a bearer key with every request (the card's
    /// too), and so only to the card's origin: a card naming an endpoint on another origin is
    /// refused. Unless `allow_private`, the card's and the endpoint's hosts must be public
    /// addresses, at connect and at every connection after (`crate::address`).
    ///
    /// # Errors
    /// [`RemoteError::Unreachable`], [`RemoteError::Timeout`], [`RemoteError::Refused`] (an
    /// HTTP error), [`RemoteError::BadCard`] (not a card), [`RemoteError::NoJsonRpc`] (no
    /// interface this client speaks), [`RemoteError::Address`] (an address the policy refuses)
    /// or [`RemoteError::OtherOrigin`] (a keyed card sending the key elsewhere).
    pub async fn connect(
        card_url: &str,
        api_key: Option<&str>,
        timeout: Duration,
        allow_private: bool,
    ) -> Result<Self, RemoteError> {
        let authorization = api_key.map(|key| bearer(card_url, key)).transpose()?;
        let http = address::guarded(reqwest::Client::builder(), allow_private)
            .redirect(address::redirect_policy(allow_private))
            .connect_timeout(REQUEST_TIMEOUT)
            .build()
            .map_err(|source| unreachable(card_url, source))?;
        let mut request = http.get(card_url).header(ACCEPT, "application/json");
        if let Some(authorization) = &authorization {
            request = request.header(AUTHORIZATION, authorization.clone());
        }
        let fetch = async {
            checked_address(card_url, allow_private).await?;
            let response = request
                .send()
                .await
                .map_err(|source| unreachable(card_url, source))?;
            let response = checked(card_url, response).await?;
            let bytes = response
                .bytes()
                .await
                .map_err(|source| unreachable(card_url, source))?;
            let card = a2a::decode_card(&bytes).map_err(|source| RemoteError::BadCard {
                url: card_url.to_owned(),
                source,
            })?;
            let endpoint = endpoint(card_url, &card, authorization.is_some())?;
            checked_address(&endpoint, allow_private).await?;
            Ok::<_, RemoteError>((card, endpoint))
        };
        let (card, endpoint) =
            tokio::time::timeout(timeout, fetch)
                .await
                .map_err(|_| RemoteError::Timeout {
                    url: card_url.to_owned(),
                    seconds: timeout.as_secs(),
                })??;
        let description = describe_card(&card);
        Ok(Self {
            inner: Arc::new(Inner {
                http,
                endpoint,
                card,
                description,
                authorization,
            }),
        })
    }

    /// The agent described by `description` rather than its card.
    #[must_use]
    pub fn with_description(self, description: &str) -> Self {
        let mut inner = Arc::unwrap_or_clone(self.inner);
        inner.description = description.to_owned();
        Self {
            inner: Arc::new(inner),
        }
    }

    /// The card as it was read.
    pub fn card(&self) -> &RemoteCard {
        &self.inner.card
    }

    /// The JSON-RPC endpoint runs are sent to.
    pub fn endpoint(&self) -> &str {
        &self.inner.endpoint
    }
}

impl RemoteAgent for A2aAgent {
    fn description(&self) -> &str {
        &self.inner.description
    }

    fn describe(&self) -> String {
        format!("a2a {}", self.inner.endpoint)
    }

    fn run(&self, request: RemoteRequest) -> RemoteEvents {
        let start = Reading::Start(Arc::clone(&self.inner), Box::new(request));
        Box::pin(stream::unfold(start, Reading::next).flat_map(stream::iter))
    }

    fn cancel(&self, run_id: RunId) -> BoxFuture<'static, Result<(), RemoteError>> {
        let inner = Arc::clone(&self.inner);
        Box::pin(async move {
            let id = json!(format!("cancel-{run_id}"));
            let body = a2a::encode_task_request(&id, A2aMethod::CancelTask, run_id.as_str());
            let url = inner.endpoint.as_str();
            let response = inner
                .post(body, "application/json")
                .timeout(REQUEST_TIMEOUT)
                .send()
                .await
                .map_err(|source| unreachable(url, source))?;
            let response = checked(url, response).await?;
            let answer: RpcAnswer = response
                .json()
                .await
                .map_err(|source| unreachable(url, source))?;
            match answer.error {
                // A task that has ended cannot be canceled: it is stopped all the same.
                Some(error) if error.code == TASK_NOT_CANCELABLE => Ok(()),
                Some(error) => Err(RemoteError::Rpc {
                    url: url.to_owned(),
                    code: error.code,
                    message: error.message,
                }),
                None => Ok(()),
            }
        })
    }
}

/// A2A's `TaskNotCancelableError`: the task is in a terminal state.
const TASK_NOT_CANCELABLE: i64 = -32002;

/// The answer to a JSON-RPC request, as far as a cancel reads it.
#[derive(Deserialize)]
struct RpcAnswer {
    #[serde(default)]
    error: Option<RpcErrorObject>,
}

#[derive(Deserialize)]
struct RpcErrorObject {
    code: i64,
    #[serde(default)]
    message: String,
}

impl Inner {
    fn post(&self, body: Vec<u8>, accept: &'static str) -> reqwest::RequestBuilder {
        let mut request = self
            .http
            .post(&self.endpoint)
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, accept)
            .header("A2A-Version", A2A_VERSION)
            .body(body);
        if let Some(authorization) = &self.authorization {
            request = request.header(AUTHORIZATION, authorization.clone());
        }
        request
    }
}

/// Where reading a run's answer is.
enum Reading {
    /// Nothing sent yet.
    Start(Arc<Inner>, Box<RemoteRequest>),
    /// The answer's SSE body, being read.
    Body(Box<Body>),
    /// Everything has been given.
    Done,
}

/// An answer's SSE body and what has been read of it.
struct Body {
    inner: Arc<Inner>,
    response: reqwest::Response,
    decoder: A2aDecoder,
    seen: Seen,
}

/// What the decoded stream has said, for its end.
#[derive(Default)]
struct Seen {
    /// The answer was a task (`run_created`).
    task: bool,
    /// A message of the run's own completed.
    message: bool,
    /// The run ended or waits (the stream ends there).
    settled: bool,
    last_seq: u64,
}

/// The items one step of the reading yields.
type Batch = Vec<Result<Event, RemoteError>>;

impl Reading {
    async fn next(self) -> Option<(Batch, Reading)> {
        match self {
            Reading::Start(inner, request) => Some(start(inner, *request).await),
            Reading::Body(mut body) => {
                let url = body.inner.endpoint.clone();
                let mut events = Vec::new();
                let step = loop {
                    match body.response.chunk().await {
                        Ok(Some(bytes)) => {
                            if let Err(source) = body.decoder.decode(&bytes, &mut events) {
                                break Some(RemoteError::Decode { url, source });
                            }
                            if !events.is_empty() {
                                body.seen.note(&events);
                                let batch = events.into_iter().map(Ok).collect();
                                return Some((batch, Reading::Body(body)));
                            }
                        }
                        Ok(None) => break None,
                        Err(source) => break Some(RemoteError::Broken { url, source }),
                    }
                };
                let Body {
                    inner,
                    mut decoder,
                    mut seen,
                    ..
                } = *body;
                let batch = ended(&inner.endpoint, &mut decoder, &mut seen, step);
                Some((batch, Reading::Done))
            }
            Reading::Done => None,
        }
    }
}

/// Sends the run's message and reads the head of the answer: an SSE body to read on, or a
/// JSON body (a JSON-RPC error, or a non-streaming agent's whole answer) read at once.
async fn start(inner: Arc<Inner>, request: RemoteRequest) -> (Batch, Reading) {
    let streaming = inner.card.streaming;
    let method = match streaming {
        true => A2aMethod::SendStreamingMessage,
        false => A2aMethod::SendMessage,
    };
    let id = json!(request.run_id.as_str());
    let body = a2a::encode_request(&id, method, &request.input, None);
    let url = inner.endpoint.clone();
    let accept = match streaming {
        true => "text/event-stream",
        false => "application/json",
    };
    let failed = |error| (vec![Err(error)], Reading::Done);
    let response = match inner.post(body, accept).send().await {
        Ok(response) => response,
        Err(source) => return failed(unreachable(&url, source)),
    };
    let response = match checked(&url, response).await {
        Ok(response) => response,
        Err(error) => return failed(error),
    };
    let is_json = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.starts_with("application/json"));
    let mut decoder = A2aDecoder::default();
    let mut seen = Seen::default();
    if !is_json {
        let body = Body {
            inner,
            response,
            decoder,
            seen,
        };
        return (Vec::new(), Reading::Body(Box::new(body)));
    }
    // One JSON-RPC response: the decoder reads it as the one item of a stream.
    let bytes = match response.bytes().await {
        Ok(bytes) => bytes,
        Err(source) => return failed(RemoteError::Broken { url, source }),
    };
    let mut frame = b"data: ".to_vec();
    frame.extend(bytes.iter().filter(|byte| !matches!(byte, b'\r' | b'\n')));
    frame.extend_from_slice(b"\n\n");
    let mut events = Vec::new();
    let error = decoder
        .decode(&frame, &mut events)
        .err()
        .map(|source| RemoteError::Decode {
            url: url.clone(),
            source,
        });
    seen.note(&events);
    let mut batch: Batch = events.into_iter().map(Ok).collect();
    batch.extend(ended(&url, &mut decoder, &mut seen, error));
    (batch, Reading::Done)
}

/// The last items of a run's answer once its body is over: what the decoder still held
/// (messages it closes), then the failure, if any; or, for an answer that was one message and
/// no task (A2A's message-only answer), the run's completion.
fn ended(
    url: &str,
    decoder: &mut A2aDecoder,
    seen: &mut Seen,
    error: Option<RemoteError>,
) -> Batch {
    let mut events = Vec::new();
    let finish_error = decoder.finish(&mut events).err();
    seen.note(&events);
    let mut batch: Batch = events.into_iter().map(Ok).collect();
    let error = error.or_else(|| {
        finish_error.map(|source| RemoteError::Decode {
            url: url.to_owned(),
            source,
        })
    });
    match error {
        Some(error) => batch.push(Err(error)),
        None if !seen.task && seen.message && !seen.settled => {
            batch.push(Ok(Event::new(
                seen.last_seq + 1,
                EventKind::RunStatus {
                    status: RunStatus::Completed,
                    error: None,
                    usage: None,
                },
            )));
        }
        None => {}
    }
    batch
}

impl Seen {
    fn note(&mut self, events: &[Event]) {
        for event in events {
            self.last_seq = self.last_seq.max(event.seq);
            if !event.namespace.is_root() {
                continue;
            }
            match &event.kind {
                EventKind::RunCreated { .. } => self.task = true,
                EventKind::MessageComplete { .. } => self.message = true,
                EventKind::RunStatus { status, .. } => {
                    self.settled |=
                        status.is_terminal() || matches!(status, RunStatus::Awaiting(_));
                }
                _ => {}
            }
        }
    }
}

/// The tool's description from the card: its description, then the skills that say more.
fn describe_card(card: &RemoteCard) -> String {
    let mut description = card.description.trim().to_owned();
    let skills: Vec<String> = card
        .skills
        .iter()
        .filter(|skill| skill.description.trim() != description)
        .map(|skill| match skill.description.trim() {
            "" => skill.name.clone(),
            about => format!("{} ({about})", skill.name),
        })
        .collect();
    if !skills.is_empty() {
        if !description.is_empty() {
            description.push(' ');
        }
        description.push_str("Skills: ");
        description.push_str(&skills.join("; "));
        description.push('.');
    }
    if description.is_empty() {
        description = format!("The A2A agent '{}'.", card.name);
    }
    description
}

/// The response if its status is a success; else the refusal, with the start of its body.
pub(super) async fn checked(
    url: &str,
    response: reqwest::Response,
) -> Result<reqwest::Response, RemoteError> {
    let status = response.status();
    if status.is_success() {
        return Ok(response);
    }
    let body = response.bytes().await.unwrap_or_default();
    let body = String::from_utf8_lossy(&body[..body.len().min(BODY_EXCERPT)]).into_owned();
    Err(RemoteError::Refused {
        url: url.to_owned(),
        status: status.as_u16(),
        body,
    })
}

fn unreachable(url: &str, source: reqwest::Error) -> RemoteError {
    RemoteError::Unreachable {
        url: url.to_owned(),
        source,
    }
}

/// The card's JSON-RPC endpoint of A2A 1.x; with a key (`keyed`), only on the card's own
/// origin, since the key goes wherever the endpoint is.
fn endpoint(card_url: &str, card: &RemoteCard, keyed: bool) -> Result<String, RemoteError> {
    let Some(endpoint) = card.json_rpc_url().map(str::to_owned) else {
        let offered: Vec<String> = card
            .interfaces
            .iter()
            .map(|interface| {
                format!(
                    "{} {} {}",
                    interface.protocol_binding, interface.protocol_version, interface.url
                )
            })
            .collect();
        return Err(RemoteError::NoJsonRpc {
            url: card_url.to_owned(),
            offered: match offered.is_empty() {
                true => "nothing".to_owned(),
                false => offered.join(", "),
            },
        });
    };
    let origin = |url: &str| Url::parse(url).map(|url| url.origin().ascii_serialization());
    match (origin(card_url), origin(&endpoint)) {
        (Ok(card_origin), Ok(endpoint_origin)) if keyed && card_origin != endpoint_origin => {
            Err(RemoteError::OtherOrigin {
                card: card_origin,
                endpoint: endpoint_origin,
            })
        }
        _ => Ok(endpoint),
    }
}

/// Checks `url` against the address policy (the card's, the endpoint's).
async fn checked_address(url: &str, allow_private: bool) -> Result<(), RemoteError> {
    address::check_url(url, allow_private)
        .await
        .map(drop)
        .map_err(|source| RemoteError::Address { source })
}

/// The `Authorization` value for a key, marked sensitive so it is never logged.
fn bearer(url: &str, key: &str) -> Result<HeaderValue, RemoteError> {
    let mut value = HeaderValue::from_str(&format!("Bearer {key}")).map_err(|_| {
        RemoteError::InvalidConfig {
            name: url.to_owned(),
            reason: "the API key must be visible ASCII".to_owned(),
        }
    })?;
    value.set_sensitive(true);
    Ok(value)
}

#[cfg(test)]
mod tests {
    use agentwire_dialects::a2a::{AgentSkill, RemoteCard};

    use super::describe_card;

    #[test]
    fn the_description_names_the_skills_that_say_more() {
        let skill = |name: &str, description: &str| AgentSkill {
            id: name.to_owned(),
            name: name.to_owned(),
            description: description.to_owned(),
            ..AgentSkill::default()
        };
        let card = RemoteCard {
            name: "Sample".into(),
            description: "Says hi.".into(),
            skills: vec![skill("chat", "Says hi."), skill("wave", "Waves back.")],
            ..RemoteCard::default()
        };
        assert_eq!(describe_card(&card), "Says hi. Skills: wave (Waves back.).");
        let bare = RemoteCard {
            name: "Sample".into(),
            ..RemoteCard::default()
        };
        assert_eq!(describe_card(&bare), "The A2A agent 'Sample'.");
    }
}
