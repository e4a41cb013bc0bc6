//! A property of the session inbox over many random interleavings: several posters send
//! messages into the same sessions at once, in random modes and at random moments, and when
//! everything has settled no message is lost or applied twice, each session's runs follow
//! its inbox's order, a steer lands inside the run it was given to, and a rolled-back run is
//! gone from the history. On SQLite (one server) and on two servers sharing PostgreSQL,
//! posting to either.
//!
//! The seed is printed; `AGENTWIRE_PROPERTY_SEED` replays one.
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use agentwire_brain::ScriptedBrain;
use agentwire_runtime::Agent;
use agentwire_server::Settings;
use agentwire_tools::{FnTool, JsonSchema};
use common::{TestServer, text_of};
use serde::Deserialize;
use serde_json::{Value, json};

/// Sessions posted to at once.
const SESSIONS: usize = 50;
/// Posters per session.
const POSTERS: usize = 4;
/// Messages per poster: SESSIONS × POSTERS × MESSAGES = 10,000 in all.
const MESSAGES: usize = 50;

const MODES: [&str; 5] = ["queue", "steer", "interrupt", "rollback", "reject"];

#[derive(Deserialize, JsonSchema)]
#[schemars(crate = "agentwire_tools::schemars")]
struct Work {}

/// Every run calls `work` (600 ms), then answers: a step boundary in every run, and runs long
/// enough for the posters to find their session busy.
fn worker() -> Agent {
    let script = json!({"turns": [
        [{"type": "tool_call_start", "id": "w1", "name": "work"},
         {"type": "tool_call_delta", "id": "w1", "args": "{}"},
         {"type": "tool_call_end", "id": "w1"},
         {"type": "finish", "reason": "tool_calls"}],
        [{"type": "text_delta", "text": "done"}, {"type": "finish", "reason": "stop"}]
    ]});
    let work = FnTool::new("work", "Works a while", |_: Work, _| async move {
        tokio::time::sleep(Duration::from_millis(600)).await;
        Ok("worked".to_owned())
    });
    Agent::builder("worker")
        .brain(ScriptedBrain::from_json(&script.to_string()).unwrap())
        .tool(work)
        .build()
        .unwrap()
}

/// SplitMix64: a small seeded generator, so a failing interleaving can be replayed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn seed() -> u64 {
    let seed = std::env::var("AGENTWIRE_PROPERTY_SEED")
        .ok()
        .and_then(|seed| seed.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
        });
    eprintln!("inbox property: AGENTWIRE_PROPERTY_SEED={seed}");
    seed
}

/// What a poster sent and how the server answered.
struct Sent {
    text: String,
    mode: &'static str,
    status: u16,
}

async fn poster(
    servers: Arc<Vec<TestServer>>,
    session: String,
    poster: usize,
    seed: u64,
) -> Vec<Sent> {
    let mut rng = Rng(seed);
    let mut sent = Vec::with_capacity(MESSAGES);
    for n in 0..MESSAGES {
        // Mostly queued, so that sessions stay busy and the other modes meet runs.
        let mode = match rng.below(10) {
            0..=3 => "queue",
            4..=5 => "steer",
            6 => "interrupt",
            7 => "rollback",
            _ => "reject",
        };
        let text = format!("{session}/p{poster}/{n}");
        let server = &servers[rng.below(servers.len() as u64) as usize];
        let body = json!({
            "message": {"role": "user", "parts": [{"type": "text", "text": text}]},
            "mode": mode,
            "client_message_id": text,
        });
        let path = format!("/v1/sessions/{session}/messages");
        let response = server.post_json(&path, &body).await;
        let status = response.status().as_u16();
        let answer: Value = response.json().await.unwrap();
        assert!(
            status == 202 || (status == 409 && mode == "reject"),
            "{mode} {text}: {status} {answer}"
        );
        sent.push(Sent { text, mode, status });
        let pause = rng.below(20);
        if pause > 0 {
            tokio::time::sleep(Duration::from_millis(pause)).await;
        }
    }
    sent
}

async fn get(server: &TestServer, path: &str) -> Value {
    let response = server.http.get(server.url(path)).send().await.unwrap();
    assert_eq!(response.status(), 200, "{path}");
    response.json().await.unwrap()
}

