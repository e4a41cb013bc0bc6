#![allow(clippy::unwrap_used)]

use agentwire_dialects::sse::SseReader;
use agentwire_testkit::fake_openai_responses::ResponsesStream;
use serde_json::json;

use super::*;
use crate::http::{logs_of, parse_all, parse_all_with_start, without_start};

/// What the parser makes of a stream's SSE bytes fed in these pieces.
fn parse_pieces<'a>(
    pieces: impl IntoIterator<Item = &'a [u8]>,
) -> Result<Vec<BrainEvent>, BrainError> {
    let mut reader = SseReader::default();
    let mut parser = EventParser::default();
    let mut frames = Vec::new();
    let mut out = Vec::new();
    for piece in pieces {
        reader.feed(piece, &mut frames).unwrap();
        for frame in frames.drain(..) {
            parser.push(&frame.data, &mut out)?;
        }
    }
    reader.finish().unwrap();
    parser.finish(&mut out)?;
    Ok(without_start(out))
}

/// Checks what a stream becomes, whole, split in two at every byte, and a byte at a time.
#[track_caller]
fn check(stream: &ResponsesStream, expect: Result<Vec<BrainEvent>, &str>) {
    let sse = stream.to_sse();
    let expect = expect.map_err(str::to_owned);
    let outcome = |result: Result<Vec<BrainEvent>, BrainError>| result.map_err(|e| e.to_string());
    let whole: Vec<&str> = stream.payloads();
    let payloads = if expect.is_ok() {
        parse_all::<EventParser>(&whole)
    } else {
        parse_pieces([sse.as_slice()])
    };
    assert_eq!(outcome(payloads), expect, "whole");
    for split in 0..=sse.len() {
        let (head, tail) = sse.split_at(split);
        assert_eq!(
            outcome(parse_pieces([head, tail])),
            expect,
            "split at {split}"
        );
    }
    let bytes = sse.chunks(1);
    assert_eq!(outcome(parse_pieces(bytes)), expect, "a byte at a time");
}

fn usage(input: u64, output: u64, reasoning: u64) -> Option<Usage> {
    Some(Usage {
        reasoning_tokens: Some(reasoning),
        cached_input_tokens: Some(0),
        ..Usage::new(input, output)
    })
}

const ENCRYPTED: &str = "gAAAAABoISQ24OyVRYbkYfukLbSRHz0Q8Y8T1gl1MyyOnyYTr0p2Njs4yqo1Z3vD";

#[test]
fn response_created_names_the_response_and_its_model() {
    let stream = ResponsesStream::new()
        .message("msg_1", &["Hi"])
        .completed(1, 1, 0);
    let events = parse_all_with_start::<EventParser>(&stream.payloads()).unwrap();
    let BrainEvent::ResponseStart { id, model } = &events[0] else {
        panic!("{events:?}");
    };
    assert!(
        id.as_deref().is_some_and(|id| id.starts_with("resp")),
        "{id:?}"
    );
    assert!(model.is_some());
    assert_eq!(without_start(events.clone()).len(), events.len() - 1);
}

#[test]
fn text_streams_then_finishes_with_its_usage() {
    check(
        &ResponsesStream::new()
            .message("msg_1", &["Hel", "lo!"])
            .completed(9, 2, 0),
        Ok(vec![
            BrainEvent::text_delta("Hel"),
            BrainEvent::text_delta("lo!"),
            BrainEvent::finish(FinishReason::Stop, usage(9, 2, 0)),
        ]),
    );
}

