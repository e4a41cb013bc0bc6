//! OpenAI's Responses API: every scenario encodes to a stream that keeps the rules the official
//! clients enforce (checked here as the npm client's accumulator checks them; `peers/openai` and
//! `peers/openai-python` run the clients themselves against a live server), decodes back to its
//! text, calls and outcomes, at any split; a resumed stream is the same stream's tail; requests
//! in every form, and bad input names its field.

mod common;

use std::collections::HashSet;

use agentwire_core::{Awaiting, EventKind, Part, Role, RunStatus};
use agentwire_dialects::openai_responses::{
    ResponseInfo, ResponsesDecoder, ResponsesEncoder, decode_request,
};
use agentwire_dialects::sse::{SseFrame, SseReader};
use agentwire_dialects::{DecodeError, Dialect};
use agentwire_testkit::scenarios::{self, Scenario};
use common::{accumulate, decode_whole, encode};
use serde_json::{Value, json};

/// The encoder of a scenario's response: the tools whose calls have an outcome in it are the
/// agent's own, the others the client's.
fn encoder(scenario: &Scenario) -> ResponsesEncoder {
    let agent_tools: Vec<(String, String)> = scenario
        .messages
        .iter()
        .flat_map(|message| &message.parts)
        .filter_map(|part| match part {
            Part::ToolResult(result) => result.tool_name.clone(),
            Part::ToolError(error) => error.tool_name.clone(),
            _ => None,
        })
        .map(|name| (name, "agent".to_owned()))
        .collect();
    let info = ResponseInfo {
        id: format!("resp_{}", scenario.name),
        model: "agent".into(),
        ..ResponseInfo::default()
    };
    ResponsesEncoder::new(info).with_agent_tools(agent_tools)
}

/// The SSE frames of a stream, each checked: `event:` is the data's `type`.
fn frames(wire: &[u8]) -> Vec<Value> {
    let mut reader = SseReader::default();
    let mut frames: Vec<SseFrame> = Vec::new();
    reader.feed(wire, &mut frames).expect("sse");
    frames
        .iter()
        .map(|frame| {
            let data: Value = serde_json::from_str(&frame.data).expect("json");
            assert_eq!(frame.event.as_deref(), data["type"].as_str());
            data
        })
        .collect()
}

/// What the npm client's accumulator refuses: a gap in the numbers, an event before
/// `response.created`, an item added out of place, an item event naming another item, a
/// content or summary part out of place, anything after the terminal event, and a terminal
/// response whose output is not every item as done.
#[track_caller]
fn check_stream(events: &[Value]) {
    let numbers: Vec<u64> = events
        .iter()
        .map(|event| event["sequence_number"].as_u64().expect("number"))
        .collect();
    assert_eq!(numbers, (0..events.len() as u64).collect::<Vec<_>>());
    assert_eq!(events[0]["type"], "response.created");
    let mut output: Vec<Value> = Vec::new();
    let mut done: Vec<Option<Value>> = Vec::new();
    let terminal = [
        "response.completed",
        "response.failed",
        "response.incomplete",
    ];
    for (position, event) in events.iter().enumerate() {
        let kind = event["type"].as_str().expect("type");
        if terminal.contains(&kind) {
            assert_eq!(position, events.len() - 1, "the terminal event is the last");
            let final_output = event["response"]["output"].as_array().expect("output");
            let expected: Vec<Value> = done
                .iter()
                .map(|item| item.clone().expect("done"))
                .collect();
            assert_eq!(final_output, &expected);
            continue;
        }
        let index = event["output_index"].as_u64().map(|index| index as usize);
        match kind {
            "response.output_item.added" => {
                assert_eq!(index, Some(output.len()), "added in place");
                let item = event["item"].clone();
                assert!(item["id"].as_str().is_some_and(|id| !id.is_empty()));
                if item["type"] == "message" {
                    assert_eq!(item["content"], json!([]));
                }
                if item["type"] == "reasoning" {
                    assert_eq!(item["summary"], json!([]));
                }
                output.push(item);
                done.push(None);
            }
            "response.output_item.done" => {
                let index = index.expect("index");
                assert_eq!(event["item"]["id"], output[index]["id"]);
                assert!(done[index].is_none(), "done once");
                done[index] = Some(event["item"].clone());
            }
            "response.content_part.added" => {
                let item = &mut output[index.expect("index")];
                let contents = item["content"].as_array_mut().expect("message");
                assert_eq!(event["content_index"].as_u64(), Some(contents.len() as u64));
                contents.push(event["part"].clone());
            }
            "response.reasoning_summary_part.added" => {
                let item = &mut output[index.expect("index")];
                let summary = item["summary"].as_array_mut().expect("reasoning");
                assert_eq!(event["summary_index"].as_u64(), Some(summary.len() as u64));
                summary.push(event["part"].clone());
            }
            "response.created" | "response.in_progress" | "error" => {}
            _ => {
                let item = &output[index.expect("item events name their item")];
                assert_eq!(event["item_id"], item["id"], "{kind}");
                assert!(done[index.expect("index")].is_none(), "{kind} after done");
                let expected = match kind {
                    "response.function_call_arguments.delta"
                    | "response.function_call_arguments.done" => "function_call",
                    kind if kind.starts_with("response.mcp_call") => "mcp_call",
                    kind if kind.starts_with("response.reasoning") => "reasoning",
                    _ => "message",
                };
                assert_eq!(item["type"], expected, "{kind}");
            }
        }
    }
    assert!(
        terminal.contains(
            &events.last().expect("events")["type"]
                .as_str()
                .expect("type")
        )
    );
}

