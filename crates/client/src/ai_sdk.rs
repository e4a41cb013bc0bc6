//! [`AiSdkChat`]: a conversation with any AI SDK chat endpoint (`/api/chat` of a server built
//! on `streamText(…).toUIMessageStreamResponse()`, or agentwire's own), spoken as `useChat`'s
//! `DefaultChatTransport` speaks it: the client keeps the history and posts all of it each turn;
//! the answer is a UI message stream, read with the dialects' [`AiSdkDecoder`] into the core
//! [`Accumulator`].
//!
//! What the AI SDK format cannot carry (run ids, resuming, server-side cancel) this client cannot
//! do either: a stream is not resumed, and canceling is dropping the [`ChatStream`], as the AI
//! SDK's own stop does.

use std::collections::VecDeque;
use std::time::{SystemTime, UNIX_EPOCH};

use agentwire_core::part::{ApprovalRequest, ApprovalResponse};
use agentwire_core::{
    Accumulator, Event, EventKind, Message, MessageId, Part, RunStatus, ToolCall,
};
use agentwire_dialects::StreamDecoder;
use agentwire_dialects::ai_sdk::{AiSdkDecoder, to_ui_message};
use reqwest::Response;
use reqwest::header::{ACCEPT, AUTHORIZATION, HeaderValue};
use serde_json::{Value, json};

use crate::client::{checked, http_url};
use crate::error::ClientError;

/// A chat with an AI SDK endpoint: its URL and the history this client keeps.
#[derive(Clone, Debug)]
pub struct AiSdkChat {
    http: reqwest::Client,
    url: reqwest::Url,
    authorization: Option<HeaderValue>,
    chat_id: String,
    history: Vec<Message>,
    n_sent: u64,
}

/// One answer streaming from an AI SDK endpoint, applied to an [`Accumulator`] as it arrives.
#[derive(Debug)]
pub struct ChatStream {
    response: Option<Response>,
    decoder: AiSdkDecoder,
    decoded: Vec<Event>,
    ready: VecDeque<Event>,
    accumulator: Accumulator,
}

impl AiSdkChat {
    /// A new chat with the endpoint at `url` (e.g. `http://localhost:3000/api/chat`).
    pub fn new(url: &str) -> Result<Self, ClientError> {
        let parsed = http_url(url)?;
        let http = reqwest::Client::builder()
            .build()
            .map_err(ClientError::Http)?;
        // A chat id unique enough to tell this process's chat from another's on the server.
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |since| since.as_nanos());
        Ok(Self {
            http,
            url: parsed,
            authorization: None,
            chat_id: format!("chat-{nanos:x}-{}", std::process::id()),
            history: Vec::new(),
            n_sent: 0,
        })
    }

    /// Sends `Authorization: Bearer <key>` with every request.
    pub fn with_api_key(mut self, key: &str) -> Result<Self, ClientError> {
        self.authorization = Some(crate::client::bearer(key)?);
        Ok(self)
    }

    /// The conversation so far, as this client keeps it (answers join it by [`record`]).
    ///
    /// [`record`]: Self::record
    pub fn messages(&self) -> &[Message] {
        &self.history
    }

    /// Sends the next message (it joins the history) and streams the answer.
    pub async fn send(&mut self, mut message: Message) -> Result<ChatStream, ClientError> {
        if message.id.is_none() {
            self.n_sent += 1;
            message.id = Some(MessageId::new(format!("{}-u{}", self.chat_id, self.n_sent)));
        }
        self.history.push(message);
        self.post(None).await
    }

    /// Answers approval requests of the last answer (each `(approval_id, approved)`): the
    /// responses join the message that asked, which the endpoint continues.
    pub async fn approve(&mut self, answers: &[(String, bool)]) -> Result<ChatStream, ClientError> {
        let mut continued = None;
        for (approval_id, approved) in answers {
            let asking = self.history.iter_mut().rev().find(|message| {
                message.parts.iter().any(|part| {
                    matches!(part, Part::ApprovalRequest(request) if request.approval_id.as_str() == approval_id)
                })
            });
            if let Some(message) = asking {
                message.parts.push(Part::ApprovalResponse(ApprovalResponse {
                    approval_id: approval_id.as_str().into(),
                    approved: *approved,
                    reason: None,
                }));
                continued = message.id.clone();
            }
        }
        self.post(continued).await
    }

    /// Adds what `stream` received to the history: a new message, or the parts a continuation
    /// appended to the message it continues. Call it when the stream has ended (or was
    /// stopped: what arrived is kept, as the AI SDK client keeps it).
    pub fn record(&mut self, stream: ChatStream) {
        for message in stream.accumulator.into_messages() {
            let known = self
                .history
                .iter_mut()
                .find(|old| old.id.is_some() && old.id == message.id);
            match known {
                Some(old) => old.parts.extend(message.parts),
                None => self.history.push(message),
            }
        }
    }

    /// Approval requests in the history that are not answered yet.
    pub fn pending_approvals(&self) -> Vec<(&ApprovalRequest, Option<&ToolCall>)> {
        crate::pending::pending_approvals(&self.history)
    }

    async fn post(&self, continued: Option<MessageId>) -> Result<ChatStream, ClientError> {
        let messages: Vec<Value> = self.history.iter().map(to_ui_message).collect();
        let mut body = json!({
            "id": self.chat_id,
            "messages": messages,
            "trigger": "submit-message",
        });
        if let Some(id) = continued {
            body["messageId"] = id.as_str().into();
        }
        let mut request = self
            .http
            .post(self.url.clone())
            .header(ACCEPT, "text/event-stream")
            .json(&body);
        if let Some(value) = &self.authorization {
            request = request.header(AUTHORIZATION, value.clone());
        }
        let response = checked(request.send().await?).await?;
        Ok(ChatStream {
            response: Some(response),
            decoder: AiSdkDecoder::default(),
            decoded: Vec::new(),
            ready: VecDeque::new(),
            accumulator: Accumulator::default(),
        })
    }
}

impl ChatStream {
    /// The next event, already applied to [`state`](Self::state); `None` at the end of the
    /// answer. Cancel-safe.
    pub async fn next(&mut self) -> Result<Option<Event>, ClientError> {
        loop {
            if let Some(event) = self.ready.pop_front() {
                self.accumulator.push(&event)?;
                if matches!(event.kind, EventKind::Heartbeat {}) {
                    continue;
                }
                return Ok(Some(event));
            }
            let Some(response) = self.response.as_mut() else {
                return Ok(None);
            };
            match response.chunk().await? {
                Some(bytes) => self.decoder.decode(&bytes, &mut self.decoded)?,
                None => {
                    self.response = None;
                    self.decoder.finish(&mut self.decoded)?;
                }
            }
            self.ready.extend(self.decoded.drain(..));
        }
    }

    /// The answer so far.
    pub fn state(&self) -> &Accumulator {
        &self.accumulator
    }

    /// The answer's status as the stream tells it (`finish`, `abort`, `error`).
    pub fn status(&self) -> Option<RunStatus> {
        self.accumulator.status()
    }
}
