use super::*;

#[track_caller]
fn check(payloads: &[&str], expect: &[BrainEvent]) {
    let mut parser = EventParser::default();
    let mut out = Vec::new();
    for payload in payloads {
        parser.push(payload, &mut out).expect("payload");
    }
    parser.finish(&mut out).expect("finishes");
    assert_eq!(out, expect);
}

#[track_caller]
fn check_error(payloads: &[&str], expect: &str) {
    let mut parser = EventParser::default();
    let mut out = Vec::new();
    let error = payloads
        .iter()
        .try_for_each(|payload| parser.push(payload, &mut out))
        .and_then(|()| parser.finish(&mut out))
        .expect_err("fails");
    assert_eq!(error.to_string(), expect);
}

fn text(text: &str) -> BrainEvent {
    BrainEvent::TextDelta { text: text.into() }
}

fn reasoning(text: &str) -> BrainEvent {
    BrainEvent::ReasoningDelta { text: text.into() }
}

fn start(id: &str, name: &str) -> BrainEvent {
    BrainEvent::ToolCallStart {
        id: id.into(),
        name: name.into(),
    }
}

fn args(id: &str, args: &str) -> BrainEvent {
    BrainEvent::ToolCallDelta {
        id: id.into(),
        args: args.into(),
    }
}

fn end(id: &str) -> BrainEvent {
    BrainEvent::ToolCallEnd { id: id.into() }
}

fn finish(reason: FinishReason, usage: Option<Usage>) -> BrainEvent {
    BrainEvent::Finish { reason, usage }
}

const MESSAGE_START: &str = r#"{"type": "message_start", "message": {"id": "msg_1nZdL29xx5MUA1yADyHTEsnR8uuvGzszyY", "type": "message", "role": "assistant", "content": [], "model": "claude-sonnet-4-5", "stop_reason": null, "stop_sequence": null, "usage": {"input_tokens": 25, "output_tokens": 1}}}"#;

#[test]
fn text_with_pings_and_usage() {
    check(
        &[
            MESSAGE_START,
            r#"{"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}"#,
            r#"{"type": "ping"}"#,
            r#"{"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hello"}}"#,
            r#"{"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "!"}}"#,
            r#"{"type": "content_block_stop", "index": 0}"#,
            r#"{"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence":null}, "usage": {"output_tokens": 15}}"#,
            r#"{"type": "message_stop"}"#,
        ],
        &[
            text("Hello"),
            text("!"),
            finish(FinishReason::Stop, Some(Usage::new(25, 15))),
        ],
    );
}

#[test]
fn thinking_is_signed_where_it_ends() {
    check(
        &[
            MESSAGE_START,
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Let me add"}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":" 2 and 2."}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQBCgIYAhIM1gbcDa9GJwZA2b3h"}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"GgwYvNrTHnVN0ZaLTWQ="}}"#,
            r#"{"type":"content_block_stop","index":0}"#,
            r#"{"type":"content_block_start","index":1,"content_block":{"type":"redacted_thinking","data":"EmwKAhgBEgy3va3pzix"}}"#,
            r#"{"type":"content_block_stop","index":1}"#,
            r#"{"type":"content_block_start","index":2,"content_block":{"type":"text","text":""}}"#,
            r#"{"type":"content_block_delta","index":2,"delta":{"type":"text_delta","text":"4"}}"#,
            r#"{"type":"content_block_stop","index":2}"#,
            r#"{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":30}}"#,
            r#"{"type":"message_stop"}"#,
        ],
        &[
            reasoning("Let me add"),
            reasoning(" 2 and 2."),
            BrainEvent::Data {
                name: THINKING_SIGNATURE.into(),
                data: json!({"signature": "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgwYvNrTHnVN0ZaLTWQ="}),
            },
            BrainEvent::Data {
                name: REDACTED_THINKING.into(),
                data: json!({"data": "EmwKAhgBEgy3va3pzix"}),
            },
            text("4"),
            finish(FinishReason::Stop, Some(Usage::new(25, 30))),
        ],
    );
}

