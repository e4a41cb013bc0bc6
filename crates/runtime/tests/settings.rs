//! A run's generation settings: they go with every model call of the run to the provider (the
//! OpenAI adapter against the fake provider server), over the agent's configured defaults; more
//! than one choice (`n`) keeps the others beside the answer; what an agent or its brain cannot
//! take is refused before anything starts, naming the field.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::Path;

use agentwire_brain::{OpenAiBrain, OpenAiConfig};
use agentwire_core::{GenerationSettings, Message, Part, RunStatus, Timestamp};
use agentwire_runtime::config::AgentsFile;
use agentwire_runtime::{Agent, FixedClock, RunStart, SequentialIds, StartError};
use agentwire_testkit::fake_openai::ChatStream;
use agentwire_testkit::fake_provider::{FakeProvider, FakeResponse};
use common::{Client, Recording, agent, answer, tool};
use futures::FutureExt;
use serde_json::json;

fn openai_agent(server: &FakeProvider, allow_model_override: bool) -> Agent {
    let mut config = OpenAiConfig::new("gpt-test");
    config.connection.base_url = format!("{}/v1", server.url());
    config.temperature = Some(0.7);
    config.max_tokens = Some(1000);
    let now = tool("now", json!({"type": "object"}), |_, _| {
        async { Ok(json!("noon")) }.boxed()
    });
    Agent::builder("assistant")
        .brain(OpenAiBrain::new(config).unwrap())
        .tool(now)
        .allow_model_override(allow_model_override)
        .ids(SequentialIds::default())
        .clock(FixedClock(Timestamp(0)))
        .build()
        .unwrap()
}

fn settings() -> GenerationSettings {
    GenerationSettings {
        model: Some("gpt-4.1-mini".into()),
        temperature: Some(0.0),
        top_p: Some(0.25),
        max_tokens: Some(64),
        stop: vec!["###".into()],
        seed: Some(7),
        frequency_penalty: Some(0.5),
        presence_penalty: Some(-0.5),
        n: Some(2),
    }
}

/// What the run's settings make of every Chat Completions request.
fn sent_settings(body: &serde_json::Value) -> serde_json::Value {
    let keys = [
        "model",
        "temperature",
        "top_p",
        "max_tokens",
        "stop",
        "seed",
        "frequency_penalty",
        "presence_penalty",
        "n",
    ];
    keys.iter()
        .map(|key| (key.to_string(), body[*key].clone()))
        .collect()
}

#[tokio::test]
async fn every_model_call_of_the_run_carries_its_settings() {
    let server = FakeProvider::start();
    server.push(FakeResponse::sse(
        ChatStream::new()
            .tool_call(0, "call_1", "now")
            .arguments(0, "{}")
            .finish("tool_calls")
            .done()
            .to_sse(),
    ));
    // The second call answers with two choices: the first is the answer, the other is kept.
    let chunk = |choices: serde_json::Value| format!("data: {}\n\n", json!({"choices": choices}));
    server.push(FakeResponse::sse(
        [
            chunk(json!([{"index": 0, "delta": {"content": "It is noon."}},
                         {"index": 1, "delta": {"content": "Noon."}, "finish_reason": "stop"}])),
            chunk(json!([{"index": 0, "delta": {}, "finish_reason": "stop"}])),
            "data: [DONE]\n\n".to_owned(),
        ]
        .concat(),
    ));
    let agent = openai_agent(&server, true);
    let run = agent
        .start(RunStart::new(vec![Message::user("Time?")]).with_settings(settings()))
        .unwrap();
    let mut client = Client::new(run.events);
    assert_eq!(client.until_end().await, RunStatus::Completed);
    client.check_agrees_with(&run.handle);

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let expected = json!({
        "model": "gpt-4.1-mini", "temperature": 0.0, "top_p": 0.25, "max_tokens": 64,
        "stop": ["###"], "seed": 7, "frequency_penalty": 0.5, "presence_penalty": -0.5, "n": 2
    });
    for request in &requests {
        assert_eq!(sent_settings(&request.body), expected);
    }
    let output = run.handle.output();
    assert_eq!(output[0].content(), "It is noon.");
    let other = output[0]
        .parts
        .iter()
        .find_map(|part| match part {
            Part::Data(data) if data.name == "openai.choice" => Some(data.data.clone()),
            _ => None,
        })
        .expect("the second choice is kept");
    assert_eq!(other["content"], "Noon.");

    // A run without settings sends the agent's.
    server.push(FakeResponse::sse(
        ChatStream::new().text("Hi").finish("stop").done().to_sse(),
    ));
    let run = agent
        .start(RunStart::new(vec![Message::user("Hi")]))
        .unwrap();
    assert_eq!(
        Client::new(run.events).until_end().await,
        RunStatus::Completed
    );
    let body = &server.requests()[2].body;
    assert_eq!(
        sent_settings(body),
        json!({"model": "gpt-test", "temperature": 0.7, "top_p": null, "max_tokens": 1000,
               "stop": null, "seed": null, "frequency_penalty": null, "presence_penalty": null,
               "n": null})
    );
}

