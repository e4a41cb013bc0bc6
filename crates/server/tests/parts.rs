//! Parts that agents produce, through the live server: the demo tour's every kind of part,
//! provider citations and images (the fake OpenAI and Anthropic servers speaking the captured
//! wire formats) as `source` and `file` parts, `update_plan` and `save_artifact` called by a
//! model as `plan_update` and `artifact` parts, and a scripted run's usage with its total.

#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeSet;

use agentwire_brain::{AnthropicBrain, AnthropicConfig, OpenAiBrain, OpenAiConfig, ScriptedBrain};
use agentwire_core::part::{FileSource, PlanAction};
use agentwire_core::{EventKind, Message, Part};
use agentwire_runtime::{Agent, AgentConfig};
use agentwire_server::Settings;
use agentwire_testkit::fake_anthropic;
use agentwire_testkit::fake_openai::ChatStream;
use agentwire_testkit::fake_provider::{FakeProvider, FakeResponse};
use agentwire_tools::{SaveArtifact, UpdatePlan, Workspace};
use common::{SseClient, TestServer, run_body};
use serde_json::{Value, json};

/// Runs `text` on `agent` through `POST /v1/runs` and reads its stream to the end.
async fn run(server: &TestServer, agent: &str, text: &str) -> SseClient {
    let mut client = server.post_sse(&run_body(Some(agent), text)).await;
    client.until_end().await;
    client
}

fn last_status(client: &SseClient) -> String {
    client
        .events
        .iter()
        .rev()
        .find_map(|event| match &event.kind {
            EventKind::RunStatus { status, .. } => Some(status.name().to_owned()),
            _ => None,
        })
        .unwrap()
}

