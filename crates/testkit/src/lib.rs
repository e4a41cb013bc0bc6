//! Test-only helpers for agentwire, shared by the test suites of every crate: proptest
//! strategies for the core model ([`strategy`]), a driver that streams any message through
//! the real [`MessageBuilder`](agentwire_core::MessageBuilder) ([`stream`]), the canonical
//! scenario set every dialect is checked against ([`scenarios`]), whole run logs ([`run`]),
//! golden files ([`golden`]), and a fake model provider HTTP server ([`fake_provider`]) with
//! real-format provider streams ([`fake_openai`], [`fake_openai_responses`], [`fake_anthropic`]).
//!
//! Only ever a dev-dependency.

pub mod fake_anthropic;
pub mod fake_openai;
pub mod fake_openai_responses;
pub mod fake_provider;
pub mod golden;
pub mod postgres;
pub mod run;
pub mod scenarios;
pub mod strategy;
pub mod stream;
