//! What the layered response builder makes is encoded by every dialect, and decodes back (through
//! each dialect's decoder) to a run that accumulates strictly to the same answer.

#![allow(clippy::unwrap_used)]

mod common;

use agentwire_core::{
    Event, MessageStart, Part, ResponseBuilder, ResponseError, Role, RunStatus, Usage,
};
use agentwire_dialects::Dialect;
use common::{accumulate, decode_whole, encode};
use serde_json::json;

fn built() -> Result<Vec<Event>, ResponseError> {
    let mut response = ResponseBuilder::new("run_1").with_agent("custom");
    response.created()?;
    response.in_progress()?;
    let mut message = response.message(MessageStart::new("msg_1", Role::Assistant))?;
    let mut thinking = message.reasoning()?;
    thinking.delta("Checking.")?;
    thinking.complete()?;
    let mut text = message.text()?;
    text.delta("Hello")?;
    text.delta(", world!")?;
    text.complete()?;
    message.add_data("weather", json!({"city": "Paris"}))?;
    message.add_image_url("https://example.com/sky.png", "image/png")?;
    message.usage(Usage::new(7, 3));
    message.complete()?;
    response.completed()?;
    Ok(response.drain().collect())
}

#[test]
fn every_dialect_encodes_and_decodes_a_built_response() -> Result<(), ResponseError> {
    let events = built()?;
    let expected = accumulate(&events);
    for dialect in Dialect::ALL.iter().copied() {
        let wire = encode(dialect.encoder().as_mut(), &events);
        assert!(!wire.is_empty(), "{}: encodes", dialect.name());
        let decoded = decode_whole(dialect.decoder().as_mut(), &wire)
            .unwrap_or_else(|error| panic!("{}: decodes: {error}", dialect.name()));
        let messages = accumulate(&decoded);
        let status = decoded.iter().rev().find_map(|event| match &event.kind {
            agentwire_core::EventKind::RunStatus { status, .. } => Some(*status),
            _ => None,
        });
        assert_eq!(status, Some(RunStatus::Completed), "{}", dialect.name());
        let answer = messages
            .last()
            .unwrap_or_else(|| panic!("{}: a message", dialect.name()));
        assert_eq!(answer.content(), "Hello, world!", "{}", dialect.name());
        // The Responses API has no output item for files and data (its module docs list the
        // losses): the text and the status are what it carries.
        if dialect == Dialect::OpenAiResponses {
            continue;
        }
        assert!(
            answer
                .parts
                .iter()
                .any(|part| matches!(part, Part::File(_))),
            "{}: the image survives",
            dialect.name()
        );
        assert!(
            answer.parts.iter().any(
                |part| matches!(part, Part::Data(data) if data.data == json!({"city": "Paris"}))
            ),
            "{}: the data survives",
            dialect.name()
        );
        if matches!(dialect, Dialect::Native | Dialect::NativeNdjson) {
            assert_eq!(decoded, events, "{}: exact", dialect.name());
            assert_eq!(messages, expected);
        }
    }
    Ok(())
}
