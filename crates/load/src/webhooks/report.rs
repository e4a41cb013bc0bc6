//! What the webhooks scenario measured: the status changes the server stored set against the
//! deliveries the receiver took ([`tally`]), as a table for people and JSON for scripts.

use std::collections::{BTreeMap, HashMap};
use std::fmt;

use serde::Serialize;

use super::outage::{Exclusion, Outages, Way};
use super::receiver::Taken;
use crate::report::{Latency, latency};

/// Never-delivered status changes named in the report, at most.
const MISSING_NAMED: usize = 10;

/// What the webhooks test measured.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct WebhookReport {
    /// Background runs asked for.
    pub runs: usize,
    /// Runs the server started (answered 202).
    pub started: usize,
    /// Starts the kill cut before their answer, each started again on the restarted server
    /// (the run may have been stored as well; `runs_stored` counts it then).
    pub cut_starts: usize,
    /// Runs the server stored from the webhook's creation on (`GET /v1/runs`).
    pub runs_stored: usize,
    /// Runs by the status they ended with (the last `run_status` of their event logs).
    pub ended: BTreeMap<String, usize>,
    /// Status changes in the event logs of the runs stored and started.
    pub status_changes: usize,
    /// Those delivered at least once (answered 2xx).
    pub delivered: usize,
    /// Requests the receiver answered 503 while it was down (each is retried).
    pub refused: usize,
    /// Deliveries answered 2xx of a status change that had already arrived (at least once).
    pub repeated: usize,
    /// Status changes delivered that no event log holds, or with another status than it.
    pub unexpected: usize,
    /// From a status change's commit to its first delivery, for the changes it counts: those
    /// committed while the receiver was up that met neither outage (see `excluded`).
    pub latency: Latency,
    /// How many delivered status changes `latency` counts.
    pub latency_counted: usize,
    /// Delivered status changes `latency` leaves out, by why.
    pub excluded: BTreeMap<Exclusion, usize>,
    /// The same latency over the changes left out.
    pub excluded_latency: Latency,
    /// When the server was killed with SIGKILL, seconds after the first run's start.
    pub killed_at_s: Option<f64>,
    /// From the kill until the restarted server listened, seconds.
    pub server_down_s: Option<f64>,
    /// When the receiver answered 503, `[from, to]` seconds after the first run's start.
    pub receiver_down_s: Option<[f64; 2]>,
    /// Requests written to the `--record` file.
    pub recorded: Option<usize>,
    /// Status changes never delivered, by `webhook-id` (the first few).
    pub missing: Vec<String>,
    /// From the first run started to the last status change delivered, seconds.
    pub wall_s: f64,
    /// First deliveries per second over the wall time.
    pub deliveries_per_s: f64,
    /// Runs not started, event logs not read or not well formed, by what went wrong.
    pub errors: BTreeMap<String, usize>,
}

impl WebhookReport {
    /// Every run started, every status change of every run was delivered, nothing was
    /// delivered that did not happen, and every log read well.
    pub fn passed(&self) -> bool {
        self.errors.is_empty()
            && self.started == self.runs
            && self.delivered == self.status_changes
            && self.status_changes > 0
            && self.unexpected == 0
    }
}

/// The status changes the logs hold (`changes`: status by `webhook-id`) set against what the
/// receiver `taken`.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Tally {
    /// Status changes delivered at least once.
    pub(crate) delivered: usize,
    /// Latencies counted, microseconds.
    pub(crate) counted_us: Vec<u32>,
    /// Latencies left out, microseconds.
    pub(crate) excluded_us: Vec<u32>,
    /// How many were left out, by why.
    pub(crate) excluded: BTreeMap<Exclusion, usize>,
    /// Delivered changes no log holds, or holds with another status.
    pub(crate) unexpected: usize,
    /// Changes never delivered, sorted.
    pub(crate) missing: Vec<String>,
}

/// Sets the changes in the logs against the deliveries taken, leaving out of the latency those
/// `outages` account for.
pub(crate) fn tally(changes: &HashMap<String, String>, taken: &Taken, outages: &Outages) -> Tally {
    let mut tally = Tally::default();
    for (id, status) in changes {
        let Some(arrival) = taken.first.get(id) else {
            tally.missing.push(id.clone());
            continue;
        };
        tally.delivered += 1;
        if &arrival.status != status {
            tally.unexpected += 1;
        }
        let micros = arrival
            .arrived
            .duration_since(arrival.committed)
            .unwrap_or_default()
            .as_micros();
        let micros = u32::try_from(micros).unwrap_or(u32::MAX);
        let way = Way {
            committed: arrival.committed,
            delivered: arrival.arrived,
            refused: taken.refused_ids.contains(id),
        };
        match outages.exclusion(&way) {
            None => tally.counted_us.push(micros),
            Some(why) => {
                *tally.excluded.entry(why).or_insert(0) += 1;
                tally.excluded_us.push(micros);
            }
        }
    }
    tally.unexpected += taken
        .first
        .keys()
        .filter(|id| !changes.contains_key(*id))
        .count();
    tally.missing.sort();
    tally
}

impl Tally {
    /// Fills the report's counts and latencies.
    pub(crate) fn into_report(mut self, report: &mut WebhookReport) {
        report.delivered = self.delivered;
        report.latency_counted = self.counted_us.len();
        report.latency = latency(&mut self.counted_us);
        report.excluded_latency = latency(&mut self.excluded_us);
        report.excluded = self.excluded;
        report.unexpected = self.unexpected;
        self.missing.truncate(MISSING_NAMED);
        report.missing = self.missing;
    }
}

