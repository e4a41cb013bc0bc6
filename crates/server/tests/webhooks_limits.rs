//! What a webhook (or an A2A push config) may be, through the real routes: URLs reaching a
//! special-purpose address in any spelling are refused at creation and nothing is stored;
//! a delivery the policy refuses later is given up at once with its reason; URLs are bounded
//! in length, webhooks in number and their list in pages; A2A push configs replace one of the
//! same id, name tasks that exist, and leave nothing behind when their message is refused; a
//! deleted session takes its runs' webhooks with it.
#![allow(clippy::unwrap_used)]

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use agentwire_server::{Settings, WebhookSettings};
use axum::http::StatusCode;
use common::{TestServer, run_body, talker};
use serde_json::{Value, json};

const WORDS: &[&str] = &["hooked ", "up"];

/// URLs whose host is a special-purpose address, one per IANA block and every spelling of
/// IPv4 a client may use (the parser normalises decimal, octal, hex and short forms).
const REFUSED: &[&str] = &[
    "http://0.1.2.3/",
    "http://10.0.0.1/",
    "http://100.64.0.1/",
    "http://127.0.0.1/",
    "http://169.254.169.254/",
    "http://172.16.0.1/",
    "http://192.0.0.8/",
    "http://192.0.0.170/",
    "http://192.0.2.1/",
    "http://192.88.99.1/",
    "http://192.168.1.1/",
    "http://198.18.0.1/",
    "http://198.51.100.1/",
    "http://203.0.113.1/",
    "http://224.0.0.1/",
    "http://240.0.0.1/",
    "http://255.255.255.255/",
    "http://2130706433/",
    "http://0177.0.0.1/",
    "http://0x7f.0.0.1/",
    "http://0x7f000001/",
    "http://127.1/",
    "http://0/",
    "http://[::]/",
    "http://[::1]/",
    "http://[::ffff:127.0.0.1]/",
    "http://[::ffff:7f00:1]/",
    "http://[::ffff:0:7f00:1]/",
    "http://[::127.0.0.1]/",
    "http://[64:ff9b::a9fe:a9fe]/",
    "http://[64:ff9b::7f00:1]/",
    "http://[64:ff9b:1::1]/",
    "http://[100::1]/",
    "http://[2001::1]/",
    "http://[2001:2::1]/",
    "http://[2001:20::1]/",
    "http://[2001:db8::1]/",
    "http://[2002:7f00:1::]/",
    "http://[3fff::1]/",
    "http://[5f00::1]/",
    "http://[fc00::1]/",
    "http://[fe80::1]/",
    "http://[fec0::1]/",
    "http://[ff02::1]/",
    "http://localhost/",
];

fn settings(allow_private: bool, database_url: Option<String>) -> Settings {
    Settings {
        database_url,
        webhooks: WebhookSettings {
            allow_private,
            timeout: Duration::from_secs(2),
            max_backoff: Duration::from_millis(200),
            max_per_key: 5,
            ..WebhookSettings::default()
        },
        ..Settings::default()
    }
}

async fn server(allow_private: bool) -> TestServer {
    server_on(allow_private, None).await
}

async fn server_on(allow_private: bool, database_url: Option<String>) -> TestServer {
    TestServer::start(
        vec![talker("assistant", WORDS, 0.0)],
        settings(allow_private, database_url),
    )
    .await
}

async fn get(server: &TestServer, path: &str) -> (StatusCode, Value) {
    let response = server.http.get(server.url(path)).send().await.unwrap();
    (response.status(), response.json().await.unwrap())
}

async fn rpc(server: &TestServer, method: &str, params: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    server.post_json("/a2a", &body).await.json().await.unwrap()
}

async fn completed_run(server: &TestServer, session: Option<&str>) -> String {
    let mut body = run_body(None, "go");
    if let Some(session) = session {
        body["session_id"] = json!(session);
    }
    let run: Value = server
        .post_json("/v1/runs", &body)
        .await
        .json()
        .await
        .unwrap();
    let id = run["run"]["id"].as_str().unwrap().to_owned();
    server.completed_run(&id).await;
    id
}

