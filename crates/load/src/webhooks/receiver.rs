//! The webhooks scenario's receiver: an axum server on `127.0.0.1:0` in this program that answers
//! 204 at once, or 503 while it is down, and keeps what it took by `webhook-id` (the first
//! arrival of each status change, the ids it refused, retries) and, when asked, every request
//! as it came: the exact body, the three `webhook-*` headers and when it arrived, for the
//! Standard Webhooks reference library to verify afterwards (`--record`, see
//! `peers/webhooks/verify_recorded.py`).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::Context;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use base64::Engine;
use serde::{Deserialize, Serialize};
use tokio::time::Instant;

use super::TERMINAL;

/// The Standard Webhooks headers a delivery is verified by.
const SIGNED_HEADERS: [&str; 3] = ["webhook-id", "webhook-timestamp", "webhook-signature"];

/// The receiver: what it took, shared with its handler.
#[derive(Clone, Default)]
pub(crate) struct Receiver {
    taken: Arc<Mutex<Taken>>,
}

/// What the receiver took.
#[derive(Clone, Debug, Default)]
pub(crate) struct Taken {
    /// Each status change's first delivery answered 2xx, by `webhook-id`.
    pub(crate) first: HashMap<String, Arrival>,
    /// The `webhook-id`s of the status changes a request was answered 503 for before the
    /// first delivery of each.
    pub(crate) refused_ids: HashSet<String>,
    /// Requests answered 503.
    pub(crate) refused: usize,
    /// Deliveries answered 2xx of a status change that had already arrived.
    pub(crate) repeated: usize,
    /// Runs a terminal status arrived for.
    pub(crate) ended: HashSet<String>,
    /// When the last first delivery arrived.
    pub(crate) last_at: Option<Instant>,
    /// Requests the handler could not read (no `webhook-id`, not the payload), answered 400.
    pub(crate) unreadable: usize,
    /// While it answers 503: since when.
    down_since: Option<SystemTime>,
    /// When it was down, `[begin, end)`.
    pub(crate) down: Option<(SystemTime, SystemTime)>,
    /// Every request, when recording.
    records: Option<Vec<Record>>,
}

/// A status change's first delivery.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Arrival {
    /// The run.
    pub(crate) run_id: String,
    /// The status it reports.
    pub(crate) status: String,
    /// When the server committed it (the payload's `timestamp`, to the millisecond).
    pub(crate) committed: SystemTime,
    /// When it arrived.
    pub(crate) arrived: SystemTime,
}

/// One request as the receiver took it: a line of the `--record` file, with the webhook's
/// secret added when written.
#[derive(Clone, Debug)]
struct Record {
    received_at: SystemTime,
    answered: u16,
    headers: BTreeMap<&'static str, String>,
    body: Bytes,
}

/// A line of the `--record` file.
#[derive(Serialize)]
struct RecordLine<'a> {
    /// The signing secret `POST /v1/webhooks` answered with (`whsec_…`).
    secret: &'a str,
    /// When the request arrived, seconds since the Unix epoch: the moment the reference library
    /// checks the `webhook-timestamp` against (it refuses one more than 5 minutes off).
    received_at: f64,
    /// The status the receiver answered (204, or 503 while down).
    answered: u16,
    /// The `webhook-id`, `webhook-timestamp` and `webhook-signature` headers, as sent.
    headers: &'a BTreeMap<&'static str, String>,
    /// The body's exact bytes, in standard base64.
    body_base64: String,
}

/// The part of a payload the receiver reads.
#[derive(Deserialize)]
struct Payload {
    timestamp: String,
    data: PayloadData,
}

#[derive(Deserialize)]
struct PayloadData {
    run_id: String,
    status: String,
}

impl Receiver {
    /// A receiver that keeps every request for [`Receiver::write_records`] when `record`.
    pub(crate) fn new(record: bool) -> Self {
        let receiver = Self::default();
        if record {
            receiver.lock().records = Some(Vec::new());
        }
        receiver
    }

