//! The server under load: the real `agentwire serve` as a child process, on a free port, with a
//! generated configuration (one scripted agent) in a temporary directory, or the bare floor
//! (`floor.rs`) as a child of this program; and what `/proc` says about its memory and CPU time.
//! `agentwire serve` can be killed with SIGKILL and started again on the same files (the
//! webhooks scenario's `--kill-after`).

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::Context;

use crate::AGENT;
use crate::pin::Cores;

/// A running `agentwire serve`, killed when dropped.
#[derive(Debug)]
pub struct ServerProcess {
    child: Child,
    /// Where it listens.
    pub addr: SocketAddr,
    /// Holds the configuration, the script and the SQLite file; removed when dropped.
    dir: Option<tempfile::TempDir>,
    /// How it was started (`agentwire serve` not pinned), to start it again.
    command: Option<Command>,
}

/// The server's resident memory, in bytes.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Memory {
    /// Now (`VmRSS`).
    pub(crate) rss: u64,
    /// The most it ever held (`VmHWM`).
    pub(crate) peak: u64,
}

/// The scripted brain's one turn: `tokens` text deltas of one word, then the finish.
pub(crate) fn script(tokens: u32) -> serde_json::Value {
    let mut turn: Vec<serde_json::Value> = (0..tokens)
        .map(|_| serde_json::json!({"type": "text_delta", "text": "token "}))
        .collect();
    turn.push(serde_json::json!({"type": "finish", "reason": "stop"}));
    serde_json::json!({ "turns": [turn] })
}

/// The configuration: the scripted agent at `rate` tokens/s, and OpenTelemetry export to
/// `otlp_endpoint` when given (`[telemetry]`). The rate is written as a float so a whole number
/// stays a TOML float.
pub(crate) fn config(rate: f64, otlp_endpoint: Option<&str>) -> String {
    let mut config = format!(
        "[[agents]]\nname = \"{AGENT}\"\nprovider = \"scripted\"\nscript = \"script.json\"\n\
         tokens_per_second = {rate:?}\n"
    );
    if let Some(endpoint) = otlp_endpoint {
        config.push_str(&format!("\n[telemetry]\notlp_endpoint = {endpoint:?}\n"));
    }
    config
}

impl ServerProcess {
    /// Starts `agentwire serve` with a scripted agent streaming `tokens` deltas per run at
    /// `rate`, and waits until it listens.
    ///
    /// # Errors
    /// When the files cannot be written, the binary not started, or it does not say where it
    /// listens.
    pub fn start(
        agentwire: &Path,
        tokens: u32,
        rate: f64,
        database_url: Option<&str>,
    ) -> anyhow::Result<ServerProcess> {
        Self::start_agentwire(agentwire, tokens, rate, database_url, "", None, None)
    }

    /// [`ServerProcess::start`] with `more` appended to its configuration (TOML tables).
    ///
    /// # Errors
    /// As [`ServerProcess::start`].
    pub(crate) fn start_with(
        agentwire: &Path,
        tokens: u32,
        rate: f64,
        database_url: Option<&str>,
        more: &str,
    ) -> anyhow::Result<ServerProcess> {
        Self::start_agentwire(agentwire, tokens, rate, database_url, more, None, None)
    }

    /// [`ServerProcess::start`] on `cores.server` alone (a `rate` of 0: as fast as possible),
    /// exporting its traces to `otlp_endpoint` when given.
    ///
    /// # Errors
    /// As [`ServerProcess::start`], and when it cannot be pinned.
    pub(crate) fn start_pinned(
        agentwire: &Path,
        tokens: u32,
        rate: f64,
        database_url: Option<&str>,
        cores: Cores,
        otlp_endpoint: Option<&str>,
    ) -> anyhow::Result<ServerProcess> {
        Self::start_agentwire(
            agentwire,
            tokens,
            rate,
            database_url,
            "",
            Some(cores),
            otlp_endpoint,
        )
    }

    /// Starts the bare floor (`agentwire-load floor`, from the binary `load`) on
    /// `cores.server` alone, answering with `tokens` deltas per run.
    ///
    /// # Errors
    /// When it cannot be started or pinned, or does not say where it listens.
    pub(crate) fn start_floor(load: &Path, tokens: u32, cores: Cores) -> anyhow::Result<Self> {
        let mut command = Command::new(load);
        command
            .args(["floor", "--tokens", &tokens.to_string()])
            .stdout(Stdio::piped());
        let child = cores.spawn_server(&mut command)?;
        Self::listening(child, crate::floor::LISTENING, None)
    }

