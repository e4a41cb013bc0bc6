//! agentwire-store: the durable half of the server. Sessions, their messages, runs,
//! and each run's event log, on SQLite (the default, one file in WAL mode) or PostgreSQL (many
//! nodes sharing one database, with LISTEN/NOTIFY between them).
//!
//! The event log is the source of truth: a stream is resumed by replaying it after the last seq
//! a client saw, and a run's row (status, usage, error) is a projection kept in step with the
//! `run_status` events appended to it. Every write returns only after its transaction commits,
//! so whatever the server acknowledges survives a crash of the process. `list_sessions` pages
//! through an owner's sessions, most recently updated first, for a client's sessions list.
//!
//! ```no_run
//! # async fn example() -> Result<(), agentwire_store::StoreError> {
//! use agentwire_store::Store;
//! let store = Store::open("sqlite://.agentwire/agentwire.db").await?;
//! let session = store.create_session(&"ses_1".into(), None).await?;
//! # Ok(()) }
//! ```

mod batch;
mod checkpoint;
mod compact;
mod delivery;
mod error;
mod event_log;
mod group;
mod inbox;
mod input;
mod lease;
mod notice;
mod owners;
mod retention;
mod run;
mod run_list;
mod session;
mod session_list;
mod shared_state;
mod sqlite_file;
mod store;
mod webhook;

pub use delivery::{Delivery, DeliveryOutcome};
pub use error::StoreError;
pub use event_log::{BatchBuilder, EventBatch, INCOMPLETE_KEY, INTERRUPTED};
pub use group::{Group, GroupWriter, Started, Written};
pub use inbox::{InboxEntry, InboxState, NewInboxEntry, Posted};
pub use input::{InputAnswer, Refusal};
pub use notice::{Notice, Notices};
pub use retention::{Compaction, Deletion};
pub use run::RunRecord;
pub use run_list::{RunCursor, RunFilter};
pub use session::SessionRecord;
pub use session_list::{SessionCursor, SessionSummary};
pub use shared_state::{SharedStateRecord, StateHead, StateWrite};
pub use store::Store;
pub use webhook::{StatusSet, WebhookFormat, WebhookRecord};
