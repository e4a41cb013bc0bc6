//! The time a run stamps on its messages, injected like the ids so tests are deterministic.

use std::fmt;
use std::time::{SystemTime, UNIX_EPOCH};

use agentwire_core::Timestamp;

/// Tells the time for `created_at` stamps.
pub trait Clock: Send + Sync + fmt::Debug {
    /// Now, in milliseconds since the Unix epoch.
    fn now(&self) -> Timestamp;
}

/// The system's wall clock. The default.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        // A clock set before 1970 reads as the epoch rather than failing a run.
        let millis = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |elapsed| elapsed.as_millis());
        Timestamp(i64::try_from(millis).unwrap_or(i64::MAX))
    }
}

/// A clock that always tells the same time: for tests and golden transcripts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FixedClock(pub Timestamp);

impl Clock for FixedClock {
    fn now(&self) -> Timestamp {
        self.0
    }
}