#[test]
fn reasoning_summaries_stream_and_the_item_is_kept_after_them() {
    let item = json!({
        "id": "rs_1",
        "type": "reasoning",
        "summary": [
            {"type": "summary_text", "text": "**Adding**\n\nTwo and two."},
            {"type": "summary_text", "text": "Four."}
        ],
        "encrypted_content": ENCRYPTED
    });
    check(
        &ResponsesStream::new()
            .reasoning(
                "rs_1",
                &[&["**Adding**\n\n", "Two and two."], &["Four."]],
                ENCRYPTED,
            )
            .message("msg_1", &["4"])
            .completed(20, 70, 64),
        Ok(vec![
            BrainEvent::reasoning_delta("**Adding**\n\n"),
            BrainEvent::reasoning_delta("Two and two."),
            BrainEvent::reasoning_delta("\n\nFour."),
            BrainEvent::Data {
                name: REASONING_ITEM.into(),
                data: item,
            },
            BrainEvent::text_delta("4"),
            BrainEvent::finish(FinishReason::Stop, usage(20, 70, 64)),
        ]),
    );
}

#[test]
fn a_reasoning_item_without_a_summary_is_kept_all_the_same() {
    check(
        &ResponsesStream::new()
            .reasoning("rs_2", &[], ENCRYPTED)
            .message("msg_1", &["Yes."])
            .completed(5, 30, 28),
        Ok(vec![
            BrainEvent::Data {
                name: REASONING_ITEM.into(),
                data: json!({"id": "rs_2", "type": "reasoning", "summary": [], "encrypted_content": ENCRYPTED}),
            },
            BrainEvent::text_delta("Yes."),
            BrainEvent::finish(FinishReason::Stop, usage(5, 30, 28)),
        ]),
    );
}

#[test]
fn function_calls_stream_their_arguments_under_their_call_id() {
    check(
        &ResponsesStream::new()
            .reasoning("rs_1", &[&["Writing it."]], ENCRYPTED)
            .message("msg_1", &["Let me write it."])
            .function_call(
                "fc_1",
                "call_w9sq2",
                "write_file",
                &[
                    "{\"pa",
                    "th\": \"a.txt\", \"con",
                    "tent\": \"h\u{e9}llo \u{1f30d}\"}",
                ],
            )
            .function_call("fc_2", "call_x", "now", &["{}"])
            .completed(30, 12, 0),
        Ok(vec![
            BrainEvent::reasoning_delta("Writing it."),
            BrainEvent::Data {
                name: REASONING_ITEM.into(),
                data: json!({
                    "id": "rs_1", "type": "reasoning", "encrypted_content": ENCRYPTED,
                    "summary": [{"type": "summary_text", "text": "Writing it."}]
                }),
            },
            BrainEvent::text_delta("Let me write it."),
            BrainEvent::tool_call_start("call_w9sq2", "write_file"),
            BrainEvent::tool_call_delta("call_w9sq2", "{\"pa"),
            BrainEvent::tool_call_delta("call_w9sq2", "th\": \"a.txt\", \"con"),
            BrainEvent::tool_call_delta("call_w9sq2", "tent\": \"h\u{e9}llo \u{1f30d}\"}"),
            BrainEvent::tool_call_end("call_w9sq2"),
            BrainEvent::tool_call_start("call_x", "now"),
            BrainEvent::tool_call_delta("call_x", "{}"),
            BrainEvent::tool_call_end("call_x"),
            BrainEvent::finish(FinishReason::ToolCalls, usage(30, 12, 0)),
        ]),
    );
}

#[test]
fn refusals_stream_as_refusal_deltas() {
    check(
        &ResponsesStream::new()
            .refusal("msg_1", &["I'm sorry, ", "I can't help with that."])
            .completed(12, 9, 0),
        Ok(vec![
            BrainEvent::refusal_delta("I'm sorry, "),
            BrainEvent::refusal_delta("I can't help with that."),
            BrainEvent::finish(FinishReason::Stop, usage(12, 9, 0)),
        ]),
    );
}

#[test]
fn an_incomplete_response_finishes_with_its_reason() {
    check(
        &ResponsesStream::new()
            .message("msg_1", &["Once upon"])
            .incomplete("max_output_tokens", 10, 16),
        Ok(vec![
            BrainEvent::text_delta("Once upon"),
            BrainEvent::finish(FinishReason::Length, usage(10, 16, 0)),
        ]),
    );
    check(
        &ResponsesStream::new().incomplete("content_filter", 10, 0),
        Ok(vec![BrainEvent::finish(
            FinishReason::ContentFilter,
            usage(10, 0, 0),
        )]),
    );
}

