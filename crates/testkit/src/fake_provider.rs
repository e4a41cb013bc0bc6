//! [`FakeProvider`]: a real HTTP server on `127.0.0.1:0` that plays scripted answers to model
//! calls and records every request, for testing provider adapters without a network.
//!
//! Provider-neutral: an answer is a status, headers and a body given as pieces (so a test can
//! split an SSE stream at any byte, pause between pieces, cut the connection mid-body, or keep
//! it open forever). The provider-specific SSE bodies are built beside it
//! ([`crate::fake_openai`]).
//!
//! The server runs on its own thread and Tokio runtime: a test on a paused clock
//! (`#[tokio::test(start_paused = true)]`) does not move the server's timers, and the server's
//! pauses are real time whatever the test's clock does.
//!
//! ```
//! use agentwire_testkit::fake_provider::{FakeProvider, FakeResponse};
//!
//! let server = FakeProvider::start();
//! server.push(FakeResponse::new(500).body("overloaded"));
//! server.push(FakeResponse::sse("data: {}\n\n"));
//! assert!(server.url().starts_with("http://127.0.0.1:"));
//! ```

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode, Uri};
use axum::response::Response;
use serde_json::Value;
use tokio::sync::{oneshot, watch};

/// A scripted HTTP server standing in for a model provider. Answers requests in order from its
/// queue; a request that finds the queue empty gets HTTP 500 with a body saying so. Stops when
/// dropped.
#[derive(Debug)]
pub struct FakeProvider {
    url: String,
    shared: Arc<Shared>,
    aborted: watch::Receiver<usize>,
    _stop: oneshot::Sender<()>,
}

/// One scripted answer: status, headers and a body in pieces.
#[derive(Clone, Debug)]
pub struct FakeResponse {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<Piece>,
    end: End,
}

/// A request the server received.
#[derive(Clone, Debug, PartialEq)]
pub struct RecordedRequest {
    /// `POST`, `GET`, …
    pub method: String,
    /// The path and query, e.g. `/v1/chat/completions`.
    pub path: String,
    /// Every header, names in lowercase, in the order received.
    pub headers: Vec<(String, String)>,
    /// The body as JSON; a body that is not JSON is kept as a JSON string of its text.
    pub body: Value,
}

#[derive(Clone, Debug)]
enum Piece {
    Bytes(Bytes),
    Pause(Duration),
}

/// How a body ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum End {
    /// Properly (the chunked encoding's last chunk).
    Complete,
    /// The connection is closed without a proper end.
    Cut,
    /// Nothing more is sent and the connection stays open.
    Hang,
}

#[derive(Debug, Default)]
struct Shared {
    responses: Mutex<VecDeque<FakeResponse>>,
    requests: Mutex<Vec<RecordedRequest>>,
    /// How many answer bodies were dropped before they ended: the client went away.
    aborted: watch::Sender<usize>,
}

impl FakeProvider {
    /// Starts a server on `127.0.0.1` with a port the OS picks.
    ///
    /// # Panics
    /// When no loopback port can be bound or no thread started (the test cannot run then).
    #[expect(clippy::unwrap_used, reason = "test set-up: nothing to do but fail")]
    pub fn start() -> Self {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let shared = Arc::new(Shared::default());
        let aborted = shared.aborted.subscribe();
        let (stop, stopped) = oneshot::channel::<()>();
        let app = Router::new().fallback({
            let shared = Arc::clone(&shared);
            move |method: Method, uri: Uri, headers: HeaderMap, body: Bytes| {
                let shared = Arc::clone(&shared);
                async move { shared.answer(method, uri, headers, body) }
            }
        });
        std::thread::Builder::new()
            .name("fake-provider".into())
            .spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap();
                runtime.block_on(async move {
                    let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                    // Not a graceful shutdown: a hanging answer must not keep the server up.
                    tokio::select! {
                        _ = axum::serve(listener, app) => {}
                        _ = stopped => {}
                    }
                });
                runtime.shutdown_background();
            })
            .unwrap();
        Self {
            url,
            shared,
            aborted,
            _stop: stop,
        }
    }

    /// The server's base URL, `http://127.0.0.1:<port>` (no trailing slash).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Queues an answer for the next request that finds none before it.
    pub fn push(&self, response: FakeResponse) {
        lock(&self.shared.responses).push_back(response);
    }

    /// Every request received so far, oldest first.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        lock(&self.shared.requests).clone()
    }

    /// How many scripted answers are still queued.
    pub fn pending(&self) -> usize {
        lock(&self.shared.responses).len()
    }

    /// How many answer bodies were dropped before they ended, because the client closed the
    /// connection (bodies the server cut itself do not count).
    pub fn aborted(&self) -> usize {
        *self.aborted.borrow()
    }

    /// Waits until at least `count` answer bodies were dropped before their end.
    pub async fn wait_aborted(&self, count: usize) {
        let mut aborted = self.aborted.clone();
        // The sender lives in `shared`, which `self` keeps alive: the wait cannot fail.
        let _ = aborted.wait_for(|aborted| *aborted >= count).await;
    }
}

