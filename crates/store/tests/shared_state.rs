//! A session's shared state in the store, on SQLite and on PostgreSQL: written with the events
//! that changed it, kept across reopening, set by a client only while no run is open and only
//! from the version it read.
#![allow(clippy::unwrap_used)]

use agentwire_core::{Event, EventKind, RunStatus, SessionId};
use agentwire_store::{EventBatch, Group, StateWrite, Store};
use serde_json::{Value, json};

#[macro_use]
mod common;

use common::{Db, postgres_db, sqlite_db};

on_both_backends!(
    a_batch_writes_the_state_its_events_leave,
    a_client_sets_the_state_only_while_no_run_is_open,
    a_stale_version_is_refused,
);

fn status(seq: u64, status: RunStatus) -> Event {
    Event::new(
        seq,
        EventKind::RunStatus {
            status,
            error: None,
            usage: None,
        },
    )
}

fn snapshot(seq: u64, state: Value) -> Event {
    Event::new(seq, EventKind::StateSnapshot { state })
}

/// The owner of the sessions of `session_with_run`.
const KEY_A: Option<&str> = Some("key_a");

async fn session_with_run(store: &Store, session: &SessionId, run: &str) -> agentwire_core::RunId {
    store.create_session(KEY_A, session).await.unwrap();
    let run_id = agentwire_core::RunId::from(run);
    let mut record = agentwire_store::RunRecord::new(run_id.clone(), "assistant", "node_a");
    record.session_id = Some(session.clone());
    record.owner = Some("key_a".into());
    store.create_run(&record).await.unwrap();
    run_id
}

async fn a_batch_writes_the_state_its_events_leave(db: Db) {
    let store = Store::open(&db.url).await.unwrap();
    let session = SessionId::from("ses_1");
    let run = session_with_run(&store, &session, "run_1").await;
    let before = store.shared_state(KEY_A, &session).await.unwrap().unwrap();
    assert_eq!(before.state, Value::Null);
    assert_eq!(before.owner.as_deref(), Some("key_a"));

    let mut batch = EventBatch::encode(
        &run,
        &[
            status(1, RunStatus::InProgress),
            snapshot(2, json!({"n": 1})),
        ],
    )
    .unwrap()
    .unwrap();
    batch.set_shared_state(json!({"n": 1}).to_string());
    // A batch without state events leaves the state alone.
    let plain = EventBatch::encode(&run, &[status(3, RunStatus::Completed)])
        .unwrap()
        .unwrap();
    let group = Group {
        batches: vec![&batch, &plain],
        ..Group::default()
    };
    store.write_group(&group).await.unwrap();
    let after = store.shared_state(KEY_A, &session).await.unwrap().unwrap();
    assert_eq!(after.state, json!({"n": 1}));
    assert!(after.version > before.version);

    // Kept across reopening.
    store.close().await;
    let store = Store::open(&db.url).await.unwrap();
    assert_eq!(
        store
            .shared_state(KEY_A, &session)
            .await
            .unwrap()
            .unwrap()
            .state,
        json!({"n": 1})
    );
    assert_eq!(
        store.shared_state(KEY_A, &"ses_none".into()).await.unwrap(),
        None
    );
}

async fn a_client_sets_the_state_only_while_no_run_is_open(db: Db) {
    let store = Store::open(&db.url).await.unwrap();
    let session = SessionId::from("ses_1");
    let run = session_with_run(&store, &session, "run_1").await;
    // The run is `created`, so open.
    assert_eq!(
        store
            .set_shared_state(KEY_A, &session, &json!({"a": 1}), None)
            .await
            .unwrap(),
        StateWrite::RunOpen(Some(run.clone()))
    );
    assert_eq!(
        store
            .shared_state(KEY_A, &session)
            .await
            .unwrap()
            .unwrap()
            .state,
        Value::Null
    );
    store
        .append_events(&run, &[status(1, RunStatus::Completed)])
        .await
        .unwrap();
    let written = store
        .set_shared_state(KEY_A, &session, &json!({"a": 1}), None)
        .await
        .unwrap();
    assert!(matches!(written, StateWrite::Written { .. }), "{written:?}");
    assert_eq!(
        store
            .shared_state(KEY_A, &session)
            .await
            .unwrap()
            .unwrap()
            .state,
        json!({"a": 1})
    );
    // Cleared: no state.
    store
        .set_shared_state(KEY_A, &session, &Value::Null, None)
        .await
        .unwrap();
    assert_eq!(
        store
            .shared_state(KEY_A, &session)
            .await
            .unwrap()
            .unwrap()
            .state,
        Value::Null
    );
    assert_eq!(
        store
            .set_shared_state(KEY_A, &"ses_none".into(), &json!({}), None)
            .await
            .unwrap(),
        StateWrite::NoSession
    );
}

async fn a_stale_version_is_refused(db: Db) {
    let store = Store::open(&db.url).await.unwrap();
    let session = SessionId::from("ses_1");
    store.create_session(None, &session).await.unwrap();
    let read = store.shared_state(None, &session).await.unwrap().unwrap();
    let StateWrite::Written { version } = store
        .set_shared_state(None, &session, &json!({"by": "first"}), Some(read.version))
        .await
        .unwrap()
    else {
        panic!("the first write from the version read is taken")
    };
    assert_eq!(version, read.version + 1);
    // A second writer that read the same version lost the race.
    assert_eq!(
        store
            .set_shared_state(None, &session, &json!({"by": "second"}), Some(read.version))
            .await
            .unwrap(),
        StateWrite::Stale
    );
    assert_eq!(
        store
            .shared_state(None, &session)
            .await
            .unwrap()
            .unwrap()
            .state,
        json!({"by": "first"})
    );
}
