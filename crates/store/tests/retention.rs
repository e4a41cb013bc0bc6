//! Retention on both backends: compaction replays every run as before from every seq, runs
//! that have not ended are left alone, deletion leaves nothing behind, and (SQLite) the WAL and
//! the file stay bounded.
#![allow(clippy::unwrap_used)]

use agentwire_core::{
    Accumulator, Awaiting, Emitter, Event, EventKind, Message, MessageBuilder, MessageStart,
    Metadata, Part, Role, RunId, RunStatus, SessionId, Timestamp, Usage,
};
use agentwire_store::{Compaction, Deletion, RunRecord, Store};
use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::TestRunner;

#[macro_use]
mod common;

use common::{Db, execute, postgres_db, scalar, sqlite_db};

on_both_backends!(
    compacted_runs_replay_as_before_from_every_seq,
    compaction_is_idempotent_and_leaves_runs_that_have_not_ended,
    old_sessions_and_runs_are_deleted_with_everything_of_theirs,
    deleting_a_session_leaves_no_row_of_it,
    a_compacted_run_of_200_tokens_takes_under_4_kib,
    two_nodes_share_the_work_of_retention,
);

/// Far in the future: every run was last updated before it.
const LATER: Timestamp = Timestamp(i64::MAX);

/// Runs and sessions given to [`age`] were last updated then.
const LONG_AGO: i64 = 1_000;

async fn start(store: &Store, run_id: &RunId, session: &SessionId, input: &[Message]) {
    let mut run = RunRecord::new(run_id.clone(), "assistant", "local");
    run.session_id = Some(session.clone());
    store.start_run(&run, input).await.unwrap();
}

/// Appends `events` to the run in batches cut where `cuts` say (cyclically), overlapping the
/// batch before by one event now and then, as a retried commit would.
async fn append_in_batches(store: &Store, run_id: &RunId, events: &[Event], cuts: &[usize]) {
    let mut from = 0;
    let mut turn = 0;
    while from < events.len() {
        let size = 1 + cuts[turn % cuts.len()] % 40;
        let to = (from + size).min(events.len());
        let overlap = usize::from(turn % 3 == 2 && from > 0);
        store
            .append_events(run_id, &events[from - overlap..to])
            .await
            .unwrap();
        from = to;
        turn += 1;
    }
}

/// Every event of the run after `after`, read a page of `page` at a time.
async fn replay(store: &Store, run_id: &RunId, after: u64, page: u32) -> Vec<Event> {
    let mut events: Vec<Event> = Vec::new();
    loop {
        let from = events.last().map_or(after, |event| event.seq);
        let next = store.events_after(run_id, from, page).await.unwrap();
        if next.is_empty() {
            return events;
        }
        events.extend(next);
    }
}

fn accumulate<'e>(events: impl IntoIterator<Item = &'e Event>) -> Vec<Message> {
    let mut accumulator = Accumulator::default();
    for event in events {
        accumulator.push(event).unwrap();
    }
    accumulator.into_messages()
}