#[test]
fn a_failed_response_and_an_error_event_are_model_errors() {
    check(
        &ResponsesStream::new()
            .message("msg_1", &["Hi"])
            .failed("server_error", "The model failed to generate a response."),
        Err("the model failed: The model failed to generate a response. (server_error)"),
    );
    check(
        &ResponsesStream::new()
            .message("msg_1", &["Hi"])
            .error("rate_limit_exceeded", "Rate limit reached for o4-mini."),
        Err("the model failed: Rate limit reached for o4-mini. (rate_limit_exceeded)"),
    );
    // The events before the failure come out first.
    let mut parser = EventParser::default();
    let mut out = Vec::new();
    let stream = ResponsesStream::new()
        .message("msg_1", &["Hi"])
        .error("server_error", "boom");
    let error = stream
        .payloads()
        .into_iter()
        .try_for_each(|payload| parser.push(payload, &mut out))
        .unwrap_err();
    assert_eq!(without_start(out), [BrainEvent::text_delta("Hi")]);
    assert_eq!(error.to_string(), "the model failed: boom (server_error)");
    // Some servers nest the error.
    let error = parse_all::<EventParser>(&[
        r#"{"type":"error","sequence_number":0,"error":{"type":"invalid_request_error","code":"context_length_exceeded","message":"Too long."}}"#,
    ])
    .unwrap_err();
    assert_eq!(
        error.to_string(),
        "the model failed: Too long. (context_length_exceeded)"
    );
}

#[test]
fn url_citations_are_sources_once_their_text_is_done_and_other_annotations_data() {
    let citation = |url: &str, title: &str| json!({"type": "url_citation", "start_index": 0, "end_index": 5, "url": url, "title": title});
    let file = json!({"type": "file_citation", "index": 9, "file_id": "file-2dtbBZdjtDKS8eqWxqbgDi", "filename": "notes.pdf"});
    check(
        &ResponsesStream::new()
            .annotated_message(
                "msg_1",
                &["Oslo ", "is cold."],
                &[
                    citation("https://example.com/oslo", "Oslo"),
                    file.clone(),
                    citation("https://example.com/oslo", "Oslo again"),
                ],
            )
            .annotated_message(
                "msg_2",
                &[" Bergen is wet."],
                &[
                    citation("https://example.com/bergen", ""),
                    citation("https://example.com/oslo", "Oslo"),
                ],
            )
            .completed(8, 4, 0),
        Ok(vec![
            BrainEvent::text_delta("Oslo "),
            BrainEvent::text_delta("is cold."),
            BrainEvent::source("https://example.com/oslo", Some("Oslo")),
            BrainEvent::Data {
                name: ANNOTATION.into(),
                data: file,
            },
            BrainEvent::text_delta(" Bergen is wet."),
            BrainEvent::source("https://example.com/bergen", None),
            BrainEvent::finish(FinishReason::Stop, usage(8, 4, 0)),
        ]),
    );
}

