//! Communication schemas: the built-ins against the example schemas' JSON, walks through each
//! built-in as its example describes it, refusals and their messages, loading errors, the
//! mapping from messages to utterances, and a property test that the machine never panics and
//! never moves on a refusal.

use agentwire_core::Message;
use agentwire_core::communication::{
    CommunicationSchema, ContentItem, ContentSpec, InvalidSchema, MessageKind, Party, Refusal,
    SchemaMachine, StateName, Transition, Utterance,
};
use proptest::prelude::*;
use serde_json::{Value, json};

// The five example schemas (chat, researcher, function-calling, interruptible, long-running),
// verbatim.

const SEED_CHAT: &str = r#"{ "idle": [ { "party": "client", "type": "user_message", "schema": [ { "contentType": "text/plain", "required": true } ], "nextState": "running" } ], "running": [ { "party": "server", "type": "agent_message", "schema": [ { "contentType": "text/plain", "required": true } ], "nextState": "idle" } ] }"#;

const SEED_RESEARCHER: &str = r#"{ "idle": [ { "party": "client", "type": "user_message", "schema": [ { "contentType": "text/plain", "required": true } ], "nextState": "running" } ], "running": [ { "party": "server", "type": "agent_message", "schema": [ { "contentType": "text/plain", "required": true }, { "name": "/sources/*", "contentType": "text/x-uri", "required": false } ], "nextState": "done" } ], "done": [] }"#;

const SEED_FUNCTION_CALLING: &str = r#"{ "idle": [ { "party": "client", "type": "user_message", "schema": [ { "contentType": "text/plain", "required": true } ], "nextState": "running" } ], "running": [ { "party": "server", "type": "agent_message", "schema": [ { "contentType": "text/plain", "required": true } ], "nextState": "idle" }, { "party": "server", "type": "function_call", "schema": [ { "name": "/function", "contentType": "application/json", "required": true } ], "nextState": "running" } ] }"#;

const SEED_INTERRUPTIBLE: &str = r#"{ "idle": [ { "party": "client", "type": "user_message", "schema": [ { "contentType": "text/plain", "required": true } ], "nextState": "running" } ], "running": [ { "party": "server", "type": "agent_message", "schema": [ { "contentType": "text/plain", "required": true } ], "nextState": "idle" }, { "party": "client", "type": "cancel", "schema": [], "nextState": "idle" } ] }"#;

const SEED_LONG_RUNNING: &str = r#"{ "idle": [ { "party": "client", "type": "user_message", "schema": [ { "contentType": "text/plain", "required": true } ], "nextState": "running" } ], "running": [ { "party": "server", "type": "agent_message", "schema": [ { "contentType": "text/plain", "required": true } ], "nextState": "running" } ] }"#;

// ---------------------------------------------------------------------------------------------
// Helpers

fn client(kind: &str, contents: Vec<ContentItem>) -> Utterance {
    Utterance {
        party: Party::Client,
        kind: kind.into(),
        contents,
    }
}

fn server(kind: &str, contents: Vec<ContentItem>) -> Utterance {
    Utterance {
        party: Party::Server,
        kind: kind.into(),
        contents,
    }
}

fn text() -> ContentItem {
    ContentItem::new("text/plain")
}

fn json_at(name: &str) -> ContentItem {
    ContentItem::named(name, "application/json")
}

fn machine(name: &str) -> SchemaMachine {
    SchemaMachine::new(CommunicationSchema::builtin(name).expect("a built-in"))
}

/// Sends `utterance` and checks the outcome: `Ok(next_state)` when it is accepted, or
/// `Err(message)` when it is refused, in which case the state must not have moved.
#[track_caller]
fn check(machine: &mut SchemaMachine, utterance: Utterance, expect: Result<&str, &str>) {
    let before = machine.state().clone();
    let dry_run = machine
        .check(&utterance)
        .map(|transition| transition.next_state.clone());
    let outcome = machine
        .accept(&utterance)
        .map(|transition| transition.next_state.clone());
    assert_eq!(dry_run, outcome, "check and accept disagree");
    match (outcome, expect) {
        (Ok(next), Ok(expected)) => {
            assert_eq!(next, expected);
            assert_eq!(machine.state(), expected);
        }
        (Err(refusal), Err(expected)) => {
            assert_eq!(refusal.to_string(), expected);
            assert_eq!(machine.state(), &before, "a refusal moved the state");
        }
        (outcome, expected) => panic!("got {outcome:?}, expected {expected:?}"),
    }
}