/// Generated ended runs (text, reasoning, parallel tool calls interleaving and ending out of
/// order, argument text with odd whitespace, whole parts and messages, runs cut off mid-part),
/// each with its replay before compaction, from every seq.
async fn compacted_runs_replay_as_before_from_every_seq(db: Db) {
    let store = Store::open(&db.url).await.unwrap();
    let mut runner = TestRunner::deterministic();
    let strategy = agentwire_testkit::run::ended_run();
    let mut runs = Vec::new();
    for n in 0..24 {
        let events = strategy.new_tree(&mut runner).unwrap().current();
        let run_id = RunId::from(format!("run_{n}"));
        start(&store, &run_id, &SessionId::from(format!("ses_{n}")), &[]).await;
        append_in_batches(&store, &run_id, &events, &[7, 1, 30, 3, 12, 0]).await;
        let last = events.last().unwrap().seq;
        let mut before = Vec::new();
        for after in 0..=last {
            before.push(replay(&store, &run_id, after, 10_000).await);
        }
        assert_eq!(before[0], events, "the log as appended");
        runs.push((run_id, events, before));
    }

    let compaction = store.compact_runs(LATER, 10).await.unwrap();
    assert_eq!((compaction.runs, compaction.folded), (10, 10));
    assert!(compaction.bytes_after < compaction.bytes_before);
    let rest = store.compact_runs(LATER, 100).await.unwrap();
    assert_eq!((rest.runs, rest.folded), (14, 14));

    for (run_id, events, before) in &runs {
        let messages = accumulate(events);
        for (after, expected) in before.iter().enumerate() {
            let after = after as u64;
            let replayed = replay(&store, run_id, after, 10_000).await;
            assert_eq!(&replayed, expected, "{run_id} after {after}");
            // A client that saw the original stream up to `after` resumes without a gap or a
            // repeat (the strict accumulator checks) and ends with the same messages.
            let seen = events.iter().filter(|event| event.seq <= after);
            assert_eq!(accumulate(seen.chain(&replayed)), messages);
            assert!(replayed.first().is_none_or(|first| first.seq == after + 1));
        }
        // Paging through the compacted log gives every event once.
        assert_eq!(&replay(&store, run_id, 0, 3).await, events);
    }
}

async fn compaction_is_idempotent_and_leaves_runs_that_have_not_ended(db: Db) {
    let store = Store::open(&db.url).await.unwrap();
    let ended = [RunStatus::Completed, RunStatus::Failed, RunStatus::Canceled];
    let open = [
        RunStatus::InProgress,
        RunStatus::Awaiting(Awaiting::Approval),
        RunStatus::Queued,
    ];
    let mut logs = Vec::new();
    for (n, status) in ended.iter().chain(&open).enumerate() {
        let run_id = RunId::from(format!("run_{n}"));
        start(&store, &run_id, &SessionId::from("ses_1"), &[]).await;
        let mut events = text_run(&run_id, "ses_1", 20);
        if let Some(EventKind::RunStatus { status: last, .. }) =
            events.last_mut().map(|event| &mut event.kind)
        {
            *last = *status;
        }
        append_in_batches(&store, &run_id, &events, &[5]).await;
        logs.push((run_id, events, status.is_terminal()));
    }
    let batches = |run_id: &RunId| {
        let sql = format!("SELECT COUNT(*) FROM event_batches WHERE run_id = '{run_id}'");
        let db = &db;
        async move { scalar(db, &sql).await }
    };

    // Runs updated at or after the cutoff are not touched.
    let early = Timestamp(LONG_AGO);
    assert_eq!(
        store.compact_runs(early, 100).await.unwrap(),
        Compaction::default()
    );

    let first = store.compact_runs(LATER, 100).await.unwrap();
    assert_eq!((first.runs, first.folded), (3, 3));
    let rows = scalar(&db, "SELECT COUNT(*) FROM event_batches").await;
    assert_eq!(
        store.compact_runs(LATER, 100).await.unwrap(),
        Compaction::default()
    );
    assert_eq!(
        scalar(&db, "SELECT COUNT(*) FROM event_batches").await,
        rows
    );
    for (run_id, events, ended) in &logs {
        assert_eq!(batches(run_id).await == 1, *ended, "{run_id}");
        assert_eq!(&replay(&store, run_id, 0, 1000).await, events);
    }

    // A run that ends later is compacted then.
    let (run_id, events, _) = &logs[3];
    let end = Event::new(
        events.last().unwrap().seq + 1,
        EventKind::RunStatus {
            status: RunStatus::Completed,
            error: None,
            usage: None,
        },
    );
    store
        .append_events(run_id, std::slice::from_ref(&end))
        .await
        .unwrap();
    let later = store.compact_runs(LATER, 100).await.unwrap();
    assert_eq!((later.runs, later.folded), (1, 1));
    let mut all = events.clone();
    all.push(end);
    assert_eq!(replay(&store, run_id, 0, 1000).await, all);
}

