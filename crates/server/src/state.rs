//! The server's live state: the agents, the store, the runs this process executes (each a
//! [`RunHandle`] and its in-memory [`EventLog`]) and the sessions busy with one of them.
//!
//! The store is the state of record: sessions and their messages, a row per run and every event
//! live there. A run's completions (of parts, messages, the run) reach its in-memory log only
//! after the store has committed them and everything before them (see [`AppState::pump`]), so
//! nothing complete a client saw can be lost by a crash; deltas go ahead of their commit. Runs this process
//! does not hold (finished before a restart, or executed by another node) are read from the
//! store.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use agentwire_core::{EventKind, Message, RunId, SessionId};
use agentwire_runtime::{Agent, RunEvents, RunHandle, RunLimits, RunStart};
use agentwire_store::{Notice, RunRecord, Started, Store, StoreError};
use axum::http::StatusCode;
use futures::StreamExt;
use tokio::sync::broadcast;
use tracing::Instrument;

use crate::auth::{Caller, Keys};
use crate::commit::{Committer, RunCommits, Settled};
use crate::error::ApiError;
use crate::log::EventLog;
use crate::metrics::{Metrics, RunMetrics};
use crate::settings::Settings;

/// A run this process executes.
#[derive(Debug)]
pub(crate) struct LiveRun {
    pub(crate) handle: RunHandle,
    pub(crate) log: EventLog,
    pub(crate) owner: Caller,
    /// Where the events the log has forgotten are (see [`EventLog`]).
    pub(crate) store: Store,
    /// How many of the handle's messages are the input (already in the session).
    input_len: usize,
}

/// A run found by id: one this process executes, or one only the store knows.
#[derive(Debug)]
pub(crate) enum FoundRun {
    Live(Arc<LiveRun>),
    Stored(Box<RunRecord>),
}

/// A session as its caller names it: the key of the sessions with a run starting or going.
type BusyKey = (Caller, SessionId);

/// Everything the handlers share.
#[derive(Debug)]
pub(crate) struct AppState {
    pub(crate) agents: Vec<Agent>,
    default_agent: usize,
    pub(crate) settings: Settings,
    /// Who may call, and the owner ids their keys stand for.
    pub(crate) keys: Keys,
    pub(crate) store: Store,
    /// Commits the runs' event batches to the store together.
    committer: Committer,
    /// This process in the store: its runs carry it, and it marks them interrupted on restart.
    pub(crate) node: String,
    /// The store's notices, fanned out to this process's readers of stored runs.
    pub(crate) notices: broadcast::Sender<Notice>,
    runs: Mutex<HashMap<RunId, Arc<LiveRun>>>,
    /// Sessions with a run starting (`None`) or going on this node: the next turn waits. Keyed
    /// by the caller too, so that naming another key's session never blocks its owner (the
    /// store refuses the stranger's run).
    busy: Mutex<HashMap<BusyKey, Option<Arc<LiveRun>>>>,
    /// What `/metrics` reports.
    pub(crate) metrics: Metrics,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // No code path panics while holding these locks; the maps stay consistent.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A store failure, as the API answers it.
pub(crate) fn store_error(error: StoreError) -> ApiError {
    tracing::error!("store: {error}");
    store_unreachable()
}

/// What a client is told when the store failed: nothing of its request was kept.
fn store_unreachable() -> ApiError {
    ApiError::new(
        axum::http::StatusCode::INTERNAL_SERVER_ERROR,
        "store_error",
        "the server could not reach its store",
    )
}

impl AppState {
    pub(crate) fn new(
        agents: Vec<Agent>,
        settings: Settings,
        keys: Keys,
        store: Store,
        node: String,
    ) -> Self {
        let default_agent = agents
            .iter()
            .position(|agent| agent.name() == "assistant")
            .unwrap_or(0);
        let metrics = Metrics::new(agents.iter().map(Agent::name));
        Self {
            agents,
            default_agent,
            settings,
            keys,
            committer: Committer::start(store.clone()),
            store,
            node,
            notices: broadcast::Sender::new(1024),
            runs: Mutex::default(),
            busy: Mutex::default(),
            metrics,
        }
    }