#[test]
fn every_scenario_keeps_the_clients_rules_and_decodes_back() {
    for scenario in scenarios::all() {
        let wire = encode(&mut encoder(&scenario), &scenario.events);
        check_stream(&frames(&wire));
        let decoded = decode_whole(&mut ResponsesDecoder::default(), &wire).expect("decodes");
        let messages = accumulate(&decoded);
        // What the format carries of the assistant's turn: text, reasoning, refusals, calls
        // and the agent's outcomes, in order.
        let carried = |parts: &[Part]| -> Vec<Value> {
            parts
                .iter()
                .filter_map(|part| match part {
                    Part::Text(text) => Some(json!(["text", text.text])),
                    Part::Reasoning(reasoning) => Some(json!(["reasoning", reasoning.text])),
                    Part::Refusal(refusal) => Some(json!(["refusal", refusal.text])),
                    Part::ToolCall(call) => Some(json!([
                        "call",
                        call.tool_call_id,
                        call.tool_name,
                        call.args
                    ])),
                    Part::ToolResult(result) => {
                        Some(json!(["result", result.tool_call_id, result.result]))
                    }
                    Part::ToolError(error) => {
                        Some(json!(["error", error.tool_call_id, error.message]))
                    }
                    _ => None,
                })
                .collect()
        };
        let expected: Vec<Value> = scenario
            .messages
            .iter()
            .filter(|message| message.role == Role::Assistant)
            .flat_map(|message| carried(&message.parts))
            .collect();
        let got: Vec<Value> = messages
            .iter()
            .flat_map(|message| carried(&message.parts))
            .collect();
        assert_eq!(got, expected, "{}", scenario.name);
        let status = decoded.iter().rev().find_map(|event| match &event.kind {
            EventKind::RunStatus { status, .. } => Some(*status),
            _ => None,
        });
        let expected = match scenario.status {
            RunStatus::Awaiting(Awaiting::Input) => RunStatus::Completed,
            RunStatus::Rejected => RunStatus::Failed,
            status => status,
        };
        assert_eq!(status, Some(expected), "{}", scenario.name);
    }
}

#[test]
fn any_split_decodes_the_same() {
    for scenario in scenarios::all() {
        let wire = encode(&mut encoder(&scenario), &scenario.events);
        let whole = decode_whole(&mut ResponsesDecoder::default(), &wire).expect("decodes");
        for cut in (0..wire.len()).step_by(7) {
            let mut decoder = ResponsesDecoder::default();
            let mut events = Vec::new();
            agentwire_dialects::StreamDecoder::decode(&mut decoder, &wire[..cut], &mut events)
                .expect("first piece");
            agentwire_dialects::StreamDecoder::decode(&mut decoder, &wire[cut..], &mut events)
                .expect("second piece");
            agentwire_dialects::StreamDecoder::finish(&mut decoder, &mut events).expect("end");
            assert_eq!(events, whole, "{} cut at {cut}", scenario.name);
        }
    }
}

