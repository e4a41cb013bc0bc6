//! [`RunStream`]: one run's events as they arrive, applied to the core [`Accumulator`] (the
//! client's view of the run), resumed after the last event when the connection breaks, and
//! followed again after the client answers a waiting run.
//!
//! Every event is checked to be the next one (`seq` grows by one; heartbeats repeat the last),
//! so a resume can neither skip nor repeat an event unnoticed: a gap is
//! [`ClientError::Gap`], a repeat the accumulator's error. The one skip allowed is before a
//! run's terminal status: a run cut by a server's crash ends after every seq it may have
//! shown, and the deltas it showed but never stored are gone (nothing follows the end).

use std::collections::VecDeque;

use agentwire_core::part::{ApprovalRequest, ApprovalResponse};
use agentwire_core::{
    Accumulator, Event, EventKind, Message, Part, Role, RunId, RunStatus, SessionId, ToolCall,
    ToolCallId, ToolError, ToolErrorKind, ToolResult,
};
use agentwire_dialects::StreamDecoder;
use agentwire_dialects::native::NativeSseDecoder;
use reqwest::Response;
use serde_json::Value;

use crate::client::Client;
use crate::error::ClientError;

/// A run's event stream and the state built from it.
///
/// ```no_run
/// # async fn demo() -> Result<(), agentwire_client::ClientError> {
/// use agentwire_client::{Client, StartRun};
/// use agentwire_core::{Message, Part};
///
/// let client = Client::new("http://127.0.0.1:8080")?;
/// let mut run = client.start(&StartRun::new(Message::user("hi"))).await?;
/// while let Some(event) = run.next().await? {
///     // `run.state()` is the accumulator after `event`: read the messages as they grow.
///     let _ = (event, run.state().messages());
/// }
/// println!("{:?}", run.status());
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct RunStream {
    client: Client,
    run_id: Option<RunId>,
    session_id: Option<SessionId>,
    response: Option<Response>,
    decoder: NativeSseDecoder,
    decoded: Vec<Event>,
    ready: VecDeque<Event>,
    accumulator: Accumulator,
    /// The number of the last event applied (the resume point); 0 before the first.
    last_seq: u64,
    /// Reconnects since the last event arrived.
    attempts: u32,
    /// Input was given since the stream last settled: a stream that ends before the run moves
    /// on is followed again rather than taken as settled.
    answered: bool,
    settled: bool,
}

impl RunStream {
    pub(crate) fn new(client: Client, run_id: Option<RunId>, response: Option<Response>) -> Self {
        Self {
            client,
            run_id,
            session_id: None,
            response,
            decoder: NativeSseDecoder::default(),
            decoded: Vec::new(),
            ready: VecDeque::new(),
            accumulator: Accumulator::default(),
            last_seq: 0,
            attempts: 0,
            answered: false,
            settled: false,
        }
    }

    /// The next event, already applied to [`state`](Self::state); `None` once the run has
    /// settled: ended, or awaiting the client (answer it with [`approve`](Self::approve),
    /// [`tool_output`](Self::tool_output), [`respond`](Self::respond), then read on).
    /// Heartbeats are not returned. A broken connection is resumed after the last event.
    ///
    /// Cancel-safe: dropping the future loses no event (a `select!` with Ctrl-C may).
    pub async fn next(&mut self) -> Result<Option<Event>, ClientError> {
        loop {
            if let Some(event) = self.ready.pop_front() {
                self.apply(&event)?;
                if matches!(event.kind, EventKind::Heartbeat {}) {
                    continue;
                }
                return Ok(Some(event));
            }
            if self.settled {
                return Ok(None);
            }
            let Some(response) = self.response.as_mut() else {
                self.reconnect().await?;
                continue;
            };
            match response.chunk().await {
                Ok(Some(bytes)) => {
                    self.decoder.decode(&bytes, &mut self.decoded)?;
                    self.ready.extend(self.decoded.drain(..));
                }
                Ok(None) => {
                    self.response = None;
                    // What is left mid-frame belongs to an event the resume sends again.
                    self.decoder = NativeSseDecoder::default();
                    if self.is_settled() && !self.answered {
                        self.settled = true;
                    } else {
                        self.wait_before_reconnect(None).await?;
                    }
                }
                Err(error) => {
                    self.response = None;
                    self.decoder = NativeSseDecoder::default();
                    self.wait_before_reconnect(Some(ClientError::Http(error)))
                        .await?;
                }
            }
        }
    }

    /// Reads until the run settles; its status then (`None` if the server never said one).
    pub async fn finish(&mut self) -> Result<Option<RunStatus>, ClientError> {
        while self.next().await?.is_some() {}
        Ok(self.status())
    }

    /// The state so far: the messages (streaming parts as far as they arrived), the run's
    /// status, usage and errors.
    pub fn state(&self) -> &Accumulator {
        &self.accumulator
    }

    /// The run's latest status.
    pub fn status(&self) -> Option<RunStatus> {
        self.accumulator.status()
    }

    /// The run, once the server named it.
    pub fn run_id(&self) -> Option<&RunId> {
        self.run_id.as_ref()
    }

    /// The run's session, once `run_created` said it: where the next message goes.
    pub fn session_id(&self) -> Option<&SessionId> {
        self.session_id.as_ref()
    }

    /// The number of the last event applied: where a resume starts.
    pub fn last_seq(&self) -> u64 {
        self.last_seq
    }