impl Shared {
    fn answer(
        self: Arc<Self>,
        method: Method,
        uri: Uri,
        headers: HeaderMap,
        body: Bytes,
    ) -> Response {
        let request = RecordedRequest {
            method: method.to_string(),
            path: uri
                .path_and_query()
                .map_or_else(|| uri.path().to_owned(), ToString::to_string),
            headers: headers
                .iter()
                .map(|(name, value)| {
                    let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
                    (name.as_str().to_owned(), value)
                })
                .collect(),
            body: serde_json::from_slice(&body)
                .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&body).into_owned())),
        };
        lock(&self.requests).push(request);
        let next = lock(&self.responses).pop_front();
        let scripted = next.unwrap_or_else(|| {
            FakeResponse::new(500).body("the fake provider has no scripted response left")
        });
        scripted.into_response(self)
    }
}

impl FakeResponse {
    /// An answer with this status, no headers and an empty body.
    pub fn new(status: u16) -> Self {
        Self {
            status,
            headers: Vec::new(),
            body: Vec::new(),
            end: End::Complete,
        }
    }

    /// HTTP 200 `text/event-stream` with this body in one piece.
    pub fn sse(body: impl Into<Vec<u8>>) -> Self {
        Self::new(200)
            .header("content-type", "text/event-stream")
            .body(body)
    }

    /// HTTP 200 `text/event-stream` with this body split into pieces at these byte offsets
    /// (ascending; offsets past the end are ignored).
    pub fn sse_split(body: &[u8], at: &[usize]) -> Self {
        let mut response = Self::new(200).header("content-type", "text/event-stream");
        let mut start = 0;
        for &offset in at {
            let offset = offset.clamp(start, body.len());
            response = response.body(&body[start..offset]);
            start = offset;
        }
        response.body(&body[start..])
    }

    /// Adds a header.
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    /// Appends a piece of the body; the pieces are sent one by one, in order. An empty piece
    /// sends nothing.
    pub fn body(mut self, piece: impl Into<Vec<u8>>) -> Self {
        self.body.push(Piece::Bytes(Bytes::from(piece.into())));
        self
    }

    /// Waits this long (real time) before the next piece.
    pub fn pause(mut self, pause: Duration) -> Self {
        self.body.push(Piece::Pause(pause));
        self
    }

    /// After the last piece, closes the connection without a proper end of body.
    pub fn cut(mut self) -> Self {
        self.end = End::Cut;
        self
    }

    /// After the last piece, sends nothing more and keeps the connection open until the client
    /// goes away.
    pub fn hang(mut self) -> Self {
        self.end = End::Hang;
        self
    }