    /// Moves the store's notices to this process's readers, and cancels the runs other nodes
    /// asked to cancel. Runs until the store's listener ends.
    pub(crate) async fn follow_notices(self: Arc<Self>) -> Result<(), StoreError> {
        let mut notices = self.store.listen().await?;
        tokio::spawn(async move {
            while let Some(notice) = notices.next().await {
                match notice {
                    Ok(Notice::Cancel { run_id }) => {
                        if let Some(live) = lock(&self.runs).get(&run_id) {
                            live.handle.cancel();
                        }
                    }
                    Ok(notice) => {
                        let _ = self.notices.send(notice);
                    }
                    // Missed notices: readers also read the log on every heartbeat.
                    Err(error) => tracing::warn!("store notices: {error}"),
                }
            }
        });
        Ok(())
    }

    /// The agent by name, or the default agent.
    pub(crate) fn agent(&self, name: Option<&str>) -> Result<&Agent, ApiError> {
        match name {
            None => self.agents.get(self.default_agent).ok_or_else(|| {
                ApiError::new(
                    axum::http::StatusCode::NOT_FOUND,
                    "unknown_agent",
                    "the server has no agents",
                )
            }),
            Some(name) => self
                .agents
                .iter()
                .find(|agent| agent.name() == name)
                .ok_or_else(|| {
                    ApiError::new(
                        axum::http::StatusCode::NOT_FOUND,
                        "unknown_agent",
                        format!("no agent named '{name}'"),
                    )
                }),
        }
    }

    /// Starts a run of `agent` for `caller` in a session (the one named, created if new, or a
    /// fresh one), with the session's history from the store. The run's row and its input are
    /// committed before this returns (an accepted input is durable before it is acknowledged).
    /// Nothing changes when the runtime refuses the run. Another caller's session is a 404,
    /// as one that does not exist.
    pub(crate) async fn start(
        self: &Arc<Self>,
        agent: &Agent,
        caller: &Caller,
        session_id: Option<SessionId>,
        start: RunStart,
    ) -> Result<Arc<LiveRun>, ApiError> {
        // A session the client names may have a history; a fresh one has none to read.
        let named = session_id.is_some();
        if let Some(id) = &session_id {
            crate::ids::check_session_id(id.as_str())?;
        }
        let session_id = session_id
            .unwrap_or_else(|| SessionId::from(format!("ses_{}", uuid::Uuid::now_v7().simple())));
        let key = (caller.clone(), session_id);
        self.reserve(&key)?;
        // Boxed: the store's futures are large, and every dialect's handler awaits this one;
        // inline, their size would stay allocated for as long as the response streams.
        let started = Box::pin(self.start_reserved(agent, caller, &key.1, named, start)).await;
        let mut busy = lock(&self.busy);
        match &started {
            Ok(live) => {
                busy.insert(key, Some(Arc::clone(live)));
            }
            Err(_) => {
                busy.remove(&key);
            }
        }
        drop(busy);
        let live = started?;
        lock(&self.runs).insert(live.handle.id().clone(), Arc::clone(&live));
        Ok(live)
    }

    /// Marks the caller's session as starting a run, unless a run of it is starting or going
    /// on.
    fn reserve(&self, key: &BusyKey) -> Result<(), ApiError> {
        let mut busy = lock(&self.busy);
        if let Some(active) = busy.get(key) {
            let going = active
                .as_ref()
                .is_none_or(|live| !live.handle.status().is_terminal());
            if going {
                let run = active.as_ref().map_or_else(
                    || "a run".to_owned(),
                    |live| format!("run '{}'", live.handle.id()),
                );
                return Err(ApiError::new(
                    axum::http::StatusCode::CONFLICT,
                    "session_busy",
                    format!(
                        "session '{}' has {run} going; answer or cancel it first",
                        key.1
                    ),
                ));
            }
        }
        busy.insert(key.clone(), None);
        Ok(())
    }