fn kinds(message: &Message) -> BTreeSet<&'static str> {
    message.parts.iter().map(Part::type_name).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demo_tour_shows_every_kind_of_part() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = AgentConfig::default_assistant(|_| None);
    config.tokens_per_second = Some(0.0);
    let agent = config.build(dir.path(), |_| None).await.unwrap();
    let server = TestServer::start(vec![agent], Settings::default()).await;

    let client = run(&server, "assistant", "tour").await;
    assert_eq!(last_status(&client), "completed");
    let answer = client.messages().last().unwrap();
    assert_eq!(
        kinds(answer).into_iter().collect::<Vec<_>>(),
        [
            "artifact",
            "data",
            "file",
            "plan_update",
            "reasoning",
            "source",
            "step_start",
            "text",
            "tool_call",
            "tool_error",
            "tool_result"
        ]
    );
    assert!(answer.content().contains("That was the whole tour"));
    // The run as stored says the same: the parts survive the store.
    let run_id = client
        .events
        .iter()
        .find_map(|event| match &event.kind {
            EventKind::RunCreated { run_id, .. } => Some(run_id.to_string()),
            _ => None,
        })
        .unwrap();
    let stored = server.completed_run(&run_id).await;
    let stored_kinds: BTreeSet<&str> = stored["output"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|message| message["parts"].as_array().unwrap())
        .filter_map(|part| part["type"].as_str())
        .collect();
    assert!(
        ["artifact", "plan_update", "source", "file"]
            .iter()
            .all(|kind| stored_kinds.contains(kind)),
        "{stored}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn provider_citations_and_images_become_source_and_file_parts() {
    let openai = FakeProvider::start();
    let citation = |url: &str, title: &str| json!({"type": "url_citation", "url_citation": {"url": url, "title": title, "start_index": 0, "end_index": 4}});
    openai.push(FakeResponse::sse(
        ChatStream::new()
            .role()
            .text("Rust 1.0 came out in 2015.")
            .delta(json!({"annotations": [citation("https://blog.rust-lang.org/2015/05/15/Rust-1.0.html", "Announcing Rust 1.0")]}))
            .delta(json!({"images": [{"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}]}))
            .delta(json!({"annotations": [citation("https://blog.rust-lang.org/2015/05/15/Rust-1.0.html", "Announcing Rust 1.0")]}))
            .finish("stop")
            .usage(20, 10)
            .done()
            .to_sse(),
    ));
    let mut config = OpenAiConfig::new("gpt-4o-search-preview");
    config.connection.base_url = format!("{}/v1", openai.url());
    let searcher = Agent::builder("searcher")
        .brain(OpenAiBrain::new(config).unwrap())
        .build()
        .unwrap();

    let anthropic = FakeProvider::start();
    anthropic.push(FakeResponse::sse(fake_anthropic::web_search()));
    let mut config = AnthropicConfig::new(fake_anthropic::MODEL);
    config.connection.base_url = anthropic.url().to_owned();
    config.connection.api_key = Some("sk-ant-test".into());
    let claude = Agent::builder("claude")
        .brain(AnthropicBrain::new(config).unwrap())
        .build()
        .unwrap();

    let server = TestServer::start(vec![searcher, claude], Settings::default()).await;

    let client = run(&server, "searcher", "When did Rust 1.0 ship?").await;
    assert_eq!(last_status(&client), "completed");
    let parts = &client.messages()[0].parts;
    let types: Vec<&str> = parts.iter().map(Part::type_name).collect();
    assert_eq!(types, ["step_start", "text", "file", "source"]);
    let Part::File(image) = &parts[2] else {
        panic!()
    };
    assert_eq!(image.media_type, "image/png");
    assert_eq!(
        image.source,
        FileSource::Url("data:image/png;base64,iVBORw0KGgo=".into())
    );
    let Part::Source(source) = &parts[3] else {
        panic!()
    };
    assert_eq!(
        source.url,
        "https://blog.rust-lang.org/2015/05/15/Rust-1.0.html"
    );
    assert_eq!(source.title.as_deref(), Some("Announcing Rust 1.0"));

    let client = run(&server, "claude", "How are SSE events separated?").await;
    assert_eq!(last_status(&client), "completed");
    let parts = &client.messages()[0].parts;
    let sources: Vec<(&str, Option<&str>)> = parts
        .iter()
        .filter_map(|part| match part {
            Part::Source(source) => Some((source.url.as_str(), source.title.as_deref())),
            _ => None,
        })
        .collect();
    let (first, second) = (fake_anthropic::SEARCH_RESULT, fake_anthropic::OTHER_RESULT);
    assert_eq!(
        sources,
        [(first.0, Some(first.1)), (second.0, Some(second.1))],
        "each URL once, cited or not"
    );
    // The cited text is one text part, not cut by its citations.
    let texts: Vec<&Part> = parts
        .iter()
        .filter(|part| matches!(part, Part::Text(_)))
        .collect();
    assert_eq!(texts.len(), 1, "{parts:#?}");
}

/// A model that makes a plan, saves an artifact while it completes the plan, then answers.
fn planner(workspace: &Workspace) -> Agent {
    let call = |id: &str, name: &str, args: Value| {
        vec![
            json!({"type": "tool_call_start", "id": id, "name": name}),
            json!({"type": "tool_call_delta", "id": id, "args": args.to_string()}),
            json!({"type": "tool_call_end", "id": id}),
        ]
    };
    let plan = |first: &str, second: &str| json!({"plan": [{"step": "Draft", "status": first}, {"step": "Save", "status": second}]});
    let mut first = call("p1", "update_plan", plan("in_progress", "pending"));
    first.push(json!({"type": "finish", "reason": "tool_calls"}));
    let mut second = call(
        "a1",
        "save_artifact",
        json!({"name": "poem.md", "title": "A poem", "content": "Roses are red."}),
    );
    second.extend(call("p2", "update_plan", plan("completed", "completed")));
    second.push(json!({"type": "finish", "reason": "tool_calls"}));
    let script = json!({"turns": [
        first,
        second,
        [{"type": "text_delta", "text": "Saved."}, {"type": "finish", "reason": "stop"}]
    ]});
    Agent::builder("planner")
        .brain(ScriptedBrain::from_json(&script.to_string()).unwrap())
        .tool(UpdatePlan::new())
        .tool(SaveArtifact::new(workspace.clone()))
        .build()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn update_plan_and_save_artifact_calls_become_plan_update_and_artifact_parts() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = Workspace::open(dir.path()).unwrap();
    let server = TestServer::start(vec![planner(&workspace)], Settings::default()).await;

    let client = run(&server, "planner", "Write me a poem").await;
    assert_eq!(last_status(&client), "completed");
    let parts = &client.messages()[0].parts;
    let plans: Vec<(String, PlanAction)> = parts
        .iter()
        .filter_map(|part| match part {
            Part::PlanUpdate(plan) => Some((plan.plan_id.to_string(), plan.action)),
            _ => None,
        })
        .collect();
    assert_eq!(
        plans,
        [
            ("plan_p1".to_owned(), PlanAction::Created),
            ("plan_p1".to_owned(), PlanAction::Completed)
        ]
    );
    let artifact = parts
        .iter()
        .find_map(|part| match part {
            Part::Artifact(artifact) => Some(artifact),
            _ => None,
        })
        .unwrap();
    assert_eq!(
        (
            artifact.artifact_id.to_string(),
            artifact.title.as_str(),
            artifact.version,
            artifact.preview.as_deref()
        ),
        (
            "poem.md".to_owned(),
            "A poem",
            Some(1),
            Some("Roses are red.")
        )
    );
    // Each follows its call's result.
    let at = |wanted: fn(&Part) -> bool| parts.iter().position(wanted).unwrap();
    let result = at(|part| matches!(part, Part::ToolResult(result) if result.tool_call_id == "a1"));
    assert!(matches!(parts[result + 1], Part::Artifact(_)), "{parts:#?}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("artifacts/poem.md")).unwrap(),
        "Roses are red."
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scripted_run_s_usage_has_its_total() {
    let script = json!({"turns": [[
        {"type": "text_delta", "text": "Hi"},
        {"type": "finish", "reason": "stop", "usage": {"input_tokens": 12, "output_tokens": 3}}
    ]]});
    let agent = Agent::builder("scripted")
        .brain(ScriptedBrain::from_json(&script.to_string()).unwrap())
        .build()
        .unwrap();
    let server = TestServer::start(vec![agent], Settings::default()).await;
    let client = run(&server, "scripted", "hi").await;
    let usage = client
        .events
        .iter()
        .rev()
        .find_map(|event| match &event.kind {
            EventKind::RunStatus { usage, .. } => *usage,
            _ => None,
        })
        .unwrap();
    assert_eq!(usage.total_tokens, 15);
    let run_id = client
        .events
        .iter()
        .find_map(|event| match &event.kind {
            EventKind::RunCreated { run_id, .. } => Some(run_id.to_string()),
            _ => None,
        })
        .unwrap();
    let stored = server.completed_run(&run_id).await;
    assert_eq!(stored["run"]["usage"]["total_tokens"], 15, "{stored}");
}