#[test]
fn a_resumed_stream_is_the_tail_of_the_stream() {
    let scenario = scenarios::tool_call();
    let whole = frames(&encode(&mut encoder(&scenario), &scenario.events));
    for after in [0, 3, whole.len() as u64 - 2] {
        let mut resumed = encoder(&scenario).starting_after(after);
        let tail = frames(&encode(&mut resumed, &scenario.events));
        assert_eq!(tail, whole[after as usize + 1..]);
    }
}

#[test]
fn the_response_object_is_the_terminal_events() {
    let scenario = scenarios::text();
    let mut encoder = encoder(&scenario);
    let events = frames(&encode(&mut encoder, &scenario.events));
    assert_eq!(
        encoder.response(),
        events.last().expect("events")["response"]
    );
    assert!(encoder.is_done());
    assert_eq!(encoder.response()["status"], "completed");
}

#[test]
fn a_client_tool_call_is_a_function_call_and_its_output_is_not_sent_back() {
    let scenario = scenarios::client_tool();
    let mut encoder = ResponsesEncoder::new(ResponseInfo::default());
    let events = frames(&encode(&mut encoder, &scenario.events));
    let types: HashSet<&str> = events
        .iter()
        .filter_map(|event| event["type"].as_str())
        .collect();
    assert!(types.contains("response.function_call_arguments.delta"));
    let output = &events.last().expect("events")["response"]["output"];
    let call = output
        .as_array()
        .expect("output")
        .iter()
        .find(|item| item["type"] == "function_call")
        .expect("a function_call");
    assert_eq!(call["status"], "completed");
    assert!(call["call_id"].as_str().is_some());
    assert_eq!(events.last().expect("events")["type"], "response.completed");
}

#[test]
fn the_dialect_is_named_and_sniffed() {
    assert_eq!(
        "openai-responses".parse::<Dialect>(),
        Ok(Dialect::OpenAiResponses)
    );
    let scenario = scenarios::text();
    let wire = encode(&mut encoder(&scenario), &scenario.events);
    assert_eq!(Dialect::sniff(&wire), Some(Dialect::OpenAiResponses));
}

#[track_caller]
fn refused(body: Value, field: &str) {
    match decode_request(body.to_string().as_bytes()) {
        Err(DecodeError::InvalidField(error)) => assert_eq!(error.field, field),
        other => panic!("{body} should be refused for {field}: {other:?}"),
    }
}

#[test]
fn requests_in_every_form() {
    let request = decode_request(br#"{"model": "a", "input": "hi", "instructions": "Be brief."}"#)
        .expect("decodes");
    assert_eq!(request.model.as_deref(), Some("a"));
    assert_eq!(request.input.len(), 2);
    assert_eq!(request.input[0].role, Role::System);
    assert_eq!(request.input[1].content(), "hi");
    assert!(!request.stream && !request.background);

    let body = json!({
        "model": "a",
        "stream": true,
        "background": true,
        "previous_response_id": "run_1",
        "temperature": 0.5,
        "top_p": 0.9,
        "max_output_tokens": 100,
        "tools": [{"type": "function", "name": "get_weather", "parameters": {"type": "object", "properties": {}}}],
        "input": [
            {"role": "user", "content": [
                {"type": "input_text", "text": "look"},
                {"type": "input_image", "image_url": "data:image/png;base64,AAAA"},
                {"type": "input_file", "file_url": "https://example.com/a.pdf"}
            ]},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "ok"}]},
            {"type": "function_call", "call_id": "c1", "name": "get_weather", "arguments": "{\"city\":\"Paris\"}"},
            {"type": "function_call_output", "call_id": "c1", "output": "{\"sky\":\"sunny\"}"},
            {"type": "reasoning", "id": "rs_1", "summary": []},
            {"type": "mcp_approval_response", "approval_request_id": "apr_1", "approve": true}
        ]
    });
    let request = decode_request(body.to_string().as_bytes()).expect("decodes");
    assert!(request.stream && request.background);
    assert_eq!(request.previous_response_id.as_deref(), Some("run_1"));
    assert_eq!(request.settings.temperature, Some(0.5));
    assert_eq!(request.settings.top_p, Some(0.9));
    assert_eq!(request.settings.max_tokens, Some(100));
    assert_eq!(request.client_tools[0].name, "get_weather");
    let roles: Vec<Role> = request.input.iter().map(|message| message.role).collect();
    assert_eq!(roles, [Role::User, Role::Assistant]);
    let user = &request.input[0].parts;
    assert!(matches!(&user[1], Part::File(file) if file.media_type == "image/png"));
    assert!(matches!(&user[2], Part::File(file) if file.media_type == "application/pdf"));
    let assistant = &request.input[1].parts;
    assert!(
        matches!(&assistant[1], Part::ToolCall(call) if call.args.as_value() == &json!({"city": "Paris"}))
    );
    assert!(
        matches!(&assistant[2], Part::ToolResult(result) if result.result == json!({"sky": "sunny"}))
    );
    assert!(matches!(&assistant[3], Part::ApprovalResponse(response) if response.approved));

    // The answer to a waiting run, alone: a user message of answers.
    let body = json!({"input": [
        {"type": "function_call_output", "call_id": "c1", "output": "plain text"},
        {"type": "function_call_output", "call_id": "c2", "output": "[1]"}
    ]});
    let request = decode_request(body.to_string().as_bytes()).expect("decodes");
    assert_eq!(request.input.len(), 1);
    assert_eq!(request.input[0].role, Role::User);
    assert!(
        matches!(&request.input[0].parts[0], Part::ToolResult(result) if result.result == json!("plain text"))
    );
}