    /// Serves on `127.0.0.1:0` in a task of this runtime; the webhook's URL.
    pub(crate) async fn start(&self) -> anyhow::Result<String> {
        let app = axum::Router::new()
            .route("/hook", axum::routing::post(take))
            .with_state(self.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let url = format!("http://{}/hook", listener.local_addr()?);
        tokio::spawn(async move { axum::serve(listener, app).await });
        Ok(url)
    }

    /// From now on answers 503 (`down`), or 204 again.
    pub(crate) fn set_down(&self, down: bool) {
        let mut taken = self.lock();
        let now = SystemTime::now();
        match (down, taken.down_since) {
            (true, None) => taken.down_since = Some(now),
            (false, Some(since)) => {
                taken.down_since = None;
                taken.down = Some((since, now));
            }
            _ => {}
        }
    }

    pub(crate) fn ended(&self) -> usize {
        self.lock().ended.len()
    }

    pub(crate) fn has_all(&self, ids: &HashSet<String>) -> bool {
        let taken = self.lock();
        ids.iter().all(|id| taken.first.contains_key(id))
    }

    /// What it took so far (without the records).
    pub(crate) fn taken(&self) -> Taken {
        let taken = self.lock();
        Taken {
            first: taken.first.clone(),
            refused_ids: taken.refused_ids.clone(),
            records: None,
            ended: taken.ended.clone(),
            ..*taken
        }
    }

    /// Writes every request taken to `path`, one JSON object a line, each with `secret`; how
    /// many.
    pub(crate) fn write_records(&self, path: &Path, secret: &str) -> anyhow::Result<usize> {
        let records = self.lock().records.take().unwrap_or_default();
        let file = std::fs::File::create(path)
            .with_context(|| format!("cannot create {}", path.display()))?;
        let mut file = std::io::BufWriter::new(file);
        for record in &records {
            let line = RecordLine {
                secret,
                received_at: record
                    .received_at
                    .duration_since(UNIX_EPOCH)
                    .unwrap_or_default()
                    .as_secs_f64(),
                answered: record.answered,
                headers: &record.headers,
                body_base64: base64::engine::general_purpose::STANDARD.encode(&record.body),
            };
            serde_json::to_writer(&mut file, &line)?;
            file.write_all(b"\n")?;
        }
        file.flush()
            .with_context(|| format!("cannot write {}", path.display()))?;
        Ok(records.len())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Taken> {
        // A handler that panicked left nothing half-written: each change is one insert.
        self.taken
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

async fn take(State(receiver): State<Receiver>, headers: HeaderMap, body: Bytes) -> StatusCode {
    let arrived = SystemTime::now();
    let mut taken = receiver.lock();
    let answer = answer(&mut taken, arrived, &headers, &body);
    if let Some(records) = &mut taken.records {
        records.push(Record {
            received_at: arrived,
            answered: answer.as_u16(),
            headers: SIGNED_HEADERS
                .into_iter()
                .filter_map(|name| {
                    let value = headers.get(name)?.to_str().ok()?;
                    Some((name, value.to_owned()))
                })
                .collect(),
            body,
        });
    }
    answer
}

/// Takes one request into `taken`; what to answer.
fn answer(taken: &mut Taken, arrived: SystemTime, headers: &HeaderMap, body: &[u8]) -> StatusCode {
    let Some(id) = headers.get("webhook-id").and_then(|id| id.to_str().ok()) else {
        taken.unreadable += 1;
        return StatusCode::BAD_REQUEST;
    };
    if taken.down_since.is_some() {
        taken.refused += 1;
        if !taken.first.contains_key(id) {
            taken.refused_ids.insert(id.to_owned());
        }
        return StatusCode::SERVICE_UNAVAILABLE;
    }
    let Some((payload, committed)) =
        serde_json::from_slice::<Payload>(body)
            .ok()
            .and_then(|payload| {
                let committed = humantime::parse_rfc3339(&payload.timestamp).ok()?;
                Some((payload, committed))
            })
    else {
        taken.unreadable += 1;
        return StatusCode::BAD_REQUEST;
    };
    if taken.first.contains_key(id) {
        taken.repeated += 1;
        return StatusCode::NO_CONTENT;
    }
    if TERMINAL.contains(&payload.data.status.as_str()) {
        taken.ended.insert(payload.data.run_id.clone());
    }
    taken.first.insert(
        id.to_owned(),
        Arrival {
            run_id: payload.data.run_id,
            status: payload.data.status,
            committed,
            arrived,
        },
    );
    taken.last_at = Some(Instant::now());
    StatusCode::NO_CONTENT
}
