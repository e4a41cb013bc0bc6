//! [`Dialect`]: every wire format by name, for code that picks one at run time (the CLI's
//! `inspect` and `convert`, a server choosing an encoder), and [`Dialect::sniff`], which tells
//! a stream's dialect from its first frames.

use std::fmt;
use std::str::FromStr;

use serde_json::Value;

use crate::a2a::{A2aDecoder, A2aEncoder};
use crate::ag_ui::{AgUiDecoder, AgUiEncoder};
use crate::agentscope::{AgentScopeDecoder, AgentScopeEncoder};
use crate::agentx::{AgentxDecoder, AgentxEncoder};
use crate::ai_sdk::{AiSdkDecoder, AiSdkEncoder};
use crate::native::{NativeNdjsonDecoder, NativeNdjsonEncoder, NativeSseDecoder, NativeSseEncoder};
use crate::openai_responses::{ResponseInfo, ResponsesDecoder, ResponsesEncoder};
use crate::sse::{SseFrame, SseReader};
use crate::viber::{ViberDecoder, ViberEncoder};
use crate::{Encoder, StreamDecoder};

/// A wire format agentwire speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Dialect {
    /// agentwire's own events over SSE.
    Native,
    /// agentwire's own events, one JSON object per line.
    NativeNdjson,
    /// AgentX message packets.
    Agentx,
    /// The AI SDK UI message stream v1 (`useChat`, npm `ai` 7).
    AiSdk,
    /// AgentScope's Agent API (`agentscope-runtime`).
    AgentScope,
    /// AG-UI 1.0 events (`@ag-ui/client`).
    AgUi,
    /// A2A 1.0 stream items in JSON-RPC responses (`a2a-sdk`).
    A2a,
    /// Viber's camelCase message packets and chat status.
    Viber,
    /// OpenAI's Responses API stream events (the official `openai` SDKs).
    OpenAiResponses,
}

impl Dialect {
    /// Every dialect, in the order `--help` lists them.
    pub const ALL: &[Dialect] = &[
        Dialect::Native,
        Dialect::NativeNdjson,
        Dialect::Agentx,
        Dialect::AiSdk,
        Dialect::AgentScope,
        Dialect::AgUi,
        Dialect::A2a,
        Dialect::Viber,
        Dialect::OpenAiResponses,
    ];

