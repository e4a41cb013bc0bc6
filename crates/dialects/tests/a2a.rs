//! The A2A 1.0 dialect: golden transcripts of every scenario, the round trip through the
//! decoder (modulo the losses the module lists), requests as the a2a-sdk writes them, streams of
//! other agents, and malformed input.

mod common;

use agentwire_core::{
    Accumulator, Awaiting, ErrorInfo, Event, EventKind, Message, Part, Role, RunStatus,
};
use agentwire_dialects::DecodeError;
use agentwire_dialects::a2a::{
    A2aDecoder, A2aEncoder, A2aMethod, AgentDescription, AgentExtension, AgentSkill, agent_card,
    decode_card, decode_request, decode_task_request, encode_request, encode_task_request,
};
use agentwire_testkit::stream::{Choices, events_for, tree_events};
use agentwire_testkit::{golden, scenarios, strategy};
use common::{accumulate, decode, decode_whole, encode};
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::Index;
use serde_json::{Value, json};

/// What survives the A2A round trip of a run's messages: everything, except messages without
/// parts, which are not sent (an A2A artifact needs a part).
fn a2a_projection(messages: &[Message]) -> Vec<Message> {
    messages
        .iter()
        .filter(|message| !message.parts.is_empty())
        .cloned()
        .collect()
}

/// The final status and error of a decoded run.
fn final_status(events: &[Event]) -> (Option<RunStatus>, Option<ErrorInfo>) {
    let mut accumulator = Accumulator::default();
    for event in events {
        accumulator.push(event).expect("accumulates");
    }
    (accumulator.status(), accumulator.errors().last().cloned())
}

/// Checks that every run nested in `expected` is in `decoded` under the same path, with the
/// same agent, call, status, usage and messages (without those that have no part).
#[track_caller]
fn check_subagents(decoded: &Accumulator, expected: &Accumulator, what: &str) {
    assert_eq!(
        decoded.children().len(),
        expected.children().len(),
        "{what}"
    );
    for child in expected.children() {
        let run_id = child.run_id().expect("an id").clone();
        let found = decoded
            .descendant(std::slice::from_ref(&run_id))
            .unwrap_or_else(|| panic!("{what}: no sub-agent {run_id}"));
        let what = format!("{what} > {run_id}");
        assert_eq!(found.messages(), a2a_projection(child.messages()), "{what}");
        assert_eq!(found.agent(), child.agent(), "{what}");
        assert_eq!(
            found.parent_tool_call_id(),
            child.parent_tool_call_id(),
            "{what}"
        );
        assert_eq!(found.status(), child.status(), "{what}");
        assert_eq!(found.usage(), child.usage(), "{what}");
        check_subagents(found, child, &what);
    }
}

fn accumulated(events: &[Event]) -> Accumulator {
    let mut accumulator = Accumulator::default();
    for event in events {
        accumulator
            .push(event)
            .unwrap_or_else(|err| panic!("{event:?}: {err}"));
    }
    accumulator
}

fn decode_str(wire: &str) -> Result<Vec<Event>, DecodeError> {
    decode_whole(&mut A2aDecoder::default(), wire.as_bytes())
}

#[test]
fn transcripts_are_golden_and_decode_to_the_scenario() {
    for scenario in scenarios::all() {
        let wire = encode(&mut A2aEncoder::default(), &scenario.events);
        golden::check(
            common::golden("a2a", &format!("{}.sse", scenario.name)),
            &wire,
        );
        let decoded = decode_whole(&mut A2aDecoder::default(), &wire).expect("decodes");
        assert_eq!(
            accumulate(&decoded),
            a2a_projection(&scenario.messages),
            "{}",
            scenario.name
        );
        check_subagents(
            &accumulated(&decoded),
            &accumulated(&scenario.events),
            scenario.name,
        );
        let (status, error) = final_status(&decoded);
        assert_eq!(status, Some(scenario.status), "{}", scenario.name);
        assert_eq!(error.as_ref(), scenario.error(), "{}", scenario.name);
        let Some(EventKind::RunCreated {
            run_id,
            session_id,
            agent,
            ..
        }) = decoded.first().map(|event| &event.kind)
        else {
            panic!("{}: starts with run_created", scenario.name);
        };
        assert_eq!(
            (run_id.as_str(), agent.as_deref()),
            ("run_1", Some("assistant"))
        );
        assert_eq!(session_id.as_ref().map(|id| id.as_str()), Some("ses_1"));
    }
}

