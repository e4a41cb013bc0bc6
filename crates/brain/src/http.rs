//! The HTTP transport every streaming provider shares: POST a JSON body, retry what may be
//! retried, then read the answer as server-sent events and hand each event's data to the
//! provider's sans-IO [`StreamParser`].
//!
//! A provider adapter supplies the body of each call and a [`StreamParser`] that turns each SSE
//! `data:` payload into [`BrainEvent`]s and says at the end of the body whether the model
//! finished; the endpoint and its headers come checked from the provider's [`Connection`].
//! Everything else is here, once:
//!
//! - A non-2xx answer is [`BrainError::ProviderRejected`] with the body (read up to
//!   [`ERROR_BODY_LIMIT`] bytes).
//! - HTTP 408, 429 and 5xx, a connection that fails or breaks, and a body that ends before the
//!   parser saw the model finish are retried with exponential backoff per [`RetryPolicy`]
//!   (`retry-after-ms` or `Retry-After` in seconds take precedence), but only while nothing has
//!   been yielded: once a [`BrainEvent`] went out, a failure is
//!   terminal, because the caller has already acted on the output.
//! - The body is read incrementally by the workspace's one SSE reader
//!   ([`agentwire_dialects::sse::SseReader`]): each byte is looked at once, whatever the split.
//! - Nothing runs outside the returned stream (no spawned task): dropping it drops the response,
//!   which closes the connection at once.
//!
//! The stream's failure modes are terminal: an `Err` item, then nothing.
//!
//! [`Connection`]: crate::Connection

use std::collections::VecDeque;
use std::time::Duration;

use agentwire_core::TraceContext;
use agentwire_dialects::sse::{SseFrame, SseReader};
use futures::stream;
use reqwest::StatusCode;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};

use crate::{BrainError, BrainEvent, BrainStream};

/// How much of an error answer's body is kept in [`BrainError::ProviderRejected`].
pub(crate) const ERROR_BODY_LIMIT: usize = 64 * 1024;

/// When and how often a model call is tried again after a failure that may pass (HTTP 408, 429
/// or 5xx, a connection that failed or broke, a stream cut short), and only before any output
/// was streamed.
///
/// The n-th retry waits `initial_delay * 2^(n-1)`, or what the provider asked for in
/// `retry-after-ms` / `Retry-After` (seconds), never more than `max_delay`. The delay has no
/// random jitter, so tests and logs are reproducible.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RetryPolicy {
    /// How many times the request is sent at most, the first time included; 1 (or 0) means no
    /// retry. Default 3.
    pub max_attempts: u32,
    /// The wait before the first retry. Default 500 ms.
    pub initial_delay: Duration,
    /// The longest wait between two attempts, the provider's `Retry-After` included. Default
    /// 60 s.
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_attempts: 3,
            initial_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(60),
        }
    }
}

impl RetryPolicy {
    /// Send once, never retry.
    pub fn none() -> Self {
        Self {
            max_attempts: 1,
            ..Self::default()
        }
    }

    /// The wait before retry number `retry` (counting from 1), given what the provider asked
    /// for, if anything.
    fn delay(&self, retry: u32, asked: Option<Duration>) -> Duration {
        let backoff = || {
            let factor = 2u32.saturating_pow(retry.saturating_sub(1));
            self.initial_delay.saturating_mul(factor)
        };
        asked.unwrap_or_else(backoff).min(self.max_delay)
    }
}

/// A provider's stream format, without IO: the `data:` payload of each server-sent event in,
/// brain events out. The SSE framing is the transport's; an `event:` name is not passed on,
/// since the providers' payloads name their own kind.
pub trait StreamParser: Send {
    /// Reads one SSE `data:` payload, appending the brain events it completes.
    ///
    /// # Errors
    /// A payload that breaks the format, or an error the provider reports in the stream; it
    /// ends the call.
    fn push(&mut self, data: &str, out: &mut Vec<BrainEvent>) -> Result<(), BrainError>;

