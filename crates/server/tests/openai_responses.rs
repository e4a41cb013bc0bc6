//! The Responses API routes through the live server (`dialects/openai_responses.rs`), read as raw
//! HTTP: a streamed response (semantic events with gapless sequence numbers), one as JSON,
//! `previous_response_id` over three turns in one session, `background` with `GET` polled until
//! it settles, a stream cut short and resumed `starting_after` the last event seen, `cancel`,
//! and an unknown model as OpenAI's 404. The official SDKs drive the same routes in
//! `peers/openai` and `peers/openai-python`.

#![allow(clippy::unwrap_used)]

mod common;

use std::collections::HashSet;
use std::time::Duration;

use agentwire_dialects::sse::{SseFrame, SseReader};
use agentwire_server::Settings;
use common::{TestServer, talker};
use serde_json::{Value, json};

const WORDS: &[&str] = &["Hello", " from", " the", " responses", " route."];

async fn server() -> TestServer {
    let slow: Vec<&str> = (0..40).map(|_| "w ").collect();
    TestServer::start(
        vec![talker("talker", WORDS, 0.0), talker("slow", &slow, 40.0)],
        Settings {
            addr: "127.0.0.1:0".parse().unwrap(),
            ..Settings::default()
        },
    )
    .await
}

/// The SSE events of a response body: (type, data), read to the end.
async fn events_of(response: reqwest::Response) -> Vec<(String, Value)> {
    let mut stream = Events::new(response);
    while stream.next_chunk().await {}
    stream.events
}

/// A response's SSE events as they arrive.
struct Events {
    response: reqwest::Response,
    reader: SseReader,
    events: Vec<(String, Value)>,
}

impl Events {
    fn new(response: reqwest::Response) -> Self {
        assert_eq!(response.status(), 200);
        let content_type = response.headers()["content-type"].to_str().unwrap();
        assert!(
            content_type.starts_with("text/event-stream"),
            "{content_type}"
        );
        Self {
            response,
            reader: SseReader::default(),
            events: Vec::new(),
        }
    }

    /// Reads one chunk; false at the end.
    async fn next_chunk(&mut self) -> bool {
        let chunk = tokio::time::timeout(Duration::from_secs(10), self.response.chunk())
            .await
            .expect("a chunk within 10 s")
            .unwrap();
        let Some(chunk) = chunk else { return false };
        let mut frames: Vec<SseFrame> = Vec::new();
        self.reader.feed(&chunk, &mut frames).unwrap();
        for frame in frames {
            if frame.data.is_empty() {
                continue;
            }
            let data: Value = serde_json::from_str(&frame.data).unwrap();
            let kind = data["type"].as_str().unwrap().to_owned();
            assert_eq!(frame.event.as_deref(), Some(kind.as_str()));
            self.events.push((kind, data));
        }
        true
    }
}

/// The sequence numbers of `events`, checked gapless from `first`.
#[track_caller]
fn check_gapless(events: &[(String, Value)], first: u64) {
    let numbers: Vec<u64> = events
        .iter()
        .map(|(_, data)| data["sequence_number"].as_u64().unwrap())
        .collect();
    let expect: Vec<u64> = (first..first + numbers.len() as u64).collect();
    assert_eq!(numbers, expect);
}

/// The text the `response.output_text.delta` events carry.
fn text_of(events: &[(String, Value)]) -> String {
    events
        .iter()
        .filter(|(kind, _)| kind == "response.output_text.delta")
        .map(|(_, data)| data["delta"].as_str().unwrap())
        .collect()
}

/// The text of a response object's `output_text` contents (what the SDKs call `output_text`).
fn output_text(response: &Value) -> String {
    response["output"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|item| item["type"] == "message")
        .flat_map(|item| item["content"].as_array().unwrap())
        .filter(|content| content["type"] == "output_text")
        .map(|content| content["text"].as_str().unwrap())
        .collect()
}

async fn create(server: &TestServer, body: Value) -> reqwest::Response {
    server.post_json("/v1/responses", &body).await
}

async fn get_json(server: &TestServer, path: &str) -> Value {
    let response = server.http.get(server.url(path)).send().await.unwrap();
    assert_eq!(response.status(), 200, "{path}");
    response.json().await.unwrap()
}

