//! The store's suite, run once on SQLite (a temporary file) and once on PostgreSQL
//! (`AGENTWIRE_TEST_DATABASE_URL`, which `scripts/postgres.sh` starts and prints; each test gets
//! a schema of its own). Without that variable the PostgreSQL tests fail: they are never skipped.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use futures::StreamExt;

use agentwire_core::{
    Awaiting, ErrorInfo, Event, EventKind, Message, MessageId, Part, Role, RunId, RunStatus,
    SessionId, Timestamp, Usage,
};
use agentwire_store::{
    Append, EventBatch, Group, INTERRUPTED, InputAnswer, Notice, Refusal, RunRecord, SessionCursor,
    Started, StateWrite, StatusSet, Store, StoreError, WebhookFormat, WebhookRecord, Written,
};

#[macro_use]
mod common;

use common::{Db, postgres_db, sqlite_db};

on_both_backends!(
    sessions_and_their_messages,
    a_session_forks_before_a_message,
    deleting_a_session_deletes_its_runs_and_events,
    events_replay_after_a_seq_without_gap_or_duplicate,
    a_retried_batch_is_not_duplicated,
    the_run_row_follows_run_status_events,
    interrupted_runs_become_incomplete_and_replay_to_an_end,
    many_interrupted_runs_end_each_once_with_their_output_and_deliveries,
    everything_is_there_after_reopening,
    concurrent_appends_to_different_runs,
    batches_of_many_runs_commit_together,
    notices_reach_listeners,
    a_turn_starts_in_one_write_or_not_at_all,
    a_group_writes_starts_appends_and_events_and_answers_each,
    sessions_are_listed_by_owner_newest_first_a_page_at_a_time,
    the_runs_of_a_node_whose_lease_lapsed_are_ended_once,
    shown_events_are_published_in_notices_that_fit,
    an_input_goes_to_the_run_and_its_answer_comes_back,
    a_parked_run_outlives_its_node_and_is_taken_over_once,
);

fn user_message(id: &str, text: &str) -> Message {
    let mut message = Message::new(Role::User, vec![Part::text(text)]);
    message.id = Some(MessageId::from(id));
    message
}

fn delta(seq: u64) -> Event {
    Event::new(
        seq,
        EventKind::PartDelta {
            message_id: MessageId::from("msg_1"),
            index: 0,
            delta: format!("token {seq} "),
        },
    )
}

fn status(seq: u64, status: RunStatus, usage: Option<Usage>) -> Event {
    Event::new(
        seq,
        EventKind::RunStatus {
            status,
            error: None,
            usage,
        },
    )
}

async fn new_run(store: &Store, id: &str, session: Option<&SessionId>, node: &str) -> RunId {
    let run_id = RunId::from(id);
    let mut run = RunRecord::new(run_id.clone(), "assistant", node);
    run.session_id = session.cloned();
    store.create_run(&run).await.unwrap();
    run_id
}

fn seqs(events: &[Event]) -> Vec<u64> {
    events.iter().map(|event| event.seq).collect()
}

async fn sessions_and_their_messages(db: Db) {
    let store = Store::open(&db.url).await.unwrap();
    let (id, key_a) = (SessionId::from("ses_1"), Some("key_a"));
    let created = store.create_session(key_a, &id).await.unwrap();
    assert_eq!(store.session(key_a, &id).await.unwrap(), Some(created));
    assert!(matches!(
        store.create_session(key_a, &id).await,
        Err(StoreError::AlreadyExists(_))
    ));
    assert_eq!(store.session(key_a, &"nope".into()).await.unwrap(), None);
    assert!(store.session_messages(key_a, &id).await.unwrap().is_empty());

    let first = [user_message("m1", "one"), user_message("m2", "two")];
    store.append_messages(key_a, &id, &first).await.unwrap();
    store
        .append_messages(key_a, &id, &[user_message("m3", "three")])
        .await
        .unwrap();
    let messages = store.session_messages(key_a, &id).await.unwrap();
    let texts: Vec<String> = messages.iter().map(Message::content).collect();
    assert_eq!(texts, ["one", "two", "three"]);
    assert_eq!(messages[0], first[0]);

    assert!(matches!(
        store.append_messages(key_a, &"nope".into(), &first).await,
        Err(StoreError::SessionNotFound(_))
    ));
    assert!(matches!(
        store.session_messages(key_a, &"nope".into()).await,
        Err(StoreError::SessionNotFound(_))
    ));

    // The same id of another owner (or of none) is another session, which the first one
    // neither shows nor blocks; deleting one leaves the other.
    for other in [Some("key_b"), None] {
        assert_eq!(store.session(other, &id).await.unwrap(), None);
        assert!(matches!(
            store.session_messages(other, &id).await,
            Err(StoreError::SessionNotFound(_))
        ));
        store.create_session(other, &id).await.unwrap();
        store
            .append_messages(other, &id, &[user_message("m1", "theirs")])
            .await
            .unwrap();
        let theirs = store.session_messages(other, &id).await.unwrap();
        assert_eq!(theirs.len(), 1);
    }
    assert!(store.delete_session(Some("key_b"), &id).await.unwrap());
    assert_eq!(store.session_messages(key_a, &id).await.unwrap(), messages);
    assert_eq!(store.session_messages(None, &id).await.unwrap().len(), 1);
}