/// Sets the last update of every session and run whose id is in `ids` to long ago.
async fn age(db: &Db, ids: &[&str]) {
    let list = ids
        .iter()
        .map(|id| format!("'{id}'"))
        .collect::<Vec<_>>()
        .join(", ");
    for table in ["sessions", "runs"] {
        let sql = format!("UPDATE {table} SET updated_at = {LONG_AGO} WHERE id IN ({list})");
        execute(db, &sql).await;
    }
}

/// How many rows each table has, and how many of them belong to nothing.
async fn census(db: &Db) -> ([i64; 4], i64) {
    let mut counts = [0; 4];
    for (count, table) in counts
        .iter_mut()
        .zip(["sessions", "messages", "runs", "event_batches"])
    {
        *count = scalar(db, &format!("SELECT COUNT(*) FROM {table}")).await;
    }
    let orphans = scalar(
        db,
        "SELECT (SELECT COUNT(*) FROM messages WHERE session_id NOT IN (SELECT id FROM sessions))
              + (SELECT COUNT(*) FROM runs
                 WHERE session_id IS NOT NULL AND session_id NOT IN (SELECT id FROM sessions))
              + (SELECT COUNT(*) FROM event_batches WHERE run_id NOT IN (SELECT id FROM runs))",
    )
    .await;
    (counts, orphans)
}

async fn old_sessions_and_runs_are_deleted_with_everything_of_theirs(db: Db) {
    let store = Store::open(&db.url).await.unwrap();
    // Three sessions of two runs each, with input and output; two runs without a session.
    for n in 0..3 {
        let session = SessionId::from(format!("ses_{n}"));
        for turn in 0..2 {
            let run_id = RunId::from(format!("run_{n}_{turn}"));
            start(&store, &run_id, &session, &[user("hi")]).await;
            let events = text_run(&run_id, session.as_str(), 10);
            store.append_events(&run_id, &events).await.unwrap();
            store
                .append_messages(None, &session, &[output(&events)])
                .await
                .unwrap();
        }
    }
    for n in 0..2 {
        let run_id = RunId::from(format!("solo_{n}"));
        store
            .create_run(&RunRecord::new(run_id.clone(), "assistant", "local"))
            .await
            .unwrap();
        store
            .append_events(&run_id, &text_run(&run_id, "", 10))
            .await
            .unwrap();
    }
    store.compact_runs(LATER, 100).await.unwrap();
    assert_eq!(census(&db).await, ([3, 12, 8, 8], 0));

    // Old: ses_0 and ses_1 with their runs, solo_0; ses_1's second run is recent, which keeps
    // it and its session.
    age(
        &db,
        &["ses_0", "run_0_0", "run_0_1", "ses_1", "run_1_0", "solo_0"],
    )
    .await;
    let cutoff = Timestamp(LONG_AGO + 1);
    let one = store.delete_before(cutoff, 1).await.unwrap();
    assert_eq!(
        one,
        Deletion {
            sessions: 1,
            runs: 1
        }
    );
    assert_eq!(census(&db).await, ([2, 8, 5, 5], 0));
    assert!(
        store
            .session(None, &"ses_0".into())
            .await
            .unwrap()
            .is_none()
    );
    assert!(store.run(&"run_0_1".into()).await.unwrap().is_none());
    assert!(store.run(&"solo_0".into()).await.unwrap().is_none());
    assert!(
        store
            .events_after(&"run_0_1".into(), 0, 10)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        store.delete_before(cutoff, 10).await.unwrap(),
        Deletion::default()
    );

    age(&db, &["run_1_1"]).await;
    let rest = store.delete_before(cutoff, 10).await.unwrap();
    assert_eq!(
        rest,
        Deletion {
            sessions: 1,
            runs: 0
        }
    );
    assert_eq!(census(&db).await, ([1, 4, 3, 3], 0));
    assert_eq!(
        store
            .session_runs(None, &"ses_2".into())
            .await
            .unwrap()
            .len(),
        2
    );
    assert_eq!(replay(&store, &"solo_1".into(), 0, 100).await.len(), 17);

    store.reclaim_space().await.unwrap();
    if !store.is_postgres() {
        let pages = scalar(&db, "PRAGMA page_count").await;
        assert!(scalar(&db, "PRAGMA freelist_count").await <= pages / 10);
    }
}

