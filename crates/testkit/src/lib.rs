//! Test-only helpers for agentwire, shared by the test suites of every crate: proptest
//! strategies for the core model ([`strategy`]), a driver that streams any message through
//! the real [`MessageBuilder`](agentwire_core::MessageBuilder) ([`stream`]), the canonical
//! scenario set every dialect is checked against ([`scenarios`]), and golden files
//! ([`golden`]).
//!
//! Only ever a dev-dependency.

pub mod golden;
pub mod scenarios;
pub mod strategy;
pub mod stream;
