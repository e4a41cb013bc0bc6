//! `agentwire`: the command-line tool. `serve` runs the server; `inspect` decodes a captured or
//! live stream of any dialect and shows its events and final messages; `convert` re-encodes a
//! stream from one dialect to another.

mod convert;
mod inspect;
mod serve;
mod source;

use std::net::SocketAddr;
use std::path::PathBuf;
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
    /// Serve agents over HTTP: the default assistant with no arguments, or the agents and
    /// `[server]` settings of a configuration file. Stops on Ctrl-C or SIGTERM. Logs go to
    /// stderr, filtered by `RUST_LOG` (default `info`).
    Serve {
        /// The configuration file (`[server]` and `[[agents]]`).
        #[arg(long)]
        config: Option<PathBuf>,
        /// Where to listen (default: the file's `[server] addr`, else 127.0.0.1:8080).
        /// `AGENTWIRE_ADDR` overrides it.
        #[arg(long)]
        addr: Option<SocketAddr>,
        /// Where the server keeps its data; the default agent's workspace is under it.
        #[arg(long, default_value = ".agentwire")]
        data_dir: PathBuf,
        /// The store (default: the file's `[server] database_url`, else
        /// `sqlite://<data-dir>/agentwire.db`); `postgres://…` for many nodes.
        /// `AGENTWIRE_DATABASE_URL` overrides it.
        #[arg(long)]
        database_url: Option<String>,
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
    // The server's runs and connections use every core; the stream tools need one thread.
    let mut builder = if matches!(cli.command, Command::Serve { .. }) {
        tokio::runtime::Builder::new_multi_thread()
    } else {
        tokio::runtime::Builder::new_current_thread()
    };
    let runtime = match builder.enable_all().build() {
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
            Command::Serve {
                config,
                addr,
                data_dir,
                database_url,
            } => {
                serve::run(serve::ServeArgs {
                    config,
                    addr,
                    data_dir,
                    database_url,
                })
                .await
            }
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
