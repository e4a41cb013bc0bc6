//! The client against a real server on port 0: agents, streamed runs into the accumulator,
//! approvals and client tools answered through `/input`, sessions, cancel, typed errors, auth,
//! and resuming a stream cut mid-way (by a proxy) with no gap and no duplicate.
#![allow(clippy::unwrap_used)]

mod common;

use std::sync::atomic::Ordering;
use std::time::Duration;

use agentwire_client::{Client, ClientError, Reconnect, StartRun};
use agentwire_core::{Awaiting, Message, Part, RunStatus, ToolSpec};
use agentwire_server::Settings;
use common::{CuttingProxy, TestServer, WORDS, word};
use serde_json::json;

fn whole_text() -> String {
    (0..WORDS).map(word).collect()
}

#[tokio::test]
async fn lists_agents_and_reads_a_card() {
    let server = TestServer::start().await;
    let client = Client::new(&server.url).unwrap();
    let names: Vec<String> = client
        .agents()
        .await
        .unwrap()
        .into_iter()
        .map(|agent| agent.name)
        .collect();
    assert_eq!(names, ["talker", "writer", "asker"]);
    let card = client.agent("writer").await.unwrap();
    assert_eq!(card.description, "Writes a file after approval");
    assert_eq!(card.tools[0].name, "write_file");
    let missing = client.agent("nobody").await.unwrap_err();
    assert_eq!(missing.code(), Some("unknown_agent"), "{missing}");
}

#[tokio::test]
async fn a_run_streams_into_the_accumulator_and_the_session_goes_on() {
    let server = TestServer::start().await;
    let client = Client::new(&server.url).unwrap();
    let mut run = client
        .start(&StartRun::new(Message::user("hi")).agent("talker"))
        .await
        .unwrap();
    let mut seen_partial = false;
    while let Some(_event) = run.next().await.unwrap() {
        let text = run
            .state()
            .messages()
            .first()
            .map(Message::content)
            .unwrap_or_default();
        seen_partial |= !text.is_empty() && text != whole_text();
    }
    assert!(seen_partial, "the text was readable while it streamed");
    assert_eq!(run.status(), Some(RunStatus::Completed));
    assert_eq!(run.state().messages()[0].content(), whole_text());
    let run_id = run.run_id().unwrap().clone();
    let stored = client.get_run(&run_id).await.unwrap();
    assert_eq!(stored.run.status, RunStatus::Completed);
    assert_eq!(stored.output, run.state().messages());

    // The next message of the conversation, in the same session.
    let session = run.session_id().unwrap().clone();
    let mut next = client
        .start(
            &StartRun::new(Message::user("again"))
                .agent("talker")
                .session(session.clone()),
        )
        .await
        .unwrap();
    assert_eq!(next.finish().await.unwrap(), Some(RunStatus::Completed));
    assert_eq!(next.session_id(), Some(&session));
    let history = client.session(&session).await.unwrap();
    let roles: Vec<_> = history
        .messages
        .iter()
        .map(|message| message.role)
        .collect();
    use agentwire_core::Role::{Assistant, User};
    assert_eq!(roles, [User, Assistant, User, Assistant]);

    // Following a run from its first event, after the fact.
    let mut replay = client.events(&run_id);
    assert_eq!(replay.finish().await.unwrap(), Some(RunStatus::Completed));
    assert_eq!(replay.state().messages(), stored.output);

    client.delete_session(&session).await.unwrap();
    let gone = client.session(&session).await.unwrap_err();
    assert!(
        matches!(&gone, ClientError::Api { status: 404, code, .. } if code == "not_found"),
        "{gone}"
    );
}

