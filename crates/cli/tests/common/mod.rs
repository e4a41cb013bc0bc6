//! The real `agentwire serve` for tests: started in a directory, on a free port, with no
//! provider key or address from the environment, killed when dropped (also when an assertion
//! fails, so no process is left behind).
#![allow(clippy::unwrap_used, dead_code)]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use agentwire_core::Event;
use agentwire_dialects::StreamDecoder;
use agentwire_dialects::native::NativeSseDecoder;

/// A running `agentwire serve`.
pub(crate) struct Server {
    pub(crate) child: Child,
    /// Where it listens, e.g. `http://127.0.0.1:41234`.
    pub(crate) url: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `agentwire serve --addr 127.0.0.1:0 <args>` in `dir` and waits for the line that
/// says where it listens.
pub(crate) fn serve(dir: &Path, args: &[&str]) -> Server {
    let mut all = vec!["--addr", "127.0.0.1:0"];
    all.extend_from_slice(args);
    serve_with(dir, &all, &[])
}

/// Starts `agentwire serve <args>` in `dir` with these environment variables (nothing else of
/// the server's own from the test's environment; logs at `warn`) and waits for the line that
/// says where it listens.
pub(crate) fn serve_with(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Server {
    let mut child = Command::new(env!("CARGO_BIN_EXE_agentwire"))
        .arg("serve")
        .args(args)
        .current_dir(dir)
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("AGENTWIRE_ADDR")
        .env_remove("AGENTWIRE_DATABASE_URL")
        .env("RUST_LOG", "warn")
        .envs(env.iter().copied())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line
        .trim()
        .strip_prefix("agentwire listening on ")
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
        .to_owned();
    Server { child, url }
}

/// Reads SSE chunks into events until `done` says so or the body ends.
pub(crate) async fn read(
    response: &mut reqwest::Response,
    events: &mut Vec<Event>,
    done: impl Fn(&[Event]) -> bool,
) {
    let mut decoder = NativeSseDecoder::default();
    while !done(events) {
        let chunk = tokio::time::timeout(Duration::from_secs(10), response.chunk())
            .await
            .expect("a chunk within 10 s")
            .unwrap();
        let Some(chunk) = chunk else { break };
        decoder.decode(&chunk, events).unwrap();
    }
    events.retain(|event| event.name() != "heartbeat");
}