async fn deleting_a_session_leaves_no_row_of_it(db: Db) {
    let store = Store::open(&db.url).await.unwrap();
    for n in 0..2 {
        let session = SessionId::from(format!("ses_{n}"));
        let run_id = RunId::from(format!("run_{n}"));
        start(&store, &run_id, &session, &[user("hi")]).await;
        let events = text_run(&run_id, session.as_str(), 10);
        append_in_batches(&store, &run_id, &events, &[3]).await;
        store
            .append_messages(None, &session, &[output(&events)])
            .await
            .unwrap();
    }
    // One log compacted, one in batches.
    store.compact_runs(LATER, 1).await.unwrap();
    let (counts, _) = census(&db).await;
    let of_run_0 = scalar(
        &db,
        "SELECT COUNT(*) FROM event_batches WHERE run_id = 'run_0'",
    )
    .await;
    assert!(store.delete_session(None, &"ses_0".into()).await.unwrap());
    assert_eq!(census(&db).await, ([1, 2, 1, counts[3] - of_run_0], 0));
    assert!(store.delete_session(None, &"ses_1".into()).await.unwrap());
    assert_eq!(census(&db).await, ([0; 4], 0));
}

/// Two stores on one database (two nodes) compacting, then deleting, at once: every run is
/// folded once, every session deleted once, and nothing fails or is left behind.
async fn two_nodes_share_the_work_of_retention(db: Db) {
    let nodes = [
        Store::open(&db.url).await.unwrap(),
        Store::open(&db.url).await.unwrap(),
    ];
    let mut logs = Vec::new();
    for n in 0..40 {
        let run_id = RunId::from(format!("run_{n}"));
        let session = SessionId::from(format!("ses_{n}"));
        start(&nodes[n % 2], &run_id, &session, &[user("hi")]).await;
        let events = text_run(&run_id, session.as_str(), 30);
        append_in_batches(&nodes[n % 2], &run_id, &events, &[4]).await;
        logs.push((run_id, events));
    }
    let compact = |store: &Store| {
        let store = store.clone();
        async move {
            let mut folded = 0;
            loop {
                let batch = store.compact_runs(LATER, 3).await.unwrap();
                folded += batch.folded;
                if batch.runs < 3 {
                    return folded;
                }
            }
        }
    };
    let (a, b) = tokio::join!(compact(&nodes[0]), compact(&nodes[1]));
    assert_eq!(a + b, 40, "{a} + {b}");
    for (run_id, events) in &logs {
        assert_eq!(&replay(&nodes[1], run_id, 0, 1000).await, events);
    }

    execute(&db, &format!("UPDATE sessions SET updated_at = {LONG_AGO}")).await;
    execute(&db, &format!("UPDATE runs SET updated_at = {LONG_AGO}")).await;
    let delete = |store: &Store| {
        let store = store.clone();
        async move {
            let mut deleted = 0;
            loop {
                let batch = store
                    .delete_before(Timestamp(LONG_AGO + 1), 3)
                    .await
                    .unwrap();
                deleted += batch.sessions;
                if batch.sessions < 3 {
                    return deleted;
                }
            }
        }
    };
    let (a, b) = tokio::join!(delete(&nodes[0]), delete(&nodes[1]));
    assert_eq!(a + b, 40, "{a} + {b}");
    assert_eq!(census(&db).await, ([0; 4], 0));
}

