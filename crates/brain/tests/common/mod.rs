//! Helpers the provider tests share: quick retries, calling a brain and collecting what it
//! streams, and checking that dropping a stream aborts its request.

// Each test binary compiles its own copy and uses only some of these.
#![allow(dead_code)]

use std::time::Duration;

use agentwire_brain::{Brain, BrainError, BrainEvent, BrainRequest, RetryPolicy};
use agentwire_core::Message;
use agentwire_testkit::fake_provider::FakeProvider;
use futures::StreamExt;

/// Three attempts with no wait between them.
pub(crate) fn quick_retries() -> RetryPolicy {
    RetryPolicy {
        max_attempts: 3,
        initial_delay: Duration::ZERO,
        max_delay: Duration::ZERO,
    }
}

/// A one-message conversation.
pub(crate) fn hi() -> BrainRequest {
    BrainRequest::new(vec![Message::user("Hi")])
}

/// Every item of one call but the [`BrainEvent::ResponseStart`] (what the answer is made of;
/// `call_with_start` keeps it).
pub(crate) async fn call(
    brain: &dyn Brain,
    request: BrainRequest,
) -> Vec<Result<BrainEvent, BrainError>> {
    call_with_start(brain, request)
        .await
        .into_iter()
        .filter(|item| !matches!(item, Ok(BrainEvent::ResponseStart { .. })))
        .collect()
}

/// Every item of one call.
pub(crate) async fn call_with_start(
    brain: &dyn Brain,
    request: BrainRequest,
) -> Vec<Result<BrainEvent, BrainError>> {
    brain.stream(request).collect().await
}

/// Every item of one call, an error as its message, so whole calls compare.
pub(crate) async fn call_text(
    brain: &dyn Brain,
    request: BrainRequest,
) -> Vec<Result<BrainEvent, String>> {
    let items = call(brain, request).await;
    items
        .into_iter()
        .map(|item| item.map_err(|error| error.to_string()))
        .collect()
}

/// The events of a call that must succeed.
pub(crate) async fn events(brain: &dyn Brain, request: BrainRequest) -> Vec<BrainEvent> {
    let items = call(brain, request).await;
    match items.into_iter().collect() {
        Ok(events) => events,
        Err(error) => panic!("the call failed: {error}"),
    }
}

/// The items of a call that succeeds with these events.
pub(crate) fn ok(events: Vec<BrainEvent>) -> Vec<Result<BrainEvent, String>> {
    events.into_iter().map(Ok).collect()
}

/// Starts a call whose answer hangs after `first` (the fake server must have such an answer
/// queued), takes those events, drops the stream, and waits for the server to see its answer's
/// connection closed. Without the abort this would fail after 10 s.
pub(crate) async fn dropping_the_stream_aborts(
    server: &FakeProvider,
    brain: &dyn Brain,
    first: &[BrainEvent],
) {
    let mut stream = brain
        .stream(hi())
        .filter(|item| std::future::ready(!matches!(item, Ok(BrainEvent::ResponseStart { .. }))));
    for expected in first {
        match stream.next().await {
            Some(Ok(event)) => assert_eq!(&event, expected),
            other => panic!("expected {expected:?}, got {other:?}"),
        }
    }
    assert_eq!(server.aborted(), 0);
    drop(stream);
    let aborted = tokio::time::timeout(Duration::from_secs(10), server.wait_aborted(1)).await;
    assert!(aborted.is_ok(), "the request was not aborted");
}
