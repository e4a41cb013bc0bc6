//! `agentwire`: the command-line tool. Today it reads streams: `inspect` decodes a captured or
//! live stream of any dialect and shows its events and final messages; `convert` re-encodes a
//! stream from one dialect to another.

mod convert;
mod inspect;
mod source;

use std::process::ExitCode;

use agentwire_dialects::Dialect;
use clap::{Args, Parser, Subcommand};

/// agentwire: streaming conversations with AI agents, in every client's wire format.
#[derive(Debug, Parser)]
#[command(name = "agentwire", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Decode a stream of any dialect and print its events and final messages: the tool to reach
    /// for when a stream looks wrong. Exits 1 when the stream is malformed.
    Inspect {
        /// The stream's dialect; sniffed from its first frames when left out.
        #[arg(long, short)]
        dialect: Option<Dialect>,
        /// Print one JSON document (`events`, `messages`, `status`, `usage`, `errors`, `problem`)
        /// instead of the readable report.
        #[arg(long)]
        json: bool,
        /// Leave the events out of the readable report: only the messages and the run's end.
        #[arg(long)]
        no_events: bool,
        #[command(flatten)]
        source: SourceArgs,
    },
    /// Re-encode a stream in another dialect, writing it to stdout as it arrives.
    Convert {
        /// The input's dialect; sniffed from its first frames when left out.
        #[arg(long)]
        from: Option<Dialect>,
        /// The dialect to write.
        #[arg(long)]
        to: Dialect,
        #[command(flatten)]
        source: SourceArgs,
    },
}

/// Where a stream comes from.
#[derive(Debug, Args)]
struct SourceArgs {
    /// A file, `-` for stdin, or an http(s) URL to read live.
    #[arg(default_value = "-")]
    source: String,
    /// For a URL: POST this body (`@FILE` reads it from a file) instead of a GET.
    #[arg(long)]
    data: Option<String>,
    /// For a URL: an extra request header, `Name: value` (repeatable).
    #[arg(long = "header", short = 'H')]
    headers: Vec<String>,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("agentwire: cannot start the async runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async {
        match cli.command {
            Command::Inspect {
                dialect,
                json,
                no_events,
                source,
            } => inspect::run(&source, dialect, inspect::Report { json, no_events }).await,
            Command::Convert { from, to, source } => convert::run(&source, from, to).await,
        }
    });
    match result {
        Ok(code) => code,
        Err(error) => {
            eprintln!("agentwire: {error:#}");
            ExitCode::from(2)
        }
    }
}
