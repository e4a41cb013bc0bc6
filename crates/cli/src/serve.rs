//! `agentwire serve`: the server on the embedded default of DESIGN §11, or on a configuration
//! file. It prints the address it listens on (`listening on http://…`), so a free port picked
//! with `--addr 127.0.0.1:0` can be read by whoever started it. The store is
//! `--database-url` (or `AGENTWIRE_DATABASE_URL`), else the file's `[server] database_url`, else
//! `sqlite://<data-dir>/agentwire.db`.

use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use agentwire_runtime::AgentConfig;
use agentwire_server::{ConfigFile, Server, shutdown_signal};
use anyhow::Context;

/// What `serve` was asked for.
#[derive(Debug)]
pub(crate) struct ServeArgs {
    pub(crate) config: Option<PathBuf>,
    pub(crate) addr: Option<SocketAddr>,
    pub(crate) data_dir: PathBuf,
    pub(crate) database_url: Option<String>,
}

pub(crate) async fn run(args: ServeArgs) -> anyhow::Result<ExitCode> {
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
    let mut settings = file.server.settings();
    if let Some(addr) = args.addr {
        settings.addr = addr;
    }
    if let Some(url) = args.database_url {
        settings.database_url = Some(url);
    }
    if settings.database_url.is_none() {
        let file = args.data_dir.join("agentwire.db");
        settings.database_url = Some(format!("sqlite://{}", file.display()));
    }
    let server = Server::open(agents, settings)
        .await
        .context("cannot open the store")?;
    let listener = server
        .bind()
        .await
        .with_context(|| format!("cannot listen on {}", server.settings().addr))?;
    let local = listener.local_addr()?;
    let mut stdout = std::io::stdout();
    writeln!(stdout, "agentwire listening on http://{local}")?;
    stdout.flush()?;
    server.serve(listener, shutdown_signal()).await?;
    Ok(ExitCode::SUCCESS)
}