#[test]
fn items_are_json_rpc_responses_in_a2a_1_0_shapes() {
    let scenario = scenarios::by_name("tool_call").expect("scenario");
    let wire = encode(
        &mut A2aEncoder::new("req-7", "task_9", "ctx_9"),
        &scenario.events,
    );
    let items: Vec<Value> = String::from_utf8(wire)
        .expect("utf-8")
        .split("\n\n")
        .filter(|frame| !frame.is_empty())
        .map(|frame| {
            let data = frame.strip_prefix("data: ").expect("one data line");
            serde_json::from_str(data).expect("json")
        })
        .collect();
    for item in &items {
        assert_eq!(item["jsonrpc"], "2.0");
        assert_eq!(item["id"], "req-7");
        assert_eq!(
            item["result"].as_object().map(|result| result.len()),
            Some(1)
        );
    }
    assert_eq!(
        items[0]["result"]["task"],
        json!({"id": "task_9", "contextId": "ctx_9", "status": {"state": "TASK_STATE_SUBMITTED"},
               "metadata": {"agentwire": {"agent": "assistant"}}})
    );
    assert_eq!(
        items[1]["result"]["statusUpdate"]["status"]["state"],
        "TASK_STATE_WORKING"
    );
    let updates: Vec<&Value> = items
        .iter()
        .filter_map(|item| item["result"].get("artifactUpdate"))
        .collect();
    assert_eq!(updates[0]["append"], false);
    assert!(updates[1..].iter().all(|update| update["append"] == true));
    let last_chunks: Vec<bool> = updates
        .iter()
        .map(|update| update["lastChunk"] == true)
        .collect();
    assert_eq!(last_chunks.iter().filter(|last| **last).count(), 1);
    assert_eq!(last_chunks.last(), Some(&true));
    // The tool call, whole, as a DataPart holding the canonical part.
    assert!(updates.iter().any(|update| update["artifact"]["parts"][0]
        == json!({"data": {"type": "tool_call", "tool_call_id": "call_1", "tool_name": "get_weather", "args": {"city": "Paris"}}})));
    // The final metadata (usage) on the last chunk; the final status carries the run status.
    let last = items.last().expect("items");
    assert_eq!(
        last["result"]["statusUpdate"],
        json!({"taskId": "task_9", "contextId": "ctx_9", "status": {"state": "TASK_STATE_COMPLETED"},
               "metadata": {"agentwire": {"status": "completed",
                   "usage": {"input_tokens": 80, "output_tokens": 31, "total_tokens": 111}}}})
    );
}

