//! [`StoreError`]: what can go wrong talking to the database.

/// An error of the store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The database URL is not one the store can open.
    #[error("bad database URL {url:?}: {reason}")]
    BadUrl {
        /// The URL as given, with any password hidden.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The session does not exist.
    #[error("session {0} not found")]
    SessionNotFound(String),
    /// The run does not exist.
    #[error("run {0} not found")]
    RunNotFound(String),
    /// The run has ended: it takes no more events.
    #[error("run {0} has ended")]
    RunEnded(String),
    /// A session or run with this id exists already.
    #[error("{0} already exists")]
    AlreadyExists(String),
    /// A value read back is not what the store writes (a row written by a newer version, or
    /// damaged).
    #[error("stored data could not be read: {0}")]
    Corrupt(String),
    /// The session's shared state as stored cannot be read back (nested deeper than the JSON
    /// parser goes, or damaged): only replacing it whole helps.
    #[error("the shared state of session {session} cannot be read: {reason}")]
    UnreadableState {
        /// The session.
        session: String,
        /// Why, as the parser says.
        reason: String,
    },
    /// A value could not be written as JSON, or JSON read back could not be decoded.
    #[error("stored JSON: {0}")]
    Json(#[from] serde_json::Error),
    /// A notification listener fell behind and missed this many notices; read the log again.
    #[error("notification listener missed {0} notices")]
    Lagged(u64),
    /// The schema could not be brought up to date.
    #[error("migration failed: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    /// The database refused or failed a statement, or could not be reached.
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
}