async fn a_session_forks_before_a_message(db: Db) {
    let store = Store::open(&db.url).await.unwrap();
    let (from, key_a) = (SessionId::from("ses_from"), Some("key_a"));
    let run = RunRecord {
        session_id: Some(from.clone()),
        owner: Some("key_a".into()),
        ..RunRecord::new(RunId::from("run_1"), "assistant", "node-a")
    };
    let messages = [
        user_message("m1", "one"),
        user_message("m2", "two"),
        user_message("m3", "three"),
    ];
    store.start_run(&run, &messages[..1]).await.unwrap();
    store
        .append_messages(key_a, &from, &messages[1..])
        .await
        .unwrap();

    // Before m3: m1 and m2, as they were, in a session of its own owner.
    let fork = SessionId::from("ses_fork");
    let before = MessageId::from("m3");
    let created = store
        .fork_session(key_a, &from, Some(&before), &fork)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(store.session(key_a, &fork).await.unwrap(), Some(created));
    assert_eq!(
        store.session_messages(key_a, &fork).await.unwrap(),
        messages[..2]
    );
    // The copies are no run's input (a run's input is read back by `input_of`), and the next
    // message goes after them.
    let forked_run = RunRecord {
        session_id: Some(fork.clone()),
        ..run.clone()
    };
    assert!(store.run_input(&forked_run).await.unwrap().is_empty());
    assert_eq!(store.run_input(&run).await.unwrap(), messages[..1]);
    store
        .append_messages(key_a, &fork, &[user_message("m4", "four")])
        .await
        .unwrap();
    let texts: Vec<String> = store
        .session_messages(key_a, &fork)
        .await
        .unwrap()
        .iter()
        .map(Message::content)
        .collect();
    assert_eq!(texts, ["one", "two", "four"]);
    // The original is unchanged.
    assert_eq!(
        store.session_messages(key_a, &from).await.unwrap(),
        messages
    );

    // Before the first message: an empty session; without `before`: all of them.
    let first = MessageId::from("m1");
    store
        .fork_session(key_a, &from, Some(&first), &"ses_empty".into())
        .await
        .unwrap()
        .unwrap();
    assert!(
        store
            .session_messages(key_a, &"ses_empty".into())
            .await
            .unwrap()
            .is_empty()
    );
    store
        .fork_session(key_a, &from, None, &"ses_all".into())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        store
            .session_messages(key_a, &"ses_all".into())
            .await
            .unwrap(),
        messages
    );

    // A message the session does not hold creates nothing; a missing session or a taken id fail.
    let elsewhere = MessageId::from("m9");
    let none = store
        .fork_session(key_a, &from, Some(&elsewhere), &"ses_none".into())
        .await
        .unwrap();
    assert_eq!(none, None);
    assert_eq!(
        store.session(key_a, &"ses_none".into()).await.unwrap(),
        None
    );
    assert!(matches!(
        store
            .fork_session(key_a, &"nope".into(), None, &"ses_x".into())
            .await,
        Err(StoreError::SessionNotFound(_))
    ));
    assert!(matches!(
        store.fork_session(key_a, &from, None, &fork).await,
        Err(StoreError::AlreadyExists(_))
    ));
    assert_eq!(store.session_messages(key_a, &fork).await.unwrap().len(), 3);

    // A fork has the session's shared state, at its version.
    let stateful = SessionId::from("ses_stateful");
    store.create_session(key_a, &stateful).await.unwrap();
    let state = serde_json::json!({"plan": ["a"]});
    let written = store
        .set_shared_state(key_a, &stateful, &state, None)
        .await
        .unwrap();
    let copy = SessionId::from("ses_stateful_fork");
    store
        .fork_session(key_a, &stateful, None, &copy)
        .await
        .unwrap()
        .unwrap();
    let forked = store.shared_state(key_a, &copy).await.unwrap().unwrap();
    assert_eq!(
        (
            forked.state,
            StateWrite::Written {
                version: forked.version
            }
        ),
        (state, written)
    );
}

async fn a_turn_starts_in_one_write_or_not_at_all(db: Db) {
    let store = Store::open(&db.url).await.unwrap();
    let session = SessionId::from("ses_turns");
    let run = |id: &str| RunRecord {
        session_id: Some(session.clone()),
        owner: Some("key-1".into()),
        ..RunRecord::new(RunId::from(id), "assistant", "node-a")
    };
    // A new session is created with the run, owned by the run's owner.
    let first = run("run_1");
    store
        .start_run(&first, &[user_message("m1", "one")])
        .await
        .unwrap();
    let created = store
        .session(Some("key-1"), &session)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(created.owner.as_deref(), Some("key-1"));
    assert_eq!(store.run(&first.id).await.unwrap().unwrap(), first);
    // The next turn appends to its history.
    store
        .start_run(&run("run_2"), &[user_message("m2", "two")])
        .await
        .unwrap();
    // A run id that is taken changes nothing: no input is appended.
    assert!(matches!(
        store
            .start_run(&run("run_1"), &[user_message("m3", "three")])
            .await,
        Err(StoreError::AlreadyExists(_))
    ));
    let texts: Vec<String> = store
        .session_messages(Some("key-1"), &session)
        .await
        .unwrap()
        .iter()
        .map(Message::content)
        .collect();
    assert_eq!(texts, ["one", "two"]);
    assert_eq!(
        store
            .session_runs(Some("key-1"), &session)
            .await
            .unwrap()
            .len(),
        2
    );
    // Each run's input is found again by its run, not the output appended after it.
    store
        .append_messages(Some("key-1"), &session, &[user_message("a1", "answer")])
        .await
        .unwrap();
    for (run, text) in [(&first, "one"), (&run("run_2"), "two")] {
        let input = store.run_input(run).await.unwrap();
        let texts: Vec<String> = input.iter().map(Message::content).collect();
        assert_eq!(texts, [text], "{}", run.id);
    }
}

