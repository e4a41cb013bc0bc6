//! The server over real HTTP on port 0, scripted agents, and a client that decodes native SSE
//! into the strict accumulator.
#![allow(clippy::unwrap_used, dead_code, unreachable_pub)]

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

use agentwire_brain::ScriptedBrain;
use agentwire_core::{Accumulator, Event, Message};
use agentwire_dialects::StreamDecoder;
use agentwire_dialects::native::NativeSseDecoder;
use agentwire_runtime::{Agent, Telemetry};
use agentwire_server::{Server, Settings};
use agentwire_tools::{FnTool, JsonSchema};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::oneshot;

/// A server running in this test's runtime; dropping it shuts it down.
pub struct TestServer {
    pub url: String,
    pub http: reqwest::Client,
    stop: Option<oneshot::Sender<()>>,
    pub done: Option<tokio::task::JoinHandle<std::io::Result<()>>>,
}

impl TestServer {
    pub async fn start(agents: Vec<Agent>, settings: Settings) -> Self {
        let settings = Settings {
            addr: "127.0.0.1:0".parse().unwrap(),
            ..settings
        };
        Self::serve(Server::open(agents, settings).await.unwrap()).await
    }

    /// A server whose runs record OpenTelemetry through `telemetry`.
    #[allow(dead_code)]
    pub async fn start_with_telemetry(agents: Vec<Agent>, telemetry: Telemetry) -> Self {
        let settings = Settings {
            addr: "127.0.0.1:0".parse().unwrap(),
            ..Settings::default()
        };
        let server = Server::open_with_telemetry(agents, settings, Some(telemetry));
        Self::serve(server.await.unwrap()).await
    }

    /// Serves `server` on the address it binds.
    pub async fn serve(server: Server) -> Self {
        let listener = server.bind().await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let (stop, stopped) = oneshot::channel::<()>();
        let done = tokio::spawn(server.serve(listener, async move {
            let _ = stopped.await;
        }));
        Self {
            url,
            http: reqwest::Client::new(),
            stop: Some(stop),
            done: Some(done),
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.url)
    }

    /// `GET /v1/runs/{id}` until the run has completed (5 s at most); its JSON.
    pub async fn completed_run(&self, id: &str) -> Value {
        let mut run = Value::Null;
        for _ in 0..100 {
            run = self
                .http
                .get(self.url(&format!("/v1/runs/{id}")))
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            if run["run"]["status"] == "completed" {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert_eq!(run["run"]["status"], "completed", "{run}");
        run
    }

    /// `POST`s `body` as JSON to `path`.
    /// The body of `GET path`, as text.
    pub async fn get_text(&self, path: &str) -> String {
        let response = self.http.get(self.url(path)).send().await.unwrap();
        response.text().await.unwrap()
    }

    pub async fn post_json(&self, path: &str, body: &Value) -> reqwest::Response {
        self.http
            .post(self.url(path))
            .json(body)
            .send()
            .await
            .unwrap()
    }

    /// `POST /v1/runs` with `Accept: text/event-stream`: the run's stream, unread.
    pub async fn post_sse(&self, body: &Value) -> SseClient {
        let response = self
            .http
            .post(self.url("/v1/runs"))
            .header("accept", "text/event-stream")
            .json(body)
            .send()
            .await
            .unwrap();
        SseClient::new(response)
    }

    /// `GET /v1/runs/{id}/events?after=` read to the end of the stream.
    pub async fn events_after(&self, id: &str, after: u64) -> SseClient {
        let response = self
            .http
            .get(self.url(&format!("/v1/runs/{id}/events?after={after}")))
            .send()
            .await
            .unwrap();
        let mut client = SseClient::resumed(response);
        client.until_end().await;
        client
    }

    /// Signals shutdown.
    pub fn stop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }

    /// Signals shutdown and waits for the server to exit.
    pub async fn shutdown(mut self) {
        self.stop();
        let done = self.done.take().unwrap();
        tokio::time::timeout(Duration::from_secs(10), done)
            .await
            .expect("the server exits")
            .unwrap()
            .unwrap();
    }
}

/// Reads a native SSE response into events and the accumulator.
pub struct SseClient {
    pub response: reqwest::Response,
    decoder: NativeSseDecoder,
    pub events: Vec<Event>,
    pub accumulator: Accumulator,
    /// Whether events go to the accumulator (a resumed stream starts mid-message).
    accumulate: bool,
}

impl SseClient {
    /// A reader of a stream resumed mid-run: events only, no accumulator.
    pub fn resumed(response: reqwest::Response) -> Self {
        Self {
            accumulate: false,
            ..Self::new(response)
        }
    }