    async fn start_reserved(
        self: &Arc<Self>,
        agent: &Agent,
        caller: &Caller,
        session_id: &SessionId,
        named: bool,
        start: RunStart,
    ) -> Result<Arc<LiveRun>, ApiError> {
        let stored = match named {
            true => self.store.session(session_id).await.map_err(store_error)?,
            false => None,
        };
        let history = match stored {
            Some(session) if session.owner.as_deref() != caller.owner_id() => {
                return Err(ApiError::not_found("session", session_id.as_str()));
            }
            Some(_) => self
                .store
                .session_messages(session_id)
                .await
                .map_err(store_error)?,
            None => Vec::new(),
        };
        let input_len = start.input.len();
        let run_id = start.run_id.clone().unwrap_or_else(|| agent.new_run_id());
        // Everything the run does, its runtime tasks included, logs inside this span.
        let span = crate::spans::run(&run_id, agent.name(), session_id, &self.node);
        let started = Instant::now();
        let start = start
            .with_run_id(run_id)
            .with_session(session_id.clone())
            .with_history(history)
            .with_limits(self.run_limits());
        let run = span.in_scope(|| agent.start(start))?;
        let live = Arc::new(LiveRun {
            handle: run.handle,
            log: EventLog::default(),
            owner: caller.clone(),
            store: self.store.clone(),
            input_len,
        });
        if let Err(error) = self.record_start(&live, session_id).await {
            live.handle.cancel();
            return Err(error);
        }
        let metrics = self.metrics.run_started(agent.name(), started);
        let pump = Arc::clone(self).pump(Arc::clone(&live), run.events, metrics);
        tokio::spawn(pump.instrument(span));
        Ok(live)
    }

    /// The server's ceilings over every agent's limits.
    fn run_limits(&self) -> RunLimits {
        RunLimits {
            max_duration: Some(self.settings.max_run_duration),
            max_tool_output_bytes: Some(self.settings.max_tool_output_bytes),
        }
    }

    /// Commits the session (if new), the run's row and its input, in one transaction (with
    /// the other runs' writes waiting, see [`Committer`]).
    async fn record_start(&self, live: &LiveRun, session_id: &SessionId) -> Result<(), ApiError> {
        let handle = &live.handle;
        let record = RunRecord {
            session_id: Some(session_id.clone()),
            owner: live.owner.owner_id().map(str::to_owned),
            ..RunRecord::new(handle.id().clone(), handle.agent().name(), &self.node)
        };
        let input: Vec<Message> = handle.messages().into_iter().take(live.input_len).collect();
        match self.committer.start_run(record, input).await {
            Ok(Started::Done) => Ok(()),
            // Another caller made the session first, between the check and the commit.
            Ok(Started::SessionOwned) => Err(ApiError::not_found("session", session_id.as_str())),
            Ok(Started::RunExists) => Err(ApiError::new(
                StatusCode::CONFLICT,
                "run_exists",
                format!("a run with the id '{}' exists already", handle.id()),
            )),
            // The writer logged the group's error.
            Err(_) => Err(store_unreachable()),
        }
    }

    /// Moves a run's events into its in-memory log, which readers follow, and into the store
    /// ([`RunCommits`]): deltas are shown at once and stored behind them; a part's completion,
    /// a status or an error only once it and everything before it is committed, so a
    /// `part_complete` is durable before any client sees it. Before the terminal status is
    /// stored, the run's output joins its session, so a client that sees the end finds the
    /// history updated. The run goes on whether or not anyone reads its log; if its events
    /// cannot be stored it is given up (canceled) and what was not stored is not shown.
    async fn pump(
        self: Arc<Self>,
        live: Arc<LiveRun>,
        mut events: RunEvents,
        mut metrics: RunMetrics,
    ) {
        let mut commits = RunCommits::new(self.committer.clone(), live.handle.id().clone());
        let mut batch = Vec::new();
        let mut open = true;
        while open || !commits.is_idle() {
            tokio::select! {
                received = events.recv_many(&mut batch), if open && !commits.holds() => {
                    if received == 0 {
                        open = false;
                        commits.flush();
                        continue;
                    }
                    let end = batch.iter().position(|event| {
                        matches!(&event.kind, EventKind::RunStatus { status, .. } if status.is_terminal())
                    });
                    // What comes before the end is shown before the output joins the session,
                    // so the last deltas do not wait for that commit.
                    let ending = end.map(|end| batch.split_off(end));
                    let shown = commits.take(std::mem::take(&mut batch));
                    metrics.logged(&shown);
                    live.log.append_all(shown);
                    if let Some(ending) = ending {
                        // Boxed: the store's future would otherwise size the pump's task
                        // for the whole run.
                        Box::pin(self.finish_session(&live)).await;
                        let shown = commits.take(ending);
                        metrics.logged(&shown);
                        live.log.append_all(shown);
                    }
                }
                settled = commits.settled() => match settled {
                    Settled::Show(held) => {
                        metrics.logged(&held);
                        live.log.append_all(held);
                        live.log.stored_through(commits.stored_through());
                    }
                    Settled::Retrying => {}
                    Settled::GaveUp => live.handle.cancel(),
                },
            }
        }
        live.log.close();
        // Everything is in the store now: after a while readers read it there, and the process
        // does not keep every run it ever executed (readers holding it keep it).
        tokio::time::sleep(self.settings.keep_finished_runs).await;
        lock(&self.runs).remove(live.handle.id());
    }