async fn sessions_are_listed_by_owner_newest_first_a_page_at_a_time(db: Db) {
    let store = Store::open(&db.url).await.unwrap();
    // Turns at fixed times (a turn's session is updated at its run's creation), so the order
    // is known; `b` and `c` tie, and the larger id comes first.
    let turn = |run: &str, session: &str, owner: Option<&str>, at: i64| RunRecord {
        session_id: Some(SessionId::from(session)),
        owner: owner.map(str::to_owned),
        created_at: agentwire_core::Timestamp(at),
        updated_at: agentwire_core::Timestamp(at),
        ..RunRecord::new(RunId::from(run), "writer", "node-a")
    };
    let key = Some("key-1");
    for (run, session, owner, at, text) in [
        ("run_a1", "ses_a", key, 1_000, "first question"),
        ("run_b1", "ses_b", key, 3_000, "about b"),
        ("run_c1", "ses_c", key, 3_000, "about c"),
        ("run_a2", "ses_a", key, 2_000, "second question"),
        ("run_d1", "ses_d", Some("key-2"), 4_000, "another key's"),
        ("run_e1", "ses_e", None, 5_000, "nobody's"),
    ] {
        store
            .start_run(&turn(run, session, owner, at), &[user_message(run, text)])
            .await
            .unwrap();
    }
    store
        .append_events(
            &RunId::from("run_b1"),
            &[status(1, RunStatus::Awaiting(Awaiting::Approval), None)],
        )
        .await
        .unwrap();

    let ids = |page: &[agentwire_store::SessionSummary]| -> Vec<String> {
        page.iter().map(|s| s.session.id.to_string()).collect()
    };
    let first = store.list_sessions(key, None, 2).await.unwrap();
    assert_eq!(ids(&first), ["ses_c", "ses_b"]);
    let b = &first[1];
    assert_eq!(b.session.owner.as_deref(), Some("key-1"));
    assert_eq!(b.message_count, 1);
    assert_eq!(b.first_message.as_ref().unwrap().content(), "about b");
    let run = b.last_run.as_ref().unwrap();
    assert_eq!((run.id.as_str(), run.agent.as_str()), ("run_b1", "writer"));
    assert_eq!(run.status, RunStatus::Awaiting(Awaiting::Approval));

    let second = store
        .list_sessions(key, Some(&first[1].cursor()), 2)
        .await
        .unwrap();
    assert_eq!(ids(&second), ["ses_a"]);
    let a = &second[0];
    assert_eq!(a.message_count, 2);
    assert_eq!(
        a.first_message.as_ref().unwrap().content(),
        "first question"
    );
    assert_eq!(
        a.last_message.as_ref().unwrap().content(),
        "second question"
    );
    assert_eq!(a.last_run.as_ref().unwrap().id.as_str(), "run_a2");
    assert!(
        store
            .list_sessions(key, Some(&second[0].cursor()), 2)
            .await
            .unwrap()
            .is_empty()
    );

    // Each owner sees only their own; no owner sees only the sessions without one.
    assert_eq!(
        ids(&store.list_sessions(Some("key-2"), None, 10).await.unwrap()),
        ["ses_d"]
    );
    assert_eq!(
        ids(&store.list_sessions(None, None, 10).await.unwrap()),
        ["ses_e"]
    );
    assert!(
        store
            .list_sessions(Some("key-9"), None, 10)
            .await
            .unwrap()
            .is_empty()
    );

    // A new message moves its session to the top; an empty session lists with nothing in it.
    store
        .append_messages(key, &"ses_a".into(), &[user_message("m_a3", "third")])
        .await
        .unwrap();
    store
        .create_session(key, &"ses_empty".into())
        .await
        .unwrap();
    let all = store.list_sessions(key, None, 10).await.unwrap();
    assert_eq!(ids(&all)[..2], ["ses_empty", "ses_a"]);
    assert_eq!(
        (all[0].message_count, all[0].first_message.as_ref()),
        (0, None)
    );
    assert_eq!(all[0].last_run, None);
    assert_eq!(all[1].last_message.as_ref().unwrap().content(), "third");
    let cursor = SessionCursor {
        updated_at: agentwire_core::Timestamp(3_000),
        id: SessionId::from("ses_c"),
    };
    assert_eq!(
        ids(&store.list_sessions(key, Some(&cursor), 10).await.unwrap()),
        ["ses_b"]
    );
}

async fn deleting_a_session_deletes_its_runs_and_events(db: Db) {
    let store = Store::open(&db.url).await.unwrap();
    let session = SessionId::from("ses_1");
    store.create_session(None, &session).await.unwrap();
    store
        .append_messages(None, &session, &[user_message("m1", "hi")])
        .await
        .unwrap();
    let run = new_run(&store, "run_1", Some(&session), "node_a").await;
    store
        .append_events(&run, &[delta(1), delta(2)])
        .await
        .unwrap();
    assert_eq!(store.session_runs(None, &session).await.unwrap().len(), 1);

    assert!(store.delete_session(None, &session).await.unwrap());
    assert_eq!(store.session(None, &session).await.unwrap(), None);
    assert_eq!(store.run(&run).await.unwrap(), None);
    assert!(store.events_after(&run, 0, 100).await.unwrap().is_empty());
    assert!(!store.delete_session(None, &session).await.unwrap());

    // A run cannot belong to a session that does not exist.
    let mut orphan = RunRecord::new("run_2".into(), "assistant", "node_a");
    orphan.session_id = Some(session.clone());
    assert!(matches!(
        store.create_run(&orphan).await,
        Err(StoreError::SessionNotFound(_))
    ));
}

async fn events_replay_after_a_seq_without_gap_or_duplicate(db: Db) {
    let store = Store::open(&db.url).await.unwrap();
    let run = new_run(&store, "run_1", None, "node_a").await;
    let events: Vec<Event> = (1..=1200).map(delta).collect();
    // Batches of uneven sizes, one larger than a single INSERT takes.
    for batch in [&events[..1], &events[1..700], &events[700..1200]] {
        store.append_events(&run, batch).await.unwrap();
    }
    // Heartbeats take no place in the log.
    store
        .append_events(&run, &[Event::heartbeat(1200)])
        .await
        .unwrap();

    let all = store.events_after(&run, 0, 10_000).await.unwrap();
    assert_eq!(all, events);
    let page = store.events_after(&run, 50, 10).await.unwrap();
    assert_eq!(seqs(&page), (51..=60).collect::<Vec<_>>());
    assert!(store.events_after(&run, 1200, 10).await.unwrap().is_empty());
    assert_eq!(store.run(&run).await.unwrap().unwrap().last_seq, 1200);

    // Paging through the whole log by the last seq seen gives every event once.
    let mut seen = Vec::new();
    loop {
        let after = seen.last().copied().unwrap_or(0);
        let page = store.events_after(&run, after, 333).await.unwrap();
        if page.is_empty() {
            break;
        }
        seen.extend(seqs(&page));
    }
    assert_eq!(seen, (1..=1200).collect::<Vec<_>>());

    assert!(matches!(
        store.append_events(&"nope".into(), &[delta(1)]).await,
        Err(StoreError::RunNotFound(_))
    ));
}

