//! Every route's generic failures, over real HTTP: for each `(method, path)` of the route table
//! (read from the source, as `openapi.rs` does), a method it does not answer, a path under it
//! that does not exist, a body that is not JSON, one of another type, one past the limit, and
//! no key. Each error is JSON with a non-empty message and a code from a fixed set, in the
//! route's own shape: the API's `{"error": {"code", "message"}}`, OpenAI's on `/v1/responses`
//! (with `type`), and on A2A's JSON-RPC endpoint a JSON-RPC error for a body it cannot read
//! (HTTP matters, such as keys and body limits, are answered there as on every route).
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::{BTreeMap, BTreeSet};

use agentwire_server::{ApiKey, Settings};
use common::{TestServer, routes_in_source, talker};
use reqwest::Method;
use serde_json::Value;

/// The codes the generic failures may carry.
const CODES: &[&str] = &[
    "method_not_allowed",
    "not_found",
    "invalid_json",
    "invalid_request",
    "bad_request",
    "unsupported_media_type",
    "payload_too_large",
    "unauthorized",
    // What a `cancel` route, which reads no body, answers for a session with no run going.
    "run_finished",
];
const MAX_BODY: usize = 16 * 1024;
/// Answered without a key.
const PUBLIC: &[&str] = &[
    "/",
    "/ui/{file}",
    "/healthz",
    "/openapi.json",
    "/docs",
    "/.well-known/agent-card.json",
    "/agents/{name}/.well-known/agent-card.json",
];

/// What one provocation must be answered with.
#[derive(Clone, Copy, Debug)]
enum Expect {
    /// An error of this status.
    Status(u16),
    /// An error of this status, or a success (a public route).
    StatusOrSuccess(u16),
    /// Any error: a route that reads no body answers for the resource it names.
    AnyError,
}

struct Walk {
    server: TestServer,
    key: &'static str,
    failures: Vec<String>,
}

impl Walk {
    /// Sends one request and checks its answer; a failure is kept, to report them all.
    async fn check(
        &mut self,
        method: &Method,
        route: &str,
        path: &str,
        body: Option<(&str, Vec<u8>)>,
        authorized: bool,
        expect: Expect,
    ) {
        let mut request = self
            .server
            .http
            .request(method.clone(), self.server.url(path));
        if authorized {
            request = request.bearer_auth(self.key);
        }
        if let Some((kind, bytes)) = body {
            request = request.header("content-type", kind).body(bytes);
        }
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        let kind = response
            .headers()
            .get("content-type")
            .map(|value| value.to_str().unwrap().to_owned())
            .unwrap_or_default();
        let text = response.text().await.unwrap();
        let what = format!("{method} {path} ({route}) → {status} {kind}: {text:.300}");
        let status_ok = match expect {
            Expect::Status(want) => status == want,
            Expect::StatusOrSuccess(want) => status == want || status < 400,
            Expect::AnyError => status >= 400,
        };
        if !status_ok {
            self.failures.push(format!("expected {expect:?}: {what}"));
            return;
        }
        // A public route's success has no error to check; A2A's 200 carries one.
        if status < 400 && matches!(expect, Expect::StatusOrSuccess(_)) {
            return;
        }
        if !kind.starts_with("application/json") {
            self.failures.push(format!("not JSON: {what}"));
            return;
        }
        let body: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        // A path that is none of the routes is the server's, whatever it starts with.
        let shape = match path == concrete(route) {
            true => route,
            false => "",
        };
        if let Err(problem) = well_formed(shape, &body) {
            self.failures.push(format!("{problem}: {what}"));
        }
    }
}

/// Whether `body` is an error in the shape of `route` (`""`: the server's own), with a known
/// code and a message.
fn well_formed(route: &str, body: &Value) -> Result<(), &'static str> {
    let error = &body["error"];
    let message = error["message"].as_str().unwrap_or_default();
    if message.trim().is_empty() {
        return Err("no message");
    }
    if route.ends_with("/a2a") && body["jsonrpc"] == "2.0" {
        return match error["code"].as_i64() {
            Some(_) => Ok(()),
            None => Err("a JSON-RPC error without a numeric code"),
        };
    }
    if route.contains("/v1/responses") && !error["type"].is_string() {
        return Err("not OpenAI's error shape");
    }
    match error["code"].as_str() {
        Some(code) if CODES.contains(&code) => Ok(()),
        _ => Err("a code outside the fixed set"),
    }
}

/// A concrete path for `route`: the agent's name, an id that names nothing.
fn concrete(route: &str) -> String {
    route
        .replace("{name}", "assistant")
        .replace("{file}", "nothing.js")
        .replace("{client_message_id}", "nothing")
        .replace("{id}", "nothing")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_route_answers_its_generic_failures_with_a_code_and_a_message() {
    let settings = Settings {
        api_keys: vec![ApiKey::from("key")],
        max_body_bytes: MAX_BODY,
        ..Settings::default()
    };
    let server = TestServer::start(vec![talker("assistant", &["Hi"], 0.0)], settings).await;
    let mut walk = Walk {
        server,
        key: "key",
        failures: Vec::new(),
    };
    let mut by_path: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (method, path) in routes_in_source() {
        by_path.entry(path).or_default().insert(method);
    }
    assert!(by_path.len() >= 20, "{by_path:?}");
    let methods = ["get", "post", "put", "patch", "delete"];
    for (route, served) in &by_path {
        let path = concrete(route);
        let public = PUBLIC.contains(&route.as_str());
        // A method the route does not answer.
        if let Some(other) = methods.iter().find(|method| !served.contains(**method)) {
            let method = Method::from_bytes(other.to_uppercase().as_bytes()).unwrap();
            walk.check(&method, route, &path, None, true, Expect::Status(405))
                .await;
        }
        // A path under it that does not exist.
        let under = format!("{}/nothing/here", path.trim_end_matches('/'));
        walk.check(&Method::GET, route, &under, None, true, Expect::Status(404))
            .await;
        for method in served {
            let method = Method::from_bytes(method.to_uppercase().as_bytes()).unwrap();
            let expect = match public {
                true => Expect::StatusOrSuccess(404),
                false => Expect::Status(401),
            };
            walk.check(&method, route, &path, None, false, expect).await;
            if method == Method::GET || method == Method::DELETE {
                continue;
            }
            // The body is read before the resource is looked up, except by the routes that
            // take none (`cancel`), which answer for the resource.
            let reads_body = !route.ends_with("/cancel");
            let json = match method == Method::PATCH {
                true => "application/json-patch+json",
                false => "application/json",
            };
            let bodies = [
                (json, b"{\"input\": [".to_vec(), 400),
                ("text/plain", b"{}".to_vec(), 415),
                (json, vec![b' '; 4 * MAX_BODY], 413),
            ];
            for (kind, bytes, status) in bodies {
                let expect = match (reads_body, status) {
                    (false, _) => Expect::AnyError,
                    // A2A answers a body it cannot read in JSON-RPC, with 200.
                    (true, 400) if route.ends_with("/a2a") => Expect::Status(200),
                    (true, status) => Expect::Status(status),
                };
                let body = Some((kind, bytes));
                walk.check(&method, route, &path, body, true, expect).await;
            }
        }
    }
    let failures = walk.failures;
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    walk.server.shutdown().await;
}
