//! `agentwire serve`: the server on the embedded default (SQLite under the data dir, the default assistant), or on a configuration
//! file. It prints the address it listens on (`listening on http://…`), so a free port picked
//! with `--addr 127.0.0.1:0` can be read by whoever started it.
//!
//! Precedence: the environment (`AGENTWIRE_ADDR`, `AGENTWIRE_DATABASE_URL`) over
//! the flags (`--addr`, `--database-url`) over the file's `[server]`; the store defaults to
//! `sqlite://<data-dir>/agentwire.db`. Logs go to stderr (stdout carries the address line),
//! filtered by `RUST_LOG` (default `info`; e.g. `RUST_LOG=agentwire_server=debug,tower_http=debug`
//! shows every request).

use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use agentwire_runtime::AgentConfig;
use agentwire_server::{ConfigFile, Server, shutdown_signal};
use anyhow::Context;
use tracing_subscriber::EnvFilter;

/// What `serve` was asked for.
#[derive(Debug)]
pub(crate) struct ServeArgs {
    pub(crate) config: Option<PathBuf>,
    pub(crate) addr: Option<SocketAddr>,
    pub(crate) data_dir: PathBuf,
    pub(crate) database_url: Option<String>,
    pub(crate) allow_unauthenticated: bool,
}

/// Installs the log subscriber: stderr, filtered by `RUST_LOG`.
fn init_logs() {
    let filter = match EnvFilter::try_from_default_env() {
        Ok(filter) => filter,
        Err(error) => {
            if std::env::var_os(EnvFilter::DEFAULT_ENV).is_some() {
                eprintln!("agentwire: RUST_LOG is not a filter ({error}); logging at info");
            }
            EnvFilter::new("info")
        }
    };
    // Fails only if a subscriber is already installed, which then keeps logging.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
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
    init_logs();
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
    let mut agents = Vec::new();
    for entry in &file.agents.agents {
        agents.push(entry.build(&base, env).await?);
    }
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
    let server = Server::open(agents, settings)
        .await
        .context("cannot open the store")?;
    let listener = server
        .bind()
        .await
        .with_context(|| format!("cannot listen on {}", server.settings().addr))?;
    let local = listener.local_addr()?;
    // Before the address is printed: whoever reads it may signal at once.
    let shutdown = shutdown_signal();
    let mut stdout = std::io::stdout();
    writeln!(stdout, "agentwire listening on http://{local}")?;
    stdout.flush()?;
    server.serve(listener, shutdown).await?;
    Ok(ExitCode::SUCCESS)
}
