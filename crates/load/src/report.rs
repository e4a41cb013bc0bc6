//! What a load test measured, as a table for people and JSON for scripts.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use serde::Serialize;

use crate::Options;
use crate::client::Outcome;

/// The server's memory around the test, in bytes.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Memory {
    pub(crate) rss_before: u64,
    pub(crate) peak: u64,
}

/// Percentiles of a latency, in milliseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Latency {
    /// Half the samples are at most this.
    pub p50_ms: f64,
    /// 99 % of the samples are at most this.
    pub p99_ms: f64,
    /// The largest sample.
    pub max_ms: f64,
}

/// The result of one load test.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Report {
    /// Runs started.
    pub runs: usize,
    /// Deltas per run.
    pub tokens: u32,
    /// The brain's pace per run, tokens/s.
    pub rate: f64,
    /// Time over which the runs were started.
    pub ramp_ms: u64,
    /// The most runs streaming at once.
    pub peak_open: usize,
    /// Runs that got every delta and ended `completed`.
    pub complete_runs: usize,
    /// Runs that did not (refused, broken, short, timed out), by what went wrong.
    pub errors: BTreeMap<String, usize>,
    /// Deltas received by all clients.
    pub deltas: u64,
    /// From the first request to the last byte.
    pub wall_s: f64,
    /// `deltas / wall_s`.
    pub delivered_tokens_per_s: f64,
    /// Each delta's lateness against its run's schedule (see the crate docs).
    pub added_latency: Latency,
    /// From sending a request to its first delta.
    pub first_token: Latency,
    /// The server's resident memory before the runs, bytes (a server this tool started).
    pub rss_before: Option<u64>,
    /// The server's peak resident memory, bytes.
    pub rss_peak: Option<u64>,
    /// `(rss_peak - rss_before) / runs`, bytes.
    pub memory_per_run: Option<u64>,
    /// CPU time the server used during the test, seconds.
    pub server_cpu_s: Option<f64>,
    /// CPU time this load generator used, seconds (it shares the machine).
    pub client_cpu_s: Option<f64>,
}

impl Report {
    pub(crate) fn new(
        options: &Options,
        outcomes: &[Outcome],
        wall: Duration,
        peak_open: usize,
        memory: Option<Memory>,
        server_cpu: Option<Duration>,
    ) -> Report {
        let mut errors = BTreeMap::new();
        for error in outcomes.iter().filter_map(|outcome| outcome.error.as_ref()) {
            *errors.entry(error.clone()).or_insert(0) += 1;
        }
        let deltas: u64 = outcomes
            .iter()
            .map(|outcome| u64::from(outcome.deltas))
            .sum();
        let mut added: Vec<u32> = outcomes
            .iter()
            .flat_map(|outcome| outcome.added_us.iter().copied())
            .collect();
        let mut first: Vec<u32> = outcomes
            .iter()
            .filter_map(|outcome| outcome.first_token)
            .map(|first| u32::try_from(first.as_micros()).unwrap_or(u32::MAX))
            .collect();
        let runs = options.runs;
        Report {
            runs,
            tokens: options.tokens,
            rate: options.rate,
            ramp_ms: u64::try_from(options.ramp.as_millis()).unwrap_or(u64::MAX),
            peak_open,
            complete_runs: outcomes.iter().filter(|outcome| outcome.complete).count(),
            errors,
            deltas,
            wall_s: wall.as_secs_f64(),
            delivered_tokens_per_s: deltas as f64 / wall.as_secs_f64().max(f64::EPSILON),
            added_latency: latency(&mut added),
            first_token: latency(&mut first),
            rss_before: memory.map(|memory| memory.rss_before),
            rss_peak: memory.map(|memory| memory.peak),
            memory_per_run: memory
                .map(|memory| memory.peak.saturating_sub(memory.rss_before) / runs as u64),
            server_cpu_s: server_cpu.map(|cpu| cpu.as_secs_f64()),
            client_cpu_s: crate::spawn::cpu_of("/proc/self/stat")
                .ok()
                .map(|cpu| cpu.as_secs_f64()),
        }
    }

    /// Every run got every delta and ended `completed`.
    pub fn all_complete(&self) -> bool {
        self.complete_runs == self.runs && self.errors.is_empty()
    }
}

/// Percentiles of samples in microseconds (nearest rank).
pub(crate) fn latency(samples: &mut [u32]) -> Latency {
    if samples.is_empty() {
        return Latency::default();
    }
    samples.sort_unstable();
    let rank = |fraction: f64| {
        let index = ((samples.len() as f64 * fraction).ceil() as usize).clamp(1, samples.len());
        f64::from(samples[index - 1]) / 1000.0
    };
    Latency {
        p50_ms: rank(0.50),
        p99_ms: rank(0.99),
        max_ms: rank(1.0),
    }
}

fn kib(bytes: Option<u64>) -> String {
    bytes.map_or_else(
        || "-".to_owned(),
        |bytes| format!("{:.1} KiB", bytes as f64 / 1024.0),
    )
}

fn seconds(seconds: Option<f64>) -> String {
    seconds.map_or_else(|| "-".to_owned(), |seconds| format!("{seconds:.1} s"))
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "| runs | tokens × rate | ramp | delivered tokens/s | added latency p50 / p99 / max | first token p50 / p99 | memory per run | server CPU | load CPU | complete | errors |"
        )?;
        writeln!(f, "|---|---|---|---|---|---|---|---|---|---|---|")?;
        writeln!(
            f,
            "| {} | {} × {}/s | {} ms | {:.0} | {:.1} / {:.1} / {:.1} ms | {:.1} / {:.1} ms | {} | {} | {} | {} of {} | {} |",
            self.runs,
            self.tokens,
            self.rate,
            self.ramp_ms,
            self.delivered_tokens_per_s,
            self.added_latency.p50_ms,
            self.added_latency.p99_ms,
            self.added_latency.max_ms,
            self.first_token.p50_ms,
            self.first_token.p99_ms,
            kib(self.memory_per_run),
            seconds(self.server_cpu_s),
            seconds(self.client_cpu_s),
            self.complete_runs,
            self.runs,
            self.errors.values().sum::<usize>(),
        )?;
        writeln!(
            f,
            "\nwall {:.1} s, {} deltas, at most {} runs open at once; server RSS {} before, {} at peak",
            self.wall_s,
            self.deltas,
            self.peak_open,
            kib(self.rss_before),
            kib(self.rss_peak),
        )?;
        for (error, count) in &self.errors {
            writeln!(f, "error ×{count}: {error}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_nearest_rank() {
        let mut samples: Vec<u32> = (1..=100).map(|ms| ms * 1000).collect();
        let latency = latency(&mut samples);
        assert_eq!(latency.p50_ms, 50.0);
        assert_eq!(latency.p99_ms, 99.0);
        assert_eq!(latency.max_ms, 100.0);
        assert_eq!(super::latency(&mut []), Latency::default());
    }
}
