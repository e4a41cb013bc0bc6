//! [`RunsError`]: why hosting a run refused what was asked. It says what went wrong in the
//! terms of runs and sessions; the HTTP edge maps each case to a status and a stable code in one
//! place (`From<RunsError> for ApiError`).

use std::sync::Arc;

use agentwire_core::RunId;
use agentwire_core::json_bounds::BoundsError;
use agentwire_runtime::{InputError, StartError};
use agentwire_store::StoreError;

/// What the run registry refuses, and why.
#[derive(Debug, thiserror::Error)]
pub(crate) enum RunsError {
    /// No run or session by that id that the caller may see (another owner's is not there
    /// either).
    #[error("no {what} '{id}'")]
    NotFound { what: &'static str, id: String },
    /// The server has no agent by that name.
    #[error("no agent named '{0}'")]
    UnknownAgent(String),
    /// The server has no agents at all.
    #[error("the server has no agents")]
    NoAgents,
    /// A session id a client may not choose.
    #[error(
        "session id \"{0}\" is not 1 to {max} letters, digits, '-', '_', '.', ':' or '~'",
        max = crate::runs::sessions::MAX_ID_CHARS
    )]
    InvalidSessionId(String),
    /// More input messages than the server takes in one request.
    #[error("a request may carry at most {limit} messages; this one has {count}")]
    TooManyMessages { limit: usize, count: usize },
    /// The session has a run starting or going (`run` once it has an id).
    #[error("session '{session}' has {} going; answer or cancel it first", run_name(.run.as_ref()))]
    SessionBusy { session: String, run: Option<RunId> },
    /// The run id the client chose is taken.
    #[error("a run with the id '{0}' exists already")]
    RunExists(RunId),
    /// The run has ended: it takes no input and has no live stream.
    #[error("run '{0}' has ended")]
    RunFinished(String),
    /// The runtime refused to start the run.
    #[error(transparent)]
    Start(#[from] StartError),
    /// The run refused the input.
    #[error(transparent)]
    Input(#[from] InputError),
    /// The run refused the input on the node that executes it (`code` is one of
    /// [`REFUSALS`], as [`refusal_code`] names a refusal here).
    #[error("{message}")]
    RefusedElsewhere { code: &'static str, message: String },
    /// A run waiting in the store cannot go on here: its agent is gone, or its checkpoint no
    /// longer fits it (the agent's schema changed). Says why.
    #[error("the waiting run cannot go on: {0}")]
    Unresumable(String),
    /// Another node took the waiting run over (while this one could not renew its lease):
    /// this one let it go; the input is to be sent again, and finds it there.
    #[error("the run moved to another server; send the input again")]
    RunMoved,
    /// The node executing the run did not answer the input in time.
    #[error("the server executing the run did not answer the input in time")]
    NoAnswer,
    /// A shared state the agent's state schema refuses (the message names each problem).
    #[error("{0}")]
    InvalidState(String),
    /// A JSON Patch that does not apply to the session's shared state.
    #[error("{0}")]
    PatchFailed(String),
    /// A shared state (the result of a change, or one sent with a run) past the server's
    /// bounds: deeper than they allow, or larger (`max_state_bytes`). Nothing was written.
    #[error("{message}")]
    StateOutOfBounds {
        bounds: BoundsError,
        message: String,
    },
    /// The session's shared state as stored cannot be read back (written before its bounds
    /// held, or damaged): a `PUT` replaces it; until then its runs and patches are refused.
    #[error(
        "the shared state of session '{session}' cannot be read ({reason}); PUT a new state \
         to replace it"
    )]
    StateUnreadable { session: String, reason: String },
    /// The session's shared state is no longer the version the client named (`If-Match`).
    #[error("the session's state has changed since version {0}")]
    StateChanged(String),
    /// The store failed; nothing of the request was kept.
    #[error("store: {0}")]
    Store(#[source] StoreError),
    /// The group commit holding the request's write failed (the writer logged why).
    #[error("store: the group commit failed: {0}")]
    Commit(Arc<str>),
}

/// The codes an input's refusal has on the wire, whichever node refused it.
pub(crate) const REFUSALS: [&str; 6] = [
    "input_refused",
    "run_finished",
    "unknown_approval",
    "unknown_tool_call",
    "new_turn",
    "invalid_role",
];

/// The stable code of a run's refusal of an input: one of [`REFUSALS`].
pub(crate) fn refusal_code(error: &InputError) -> &'static str {
    match error {
        InputError::Finished { .. } => "run_finished",
        InputError::UnknownApproval { .. } => "unknown_approval",
        InputError::UnknownToolCall { .. } => "unknown_tool_call",
        InputError::NewTurn => "new_turn",
        InputError::Role { .. } => "invalid_role",
        _ => "input_refused",
    }
}

fn run_name(run: Option<&RunId>) -> String {
    run.map_or_else(|| "a run".to_owned(), |run| format!("run '{run}'"))
}

impl RunsError {
    /// No run `id` for this caller.
    pub(crate) fn no_run(id: impl Into<String>) -> Self {
        Self::NotFound {
            what: "run",
            id: id.into(),
        }
    }

    /// A shared state past `bounds`, in the words of `error`.
    pub(crate) fn out_of_bounds(bounds: BoundsError, error: impl std::fmt::Display) -> Self {
        Self::StateOutOfBounds {
            bounds,
            message: error.to_string(),
        }
    }

    /// No session `id` for this caller.
    pub(crate) fn no_session(id: impl Into<String>) -> Self {
        Self::NotFound {
            what: "session",
            id: id.into(),
        }
    }
}

impl From<StoreError> for RunsError {
    fn from(error: StoreError) -> Self {
        match error {
            StoreError::UnreadableState { session, reason } => {
                Self::StateUnreadable { session, reason }
            }
            error => Self::Store(error),
        }
    }
}
