//! Tracing spans: one per request (tower-http's `TraceLayer`: method, URI, version), whose
//! response is logged at INFO with its status and latency (the time to the response's head: a
//! stream goes on after it) and whose failure at ERROR. Each run has its own span,
//! `run{run_id, agent, session, node}`, made where the run starts (`runs`): it covers the task
//! that moves the run's events and the runtime's orchestrator and tool tasks, which
//! `Agent::start` spawns in the caller's current span, so every log line a run causes names it.

use tower_http::LatencyUnit;
use tower_http::classify::{ServerErrorsAsFailures, SharedClassifier};
use tower_http::trace::{DefaultMakeSpan, DefaultOnResponse, TraceLayer};
use tracing::Level;

/// The request spans' layer.
pub(crate) fn requests() -> TraceLayer<SharedClassifier<ServerErrorsAsFailures>> {
    TraceLayer::new_for_http()
        .make_span_with(DefaultMakeSpan::new().level(Level::INFO))
        .on_response(
            DefaultOnResponse::new()
                .level(Level::INFO)
                .latency_unit(LatencyUnit::Millis),
        )
}
