//! Remote agents through the server: an agent of one server calls agents of another agentwire
//! server, over A2A (its `/agents/{name}/a2a` endpoint, found through the agent card) and over
//! the native API, configured as `[[agents.remote]]`. The remote runs stream nested in the
//! caller's stream (the remote's own sub-agents nested below them), their answers are the
//! calls' results, a remote failure or wait is a tool error the model reads, a canceled caller
//! cancels the remote runs, and a remote that cannot be used fails the configuration at build.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::Path;
use std::time::Duration;

use agentwire_brain::ScriptedBrain;
use agentwire_core::{Accumulator, Part, RunStatus, ToolErrorKind};
use agentwire_runtime::{Agent, AgentsFile, ConfigError, HandlerError};
use agentwire_server::{ApiKey, Settings};
use common::{SseClient, TestServer, approver, run_body, talker};
use serde_json::{Value, json};

/// The remote server's agents: `helper` asks its own sub-agent `inner`, then answers; `slow`
/// talks for a long while; `broken` fails; `approver` waits for an approval.
fn remote_agents() -> Vec<Agent> {
    let inner = talker("inner", &["Inner ", "work"], 0.0);
    let script = json!({"turns": [
        [{"type": "tool_call_start", "id": "h1", "name": "inner"},
         {"type": "tool_call_delta", "id": "h1", "args": "{\"input\": \"do the inner part\"}"},
         {"type": "tool_call_end", "id": "h1"},
         {"type": "finish", "reason": "tool_calls"}],
        [{"type": "text_delta", "text": "Remote "}, {"type": "text_delta", "text": "says hi"},
         {"type": "finish", "reason": "stop"}]
    ]});
    let helper = Agent::builder("helper")
        .description("Helps from afar.")
        .brain(ScriptedBrain::from_json(&script.to_string()).unwrap())
        .subagent(inner.clone())
        .build()
        .unwrap();
    let words: Vec<String> = (0..400).map(|n| format!("word{n} ")).collect();
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    let slow = talker("slow", &words, 20.0);
    let broken = Agent::builder("broken")
        .handler(|_request, _response| async {
            Err(HandlerError::new("upstream_down", "the upstream is down"))
        })
        .build()
        .unwrap();
    vec![helper, inner, slow, broken, approver()]
}

/// A scripted caller agent `name` that calls `calls` at once (ids `call_1`…), then says
/// `answer`; with `remotes` as its `[[agents.remote]]` entries (TOML).
fn caller_config(name: &str, calls: &[&str], answer: &str, remotes: &str) -> (String, Value) {
    let mut turn = Vec::new();
    for (n, tool) in calls.iter().enumerate() {
        let id = format!("call_{}", n + 1);
        turn.extend([
            json!({"type": "tool_call_start", "id": id, "name": tool}),
            json!({"type": "tool_call_delta", "id": id, "args": "{\"input\": \"please help\"}"}),
            json!({"type": "tool_call_end", "id": id}),
        ]);
    }
    turn.push(json!({"type": "finish", "reason": "tool_calls"}));
    let script = json!({"turns": [
        turn,
        [{"type": "text_delta", "text": answer}, {"type": "finish", "reason": "stop"}]
    ]});
    let config = format!(
        "[[agents]]\nname = \"{name}\"\nprovider = \"scripted\"\nscript = \"{name}.json\"\n\
         tools = []\n{remotes}"
    );
    (config, script)
}

/// The agents of a configuration file, built in `dir` with `env` for their keys.
async fn build(
    dir: &Path,
    config: &str,
    script: Option<(&str, &Value)>,
    env: impl Fn(&str) -> Option<String>,
) -> Result<Vec<Agent>, ConfigError> {
    if let Some((name, script)) = script {
        std::fs::write(dir.join(format!("{name}.json")), script.to_string()).unwrap();
    }
    AgentsFile::from_toml(config)?.build(dir, env).await
}

/// A `[[agents.remote]]` entry, allowed on loopback where the tests' servers are.
fn remote(name: &str, fields: &str) -> String {
    format!("\n[[agents.remote]]\nname = \"{name}\"\nallow_private = true\n{fields}\n")
}

