//! The communication schema governs the session (a schema's "run" is the whole conversation):
//! its state is stored with the session and survives a restart, every message is checked
//! against it, the client's cancel is one of its messages, the A2A card publishes it, and a
//! user message may carry what the agent's model reads (an image).
#![allow(clippy::unwrap_used)]

mod common;

use agentwire_brain::ScriptedBrain;
use agentwire_core::communication::CommunicationSchema;
use agentwire_runtime::{Agent, AgentConfig};
use agentwire_server::Settings;
use agentwire_testkit::fake_openai::ChatStream;
use agentwire_testkit::fake_provider::{FakeProvider, FakeResponse};
use common::{SseClient, TestServer, run_body, talker};
use serde_json::{Value, json};

/// An agent answering each run with `words` under `schema`.
fn agent_with(name: &str, schema: CommunicationSchema, words: &[&str], pace: f64) -> Agent {
    let mut turn: Vec<Value> = words
        .iter()
        .map(|word| json!({"type": "text_delta", "text": word}))
        .collect();
    turn.push(json!({"type": "finish", "reason": "stop"}));
    let script = json!({"turns": vec![Value::Array(turn); 8]});
    let brain = ScriptedBrain::from_json(&script.to_string())
        .unwrap()
        .with_tokens_per_second(pace);
    Agent::builder(name)
        .brain(brain)
        .schema(schema)
        .build()
        .unwrap()
}

/// The one-shot researcher: one question, one answer, then `done`.
fn researcher() -> Agent {
    agent_with(
        "researcher",
        CommunicationSchema::one_shot(),
        &["found ", "it"],
        0.0,
    )
}

/// `POST /v1/runs` (JSON answer: the run has settled) in `session`: the status and body.
async fn ask(server: &TestServer, agent: &str, session: &str, text: &str) -> (u16, Value) {
    let mut body = run_body(Some(agent), text);
    body["session_id"] = json!(session);
    let response = server.post_json("/v1/runs", &body).await;
    (response.status().as_u16(), response.json().await.unwrap())
}

async fn get_json(server: &TestServer, path: &str) -> (u16, Value) {
    let response = server.http.get(server.url(path)).send().await.unwrap();
    (response.status().as_u16(), response.json().await.unwrap())
}

/// The session's schema state, as `GET /v1/sessions/{id}` shows it.
async fn session_state(server: &TestServer, session: &str) -> Value {
    let (status, body) = get_json(server, &format!("/v1/sessions/{session}")).await;
    assert_eq!(status, 200, "{body}");
    body["state"].clone()
}

#[track_caller]
fn check_refused(status: u16, body: &Value, says: &str) {
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["error"]["code"], "input_refused", "{body}");
    assert_eq!(body["error"]["message"], says, "{body}");
}

