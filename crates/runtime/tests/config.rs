//! Agents from `agentwire.toml`: the configuration contract's example parses as written, each
//! provider builds, the built agents run, and every mistake is named.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};

use agentwire_core::part::PlanAction;
use agentwire_core::{Accumulator, Message, Part, RunStatus};
use agentwire_runtime::{AgentConfig, AgentsFile, ConfigError, Provider, RunStart};
use agentwire_testkit::fake_openai::ChatStream;
use agentwire_testkit::fake_provider::{FakeProvider, FakeResponse};

/// The configuration contract's example, as scripts and tests outside the repo write it.
const CONTRACT: &str = r#"
[server]
addr = "127.0.0.1:8080"
database_url = "sqlite://.agentwire/agentwire.db"   # or postgres://user:pw@127.0.0.1:5432/db
api_keys = []                                      # bearer tokens; empty = no auth (loopback only)

[[agents]]
name = "assistant"
description = "General assistant"
provider = "openai"               # openai (any OpenAI-compatible server) | anthropic | scripted | demo
model = "gpt-4o-mini"
base_url = "https://api.openai.com/v1"
api_key_env = "OPENAI_API_KEY"    # the key is read from this env var, never stored in the file
system = "You are a helpful assistant."
tools = ["write_file", "read_file", "list_files"]
workspace = ".agentwire/workspace" # root of the file tools; nothing outside it is reachable
approval = []                     # tool names that need a human approval before they run
schema = "chat"                   # chat | one_shot | function_calling | interruptible | approval | long_running | path to a JSON schema file
max_steps = 8

[[agents.mcp]]                     # optional MCP tool servers
name = "fs"
command = ["npx", "-y", "@modelcontextprotocol/server-filesystem", "/tmp"]   # or url = "http://…/mcp"

[[agents]]
name = "load"
provider = "scripted"
script = "load.json"          # relative to the config file
tokens_per_second = 0         # pace of the deltas; 0 = as fast as possible
"#;

const SCRIPT: &str = r#"{"turns": [
  [{"type": "text_delta", "text": "Let me write it. "},
   {"type": "tool_call_start", "id": "c1", "name": "write_file"},
   {"type": "tool_call_delta", "id": "c1", "args": "{\"path\": \"a.txt\", "},
   {"type": "tool_call_delta", "id": "c1", "args": "\"content\": \"A\"}"},
   {"type": "tool_call_end", "id": "c1"},
   {"type": "finish", "reason": "tool_calls"}],
  [{"type": "reasoning_delta", "text": "Done."}, {"type": "text_delta", "text": "Written."},
   {"type": "finish", "reason": "stop", "usage": {"input_tokens": 10, "output_tokens": 5}}]
]}"#;

fn no_env(_: &str) -> Option<String> {
    None
}

fn agent<'a>(file: &'a AgentsFile, name: &str) -> &'a AgentConfig {
    file.agents.iter().find(|agent| agent.name == name).unwrap()
}

/// Runs one turn to its end and returns the status and the messages the client rebuilt.
async fn run(agent: &agentwire_runtime::Agent, words: &str) -> (RunStatus, Vec<Message>) {
    let mut run = agent
        .start(RunStart::new(vec![Message::user(words)]))
        .unwrap();
    let mut client = Accumulator::default();
    while let Some(event) = run.events.recv().await {
        client.push(&event).unwrap();
    }
    (client.status().unwrap(), client.messages().to_vec())
}

#[test]
fn the_contracts_example_parses_as_written() {
    let file = AgentsFile::from_toml(CONTRACT).unwrap();
    assert_eq!(file.agents.len(), 2);
    let assistant = agent(&file, "assistant");
    assert_eq!(assistant.provider, Provider::Openai);
    assert_eq!(assistant.model.as_deref(), Some("gpt-4o-mini"));
    assert_eq!(assistant.api_key_env.as_deref(), Some("OPENAI_API_KEY"));
    assert_eq!(assistant.tools.as_ref().unwrap().len(), 3);
    assert_eq!(assistant.max_steps, Some(8));
    assert_eq!(assistant.mcp.len(), 1);
    assert_eq!(assistant.mcp[0].name, "fs");
    let load = agent(&file, "load");
    assert_eq!(load.provider, Provider::Scripted);
    assert_eq!(load.script.as_deref(), Some(Path::new("load.json")));
    assert_eq!(load.tokens_per_second, Some(0.0));
}

