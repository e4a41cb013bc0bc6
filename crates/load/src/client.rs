//! One streaming run as a client sees it: its own TCP connection, `POST /v1/runs` with
//! `Accept: text/event-stream`, and the time each text delta arrived.

use std::net::SocketAddr;
use std::time::Duration;

use agentwire_dialects::sse::{SseFrame, SseReader};
use anyhow::Context;
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::header;
use hyper_util::rt::TokioIo;
use serde::Deserialize;
use tokio::net::TcpStream;
use tokio::time::Instant;

use crate::AGENT;

/// What every run sends and expects.
#[derive(Debug)]
pub(crate) struct RunSpec {
    addr: SocketAddr,
    body: Bytes,
    tokens: u32,
    /// Seconds between two deltas of a run on the brain's schedule.
    gap: f64,
}

impl RunSpec {
    pub(crate) fn new(addr: SocketAddr, tokens: u32, rate: f64) -> Self {
        let body = serde_json::json!({
            "agent": AGENT,
            "input": [{"role": "user", "parts": [{"type": "text", "text": "go"}]}],
        });
        Self {
            addr,
            body: Bytes::from(body.to_string()),
            tokens,
            gap: 1.0 / rate,
        }
    }
}

/// How one run went.
#[derive(Debug, Default)]
pub(crate) struct Outcome {
    /// Text deltas received.
    pub(crate) deltas: u32,
    /// Every delta arrived and the run ended `completed`.
    pub(crate) complete: bool,
    /// What went wrong, if anything did.
    pub(crate) error: Option<String>,
    /// From sending the request to the first delta.
    pub(crate) first_token: Option<Duration>,
    /// Each delta's added latency, in microseconds (see the crate docs).
    pub(crate) added_us: Vec<u32>,
}

impl Outcome {
    pub(crate) fn failed(error: &str) -> Self {
        Self {
            error: Some(error.to_owned()),
            ..Self::default()
        }
    }
}

/// The part of a `run_status` event the client reads.
#[derive(Deserialize)]
struct Status {
    status: String,
}

/// Streams one run and times its deltas.
pub(crate) async fn stream_run(spec: &RunSpec) -> Outcome {
    let mut arrivals = Vec::with_capacity(usize::try_from(spec.tokens).unwrap_or(0));
    let mut status = None;
    let sent = Instant::now();
    let result = read_stream(spec, &mut arrivals, &mut status).await;
    let deltas = u32::try_from(arrivals.len()).unwrap_or(u32::MAX);
    let error = match (result, status.as_deref()) {
        (Err(error), _) => Some(format!("{error:#}")),
        (Ok(()), Some("completed")) if deltas == spec.tokens => None,
        (Ok(()), Some("completed")) => Some(format!(
            "{deltas} of {} deltas arrived before completion",
            spec.tokens
        )),
        (Ok(()), Some(other)) => Some(format!("the run ended {other}")),
        (Ok(()), None) => Some("the stream ended before the run did".to_owned()),
    };
    Outcome {
        deltas,
        complete: error.is_none(),
        error,
        first_token: arrivals.first().map(|first| first.duration_since(sent)),
        added_us: added_latency(&arrivals, spec.gap),
    }
}

/// Each arrival's lateness against the brain's schedule (`i * gap` after the run's start),
/// anchored on the run's least delayed delta.
fn added_latency(arrivals: &[Instant], gap: f64) -> Vec<u32> {
    let Some(first) = arrivals.first() else {
        return Vec::new();
    };
    let offsets: Vec<f64> = arrivals
        .iter()
        .enumerate()
        .map(|(index, arrival)| arrival.duration_since(*first).as_secs_f64() - index as f64 * gap)
        .collect();
    let anchor = offsets.iter().copied().fold(f64::INFINITY, f64::min);
    offsets
        .iter()
        .map(|offset| ((offset - anchor) * 1e6).round() as u32)
        .collect()
}

async fn read_stream(
    spec: &RunSpec,
    arrivals: &mut Vec<Instant>,
    status: &mut Option<String>,
) -> anyhow::Result<()> {
    let stream = TcpStream::connect(spec.addr)
        .await
        .context("cannot connect")?;
    stream.set_nodelay(true)?;
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .context("HTTP handshake")?;
    let connection = tokio::spawn(connection);
    let request = hyper::Request::post("/v1/runs")
        .header(header::HOST, spec.addr.to_string())
        .header(header::ACCEPT, "text/event-stream")
        .header(header::CONTENT_TYPE, "application/json")
        .body(Full::new(spec.body.clone()))?;
    let response = sender
        .send_request(request)
        .await
        .context("sending the request")?;
    if !response.status().is_success() {
        let code = response.status();
        let body = response.into_body().collect().await?.to_bytes();
        anyhow::bail!("HTTP {code}: {}", String::from_utf8_lossy(&body));
    }
    let mut body = response.into_body();
    let mut reader = SseReader::default();
    let mut frames: Vec<SseFrame> = Vec::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.context("reading the stream")?;
        let Ok(data) = frame.into_data() else {
            continue;
        };
        let now = Instant::now();
        reader.feed(&data, &mut frames)?;
        for frame in frames.drain(..) {
            match frame.event.as_deref() {
                Some("part_delta") => arrivals.push(now),
                Some("run_status") => {
                    let Status { status: name } = serde_json::from_str(&frame.data)?;
                    *status = Some(name);
                }
                _ => {}
            }
        }
    }
    reader.finish()?;
    drop(sender);
    connection.await??;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_delta_on_schedule_adds_nothing_and_a_late_one_adds_its_delay() {
        let start = Instant::now();
        let at = |ms: u64| start + Duration::from_millis(ms);
        // 10 ms apart on schedule; the third 4 ms late, the fourth back on time.
        let added = added_latency(&[at(0), at(10), at(24), at(30)], 0.010);
        assert_eq!(added, vec![0, 0, 4_000, 0]);
        // The first delta late: the anchor is the best one, so the first counts as late.
        let added = added_latency(&[at(5), at(10), at(20)], 0.010);
        assert_eq!(added, vec![5_000, 0, 0]);
    }
}