/// `schema` serializes to exactly `seed_json`, key order included, and `seed_json` loads as
/// `schema`.
#[track_caller]
fn check_golden(schema: &CommunicationSchema, seed_json: &str) {
    let seed: Value = serde_json::from_str(seed_json).expect("the example JSON parses");
    let ours = serde_json::to_value(schema).expect("serializes");
    assert_eq!(ours, seed);
    assert_eq!(
        serde_json::to_string(schema).expect("serializes"),
        serde_json::to_string(&seed).expect("serializes"),
        "key order differs from the example"
    );
    assert_eq!(
        &CommunicationSchema::from_json(seed_json).expect("the example loads"),
        schema
    );
}

#[track_caller]
fn check_invalid(json: Value, expect: &str) {
    let err = CommunicationSchema::from_json(&json.to_string()).expect_err("invalid schema");
    assert_eq!(err.to_string(), expect);
    let err = serde_json::from_value::<CommunicationSchema>(json).expect_err("invalid via serde");
    assert!(err.to_string().contains(expect), "{err}");
}

#[track_caller]
fn check_contents(message: Value, expect: Vec<ContentItem>) {
    let message: Message = serde_json::from_value(message).expect("a message");
    let utterance = Utterance::from_message(Party::Server, MessageKind::AGENT_MESSAGE, &message);
    assert_eq!(utterance.party, Party::Server);
    assert_eq!(utterance.kind, MessageKind::AGENT_MESSAGE);
    assert_eq!(utterance.contents, expect);
}

// ---------------------------------------------------------------------------------------------
// Golden: the built-ins are the examples' JSON

#[test]
fn builtins_are_the_seed_examples() {
    check_golden(&CommunicationSchema::chat(), SEED_CHAT);
    check_golden(&CommunicationSchema::one_shot(), SEED_RESEARCHER);
    check_golden(&CommunicationSchema::interruptible(), SEED_INTERRUPTIBLE);
    check_golden(&CommunicationSchema::long_running(), SEED_LONG_RUNNING);
    assert_eq!(CommunicationSchema::default(), CommunicationSchema::chat());
}

#[test]
fn every_seed_example_loads() {
    for seed in [
        SEED_CHAT,
        SEED_RESEARCHER,
        SEED_FUNCTION_CALLING,
        SEED_INTERRUPTIBLE,
        SEED_LONG_RUNNING,
    ] {
        let schema = CommunicationSchema::from_json(seed).expect("loads");
        let via_serde: CommunicationSchema = serde_json::from_str(seed).expect("loads via serde");
        assert_eq!(schema, via_serde);
        assert!(schema.contains_state(StateName::IDLE));
    }
    // The example function-calling JSON is a valid schema, just not ours: its call leads back to
    // `running` (see `CommunicationSchema::function_calling`).
    let seed = CommunicationSchema::from_json(SEED_FUNCTION_CALLING).expect("loads");
    assert_ne!(seed, CommunicationSchema::function_calling());
    assert_eq!(seed.transitions("running")[1].next_state, "running");
}

#[test]
fn our_builtins_have_the_documented_json() {
    check_golden(
        &CommunicationSchema::function_calling(),
        &json!({
            "idle": [{"party": "client", "type": "user_message", "schema": [{"contentType": "text/plain", "required": true}], "nextState": "running"}],
            "running": [
                {"party": "server", "type": "agent_message", "schema": [{"contentType": "text/plain", "required": true}], "nextState": "idle"},
                {"party": "server", "type": "function_call", "schema": [{"name": "/function", "contentType": "application/json", "required": true}], "nextState": "awaiting_function_output"}
            ],
            "awaiting_function_output": [{"party": "client", "type": "function_output", "schema": [{"name": "/function_output", "contentType": "application/json", "required": true}], "nextState": "running"}]
        })
        .to_string(),
    );
    check_golden(
        &CommunicationSchema::approval(),
        &json!({
            "idle": [{"party": "client", "type": "user_message", "schema": [{"contentType": "text/plain", "required": true}], "nextState": "running"}],
            "running": [
                {"party": "server", "type": "agent_message", "schema": [{"contentType": "text/plain", "required": true}], "nextState": "idle"},
                {"party": "server", "type": "approval_request", "schema": [{"name": "/approval", "contentType": "application/json", "required": true}], "nextState": "awaiting_approval"}
            ],
            "awaiting_approval": [{"party": "client", "type": "approval_response", "schema": [{"name": "/approval", "contentType": "application/json", "required": true}], "nextState": "running"}]
        })
        .to_string(),
    );
}

