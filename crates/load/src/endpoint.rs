//! The endpoints the throughput modes load, as a client of each sees them: the request that
//! starts one run of the [`AGENT`], and what a stream that ended properly holds.
//!
//! All three answer with SSE, so one reader serves them; what differs is the request body, the
//! frame that carries a text delta and the frame that says the run ended well. A stream is
//! checked frame by frame ([`StreamCheck`]) with no canonical decoding: the generator shares
//! the machine with what it measures, so it looks at no more than it must (a frame's event name,
//! or its JSON `type` and the field that says how the run ended).

use std::borrow::Cow;
use std::fmt;
use std::net::SocketAddr;

use agentwire_dialects::sse::SseFrame;
use serde::Deserialize;

use crate::AGENT;

/// An endpoint of the server, by the dialect it speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Endpoint {
    /// `POST /v1/runs` with `Accept: text/event-stream`: the native events.
    Native,
    /// `POST /agents/load/api/chat`: the AI SDK UI message stream, a new chat per request, the
    /// body as `DefaultChatTransport` sends it.
    AiSdk,
    /// `POST /agents/load/ag-ui`: AG-UI events for a `RunAgentInput`, a new thread per request.
    AgUi,
}

impl Endpoint {
    /// Every endpoint.
    pub const ALL: [Endpoint; 3] = [Endpoint::Native, Endpoint::AiSdk, Endpoint::AgUi];

    /// The name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Endpoint::Native => "native",
            Endpoint::AiSdk => "ai-sdk",
            Endpoint::AgUi => "ag-ui",
        }
    }

    /// The request's path.
    pub(crate) fn path(self) -> &'static str {
        match self {
            Endpoint::Native => "/v1/runs",
            Endpoint::AiSdk => "/agents/load/api/chat",
            Endpoint::AgUi => "/agents/load/ag-ui",
        }
    }

    /// The body that starts one run; `key` makes the request's own ids (chat, thread, run,
    /// message) unique in the server's life.
    pub(crate) fn body(self, key: &str) -> String {
        let body = match self {
            Endpoint::Native => serde_json::json!({
                "agent": AGENT,
                "input": [{"role": "user", "parts": [{"type": "text", "text": "go"}]}],
            }),
            Endpoint::AiSdk => serde_json::json!({
                "id": format!("chat-{key}"),
                "messages": [{
                    "id": format!("msg-{key}"),
                    "role": "user",
                    "parts": [{"type": "text", "text": "go"}],
                }],
                "trigger": "submit-message",
            }),
            Endpoint::AgUi => serde_json::json!({
                "threadId": format!("thread-{key}"),
                "runId": format!("run-{key}"),
                "messages": [{"id": format!("msg-{key}"), "role": "user", "content": "go"}],
                "tools": [],
                "context": [],
                "state": {},
                "forwardedProps": {},
            }),
        };
        body.to_string()
    }

    /// The whole request (head and body) on a keep-alive connection.
    pub(crate) fn request(self, addr: SocketAddr, key: &str) -> Vec<u8> {
        let body = self.body(key);
        format!(
            "POST {} HTTP/1.1\r\nhost: {addr}\r\naccept: text/event-stream\r\n\
             content-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
            self.path(),
            body.len()
        )
        .into_bytes()
    }
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One stream's frames so far: its text deltas and how it ended.
#[derive(Debug)]
pub(crate) struct StreamCheck {
    endpoint: Endpoint,
    /// Text deltas seen.
    pub(crate) deltas: u32,
    /// The frame that ends the run well was seen (native `run_status` completed, the AI SDK's
    /// `finish`, AG-UI's `RUN_FINISHED` with a `success` outcome).
    finished: bool,
    /// The AI SDK's `[DONE]` after its `finish`.
    done: bool,
    /// The run ended otherwise: what its stream said.
    failure: Option<String>,
}

