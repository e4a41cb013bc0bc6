//! Remote agents' runs in the runtime.
//!
//! Against a real agentwire server on port 0 (in this process, the remote's agents scripted):
//! a parent whose sub-agents are one of its agents reached over its A2A endpoint and over the
//! native API streams their runs nested under its own (the remote's own sub-agent one level
//! deeper), takes their answers as the calls' results, reads a remote failure as a tool error,
//! and cancels the remote runs when it is canceled; a remote that cannot be used fails the
//! build, naming it.
//!
//! Against a scripted remote (a `RemoteAgent` replaying an event list, as the scripted brain
//! replays a model): what a real server does not send — a stream that stops short, or breaks
//! the event protocol — fails the call with what is open completed.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agentwire_core::{
    Event, EventKind, Message, Part, RunId, RunStatus, StreamedPart, ToolErrorKind,
};
use agentwire_runtime::{Agent, AgentsFile, ConfigError, HandlerError, RunStart};
use agentwire_server::{Server, Settings};
use agentwire_tools::remote::{
    RemoteAgent, RemoteAgentConfig, RemoteError, RemoteEvents, RemoteRequest,
};
use common::{Client, Recording, agent, answer, call, finish};
use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt, stream};
use serde_json::{Value, json};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// A real agentwire server on port 0, serving `agents` until it is shut down (or dropped).
struct RemoteServer {
    url: String,
    client: agentwire_client::Client,
    shutdown: CancellationToken,
    done: Option<JoinHandle<std::io::Result<()>>>,
}

impl RemoteServer {
    async fn start(agents: Vec<Agent>) -> Self {
        let settings = Settings {
            addr: "127.0.0.1:0".parse().unwrap(),
            ..Settings::default()
        };
        let server = Server::open(agents, settings).await.unwrap();
        let listener = server.bind().await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let shutdown = CancellationToken::new();
        let done = tokio::spawn(server.serve(listener, shutdown.clone().cancelled_owned()));
        Self {
            client: agentwire_client::Client::new(&url).unwrap(),
            url,
            shutdown,
            done: Some(done),
        }
    }

    /// Stops the server and waits until it no longer listens.
    async fn shut_down(mut self) {
        self.shutdown.cancel();
        let done = self.done.take().unwrap();
        tokio::time::timeout(Duration::from_secs(10), done)
            .await
            .expect("the server stops")
            .unwrap()
            .unwrap();
    }

    /// How the remote run `run_id` ended, followed through the server's event log.
    async fn end_of(&self, run_id: &RunId) -> RunStatus {
        let mut events = self.client.events(run_id);
        tokio::time::timeout(Duration::from_secs(10), events.finish())
            .await
            .expect("the remote run ends")
            .unwrap()
            .unwrap()
    }
}

