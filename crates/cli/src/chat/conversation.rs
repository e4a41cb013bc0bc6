//! The other end of the chat: agentwire's native API (runs in one session, answered through
//! `/input`), or an AI SDK chat endpoint (the client keeps the history). Both yield events
//! applied to an accumulator.

use agentwire_client::ai_sdk::{AiSdkChat, ChatStream};
use agentwire_client::{Client, ClientError, InboxEntry, RunStream, SessionMessage, StartRun};
use agentwire_core::part::ApprovalResponse;
use agentwire_core::{
    Awaiting, Event, InputMode, Message, Part, Role, RunId, RunStatus, SessionId,
};

use super::render::{Approval, approvals, approvals_of};

/// Who the chat talks to.
pub(crate) enum Conversation {
    Native {
        client: Client,
        agent: Option<String>,
        session: Option<SessionId>,
        /// The last run, while it waits for this client.
        waiting: Option<Box<RunStream>>,
    },
    AiSdk(Box<AiSdkChat>),
}

/// One answer streaming in.
pub(crate) enum Turn {
    Native(Box<RunStream>),
    AiSdk(Box<ChatStream>),
    /// An AI SDK answer the user stopped: nothing more comes.
    Stopped,
}

impl Conversation {
    /// Sends the user's next message.
    pub(crate) async fn send(&mut self, message: Message) -> Result<Turn, ClientError> {
        match self {
            Conversation::Native {
                client,
                agent,
                session,
                waiting,
            } => {
                if let Some(mut run) = waiting.take()
                    && run.status() == Some(RunStatus::Awaiting(Awaiting::Input))
                {
                    run.respond(message).await?;
                    return Ok(Turn::Native(run));
                }
                let mut start = StartRun::new(message);
                if let Some(agent) = agent {
                    start = start.agent(agent.clone());
                }
                if let Some(session) = session {
                    start = start.session(session.clone());
                }
                Ok(Turn::Native(Box::new(client.start(&start).await?)))
            }
            Conversation::AiSdk(chat) => Ok(Turn::AiSdk(Box::new(chat.send(message).await?))),
        }
    }

    /// Sends `message` into the session while `turn` answers, in `mode` (the agent's default
    /// when `None`); where it stands. Only the native API has a session to send into.
    pub(crate) async fn send_while(
        &self,
        turn: &Turn,
        message: Message,
        mode: Option<InputMode>,
        client_message_id: String,
    ) -> Option<Result<InboxEntry, ClientError>> {
        let (Conversation::Native { client, .. }, Turn::Native(run)) = (self, turn) else {
            return None;
        };
        let session = run.session_id()?;
        let message = SessionMessage {
            message,
            mode,
            client_message_id: Some(client_message_id),
        };
        Some(client.send_message(session, &message).await)
    }

    /// Where a message sent while a turn answered stands now.
    pub(crate) async fn outcome(&self, client_message_id: &str) -> Result<InboxEntry, ClientError> {
        match self {
            Conversation::Native {
                client,
                session: Some(session),
                ..
            } => client.message_outcome(session, client_message_id).await,
            _ => Err(ClientError::NoRunId),
        }
    }

    /// The turn of a run a message sent meanwhile started.
    pub(crate) fn follow(&self, run_id: &RunId) -> Option<Turn> {
        match self {
            Conversation::Native { client, .. } => {
                Some(Turn::Native(Box::new(client.events(run_id))))
            }
            Conversation::AiSdk(_) => None,
        }
    }

    /// Takes a settled turn back; the approvals it waits for.
    pub(crate) fn settle(&mut self, turn: Turn) -> Vec<Approval> {
        match (self, turn) {
            (
                Conversation::Native {
                    session, waiting, ..
                },
                Turn::Native(run),
            ) => {
                if let Some(id) = run.session_id() {
                    *session = Some(id.clone());
                }
                let pending = match run.status() {
                    Some(RunStatus::Awaiting(Awaiting::Approval)) => approvals_of(run.state()),
                    _ => Vec::new(),
                };
                if matches!(run.status(), Some(RunStatus::Awaiting(_))) {
                    *waiting = Some(run);
                }
                pending
            }
            (Conversation::AiSdk(chat), Turn::AiSdk(stream)) => {
                chat.record(*stream);
                approvals(chat.messages(), None)
            }
            _ => Vec::new(),
        }
    }

    /// Answers the approvals of the last turn; the run goes on.
    pub(crate) async fn answer(&mut self, answers: &[(String, bool)]) -> Result<Turn, ClientError> {
        match self {
            Conversation::Native { waiting, .. } => {
                let Some(mut run) = waiting.take() else {
                    return Err(ClientError::NoRunId);
                };
                let parts = answers
                    .iter()
                    .map(|(approval_id, approved)| {
                        Part::ApprovalResponse(ApprovalResponse {
                            approval_id: approval_id.as_str().into(),
                            approved: *approved,
                            reason: None,
                        })
                    })
                    .collect();
                run.respond(Message::new(Role::User, parts)).await?;
                Ok(Turn::Native(run))
            }
            Conversation::AiSdk(chat) => Ok(Turn::AiSdk(Box::new(chat.approve(answers).await?))),
        }
    }
}

impl Turn {
    /// The next event; `None` when the answer has settled.
    pub(crate) async fn next(&mut self) -> Result<Option<Event>, ClientError> {
        match self {
            Turn::Native(run) => run.next().await,
            Turn::AiSdk(stream) => stream.next().await,
            Turn::Stopped => Ok(None),
        }
    }

    /// Stops the answer: the server cancels a native run (its stream then ends `canceled`);
    /// an AI SDK answer is dropped, as the AI SDK's own stop does. True if events still come.
    pub(crate) async fn cancel(&mut self) -> Result<bool, ClientError> {
        match self {
            Turn::Native(run) => {
                run.cancel().await?;
                Ok(true)
            }
            Turn::AiSdk(_) | Turn::Stopped => {
                *self = Turn::Stopped;
                Ok(false)
            }
        }
    }
}
