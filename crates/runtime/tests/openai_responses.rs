//! An agent on OpenAI's Responses API (`provider = "openai-responses"` in `agentwire.toml`)
//! against the fake provider server over real HTTP: a reasoning model calls the workspace's
//! `write_file`, reads its result and answers; its encrypted reasoning is kept in the message
//! as data parts, survives a JSON round trip (what the store does), and goes back to the
//! provider with the call and its output, in this turn's next step and in the next turn.
#![allow(clippy::unwrap_used)]

use agentwire_core::{Accumulator, Message, Part, RunStatus, Usage};
use agentwire_runtime::{AgentsFile, RunStart};
use agentwire_testkit::fake_openai_responses::ResponsesStream;
use agentwire_testkit::fake_provider::{FakeProvider, FakeResponse};
use serde_json::{Value, json};

const FIRST: &str = "gAAAAABoISQ2first";
const SECOND: &str = "gAAAAABoISQ2second";
const THIRD: &str = "gAAAAABoISQ2third";

/// Runs one turn to its end: the status, the usage and the messages as a client rebuilt them.
async fn run(
    agent: &agentwire_runtime::Agent,
    start: RunStart,
) -> (RunStatus, Option<Usage>, Vec<Message>) {
    let mut run = agent.start(start).unwrap();
    let mut client = Accumulator::default();
    while let Some(event) = run.events.recv().await {
        client.push(&event).unwrap();
    }
    (
        client.status().unwrap(),
        client.usage(),
        client.messages().to_vec(),
    )
}

fn reasoning_item(id: &str, summary: &str, encrypted: &str) -> Value {
    json!({
        "id": id, "type": "reasoning", "encrypted_content": encrypted,
        "summary": [{"type": "summary_text", "text": summary}]
    })
}

fn part_names(message: &Message) -> Vec<String> {
    message
        .parts
        .iter()
        .map(|part| match part {
            Part::Data(data) => format!("data:{}", data.name),
            other => other.type_name().to_owned(),
        })
        .collect()
}

#[tokio::test]
async fn a_reasoning_agent_calls_a_tool_and_keeps_its_reasoning_across_turns() {
    let server = FakeProvider::start();
    server.push(FakeResponse::sse(
        ResponsesStream::new()
            .reasoning("rs_1", &[&["Write ", "the note."]], FIRST)
            .message("msg_1", &["Writing it."])
            .function_call(
                "fc_1",
                "call_1",
                "write_file",
                &["{\"path\": \"note.txt\", ", "\"content\": \"h\u{e9}llo\"}"],
            )
            .completed(40, 30, 16)
            .to_sse(),
    ));
    server.push(FakeResponse::sse(
        ResponsesStream::new()
            .reasoning("rs_2", &[&["It worked."]], SECOND)
            .message("msg_2", &["Written to note.txt."])
            .completed(80, 20, 8)
            .to_sse(),
    ));
    let dir = tempfile::tempdir().unwrap();
    let toml = format!(
        r#"[[agents]]
           name = "thinker"
           provider = "openai-responses"
           model = "o4-mini"
           base_url = "{}/v1"
           system = "Be brief."
           tools = ["write_file"]
           reasoning_effort = "low"
           reasoning_summary = "auto"
           max_tokens = 2000
        "#,
        server.url()
    );
    let file = AgentsFile::from_toml(&toml).unwrap();
    let env = |name: &str| (name == "OPENAI_API_KEY").then(|| "sk-test".to_owned());
    let agent = file.agents[0].build(dir.path(), env).await.unwrap();
    assert_eq!(agent.describe(), "openai-responses:o4-mini");

    let question = Message::user("Write héllo to note.txt");
    let (status, usage, messages) = run(&agent, RunStart::new(vec![question.clone()])).await;
    assert_eq!(status, RunStatus::Completed);
    let written = dir.path().join(".agentwire/workspace/note.txt");
    assert_eq!(std::fs::read_to_string(written).unwrap(), "h\u{e9}llo");
    let usage = usage.unwrap();
    assert_eq!((usage.input_tokens, usage.output_tokens), (120, 50));
    assert_eq!(usage.reasoning_tokens, Some(24));

    let answer = messages.last().unwrap();
    assert_eq!(
        part_names(answer),
        [
            "step_start",
            "reasoning",
            "data:openai.reasoning",
            "text",
            "tool_call",
            "tool_result",
            "step_start",
            "reasoning",
            "data:openai.reasoning",
            "text",
        ]
    );
    assert_eq!(answer.parts[1], Part::reasoning("Write the note."));

    // The first request: instructions, the function tool, store false, the settings.
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let first = &requests[0].body;
    assert_eq!(requests[0].path, "/v1/responses");
    assert_eq!(first["instructions"], "Be brief.");
    assert_eq!(first["store"], false);
    assert_eq!(first["include"], json!(["reasoning.encrypted_content"]));
    assert_eq!(
        first["reasoning"],
        json!({"effort": "low", "summary": "auto"})
    );
    assert_eq!(first["max_output_tokens"], 2000);
    assert_eq!(first["tools"][0]["type"], "function");
    assert_eq!(first["tools"][0]["name"], "write_file");

    // The second step's request carries the first step back, reasoning item first.
    let user_item = json!({"type": "message", "role": "user", "content": [
        {"type": "input_text", "text": "Write héllo to note.txt"}
    ]});
    let call = json!({"type": "function_call", "call_id": "call_1", "name": "write_file",
                      "arguments": "{\"path\":\"note.txt\",\"content\":\"héllo\"}"});
    let input = requests[1].body["input"].as_array().unwrap().clone();
    assert_eq!(input[0], user_item);
    assert_eq!(input[1], reasoning_item("rs_1", "Write the note.", FIRST));
    assert_eq!(
        input[2],
        json!({"type": "message", "role": "assistant", "content": [
            {"type": "output_text", "text": "Writing it.", "annotations": []}
        ]})
    );
    assert_eq!(input[3], call);
    assert_eq!(input[4]["type"], "function_call_output");
    assert_eq!(input[4]["call_id"], "call_1");
    assert_eq!(input.len(), 5);

    // The next turn, its history through JSON as the store keeps it: both reasoning items go
    // back in their places.
    let turn: Vec<Message> = std::iter::once(question).chain(messages).collect();
    let history: Vec<Message> =
        serde_json::from_value(serde_json::to_value(&turn).unwrap()).unwrap();
    server.push(FakeResponse::sse(
        ResponsesStream::new()
            .reasoning("rs_3", &[&["Short."]], THIRD)
            .message("msg_3", &["You're welcome."])
            .completed(120, 10, 4)
            .to_sse(),
    ));
    let start = RunStart::new(vec![Message::user("Thanks")]).with_history(history);
    let (status, _, messages) = run(&agent, start).await;
    assert_eq!(status, RunStatus::Completed);
    assert_eq!(messages.last().unwrap().content(), "You're welcome.");
    let input = server.requests()[2].body["input"]
        .as_array()
        .unwrap()
        .clone();
    let kinds: Vec<&str> = input
        .iter()
        .map(|item| item["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        [
            "message",
            "reasoning",
            "message",
            "function_call",
            "function_call_output",
            "reasoning",
            "message",
            "message",
        ]
    );
    assert_eq!(input[1], reasoning_item("rs_1", "Write the note.", FIRST));
    assert_eq!(input[3], call);
    assert_eq!(input[5], reasoning_item("rs_2", "It worked.", SECOND));
    assert_eq!(
        input[6]["content"][0]["text"], "Written to note.txt.",
        "{input:?}"
    );
    assert_eq!(input[7]["content"][0]["text"], "Thanks");
}