#[tokio::test]
async fn what_cannot_be_used_is_refused_before_anything_starts() {
    let server = FakeProvider::start();
    let refusal = |agent: &Agent, settings: GenerationSettings| match agent
        .start(RunStart::new(vec![Message::user("Hi")]).with_settings(settings))
    {
        Err(StartError::Setting(field)) => (field.field.clone(), field.to_string()),
        other => panic!("expected a refused setting, got {other:?}"),
    };
    let locked = openai_agent(&server, false);
    assert_eq!(
        refusal(
            &locked,
            GenerationSettings {
                model: Some("gpt-5".into()),
                ..Default::default()
            }
        ),
        (
            "model".to_owned(),
            "`model` cannot be chosen: agent 'assistant' always runs its own model".to_owned()
        )
    );
    // Everything else still may be set on that agent.
    assert!(
        locked
            .check_settings(&GenerationSettings {
                model: None,
                ..settings()
            })
            .is_ok()
    );
    assert_eq!(
        refusal(
            &locked,
            GenerationSettings {
                temperature: Some(2.5),
                ..Default::default()
            }
        )
        .0,
        "temperature"
    );
    // A brain that is not a model takes none, but `n = 1` is what it does anyway.
    let scripted = agent(&Recording::new(json!({"turns": [answer("Hi")]})))
        .build()
        .unwrap();
    assert_eq!(
        refusal(
            &scripted,
            GenerationSettings {
                seed: Some(1),
                ..Default::default()
            }
        )
        .1,
        "`seed` cannot be set: recording takes no generation settings"
    );
    let one = GenerationSettings {
        n: Some(1),
        ..Default::default()
    };
    let run = scripted.start(RunStart::new(vec![Message::user("Hi")]).with_settings(one));
    assert_eq!(
        Client::new(run.unwrap().events).until_end().await,
        RunStatus::Completed
    );
    assert!(
        server.requests().is_empty(),
        "no refused run called the provider"
    );
}

#[tokio::test]
async fn agentwire_toml_can_forbid_choosing_the_model() {
    let file = AgentsFile::from_toml(
        r#"
[[agents]]
name = "fixed"
provider = "openai"
base_url = "http://127.0.0.1:9/v1"
allow_model_override = false
tools = []

[[agents]]
name = "free"
provider = "openai"
base_url = "http://127.0.0.1:9/v1"
tools = []

[[agents]]
name = "scripted"
provider = "demo"
allow_model_override = false
"#,
    )
    .unwrap();
    let build = |index: usize| {
        let config = file.agents[index].clone();
        async move { config.build(Path::new("."), |_| None).await }
    };
    let fixed = build(0).await.unwrap();
    assert!(!fixed.allows_model_override());
    let model = GenerationSettings {
        model: Some("o3".into()),
        ..Default::default()
    };
    assert_eq!(fixed.check_settings(&model).unwrap_err().field, "model");
    let free = build(1).await.unwrap();
    assert!(free.allows_model_override());
    assert!(free.check_settings(&model).is_ok());
    let error = build(2).await.unwrap_err().to_string();
    assert!(
        error.contains("`allow_model_override` has no meaning for provider 'demo'"),
        "{error}"
    );
}
