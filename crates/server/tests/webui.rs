//! What the web UI needs from the server, over real HTTP: its page and files (built into the
//! binary, with a policy that runs only its own scripts), and `GET /v1/sessions`, the caller's
//! sessions newest first, a page at a time, each key seeing only its own. The UI itself is
//! tested in a real browser by `peers/webui`.
#![allow(clippy::unwrap_used)]

mod common;

use agentwire_server::Settings;
use common::{TestServer, approver, run_body, talker};
use serde_json::{Value, json};

async fn server(api_keys: Vec<String>) -> TestServer {
    TestServer::start(
        vec![talker("assistant", &["Hi", " there"], 0.0), approver()],
        Settings {
            api_keys: api_keys.into_iter().map(Into::into).collect(),
            ..Settings::default()
        },
    )
    .await
}

/// A completed run of `text` in `session` (a new one when `None`), with `key`; its session id.
async fn turn(server: &TestServer, key: Option<&str>, session: Option<&str>, text: &str) -> String {
    let mut body = run_body(None, text);
    if let Some(session) = session {
        body["session_id"] = json!(session);
    }
    let mut request = server.http.post(server.url("/v1/runs")).json(&body);
    if let Some(key) = key {
        request = request.bearer_auth(key);
    }
    let answer: Value = request.send().await.unwrap().json().await.unwrap();
    assert_eq!(answer["run"]["status"], "completed", "{answer}");
    answer["run"]["session_id"].as_str().unwrap().to_owned()
}

async fn get(server: &TestServer, key: Option<&str>, path: &str) -> (u16, Value) {
    let mut request = server.http.get(server.url(path));
    if let Some(key) = key {
        request = request.bearer_auth(key);
    }
    let response = request.send().await.unwrap();
    (
        response.status().as_u16(),
        response.json().await.unwrap_or(Value::Null),
    )
}

fn ids(page: &Value) -> Vec<&str> {
    page["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|session| session["id"].as_str().unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_and_its_files_are_served_with_a_strict_policy() {
    let server = server(vec!["secret".into()]).await;
    // Public, like /docs: the page asks for the key itself.
    let page = server.http.get(server.url("/")).send().await.unwrap();
    assert_eq!(page.status(), 200);
    let headers = page.headers().clone();
    assert_eq!(headers["content-type"], "text/html; charset=utf-8");
    let policy = headers["content-security-policy"].to_str().unwrap();
    assert!(policy.contains("script-src 'self'"), "{policy}");
    assert!(policy.contains("connect-src 'self'"), "{policy}");
    let html = page.text().await.unwrap();
    assert!(html.contains(r#"<script type="module" src="/ui/app.js">"#));

    // Every file the page and its modules name is served, with its type.
    let mut wanted = vec!["app.js".to_owned(), "style.css".to_owned()];
    let mut seen = Vec::new();
    while let Some(name) = wanted.pop() {
        if seen.contains(&name) {
            continue;
        }
        let response = server
            .http
            .get(server.url(&format!("/ui/{name}")))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "{name}");
        let kind = if name.ends_with(".js") {
            "text/javascript; charset=utf-8"
        } else {
            "text/css; charset=utf-8"
        };
        assert_eq!(response.headers()["content-type"], kind, "{name}");
        let text = response.text().await.unwrap();
        for (at, _) in text.match_indices("from './") {
            let rest = &text[at + "from './".len()..];
            wanted.push(rest[..rest.find('\'').unwrap()].to_owned());
        }
        seen.push(name);
    }
    assert!(seen.len() >= 4, "{seen:?}");

    let (status, error) = get(&server, None, "/ui/nope.js").await;
    assert_eq!(status, 404);
    assert_eq!(error["error"]["code"], "not_found");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_are_listed_newest_first_a_page_at_a_time() {
    let server = server(vec![]).await;
    let first = turn(&server, None, None, "the first session").await;
    let second = turn(&server, None, None, "the second session").await;
    let third = turn(&server, None, None, "the   third\nsession").await;
    // A new turn moves its session to the top (a later millisecond than the third's end, which
    // a tie would order by id instead).
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    turn(&server, None, Some(&first), "back to the first").await;

    let (status, page) = get(&server, None, "/v1/sessions?limit=2").await;
    assert_eq!(status, 200);
    assert_eq!(ids(&page), [first.as_str(), third.as_str()]);
    let top = &page["sessions"][0];
    assert_eq!(top["title"], "the first session");
    assert_eq!(top["preview"], "Hi there");
    assert_eq!(top["message_count"], 4);
    assert_eq!(top["agent"], "assistant");
    assert_eq!(top["last_run"]["status"], "completed");
    assert!(top["updated_at"].as_i64().unwrap() >= top["created_at"].as_i64().unwrap());
    assert_eq!(page["sessions"][1]["title"], "the third session");

    let next = page["next"].as_str().unwrap();
    let (_, rest) = get(
        &server,
        None,
        &format!("/v1/sessions?limit=2&before={}", urlencode(next)),
    )
    .await;
    assert_eq!(ids(&rest), [second.as_str()]);
    assert_eq!(rest["next"], Value::Null);

    // The session's own answer names its latest run, for a client to follow it.
    let (_, session) = get(&server, None, &format!("/v1/sessions/{first}")).await;
    assert_eq!(session["last_run"]["id"], top["last_run"]["id"]);
    assert_eq!(session["last_run"]["status"], "completed");

    for (bad, code) in [
        ("limit=0", "invalid_query"),
        ("limit=101", "invalid_query"),
        ("limit=x", "invalid_query"),
        ("before=nope", "invalid_cursor"),
    ] {
        let (status, error) = get(&server, None, &format!("/v1/sessions?{bad}")).await;
        assert_eq!(status, 400, "{bad}");
        assert_eq!(error["error"]["code"], code, "{bad}");
    }
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_lists_only_its_own_sessions_and_a_waiting_run_shows() {
    let server = server(vec!["key-a".into(), "key-b".into()]).await;
    let mine = turn(&server, Some("key-a"), None, "mine").await;
    let theirs = turn(&server, Some("key-b"), None, "theirs").await;
    let (_, page) = get(&server, Some("key-a"), "/v1/sessions").await;
    assert_eq!(ids(&page), [mine.as_str()]);
    let (_, page) = get(&server, Some("key-b"), "/v1/sessions").await;
    assert_eq!(ids(&page), [theirs.as_str()]);
    let (status, error) = get(&server, None, "/v1/sessions").await;
    assert_eq!(status, 401);
    assert_eq!(error["error"]["code"], "unauthorized");

    // A run that waits for approval: its session shows it waiting, before its output joins.
    let mut body = run_body(Some("approver"), "remove a.txt");
    body["session_id"] = json!(mine);
    let answer: Value = server
        .http
        .post(server.url("/v1/runs"))
        .bearer_auth("key-a")
        .json(&body)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(answer["run"]["status"], "awaiting", "{answer}");
    let (_, page) = get(&server, Some("key-a"), "/v1/sessions").await;
    let run = &page["sessions"][0]["last_run"];
    assert_eq!(run["id"], answer["run"]["id"]);
    assert_eq!(
        (&run["status"], &run["awaiting"]),
        (&json!("awaiting"), &json!("approval"))
    );
    assert_eq!(page["sessions"][0]["agent"], "approver");
    assert!(run["last_seq"].as_u64().unwrap() > 0);
    server.shutdown().await;
}

fn urlencode(text: &str) -> String {
    text.bytes()
        .map(|byte| match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (byte as char).to_string()
            }
            _ => format!("%{byte:02X}"),
        })
        .collect()
}
