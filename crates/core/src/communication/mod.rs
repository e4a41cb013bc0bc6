//! Communication schemas: which messages each party may send at each point of a run,
//! and the state machine that holds a run to its schema.
//!
//! A run starts in `idle`. Each state lists the messages that may be sent in it: by whom
//! ([`Party`]), of which type ([`MessageKind`]), with what content ([`ContentSpec`]), and the
//! state the run moves to ([`Transition`]). A state that lists nothing is final. The pieces:
//!
//! - [`CommunicationSchema`]: the declaration, as JSON, checked when loaded; the
//!   built-ins are [`CommunicationSchema::chat`], [`one_shot`](CommunicationSchema::one_shot),
//!   [`function_calling`](CommunicationSchema::function_calling),
//!   [`interruptible`](CommunicationSchema::interruptible),
//!   [`long_running`](CommunicationSchema::long_running) and
//!   [`approval`](CommunicationSchema::approval);
//! - [`Utterance`]: a message as the schema sees it, usually made from a [`Message`](crate::Message)
//!   by [`Utterance::from_message`], whose [`ContentItem::from_part`] lists what content each part
//!   carries;
//! - [`SchemaMachine`]: a run's place in its schema; it accepts an utterance and moves on, or
//!   refuses it with a [`Refusal`] that names the state and what is allowed in it.
//!
//! This module decides only; it does not know how messages travel, which is the job of the
//! runtime and the server.
//!
//! ```
//! use agentwire_core::communication::{CommunicationSchema, MessageKind, Party, SchemaMachine, Utterance};
//! use agentwire_core::Message;
//!
//! let schema = CommunicationSchema::from_json(r#"{
//!     "idle": [{"party": "client", "type": "user_message",
//!               "schema": [{"contentType": "text/plain", "required": true}], "nextState": "running"}],
//!     "running": [{"party": "server", "type": "agent_message",
//!                  "schema": [{"contentType": "text/plain", "required": true}], "nextState": "done"}],
//!     "done": []
//! }"#)?;
//! let mut run = SchemaMachine::new(schema);
//! run.accept(&Utterance::from_message(Party::Client, MessageKind::USER_MESSAGE, &Message::user("Hi")))?;
//! run.accept(&Utterance::from_message(Party::Server, MessageKind::AGENT_MESSAGE, &Message::assistant("Hello")))?;
//! assert!(run.is_final());
//!
//! let again = Utterance::from_message(Party::Client, MessageKind::USER_MESSAGE, &Message::user("More?"));
//! let refusal = run.accept(&again).unwrap_err();
//! assert_eq!(refusal.to_string(), "in state 'done' nothing may be sent");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod builtin;
mod machine;
mod schema;
mod utterance;

pub use machine::{AllowedMessage, Refusal, SchemaMachine};
pub use schema::{
    CommunicationSchema, ContentSpec, InvalidSchema, MessageKind, Party, StateName, Transition,
};
pub use utterance::{ContentItem, Utterance};