    /// The dialect's name on the command line and in configuration.
    pub fn name(self) -> &'static str {
        match self {
            Dialect::Native => "native",
            Dialect::NativeNdjson => "native-ndjson",
            Dialect::Agentx => "agentx",
            Dialect::AiSdk => "ai-sdk",
            Dialect::AgentScope => "agentscope",
            Dialect::AgUi => "ag-ui",
            Dialect::A2a => "a2a",
            Dialect::Viber => "viber",
            Dialect::OpenAiResponses => "openai-responses",
        }
    }

    /// The `Content-Type` of a stream in this dialect.
    pub fn content_type(self) -> &'static str {
        match self {
            Dialect::NativeNdjson => "application/x-ndjson",
            _ => "text/event-stream",
        }
    }

    /// A fresh encoder for one stream.
    pub fn encoder(self) -> Box<dyn Encoder + Send> {
        match self {
            Dialect::Native => Box::new(NativeSseEncoder),
            Dialect::NativeNdjson => Box::new(NativeNdjsonEncoder),
            Dialect::Agentx => Box::new(AgentxEncoder::default()),
            Dialect::AiSdk => Box::new(AiSdkEncoder::default()),
            Dialect::AgentScope => Box::new(AgentScopeEncoder::default()),
            Dialect::AgUi => Box::new(AgUiEncoder::default()),
            Dialect::A2a => Box::new(A2aEncoder::default()),
            Dialect::Viber => Box::new(ViberEncoder::default()),
            Dialect::OpenAiResponses => Box::new(ResponsesEncoder::new(ResponseInfo::default())),
        }
    }

    /// A fresh decoder for one stream.
    pub fn decoder(self) -> Box<dyn StreamDecoder + Send> {
        match self {
            Dialect::Native => Box::new(NativeSseDecoder::default()),
            Dialect::NativeNdjson => Box::new(NativeNdjsonDecoder::default()),
            Dialect::Agentx => Box::new(AgentxDecoder::default()),
            Dialect::AiSdk => Box::new(AiSdkDecoder::default()),
            Dialect::AgentScope => Box::new(AgentScopeDecoder::default()),
            Dialect::AgUi => Box::new(AgUiDecoder::default()),
            Dialect::A2a => Box::new(A2aDecoder::default()),
            Dialect::Viber => Box::new(ViberDecoder::default()),
            Dialect::OpenAiResponses => Box::new(ResponsesDecoder::default()),
        }
    }

    /// Tells the dialect of a stream from its first bytes: `None` while they do not yet say (read
    /// more and ask again), or if they never will.
    ///
    /// It looks at what each dialect's first frames must hold: native events name themselves;
    /// an AgentX packet is a message (`role` and `parts`) in a frame without an event name; a
    /// Viber stream opens with a `status` frame, and its packets are messages in the camelCase
    /// spelling (a `content` beside the parts, or a kebab-case part type); Responses events are
    /// named `response.*`.
    pub fn sniff(start: &[u8]) -> Option<Dialect> {
        let text = start.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(start);
        let first = text.iter().find(|byte| !byte.is_ascii_whitespace())?;
        if *first == b'{' {
            let line = text.split(|&byte| byte == b'\n').next()?;
            let value: Value = serde_json::from_slice(line).ok()?;
            return (value.get("seq").is_some() && value.get("event").is_some())
                .then_some(Dialect::NativeNdjson);
        }
        let mut reader = SseReader::default();
        let mut frames: Vec<SseFrame> = Vec::new();
        reader.feed(start, &mut frames).ok()?;
        for (position, frame) in frames.iter().enumerate() {
            match frame.event.as_deref() {
                Some(name) if agentwire_core::Event::NAMES.contains(&name) => {
                    // A native stream opens with run_created and run_status; AgentX sends the
                    // same two before its first packet: a third named frame tells them apart.
                    if position >= 2 {
                        return Some(Dialect::Native);
                    }
                }
                None | Some("message") => return sniff_data(&frame.data),
                Some("status") if sniff_status(&frame.data) => return Some(Dialect::Viber),
                // Responses events name themselves: `response.created`, … and `error`.
                Some(name) if name.starts_with("response.") => {
                    return Some(Dialect::OpenAiResponses);
                }
                Some(_) => {}
            }
        }
        None
    }
}

/// The dialect an unnamed frame's data belongs to.
fn sniff_data(data: &str) -> Option<Dialect> {
    let value: Value = serde_json::from_str(data).ok()?;
    if value.get("role").is_some() && value.get("parts").is_some() {
        let camel = value.get("content").is_some()
            || value["parts"].as_array().is_some_and(|parts| {
                parts.iter().any(|part| {
                    part.get("type")
                        .and_then(Value::as_str)
                        .is_some_and(|kind| kind.contains('-'))
                })
            });
        return Some(if camel {
            Dialect::Viber
        } else {
            Dialect::Agentx
        });
    }
    if value.get("jsonrpc").is_some() {
        return Some(Dialect::A2a);
    }
    // Every AgentScope object (response, message, content) carries its `sequence_number`.
    if value.get("sequence_number").is_some() {
        return Some(Dialect::AgentScope);
    }
    let kind = value.get("type").and_then(Value::as_str)?;
    // AG-UI event types are SCREAMING_SNAKE_CASE (`RUN_STARTED`); the AI SDK's are kebab-case
    // (`start`, `text-delta`, `data-weather`).
    if kind
        .bytes()
        .all(|byte| byte.is_ascii_uppercase() || byte == b'_')
    {
        return Some(Dialect::AgUi);
    }
    kind.bytes()
        .all(|byte| byte.is_ascii_lowercase() || byte == b'-')
        .then_some(Dialect::AiSdk)
}