async fn a_retried_batch_is_not_duplicated(db: Db) {
    let store = Store::open(&db.url).await.unwrap();
    let run = new_run(&store, "run_1", None, "node_a").await;
    let events: Vec<Event> = (1..=100).map(delta).collect();
    store.append_events(&run, &events[..60]).await.unwrap();
    // The same batch again, then one overlapping it.
    store.append_events(&run, &events[..60]).await.unwrap();
    store.append_events(&run, &events[40..]).await.unwrap();
    let all = store.events_after(&run, 0, 1000).await.unwrap();
    assert_eq!(all, events);
    assert_eq!(store.run(&run).await.unwrap().unwrap().last_seq, 100);
}

async fn the_run_row_follows_run_status_events(db: Db) {
    let store = Store::open(&db.url).await.unwrap();
    let run = new_run(&store, "run_1", None, "node_a").await;
    let record = store.run(&run).await.unwrap().unwrap();
    assert_eq!(record.status, RunStatus::Created);
    assert_eq!(record.agent, "assistant");
    assert_eq!(record.node, "node_a");

    store
        .append_events(&run, &[status(1, RunStatus::InProgress, None), delta(2)])
        .await
        .unwrap();
    assert_eq!(
        store.run(&run).await.unwrap().unwrap().status,
        RunStatus::InProgress
    );

    let usage = Usage::new(10, 5);
    let awaiting = RunStatus::Awaiting(Awaiting::Approval);
    store
        .append_events(
            &run,
            &[delta(3), status(4, awaiting, Some(usage)), delta(5)],
        )
        .await
        .unwrap();
    store
        .set_run_state(&run, "awaiting_approval")
        .await
        .unwrap();
    let record = store.run(&run).await.unwrap().unwrap();
    assert_eq!(record.status, awaiting);
    assert_eq!(record.usage, Some(usage));
    assert_eq!(record.state.as_deref(), Some("awaiting_approval"));
    assert_eq!(record.last_seq, 5);

    let failed = Event::new(
        6,
        EventKind::RunStatus {
            status: RunStatus::Failed,
            error: Some(ErrorInfo::new("provider_error", "the provider said no")),
            usage: None,
        },
    );
    store.append_events(&run, &[failed]).await.unwrap();
    // An ended run takes no more events: a retry of an older batch does not take the status
    // back.
    assert!(matches!(
        store
            .append_events(&run, &[status(1, RunStatus::InProgress, None)])
            .await,
        Err(StoreError::RunEnded(_))
    ));
    let record = store.run(&run).await.unwrap().unwrap();
    assert_eq!(record.status, RunStatus::Failed);
    assert_eq!(record.error.unwrap().code, "provider_error");
    assert_eq!(
        record.usage,
        Some(usage),
        "a status without usage keeps the last usage"
    );
    assert!(matches!(
        store.set_run_state(&"nope".into(), "x").await,
        Err(StoreError::RunNotFound(_))
    ));
}

async fn interrupted_runs_become_incomplete_and_replay_to_an_end(db: Db) {
    let store = Store::open(&db.url).await.unwrap();
    let working = new_run(&store, "run_working", None, "node_a").await;
    let waiting = new_run(&store, "run_waiting", None, "node_a").await;
    let done = new_run(&store, "run_done", None, "node_a").await;
    let elsewhere = new_run(&store, "run_elsewhere", None, "node_b").await;
    let usage = Usage::new(3, 4);
    store
        .append_events(
            &working,
            &[status(1, RunStatus::InProgress, Some(usage)), delta(2)],
        )
        .await
        .unwrap();
    let awaiting = RunStatus::Awaiting(Awaiting::FunctionOutput);
    store
        .append_events(&waiting, &[status(1, awaiting, None)])
        .await
        .unwrap();
    store
        .append_events(&done, &[status(1, RunStatus::Completed, None)])
        .await
        .unwrap();
    store
        .append_events(&elsewhere, &[status(1, RunStatus::InProgress, None)])
        .await
        .unwrap();

    let mut ended = store.mark_interrupted("node_a").await.unwrap();
    ended.sort();
    assert_eq!(ended, [waiting.clone(), working.clone()]);

    let record = store.run(&working).await.unwrap().unwrap();
    assert_eq!(record.status, RunStatus::Incomplete);
    assert_eq!(record.error.as_ref().unwrap().code, INTERRUPTED);
    assert_eq!(record.usage, Some(usage));
    // Everything stored before is kept, and the log ends with the run's end.
    let events = store.events_after(&working, 0, 100).await.unwrap();
    assert_eq!(seqs(&events), [1, 2, 3]);
    assert_eq!(events[1], delta(2));
    match &events[2].kind {
        EventKind::RunStatus { status, error, .. } => {
            assert_eq!(*status, RunStatus::Incomplete);
            assert_eq!(error.as_ref().unwrap().code, INTERRUPTED);
        }
        other => panic!("expected run_status, got {other:?}"),
    }
    assert_eq!(
        store.run(&waiting).await.unwrap().unwrap().status,
        RunStatus::Incomplete
    );
    assert_eq!(
        store.run(&done).await.unwrap().unwrap().status,
        RunStatus::Completed
    );
    assert_eq!(
        store.run(&elsewhere).await.unwrap().unwrap().status,
        RunStatus::InProgress
    );
    assert!(store.mark_interrupted("node_a").await.unwrap().is_empty());
}

