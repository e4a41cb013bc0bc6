//! `agentwire`: the command-line tool. `serve` runs the server; `chat`, `run` and `agents` are
//! its clients (through `agentwire-client`); `inspect` decodes a captured or live stream of any
//! dialect and shows its events and final messages; `convert` re-encodes a stream from one
//! dialect to another.

mod attach;
mod chat;
mod convert;
mod inspect;
mod logs;
mod out;
mod remote;
mod serve;
mod source;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use agentwire_dialects::Dialect;
use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::{Args, Parser, Subcommand};

/// agentwire: streaming conversations with AI agents, in every client's wire format.
#[derive(Debug, Parser)]
#[command(name = "agentwire", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// The server `chat`, `run` and `agents` talk to when no URL is given.
const DEFAULT_URL: &str = "http://127.0.0.1:8080";

#[derive(Debug, Subcommand)]
enum Command {
    /// Chat with an agent in the terminal: answers stream as they are made (text, reasoning
    /// dimmed, tool calls with a spinner and then their result or error, steps), approvals are
    /// y/n questions. Ctrl-C stops the answer; Ctrl-C again, or Ctrl-D, quits.
    Chat {
        /// The agent (default: the server's default agent).
        #[arg(long)]
        agent: Option<String>,
        /// The wire: `native` (a server's base URL) or `ai-sdk` (an AI SDK chat endpoint). A URL
        /// ending in `/api/chat` means `ai-sdk` unless this says otherwise.
        #[arg(long, value_enum)]
        dialect: Option<chat::ChatDialect>,
        #[command(flatten)]
        server: ServerArgs,
        /// The server's base URL, or an AI SDK chat endpoint.
        #[arg(default_value = DEFAULT_URL, env = "AGENTWIRE_URL")]
        url: String,
    },
    /// Run one message to its end and print the run and its messages as JSON. Exit code: 0
    /// completed, 1 failed or rejected, 3 awaiting the client (e.g. an approval), 4 canceled,
    /// 5 incomplete, 2 an error before the run settled.
    Run {
        /// The agent (default: the server's default agent).
        #[arg(long)]
        agent: Option<String>,
        /// Continue this session (its id is in the output of an earlier run).
        #[arg(long)]
        session: Option<String>,
        /// Attach a file to the message (an image for a model that reads images), sent inline
        /// as a `file` part; repeat for several.
        #[arg(long = "file", value_name = "PATH")]
        files: Vec<std::path::PathBuf>,
        /// Start the run in the background: print its id, session and status at once (exit 0)
        /// and leave it running; `agentwire follow RUN_ID` reads it later.
        #[arg(long)]
        background: bool,
        #[command(flatten)]
        server: ServerArgs,
        /// `[URL] MESSAGE...`: the server's base URL (http:// or https://; default
        /// http://127.0.0.1:8080, or `AGENTWIRE_URL`), then the message, whose words are joined
        /// with spaces.
        #[arg(required = true, value_names = ["URL", "MESSAGE"])]
        args: Vec<String>,
    },
    /// Follow a run (one started with `run --background`, or by any client) from its first
    /// event to where it settles, and print it as `run` does, with `run`'s exit codes.
    Follow {
        /// The run.
        run_id: String,
        #[command(flatten)]
        server: ServerArgs,
        /// The server's base URL.
        #[arg(default_value = DEFAULT_URL, env = "AGENTWIRE_URL")]
        url: String,
    },
    /// List your runs on a server, newest first: `id  status  agent  session`, a page at a
    /// time (the next page's command is printed on stderr).
    Runs {
        /// Only this session's runs.
        #[arg(long)]
        session: Option<String>,
        /// Only this agent's runs.
        #[arg(long)]
        agent: Option<String>,
        /// Only runs in these statuses (`in_progress`, `awaiting`, `completed`, …; repeatable).
        #[arg(long = "status")]
        statuses: Vec<String>,
        /// Runs per page (1 to 100).
        #[arg(long)]
        limit: Option<u32>,
        /// The page after a page before (what it printed after `--cursor`).
        #[arg(long)]
        cursor: Option<String>,
        /// Print JSON (`runs`, `next`) instead of one line per run.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        server: ServerArgs,
        /// The server's base URL.
        #[arg(default_value = DEFAULT_URL, env = "AGENTWIRE_URL")]
        url: String,
    },
    /// List a server's agents.
    Agents {
        /// Print JSON instead of one line per agent.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        server: ServerArgs,
        /// The server's base URL.
        #[arg(default_value = DEFAULT_URL, env = "AGENTWIRE_URL")]
        url: String,
    },
    /// Decode a stream of any dialect and print its events and final messages: the tool to reach
    /// for when a stream looks wrong. Exits 1 when the stream is malformed.
    Inspect {
        /// The stream's dialect; sniffed from its first frames when left out.
        #[arg(long, short, value_parser = dialects())]
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
        #[arg(long, value_parser = dialects())]
        from: Option<Dialect>,
        /// The dialect to write.
        #[arg(long, value_parser = dialects())]
        to: Dialect,
        #[command(flatten)]
        source: SourceArgs,
    },
    /// Serve agents over HTTP: the default assistant with no arguments, or the agents and
    /// `[server]` settings of a configuration file. Stops on Ctrl-C or SIGTERM. Logs go to
    /// stderr, filtered by `RUST_LOG` (default `info`: what it serves, each request, each run
    /// that fails).
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
        /// Serve without `api_keys` on an address other than loopback (refused otherwise):
        /// only behind a proxy that authenticates.
        #[arg(long)]
        allow_unauthenticated: bool,
        /// How logs are written to stderr: `text` for people, `json` (one object a line) for
        /// machines.
        #[arg(long, value_enum, default_value_t)]
        log_format: logs::LogFormat,
    },
}

