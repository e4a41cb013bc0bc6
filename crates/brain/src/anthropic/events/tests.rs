use super::*;
use crate::http::parse_all;

#[track_caller]
fn check(payloads: &[&str], expect: &[BrainEvent]) {
    assert_eq!(parse_all::<EventParser>(payloads).expect("parses"), expect);
}

#[track_caller]
fn check_error(payloads: &[&str], expect: &str) {
    let error = parse_all::<EventParser>(payloads).expect_err("fails");
    assert_eq!(error.to_string(), expect);
}

const MESSAGE_START: &str = r#"{"type": "message_start", "message": {"id": "msg_1nZdL29xx5MUA1yADyHTEsnR8uuvGzszyY", "type": "message", "role": "assistant", "content": [], "model": "claude-sonnet-4-5", "stop_reason": null, "stop_sequence": null, "usage": {"input_tokens": 25, "output_tokens": 1}}}"#;

#[test]
fn message_start_names_the_response_and_its_model() {
    let events = crate::http::parse_all_with_start::<EventParser>(&[
        MESSAGE_START,
        r#"{"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 1}}"#,
        r#"{"type": "message_stop"}"#,
    ])
    .expect("parses");
    assert_eq!(
        events[0],
        BrainEvent::ResponseStart {
            id: Some("msg_1nZdL29xx5MUA1yADyHTEsnR8uuvGzszyY".into()),
            model: Some("claude-sonnet-4-5".into()),
        }
    );
    assert_eq!(events.len(), 2);
}

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
            BrainEvent::text_delta("Hello"),
            BrainEvent::text_delta("!"),
            BrainEvent::finish(FinishReason::Stop, Some(Usage::new(25, 15))),
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
            BrainEvent::reasoning_delta("Let me add"),
            BrainEvent::reasoning_delta(" 2 and 2."),
            BrainEvent::Data {
                name: THINKING_SIGNATURE.into(),
                data: json!({"signature": "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgwYvNrTHnVN0ZaLTWQ="}),
            },
            BrainEvent::Data {
                name: REDACTED_THINKING.into(),
                data: json!({"data": "EmwKAhgBEgy3va3pzix"}),
            },
            BrainEvent::text_delta("4"),
            BrainEvent::finish(FinishReason::Stop, Some(Usage::new(25, 30))),
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
            BrainEvent::text_delta("Okay"),
            BrainEvent::tool_call_start("toolu_01T1x1fJ34qAmk2tNTrN7Up6", "get_weather"),
            BrainEvent::tool_call_delta("toolu_01T1x1fJ34qAmk2tNTrN7Up6", "{\"location\":"),
            BrainEvent::tool_call_delta(
                "toolu_01T1x1fJ34qAmk2tNTrN7Up6",
                " \"San Francisco, CA\"}",
            ),
            BrainEvent::tool_call_end("toolu_01T1x1fJ34qAmk2tNTrN7Up6"),
            BrainEvent::finish(
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
            BrainEvent::tool_call_start("a", "f"),
            BrainEvent::tool_call_start("b", "g"),
            BrainEvent::tool_call_delta("b", "{\"y\":"),
            BrainEvent::tool_call_delta("a", "{}"),
            BrainEvent::tool_call_end("a"),
            BrainEvent::tool_call_delta("b", "2}"),
            BrainEvent::tool_call_end("b"),
            BrainEvent::finish(FinishReason::ToolCalls, Some(Usage::new(9, 4))),
        ],
    );
}