/// A restart after a crash with many runs going ends them many to a transaction: each once,
/// after its last seq, its completed part in its session's history in the order the runs were
/// created (two runs share each session here), and one delivery of its `incomplete` queued.
async fn many_interrupted_runs_end_each_once_with_their_output_and_deliveries(db: Db) {
    const RUNS: usize = 300;
    let store = Store::open(&db.url).await.unwrap();
    store
        .create_webhook(
            &WebhookRecord {
                id: "wh_1".into(),
                owner: None,
                run_id: None,
                url: "http://127.0.0.1:9/hook".to_owned(),
                secret: "whsec_c2VjcmV0".to_owned(),
                events: StatusSet::ALL,
                format: WebhookFormat::Standard,
                config_id: None,
                token: None,
                created_at: Timestamp(1),
            },
            1,
        )
        .await
        .unwrap();
    let mut runs = Vec::with_capacity(RUNS);
    for index in 0..RUNS {
        // Every fifth run has no session; the others go two to a session.
        let session = (index % 5 != 0).then(|| SessionId::from(format!("ses_{}", index / 2)));
        if let Some(session) = &session
            && store.session(None, session).await.unwrap().is_none()
        {
            store.create_session(None, session).await.unwrap();
        }
        // Ids in creation order, whatever the clock says.
        let run = new_run(
            &store,
            &format!("run_{index:03}"),
            session.as_ref(),
            "node_a",
        )
        .await;
        let message_id = MessageId::from(format!("msg_{index:03}"));
        let events = [
            status(1, RunStatus::InProgress, None),
            Event::new(
                2,
                EventKind::MessageStart {
                    message_id: message_id.clone(),
                    role: Role::Assistant,
                    metadata: Default::default(),
                    created_at: None,
                },
            ),
            Event::new(
                3,
                EventKind::PartComplete {
                    message_id,
                    index: 0,
                    part: Part::text(format!("part of run {index:03}")),
                },
            ),
        ];
        store.append_events(&run, &events).await.unwrap();
        runs.push((run, session));
    }
    // The in-progress statuses' deliveries are not what this test counts: claimed for ever.
    let now = Timestamp(i64::MAX / 2);
    let claimed = store
        .claim_deliveries(now, Timestamp(i64::MAX), 10_000)
        .await
        .unwrap();
    assert_eq!(claimed.len(), RUNS);

    let mut ended = store.mark_interrupted("node_a").await.unwrap();
    ended.sort();
    let all: Vec<RunId> = runs.iter().map(|(run, _)| run.clone()).collect();
    assert_eq!(ended, all);
    for (run, _) in &runs {
        let events = store.events_after(run, 0, 100).await.unwrap();
        assert_eq!(seqs(&events), [1, 2, 3, 4], "{run}");
        assert!(matches!(
            events[3].kind,
            EventKind::RunStatus {
                status: RunStatus::Incomplete,
                ..
            }
        ));
    }
    for (index, (_, session)) in runs.iter().enumerate() {
        let Some(session) = session else { continue };
        let history: Vec<String> = store
            .session_messages(None, session)
            .await
            .unwrap()
            .iter()
            .map(Message::content)
            .collect();
        let expected: Vec<String> = runs
            .iter()
            .enumerate()
            .filter(|(_, (_, other))| other.as_ref() == Some(session))
            .map(|(other, _)| format!("part of run {other:03}"))
            .collect();
        assert_eq!(history, expected, "run {index:03}");
    }
    let later = Timestamp(i64::MAX / 2 + 1);
    let deliveries = store.claim_deliveries(later, later, 10_000).await.unwrap();
    let mut incomplete: Vec<RunId> = deliveries
        .iter()
        .filter(|delivery| delivery.status == RunStatus::Incomplete)
        .map(|delivery| delivery.run_id.clone())
        .collect();
    incomplete.sort();
    assert_eq!(incomplete, all);
    assert_eq!(
        deliveries.len(),
        RUNS,
        "only the incomplete statuses are new"
    );
    assert!(store.mark_interrupted("node_a").await.unwrap().is_empty());
}

async fn everything_is_there_after_reopening(db: Db) {
    let session = SessionId::from("ses_1");
    let events: Vec<Event> = (1..=50).map(delta).collect();
    {
        let store = Store::open(&db.url).await.unwrap();
        store.create_session(None, &session).await.unwrap();
        store
            .append_messages(None, &session, &[user_message("m1", "remember me")])
            .await
            .unwrap();
        let run = new_run(&store, "run_1", Some(&session), "node_a").await;
        store.append_events(&run, &events).await.unwrap();
        store.close().await;
    }
    let store = Store::open(&db.url).await.unwrap();
    assert!(store.session(None, &session).await.unwrap().is_some());
    let messages = store.session_messages(None, &session).await.unwrap();
    assert_eq!(messages[0].content(), "remember me");
    let run = RunId::from("run_1");
    assert_eq!(store.events_after(&run, 0, 100).await.unwrap(), events);
    assert_eq!(store.run(&run).await.unwrap().unwrap().last_seq, 50);
}

async fn concurrent_appends_to_different_runs(db: Db) {
    let store = Store::open(&db.url).await.unwrap();
    let mut runs = Vec::new();
    for n in 0..8 {
        runs.push(new_run(&store, &format!("run_{n}"), None, "node_a").await);
    }
    let tasks = runs.iter().cloned().map(|run| {
        let store = store.clone();
        tokio::spawn(async move {
            for batch in 0..25u64 {
                let events: Vec<Event> = (batch * 20 + 1..=batch * 20 + 20).map(delta).collect();
                store.append_events(&run, &events).await.unwrap();
            }
        })
    });
    for task in futures::future::join_all(tasks).await {
        task.unwrap();
    }
    for run in &runs {
        let events = store.events_after(run, 0, 1000).await.unwrap();
        assert_eq!(seqs(&events), (1..=500).collect::<Vec<_>>(), "{run}");
    }
}

async fn batches_of_many_runs_commit_together(db: Db) {
    let store = Store::open(&db.url).await.unwrap();
    let a = new_run(&store, "run_a", None, "node_a").await;
    let b = new_run(&store, "run_b", None, "node_a").await;
    let missing = RunId::from("run_missing");
    let (a1, a2) = ([delta(1), delta(2)], [delta(3)]);
    let b1 = [delta(1), status(2, RunStatus::Completed, None)];
    let batch = |run: &RunId, events: &[Event]| EventBatch::encode(run, events).unwrap().unwrap();
    assert!(
        EventBatch::encode(&b, &[Event::heartbeat(2)])
            .unwrap()
            .is_none(),
        "heartbeats are not stored"
    );
    let gone = store
        .append_event_batches(&[
            &batch(&a, &a1),
            &batch(&missing, &[delta(1)]),
            &batch(&b, &b1),
            // A run's second batch in the same group follows its first.
            &batch(&a, &a2),
        ])
        .await
        .unwrap();
    assert_eq!(gone, vec![missing]);
    assert_eq!(
        seqs(&store.events_after(&a, 0, 100).await.unwrap()),
        [1, 2, 3]
    );
    assert_eq!(store.events_after(&b, 0, 100).await.unwrap(), b1);
    let row = store.run(&a).await.unwrap().unwrap();
    assert_eq!((row.last_seq, row.status), (3, RunStatus::Created));
    let row = store.run(&b).await.unwrap().unwrap();
    assert_eq!((row.last_seq, row.status), (2, RunStatus::Completed));

    // More runs than one statement takes, each with a batch, in one group.
    let mut runs = Vec::new();
    for n in 0..1001 {
        runs.push(new_run(&store, &format!("run_{n:04}"), None, "node_a").await);
    }
    let events: Vec<Event> = (1..=3).map(delta).collect();
    let batches: Vec<EventBatch> = runs.iter().map(|run| batch(run, &events)).collect();
    let group: Vec<&EventBatch> = batches.iter().collect();
    assert!(store.append_event_batches(&group).await.unwrap().is_empty());
    // Retried whole: nothing is duplicated.
    assert!(store.append_event_batches(&group).await.unwrap().is_empty());
    for run in [&runs[0], &runs[999], &runs[1000]] {
        assert_eq!(
            store.events_after(run, 0, 100).await.unwrap(),
            events,
            "{run}"
        );
        assert_eq!(store.run(run).await.unwrap().unwrap().last_seq, 3);
    }
}