/// Every message of the session's inbox, once all have settled and its last run has ended.
async fn settled(server: &TestServer, session: &str) -> Vec<Value> {
    for _ in 0..1200 {
        let mut entries = Vec::new();
        let mut after = 0;
        loop {
            let page = get(
                server,
                &format!("/v1/sessions/{session}/messages?after={after}&limit=1000"),
            )
            .await;
            let messages = page["messages"].as_array().unwrap();
            entries.extend(messages.iter().cloned());
            match page["next_after"].as_i64() {
                Some(next) => after = next,
                None => break,
            }
        }
        let all_settled = entries
            .iter()
            .all(|m| m["outcome"] == "delivered" || m["outcome"] == "not_delivered");
        let last = get(server, &format!("/v1/sessions/{session}")).await;
        let ended = last["last_run"]["status"].as_str().is_some_and(|status| {
            ["completed", "canceled", "failed", "incomplete"].contains(&status)
        });
        if all_settled && ended {
            return entries;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("session {session} did not settle");
}

/// How many messages ended each way, across sessions: `(mode, outcome, step > 0)`.
type Tally = HashMap<(String, String, bool), usize>;

async fn check_session(server: &TestServer, session: &str, sent: &[Sent], tally: &mut Tally) {
    let entries = settled(server, session).await;
    for entry in &entries {
        let key = (
            entry["mode"].as_str().unwrap().to_owned(),
            entry["outcome"].as_str().unwrap().to_owned(),
            entry["step"].as_u64().is_some_and(|step| step > 0),
        );
        *tally.entry(key).or_default() += 1;
    }
    let by_id: HashMap<&str, &Value> = entries
        .iter()
        .map(|entry| (entry["client_message_id"].as_str().unwrap(), entry))
        .collect();
    // Every acknowledged message is in the inbox, once; a rejected one is not.
    let acknowledged: Vec<&Sent> = sent.iter().filter(|s| s.status == 202).collect();
    assert_eq!(entries.len(), acknowledged.len(), "{session}: inbox size");
    for s in &acknowledged {
        assert!(
            by_id.contains_key(s.text.as_str()),
            "{session}: {} lost",
            s.text
        );
    }
    for s in sent.iter().filter(|s| s.status == 409) {
        assert!(
            !by_id.contains_key(s.text.as_str()),
            "{}: rejected yet kept",
            s.text
        );
        assert_eq!(s.mode, "reject");
    }

    let history = get(server, &format!("/v1/sessions/{session}")).await;
    let user_texts: Vec<String> = history["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(text_of)
        .collect();
    let mut seen: HashMap<&str, usize> = HashMap::new();
    for (index, text) in user_texts.iter().enumerate() {
        assert!(
            seen.insert(text.as_str(), index).is_none(),
            "{session}: {text} applied twice"
        );
    }
    let rolled_back: HashSet<&str> = entries
        .iter()
        .filter(|e| e["outcome"] == "delivered")
        .filter_map(|e| e["rollback_of"].as_str())
        .collect();
    // Each delivered message is in the history once, unless its run was rolled back; a message
    // not delivered is not there.
    for entry in &entries {
        let text = entry["client_message_id"].as_str().unwrap();
        let run = entry["run_id"].as_str().unwrap_or_default();
        let present = seen.contains_key(text);
        match entry["outcome"].as_str().unwrap() {
            "delivered" if rolled_back.contains(run) => {
                assert!(
                    !present,
                    "{session}: {text} of rolled-back run {run} is still there"
                );
            }
            "delivered" => assert!(
                present,
                "{session}: {text} delivered but not in the history"
            ),
            _ => assert!(
                !present,
                "{session}: {text} not delivered ({}) but in the history",
                entry["reason"]
            ),
        }
    }
    // Runs follow the inbox's order: the messages that started runs are in the history in
    // the order they were written down.
    let mut starts: Vec<(usize, i64)> = entries
        .iter()
        .filter(|e| e["outcome"] == "delivered" && e["step"] == 0)
        .filter_map(|e| {
            let at = seen.get(e["client_message_id"].as_str().unwrap())?;
            Some((*at, e["position"].as_i64().unwrap()))
        })
        .collect();
    starts.sort_unstable();
    assert!(
        starts.windows(2).all(|pair| pair[0].1 < pair[1].1),
        "{session}: runs out of the inbox's order: {starts:?}"
    );
    // A steer is in the history after its run's input, before the next run's.
    let input_of: HashMap<&str, usize> = entries
        .iter()
        .filter(|e| e["outcome"] == "delivered" && e["step"] == 0)
        .filter_map(|e| {
            Some((
                e["run_id"].as_str()?,
                *seen.get(e["client_message_id"].as_str()?)?,
            ))
        })
        .collect();
    for steer in entries
        .iter()
        .filter(|e| e["outcome"] == "delivered" && e["step"].as_u64().is_some_and(|s| s > 0))
    {
        let text = steer["client_message_id"].as_str().unwrap();
        let run = steer["run_id"].as_str().unwrap();
        let (Some(at), Some(input)) = (seen.get(text), input_of.get(run)) else {
            continue;
        };
        assert!(at > input, "{session}: steer {text} before its run's input");
        let next_run = input_of.values().filter(|i| *i > input).min();
        assert!(
            next_run.is_none_or(|next| at < next),
            "{session}: steer {text} after the next run began"
        );
    }
}

async fn interleave(servers: Vec<TestServer>) {
    let base = seed();
    let servers = Arc::new(servers);
    let mut tasks = Vec::new();
    for s in 0..SESSIONS {
        for p in 0..POSTERS {
            let session = format!("ses_prop_{base}_{s}");
            let seed = base ^ ((s * POSTERS + p) as u64).wrapping_mul(0x9E37_79B9);
            let task = tokio::spawn(poster(Arc::clone(&servers), session.clone(), p, seed));
            tasks.push((session, task));
        }
    }
    let mut sent: HashMap<String, Vec<Sent>> = HashMap::new();
    for (session, task) in tasks {
        sent.entry(session).or_default().extend(task.await.unwrap());
    }
    let total: usize = sent.values().map(Vec::len).sum();
    assert!(total >= 10_000, "{total} messages");
    let modes: HashSet<&str> = sent.values().flatten().map(|s| s.mode).collect();
    assert_eq!(modes.len(), MODES.len(), "every mode was tried");
    let mut tally = Tally::new();
    for (session, sent) in &sent {
        check_session(&servers[0], session, sent, &mut tally).await;
    }
    let mut lines: Vec<_> = tally.iter().collect();
    lines.sort();
    eprintln!("inbox property: {total} messages; (mode, outcome, steered) → count: {lines:?}");
    // The interleavings met every case: steers taken mid-run, runs interrupted and rolled back.
    let count = |mode: &str, outcome: &str, steered: bool| {
        tally
            .get(&(mode.to_owned(), outcome.to_owned(), steered))
            .copied()
            .unwrap_or(0)
    };
    assert!(
        count("steer", "delivered", true) > 0,
        "no steer was taken mid-run"
    );
    assert!(count("rollback", "delivered", false) > 0, "no rollback ran");
    assert!(
        count("interrupt", "delivered", false) > 0,
        "no interrupt ran"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn random_interleavings_on_sqlite_lose_nothing_and_keep_order() {
    let dir = tempfile::tempdir().unwrap();
    let settings = Settings {
        database_url: Some(format!("sqlite://{}", dir.path().join("aw.db").display())),
        ..Settings::default()
    };
    let server = TestServer::start(vec![worker()], settings).await;
    interleave(vec![server]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn random_interleavings_on_two_nodes_sharing_postgres() {
    let Some(url) = agentwire_testkit::postgres::schema_url().await else {
        eprintln!("AGENTWIRE_TEST_DATABASE_URL is not set: skipped");
        return;
    };
    let settings = || Settings {
        database_url: Some(url.clone()),
        ..Settings::default()
    };
    let a = TestServer::start(vec![worker()], settings()).await;
    let b = TestServer::start(vec![worker()], settings()).await;
    interleave(vec![a, b]).await;
}
