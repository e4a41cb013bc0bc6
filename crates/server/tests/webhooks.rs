//! Webhooks against a real receiver on loopback: deliveries of every status change, signed as
//! Standard Webhooks; retried while the receiver fails, across a restart of the server; per
//! key; and URLs to internal addresses refused unless allowed. On SQLite, and on PostgreSQL
//! when `AGENTWIRE_TEST_DATABASE_URL` is set.
#![allow(clippy::unwrap_used)]

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use agentwire_server::{ApiKey, Settings, WebhookSettings};
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use common::{TestServer, run_body, talker};
use hmac::{Hmac, KeyInit, Mac};
use serde_json::{Value, json};
use sha2::Sha256;
use tokio::sync::mpsc;

const WORDS: &[&str] = &["hooked ", "up"];

/// A webhook receiver on `127.0.0.1:0`: answers 503 while `down`, else 204, and hands every
/// delivery it took to the test.
struct Receiver {
    url: String,
    down: Arc<AtomicBool>,
    refused: Arc<AtomicUsize>,
    taken: mpsc::UnboundedReceiver<(HeaderMap, Value)>,
}

#[derive(Clone)]
struct ReceiverState {
    down: Arc<AtomicBool>,
    refused: Arc<AtomicUsize>,
    taken: mpsc::UnboundedSender<(HeaderMap, Value)>,
}

impl Receiver {
    async fn start() -> Self {
        let (sender, taken) = mpsc::unbounded_channel();
        let state = ReceiverState {
            down: Arc::new(AtomicBool::new(false)),
            refused: Arc::new(AtomicUsize::new(0)),
            taken: sender,
        };
        let (down, refused) = (Arc::clone(&state.down), Arc::clone(&state.refused));
        let app = axum::Router::new()
            .route("/hook", axum::routing::post(take))
            .with_state(state);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/hook", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        Self {
            url,
            down,
            refused,
            taken,
        }
    }

    /// The next delivery taken (10 s at most).
    async fn next(&mut self) -> (HeaderMap, Value) {
        tokio::time::timeout(Duration::from_secs(10), self.taken.recv())
            .await
            .expect("a delivery within 10 s")
            .unwrap()
    }

    /// Deliveries until one of each of `types` came (deliveries are not ordered: each
    /// carries its status's `seq`); all of them.
    async fn until(&mut self, types: &[&str]) -> Vec<(HeaderMap, Value)> {
        let mut taken: Vec<(HeaderMap, Value)> = Vec::new();
        while !types
            .iter()
            .all(|wanted| taken.iter().any(|(_, body)| body["type"] == *wanted))
        {
            taken.push(self.next().await);
        }
        taken
    }
}

async fn take(State(state): State<ReceiverState>, headers: HeaderMap, body: Bytes) -> StatusCode {
    if state.down.load(Ordering::SeqCst) {
        state.refused.fetch_add(1, Ordering::SeqCst);
        return StatusCode::SERVICE_UNAVAILABLE;
    }
    let body: Value = serde_json::from_slice(&body).unwrap();
    let _ = state.taken.send((headers, body));
    StatusCode::NO_CONTENT
}

/// Checks a delivery's Standard Webhooks signature with `secret`, independently of the server.
#[track_caller]
fn check_signature(headers: &HeaderMap, body: &Value, secret: &str) {
    let header = |name: &str| headers.get(name).unwrap().to_str().unwrap().to_owned();
    let (id, timestamp) = (header("webhook-id"), header("webhook-timestamp"));
    let key = STANDARD
        .decode(secret.strip_prefix("whsec_").unwrap())
        .unwrap();
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(&key).unwrap();
    // The receiver re-serializes the JSON; serde_json with preserve_order writes what it read.
    mac.update(format!("{id}.{timestamp}.{}", serde_json::to_string(body).unwrap()).as_bytes());
    let expected = format!("v1,{}", STANDARD.encode(mac.finalize().into_bytes()));
    assert_eq!(header("webhook-signature"), expected);
}

fn settings(database_url: Option<String>) -> Settings {
    Settings {
        database_url,
        webhooks: WebhookSettings {
            allow_private: true,
            timeout: Duration::from_secs(2),
            max_backoff: Duration::from_millis(500),
            ..WebhookSettings::default()
        },
        ..Settings::default()
    }
}

async fn create_webhook(server: &TestServer, body: &Value) -> Value {
    let response = server.post_json("/v1/webhooks", body).await;
    assert_eq!(response.status(), 201);
    response.json().await.unwrap()
}

async fn start_run(server: &TestServer) -> String {
    let run: Value = server
        .post_json("/v1/runs", &run_body(None, "go"))
        .await
        .json()
        .await
        .unwrap();
    run["run"]["id"].as_str().unwrap().to_owned()
}

