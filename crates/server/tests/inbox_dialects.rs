//! Messages into a busy session through the dialect endpoints: an AI SDK `submit-message`, an
//! AG-UI run and an A2A `SendStreamingMessage` (naming the context or its working task) on a
//! session whose run still works go into its inbox with the client's mode, and the response
//! streams what answers them; `reject` is the 409 of before.
#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use agentwire_brain::ScriptedBrain;
use agentwire_runtime::Agent;
use agentwire_server::Settings;
use agentwire_tools::{FnTool, JsonSchema};
use common::TestServer;
use serde::Deserialize;
use serde_json::{Value, json};

#[derive(Deserialize, JsonSchema)]
#[schemars(crate = "agentwire_tools::schemars")]
struct Work {}

/// Every run calls `work` (which takes `ms`), then answers `done`.
fn worker(ms: u64) -> Agent {
    let script = json!({"turns": [
        [{"type": "tool_call_start", "id": "w1", "name": "work"},
         {"type": "tool_call_delta", "id": "w1", "args": "{}"},
         {"type": "tool_call_end", "id": "w1"},
         {"type": "finish", "reason": "tool_calls"}],
        [{"type": "text_delta", "text": "done"}, {"type": "finish", "reason": "stop"}]
    ]});
    let work = FnTool::new("work", "Works a while", move |_: Work, _| async move {
        tokio::time::sleep(Duration::from_millis(ms)).await;
        Ok("worked".to_owned())
    });
    Agent::builder("worker")
        .brain(ScriptedBrain::from_json(&script.to_string()).unwrap())
        .tool(work)
        .build()
        .unwrap()
}

async fn server() -> (TestServer, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let settings = Settings {
        database_url: Some(format!("sqlite://{}", dir.path().join("aw.db").display())),
        ..Settings::default()
    };
    (TestServer::start(vec![worker(800)], settings).await, dir)
}

/// Posts `body` to `path` in the background: the response's body, once it ends.
fn background(server: &TestServer, path: &str, body: Value) -> tokio::task::JoinHandle<String> {
    let request = server.http.post(server.url(path)).json(&body);
    tokio::spawn(async move { request.send().await.unwrap().text().await.unwrap() })
}

/// The JSON of every `data:` line of an SSE body.
fn frames(body: &str) -> Vec<Value> {
    body.lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .filter_map(|data| serde_json::from_str(data).ok())
        .collect()
}

