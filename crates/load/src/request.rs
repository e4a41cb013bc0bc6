//! One plain JSON request on a connection of its own (`connection: close`), for the few
//! requests of a scenario that are not streams (creating a webhook, starting a background
//! run, listing runs): its status and JSON body. Read with `httparse` like the streams (`client.rs` says why).

use std::net::SocketAddr;

use anyhow::Context;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Sends `POST {path}` with `body` to `addr`; the answer's status and JSON body (`null` when
/// it has none).
pub(crate) async fn post_json(
    addr: SocketAddr,
    path: &str,
    body: &Value,
) -> anyhow::Result<(u16, Value)> {
    let body = body.to_string();
    let request = format!(
        "POST {path} HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\n\
         content-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    exchange(addr, &request).await
}

/// Sends `GET {path}` to `addr`; the answer's status and JSON body (`null` when it has none).
pub(crate) async fn get_json(addr: SocketAddr, path: &str) -> anyhow::Result<(u16, Value)> {
    let request = format!("GET {path} HTTP/1.1\r\nhost: {addr}\r\nconnection: close\r\n\r\n");
    exchange(addr, &request).await
}

async fn exchange(addr: SocketAddr, request: &str) -> anyhow::Result<(u16, Value)> {
    let mut stream = TcpStream::connect(addr).await.context("cannot connect")?;
    stream.set_nodelay(true)?;
    stream
        .write_all(request.as_bytes())
        .await
        .context("sending the request")?;
    // `connection: close`: the answer is everything until the end.
    let mut answer = Vec::new();
    stream
        .read_to_end(&mut answer)
        .await
        .context("reading the answer")?;
    let mut headers = [httparse::EMPTY_HEADER; 32];
    let mut response = httparse::Response::new(&mut headers);
    let httparse::Status::Complete(length) = response.parse(&answer)? else {
        anyhow::bail!("the connection closed in the answer's head");
    };
    let status = response.code.unwrap_or_default();
    let json = match &answer[length..] {
        [] => Value::Null,
        body => serde_json::from_slice(body)
            .with_context(|| format!("HTTP {status}: {}", String::from_utf8_lossy(body)))?,
    };
    Ok((status, json))
}