#[test]
fn bad_requests_name_their_field() {
    refused(json!({"input": 3}), "input");
    refused(
        json!({"input": [{"role": "robot", "content": "x"}]}),
        "input[0].role",
    );
    refused(
        json!({"input": [{"role": "user", "content": [{"type": "input_file", "file_id": "f"}]}]}),
        "input[0].content[0].file_id",
    );
    refused(
        json!({"input": [{"type": "function_call_output", "output": "x"}]}),
        "input[0].call_id",
    );
    refused(
        json!({"input": "x", "tools": [{"type": "web_search"}]}),
        "tools[0].type",
    );
    refused(json!({"input": "x", "temperature": 9}), "temperature");
    refused(
        json!({"input": "x", "max_output_tokens": -1}),
        "max_output_tokens",
    );
    assert!(matches!(
        decode_request(b"[1]"),
        Err(DecodeError::InvalidRequest { .. })
    ));
}

/// A sub-agent's messages have no item; what it asks for approval is the response's
/// `mcp_approval_request`, under the approval's own id, so the client can answer it.
#[test]
fn a_subagents_approval_is_an_mcp_approval_request_and_its_messages_are_not_items() {
    let scenario = scenarios::subagent_approval();
    let events = frames(&encode(&mut encoder(&scenario), &scenario.events));
    let last = events.last().expect("events");
    assert_eq!(last["type"], "response.completed");
    let items: Vec<&Value> = last["response"]["output"]
        .as_array()
        .expect("output")
        .iter()
        .collect();
    let kinds: Vec<&str> = items
        .iter()
        .filter_map(|item| item["type"].as_str())
        .collect();
    // The run's text and its call of the director (a client's `function_call` here, as the
    // encoder is not told the director is the agent's), then the cleaner's request.
    assert_eq!(kinds.len(), 3, "{kinds:?}");
    assert_eq!(kinds[2], "mcp_approval_request");
    let request = items[2];
    assert_eq!(request["id"], "apr_1");
    assert_eq!(request["name"], "delete_file");
    assert_eq!(
        serde_json::from_str::<Value>(request["arguments"].as_str().expect("text")).expect("JSON"),
        json!({"path": "old.log"})
    );
    let subagents = frames(&encode(
        &mut encoder(&scenarios::subagents()),
        &scenarios::subagents().events,
    ));
    let texts: Vec<&str> = subagents
        .iter()
        .filter(|event| event["type"] == "response.output_text.delta")
        .filter_map(|event| event["delta"].as_str())
        .collect();
    assert!(
        !texts
            .iter()
            .any(|text| text.contains("writer!") || text.contains("it is Paris")),
        "the children's text is not the response's: {texts:?}"
    );
}