#[tokio::test]
async fn a_scripted_agent_runs_its_script_relative_to_the_file() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("load.json"), SCRIPT).unwrap();
    let file = AgentsFile::from_toml(CONTRACT).unwrap();
    let load = agent(&file, "load")
        .build(dir.path(), no_env)
        .await
        .unwrap();
    assert_eq!(load.name(), "load");

    let (status, messages) = run(&load, "Write a.txt").await;
    assert_eq!(status, RunStatus::Completed);
    assert_eq!(
        messages.last().unwrap().content(),
        "Let me write it. \nWritten."
    );
    // The default tools wrote into the default workspace, beside the file.
    let written = dir.path().join(".agentwire/workspace/a.txt");
    assert_eq!(std::fs::read_to_string(written).unwrap(), "A");
}

#[tokio::test]
async fn an_openai_agent_reads_its_key_from_the_named_variable_and_talks_to_its_server() {
    let provider = FakeProvider::start();
    provider.push(FakeResponse::sse(
        ChatStream::new()
            .role()
            .text("Hi from the server.")
            .finish("stop")
            .done()
            .to_sse(),
    ));
    let dir = tempfile::tempdir().unwrap();
    let toml = format!(
        r#"[[agents]]
           name = "local"
           provider = "openai"
           model = "llama3"
           base_url = "{}/v1"
           api_key_env = "LOCAL_KEY"
           tools = []
           system = "Be brief."
        "#,
        provider.url()
    );
    let file = AgentsFile::from_toml(&toml).unwrap();
    let env = |name: &str| (name == "LOCAL_KEY").then(|| "sk-local".to_owned());
    let local = file.agents[0].build(dir.path(), env).await.unwrap();
    assert_eq!(local.describe(), "openai:llama3");

    let (status, messages) = run(&local, "Hello").await;
    assert_eq!(status, RunStatus::Completed);
    assert_eq!(messages.last().unwrap().content(), "Hi from the server.");
    let request = &provider.requests()[0];
    let authorization = request
        .headers
        .iter()
        .find(|(name, _)| name == "authorization");
    assert_eq!(authorization.unwrap().1, "Bearer sk-local");
    assert_eq!(request.body["model"], "llama3");
    assert_eq!(request.body["messages"][0]["content"], "Be brief.");
    assert_eq!(request.body.get("tools"), None, "`tools = []` offers none");
}