#[test]
fn waiting_runs_are_input_required_and_failures_say_why() {
    for (name, awaiting) in [
        ("approval", Awaiting::Approval),
        ("client_tool", Awaiting::FunctionOutput),
    ] {
        let scenario = scenarios::by_name(name).expect("scenario");
        let wire =
            String::from_utf8(encode(&mut A2aEncoder::default(), &scenario.events)).expect("utf-8");
        let last = wire.trim_end().lines().last().expect("a frame");
        assert!(
            last.contains(r#""state":"TASK_STATE_INPUT_REQUIRED""#),
            "{last}"
        );
        let decoded = decode_str(&wire).expect("decodes");
        assert_eq!(
            final_status(&decoded).0,
            Some(RunStatus::Awaiting(awaiting))
        );
        // Without agentwire's metadata, the decoder infers what the turn waits for.
        let bare = wire.replace(r#","metadata":{"agentwire":{"status":"awaiting","awaiting":"approval","usage":{"input_tokens":40,"output_tokens":12,"total_tokens":52}}}"#, "")
            .replace(r#","metadata":{"agentwire":{"status":"awaiting","awaiting":"function_output","usage":{"input_tokens":25,"output_tokens":10,"total_tokens":35}}}"#, "");
        assert_ne!(bare, wire, "{name}: metadata removed");
        let decoded = decode_str(&bare).expect("decodes");
        assert_eq!(
            final_status(&decoded).0,
            Some(RunStatus::Awaiting(awaiting)),
            "{name}"
        );
    }
    let failed = scenarios::by_name("failed").expect("scenario");
    let wire =
        String::from_utf8(encode(&mut A2aEncoder::default(), &failed.events)).expect("utf-8");
    assert!(wire.contains(r#""status":{"state":"TASK_STATE_FAILED","message":{"messageId":"run_1-status-9","taskId":"run_1","contextId":"ses_1","role":"ROLE_AGENT","parts":[{"text":"the model provider answered HTTP 500"}]}}"#), "{wire}");
}

#[test]
fn adjacent_text_parts_and_message_facts_survive() {
    let mut message = Message::new(
        agentwire_core::Role::User,
        vec![
            Part::text("one"),
            Part::text("two"),
            Part::reasoning(""),
            Part::reasoning("r"),
        ],
    )
    .with_id("m1");
    message.created_at = Some(agentwire_core::Timestamp(5));
    message.metadata.agent_name = Some("a".into());
    let events = events_for(&message, &mut Choices::new(Vec::new()));
    let wire = encode(&mut A2aEncoder::default(), &events);
    let text = String::from_utf8(wire.clone()).expect("utf-8");
    assert!(
        text.contains(r#"{"text":"t","metadata":{"agentwire":{"new_part":true}}}"#),
        "{text}"
    );
    assert!(
        text.contains(r#""metadata":{"agentwire":{"role":"user","created_at":5}}"#),
        "{text}"
    );
    let decoded = decode_whole(&mut A2aDecoder::default(), &wire).expect("decodes");
    assert_eq!(accumulate(&decoded), [message]);
}

/// A2A streams begin with the task: one is made up for events that do not begin with
/// `run_created`, unless the stream continues a task its client has.
#[test]
fn a_stream_without_run_created_begins_with_a_task_unless_it_continues_one() {
    let message = Message::new(Role::Assistant, vec![Part::text("hi")]).with_id("m1");
    let events = events_for(&message, &mut Choices::new(Vec::new()));
    let items = |encoder: &mut A2aEncoder| -> Vec<Value> {
        String::from_utf8(encode(encoder, &events))
            .expect("utf-8")
            .lines()
            .filter_map(|line| line.strip_prefix("data: "))
            .map(|item| serde_json::from_str::<Value>(item).expect("json")["result"].take())
            .collect()
    };
    let made_up = items(&mut A2aEncoder::new(1, "t", "c"));
    assert_eq!(made_up[0]["task"]["id"], "t");
    assert_eq!(
        made_up[0]["task"]["status"]["state"],
        "TASK_STATE_SUBMITTED"
    );
    assert!(made_up[1..].iter().all(|item| item["task"].is_null()));
    let continued = items(&mut A2aEncoder::new(1, "t", "c").continuing(RunStatus::InProgress));
    assert!(continued.iter().all(|item| item["task"].is_null()));
    assert_eq!(continued.len(), made_up.len() - 1);
}

proptest! {
    #[test]
    fn messages_round_trip_in_any_split(
        message in strategy::message(),
        mut choices in any::<Choices>(),
        cuts in vec(any::<Index>(), 0..6),
    ) {
        let mut events = events_for(&message, &mut choices);
        events.insert(1, Event::heartbeat(1));
        let wire = encode(&mut A2aEncoder::new(1, "t", "c"), &events);
        let decoded = decode(&mut A2aDecoder::default(), &wire, &cuts)
            .map_err(|err| TestCaseError::fail(err.to_string()))?;
        let mut accumulator = Accumulator::default();
        for event in &decoded {
            accumulator.push(event).map_err(|err| TestCaseError::fail(err.to_string()))?;
        }
        let expected = a2a_projection(std::slice::from_ref(&message));
        prop_assert_eq!(accumulator.messages(), expected.as_slice());
    }

    /// A run with sub-agents, their messages interleaved any way: each run reads back as its
    /// own messages under its own path.
    #[test]
    fn a_tree_of_runs_round_trips(
        messages in proptest::array::uniform4(strategy::message()),
        mut choices in any::<Choices>(),
        interleaving in vec(any::<Index>(), 0..300),
        cuts in vec(any::<Index>(), 0..6),
    ) {
        let [a, b, c, d] = &messages;
        let events = tree_events([a, b, c, d], &mut choices, &interleaving);
        let wire = encode(&mut A2aEncoder::new(1, "t", "c"), &events);
        let decoded = decode(&mut A2aDecoder::default(), &wire, &cuts)
            .map_err(|err| TestCaseError::fail(err.to_string()))?;
        let mut accumulator = Accumulator::default();
        for event in &decoded {
            accumulator.push(event).map_err(|err| TestCaseError::fail(format!("{event:?}: {err}")))?;
        }
        let expected = accumulated(&events);
        let own = a2a_projection(expected.messages());
        prop_assert_eq!(accumulator.messages(), own.as_slice());
        check_subagents(&accumulator, &expected, "tree");
    }

    #[test]
    fn garbage_never_panics(wire in vec(any::<u8>(), 0..200), cuts in vec(any::<Index>(), 0..4)) {
        let _ = decode(&mut A2aDecoder::default(), &wire, &cuts);
        let _ = decode_request(&wire);
    }
}

#[test]
fn other_agents_streams_decode() {
    // As the a2a-sdk's TaskUpdater writes them: no agentwire metadata, progress in a status
    // message, the answer in text chunks of one artifact, a final message in COMPLETED.
    let wire = r#"data: {"jsonrpc":"2.0","id":"x","result":{"task":{"id":"t1","contextId":"c1","status":{"state":"TASK_STATE_SUBMITTED"},"history":[{"messageId":"u1","role":"ROLE_USER","parts":[{"text":"hi"}]}]}}}

data: {"jsonrpc":"2.0","id":"x","result":{"statusUpdate":{"taskId":"t1","contextId":"c1","status":{"state":"TASK_STATE_WORKING","message":{"messageId":"p1","role":"ROLE_AGENT","parts":[{"text":"Thinking..."}]}}}}}

: ping

data: {"jsonrpc":"2.0","id":"x","result":{"artifactUpdate":{"taskId":"t1","contextId":"c1","artifact":{"artifactId":"a1","name":"answer","parts":[{"text":"Hello"}]}}}}

data: {"jsonrpc":"2.0","id":"x","result":{"artifactUpdate":{"taskId":"t1","contextId":"c1","artifact":{"artifactId":"a1","parts":[{"text":" world"},{"data":{"temperature":18.0}},{"raw":"aGk=","filename":"a.txt"}]},"append":true,"lastChunk":true}}}

event: progress
data: {"unknown": true}

data: {"jsonrpc":"2.0","id":"x","result":{"futureItem":{"x":1}}}

data: {"jsonrpc":"2.0","id":"x","result":{"statusUpdate":{"taskId":"t1","contextId":"c1","status":{"state":"TASK_STATE_COMPLETED","message":{"messageId":"f1","role":"ROLE_AGENT","parts":[{"text":"Done."}]}}}}}

data: {"jsonrpc":"2.0","id":"x","result":{"statusUpdate":{"taskId":"t1","contextId":"c1","status":{"state":"TASK_STATE_WORKING"}}}}

"#;
    let events = decode_str(wire).expect("decodes");
    let messages = accumulate(&events);
    let texts: Vec<String> = messages.iter().map(Message::content).collect();
    assert_eq!(texts, ["Thinking...", "Hello world", "Done."]);
    assert_eq!(messages[1].id.as_ref().map(|id| id.as_str()), Some("a1"));
    assert_eq!(messages[1].parts.len(), 3);
    assert_eq!(
        messages[1].parts[1],
        Part::Data(agentwire_core::part::DataPart {
            name: "data".into(),
            data: json!({"temperature": 18.0})
        })
    );
    assert!(
        matches!(&messages[1].parts[2], Part::File(file) if file.media_type == "application/octet-stream")
    );
    assert_eq!(final_status(&events).0, Some(RunStatus::Completed));

    let failed = r#"data: {"jsonrpc":"2.0","id":1,"result":{"statusUpdate":{"taskId":"t","contextId":"c","status":{"state":"TASK_STATE_FAILED","message":{"messageId":"e","role":"ROLE_AGENT","parts":[{"text":"no quota"}]}}}}}

"#;
    let events = decode_str(failed).expect("decodes");
    assert_eq!(
        final_status(&events),
        (
            Some(RunStatus::Failed),
            Some(ErrorInfo::new("failed", "no quota"))
        )
    );
    assert!(accumulate(&events).is_empty());

    let message_only = r#"data: {"jsonrpc":"2.0","id":1,"result":{"message":{"messageId":"m","contextId":"c","role":"ROLE_AGENT","parts":[{"text":"Hi there"}],"metadata":{"model":"x"}}}}

"#;
    let messages = accumulate(&decode_str(message_only).expect("decodes"));
    assert_eq!(messages.len(), 1);
    assert_eq!(messages[0].content(), "Hi there");
    assert_eq!(messages[0].metadata.extra.get("model"), Some(&json!("x")));
}

#[test]
fn json_rpc_errors_fail_the_run() {
    let wire = r#"data: {"jsonrpc":"2.0","id":1,"result":{"task":{"id":"t","contextId":"c","status":{"state":"TASK_STATE_SUBMITTED"}}}}

data: {"jsonrpc":"2.0","id":1,"result":{"artifactUpdate":{"taskId":"t","contextId":"c","artifact":{"artifactId":"a","parts":[{"text":"partial"}]}}}}

event: error
data: {"jsonrpc":"2.0","id":1,"error":{"code":-32001,"message":"Task not found","data":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"TASK_NOT_FOUND"}]}}

data: {"jsonrpc":"2.0","id":1,"result":{"statusUpdate":{"taskId":"t","contextId":"c","status":{"state":"TASK_STATE_COMPLETED"}}}}

"#;
    let events = decode_str(wire).expect("decodes");
    assert_eq!(accumulate(&events)[0].content(), "partial");
    assert_eq!(
        final_status(&events),
        (
            Some(RunStatus::Failed),
            Some(ErrorInfo::new("task_not_found", "Task not found"))
        )
    );
    let events =
        decode_str("data: {\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32700}}\n\n")
            .expect("decodes");
    assert_eq!(
        final_status(&events).1,
        Some(ErrorInfo::new("parse_error", "JSON-RPC error -32700"))
    );
}

#[test]
fn malformed_streams_are_typed_errors() {
    let cases: &[(&str, u64)] = &[
        ("data: {not json\n\n", 1),
        ("data: {\"jsonrpc\":\"2.0\",\"id\":1}\n\n", 1),
        ("data: [1,2]\n\n", 1),
        (
            ": c\n\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"artifactUpdate\":{\"artifact\":{\"parts\":[]}}}}\n\n",
            1,
        ),
        (
            "event: x\ndata: 1\n\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"statusUpdate\":{\"status\":{\"state\":\"TASK_STATE_SLEEPING\"}}}}\n\n",
            2,
        ),
        (
            "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"statusUpdate\":{\"status\":{\"state\":\"TASK_STATE_WORKING\"},\"metadata\":{\"agentwire\":{\"status\":\"awaiting\"}}}}}\n\n",
            1,
        ),
        (
            "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"task\":{\"contextId\":\"c\"}}}\n\n",
            1,
        ),
    ];
    for (wire, frame) in cases {
        let err = decode_str(wire).expect_err(wire);
        assert!(
            matches!(err, DecodeError::InvalidFrame { frame: f, .. } if f == *frame),
            "{wire}: {err}"
        );
    }
    let err =
        decode_str("data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}").expect_err("cut off");
    assert!(matches!(err, DecodeError::UnexpectedEnd), "{err}");
}

/// Requests written by the a2a-sdk 1.3.0 client itself (`peers/a2a` dumps them from the SDK's
/// own types into this golden file).
#[test]
fn requests_from_the_sdk_decode() {
    let path = common::golden("a2a", "sdk_requests.json");
    let requests: Vec<Value> =
        serde_json::from_slice(&std::fs::read(&path).expect("golden requests")).expect("json");
    let by_name = |name: &str| {
        let body = requests
            .iter()
            .find(|request| request["name"] == name)
            .unwrap_or_else(|| panic!("request {name}"));
        decode_request(body["body"].to_string().as_bytes()).expect(name)
    };

    let hello = by_name("text");
    assert_eq!(hello.method, A2aMethod::SendStreamingMessage);
    assert_eq!(hello.input, [Message::user("Hi").with_id("msg_user")]);
    assert_eq!(hello.context_id.as_deref(), Some("ses_1"));
    assert_eq!(
        hello.accepted_output_modes,
        ["text/plain", "application/json"]
    );
    assert!(hello.id.is_string());

    let approval = by_name("approval_answer");
    assert_eq!(approval.task_id.as_deref(), Some("run_1"));
    assert_eq!(
        approval.input[0].parts,
        [Part::ApprovalResponse(
            agentwire_core::part::ApprovalResponse {
                approval_id: "apr_1".into(),
                approved: true,
                reason: Some("fine".into()),
            }
        )]
    );

    let tool = by_name("tool_output");
    assert_eq!(tool.task_id.as_deref(), Some("run_1"));
    let Part::ToolResult(result) = &tool.input[0].parts[0] else {
        panic!("a tool result: {:?}", tool.input[0].parts);
    };
    assert_eq!(result.tool_call_id, "call_1");
    assert_eq!(result.result, json!({"city": "Paris"}));

    let file = by_name("file_and_data");
    assert_eq!(file.method, A2aMethod::SendMessage);
    assert!(
        matches!(&file.input[0].parts[1], Part::File(file) if file.media_type == "text/plain" && file.filename.as_deref() == Some("notes.txt"))
    );
    assert!(matches!(&file.input[0].parts[2], Part::File(file) if file.media_type == "image/png"));
    assert!(matches!(&file.input[0].parts[3], Part::Data(data) if data.name == "data"));
    assert_eq!(
        file.input[0].metadata.extra.get("origin"),
        Some(&json!("peer"))
    );
    assert_eq!(file.metadata.get("trace"), Some(&json!("t-1")));
}

#[test]
fn requests_read_every_documented_shape() {
    let request = decode_request(
        br#"{"jsonrpc":"2.0","id":3,"method":"message/stream","params":{"message":{
            "messageId":"m","role":"ROLE_USER","taskId":"t","parts":[
            {"data":{"type":"tool-result","toolCallId":"c","output":{"ok":true}}},
            {"data":{"type":"approval_response","approval_id":"a","approved":false}},
            {"data":{"type":"reasoning","text":"hm"}}]},
            "configuration":{"historyLength":2,"returnImmediately":true}}}"#,
    )
    .expect("valid");
    assert_eq!(request.method, A2aMethod::SendStreamingMessage);
    assert_eq!(request.id, json!(3));
    assert_eq!(request.history_length, Some(2));
    assert!(request.return_immediately);
    assert_eq!(request.input[0].parts[0].type_name(), "tool_result");
    assert_eq!(request.input[0].parts[1].type_name(), "approval_response");
    assert_eq!(request.input[0].parts[2], Part::reasoning("hm"));

    for (body, says) in [
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"t"}}"#,
            "message",
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"ListAgents","params":{}}"#,
            "ListAgents",
        ),
        (
            r#"{"jsonrpc":"1.0","id":1,"method":"SendMessage","params":{}}"#,
            "1.0",
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{}}"#,
            "message",
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[]}}}"#,
            "at least one part",
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"metadata":{}}]}}}"#,
            "a part needs",
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_ROBOT","parts":[{"text":"x"}]}}}"#,
            "ROLE_ROBOT",
        ),
        ("not json", "expected"),
    ] {
        let err = decode_request(body.as_bytes()).expect_err(body);
        assert!(matches!(err, DecodeError::InvalidRequest { .. }), "{err}");
        assert!(err.to_string().contains(says), "{body}: {err}");
    }
}