#[tokio::test]
async fn a_streamed_response_is_semantic_events_numbered_without_gaps() {
    let server = server().await;
    let response = create(
        &server,
        json!({"model": "talker", "input": "hi", "stream": true}),
    )
    .await;
    let events = events_of(response).await;
    check_gapless(&events, 0);
    let kinds: Vec<&str> = events.iter().map(|(kind, _)| kind.as_str()).collect();
    assert_eq!(kinds[0], "response.created");
    assert_eq!(kinds.last(), Some(&"response.completed"));
    assert!(kinds.contains(&"response.output_item.added"));
    assert!(kinds.contains(&"response.output_text.done"));
    assert_eq!(text_of(&events), WORDS.concat());
    let completed = &events.last().unwrap().1["response"];
    assert_eq!(completed["status"], "completed");
    assert_eq!(completed["model"], "talker");
    assert_eq!(completed["usage"]["input_tokens"], 3);
    server.shutdown().await;
}

#[tokio::test]
async fn a_response_without_a_stream_is_the_settled_object() {
    let server = server().await;
    let response = create(&server, json!({"model": "talker", "input": "hi"})).await;
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["object"], "response");
    assert_eq!(body["status"], "completed");
    assert_eq!(output_text(&body), WORDS.concat());
    // The same object is there to read again.
    let again = get_json(
        &server,
        &format!("/v1/responses/{}", body["id"].as_str().unwrap()),
    )
    .await;
    assert_eq!(again["id"], body["id"]);
    assert_eq!(again["status"], "completed");
    server.shutdown().await;
}