    pub fn new(response: reqwest::Response) -> Self {
        assert_eq!(response.status(), 200);
        assert_eq!(
            response.headers()["content-type"].to_str().unwrap(),
            "text/event-stream"
        );
        Self {
            response,
            decoder: NativeSseDecoder::default(),
            events: Vec::new(),
            accumulator: Accumulator::default(),
            accumulate: true,
        }
    }

    /// Reads one chunk; false at the end of the body.
    pub async fn read_chunk(&mut self) -> bool {
        let chunk = tokio::time::timeout(Duration::from_secs(10), self.response.chunk())
            .await
            .expect("a chunk within 10 s")
            .unwrap();
        let Some(chunk) = chunk else {
            let mut rest = Vec::new();
            self.decoder.finish(&mut rest).unwrap();
            self.take(rest);
            return false;
        };
        let mut events = Vec::new();
        self.decoder.decode(&chunk, &mut events).unwrap();
        self.take(events);
        true
    }

    fn take(&mut self, events: Vec<Event>) {
        for event in events {
            if self.accumulate {
                self.accumulator.push(&event).unwrap();
            }
            self.events.push(event);
        }
    }

    /// Reads to the end of the body.
    pub async fn until_end(&mut self) {
        while self.read_chunk().await {}
    }

    /// Reads until at least `n` events (heartbeats aside) have arrived.
    pub async fn until_events(&mut self, n: usize) {
        while self.numbered().len() < n {
            assert!(self.read_chunk().await, "the stream ended early");
        }
    }

    /// The sequence numbers of the events, heartbeats left out.
    pub fn numbered(&self) -> Vec<u64> {
        self.events
            .iter()
            .filter(|event| event.name() != "heartbeat")
            .map(|event| event.seq)
            .collect()
    }

