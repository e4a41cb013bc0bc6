//! Requests past the server's size limits, over real sockets, as clients that send everything
//! before they read: a body far over `max_body_bytes` (with a length or chunked), a 100 kB
//! request target, a 1 MB header; each is answered with the API's JSON error, and the client
//! reads it after sending its last byte. On a kept-alive connection a head past hyper's buffer
//! gets hyper's bare answer, and the connection closes.
#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use agentwire_server::Settings;
use common::{TestServer, talker};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

async fn server() -> TestServer {
    TestServer::start(vec![talker("assistant", &["Hi"], 0.0)], Settings::default()).await
}

/// Connects to `server`, sends `request` whole, then reads the answer until the server closes
/// the connection (10 s at most): its status and JSON body (`Null` when it has none).
async fn send_then_read(server: &TestServer, request: &[u8]) -> (u16, Value, String) {
    let addr = server.url.trim_start_matches("http://");
    let mut socket = TcpStream::connect(addr).await.unwrap();
    socket
        .write_all(request)
        .await
        .expect("the server reads the whole request");
    let mut answer = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), socket.read_to_end(&mut answer))
        .await
        .expect("the server closes the connection")
        .expect("the answer arrives whole, without a reset");
    parse(&answer)
}

/// The status, JSON body and head of one HTTP/1.1 answer.
fn parse(answer: &[u8]) -> (u16, Value, String) {
    let text = String::from_utf8_lossy(answer);
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|status| status.parse().ok())
        .unwrap_or(0);
    let body = serde_json::from_str(body).unwrap_or(Value::Null);
    (status, body, head.to_ascii_lowercase())
}

#[track_caller]
fn check((status, body, head): (u16, Value, String), expect: (u16, &str)) {
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (expect.0, Some(expect.1)),
        "{head}"
    );
    let message = body["error"]["message"].as_str().unwrap();
    assert!(!message.is_empty());
    assert!(head.contains("content-type: application/json"), "{head}");
}

const FIFTY_MB: usize = 50 * 1000 * 1000;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_far_over_the_limit_is_answered_413_to_a_client_still_sending_it() {
    let server = server().await;
    let mut request = format!(
        "POST /v1/runs HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n\
         content-length: {FIFTY_MB}\r\n\r\n"
    )
    .into_bytes();
    request.resize(request.len() + FIFTY_MB, b' ');
    let answer = send_then_read(&server, &request).await;
    assert!(answer.2.contains("connection: close"), "{}", answer.2);
    check(answer, (413, "payload_too_large"));

    // Answered before a byte of the body is sent, when its length says it is too large.
    let addr = server.url.trim_start_matches("http://");
    let mut socket = TcpStream::connect(addr).await.unwrap();
    let head = request
        .split(|byte| *byte == b'\n')
        .take(5)
        .collect::<Vec<_>>()
        .join(&b'\n');
    socket.write_all(&head).await.unwrap();
    socket.write_all(b"\n").await.unwrap();
    let mut answer = vec![0; 4096];
    let read = tokio::time::timeout(Duration::from_secs(5), socket.read(&mut answer));
    let n = read.await.expect("answered at once").unwrap();
    check(parse(&answer[..n]), (413, "payload_too_large"));

    // Chunked, with no length to refuse it by: read up to the limit, then the rest dropped.
    let chunk = vec![b' '; 64 * 1024];
    let mut request = b"POST /v1/runs HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: \
        application/json\r\ntransfer-encoding: chunked\r\n\r\n"
        .to_vec();
    for _ in 0..(FIFTY_MB / chunk.len()) {
        request.extend_from_slice(format!("{:x}\r\n", chunk.len()).as_bytes());
        request.extend_from_slice(&chunk);
        request.extend_from_slice(b"\r\n");
    }
    request.extend_from_slice(b"0\r\n\r\n");
    check(
        send_then_read(&server, &request).await,
        (413, "payload_too_large"),
    );

    // Refused before the body is wanted at all (no key, a path that does not exist): the
    // same.
    let mut request = format!(
        "POST /nowhere HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n\
         content-length: {FIFTY_MB}\r\n\r\n"
    )
    .into_bytes();
    request.resize(request.len() + FIFTY_MB, b' ');
    check(send_then_read(&server, &request).await, (404, "not_found"));
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn heads_past_the_limits_are_answered_with_json() {
    let server = server().await;
    let long_target = format!(
        "GET /v1/runs/{} HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n",
        "a".repeat(100_000)
    );
    check(
        send_then_read(&server, long_target.as_bytes()).await,
        (414, "uri_too_long"),
    );
    let big_header = format!(
        "GET /v1/agents HTTP/1.1\r\nhost: 127.0.0.1\r\nx-big: {}\r\n\r\n",
        "b".repeat(1_000_000)
    );
    check(
        send_then_read(&server, big_header.as_bytes()).await,
        (431, "headers_too_large"),
    );
    let many = format!(
        "GET /v1/agents HTTP/1.1\r\nhost: 127.0.0.1\r\n{}\r\n",
        "x: y\r\n".repeat(1000)
    );
    check(
        send_then_read(&server, many.as_bytes()).await,
        (431, "headers_too_large"),
    );
    server.shutdown().await;
}

/// Reads the answer to `GET /healthz`, leaving the connection open.
async fn health_answer(socket: &mut TcpStream) {
    let mut answer = vec![0; 4096];
    // The small answer arrives in one piece.
    let n = socket.read(&mut answer).await.unwrap();
    let answer = String::from_utf8_lossy(&answer[..n]);
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.ends_with("{\"status\":\"ok\"}"), "{answer}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_kept_alive_connection_heads_are_bounded_by_hyper() {
    let server = server().await;
    let addr = server.url.trim_start_matches("http://");
    let health = b"GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n";
    // Within hyper's buffer: the guard's JSON answer.
    let mut socket = TcpStream::connect(addr).await.unwrap();
    socket.write_all(health).await.unwrap();
    health_answer(&mut socket).await;
    let request = format!(
        "GET /v1/agents HTTP/1.1\r\nhost: 127.0.0.1\r\nx-big: {}\r\n\r\n",
        "b".repeat(200_000)
    );
    socket.write_all(request.as_bytes()).await.unwrap();
    let mut answer = vec![0; 4096];
    let n = socket.read(&mut answer).await.unwrap();
    check(parse(&answer[..n]), (431, "headers_too_large"));

    // Past it: hyper's bare 431, and the connection closed.
    let mut socket = TcpStream::connect(addr).await.unwrap();
    socket.write_all(health).await.unwrap();
    health_answer(&mut socket).await;
    let request = format!(
        "GET /v1/agents HTTP/1.1\r\nhost: 127.0.0.1\r\nx-big: {}\r\n\r\n",
        "b".repeat(1_000_000)
    );
    // hyper may close before it has read everything; what it answered is then still read.
    let _ = socket.write_all(request.as_bytes()).await;
    let mut answer = Vec::new();
    let closed = tokio::time::timeout(Duration::from_secs(10), socket.read_to_end(&mut answer));
    // Closed, after the bare answer or with a reset.
    let _ = closed.await.expect("the connection is closed");
    let (status, body, _) = parse(&answer);
    assert!(matches!(status, 431 | 0), "{status}");
    assert_eq!(body, Value::Null);
    server.shutdown().await;
}
