//! What the webhooks scenario breaks on purpose, and which latencies that leaves out: a window
//! in which the receiver answers 503 (`--receiver-down 5s..12s`, from the first run's start) and
//! the time between killing the server and its restart. The webhook target times status changes
//! "while the receiver is up"; a change whose way to the receiver met either outage waited for
//! the outage, not for the server's delivery, so its latency is reported apart, with why.

use std::fmt;
use std::str::FromStr;
use std::time::{Duration, SystemTime};

use serde::Serialize;

/// A span of the test, measured from the first run's start: `<from>..<to>`, each a duration
/// (`5s..12s`, `500ms..2s`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    /// When it begins.
    pub from: Duration,
    /// When it ends; after `from`.
    pub to: Duration,
}

/// A [`Window`] that does not read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WindowError(String);

impl fmt::Display for WindowError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for WindowError {}

impl FromStr for Window {
    type Err = WindowError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let (from, to) = text.split_once("..").ok_or_else(|| {
            WindowError(format!(
                "{text:?} is not <from>..<to>, e.g. 5s..12s (times from the first run's start)"
            ))
        })?;
        let duration = |part: &str| {
            humantime::parse_duration(part.trim())
                .map_err(|error| WindowError(format!("{part:?} is not a duration: {error}")))
        };
        let window = Window {
            from: duration(from)?,
            to: duration(to)?,
        };
        if window.to <= window.from {
            return Err(WindowError(format!("{text:?} ends before it begins")));
        }
        Ok(window)
    }
}

impl fmt::Display for Window {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}..{}",
            humantime::format_duration(self.from),
            humantime::format_duration(self.to)
        )
    }
}

/// When the outages happened, by the wall clock the server's payload times are on; each is
/// `[begin, end)`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Outages {
    /// The receiver answered 503.
    pub receiver_down: Option<(SystemTime, SystemTime)>,
    /// From the SIGKILL until the restarted server listened.
    pub server_down: Option<(SystemTime, SystemTime)>,
}

/// A delivered status change on its way: what the latency would be measured over.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Way {
    /// When the server committed it (the payload's `timestamp`).
    pub committed: SystemTime,
    /// When its first delivery answered 2xx arrived.
    pub delivered: SystemTime,
    /// The receiver refused (503) at least one try of it.
    pub refused: bool,
}

/// Why a delivered status change's latency is not counted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Exclusion {
    /// Committed while the receiver was down.
    ReceiverDown,
    /// Committed before the receiver went down, and tried while it was (refused).
    Refused,
    /// Committed before the restarted server listened and delivered after the kill: owed
    /// while the server was down. Among them the `incomplete` the restart gives the runs the
    /// kill cut, committed as it starts, before it listens.
    ServerDown,
}

impl Exclusion {
    /// What it means, for the text report.
    pub fn describe(self) -> &'static str {
        match self {
            Exclusion::ReceiverDown => "committed while the receiver was down",
            Exclusion::Refused => "tried while the receiver was down",
            Exclusion::ServerDown => "owed while the server was down",
        }
    }
}

impl Outages {
    /// Why `way`'s latency is left out, or `None` when it counts: its status change was
    /// committed while the receiver was up, never refused, and neither owed across the kill
    /// nor committed by the restarted server before it listened. The first reason that holds,
    /// in the order of [`Exclusion`].
    pub fn exclusion(&self, way: &Way) -> Option<Exclusion> {
        let within =
            |(begin, end): (SystemTime, SystemTime), at: SystemTime| begin <= at && at < end;
        if self
            .receiver_down
            .is_some_and(|down| within(down, way.committed))
        {
            return Some(Exclusion::ReceiverDown);
        }
        if way.refused {
            return Some(Exclusion::Refused);
        }
        if self
            .server_down
            .is_some_and(|(killed, up)| way.committed < up && way.delivered >= killed)
        {
            return Some(Exclusion::ServerDown);
        }
        None
    }
}
