//! The agentwire server: the native HTTP API (DESIGN §7) over the runtime.
//!
//! A [`Server`] holds agents and [`Settings`]. `POST /v1/runs` starts a run and streams its
//! events as native SSE (or waits and answers JSON); every run's events go to its event log,
//! which `GET /v1/runs/{id}/events` replays from any point and then follows live; sessions keep
//! the conversation between runs. Runs and sessions live in this process's memory until the
//! store persists them.
//!
//! ```no_run
//! use agentwire_server::{Server, Settings, shutdown_signal};
//! # async fn serve(agents: Vec<agentwire_runtime::Agent>) -> std::io::Result<()> {
//! let server = Server::new(agents, Settings::default());
//! let listener = server.bind().await?;
//! server.serve(listener, shutdown_signal()).await
//! # }
//! ```

mod api;
mod dialects;
mod error;
mod log;
mod server;
mod settings;
mod state;
mod stream;

pub use error::ApiError;
pub use server::{Server, bind, shutdown_signal};
pub use settings::{ConfigFile, DEFAULT_ADDR, ServerSection, Settings};
