//! [`ClientError`]: everything a client call can fail with, the server's own
//! `{"error": {"code", "message"}}` answers kept whole.

use agentwire_core::AccumulateError;
use agentwire_dialects::DecodeError;

/// Why a client call failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// The base URL is not an http(s) URL.
    #[error("invalid server URL {url:?}: {reason}")]
    InvalidUrl {
        /// The URL given.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The API key cannot be sent in a header (it must be visible ASCII).
    #[error("an API key must be visible ASCII")]
    InvalidApiKey,
    /// The server refused the request with its stable error: `{"error": {"code", "message"}}`.
    #[error("the server answered {status} {code}: {message}")]
    Api {
        /// The HTTP status.
        status: u16,
        /// The server's stable code, e.g. `unknown_agent`, `input_refused`, `unauthorized`.
        code: String,
        /// What went wrong, for people.
        message: String,
    },
    /// The server answered with a status and a body that is not an agentwire error (a proxy,
    /// another program on the port).
    #[error("the server answered {status}: {body}")]
    UnexpectedStatus {
        /// The HTTP status.
        status: u16,
        /// The start of the body.
        body: String,
    },
    /// The request could not be sent or its answer not read.
    #[error("request failed: {0}")]
    Http(#[from] reqwest::Error),
    /// A JSON answer did not have the shape this client reads.
    #[error("unexpected answer from the server: {0}")]
    Body(#[source] serde_json::Error),
    /// The event stream held a malformed frame.
    #[error("malformed event stream: {0}")]
    Decode(#[from] DecodeError),
    /// An event did not fit the run's stream so far (the accumulator refused it).
    #[error("event out of place: {0}")]
    Accumulate(#[from] AccumulateError),
    /// The stream did not go on with the next event: one was skipped (`got` > `expected`) or
    /// repeated (`got` < `expected`).
    #[error("the event stream went on with event {got} where event {expected} was due")]
    Gap {
        /// The event that should have come next.
        expected: u64,
        /// The event that came.
        got: u64,
    },
    /// The stream broke more often in a row than the reconnect policy allows.
    #[error("the event stream broke {attempts} times in a row; last: {last}")]
    Disconnected {
        /// How many reconnects were tried.
        attempts: u32,
        /// The last failure.
        last: Box<ClientError>,
    },
    /// The stream broke before the server named the run, so there is nothing to resume.
    #[error("the stream broke before the run was named; it cannot be resumed")]
    NoRunId,
    /// A stream ended cleanly before its run settled (a proxy cut it at a frame boundary).
    #[error("the event stream ended before the run settled")]
    EndedEarly,
}

impl ClientError {
    /// The server's error code, when the server refused the request.
    pub fn code(&self) -> Option<&str> {
        match self {
            ClientError::Api { code, .. } => Some(code),
            _ => None,
        }
    }
}
