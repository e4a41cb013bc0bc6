//! Accepting connections, with limits. axum's own `serve` has neither a limit on connections
//! nor timeouts: a client that opens connections and sends nothing, or half a request, holds
//! a socket for ever, and at the open-file limit the server accepts no one, `/healthz`
//! included. This loop:
//! - sets `TCP_NODELAY` on every socket (streamed events are small writes that must leave at
//!   once);
//! - keeps at most `max_connections` open, below the process's open-file limit; one more is
//!   answered `503 too_many_connections` in the API's JSON shape and closed, so a client is
//!   told rather than left waiting;
//! - reads the head of each connection's first request itself (`head`), so a head past the
//!   limits is answered with JSON rather than hyper's bare status;
//! - serves HTTP/1.1 (and its upgrades: the WebSocket transport) through hyper, with a
//!   header timeout that counts from when a connection is ready for a request, so a client
//!   trickling its headers and a keep-alive connection left idle are both closed after it.
//!   A response that streams (SSE) is not reading a head, so it is not cut;
//! - on shutdown, asks every connection to close after its current response and returns once
//!   all have.
//!
//! HTTP/2 without TLS (h2c) is not served: no browser speaks it, and HTTP/2 is a proxy's job,
//! in front of the server with TLS.

use std::future::Future;
use std::io;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::http::StatusCode;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Semaphore, watch};

use crate::error::ApiError;
use crate::head::{self, HYPER_BUFFER_BYTES, MAX_HEAD_LINES};

/// File descriptors kept free of connections: the store, the workspaces' files, MCP servers
/// and the refusals themselves.
const FD_RESERVE: u64 = 512;
/// Refusals being written at once; past that a surplus connection is closed unanswered.
const MAX_REFUSING: usize = 256;
/// How long a refusal may take to write.
const REFUSAL_TIMEOUT: Duration = Duration::from_secs(1);

type Http1 = hyper::server::conn::http1::Builder;

/// How connections are served.
#[derive(Clone, Debug)]
pub(crate) struct Limits {
    pub(crate) max_connections: usize,
    pub(crate) header_timeout: Duration,
}

/// `max_connections`, lowered to what the open-file limit leaves room for.
fn connection_limit(configured: usize) -> usize {
    let Ok((soft, _)) = rlimit::getrlimit(rlimit::Resource::NOFILE) else {
        return configured;
    };
    let room = soft.saturating_sub(FD_RESERVE).max(soft / 2);
    configured
        .min(usize::try_from(room).unwrap_or(usize::MAX))
        .max(1)
}

/// Serves `router` on `listener` until `shutdown` completes, then lets every connection finish
/// its response and returns once all are closed.
pub(crate) async fn serve(
    listener: TcpListener,
    router: Router,
    limits: Limits,
    shutdown: impl Future<Output = ()>,
) -> io::Result<()> {
    let max = connection_limit(limits.max_connections);
    if max < limits.max_connections {
        tracing::info!(
            max_connections = max,
            "max_connections lowered to fit the open-file limit"
        );
    }
    let open = Arc::new(Semaphore::new(max));
    let refusing = Arc::new(Semaphore::new(MAX_REFUSING));
    let (stop, stopping) = watch::channel(false);
    let mut http = hyper::server::conn::http1::Builder::new();
    // Room above the limits, so that `guard` answers them with JSON (see `head`).
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .max_buf_size(HYPER_BUFFER_BYTES)
        .max_headers(MAX_HEAD_LINES);
    let http = Arc::new(http);
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let (socket, _) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    // Out of file descriptors, or the peer gone before it was accepted: the
                    // listener itself is fine; wait a moment rather than spin.
                    tracing::warn!("accepting a connection: {error}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        if let Err(error) = socket.set_nodelay(true) {
            tracing::debug!("cannot set TCP_NODELAY: {error}");
        }
        let Ok(permit) = Arc::clone(&open).try_acquire_owned() else {
            if let Ok(permit) = Arc::clone(&refusing).try_acquire_owned() {
                tokio::spawn(async move {
                    refuse(socket, max).await;
                    drop(permit);
                });
            }
            continue;
        };
        let service = TowerToHyperService::new(router.clone());
        let http = Arc::clone(&http);
        let stopping = stopping.clone();
        let header_timeout = limits.header_timeout;
        tokio::spawn(async move {
            connection(socket, &http, service, header_timeout, stopping).await;
            drop(permit);
        });
    }
    drop(listener);
    let _ = stop.send(true);
    // Every connection holds a permit until it is closed.
    let all = u32::try_from(max).unwrap_or(u32::MAX);
    let _ = open.acquire_many(all).await;
    Ok(())
}

/// Serves one connection: its first head read by `head`, the rest by hyper, until it closes or
/// the server stops (then after its current response).
async fn connection(
    socket: TcpStream,
    http: &Http1,
    service: TowerToHyperService<Router>,
    header_timeout: Duration,
    mut stopping: watch::Receiver<bool>,
) {
    let mut stop = std::pin::pin!(async move {
        let _ = stopping.wait_for(|stop| *stop).await;
    });
    // A head that does not come in time is closed without an answer, as hyper does; so is a
    // connection that has sent none when the server stops.
    let first = tokio::time::timeout(header_timeout, head::first_request(socket));
    let io = tokio::select! {
        first = first => match first {
            Ok(Ok(io)) => io,
            Ok(Err((socket, error))) => return head::refuse(socket, error).await,
            Err(_) => return,
        },
        () = stop.as_mut() => return,
    };
    let connection = http
        .serve_connection(TokioIo::new(io), service)
        .with_upgrades();
    let mut connection = std::pin::pin!(connection);
    tokio::select! {
        served = connection.as_mut() => log_end(served),
        () = stop => {
            connection.as_mut().graceful_shutdown();
            log_end(connection.await);
        }
    }
}

fn log_end(served: Result<(), hyper::Error>) {
    if let Err(error) = served {
        tracing::debug!("connection ended: {error}");
    }
}

/// Answers a connection over the limit with a 503 and closes it.
async fn refuse(mut socket: TcpStream, max: usize) {
    let error = ApiError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        "too_many_connections",
        format!("the server has {max} connections open, its limit; try again shortly"),
    );
    let write = async {
        head::answer(&mut socket, &error).await;
        socket.shutdown().await
    };
    let _ = tokio::time::timeout(REFUSAL_TIMEOUT, write).await;
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_limit_leaves_room_below_the_open_file_limit() {
        let (soft, _) = rlimit::getrlimit(rlimit::Resource::NOFILE).unwrap_or((1024, 1024));
        let limit = connection_limit(usize::MAX) as u64;
        assert!(limit < soft, "{limit} of {soft}");
        assert_eq!(connection_limit(10), 10);
    }
}