#[test]
fn builtins_are_listed_by_name() {
    let names = CommunicationSchema::BUILTIN_NAMES;
    assert_eq!(
        names,
        [
            "chat",
            "one_shot",
            "function_calling",
            "interruptible",
            "long_running",
            "approval"
        ]
    );
    for name in names {
        let schema = CommunicationSchema::builtin(name).expect("listed");
        let json = serde_json::to_string(&schema).expect("serializes");
        assert_eq!(
            CommunicationSchema::from_json(&json).expect("reloads"),
            schema,
            "{name}"
        );
    }
    assert_eq!(CommunicationSchema::builtin("researcher"), None);
    assert_eq!(CommunicationSchema::builtin(""), None);
}

// ---------------------------------------------------------------------------------------------
// Walking the built-ins

#[test]
fn chat_alternates_user_and_agent_messages() {
    let mut run = machine("chat");
    assert_eq!(run.state(), "idle");
    assert!(!run.is_final());
    for _ in 0..3 {
        check(
            &mut run,
            client("user_message", vec![text()]),
            Ok("running"),
        );
        check(
            &mut run,
            client("user_message", vec![text()]),
            Err(
                "in state 'running' the client may not send user_message; allowed: server agent_message",
            ),
        );
        check(&mut run, server("agent_message", vec![text()]), Ok("idle"));
        check(
            &mut run,
            server("agent_message", vec![text()]),
            Err(
                "in state 'idle' the server may not send agent_message; allowed: client user_message",
            ),
        );
    }
}

#[test]
fn chat_checks_content() {
    let mut run = machine("chat");
    check(
        &mut run,
        client("user_message", vec![ContentItem::new("image/png")]),
        Err("in state 'idle' user_message must include text/plain"),
    );
    check(
        &mut run,
        client("user_message", vec![]),
        Err("in state 'idle' user_message must include text/plain"),
    );
    check(
        &mut run,
        client("user_message", vec![text(), ContentItem::new("image/png")]),
        Err("in state 'idle' user_message may not include image/png; allowed: text/plain"),
    );
    check(
        &mut run,
        client("user_message", vec![text(), json_at("/data/weather")]),
        Err(
            "in state 'idle' user_message may not include /data/weather (application/json); allowed: text/plain",
        ),
    );
    // Several text items, and parameters on the media type, are fine.
    check(
        &mut run,
        client(
            "user_message",
            vec![text(), ContentItem::new("text/plain; charset=utf-8")],
        ),
        Ok("running"),
    );
}

#[test]
fn the_researcher_answers_once_and_is_done() {
    let mut run = machine("one_shot");
    check(
        &mut run,
        client("user_message", vec![text()]),
        Ok("running"),
    );
    check(
        &mut run,
        server(
            "agent_message",
            vec![
                text(),
                ContentItem::named("/sources/0", "text/x-uri"),
                ContentItem::named("/sources/1", "text/x-uri"),
            ],
        ),
        Ok("done"),
    );
    assert!(run.is_final());
    assert!(run.allowed().is_empty());
    check(
        &mut run,
        client("user_message", vec![text()]),
        Err("in state 'done' nothing may be sent"),
    );
    check(
        &mut run,
        server("agent_message", vec![text()]),
        Err("in state 'done' nothing may be sent"),
    );

    let refusal = run
        .accept(&client("user_message", vec![text()]))
        .expect_err("done");
    let Refusal::NotAllowed {
        state,
        party,
        kind,
        allowed,
    } = refusal
    else {
        panic!("expected NotAllowed, got {refusal:?}");
    };
    assert_eq!(
        (state.as_str(), party, kind.as_str()),
        ("done", Party::Client, "user_message")
    );
    assert!(allowed.is_empty());
}

