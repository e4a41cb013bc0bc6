//! Fresh ids for what a run creates: the run itself, its messages, steps, approval requests and
//! the sources its answers cite.
//!
//! The source is injected ([`AgentBuilder::ids`](crate::AgentBuilder::ids)) so that tests get
//! stable ids (`msg_1`, `step_1`, `apr_1`) while a server gets ids that are unique across
//! processes and restarts. Tool call ids are not minted here: they are the provider's, because
//! the provider must see them again in the history.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};

/// What an id is for; each kind has its own prefix.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum IdKind {
    /// A run: `run_…`.
    Run,
    /// A message, the agent's or an input the client sent without an id: `msg_…`.
    Message,
    /// A step (one model call and its tool calls): `step_…`.
    Step,
    /// An approval request: `apr_…`.
    Approval,
    /// A source an answer cites: `src_…`.
    Source,
}

impl IdKind {
    /// The prefix of ids of this kind, without the `_`.
    pub fn prefix(self) -> &'static str {
        match self {
            IdKind::Run => "run",
            IdKind::Message => "msg",
            IdKind::Step => "step",
            IdKind::Approval => "apr",
            IdKind::Source => "src",
        }
    }

    fn slot(self) -> usize {
        match self {
            IdKind::Run => 0,
            IdKind::Message => 1,
            IdKind::Step => 2,
            IdKind::Approval => 3,
            IdKind::Source => 4,
        }
    }
}

/// Mints ids. Shared by every run of an agent, so it must be safe to call from many tasks.
pub trait IdSource: Send + Sync + fmt::Debug {
    /// A fresh id of this kind, never returned before by this source.
    fn next_id(&self, kind: IdKind) -> String;
}

/// The default source: `<prefix>_<UUID v7 as 32 hex digits>`, unique across processes and
/// restarts. Version 7 UUIDs begin with the time, so ids sort by creation in a store's index.
#[derive(Clone, Copy, Debug, Default)]
pub struct UniqueIds;

impl IdSource for UniqueIds {
    fn next_id(&self, kind: IdKind) -> String {
        format!("{}_{}", kind.prefix(), uuid::Uuid::now_v7().simple())
    }
}

/// Deterministic ids for tests and golden transcripts: `msg_1`, `msg_2`, `step_1`, `apr_1`, …,
/// one counter per kind, shared by every run of the agent that holds it.
#[derive(Debug, Default)]
pub struct SequentialIds {
    counters: [AtomicU64; 5],
}

impl IdSource for SequentialIds {
    fn next_id(&self, kind: IdKind) -> String {
        let n = self.counters[kind.slot()].fetch_add(1, Ordering::Relaxed) + 1;
        format!("{}_{n}", kind.prefix())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequential_ids_count_per_kind() {
        let ids = SequentialIds::default();
        assert_eq!(ids.next_id(IdKind::Message), "msg_1");
        assert_eq!(ids.next_id(IdKind::Message), "msg_2");
        assert_eq!(ids.next_id(IdKind::Step), "step_1");
        assert_eq!(ids.next_id(IdKind::Approval), "apr_1");
        assert_eq!(ids.next_id(IdKind::Run), "run_1");
    }

    #[test]
    fn unique_ids_differ_and_sort_by_creation() {
        let ids = UniqueIds;
        let first = ids.next_id(IdKind::Message);
        let second = ids.next_id(IdKind::Message);
        assert!(
            first.starts_with("msg_") && first.len() == 4 + 32,
            "{first}"
        );
        assert_ne!(first, second);
        assert!(first < second, "{first} {second}");
    }
}