/// The acceptance target: a 200-token run (one-word deltas, ~800 bytes of text) costs at most
/// 4 KiB of database once compacted, counting its row, its session and the session's messages,
/// and every index. Measured over 100 runs, after VACUUM, against the empty database.
async fn a_compacted_run_of_200_tokens_takes_under_4_kib(db: Db) {
    const RUNS: usize = 100;
    let store = Store::open(&db.url).await.unwrap();
    let empty = database_bytes(&db).await;
    for n in 0..RUNS {
        let run_id = RunId::from(format!("run_{:032x}", 0x0196_0000_0000_u64 + n as u64));
        let session = SessionId::from(format!("ses_{:032x}", 0x0196_0000_0000_u64 + n as u64));
        start(
            &store,
            &run_id,
            &session,
            &[user("Tell me a story of two hundred words")],
        )
        .await;
        let events = text_run(&run_id, session.as_str(), 200);
        append_in_batches(&store, &run_id, &events, &[32]).await;
        store
            .append_messages(None, &session, &[output(&events)])
            .await
            .unwrap();
    }
    let stored = database_bytes(&db).await - empty;
    let compaction = store.compact_runs(LATER, RUNS as u32).await.unwrap();
    assert_eq!(compaction.folded, RUNS as u64);
    let compacted = database_bytes(&db).await - empty;
    let per_run = compacted / RUNS as i64;
    eprintln!(
        "per run: {} bytes stored, {per_run} compacted; event JSON {} -> {} bytes",
        stored / RUNS as i64,
        compaction.bytes_before / RUNS as u64,
        compaction.bytes_after / RUNS as u64,
    );
    assert!(per_run <= 4096, "{per_run} bytes per compacted run");
}

/// The database's size once its free space is given back: SQLite's pages after VACUUM, or
/// PostgreSQL's tables with their indexes and TOAST after VACUUM FULL.
async fn database_bytes(db: &Db) -> i64 {
    if db.url.starts_with("sqlite:") {
        execute(db, "VACUUM").await;
        scalar(
            db,
            "SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()",
        )
        .await
    } else {
        execute(db, "VACUUM FULL sessions, messages, runs, event_batches").await;
        scalar(
            db,
            "SELECT CAST(pg_total_relation_size('sessions') + pg_total_relation_size('messages')
                    + pg_total_relation_size('runs') + pg_total_relation_size('event_batches')
                    AS BIGINT)",
        )
        .await
    }
}

fn user(text: &str) -> Message {
    let mut message = Message::new(Role::User, vec![Part::text(text)]);
    message.id = Some("msg_input".into());
    message
}

/// The assistant message a run's log ends with.
fn output(events: &[Event]) -> Message {
    events
        .iter()
        .find_map(|event| match &event.kind {
            EventKind::MessageComplete { message } => Some(message.clone()),
            _ => None,
        })
        .unwrap()
}

/// A run's log as the server writes it for `tokens` one-word text deltas (four bytes each on
/// average, drawn from 32 words so the text does not compress better than prose): created, in
/// progress, the message, completed with usage.
fn text_run(run_id: &RunId, session: &str, tokens: usize) -> Vec<Event> {
    const WORDS: [&str; 32] = [
        "the ", "a ", "of ", "and ", "to ", "in ", "is ", "it ", "that ", "was ", "for ", "on ",
        "are ", "as ", "with ", "his ", "they ", "at ", "be ", "this ", "from ", "have ", "or ",
        "by ", "one ", "had ", "not ", "but ", "what ", "all ", "were ", "when ",
    ];
    // A fixed pseudo-random choice (an LCG), different for each run.
    let mut state = run_id
        .as_str()
        .bytes()
        .fold(17_u64, |h, b| h.wrapping_mul(31).wrapping_add(u64::from(b)));
    let mut out = Emitter::default();
    out.emit(EventKind::RunCreated {
        run_id: run_id.clone(),
        session_id: (!session.is_empty()).then(|| session.into()),
        agent: Some("assistant".into()),
        parent_run_id: None,
        parent_tool_call_id: None,
    });
    out.emit(EventKind::RunStatus {
        status: RunStatus::InProgress,
        error: None,
        usage: None,
    });
    let start = MessageStart {
        message_id: run_id.as_str().replacen("run_", "msg_", 1).into(),
        role: Role::Assistant,
        metadata: Metadata {
            agent_name: Some("assistant".into()),
            ..Metadata::default()
        },
        created_at: Some(Timestamp(1_750_000_000_000)),
    };
    let mut builder = MessageBuilder::start(&mut out, start);
    for _ in 0..tokens {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1);
        builder.text_delta(&mut out, WORDS[(state >> 59) as usize]);
    }
    builder.metadata_mut().usage = Some(Usage::new(12, tokens as u64));
    builder.finish(&mut out);
    out.emit(EventKind::RunStatus {
        status: RunStatus::Completed,
        error: None,
        usage: Some(Usage::new(12, tokens as u64)),
    });
    out.drain().collect()
}