#[test]
fn the_researcher_needs_no_sources_but_checks_them() {
    let mut run = machine("one_shot");
    check(
        &mut run,
        client("user_message", vec![text()]),
        Ok("running"),
    );
    check(
        &mut run,
        server(
            "agent_message",
            vec![text(), ContentItem::named("/sources/0", "text/html")],
        ),
        Err(
            "in state 'running' agent_message may not include /sources/0 (text/html); allowed: text/plain, /sources/* (text/x-uri)",
        ),
    );
    check(
        &mut run,
        server(
            "agent_message",
            vec![ContentItem::named("/sources/0", "text/x-uri")],
        ),
        Err("in state 'running' agent_message must include text/plain"),
    );
    check(&mut run, server("agent_message", vec![text()]), Ok("done"));
}

#[test]
fn function_calling_waits_for_the_function_output() {
    let mut run = machine("function_calling");
    check(
        &mut run,
        client("user_message", vec![text()]),
        Ok("running"),
    );
    check(
        &mut run,
        server("function_call", vec![json_at("/function")]),
        Ok("awaiting_function_output"),
    );
    let waiting = "in state 'awaiting_function_output' the server may not send agent_message; allowed: client function_output";
    check(
        &mut run,
        server("agent_message", vec![text()]),
        Err(waiting),
    );
    check(
        &mut run,
        client("user_message", vec![text()]),
        Err(
            "in state 'awaiting_function_output' the client may not send user_message; allowed: client function_output",
        ),
    );
    check(
        &mut run,
        client("function_output", vec![]),
        Err(
            "in state 'awaiting_function_output' function_output must include /function_output (application/json)",
        ),
    );
    check(
        &mut run,
        client("function_output", vec![json_at("/function_output")]),
        Ok("running"),
    );
    // A second round, then the answer.
    check(
        &mut run,
        server("function_call", vec![json_at("/function")]),
        Ok("awaiting_function_output"),
    );
    check(
        &mut run,
        client("function_output", vec![json_at("/function_output")]),
        Ok("running"),
    );
    check(&mut run, server("agent_message", vec![text()]), Ok("idle"));
}

#[test]
fn the_function_call_is_named_content() {
    let mut run = machine("function_calling");
    check(
        &mut run,
        client("user_message", vec![text()]),
        Ok("running"),
    );
    check(
        &mut run,
        server("function_call", vec![ContentItem::new("application/json")]),
        Err("in state 'running' function_call must include /function (application/json)"),
    );
    check(
        &mut run,
        server("function_call", vec![json_at("/function"), text()]),
        Err(
            "in state 'running' function_call may not include text/plain; allowed: /function (application/json)",
        ),
    );
}

#[test]
fn interruptible_accepts_cancel_only_while_running() {
    let mut run = machine("interruptible");
    check(
        &mut run,
        client("cancel", vec![]),
        Err("in state 'idle' the client may not send cancel; allowed: client user_message"),
    );
    check(
        &mut run,
        client("user_message", vec![text()]),
        Ok("running"),
    );
    check(
        &mut run,
        client("cancel", vec![text()]),
        Err("in state 'running' cancel may not include text/plain; allowed: no content"),
    );
    check(
        &mut run,
        server("cancel", vec![]),
        Err(
            "in state 'running' the server may not send cancel; allowed: server agent_message, client cancel",
        ),
    );
    check(&mut run, client("cancel", vec![]), Ok("idle"));
    check(
        &mut run,
        client("user_message", vec![text()]),
        Ok("running"),
    );
    check(&mut run, server("agent_message", vec![text()]), Ok("idle"));
}

#[test]
fn long_running_keeps_reporting() {
    let mut run = machine("long_running");
    check(
        &mut run,
        client("user_message", vec![text()]),
        Ok("running"),
    );
    for _ in 0..5 {
        check(
            &mut run,
            server("agent_message", vec![text()]),
            Ok("running"),
        );
    }
    check(
        &mut run,
        client("user_message", vec![text()]),
        Err(
            "in state 'running' the client may not send user_message; allowed: server agent_message",
        ),
    );
}