#[tokio::test]
async fn the_default_assistant_picks_its_brain_from_the_environment() {
    let demo = AgentConfig::default_assistant(no_env);
    assert_eq!(demo.provider, Provider::Demo);
    let openai =
        AgentConfig::default_assistant(|name| (name == "OPENAI_API_KEY").then(|| "sk".to_owned()));
    assert_eq!(openai.provider, Provider::Openai);
    let anthropic = AgentConfig::default_assistant(|name| {
        (name == "ANTHROPIC_API_KEY").then(|| "sk".to_owned())
    });
    assert_eq!(anthropic.provider, Provider::Anthropic);

    // The demo assistant runs offline with every built-in tool and shows the whole tour: every
    // kind of part a run makes.
    let dir = tempfile::tempdir().unwrap();
    let mut config = demo;
    config.tokens_per_second = Some(0.0);
    let assistant = config.build(dir.path(), no_env).await.unwrap();
    assert_eq!(assistant.describe(), "demo (offline)");
    let (status, messages) = run(&assistant, "tour").await;
    assert_eq!(status, RunStatus::Completed);
    let parts = &messages.last().unwrap().parts;
    let count = |wanted: fn(&Part) -> bool| parts.iter().filter(|part| wanted(part)).count();
    assert_eq!(
        count(|part| matches!(part, Part::ToolError(_))),
        1,
        "{parts:#?}"
    );
    assert_eq!(
        count(|part| matches!(part, Part::ToolResult(_))),
        7,
        "{parts:#?}"
    );
    assert!(count(|part| matches!(part, Part::Reasoning(_))) >= 2);
    assert_eq!(count(|part| matches!(part, Part::StepStart(_))), 5);
    let kinds: std::collections::BTreeSet<&str> = parts.iter().map(Part::type_name).collect();
    assert_eq!(
        kinds.into_iter().collect::<Vec<_>>(),
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
    // One plan, created, updated, completed.
    let plans: Vec<(String, PlanAction)> = parts
        .iter()
        .filter_map(|part| match part {
            Part::PlanUpdate(plan) => Some((plan.plan_id.to_string(), plan.action)),
            _ => None,
        })
        .collect();
    let actions: Vec<PlanAction> = plans.iter().map(|(_, action)| *action).collect();
    assert_eq!(
        actions,
        [
            PlanAction::Created,
            PlanAction::Updated,
            PlanAction::Completed
        ]
    );
    assert!(plans.iter().all(|(id, _)| *id == plans[0].0), "{plans:?}");
    let summary = dir
        .path()
        .join(".agentwire/workspace/artifacts/tour-summary.md");
    assert!(
        std::fs::read_to_string(summary)
            .unwrap()
            .contains("agentwire tour")
    );
    let note = dir.path().join(".agentwire/workspace/demo/note.txt");
    assert!(
        std::fs::read_to_string(note)
            .unwrap()
            .contains("demo brain")
    );
    let answer = messages.last().unwrap().content();
    assert!(
        answer.contains("reading the note gave “Written by"),
        "{answer}"
    );
}

/// Builds the only agent of `toml` in an empty directory and returns the error's text.
async fn build_error(toml: &str, env: impl Fn(&str) -> Option<String>) -> String {
    let dir = tempfile::tempdir().unwrap();
    let file = match AgentsFile::from_toml(toml) {
        Ok(file) => file,
        Err(error) => return error.to_string(),
    };
    match file.agents[0].build(dir.path(), env).await {
        Ok(_) => panic!("{toml} built"),
        Err(error) => error.to_string(),
    }
}

#[tokio::test]
async fn every_mistake_is_named() {
    let cases: &[(&str, &str)] = &[
        (
            "[[agents]]\nname = \"a\"\nmodle = \"x\"\n",
            "unknown field `modle`",
        ),
        (
            "[[agents]]\nname = \"a\"\nprovider = \"gemini\"\n",
            "unknown variant `gemini`",
        ),
        (
            "[[agents]]\nname = \"a\"\n[[agents]]\nname = \"a\"\n",
            "two agents are named 'a'",
        ),
        (
            "[[agents]]\nname = \"a\"\ntools = [\"delete_everything\"]\n",
            "agent 'a': no built-in tool is called 'delete_everything'",
        ),
        (
            "[[agents]]\nname = \"a\"\nprovider = \"openai\"\n",
            "agent 'a': the API key is read from the environment variable OPENAI_API_KEY, which is not set",
        ),
        (
            "[[agents]]\nname = \"a\"\nprovider = \"anthropic\"\napi_key_env = \"MY_KEY\"\n",
            "environment variable MY_KEY, which is not set",
        ),
        (
            "[[agents]]\nname = \"a\"\nmodel = \"gpt-4o\"\n",
            "agent 'a': `model` has no meaning for provider 'demo'",
        ),
        (
            "[[agents]]\nname = \"a\"\nprovider = \"openai-responses\"\n",
            "agent 'a': the API key is read from the environment variable OPENAI_API_KEY, which is not set",
        ),
        (
            "[[agents]]\nname = \"a\"\nprovider = \"openai\"\nbase_url = \"http://127.0.0.1:1/v1\"\nreasoning_effort = \"low\"\n",
            "agent 'a': `reasoning_effort` has no meaning for provider 'openai'",
        ),
        (
            "[[agents]]\nname = \"a\"\nprovider = \"scripted\"\n",
            "provider 'scripted' needs `script`",
        ),
        (
            "[[agents]]\nname = \"a\"\nprovider = \"scripted\"\nscript = \"missing.json\"\n",
            "cannot read the script",
        ),
        (
            "[[agents]]\nname = \"a\"\nschema = \"chatty\"\n",
            "schema 'chatty' is neither a built-in (chat,",
        ),
        (
            "[[agents]]\nname = \"a\"\napproval = [\"rm\"]\n",
            "agent 'a' asks approval for tool 'rm', which it does not have",
        ),
        (
            "[[agents]]\nname = \"a\"\nmax_steps = 0\n",
            "max_steps of at least 1",
        ),
        (
            "[[agents]]\nname = \"a\"\n[[agents.mcp]]\nname = \"x\"\ncommand = [\"/nonexistent/mcp-server\"]\n",
            "agent 'a': MCP server 'x':",
        ),
        (
            "[[agents]]\nname = \"a\"\nstate_schema = \"missing.json\"\n",
            "agent 'a': cannot read the state schema",
        ),
    ];
    for (toml, expected) in cases {
        let error = build_error(toml, no_env).await;
        assert!(
            error.contains(expected),
            "{toml}\n→ {error}\nexpected: {expected}"
        );
    }
}

#[tokio::test]
async fn a_state_schema_file_holds_the_sessions_state() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("state.json"),
        r#"{"type": "object", "required": ["todo"]}"#,
    )
    .unwrap();
    std::fs::write(dir.path().join("bad.json"), r#"{"type": 12}"#).unwrap();
    let toml =
        "[[agents]]\nname = \"a\"\ntools = [\"update_state\"]\nstate_schema = \"state.json\"\n";
    let file = AgentsFile::from_toml(toml).unwrap();
    let agent = file.agents[0].build(dir.path(), no_env).await.unwrap();
    assert!(agent.state_schema().is_some());
    assert!(agent.check_state(&serde_json::json!({"todo": []})).is_ok());
    let refused = agent.check_state(&serde_json::json!({})).unwrap_err();
    assert_eq!(
        refused.to_string(),
        "the state would not match its schema: at the root: \"todo\" is a required property"
    );
    assert_eq!(agent.tools()[0].name, "update_state");

    let bad = "[[agents]]\nname = \"a\"\nstate_schema = \"bad.json\"\n";
    let file = AgentsFile::from_toml(bad).unwrap();
    let error = file.agents[0].build(dir.path(), no_env).await.unwrap_err();
    assert!(
        error
            .to_string()
            .contains("the state schema is not a valid JSON Schema"),
        "{error}"
    );
}