/// Asks the researcher once in `session`, checks the session is `done`, restarts the server on
/// the same store, and checks the second question is refused there.
async fn one_shot_across_a_restart(settings: impl Fn() -> Settings, session: &str) {
    let first = TestServer::start(vec![researcher()], settings()).await;
    let (status, run) = ask(&first, "researcher", session, "what is it?").await;
    assert_eq!(status, 200, "{run}");
    assert_eq!(run["run"]["status"], "completed");
    assert_eq!(session_state(&first, session).await, "done");
    let (status, body) = ask(&first, "researcher", session, "and more?").await;
    check_refused(status, &body, "in state 'done' nothing may be sent");
    first.shutdown().await;

    let second = TestServer::start(vec![researcher()], settings()).await;
    assert_eq!(session_state(&second, session).await, "done");
    let (status, body) = ask(&second, "researcher", session, "still there?").await;
    check_refused(status, &body, "in state 'done' nothing may be sent");
    // The refused questions left nothing in the session.
    let (_, stored) = get_json(&second, &format!("/v1/sessions/{session}")).await;
    assert_eq!(stored["messages"].as_array().unwrap().len(), 2);
    // A new session starts in idle.
    let (status, _) = ask(&second, "researcher", &format!("{session}_2"), "again").await;
    assert_eq!(status, 200);
    second.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_one_shot_session_refuses_a_second_question_also_after_a_restart_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let settings = || Settings {
        database_url: Some(format!("sqlite://{}", dir.path().join("aw.db").display())),
        ..Settings::default()
    };
    one_shot_across_a_restart(settings, "ses_research").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_one_shot_session_refuses_a_second_question_also_after_a_restart_on_postgres() {
    let url = agentwire_testkit::postgres::required_schema_url().await;
    let settings = || Settings {
        database_url: Some(url.clone()),
        ..Settings::default()
    };
    one_shot_across_a_restart(settings, "ses_research").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_dialect_is_held_to_the_sessions_state() {
    let server = TestServer::start(vec![researcher()], Settings::default()).await;
    let (status, _) = ask(&server, "researcher", "ses_dialects", "first").await;
    assert_eq!(status, 200);
    // AgentX's POST /chat names the session in its envelope; the same refusal.
    let response = server
        .post_json(
            "/agents/researcher/chat",
            &json!({"session_id": "ses_dialects", "messages": [{"role": "user", "content": "second"}]}),
        )
        .await;
    let status = response.status().as_u16();
    let body: Value = response.json().await.unwrap();
    check_refused(status, &body, "in state 'done' nothing may be sent");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_clients_cancel_is_refused_where_the_schema_does_not_allow_it() {
    let words: Vec<&str> = std::iter::repeat_n("tick ", 200).collect();
    let server = TestServer::start(
        vec![
            agent_with("chatter", CommunicationSchema::chat(), &words, 50.0),
            talker("assistant", &words, 50.0),
        ],
        Settings::default(),
    )
    .await;

    // The chat built-in has no cancel.
    let mut chat = server.post_sse(&run_body(Some("chatter"), "talk")).await;
    chat.until_events(3).await;
    let id = run_id(&chat);
    let response = server
        .post_json(&format!("/v1/runs/{id}/cancel"), &json!({}))
        .await;
    let status = response.status().as_u16();
    let body: Value = response.json().await.unwrap();
    check_refused(
        status,
        &body,
        "in state 'running' the client may not send cancel; allowed: server agent_message",
    );
    let (_, run) = get_json(&server, &format!("/v1/runs/{id}")).await;
    assert_eq!(run["run"]["status"], "in_progress", "{run}");

    // The default schema allows it while the agent works, and the session goes back to idle.
    let mut body = run_body(Some("assistant"), "talk");
    body["session_id"] = json!("ses_stop");
    let mut stream = server.post_sse(&body).await;
    stream.until_events(3).await;
    let id = run_id(&stream);
    let response = server
        .post_json(&format!("/v1/runs/{id}/cancel"), &json!({}))
        .await;
    assert_eq!(response.status().as_u16(), 202);
    stream.until_end().await;
    let (_, run) = get_json(&server, &format!("/v1/runs/{id}")).await;
    assert_eq!(run["run"]["status"], "canceled", "{run}");
    assert_eq!(session_state(&server, "ses_stop").await, "idle");
    server.shutdown().await;
}

/// The id of the run a `POST /v1/runs` stream is of.
fn run_id(stream: &SseClient) -> String {
    stream.response.headers()["x-agentwire-run-id"]
        .to_str()
        .unwrap()
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_a2a_agent_card_publishes_the_schema() {
    let server = TestServer::start(vec![researcher()], Settings::default()).await;
    let (status, card) = get_json(&server, "/agents/researcher/.well-known/agent-card.json").await;
    assert_eq!(status, 200, "{card}");
    let extensions = card["capabilities"]["extensions"].as_array().unwrap();
    assert_eq!(extensions.len(), 1, "{card}");
    let extension = &extensions[0];
    assert_eq!(
        extension["uri"],
        "https://agentwire.dev/extensions/communication-schema/v1"
    );
    assert_eq!(extension["required"], false);
    assert_eq!(
        extension["params"]["schema"],
        serde_json::to_value(CommunicationSchema::one_shot()).unwrap()
    );
    server.shutdown().await;
}

/// A one-pixel PNG.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_default_agent_takes_an_image_to_its_model() {
    let provider = FakeProvider::start();
    provider.push(FakeResponse::sse(
        ChatStream::new()
            .role()
            .text("A single pixel.")
            .finish("stop")
            .done()
            .to_sse(),
    ));
    let dir = tempfile::tempdir().unwrap();
    let env = |name: &str| (name == "OPENAI_API_KEY").then(|| "sk-test".to_owned());
    let config = AgentConfig {
        base_url: Some(format!("{}/v1", provider.url())),
        ..AgentConfig::default_assistant(env)
    };
    let assistant = config.build(dir.path(), env).await.unwrap();
    let server = TestServer::start(vec![assistant], Settings::default()).await;

    let body = json!({"input": [{"role": "user", "parts": [
        {"type": "text", "text": "what is this"},
        {"type": "file", "media_type": "image/png", "data": PNG, "filename": "pixel.png"}
    ]}]});
    let response = server.post_json("/v1/runs", &body).await;
    let status = response.status().as_u16();
    let run: Value = response.json().await.unwrap();
    assert_eq!(status, 200, "{run}");
    assert_eq!(run["run"]["status"], "completed", "{run}");

    let sent = &provider.requests()[0].body;
    let user = sent["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|message| message["role"] == "user")
        .unwrap();
    assert_eq!(
        user["content"][0],
        json!({"type": "text", "text": "what is this"})
    );
    assert_eq!(user["content"][1]["type"], "image_url");
    assert_eq!(
        user["content"][1]["image_url"]["url"],
        format!("data:image/png;base64,{PNG}")
    );

    // A type the agent's model does not read is refused, naming what is allowed.
    let pdf = json!({"input": [{"role": "user", "parts": [
        {"type": "text", "text": "read this"},
        {"type": "file", "media_type": "application/pdf", "data": "JVBERi0="}
    ]}]});
    let response = server.post_json("/v1/runs", &pdf).await;
    let status = response.status().as_u16();
    let body: Value = response.json().await.unwrap();
    check_refused(
        status,
        &body,
        "in state 'idle' user_message may not include application/pdf; allowed: text/plain, image/*",
    );
    assert_eq!(provider.requests().len(), 1);
    server.shutdown().await;
}

/// The long-running agent: started by a question, it keeps the word, so each step it
/// reports is a message of its own in the stream and the session, and the session stays
/// `running`, where the client may say nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_running_agent_sends_several_messages_in_one_turn() {
    let call = |id: &str| {
        [
            json!({"type": "tool_call_start", "id": id, "name": "look"}),
            json!({"type": "tool_call_delta", "id": id, "args": "{}"}),
            json!({"type": "tool_call_end", "id": id}),
        ]
    };
    let step = |text: &str, id: &str| {
        let mut events = vec![json!({"type": "text_delta", "text": text})];
        events.extend(call(id));
        events.push(json!({"type": "finish", "reason": "tool_calls"}));
        Value::Array(events)
    };
    let script = json!({"turns": [
        step("Looking at the files.", "c1"),
        step("Looking again.", "c2"),
        [{"type": "text_delta", "text": "Nothing changed."}, {"type": "finish", "reason": "stop"}],
    ]});
    /// No arguments.
    #[derive(serde::Deserialize, agentwire_tools::JsonSchema)]
    #[schemars(crate = "agentwire_tools::schemars")]
    struct Nothing {}
    let look = agentwire_tools::FnTool::new("look", "Looks at the files", |_: Nothing, _| async {
        Ok("no change")
    });
    let watcher = Agent::builder("watcher")
        .brain(ScriptedBrain::from_json(&script.to_string()).unwrap())
        .schema(CommunicationSchema::long_running())
        .tool(look)
        .build()
        .unwrap();
    let server = TestServer::start(vec![watcher], Settings::default()).await;
    let (status, run) = ask(&server, "watcher", "ses_watch", "watch the files").await;
    assert_eq!(status, 200, "{run}");
    assert_eq!(run["run"]["status"], "completed", "{run}");
    let (_, stored) = get_json(&server, "/v1/sessions/ses_watch").await;
    let texts: Vec<&str> = stored["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|message| message["role"] == "assistant")
        .map(|message| {
            message["parts"]
                .as_array()
                .unwrap()
                .iter()
                .find(|part| part["type"] == "text")
                .and_then(|part| part["text"].as_str())
                .unwrap()
        })
        .collect();
    assert_eq!(
        texts,
        [
            "Looking at the files.",
            "Looking again.",
            "Nothing changed."
        ]
    );
    assert_eq!(session_state(&server, "ses_watch").await, "running");
    let (status, body) = ask(&server, "watcher", "ses_watch", "stop it").await;
    check_refused(
        status,
        &body,
        "in state 'running' the client may not send user_message; allowed: server agent_message",
    );
    server.shutdown().await;
}