/// Whether a `status` frame's data is a Viber chat status.
fn sniff_status(data: &str) -> bool {
    serde_json::from_str::<Value>(data).is_ok_and(|value| {
        value
            .get("status")
            .and_then(Value::as_str)
            .is_some_and(|status| matches!(status, "idle" | "streaming" | "awaiting-approval"))
    })
}

impl fmt::Display for Dialect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A dialect name that is not one of [`Dialect::ALL`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown dialect {name:?}; known: {}", known())]
pub struct UnknownDialect {
    /// The name given.
    pub name: String,
}

fn known() -> String {
    Dialect::ALL
        .iter()
        .map(|dialect| dialect.name())
        .collect::<Vec<_>>()
        .join(", ")
}

impl FromStr for Dialect {
    type Err = UnknownDialect;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        Dialect::ALL
            .iter()
            .copied()
            .find(|dialect| dialect.name() == name)
            .ok_or_else(|| UnknownDialect { name: name.into() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_back() {
        for dialect in Dialect::ALL {
            assert_eq!(dialect.name().parse::<Dialect>(), Ok(*dialect));
        }
        let error = "klingon".parse::<Dialect>().expect_err("unknown");
        assert!(error.to_string().contains(
            "native, native-ndjson, agentx, ai-sdk, agentscope, ag-ui, a2a, viber, openai-responses"
        ));
    }

    #[test]
    fn sniffing_waits_until_the_frames_say() {
        let native =
            b"id: 1\nevent: run_created\ndata: {}\n\nid: 2\nevent: run_status\ndata: {}\n\n";
        assert_eq!(Dialect::sniff(native), None);
        let mut more = native.to_vec();
        more.extend_from_slice(b"id: 3\nevent: message_start\ndata: {}\n\n");
        assert_eq!(Dialect::sniff(&more), Some(Dialect::Native));
        let mut agentx = native.to_vec();
        agentx.extend_from_slice(b"data: {\"id\":\"m\",\"role\":\"assistant\",\"parts\":[]}\n\n");
        assert_eq!(Dialect::sniff(&agentx), Some(Dialect::Agentx));
        assert_eq!(
            Dialect::sniff(b"{\"seq\":1,\"event\":\"run_created\",\"run_id\":\"r\"}\n"),
            Some(Dialect::NativeNdjson)
        );
        assert_eq!(Dialect::sniff(b"data: {\"hello\": 1}\n\n"), None);
        assert_eq!(
            Dialect::sniff(
                b"data: {\"type\":\"RUN_STARTED\",\"threadId\":\"t\",\"runId\":\"r\"}\n\n"
            ),
            Some(Dialect::AgUi)
        );
        assert_eq!(
            Dialect::sniff(b"data: {\"type\":\"start\",\"messageId\":\"m\"}\n\n"),
            Some(Dialect::AiSdk)
        );
        assert_eq!(
            Dialect::sniff(b"data: {\"sequence_number\":0,\"object\":\"response\"}\n\n"),
            Some(Dialect::AgentScope)
        );
        assert_eq!(
            Dialect::sniff(b"data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n"),
            Some(Dialect::A2a)
        );
        assert_eq!(
            Dialect::sniff(b"event: status\ndata: {\"status\":\"streaming\",\"runId\":\"r\"}\n\n"),
            Some(Dialect::Viber)
        );
        assert_eq!(
            Dialect::sniff(
                b"data: {\"role\":\"assistant\",\"parts\":[{\"type\":\"tool-call\"}]}\n\n"
            ),
            Some(Dialect::Viber)
        );
        assert_eq!(
            Dialect::sniff(
                b"event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0}\n\n"
            ),
            Some(Dialect::OpenAiResponses)
        );
        assert_eq!(Dialect::sniff(b""), None);
    }
}