/// A receiver on loopback counting what it is sent.
async fn receiver() -> (String, Arc<AtomicUsize>) {
    let taken = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&taken);
    let app = axum::Router::new().fallback(move || {
        counter.fetch_add(1, Ordering::SeqCst);
        async { StatusCode::NO_CONTENT }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (format!("http://{addr}/hook"), taken)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_special_purpose_address_is_refused_at_creation_and_nothing_is_stored() {
    let server = server(false).await;
    let task = completed_run(&server, None).await;
    for url in REFUSED {
        let response = server.post_json("/v1/webhooks", &json!({"url": url})).await;
        assert_eq!(response.status(), 400, "{url}");
        let error: Value = response.json().await.unwrap();
        assert_eq!(error["error"]["code"], "invalid_url", "{url}");
        assert!(
            error["error"]["message"]
                .as_str()
                .unwrap()
                .contains("allow_private"),
            "{url}: {error}"
        );
        let mut body = run_body(None, "go");
        body["webhook"] = json!({"url": url});
        let response = server.post_json("/v1/runs", &body).await;
        assert_eq!(response.status(), 400, "{url} with a run");
        let refused = rpc(
            &server,
            "CreateTaskPushNotificationConfig",
            json!({"taskId": task, "url": url}),
        )
        .await;
        assert_eq!(refused["error"]["code"], -32602, "{url}: {refused}");
    }
    let (_, listed) = get(&server, "/v1/webhooks").await;
    assert_eq!(listed["data"], json!([]));
    // One run was started, the one the configs were for.
    let (_, runs) = get(&server, "/v1/runs").await;
    assert_eq!(runs["runs"].as_array().unwrap().len(), 1);
    let public = server
        .post_json(
            "/v1/webhooks",
            &json!({"url": "http://[64:ff9b::101:101]/hook"}),
        )
        .await;
    assert_eq!(public.status(), 201, "NAT64 of a public address");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delivery_the_policy_refuses_later_is_given_up_at_once_with_its_reason() {
    let dir = tempfile::tempdir().unwrap();
    let database = format!("sqlite://{}", dir.path().join("aw.db").display());
    let (url, taken) = receiver().await;
    let by_name = url.replace("127.0.0.1", "localhost");
    // Created where loopback was allowed; delivered where it is not (as after a change of
    // configuration, or a name re-pointed at an internal address).
    let lenient = TestServer::start(
        vec![talker("assistant", WORDS, 0.0)],
        settings(true, Some(database.clone())),
    )
    .await;
    for url in [&url, &by_name] {
        let response = lenient
            .post_json("/v1/webhooks", &json!({"url": url}))
            .await;
        assert_eq!(response.status(), 201);
    }
    lenient.shutdown().await;
    let strict = TestServer::start(
        vec![talker("assistant", WORDS, 0.0)],
        settings(false, Some(database.clone())),
    )
    .await;
    completed_run(&strict, None).await;

    let pool = sqlx::SqlitePool::connect(&database).await.unwrap();
    let done = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            let rows: Vec<(i64, Option<String>, Option<String>)> = sqlx::query_as(
                "SELECT attempts, outcome, last_error FROM webhook_deliveries ORDER BY id",
            )
            .fetch_all(&pool)
            .await
            .unwrap();
            if !rows.is_empty() && rows.iter().all(|(_, outcome, _)| outcome.is_some()) {
                return rows;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .expect("every delivery done within 10 s");
    // Both webhooks, each status change: tried once, given up, saying why.
    assert!(done.len() >= 4, "{done:?}");
    for (attempts, outcome, error) in &done {
        assert_eq!(*attempts, 1, "{done:?}");
        assert_eq!(outcome.as_deref(), Some("gave_up"));
        let error = error.as_deref().unwrap();
        assert!(error.starts_with("refused: "), "{error}");
        assert!(error.contains("public address"), "{error}");
    }
    assert_eq!(taken.load(Ordering::SeqCst), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn urls_are_bounded_webhooks_counted_and_listed_a_page_at_a_time_on_sqlite() {
    urls_are_bounded_webhooks_counted_and_listed_a_page_at_a_time(None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn urls_are_bounded_webhooks_counted_and_listed_a_page_at_a_time_on_postgres() {
    if let Some(url) = agentwire_testkit::postgres::schema_url().await {
        urls_are_bounded_webhooks_counted_and_listed_a_page_at_a_time(Some(url)).await;
    }
}

async fn urls_are_bounded_webhooks_counted_and_listed_a_page_at_a_time(
    database_url: Option<String>,
) {
    let server = server_on(true, database_url).await;
    let (url, _) = receiver().await;
    let long = format!("{url}?{}", "a".repeat(2048));
    let response = server
        .post_json("/v1/webhooks", &json!({"url": long}))
        .await;
    assert_eq!(response.status(), 400);
    let error: Value = response.json().await.unwrap();
    assert_eq!(error["error"]["code"], "url_too_long");
    let task = completed_run(&server, None).await;
    let refused = rpc(
        &server,
        "CreateTaskPushNotificationConfig",
        json!({"taskId": task, "url": long}),
    )
    .await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");

    // Five a key (this server's `max_per_key`); the sixth is refused.
    let mut ids = Vec::new();
    for _ in 0..5 {
        let created: Value = server
            .post_json("/v1/webhooks", &json!({"url": url}))
            .await
            .json()
            .await
            .unwrap();
        ids.push(created["id"].as_str().unwrap().to_owned());
    }
    let sixth = server.post_json("/v1/webhooks", &json!({"url": url})).await;
    assert_eq!(sixth.status(), 409);
    let error: Value = sixth.json().await.unwrap();
    assert_eq!(error["error"]["code"], "too_many_webhooks");
    // A run's own webhooks are not counted with them.
    let config = rpc(
        &server,
        "CreateTaskPushNotificationConfig",
        json!({"taskId": task, "url": url}),
    )
    .await;
    assert!(config["result"]["id"].is_string(), "{config}");

    let mut listed = Vec::new();
    let mut path = "/v1/webhooks?limit=2".to_owned();
    loop {
        let (status, page) = get(&server, &path).await;
        assert_eq!(status, 200, "{page}");
        let data = page["data"].as_array().unwrap();
        assert!(data.len() <= 2);
        listed.extend(
            data.iter()
                .map(|webhook| webhook["id"].as_str().unwrap().to_owned()),
        );
        match page["next"].as_str() {
            Some(next) => path = format!("/v1/webhooks?limit=2&cursor={next}"),
            None => break,
        }
    }
    assert_eq!(listed.len(), 6);
    assert_eq!(listed[..5], ids[..]);
    for query in [
        "cursor=1:run_forged",
        "cursor=-1:x",
        "cursor=wh_zz",
        "limit=0",
        "limit=101",
    ] {
        let (status, error) = get(&server, &format!("/v1/webhooks?{query}")).await;
        assert_eq!(status, 400, "{query}");
        assert!(error["error"]["message"].as_str().unwrap() != "", "{query}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a2a_push_configs_replace_their_id_name_real_tasks_and_leave_nothing_when_refused_on_sqlite()
 {
    a2a_push_configs_replace_their_id_name_real_tasks_and_leave_nothing_when_refused(None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a2a_push_configs_replace_their_id_name_real_tasks_and_leave_nothing_when_refused_on_postgres()
 {
    if let Some(url) = agentwire_testkit::postgres::schema_url().await {
        a2a_push_configs_replace_their_id_name_real_tasks_and_leave_nothing_when_refused(Some(url))
            .await;
    }
}

async fn a2a_push_configs_replace_their_id_name_real_tasks_and_leave_nothing_when_refused(
    database_url: Option<String>,
) {
    let server = server_on(true, database_url).await;
    let (url, _) = receiver().await;
    let task = completed_run(&server, None).await;
    for target in [&url, &format!("{url}/again")] {
        let created = rpc(
            &server,
            "CreateTaskPushNotificationConfig",
            json!({"taskId": task, "id": "cfg-1", "url": target}),
        )
        .await;
        assert_eq!(created["result"]["url"], target.as_str(), "{created}");
    }
    let listed = rpc(
        &server,
        "ListTaskPushNotificationConfigs",
        json!({"taskId": task}),
    )
    .await;
    let configs = listed["result"]["configs"].as_array().unwrap();
    assert_eq!(configs.len(), 1, "{listed}");
    assert_eq!(configs[0]["url"], format!("{url}/again"));
    let unknown = rpc(
        &server,
        "ListTaskPushNotificationConfigs",
        json!({"taskId": "run_nope"}),
    )
    .await;
    assert_eq!(unknown["error"]["code"], -32001, "{unknown}");

    // A message whose config is refused starts no task and stores no config.
    let strict = self::server(false).await;
    let message = |push_url: &str| {
        json!({"message": {"role": "ROLE_USER", "messageId": "m1", "parts": [{"text": "hi"}]},
               "configuration": {"taskPushNotificationConfig": {"url": push_url}}})
    };
    let refused = rpc(&strict, "SendMessage", message("http://[64:ff9b::7f00:1]/")).await;
    assert!(refused["error"].is_object(), "{refused}");
    let (_, webhooks) = get(&strict, "/v1/webhooks").await;
    assert_eq!(webhooks["data"], json!([]));
    let (_, runs) = get(&strict, "/v1/runs").await;
    assert_eq!(runs["runs"], json!([]));
    // A message to a context whose task still works goes to its inbox, not to a new task:
    // the config made for the new task goes.
    let words = vec!["slow "; 60];
    let busy = TestServer::start(
        vec![talker("assistant", &words, 20.0)],
        settings(true, None),
    )
    .await;
    let mut body = run_body(None, "go");
    body["session_id"] = json!("ses_busy");
    body["background"] = json!(true);
    let working = busy.post_json("/v1/runs", &body).await;
    assert_eq!(working.status(), 202);
    let mut queued = message(&url);
    queued["message"]["contextId"] = json!("ses_busy");
    queued["configuration"]["returnImmediately"] = json!(true);
    let answered = rpc(&busy, "SendMessage", queued).await;
    assert!(answered["result"].is_object(), "{answered}");
    let (_, webhooks) = get(&busy, "/v1/webhooks").await;
    assert_eq!(webhooks["data"], json!([]), "{answered}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_a_session_deletes_its_runs_webhooks_on_sqlite() {
    deleting_a_session_deletes_its_runs_webhooks(None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_a_session_deletes_its_runs_webhooks_on_postgres() {
    if let Some(url) = agentwire_testkit::postgres::schema_url().await {
        deleting_a_session_deletes_its_runs_webhooks(Some(url)).await;
    }
}

async fn deleting_a_session_deletes_its_runs_webhooks(database_url: Option<String>) {
    let server = server_on(true, database_url).await;
    let (url, _) = receiver().await;
    let mut body = run_body(None, "go");
    body["session_id"] = json!("ses_hooked");
    body["webhook"] = json!({"url": url});
    let started: Value = server
        .post_json("/v1/runs", &body)
        .await
        .json()
        .await
        .unwrap();
    let run_id = started["run"]["id"].as_str().unwrap().to_owned();
    server.completed_run(&run_id).await;
    let webhook = started["webhook"]["id"].as_str().unwrap().to_owned();
    let other = server.post_json("/v1/webhooks", &json!({"url": url})).await;
    let other: Value = other.json().await.unwrap();

    let deleted = server
        .http
        .delete(server.url("/v1/sessions/ses_hooked"))
        .send()
        .await
        .unwrap();
    assert_eq!(deleted.status(), 204);
    let (status, _) = get(&server, &format!("/v1/webhooks/{webhook}")).await;
    assert_eq!(status, 404);
    // A webhook of every run is the key's, not the session's: it stays.
    let (status, _) = get(
        &server,
        &format!("/v1/webhooks/{}", other["id"].as_str().unwrap()),
    )
    .await;
    assert_eq!(status, 200);
}
