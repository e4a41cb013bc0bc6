//! `GET /metrics`: what the server has done, for Prometheus, in the OpenMetrics text format
//! (what Prometheus asks for first; `prometheus-client` writes it).
//!
//! | metric | labels | what |
//! |---|---|---|
//! | `agentwire_runs_started_total` | `agent` | runs started on this process |
//! | `agentwire_runs_ended_total` | `agent`, `status` | runs that reached a terminal status |
//! | `agentwire_runs_in_progress` | `agent` | runs started and not ended (awaiting ones too) |
//! | `agentwire_tokens_total` | `agent`, `kind` (`input`, `output`) | the ended runs' usage |
//! | `agentwire_run_first_delta_seconds` | `agent` | from the start to the first streamed delta a client can read |
//! | `agentwire_run_duration_seconds` | `agent` | from the start to the terminal status |
//! | `agentwire_run_events_total` | | events committed and logged |
//! | `agentwire_event_streams` | | event streams (SSE responses) being sent |
//! | `agentwire_runs_held` | | runs this node executes, held in memory until their last event is stored |
//! | `agentwire_sessions_busy` | | sessions with a run starting or going on this node |
//! | `agentwire_runs_queued` | | runs waiting for a slot under `max_concurrent_runs` (0 without it) |
//! | `agentwire_http_request_duration_seconds` | `method`, `route`, `status` | until the response's head (a stream's is sent at once) |
//!
//! Counting costs a run nothing per event beyond an atomic add per batch: every handle a run
//! touches is resolved when it starts, and its first-delta check stops looking once it has
//! seen one. Histograms (a lock each) are observed once or twice per run and once per
//! request. Everything is per [`Metrics`], not global, so servers in one process count apart.
//!
//! With `api_keys` configured, `/metrics` wants a key like the API (scrape with
//! `authorization: {credentials: …}`): the numbers span every key's runs.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use agentwire_core::{Event, EventKind, RunStatus};
use axum::body::Body;
use axum::extract::{MatchedPath, Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::Response;
use futures::StreamExt;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::{Registry, Unit};

/// What Prometheus is told the body is.
pub(crate) const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The terminal statuses, each counted from zero so every series exists before it moves.
const ENDINGS: [RunStatus; 5] = [
    RunStatus::Completed,
    RunStatus::Failed,
    RunStatus::Canceled,
    RunStatus::Rejected,
    RunStatus::Incomplete,
];

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct AgentLabel {
    agent: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct EndedLabels {
    agent: String,
    status: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TokenLabels {
    agent: String,
    kind: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    method: String,
    route: String,
    status: u16,
}

type Histograms<S> = Family<S, Histogram, fn() -> Histogram>;

fn first_delta_histogram() -> Histogram {
    Histogram::new([
        0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
    ])
}

fn run_histogram() -> Histogram {
    Histogram::new([
        0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 900.0,
    ])
}

fn request_histogram() -> Histogram {
    Histogram::new([
        0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
    ])
}

/// The server's metrics and the registry that writes them.
pub(crate) struct Metrics {
    registry: Registry,
    agents: HashMap<String, Arc<AgentMetrics>>,
    events: Counter,
    streams: Gauge,
    requests: Histograms<RequestLabels>,
    held_runs: Gauge,
    busy_sessions: Gauge,
    queued_runs: Gauge,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

/// One agent's handles, resolved once.
#[derive(Debug)]
struct AgentMetrics {
    started: Counter,
    in_progress: Gauge,
    /// In the order of [`ENDINGS`].
    ended: [Counter; ENDINGS.len()],
    input_tokens: Counter,
    output_tokens: Counter,
    first_delta: Histogram,
    duration: Histogram,
}

impl Metrics {
    /// Metrics for a server with these agents.
    pub(crate) fn new<'a>(agents: impl IntoIterator<Item = &'a str>) -> Self {
        let mut registry = Registry::with_prefix("agentwire");
        let started = Family::<AgentLabel, Counter>::default();
        let ended = Family::<EndedLabels, Counter>::default();
        let in_progress = Family::<AgentLabel, Gauge>::default();
        let tokens = Family::<TokenLabels, Counter>::default();
        let first_delta: Histograms<AgentLabel> =
            Family::new_with_constructor(first_delta_histogram);
        let duration: Histograms<AgentLabel> = Family::new_with_constructor(run_histogram);
        let requests: Histograms<RequestLabels> = Family::new_with_constructor(request_histogram);
        let events = Counter::default();
        let streams = Gauge::default();
        let held_runs = Gauge::default();
        let busy_sessions = Gauge::default();
        let queued_runs = Gauge::default();
        registry.register("runs_started", "Runs started", started.clone());
        registry.register(
            "runs_ended",
            "Runs that reached a terminal status",
            ended.clone(),
        );
        registry.register(
            "runs_in_progress",
            "Runs started and not ended",
            in_progress.clone(),
        );
        registry.register("tokens", "Tokens used by ended runs", tokens.clone());
        registry.register_with_unit(
            "run_first_delta",
            "From a run's start to its first delta readable by clients",
            Unit::Seconds,
            first_delta.clone(),
        );
        registry.register_with_unit(
            "run_duration",
            "From a run's start to its terminal status",
            Unit::Seconds,
            duration.clone(),
        );
        registry.register(
            "run_events",
            "Run events committed and logged",
            events.clone(),
        );
        registry.register("event_streams", "Event streams being sent", streams.clone());
        registry.register(
            "runs_held",
            "Runs this node executes, held in memory until their last event is stored",
            held_runs.clone(),
        );
        registry.register(
            "sessions_busy",
            "Sessions with a run starting or going on this node",
            busy_sessions.clone(),
        );
        registry.register(
            "runs_queued",
            "Runs waiting for a slot to work in (max_concurrent_runs)",
            queued_runs.clone(),
        );
        registry.register_with_unit(
            "http_request_duration",
            "From a request to its response's head",
            Unit::Seconds,
            requests.clone(),
        );
        let agents = agents
            .into_iter()
            .map(|name| {
                let label = AgentLabel {
                    agent: name.to_owned(),
                };
                let ended = ENDINGS.map(|status| {
                    ended.get_or_create_owned(&EndedLabels {
                        agent: name.to_owned(),
                        status: status.name(),
                    })
                });
                let tokens = |kind| {
                    tokens.get_or_create_owned(&TokenLabels {
                        agent: name.to_owned(),
                        kind,
                    })
                };
                let handles = AgentMetrics {
                    started: started.get_or_create_owned(&label),
                    in_progress: in_progress.get_or_create_owned(&label),
                    ended,
                    input_tokens: tokens("input"),
                    output_tokens: tokens("output"),
                    first_delta: first_delta.get_or_create_owned(&label),
                    duration: duration.get_or_create_owned(&label),
                };
                (name.to_owned(), Arc::new(handles))
            })
            .collect();
        Self {
            registry,
            agents,
            events,
            streams,
            requests,
            held_runs,
            busy_sessions,
            queued_runs,
        }
    }

    /// Counts a run of `agent` as started at `at`; the handle counts the rest of its life.
    pub(crate) fn run_started(&self, agent: &str, at: Instant) -> RunMetrics {
        self.run_in_progress(agent, at, true)
    }

    /// A run taken over from the store goes on here: in progress again, not started again (nor
    /// is its first delta timed again).
    pub(crate) fn run_resumed(&self, agent: &str) -> RunMetrics {
        self.run_in_progress(agent, Instant::now(), false)
    }

    fn run_in_progress(&self, agent: &str, at: Instant, starts: bool) -> RunMetrics {
        let agent = self.agents.get(agent).cloned();
        if let Some(agent) = &agent {
            if starts {
                agent.started.inc();
            }
            agent.in_progress.inc();
        }
        RunMetrics {
            agent,
            events: self.events.clone(),
            started: at,
            delta_seen: !starts,
            ended: false,
        }
    }

    /// The OpenMetrics text, with the runs and sessions held now and the runs queued.
    pub(crate) fn encode(&self, (runs, sessions): (usize, usize), queued: usize) -> String {
        self.held_runs.set(i64::try_from(runs).unwrap_or(i64::MAX));
        self.queued_runs
            .set(i64::try_from(queued).unwrap_or(i64::MAX));
        self.busy_sessions
            .set(i64::try_from(sessions).unwrap_or(i64::MAX));
        let mut text = String::new();
        // Writing to a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut text, &self.registry);
        text
    }
}

/// One run's metrics, kept by the task that logs its events.
#[derive(Debug)]
pub(crate) struct RunMetrics {
    agent: Option<Arc<AgentMetrics>>,
    events: Counter,
    started: Instant,
    delta_seen: bool,
    ended: bool,
}

impl RunMetrics {
    /// Counts a batch of the run's events as it becomes readable (committed and logged).
    pub(crate) fn logged(&mut self, batch: &[Event]) {
        self.events.inc_by(batch.len() as u64);
        let Some(agent) = &self.agent else {
            return;
        };
        if !self.delta_seen
            && batch
                .iter()
                .any(|event| matches!(event.kind, EventKind::PartDelta { .. }))
        {
            self.delta_seen = true;
            agent
                .first_delta
                .observe(self.started.elapsed().as_secs_f64());
        }
        // The terminal status is a run's last event.
        let Some(EventKind::RunStatus { status, usage, .. }) = batch
            .last()
            .filter(|event| event.is_own())
            .map(|event| &event.kind)
        else {
            return;
        };
        let Some(index) = ENDINGS.iter().position(|ending| ending == status) else {
            return;
        };
        if self.ended {
            return;
        }
        self.ended = true;
        agent.ended[index].inc();
        agent.in_progress.dec();
        agent.duration.observe(self.started.elapsed().as_secs_f64());
        if let Some(usage) = usage {
            agent.input_tokens.inc_by(usage.input_tokens);
            agent.output_tokens.inc_by(usage.output_tokens);
        }
    }
}

impl Drop for RunMetrics {
    /// A run whose end never became readable (its store failed) is no longer in progress.
    fn drop(&mut self) {
        if let (Some(agent), false) = (&self.agent, self.ended) {
            agent.in_progress.dec();
        }
    }
}

/// Middleware: times every request by its route, and counts the event streams being sent
/// (responses of type `text/event-stream`, from their head until their body is dropped).
pub(crate) async fn track(
    State(metrics): State<Arc<Metrics>>,
    request: Request,
    next: Next,
) -> Response {
    let start = Instant::now();
    let method = request.method().as_str().to_owned();
    // The route pattern, never the path: ids would make a series per request.
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or("unmatched", MatchedPath::as_str)
        .to_owned();
    let response = next.run(request).await;
    metrics
        .requests
        .get_or_create(&RequestLabels {
            method,
            route,
            status: response.status().as_u16(),
        })
        .observe(start.elapsed().as_secs_f64());
    let streams = response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|value| value.as_bytes().starts_with(b"text/event-stream"));
    if !streams || response.status() != StatusCode::OK {
        return response;
    }
    let (parts, body) = response.into_parts();
    metrics.streams.inc();
    let open = StreamOpen(metrics.streams.clone());
    // The closure owns the guard: the count drops when the body does (ended or abandoned).
    let body = body.into_data_stream().map(move |chunk| {
        let _open = &open;
        chunk
    });
    Response::from_parts(parts, Body::from_stream(body))
}

/// An event stream being sent, counted in the gauge until dropped.
struct StreamOpen(Gauge);

impl Drop for StreamOpen {
    fn drop(&mut self) {
        self.0.dec();
    }
}
