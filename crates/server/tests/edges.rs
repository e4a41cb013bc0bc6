//! The server's edges over real HTTP: `/metrics` moved exactly by real runs (completed, failed,
//! canceled), CORS for allowed and refused origins, the server's ceilings on tool output and
//! run duration, and the run span around everything a run does.
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use agentwire_brain::ScriptedBrain;
use agentwire_core::RunStatus;
use agentwire_runtime::Agent;
use agentwire_server::Settings;
use agentwire_tools::{FnTool, JsonSchema};
use common::{SseClient, TestServer, run_body, talker};
use serde::Deserialize;
use serde_json::{Value, json};

const WORDS: &[&str] = &["Hello", ",", " world", "!"];

/// An agent whose model fails after one delta.
fn failing() -> Agent {
    let script = json!({"turns": [[
        {"type": "text_delta", "text": "Hm"},
        {"type": "error", "message": "the provider broke"}
    ]]});
    Agent::builder("failing")
        .brain(ScriptedBrain::from_json(&script.to_string()).unwrap())
        .build()
        .unwrap()
}

fn run_id(client: &SseClient) -> String {
    match &client.events[0].kind {
        agentwire_core::EventKind::RunCreated { run_id, .. } => run_id.to_string(),
        other => panic!("the stream starts with run_created, not {other:?}"),
    }
}

/// The samples of an OpenMetrics text: `name{labels}` (labels as written, sorted by the
/// server's order) → value. Every line must be a comment, a sample or `# EOF`, the last line.
fn samples(text: &str) -> HashMap<String, f64> {
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.last(), Some(&"# EOF"), "{text}");
    let mut samples = HashMap::new();
    for line in &lines[..lines.len() - 1] {
        if line.starts_with("# HELP ") || line.starts_with("# TYPE ") || line.starts_with("# UNIT ")
        {
            continue;
        }
        let (series, value) = line
            .rsplit_once(' ')
            .unwrap_or_else(|| panic!("not a sample: {line:?}"));
        let value: f64 = value
            .parse()
            .unwrap_or_else(|_| panic!("not a number: {line:?}"));
        assert!(
            samples.insert(series.to_owned(), value).is_none(),
            "{series} twice"
        );
    }
    samples
}