    fn into_response(self, shared: Arc<Shared>) -> Response {
        let status = StatusCode::from_u16(self.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let mut response = Response::new(Body::from_stream(body_stream(
            self.body.into(),
            self.end,
            Watch {
                shared,
                ended: false,
            },
        )));
        *response.status_mut() = status;
        for (name, value) in self.headers {
            if let (Ok(name), Ok(value)) =
                (HeaderName::try_from(name), HeaderValue::try_from(value))
            {
                response.headers_mut().append(name, value);
            }
        }
        response
    }
}

impl RecordedRequest {
    /// The first value of a header, by name in any case.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }
}

/// Counts a body as aborted when it is dropped before its end: hyper drops a body whose
/// connection went away.
struct Watch {
    shared: Arc<Shared>,
    ended: bool,
}

impl Watch {
    fn end(&mut self) {
        self.ended = true;
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        if !self.ended {
            self.shared.aborted.send_modify(|aborted| *aborted += 1);
        }
    }
}

/// The body's pieces as a stream, ending as scripted.
fn body_stream(
    pieces: VecDeque<Piece>,
    end: End,
    watch: Watch,
) -> impl futures::Stream<Item = Result<Bytes, std::io::Error>> + Send {
    futures::stream::unfold((pieces, watch), move |(mut pieces, mut watch)| async move {
        loop {
            match pieces.pop_front() {
                Some(Piece::Pause(pause)) => tokio::time::sleep(pause).await,
                Some(Piece::Bytes(bytes)) if bytes.is_empty() => {}
                Some(Piece::Bytes(bytes)) => return Some((Ok(bytes), (pieces, watch))),
                None => match end {
                    End::Complete => {
                        watch.end();
                        return None;
                    }
                    End::Cut => {
                        // Pending once, so hyper flushes the pieces already sent before it
                        // drops the connection.
                        tokio::task::yield_now().await;
                        watch.end();
                        let error = std::io::Error::other("the fake provider cut the body");
                        return Some((Err(error), (pieces, watch)));
                    }
                    End::Hang => futures::future::pending::<()>().await,
                },
            }
        }
    })
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // A test that panicked while holding the lock has failed already; the data is still usable.
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::json;

    use super::*;

    #[tokio::test]
    async fn answers_in_order_and_records_each_request() {
        let server = FakeProvider::start();
        server.push(
            FakeResponse::new(429)
                .header("retry-after", "3")
                .body("slow down"),
        );
        server.push(FakeResponse::sse_split(b"data: 1\n\ndata: 2\n\n", &[3, 9]));
        let client = reqwest::Client::new();
        let url = format!("{}/v1/chat?x=1", server.url());
        let send = || {
            client
                .post(&url)
                .header("authorization", "Bearer k")
                .json(&json!({"model": "m"}))
                .send()
        };

        let first = send().await.unwrap();
        assert_eq!(first.status(), 429);
        assert_eq!(first.headers()["retry-after"], "3");
        assert_eq!(first.text().await.unwrap(), "slow down");

        let mut second = send().await.unwrap();
        assert_eq!(second.headers()["content-type"], "text/event-stream");
        let mut pieces = Vec::new();
        while let Some(piece) = second.chunk().await.unwrap() {
            pieces.push(piece);
        }
        assert_eq!(pieces.concat(), b"data: 1\n\ndata: 2\n\n");
        assert!(pieces.len() >= 3, "the pieces arrive apart: {pieces:?}");

        let third = send().await.unwrap();
        assert_eq!(third.status(), 500);
        assert!(third.text().await.unwrap().contains("no scripted response"));

        let requests = server.requests();
        assert_eq!(requests.len(), 3);
        assert_eq!(requests[0].method, "POST");
        assert_eq!(requests[0].path, "/v1/chat?x=1");
        assert_eq!(requests[0].header("Authorization"), Some("Bearer k"));
        assert_eq!(requests[0].body, json!({"model": "m"}));
        assert_eq!(server.pending(), 0);
    }

    #[tokio::test]
    async fn a_cut_body_is_an_error_for_the_client_and_not_an_abort() {
        let server = FakeProvider::start();
        server.push(
            FakeResponse::sse("data: 1\n\n")
                .pause(Duration::from_millis(5))
                .body("data: 2")
                .cut(),
        );
        let mut response = reqwest::get(server.url()).await.unwrap();
        let mut body = Vec::new();
        let error = loop {
            match response.chunk().await {
                Ok(Some(piece)) => body.extend_from_slice(&piece),
                Ok(None) => panic!("the body ended properly"),
                Err(error) => break error,
            }
        };
        assert_eq!(body, b"data: 1\n\ndata: 2");
        assert!(error.is_body() || error.is_decode(), "{error:?}");
        assert_eq!(server.aborted(), 0);
    }

    #[tokio::test]
    async fn a_client_that_goes_away_is_seen() {
        let server = FakeProvider::start();
        server.push(FakeResponse::sse("data: 1\n\n").hang());
        let mut response = reqwest::get(server.url()).await.unwrap();
        assert_eq!(response.chunk().await.unwrap().unwrap(), "data: 1\n\n");
        assert_eq!(server.aborted(), 0);
        drop(response);
        server.wait_aborted(1).await;
        assert_eq!(server.aborted(), 1);
    }
}
