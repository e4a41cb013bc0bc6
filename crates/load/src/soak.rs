//! The soak (`--soak`): the closed loop of `unpaced.rs` held for minutes against agentwire alone
//! (pinned as there), with the server sampled every few seconds (`sample.rs`), then sampled on
//! through an idle period after the load stops, to see whether memory, open files and the
//! write-ahead log stay flat under load and come back after it. Each sample is printed as it is
//! taken (and written to the CSV), so a soak that goes wrong shows it at once.
//!
//! The verdicts judge the soak's targets: resident memory within 64 MiB of its start once the
//! idle period is over, and flat under load (the last minute's mean within 10% of the second
//! minute's, for memory and runs/s); the write-ahead log must stop growing (its file is not
//! truncated after a checkpoint, only reused from its start, so growth in the last minute
//! means the checkpoints no longer catch up). The peak is reported without a target.

use std::collections::BTreeMap;
use std::fmt;
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use anyhow::Context;
use serde::Serialize;
use tokio::time::Instant;

use crate::endpoint::Endpoint;
use crate::pin::Cores;
use crate::sample::{Sample, read};
use crate::spawn::ServerProcess;
use crate::unpaced::drive;

/// A soak test.
#[derive(Clone, Debug)]
pub struct Soak {
    /// The endpoint every run is posted to.
    pub endpoint: Endpoint,
    /// Connections, each with one run at a time.
    pub conns: usize,
    /// Text deltas per run.
    pub tokens: u32,
    /// How long the load lasts.
    pub load: Duration,
    /// How long the server is watched after the load stops.
    pub idle: Duration,
    /// Time between two samples.
    pub every: Duration,
    /// The `agentwire` binary.
    pub agentwire: PathBuf,
    /// Passed as `--database-url` (default: SQLite in a temporary directory).
    pub database_url: Option<String>,
    /// Where the server and the generator run.
    pub cores: Cores,
    /// Where the samples are written as CSV, as they are taken.
    pub csv: Option<PathBuf>,
}

/// What a soak saw.
#[derive(Clone, Debug, Serialize)]
pub struct SoakReport {
    /// The samples, the first just before the load.
    pub samples: Vec<Sample>,
    /// The load's length, seconds.
    pub load_s: f64,
    /// The idle period's, seconds.
    pub idle_s: f64,
    /// Runs read.
    pub runs: u64,
    /// Runs that got every delta and ended properly.
    pub complete_runs: u64,
    /// Runs that did not, by what went wrong.
    pub errors: BTreeMap<String, u64>,
    /// The server's peak resident memory over its life (`VmHWM`), bytes.
    pub peak_rss: u64,
    /// One per target.
    pub verdicts: Vec<Verdict>,
}

/// One target's judgement.
#[derive(Clone, Debug, Serialize)]
pub struct Verdict {
    /// What is judged.
    pub name: &'static str,
    /// `Some(true)` met, `Some(false)` missed, `None` not judged (no target, or the soak is too
    /// short to judge it).
    pub pass: Option<bool>,
    /// The numbers, in words.
    pub detail: String,
}

/// The CSV's header line.
pub const CSV_HEADER: &str =
    "t_s,phase,rss_bytes,open_files,db_bytes,wal_bytes,runs_per_s,server_busy";

