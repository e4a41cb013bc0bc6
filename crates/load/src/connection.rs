//! One keep-alive HTTP/1.1 connection of the closed-loop modes: a request, its response head,
//! then the chunked body handed over piece by piece as it arrives, and the next request on the
//! same socket. Like the paced client (`client.rs`, which says why), it reads the socket in its
//! own task with `httparse`: a piece of body costs the generator one wake-up at most.
//!
//! A connection that fails, or whose server says `connection: close`, is dropped and opened
//! again for the next request.

use std::net::SocketAddr;

use anyhow::Context;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::chunked::Chunks;

/// A client connection to one server, opened when first needed.
#[derive(Debug)]
pub(crate) struct Connection {
    addr: SocketAddr,
    stream: Option<TcpStream>,
    /// Bytes read and not yet consumed; kept between requests for its capacity.
    buffer: Vec<u8>,
}

/// How much one read asks for.
const READ_SIZE: usize = 16 * 1024;

impl Connection {
    pub(crate) fn new(addr: SocketAddr) -> Self {
        Self {
            addr,
            stream: None,
            buffer: Vec::with_capacity(READ_SIZE),
        }
    }

    /// The server's address.
    pub(crate) fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Sends `request` (whole, head and body) and hands every piece of the chunked response
    /// body to `body` as it arrives, until the body ends. A status other than 200 is an error
    /// carrying the response's body.
    pub(crate) async fn exchange(
        &mut self,
        request: &[u8],
        body: impl FnMut(&[u8]) -> anyhow::Result<()>,
    ) -> anyhow::Result<()> {
        let result = self.try_exchange(request, body).await;
        if result.is_err() {
            self.stream = None;
        }
        result
    }

    async fn try_exchange(
        &mut self,
        request: &[u8],
        mut body: impl FnMut(&[u8]) -> anyhow::Result<()>,
    ) -> anyhow::Result<()> {
        let stream = match &mut self.stream {
            Some(stream) => stream,
            empty => {
                let stream = TcpStream::connect(self.addr)
                    .await
                    .context("cannot connect")?;
                stream.set_nodelay(true)?;
                empty.insert(stream)
            }
        };
        self.buffer.clear();
        stream
            .write_all(request)
            .await
            .context("sending the request")?;
        let (body_start, close) = loop {
            if read_more(stream, &mut self.buffer).await? == 0 {
                anyhow::bail!("the connection closed before the response");
            }
            let mut headers = [httparse::EMPTY_HEADER; 32];
            let mut response = httparse::Response::new(&mut headers);
            if let httparse::Status::Complete(length) = response.parse(&self.buffer)? {
                let code = response.code.unwrap_or_default();
                let header = |name: &str| {
                    response
                        .headers
                        .iter()
                        .find(|header| header.name.eq_ignore_ascii_case(name))
                        .map(|header| header.value)
                };
                if code != 200 {
                    // An error answer has a length; the connection is dropped after it anyway.
                    let want = header("content-length")
                        .and_then(|value| std::str::from_utf8(value).ok())
                        .and_then(|value| value.trim().parse::<usize>().ok())
                        .unwrap_or(usize::MAX);
                    while self.buffer.len() - length < want
                        && read_more(stream, &mut self.buffer).await? > 0
                    {}
                    let end = self.buffer.len().min(length.saturating_add(want));
                    let text = String::from_utf8_lossy(&self.buffer[length..end]);
                    anyhow::bail!("HTTP {code}: {text}");
                }
                anyhow::ensure!(
                    header("transfer-encoding")
                        .is_some_and(|value| value.eq_ignore_ascii_case(b"chunked")),
                    "the stream is not chunked"
                );
                let close =
                    header("connection").is_some_and(|value| value.eq_ignore_ascii_case(b"close"));
                break (length, close);
            }
        };
        self.buffer.drain(..body_start);
        let mut chunks = Chunks::default();
        while !chunks.decode(&mut self.buffer, &mut body)? {
            if read_more(stream, &mut self.buffer)
                .await
                .context("reading the stream")?
                == 0
            {
                anyhow::bail!("the connection closed in the middle of the stream");
            }
        }
        anyhow::ensure!(
            self.buffer.is_empty(),
            "{} bytes after the end of the response",
            self.buffer.len()
        );
        if close {
            self.stream = None;
        }
        Ok(())
    }
}

/// Appends what the socket has to `buffer`; 0 at its end.
async fn read_more(stream: &mut TcpStream, buffer: &mut Vec<u8>) -> std::io::Result<usize> {
    buffer.reserve(READ_SIZE);
    stream.read_buf(buffer).await
}