impl Drop for RemoteServer {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

/// A scripted agent `name` whose every run says `words`, one delta each, at `tokens_per_second`.
fn talker(name: &str, words: &[&str], tokens_per_second: f64) -> Agent {
    let mut turn: Vec<Value> = words
        .iter()
        .map(|word| json!({"type": "text_delta", "text": word}))
        .collect();
    turn.push(json!({"type": "finish", "reason": "stop"}));
    let brain = Recording::paced(json!({"turns": [turn]}), tokens_per_second);
    Agent::builder(name).brain(brain).build().unwrap()
}

/// The remote server's agents: `helper` asks its own sub-agent `inner`, then says "Remote says
/// hi"; `slow` talks for twenty seconds; `broken` fails every run.
fn remote_agents() -> Vec<Agent> {
    let inner = talker("inner", &["Inner ", "work"], 0.0);
    let helper_brain = Recording::new(json!({"turns": [
        finish(call("h1", "inner", json!({"input": "do the inner part"})), "tool_calls"),
        finish(vec![
            json!({"type": "text_delta", "text": "Remote "}),
            json!({"type": "text_delta", "text": "says hi"}),
        ], "stop"),
    ]}));
    let helper = Agent::builder("helper")
        .description("Helps from afar.")
        .brain(helper_brain)
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
    vec![helper, inner, slow, broken]
}

/// The remote agents of `server` a parent calls: `<agent>_a2a`, the agent over the server's
/// A2A endpoint (its card below `/agents/<agent>`), and `<agent>_native`, over its native API.
async fn remotes_of(server: &RemoteServer, agent: &str) -> [Agent; 2] {
    let a2a = RemoteAgentConfig::a2a(
        format!("{agent}_a2a"),
        format!("{}/agents/{agent}/.well-known/agent-card.json", server.url),
    )
    .allowing_private();
    let native = RemoteAgentConfig::agentwire(format!("{agent}_native"), &server.url, agent)
        .allowing_private();
    let mut built = Vec::new();
    for config in [a2a, native] {
        let remote = config.connect(|_| None).await.unwrap();
        built.push(
            Agent::builder(&config.name)
                .remote_arc(remote)
                .build()
                .unwrap(),
        );
    }
    built.try_into().unwrap()
}

/// A parent that calls each of `tools` at once with "please help" (ids `call_1`, …), then says
/// "Handled."; its brain keeps what it was asked.
fn caller(tools: &[&str], subagents: impl IntoIterator<Item = Agent>) -> (Agent, Recording) {
    let mut turn = Vec::new();
    for (n, tool) in tools.iter().enumerate() {
        turn.extend(call(
            &format!("call_{}", n + 1),
            tool,
            json!({"input": "please help"}),
        ));
    }
    let brain = Recording::new(json!({"turns": [finish(turn, "tool_calls"), answer("Handled.")]}));
    let mut builder = agent(&brain);
    for subagent in subagents {
        builder = builder.subagent(subagent);
    }
    (builder.build().unwrap(), brain)
}

/// The part answering `call_id` among `messages`.
fn answer_to<'a>(messages: &'a [Message], call_id: &str) -> &'a Part {
    messages
        .iter()
        .flat_map(|message| &message.parts)
        .find(|part| match part {
            Part::ToolResult(result) => result.tool_call_id == call_id,
            Part::ToolError(error) => error.tool_call_id == call_id,
            _ => false,
        })
        .unwrap_or_else(|| panic!("no answer to {call_id}"))
}

