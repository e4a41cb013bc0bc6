//! Generation settings and client tools through every dialect's route to the provider: an
//! `openai` agent pointed at the fake provider server, and what each request made it send
//! (the native run body, AgentX's `/chat` envelope, AgentScope's `/process`, the AI SDK's
//! `/api/chat` body extras, AG-UI's `forwardedProps`). A bad value is a 400 naming the field, and nothing happens: no session,
//! no provider call.
#![allow(clippy::unwrap_used)]

mod common;

use agentwire_brain::{OpenAiBrain, OpenAiConfig, ScriptedBrain};
use agentwire_runtime::Agent;
use agentwire_server::Settings;
use agentwire_testkit::fake_openai::ChatStream;
use agentwire_testkit::fake_provider::{FakeProvider, FakeResponse};
use common::TestServer;
use serde_json::{Value, json};

fn openai(name: &str, provider: &FakeProvider, allow_model_override: bool) -> Agent {
    let mut config = OpenAiConfig::new("gpt-agent");
    config.connection.base_url = format!("{}/v1", provider.url());
    config.temperature = Some(0.7);
    Agent::builder(name)
        .brain(OpenAiBrain::new(config).unwrap())
        .allow_model_override(allow_model_override)
        .build()
        .unwrap()
}

async fn server(provider: &FakeProvider) -> TestServer {
    let scripted =
        ScriptedBrain::from_json(r#"{"turns": [[{"type": "finish", "reason": "stop"}]]}"#).unwrap();
    let agents = vec![
        openai("gpt", provider, true),
        openai("locked", provider, false),
        Agent::builder("scripted").brain(scripted).build().unwrap(),
    ];
    TestServer::start(agents, Settings::default()).await
}

/// The answer the provider gives every model call.
fn answer(provider: &FakeProvider) {
    provider.push(FakeResponse::sse(
        ChatStream::new()
            .role()
            .text("ok")
            .finish("stop")
            .done()
            .to_sse(),
    ));
}

/// The settings each test sends, and what must reach the provider for them.
fn sent() -> Value {
    json!({
        "model": "gpt-chosen", "temperature": 0.25, "top_p": 0.5, "max_tokens": 99,
        "stop": ["END"], "seed": 11, "frequency_penalty": 0.5, "presence_penalty": -0.5, "n": 1
    })
}

/// The generation keys of the provider's last request, and the names of the tools it offered.
fn provider_saw(provider: &FakeProvider) -> (Value, Vec<String>) {
    let requests = provider.requests();
    let body = &requests.last().expect("the provider was called").body;
    let keys = sent();
    let settings = keys
        .as_object()
        .unwrap()
        .keys()
        .map(|key| (key.clone(), body[key].clone()))
        .collect();
    let tools = body["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .map(|tool| tool["function"]["name"].as_str().unwrap().to_owned())
                .collect()
        })
        .unwrap_or_default();
    (settings, tools)
}

/// POSTs JSON; the status and the whole body (a stream is read to its end).
async fn post(server: &TestServer, path: &str, body: &Value) -> (u16, String) {
    let response = server.post_json(path, body).await;
    let status = response.status().as_u16();
    (status, response.text().await.unwrap())
}

/// A 400 `invalid_request` whose message names `field`.
#[track_caller]
fn refused(answer: (u16, String), field: &str) {
    let (status, body) = answer;
    assert_eq!(status, 400, "{body}");
    let error: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(error["error"]["code"], "invalid_request", "{body}");
    let message = error["error"]["message"].as_str().unwrap();
    assert!(message.contains(&format!("`{field}`")), "{message}");
}

fn with(extra: Value, mut body: Value) -> Value {
    body.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    body
}

/// No session of that id exists (a refused request made none).
async fn no_session(server: &TestServer, id: &str) {
    let session = server
        .http
        .get(server.url(&format!("/v1/sessions/{id}")))
        .send()
        .await
        .unwrap();
    assert_eq!(session.status(), 404, "a refused request made session {id}");
}

