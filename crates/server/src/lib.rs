//! The agentwire server: the native HTTP API over the runtime.
//!
//! A [`Server`] holds agents and [`Settings`]. `POST /v1/runs` starts a run and streams its
//! events as native SSE (or waits and answers JSON); every run's events go to its event log,
//! which `GET /v1/runs/{id}/events` replays from any point and then follows live; sessions keep
//! the conversation between runs. Sessions, runs and every event persist in the store
//! (SQLite or PostgreSQL): a run's events are committed before any client sees them (the
//! batches of all runs together, one transaction at a time), and a restarted server marks the
//! runs it left unfinished `incomplete` and replays them.
//! The same protocol runs over a WebSocket (`GET /v1/ws`, several runs per connection), and
//! `/openapi.json` with its `/docs` page describes every route. `/` serves the web UI, a chat
//! over the native API built into the binary.
//! Around the API: `/metrics` for Prometheus, CORS for the configured origins, a tracing span
//! per request and per run, and the server's ceilings over every agent's limits.
//!
//! ```no_run
//! use agentwire_server::{Server, Settings, shutdown_signal};
//! # async fn serve(agents: Vec<agentwire_runtime::Agent>) -> Result<(), Box<dyn std::error::Error>> {
//! let server = Server::open(agents, Settings::default()).await?;
//! let listener = server.bind().await?;
//! server.serve(listener, shutdown_signal()).await?;
//! # Ok(())
//! # }
//! ```

mod auth;
mod body;
mod caller;
mod clock;
mod cors;
mod dialects;
mod docs;
mod error;
mod guard;
mod head;
mod leases;
mod linger;
mod listener;
mod metrics;
mod native;
mod openapi;
mod retention;
mod routes;
mod run_list;
mod runs;
mod server;
mod session_input;
mod session_list;
mod session_state;
mod settings;
mod spans;
mod state;
mod stream;
mod telemetry;
mod traceparent;
mod webhooks;
mod webui;
mod ws;

pub use error::ApiError;
pub use leases::LEASE_LOST;
pub use server::{SHUTDOWN, Server, bind, shutdown_signal};
pub use settings::{
    ApiKey, ConfigFile, DEFAULT_ADDR, KeyEntry, NamedKey, OtlpProtocol, ServerSection, Settings,
    SettingsError, StoreSection, TelemetrySection, TelemetrySettings, WebhookSettings,
    WebhooksSection,
};