/// A web search turn as Anthropic's web search tool documentation shows it streaming: the
/// server tool's call with its query in `input_json_delta`s, the search result block whole
/// (its results as sources), then text with a citation.
#[test]
fn server_tool_blocks_are_kept_as_data_in_order_and_search_results_are_sources() {
    let result = json!({
        "type": "web_search_tool_result",
        "tool_use_id": "srvtoolu_014hJH82Qum7Td6UV8gDXThB",
        "content": [{
            "type": "web_search_result",
            "title": "Weather in New York City in May 2025",
            "url": "https://www.timeanddate.com/weather/usa/new-york/historic",
            "encrypted_content": "Ev0DCioIAxgCIiQ3NmU4ZmI4OC1k",
            "page_age": null
        }]
    });
    let citation = json!({
        "type": "citations_delta",
        "citation": {
            "type": "web_search_result_location",
            "cited_text": "Sunny, 22 °C",
            "url": "https://www.timeanddate.com/weather/usa/new-york/historic",
            "title": "Weather in New York City in May 2025",
            "encrypted_index": "Eo8BCioIAhgBIiQyYjQ0OWJmZi1lNm"
        }
    });
    let result_start = json!({"type": "content_block_start", "index": 1, "content_block": result});
    let citation_delta = json!({"type": "content_block_delta", "index": 2, "delta": citation});
    let (result_start, citation_delta) = (result_start.to_string(), citation_delta.to_string());
    check(
        &[
            MESSAGE_START,
            r#"{"type": "content_block_start", "index": 0, "content_block": {"type": "server_tool_use", "id": "srvtoolu_014hJH82Qum7Td6UV8gDXThB", "name": "web_search", "input": {}}}"#,
            r#"{"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": ""}}"#,
            r#"{"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": "{\"query"}}"#,
            r#"{"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": "\": \"weather NYC today\"}"}}"#,
            r#"{"type": "content_block_stop", "index": 0}"#,
            &result_start,
            r#"{"type": "content_block_stop", "index": 1}"#,
            r#"{"type": "content_block_start", "index": 2, "content_block": {"type": "text", "text": "", "citations": []}}"#,
            &citation_delta,
            r#"{"type": "content_block_delta", "index": 2, "delta": {"type": "text_delta", "text": "It is sunny."}}"#,
            r#"{"type": "content_block_stop", "index": 2}"#,
            r#"{"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": null}, "usage": {"output_tokens": 40, "server_tool_use": {"web_search_requests": 1}}}"#,
            r#"{"type": "message_stop"}"#,
        ],
        &[
            BrainEvent::Data {
                name: "anthropic.server_tool_use".into(),
                data: json!({
                    "type": "server_tool_use",
                    "id": "srvtoolu_014hJH82Qum7Td6UV8gDXThB",
                    "name": "web_search",
                    "input": {"query": "weather NYC today"}
                }),
            },
            BrainEvent::Data {
                name: "anthropic.web_search_tool_result".into(),
                data: result,
            },
            BrainEvent::source(
                "https://www.timeanddate.com/weather/usa/new-york/historic",
                Some("Weather in New York City in May 2025"),
            ),
            // The citation names the same URL: no second source.
            BrainEvent::text_delta("It is sunny."),
            BrainEvent::finish(FinishReason::Stop, Some(Usage::new(25, 40))),
        ],
    );
}

#[test]
fn an_unknown_block_keeps_every_delta_and_input_that_does_not_parse() {
    check(
        &[
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"future_block","id":"f1"}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"cut"}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"not answer text"}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"future_delta","x":1}}"#,
            r#"{"type":"message_delta","delta":{"stop_reason":"pause_turn"}}"#,
            r#"{"type":"message_stop"}"#,
        ],
        &[
            BrainEvent::Data {
                name: "anthropic.future_block".into(),
                data: json!({
                    "type": "future_block",
                    "id": "f1",
                    "input": "{\"cut",
                    "deltas": [
                        {"type": "text_delta", "text": "not answer text"},
                        {"type": "future_delta", "x": 1}
                    ]
                }),
            },
            BrainEvent::finish(FinishReason::Other("pause_turn".into()), None),
        ],
    );
}

#[test]
fn unknown_events_are_logged_once_per_type_and_nothing_after_the_stop_counts() {
    let logs = crate::http::logs_of(|| {
        check(
            &[
                r#"{"type":"future_event","anything":[1,2]}"#,
                r#"{"type":"ping"}"#,
                r#"{"type":"future_event","anything":[3]}"#,
                r#"{"type":"other_event"}"#,
                r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":"Hi"}}"#,
                r#"{"type":"content_block_stop","index":0}"#,
                r#"{"type":"message_stop"}"#,
                r#"{"type":"content_block_delta","index":7,"delta":{"type":"text_delta","text":"after the end"}}"#,
                r#"{"type":"late_event"}"#,
            ],
            &[
                BrainEvent::text_delta("Hi"),
                BrainEvent::finish(FinishReason::Stop, None),
            ],
        );
    });
    let lines: Vec<&str> = logs.lines().collect();
    assert_eq!(lines.len(), 2, "{logs}");
    assert!(lines[0].contains("WARN"), "{logs}");
    assert!(
        lines[0].contains("future_event") && lines[0].contains("[1,2]"),
        "{logs}"
    );
    assert!(lines[1].contains("other_event"), "{logs}");
}

