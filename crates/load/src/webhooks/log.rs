//! What the server stored, read back once the runs have ended: every run created since the
//! webhook was (`GET /v1/runs`, newest first, a page at a time, until an older one: this finds
//! the runs whose start the kill cut after the server had stored them, which this program has no
//! id for), and each run's status changes, its `run_status` events read from its whole event log
//! (`GET /v1/runs/{id}/events`, which ends when the run has).

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use agentwire_dialects::sse::{SseFrame, SseReader};
use anyhow::Context;
use serde::Deserialize;

use super::TERMINAL;
use crate::connection::Connection;
use crate::request::get_json;

/// Event logs read at once.
const LOG_READERS: usize = 16;

/// The longest one event log is waited for: a run that has not ended by then never will.
const LOG_WITHIN: Duration = Duration::from_secs(30);

/// Runs in a page of `GET /v1/runs` (its most).
const PAGE: u32 = 100;

/// The status changes of the runs read.
#[derive(Clone, Debug, Default)]
pub(crate) struct Logs {
    /// The status each change reports, by the `webhook-id` its delivery carries
    /// (`msg_{run}_{seq}`).
    pub(crate) changes: HashMap<String, String>,
    /// Runs by the status they ended with.
    pub(crate) ended: BTreeMap<String, usize>,
}

/// The ids of the runs created at `since` or later, newest first.
pub(crate) async fn created_since(
    addr: SocketAddr,
    since: SystemTime,
) -> anyhow::Result<Vec<String>> {
    #[derive(Deserialize)]
    struct Page {
        runs: Vec<Run>,
        next: Option<String>,
    }
    #[derive(Deserialize)]
    struct Run {
        id: String,
        created_at: i64,
    }
    let since = i64::try_from(since.duration_since(UNIX_EPOCH)?.as_millis())?;
    let mut ids = Vec::new();
    let mut path = format!("/v1/runs?limit={PAGE}");
    loop {
        let (status, page) = get_json(addr, &path).await?;
        anyhow::ensure!(status == 200, "listing runs: HTTP {status}: {page}");
        let page: Page = serde_json::from_value(page).context("listing runs")?;
        let mut older = false;
        for run in page.runs {
            if run.created_at < since {
                older = true;
                break;
            }
            ids.push(run.id);
        }
        match page.next {
            Some(cursor) if !older => {
                path = format!("/v1/runs?limit={PAGE}&cursor={}", query_escaped(&cursor));
            }
            _ => return Ok(ids),
        }
    }
}

/// The status changes of `runs`, each log read until its run's end; a log that cannot be read,
/// or that does not end with the run's only terminal status, is counted in `errors`.
pub(crate) async fn status_changes(
    addr: SocketAddr,
    runs: &[String],
    errors: &mut BTreeMap<String, usize>,
) -> Logs {
    let mut readers = tokio::task::JoinSet::new();
    for share in runs.chunks(runs.len().div_ceil(LOG_READERS).max(1)) {
        let share = share.to_vec();
        readers.spawn(async move {
            let mut connection = Connection::new(addr);
            let mut read = Vec::new();
            for run_id in share {
                let log = tokio::time::timeout(LOG_WITHIN, run_statuses(&mut connection, &run_id))
                    .await
                    .unwrap_or_else(|_| {
                        Err(anyhow::anyhow!(
                            "the run did not end within {}",
                            humantime::format_duration(LOG_WITHIN)
                        ))
                    });
                read.push((run_id, log));
            }
            read
        });
    }
    let mut logs = Logs::default();
    while let Some(result) = readers.join_next().await {
        let read = match result {
            Ok(read) => read,
            Err(error) => {
                *errors.entry(error.to_string()).or_insert(0) += 1;
                continue;
            }
        };
        for (run_id, log) in read {
            let statuses = match log.and_then(check_log) {
                Ok(statuses) => statuses,
                Err(error) => {
                    *errors
                        .entry(format!("the event log of a run: {error:#}"))
                        .or_insert(0) += 1;
                    continue;
                }
            };
            if let Some((_, last)) = statuses.last() {
                *logs.ended.entry(last.clone()).or_insert(0) += 1;
            }
            for (seq, status) in statuses {
                logs.changes.insert(format!("msg_{run_id}_{seq}"), status);
            }
        }
    }
    logs
}

/// `statuses`, when their seqs rise and the last is the only terminal one.
fn check_log(statuses: Vec<(u64, String)>) -> anyhow::Result<Vec<(u64, String)>> {
    if let Some(pair) = statuses.windows(2).find(|pair| pair[0].0 >= pair[1].0) {
        anyhow::bail!("seq {} comes after seq {}", pair[1].0, pair[0].0);
    }
    let terminal: Vec<&str> = statuses
        .iter()
        .map(|(_, status)| status.as_str())
        .filter(|status| TERMINAL.contains(status))
        .collect();
    match statuses.last() {
        _ if terminal.len() > 1 => anyhow::bail!("it ends more than once ({terminal:?})"),
        Some((_, last)) if terminal.len() == 1 && TERMINAL.contains(&last.as_str()) => Ok(statuses),
        _ if terminal.is_empty() => anyhow::bail!("it has no end"),
        _ => anyhow::bail!("it goes on after its end"),
    }
}

/// The seq and status of each of a run's `run_status` events, in order.
async fn run_statuses(
    connection: &mut Connection,
    run_id: &str,
) -> anyhow::Result<Vec<(u64, String)>> {
    #[derive(Deserialize)]
    struct Status {
        seq: u64,
        status: String,
    }
    let request = format!(
        "GET /v1/runs/{run_id}/events HTTP/1.1\r\nhost: {}\r\naccept: text/event-stream\r\n\r\n",
        connection.addr()
    );
    let mut reader = SseReader::default();
    let mut frames: Vec<SseFrame> = Vec::new();
    connection
        .exchange(request.as_bytes(), |data| {
            Ok(reader.feed(data, &mut frames)?)
        })
        .await?;
    reader.finish()?;
    frames
        .iter()
        .filter(|frame| frame.event.as_deref() == Some("run_status"))
        .map(|frame| {
            let status: Status = serde_json::from_str(&frame.data)?;
            Ok((status.seq, status.status))
        })
        .collect()
}

/// `text` with every byte but ASCII letters, digits and `-._~` percent-encoded, for a query.
fn query_escaped(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            escaped.push(char::from(byte));
        } else {
            escaped.push_str(&format!("%{byte:02X}"));
        }
    }
    escaped
}

#[cfg(test)]
mod tests {
    use super::*;

    fn statuses(names: &[&str]) -> Vec<(u64, String)> {
        names
            .iter()
            .enumerate()
            .map(|(seq, name)| (seq as u64, (*name).to_owned()))
            .collect()
    }

    #[test]
    fn a_log_ends_once_with_its_last_status() {
        assert!(check_log(statuses(&["queued", "in_progress", "completed"])).is_ok());
        assert!(check_log(statuses(&["in_progress", "incomplete"])).is_ok());
        let repeated = vec![(3, "in_progress".to_owned()), (3, "completed".to_owned())];
        assert!(check_log(repeated).is_err());
        for bad in [
            &["in_progress"][..],
            &["in_progress", "completed", "incomplete"],
            &["completed", "in_progress"],
            &[],
        ] {
            assert!(check_log(statuses(bad)).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_cursor_is_escaped_for_the_query() {
        assert_eq!(query_escaped("1700:run_01 x"), "1700%3Arun_01%20x");
    }
}