#[test]
fn task_requests_name_their_task() {
    let get = decode_task_request(
        br#"{"jsonrpc":"2.0","id":"g","method":"GetTask","params":{"id":"run_1","historyLength":3,"tenant":""}}"#,
    )
    .expect("valid");
    assert_eq!(get.method, A2aMethod::GetTask);
    assert_eq!((get.id, get.task_id.as_str()), (json!("g"), "run_1"));
    assert_eq!(get.history_length, Some(3));
    let cancel = decode_task_request(
        br#"{"jsonrpc":"2.0","id":2,"method":"tasks/cancel","params":{"id":"run_1","metadata":{"why":"late"}}}"#,
    )
    .expect("valid");
    assert_eq!(cancel.method, A2aMethod::CancelTask);
    assert_eq!(cancel.metadata["why"], "late");
    let subscribe = decode_task_request(
        br#"{"jsonrpc":"2.0","id":3,"method":"SubscribeToTask","params":{"id":"run_1"}}"#,
    )
    .expect("valid");
    assert_eq!(subscribe.method, A2aMethod::SubscribeToTask);
    assert_eq!(subscribe.history_length, None);

    for (body, says) in [
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"id":"t"}}"#,
            "message",
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":""}}"#,
            "empty",
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{}}"#,
            "id",
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"t","historyLength":-1}}"#,
            "-1",
        ),
    ] {
        let err = decode_task_request(body.as_bytes()).expect_err(body);
        assert!(matches!(err, DecodeError::InvalidRequest { .. }), "{err}");
        assert!(err.to_string().contains(says), "{body}: {err}");
    }
}

