//! The subcommands' stdout. A reader that closes it early (`agentwire inspect FILE | head -3`)
//! has had all it wanted: a write that finds the pipe closed fails with [`Closed`], which `main`
//! turns into a quiet exit instead of `println!`'s panic.

use std::fmt;
use std::io::{self, Write};

/// Stdout's reader has gone.
#[derive(Debug)]
pub(crate) struct Closed;

impl fmt::Display for Closed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("stdout is closed")
    }
}

impl std::error::Error for Closed {}

/// A write to stdout's outcome: a broken pipe becomes [`Closed`]; any other error says it was
/// stdout that failed.
pub(crate) fn checked<T>(result: io::Result<T>) -> anyhow::Result<T> {
    result.map_err(|error| match error.kind() {
        io::ErrorKind::BrokenPipe => anyhow::Error::new(Closed),
        _ => anyhow::Error::new(error).context("cannot write to stdout"),
    })
}

/// Writes `text` to stdout now (flushed: output that streams is read as it comes).
pub(crate) fn write(text: &str) -> anyhow::Result<()> {
    let mut stdout = io::stdout().lock();
    checked(
        stdout
            .write_all(text.as_bytes())
            .and_then(|()| stdout.flush()),
    )
}

/// Whether `error` is stdout's reader having gone.
pub(crate) fn closed(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| cause.is::<Closed>())
}

/// `println!` that returns stdout's error (see [`checked`]) instead of panicking on it.
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::out::write(&format!("{}\n", format_args!($($arg)*)))
    };
}

pub(crate) use outln;