/// Runs the soak; `on_sample` sees each sample as it is taken.
///
/// # Errors
/// When the server cannot be started, pinned or read, or the CSV not written; failed runs are
/// counted, not returned.
pub async fn soak(test: &Soak, mut on_sample: impl FnMut(&Sample)) -> anyhow::Result<SoakReport> {
    anyhow::ensure!(test.conns > 0, "--conns must be at least 1");
    anyhow::ensure!(test.tokens > 0, "--tokens must be at least 1");
    anyhow::ensure!(!test.every.is_zero(), "--sample-every must be more than 0");
    let mut csv = match &test.csv {
        Some(path) => {
            let mut file = std::io::BufWriter::new(
                std::fs::File::create(path)
                    .with_context(|| format!("cannot write {}", path.display()))?,
            );
            writeln!(file, "{CSV_HEADER}")?;
            Some(file)
        }
        None => None,
    };
    crate::raise_file_limit(test.conns, "connections")?;
    test.cores.pin_generator()?;
    let server = ServerProcess::start_pinned(
        &test.agentwire,
        test.tokens,
        0.0,
        test.database_url.as_deref(),
        test.cores,
        None,
    )?;
    tokio::time::sleep(Duration::from_millis(200)).await;

    let ended = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let mut last = (start, read(&server)?, 0);
    let mut samples = vec![sample(0.0, true, &last.1, 0.0, 0.0)];
    let driver = tokio::spawn({
        let ended = Arc::clone(&ended);
        let (addr, endpoint, conns, tokens) = (server.addr, test.endpoint, test.conns, test.tokens);
        let until = start + test.load;
        async move { drive(addr, endpoint, conns, tokens, until, &ended).await }
    });
    let mut record = |sample: &Sample| -> anyhow::Result<()> {
        if let Some(file) = &mut csv {
            write_csv(file, sample)?;
            // A soak that is stopped or fails keeps every row taken so far.
            file.flush()?;
        }
        on_sample(sample);
        Ok(())
    };
    record(&samples[0])?;
    for at in ticks(test.load, test.idle, test.every) {
        tokio::time::sleep_until(start + at).await;
        let now = Instant::now();
        let reading = read(&server)?;
        let runs = ended.load(Ordering::Relaxed);
        let elapsed = now.duration_since(last.0).as_secs_f64().max(f64::EPSILON);
        let cpu = reading.cpu.saturating_sub(last.1.cpu).as_secs_f64();
        let taken = sample(
            now.duration_since(start).as_secs_f64(),
            at <= test.load,
            &reading,
            (runs - last.2) as f64 / elapsed,
            cpu / elapsed,
        );
        record(&taken)?;
        samples.push(taken);
        last = (now, reading, runs);
    }
    let tally = driver.await.context("the load's task failed")?;
    let peak_rss = server.memory()?.peak;
    drop(server);
    let verdicts = verdicts(&samples, test.load, test.idle, peak_rss);
    Ok(SoakReport {
        samples,
        load_s: test.load.as_secs_f64(),
        idle_s: test.idle.as_secs_f64(),
        runs: tally.total,
        complete_runs: tally.complete,
        errors: tally.errors,
        peak_rss,
        verdicts,
    })
}

impl SoakReport {
    /// Every run got every delta and ended properly, and no verdict failed.
    pub fn passed(&self) -> bool {
        self.errors.is_empty()
            && self.runs > 0
            && self
                .verdicts
                .iter()
                .all(|verdict| verdict.pass != Some(false))
    }
}

/// When samples are taken, from the load's start: every `every`, and at the moments the load
/// and the idle period end.
fn ticks(load: Duration, idle: Duration, every: Duration) -> Vec<Duration> {
    let end = load + idle;
    let mut ticks: Vec<Duration> = (1..)
        .map(|n| every * n)
        .take_while(|at| *at < end)
        .collect();
    ticks.extend([load, end]);
    ticks.sort();
    ticks.dedup();
    ticks.retain(|at| !at.is_zero());
    ticks
}

fn sample(
    t_s: f64,
    loaded: bool,
    reading: &crate::sample::Reading,
    runs_per_s: f64,
    busy: f64,
) -> Sample {
    Sample {
        t_s,
        loaded,
        rss: reading.rss,
        open_files: reading.open_files,
        db_bytes: reading.db_bytes,
        wal_bytes: reading.wal_bytes,
        runs_per_s,
        server_busy: busy,
    }
}

fn write_csv(out: &mut impl Write, sample: &Sample) -> std::io::Result<()> {
    writeln!(
        out,
        "{:.1},{},{},{},{},{},{:.1},{:.3}",
        sample.t_s,
        phase(sample),
        sample.rss,
        sample.open_files,
        sample.db_bytes,
        sample.wal_bytes,
        sample.runs_per_s,
        sample.server_busy
    )
}

fn phase(sample: &Sample) -> &'static str {
    if sample.loaded { "load" } else { "idle" }
}

/// The allowed growth of resident memory from the start to the end of the idle period.
const RSS_RETURN: u64 = 64 * MIB;
/// How far the last minute's mean may be from the second minute's.
const FLAT: f64 = 0.10;
const MIB: u64 = 1024 * 1024;
const MINUTE: f64 = 60.0;

/// The most the SQLite WAL may hold at any sample of a soak.
const WAL_BOUND: u64 = 64 * MIB;

