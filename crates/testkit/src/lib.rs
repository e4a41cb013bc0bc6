//! Test-only helpers for agentwire, shared by the test suites of every crate: proptest
//! strategies for the core model ([`strategy`]) and a driver that streams any message through
//! the real [`MessageBuilder`](agentwire_core::MessageBuilder) ([`stream`]).
//!
//! Only ever a dev-dependency.

pub mod strategy;
pub mod stream;
