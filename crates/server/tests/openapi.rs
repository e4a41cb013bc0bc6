//! `/openapi.json` and `/docs` over a real server: the document parses as OpenAPI 3.1 and its
//! schemas are valid JSON Schema, every route the router serves is in it (and every route in
//! it is served), and real answers validate against the schemas it gives for them.
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeSet;
use std::time::Duration;

use agentwire_server::Settings;
use common::{TestServer, approver, routes_in_source, run_body, talker};
use serde_json::{Value, json};

async fn server(api_keys: Vec<String>) -> TestServer {
    TestServer::start(
        vec![talker("assistant", &["Hi", "!"], 0.0), approver()],
        Settings {
            heartbeat: Duration::from_millis(100),
            api_keys: api_keys.into_iter().map(Into::into).collect(),
            ..Settings::default()
        },
    )
    .await
}

async fn document(server: &TestServer) -> Value {
    let response = server
        .http
        .get(server.url("/openapi.json"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "application/json");
    response.json().await.unwrap()
}

/// Checks `instance` against the document's schema `name`, `$ref`s resolved in the document.
fn assert_valid(document: &Value, name: &str, instance: &Value) {
    let schema = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$ref": format!("#/components/schemas/{name}"),
        "components": document["components"],
    });
    let validator = jsonschema::draft202012::new(&schema).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(instance)
        .map(|error| format!("{error} at {}", error.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{name}: {errors:?}\n{instance:#}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_document_is_openapi_3_1_with_valid_schemas() {
    let server = server(vec!["key".into()]).await;
    // Public even when keys are configured, as is the page.
    let document = document(&server).await;
    let spec = oas3::from_json(document.to_string()).unwrap();
    assert_eq!(spec.validate_version().unwrap().minor, 1);

    let mut operations = 0;
    for (path, method, operation) in spec.operations() {
        operations += 1;
        let raw = &document["paths"][&path][method.as_str().to_lowercase()];
        // Every reference resolves: responses, bodies, parameters and their schemas.
        let responses = operation.responses(&spec);
        assert_eq!(
            responses.len(),
            raw["responses"].as_object().unwrap().len(),
            "{method} {path}: an answer does not resolve"
        );
        assert!(!responses.is_empty(), "{method} {path} has no answers");
        for (status, response) in &responses {
            assert!(!response.description.as_deref().unwrap_or("").is_empty());
            for (media_type, media) in &response.content {
                media.schema(&spec).unwrap_or_else(|error| {
                    panic!("{method} {path} {status} {media_type}: {error}")
                });
            }
        }
        if let Some(body) = operation.request_body(&spec).unwrap() {
            for media in body.content.values() {
                media.schema(&spec).unwrap().unwrap();
            }
        }
        operation.parameters(&spec).unwrap();
        assert!(
            operation.summary.is_some(),
            "{method} {path} has no summary"
        );
    }
    assert!(operations >= 20, "{operations} operations");
    // The error shape is the API's.
    let error = &document["components"]["responses"]["Error404"]["content"]["application/json"];
    assert_eq!(error["schema"]["$ref"], "#/components/schemas/Error");
    for (name, schema) in document["components"]["schemas"].as_object().unwrap() {
        assert!(
            jsonschema::meta::is_valid(schema),
            "{name} is not valid JSON Schema"
        );
    }

    let page = server.http.get(server.url("/docs")).send().await.unwrap();
    assert_eq!(page.status(), 200);
    assert!(
        page.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/html")
    );
    let page = page.text().await.unwrap();
    // Self-contained: nothing is loaded from anywhere.
    assert!(!page.contains("<script"), "the page runs no script");
    assert!(!page.contains("src=\"http"), "the page loads nothing");
    assert!(!page.contains("<link"), "the page loads no stylesheet");
    for (path, _, _) in spec.operations() {
        assert!(
            page.contains(&format!("<code>{path}</code>")),
            "{path} is on the page"
        );
    }
    assert!(page.contains("id=\"schema-Message\""));
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_route_is_documented_and_every_documented_route_is_served() {
    let server = server(vec![]).await;
    let document = document(&server).await;
    let documented: BTreeSet<(String, String)> = document["paths"]
        .as_object()
        .unwrap()
        .iter()
        .flat_map(|(path, item)| {
            item.as_object()
                .unwrap()
                .keys()
                .map(move |method| (method.clone(), path.clone()))
        })
        .collect();
    let served = routes_in_source();
    assert!(served.len() >= 20, "{served:?}");
    let undocumented: Vec<_> = served.difference(&documented).collect();
    assert!(
        undocumented.is_empty(),
        "routes missing from the OpenAPI document (src/openapi.rs): {undocumented:?}"
    );

    // And nothing documented is missing from the router: each answers something other than
    // the fallback's 404 or a 405.
    for (method, path) in &documented {
        let url = server.url(&path.replace("{name}", "assistant").replace("{id}", "x"));
        let request = match method.as_str() {
            "get" => server.http.get(url),
            "post" => server.http.post(url).json(&json!({})),
            "delete" => server.http.delete(url),
            "put" => server.http.put(url).json(&json!({})),
            "patch" => server
                .http
                .patch(url)
                .header("content-type", "application/json-patch+json")
                .body("[]"),
            other => panic!("{other}"),
        };
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        let body = response.text().await.unwrap_or_default();
        assert_ne!(status, 405, "{method} {path}");
        assert!(
            !(status == 404 && body.contains("no such endpoint")),
            "{method} {path} is not served"
        );
    }
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_answers_validate_against_the_documented_schemas() {
    let server = server(vec![]).await;
    let document = document(&server).await;
    let get = |path: &str| {
        let request = server.http.get(server.url(path)).send();
        async move {
            let response = request.await.unwrap();
            (
                response.status().as_u16(),
                response.json::<Value>().await.unwrap(),
            )
        }
    };

    let (_, agents) = get("/v1/agents").await;
    assert_valid(&document, "AgentList", &agents);
    let (_, card) = get("/v1/agents/approver").await;
    assert_valid(&document, "AgentCard", &card);
    assert!(!card["tools"].as_array().unwrap().is_empty());
    let (status, error) = get("/v1/runs/run_nope").await;
    assert_eq!(status, 404);
    assert_valid(&document, "Error", &error);

    // A run that waits for approval: tool call, approval request, awaiting status.
    let mut body = run_body(Some("approver"), "remove a.txt");
    body["tools"] =
        json!([{"name": "ask_user", "description": "Asks", "parameters": {"type": "object"}}]);
    assert_valid(&document, "CreateRun", &body);
    // Generation settings and OpenAI-format tools are documented too.
    let mut with_settings = body.clone();
    with_settings.as_object_mut().unwrap().extend(
        json!({"model": "m", "temperature": 0.5, "top_p": 1, "max_tokens": 10, "stop": ["x"],
               "seed": -1, "frequency_penalty": 0, "presence_penalty": -2, "n": 5,
               "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]})
        .as_object()
        .unwrap()
        .clone(),
    );
    assert_valid(&document, "CreateRun", &with_settings);
    let run: Value = server
        .post_json("/v1/runs", &body)
        .await
        .json()
        .await
        .unwrap();
    assert_valid(&document, "RunResult", &run);
    assert_eq!(run["run"]["awaiting"], "approval");
    let id = run["run"]["id"].as_str().unwrap();
    let (_, fetched) = get(&format!("/v1/runs/{id}")).await;
    assert_valid(&document, "RunResult", &fetched);
    let session = run["run"]["session_id"].as_str().unwrap();
    let (_, session) = get(&format!("/v1/sessions/{session}")).await;
    assert_valid(&document, "Session", &session);
    assert!(session["last_run"].is_object());
    let (_, sessions) = get("/v1/sessions").await;
    assert_valid(&document, "SessionList", &sessions);
    let (_, runs) = get("/v1/runs?limit=1").await;
    assert_valid(&document, "RunList", &runs);
    assert_eq!(runs["runs"][0]["id"], id);
    let (status, error) = get("/v1/runs?cursor=nope").await;
    assert_eq!(
        (status, &error["error"]["code"]),
        (400, &json!("invalid_cursor"))
    );
    assert_valid(&document, "Error", &error);
    let mut background = run_body(None, "later");
    background["background"] = json!(true);
    assert_valid(&document, "CreateRun", &background);
    let fork = json!({"before": session["messages"][0]["id"]});
    assert_valid(&document, "ForkSession", &fork);
    let forked: Value = server
        .post_json(
            &format!("/v1/sessions/{}/fork", session["id"].as_str().unwrap()),
            &fork,
        )
        .await
        .json()
        .await
        .unwrap();
    assert_valid(&document, "Session", &forked);
    assert!(!sessions["sessions"].as_array().unwrap().is_empty());

    // Every event of a streamed run.
    let mut stream = server.post_sse(&run_body(None, "hi")).await;
    stream.until_end().await;
    for event in &stream.events {
        assert_valid(&document, "Event", &serde_json::to_value(event).unwrap());
    }
    for event in run["output"][0]["parts"].as_array().unwrap() {
        assert_valid(&document, "Part", event);
    }

    // The WebSocket's frames, both ways.
    use futures::{SinkExt, StreamExt};
    let url = format!("{}/v1/ws", server.url.replace("http://", "ws://"));
    let (mut socket, _) = tokio_tungstenite::connect_async(url).await.unwrap();
    let mut start = run_body(None, "hi");
    start["type"] = json!("start");
    start["id"] = json!("r1");
    let bad = json!({"type": "cancel", "id": 2, "run_id": "run_nope"});
    for request in [&start, &bad] {
        assert_valid(&document, "WsRequest", request);
        let text = request.to_string();
        socket
            .send(tokio_tungstenite::tungstenite::Message::text(text))
            .await
            .unwrap();
    }
    let mut kinds = BTreeSet::new();
    while kinds.len() < 4 {
        let frame = tokio::time::timeout(Duration::from_secs(10), socket.next())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        // Pings (every `heartbeat`) have no JSON; only text frames do.
        if !frame.is_text() {
            continue;
        }
        let text = frame.to_text().unwrap();
        let frame: Value = serde_json::from_str(text).unwrap();
        let schema = match frame["type"].as_str().unwrap() {
            "event" => "WsEvent",
            "end" => "WsEnd",
            _ => "WsAnswer",
        };
        assert_valid(&document, schema, &frame);
        kinds.insert(frame["type"].as_str().unwrap().to_owned());
    }
    assert_eq!(
        kinds,
        ["end", "error", "event", "started"]
            .map(String::from)
            .into()
    );

    // The schemas are not empty promises: a run without its status fails them.
    let mut broken = run.clone();
    broken["run"]
        .as_object_mut()
        .unwrap()
        .remove("status")
        .unwrap();
    let schema =
        json!({"$ref": "#/components/schemas/RunResult", "components": document["components"]});
    assert!(
        !jsonschema::draft202012::new(&schema)
            .unwrap()
            .is_valid(&broken)
    );
    server.shutdown().await;
}
