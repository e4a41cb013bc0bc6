//! How a run's messages meet its agent's communication schema: the default schema, the type
//! ([`MessageKind`]) of each message in and out, and the content the schema checks.
//!
//! The schema governs what passes between the client and the agent, so the runtime shows it
//! only that. Calls to the agent's own tools, and their results, stay inside the server and are
//! not content here; the messages are:
//!
//! | message | party | type | content checked |
//! |---|---|---|---|
//! | the client's question | client | `user_message` | every content part |
//! | answers to approval requests | client | `approval_response` | the `/approval` items, and any other content of the message |
//! | outputs of client tools | client | `function_output` | the `/function_output` items (and other content, when no approval is answered too) |
//! | the agent's final answer | server | `agent_message` | its text, refusals, files and sources |
//! | a turn that asks for approval | server | `approval_request` | the `/approval` items |
//! | a turn that calls client tools | server | `function_call` | the client calls' `/function` items |
//! | a turn that asks the user (`ask_user`) | server | `input_request` | one `/question` item per question |
//! | the user's answer to it | client | `user_message` | every content part |
//!
//! The text the model writes before it asks for an approval or calls a client tool is not
//! checked: it is commentary on the request, not the agent's answer.

use std::sync::{Arc, LazyLock};

use agentwire_core::communication::{
    CommunicationSchema, ContentItem, ContentSpec, MessageKind, Party, Transition, Utterance,
};
use agentwire_core::{Message, Part, ToolCall};

/// The schema an agent follows unless its builder names another: the chat schema (the client
/// and the agent take turns), with the two waits an agent with tools may need: the agent may
/// ask the client to run a function (`awaiting_function_output`, as in the function-calling
/// built-in) or to approve a tool call (`awaiting_approval`, as in the approval built-in), and
/// the agent may ask the user a question and wait for their answer in the same run
/// (`input_request` → `awaiting_input`, a "waiting for user" state). Its answer may cite
/// sources (as the one-shot built-in's may) and hold files, such as images a model returns.
/// The client may `cancel` while the agent works and while it waits (back to `idle`), as the
/// interruptible built-in allows while it works: a UI's Stop button. And the user may write
/// while the agent works (`running` → `running`): a steer, which the run takes at its next
/// step boundary (see `RunHandle::steer`).
///
/// ```json
/// {
///   "idle": [{"party": "client", "type": "user_message", "schema": [{"contentType": "text/plain", "required": true}], "nextState": "running"}],
///   "running": [
///     {"party": "server", "type": "agent_message", "schema": [{"contentType": "text/plain", "required": true}, {"name": "/sources/*", "contentType": "text/x-uri", "required": false}, {"contentType": "*/*", "required": false}], "nextState": "idle"},
///     {"party": "server", "type": "function_call", "schema": [{"name": "/function", "contentType": "application/json", "required": true}], "nextState": "awaiting_function_output"},
///     {"party": "server", "type": "approval_request", "schema": [{"name": "/approval", "contentType": "application/json", "required": true}], "nextState": "awaiting_approval"},
///     {"party": "server", "type": "input_request", "schema": [{"name": "/question", "contentType": "application/json", "required": true}], "nextState": "awaiting_input"},
///     {"party": "client", "type": "user_message", "schema": [{"contentType": "text/plain", "required": true}], "nextState": "running"},
///     {"party": "client", "type": "cancel", "schema": [], "nextState": "idle"}
///   ],
///   "awaiting_function_output": [
///     {"party": "client", "type": "function_output", "schema": [{"name": "/function_output", "contentType": "application/json", "required": true}], "nextState": "running"},
///     {"party": "client", "type": "cancel", "schema": [], "nextState": "idle"}
///   ],
///   "awaiting_approval": [
///     {"party": "client", "type": "approval_response", "schema": [{"name": "/approval", "contentType": "application/json", "required": true}], "nextState": "running"},
///     {"party": "client", "type": "cancel", "schema": [], "nextState": "idle"}
///   ],
///   "awaiting_input": [
///     {"party": "client", "type": "user_message", "schema": [{"contentType": "text/plain", "required": true}], "nextState": "running"},
///     {"party": "client", "type": "cancel", "schema": [], "nextState": "idle"}
///   ]
/// }
/// ```
///
/// None of the built-ins allows both waits, and one model step may call a tool that needs
/// approval and a client tool at once.
pub fn default_schema() -> Arc<CommunicationSchema> {
    static SCHEMA: LazyLock<Arc<CommunicationSchema>> = LazyLock::new(|| {
        let json = ContentSpec::required("application/json");
        let states = vec![
            (
                "idle",
                vec![
                    Transition::new(Party::Client, MessageKind::USER_MESSAGE, "running")
                        .with(ContentSpec::required("text/plain")),
                ],
            ),
            (
                "running",
                vec![
                    Transition::new(Party::Server, MessageKind::AGENT_MESSAGE, "idle")
                        .with(ContentSpec::required("text/plain"))
                        .with(ContentSpec::optional("text/x-uri").named("/sources/*"))
                        .with(ContentSpec::optional("*/*")),
                    Transition::new(
                        Party::Server,
                        MessageKind::FUNCTION_CALL,
                        "awaiting_function_output",
                    )
                    .with(json.clone().named("/function")),
                    Transition::new(
                        Party::Server,
                        MessageKind::APPROVAL_REQUEST,
                        "awaiting_approval",
                    )
                    .with(json.clone().named("/approval")),
                    Transition::new(Party::Server, MessageKind::INPUT_REQUEST, "awaiting_input")
                        .with(json.clone().named("/question")),
                    // A steer: the user adds to what the agent works on.
                    Transition::new(Party::Client, MessageKind::USER_MESSAGE, "running")
                        .with(ContentSpec::required("text/plain")),
                    cancel(),
                ],
            ),
            (
                "awaiting_function_output",
                vec![
                    Transition::new(Party::Client, MessageKind::FUNCTION_OUTPUT, "running")
                        .with(json.clone().named("/function_output")),
                    cancel(),
                ],
            ),
            (
                "awaiting_approval",
                vec![
                    Transition::new(Party::Client, MessageKind::APPROVAL_RESPONSE, "running")
                        .with(json.named("/approval")),
                    cancel(),
                ],
            ),
            (
                "awaiting_input",
                vec![
                    Transition::new(Party::Client, MessageKind::USER_MESSAGE, "running")
                        .with(ContentSpec::required("text/plain")),
                    cancel(),
                ],
            ),
        ];
        fn cancel() -> Transition {
            Transition::new(Party::Client, MessageKind::CANCEL, "idle")
        }
        // Every next state above is declared, so this cannot fail (a unit test checks it); the
        // fallback only keeps library code free of panics.
        Arc::new(CommunicationSchema::new(states).unwrap_or_else(|_| CommunicationSchema::chat()))
    });
    Arc::clone(&SCHEMA)
}