#[test]
fn the_agent_card_is_golden() {
    let card = agent_card(&AgentDescription {
        name: "assistant".into(),
        description: "A helpful assistant that can look up the weather.".into(),
        url: "http://127.0.0.1:8000/a2a".into(),
        version: "0.1.0".into(),
        skills: vec![AgentSkill {
            id: "weather".into(),
            name: "Weather".into(),
            description: "Looks up the weather in a city.".into(),
            tags: vec!["weather".into()],
            examples: vec!["What is the weather in Paris?".into()],
        }],
        extensions: vec![AgentExtension::communication_schema(
            &agentwire_core::communication::CommunicationSchema::one_shot(),
        )],
        bearer_auth: true,
    });
    let mut json = serde_json::to_vec_pretty(&card).expect("serializes");
    json.push(b'\n');
    golden::check(common::golden("a2a", "agent-card.json"), &json);
}

/// A client's requests (agentwire calling another A2A agent) read back as the server reads
/// them: every part kind a user message may hold, the conversation, the task named.
#[test]
fn client_requests_decode_as_sent() {
    let message = Message::new(
        Role::User,
        vec![
            Part::text("See the attached files."),
            serde_json::from_value::<Part>(json!({"type": "file", "media_type": "image/png", "url": "https://example.com/chart.png"})).expect("reads"),
            serde_json::from_value::<Part>(json!({"type": "file", "media_type": "text/plain", "data": "YnV5IG1pbGs=", "filename": "notes.txt"})).expect("reads"),
            serde_json::from_value::<Part>(json!({"type": "data", "name": "rows", "data": {"n": 2}})).expect("reads"),
        ],
    )
    .with_id("msg_1");
    let body = encode_request(
        &json!(7),
        A2aMethod::SendStreamingMessage,
        &message,
        Some("ctx_1"),
    );
    let wire: Value = serde_json::from_slice(&body).expect("reads");
    assert_eq!(wire["method"], "SendStreamingMessage");
    assert_eq!(wire["params"]["message"]["role"], "ROLE_USER");
    assert_eq!(
        wire["params"]["message"]["parts"][1],
        json!({"url": "https://example.com/chart.png", "mediaType": "image/png"})
    );
    let request = decode_request(&body).expect("reads");
    assert_eq!(request.id, json!(7));
    assert_eq!(request.context_id.as_deref(), Some("ctx_1"));
    assert_eq!(request.input, vec![message]);

    for method in [
        A2aMethod::GetTask,
        A2aMethod::CancelTask,
        A2aMethod::SubscribeToTask,
    ] {
        let request =
            decode_task_request(&encode_task_request(&json!("r"), method, "run_9")).expect("reads");
        assert_eq!(
            (request.method, request.task_id.as_str()),
            (method, "run_9")
        );
    }
}