async fn next_notice_for(notices: &mut agentwire_store::Notices, run: &RunId) -> Notice {
    tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            let notice = notices.next().await.unwrap().unwrap();
            let run_id = match &notice {
                Notice::Events { run_id, .. }
                | Notice::Cancel { run_id }
                | Notice::Follow { run_id }
                | Notice::Live { run_id, .. }
                | Notice::Input { run_id, .. } => Some(run_id),
                Notice::Answered { .. } | Notice::Inbox { .. } => None,
            };
            if run_id == Some(run) {
                return notice;
            }
        }
    })
    .await
    .unwrap()
}

/// On SQLite the notices go between clones of one store (one process); on PostgreSQL between
/// two stores opened separately, as two nodes would.
async fn notices_reach_listeners(db: Db) {
    let node_a = Store::open(&db.url).await.unwrap();
    let node_b = if node_a.is_postgres() {
        Store::open(&db.url).await.unwrap()
    } else {
        node_a.clone()
    };
    let mut heard_by_a = node_a.listen().await.unwrap();
    let mut heard_by_b = node_b.listen().await.unwrap();
    let run = new_run(&node_a, "run_1", None, "node_a").await;

    node_a
        .append_events(&run, &[delta(1), delta(2)])
        .await
        .unwrap();
    let notice = next_notice_for(&mut heard_by_b, &run).await;
    assert_eq!(
        notice,
        Notice::Events {
            run_id: run.clone(),
            seq: 2
        }
    );
    // What the notice announces is there to read on the other node.
    assert_eq!(
        seqs(&node_b.events_after(&run, 0, 10).await.unwrap()),
        [1, 2]
    );

    node_b
        .notify(&Notice::Cancel {
            run_id: run.clone(),
        })
        .await
        .unwrap();
    let heard = loop {
        let notice = next_notice_for(&mut heard_by_a, &run).await;
        if matches!(notice, Notice::Cancel { .. }) {
            break notice;
        }
    };
    assert_eq!(heard, Notice::Cancel { run_id: run });
}

#[tokio::test]
async fn a_bad_url_is_a_clear_error() {
    let error = Store::open("mysql://root@localhost/db").await.unwrap_err();
    assert!(matches!(error, StoreError::BadUrl { .. }), "{error}");
    assert!(
        error
            .to_string()
            .contains("expected sqlite://path or postgres://"),
        "{error}"
    );

    let error = Store::open("postgres://me:secret@127.0.0.1:notaport/db")
        .await
        .unwrap_err();
    assert!(matches!(error, StoreError::BadUrl { .. }), "{error}");
    assert!(!error.to_string().contains("secret"), "{error}");

    // Nothing listens on port 1: the error is the database's, not a hang or a panic.
    let error = Store::open("postgres://me@127.0.0.1:1/db")
        .await
        .unwrap_err();
    assert!(matches!(error, StoreError::Database(_)), "{error}");

    let file = tempfile::NamedTempFile::new().unwrap();
    let url = format!(
        "sqlite://{}/under_a_file/agentwire.db",
        file.path().display()
    );
    let error = Store::open(&url).await.unwrap_err();
    assert!(
        error.to_string().contains("cannot create directory"),
        "{error}"
    );
}