/// Whether some state of `schema` lets the `party` send a message of type `kind`.
pub(crate) fn allows_anywhere(schema: &CommunicationSchema, party: Party, kind: &str) -> bool {
    schema.states().any(|state| {
        schema
            .transitions(state)
            .iter()
            .any(|transition| transition.party == party && transition.kind == kind)
    })
}

/// What a client message answers: approvals, function outputs, both, or neither (a question).
pub(crate) struct Incoming {
    /// The `approval_response` utterance, when the message answers approvals.
    pub(crate) approvals: Option<Utterance>,
    /// The `function_output` utterance, when the message carries client tool outputs.
    pub(crate) outputs: Option<Utterance>,
    /// The `user_message` utterance, when the message answers nothing.
    pub(crate) question: Option<Utterance>,
}

/// Reads a client message as the schema sees it. Content that is neither an approval nor a
/// function output rides with the first utterance, so the schema judges it too.
pub(crate) fn incoming(message: &Message) -> Incoming {
    let mut approvals = Vec::new();
    let mut outputs = Vec::new();
    let mut other = Vec::new();
    for part in &message.parts {
        let Some(item) = ContentItem::from_part(part) else {
            continue;
        };
        match part {
            Part::ApprovalResponse(_) => approvals.push(item),
            Part::ToolResult(_) | Part::ToolError(_) => outputs.push(item),
            _ => other.push(item),
        }
    }
    let utterance = |kind: &'static str, contents: Vec<ContentItem>| Utterance {
        party: Party::Client,
        kind: kind.into(),
        contents,
    };
    match (approvals.is_empty(), outputs.is_empty()) {
        (true, true) => Incoming {
            approvals: None,
            outputs: None,
            question: Some(utterance(MessageKind::USER_MESSAGE, other)),
        },
        (false, _) => {
            approvals.append(&mut other);
            Incoming {
                approvals: Some(utterance(MessageKind::APPROVAL_RESPONSE, approvals)),
                outputs: (!outputs.is_empty())
                    .then(|| utterance(MessageKind::FUNCTION_OUTPUT, outputs)),
                question: None,
            }
        }
        (true, false) => {
            outputs.append(&mut other);
            Incoming {
                approvals: None,
                outputs: Some(utterance(MessageKind::FUNCTION_OUTPUT, outputs)),
                question: None,
            }
        }
    }
}