#[test]
fn other_items_are_kept_and_unknown_events_logged_once() {
    let search = json!({"id": "ws_1", "type": "web_search_call", "status": "completed", "action": {"type": "search", "query": "oslo weather"}});
    let mut stream = ResponsesStream::new();
    stream.event(
        "response.output_item.added",
        json!({"output_index": 0, "item": {"id": "ws_1", "type": "web_search_call", "status": "in_progress"}}),
    );
    for _ in 0..2 {
        stream.event(
            "response.web_search_call.searching",
            json!({"output_index": 0, "item_id": "ws_1"}),
        );
    }
    stream.event(
        "response.output_item.done",
        json!({"output_index": 0, "item": search.clone()}),
    );
    let stream = stream.message("msg_1", &["Cold."]).completed(3, 2, 0);
    let logs = logs_of(|| {
        assert_eq!(
            parse_all::<EventParser>(&stream.payloads()).unwrap(),
            [
                BrainEvent::Data {
                    name: "openai.web_search_call".into(),
                    data: search,
                },
                BrainEvent::text_delta("Cold."),
                BrainEvent::finish(FinishReason::Stop, usage(3, 2, 0)),
            ]
        );
    });
    let lines: Vec<&str> = logs.lines().collect();
    assert_eq!(lines.len(), 1, "{logs}");
    assert!(
        lines[0].contains("WARN") && lines[0].contains("response.web_search_call.searching"),
        "{logs}"
    );
}

#[test]
fn arguments_sent_only_whole_go_out_once() {
    let added = |index: u64, id: &str, arguments: &str| {
        json!({"type": "response.output_item.added", "output_index": index, "item": {
            "id": id, "type": "function_call", "call_id": format!("call_{id}"), "name": "f",
            "arguments": arguments
        }})
        .to_string()
    };
    let done = |index: u64, id: &str| {
        json!({"type": "response.output_item.done", "output_index": index, "item": {
            "id": id, "type": "function_call", "call_id": format!("call_{id}"), "name": "f",
            "arguments": "{\"a\":1}"
        }})
        .to_string()
    };
    let arguments_done = json!({"type": "response.function_call_arguments.done", "output_index": 1, "item_id": "b", "arguments": "{\"b\":2}"}).to_string();
    let completed = r#"{"type":"response.completed","response":{"status":"completed"}}"#;
    let payloads = [
        added(0, "a", ""),
        done(0, "a"),
        added(1, "b", ""),
        arguments_done,
        added(2, "c", "{\"c\":3}"),
        done(2, "c"),
        completed.to_owned(),
    ];
    let payloads: Vec<&str> = payloads.iter().map(String::as_str).collect();
    assert_eq!(
        parse_all::<EventParser>(&payloads).unwrap(),
        [
            BrainEvent::tool_call_start("call_a", "f"),
            BrainEvent::tool_call_delta("call_a", "{\"a\":1}"),
            BrainEvent::tool_call_end("call_a"),
            BrainEvent::tool_call_start("call_b", "f"),
            BrainEvent::tool_call_delta("call_b", "{\"b\":2}"),
            BrainEvent::tool_call_end("call_b"),
            BrainEvent::tool_call_start("call_c", "f"),
            BrainEvent::tool_call_delta("call_c", "{\"c\":3}"),
            BrainEvent::tool_call_end("call_c"),
            BrainEvent::finish(FinishReason::ToolCalls, None),
        ]
    );
}

#[test]
fn broken_streams_are_errors() {
    let error = parse_all::<EventParser>(&[
        r#"{"type":"response.created","response":{"status":"in_progress"}}"#,
        r#"{"type":"response.output_text.delta","item_id":"msg_1","delta":"a"}"#,
    ])
    .unwrap_err();
    assert_eq!(
        error.to_string(),
        "the provider's stream is malformed: the stream ended before the response completed"
    );

    let error = parse_all::<EventParser>(&["{not json"]).unwrap_err();
    assert!(
        error.to_string().contains("event 1 does not parse"),
        "{error}"
    );

    let error = parse_all::<EventParser>(&[
        r#"{"type":"response.function_call_arguments.delta","item_id":"fc_9","output_index":3,"delta":"{"}"#,
    ])
    .unwrap_err();
    assert!(
        error
            .to_string()
            .contains("arguments for a function call that was not started (fc_9)"),
        "{error}"
    );

    // Anything after the end is not read.
    assert_eq!(
        parse_all::<EventParser>(&[
            r#"{"type":"response.completed","response":{"status":"completed"}}"#,
            "not even json",
        ])
        .unwrap(),
        [BrainEvent::finish(FinishReason::Stop, None)]
    );
}
