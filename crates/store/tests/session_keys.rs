//! A session is its owner's: rows written before sessions were keyed by owner survive the
//! migration, whole and with their owners; deleting a session takes everything named by it;
//! an inbox message never names a run that was not made; a run's row keeps where its end left
//! its schema. On both backends.
#![allow(clippy::unwrap_used)]

use std::path::Path;

use agentwire_core::{
    InputMode, Message, MessageId, Part, Role, RunId, RunStatus, SessionId, Timestamp,
};
use agentwire_store::{
    EventBatch, Group, InboxState, NewInboxEntry, Posted, RunRecord, Settlement, StateWrite, Store,
};
use serde_json::json;
use sqlx::migrate::Migrator;

#[macro_use]
mod common;

use common::{Db, execute, postgres_db, scalar, sqlite_db};

on_both_backends!(
    rows_written_before_owner_keys_survive_the_migration,
    deleting_a_session_takes_its_inbox_and_state,
    a_message_whose_start_made_no_run_names_no_run,
    a_run_row_keeps_the_state_its_end_left,
);

fn user_message(id: &str, text: &str) -> Message {
    let mut message = Message::new(Role::User, vec![Part::text(text)]);
    message.id = Some(MessageId::from(id));
    message
}

/// The migration that keys sessions by owner.
const OWNER_KEYS: i64 = 14;

/// Brings the test's database to the schema before sessions were keyed by owner.
async fn migrate_before_owner_keys(db: &Db) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("migrations");
    let mut migrator = Migrator::new(dir).await.unwrap();
    migrator.migrations = migrator
        .migrations
        .iter()
        .filter(|migration| migration.version < OWNER_KEYS)
        .cloned()
        .collect::<Vec<_>>()
        .into();
    if let Some(file) = db.url.strip_prefix("sqlite://") {
        std::fs::create_dir_all(Path::new(file).parent().unwrap()).unwrap();
        let options = db
            .url
            .parse::<sqlx::sqlite::SqliteConnectOptions>()
            .unwrap();
        let pool = sqlx::SqlitePool::connect_with(options.create_if_missing(true))
            .await
            .unwrap();
        migrator.run(&pool).await.unwrap();
        pool.close().await;
    } else {
        let pool = sqlx::PgPool::connect(&db.url).await.unwrap();
        migrator.run(&pool).await.unwrap();
        pool.close().await;
    }
}