async fn a_group_writes_starts_appends_and_events_and_answers_each(db: Db) {
    let store = Store::open(&db.url).await.unwrap();
    // A session with a history, and a run already there.
    let old = SessionId::from("ses_old");
    let first = RunRecord {
        session_id: Some(old.clone()),
        ..RunRecord::new(RunId::from("run_old"), "assistant", "node-a")
    };
    store
        .start_run(
            &first,
            &[user_message("m1", "one"), user_message("m2", "two")],
        )
        .await
        .unwrap();
    let fresh = SessionId::from("ses_fresh");
    let in_session = |id: &str, session: &SessionId| RunRecord {
        session_id: Some(session.clone()),
        ..RunRecord::new(RunId::from(id), "assistant", "node-a")
    };
    // A session of another owner: the same id names another session, of the run's owner.
    let theirs = SessionId::from("ses_theirs");
    store.create_session(Some("key_b"), &theirs).await.unwrap();
    let (next, new, taken, intruder) = (
        in_session("run_next", &old),
        in_session("run_new", &fresh),
        in_session("run_old", &fresh),
        in_session("run_intruder", &theirs),
    );
    let (three, four, hello, nope) = (
        [user_message("m3", "three")],
        [user_message("m4", "four"), user_message("m5", "five")],
        [user_message("m6", "hello")],
        [user_message("m7", "lost")],
    );
    let gone = RunId::from("run_gone");
    let (events, more) = (
        [delta(1), delta(2)],
        [status(1, RunStatus::InProgress, None)],
    );
    let missing = SessionId::from("ses_missing");
    let batches = [(&first.id, &events[..]), (&gone, &events), (&new.id, &more)]
        .map(|(run, events)| EventBatch::encode(run, events).unwrap().unwrap());
    let group = Group {
        starts: vec![
            (&next, &three),
            (&new, &hello),
            (&taken, &nope),
            (&intruder, &nope),
        ],
        appends: vec![
            Append {
                owner: None,
                session_id: &old,
                messages: &four,
                schema_state: Some("done"),
            },
            Append {
                owner: None,
                session_id: &missing,
                messages: &nope,
                schema_state: None,
            },
        ],
        batches: vec![&batches[0], &batches[1], &batches[2]],
        node: None,
    };
    let written = store.write_group(&group).await.unwrap();
    assert_eq!(
        written,
        Written {
            started: vec![
                Started::Done,
                Started::Done,
                Started::RunExists,
                Started::Done
            ],
            appended: vec![true, false],
            gone: vec![gone],
        }
    );
    let texts =
        |messages: Vec<Message>| -> Vec<String> { messages.iter().map(Message::content).collect() };
    // Each history goes on from its end: the start's input, then the append.
    assert_eq!(
        texts(store.session_messages(None, &old).await.unwrap()),
        ["one", "two", "three", "four", "five"]
    );
    // The append set the session's schema state; a later append without one keeps it.
    let state = |session: Option<agentwire_store::SessionRecord>| {
        session.and_then(|session| session.schema_state)
    };
    assert_eq!(
        state(store.session(None, &old).await.unwrap()).as_deref(),
        Some("done")
    );
    store.append_messages(None, &old, &[]).await.unwrap();
    assert_eq!(
        state(store.session(None, &old).await.unwrap()).as_deref(),
        Some("done")
    );
    assert_eq!(state(store.session(None, &fresh).await.unwrap()), None);
    // The taken run id wrote nothing, not even its session's input.
    assert_eq!(
        texts(store.session_messages(None, &fresh).await.unwrap()),
        ["hello"]
    );
    assert!(store.session(None, &missing).await.unwrap().is_none());
    assert!(
        store
            .session_messages(Some("key_b"), &theirs)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        texts(store.session_messages(None, &theirs).await.unwrap()),
        ["lost"]
    );
    assert!(store.run(&intruder.id).await.unwrap().is_some());
    assert_eq!(
        seqs(&store.events_after(&first.id, 0, 10).await.unwrap()),
        [1, 2]
    );
    let started = store.run(&new.id).await.unwrap().unwrap();
    assert_eq!(started.status, RunStatus::InProgress);
    assert_eq!(
        store
            .run(&RunId::from("run_old"))
            .await
            .unwrap()
            .unwrap()
            .session_id,
        Some(old)
    );
}

/// Leases with the clock in the test's hands: times are passed in, never read.
async fn the_runs_of_a_node_whose_lease_lapsed_are_ended_once(db: Db) {
    let store = Store::open(&db.url).await.unwrap();
    let at = |seconds: i64| Timestamp(1_000_000 + seconds * 1000);
    let session = SessionId::from("ses_1");
    store.create_session(None, &session).await.unwrap();
    let on_a = new_run(&store, "run_a", Some(&session), "node_a").await;
    let on_b = new_run(&store, "run_b", None, "node_b").await;
    let legacy = new_run(&store, "run_legacy", None, "node_legacy").await;
    let complete = Event::new(
        2,
        EventKind::PartComplete {
            message_id: MessageId::from("msg_1"),
            index: 0,
            part: Part::text("done before the crash"),
        },
    );
    let start = Event::new(
        1,
        EventKind::MessageStart {
            message_id: MessageId::from("msg_1"),
            role: Role::Assistant,
            metadata: Default::default(),
            created_at: None,
        },
    );
    store
        .append_events(&on_a, &[start, complete])
        .await
        .unwrap();
    store.renew_lease("node_a", at(6)).await.unwrap();
    store.renew_lease("node_b", at(6)).await.unwrap();

    if !store.is_postgres() {
        // One process per SQLite file: no leases, a restarted process ends its own runs.
        assert!(store.sweep_lapsed(at(100)).await.unwrap().is_empty());
        assert!(store.sweep_unleased(at(100)).await.unwrap().is_empty());
        assert!(store.node_alive("node_a", at(100)).await.unwrap());
        return;
    }
    // Within the lease nobody is taken for dead by a sweep; a node that never held a lease
    // is, when a starting node looks for such nodes.
    assert!(store.sweep_lapsed(at(5)).await.unwrap().is_empty());
    assert_eq!(store.sweep_unleased(at(5)).await.unwrap(), [legacy]);
    assert!(store.node_alive("node_a", at(5)).await.unwrap());

    // node_b renews; node_a does not. Two nodes sweep at once: each run ends once.
    store.renew_lease("node_b", at(20)).await.unwrap();
    let other = Store::open(&db.url).await.unwrap();
    let (first, second) = tokio::join!(store.sweep_lapsed(at(10)), other.sweep_lapsed(at(10)));
    let mut ended = first.unwrap();
    ended.extend(second.unwrap());
    assert_eq!(ended, std::slice::from_ref(&on_a));
    assert!(!store.node_alive("node_a", at(10)).await.unwrap());
    let record = store.run(&on_a).await.unwrap().unwrap();
    assert_eq!(record.status, RunStatus::Incomplete);
    assert_eq!(record.error.unwrap().code, INTERRUPTED);
    assert_eq!(
        store.run(&on_b).await.unwrap().unwrap().status,
        RunStatus::Created
    );
    // Its completed part joined its session once, marked.
    let history = store.session_messages(None, &session).await.unwrap();
    assert_eq!(history.len(), 1, "{history:?}");
    assert_eq!(history[0].content(), "done before the crash");
    assert_eq!(history[0].metadata.extra["incomplete"], true);
    // node_a was only slow: its late events are refused, the run stays ended.
    assert!(matches!(
        store.append_events(&on_a, &[delta(3)]).await,
        Err(StoreError::RunEnded(_))
    ));
    // Back, node_a takes a lease again; nothing of it is left to end.
    store.renew_lease("node_a", at(30)).await.unwrap();
    assert!(store.recover_node("node_a").await.unwrap().is_empty());
    // A node asked about a run of a node that gave its lease up ends it at once.
    store.release_lease("node_b").await.unwrap();
    assert!(!store.node_alive("node_b", at(11)).await.unwrap());
    assert_eq!(store.end_if_dead("node_b", at(11)).await.unwrap(), [on_b]);
}