async fn scrape(server: &TestServer) -> HashMap<String, f64> {
    let response = server
        .http
        .get(server.url("/metrics"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.headers()["content-type"],
        "application/openmetrics-text; version=1.0.0; charset=utf-8"
    );
    samples(&response.text().await.unwrap())
}

/// A scrape once `agentwire_event_streams` is `open`: a stream counts until the server has
/// dropped its body, a moment after the client read its end.
async fn scrape_with_streams(server: &TestServer, open: f64) -> HashMap<String, f64> {
    for _ in 0..100 {
        let samples = scrape(server).await;
        if samples["agentwire_event_streams"] == open {
            return samples;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("agentwire_event_streams never became {open}");
}

/// How much each series moved between two scrapes (a series new in `after` moved from 0).
fn moved(before: &HashMap<String, f64>, after: &HashMap<String, f64>, series: &str) -> f64 {
    let now = after
        .get(series)
        .unwrap_or_else(|| panic!("no series {series}"));
    now - before.get(series).copied().unwrap_or(0.0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_move_exactly_with_completed_failed_and_canceled_runs() {
    let server = TestServer::start(
        vec![
            talker("assistant", WORDS, 0.0),
            talker("snail", &["a", "b", "c", "d", "e", "f", "g", "h"], 4.0),
            failing(),
        ],
        Settings::default(),
    )
    .await;
    let before = scrape(&server).await;
    for agent in ["assistant", "snail", "failing"] {
        let series = format!("agentwire_runs_in_progress{{agent=\"{agent}\"}}");
        assert_eq!(before[&series], 0.0);
        for status in ["completed", "failed", "canceled", "rejected", "incomplete"] {
            let series =
                format!("agentwire_runs_ended_total{{agent=\"{agent}\",status=\"{status}\"}}");
            assert_eq!(before[&series], 0.0, "{series} exists from the start");
        }
    }
    let mut events = 0;

    // Two completed runs (usage 3 in, 2 out each), one streamed and one answered as JSON.
    let mut completed = server.post_sse(&run_body(None, "hi")).await;
    completed.until_end().await;
    events += completed.numbered().len();
    let json: Value = server
        .post_json("/v1/runs", &run_body(None, "again"))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(json["run"]["status"], "completed");
    let replay = server
        .http
        .get(server.url(&format!(
            "/v1/runs/{}/events",
            json["run"]["id"].as_str().unwrap()
        )))
        .send()
        .await
        .unwrap();
    let mut replay = SseClient::new(replay);
    replay.until_end().await;
    events += replay.numbered().len();

    // One failed run.
    let mut failed = server.post_sse(&run_body(Some("failing"), "hi")).await;
    failed.until_end().await;
    assert_eq!(failed.accumulator.status(), Some(RunStatus::Failed));
    events += failed.numbered().len();

    // One canceled run, with its stream open while we look.
    let mut canceled = server.post_sse(&run_body(Some("snail"), "hi")).await;
    while !canceled
        .events
        .iter()
        .any(|event| event.name() == "part_delta")
    {
        assert!(canceled.read_chunk().await);
    }
    let during = scrape_with_streams(&server, 1.0).await;
    assert_eq!(during["agentwire_runs_in_progress{agent=\"snail\"}"], 1.0);
    let cancel = server
        .http
        .post(server.url(&format!("/v1/runs/{}/cancel", run_id(&canceled))))
        .send()
        .await
        .unwrap();
    assert_eq!(cancel.status(), 202);
    canceled.until_end().await;
    assert_eq!(canceled.accumulator.status(), Some(RunStatus::Canceled));
    events += canceled.numbered().len();
    drop(canceled);
    drop(completed);
    drop(failed);
    drop(replay);

    let after = scrape_with_streams(&server, 0.0).await;
    let moved = |series: &str| moved(&before, &after, series);
    assert_eq!(
        moved("agentwire_runs_started_total{agent=\"assistant\"}"),
        2.0
    );
    assert_eq!(
        moved("agentwire_runs_started_total{agent=\"failing\"}"),
        1.0
    );
    assert_eq!(moved("agentwire_runs_started_total{agent=\"snail\"}"), 1.0);
    let ended = |agent: &str, status: &str| {
        moved(&format!(
            "agentwire_runs_ended_total{{agent=\"{agent}\",status=\"{status}\"}}"
        ))
    };
    assert_eq!(ended("assistant", "completed"), 2.0);
    assert_eq!(ended("failing", "failed"), 1.0);
    assert_eq!(ended("snail", "canceled"), 1.0);
    let every_ending: f64 = ["assistant", "snail", "failing"]
        .iter()
        .flat_map(|agent| {
            ["completed", "failed", "canceled", "rejected", "incomplete"]
                .map(|status| ended(agent, status))
        })
        .sum();
    assert_eq!(every_ending, 4.0, "no other ending moved");
    for agent in ["assistant", "snail", "failing"] {
        let series = format!("agentwire_runs_in_progress{{agent=\"{agent}\"}}");
        assert_eq!(after[&series], 0.0, "{series}");
    }
    assert_eq!(
        moved("agentwire_tokens_total{agent=\"assistant\",kind=\"input\"}"),
        6.0
    );
    assert_eq!(
        moved("agentwire_tokens_total{agent=\"assistant\",kind=\"output\"}"),
        4.0
    );
    assert_eq!(moved("agentwire_run_events_total"), events as f64);
    // Every run streamed a delta; every run ended.
    assert_eq!(
        moved("agentwire_run_first_delta_seconds_count{agent=\"assistant\"}"),
        2.0
    );
    assert_eq!(
        moved("agentwire_run_first_delta_seconds_count{agent=\"failing\"}"),
        1.0
    );
    assert_eq!(
        moved("agentwire_run_first_delta_seconds_count{agent=\"snail\"}"),
        1.0
    );
    assert_eq!(
        moved("agentwire_run_duration_seconds_count{agent=\"assistant\"}"),
        2.0
    );
    assert_eq!(
        moved("agentwire_run_duration_seconds_count{agent=\"snail\"}"),
        1.0
    );
    assert!(moved("agentwire_run_duration_seconds_sum{agent=\"snail\"}") > 0.0);
    assert_eq!(
        moved("agentwire_run_duration_seconds_bucket{le=\"+Inf\",agent=\"snail\"}"),
        1.0
    );
    // Requests by route pattern, never by id.
    assert_eq!(
        moved(
            "agentwire_http_request_duration_seconds_count{method=\"POST\",route=\"/v1/runs\",status=\"200\"}"
        ),
        4.0
    );
    assert_eq!(
        moved(
            "agentwire_http_request_duration_seconds_count{method=\"POST\",route=\"/v1/runs/{id}/cancel\",status=\"202\"}"
        ),
        1.0
    );
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_want_a_key_when_keys_are_configured() {
    let server = TestServer::start(
        vec![talker("assistant", WORDS, 0.0)],
        Settings {
            api_keys: vec!["k1".into()],
            ..Settings::default()
        },
    )
    .await;
    let refused = server
        .http
        .get(server.url("/metrics"))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 401);
    let body: Value = refused.json().await.unwrap();
    assert_eq!(body["error"]["code"], "unauthorized");
    let scraped = server
        .http
        .get(server.url("/metrics"))
        .bearer_auth("k1")
        .send()
        .await
        .unwrap();
    assert_eq!(scraped.status(), 200);
    let health = server
        .http
        .get(server.url("/healthz"))
        .send()
        .await
        .unwrap();
    assert_eq!(health.status(), 200, "health checks need no key");
    server.shutdown().await;
}

async fn cors_server(origins: &[&str]) -> TestServer {
    TestServer::start(
        vec![talker("assistant", WORDS, 0.0)],
        Settings {
            cors_origins: origins.iter().map(ToString::to_string).collect(),
            ..Settings::default()
        },
    )
    .await
}

async fn preflight(server: &TestServer, origin: &str) -> reqwest::Response {
    server
        .http
        .request(reqwest::Method::OPTIONS, server.url("/v1/runs"))
        .header("origin", origin)
        .header("access-control-request-method", "POST")
        .header(
            "access-control-request-headers",
            "authorization,content-type,last-event-id",
        )
        .send()
        .await
        .unwrap()
}

async fn simple(server: &TestServer, origin: &str) -> reqwest::Response {
    server
        .http
        .post(server.url("/v1/runs"))
        .header("origin", origin)
        .json(&run_body(None, "hi"))
        .send()
        .await
        .unwrap()
}

fn header<'a>(response: &'a reqwest::Response, name: &str) -> Option<&'a str> {
    response
        .headers()
        .get(name)
        .map(|value| value.to_str().unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cors_lets_configured_origins_in_and_keeps_others_out() {
    let server = cors_server(&["https://app.example"]).await;
    let allowed = preflight(&server, "https://app.example").await;
    assert_eq!(allowed.status(), 200);
    assert_eq!(
        header(&allowed, "access-control-allow-origin"),
        Some("https://app.example")
    );
    let methods = header(&allowed, "access-control-allow-methods").unwrap();
    assert!(methods.contains("POST"), "{methods}");
    let headers = header(&allowed, "access-control-allow-headers").unwrap();
    for needed in ["authorization", "content-type", "last-event-id"] {
        assert!(headers.contains(needed), "{needed} in {headers}");
    }
    assert_eq!(header(&allowed, "access-control-allow-credentials"), None);

    let refused = preflight(&server, "https://evil.example").await;
    assert_eq!(header(&refused, "access-control-allow-origin"), None);

    let allowed = simple(&server, "https://app.example").await;
    assert_eq!(allowed.status(), 200);
    assert_eq!(
        header(&allowed, "access-control-allow-origin"),
        Some("https://app.example")
    );
    assert_eq!(
        header(&allowed, "access-control-expose-headers"),
        Some("x-agentwire-run-id")
    );
    let refused = simple(&server, "https://evil.example").await;
    assert_eq!(header(&refused, "access-control-allow-origin"), None);
    server.shutdown().await;

    let any = cors_server(&["*"]).await;
    let allowed = preflight(&any, "https://anyone.example").await;
    assert_eq!(header(&allowed, "access-control-allow-origin"), Some("*"));
    let allowed = simple(&any, "https://anyone.example").await;
    assert_eq!(header(&allowed, "access-control-allow-origin"), Some("*"));
    any.shutdown().await;

    let none = cors_server(&[]).await;
    let refused = preflight(&none, "https://app.example").await;
    assert_eq!(header(&refused, "access-control-allow-origin"), None);
    // Without keys, a page of another origin is refused by the server itself, not only by the
    // browser's reading rules: its request would otherwise run the agent.
    let refused = simple(&none, "https://app.example").await;
    assert_eq!(refused.status(), 403);
    assert_eq!(header(&refused, "access-control-allow-origin"), None);
    none.shutdown().await;
}

/// The arguments of the dump tools.
#[derive(Deserialize, JsonSchema)]
#[schemars(crate = "agentwire_tools::schemars")]
struct Dump {
    bytes: usize,
}

/// An agent that calls `dump_text` and `dump_json` (each 5,000 bytes, well inside the
/// toolbox's own 128 KiB), then says `done`.
fn dumper() -> Agent {
    let script = json!({"turns": [
        [{"type": "tool_call_start", "id": "c1", "name": "dump_text"},
         {"type": "tool_call_delta", "id": "c1", "args": "{\"bytes\": 5000}"},
         {"type": "tool_call_end", "id": "c1"},
         {"type": "tool_call_start", "id": "c2", "name": "dump_json"},
         {"type": "tool_call_delta", "id": "c2", "args": "{\"bytes\": 5000}"},
         {"type": "tool_call_end", "id": "c2"},
         {"type": "finish", "reason": "tool_calls"}],
        [{"type": "text_delta", "text": "done"}, {"type": "finish", "reason": "stop"}]
    ]});
    let text = FnTool::new("dump_text", "Text", |args: Dump, _| async move {
        Ok("x".repeat(args.bytes))
    });
    let object = FnTool::new("dump_json", "JSON", |args: Dump, _| async move {
        Ok(json!({"data": "y".repeat(args.bytes)}))
    });
    Agent::builder("dumper")
        .brain(ScriptedBrain::from_json(&script.to_string()).unwrap())
        .tool(text)
        .tool(object)
        .build()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_servers_tool_output_ceiling_caps_every_agent() {
    let server = TestServer::start(
        vec![dumper()],
        Settings {
            max_tool_output_bytes: 1000,
            ..Settings::default()
        },
    )
    .await;
    let mut client = server.post_sse(&run_body(None, "dump")).await;
    client.until_end().await;
    assert_eq!(client.accumulator.status(), Some(RunStatus::Completed));
    let message = serde_json::to_value(&client.messages()[0]).unwrap();
    let parts = message["parts"].as_array().unwrap();
    let text = parts
        .iter()
        .find(|part| part["type"] == "tool_result" && part["tool_call_id"] == "c1")
        .unwrap();
    let result = text["result"].as_str().unwrap();
    assert!(
        serde_json::to_string(result).unwrap().len() <= 1000,
        "cut to the ceiling"
    );
    assert!(
        result.ends_with("over the limit of 1000]"),
        "{}",
        &result[result.len() - 80..]
    );
    let object = parts
        .iter()
        .find(|part| part["tool_call_id"] == "c2" && part["type"] != "tool_call")
        .unwrap();
    assert_eq!(object["type"], "tool_error", "{object}");
    assert_eq!(object["error_type"], "EXECUTION");
    let why = object["message"].as_str().unwrap();
    assert!(why.contains("over the limit of 1000 bytes"), "{why}");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_over_the_servers_duration_ends_incomplete_with_what_was_complete() {
    let words = ["one ", "two ", "three ", "four ", "five ", "six ", "seven "];
    let server = TestServer::start(
        vec![talker("snail", &words, 10.0)],
        Settings {
            max_run_duration: Duration::from_millis(350),
            ..Settings::default()
        },
    )
    .await;
    let mut client = server.post_sse(&run_body(None, "go")).await;
    client.until_end().await;
    assert_eq!(client.accumulator.status(), Some(RunStatus::Incomplete));
    let id = run_id(&client);
    let run: Value = server
        .http
        .get(server.url(&format!("/v1/runs/{id}")))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(run["run"]["status"], "incomplete");
    assert_eq!(run["run"]["error"]["code"], "max_duration");
    let message = run["run"]["error"]["message"].as_str().unwrap();
    assert!(message.contains("350 ms"), "{message}");
    // What streamed before the limit is kept, complete, and it is less than the whole answer.
    let output = &run["output"][0];
    let text = common::text_of(output);
    assert!(
        !text.is_empty() && words.concat().starts_with(&text),
        "{text:?}"
    );
    assert!(text.len() < words.concat().len(), "{text:?}");
    assert_eq!(client.messages()[0].content(), text);
    server.shutdown().await;
}

/// Every event logged while the test ran, with the fields of the spans it was in.
#[derive(Clone, Debug)]
struct Logged {
    message: String,
    spans: Vec<(String, HashMap<String, String>)>,
}

static LOGGED: OnceLock<Arc<Mutex<Vec<Logged>>>> = OnceLock::new();

mod capture {
    //! A `tracing` layer that records each event with its spans' fields.
    use std::collections::HashMap;
    use std::fmt::Debug;

    use tracing::field::{Field, Visit};
    use tracing::span::{Attributes, Id, Record};
    use tracing::{Event, Subscriber};
    use tracing_subscriber::Layer;
    use tracing_subscriber::layer::Context;
    use tracing_subscriber::registry::LookupSpan;

    use super::{LOGGED, Logged};

    #[derive(Default)]
    struct Fields(HashMap<String, String>);

    impl Visit for Fields {
        fn record_debug(&mut self, field: &Field, value: &dyn Debug) {
            self.0.insert(field.name().to_owned(), format!("{value:?}"));
        }
        fn record_str(&mut self, field: &Field, value: &str) {
            self.0.insert(field.name().to_owned(), value.to_owned());
        }
    }

    pub(super) struct Capture;

    impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Capture {
        fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
            let mut fields = Fields::default();
            attrs.record(&mut fields);
            if let Some(span) = ctx.span(id) {
                span.extensions_mut().insert(fields);
            }
        }

        fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
            if let Some(span) = ctx.span(id)
                && let Some(fields) = span.extensions_mut().get_mut::<Fields>()
            {
                values.record(fields);
            }
        }

        fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
            let mut fields = Fields::default();
            event.record(&mut fields);
            let spans = ctx
                .event_scope(event)
                .map(|scope| {
                    scope
                        .map(|span| {
                            let fields = span
                                .extensions()
                                .get::<Fields>()
                                .map(|fields| fields.0.clone())
                                .unwrap_or_default();
                            (span.name().to_owned(), fields)
                        })
                        .collect()
                })
                .unwrap_or_default();
            let message = fields.0.remove("message").unwrap_or_default();
            if let Some(logged) = LOGGED.get() {
                logged.lock().unwrap().push(Logged { message, spans });
            }
        }
    }
}

/// An agent whose tool logs a line, from its own task.
fn logger() -> Agent {
    let script = json!({"turns": [
        [{"type": "tool_call_start", "id": "c1", "name": "note"},
         {"type": "tool_call_delta", "id": "c1", "args": "{\"bytes\": 1}"},
         {"type": "tool_call_end", "id": "c1"},
         {"type": "finish", "reason": "tool_calls"}],
        [{"type": "text_delta", "text": "noted"}, {"type": "finish", "reason": "stop"}]
    ]});
    let note = FnTool::new("note", "Notes", |_: Dump, _| async move {
        tracing::info!("the note tool ran");
        Ok("noted")
    });
    Agent::builder("logger")
        .brain(ScriptedBrain::from_json(&script.to_string()).unwrap())
        .tool(note)
        .build()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_line_logged_inside_a_run_carries_the_run_span() {
    use tracing_subscriber::layer::SubscriberExt;
    let logged = Arc::clone(LOGGED.get_or_init(Arc::default));
    let subscriber = tracing_subscriber::registry().with(capture::Capture);
    // The runs' tasks run on the runtime's worker threads: the subscriber must be global.
    tracing::subscriber::set_global_default(subscriber).unwrap();

    let server = TestServer::start(vec![logger()], Settings::default()).await;
    let mut client = server.post_sse(&run_body(None, "note it")).await;
    client.until_end().await;
    assert_eq!(client.accumulator.status(), Some(RunStatus::Completed));
    let id = run_id(&client);
    let session = match &client.events[0].kind {
        agentwire_core::EventKind::RunCreated { session_id, .. } => {
            session_id.as_ref().unwrap().to_string()
        }
        _ => unreachable!(),
    };
    let logged = logged.lock().unwrap().clone();
    let line = logged
        .iter()
        .find(|line| line.message == "the note tool ran")
        .unwrap_or_else(|| panic!("the tool's line was captured: {logged:?}"));
    let (_, run) = line
        .spans
        .iter()
        .find(|(name, _)| name == "run")
        .unwrap_or_else(|| panic!("the line is inside a run span: {line:?}"));
    assert_eq!(run["run_id"], id);
    assert_eq!(run["agent"], "logger");
    assert_eq!(run["session"], session);
    assert_eq!(run["node"], "local");
    server.shutdown().await;
}

#[test]
fn the_server_table_reads_and_checks_the_edge_settings() {
    let read =
        |server: &str| agentwire_server::ConfigFile::from_toml(&format!("[server]\n{server}"));
    let file = read(
        "cors_origins = [\"https://app.example\", \"http://localhost:5173\"]\n\
         max_tool_output_bytes = 2048\nmax_run_seconds = 30",
    )
    .unwrap();
    let settings = file.server.settings(|_| None).unwrap();
    assert_eq!(
        settings.cors_origins,
        ["https://app.example", "http://localhost:5173"]
    );
    assert_eq!(settings.max_tool_output_bytes, 2048);
    assert_eq!(settings.max_run_duration, Duration::from_secs(30));
    let defaults = read("").unwrap().server.settings(|_| None).unwrap();
    assert!(
        defaults.cors_origins.is_empty(),
        "same-origin only by default"
    );
    assert_eq!(defaults.max_tool_output_bytes, 1024 * 1024);
    assert_eq!(defaults.max_run_duration, Duration::from_secs(900));
    assert_eq!(
        read("cors_origins = [\"*\"]").unwrap().server.cors_origins,
        ["*"]
    );
    for (bad, says) in [
        (
            "cors_origins = [\"*\", \"https://a.example\"]",
            "must stand alone",
        ),
        ("cors_origins = [\"https://app.example/\"]", "not an origin"),
        ("cors_origins = [\"app.example\"]", "not an origin"),
        ("max_run_seconds = 0", "nonzero"),
        ("max_run_secs = 5", "unknown field"),
    ] {
        let error = read(bad).unwrap_err().to_string();
        assert!(error.contains(says), "{bad}: {error}");
    }
}
