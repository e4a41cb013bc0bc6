//! The server as an attacker meets it, over real HTTP and real sockets: keys own their data by
//! a stable identity (across removals, reorderings, rotations and the owner ids of earlier
//! versions), one key can neither see nor block another's sessions in any dialect, pages of
//! other origins and other host names cannot drive a server without keys, slow and idle
//! connections are closed and surplus ones refused, and every error is JSON.
#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use agentwire_core::SessionId;
use agentwire_server::{ApiKey, Server, Settings};
use agentwire_store::Store;
use common::{TestServer, run_body, talker};
use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const WORDS: &[&str] = &["all ", "is ", "well"];

fn keyed(keys: Vec<ApiKey>, database_url: Option<String>) -> Settings {
    Settings {
        api_keys: keys,
        database_url,
        ..Settings::default()
    }
}

async fn call(
    server: &TestServer,
    method: reqwest::Method,
    path: &str,
    key: &str,
    body: Option<&Value>,
) -> (u16, Value) {
    let mut request = server
        .http
        .request(method, server.url(path))
        .bearer_auth(key);
    if let Some(body) = body {
        request = request.json(body);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

async fn get(server: &TestServer, path: &str, key: &str) -> (u16, Value) {
    call(server, reqwest::Method::GET, path, key, None).await
}

async fn post(server: &TestServer, path: &str, key: &str, body: &Value) -> (u16, Value) {
    call(server, reqwest::Method::POST, path, key, Some(body)).await
}

/// The ids of the sessions `key` lists.
async fn sessions_of(server: &TestServer, key: &str) -> Vec<String> {
    let (status, page) = get(server, "/v1/sessions", key).await;
    assert_eq!(status, 200, "{page}");
    page["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|session| session["id"].as_str().unwrap().to_owned())
        .collect()
}

/// A finished run of `key` in `session`: its id.
async fn run_in(server: &TestServer, key: &str, session: &str) -> String {
    let mut body = run_body(None, "hi");
    body["session_id"] = json!(session);
    let (status, run) = post(server, "/v1/runs", key, &body).await;
    assert_eq!(status, 200, "{run}");
    assert_eq!(run["run"]["status"], "completed", "{run}");
    run["run"]["id"].as_str().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn removing_reordering_and_rotating_keys_never_hands_data_to_another_key() {
    let dir = tempfile::tempdir().unwrap();
    let url = Some(format!("sqlite://{}", dir.path().join("aw.db").display()));
    let agents = || vec![talker("assistant", WORDS, 0.0)];
    let before = vec![
        ApiKey::from("alpha-secret"),
        ApiKey::from("beta-secret"),
        ApiKey::named("web", "web-secret-1"),
    ];
    let server = TestServer::start(agents(), keyed(before, url.clone())).await;
    let alpha = run_in(&server, "alpha-secret", "ses_alpha").await;
    let beta = run_in(&server, "beta-secret", "ses_beta").await;
    let web = run_in(&server, "web-secret-1", "ses_web").await;
    server.shutdown().await;

    // alpha is removed (every key after it moves up a place), web's secret replaced, gamma new.
    let after = vec![
        ApiKey::from("gamma-secret"),
        ApiKey::named("web", "web-secret-2"),
        ApiKey::from("beta-secret"),
    ];
    let server = TestServer::start(agents(), keyed(after, url)).await;
    assert_eq!(
        sessions_of(&server, "gamma-secret").await,
        Vec::<String>::new()
    );
    assert_eq!(sessions_of(&server, "beta-secret").await, ["ses_beta"]);
    assert_eq!(sessions_of(&server, "web-secret-2").await, ["ses_web"]);
    assert_eq!(get(&server, "/v1/sessions", "web-secret-1").await.0, 401);
    assert_eq!(get(&server, "/v1/sessions", "alpha-secret").await.0, 401);
    for key in ["gamma-secret", "beta-secret", "web-secret-2"] {
        for path in [
            format!("/v1/runs/{alpha}"),
            format!("/v1/runs/{alpha}/events"),
            "/v1/sessions/ses_alpha".to_owned(),
        ] {
            assert_eq!(get(&server, &path, key).await.0, 404, "{key} {path}");
        }
        let deleted = call(
            &server,
            reqwest::Method::DELETE,
            "/v1/sessions/ses_alpha",
            key,
            None,
        );
        assert_eq!(deleted.await.0, 404, "{key}");
    }
    assert_eq!(
        get(&server, &format!("/v1/runs/{beta}"), "beta-secret")
            .await
            .0,
        200
    );
    assert_eq!(
        get(&server, &format!("/v1/runs/{web}"), "web-secret-2")
            .await
            .0,
        200
    );
    assert_eq!(
        get(&server, &format!("/v1/runs/{web}"), "beta-secret")
            .await
            .0,
        404
    );
    // The rotated key goes on in its session, with its history.
    run_in(&server, "web-secret-2", "ses_web").await;
    let (_, session) = get(&server, "/v1/sessions/ses_web", "web-secret-2").await;
    assert_eq!(session["messages"].as_array().unwrap().len(), 4);
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn owners_of_earlier_versions_pass_once_to_the_key_at_their_place() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("aw.db").display());
    let store = Store::open(&url).await.unwrap();
    for (session, owner) in [("ses_1", "key-1"), ("ses_2", "key-2"), ("ses_3", "key-3")] {
        store
            .create_session(Some(owner), &SessionId::from(session))
            .await
            .unwrap();
    }
    store.close().await;
    let agents = || vec![talker("assistant", WORDS, 0.0)];
    let keys = vec![ApiKey::from("first"), ApiKey::from("second")];
    let server = TestServer::start(agents(), keyed(keys, Some(url.clone()))).await;
    assert_eq!(sessions_of(&server, "first").await, ["ses_1"]);
    assert_eq!(sessions_of(&server, "second").await, ["ses_2"]);
    server.shutdown().await;

    // Later the list changes: the data stays with its key, and the third key, which was not
    // configured when the owners moved, never gets the session of the old third place.
    let keys = vec![
        ApiKey::from("second"),
        ApiKey::from("third"),
        ApiKey::from("first"),
    ];
    let server = TestServer::start(agents(), keyed(keys, Some(url))).await;
    assert_eq!(sessions_of(&server, "first").await, ["ses_1"]);
    assert_eq!(sessions_of(&server, "second").await, ["ses_2"]);
    assert_eq!(sessions_of(&server, "third").await, Vec::<String>::new());
    assert_eq!(get(&server, "/v1/sessions/ses_3", "third").await.0, 404);
    server.shutdown().await;
}

/// The WebSocket upgrade request of `server`, with one header.
fn ws_request(
    server: &TestServer,
    name: &'static str,
    value: &str,
) -> tokio_tungstenite::tungstenite::handshake::client::Request {
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;
    let url = server.url("/v1/ws").replacen("http", "ws", 1);
    let mut request = url.as_str().into_client_request().unwrap();
    request.headers_mut().insert(name, value.parse().unwrap());
    request
}

/// A body of each dialect that starts a run in `session`, with the path it goes to.
fn in_session(session: &str) -> Vec<(&'static str, Value)> {
    let user = |text: &str| json!({"role": "user", "parts": [{"type": "text", "text": text}]});
    vec![
        ("/v1/runs", {
            let mut body = run_body(None, "hi");
            body["session_id"] = json!(session);
            body
        }),
        (
            "/api/chat",
            json!({"id": session, "trigger": "submit-message",
                   "messages": [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": "hi"}]}]}),
        ),
        (
            "/ag-ui",
            json!({"threadId": session, "runId": "r1", "state": {}, "tools": [], "context": [],
                   "forwardedProps": {}, "messages": [{"id": "m1", "role": "user", "content": "hi"}]}),
        ),
        (
            "/process",
            json!({"input": [{"role": "user", "type": "message", "content": [{"type": "text", "text": "hi"}]}],
                   "stream": true, "session_id": session}),
        ),
        (
            "/chat",
            json!({"messages": [user("hi")], "session_id": session}),
        ),
        (
            "/a2a",
            json!({"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage", "params": {"message": {
                "messageId": "m1", "role": "ROLE_USER", "contextId": session,
                "parts": [{"text": "hi"}]}}}),
        ),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_keys_session_id_names_a_session_of_ones_own_in_every_dialect() {
    let keys = vec![ApiKey::from("key-a"), ApiKey::from("key-b")];
    // Slow enough that A's run is going while B knocks.
    let agents = vec![talker(
        "assistant",
        &["a ", "b ", "c ", "d ", "e ", "f"],
        6.0,
    )];
    let server = TestServer::start(agents, keyed(keys, None)).await;
    let mut body = run_body(None, "hi");
    body["session_id"] = json!("ses_a");
    let busy = server
        .http
        .post(server.url("/v1/runs"))
        .bearer_auth("key-a")
        .header("accept", "text/event-stream")
        .json(&body)
        .send()
        .await
        .unwrap();
    let run_a = busy.headers()["x-agentwire-run-id"]
        .to_str()
        .unwrap()
        .to_owned();
    // B's id is B's session: a fresh one, not busy with A's run, which B never sees.
    for (path, body) in in_session("ses_a") {
        let (status, answer) = post(&server, path, "key-b", &body).await;
        let text = answer.to_string();
        assert_eq!(status, 200, "{path}: {answer}");
        assert!(answer.get("error").is_none(), "{path}: {answer}");
        assert!(!text.contains(&run_a), "{path} names A's run: {text}");
    }
    // Over the WebSocket too.
    let request = ws_request(&server, "authorization", "Bearer key-b");
    let (mut socket, _) = tokio_tungstenite::connect_async(request).await.unwrap();
    let mut start = run_body(None, "hi");
    start["type"] = json!("start");
    start["session_id"] = json!("ses_a");
    socket
        .send(tokio_tungstenite::tungstenite::Message::text(
            start.to_string(),
        ))
        .await
        .unwrap();
    let answer = loop {
        match socket.next().await.unwrap().unwrap() {
            tokio_tungstenite::tungstenite::Message::Text(text) => break text.to_string(),
            _ => continue,
        }
    };
    let frame: Value = serde_json::from_str(&answer).unwrap();
    assert_ne!(frame["type"], "error", "{frame}");
    assert!(!answer.contains(&run_a), "{answer}");
    drop(busy);

    server.shutdown().await;

    // B naming A's session all the time fails none of A's turns, and each sees its own.
    let keys = vec![ApiKey::from("key-a"), ApiKey::from("key-b")];
    let server = TestServer::start(vec![talker("assistant", WORDS, 0.0)], keyed(keys, None)).await;
    run_in(&server, "key-a", "ses_turns").await;
    let knocking = {
        let http = server.http.clone();
        let url = server.url("/v1/runs");
        tokio::spawn(async move {
            let mut body = run_body(None, "let me in");
            body["session_id"] = json!("ses_turns");
            let mut statuses = Vec::new();
            for _ in 0..20 {
                let response = http.post(&url).bearer_auth("key-b").json(&body).send();
                statuses.push(response.await.unwrap().status().as_u16());
            }
            statuses
        })
    };
    for _ in 0..7 {
        run_in(&server, "key-a", "ses_turns").await;
    }
    let statuses = knocking.await.unwrap();
    assert!(statuses.iter().all(|status| *status == 200), "{statuses:?}");
    let (_, session) = get(&server, "/v1/sessions/ses_turns", "key-a").await;
    assert_eq!(session["messages"].as_array().unwrap().len(), 16);
    assert!(!session.to_string().contains("let me in"), "{session}");
    let (_, theirs) = get(&server, "/v1/sessions/ses_turns", "key-b").await;
    assert_eq!(theirs["messages"].as_array().unwrap().len(), 40);
    server.shutdown().await;
}

/// The sessions a server without keys holds.
async fn open_sessions(server: &TestServer) -> usize {
    let page: Value = server
        .http
        .get(server.url("/v1/sessions"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    page["sessions"].as_array().unwrap().len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_of_other_origins_and_other_host_names_cannot_drive_a_server_without_keys() {
    let server =
        TestServer::start(vec![talker("assistant", WORDS, 0.0)], Settings::default()).await;
    let body = run_body(None, "hi").to_string();
    let post = |path: &'static str, content_type: Option<&'static str>| {
        let mut request = server.http.post(server.url(path)).body(body.clone());
        if let Some(content_type) = content_type {
            request = request.header("content-type", content_type);
        }
        request
    };
    // What a page may send across origins without a preflight: refused by type, every route.
    for path in [
        "/v1/runs",
        "/api/chat",
        "/ag-ui",
        "/a2a",
        "/process",
        "/chat",
    ] {
        for content_type in [
            Some("text/plain;charset=UTF-8"),
            Some("application/x-www-form-urlencoded"),
            Some("multipart/form-data; boundary=x"),
            None,
        ] {
            let response = post(path, content_type).send().await.unwrap();
            assert_eq!(response.status(), 415, "{path} {content_type:?}");
            let error: Value = response.json().await.unwrap();
            assert_eq!(error["error"]["code"], "unsupported_media_type");
        }
    }
    let input = server.url("/v1/runs/run_x/input");
    let response = server.http.post(input).body("{}").send().await.unwrap();
    assert_eq!(response.status(), 415);
    assert_eq!(open_sessions(&server).await, 0, "nothing ran");

    // A page elsewhere, even with the JSON a preflight would have asked about.
    let origin_of = |origin: &str| {
        post("/v1/runs", Some("application/json"))
            .header("origin", origin)
            .send()
    };
    for origin in ["https://evil.example", "null", "http://127.0.0.1:1"] {
        let response = origin_of(origin).await.unwrap();
        assert_eq!(response.status(), 403, "{origin}");
        let error: Value = response.json().await.unwrap();
        assert_eq!(error["error"]["code"], "forbidden_origin");
    }
    assert_eq!(open_sessions(&server).await, 0, "nothing ran");
    // A name that is not this server's (DNS rebinding: evil.example made to point here).
    for host in [
        "evil.example",
        "evil.example:8080",
        "localhost.evil.example",
    ] {
        let response = post("/v1/runs", Some("application/json"))
            .header("host", host)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 403, "{host}");
        let error: Value = response.json().await.unwrap();
        assert_eq!(error["error"]["code"], "forbidden_host");
        let page = server.http.get(server.url("/")).header("host", host);
        assert_eq!(page.send().await.unwrap().status(), 403, "{host}");
    }
    // The WebSocket, which browsers open across origins without asking.
    let request = ws_request(&server, "origin", "https://evil.example");
    let refused = tokio_tungstenite::connect_async(request).await.unwrap_err();
    assert!(refused.to_string().contains("403"), "{refused}");
    assert_eq!(open_sessions(&server).await, 0, "nothing ran");

    // Its own pages, localhost and clients that are not browsers go through.
    let own = server.url("").trim_end_matches('/').to_owned();
    assert_eq!(origin_of(&own).await.unwrap().status(), 200);
    let port = own.rsplit(':').next().unwrap();
    let response = post("/v1/runs", Some("application/json; charset=utf-8"))
        .header("host", format!("localhost:{port}"))
        .header("origin", format!("http://localhost:{port}"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let plain = post("/v1/runs", Some("application/json"))
        .send()
        .await
        .unwrap();
    assert_eq!(plain.status(), 200);
    assert_eq!(open_sessions(&server).await, 3);
    server.shutdown().await;

    // With keys a page has nothing to send: the checks are the keys.
    let keyed = TestServer::start(
        vec![talker("assistant", WORDS, 0.0)],
        keyed(vec![ApiKey::from("k")], None),
    )
    .await;
    let response = keyed
        .http
        .post(keyed.url("/v1/runs"))
        .bearer_auth("k")
        .header("host", "agents.example")
        .json(&run_body(None, "hi"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    keyed.shutdown().await;
}

#[tokio::test]
async fn a_server_without_keys_listens_only_on_loopback_unless_told() {
    let agents = || vec![talker("assistant", WORDS, 0.0)];
    let open = |settings: Settings| async move {
        let settings = Settings {
            addr: "0.0.0.0:0".parse().unwrap(),
            ..settings
        };
        Server::open(agents(), settings).await.unwrap().bind().await
    };
    let refused = open(Settings::default()).await.unwrap_err();
    assert_eq!(refused.kind(), std::io::ErrorKind::PermissionDenied);
    assert!(refused.to_string().contains("api_keys"), "{refused}");
    assert!(open(keyed(vec![ApiKey::from("k")], None)).await.is_ok());
    let told = Settings {
        allow_unauthenticated: true,
        ..Settings::default()
    };
    assert!(open(told).await.is_ok());
}

/// Reads what the server sends until it closes the connection (10 s at most).
async fn read_to_close(socket: &mut TcpStream) -> String {
    let mut answer = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), socket.read_to_end(&mut answer))
        .await
        .expect("the server closes the connection")
        .unwrap();
    String::from_utf8_lossy(&answer).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_and_idle_connections_are_closed_and_surplus_ones_refused() {
    let settings = Settings {
        header_timeout: Duration::from_secs(1),
        body_timeout: Duration::from_secs(1),
        max_connections: 4,
        ..Settings::default()
    };
    // A stream that outlasts the timeouts several times over.
    let words = ["one ", "two ", "three ", "four ", "five ", "six"];
    let server = TestServer::start(vec![talker("assistant", &words, 2.0)], settings).await;
    let addr = server.url.trim_start_matches("http://").to_owned();
    let stream = server.post_sse(&run_body(None, "long")).await;

    // Headers that never end, and a body that never ends.
    let mut trickle = TcpStream::connect(&addr).await.unwrap();
    trickle
        .write_all(b"GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\n")
        .await
        .unwrap();
    let mut partial = TcpStream::connect(&addr).await.unwrap();
    partial
        .write_all(
            b"POST /v1/runs HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n\
              content-length: 100\r\n\r\n{\"input\":",
        )
        .await
        .unwrap();
    // A keep-alive connection that goes idle after one request.
    let mut idle = TcpStream::connect(&addr).await.unwrap();
    idle.write_all(b"GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n")
        .await
        .unwrap();
    let mut first = [0; 12];
    idle.read_exact(&mut first).await.unwrap();
    assert_eq!(&first, b"HTTP/1.1 200");
    // Four connections are open: the stream and these three. A fifth is refused at once.
    let mut surplus = TcpStream::connect(&addr).await.unwrap();
    let refusal = read_to_close(&mut surplus).await;
    assert!(refusal.starts_with("HTTP/1.1 503"), "{refusal}");
    let body: Value = serde_json::from_str(refusal.split("\r\n\r\n").nth(1).unwrap()).unwrap();
    assert_eq!(body["error"]["code"], "too_many_connections");

    assert_eq!(
        read_to_close(&mut trickle).await,
        "",
        "closed without an answer"
    );
    let answer = read_to_close(&mut partial).await;
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("body_timeout"), "{answer}");
    read_to_close(&mut idle).await;
    // Room again.
    let health = server
        .http
        .get(server.url("/healthz"))
        .send()
        .await
        .unwrap();
    assert_eq!(health.status(), 200);

    // The stream was never cut: every word, and the end.
    let mut stream = stream;
    stream.until_end().await;
    let text = stream.messages().last().unwrap().content();
    assert_eq!(text, words.concat());
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_error_is_json_ids_have_a_shape_and_the_scheme_any_case() {
    let server = TestServer::start(
        vec![talker("assistant", WORDS, 0.0)],
        keyed(vec![ApiKey::from("k")], None),
    )
    .await;
    let error_of = |response: reqwest::Response| async move {
        let status = response.status().as_u16();
        let kind = response.headers()["content-type"]
            .to_str()
            .unwrap()
            .to_owned();
        assert!(kind.starts_with("application/json"), "{status}: {kind}");
        let body: Value = response.json().await.unwrap();
        let code = body["error"]["code"].as_str().unwrap().to_owned();
        assert!(body["error"]["message"].is_string(), "{body}");
        (status, code)
    };
    let http = &server.http;
    let url = |path: &str| server.url(path);
    let cases = [
        (http.delete(url("/v1/runs")), 405, "method_not_allowed"),
        (http.put(url("/v1/sessions/x")), 405, "method_not_allowed"),
        (
            http.get(url(&format!("/v1/runs/{}", "a".repeat(20_000)))),
            414,
            "uri_too_long",
        ),
        (
            http.get(url("/v1/agents"))
                .header("x-big", "b".repeat(70_000)),
            431,
            "headers_too_large",
        ),
        (http.get(url("/v1/runs/%FF%FE")), 400, "bad_request"),
        (http.get(url("/nowhere")), 404, "not_found"),
        (
            http.get(url("/v1/runs/x/events?after=minus")),
            400,
            "invalid_query",
        ),
    ];
    for (request, status, code) in cases {
        let response = request.bearer_auth("k").send().await.unwrap();
        assert_eq!(error_of(response).await, (status, code.to_owned()));
    }
    let mut many = http.get(url("/v1/agents")).bearer_auth("k");
    for index in 0..150 {
        many = many.header(format!("x-h{index}"), "v");
    }
    let response = many.send().await.unwrap();
    assert_eq!(
        error_of(response).await,
        (431, "headers_too_large".to_owned())
    );

    for session in [
        String::new(),
        "a\nb".into(),
        "a\0b".into(),
        "a b".into(),
        "x".repeat(1 << 20),
    ] {
        let mut body = run_body(None, "hi");
        body["session_id"] = json!(session);
        let response = http
            .post(url("/v1/runs"))
            .bearer_auth("k")
            .json(&body)
            .send();
        let (status, code) = error_of(response.await.unwrap()).await;
        assert_eq!(
            (status, code.as_str()),
            (400, "invalid_session_id"),
            "{:?}",
            &session[..session.len().min(8)]
        );
    }
    assert_eq!(
        get(&server, "/v1/sessions", "k").await.1["sessions"],
        json!([])
    );

    for scheme in ["Bearer", "bearer", "BEARER", "bEaReR"] {
        let response = http
            .get(url("/v1/agents"))
            .header("authorization", format!("{scheme} k"))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "{scheme}");
    }
    let response = http
        .get(url("/v1/agents"))
        .header("authorization", "Basic k");
    assert_eq!(
        error_of(response.send().await.unwrap()).await,
        (401, "unauthorized".to_owned())
    );
    server.shutdown().await;
}
