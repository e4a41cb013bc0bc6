//! Messages that reach a run while it works: a client's steer, which the run takes at its next
//! step boundary, and the outcomes of messages its host handles (queued behind the run), which
//! the run reports in its stream.
//!
//! Decided: a steer joins the conversation between model calls, never inside one. The model's
//! stream and the tools under way finish first; then the assistant message so far is
//! complete, the steer follows it as a user message, and the next model call sees both. So
//! the history stays a conversation any model can be shown again, and nothing the agent was
//! doing is cut. Where the run ends instead (canceled, failed, or waiting for the client), a
//! steer it holds is reported not delivered rather than kept: the client knows, and may send
//! it again as a message of its own. The decision to end is taken under the lock that a steer
//! takes, so a steer is either taken or refused, never dropped.

use std::sync::atomic::Ordering;

use agentwire_core::{InputOutcome, Message, Outcome, Role, RunStatus};

use crate::run::{InputError, RunHandle};
use crate::schema;

/// What a run holds of the messages sent while it works.
#[derive(Debug)]
pub(crate) struct Inbox {
    /// Steers the run has accepted and not yet taken, in order.
    pub(crate) steers: Vec<Steer>,
    /// Outcomes to report in the run's stream at its next event.
    pub(crate) notes: Vec<InputOutcome>,
    /// Whether the run may still take a steer (it has not decided to end, and its agent is
    /// not a handler that writes its answer itself).
    pub(crate) open: bool,
}

impl Inbox {
    /// The inbox of a run whose orchestrator takes steers (`open`), or of one that does not.
    pub(crate) fn new(open: bool) -> Self {
        Self {
            steers: Vec::new(),
            notes: Vec::new(),
            open,
        }
    }

    /// Closes the inbox; the steers it held are reported not delivered, for `reason`.
    pub(crate) fn close(&mut self, reason: &str) {
        self.open = false;
        self.refuse_held(reason);
    }

    /// Reports every held steer not delivered, for `reason`.
    pub(crate) fn refuse_held(&mut self, reason: &str) {
        for steer in self.steers.drain(..) {
            self.notes.push(InputOutcome::new(
                steer.client_message_id,
                Outcome::NotDelivered {
                    reason: reason.to_owned(),
                },
            ));
        }
    }
}

/// A user message for the run's next step boundary.
#[derive(Debug)]
pub(crate) struct Steer {
    pub(crate) client_message_id: String,
    pub(crate) message: Message,
}

impl RunHandle {
    /// Steers the run: `message`, a user message, joins the conversation at the run's next
    /// step boundary (after the model call or the tool results under way), and the model sees
    /// it from the next call on. The run reports an `input` event for it, named by
    /// `client_message_id`: `delivered` at the step, or `not_delivered` if the run ends or
    /// waits for the client first. The agent's schema must allow a user message in the run's
    /// state now (the default schema does while the agent works); a refusal changes nothing.
    /// A run that has decided to end, or whose agent writes its answers itself, refuses it
    /// ([`InputError::Finished`], [`InputError::NotSteerable`]).
    pub fn steer(&self, client_message_id: &str, message: Message) -> Result<(), InputError> {
        if message.role != Role::User {
            return Err(InputError::Role {
                role: crate::run::role_name(message.role),
            });
        }
        let mut state = self.shared.lock();
        let status = *self.shared.status.borrow();
        if status.is_terminal() {
            return Err(InputError::Finished { status });
        }
        // The conversation was handed to another agent, which takes it from here.
        if let Some(handoff) = state.handoff.clone() {
            drop(state);
            return handoff.steer(client_message_id, message);
        }
        if !state.inbox.open {
            return Err(match self.shared.agent.inner.handler.is_some() {
                true => InputError::NotSteerable,
                // It has decided to end: its last status is on its way.
                false => InputError::Finished {
                    status: RunStatus::Completed,
                },
            });
        }
        if state.wait.is_some() {
            return Err(InputError::Waiting);
        }
        // A message that answers something is input for a wait, not a steer.
        let Some(utterance) = schema::incoming(&message).question else {
            return Err(InputError::NotAQuestion);
        };
        state.machine.check(&utterance)?;
        state.inbox.steers.push(Steer {
            client_message_id: client_message_id.to_owned(),
            message,
        });
        Ok(())
    }

    /// Has the run report `outcome` in its stream at its next event (the host's word on a
    /// message it holds for the session, such as one queued behind the run). Does nothing to
    /// a run that has ended.
    pub fn note(&self, outcome: InputOutcome) {
        let mut state = self.shared.lock();
        if self.shared.status.borrow().is_terminal() {
            return;
        }
        state.inbox.notes.push(outcome);
        self.shared.noted.store(true, Ordering::Release);
        drop(state);
        // A run waiting for the client reports it at once.
        self.shared.answered.notify_one();
    }
}
