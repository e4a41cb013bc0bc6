//! Messages a client sends into a session while its agent works, and what becomes of each.
//!
//! A session takes one turn at a time, so a message that arrives while a run goes on needs a
//! rule; the client picks one per message ([`InputMode`]). Every such message is named by the
//! client (`client_message_id`, which makes a retry harmless) and gets an outcome
//! ([`Outcome`]), reported in the stream of the run it concerns as an `input` event:
//!
//! ```json
//! {"seq": 12, "event": "input", "client_message_id": "c1", "outcome": "delivered", "step": 2}
//! ```
//!
//! A steer the run took is followed by the message itself (`message_complete`, role `user`),
//! which is where the model saw it.

use serde::{Deserialize, Serialize};

/// What to do with a message to a session whose run is still going.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InputMode {
    /// Run it after the current run and every message queued before it, in order.
    #[default]
    Queue,
    /// Give it to the current run at its next step boundary (after the model call or the tool
    /// results under way), as a user message the model sees.
    Steer,
    /// Cancel the current run, keeping what it produced, and run this message next.
    Interrupt,
    /// Cancel the current run, remove it from the session's history, and run this message next.
    Rollback,
    /// Refuse it while the session is busy.
    Reject,
}

impl InputMode {
    /// Every mode, in the order the docs list them.
    pub const ALL: [InputMode; 5] = [
        InputMode::Queue,
        InputMode::Steer,
        InputMode::Interrupt,
        InputMode::Rollback,
        InputMode::Reject,
    ];

    /// The mode's name on the wire, e.g. `"queue"`.
    pub fn name(self) -> &'static str {
        match self {
            InputMode::Queue => "queue",
            InputMode::Steer => "steer",
            InputMode::Interrupt => "interrupt",
            InputMode::Rollback => "rollback",
            InputMode::Reject => "reject",
        }
    }

    /// The mode named `name`, if there is one.
    pub fn from_name(name: &str) -> Option<InputMode> {
        InputMode::ALL.into_iter().find(|mode| mode.name() == name)
    }
}

/// What became of a client's message: `{"client_message_id", "outcome", …}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct InputOutcome {
    /// The client's name for the message.
    pub client_message_id: String,
    /// What became of it.
    #[serde(flatten)]
    pub outcome: Outcome,
}

/// The outcome of a message sent into a busy session.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Outcome {
    /// It waits its turn: it will start a run of its own.
    Queued,
    /// The model sees it from the call after `step` model calls of the run (0: it is the
    /// input of a run of its own).
    Delivered {
        /// How many model calls the run had made when it took the message.
        step: u32,
    },
    /// It was not delivered, and will not be: `reason` says why (`run_finished`, `canceled`,
    /// `refused`, `awaiting_client`, …).
    NotDelivered {
        /// Why, as a stable code.
        reason: String,
    },
}

impl InputOutcome {
    /// The outcome `outcome` of the message `client_message_id`.
    pub fn new(client_message_id: impl Into<String>, outcome: Outcome) -> Self {
        Self {
            client_message_id: client_message_id.into(),
            outcome,
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn modes_read_back_from_their_names() {
        for mode in InputMode::ALL {
            assert_eq!(InputMode::from_name(mode.name()), Some(mode));
            let json = serde_json::to_string(&mode).unwrap();
            assert_eq!(json, format!("\"{}\"", mode.name()));
        }
        assert_eq!(InputMode::from_name("later"), None);
    }

    #[test]
    fn outcomes_are_flat_objects() {
        let outcome = InputOutcome::new("c1", Outcome::Delivered { step: 2 });
        let json = serde_json::to_value(&outcome).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"client_message_id": "c1", "outcome": "delivered", "step": 2})
        );
        let back: InputOutcome = serde_json::from_value(json).unwrap();
        assert_eq!(back, outcome);
    }
}