#[tokio::test]
async fn previous_response_id_chains_three_turns_in_one_session() {
    let server = server().await;
    let mut previous: Option<String> = None;
    let mut ids = Vec::new();
    for text in ["one", "two", "three"] {
        let mut body = json!({"model": "talker", "input": text});
        if let Some(previous) = &previous {
            body["previous_response_id"] = json!(previous);
        }
        let response: Value = create(&server, body).await.json().await.unwrap();
        assert_eq!(response["status"], "completed", "{response}");
        assert_eq!(
            response["previous_response_id"],
            previous.clone().map_or(Value::Null, Value::from)
        );
        let id = response["id"].as_str().unwrap().to_owned();
        ids.push(id.clone());
        previous = Some(id);
    }
    let mut sessions = HashSet::new();
    for id in &ids {
        let run = get_json(&server, &format!("/v1/runs/{id}")).await;
        sessions.insert(run["run"]["session_id"].as_str().unwrap().to_owned());
    }
    assert_eq!(sessions.len(), 1);
    let session = sessions.into_iter().next().unwrap();
    let session = get_json(&server, &format!("/v1/sessions/{session}")).await;
    let roles: Vec<&str> = session["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|message| message["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        [
            "user",
            "assistant",
            "user",
            "assistant",
            "user",
            "assistant"
        ]
    );
    let questions: Vec<String> = session["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|message| message["role"] == "user")
        .map(common::text_of)
        .collect();
    assert_eq!(questions, ["one", "two", "three"]);
    server.shutdown().await;
}

#[tokio::test]
async fn a_background_response_is_polled_until_it_completes() {
    let server = server().await;
    let response = create(
        &server,
        json!({"model": "slow", "input": "go", "background": true}),
    )
    .await;
    let queued: Value = response.json().await.unwrap();
    assert_eq!(queued["background"], true);
    assert!(
        ["queued", "in_progress"].contains(&queued["status"].as_str().unwrap()),
        "{queued}"
    );
    let path = format!("/v1/responses/{}", queued["id"].as_str().unwrap());
    let mut polls = 0;
    let done = loop {
        let now = get_json(&server, &path).await;
        if now["status"] == "completed" {
            break now;
        }
        assert!(
            ["queued", "in_progress"].contains(&now["status"].as_str().unwrap()),
            "{now}"
        );
        polls += 1;
        assert!(polls < 400, "still {} after {polls} polls", now["status"]);
        tokio::time::sleep(Duration::from_millis(25)).await;
    };
    assert!(polls > 0, "a paced run is not done at once");
    assert_eq!(output_text(&done), "w ".repeat(40));
    server.shutdown().await;
}

#[tokio::test]
async fn a_stream_cut_short_resumes_starting_after_the_last_event_seen() {
    let server = server().await;
    let response = create(
        &server,
        json!({"model": "slow", "input": "go", "stream": true}),
    )
    .await;
    let mut stream = Events::new(response);
    while stream.events.len() < 8 {
        assert!(stream.next_chunk().await, "the stream ended early");
    }
    // The client goes away mid-answer; the run goes on.
    let seen = stream.events;
    drop(stream.response);
    let id = seen[0].1["response"]["id"].as_str().unwrap().to_owned();
    let last = seen.last().unwrap().1["sequence_number"].as_u64().unwrap();
    let resumed = server
        .http
        .get(server.url(&format!(
            "/v1/responses/{id}?stream=true&starting_after={last}"
        )))
        .send()
        .await
        .unwrap();
    let rest = events_of(resumed).await;
    check_gapless(&rest, last + 1);
    assert_eq!(rest.last().unwrap().0, "response.completed");
    let whole: Vec<(String, Value)> = seen.into_iter().chain(rest).collect();
    check_gapless(&whole, 0);
    assert_eq!(text_of(&whole), "w ".repeat(40));
    server.shutdown().await;
}

#[tokio::test]
async fn cancel_answers_the_cancelled_response() {
    let server = server().await;
    let queued: Value = create(
        &server,
        json!({"model": "slow", "input": "go", "background": true}),
    )
    .await
    .json()
    .await
    .unwrap();
    let id = queued["id"].as_str().unwrap();
    let response = server
        .post_json(&format!("/v1/responses/{id}/cancel"), &json!({}))
        .await;
    assert_eq!(response.status(), 200);
    let canceled: Value = response.json().await.unwrap();
    assert_eq!(canceled["id"], id);
    assert_eq!(canceled["status"], "cancelled");
    let after = get_json(&server, &format!("/v1/responses/{id}")).await;
    assert_eq!(after["status"], "cancelled");
    server.shutdown().await;
}

#[tokio::test]
async fn an_unknown_model_is_openais_404() {
    let server = server().await;
    let response = create(&server, json!({"model": "nobody", "input": "hi"})).await;
    assert_eq!(response.status(), 404);
    let body: Value = response.json().await.unwrap();
    let error = &body["error"];
    assert_eq!(error["code"], "model_not_found");
    assert_eq!(error["param"], "model");
    assert_eq!(error["type"], "invalid_request_error");
    assert!(error["message"].as_str().unwrap().contains("nobody"));
    let missing = server
        .http
        .get(server.url("/v1/responses/run_nothing"))
        .send()
        .await
        .unwrap();
    assert_eq!(missing.status(), 404);
    let body: Value = missing.json().await.unwrap();
    assert_eq!(body["error"]["type"], "invalid_request_error");
    server.shutdown().await;
}

#[tokio::test]
async fn a_huge_previous_response_id_and_a_wrong_method_have_a_code_and_a_message() {
    let server = server().await;
    let previous = "r".repeat(100_000);
    let body = json!({"input": "hi", "previous_response_id": previous});
    let response = create(&server, body).await;
    assert_eq!(response.status(), 404);
    let body: Value = response.json().await.unwrap();
    let error = &body["error"];
    assert_eq!(
        (&error["code"], &error["param"], &error["type"]),
        (
            &json!("not_found"),
            &json!("previous_response_id"),
            &json!("invalid_request_error")
        )
    );
    // The id is named, not repeated whole.
    let message = error["message"].as_str().unwrap();
    assert!(message.starts_with("Response with id 'rrr"), "{message}");
    assert!(message.len() < 300, "{}", message.len());

    let response = server
        .http
        .get(server.url("/v1/responses"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 405);
    assert!(response.headers().contains_key("allow"));
    let body: Value = response.json().await.unwrap();
    let error = &body["error"];
    assert_eq!(error["code"], "method_not_allowed");
    assert_eq!(error["type"], "invalid_request_error");
    assert!(!error["message"].as_str().unwrap().is_empty());
    server.shutdown().await;
}