    pub fn messages(&self) -> &[Message] {
        self.accumulator.messages()
    }
}

/// An agent answering every run with `words`, paced at `tokens_per_second` (0: unpaced).
pub fn talker(name: &str, words: &[&str], tokens_per_second: f64) -> Agent {
    let deltas: Vec<Value> = words
        .iter()
        .map(|word| json!({"type": "text_delta", "text": word}))
        .collect();
    let mut turn = deltas;
    turn.push(json!({"type": "finish", "reason": "stop", "usage": {"input_tokens": 3, "output_tokens": 2, "total_tokens": 5}}));
    // One turn per run: enough turns for the runs a test starts.
    let script = json!({"turns": vec![Value::Array(turn); 8]});
    let brain = ScriptedBrain::from_json(&script.to_string())
        .unwrap()
        .with_tokens_per_second(tokens_per_second);
    Agent::builder(name).brain(brain).build().unwrap()
}

/// The arguments of `rm`.
#[derive(Deserialize, JsonSchema)]
#[schemars(crate = "agentwire_tools::schemars")]
struct Rm {
    path: String,
}

/// An agent that calls `rm` (which needs approval), then says `done`.
pub fn approver() -> Agent {
    approver_of(&["a.txt"])
}

/// The approver removing each of `paths`, all asked in one step.
pub fn approver_of(paths: &[&str]) -> Agent {
    let mut ask = Vec::new();
    for (n, path) in paths.iter().enumerate() {
        let id = format!("c{}", n + 1);
        ask.extend([
            json!({"type": "tool_call_start", "id": id, "name": "rm"}),
            json!({"type": "tool_call_delta", "id": id, "args": json!({"path": path}).to_string()}),
            json!({"type": "tool_call_end", "id": id}),
        ]);
    }
    ask.push(json!({"type": "finish", "reason": "tool_calls"}));
    let script = json!({"turns": [
        ask,
        [{"type": "text_delta", "text": "done"}, {"type": "finish", "reason": "stop"}]
    ]});
    let rm = FnTool::new("rm", "Removes a file", |args: Rm, _| async move {
        Ok(format!("removed {}", args.path))
    });
    Agent::builder("approver")
        .brain(ScriptedBrain::from_json(&script.to_string()).unwrap())
        .tool(rm)
        .approval(["rm"])
        .build()
        .unwrap()
}

/// A `POST /v1/runs` body with one user message.
pub fn run_body(agent: Option<&str>, text: &str) -> Value {
    let mut body = json!({"input": [{"role": "user", "parts": [{"type": "text", "text": text}]}]});
    if let Some(agent) = agent {
        body["agent"] = json!(agent);
    }
    body
}

/// The text of a message's text parts, from its JSON.
pub fn text_of(message: &Value) -> String {
    message["parts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|part| part["type"] == "text")
        .map(|part| part["text"].as_str().unwrap())
        .collect()
}

/// The `(method, path)` of every `.route(…)` in the server's source: the native routes as
/// written, the dialect routes at the root and under `/agents/{name}`.
pub fn routes_in_source() -> BTreeSet<(String, String)> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    let mut dirs = vec![src.clone()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|ext| ext == "rs") {
                files.push(path);
            }
        }
    }
    let mut routes = BTreeSet::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let dialect = file.starts_with(src.join("dialects"));
        for (at, _) in text.match_indices(".route(") {
            // rustfmt may break the line before a long path.
            let Some(rest) = text[at + ".route(".len()..].trim_start().strip_prefix('"') else {
                continue;
            };
            let path = &rest[..rest.find('"').unwrap()];
            // The methods: `get(`, `post(`, `.delete(` … up to the end of the `.route(` call.
            let mut depth = 1;
            let call: String = text[at + ".route(".len()..]
                .chars()
                .take_while(|c| {
                    match c {
                        '(' => depth += 1,
                        ')' => depth -= 1,
                        _ => {}
                    }
                    depth > 0
                })
                .collect();
            let mut methods = Vec::new();
            for method in ["get", "post", "put", "patch", "delete"] {
                let direct = call.match_indices(&format!("{method}(")).any(|(i, _)| {
                    i == 0 || !call[..i].ends_with(|c: char| c.is_alphanumeric() || c == '_')
                });
                if direct {
                    methods.push(method);
                }
            }
            assert!(
                !methods.is_empty(),
                "no method found for {path} in {file:?}"
            );
            for method in methods {
                routes.insert((method.to_owned(), path.to_owned()));
                if dialect {
                    routes.insert((method.to_owned(), format!("/agents/{{name}}{path}")));
                }
            }
        }
    }
    routes
}

/// An answer's status, `ETag` and JSON body.
pub async fn read(response: reqwest::Response) -> (u16, Option<String>, Value) {
    let status = response.status().as_u16();
    let etag = response
        .headers()
        .get("etag")
        .map(|value| value.to_str().unwrap().to_owned());
    let text = response.text().await.unwrap();
    (
        status,
        etag,
        serde_json::from_str(&text).unwrap_or(Value::Null),
    )
}

pub async fn get_state(server: &TestServer, session: &str) -> (u16, Option<String>, Value) {
    let path = format!("/v1/sessions/{session}/state");
    read(server.http.get(server.url(&path)).send().await.unwrap()).await
}

pub async fn put_state(
    server: &TestServer,
    session: &str,
    body: &Value,
    if_match: Option<&str>,
) -> (u16, Option<String>, Value) {
    let path = format!("/v1/sessions/{session}/state");
    let mut request = server.http.put(server.url(&path)).json(body);
    if let Some(version) = if_match {
        request = request.header("if-match", version);
    }
    read(request.send().await.unwrap()).await
}

pub async fn patch_state(
    server: &TestServer,
    session: &str,
    patch: &Value,
    content_type: &str,
) -> (u16, Option<String>, Value) {
    let path = format!("/v1/sessions/{session}/state");
    let request = server
        .http
        .patch(server.url(&path))
        .header("content-type", content_type)
        .body(patch.to_string());
    read(request.send().await.unwrap()).await
}