/// `GET /v1/runs/{id}` on `server` until the run's status is `status` (10 s at most).
async fn run_reaches(server: &TestServer, id: &str, status: &str) -> Value {
    let mut run = Value::Null;
    for _ in 0..200 {
        run = server
            .http
            .get(server.url(&format!("/v1/runs/{id}")))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        if run["run"]["status"] == status {
            return run;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("run {id} did not become {status}: {run}");
}

/// The remote run a nested run stands for, as its messages name it.
fn remote_run_id(run: &Accumulator) -> String {
    run.messages()
        .iter()
        .find_map(|message| message.metadata.extra.get("remote_run_id"))
        .and_then(Value::as_str)
        .unwrap()
        .to_owned()
}

/// The part answering `call` in the top run's messages.
fn answer_of<'a>(top: &'a Accumulator, call: &str) -> &'a Part {
    top.messages()
        .iter()
        .flat_map(|message| &message.parts)
        .find(|part| match part {
            Part::ToolResult(result) => result.tool_call_id == call,
            Part::ToolError(error) => error.tool_call_id == call,
            _ => false,
        })
        .unwrap_or_else(|| panic!("no answer to {call}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remote_agents_stream_nested_and_answer_over_a2a_and_native() {
    let remote_server = TestServer::start(remote_agents(), Settings::default()).await;
    let remotes = remote(
        "helper_a2a",
        &format!(
            "url = \"{}/agents/helper/.well-known/agent-card.json\"",
            remote_server.url
        ),
    ) + &remote(
        "helper_native",
        &format!("url = \"{}\"\nagent = \"helper\"", remote_server.url),
    );
    let (config, script) = caller_config(
        "boss",
        &["helper_a2a", "helper_native"],
        "Both answered.",
        &remotes,
    );
    let dir = tempfile::tempdir().unwrap();
    let agents = build(dir.path(), &config, Some(("boss", &script)), |_| None)
        .await
        .unwrap();
    // The tools are described by the remote agent: its card, its details.
    let boss = &agents[0];
    let tool = |name: &str| {
        boss.tools()
            .iter()
            .find(|tool| tool.name == name)
            .unwrap()
            .description
            .clone()
    };
    assert!(tool("helper_a2a").starts_with("Helps from afar."));
    assert!(tool("helper_native").starts_with("Helps from afar."));
    let subagent = boss.subagents().find(|agent| agent.name() == "helper_a2a");
    assert!(
        subagent
            .unwrap()
            .describe()
            .starts_with("remote a2a http://")
    );

    let server = TestServer::start(agents, Settings::default()).await;
    let mut stream = server.post_sse(&run_body(Some("boss"), "ask them")).await;
    stream.until_end().await;
    let top = &stream.accumulator;
    assert_eq!(top.status(), Some(RunStatus::Completed));
    assert_eq!(top.messages().last().unwrap().content(), "Both answered.");
    let numbered = stream.numbered();
    assert_eq!(numbered, (1..=numbered.len() as u64).collect::<Vec<_>>());

    for (call, name) in [("call_1", "helper_a2a"), ("call_2", "helper_native")] {
        let Part::ToolResult(result) = answer_of(top, call) else {
            panic!("{call} failed: {:?}", answer_of(top, call));
        };
        assert_eq!(result.result, json!("Remote says hi"), "{name}");
        let child = top
            .children()
            .find(|child| child.agent() == Some(name))
            .unwrap();
        assert_eq!(child.status(), Some(RunStatus::Completed), "{name}");
        assert_eq!(child.parent_tool_call_id().unwrap().as_str(), call);
        assert_eq!(child.messages().last().unwrap().content(), "Remote says hi");
        // The remote's own sub-agent, nested below, with the remote's run id.
        let grandchildren: Vec<&Accumulator> = child.children().collect();
        assert_eq!(grandchildren.len(), 1, "{name}");
        assert_eq!(grandchildren[0].agent(), Some("inner"));
        assert_eq!(grandchildren[0].status(), Some(RunStatus::Completed));
        assert_eq!(grandchildren[0].messages()[0].content(), "Inner work");
        // The remote run is a run of the remote server, completed there.
        let remote_run = remote_run_id(child);
        let stored = run_reaches(&remote_server, &remote_run, "completed").await;
        assert_eq!(stored["run"]["agent"], "helper", "{stored}");
    }

    // The log replays the nested tree as it streamed.
    let run_id = top.run_id().unwrap();
    let replay = server.events_after(run_id.as_str(), 0).await;
    assert_eq!(replay.events, stream.events);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remote_failures_and_waits_are_tool_errors_the_model_reads() {
    let remote_server = TestServer::start(remote_agents(), Settings::default()).await;
    // A server that is gone by the time the call is made.
    let gone = TestServer::start(vec![talker("gone", &["bye"], 0.0)], Settings::default()).await;
    let gone_url = gone.url.clone();
    let remotes = remote(
        "broken_a2a",
        &format!("url = \"{}/agents/broken\"", remote_server.url),
    ) + &remote(
        "asker_native",
        &format!("url = \"{}\"\nagent = \"approver\"", remote_server.url),
    ) + &remote(
        "gone_native",
        &format!("url = \"{gone_url}\"\nagent = \"gone\""),
    );
    let (config, script) = caller_config(
        "boss",
        &["broken_a2a", "asker_native", "gone_native"],
        "Handled.",
        &remotes,
    );
    let dir = tempfile::tempdir().unwrap();
    let agents = build(dir.path(), &config, Some(("boss", &script)), |_| None)
        .await
        .unwrap();
    gone.shutdown().await;

    let server = TestServer::start(agents, Settings::default()).await;
    let mut stream = server.post_sse(&run_body(Some("boss"), "try them")).await;
    stream.until_end().await;
    let top = &stream.accumulator;
    assert_eq!(top.status(), Some(RunStatus::Completed));
    assert_eq!(top.messages().last().unwrap().content(), "Handled.");
    let error = |call: &str| match answer_of(top, call) {
        Part::ToolError(error) => {
            assert_eq!(error.error_type, ToolErrorKind::Execution);
            error.message.clone()
        }
        other => panic!("{call} answered {other:?}"),
    };
    let broken = error("call_1");
    assert!(broken.contains("the upstream is down"), "{broken}");
    assert!(broken.contains("(upstream_down)"), "{broken}");
    let asker = error("call_2");
    assert!(asker.contains("(remote_awaiting)"), "{asker}");
    assert!(asker.contains("approval"), "{asker}");
    let gone = error("call_3");
    assert!(gone.contains("(remote_unreachable)"), "{gone}");
    assert!(gone.contains(&gone_url), "{gone}");

    // The waiting remote run was canceled rather than left waiting.
    let asker = top
        .children()
        .find(|child| child.agent() == Some("asker_native"))
        .unwrap();
    assert_eq!(asker.status(), Some(RunStatus::Failed));
    run_reaches(&remote_server, &remote_run_id(asker), "canceled").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_canceled_caller_cancels_its_remote_runs() {
    let remote_server = TestServer::start(remote_agents(), Settings::default()).await;
    let remotes = remote(
        "slow_a2a",
        &format!("url = \"{}/agents/slow\"", remote_server.url),
    ) + &remote(
        "slow_native",
        &format!("url = \"{}\"\nagent = \"slow\"", remote_server.url),
    );
    let (config, script) = caller_config("boss", &["slow_a2a", "slow_native"], "-", &remotes);
    let dir = tempfile::tempdir().unwrap();
    let agents = build(dir.path(), &config, Some(("boss", &script)), |_| None)
        .await
        .unwrap();
    let server = TestServer::start(agents, Settings::default()).await;
    let mut stream = server
        .post_sse(&run_body(Some("boss"), "take your time"))
        .await;
    // Both remote runs are talking.
    let talking = |stream: &SseClient| {
        stream.accumulator.children().len() == 2
            && stream.accumulator.children().all(|child| {
                child
                    .messages()
                    .first()
                    .is_some_and(|message| message.content().len() > 10)
            })
    };
    while !talking(&stream) {
        assert!(stream.read_chunk().await, "the stream ended early");
    }
    let remote_runs: Vec<String> = stream.accumulator.children().map(remote_run_id).collect();
    let run_id = stream.accumulator.run_id().unwrap().clone();
    let response = server
        .post_json(&format!("/v1/runs/{run_id}/cancel"), &json!({}))
        .await;
    assert_eq!(response.status(), 202);
    stream.until_end().await;
    assert_eq!(stream.accumulator.status(), Some(RunStatus::Canceled));
    for child in stream.accumulator.children() {
        assert_eq!(
            child.status(),
            Some(RunStatus::Canceled),
            "{:?}",
            child.agent()
        );
    }
    for remote_run in remote_runs {
        let canceled = run_reaches(&remote_server, &remote_run, "canceled").await;
        assert_eq!(canceled["run"]["agent"], "slow");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_come_from_the_environment_and_bad_remotes_fail_the_build() {
    let keyed = Settings {
        api_keys: vec![ApiKey::named("caller", "s3cret")],
        ..Settings::default()
    };
    let remote_server = TestServer::start(remote_agents(), keyed).await;
    let url = &remote_server.url;
    let dir = tempfile::tempdir().unwrap();
    let env = |name: &str| (name == "REMOTE_KEY").then(|| "s3cret".to_owned());
    let keyed_remotes = remote(
        "helper_a2a",
        &format!("url = \"{url}/agents/helper\"\napi_key_env = \"REMOTE_KEY\""),
    ) + &remote(
        "helper_native",
        &format!("url = \"{url}\"\nagent = \"helper\"\napi_key_env = \"REMOTE_KEY\""),
    );
    let (config, script) = caller_config(
        "boss",
        &["helper_a2a", "helper_native"],
        "Both answered.",
        &keyed_remotes,
    );
    let agents = build(dir.path(), &config, Some(("boss", &script)), env)
        .await
        .unwrap();
    let server = TestServer::start(agents, Settings::default()).await;
    let mut stream = server.post_sse(&run_body(Some("boss"), "ask them")).await;
    stream.until_end().await;
    for call in ["call_1", "call_2"] {
        let Part::ToolResult(result) = answer_of(&stream.accumulator, call) else {
            panic!("{call}: {:?}", answer_of(&stream.accumulator, call));
        };
        assert_eq!(result.result, json!("Remote says hi"));
    }

    // What cannot work is refused when the configuration is built, naming the remote.
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap()
    };
    let cases = [
        (
            format!("url = \"{url}\"\nagent = \"helper\""),
            "401 unauthorized",
        ),
        (
            format!("url = \"{url}/agents/helper\"\napi_key_env = \"NOT_SET\""),
            "NOT_SET, which is not set",
        ),
        (format!("url = \"http://{closed}\""), "could not reach"),
        (
            format!("url = \"{url}/openapi.json\"\napi_key_env = \"REMOTE_KEY\""),
            "is not an A2A agent card",
        ),
        (
            format!("url = \"{url}\"\nagent = \"nobody\"\napi_key_env = \"REMOTE_KEY\""),
            "unknown_agent",
        ),
    ];
    for (fields, says) in cases {
        let (config, _) = caller_config("boss", &[], "-", &remote("far", &fields));
        let error = build(dir.path(), &config, None, env).await.unwrap_err();
        assert!(matches!(error, ConfigError::Remote { .. }), "{error}");
        let message = error.to_string();
        assert!(
            message.starts_with("agent 'boss': remote agent 'far': "),
            "{message}"
        );
        assert!(message.contains(says), "{fields}: {message}");
    }
}

/// A server on `127.0.0.1:0` answering every request with `answer`, telling the test of each
/// request's `authorization` header (`None` when it had none).
async fn recording(
    answer: Value,
) -> (
    std::net::SocketAddr,
    tokio::sync::mpsc::UnboundedReceiver<Option<String>>,
) {
    let (seen, heard) = tokio::sync::mpsc::unbounded_channel();
    let app = axum::Router::new().fallback(move |headers: axum::http::HeaderMap| {
        let key = headers
            .get("authorization")
            .map(|value| value.to_str().unwrap().to_owned());
        let _ = seen.send(key);
        let answer = answer.clone();
        async move { axum::Json(answer) }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (addr, heard)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_keyed_card_naming_another_origin_is_refused_and_the_key_goes_nowhere_else() {
    use agentwire_tools::remote::RemoteAgentConfig;

    let (elsewhere, mut heard_elsewhere) = recording(json!({})).await;
    let card = json!({"name": "pointer", "description": "Points away.",
        "supportedInterfaces": [{"url": format!("http://{elsewhere}/a2a"),
                                 "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
        "capabilities": {"streaming": true}});
    let (origin, mut heard_origin) = recording(card).await;
    let card_url = format!("http://{origin}/.well-known/agent-card.json");
    let keyed = RemoteAgentConfig {
        api_key_env: Some("CARD_KEY".to_owned()),
        ..RemoteAgentConfig::a2a("pointer", &card_url).allowing_private()
    };
    let error = keyed
        .connect(|_| Some("sekrit".to_owned()))
        .await
        .err()
        .unwrap();
    assert_eq!(error.code(), "remote_forbidden", "{error}");
    let message = error.to_string();
    assert!(message.contains(&format!("http://{origin}")), "{message}");
    assert!(
        message.contains(&format!("http://{elsewhere}")),
        "{message}"
    );
    // The card itself was read with the key, from the origin it was configured for; nothing
    // went to the other one.
    assert_eq!(
        heard_origin.recv().await.unwrap().as_deref(),
        Some("Bearer sekrit")
    );
    assert!(heard_elsewhere.try_recv().is_err());

    // Without a key there is nothing to leak: the card's endpoint is used as it says.
    let keyless = RemoteAgentConfig::a2a("pointer", &card_url).allowing_private();
    let connected = keyless.connect(|_| None).await.unwrap();
    assert_eq!(connected.describe(), format!("a2a http://{elsewhere}/a2a"));
    assert_eq!(heard_origin.recv().await.unwrap(), None);

    // Without `allow_private`, loopback is not reached at all.
    let strict = RemoteAgentConfig::a2a("pointer", &card_url)
        .connect(|_| None)
        .await
        .err()
        .unwrap();
    assert_eq!(strict.code(), "remote_forbidden", "{strict}");
    assert!(strict.to_string().contains("allow_private"), "{strict}");
    let native = RemoteAgentConfig::agentwire("far", format!("http://{origin}"), "helper")
        .connect(|_| None)
        .await
        .err()
        .unwrap();
    assert_eq!(native.code(), "remote_forbidden", "{native}");
    assert!(
        heard_origin.try_recv().is_err(),
        "the strict ones sent nothing"
    );
    assert!(heard_elsewhere.try_recv().is_err());
}