/// The agent's final answer: its communicative parts, without the tool traffic of its steps.
/// Its `data` parts are left out too: in an agent's message they hold provider data the model
/// needs back with the history (`BrainEvent::Data`, e.g. thinking signatures), not content.
pub(crate) fn agent_message(message: &Message) -> Utterance {
    let contents = message
        .parts
        .iter()
        .filter(|part| {
            !matches!(
                part,
                Part::ToolCall(_)
                    | Part::ToolResult(_)
                    | Part::ToolError(_)
                    | Part::ApprovalRequest(_)
                    | Part::ApprovalResponse(_)
                    | Part::Data(_)
            )
        })
        .filter_map(ContentItem::from_part)
        .collect();
    Utterance {
        party: Party::Server,
        kind: MessageKind::AGENT_MESSAGE.into(),
        contents,
    }
}

/// A turn that waits for approvals: one `/approval` item per request.
pub(crate) fn approval_request(n_requests: usize) -> Utterance {
    Utterance {
        party: Party::Server,
        kind: MessageKind::APPROVAL_REQUEST.into(),
        contents: vec![ContentItem::named("/approval", "application/json"); n_requests],
    }
}

/// A turn that calls client tools: one `/function` item per call.
pub(crate) fn function_call<'c>(calls: impl Iterator<Item = &'c ToolCall>) -> Utterance {
    Utterance {
        party: Party::Server,
        kind: MessageKind::FUNCTION_CALL.into(),
        contents: calls
            .map(|_| ContentItem::named("/function", "application/json"))
            .collect(),
    }
}

/// A turn that asks the user: one `/question` item per `ask_user` call.
pub(crate) fn input_request(n_questions: usize) -> Utterance {
    Utterance {
        party: Party::Server,
        kind: MessageKind::INPUT_REQUEST.into(),
        contents: vec![ContentItem::named("/question", "application/json"); n_questions],
    }
}

/// The client's `cancel`, which a schema must allow in the run's state (the default schema and
/// the interruptible built-in do).
pub(crate) fn cancel() -> Utterance {
    Utterance::new(Party::Client, MessageKind::CANCEL)
}

#[cfg(test)]
mod tests {
    use agentwire_core::communication::SchemaMachine;
    use serde_json::json;

    use super::*;

    #[test]
    fn the_default_schema_is_valid_and_allows_both_waits() {
        let schema = default_schema();
        let states: Vec<_> = schema.states().map(|state| state.to_string()).collect();
        assert_eq!(
            states,
            [
                "idle",
                "running",
                "awaiting_function_output",
                "awaiting_approval",
                "awaiting_input"
            ]
        );
        let rebuilt = CommunicationSchema::new(
            schema
                .states()
                .map(|state| (state.clone(), schema.transitions(state).to_vec())),
        );
        assert!(rebuilt.is_ok());
        assert!(allows_anywhere(
            &schema,
            Party::Server,
            MessageKind::APPROVAL_REQUEST
        ));
        assert!(!allows_anywhere(
            &CommunicationSchema::chat(),
            Party::Server,
            MessageKind::FUNCTION_CALL
        ));
    }

    #[test]
    fn tool_traffic_is_not_part_of_the_answer() {
        let mut machine = SchemaMachine::new(CommunicationSchema::chat());
        let question = incoming(&Message::user("hi"));
        assert!(question.approvals.is_none() && question.outputs.is_none());
        let accepted = question
            .question
            .map(|question| machine.accept(&question).is_ok());
        assert_eq!(accepted, Some(true));
        let mut answer = Message::assistant("Let me look.");
        answer
            .parts
            .push(Part::tool_call("c1", "search", json!({})));
        answer.parts.push(Part::text("Found it."));
        assert!(machine.accept(&agent_message(&answer)).is_ok());
        assert_eq!(machine.state(), "idle");
    }
}