/// How to reach a server.
#[derive(Debug, Args)]
struct ServerArgs {
    /// A bearer key, for a server with `api_keys`.
    #[arg(long, env = "AGENTWIRE_API_KEY", hide_env_values = true)]
    key: Option<String>,
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

/// The dialects by name, so that `--help` lists them and a wrong name is told the choices.
fn dialects() -> impl TypedValueParser<Value = Dialect> {
    PossibleValuesParser::new(Dialect::ALL.iter().map(|dialect| dialect.name()))
        .try_map(|name| name.parse::<Dialect>())
}

/// `run`'s words: the first is the server's URL when it is one (only http and https are
/// spoken) and more follow; the rest is the message, as a shell split it.
fn url_and_message(mut words: Vec<String>) -> (String, String) {
    let url = if words.len() > 1
        && (words[0].starts_with("http://") || words[0].starts_with("https://"))
    {
        words.remove(0)
    } else {
        std::env::var("AGENTWIRE_URL").unwrap_or_else(|_| DEFAULT_URL.to_owned())
    };
    (url, words.join(" "))
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
            Command::Chat {
                agent,
                dialect,
                server,
                url,
            } => {
                chat::run(chat::ChatArgs {
                    url,
                    agent,
                    dialect,
                    key: server.key,
                })
                .await
            }
            Command::Run {
                agent,
                session,
                files,
                background,
                server,
                args,
            } => {
                let (url, message) = url_and_message(args);
                remote::run(remote::RunArgs {
                    url,
                    key: server.key,
                    agent,
                    session,
                    message,
                    files,
                    background,
                })
                .await
            }
            Command::Follow {
                run_id,
                server,
                url,
            } => remote::follow(&url, server.key.as_deref(), &run_id).await,
            Command::Runs {
                session,
                agent,
                statuses,
                limit,
                cursor,
                json,
                server,
                url,
            } => {
                let query = agentwire_client::RunQuery {
                    session_id: session.map(Into::into),
                    agent,
                    statuses,
                    limit,
                    cursor,
                };
                remote::runs(remote::RunsArgs {
                    url,
                    key: server.key,
                    query,
                    json,
                })
                .await
            }
            Command::Agents { json, server, url } => {
                remote::agents(&url, server.key.as_deref(), json).await
            }
            Command::Serve {
                config,
                addr,
                data_dir,
                database_url,
                allow_unauthenticated,
                log_format,
            } => {
                serve::run(serve::ServeArgs {
                    config,
                    addr,
                    data_dir,
                    database_url,
                    allow_unauthenticated,
                    log_format,
                })
                .await
            }
        }
    });
    // `chat` may leave a thread blocked reading the terminal; the work is done, so nothing is
    // waited for.
    runtime.shutdown_background();
    match result {
        Ok(code) => code,
        // The reader had what it wanted (`| head`): a success, as for a pipeline that pipefail
        // checks, rather than SIGPIPE's 141.
        Err(error) if out::closed(&error) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("agentwire: {error:#}");
            ExitCode::from(2)
        }
    }
}