    /// The stream ended: appends what completes the call, or fails when the model had not
    /// finished.
    ///
    /// # Errors
    /// [`BrainError::MalformedStream`] when the stream ended too soon.
    fn finish(&mut self, out: &mut Vec<BrainEvent>) -> Result<(), BrainError>;
}

/// What a log line shows of provider output a parser does not keep: at most its first 256
/// bytes (cut on a character boundary), enough to tell what it was.
pub(crate) fn excerpt(text: &str) -> &str {
    const MAX: usize = 256;
    if text.len() <= MAX {
        return text;
    }
    let mut end = MAX;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// What `run` logs, as the `tracing` formatter writes it.
#[cfg(test)]
pub(crate) fn logs_of(run: impl FnOnce()) -> String {
    use std::sync::{Arc, Mutex};

    #[derive(Clone, Default)]
    struct Buffer(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Buffer {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0
                .lock()
                .expect("not poisoned")
                .extend_from_slice(bytes);
            Ok(bytes.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    let buffer = Buffer::default();
    let writer = buffer.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .finish();
    tracing::subscriber::with_default(subscriber, run);
    let bytes = buffer.0.lock().expect("not poisoned").clone();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Feeds `payloads` to a fresh parser, then ends the stream: the events but the
/// [`BrainEvent::ResponseStart`] (what the answer is made of; each adapter has a test of its
/// own for that one), or the first error.
#[cfg(test)]
pub(crate) fn parse_all<P: StreamParser + Default>(
    payloads: &[&str],
) -> Result<Vec<BrainEvent>, BrainError> {
    parse_all_with_start::<P>(payloads).map(without_start)
}

/// [`parse_all`] with every event.
#[cfg(test)]
pub(crate) fn parse_all_with_start<P: StreamParser + Default>(
    payloads: &[&str],
) -> Result<Vec<BrainEvent>, BrainError> {
    let mut parser = P::default();
    let mut out = Vec::new();
    for payload in payloads {
        parser.push(payload, &mut out)?;
    }
    parser.finish(&mut out)?;
    Ok(out)
}

/// `events` without the [`BrainEvent::ResponseStart`].
#[cfg(test)]
pub(crate) fn without_start(events: Vec<BrainEvent>) -> Vec<BrainEvent> {
    events
        .into_iter()
        .filter(|event| !matches!(event, BrainEvent::ResponseStart { .. }))
        .collect()
}

/// An HTTP client for streaming model calls to one endpoint, with its headers and retry
/// policy. Cheap to clone (the connection pool is shared).
#[derive(Clone, Debug)]
pub(crate) struct HttpTransport {
    client: reqwest::Client,
    /// The endpoint, e.g. `https://api.openai.com/v1/chat/completions`.
    url: String,
    /// Authentication and provider headers; `Content-Type: application/json` and `Accept:
    /// text/event-stream` are added.
    headers: HeaderMap,
    retry: RetryPolicy,
}

impl HttpTransport {
    /// A transport with its own connection pool.
    ///
    /// # Errors
    /// [`BrainError::Config`] when the HTTP client cannot be built (no TLS backend).
    pub(crate) fn new(
        url: String,
        headers: HeaderMap,
        retry: RetryPolicy,
    ) -> Result<Self, BrainError> {
        let client = reqwest::Client::builder()
            .build()
            .map_err(|error| BrainError::Config {
                message: format!("the HTTP client cannot be built: {}", describe(&error)),
            })?;
        Ok(Self {
            client,
            url,
            headers,
            retry,
        })
    }

    /// Where the calls go, and with which headers.
    #[cfg(test)]
    pub(crate) fn target(&self) -> (&str, &HeaderMap) {
        (&self.url, &self.headers)
    }

    /// POSTs `body` (JSON) with the trace context's headers and streams what `new_parser`'s
    /// parser makes of the answer. A fresh parser is made for each attempt.
    pub(crate) fn stream<P, F>(
        &self,
        body: Vec<u8>,
        trace_context: &TraceContext,
        new_parser: F,
    ) -> BrainStream
    where
        P: StreamParser + 'static,
        F: Fn() -> P + Send + 'static,
    {
        let call = Call {
            transport: self.traced(trace_context),
            request_body: body,
            new_parser,
            attempts: 0,
            body: None,
            ready: VecDeque::new(),
            failed: None,
            yielded: false,
            started: false,
            done: false,
        };
        Box::pin(stream::unfold(call, |mut call| async move {
            let item = call.next().await?;
            Some((item, call))
        }))
    }
}

impl HttpTransport {
    /// This transport, with the trace context's headers added (a propagator wrote them; a
    /// header that is not valid is left out, as a trace is never worth failing a call).
    fn traced(&self, trace_context: &TraceContext) -> Self {
        let mut transport = self.clone();
        for (name, value) in trace_context.iter() {
            let (Ok(name), Ok(value)) = (HeaderName::try_from(name), HeaderValue::try_from(value))
            else {
                continue;
            };
            transport.headers.insert(name, value);
        }
        transport
    }
}

/// One model call in progress.
struct Call<P, F> {
    transport: HttpTransport,
    /// The JSON body, sent again as is on a retry.
    request_body: Vec<u8>,
    new_parser: F,
    /// Attempts started so far.
    attempts: u32,
    /// The answer being read, once the provider accepted the request.
    body: Option<Body<P>>,
    /// Events parsed and not yet yielded.
    ready: VecDeque<BrainEvent>,
    /// A failure to report once `ready` is drained.
    failed: Option<BrainError>,
    /// Whether an event of the answer was yielded: from then on nothing is retried. (A
    /// [`BrainEvent::ResponseStart`] does not count: it is no output of the model's.)
    yielded: bool,
    /// Whether a [`BrainEvent::ResponseStart`] was yielded: a retry's is dropped, so a call
    /// gives at most one.
    started: bool,
    done: bool,
}

/// An accepted answer, read as SSE.
struct Body<P> {
    response: reqwest::Response,
    reader: SseReader,
    parser: P,
    frames: Vec<SseFrame>,
    events: Vec<BrainEvent>,
}

/// A failed step of a call, and whether trying again may help.
struct Failure {
    error: BrainError,
    /// `Some` when the failure may pass: with the wait the provider asked for, if any.
    retry: Option<Option<Duration>>,
}

impl Failure {
    fn terminal(error: BrainError) -> Self {
        Self { error, retry: None }
    }

    fn transient(error: BrainError, asked: Option<Duration>) -> Self {
        Self {
            error,
            retry: Some(asked),
        }
    }
}

impl<P, F> Call<P, F>
where
    P: StreamParser,
    F: Fn() -> P,
{
    /// The next item of the stream.
    async fn next(&mut self) -> Option<Result<BrainEvent, BrainError>> {
        loop {
            if let Some(event) = self.ready.pop_front() {
                if matches!(event, BrainEvent::ResponseStart { .. }) {
                    if std::mem::replace(&mut self.started, true) {
                        continue;
                    }
                } else {
                    self.yielded = true;
                }
                return Some(Ok(event));
            }
            if let Some(error) = self.failed.take() {
                self.done = true;
                return Some(Err(error));
            }
            if self.done {
                return None;
            }
            let Err(failure) = self.advance().await else {
                continue;
            };
            let output_seen = self.yielded || !self.ready.is_empty();
            match failure.retry {
                Some(asked)
                    if !output_seen && self.attempts < self.transport.retry.max_attempts =>
                {
                    self.body = None;
                    let delay = self.transport.retry.delay(self.attempts, asked);
                    tokio::time::sleep(delay).await;
                }
                _ => {
                    self.body = None;
                    self.failed = Some(failure.error);
                }
            }
        }
    }

    /// Sends the request if no answer is open, else reads the next piece of the body.
    async fn advance(&mut self) -> Result<(), Failure> {
        let Some(body) = &mut self.body else {
            self.attempts += 1;
            let response = send(&self.transport, &self.request_body).await?;
            self.body = Some(Body {
                response,
                reader: SseReader::default(),
                parser: (self.new_parser)(),
                frames: Vec::new(),
                events: Vec::new(),
            });
            return Ok(());
        };
        let chunk = body.response.chunk().await.map_err(|error| {
            Failure::transient(
                BrainError::Connection {
                    message: format!("the answer broke off: {}", describe(&error)),
                },
                None,
            )
        })?;
        let result = match chunk {
            Some(bytes) => body.read(&bytes).map_err(Failure::terminal),
            None => {
                let ended = body.end();
                self.done = ended.is_ok();
                // A body that ends before the model finished was cut short: it may pass.
                ended.map_err(|error| Failure::transient(error, None))
            }
        };
        // Events parsed before a failure still go out, then the failure.
        self.ready.extend(body.events.drain(..));
        result
    }
}

impl<P: StreamParser> Body<P> {
    fn read(&mut self, bytes: &[u8]) -> Result<(), BrainError> {
        self.reader
            .feed(bytes, &mut self.frames)
            .map_err(|error| BrainError::MalformedStream {
                message: error.to_string(),
            })?;
        for frame in self.frames.drain(..) {
            self.parser.push(&frame.data, &mut self.events)?;
        }
        Ok(())
    }

    fn end(&mut self) -> Result<(), BrainError> {
        self.reader
            .finish()
            .map_err(|error| BrainError::MalformedStream {
                message: error.to_string(),
            })?;
        self.parser.finish(&mut self.events)
    }
}

/// Sends the request once; an answer that is not 2xx is a failure.
async fn send(transport: &HttpTransport, body: &[u8]) -> Result<reqwest::Response, Failure> {
    let response = transport
        .client
        .post(&transport.url)
        .headers(transport.headers.clone())
        .header(CONTENT_TYPE, HeaderValue::from_static("application/json"))
        .header(ACCEPT, HeaderValue::from_static("text/event-stream"))
        .body(body.to_vec())
        .send()
        .await
        .map_err(|error| {
            let error = BrainError::Connection {
                message: describe(&error),
            };
            Failure::transient(error, None)
        })?;
    let status = response.status();
    if status.is_success() {
        return Ok(response);
    }
    let asked = asked_delay(response.headers());
    let error = BrainError::ProviderRejected {
        status: status.as_u16(),
        body: read_capped(response).await,
    };
    if is_transient(status) {
        Err(Failure::transient(error, asked))
    } else {
        Err(Failure::terminal(error))
    }
}

/// Whether an error status may pass if the request is sent again.
fn is_transient(status: StatusCode) -> bool {
    status == StatusCode::REQUEST_TIMEOUT
        || status == StatusCode::TOO_MANY_REQUESTS
        || status.is_server_error()
}

/// The wait a provider asked for: `retry-after-ms` (OpenAI's, more precise) or `Retry-After`
/// in seconds. An HTTP-date `Retry-After` is not read (it needs the wall clock, and the
/// providers send seconds); the backoff applies then.
fn asked_delay(headers: &HeaderMap) -> Option<Duration> {
    let number = |name: &str| -> Option<f64> {
        let value: f64 = headers.get(name)?.to_str().ok()?.trim().parse().ok()?;
        (value.is_finite() && value >= 0.0).then_some(value)
    };
    let seconds = number("retry-after-ms")
        .map(|millis| millis / 1000.0)
        .or_else(|| number("retry-after"))?;
    Duration::try_from_secs_f64(seconds).ok()
}

/// An error answer's body, up to [`ERROR_BODY_LIMIT`] bytes; what cannot be read is left out.
async fn read_capped(mut response: reqwest::Response) -> String {
    let mut body = Vec::new();
    let mut cut = false;
    while let Ok(Some(chunk)) = response.chunk().await {
        let room = ERROR_BODY_LIMIT - body.len();
        if chunk.len() > room {
            body.extend_from_slice(&chunk[..room]);
            cut = true;
            break;
        }
        body.extend_from_slice(&chunk);
    }
    let mut text = String::from_utf8_lossy(&body).into_owned();
    if cut {
        text.push('…');
    }
    text
}

/// An HTTP error with its causes: reqwest's own message names only the outer layer.
fn describe(error: &reqwest::Error) -> String {
    let mut message = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        message.push_str(": ");
        message.push_str(&cause.to_string());
        source = cause.source();
    }
    message
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use agentwire_testkit::fake_provider::{FakeProvider, FakeResponse};
    use futures::StreamExt;
    use tokio::time::Instant;

    use super::*;
    use crate::FinishReason;

    /// A provider format for these tests: each payload becomes a text delta, and `end`
    /// finishes.
    #[derive(Default)]
    struct Echo {
        finished: bool,
    }

    impl StreamParser for Echo {
        fn push(&mut self, data: &str, out: &mut Vec<BrainEvent>) -> Result<(), BrainError> {
            match data {
                "end" => self.finished = true,
                "bad" => {
                    return Err(BrainError::MalformedStream {
                        message: "bad".into(),
                    });
                }
                _ => out.push(BrainEvent::TextDelta { text: data.into() }),
            }
            Ok(())
        }

        fn finish(&mut self, out: &mut Vec<BrainEvent>) -> Result<(), BrainError> {
            if !self.finished {
                return Err(BrainError::MalformedStream {
                    message: "no end".into(),
                });
            }
            out.push(BrainEvent::Finish {
                reason: FinishReason::Stop,
                usage: None,
            });
            Ok(())
        }
    }

    const BODY: &str = "event: a\ndata: 1\n\ndata: 2\n\ndata: end\n\n";

    fn quick() -> RetryPolicy {
        RetryPolicy {
            max_attempts: 3,
            initial_delay: Duration::ZERO,
            max_delay: Duration::ZERO,
        }
    }

    fn transport(server: &FakeProvider, retry: RetryPolicy) -> HttpTransport {
        let mut headers = HeaderMap::new();
        headers.insert("x-key", HeaderValue::from_static("k"));
        HttpTransport::new(format!("{}/call", server.url()), headers, retry).unwrap()
    }

    const REQUEST_BODY: &[u8] = br#"{"n":1}"#;

    /// The stream's items, errors as their message.
    async fn call(server: &FakeProvider, retry: RetryPolicy) -> Vec<Result<String, String>> {
        transport(server, retry)
            .stream(
                REQUEST_BODY.to_vec(),
                &TraceContext::default(),
                Echo::default,
            )
            .map(|item| match item {
                Ok(BrainEvent::TextDelta { text }) => Ok(text),
                Ok(event) => Ok(format!("{event:?}")),
                Err(error) => Err(error.to_string()),
            })
            .collect()
            .await
    }

    fn ok(items: &[&str]) -> Vec<Result<String, String>> {
        items.iter().map(|item| Ok((*item).to_owned())).collect()
    }

    const FINISH: &str = "Finish { reason: Stop, usage: None }";

    #[tokio::test]
    async fn events_reach_the_parser_whatever_the_split() {
        let server = FakeProvider::start();
        for split in 0..=BODY.len() {
            server.push(FakeResponse::sse_split(BODY.as_bytes(), &[split]));
            let items = call(&server, RetryPolicy::none()).await;
            assert_eq!(items, ok(&["1", "2", FINISH]), "split at {split}");
        }
        let first = &server.requests()[0];
        assert_eq!(first.path, "/call");
        assert_eq!(first.header("x-key"), Some("k"));
        assert_eq!(first.header("content-type"), Some("application/json"));
        assert_eq!(first.header("accept"), Some("text/event-stream"));
        assert_eq!(first.body, serde_json::json!({"n": 1}));
    }

    #[tokio::test]
    async fn transient_failures_before_output_are_retried() {
        let server = FakeProvider::start();
        server.push(FakeResponse::new(503).body("busy"));
        // Cut, or ended without a finish, before any event came out: retried too.
        server.push(FakeResponse::sse("data: end").cut());
        server.push(FakeResponse::sse(": nothing yet\n\n"));
        server.push(FakeResponse::sse(BODY));
        let policy = RetryPolicy {
            max_attempts: 4,
            ..quick()
        };
        assert_eq!(call(&server, policy).await, ok(&["1", "2", FINISH]));
        assert_eq!(server.requests().len(), 4);
    }

    #[tokio::test]
    async fn retries_stop_at_max_attempts_and_client_errors_are_not_retried() {
        let server = FakeProvider::start();
        for _ in 0..3 {
            server.push(FakeResponse::new(500).body("down"));
        }
        let items = call(&server, quick()).await;
        assert_eq!(items, [Err("the provider answered HTTP 500: down".into())]);
        assert_eq!(server.requests().len(), 3);

        server.push(FakeResponse::new(400).body("bad request"));
        let items = call(&server, quick()).await;
        assert_eq!(
            items,
            [Err("the provider answered HTTP 400: bad request".into())]
        );
        assert_eq!(server.requests().len(), 4);
    }

    #[tokio::test]
    async fn a_failure_after_output_is_terminal() {
        let server = FakeProvider::start();
        server.push(FakeResponse::sse("data: 1\n\n"));
        let items = call(&server, quick()).await;
        assert_eq!(
            items,
            [
                Ok("1".into()),
                Err("the provider's stream is malformed: no end".into())
            ]
        );

        server.push(FakeResponse::sse("data: 1\n\n").cut());
        let items = call(&server, quick()).await;
        assert_eq!(items[0], Ok("1".into()));
        let error = items[1].as_ref().unwrap_err();
        assert!(error.contains("the answer broke off"), "{error}");
        assert_eq!(items.len(), 2);

        // A parse failure after events in the same piece: the events, then the error.
        server.push(FakeResponse::sse("data: 1\n\ndata: bad\n\ndata: 2\n\n"));
        let items = call(&server, quick()).await;
        assert_eq!(
            items,
            [
                Ok("1".into()),
                Err("the provider's stream is malformed: bad".into())
            ]
        );
        assert_eq!(server.requests().len(), 3);
    }

    #[tokio::test]
    async fn an_error_body_is_kept_up_to_the_limit() {
        let server = FakeProvider::start();
        let long = "x".repeat(ERROR_BODY_LIMIT + 10);
        server.push(FakeResponse::new(401).body(long.clone()));
        let items = call(&server, quick()).await;
        let expected = format!(
            "the provider answered HTTP 401: {}…",
            &long[..ERROR_BODY_LIMIT]
        );
        assert_eq!(items, [Err(expected)]);
    }

    #[tokio::test(start_paused = true)]
    async fn the_provider_s_retry_after_is_honoured() {
        let server = FakeProvider::start();
        server.push(FakeResponse::new(429).header("retry-after", "7"));
        server.push(FakeResponse::sse(BODY));
        let policy = RetryPolicy {
            initial_delay: Duration::from_millis(1),
            ..RetryPolicy::default()
        };
        let start = Instant::now();
        assert_eq!(call(&server, policy).await, ok(&["1", "2", FINISH]));
        assert!(
            start.elapsed() >= Duration::from_secs(7),
            "{:?}",
            start.elapsed()
        );
        assert_eq!(server.requests().len(), 2);
    }

    #[tokio::test]
    async fn dropping_the_stream_closes_the_connection() {
        let server = FakeProvider::start();
        server.push(FakeResponse::sse("data: 1\n\n").hang());
        let mut stream = transport(&server, quick()).stream(
            REQUEST_BODY.to_vec(),
            &TraceContext::default(),
            Echo::default,
        );
        let first = stream.next().await.unwrap().unwrap();
        assert_eq!(first, BrainEvent::TextDelta { text: "1".into() });
        assert_eq!(server.aborted(), 0);
        drop(stream);
        server.wait_aborted(1).await;
    }
}