#[tokio::test]
async fn an_approval_answered_yes_runs_the_tool_and_no_denies_it() {
    let server = TestServer::start().await;
    let client = Client::new(&server.url).unwrap();
    for approved in [true, false] {
        let mut run = client
            .start(&StartRun::new(Message::user("write")).agent("writer"))
            .await
            .unwrap();
        assert_eq!(
            run.finish().await.unwrap(),
            Some(RunStatus::Awaiting(Awaiting::Approval))
        );
        let pending = run.pending_approvals();
        assert_eq!(pending.len(), 1);
        let (request, call) = pending[0];
        assert_eq!(call.unwrap().tool_name, "write_file");
        let approval_id = request.approval_id.to_string();
        run.approve(&approval_id, approved, Some("test".into()))
            .await
            .unwrap();
        assert_eq!(run.finish().await.unwrap(), Some(RunStatus::Completed));
        assert!(run.pending_approvals().is_empty());
        let messages = run.state().messages();
        let parts: Vec<&Part> = messages.iter().flat_map(|message| &message.parts).collect();
        let ran = parts.iter().any(|part| matches!(part, Part::ToolResult(_)));
        assert_eq!(ran, approved, "{parts:?}");
        let denied = parts
            .iter()
            .any(|part| matches!(part, Part::ApprovalResponse(response) if !response.approved));
        assert_eq!(denied, !approved, "{parts:?}");
        let written = server.dir.path().join("ws/a.txt");
        assert_eq!(written.exists(), approved);
        let _ = std::fs::remove_file(written);
        assert!(messages.last().unwrap().content().ends_with("Done."));
        // A second answer to the same request is the server's typed refusal.
        let again = run.approve(&approval_id, true, None).await.unwrap_err();
        assert!(
            matches!(again, ClientError::Api { status: 409, .. }),
            "{again}"
        );
    }
}

#[tokio::test]
async fn a_client_tool_call_is_answered_with_its_output() {
    let server = TestServer::start().await;
    let client = Client::new(&server.url).unwrap();
    let lookup = ToolSpec::new(
        "lookup",
        "Weather by city",
        json!({"type": "object", "properties": {"city": {"type": "string"}}}),
    );
    let mut run = client
        .start(
            &StartRun::new(Message::user("weather?"))
                .agent("asker")
                .tool(lookup),
        )
        .await
        .unwrap();
    assert_eq!(
        run.finish().await.unwrap(),
        Some(RunStatus::Awaiting(Awaiting::FunctionOutput))
    );
    let call = run.pending_tool_calls()[0].clone();
    assert_eq!(call.args.as_value(), &json!({"city": "Oslo"}));
    run.tool_output(&call.tool_call_id, &call.tool_name, json!({"celsius": -3}))
        .await
        .unwrap();
    assert_eq!(run.finish().await.unwrap(), Some(RunStatus::Completed));
    assert!(run.pending_tool_calls().is_empty());
    let last = run.state().messages().last().unwrap();
    assert_eq!(last.content(), "It is cold.");
}

#[tokio::test]
async fn cancel_ends_the_run_canceled() {
    let server = TestServer::start().await;
    let client = Client::new(&server.url).unwrap();
    let mut run = client
        .start(&StartRun::new(Message::user("hi")).agent("talker"))
        .await
        .unwrap();
    // Wait for some text, then cancel.
    while run
        .state()
        .messages()
        .first()
        .is_none_or(|m| m.content().is_empty())
    {
        run.next().await.unwrap().unwrap();
    }
    run.cancel().await.unwrap();
    assert_eq!(run.finish().await.unwrap(), Some(RunStatus::Canceled));
    assert_ne!(run.state().messages()[0].content(), whole_text());
}

#[tokio::test]
async fn a_stream_cut_mid_way_resumes_without_gap_or_duplicate() {
    let server = TestServer::start().await;
    // The POST's answer is cut after 1,500 bytes, the first resume after 700 more; cuts land
    // mid-frame, so the resume must drop the partial frame and ask again after the last whole
    // event.
    let proxy = CuttingProxy::start(&server.url, vec![1500, 700, 333]).await;
    let client = Client::new(&proxy.url).unwrap().with_reconnect(Reconnect {
        max_attempts: 3,
        backoff: Duration::from_millis(10),
    });
    let mut run = client
        .start(&StartRun::new(Message::user("hi")).agent("talker"))
        .await
        .unwrap();
    let mut seqs = Vec::new();
    while let Some(event) = run.next().await.unwrap() {
        seqs.push(event.seq);
    }
    assert!(
        proxy.connections.load(Ordering::SeqCst) >= 4,
        "three cuts, three resumes"
    );
    assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>());
    assert_eq!(run.status(), Some(RunStatus::Completed));
    assert_eq!(run.state().messages()[0].content(), whole_text());
    let direct = Client::new(&server.url).unwrap();
    let stored = direct.get_run(run.run_id().unwrap()).await.unwrap();
    assert_eq!(stored.output, run.state().messages());
}

