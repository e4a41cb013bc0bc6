//! Tracing spans: one per request (tower-http's `TraceLayer`: method, URI, version; its
//! response and failure events at DEBUG and ERROR) and one per run, `run{run_id, agent,
//! session, node}`.
//!
//! The run span covers everything the run does: the server's task that moves its events, and
//! the runtime's orchestrator and tool tasks, which `Agent::start` spawns in the caller's
//! current span. So every log line a run causes, a tool's included, names the run.

use agentwire_core::{RunId, SessionId};
use tower_http::classify::{ServerErrorsAsFailures, SharedClassifier};
use tower_http::trace::{DefaultMakeSpan, TraceLayer};
use tracing::{Level, Span};

/// The span a run's work runs in.
pub(crate) fn run(run_id: &RunId, agent: &str, session: &SessionId, node: &str) -> Span {
    tracing::info_span!("run", run_id = %run_id, agent, session = %session, node)
}

/// The request spans' layer.
pub(crate) fn requests() -> TraceLayer<SharedClassifier<ServerErrorsAsFailures>> {
    TraceLayer::new_for_http().make_span_with(DefaultMakeSpan::new().level(Level::INFO))
}