fn chat(chat_id: &str, id: &str, text: &str, extra: Value) -> Value {
    let mut body = json!({"id": chat_id, "trigger": "submit-message", "messages": [
        {"id": id, "role": "user", "parts": [{"type": "text", "text": text}]}]});
    if let (Value::Object(body), Value::Object(extra)) = (&mut body, extra) {
        body.extend(extra);
    }
    body
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ai_sdk_submit_on_a_busy_chat_steers_queues_or_is_rejected() {
    let (server, _dir) = server().await;
    let first = background(&server, "/api/chat", chat("c1", "u1", "start", json!({})));
    tokio::time::sleep(Duration::from_millis(200)).await;

    let rejected = server
        .post_json(
            "/api/chat",
            &chat("c1", "u2", "no", json!({"mode": "reject"})),
        )
        .await;
    assert_eq!(rejected.status(), 409);

    let steer_body = chat(
        "c1",
        "u3",
        "in French",
        json!({"mode": "steer", "aiSdkVersion": 7}),
    );
    let queue_body = chat("c1", "u4", "then this", json!({"mode": "queue"}));
    let (steer, queued) = tokio::join!(
        server.post_json("/api/chat", &steer_body),
        server.post_json("/api/chat", &queue_body)
    );
    assert_eq!(steer.status(), 200);
    let steer = frames(&steer.text().await.unwrap());
    let steering: Vec<&Value> = steer
        .iter()
        .filter(|chunk| chunk["type"] == "steering-message")
        .collect();
    assert_eq!(steering.len(), 1, "{steer:?}");
    assert_eq!(steering[0]["parts"][0]["text"], "in French");
    let outcome = steer
        .iter()
        .find(|chunk| chunk["type"] == "data-agentwire-input" && chunk["id"] == "u3")
        .unwrap();
    assert_eq!(outcome["data"]["outcome"], "delivered");
    assert_eq!(steer.last().unwrap()["type"], "finish");

    // The queued message's answer is the run it starts, after the first.
    let queued = frames(&queued.text().await.unwrap());
    let delivered = queued
        .iter()
        .find(|chunk| chunk["type"] == "data-agentwire-input")
        .unwrap();
    assert_eq!(delivered["data"]["outcome"], "delivered");
    assert_eq!(delivered["data"]["step"], 0);
    assert!(queued.iter().any(|chunk| chunk["delta"] == "done"));
    assert!(
        queued
            .iter()
            .all(|chunk| chunk["type"] != "steering-message")
    );

    let first = frames(&first.await.unwrap());
    assert!(
        first
            .iter()
            .any(|chunk| chunk["id"] == "u4" && chunk["data"]["outcome"] == "queued"),
        "{first:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ag_ui_run_on_a_busy_thread_steers_it() {
    let (server, _dir) = server().await;
    let input = |run: &str, id: &str, text: &str, props: Value| {
        json!({"threadId": "t1", "runId": run, "state": {}, "tools": [], "context": [],
               "forwardedProps": props,
               "messages": [{"id": id, "role": "user", "content": text}]})
    };
    let first = background(&server, "/ag-ui", input("r1", "u1", "start", json!({})));
    tokio::time::sleep(Duration::from_millis(200)).await;
    let steer = server
        .post_json(
            "/ag-ui",
            &input("r2", "u2", "in French", json!({"mode": "steer"})),
        )
        .await;
    assert_eq!(steer.status(), 200);
    let events = frames(&steer.text().await.unwrap());
    assert_eq!(events[0]["type"], "RUN_STARTED");
    assert_eq!(events[0]["runId"], "r2");
    // The client that sent the steer has it: it is not sent back to it.
    let user_start =
        |event: &Value| event["type"] == "TEXT_MESSAGE_START" && event["role"] == "user";
    assert!(!events.iter().any(user_start));
    assert!(events.iter().any(
        |event| event["name"] == "agentwire.input" && event["value"]["outcome"] == "delivered"
    ));
    assert_eq!(events.last().unwrap()["type"], "RUN_FINISHED");
    // The first client sees it where the model did.
    let first = frames(&first.await.unwrap());
    let steer = first.iter().find(|event| user_start(event)).unwrap();
    assert_eq!(steer["messageId"], "u2");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ag_ui_rollback_opens_with_the_conversation_without_the_run_on_sqlite() {
    let (server, _dir) = server().await;
    ag_ui_rollback_snapshot(server).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ag_ui_rollback_opens_with_the_conversation_without_the_run_on_postgres() {
    let settings = Settings {
        database_url: Some(agentwire_testkit::postgres::required_schema_url().await),
        ..Settings::default()
    };
    ag_ui_rollback_snapshot(TestServer::start(vec![worker(800)], settings).await).await;
}

/// A thread with one finished turn and a run working on the next: a rollback's response opens
/// with `MESSAGES_SNAPSHOT`, the finished turn as it was streamed and the new question, not the
/// rolled-back one; a steer's response does not.
async fn ag_ui_rollback_snapshot(server: TestServer) {
    let input = |run: &str, messages: Value, props: Value| {
        json!({"threadId": "t-rb", "runId": run, "state": {}, "tools": [], "context": [],
               "forwardedProps": props, "messages": messages})
    };
    let u0 = json!({"id": "u0", "role": "user", "content": "first"});
    let done = server
        .post_json("/ag-ui", &input("r0", json!([u0]), json!({})))
        .await;
    let turn = frames(&done.text().await.unwrap());
    assert_eq!(turn.last().unwrap()["type"], "RUN_FINISHED");
    let first = background(
        &server,
        "/ag-ui",
        input(
            "r1",
            json!([u0, {"id": "u1", "role": "user", "content": "start"}]),
            json!({}),
        ),
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    let steer = server
        .post_json(
            "/ag-ui",
            &input(
                "r2",
                json!([{"id": "s1", "role": "user", "content": "hurry"}]),
                json!({"mode": "steer"}),
            ),
        )
        .await;
    let steered = frames(&steer.text().await.unwrap());
    assert!(
        !steered
            .iter()
            .any(|event| event["type"] == "MESSAGES_SNAPSHOT")
    );
    // A question queued behind the run gets a turn of its own after it.
    let second = background(
        &server,
        "/ag-ui",
        input(
            "r3",
            json!([{"id": "u2", "role": "user", "content": "instead"}]),
            json!({}),
        ),
    );
    first.await.unwrap();
    second.await.unwrap();
    // The next run is at work when the user takes its question back.
    let first = background(
        &server,
        "/ag-ui",
        input(
            "r4",
            json!([{"id": "u3", "role": "user", "content": "next"}]),
            json!({}),
        ),
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    let rollback = server
        .post_json(
            "/ag-ui",
            &input(
                "r5",
                json!([{"id": "u4", "role": "user", "content": "no, this"}]),
                json!({"mode": "rollback"}),
            ),
        )
        .await;
    assert_eq!(rollback.status(), 200);
    let events = frames(&rollback.text().await.unwrap());
    assert_eq!(events[0]["type"], "RUN_STARTED");
    assert_eq!(events[1]["type"], "MESSAGES_SNAPSHOT");
    let ids: Vec<&str> = events[1]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|message| message["id"].as_str().unwrap())
        .collect();
    // The finished turns as they were streamed, the rolled-back question gone, the new one last.
    assert_eq!(ids.first(), Some(&"u0"));
    assert!(ids.contains(&"u2"), "{ids:?}");
    assert!(!ids.contains(&"u3"), "{ids:?}");
    assert_eq!(ids.last(), Some(&"u4"));
    let streamed: Vec<&str> = turn
        .iter()
        .filter_map(|event| match event["type"].as_str() {
            Some("TEXT_MESSAGE_START" | "TOOL_CALL_RESULT") => event["messageId"].as_str(),
            _ => None,
        })
        .collect();
    assert!(
        streamed.iter().all(|id| ids.contains(id)),
        "{streamed:?} in {ids:?}"
    );
    assert_eq!(events.last().unwrap()["type"], "RUN_FINISHED");
    first.await.unwrap();
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_a2a_message_to_a_working_context_queues_a_new_task() {
    let (server, _dir) = server().await;
    let send = |id: &str, text: &str, metadata: Value| {
        json!({"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage", "params": {
            "message": {"messageId": id, "role": "ROLE_USER", "contextId": "ctx",
                        "parts": [{"text": text}]},
            "metadata": metadata}})
    };
    let first = background(&server, "/a2a", send("m1", "start", json!({})));
    tokio::time::sleep(Duration::from_millis(200)).await;
    let queued = server
        .post_json("/a2a", &send("m2", "next", json!({"mode": "queue"})))
        .await;
    assert_eq!(queued.status(), 200);
    let items = frames(&queued.text().await.unwrap());
    let first_items = frames(&first.await.unwrap());
    let first_task = &first_items[0]["result"]["task"]["id"];
    let task = &items[0]["result"]["task"];
    assert_eq!(task["contextId"], "ctx");
    assert_ne!(&task["id"], first_task, "a task of its own");
    let last = &items.last().unwrap()["result"]["statusUpdate"]["status"]["state"];
    assert_eq!(last, "TASK_STATE_COMPLETED");
    assert!(
        first_items.iter().any(
            |item| item["result"]["statusUpdate"]["metadata"]["agentwire"]["input"]["outcome"]
                == "queued"
        ),
        "{first_items:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_a2a_message_on_a_working_task_steers_it_or_is_rejected() {
    let (server, _dir) = server().await;
    let send = |id: &str, text: &str, target: (&str, &str), metadata: Value| {
        json!({"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage", "params": {
            "message": {"messageId": id, "role": "ROLE_USER", target.0: target.1,
                        "parts": [{"text": text}]},
            "metadata": metadata}})
    };
    let first = background(
        &server,
        "/a2a",
        send("m1", "start", ("contextId", "ctx"), json!({})),
    );
    // The task works (it calls `work`, 800 ms) once the context's last run is in progress.
    let task_id = loop {
        let session: Value = server
            .http
            .get(server.url("/v1/sessions/ctx"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        if session["last_run"]["status"] == "in_progress" {
            break session["last_run"]["id"].as_str().unwrap().to_owned();
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    let on_task = ("taskId", task_id.as_str());

    // Rejected: the JSON-RPC error carries the server's code as an A2A ErrorInfo, the one shape
    // of `data` the a2a-sdk client reads.
    let rejected = server
        .post_json(
            "/a2a",
            &send("m2", "no", on_task, json!({"mode": "reject"})),
        )
        .await;
    let rejected: Value = rejected.json().await.unwrap();
    assert_eq!(rejected["error"]["code"], -32602, "{rejected}");
    let info = &rejected["error"]["data"][0];
    assert_eq!(info["@type"], "type.googleapis.com/google.rpc.ErrorInfo");
    assert_eq!(info["reason"], "INVALID_PARAMS");
    assert_eq!(info["metadata"], json!({"code": "session_busy"}));

    // Steered: the stream is the working task, WORKING until it completes.
    let steer = server
        .post_json(
            "/a2a",
            &send("m3", "in French", on_task, json!({"mode": "steer"})),
        )
        .await;
    let items = frames(&steer.text().await.unwrap());
    assert_eq!(items[0]["result"]["task"]["id"], task_id.as_str());
    assert_eq!(items[0]["result"]["task"]["contextId"], "ctx");
    let states: Vec<&Value> = items
        .iter()
        .filter_map(|item| item["result"]["statusUpdate"]["status"].get("state"))
        .collect();
    let (last, before) = states.split_last().unwrap();
    assert_eq!(*last, "TASK_STATE_COMPLETED");
    assert!(
        before.iter().all(|state| *state == "TASK_STATE_WORKING"),
        "{states:?}"
    );
    let steered = items
        .iter()
        .find_map(|item| item["result"]["statusUpdate"]["status"].get("message"))
        .unwrap();
    assert_eq!(steered["role"], "ROLE_USER");
    assert_eq!(steered["messageId"], "m3");
    let first = frames(&first.await.unwrap());
    assert!(
        first.iter().any(
            |item| item["result"]["statusUpdate"]["metadata"]["agentwire"]["input"]["outcome"]
                == "delivered"
        ),
        "{first:?}"
    );
}
