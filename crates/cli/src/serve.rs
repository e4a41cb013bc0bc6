//! `agentwire serve`: the server on the embedded default (SQLite under the data dir, the default assistant), or on a configuration
//! file. It prints the address it listens on (`listening on http://…`), so a free port picked
//! with `--addr 127.0.0.1:0` can be read by whoever started it.
//!
//! Precedence: the environment (`AGENTWIRE_ADDR`, `AGENTWIRE_DATABASE_URL`) over
//! the flags (`--addr`, `--database-url`) over the file's `[server]`; the store defaults to
//! `sqlite://<data-dir>/agentwire.db`. Logs go to stderr (stdout carries the address line),
//! filtered by `RUST_LOG` (default `info`: what it serves, each request, each run that fails or
//! ends unfinished; e.g. `RUST_LOG=agentwire_server=debug,tower_http=debug` shows more), as text
//! or, with `--log-format json`, one JSON object a line.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use agentwire_runtime::{AgentConfig, Provider};
use agentwire_server::{ConfigFile, Server, Settings, shutdown_signal};
use anyhow::Context;

use crate::logs::{self, LogFormat};
use crate::out::outln;

/// The demo brain, as the start summary names it: whoever expected a model learns why the
/// answers are canned.
const DEMO: &str = "the demo brain, offline and scripted";
const NO_KEY: &str = " (no OPENAI_API_KEY or ANTHROPIC_API_KEY is set)";

/// What `serve` was asked for.
#[derive(Debug)]
pub(crate) struct ServeArgs {
    pub(crate) config: Option<PathBuf>,
    pub(crate) addr: Option<SocketAddr>,
    pub(crate) data_dir: PathBuf,
    pub(crate) database_url: Option<String>,
    pub(crate) allow_unauthenticated: bool,
    pub(crate) log_format: LogFormat,
}

/// A setting from the environment, which wins over flag and file; unset or empty is `None`.
fn from_env<T: std::str::FromStr>(name: &str) -> anyhow::Result<Option<T>>
where
    T::Err: std::error::Error + Send + Sync + 'static,
{
    match std::env::var(name) {
        Ok(text) if !text.is_empty() => text
            .parse()
            .map(Some)
            .with_context(|| format!("{name}={text:?} is not valid")),
        _ => Ok(None),
    }
}

pub(crate) async fn run(args: ServeArgs) -> anyhow::Result<ExitCode> {
    logs::init(args.log_format);
    let env = |name: &str| std::env::var(name).ok();
    std::fs::create_dir_all(&args.data_dir)
        .with_context(|| format!("cannot create the data dir {}", args.data_dir.display()))?;
    let (file, base) = match &args.config {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("cannot read {}", path.display()))?;
            let file =
                ConfigFile::from_toml(&text).with_context(|| format!("in {}", path.display()))?;
            let base = path.parent().unwrap_or(Path::new(".")).to_path_buf();
            (file, base)
        }
        None => {
            let mut assistant = AgentConfig::default_assistant(env);
            assistant.workspace = Some(args.data_dir.join("workspace"));
            let mut file = ConfigFile::default();
            file.agents.agents.push(assistant);
            (file, PathBuf::from("."))
        }
    };
    let agents = file.agents.build(&base, env).await?;
    if agents.is_empty() {
        anyhow::bail!("the configuration has no [[agents]]");
    }
    let mut settings = file.settings(env).context("in the [server] table")?;
    settings.allow_unauthenticated |= args.allow_unauthenticated;
    if let Some(addr) = from_env("AGENTWIRE_ADDR")?.or(args.addr) {
        settings.addr = addr;
    }
    if let Some(url) = from_env("AGENTWIRE_DATABASE_URL")?.or(args.database_url) {
        settings.database_url = Some(url);
    }
    if settings.database_url.is_none() {
        let file = args.data_dir.join("agentwire.db");
        settings.database_url = Some(format!("sqlite://{}", file.display()));
    }
    // One open file per connection: as many as the system lets this process have.
    if let Err(error) = rlimit::increase_nofile_limit(u64::MAX) {
        tracing::warn!("cannot raise the open-file limit: {error}");
    }
    // What each agent runs on, for the start summary: read now, as `Server::open` takes them.
    let served: Vec<(String, String)> = file
        .agents
        .agents
        .iter()
        .zip(&agents)
        .map(|(entry, agent)| {
            let brain = match entry.provider {
                // The default assistant is on it for want of a key.
                Provider::Demo if args.config.is_none() => format!("{DEMO}{NO_KEY}"),
                Provider::Demo => DEMO.to_owned(),
                _ => agent.describe(),
            };
            (entry.name.clone(), brain)
        })
        .collect();
    let server = Server::open(agents, settings)
        .await
        .context("cannot open the store")?;
    let listener = server
        .bind()
        .await
        .with_context(|| format!("cannot listen on {}", server.settings().addr))?;
    let local = listener.local_addr()?;
    for (agent, brain) in &served {
        tracing::info!(agent, "serving agent {agent} on {brain}");
    }
    summarize(server.settings(), local, &args.data_dir);
    // Before the address is printed: whoever reads it may signal at once.
    let shutdown = shutdown_signal();
    outln!("agentwire listening on http://{local}")?;
    server.serve(listener, shutdown).await?;
    Ok(ExitCode::SUCCESS)
}

/// Logs where the server listens, what it keeps where, and who may call it.
fn summarize(settings: &Settings, local: SocketAddr, data_dir: &Path) {
    let database = settings
        .database_url
        .as_deref()
        .map_or_else(|| "in memory".to_owned(), without_password);
    tracing::info!(
        "listening on http://{local}; data in {}, database {database}",
        data_dir.display()
    );
    let keys = settings.api_keys.len();
    if keys > 0 {
        tracing::info!("API keys required ({keys} configured)");
    } else if local.ip().is_loopback() {
        tracing::info!("no API keys required: only this machine can reach {local}");
    } else {
        tracing::warn!("no API keys required on {local}: the proxy in front must authenticate");
    }
}

/// A database URL fit for the logs: its password starred out.
fn without_password(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(mut parsed) if parsed.password().is_some() => {
            let _ = parsed.set_password(Some("***"));
            parsed.to_string()
        }
        _ => url.to_owned(),
    }
}