    fn start_agentwire(
        agentwire: &Path,
        tokens: u32,
        rate: f64,
        database_url: Option<&str>,
        more: &str,
        cores: Option<Cores>,
        otlp_endpoint: Option<&str>,
    ) -> anyhow::Result<ServerProcess> {
        let dir = tempfile::tempdir().context("cannot make a temporary directory")?;
        std::fs::write(dir.path().join("script.json"), script(tokens).to_string())?;
        let config_path = dir.path().join("agentwire.toml");
        std::fs::write(
            &config_path,
            format!("{more}\n{}", config(rate, otlp_endpoint)),
        )?;
        let mut command = Command::new(agentwire);
        command
            .arg("serve")
            .arg("--config")
            .arg(&config_path)
            .arg("--data-dir")
            .arg(dir.path())
            .args(["--addr", "127.0.0.1:0"])
            .env_remove("AGENTWIRE_ADDR")
            .env_remove("AGENTWIRE_DATABASE_URL")
            // Traced only when asked (`--otlp`), whatever this environment says.
            .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
            // No line per request: the measure is the serving, as the floor's is (at the
            // default level the access log costs about 13% of closed-loop runs/s).
            .env("RUST_LOG", "warn")
            .stdout(Stdio::piped());
        if let Some(url) = database_url {
            command.args(["--database-url", url]);
        }
        let child = match cores {
            Some(cores) => cores.spawn_server(&mut command)?,
            None => command
                .spawn()
                .with_context(|| format!("cannot start {}", agentwire.display()))?,
        };
        let mut server = Self::listening(child, AGENTWIRE_LISTENING, Some(dir))?;
        if cores.is_none() {
            server.command = Some(command);
        }
        Ok(server)
    }

    /// Kills the server with SIGKILL (no shutdown of any kind: what a crash leaves), waits for
    /// it to be gone, then starts it again with the same configuration, data directory and
    /// database, and waits until it listens (on a new port: [`ServerProcess::addr`] changes).
    /// It blocks while the server starts.
    ///
    /// # Errors
    /// When the server was not started by [`ServerProcess::start`] or
    /// [`ServerProcess::start_with`], or does not start again.
    pub(crate) fn kill_and_restart(&mut self) -> anyhow::Result<()> {
        let command = self
            .command
            .as_mut()
            .context("only an unpinned `agentwire serve` is restarted")?;
        // `Child::kill` is SIGKILL on Unix.
        self.child.kill().context("cannot kill the server")?;
        self.child.wait()?;
        let mut child = command.spawn().context("cannot start the server again")?;
        self.addr = listening_on(&mut child, AGENTWIRE_LISTENING)?;
        // The killed child is reaped; dropping it closes nothing more.
        self.child = child;
        Ok(())
    }

    /// Waits for `child` to print `prefix` and its address on its first line.
    fn listening(
        mut child: Child,
        prefix: &str,
        dir: Option<tempfile::TempDir>,
    ) -> anyhow::Result<ServerProcess> {
        let addr = listening_on(&mut child, prefix)?;
        Ok(ServerProcess {
            child,
            addr,
            dir,
            command: None,
        })
    }

    /// The process id.
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The directory holding the configuration and, unless another database was asked for,
    /// the SQLite file (`agentwire.db`) and its write-ahead log; none for the floor.
    pub(crate) fn data_dir(&self) -> Option<&Path> {
        self.dir.as_ref().map(tempfile::TempDir::path)
    }

    /// The process's resident memory now and at its peak.
    pub(crate) fn memory(&self) -> anyhow::Result<Memory> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .context("cannot read the server's /proc status")?;
        let field = |name: &str| -> anyhow::Result<u64> {
            let line = status
                .lines()
                .find_map(|line| line.strip_prefix(name))
                .with_context(|| format!("no {name} in /proc status"))?;
            let kib: u64 = line
                .trim()
                .trim_end_matches("kB")
                .trim()
                .parse()
                .with_context(|| format!("bad {name} line {line:?}"))?;
            Ok(kib * 1024)
        };
        Ok(Memory {
            rss: field("VmRSS:")?,
            peak: field("VmHWM:")?,
        })
    }

    /// The CPU time the process has used (user + system).
    pub(crate) fn cpu(&self) -> anyhow::Result<Duration> {
        cpu_of(&format!("/proc/{}/stat", self.child.id()))
    }
}

/// The CPU time (user + system) in a `/proc/<pid>/stat` file.
pub(crate) fn cpu_of(path: &str) -> anyhow::Result<Duration> {
    let stat = std::fs::read_to_string(path).with_context(|| format!("cannot read {path}"))?;
    // The command name (field 2) may hold spaces; the fields after its `)` are plain.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    // utime and stime are fields 14 and 15, i.e. 11 and 12 after the name, in clock ticks
    // (USER_HZ, which Linux fixes at 100 for every program).
    let ticks = |index: usize| -> anyhow::Result<u64> {
        fields
            .get(index)
            .and_then(|field| field.parse().ok())
            .with_context(|| format!("bad {path}"))
    };
    Ok(Duration::from_millis((ticks(11)? + ticks(12)?) * 10))
}

/// What `agentwire serve` prints first, before its address.
const AGENTWIRE_LISTENING: &str = "agentwire listening on http://";

/// Waits for `child` to print `prefix` and its address on its first line; kills it if it
/// prints anything else.
fn listening_on(child: &mut Child, prefix: &str) -> anyhow::Result<SocketAddr> {
    let stdout = child.stdout.take().context("the server has no stdout")?;
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line)?;
    let addr = line
        .trim()
        .strip_prefix(prefix)
        .and_then(|addr| addr.parse().ok());
    let Some(addr) = addr else {
        let _ = child.kill();
        let _ = child.wait();
        anyhow::bail!("the server did not say where it listens (it printed {line:?})");
    };
    Ok(addr)
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