fn weather() -> Value {
    json!({"type": "function", "function": {"name": "get_weather", "description": "Weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}})
}

#[tokio::test]
async fn native_run_settings_and_tools_reach_the_provider() {
    let provider = FakeProvider::start();
    let server = server(&provider).await;
    answer(&provider);
    let body = with(
        sent(),
        json!({"agent": "gpt", "session_id": "ses_native",
               "input": [{"role": "user", "parts": [{"type": "text", "text": "Hi"}]}],
               "tools": [weather(), {"name": "get_time"}]}),
    );
    let (status, text) = post(&server, "/v1/runs", &body).await;
    assert_eq!(status, 200, "{text}");
    let run: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(run["run"]["status"], "completed", "{run}");
    assert_eq!(
        provider_saw(&provider),
        (sent(), vec!["get_weather".into(), "get_time".into()])
    );

    // The next run of the session without settings is the agent's own again.
    answer(&provider);
    let plain = json!({"agent": "gpt", "session_id": "ses_native",
        "input": [{"role": "user", "parts": [{"type": "text", "text": "Again"}]}]});
    assert_eq!(post(&server, "/v1/runs", &plain).await.0, 200);
    let (settings, _) = provider_saw(&provider);
    assert_eq!(
        (&settings["model"], &settings["temperature"]),
        (&json!("gpt-agent"), &json!(0.7))
    );

    // Refused, naming the field, and nothing happens.
    let calls = provider.requests().len();
    let fresh = |extra: Value| {
        with(
            extra,
            json!({"agent": "gpt", "session_id": "ses_refused",
                   "input": [{"role": "user", "parts": [{"type": "text", "text": "Hi"}]}]}),
        )
    };
    refused(
        post(&server, "/v1/runs", &fresh(json!({"temperature": 2.5}))).await,
        "temperature",
    );
    refused(
        post(&server, "/v1/runs", &fresh(json!({"n": 0}))).await,
        "n",
    );
    refused(
        post(
            &server,
            "/v1/runs",
            &fresh(json!({"tools": [{"description": "no name"}]})),
        )
        .await,
        "tools[0].name",
    );
    let locked = with(json!({"agent": "locked", "model": "o3"}), fresh(json!({})));
    refused(post(&server, "/v1/runs", &locked).await, "model");
    let scripted = with(json!({"agent": "scripted", "seed": 1}), fresh(json!({})));
    refused(post(&server, "/v1/runs", &scripted).await, "seed");
    assert_eq!(
        provider.requests().len(),
        calls,
        "no refused run called the provider"
    );
    no_session(&server, "ses_refused").await;
}

#[tokio::test]
async fn agentx_envelope_settings_and_tools_reach_the_provider() {
    let provider = FakeProvider::start();
    let server = server(&provider).await;
    answer(&provider);
    let body = with(
        sent(),
        json!({"session_id": "ses_agentx",
               "messages": [{"role": "user", "parts": [{"type": "text", "text": "Hi"}]}],
               "tools": [weather()]}),
    );
    let (status, text) = post(&server, "/agents/gpt/chat", &body).await;
    assert_eq!(status, 200, "{text}");
    assert!(text.contains(r#""status":"completed""#), "{text}");
    assert_eq!(
        provider_saw(&provider),
        (sent(), vec!["get_weather".into()])
    );

    let calls = provider.requests().len();
    let bad = json!({"session_id": "ses_agentx_bad", "top_p": 2,
        "messages": [{"role": "user", "parts": [{"type": "text", "text": "Hi"}]}]});
    refused(post(&server, "/agents/gpt/chat", &bad).await, "top_p");
    assert_eq!(provider.requests().len(), calls);
    no_session(&server, "ses_agentx_bad").await;
}

#[tokio::test]
async fn agentscope_request_settings_and_tools_reach_the_provider() {
    let provider = FakeProvider::start();
    let server = server(&provider).await;
    answer(&provider);
    let input =
        json!([{"role": "user", "type": "message", "content": [{"type": "text", "text": "Hi"}]}]);
    let mut body = with(
        sent(),
        json!({"input": input, "session_id": "ses_as", "tools": [weather()]}),
    );
    body["stop"] = json!("END"); // their `stop` may be one string
    let (status, text) = post(&server, "/agents/gpt/process", &body).await;
    assert_eq!(status, 200, "{text}");
    assert!(text.contains(r#""status":"completed","#), "{text}");
    assert_eq!(
        provider_saw(&provider),
        (sent(), vec!["get_weather".into()])
    );

    let calls = provider.requests().len();
    let bad = json!({"input": input, "session_id": "ses_as_bad", "top_p": 1.5});
    refused(post(&server, "/agents/gpt/process", &bad).await, "top_p");
    let bad = json!({"input": input, "tools": [{"type": "code_interpreter"}]});
    refused(
        post(&server, "/agents/gpt/process", &bad).await,
        "tools[0].type",
    );
    let bad = json!({"input": input, "model": "o3"});
    refused(post(&server, "/agents/locked/process", &bad).await, "model");
    assert_eq!(provider.requests().len(), calls);
    no_session(&server, "ses_as_bad").await;
}

#[tokio::test]
async fn ai_sdk_body_extras_reach_the_provider() {
    let provider = FakeProvider::start();
    let server = server(&provider).await;
    answer(&provider);
    let message = json!({"id": "u1", "role": "user", "parts": [{"type": "text", "text": "Hi"}]});
    // The AI SDK's own names for the settings, as an app would put them in useChat's `body`.
    let body = json!({
        "id": "chat_settings", "trigger": "submit-message", "messages": [message],
        "model": "gpt-chosen", "temperature": 0.25, "topP": 0.5, "maxOutputTokens": 99,
        "stopSequences": ["END"], "seed": 11, "frequencyPenalty": 0.5, "presencePenalty": -0.5,
        "n": 1, "tools": [weather()]
    });
    let (status, text) = post(&server, "/agents/gpt/api/chat", &body).await;
    assert_eq!(status, 200, "{text}");
    assert!(text.contains(r#""type":"finish""#), "{text}");
    assert_eq!(
        provider_saw(&provider),
        (sent(), vec!["get_weather".into()])
    );

    let calls = provider.requests().len();
    let bad = json!({"id": "chat_bad", "messages": [message], "maxOutputTokens": 0});
    refused(
        post(&server, "/agents/gpt/api/chat", &bad).await,
        "maxOutputTokens",
    );
    assert_eq!(provider.requests().len(), calls);
    no_session(&server, "chat_bad").await;
}

#[tokio::test]
async fn ag_ui_forwarded_props_reach_the_provider() {
    let provider = FakeProvider::start();
    let server = server(&provider).await;
    answer(&provider);
    let input = |thread: &str, props: Value| {
        json!({
            "threadId": thread, "runId": "r1", "state": {}, "context": [],
            "messages": [{"id": "u1", "role": "user", "content": "Hi"}],
            "tools": [{"name": "get_weather", "description": "Weather", "parameters": {"type": "object"}}],
            "forwardedProps": props
        })
    };
    let (status, text) = post(&server, "/agents/gpt/ag-ui", &input("t_settings", sent())).await;
    assert_eq!(status, 200, "{text}");
    assert!(text.contains("RUN_FINISHED"), "{text}");
    assert_eq!(
        provider_saw(&provider),
        (sent(), vec!["get_weather".into()])
    );

    let calls = provider.requests().len();
    let bad = input("t_bad", json!({"frequencyPenalty": 3}));
    refused(
        post(&server, "/agents/gpt/ag-ui", &bad).await,
        "frequencyPenalty",
    );
    assert_eq!(provider.requests().len(), calls);
    no_session(&server, "t_bad").await;
}
