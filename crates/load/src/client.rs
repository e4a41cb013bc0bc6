//! One streaming run as a client sees it: its own TCP connection, `POST /v1/runs` with
//! `Accept: text/event-stream`, and the time each text delta arrived.
//!
//! The client is a plain HTTP/1.1 exchange on the socket, read in the run's own task: the
//! generator shares the machine with the server it measures, so it must cost little per
//! delta. Decided after measuring: hyper's client reads in a connection task and hands the body
//! over a channel, two task wake-ups per delta; this is one. `httparse` (hyper's own parser)
//! reads the response head and the chunk sizes, the dialects' `SseReader` the events.

use std::net::SocketAddr;
use std::time::Duration;

use agentwire_dialects::sse::{SseFrame, SseReader};
use anyhow::Context;
use serde::Deserialize;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::Instant;

use crate::AGENT;
use crate::chunked::Chunks;

/// What every run sends and expects.
#[derive(Debug)]
pub(crate) struct RunSpec {
    addr: SocketAddr,
    /// The whole request, head and body.
    request: Vec<u8>,
    tokens: u32,
    /// Seconds between two deltas of a run on the brain's schedule.
    gap: f64,
}

impl RunSpec {
    pub(crate) fn new(addr: SocketAddr, tokens: u32, rate: f64) -> Self {
        let body = serde_json::json!({
            "agent": AGENT,
            "input": [{"role": "user", "parts": [{"type": "text", "text": "go"}]}],
        })
        .to_string();
        let request = format!(
            "POST /v1/runs HTTP/1.1\r\nhost: {addr}\r\naccept: text/event-stream\r\n\
             content-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        );
        Self {
            addr,
            request: request.into_bytes(),
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
    let mut stream = TcpStream::connect(spec.addr)
        .await
        .context("cannot connect")?;
    stream.set_nodelay(true)?;
    stream
        .write_all(&spec.request)
        .await
        .context("sending the request")?;
    let mut buffer = Vec::with_capacity(READ_SIZE);
    let body_start = loop {
        if read_more(&mut stream, &mut buffer).await? == 0 {
            anyhow::bail!("the connection closed before the response");
        }
        let mut headers = [httparse::EMPTY_HEADER; 32];
        let mut response = httparse::Response::new(&mut headers);
        if let httparse::Status::Complete(length) = response.parse(&buffer)? {
            let code = response.code.unwrap_or_default();
            if code != 200 {
                // `connection: close`: the body is everything until the end.
                while read_more(&mut stream, &mut buffer).await? > 0 {}
                let body = String::from_utf8_lossy(&buffer[length..]);
                anyhow::bail!("HTTP {code}: {body}");
            }
            let chunked = response.headers.iter().any(|header| {
                header.name.eq_ignore_ascii_case("transfer-encoding")
                    && header.value.eq_ignore_ascii_case(b"chunked")
            });
            anyhow::ensure!(chunked, "the stream is not chunked");
            break length;
        }
    };
    buffer.drain(..body_start);

    let mut reader = SseReader::default();
    let mut frames: Vec<SseFrame> = Vec::new();
    let mut chunks = Chunks::default();
    let mut now = Instant::now();
    loop {
        let ended = chunks.decode(&mut buffer, |data| Ok(reader.feed(data, &mut frames)?))?;
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
        if ended {
            break;
        }
        if read_more(&mut stream, &mut buffer)
            .await
            .context("reading the stream")?
            == 0
        {
            anyhow::bail!("the connection closed in the middle of the stream");
        }
        now = Instant::now();
    }
    reader.finish()?;
    Ok(())
}

/// How much one read asks for.
const READ_SIZE: usize = 16 * 1024;

/// Appends what the socket has to `buffer`; 0 at its end.
async fn read_more(stream: &mut TcpStream, buffer: &mut Vec<u8>) -> std::io::Result<usize> {
    buffer.reserve(READ_SIZE);
    stream.read_buf(buffer).await
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
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