    /// The client this stream talks through.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// Approval requests not answered yet in this run, with the tool call each is about.
    pub fn pending_approvals(&self) -> Vec<(&ApprovalRequest, Option<&ToolCall>)> {
        crate::pending::pending_approvals(self.accumulator.messages())
    }

    /// Tool calls with neither a result nor an error yet: in a run awaiting `function_output`,
    /// the calls of the client's own tools.
    pub fn pending_tool_calls(&self) -> Vec<&ToolCall> {
        crate::pending::pending_tool_calls(self.accumulator.messages())
    }

    /// Answers an approval request, then follows the run on.
    pub async fn approve(
        &mut self,
        approval_id: &str,
        approved: bool,
        reason: Option<String>,
    ) -> Result<(), ClientError> {
        let part = Part::ApprovalResponse(ApprovalResponse {
            approval_id: approval_id.into(),
            approved,
            reason,
        });
        self.respond(Message::new(Role::User, vec![part])).await
    }

    /// Gives the output of a client-executed tool call, then follows the run on.
    pub async fn tool_output(
        &mut self,
        call: &ToolCallId,
        tool_name: &str,
        result: Value,
    ) -> Result<(), ClientError> {
        let part = Part::ToolResult(ToolResult {
            tool_call_id: call.clone(),
            tool_name: Some(tool_name.to_owned()),
            result,
            is_error: None,
        });
        self.respond(Message::new(Role::Tool, vec![part])).await
    }

    /// Reports that a client-executed tool call failed, then follows the run on.
    pub async fn tool_error(
        &mut self,
        call: &ToolCallId,
        tool_name: &str,
        message: &str,
    ) -> Result<(), ClientError> {
        let part = Part::ToolError(ToolError {
            tool_call_id: call.clone(),
            tool_name: Some(tool_name.to_owned()),
            error_type: ToolErrorKind::Execution,
            message: message.to_owned(),
        });
        self.respond(Message::new(Role::Tool, vec![part])).await
    }

    /// Gives the waiting run any input message (several answers at once, or the next user
    /// message of a run awaiting `input`), then follows the run on.
    pub async fn respond(&mut self, message: Message) -> Result<(), ClientError> {
        let run_id = self.run_id.clone().ok_or(ClientError::NoRunId)?;
        self.client.input(&run_id, &message).await?;
        self.answered = true;
        self.settled = false;
        Ok(())
    }

    /// Asks the server to cancel the run; read on to see it end `canceled`.
    pub async fn cancel(&self) -> Result<(), ClientError> {
        let run_id = self.run_id.as_ref().ok_or(ClientError::NoRunId)?;
        self.client.cancel(run_id).await?;
        Ok(())
    }

    /// The messages, taken out.
    pub fn into_messages(self) -> Vec<Message> {
        self.accumulator.into_messages()
    }

    /// Checks that `event` is the next one and applies it.
    fn apply(&mut self, event: &Event) -> Result<(), ClientError> {
        let heartbeat = matches!(event.kind, EventKind::Heartbeat {});
        let end =
            matches!(&event.kind, EventKind::RunStatus { status, .. } if status.is_terminal());
        let next = event.seq == self.last_seq + 1 || (end && event.seq > self.last_seq);
        if !heartbeat && !next {
            return Err(ClientError::Gap {
                expected: self.last_seq + 1,
                got: event.seq,
            });
        }
        self.accumulator.push(event)?;
        if heartbeat {
            return Ok(());
        }
        self.last_seq = event.seq;
        self.attempts = 0;
        match &event.kind {
            EventKind::RunCreated {
                run_id, session_id, ..
            } => {
                self.run_id.get_or_insert_with(|| run_id.clone());
                self.session_id = session_id.clone();
            }
            EventKind::RunStatus { status, .. } if !is_settled(*status) => self.answered = false,
            _ => {}
        }
        Ok(())
    }

    fn is_settled(&self) -> bool {
        self.accumulator.status().is_some_and(is_settled)
    }

    /// Counts a broken or ended-too-soon stream against the policy and waits its backoff.
    async fn wait_before_reconnect(
        &mut self,
        error: Option<ClientError>,
    ) -> Result<(), ClientError> {
        let policy = self.client.reconnect;
        if self.attempts >= policy.max_attempts {
            let last = error.unwrap_or(ClientError::EndedEarly);
            return Err(ClientError::Disconnected {
                attempts: self.attempts,
                last: Box::new(last),
            });
        }
        let wait = policy.backoff.saturating_mul(1 << self.attempts.min(16));
        self.attempts += 1;
        tokio::time::sleep(wait).await;
        Ok(())
    }

    /// Opens the run's events after the last one applied.
    async fn reconnect(&mut self) -> Result<(), ClientError> {
        let run_id = self.run_id.clone().ok_or(ClientError::NoRunId)?;
        match self.client.open_events(&run_id, self.last_seq).await {
            Ok(response) => {
                self.response = Some(response);
                Ok(())
            }
            // Refusals (not found, unauthorized) will not change by retrying.
            Err(error @ ClientError::Api { .. }) => Err(error),
            Err(error) => self.wait_before_reconnect(Some(error)).await,
        }
    }
}

/// Whether a run with this status waits for nothing from the server: it ended, or it waits
/// for the client.
fn is_settled(status: RunStatus) -> bool {
    status.is_terminal() || matches!(status, RunStatus::Awaiting(_))
}