/// The remote run a nested run stands for, as its messages name it.
fn remote_run_of(messages: &[Message]) -> RunId {
    let id = messages
        .iter()
        .find_map(|message| message.metadata.extra.get("remote_run_id"))
        .and_then(Value::as_str)
        .expect("a message names the remote run");
    RunId::from(id)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remote_agents_over_a2a_and_native_stream_nested_and_answer_the_calls() {
    let server = RemoteServer::start(remote_agents()).await;
    let remotes = remotes_of(&server, "helper").await;
    for remote in &remotes {
        assert!(remote.is_remote());
        assert_eq!(remote.description(), "Helps from afar.");
    }
    assert!(remotes[0].describe().starts_with("remote a2a http://"));
    assert!(
        remotes[1]
            .describe()
            .starts_with("remote agentwire http://")
    );
    let (parent, brain) = caller(&["helper_a2a", "helper_native"], remotes);
    let run = parent
        .start(RunStart::new(vec![Message::user("hi")]))
        .unwrap();
    let mut client = Client::new(run.events);
    assert_eq!(client.until_end().await, RunStatus::Completed);
    client.check_agrees_with(&run.handle);
    assert_eq!(client.messages().last().unwrap().content(), "Handled.");

    for (call_id, name) in [("call_1", "helper_a2a"), ("call_2", "helper_native")] {
        // The remote's answer is the call's result, and the model is given it.
        let Part::ToolResult(result) = answer_to(client.messages(), call_id) else {
            panic!("{name}: {:?}", answer_to(client.messages(), call_id));
        };
        assert_eq!(result.result, json!("Remote says hi"), "{name}");
        let asked = &brain.requests()[1].messages;
        let Part::ToolResult(given) = answer_to(asked, call_id) else {
            panic!("{name}: the model was given {asked:?}");
        };
        assert_eq!(given.result, json!("Remote says hi"), "{name}");

        // The remote run streamed nested: its text delta by delta under the child's run id,
        // the remote's own sub-agent one level deeper, under the remote's run id for it.
        let child = client
            .accumulator
            .children()
            .find(|child| child.agent() == Some(name))
            .unwrap();
        assert_eq!(child.status(), Some(RunStatus::Completed), "{name}");
        assert_eq!(child.parent_tool_call_id().unwrap().as_str(), call_id);
        let child_id = child.run_id().unwrap().clone();
        let under = |path: &[&RunId]| {
            client
                .seen
                .iter()
                .filter(|event| event.namespace.path().iter().eq(path.iter().copied()))
                .collect::<Vec<&Event>>()
        };
        let mut text_parts = Vec::new();
        let mut deltas = Vec::new();
        for event in under(&[&child_id]) {
            match &event.kind {
                EventKind::PartStart {
                    message_id,
                    index,
                    part: StreamedPart::Text,
                } => text_parts.push((message_id, index)),
                EventKind::PartDelta {
                    message_id,
                    index,
                    delta,
                } if text_parts.contains(&(message_id, index)) => deltas.push(delta.as_str()),
                _ => {}
            }
        }
        assert_eq!(deltas.concat(), "Remote says hi", "{name}");
        assert!(deltas.len() >= 2, "{name} streamed {deltas:?}");
        let grandchildren: Vec<_> = child.children().collect();
        assert_eq!(grandchildren.len(), 1, "{name}");
        let inner = grandchildren[0];
        assert_eq!(inner.agent(), Some("inner"));
        assert_eq!(inner.status(), Some(RunStatus::Completed));
        assert_eq!(inner.messages()[0].content(), "Inner work");
        let inner_id = inner.run_id().unwrap();
        let inner_events = under(&[&child_id, inner_id]);
        assert!(
            matches!(inner_events[0].kind, EventKind::RunCreated { .. }),
            "{name}: {:?}",
            inner_events[0]
        );
        // The remote run is a run of the remote server, completed there.
        let remote_run = remote_run_of(child.messages());
        assert_eq!(server.end_of(&remote_run).await, RunStatus::Completed);
        let stored = server.client.get_run(&remote_run).await.unwrap();
        assert_eq!(stored.run.agent, "helper", "{name}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remote_failures_are_tool_errors_the_model_reads() {
    let server = RemoteServer::start(remote_agents()).await;
    let gone = RemoteServer::start(vec![talker("gone", &["bye"], 0.0)]).await;
    let gone_url = gone.url.clone();
    let [broken_a2a, broken_native] = remotes_of(&server, "broken").await;
    let [_, gone_native] = remotes_of(&gone, "gone").await;
    // Connected while it was up, gone by the time it is called.
    gone.shut_down().await;
    let (parent, brain) = caller(
        &["broken_a2a", "broken_native", "gone_native"],
        [broken_a2a, broken_native, gone_native],
    );
    let run = parent
        .start(RunStart::new(vec![Message::user("hi")]))
        .unwrap();
    let mut client = Client::new(run.events);
    assert_eq!(client.until_end().await, RunStatus::Completed);
    assert_eq!(client.messages().last().unwrap().content(), "Handled.");
    let asked = &brain.requests()[1].messages;
    let error = |call_id: &str| {
        let Part::ToolError(error) = answer_to(asked, call_id) else {
            panic!(
                "{call_id}: the model was given {:?}",
                answer_to(asked, call_id)
            );
        };
        assert_eq!(error.error_type, ToolErrorKind::Execution);
        error.message.clone()
    };
    for call_id in ["call_1", "call_2"] {
        let message = error(call_id);
        assert!(message.contains("the upstream is down"), "{message}");
        assert!(message.contains("(upstream_down)"), "{message}");
    }
    let message = error("call_3");
    assert!(message.contains("(remote_unreachable)"), "{message}");
    assert!(message.contains(&gone_url), "{message}");
    for child in client.accumulator.children() {
        assert_eq!(
            child.status(),
            Some(RunStatus::Failed),
            "{:?}",
            child.agent()
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn canceling_the_parent_cancels_the_remote_runs() {
    let server = RemoteServer::start(remote_agents()).await;
    let (parent, _) = caller(
        &["slow_a2a", "slow_native"],
        remotes_of(&server, "slow").await,
    );
    let run = parent
        .start(RunStart::new(vec![Message::user("hi")]))
        .unwrap();
    let mut client = Client::new(run.events);
    // Until both remote runs are talking.
    let talking = |client: &Client| {
        client.accumulator.children().len() == 2
            && client.accumulator.children().all(|child| {
                child
                    .messages()
                    .first()
                    .is_some_and(|message| message.content().len() > 20)
            })
    };
    while !talking(&client) {
        let event = tokio::time::timeout(Duration::from_secs(10), client.events.recv())
            .await
            .expect("the remote runs talk")
            .expect("the run goes on");
        client.accumulator.push(&event).unwrap();
        client.seen.push(event);
    }
    let remote_runs: Vec<RunId> = client
        .accumulator
        .children()
        .map(|child| remote_run_of(child.messages()))
        .collect();
    run.handle.cancel().unwrap();
    assert_eq!(client.until_end().await, RunStatus::Canceled);
    for child in client.accumulator.children() {
        assert_eq!(
            child.status(),
            Some(RunStatus::Canceled),
            "{:?}",
            child.agent()
        );
    }
    // The remote server ends both runs canceled, long before they would have completed.
    for remote_run in &remote_runs {
        assert_eq!(server.end_of(remote_run).await, RunStatus::Canceled);
    }
}

/// Builds `[[agents]]` `boss` (scripted) with one `[[agents.remote]]` entry `far` of these
/// fields (allowed on loopback, where the remote server is), in `dir`.
async fn build_with_remote(dir: &Path, fields: &str) -> Result<Vec<Agent>, ConfigError> {
    std::fs::write(
        dir.join("boss.json"),
        json!({"turns": [answer("-")]}).to_string(),
    )
    .unwrap();
    let config = format!(
        "[[agents]]\nname = \"boss\"\nprovider = \"scripted\"\nscript = \"boss.json\"\n\n\
         [[agents.remote]]\nname = \"far\"\nallow_private = true\n{fields}\n"
    );
    AgentsFile::from_toml(&config)?.build(dir, |_| None).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_that_cannot_be_used_fails_the_build_naming_it() {
    let server = RemoteServer::start(remote_agents()).await;
    let url = &server.url;
    let dir = tempfile::tempdir().unwrap();
    let built = build_with_remote(dir.path(), &format!("url = \"{url}/agents/helper\"")).await;
    let boss = &built.unwrap()[0];
    assert_eq!(
        boss.subagents().map(Agent::name).collect::<Vec<_>>(),
        ["far"]
    );

    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap()
    };
    let cases = [
        (format!("url = \"http://{closed}\""), "could not reach"),
        (format!("url = \"{url}/agents/nobody\""), "answered 404"),
        (
            format!("url = \"{url}/openapi.json\""),
            "is not an A2A agent card",
        ),
        (
            format!("url = \"{url}\"\nagent = \"nobody\""),
            "unknown_agent",
        ),
    ];
    for (fields, says) in cases {
        let error = build_with_remote(dir.path(), &fields).await.unwrap_err();
        assert!(matches!(error, ConfigError::Remote { .. }), "{error}");
        let message = error.to_string();
        assert!(
            message.starts_with("agent 'boss': remote agent 'far': "),
            "{message}"
        );
        assert!(message.contains(says), "{fields}: {message}");
        // The cause is kept, for whoever logs the chain.
        assert!(std::error::Error::source(&error).is_some(), "{message}");
    }
}

// A scripted remote: the stream failures a real server does not produce.

/// A remote agent that answers every run with `events`, then ends its stream, or keeps it
/// open (`hang`); it records the requests and the cancels it gets.
#[derive(Clone, Default)]
struct Scripted {
    events: Vec<Value>,
    hang: bool,
    requests: Arc<Mutex<Vec<String>>>,
    canceled: Arc<Mutex<Vec<RunId>>>,
}

impl RemoteAgent for Scripted {
    fn description(&self) -> &str {
        "Does things far away."
    }

    fn describe(&self) -> String {
        "scripted".to_owned()
    }

    fn run(&self, request: RemoteRequest) -> RemoteEvents {
        self.requests.lock().unwrap().push(request.input.content());
        let events: Vec<Result<Event, RemoteError>> = self
            .events
            .iter()
            .enumerate()
            .map(|(n, event)| {
                let mut event = event.clone();
                event["seq"] = json!(n + 1);
                Ok(serde_json::from_value(event).unwrap())
            })
            .collect();
        let events = stream::iter(events);
        match self.hang {
            true => events.chain(stream::pending()).boxed(),
            false => events.boxed(),
        }
    }

    fn cancel(&self, run_id: RunId) -> BoxFuture<'static, Result<(), RemoteError>> {
        self.canceled.lock().unwrap().push(run_id);
        async { Ok(()) }.boxed()
    }
}

/// The remote run `r1` of agent `far`, which asks its own sub-agent (run `r2`) first.
fn opening() -> Vec<Value> {
    vec![
        json!({"event": "run_created", "run_id": "r1", "agent": "far"}),
        json!({"event": "run_status", "status": "in_progress"}),
        json!({"namespace": ["r2"], "event": "run_created", "run_id": "r2", "agent": "deep", "parent_run_id": "r1", "parent_tool_call_id": "t1"}),
        json!({"namespace": ["r2"], "event": "message_start", "message_id": "m2", "role": "assistant"}),
        json!({"namespace": ["r2"], "event": "part_start", "message_id": "m2", "index": 0, "type": "text"}),
        json!({"namespace": ["r2"], "event": "part_delta", "message_id": "m2", "index": 0, "delta": "deep "}),
    ]
}

/// The rest of a remote run that completes: its sub-agent's end, then its answer.
fn completing() -> Vec<Value> {
    vec![
        json!({"namespace": ["r2"], "event": "part_complete", "message_id": "m2", "index": 0, "part": {"type": "text", "text": "deep "}}),
        json!({"namespace": ["r2"], "event": "message_complete", "message": {"id": "m2", "role": "assistant", "parts": [{"type": "text", "text": "deep "}]}}),
        json!({"namespace": ["r2"], "event": "run_status", "status": "completed"}),
        json!({"event": "state_snapshot", "state": {"theirs": true}}),
        json!({"event": "message_start", "message_id": "m1", "role": "assistant"}),
        json!({"event": "part_start", "message_id": "m1", "index": 0, "type": "text"}),
        json!({"event": "part_delta", "message_id": "m1", "index": 0, "delta": "far answer"}),
        json!({"event": "part_complete", "message_id": "m1", "index": 0, "part": {"type": "text", "text": "far answer"}}),
        json!({"event": "message_complete", "message": {"id": "m1", "role": "assistant", "parts": [{"type": "text", "text": "far answer"}]}}),
        json!({"event": "run_status", "status": "completed", "usage": {"input_tokens": 100, "output_tokens": 50, "total_tokens": 150}}),
    ]
}

/// A parent that calls `far` with "go far", then says "done"; `far` is `remote`.
fn parent(remote: &Scripted) -> Agent {
    let brain = Recording::new(json!({"turns": [
        finish(call("c1", "far", json!({"input": "go far"})), "tool_calls"),
        answer("done"),
    ]}));
    let far = Agent::builder("far")
        .remote(remote.clone())
        .build()
        .unwrap();
    assert_eq!(far.description(), "Does things far away.");
    assert!(far.is_remote());
    agent(&brain).subagent(far).build().unwrap()
}

/// The part that answers the call `c1` in the parent's messages.
fn answer_of(client: &Client) -> Part {
    client
        .messages()
        .iter()
        .flat_map(|message| &message.parts)
        .find(|part| matches!(part, Part::ToolResult(_) | Part::ToolError(_)))
        .cloned()
        .unwrap()
}

/// The message of a tool error, checked to be an execution error.
#[track_caller]
fn error_message(part: &Part) -> String {
    let Part::ToolError(error) = part else {
        panic!("not an error: {part:?}");
    };
    assert_eq!(error.error_type, ToolErrorKind::Execution);
    error.message.clone()
}

#[tokio::test]
async fn a_scripted_remote_run_streams_as_the_childs_own_and_answers_the_call() {
    let remote = Scripted {
        events: [opening(), completing()].concat(),
        ..Scripted::default()
    };
    let run = parent(&remote)
        .start(RunStart::new(vec![Message::user("hi")]))
        .unwrap();
    let mut client = Client::new(run.events);
    assert_eq!(client.until_end().await, RunStatus::Completed);
    assert_eq!(*remote.requests.lock().unwrap(), ["go far"]);
    let Part::ToolResult(result) = answer_of(&client) else {
        panic!()
    };
    assert_eq!(result.result, json!("far answer"));

    let child = client.accumulator.children().next().unwrap();
    assert_eq!(child.agent(), Some("far"));
    assert_eq!(child.status(), Some(RunStatus::Completed));
    let message = &child.messages()[0];
    assert_eq!(message.content(), "far answer");
    assert_eq!(message.metadata.extra["remote_run_id"], "r1");
    let deep = child.children().next().unwrap();
    assert_eq!(deep.run_id().unwrap().as_str(), "r2");
    assert_eq!(deep.messages()[0].content(), "deep ");
    // The remote's first level names the child as its parent; the remote's state is not ours.
    let created = client
        .seen
        .iter()
        .find(|event| event.namespace.depth() == 2)
        .unwrap();
    let EventKind::RunCreated { parent_run_id, .. } = &created.kind else {
        panic!()
    };
    assert_eq!(parent_run_id.as_ref(), child.run_id());
    assert!(
        !client
            .seen
            .iter()
            .any(|event| matches!(event.kind, EventKind::StateSnapshot { .. }))
    );
    // The remote's tokens are the remote's: the parent counts its own two model calls.
    assert_eq!(client.accumulator.usage().unwrap().total_tokens, 30);
    assert!(remote.canceled.lock().unwrap().is_empty());
}

#[tokio::test]
async fn a_stream_that_stops_short_fails_the_call_with_everything_closed() {
    let mut events = opening();
    events.extend([
        json!({"event": "message_start", "message_id": "m1", "role": "assistant"}),
        json!({"event": "part_start", "message_id": "m1", "index": 0, "type": "tool_call", "tool_call_id": "t9", "tool_name": "look"}),
        json!({"event": "part_delta", "message_id": "m1", "index": 0, "delta": "{\"q\": \"po"}),
    ]);
    let remote = Scripted {
        events,
        ..Scripted::default()
    };
    let run = parent(&remote)
        .start(RunStart::new(vec![Message::user("hi")]))
        .unwrap();
    let mut client = Client::new(run.events);
    // The strict client accepts every event: what the remote left open is closed.
    assert_eq!(client.until_end().await, RunStatus::Completed);
    let message = error_message(&answer_of(&client));
    assert!(message.contains("(remote_stream_ended)"), "{message}");
    let child = client.accumulator.children().next().unwrap();
    assert_eq!(child.status(), Some(RunStatus::Failed));
    let Part::ToolCall(cut) = &child.messages()[0].parts[0] else {
        panic!()
    };
    assert_eq!(cut.args.0, json!("{\"q\": \"po"));
    let deep = child.children().next().unwrap();
    assert_eq!(deep.status(), Some(RunStatus::Failed));
    assert_eq!(deep.messages()[0].content(), "deep ");
    // The remote run may be going on: it is canceled.
    assert_eq!(
        *remote.canceled.lock().unwrap(),
        [RunId::from("r1")],
        "canceled once"
    );
}

#[tokio::test]
async fn a_remote_that_breaks_the_protocol_or_waits_fails_the_call() {
    let cases = [
        (
            json!({"event": "part_delta", "message_id": "nowhere", "index": 0, "delta": "x"}),
            "(remote_protocol)",
        ),
        (
            json!({"event": "run_status", "status": "awaiting", "awaiting": "approval"}),
            "(remote_awaiting)",
        ),
        (
            json!({"event": "run_status", "status": "failed", "error": {"code": "quota", "message": "out of quota"}}),
            "out of quota (quota)",
        ),
    ];
    for (last, says) in cases {
        let mut events = opening();
        events.push(last);
        let remote = Scripted {
            events,
            hang: true,
            ..Scripted::default()
        };
        let run = parent(&remote)
            .start(RunStart::new(vec![Message::user("hi")]))
            .unwrap();
        let mut client = Client::new(run.events);
        assert_eq!(client.until_end().await, RunStatus::Completed);
        let message = error_message(&answer_of(&client));
        assert!(message.contains(says), "{message}");
        assert_eq!(client.messages().last().unwrap().content(), "done");
    }
}

#[tokio::test]
async fn a_canceled_parent_cancels_a_scripted_remote_run() {
    let remote = Scripted {
        events: opening(),
        hang: true,
        ..Scripted::default()
    };
    let run = parent(&remote)
        .start(RunStart::new(vec![Message::user("hi")]))
        .unwrap();
    let mut client = Client::new(run.events);
    // Until the remote's sub-agent has said something.
    loop {
        let event = client.events.recv().await.unwrap();
        client.accumulator.push(&event).unwrap();
        let said =
            matches!(event.kind, EventKind::PartDelta { .. }) && event.namespace.depth() == 2;
        client.seen.push(event);
        if said {
            break;
        }
    }
    run.handle.cancel().unwrap();
    assert_eq!(client.until_end().await, RunStatus::Canceled);
    let child = client.accumulator.children().next().unwrap();
    assert_eq!(child.status(), Some(RunStatus::Canceled));
    assert_eq!(
        child.children().next().unwrap().status(),
        Some(RunStatus::Canceled)
    );
    // The child's task cancels the remote run once the child has ended.
    let canceled = remote.canceled.clone();
    tokio::time::timeout(std::time::Duration::from_secs(10), async move {
        while canceled.lock().unwrap().is_empty() {
            tokio::task::yield_now().await;
        }
    })
    .await
    .unwrap();
    assert_eq!(*remote.canceled.lock().unwrap(), [RunId::from("r1")]);
}