/// The checkpoints and the free pages of a SQLite file.
mod sqlite_file {
    use super::*;

    fn file(db: &Db) -> std::path::PathBuf {
        std::path::PathBuf::from(db.url.strip_prefix("sqlite://").unwrap())
    }

    fn wal_bytes(db: &Db) -> u64 {
        let mut wal = file(db).into_os_string();
        wal.push("-wal");
        std::fs::metadata(wal).map_or(0, |meta| meta.len())
    }

    /// 20 MiB in one commit: the log holds it all until a checkpoint restarts it, which a
    /// PASSIVE checkpoint alone never does when no writer comes after.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_wal_is_truncated_once_past_its_limit() {
        let db = sqlite_db();
        let store = Store::open(&db.url).await.unwrap();
        let run_id = RunId::from("run_1");
        store
            .create_run(&RunRecord::new(run_id.clone(), "assistant", "local"))
            .await
            .unwrap();
        let text = "x".repeat(10 * 1024);
        let events: Vec<Event> = (1..=2048)
            .map(|seq| {
                Event::new(
                    seq,
                    EventKind::PartDelta {
                        message_id: "msg_1".into(),
                        index: 0,
                        delta: text.clone(),
                    },
                )
            })
            .collect();
        store.append_events(&run_id, &events).await.unwrap();
        store.checkpoint().await.unwrap();
        assert!(
            wal_bytes(&db) < 1024 * 1024,
            "{} bytes of WAL",
            wal_bytes(&db)
        );
        assert_eq!(replay(&store, &run_id, 2000, 100).await.len(), 48);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn freed_pages_are_given_back_and_an_old_file_switches_to_incremental_vacuum() {
        let db = sqlite_db();
        // A file as earlier versions made it: auto_vacuum off.
        std::fs::create_dir_all(file(&db).parent().unwrap()).unwrap();
        let options = sqlx::sqlite::SqliteConnectOptions::new()
            .filename(file(&db))
            .create_if_missing(true);
        let pool = sqlx::SqlitePool::connect_with(options).await.unwrap();
        sqlx::query("CREATE TABLE earlier (id INTEGER PRIMARY KEY)")
            .execute(&pool)
            .await
            .unwrap();
        pool.close().await;
        assert_eq!(scalar(&db, "PRAGMA auto_vacuum").await, 0);

        let store = Store::open(&db.url).await.unwrap();
        assert_eq!(scalar(&db, "PRAGMA auto_vacuum").await, 2, "incremental");
        for n in 0..40 {
            let run_id = RunId::from(format!("run_{n}"));
            store
                .create_run(&RunRecord::new(run_id.clone(), "assistant", "local"))
                .await
                .unwrap();
            store
                .append_events(&run_id, &text_run(&run_id, "", 2000))
                .await
                .unwrap();
        }
        let full = scalar(&db, "PRAGMA page_count").await;
        execute(&db, &format!("UPDATE runs SET updated_at = {LONG_AGO}")).await;
        let deleted = store
            .delete_before(Timestamp(LONG_AGO + 1), 100)
            .await
            .unwrap();
        assert_eq!(deleted.runs, 40);
        assert!(scalar(&db, "PRAGMA freelist_count").await > full / 2);

        let reclaimed = store.reclaim_space().await.unwrap();
        assert!(reclaimed as i64 > full / 2, "{reclaimed} of {full} pages");
        let pages = scalar(&db, "PRAGMA page_count").await;
        assert!(pages < full / 2, "{pages} of {full} pages");
        // A tenth is left free for the next writes.
        assert!(scalar(&db, "PRAGMA freelist_count").await <= pages / 10);
    }
}
