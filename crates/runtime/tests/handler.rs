//! Agents served by a handler: their runs stream what the handler writes, end as its result
//! says, and are canceled and timed out like any run.

#![allow(clippy::unwrap_used)]

use std::time::Duration;

use agentwire_core::{Accumulator, Event, Message, RunStatus, Usage};
use agentwire_runtime::{Agent, HandlerError, HandlerRequest, Responder, RunStart};

async fn all_events(mut run: agentwire_runtime::Run) -> (Accumulator, Vec<Event>) {
    let mut client = Accumulator::default();
    let mut events = Vec::new();
    while let Some(event) = run.events.recv().await {
        client.push(&event).unwrap();
        events.push(event);
    }
    (client, events)
}

async fn counting(request: HandlerRequest, mut response: Responder) -> Result<(), HandlerError> {
    response.in_progress()?;
    let mut message = response.assistant_message()?;
    let mut text = message.text()?;
    text.delta(&format!("You said: {}", request.question()))?;
    text.complete()?;
    message.usage(Usage::new(4, 2));
    message.complete()?;
    response.completed()?;
    Ok(())
}

#[tokio::test]
async fn a_handler_run_streams_what_the_handler_writes() {
    let agent = Agent::builder("counter").handler(counting).build().unwrap();
    assert_eq!(agent.describe(), "handler");
    assert!(agent.brain().is_none());
    let run = agent
        .start(RunStart::new(vec![Message::user("hi")]).with_session("ses_1"))
        .unwrap();
    let handle = run.handle.clone();
    let (client, events) = all_events(run).await;
    assert_eq!(client.status(), Some(RunStatus::Completed));
    assert_eq!(client.messages()[0].content(), "You said: hi");
    assert_eq!(
        client.messages()[0].metadata.agent_name.as_deref(),
        Some("counter")
    );
    assert_eq!(events[0].seq, 1);
    // The handle agrees with the stream.
    assert_eq!(handle.status(), RunStatus::Completed);
    assert_eq!(handle.usage(), Some(Usage::new(4, 2)));
    assert_eq!(handle.output(), client.messages());
    assert_eq!(handle.messages().len(), 2, "the input, then the answer");
}

#[tokio::test]
async fn a_handler_error_fails_the_run_and_keeps_what_was_written() {
    let agent = Agent::builder("flaky")
        .handler(
            |_request: HandlerRequest, mut response: Responder| async move {
                let mut message = response.assistant_message()?;
                message.text()?.delta("partial")?;
                Err(HandlerError::new(
                    "upstream_down",
                    "the upstream did not answer",
                ))
            },
        )
        .build()
        .unwrap();
    let run = agent
        .start(RunStart::new(vec![Message::user("hi")]))
        .unwrap();
    let handle = run.handle.clone();
    let (client, _) = all_events(run).await;
    assert_eq!(client.status(), Some(RunStatus::Failed));
    assert_eq!(client.messages()[0].content(), "partial");
    assert_eq!(handle.error().unwrap().code, "upstream_down");
}

/// Writes a word, then waits far longer than any test.
async fn slow(_request: HandlerRequest, mut response: Responder) -> Result<(), HandlerError> {
    let mut message = response.assistant_message()?;
    let mut text = message.text()?;
    text.delta("working")?;
    tokio::time::sleep(Duration::from_secs(3600)).await;
    text.delta(" never")?;
    Ok(())
}

#[tokio::test]
async fn cancel_drops_the_handler_and_ends_the_run_canceled() {
    let agent = Agent::builder("slow").handler(slow).build().unwrap();
    let mut run = agent
        .start(RunStart::new(vec![Message::user("hi")]))
        .unwrap();
    let handle = run.handle.clone();
    // Wait for the first delta, then cancel.
    let mut client = Accumulator::default();
    while let Some(event) = run.events.recv().await {
        client.push(&event).unwrap();
        if event.name() == "part_delta" {
            break;
        }
    }
    handle
        .cancel()
        .expect("the schema allows the client's cancel");
    tokio::time::timeout(Duration::from_secs(5), async {
        while let Some(event) = run.events.recv().await {
            client.push(&event).unwrap();
        }
    })
    .await
    .expect("the run ends at once");
    assert_eq!(client.status(), Some(RunStatus::Canceled));
    assert_eq!(handle.status(), RunStatus::Canceled);
    assert_eq!(handle.output()[0].content(), "working");
}

#[tokio::test(start_paused = true)]
async fn max_duration_ends_a_handler_run_incomplete() {
    let agent = Agent::builder("slow")
        .handler(slow)
        .max_duration(Duration::from_secs(2))
        .build()
        .unwrap();
    let run = agent
        .start(RunStart::new(vec![Message::user("hi")]))
        .unwrap();
    let handle = run.handle.clone();
    let (client, _) = all_events(run).await;
    assert_eq!(client.status(), Some(RunStatus::Incomplete));
    assert_eq!(handle.error().unwrap().code, "max_duration");
    assert_eq!(client.messages()[0].content(), "working");
}

#[tokio::test]
async fn an_agent_needs_a_brain_or_a_handler() {
    assert!(Agent::builder("nothing").build().is_err());
}

/// Answers with the temperature the client asked for.
async fn echo_temperature(
    request: HandlerRequest,
    mut response: Responder,
) -> Result<(), HandlerError> {
    let mut message = response.assistant_message()?;
    let mut text = message.text()?;
    text.delta(&format!("{:?}", request.settings.temperature))?;
    text.complete()?;
    message.complete()?;
    response.completed()?;
    Ok(())
}

#[tokio::test]
async fn a_handler_gets_the_runs_generation_settings_and_bad_ones_start_nothing() {
    let agent = Agent::builder("echo")
        .handler(echo_temperature)
        .build()
        .unwrap();
    let settings = |temperature: f64| agentwire_core::GenerationSettings {
        temperature: Some(temperature),
        ..Default::default()
    };
    let run = agent
        .start(RunStart::new(vec![Message::user("hi")]).with_settings(settings(0.5)))
        .unwrap();
    let (client, _) = all_events(run).await;
    assert_eq!(client.messages()[0].content(), "Some(0.5)");
    let refused =
        agent.start(RunStart::new(vec![Message::user("hi")]).with_settings(settings(3.0)));
    assert!(refused.is_err(), "a temperature of 3 is out of range");
}
