//! A stand-in OpenTelemetry collector for `--otlp`: an HTTP server on loopback that takes every
//! OTLP/HTTP post (`/v1/traces`, `/v1/metrics`) and answers 200 with an empty body, counting
//! what it was sent. Enough for the server's exporter to do all its work (encode, post, wait for
//! the answer), so a run with it measures what tracing costs the server, not a backend.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::routing::post;

/// What the collector was sent so far.
#[derive(Debug, Default)]
pub struct Received {
    /// Posts of either kind.
    pub posts: AtomicU64,
    /// Their body bytes.
    pub bytes: AtomicU64,
}

/// Starts the collector on this runtime; its base URL (the `otlp_endpoint`) and its counts.
///
/// # Errors
/// When no loopback port can be bound.
pub async fn start() -> anyhow::Result<(String, Arc<Received>)> {
    async fn take(State(received): State<Arc<Received>>, body: Bytes) -> &'static str {
        received.posts.fetch_add(1, Ordering::Relaxed);
        received
            .bytes
            .fetch_add(body.len() as u64, Ordering::Relaxed);
        ""
    }
    let received = Arc::new(Received::default());
    let app = Router::new()
        .route("/v1/traces", post(take))
        .route("/v1/metrics", post(take))
        .with_state(Arc::clone(&received));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}", listener.local_addr()?);
    tokio::spawn(async move { axum::serve(listener, app).await });
    Ok((url, received))
}
