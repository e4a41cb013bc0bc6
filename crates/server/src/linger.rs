//! Reading what a client still sends after the server has answered, so that the answer reaches
//! it. A client that sends its whole request before it reads (Python's `urllib`, most scripts)
//! is still writing when a refusal (413, 401, 431…) is sent; if the server then closes the
//! socket with bytes of the request unread, the kernel resets the connection, and the reset
//! can discard the answer before the client reads it. So the rest is read and dropped, up to
//! [`MAX_LINGER_BYTES`] and for [`LINGER_TIMEOUT`] at most, and only then is the socket closed:
//! - [`bodies`]: a request body a handler leaves unread (refused, or not wanted) is read to its
//!   end after the answer, whatever its framing (`Content-Length` or chunked); hyper then
//!   closes or keeps the connection as usual;
//! - [`close`]: a socket the server answers itself, outside hyper (a refused head, see `head`).
//!
//! Past the bounds the socket is closed anyway, and so it is once the client has sent nothing
//! for [`LINGER_IDLE`] (a client trickling its body, refused for taking too long, is not
//! waited for again): a client sending more than that after its answer is not one the server
//! waits for.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::Request;
use axum::http::{HeaderValue, header};
use axum::middleware::Next;
use axum::response::Response;
use hyper::body::{Body as HttpBody, Frame, SizeHint};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// The most bytes read and dropped after an answer.
pub(crate) const MAX_LINGER_BYTES: u64 = 64 * 1024 * 1024;
/// The longest time spent reading them.
pub(crate) const LINGER_TIMEOUT: Duration = Duration::from_secs(30);
/// The longest wait for the next of them.
pub(crate) const LINGER_IDLE: Duration = Duration::from_secs(2);

/// The middleware: every request's body is one that is read to its end when dropped unread.
/// The answer to a request whose body is left unread says `Connection: close`: the client
/// should stop sending, and not reuse a connection that may close past the bounds.
pub(crate) async fn bodies(request: Request, next: Next) -> Response {
    let unread = Arc::new(AtomicBool::new(false));
    let request = request.map(|body| {
        Body::new(Lingering {
            body: Some(body),
            unread: Arc::clone(&unread),
        })
    });
    let mut response = next.run(request).await;
    if unread.load(Ordering::Relaxed) {
        response
            .headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
    response
}

/// Shuts the write side of `socket` (the client reads the answer to its end), then reads and
/// drops what the client still sends until it closes, or the bounds are reached.
pub(crate) async fn close<S: AsyncRead + AsyncWrite + Unpin>(mut socket: S) {
    let drain = async {
        socket.shutdown().await?;
        let mut buffer = vec![0; 16 * 1024];
        let mut read = 0;
        while read <= MAX_LINGER_BYTES {
            match tokio::time::timeout(LINGER_IDLE, socket.read(&mut buffer)).await {
                Ok(Ok(0) | Err(_)) | Err(_) => break,
                Ok(Ok(n)) => read += n as u64,
            }
        }
        Ok::<_, std::io::Error>(())
    };
    let _ = tokio::time::timeout(LINGER_TIMEOUT, drain).await;
}

/// A request body that, dropped before its end, is read to its end by a task of its own.
struct Lingering {
    /// `None` once read to its end.
    body: Option<Body>,
    /// Set when dropped before its end.
    unread: Arc<AtomicBool>,
}

impl HttpBody for Lingering {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let Some(body) = self.body.as_mut() else {
            return Poll::Ready(None);
        };
        let polled = Pin::new(body).poll_frame(cx);
        if let Poll::Ready(None) = polled {
            // Read to its end: nothing is left for `drop` to read.
            self.body = None;
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.body.as_ref().is_none_or(HttpBody::is_end_stream)
    }

    fn size_hint(&self) -> SizeHint {
        self.body
            .as_ref()
            .map_or_else(|| SizeHint::with_exact(0), HttpBody::size_hint)
    }
}

impl Drop for Lingering {
    fn drop(&mut self) {
        let Some(body) = self.body.take() else {
            return;
        };
        if body.is_end_stream() {
            return;
        }
        self.unread.store(true, Ordering::Relaxed);
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(drain(body));
        }
    }
}

/// Reads `body` to its end (within the bounds), dropping what it reads.
async fn drain(mut body: Body) {
    let read_all = async {
        let mut read = 0;
        while read <= MAX_LINGER_BYTES {
            let frame = std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx));
            match tokio::time::timeout(LINGER_IDLE, frame).await {
                Ok(Some(Ok(frame))) => {
                    read += frame.data_ref().map_or(0, |data| data.len() as u64);
                }
                Ok(Some(Err(_)) | None) | Err(_) => break,
            }
        }
    };
    let _ = tokio::time::timeout(LINGER_TIMEOUT, read_all).await;
}
