//! The head of a connection's first request, read before hyper sees it: a request line or
//! headers past the limits are answered here with the API's JSON error (`414 uri_too_long`,
//! `431 headers_too_large`), where hyper would answer a bare status with no body (its own
//! request-target limit, 64 KiB, is fixed, and its buffer is finite). The head is not kept past
//! [`MAX_HEAD_BYTES`]: a larger one is answered once it is known to be too large, and the rest is
//! read and dropped (`linger`). A head within the bounds goes to hyper with what was read,
//! and `guard` checks it exactly.
//!
//! Later requests on a kept-alive connection are hyper's to read: a head up to
//! [`HYPER_BUFFER_BYTES`] (and a target up to 64 KiB) reaches `guard`, which answers with
//! JSON; a larger one gets hyper's bare 431 or 414 and the connection is closed.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use axum::http::StatusCode;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::TcpStream;

use crate::error::{ApiError, RequestError};
use crate::guard::{MAX_HEADER_BYTES, MAX_HEADERS, MAX_URI_BYTES};

/// The longest request line read: a longer one's target is over [`MAX_URI_BYTES`] whatever its
/// method.
const MAX_REQUEST_LINE: usize = MAX_URI_BYTES + 64;
/// The most bytes of a head read before hyper: room for the longest request line and
/// [`MAX_HEADERS`] headers of [`MAX_HEADER_BYTES`], with their separators, twice over, so that
/// what `guard` must refuse reaches it.
pub(crate) const MAX_HEAD_BYTES: usize = 2 * (MAX_REQUEST_LINE + MAX_HEADER_BYTES);
/// The most header lines read before hyper, which takes as many.
pub(crate) const MAX_HEAD_LINES: usize = 4 * MAX_HEADERS;
/// hyper's read buffer, which bounds a head on a kept-alive connection.
pub(crate) const HYPER_BUFFER_BYTES: usize = 2 * MAX_HEAD_BYTES;

/// A socket and the bytes already read from it, which are read first.
#[derive(Debug)]
pub(crate) struct Prefixed {
    prefix: Vec<u8>,
    at: usize,
    socket: TcpStream,
}

/// Reads the first request's head from `socket`. Within the bounds (or when the client stops
/// before its end): the socket, with what was read, for hyper to serve. Past them: the socket
/// and why, for [`refuse`].
pub(crate) async fn first_request(
    mut socket: TcpStream,
) -> Result<Prefixed, (TcpStream, RequestError)> {
    let mut head = Vec::with_capacity(4096);
    let mut scan = Scan::default();
    loop {
        match scan.feed(&head) {
            Ok(true) => break,
            Ok(false) => {}
            Err(error) => return Err((socket, error)),
        }
        head.reserve(4096);
        match socket.read_buf(&mut head).await {
            // hyper answers (or closes) a request cut short as it always does.
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
    }
    Ok(Prefixed {
        prefix: head,
        at: 0,
        socket,
    })
}

/// Answers `error` on `socket` and closes it once the client has read it.
pub(crate) async fn refuse(mut socket: TcpStream, error: RequestError) {
    answer(&mut socket, &ApiError::from(error)).await;
    crate::linger::close(socket).await;
}

/// Writes `error` as a whole HTTP/1.1 answer that closes the connection.
pub(crate) async fn answer(socket: &mut TcpStream, error: &ApiError) {
    let body = error.body().to_string();
    let status = error.status;
    let retry = match status {
        StatusCode::SERVICE_UNAVAILABLE => "retry-after: 1\r\n",
        _ => "",
    };
    let answer = format!(
        "HTTP/1.1 {} {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\
         {retry}connection: close\r\n\r\n{body}",
        status.as_str(),
        status.canonical_reason().unwrap_or(""),
        body.len()
    );
    if let Err(error) = socket.write_all(answer.as_bytes()).await {
        tracing::debug!("writing a refusal: {error}");
    }
}

/// How far a head has been read: lines counted as they end, each byte looked at once.
#[derive(Debug, Default)]
struct Scan {
    scanned: usize,
    line_start: usize,
    lines: usize,
}

impl Scan {
    /// Looks at the bytes of `head` not yet seen: `true` once the head has ended.
    fn feed(&mut self, head: &[u8]) -> Result<bool, RequestError> {
        for at in self.scanned..head.len() {
            if head[at] != b'\n' {
                continue;
            }
            let line = &head[self.line_start..at];
            self.line_start = at + 1;
            if line.is_empty() || line == b"\r" {
                match self.lines {
                    // Empty lines before the request line are skipped, as hyper does.
                    0 => continue,
                    _ => {
                        self.scanned = head.len();
                        return Ok(true);
                    }
                }
            }
            if self.lines == 0 && line.len() > MAX_REQUEST_LINE {
                return Err(RequestError::UriTooLong { max: MAX_URI_BYTES });
            }
            self.lines += 1;
        }
        self.scanned = head.len();
        let open_line = head.len() - self.line_start;
        if self.lines == 0 && open_line > MAX_REQUEST_LINE {
            return Err(RequestError::UriTooLong { max: MAX_URI_BYTES });
        }
        if head.len() > MAX_HEAD_BYTES || self.lines > MAX_HEAD_LINES {
            return Err(RequestError::HeadersTooLarge {
                max_headers: MAX_HEADERS,
                max_bytes: MAX_HEADER_BYTES,
            });
        }
        Ok(false)
    }
}

impl AsyncRead for Prefixed {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        if this.at < this.prefix.len() {
            let n = buf.remaining().min(this.prefix.len() - this.at);
            buf.put_slice(&this.prefix[this.at..this.at + n]);
            this.at += n;
            if this.at == this.prefix.len() {
                this.prefix = Vec::new();
                this.at = 0;
            }
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut this.socket).poll_read(cx, buf)
    }
}

