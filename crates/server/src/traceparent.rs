//! W3C trace context in: a request's `traceparent` (and `tracestate`) becomes the parent of the
//! runs it starts, so a run's `invoke_agent` span joins the caller's trace. One middleware
//! ([`join`]) reads the headers with the SDK's `TraceContextPropagator` and keeps the parent
//! as OpenTelemetry's current context while the handler runs; [`Runs::start`] takes it
//! ([`incoming`]), whichever route (native, WebSocket, any dialect) started the run.
//!
//! The layer is mounted only when the server traces: without telemetry no header is read.
//!
//! [`Runs::start`]: crate::runs::Runs::start

use axum::extract::Request;
use axum::http::HeaderMap;
use axum::middleware::Next;
use axum::response::Response;
use opentelemetry::Context;
use opentelemetry::context::FutureExt;
use opentelemetry::propagation::{Extractor, TextMapPropagator};
use opentelemetry::trace::TraceContextExt;
use opentelemetry_sdk::propagation::TraceContextPropagator;

/// Runs the handler with the request's trace context as the current context, when it names a
/// valid one.
pub(crate) async fn join(request: Request, next: Next) -> Response {
    match of_headers(request.headers()) {
        Some(parent) => next.run(request).with_context(parent).await,
        None => next.run(request).await,
    }
}

/// The trace context a request's headers name, if valid.
pub(crate) fn of_headers(headers: &HeaderMap) -> Option<Context> {
    if !headers.contains_key("traceparent") {
        return None;
    }
    let parent = TraceContextPropagator::new().extract(&Headers(headers));
    parent.span().span_context().is_valid().then_some(parent)
}

/// The parent a run started now joins: the current request's trace context, if it named one.
pub(crate) fn incoming() -> Option<Context> {
    let current = Context::current();
    current.has_active_span().then_some(current)
}

/// What the propagator reads from: a request's headers.
struct Headers<'a>(&'a HeaderMap);

impl Extractor for Headers<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|value| value.to_str().ok())
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(|name| name.as_str()).collect()
    }
}