/// Cards as clients meet them: our own, the a2a-sdk sample's (1.0 with gRPC first), an A2A 0.3
/// card, and what is not a card.
#[test]
fn cards_read_back_with_their_json_rpc_interface() {
    let ours = agent_card(&AgentDescription {
        name: "assistant".into(),
        description: "Helps.".into(),
        url: "http://127.0.0.1:8000/agents/assistant/a2a".into(),
        version: "0.1.0".into(),
        skills: vec![AgentSkill {
            id: "chat".into(),
            name: "assistant".into(),
            description: "Helps.".into(),
            tags: vec!["chat".into()],
            examples: Vec::new(),
        }],
        extensions: Vec::new(),
        bearer_auth: false,
    });
    let card = decode_card(ours.to_string().as_bytes()).expect("reads");
    assert_eq!(card.name, "assistant");
    assert_eq!(
        card.json_rpc_url(),
        Some("http://127.0.0.1:8000/agents/assistant/a2a")
    );
    assert!(card.streaming);
    assert_eq!(card.skills[0].tags, ["chat"]);

    let sdk = json!({
        "name": "Sample Agent", "description": "A sample agent.", "version": "1.0.0",
        "supportedInterfaces": [
            {"protocolBinding": "GRPC", "protocolVersion": "1.0", "url": "127.0.0.1:50051"},
            {"protocolBinding": "JSONRPC", "protocolVersion": "0.3", "url": "http://h/old"},
            {"protocolBinding": "JSONRPC", "protocolVersion": "1.0", "url": "http://h/a2a/jsonrpc"},
        ],
        "capabilities": {"streaming": true},
        "skills": [{"id": "s", "name": "S", "description": "Say hi.", "tags": ["sample"], "examples": ["hi"], "inputModes": ["text"]}],
    });
    let card = decode_card(sdk.to_string().as_bytes()).expect("reads");
    assert_eq!(card.json_rpc_url(), Some("http://h/a2a/jsonrpc"));
    assert_eq!(card.skills[0].examples, ["hi"]);

    let legacy = json!({"name": "old", "url": "http://h/rpc", "preferredTransport": "JSONRPC", "protocolVersion": "0.3"});
    let card = decode_card(legacy.to_string().as_bytes()).expect("reads");
    assert_eq!(card.interfaces.len(), 1);
    assert_eq!(card.interfaces[0].protocol_version, "0.3");
    assert_eq!(card.json_rpc_url(), None, "A2A 0.3 is not spoken");

    for bad in [&b"<html>"[..], br#"{"description": "no name"}"#, br#"[1]"#] {
        let err = decode_card(bad).expect_err("not a card");
        assert!(matches!(err, DecodeError::InvalidCard { .. }), "{err}");
    }
}