async fn rows_written_before_owner_keys_survive_the_migration(db: Db) {
    migrate_before_owner_keys(&db).await;
    // A session of a key with a message, a run, its events, an input and an inbox message; a
    // session without an owner; a run without a session.
    for sql in [
        "INSERT INTO sessions (id, owner, created_at, updated_at, schema_state, shared_state, \
         shared_state_version) VALUES ('ses_a', 'name:a', 1, 2, 'idle', '{\"n\":1}', 3), \
         ('ses_open', NULL, 1, 1, NULL, NULL, 0)",
        "INSERT INTO messages (session_id, position, message_id, message, input_of) VALUES \
         ('ses_a', 0, 'm1', '{\"role\":\"user\",\"parts\":[{\"type\":\"text\",\"text\":\"hi\"}]}', 'run_a'), \
         ('ses_open', 0, 'm2', '{\"role\":\"user\",\"parts\":[{\"type\":\"text\",\"text\":\"yo\"}]}', NULL)",
        "INSERT INTO runs (id, session_id, owner, agent, node, status, status_seq, last_seq, \
         created_at, updated_at) VALUES \
         ('run_a', 'ses_a', 'name:a', 'assistant', 'n1', 'completed', 1, 1, 5, 6), \
         ('run_lone', NULL, NULL, 'assistant', 'n1', 'completed', 1, 1, 7, 8)",
        "INSERT INTO event_batches (run_id, last_seq, first_seq, events) VALUES \
         ('run_a', 1, 1, '[{\"seq\":1,\"event\":\"run_status\",\"status\":\"completed\"}]')",
        "INSERT INTO inputs (id, run_id, message, created_at) VALUES ('in_1', 'run_a', '{}', 9)",
        "INSERT INTO session_inputs (session_id, client_message_id, position, agent, mode, \
         message, outcome, created_at, updated_at) VALUES ('ses_a', 'cm_1', 1, 'assistant', \
         'queue', '{\"role\":\"user\",\"parts\":[{\"type\":\"text\",\"text\":\"later\"}]}', \
         'queued', 1, 1)",
    ] {
        execute(&db, sql).await;
    }
    let store = Store::open(&db.url).await.unwrap();
    let a = Some("name:a");
    let session = store.session(a, &"ses_a".into()).await.unwrap().unwrap();
    assert_eq!(
        (session.owner.as_deref(), session.schema_state.as_deref()),
        (a, Some("idle"))
    );
    assert_eq!(session.updated_at, Timestamp(2));
    let state = store
        .shared_state(a, &"ses_a".into())
        .await
        .unwrap()
        .unwrap();
    assert_eq!((state.state, state.version), (json!({"n": 1}), 3));
    assert_eq!(
        store.session_messages(a, &"ses_a".into()).await.unwrap()[0].content(),
        "hi"
    );
    let run = store.run(&RunId::from("run_a")).await.unwrap().unwrap();
    assert_eq!(run.owner.as_deref(), a);
    assert_eq!(store.run_input(&run).await.unwrap().len(), 1);
    assert_eq!(store.events_after(&run.id, 0, 10).await.unwrap().len(), 1);
    assert_eq!(scalar(&db, "SELECT COUNT(*) FROM inputs").await, 1);
    let queued = store.queued(a, &"ses_a".into(), None).await.unwrap();
    assert_eq!(queued.len(), 1);
    // Without an owner before, without one after.
    let open = store
        .session(None, &"ses_open".into())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(open.owner, None);
    let lone = store.run(&RunId::from("run_lone")).await.unwrap().unwrap();
    assert_eq!((lone.owner, lone.session_id), (None, None));
    // The other owner's view of the same ids: nothing.
    assert_eq!(store.session(None, &"ses_a".into()).await.unwrap(), None);
    // The foreign keys hold on the new tables: deleting the session takes all of it.
    assert!(store.delete_session(a, &"ses_a".into()).await.unwrap());
    for table in ["messages", "session_inputs", "event_batches", "inputs"] {
        let left = scalar(
            &db,
            &format!("SELECT COUNT(*) FROM {table} WHERE {}", left_of(table)),
        )
        .await;
        assert_eq!(left, 0, "{table}");
    }
    assert!(store.run(&RunId::from("run_a")).await.unwrap().is_none());
}

/// The rows of `table` that session `ses_a` or its run left.
fn left_of(table: &str) -> &'static str {
    match table {
        "messages" | "session_inputs" => "session_id = 'ses_a'",
        _ => "run_id = 'run_a'",
    }
}

async fn post(store: &Store, owner: Option<&str>, session: &SessionId, id: &str) {
    let message = user_message(id, "later");
    let posted = store
        .post_inbox(&NewInboxEntry {
            owner,
            session_id: session,
            client_message_id: id,
            agent: "assistant",
            mode: InputMode::Queue,
            message: &message,
            state: InboxState::Queued,
            run_id: None,
            rollback_of: None,
        })
        .await
        .unwrap();
    assert!(matches!(posted, Posted::New(_)));
}

async fn deleting_a_session_takes_its_inbox_and_state(db: Db) {
    let store = Store::open(&db.url).await.unwrap();
    let session = SessionId::from("ses_1");
    for owner in [Some("key_a"), Some("key_b")] {
        store.create_session(owner, &session).await.unwrap();
        post(&store, owner, &session, "cm_1").await;
        let written = store
            .set_shared_state(owner, &session, &json!({"by": owner}), None)
            .await
            .unwrap();
        assert!(matches!(written, StateWrite::Written { .. }));
    }
    assert!(store.delete_session(Some("key_a"), &session).await.unwrap());
    // A session of the same id made again starts with nothing.
    store.create_session(Some("key_a"), &session).await.unwrap();
    assert!(
        store
            .inbox(Some("key_a"), &session, 0, 10)
            .await
            .unwrap()
            .is_empty()
    );
    let state = store.shared_state(Some("key_a"), &session).await.unwrap();
    assert_eq!(state.unwrap().state, serde_json::Value::Null);
    // The other key's session of the same id keeps its own.
    assert_eq!(
        store
            .inbox(Some("key_b"), &session, 0, 10)
            .await
            .unwrap()
            .len(),
        1
    );
    let theirs = store.shared_state(Some("key_b"), &session).await.unwrap();
    assert_eq!(theirs.unwrap().state, json!({"by": "key_b"}));
    assert_eq!(scalar(&db, "SELECT COUNT(*) FROM session_inputs").await, 1);
}

