//! Runnable examples of the agentwire client SDK, each a program against a running
//! `agentwire serve` (`AGENTWIRE_URL`, default `http://127.0.0.1:8080`):
//!
//! - `cargo run -p agentwire-examples --example chat_turn -- "Hello"`: one turn, text printed as
//!   it streams, then the next message in the same session.
//! - `cargo run -p agentwire-examples --example approval -- --agent writer "Write a.txt"`: answers
//!   each approval request the run asks (`y` on stdin approves).
//! - `cargo run -p agentwire-examples --example resume -- RUN_ID`: follows a run from its first
//!   event, as a client that lost its connection or restarted does.
//!
//! And one that is a server: `cargo run -p agentwire-examples --example custom_handler -- [ADDR]`
//! serves `wordsmith`, a custom agent whose handler writes its answers with the layered response
//! builder, through every dialect.

/// The server the examples talk to: `AGENTWIRE_URL`, else the default address of `agentwire serve`.
pub fn server_url() -> String {
    std::env::var("AGENTWIRE_URL").unwrap_or_else(|_| "http://127.0.0.1:8080".to_owned())
}