#[test]
fn approval_waits_for_the_response() {
    let mut run = machine("approval");
    check(
        &mut run,
        client("user_message", vec![text()]),
        Ok("running"),
    );
    check(
        &mut run,
        server("approval_request", vec![json_at("/approval")]),
        Ok("awaiting_approval"),
    );
    check(
        &mut run,
        server("agent_message", vec![text()]),
        Err(
            "in state 'awaiting_approval' the server may not send agent_message; allowed: client approval_response",
        ),
    );
    check(
        &mut run,
        client("approval_response", vec![text()]),
        Err(
            "in state 'awaiting_approval' approval_response must include /approval (application/json)",
        ),
    );
    check(
        &mut run,
        client("approval_response", vec![json_at("/approval")]),
        Ok("running"),
    );
    check(&mut run, server("agent_message", vec![text()]), Ok("idle"));
}

// ---------------------------------------------------------------------------------------------
// The machine's API

#[test]
fn allowed_lists_the_current_transitions() {
    let mut run = machine("interruptible");
    let allowed: Vec<_> = run
        .allowed()
        .iter()
        .map(|t| (t.party, t.kind.as_str()))
        .collect();
    assert_eq!(allowed, [(Party::Client, "user_message")]);
    check(
        &mut run,
        client("user_message", vec![text()]),
        Ok("running"),
    );
    let allowed: Vec<_> = run
        .allowed()
        .iter()
        .map(|t| (t.party, t.kind.as_str()))
        .collect();
    assert_eq!(
        allowed,
        [(Party::Server, "agent_message"), (Party::Client, "cancel")]
    );
    assert_eq!(run.schema(), &CommunicationSchema::interruptible());
}

#[test]
fn resume_starts_in_a_known_state_only() {
    let run = SchemaMachine::resume(CommunicationSchema::one_shot(), "done").expect("a state");
    assert!(run.is_final());
    assert!(SchemaMachine::resume(CommunicationSchema::one_shot(), "nowhere").is_none());
}

#[test]
fn transitions_sharing_a_type_route_by_content() {
    let schema = CommunicationSchema::new([
        (
            "idle",
            vec![
                Transition::new(Party::Client, "user_message", "reading")
                    .with(ContentSpec::required("text/plain")),
                Transition::new(Party::Client, "user_message", "looking")
                    .with(ContentSpec::required("image/*"))
                    .with(ContentSpec::optional("text/plain")),
            ],
        ),
        ("reading", vec![]),
        ("looking", vec![]),
    ])
    .expect("valid");
    let mut run = SchemaMachine::new(schema.clone());
    check(
        &mut run,
        client("user_message", vec![ContentItem::new("image/jpeg"), text()]),
        Ok("looking"),
    );
    let mut run = SchemaMachine::new(schema.clone());
    check(
        &mut run,
        client("user_message", vec![text()]),
        Ok("reading"),
    );
    // When no candidate fits, the first candidate's complaint is reported.
    let mut run = SchemaMachine::new(schema);
    check(
        &mut run,
        client("user_message", vec![ContentItem::new("audio/wav")]),
        Err("in state 'idle' user_message must include text/plain"),
    );
}

#[test]
fn wildcards_and_name_patterns_match() {
    let schema = CommunicationSchema::from_json(
        &json!({
            "idle": [{"party": "client", "type": "upload", "schema": [
                {"contentType": "*/*", "required": true},
                {"name": "/files/*", "contentType": "image/*"}
            ], "next_state": "idle"}]
        })
        .to_string(),
    )
    .expect("valid");
    let mut run = SchemaMachine::new(schema);
    check(
        &mut run,
        client(
            "upload",
            vec![
                ContentItem::new("application/pdf"),
                ContentItem::named("/files/a", "image/png"),
                ContentItem::named("/files/a/thumb", "image/webp"),
            ],
        ),
        Ok("idle"),
    );
    check(
        &mut run,
        client(
            "upload",
            vec![
                ContentItem::new("text/plain"),
                ContentItem::named("/files", "image/png"),
            ],
        ),
        Err(
            "in state 'idle' upload may not include /files (image/png); allowed: */*, /files/* (image/*)",
        ),
    );
    check(
        &mut run,
        client("upload", vec![ContentItem::named("/files/a", "image/png")]),
        Err("in state 'idle' upload must include */*"),
    );
}