/// What the check reads of an AI SDK or AG-UI frame's JSON; every other key is skipped.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Frame<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    /// The AI SDK's `finish`.
    #[serde(default, borrow)]
    finish_reason: Option<Cow<'a, str>>,
    /// The AI SDK's `error`.
    #[serde(default, borrow)]
    error_text: Option<Cow<'a, str>>,
    /// AG-UI's `RUN_ERROR`.
    #[serde(default, borrow)]
    message: Option<Cow<'a, str>>,
    /// AG-UI's `RUN_FINISHED`.
    #[serde(default, borrow)]
    outcome: Option<Outcome<'a>>,
}

/// AG-UI's `RUN_FINISHED.outcome`.
#[derive(Deserialize)]
struct Outcome<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
}

/// A native `run_status` event's data, as far as the check reads it.
#[derive(Deserialize)]
struct Status<'a> {
    #[serde(borrow)]
    status: Cow<'a, str>,
}

impl StreamCheck {
    pub(crate) fn new(endpoint: Endpoint) -> Self {
        Self {
            endpoint,
            deltas: 0,
            finished: false,
            done: false,
            failure: None,
        }
    }

    /// Reads one frame. A frame that does not parse is an error (the stream is broken); a run
    /// that ends badly is not: it is the run's outcome, for [`StreamCheck::verdict`].
    pub(crate) fn frame(&mut self, frame: &SseFrame) -> anyhow::Result<()> {
        match self.endpoint {
            Endpoint::Native => match frame.event.as_deref() {
                Some("part_delta") => self.deltas += 1,
                Some("run_status") => {
                    let Status { status } = serde_json::from_str(&frame.data)?;
                    match &*status {
                        "completed" => self.finished = true,
                        "in_progress" | "queued" | "created" => {}
                        other => self.fail(format!("the run ended {other}")),
                    }
                }
                _ => {}
            },
            Endpoint::AiSdk => {
                if frame.data == "[DONE]" {
                    self.done = true;
                    return Ok(());
                }
                let parsed: Frame = serde_json::from_str(&frame.data)?;
                match &*parsed.kind {
                    "text-delta" => self.deltas += 1,
                    "finish" => match parsed.finish_reason.as_deref() {
                        None | Some("stop") => self.finished = true,
                        Some(reason) => self.fail(format!("finish {reason}")),
                    },
                    "error" => self.fail(format!(
                        "error: {}",
                        parsed.error_text.as_deref().unwrap_or_default()
                    )),
                    "abort" => self.fail("abort".to_owned()),
                    _ => {}
                }
            }
            Endpoint::AgUi => {
                let parsed: Frame = serde_json::from_str(&frame.data)?;
                match &*parsed.kind {
                    "TEXT_MESSAGE_CONTENT" => self.deltas += 1,
                    "RUN_FINISHED" => match parsed.outcome.as_ref().map(|outcome| &*outcome.kind) {
                        None | Some("success") => self.finished = true,
                        Some(other) => self.fail(format!("RUN_FINISHED {other}")),
                    },
                    "RUN_ERROR" => self.fail(format!(
                        "RUN_ERROR: {}",
                        parsed.message.as_deref().unwrap_or_default()
                    )),
                    _ => {}
                }
            }
        }
        Ok(())
    }

    /// Whether the stream, now at its end, was a run that delivered `tokens` deltas and ended
    /// well; what was wrong if not.
    pub(crate) fn verdict(&self, tokens: u32) -> Result<(), String> {
        if let Some(failure) = &self.failure {
            return Err(failure.clone());
        }
        if !self.finished {
            return Err("the stream ended before the run did".to_owned());
        }
        if self.endpoint == Endpoint::AiSdk && !self.done {
            return Err("no [DONE] after finish".to_owned());
        }
        if self.deltas != tokens {
            return Err(format!("{} of {tokens} deltas arrived", self.deltas));
        }
        Ok(())
    }

    fn fail(&mut self, failure: String) {
        self.failure.get_or_insert(failure);
    }
}