#[test]
fn a_refusal_ends_with_its_stop_details_then_a_content_filter_finish() {
    check(
        &[
            MESSAGE_START,
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello.."}}"#,
            r#"{"type":"content_block_stop","index":0}"#,
            r#"{"type":"message_delta","delta":{"stop_reason":"refusal","stop_sequence":null,"stop_details":{"type":"refusal","category":"cyber","explanation":"This request was declined because it could enable cyber harm."}},"usage":{"output_tokens":3}}"#,
            r#"{"type":"message_stop"}"#,
        ],
        &[
            BrainEvent::text_delta("Hello.."),
            BrainEvent::Data {
                name: STOP_DETAILS.into(),
                data: json!({
                    "type": "refusal",
                    "category": "cyber",
                    "explanation": "This request was declined because it could enable cyber harm."
                }),
            },
            BrainEvent::finish(FinishReason::ContentFilter, Some(Usage::new(25, 3))),
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
            BrainEvent::tool_call_start("a", "f"),
            BrainEvent::tool_call_delta("a", r#"{"x":1}"#),
            BrainEvent::tool_call_end("a"),
            BrainEvent::finish(FinishReason::Length, None),
        ],
    );
    check(
        &[
            r#"{"type":"message_delta","delta":{"stop_reason":"refusal"}}"#,
            r#"{"type":"message_stop"}"#,
        ],
        &[BrainEvent::finish(FinishReason::ContentFilter, None)],
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

/// Text with citations: web search results and search results with URLs become sources when
/// the text block stops (the text stays one piece), each URL once; a citation of a document
/// (no URL) stays data where it came.
#[test]
fn citations_with_urls_become_sources_at_the_text_s_stop() {
    let web = |url: &str, title: &str| {
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "citations_delta", "citation": {
            "type": "web_search_result_location", "cited_text": "…", "url": url, "title": title,
            "encrypted_index": "EpMBCioIBxgCIiQ"
        }}})
        .to_string()
    };
    let document = json!({"type": "content_block_delta", "index": 0, "delta": {"type": "citations_delta", "citation": {
        "type": "char_location", "cited_text": "The grass is green.", "document_index": 0,
        "document_title": "Facts", "start_char_index": 0, "end_char_index": 20
    }}});
    let search_result = json!({"type": "content_block_delta", "index": 0, "delta": {"type": "citations_delta", "citation": {
        "type": "search_result_location", "cited_text": "…", "source": "https://docs.example.com/guide",
        "title": "Guide", "search_result_index": 0, "start_block_index": 0, "end_block_index": 1
    }}});
    check(
        &[
            MESSAGE_START,
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":"","citations":[]}}"#,
            &web("https://a.example/one", "One"),
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"First, "}}"#,
            &document.to_string(),
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"green; "}}"#,
            &web("https://a.example/one", "One"),
            &search_result.to_string(),
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"then more."}}"#,
            r#"{"type":"content_block_stop","index":0}"#,
            r#"{"type":"content_block_start","index":1,"content_block":{"type":"text","text":"Whole.","citations":[{"type":"web_search_result_location","cited_text":"…","url":"https://a.example/two","title":"","encrypted_index":"Eo"},{"type":"page_location","cited_text":"p","document_index":1,"start_page_number":1,"end_page_number":2}]}}"#,
            r#"{"type":"content_block_stop","index":1}"#,
            r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":9}}"#,
            r#"{"type":"message_stop"}"#,
        ],
        &[
            BrainEvent::text_delta("First, "),
            BrainEvent::Data {
                name: "anthropic.citations_delta".into(),
                data: document["delta"].clone(),
            },
            BrainEvent::text_delta("green; "),
            BrainEvent::text_delta("then more."),
            BrainEvent::source("https://a.example/one", Some("One")),
            BrainEvent::source("https://docs.example.com/guide", Some("Guide")),
            BrainEvent::text_delta("Whole."),
            BrainEvent::Data {
                name: "anthropic.citations_delta".into(),
                data: json!({"type": "citations_delta", "citation": {"type": "page_location", "cited_text": "p", "document_index": 1, "start_page_number": 1, "end_page_number": 2}}),
            },
            BrainEvent::source("https://a.example/two", None),
            BrainEvent::finish(FinishReason::Stop, Some(Usage::new(25, 9))),
        ],
    );
}

/// An `image` block (from an Anthropic-compatible server; the Messages API answers with none)
/// is a file: base64 as data, a URL as a URL.
#[test]
fn image_blocks_become_files() {
    check(
        &[
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}}}"#,
            r#"{"type":"content_block_stop","index":0}"#,
            r#"{"type":"content_block_start","index":1,"content_block":{"type":"image","source":{"type":"url","url":"https://x.example/a.gif"}}}"#,
            r#"{"type":"content_block_stop","index":1}"#,
            r#"{"type":"message_stop"}"#,
        ],
        &[
            BrainEvent::File(FilePart {
                media_type: "image/png".into(),
                source: FileSource::Data("iVBORw0KGgo=".into()),
                filename: None,
            }),
            BrainEvent::File(FilePart {
                media_type: "image/gif".into(),
                source: FileSource::Url("https://x.example/a.gif".into()),
                filename: None,
            }),
            BrainEvent::finish(FinishReason::Stop, None),
        ],
    );
}