impl fmt::Display for WebhookReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "| runs | started | status changes | delivered | refused | repeated | latency p50 / p99 / max (receiver and server up) | deliveries/s | errors |"
        )?;
        writeln!(f, "|---|---|---|---|---|---|---|---|---|")?;
        writeln!(
            f,
            "| {} | {} | {} | {} | {} | {} | {:.1} / {:.1} / {:.1} ms | {:.0} | {} |",
            self.runs,
            self.started,
            self.status_changes,
            self.delivered,
            self.refused,
            self.repeated,
            self.latency.p50_ms,
            self.latency.p99_ms,
            self.latency.max_ms,
            self.deliveries_per_s,
            self.errors.values().sum::<usize>(),
        )?;
        let ended: Vec<String> = self
            .ended
            .iter()
            .map(|(status, runs)| format!("{runs} {status}"))
            .collect();
        writeln!(
            f,
            "\nwall {:.1} s; {} runs stored, ended: {}",
            self.wall_s,
            self.runs_stored,
            ended.join(", ")
        )?;
        if let (Some(at), Some(down)) = (self.killed_at_s, self.server_down_s) {
            writeln!(
                f,
                "server killed (SIGKILL) at {at:.1} s, listening again {down:.2} s later; \
                 {} starts cut by the kill, started again",
                self.cut_starts
            )?;
        }
        if let Some([from, to]) = self.receiver_down_s {
            writeln!(
                f,
                "receiver down (503) from {from:.1} s to {to:.1} s: {} requests refused",
                self.refused
            )?;
        }
        let excluded: Vec<String> = self
            .excluded
            .iter()
            .map(|(why, changes)| format!("{changes} {}", why.describe()))
            .collect();
        write!(
            f,
            "latency counted for {} of {} delivered status changes",
            self.latency_counted, self.delivered
        )?;
        if excluded.is_empty() {
            writeln!(f)?;
        } else {
            writeln!(
                f,
                "; left out: {} (their latency p50 / p99 / max {:.1} / {:.1} / {:.1} ms)",
                excluded.join(", "),
                self.excluded_latency.p50_ms,
                self.excluded_latency.p99_ms,
                self.excluded_latency.max_ms,
            )?;
        }
        if self.unexpected > 0 {
            writeln!(
                f,
                "{} deliveries of status changes no event log holds as delivered",
                self.unexpected
            )?;
        }
        if !self.missing.is_empty() {
            writeln!(
                f,
                "never delivered: {} status changes, e.g. {}",
                self.status_changes - self.delivered,
                self.missing.join(", ")
            )?;
        }
        if let Some(recorded) = self.recorded {
            writeln!(f, "{recorded} requests recorded")?;
        }
        for (error, count) in &self.errors {
            writeln!(f, "error ×{count}: {error}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, SystemTime, UNIX_EPOCH};

    use super::*;
    use crate::webhooks::receiver::Arrival;

    fn at(millis: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_millis(millis)
    }

    fn arrival(status: &str, committed: u64, arrived: u64) -> Arrival {
        Arrival {
            run_id: "run_1".to_owned(),
            status: status.to_owned(),
            committed: at(committed),
            arrived: at(arrived),
        }
    }

    #[test]
    fn the_tally_sets_logs_against_deliveries() {
        let changes: HashMap<String, String> = [
            ("msg_run_1_0", "queued"),
            ("msg_run_1_1", "in_progress"),
            ("msg_run_1_5", "completed"),
            ("msg_run_1_6", "incomplete"),
        ]
        .into_iter()
        .map(|(id, status)| (id.to_owned(), status.to_owned()))
        .collect();
        let mut taken = Taken::default();
        taken
            .first
            .insert("msg_run_1_0".to_owned(), arrival("queued", 1_000, 1_002));
        taken.first.insert(
            "msg_run_1_1".to_owned(),
            arrival("in_progress", 5_000, 9_000),
        );
        // Delivered with another status than its log's.
        taken
            .first
            .insert("msg_run_1_5".to_owned(), arrival("failed", 9_000, 9_004));
        // Delivered, in no log.
        taken
            .first
            .insert("msg_run_2_0".to_owned(), arrival("queued", 9_000, 9_001));
        taken.refused_ids.insert("msg_run_1_1".to_owned());
        let outages = Outages {
            receiver_down: Some((at(6_000), at(8_000))),
            server_down: None,
        };
        let tally = tally(&changes, &taken, &outages);
        assert_eq!(tally.delivered, 3);
        assert_eq!(tally.missing, ["msg_run_1_6"]);
        assert_eq!(tally.unexpected, 2);
        assert_eq!(tally.excluded, BTreeMap::from([(Exclusion::Refused, 1)]));
        assert_eq!(tally.excluded_us, [4_000_000]);
        let mut counted = tally.counted_us.clone();
        counted.sort_unstable();
        assert_eq!(counted, [2_000, 4_000]);

        let mut report = WebhookReport::default();
        tally.into_report(&mut report);
        assert_eq!(report.latency_counted, 2);
        assert_eq!(report.latency.max_ms, 4.0);
        assert_eq!(report.excluded_latency.max_ms, 4_000.0);
    }
}