#[test]
fn tool_use_arguments_stream_and_cache_counts_join_the_input() {
    check(
        &[
            r#"{"type":"message_start","message":{"id":"msg_014p7gG3wDgGV9EUtLvnow3U","type":"message","role":"assistant","model":"claude-sonnet-4-5","stop_sequence":null,"usage":{"input_tokens":472,"cache_creation_input_tokens":100,"cache_read_input_tokens":2000,"output_tokens":2},"content":[],"stop_reason":null}}"#,
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Okay"}}"#,
            r#"{"type":"content_block_stop","index":0}"#,
            r#"{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_01T1x1fJ34qAmk2tNTrN7Up6","name":"get_weather","input":{}}}"#,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":""}}"#,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"location\":"}}"#,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":" \"San Francisco, CA\"}"}}"#,
            r#"{"type":"content_block_stop","index":1}"#,
            r#"{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":89}}"#,
            r#"{"type":"message_stop"}"#,
        ],
        &[
            text("Okay"),
            start("toolu_01T1x1fJ34qAmk2tNTrN7Up6", "get_weather"),
            args("toolu_01T1x1fJ34qAmk2tNTrN7Up6", "{\"location\":"),
            args("toolu_01T1x1fJ34qAmk2tNTrN7Up6", " \"San Francisco, CA\"}"),
            end("toolu_01T1x1fJ34qAmk2tNTrN7Up6"),
            finish(
                FinishReason::ToolCalls,
                Some(Usage {
                    cached_input_tokens: Some(2000),
                    ..Usage::new(2572, 89)
                }),
            ),
        ],
    );
}

#[test]
fn parallel_blocks_are_told_apart_by_index() {
    check(
        &[
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"a","name":"f","input":{}}}"#,
            r#"{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"b","name":"g","input":{}}}"#,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"y\":"}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{}"}}"#,
            r#"{"type":"content_block_stop","index":0}"#,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"2}"}}"#,
            r#"{"type":"content_block_stop","index":1}"#,
            r#"{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"input_tokens":9,"output_tokens":4}}"#,
            r#"{"type":"message_stop"}"#,
        ],
        &[
            start("a", "f"),
            start("b", "g"),
            args("b", "{\"y\":"),
            args("a", "{}"),
            end("a"),
            args("b", "2}"),
            end("b"),
            finish(FinishReason::ToolCalls, Some(Usage::new(9, 4))),
        ],
    );
}

#[test]
fn unknown_events_blocks_and_deltas_are_skipped() {
    check(
        &[
            r#"{"type":"future_event","anything":[1,2]}"#,
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{}}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"query\": \"x\"}"}}"#,
            r#"{"type":"content_block_stop","index":0}"#,
            r#"{"type":"content_block_start","index":1,"content_block":{"type":"text","text":"Hi","citations":[]}}"#,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"citations_delta","citation":{"type":"web_search_result_location"}}}"#,
            r#"{"type":"content_block_stop","index":1}"#,
            r#"{"type":"message_delta","delta":{"stop_reason":"pause_turn"}}"#,
            r#"{"type":"message_stop"}"#,
            r#"{"type":"content_block_delta","index":7,"delta":{"type":"text_delta","text":"after the end"}}"#,
        ],
        &[
            text("Hi"),
            finish(FinishReason::Other("pause_turn".into()), None),
        ],
    );
}

#[test]
fn tool_input_sent_whole_at_the_start_is_kept() {
    check(
        &[
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"a","name":"f","input":{"x":1}}}"#,
            r#"{"type":"content_block_stop","index":0}"#,
            r#"{"type":"message_delta","delta":{"stop_reason":"max_tokens"}}"#,
            r#"{"type":"message_stop"}"#,
        ],
        &[
            start("a", "f"),
            args("a", r#"{"x":1}"#),
            end("a"),
            finish(FinishReason::Length, None),
        ],
    );
    check(
        &[
            r#"{"type":"message_delta","delta":{"stop_reason":"refusal"}}"#,
            r#"{"type":"message_stop"}"#,
        ],
        &[finish(FinishReason::ContentFilter, None)],
    );
}

#[test]
fn an_error_event_fails_the_call() {
    check_error(
        &[
            MESSAGE_START,
            r#"{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}"#,
        ],
        "the model failed: overloaded_error: Overloaded",
    );
}

#[test]
fn broken_streams_are_malformed() {
    check_error(
        &[
            MESSAGE_START,
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hel"}}"#,
        ],
        "the provider's stream is malformed: the stream ended before message_stop",
    );
    check_error(
        &[r#"{"type":"content_block_delta","index":3,"delta":{"type":"text_delta","text":"x"}}"#],
        "the provider's stream is malformed: event 1: block 3 is not open",
    );
    check_error(
        &[MESSAGE_START, "{not json"],
        "the provider's stream is malformed: event 2: does not parse: key must be a string at line 1 column 2",
    );
    check_error(
        &[r#"{"type":"content_block_start","index":0}"#],
        "the provider's stream is malformed: event 1: does not parse: missing field `content_block`",
    );
    check_error(
        &[
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{"}}"#,
        ],
        "the provider's stream is malformed: event 2: block 0 got a delta of another block type",
    );
}