#[tokio::test]
async fn a_stream_that_keeps_breaking_gives_up_with_a_typed_error() {
    let server = TestServer::start().await;
    let proxy = CuttingProxy::start(&server.url, vec![1500, 10, 10, 10]).await;
    let client = Client::new(&proxy.url).unwrap().with_reconnect(Reconnect {
        max_attempts: 2,
        backoff: Duration::from_millis(1),
    });
    let mut run = client
        .start(&StartRun::new(Message::user("hi")).agent("talker"))
        .await
        .unwrap();
    let error = loop {
        match run.next().await {
            Ok(Some(_)) => {}
            Ok(None) => panic!("the run cannot settle through this proxy"),
            Err(error) => break error,
        }
    };
    assert!(
        matches!(error, ClientError::Disconnected { attempts: 2, .. }),
        "{error}"
    );
}

#[tokio::test]
async fn errors_are_typed_and_keys_are_sent() {
    let server = TestServer::with_settings(Settings {
        api_keys: vec!["secret".into()],
        ..Settings::default()
    })
    .await;
    let anonymous = Client::new(&server.url).unwrap();
    let refused = anonymous.agents().await.unwrap_err();
    assert!(
        matches!(&refused, ClientError::Api { status: 401, code, .. } if code == "unauthorized"),
        "{refused}"
    );
    let client = Client::new(&server.url)
        .unwrap()
        .with_api_key("secret")
        .unwrap();
    assert_eq!(client.agents().await.unwrap().len(), 3);
    let unknown = client
        .start(&StartRun::new(Message::user("hi")).agent("nobody"))
        .await
        .unwrap_err();
    assert_eq!(unknown.code(), Some("unknown_agent"));
    assert!(matches!(
        Client::new("ftp://example.com"),
        Err(ClientError::InvalidUrl { .. })
    ));
    assert!(matches!(
        Client::new(&server.url).unwrap().with_api_key("bad\nkey"),
        Err(ClientError::InvalidApiKey)
    ));
    // Nothing listening: an HTTP error, not a panic.
    let nowhere = Client::new("http://127.0.0.1:9").unwrap();
    assert!(matches!(nowhere.agents().await, Err(ClientError::Http(_))));
}

#[tokio::test]
async fn a_sessions_state_is_read_set_and_patched_and_the_next_run_starts_from_it() {
    let server = TestServer::start().await;
    let client = Client::new(&server.url).unwrap();
    let session = agentwire_core::SessionId::from("ses_state");
    assert_eq!(
        client
            .set_session_state(&session, &json!({"todo": []}))
            .await
            .unwrap(),
        json!({"todo": []})
    );
    let patch: json_patch::Patch =
        serde_json::from_value(json!([{"op": "add", "path": "/todo/-", "value": "Write"}]))
            .unwrap();
    assert_eq!(
        client.patch_session_state(&session, &patch).await.unwrap(),
        json!({"todo": ["Write"]})
    );
    assert_eq!(
        client.session_state(&session).await.unwrap(),
        json!({"todo": ["Write"]})
    );
    let broken: json_patch::Patch =
        serde_json::from_value(json!([{"op": "remove", "path": "/nothing"}])).unwrap();
    let error = client
        .patch_session_state(&session, &broken)
        .await
        .unwrap_err();
    assert!(
        matches!(&error, ClientError::Api { status: 422, code, .. } if code == "patch_failed"),
        "{error}"
    );

    // A run of the session starts from it: the client's accumulator holds it.
    let mut run = client
        .start(
            &StartRun::new(Message::user("hi"))
                .agent("talker")
                .session(session.clone()),
        )
        .await
        .unwrap();
    assert_eq!(run.finish().await.unwrap(), Some(RunStatus::Completed));
    assert_eq!(run.state().state(), &json!({"todo": ["Write"]}));
}
