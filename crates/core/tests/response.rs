//! The layered response builder: what it emits is a strict, well-numbered stream, and misuse is
//! a typed error that emits nothing.

#![allow(clippy::unwrap_used)]

use agentwire_core::part::{FilePart, FileSource};
use agentwire_core::{
    Accumulator, ErrorInfo, Event, EventKind, MessageStart, Part, ResponseBuilder, ResponseError,
    Role, RunStatus, ToolResult, Usage,
};
use serde_json::json;

fn accumulate(events: &[Event]) -> Accumulator {
    let mut accumulator = Accumulator::default();
    for event in events {
        accumulator
            .push(event)
            .unwrap_or_else(|error| panic!("{event:?} does not accumulate: {error}"));
    }
    accumulator
}

/// Every kind of content the builder writes, in two messages.
fn full_response() -> Result<Vec<Event>, ResponseError> {
    let mut response = ResponseBuilder::new("run_1")
        .with_session("ses_1")
        .with_agent("custom");
    response.created()?;
    response.in_progress()?;
    let mut message = response.message(MessageStart::new("msg_1", Role::Assistant))?;
    let mut thinking = message.reasoning()?;
    thinking.delta("Look it up.")?;
    thinking.complete()?;
    let mut call = message.tool_call("tc_1", "weather")?;
    call.delta(r#"{"city":"#)?;
    call.delta(r#""Paris"}"#)?;
    call.complete()?;
    message.add_part(Part::ToolResult(ToolResult {
        tool_call_id: "tc_1".into(),
        tool_name: Some("weather".into()),
        result: json!({"sky": "clear"}),
        is_error: None,
    }))?;
    let mut text = message.text()?;
    assert_eq!(text.index(), 3);
    text.delta("Clear ")?;
    text.delta("skies.")?;
    text.complete()?;
    message.add_data("forecast", json!({"days": [1, 2]}))?;
    message.add_image_url("https://example.com/sky.png", "image/png")?;
    message.add_file(FilePart {
        media_type: "text/plain".into(),
        source: FileSource::Data("aGk=".into()),
        filename: Some("hi.txt".into()),
    })?;
    message.usage(Usage::new(10, 4));
    message.complete()?;
    let mut second = response.message(MessageStart::new("msg_2", Role::Assistant))?;
    second.add_text("Anything else?")?;
    second.usage(Usage::new(3, 2));
    second.complete()?;
    response.completed()?;
    Ok(response.drain().collect())
}

#[test]
fn a_full_response_is_a_strict_gapless_stream() -> Result<(), ResponseError> {
    let events = full_response()?;
    let seqs: Vec<u64> = events.iter().map(|event| event.seq).collect();
    assert_eq!(seqs, (1..=events.len() as u64).collect::<Vec<_>>());
    assert!(matches!(events[0].kind, EventKind::RunCreated { .. }));
    let accumulator = accumulate(&events);
    assert_eq!(accumulator.status(), Some(RunStatus::Completed));
    let messages = accumulator.messages();
    assert_eq!(messages.len(), 2);
    let first = &messages[0];
    assert_eq!(first.parts.len(), 7);
    assert_eq!(first.parts[0], Part::reasoning("Look it up."));
    assert_eq!(
        first.parts[1],
        Part::tool_call("tc_1", "weather", json!({"city": "Paris"}))
    );
    assert_eq!(first.parts[3], Part::text("Clear skies."));
    assert_eq!(first.metadata.usage, Some(Usage::new(10, 4)));
    assert_eq!(messages[1].content(), "Anything else?");
    // The run's usage is the sum of its messages', on the final status.
    let Some(EventKind::RunStatus { usage, .. }) = events.last().map(|event| &event.kind) else {
        panic!("ends with a status");
    };
    assert_eq!(*usage, Some(Usage::new(13, 6)));
    Ok(())
}

#[test]
fn statuses_only_move_forward_and_end_once() -> Result<(), ResponseError> {
    let mut response = ResponseBuilder::new("run_1");
    response.created()?;
    response.created()?; // repeating the current status is allowed and emits nothing
    response.in_progress()?;
    response.in_progress()?;
    assert_eq!(response.last_seq(), 2);
    assert_eq!(
        response.end(RunStatus::InProgress, None),
        Err(ResponseError::NotFinal {
            status: RunStatus::InProgress
        })
    );
    response.completed()?;
    let ended = Err(ResponseError::Ended {
        status: RunStatus::Completed,
    });
    assert_eq!(response.completed(), ended);
    assert_eq!(response.in_progress(), ended);
    assert_eq!(response.failed(ErrorInfo::new("x", "y")), ended);
    assert_eq!(
        response
            .message(MessageStart::new("m", Role::Assistant))
            .err(),
        Some(ResponseError::Ended {
            status: RunStatus::Completed
        })
    );
    // Nothing after the end was emitted.
    let events: Vec<Event> = response.drain().collect();
    assert_eq!(events.len(), 3);
    accumulate(&events);
    Ok(())
}

#[test]
fn a_tool_call_id_used_twice_is_an_error_and_the_stream_stays_valid() -> Result<(), ResponseError> {
    let mut response = ResponseBuilder::new("run_1");
    let mut message = response.message(MessageStart::new("m", Role::Assistant))?;
    message.tool_call("tc_1", "f")?.delta("{}")?;
    assert!(matches!(
        message.tool_call("tc_1", "f"),
        Err(ResponseError::Build(_))
    ));
    message.complete()?;
    response.completed()?;
    let accumulator = accumulate(&response.drain().collect::<Vec<_>>());
    assert_eq!(
        accumulator.messages()[0].parts,
        [Part::tool_call("tc_1", "f", json!({}))]
    );
    Ok(())
}

#[test]
fn writers_left_open_are_completed_by_what_comes_next() -> Result<(), ResponseError> {
    let mut response = ResponseBuilder::new("run_1");
    {
        let mut message = response.message(MessageStart::new("m1", Role::Assistant))?;
        message.text()?.delta("first")?; // dropped without complete
        message.text()?.delta("second")?; // a new text part: the first is completed
        // the message is dropped without complete: the next message completes it
    }
    let mut next = response.message(MessageStart::new("m2", Role::Assistant))?;
    next.reasoning()?.delta("open at the end")?;
    response.failed(ErrorInfo::new("handler_error", "gave up"))?;
    let accumulator = accumulate(&response.drain().collect::<Vec<_>>());
    assert_eq!(accumulator.status(), Some(RunStatus::Failed));
    let messages = accumulator.messages();
    assert_eq!(
        messages[0].parts,
        [Part::text("first"), Part::text("second")]
    );
    assert_eq!(messages[1].parts, [Part::reasoning("open at the end")]);
    Ok(())
}

#[test]
fn an_outlet_gets_every_event_as_it_is_made() -> Result<(), ResponseError> {
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = std::sync::Arc::clone(&seen);
    let mut response = ResponseBuilder::new("run_1").with_outlet(move |events| {
        sink.lock().unwrap().extend(events);
    });
    let mut message = response.message(MessageStart::new("m", Role::Assistant))?;
    let mut text = message.text()?;
    text.delta("a")?;
    // The delta is out before anything else happens.
    assert!(matches!(
        seen.lock().unwrap().last().map(|event| &event.kind),
        Some(EventKind::PartDelta { delta, .. }) if delta == "a"
    ));
    text.complete()?;
    message.complete()?;
    response.completed()?;
    assert_eq!(response.drain().count(), 0);
    let events = seen.lock().unwrap().clone();
    assert_eq!(accumulate(&events).status(), Some(RunStatus::Completed));
    Ok(())
}

/// AgentScope's `ContentBuilder` example: deltas, then the whole text; the text is what it says.
#[test]
fn set_text_after_deltas_completes_the_text_the_deltas_made() -> Result<(), ResponseError> {
    let mut response = ResponseBuilder::new("run_1");
    let mut message = response.message(MessageStart::new("msg_1", Role::Assistant))?;
    let mut content = message.text()?;
    content.delta("Hello")?;
    content.delta(" World")?;
    content.set_text("Hello World")?;
    content.complete()?;
    message.complete()?;
    response.completed()?;
    let events: Vec<Event> = response.drain().collect();
    let deltas: Vec<&str> = events
        .iter()
        .filter_map(|event| match &event.kind {
            EventKind::PartDelta { delta, .. } => Some(delta.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(deltas, ["Hello", " World"], "nothing more to stream");
    let accumulator = accumulate(&events);
    assert_eq!(accumulator.messages()[0].parts, [Part::text("Hello World")]);
    Ok(())
}

#[test]
fn set_text_streams_what_is_new_and_refuses_to_take_text_back() -> Result<(), ResponseError> {
    let mut response = ResponseBuilder::new("run_1");
    let mut message = response.message(MessageStart::new("msg_1", Role::Assistant))?;
    let mut content = message.text()?;
    content.set_text("Hello")?;
    content.delta(", ")?;
    content.set_text("Hello, world")?;
    assert_eq!(
        content.set_text("Goodbye"),
        Err(ResponseError::TextConflict {
            streamed: "Hello, world".into()
        })
    );
    content.complete()?;
    let mut call = message.tool_call("tc_1", "weather")?;
    call.delta(r#"{"city": "#)?;
    call.set_text(r#"{"city": "Paris"}"#)?;
    call.complete()?;
    message.complete()?;
    response.completed()?;
    let accumulator = accumulate(&response.drain().collect::<Vec<_>>());
    let parts = &accumulator.messages()[0].parts;
    assert_eq!(parts[0], Part::text("Hello, world"));
    assert!(matches!(&parts[1], Part::ToolCall(call) if call.args.0 == json!({"city": "Paris"})));
    Ok(())
}

/// AgentScope's "Data Content Building": `set_data`, then two deltas, merged.
#[test]
fn data_deltas_merge_into_the_data_set_before() -> Result<(), ResponseError> {
    let mut response = ResponseBuilder::new("run_1");
    let mut message = response.message(MessageStart::new("msg_1", Role::Assistant))?;
    let mut data = message.data("weather")?;
    data.set_data(json!({
        "type": "function_call",
        "name": "get_weather",
        "arguments": "{\"city\": \"Beijing\"}"
    }));
    data.add_data_delta(json!({"status": "processing"}));
    data.add_data_delta(json!({"result": "sunny"}));
    assert_eq!(data.complete()?, 0);
    message.complete()?;
    response.completed()?;
    let accumulator = accumulate(&response.drain().collect::<Vec<_>>());
    let Part::Data(part) = &accumulator.messages()[0].parts[0] else {
        panic!("not data: {:?}", accumulator.messages()[0].parts);
    };
    assert_eq!(part.name, "weather");
    assert_eq!(
        part.data,
        json!({
            "type": "function_call",
            "name": "get_weather",
            "arguments": "{\"city\": \"Beijing\"}",
            "status": "processing",
            "result": "sunny"
        })
    );
    Ok(())
}

/// How agentscope-runtime's `ContentBuilder` merges data deltas: AgentScope's streamed tool call
/// example, and every kind of value.
#[test]
fn data_deltas_merge_as_agentscope_merges_them() -> Result<(), ResponseError> {
    let mut response = ResponseBuilder::new("run_1");
    let mut message = response.message(MessageStart::new("msg_1", Role::Assistant))?;
    let mut call = message.data("call")?;
    call.add_data_delta(json!({"call_id": "call_1", "name": "get_weather", "arguments": ""}));
    for piece in ["{\"ci", "ty\": \"Pa", "ris\"}"] {
        call.add_data_delta(json!({ "arguments": piece }));
    }
    assert_eq!(
        call.data(),
        &json!({"call_id": "call_1", "name": "get_weather", "arguments": "{\"city\": \"Paris\"}"})
    );
    call.complete()?;
    let mut mixed = message.data("mixed")?;
    mixed.set_data(
        json!({"n": 1, "x": 0.5, "list": [1], "flag": true, "nested": {"s": "a"}, "kind": 1}),
    );
    mixed.add_data_delta(json!({"n": 2, "x": 1, "list": [2, 3], "flag": false, "nested": {"s": "b", "t": 1}, "kind": "one"}));
    assert_eq!(
        mixed.data(),
        &json!({"n": 3, "x": 1.5, "list": [1, 2, 3], "flag": false, "nested": {"s": "ab", "t": 1}, "kind": "one"})
    );
    drop(mixed); // emitted as it stands
    message.complete()?;
    response.completed()?;
    let accumulator = accumulate(&response.drain().collect::<Vec<_>>());
    let names: Vec<&str> = accumulator.messages()[0]
        .parts
        .iter()
        .filter_map(|part| match part {
            Part::Data(data) => Some(data.name.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(names, ["call", "mixed"]);
    Ok(())
}

/// AgentScope's "Multi-Content Message Building": a text set whole, then an image.
#[test]
fn a_message_of_a_text_set_whole_and_an_image() -> Result<(), ResponseError> {
    let mut response = ResponseBuilder::new("run_1");
    let mut message = response.message(MessageStart::new("msg_1", Role::Assistant))?;
    let mut text = message.text()?;
    assert_eq!(text.index(), 0);
    text.set_text("This is an image:")?;
    text.complete()?;
    assert_eq!(
        message.add_image_url("https://example.com/image.jpg", "image/jpeg")?,
        1
    );
    message.complete()?;
    response.completed()?;
    let accumulator = accumulate(&response.drain().collect::<Vec<_>>());
    let parts = &accumulator.messages()[0].parts;
    assert_eq!(parts[0], Part::text("This is an image:"));
    assert!(
        matches!(&parts[1], Part::File(file) if file.source == FileSource::Url("https://example.com/image.jpg".into()))
    );
    Ok(())
}

/// AgentScope's "Complete Usage Example" and the sequence it lists: response created, in
/// progress, the message, a delta per token, the content completed, the message, the response.
#[test]
fn generate_streaming_response_writes_the_seeds_sequence() -> Result<(), ResponseError> {
    let mut response = ResponseBuilder::new("run_1").with_session("session_123");
    let events: Vec<Event> = response
        .generate_streaming_response(
            MessageStart::new("msg_1", Role::Assistant),
            ["Hello", " ", "World", "!"],
        )?
        .collect();
    let names: Vec<&str> = events.iter().map(Event::name).collect();
    assert_eq!(
        names,
        [
            "run_created",
            "run_status",
            "message_start",
            "part_start",
            "part_delta",
            "part_delta",
            "part_delta",
            "part_delta",
            "part_complete",
            "message_complete",
            "run_status",
        ]
    );
    let accumulator = accumulate(&events);
    assert_eq!(accumulator.status(), Some(RunStatus::Completed));
    assert_eq!(
        accumulator.messages()[0].parts,
        [Part::text("Hello World!")]
    );
    assert!(matches!(
        response.generate_streaming_response(MessageStart::new("msg_2", Role::Assistant), ["x"]),
        Err(ResponseError::Ended { .. })
    ));
    Ok(())
}