#[test]
fn a_parse_error_says_where() {
    let error =
        AgentsFile::from_toml("[[agents]]\nname = \"a\"\nmax_steps = \"eight\"\n").unwrap_err();
    assert!(matches!(error, ConfigError::Toml(_)));
    assert!(error.to_string().contains("line 3"), "{error}");
}

#[tokio::test]
async fn a_schema_file_and_mcp_tools_join_the_agent() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("ask.json"),
        serde_json::to_string(&agentwire_core::communication::CommunicationSchema::approval())
            .unwrap(),
    )
    .unwrap();
    let server = mcp_server_everything();
    let toml = format!(
        r#"[[agents]]
           name = "a"
           tools = ["read_file"]
           schema = "ask.json"
           approval = ["everything_echo"]

           [[agents.mcp]]
           name = "everything"
           command = ["{}"]
        "#,
        server.display()
    );
    let file = AgentsFile::from_toml(&toml).unwrap();
    let built = file.agents[0].build(dir.path(), no_env).await.unwrap();
    let names: Vec<&str> = built
        .tools()
        .iter()
        .map(|tool| tool.name.as_str())
        .collect();
    assert_eq!(names[0], "read_file");
    assert!(names.contains(&"everything_echo"), "{names:?}");
    assert!(built.needs_approval("everything_echo"));
}

fn mcp_server_everything() -> PathBuf {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../peers/mcp/node_modules/.bin/mcp-server-everything");
    assert!(
        path.exists(),
        "{} is missing: run scripts/peers.sh",
        path.display()
    );
    path
}

#[tokio::test]
async fn input_types_widen_what_a_user_message_may_carry() {
    let dir = tempfile::tempdir().unwrap();
    let with_key = |name: &str| (name == "OPENAI_API_KEY").then(|| "sk-test".to_owned());
    let content_types = |agent: &agentwire_runtime::Agent| -> Vec<String> {
        agent.schema().transitions("idle")[0]
            .content
            .iter()
            .map(|spec| spec.content_type.clone())
            .collect()
    };
    // The default assistant on OpenAI reads images.
    let openai = AgentConfig::default_assistant(with_key);
    let built = openai.build(dir.path(), with_key).await.unwrap();
    assert_eq!(content_types(&built), ["text/plain", "image/*"]);
    // The demo brain reads text only; a configured list wins, on a built-in schema too.
    let demo = AgentConfig::named("d")
        .build(dir.path(), no_env)
        .await
        .unwrap();
    assert_eq!(content_types(&demo), ["text/plain"]);
    let file = AgentsFile::from_toml(
        r#"[[agents]]
           name = "r"
           schema = "one_shot"
           input_types = ["text/plain", "application/pdf"]
           tools = []
        "#,
    )
    .unwrap();
    let built = file.agents[0].build(dir.path(), no_env).await.unwrap();
    assert_eq!(content_types(&built), ["text/plain", "application/pdf"]);
    let bad = AgentsFile::from_toml("[[agents]]\nname = \"b\"\ninput_types = [\"pdf\"]\n").unwrap();
    let error = bad.agents[0].build(dir.path(), no_env).await.unwrap_err();
    assert!(error.to_string().contains("input_types"), "{error}");
}