impl AsyncWrite for Prefixed {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.socket).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.socket).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.socket.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.socket).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.socket).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `head` in pieces of `step` bytes; what the scan decides at the end.
    fn scan(head: &[u8], step: usize) -> Result<bool, RequestError> {
        let mut scan = Scan::default();
        let mut result = Ok(false);
        for end in (step..head.len() + step).step_by(step) {
            result = scan.feed(&head[..end.min(head.len())]);
            if !matches!(result, Ok(false)) {
                break;
            }
        }
        result
    }

    #[test]
    fn heads_end_at_an_empty_line_and_are_bounded() {
        let small = b"\r\nGET / HTTP/1.1\r\nhost: a\r\n\r\nbody".to_vec();
        let long_target = format!("GET /{} HTTP/1.1\r\n", "a".repeat(MAX_REQUEST_LINE));
        let long_header = format!("GET / HTTP/1.1\r\nx: {}\r\n", "b".repeat(MAX_HEAD_BYTES));
        let many = format!(
            "GET / HTTP/1.1\r\n{}",
            "x: y\r\n".repeat(MAX_HEAD_LINES + 1)
        );
        for step in [1, 7, 4096] {
            assert!(matches!(scan(&small, step), Ok(true)), "{step}");
            assert!(matches!(
                scan(b"GET / HTTP/1.1\nhost: a\n\n", step),
                Ok(true)
            ));
            assert!(matches!(
                scan(b"GET / HTTP/1.1\r\nhost: a\r\n", step),
                Ok(false)
            ));
            assert!(matches!(
                scan(long_target.as_bytes(), step),
                Err(RequestError::UriTooLong { .. })
            ));
            assert!(matches!(
                scan(long_header.as_bytes(), step),
                Err(RequestError::HeadersTooLarge { .. })
            ));
            assert!(matches!(
                scan(many.as_bytes(), step),
                Err(RequestError::HeadersTooLarge { .. })
            ));
        }
        // The longest target `guard` refuses still passes, for it to refuse exactly.
        let guarded = format!(
            "GET /{} HTTP/1.1\r\nx: {}\r\n\r\n",
            "a".repeat(MAX_URI_BYTES),
            "b".repeat(MAX_HEADER_BYTES)
        );
        assert!(matches!(scan(guarded.as_bytes(), 4096), Ok(true)));
    }
}