async fn every_status_change_is_delivered_signed(database_url: Option<String>) {
    let mut receiver = Receiver::start().await;
    let server = TestServer::start(
        vec![talker("assistant", WORDS, 0.0)],
        settings(database_url),
    )
    .await;
    let webhook = create_webhook(&server, &json!({"url": receiver.url})).await;
    let secret = webhook["secret"].as_str().unwrap().to_owned();
    assert!(secret.starts_with("whsec_"));
    assert_eq!(webhook["events"].as_array().unwrap().len(), 9);

    let run_id = start_run(&server).await;
    let taken = receiver.until(&["run.in_progress", "run.completed"]).await;
    for (headers, body) in &taken {
        check_signature(headers, body, &secret);
        assert_eq!(body["data"]["run_id"], run_id.as_str());
        assert_eq!(body["data"]["agent"], "assistant");
        let id = headers.get("webhook-id").unwrap().to_str().unwrap();
        assert!(id.starts_with(&format!("msg_{run_id}_")), "{id}");
    }
    let (_, completed) = taken
        .iter()
        .find(|(_, body)| body["type"] == "run.completed")
        .unwrap();
    assert_eq!(completed["data"]["status"], "completed");
    assert!(completed["timestamp"].as_str().unwrap().ends_with('Z'));

    // Listed and read without the secret; deleted, it hears of nothing more.
    let id = webhook["id"].as_str().unwrap();
    let listed: Value = server
        .http
        .get(server.url("/v1/webhooks"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(listed["data"][0]["id"], id);
    assert!(listed["data"][0].get("secret").is_none());
    let path = format!("/v1/webhooks/{id}");
    let got = server.http.get(server.url(&path)).send().await.unwrap();
    assert_eq!(got.status(), 200);
    let deleted = server.http.delete(server.url(&path)).send().await.unwrap();
    assert_eq!(deleted.status(), 204);
    let again = server.http.delete(server.url(&path)).send().await.unwrap();
    assert_eq!(again.status(), 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_status_change_is_delivered_signed_on_sqlite() {
    every_status_change_is_delivered_signed(None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_status_change_is_delivered_signed_on_postgres() {
    if let Some(url) = agentwire_testkit::postgres::schema_url().await {
        every_status_change_is_delivered_signed(Some(url)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_webhook_hears_only_its_events_and_its_run() {
    let mut receiver = Receiver::start().await;
    let server = TestServer::start(vec![talker("assistant", WORDS, 0.0)], settings(None)).await;
    create_webhook(
        &server,
        &json!({"url": receiver.url, "events": ["run.completed"]}),
    )
    .await;
    let first = start_run(&server).await;
    let (_, body) = receiver.next().await;
    assert_eq!(body["type"], "run.completed");
    assert_eq!(body["data"]["run_id"], first.as_str());

    let bad = server
        .post_json(
            "/v1/webhooks",
            &json!({"url": receiver.url, "events": ["run.done"]}),
        )
        .await;
    assert_eq!(bad.status(), 400);
    let no_run = server
        .post_json(
            "/v1/webhooks",
            &json!({"url": receiver.url, "run_id": "run_nope"}),
        )
        .await;
    assert_eq!(no_run.status(), 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deliveries_queued_while_the_receiver_fails_are_delivered_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let url = Some(format!("sqlite://{}", dir.path().join("aw.db").display()));
    let mut receiver = Receiver::start().await;
    receiver.down.store(true, Ordering::SeqCst);
    let first =
        TestServer::start(vec![talker("assistant", WORDS, 0.0)], settings(url.clone())).await;
    let webhook = create_webhook(&first, &json!({"url": receiver.url})).await;
    let run_id = start_run(&first).await;
    first.completed_run(&run_id).await;
    // Tried and refused at least twice (so once recorded for a retry), then the server goes.
    while receiver.refused.load(Ordering::SeqCst) < 2 {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    first.shutdown().await;

    receiver.down.store(false, Ordering::SeqCst);
    let second = TestServer::start(vec![talker("assistant", WORDS, 0.0)], settings(url)).await;
    let taken = receiver.until(&["run.in_progress", "run.completed"]).await;
    let secret = webhook["secret"].as_str().unwrap();
    for (headers, body) in &taken {
        check_signature(headers, body, secret);
        assert_eq!(body["data"]["run_id"], run_id.as_str());
    }
    drop(second);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webhooks_belong_to_their_key_and_internal_urls_are_refused_by_default() {
    let mut receiver = Receiver::start().await;
    let keyed = Settings {
        api_keys: vec![
            ApiKey::named("alice", "key-a"),
            ApiKey::named("bob", "key-b"),
        ],
        ..settings(None)
    };
    let server = TestServer::start(vec![talker("assistant", WORDS, 0.0)], keyed).await;
    let as_key = |key: &str, request: reqwest::RequestBuilder| request.bearer_auth(key.to_owned());
    let created: Value = as_key(
        "key-a",
        server
            .http
            .post(server.url("/v1/webhooks"))
            .json(&json!({"url": receiver.url, "events": ["run.completed"]})),
    )
    .send()
    .await
    .unwrap()
    .json()
    .await
    .unwrap();
    let path = format!("/v1/webhooks/{}", created["id"].as_str().unwrap());
    for (method, expect) in [("GET", 404), ("DELETE", 404)] {
        let request = server
            .http
            .request(method.parse().unwrap(), server.url(&path));
        let status = as_key("key-b", request).send().await.unwrap().status();
        assert_eq!(status, expect, "{method} by another key");
    }
    let listed: Value = as_key("key-b", server.http.get(server.url("/v1/webhooks")))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(listed["data"], json!([]));

    // Bob's run is not Alice's: her webhook hears only of hers.
    for key in ["key-b", "key-a"] {
        let run: Value = as_key(
            key,
            server
                .http
                .post(server.url("/v1/runs"))
                .json(&run_body(None, "go")),
        )
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
        if key == "key-a" {
            let (_, body) = receiver.next().await;
            assert_eq!(body["data"]["run_id"], run["run"]["id"]);
        }
    }

    // By default a loopback URL is refused.
    let strict =
        TestServer::start(vec![talker("assistant", WORDS, 0.0)], Settings::default()).await;
    let refused = strict
        .post_json("/v1/webhooks", &json!({"url": receiver.url}))
        .await;
    assert_eq!(refused.status(), 400);
    let error: Value = refused.json().await.unwrap();
    assert_eq!(error["error"]["code"], "invalid_url");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a2a_push_notification_configs_are_created_read_listed_and_deleted() {
    let receiver = Receiver::start().await;
    let server = TestServer::start(vec![talker("assistant", WORDS, 0.0)], settings(None)).await;
    let task = start_run(&server).await;
    let rpc = |method: &str, params: Value| json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let call = |body: Value| {
        let request = server.http.post(server.url("/a2a")).json(&body);
        async move { request.send().await.unwrap().json::<Value>().await.unwrap() }
    };
    let created = call(rpc(
        "CreateTaskPushNotificationConfig",
        json!({"taskId": task, "id": "cfg-1", "url": receiver.url, "token": "tok"}),
    ))
    .await;
    assert_eq!(
        created["result"],
        json!({"id": "cfg-1", "taskId": task, "url": receiver.url, "token": "tok"})
    );
    let got = call(rpc(
        "GetTaskPushNotificationConfig",
        json!({"taskId": task, "id": "cfg-1"}),
    ))
    .await;
    assert_eq!(got["result"], created["result"]);
    let listed = call(rpc(
        "ListTaskPushNotificationConfigs",
        json!({"taskId": task}),
    ))
    .await;
    assert_eq!(listed["result"]["configs"], json!([created["result"]]));
    let deleted = call(rpc(
        "DeleteTaskPushNotificationConfig",
        json!({"taskId": task, "id": "cfg-1"}),
    ))
    .await;
    assert_eq!(deleted["result"], json!({}));
    let gone = call(rpc(
        "GetTaskPushNotificationConfig",
        json!({"taskId": task, "id": "cfg-1"}),
    ))
    .await;
    assert_eq!(gone["error"]["code"], -32001);
    let unknown_task = call(rpc(
        "CreateTaskPushNotificationConfig",
        json!({"taskId": "run_nope", "url": receiver.url}),
    ))
    .await;
    assert_eq!(unknown_task["error"]["code"], -32001);

    let card: Value = server
        .http
        .get(server.url("/.well-known/agent-card.json"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(card["capabilities"]["pushNotifications"], true);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_webhook_given_with_the_run_hears_its_every_status_change() {
    let mut receiver = Receiver::start().await;
    let server = TestServer::start(vec![talker("assistant", WORDS, 0.0)], settings(None)).await;
    let mut body = run_body(None, "go");
    body["background"] = json!(true);
    body["webhook"] = json!({"url": receiver.url});
    let response = server.post_json("/v1/runs", &body).await;
    assert_eq!(response.status(), 202);
    let answer: Value = response.json().await.unwrap();
    let run_id = answer["run"]["id"].as_str().unwrap();
    let webhook = &answer["webhook"];
    assert_eq!(webhook["run_id"], run_id);
    let secret = webhook["secret"].as_str().unwrap();
    server.completed_run(run_id).await;

    // Every `run_status` of its log, the first included: stored before the run was.
    let mut events = server.events_after(run_id, 0).await;
    events.until_end().await;
    let mut want: Vec<u64> = events
        .events
        .iter()
        .filter(|event| event.name() == "run_status")
        .map(|event| event.seq)
        .collect();
    let mut got = Vec::new();
    while got.len() < want.len() {
        let (headers, body) = receiver.next().await;
        check_signature(&headers, &body, secret);
        assert_eq!(body["data"]["run_id"], run_id);
        got.push(body["data"]["seq"].as_u64().unwrap());
    }
    got.sort_unstable();
    want.sort_unstable();
    assert_eq!(got, want);

    // A run of no webhook is not heard of, nor is a bad URL or event accepted.
    let other = start_run(&server).await;
    server.completed_run(&other).await;
    let quiet = tokio::time::timeout(Duration::from_millis(500), receiver.taken.recv()).await;
    assert!(quiet.is_err(), "{quiet:?}");
    for webhook in [
        json!({"url": "ftp://x"}),
        json!({"url": receiver.url, "events": ["run.done"]}),
    ] {
        let mut body = run_body(None, "go");
        body["webhook"] = webhook;
        let response = server.post_json("/v1/runs", &body).await;
        assert_eq!(response.status(), 400);
    }
}
