//! [`BrainError`]: why a model call failed.

use thiserror::Error;

/// A model call that failed. Terminal: the stream ends after it.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum BrainError {
    /// The provider answered the request with an error status.
    #[error("the provider answered HTTP {status}: {body}")]
    ProviderRejected {
        /// The HTTP status.
        status: u16,
        /// The response body, as the provider wrote it (may be cut short).
        body: String,
    },
    /// The provider could not be reached, or the connection broke.
    #[error("the provider could not be reached: {message}")]
    Connection {
        /// What went wrong.
        message: String,
    },
    /// The provider's stream broke its own format: a chunk that does not parse, or an end
    /// without a finish.
    #[error("the provider's stream is malformed: {message}")]
    MalformedStream {
        /// What was wrong.
        message: String,
    },
    /// The model reported an error in the stream (a scripted `error` event, a provider's error
    /// chunk).
    #[error("the model failed: {message}")]
    Model {
        /// What the model or provider said.
        message: String,
    },
    /// A brain's configuration is unusable (a script that does not parse, a missing key).
    #[error("invalid brain configuration: {message}")]
    Config {
        /// What is wrong.
        message: String,
    },
}