#[test]
fn error_events_and_incomplete_runs_survive() {
    let kinds = [
        EventKind::RunCreated {
            run_id: "r".into(),
            session_id: None,
            agent: None,
            parent_run_id: None,
            parent_tool_call_id: None,
        },
        EventKind::RunStatus {
            status: RunStatus::InProgress,
            error: None,
            usage: None,
        },
        EventKind::Error(ErrorInfo::new("rate_limited", "slow down")),
        EventKind::RunStatus {
            status: RunStatus::Incomplete,
            error: Some(ErrorInfo::new("max_steps", "the step limit was reached")),
            usage: None,
        },
    ];
    let events: Vec<Event> = kinds
        .into_iter()
        .zip(1..)
        .map(|(kind, seq)| Event::new(seq, kind))
        .collect();
    let wire = String::from_utf8(encode(&mut A2aEncoder::default(), &events)).expect("utf-8");
    assert!(
        wire.contains(
            r#""status":{"state":"TASK_STATE_WORKING","message":{"messageId":"r-status-3""#
        ),
        "{wire}"
    );
    assert!(
        wire.contains(r#""status":{"state":"TASK_STATE_FAILED","#),
        "{wire}"
    );
    let decoded = decode_str(&wire).expect("decodes");
    let kinds: Vec<&EventKind> = decoded.iter().map(|event| &event.kind).collect();
    assert_eq!(
        kinds[1..],
        events[1..]
            .iter()
            .map(|event| &event.kind)
            .collect::<Vec<_>>()[..]
    );
    assert!(
        matches!(kinds[0], EventKind::RunCreated { session_id: Some(id), .. } if id.as_str() == "r")
    );
}
