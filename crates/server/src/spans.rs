//! Tracing spans: one per request (tower-http's `TraceLayer`: method, URI, version; its
//! response and failure events at DEBUG and ERROR). Each run has its own span,
//! `run{run_id, agent, session, node}`, made where the run starts (`runs`): it covers the task
//! that moves the run's events and the runtime's orchestrator and tool tasks, which
//! `Agent::start` spawns in the caller's current span, so every log line a run causes names it.

use tower_http::classify::{ServerErrorsAsFailures, SharedClassifier};
use tower_http::trace::{DefaultMakeSpan, TraceLayer};
use tracing::Level;

/// The request spans' layer.
pub(crate) fn requests() -> TraceLayer<SharedClassifier<ServerErrorsAsFailures>> {
    TraceLayer::new_for_http().make_span_with(DefaultMakeSpan::new().level(Level::INFO))
}