    async fn finish_session(&self, live: &Arc<LiveRun>) {
        let Some(session_id) = live.handle.session_id() else {
            return;
        };
        let output: Vec<Message> = live
            .handle
            .messages()
            .into_iter()
            .skip(live.input_len)
            .collect();
        // A session deleted while its run went on does not keep the run's conversation.
        if let Err(error) = self.committer.append_messages(session_id, output).await {
            tracing::error!(run = %live.handle.id(), "storing the output: {error}");
        }
        let mut busy = lock(&self.busy);
        let key = (live.owner.clone(), session_id.clone());
        if busy.get(&key).is_some_and(|active| {
            active
                .as_ref()
                .is_some_and(|active| Arc::ptr_eq(active, live))
        }) {
            busy.remove(&key);
        }
    }

    /// The run if this process executes it: what continuing a run (its input, its live stream)
    /// needs. A run that has ended is a 409 `run_finished`; one known only from the store
    /// while it goes on (another node executes it) is a 409 `run_not_here`.
    pub(crate) async fn live_run(
        &self,
        id: &str,
        caller: &Caller,
    ) -> Result<Arc<LiveRun>, ApiError> {
        match self.run(id, caller).await? {
            FoundRun::Live(live) => Ok(live),
            FoundRun::Stored(record) if record.status.is_terminal() => Err(ApiError::new(
                StatusCode::CONFLICT,
                "run_finished",
                format!("run '{id}' has ended"),
            )),
            FoundRun::Stored(_) => Err(ApiError::new(
                StatusCode::CONFLICT,
                "run_not_here",
                "this server does not execute the run; send its input to the one that does",
            )),
        }
    }

    /// The run, if `caller` may see it: from memory when this process executes it, else from
    /// the store.
    pub(crate) async fn run(&self, id: &str, caller: &Caller) -> Result<FoundRun, ApiError> {
        let run_id = RunId::from(id);
        let live = lock(&self.runs).get(&run_id).cloned();
        if let Some(live) = live {
            return match live.owner == *caller {
                true => Ok(FoundRun::Live(live)),
                false => Err(ApiError::not_found("run", id)),
            };
        }
        match self.store.run(&run_id).await.map_err(store_error)? {
            Some(record) if record.owner.as_deref() == caller.owner_id() => {
                Ok(FoundRun::Stored(Box::new(record)))
            }
            _ => Err(ApiError::not_found("run", id)),
        }
    }

    /// Every run that has not ended.
    pub(crate) fn unfinished_runs(&self) -> Vec<Arc<LiveRun>> {
        lock(&self.runs)
            .values()
            .filter(|live| !live.handle.status().is_terminal())
            .cloned()
            .collect()
    }

    /// Every run this process executes or executed.
    pub(crate) fn live_runs(&self) -> Vec<Arc<LiveRun>> {
        lock(&self.runs).values().cloned().collect()
    }

    /// A session's messages, if `caller` may see it.
    pub(crate) async fn session(
        &self,
        id: &str,
        caller: &Caller,
    ) -> Result<Vec<Message>, ApiError> {
        let session_id = SessionId::from(id);
        match self.store.session(&session_id).await.map_err(store_error)? {
            Some(session) if session.owner.as_deref() == caller.owner_id() => {}
            _ => return Err(ApiError::not_found("session", id)),
        }
        match self.store.session_messages(&session_id).await {
            Ok(messages) => Ok(messages),
            Err(StoreError::SessionNotFound(_)) => Err(ApiError::not_found("session", id)),
            Err(error) => Err(store_error(error)),
        }
    }

    /// Deletes a session with its runs, if `caller` may see it. A run still going on it goes
    /// on; its conversation is not kept.
    pub(crate) async fn delete_session(&self, id: &str, caller: &Caller) -> Result<(), ApiError> {
        let session_id = SessionId::from(id);
        match self.store.session(&session_id).await.map_err(store_error)? {
            Some(session) if session.owner.as_deref() == caller.owner_id() => {}
            _ => return Err(ApiError::not_found("session", id)),
        }
        self.store
            .delete_session(&session_id)
            .await
            .map_err(store_error)?;
        Ok(())
    }
}