async fn a_message_whose_start_made_no_run_names_no_run(db: Db) {
    let store = Store::open(&db.url).await.unwrap();
    let (owner, session) = (Some("key_a"), SessionId::from("ses_1"));
    store.create_session(owner, &session).await.unwrap();
    post(&store, owner, &session, "cm_1").await;
    post(&store, owner, &session, "cm_2").await;
    // A claim names the run to be started; the start is refused and makes none.
    let never = RunId::from("run_never");
    let claimed = store.claim_next(owner, &session, &never).await.unwrap();
    assert_eq!(claimed.unwrap().run_id.as_ref(), Some(&never));
    let refused = Settlement {
        state: InboxState::NotDelivered,
        run_id: None,
        step: None,
        reason: Some("refused"),
    };
    store
        .settle_inbox(owner, &session, "cm_1", refused)
        .await
        .unwrap();
    let entry = store.inbox_entry(owner, &session, "cm_1").await.unwrap();
    let entry = entry.unwrap();
    assert_eq!(
        (entry.state, entry.run_id),
        (InboxState::NotDelivered, None)
    );
    // A start cut by a stopped node goes back to the queue, naming no run either.
    let claimed = store.claim_next(owner, &session, &never).await.unwrap();
    assert_eq!(claimed.unwrap().client_message_id, "cm_2");
    assert_eq!(store.settle_stale_inbox(i64::MAX).await.unwrap(), 1);
    let entry = store.inbox_entry(owner, &session, "cm_2").await.unwrap();
    let entry = entry.unwrap();
    assert_eq!((entry.state, entry.run_id), (InboxState::Queued, None));
    // One whose run was made keeps naming it.
    let made = RunId::from("run_made");
    let claimed = store.claim_next(owner, &session, &made).await.unwrap();
    assert_eq!(claimed.unwrap().client_message_id, "cm_2");
    let run = RunRecord {
        session_id: Some(session.clone()),
        owner: owner.map(str::to_owned),
        ..RunRecord::new(made.clone(), "assistant", "node_a")
    };
    store
        .start_run(&run, &[user_message("m1", "later")])
        .await
        .unwrap();
    let delivered = Settlement {
        state: InboxState::Delivered,
        run_id: None,
        step: Some(0),
        reason: None,
    };
    store
        .settle_inbox(owner, &session, "cm_2", delivered)
        .await
        .unwrap();
    let entry = store.inbox_entry(owner, &session, "cm_2").await.unwrap();
    assert_eq!(entry.unwrap().run_id, Some(made));
}

async fn a_run_row_keeps_the_state_its_end_left(db: Db) {
    let store = Store::open(&db.url).await.unwrap();
    let run = RunRecord {
        state: Some("running".to_owned()),
        ..RunRecord::new(RunId::from("run_1"), "assistant", "node_a")
    };
    store.create_run(&run).await.unwrap();
    let end = agentwire_core::Event::new(
        1,
        agentwire_core::EventKind::RunStatus {
            status: RunStatus::Completed,
            error: None,
            usage: None,
        },
    );
    let mut batch = EventBatch::encode(&run.id, &[end]).unwrap().unwrap();
    batch.set_run_state("idle".to_owned());
    let group = Group {
        batches: vec![&batch],
        ..Group::default()
    };
    store.write_group(&group).await.unwrap();
    let stored = store.run(&run.id).await.unwrap().unwrap();
    assert_eq!(
        (stored.status, stored.state.as_deref()),
        (RunStatus::Completed, Some("idle"))
    );
}
