//! The built-in communication schemas: chat, one-shot, function-calling, interruptible and
//! long-running, plus an approval schema of our own.
//!
//! They are built in code, so constructing one cannot fail. The tests in
//! `crates/core/tests/communication.rs` hold them to their JSON, value for value, and check
//! that each satisfies the invariants of [`CommunicationSchema`].

use super::schema::{CommunicationSchema, ContentSpec, MessageKind, Party, Transition};

impl CommunicationSchema {
    /// The names [`CommunicationSchema::builtin`] knows, in the order they are defined here.
    pub const BUILTIN_NAMES: &'static [&'static str] = &[
        "chat",
        "one_shot",
        "function_calling",
        "interruptible",
        "long_running",
        "approval",
    ];

    /// The built-in schema called `name` (one of [`Self::BUILTIN_NAMES`]), or `None`.
    pub fn builtin(name: &str) -> Option<Self> {
        Some(match name {
            "chat" => Self::chat(),
            "one_shot" => Self::one_shot(),
            "function_calling" => Self::function_calling(),
            "interruptible" => Self::interruptible(),
            "long_running" => Self::long_running(),
            "approval" => Self::approval(),
            _ => return None,
        })
    }

    /// A chat agent: the client and the agent take turns, without end.
    ///
    /// ```json
    /// {
    ///   "idle": [{"party": "client", "type": "user_message", "schema": [{"contentType": "text/plain", "required": true}], "nextState": "running"}],
    ///   "running": [{"party": "server", "type": "agent_message", "schema": [{"contentType": "text/plain", "required": true}], "nextState": "idle"}]
    /// }
    /// ```
    pub fn chat() -> Self {
        Self::from_checked(vec![
            ("idle", vec![user_message("running")]),
            ("running", vec![agent_message("idle")]),
        ])
    }

    /// A one-shot agent (a "researcher"): one question, one answer that may cite
    /// sources, then the run is over (`done` is final).
    ///
    /// ```json
    /// {
    ///   "idle": [{"party": "client", "type": "user_message", "schema": [{"contentType": "text/plain", "required": true}], "nextState": "running"}],
    ///   "running": [{"party": "server", "type": "agent_message", "schema": [{"contentType": "text/plain", "required": true}, {"name": "/sources/*", "contentType": "text/x-uri", "required": false}], "nextState": "done"}],
    ///   "done": []
    /// }
    /// ```
    pub fn one_shot() -> Self {
        let answer =
            agent_message("done").with(ContentSpec::optional("text/x-uri").named("/sources/*"));
        Self::from_checked(vec![
            ("idle", vec![user_message("running")]),
            ("running", vec![answer]),
            ("done", Vec::new()),
        ])
    }

    /// A function-calling agent: a chat agent that may ask the client to run a function, and
    /// waits for its output before it goes on.
    ///
    /// This deviates on purpose from the usual function-calling schema, whose prose says the
    /// client "must respond with the result of the function call in order for the agent to
    /// continue", but whose JSON sends `function_call` from `running` back to `running` and
    /// gives the client no message to answer with, so the output could never be sent. Here the
    /// call leads to `awaiting_function_output`, where only the client's `function_output` is
    /// accepted:
    ///
    /// ```json
    /// {
    ///   "idle": [{"party": "client", "type": "user_message", "schema": [{"contentType": "text/plain", "required": true}], "nextState": "running"}],
    ///   "running": [
    ///     {"party": "server", "type": "agent_message", "schema": [{"contentType": "text/plain", "required": true}], "nextState": "idle"},
    ///     {"party": "server", "type": "function_call", "schema": [{"name": "/function", "contentType": "application/json", "required": true}], "nextState": "awaiting_function_output"}
    ///   ],
    ///   "awaiting_function_output": [{"party": "client", "type": "function_output", "schema": [{"name": "/function_output", "contentType": "application/json", "required": true}], "nextState": "running"}]
    /// }
    /// ```
    pub fn function_calling() -> Self {
        let call = Transition::new(
            Party::Server,
            MessageKind::FUNCTION_CALL,
            "awaiting_function_output",
        )
        .with(ContentSpec::required("application/json").named("/function"));
        let output = Transition::new(Party::Client, MessageKind::FUNCTION_OUTPUT, "running")
            .with(ContentSpec::required("application/json").named("/function_output"));
        Self::from_checked(vec![
            ("idle", vec![user_message("running")]),
            ("running", vec![agent_message("idle"), call]),
            ("awaiting_function_output", vec![output]),
        ])
    }

    /// An interruptible chat agent: while the agent is answering, the client may
    /// `cancel`, which returns the run to `idle`.
    ///
    /// ```json
    /// {
    ///   "idle": [{"party": "client", "type": "user_message", "schema": [{"contentType": "text/plain", "required": true}], "nextState": "running"}],
    ///   "running": [
    ///     {"party": "server", "type": "agent_message", "schema": [{"contentType": "text/plain", "required": true}], "nextState": "idle"},
    ///     {"party": "client", "type": "cancel", "schema": [], "nextState": "idle"}
    ///   ]
    /// }
    /// ```
    pub fn interruptible() -> Self {
        Self::from_checked(vec![
            ("idle", vec![user_message("running")]),
            (
                "running",
                vec![
                    agent_message("idle"),
                    Transition::new(Party::Client, MessageKind::CANCEL, "idle"),
                ],
            ),
        ])
    }

    /// A long-running agent: started by one client message, it then reports its
    /// progress in as many agent messages as it likes, staying in `running`.
    ///
    /// ```json
    /// {
    ///   "idle": [{"party": "client", "type": "user_message", "schema": [{"contentType": "text/plain", "required": true}], "nextState": "running"}],
    ///   "running": [{"party": "server", "type": "agent_message", "schema": [{"contentType": "text/plain", "required": true}], "nextState": "running"}]
    /// }
    /// ```
    pub fn long_running() -> Self {
        Self::from_checked(vec![
            ("idle", vec![user_message("running")]),
            ("running", vec![agent_message("running")]),
        ])
    }

    /// A chat agent whose tool calls may need a person's approval (our own): the
    /// agent's `approval_request` moves the run to `awaiting_approval`, where only the client's
    /// `approval_response` is accepted.
    ///
    /// ```json
    /// {
    ///   "idle": [{"party": "client", "type": "user_message", "schema": [{"contentType": "text/plain", "required": true}], "nextState": "running"}],
    ///   "running": [
    ///     {"party": "server", "type": "agent_message", "schema": [{"contentType": "text/plain", "required": true}], "nextState": "idle"},
    ///     {"party": "server", "type": "approval_request", "schema": [{"name": "/approval", "contentType": "application/json", "required": true}], "nextState": "awaiting_approval"}
    ///   ],
    ///   "awaiting_approval": [{"party": "client", "type": "approval_response", "schema": [{"name": "/approval", "contentType": "application/json", "required": true}], "nextState": "running"}]
    /// }
    /// ```
    pub fn approval() -> Self {
        let request = Transition::new(
            Party::Server,
            MessageKind::APPROVAL_REQUEST,
            "awaiting_approval",
        )
        .with(ContentSpec::required("application/json").named("/approval"));
        let response = Transition::new(Party::Client, MessageKind::APPROVAL_RESPONSE, "running")
            .with(ContentSpec::required("application/json").named("/approval"));
        Self::from_checked(vec![
            ("idle", vec![user_message("running")]),
            ("running", vec![agent_message("idle"), request]),
            ("awaiting_approval", vec![response]),
        ])
    }
}

/// The client's text message, as every built-in starts.
fn user_message(next_state: &'static str) -> Transition {
    Transition::new(Party::Client, MessageKind::USER_MESSAGE, next_state)
        .with(ContentSpec::required("text/plain"))
}

/// The agent's text answer.
fn agent_message(next_state: &'static str) -> Transition {
    Transition::new(Party::Server, MessageKind::AGENT_MESSAGE, next_state)
        .with(ContentSpec::required("text/plain"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_keeps_the_schema_invariants() {
        for name in CommunicationSchema::BUILTIN_NAMES {
            let schema = CommunicationSchema::builtin(name).expect("listed");
            let states = schema
                .states()
                .map(|state| (state.clone(), schema.transitions(state).to_vec()));
            let checked = CommunicationSchema::new(states).expect("valid");
            assert_eq!(checked, schema, "{name}");
        }
        assert_eq!(CommunicationSchema::builtin("researcher"), None);
    }
}