async fn shown_events_are_published_in_notices_that_fit(db: Db) {
    let store = Store::open(&db.url).await.unwrap();
    let run = RunId::from("run_1");
    let mut notices = store.listen().await.unwrap();
    // 400 deltas of about 30 bytes of JSON each: more than one notice holds.
    let events: Vec<Event> = (1..=400).map(delta).collect();
    store.publish_live(&run, &events).await.unwrap();
    if !store.is_postgres() {
        // One process: its readers follow the run in memory, nothing is published.
        store
            .notify(&Notice::Follow {
                run_id: run.clone(),
            })
            .await
            .unwrap();
        assert_eq!(
            next_notice_for(&mut notices, &run).await,
            Notice::Follow { run_id: run }
        );
        return;
    }
    let mut published = Vec::new();
    while published.len() < events.len() {
        let Notice::Live { events: part, .. } = next_notice_for(&mut notices, &run).await else {
            panic!("a live notice");
        };
        assert!(part.len() < events.len(), "cut into several notices");
        published.extend(part);
    }
    assert_eq!(published, events);
    // An event too large for a notice, and what follows it, are left to the log.
    let huge = Event::new(
        401,
        EventKind::PartDelta {
            message_id: MessageId::from("msg_1"),
            index: 0,
            delta: "x".repeat(8000),
        },
    );
    store
        .publish_live(&run, &[delta(400), huge, delta(402)])
        .await
        .unwrap();
    store
        .notify(&Notice::Cancel {
            run_id: run.clone(),
        })
        .await
        .unwrap();
    assert_eq!(
        next_notice_for(&mut notices, &run).await,
        Notice::Live {
            run_id: run.clone(),
            events: vec![delta(400)]
        }
    );
    assert_eq!(
        next_notice_for(&mut notices, &run).await,
        Notice::Cancel { run_id: run }
    );
}

async fn an_input_goes_to_the_run_and_its_answer_comes_back(db: Db) {
    let store = Store::open(&db.url).await.unwrap();
    let run = new_run(&store, "run_1", None, "node_a").await;
    let mut notices = store.listen().await.unwrap();
    let message = user_message("m1", "approved");
    assert!(matches!(
        store
            .send_input("inp_0", &RunId::from("run_nope"), &message)
            .await,
        Err(StoreError::RunNotFound(_))
    ));
    store.send_input("inp_1", &run, &message).await.unwrap();
    assert_eq!(
        next_notice_for(&mut notices, &run).await,
        Notice::Input {
            run_id: run.clone(),
            input_id: "inp_1".into()
        }
    );
    assert_eq!(
        store.input_answer("inp_1").await.unwrap(),
        None,
        "not answered yet"
    );
    assert_eq!(
        store.take_input("inp_1").await.unwrap(),
        Some((run.clone(), message))
    );
    let refused = InputAnswer {
        refused: Some(Refusal {
            code: "unknown_approval".into(),
            message: "no approval 'nope' is asked".into(),
        }),
    };
    store.answer_input("inp_1", &refused).await.unwrap();
    assert_eq!(store.take_input("inp_1").await.unwrap(), None, "answered");
    assert_eq!(store.input_answer("inp_1").await.unwrap(), Some(refused));
    // Read once, then forgotten.
    assert_eq!(store.input_answer("inp_1").await.unwrap(), None);
}

/// A run that waits with a checkpoint is not ended with its node; another node takes it over
/// once, from then on the first node's writes of it are refused, and the next status clears
/// the checkpoint.
async fn a_parked_run_outlives_its_node_and_is_taken_over_once(db: Db) {
    let store = Store::open(&db.url).await.unwrap();
    let parked = new_run(&store, "run_parked", None, "node_a").await;
    let awaiting = RunStatus::Awaiting(Awaiting::Approval);
    let write = |run: &RunId, events: &[Event], node: Option<&'static str>, park: bool| {
        let mut batch = EventBatch::encode(run, events).unwrap().unwrap();
        match park {
            true => batch.park(r#"{"state":"awaiting_approval"}"#.to_owned()),
            false => batch.reserve_through(batch.last_seq() + 4096),
        }
        let store = store.clone();
        async move {
            let group = Group {
                batches: vec![&batch],
                node,
                ..Group::default()
            };
            store.write_group(&group).await.unwrap()
        }
    };
    // Deltas shown ahead reserved seqs; the wait's commit brings the reservation down to it.
    write(
        &parked,
        &[status(1, RunStatus::InProgress, None), delta(2)],
        Some("node_a"),
        false,
    )
    .await;
    write(&parked, &[status(3, awaiting, None)], Some("node_a"), true).await;

    assert!(store.mark_interrupted("node_a").await.unwrap().is_empty());
    assert_eq!(store.run(&parked).await.unwrap().unwrap().status, awaiting);
    // Not from a node that does not hold it.
    assert_eq!(
        store.take_over(&parked, "node_c", "node_b").await.unwrap(),
        None
    );
    let (checkpoint, last_seq) = store
        .take_over(&parked, "node_a", "node_b")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (checkpoint.as_str(), last_seq),
        (r#"{"state":"awaiting_approval"}"#, 3)
    );
    assert_eq!(
        store.take_over(&parked, "node_a", "node_c").await.unwrap(),
        None,
        "once"
    );
    assert_eq!(store.run(&parked).await.unwrap().unwrap().node, "node_b");

    // The node that held it is refused; the one that took it writes on from seq 4.
    let late = write(&parked, &[delta(4)], Some("node_a"), false).await;
    assert_eq!(late.gone, vec![parked.clone()]);
    let on = write(
        &parked,
        &[status(4, RunStatus::InProgress, None)],
        Some("node_b"),
        false,
    )
    .await;
    assert!(on.gone.is_empty());
    assert_eq!(
        seqs(&store.events_after(&parked, 0, 100).await.unwrap()),
        [1, 2, 3, 4]
    );
    // Working again, it has no checkpoint: a crash of its new node ends it after its
    // reservation.
    assert_eq!(
        store.take_over(&parked, "node_b", "node_c").await.unwrap(),
        None
    );
    assert_eq!(
        store.mark_interrupted("node_b").await.unwrap(),
        std::slice::from_ref(&parked)
    );
    let events = store.events_after(&parked, 4, 10).await.unwrap();
    assert_eq!(seqs(&events), [4 + 4096 + 1]);
}