#[test]
fn refusals_carry_their_data() {
    let mut run = machine("interruptible");
    let refusal = run
        .accept(&server("agent_message", vec![text()]))
        .expect_err("not now");
    let Refusal::NotAllowed {
        state,
        party,
        kind,
        allowed,
    } = refusal
    else {
        panic!("expected NotAllowed, got {refusal:?}");
    };
    assert_eq!(
        (state.as_str(), party, kind.as_str()),
        ("idle", Party::Server, "agent_message")
    );
    assert_eq!(allowed.len(), 1);
    assert_eq!(allowed[0].to_string(), "client user_message");

    let refusal = run
        .accept(&client("user_message", vec![]))
        .expect_err("no text");
    assert_eq!(
        refusal,
        Refusal::MissingContent {
            state: "idle".into(),
            kind: "user_message".into(),
            spec: ContentSpec::required("text/plain"),
        }
    );
    let refusal = run
        .accept(&client("user_message", vec![text(), json_at("/x")]))
        .expect_err("unexpected");
    assert_eq!(
        refusal,
        Refusal::UnexpectedContent {
            state: "idle".into(),
            kind: "user_message".into(),
            content_type: "application/json".into(),
            name: Some("/x".into()),
            allowed: vec![ContentSpec::required("text/plain")],
        }
    );
}

// ---------------------------------------------------------------------------------------------
// Loading

#[test]
fn loading_rejects_broken_schemas() {
    check_invalid(
        json!({"running": []}),
        "communication schema has no 'idle' state, which every run starts in",
    );
    check_invalid(
        json!({
            "idle": [{"party": "client", "type": "user_message", "schema": [], "nextState": "running"}],
            "running": [
                {"party": "server", "type": "agent_message", "schema": [], "nextState": "idle"},
                {"party": "server", "type": "function_call", "schema": [], "nextState": "awaiting"}
            ]
        }),
        "in state 'running', transition 1 (server function_call) leads to unknown state 'awaiting'",
    );
    check_invalid(
        json!({"idle": [{"party": "client", "type": "user_message", "schema": [{"contentType": "text", "required": true}], "nextState": "idle"}]}),
        "in state 'idle', transition 0 (client user_message) has content type 'text', which is not of the form type/subtype",
    );
}

#[test]
fn loading_reports_a_state_declared_twice() {
    let json = r#"{"idle": [], "done": [], "idle": []}"#;
    let err = CommunicationSchema::from_json(json).expect_err("duplicate");
    assert!(
        matches!(&err, InvalidSchema::DuplicateState { state } if state == "idle"),
        "{err:?}"
    );
    assert_eq!(err.to_string(), "state 'idle' is declared more than once");
}

#[test]
fn loading_rejects_what_is_not_the_seed_shape() {
    for json in [
        "[]",
        "not json",
        r#"{"idle": [{"party": "robot", "type": "x", "nextState": "idle"}]}"#,
        r#"{"idle": [{"party": "client", "nextState": "idle"}]}"#,
        r#"{"idle": [{"party": "client", "type": "x", "schema": [{"required": true}], "nextState": "idle"}]}"#,
    ] {
        let err = CommunicationSchema::from_json(json).expect_err("not a schema");
        assert!(matches!(err, InvalidSchema::Json { .. }), "{json}: {err:?}");
        assert!(
            err.to_string()
                .starts_with("communication schema is not valid json: "),
            "{err}"
        );
    }
}

