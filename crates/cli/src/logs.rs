//! `serve`'s logs: to stderr (stdout carries the address line), filtered by `RUST_LOG` (default
//! `info`), as text for people or one JSON object a line for machines.

use tracing_subscriber::EnvFilter;

/// How log lines are written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum LogFormat {
    /// Readable lines.
    #[default]
    Text,
    /// One JSON object a line (`timestamp`, `level`, `fields`, `target`, `span`, `spans`).
    Json,
}

/// Installs the log subscriber.
pub(crate) fn init(format: LogFormat) {
    let filter = match EnvFilter::try_from_default_env() {
        Ok(filter) => filter,
        Err(error) => {
            if std::env::var_os(EnvFilter::DEFAULT_ENV).is_some() {
                eprintln!("agentwire: RUST_LOG is not a filter ({error}); logging at info");
            }
            EnvFilter::new("info")
        }
    };
    let logs = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    // Fails only if a subscriber is already installed, which then keeps logging.
    let _ = match format {
        LogFormat::Text => logs.try_init(),
        LogFormat::Json => logs.json().try_init(),
    };
}
