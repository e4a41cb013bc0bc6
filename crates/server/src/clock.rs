//! The wall clock, as the store's times count it (milliseconds since the epoch).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use agentwire_core::Timestamp;

/// Now.
pub(crate) fn now() -> Timestamp {
    after(Duration::ZERO)
}

/// `later` from now.
pub(crate) fn after(later: Duration) -> Timestamp {
    let since_epoch = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let millis = since_epoch.saturating_add(later).as_millis();
    Timestamp(i64::try_from(millis).unwrap_or(i64::MAX))
}

/// `earlier` before now.
pub(crate) fn before(earlier: Duration) -> Timestamp {
    let since_epoch = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let millis = since_epoch.saturating_sub(earlier).as_millis();
    Timestamp(i64::try_from(millis).unwrap_or(i64::MAX))
}