#[test]
fn loading_accepts_snake_case_and_defaults() {
    let schema = CommunicationSchema::from_json(
        r#"{"idle": [{"party": "client", "type": "ping", "next_state": "idle"},
                     {"party": "client", "type": "say", "schema": [{"content_type": "text/plain"}], "nextState": "idle", "extra": 1}]}"#,
    )
    .expect("valid");
    let expected = CommunicationSchema::new([(
        "idle",
        vec![
            Transition::new(Party::Client, "ping", "idle"),
            Transition::new(Party::Client, "say", "idle").with(ContentSpec::optional("text/plain")),
        ],
    )])
    .expect("valid");
    assert_eq!(schema, expected);
    // Output is always in the examples' spelling.
    assert_eq!(
        serde_json::to_value(&schema).expect("serializes"),
        json!({"idle": [
            {"party": "client", "type": "ping", "schema": [], "nextState": "idle"},
            {"party": "client", "type": "say", "schema": [{"contentType": "text/plain", "required": false}], "nextState": "idle"}
        ]})
    );
    let names: Vec<_> = schema.states().map(StateName::as_str).collect();
    assert_eq!(names, ["idle"]);
    assert!(schema.is_final("nowhere"));
    assert!(schema.transitions("nowhere").is_empty());
}

#[test]
fn states_keep_their_declared_order() {
    let schema =
        CommunicationSchema::from_json(r#"{"z": [], "idle": [], "a": []}"#).expect("valid");
    let names: Vec<_> = schema.states().map(StateName::as_str).collect();
    assert_eq!(names, ["z", "idle", "a"]);
    assert_eq!(
        serde_json::to_string(&schema).expect("serializes"),
        r#"{"z":[],"idle":[],"a":[]}"#
    );
}

// ---------------------------------------------------------------------------------------------
// Messages to utterances

#[test]
fn content_parts_become_content_items() {
    check_contents(
        json!({"role": "assistant", "parts": [
            {"type": "text", "text": "Here you go"},
            {"type": "refusal", "text": "Not that, though"},
            {"type": "file", "media_type": "image/png", "url": "https://x/y.png"},
            {"type": "data", "name": "weather", "data": {"temp": 21}},
            {"type": "source", "source_id": "s1", "url": "https://example.com"},
            {"type": "tool_call", "tool_call_id": "tc_1", "tool_name": "f", "args": {}},
            {"type": "tool_result", "tool_call_id": "tc_1", "result": 1},
            {"type": "tool_error", "tool_call_id": "tc_2", "error_type": "VALIDATION", "message": "bad"},
            {"type": "approval_request", "approval_id": "a1", "tool_call_id": "tc_3"},
            {"type": "approval_response", "approval_id": "a1", "approved": true}
        ]}),
        vec![
            text(),
            text(),
            ContentItem::new("image/png"),
            json_at("/data/weather"),
            ContentItem::named("/sources/s1", "text/x-uri"),
            json_at("/function"),
            json_at("/function_output"),
            json_at("/function_output"),
            json_at("/approval"),
            json_at("/approval"),
        ],
    );
}

#[test]
fn process_parts_are_not_content() {
    check_contents(
        json!({"role": "assistant", "parts": [
            {"type": "step_start", "step_id": "s1"},
            {"type": "reasoning", "text": "hmm"},
            {"type": "plan_update", "plan_id": "p1", "action": "created"},
            {"type": "artifact", "artifact_id": "a1", "title": "Report"},
            {"type": "text", "text": "Done"}
        ]}),
        vec![text()],
    );
    check_contents(json!({"role": "assistant", "parts": []}), vec![]);
}

#[test]
fn messages_walk_the_researcher() {
    let mut run = machine("one_shot");
    let question = Message::user("What is Rust?");
    let answer: Message = serde_json::from_value(json!({"role": "assistant", "parts": [
        {"type": "reasoning", "text": "Look it up."},
        {"type": "text", "text": "A language."},
        {"type": "source", "source_id": "0", "url": "https://www.rust-lang.org"}
    ]}))
    .expect("a message");
    check(
        &mut run,
        Utterance::from_message(Party::Client, MessageKind::USER_MESSAGE, &question),
        Ok("running"),
    );
    check(
        &mut run,
        Utterance::from_message(Party::Server, MessageKind::AGENT_MESSAGE, &answer),
        Ok("done"),
    );
}

// ---------------------------------------------------------------------------------------------
// Properties

const KINDS: &[&str] = &[
    MessageKind::USER_MESSAGE,
    MessageKind::AGENT_MESSAGE,
    MessageKind::FUNCTION_CALL,
    MessageKind::FUNCTION_OUTPUT,
    MessageKind::CANCEL,
    MessageKind::APPROVAL_REQUEST,
    MessageKind::APPROVAL_RESPONSE,
];

/// One step of a random walk: an arbitrary utterance, or one made to fit the n-th allowed
/// transition, so that walks also reach the deeper states.
#[derive(Clone, Debug)]
enum Step {
    Random(Utterance),
    Fitting(usize),
}

fn party() -> impl Strategy<Value = Party> {
    prop_oneof![Just(Party::Client), Just(Party::Server)]
}

fn kind() -> impl Strategy<Value = MessageKind> {
    prop_oneof![
        4 => proptest::sample::select(KINDS).prop_map(MessageKind::from),
        1 => "[a-z_]{0,12}".prop_map(MessageKind::from),
    ]
}

fn content_item() -> impl Strategy<Value = ContentItem> {
    prop_oneof![
        Just(text()),
        Just(ContentItem::new("image/png")),
        Just(json_at("/function")),
        Just(json_at("/function_output")),
        Just(json_at("/approval")),
        "[a-z0-9/]{0,6}".prop_map(|id| ContentItem::named(format!("/sources/{id}"), "text/x-uri")),
        (proptest::option::of("[a-z/*]{0,8}"), "[a-zA-Z/*;= ]{0,12}")
            .prop_map(|(name, content_type)| ContentItem { name, content_type }),
    ]
}

fn utterance() -> impl Strategy<Value = Utterance> {
    (
        party(),
        kind(),
        proptest::collection::vec(content_item(), 0..4),
    )
        .prop_map(|(party, kind, contents)| Utterance {
            party,
            kind,
            contents,
        })
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        utterance().prop_map(Step::Random),
        any::<usize>().prop_map(Step::Fitting)
    ]
}