fn verdicts(samples: &[Sample], load: Duration, idle: Duration, peak_rss: u64) -> Vec<Verdict> {
    let load_s = load.as_secs_f64();
    let start = samples.first().map_or(0, |sample| sample.rss);
    let mut verdicts = vec![Verdict {
        name: "peak RSS",
        pass: None,
        detail: format!(
            "{} (VmHWM), {} over the start's {}; no target",
            mib(peak_rss),
            mib(peak_rss.saturating_sub(start)),
            mib(start)
        ),
    }];

    let end = samples.last().map_or(0, |sample| sample.rss);
    let growth = end.saturating_sub(start);
    let short = if idle.as_secs_f64() < 2.0 * MINUTE {
        " (the idle period is shorter than the target's 2 minutes)"
    } else {
        ""
    };
    verdicts.push(Verdict {
        name: "RSS after idle",
        pass: Some(growth <= RSS_RETURN),
        detail: format!(
            "{} after {:.0} s idle, {} over the start's {}; target: within {} of the start 2 minutes after the load{short}",
            mib(end),
            idle.as_secs_f64(),
            mib(growth),
            mib(start),
            mib(RSS_RETURN)
        ),
    });

    let loaded: Vec<&Sample> = samples.iter().filter(|sample| sample.loaded).collect();
    let second = |value: fn(&Sample) -> f64| {
        mean(
            loaded
                .iter()
                .filter(|s| s.t_s > MINUTE && s.t_s <= 2.0 * MINUTE)
                .map(|s| value(s)),
        )
    };
    let last = |value: fn(&Sample) -> f64| {
        mean(
            loaded
                .iter()
                .filter(|s| s.t_s > load_s - MINUTE)
                .map(|s| value(s)),
        )
    };
    for (name, value, unit) in [
        (
            "RSS flat",
            (|s: &Sample| s.rss as f64) as fn(&Sample) -> f64,
            "MiB",
        ),
        ("runs/s flat", |s: &Sample| s.runs_per_s, "runs/s"),
    ] {
        let verdict = match (load_s >= 3.0 * MINUTE, second(value), last(value)) {
            (true, Some(second), Some(last)) => {
                let change = (last - second) / second.max(f64::EPSILON);
                let shown = |v: f64| {
                    if unit == "MiB" {
                        format!("{:.1} MiB", v / MIB as f64)
                    } else {
                        format!("{v:.0} runs/s")
                    }
                };
                Verdict {
                    name,
                    pass: Some(change.abs() <= FLAT),
                    detail: format!(
                        "the last minute's mean {} vs the second minute's {} ({:+.1}%); target: within {:.0}%",
                        shown(last),
                        shown(second),
                        change * 100.0,
                        FLAT * 100.0
                    ),
                }
            }
            _ => Verdict {
                name,
                pass: None,
                detail: "not judged: a soak of at least 3 minutes has a second and a last minute"
                    .to_owned(),
            },
        };
        verdicts.push(verdict);
    }

    let wal_max = samples
        .iter()
        .map(|sample| sample.wal_bytes)
        .max()
        .unwrap_or(0);
    let sqlite = samples.iter().any(|sample| sample.db_bytes > 0);
    // The log fills and is cut back all the time, so a sample says little; its largest does.
    let verdict = match (sqlite, load_s >= 2.0 * MINUTE) {
        (false, _) => Verdict {
            name: "WAL max",
            pass: None,
            detail: "not judged: the database is not a SQLite file here".to_owned(),
        },
        (true, true) => Verdict {
            name: "WAL max",
            pass: Some(wal_max <= WAL_BOUND),
            detail: format!(
                "{}; target: at most {} throughout",
                mib(wal_max),
                mib(WAL_BOUND)
            ),
        },
        (true, false) => Verdict {
            name: "WAL max",
            pass: None,
            detail: format!("{}; not judged in a soak under 2 minutes", mib(wal_max)),
        },
    };
    verdicts.push(verdict);
    verdicts
}

fn mean(values: impl Iterator<Item = f64>) -> Option<f64> {
    let (sum, count) = values.fold((0.0, 0_u32), |(sum, count), value| (sum + value, count + 1));
    (count > 0).then(|| sum / f64::from(count))
}

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / MIB as f64)
}

/// The table's header, for the rows [`row`] prints.
pub fn header() -> String {
    "| t (s) | phase | RSS | open files | database | WAL | runs/s | server core busy |\n|---|---|---|---|---|---|---|---|".to_owned()
}

/// One sample as a row of the table.
pub fn row(sample: &Sample) -> String {
    format!(
        "| {:.0} | {} | {} | {} | {} | {} | {:.0} | {:.0}% |",
        sample.t_s,
        phase(sample),
        mib(sample.rss),
        sample.open_files,
        mib(sample.db_bytes),
        mib(sample.wal_bytes),
        sample.runs_per_s,
        sample.server_busy * 100.0
    )
}

impl fmt::Display for SoakReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "\n{} runs in {:.0} s of load, {} complete, {} errors; then {:.0} s idle",
            self.runs,
            self.load_s,
            self.complete_runs,
            self.errors.values().sum::<u64>(),
            self.idle_s
        )?;
        for (error, count) in &self.errors {
            writeln!(f, "error ×{count}: {error}")?;
        }
        for verdict in &self.verdicts {
            let mark = match verdict.pass {
                Some(true) => "PASS",
                Some(false) => "FAIL",
                None => "-",
            };
            writeln!(f, "{mark:4} {}: {}", verdict.name, verdict.detail)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_fall_on_the_period_and_on_the_ends_of_load_and_idle() {
        let secs = Duration::from_secs;
        assert_eq!(
            ticks(secs(12), secs(5), secs(5)),
            vec![secs(5), secs(10), secs(12), secs(15), secs(17)]
        );
        assert_eq!(ticks(secs(10), secs(0), secs(5)), vec![secs(5), secs(10)]);
    }
}
