//! Anthropic Messages streaming.

pub mod events;
mod request;

pub use events::EventParser;