/// An utterance that carries one item for each spec of `transition`.
fn fitting(transition: &Transition) -> Utterance {
    let contents = transition
        .content
        .iter()
        .map(|spec| ContentItem {
            name: spec.name.as_ref().map(|pattern| pattern.replace('*', "0")),
            content_type: spec.content_type.clone(),
        })
        .collect();
    Utterance {
        party: transition.party,
        kind: transition.kind.clone(),
        contents,
    }
}

proptest! {
    #[test]
    fn walks_never_panic_and_refusals_never_move(
        name in proptest::sample::select(CommunicationSchema::BUILTIN_NAMES),
        steps in proptest::collection::vec(step(), 0..40),
    ) {
        let mut run = machine(name);
        for step in steps {
            let before = run.state().clone();
            let allowed = run.allowed().to_vec();
            let (utterance, must_fit) = match step {
                Step::Random(utterance) => (utterance, false),
                Step::Fitting(_) if allowed.is_empty() => continue,
                Step::Fitting(n) => (fitting(&allowed[n % allowed.len()]), true),
            };
            let checked = run.check(&utterance).cloned();
            match run.accept(&utterance).cloned() {
                Ok(transition) => {
                    prop_assert_eq!(Ok(&transition), checked.as_ref());
                    prop_assert!(allowed.contains(&transition));
                    prop_assert_eq!(run.state(), &transition.next_state);
                    prop_assert!(run.schema().contains_state(run.state()));
                }
                Err(refusal) => {
                    prop_assert!(!must_fit, "a fitting utterance was refused: {}", refusal);
                    prop_assert_eq!(Err(&refusal), checked.as_ref());
                    prop_assert_eq!(run.state(), &before);
                    let message = refusal.to_string();
                    let needle = format!("in state '{before}'");
                    prop_assert!(message.starts_with(&needle), "{}", message);
                }
            }
        }
    }

    #[test]
    fn every_message_maps_without_panicking(message in agentwire_testkit::strategy::message()) {
        let utterance = Utterance::from_message(Party::Client, MessageKind::USER_MESSAGE, &message);
        let n_content = message.parts.iter().filter(|part| ContentItem::from_part(part).is_some()).count();
        prop_assert_eq!(utterance.contents.len(), n_content);
        let mut run = machine("chat");
        let _ = run.accept(&utterance);
    }
}
