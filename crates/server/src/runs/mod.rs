//! Run hosting: the registry of the runs this node executes, the task that moves each run's
//! events into its in-memory log and the store ([`pump`]), the group commit behind it
//! ([`commit`]), the log's window ([`log`]), the readers that stream a run from any point
//! ([`read`]), input through any node ([`input`]), runs taken over from the store where they
//! wait ([`resume`]), each session's current run ([`sessions`]), and a session's shared state
//! as clients set it between runs ([`shared_state`]). No HTTP here: callers get
//! [`RunsError`]s, which the edge maps to answers in one place.
//!
//! Decided: a run is held in memory only while it is live work. When its last event is
//! committed and shown, the registry lets it go at once; readers still streaming it keep their
//! own reference until they finish, and everyone after reads it from the store (the store is
//! the state of record, and its replay is the same stream). Holding finished runs for a while
//! (for late readers) cost a whole run's memory per run finished in that while — under load,
//! most of the process.

mod commit;
mod error;
mod inbox;
mod input;
mod log;
mod posted;
mod pump;
mod read;
mod resume;
pub(crate) mod sessions;
mod shared_state;

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use agentwire_core::communication::{MessageKind, Party, SchemaMachine, StateName, Utterance};
use agentwire_core::{
    Accumulator, ErrorInfo, Event, Message, MessageId, Role, RunId, RunStatus, SessionId, Usage,
};
use agentwire_runtime::{
    Agent, Agents, InputError, RunHandle, RunLimits, RunSlots, RunStart, Telemetry,
};
use agentwire_store::{Notice, RunRecord, Started, Store, StoreError};
use futures::StreamExt;
use serde::Serialize;
use serde_json::Value;
use tokio::sync::broadcast;
use tracing::Instrument;

use crate::caller::Caller;
use crate::clock;
use crate::metrics::Metrics;
use commit::{Committer, RunCommits};
pub(crate) use error::{RunsError, refusal_code};
pub(crate) use inbox::{Posting, Sweeping};
pub(crate) use log::EventLog;
pub(crate) use posted::PostedReader;
pub(crate) use read::{LiveReader, Reader, StoredReader, Until, read_all};
pub(crate) use resume::Waiting;
use sessions::{Current, SessionKey, Sessions};
pub(crate) use shared_state::StateView;

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
    /// A node elsewhere streams the run: its events are published as they are shown.
    followed: AtomicBool,
    /// The store holds the run's checkpoint: it waits, and outlives this process.
    parked: AtomicBool,
    /// Held while the run's checkpoint is rewritten, so the last write has the latest answers.
    checkpointing: tokio::sync::Mutex<()>,
    /// Another node holds the run now: nothing more of it is stored from here.
    let_go: AtomicBool,
}

impl LiveRun {
    /// Whether the run waits for the client and the store holds its checkpoint: stopping this
    /// process leaves it waiting there.
    pub(crate) fn is_parked(&self) -> bool {
        self.parked.load(Ordering::Relaxed)
    }
}

/// A run found by id: one this process executes, or one only the store knows.
#[derive(Debug)]
pub(crate) enum Found {
    Live(Arc<LiveRun>),
    Stored(Box<RunRecord>),
}

impl Found {
    /// The agent running it.
    pub(crate) fn agent(&self) -> &str {
        match self {
            Found::Live(live) => live.handle.agent().name(),
            Found::Stored(record) => &record.agent,
        }
    }

    /// Its status now.
    pub(crate) fn status(&self) -> RunStatus {
        match self {
            Found::Live(live) => live.handle.status(),
            Found::Stored(record) => record.status,
        }
    }

    /// The session it runs in.
    pub(crate) fn session_id(&self) -> Option<&SessionId> {
        match self {
            Found::Live(live) => live.handle.session_id(),
            Found::Stored(record) => record.session_id.as_ref(),
        }
    }
}

/// A run as the API shows it.
#[derive(Debug, Serialize)]
pub(crate) struct RunView {
    id: String,
    session_id: Option<String>,
    agent: String,
    #[serde(flatten)]
    status: RunStatus,
    state: String,
    usage: Option<Usage>,
    error: Option<ErrorInfo>,
}

impl RunView {
    /// A live run as it stands.
    pub(crate) fn live(live: &LiveRun) -> Self {
        let handle = &live.handle;
        RunView {
            id: handle.id().to_string(),
            session_id: handle.session_id().map(ToString::to_string),
            agent: handle.agent().name().to_owned(),
            status: handle.status(),
            state: handle.state().to_string(),
            usage: handle.usage(),
            error: handle.error(),
        }
    }

    /// A stored run, from its row.
    pub(crate) fn stored(record: &RunRecord) -> Self {
        RunView {
            id: record.id.to_string(),
            session_id: record.session_id.as_ref().map(ToString::to_string),
            agent: record.agent.clone(),
            status: record.status,
            state: record.state.clone().unwrap_or_default(),
            usage: record.usage,
            error: record.error.clone(),
        }
    }
}

/// Events read from the store at once when a stored run is read whole.
const PAGE: u32 = 1000;

/// The runs this node executes, and each session's current one.
#[derive(Debug)]
pub(crate) struct Runs {
    store: Store,
    /// Commits the runs' event batches to the store together.
    committer: Committer,
    /// This process in the store: its runs carry it, and it marks them interrupted on restart.
    node: String,
    /// The server's ceilings over every agent's limits.
    limits: RunLimits,
    /// How long a stream stays quiet before a heartbeat.
    heartbeat: Duration,
    /// The store's notices, fanned out to this process's readers of stored runs.
    notices: broadcast::Sender<Notice>,
    live: Mutex<HashMap<RunId, Arc<LiveRun>>>,
    /// The agents runs taken over from the store are rebuilt with.
    agents: Vec<Agent>,
    /// The same agents by name: the ones runs may hand a conversation to.
    roster: Agents,
    /// Held while a run is taken over from the store ([`Runs::adopt`]).
    adopting: tokio::sync::Mutex<()>,
    /// Held while a client changes a shared state (see `shared_state`).
    changing_state: tokio::sync::Mutex<()>,
    sessions: Sessions,
    metrics: Arc<Metrics>,
    /// This node's slots for working runs (`max_concurrent_runs`), if limited.
    slots: Option<RunSlots>,
    /// Where runs record their OpenTelemetry spans and metrics; `None`: nowhere.
    pub(crate) telemetry: Option<Telemetry>,
    /// Sessions whose inbox may hold queued messages (see `inbox`).
    inboxed: Mutex<HashSet<SessionKey>>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // No code path panics while holding these locks; the maps stay consistent.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Runs {
    /// The registry of `node`, committing to `store`; starts the group commit's writer.
    pub(crate) fn new(
        store: Store,
        agents: Vec<Agent>,
        node: String,
        limits: RunLimits,
        heartbeat: Duration,
        metrics: Arc<Metrics>,
        telemetry: Option<Telemetry>,
    ) -> Self {
        Self {
            committer: Committer::start(store.clone(), node.clone()),
            store,
            roster: Agents::new(agents.iter().cloned()),
            agents,
            adopting: tokio::sync::Mutex::default(),
            changing_state: tokio::sync::Mutex::default(),
            node,
            limits,
            heartbeat,
            notices: broadcast::Sender::new(1024),
            live: Mutex::default(),
            sessions: Sessions::default(),
            metrics,
            slots: None,
            telemetry,
            inboxed: Mutex::default(),
        }
    }

    /// Limits the runs working on this node at once to `slots` (`max_concurrent_runs`): more
    /// are queued in line, and past the line's end rejected.
    pub(crate) fn with_slots(mut self, slots: Option<RunSlots>) -> Self {
        self.slots = slots;
        self
    }

    /// How many runs wait for a slot now.
    pub(crate) fn queued(&self) -> usize {
        self.slots.as_ref().map_or(0, RunSlots::queued)
    }

    /// This process's name in the store.
    pub(crate) fn node(&self) -> &str {
        &self.node
    }

    /// Moves the store's notices to this process's readers, and cancels the runs other nodes
    /// asked to cancel. Runs until the store's listener ends.
    pub(crate) async fn follow_notices(self: &Arc<Self>) -> Result<(), StoreError> {
        let mut notices = self.store.listen().await?;
        let runs = Arc::clone(self);
        tokio::spawn(async move {
            while let Some(notice) = notices.next().await {
                match notice {
                    Ok(Notice::Cancel { run_id }) => {
                        // The asking node checked the cancel against the state it knew; this
                        // node knows the run's state now, and its refusal stands.
                        let refused = lock(&runs.live)
                            .get(&run_id)
                            .and_then(|live| live.handle.cancel().err());
                        if let Some(refusal) = refused {
                            tracing::info!(run = %run_id, "a cancel from another node: {refusal}");
                        }
                    }
                    Ok(Notice::Input { run_id, input_id }) => runs.take_input(run_id, input_id),
                    Ok(Notice::Inbox { owner, session_id }) => {
                        let runs = Arc::clone(&runs);
                        let key = (Caller::of(owner), session_id);
                        tokio::spawn(async move { runs.inbox_notice(key).await });
                    }
                    Ok(Notice::Follow { run_id }) => {
                        if let Some(live) = lock(&runs.live).get(&run_id) {
                            live.followed.store(true, Ordering::Relaxed);
                        }
                    }
                    Ok(notice) => {
                        let _ = runs.notices.send(notice);
                    }
                    // Missed notices: readers also read the log on every heartbeat.
                    Err(error) => tracing::warn!("store notices: {error}"),
                }
            }
        });
        Ok(())
    }

    /// Starts a run of `agent` for `caller` in a session (the one named, created if new, or a
    /// fresh one), with the session's history from the store. The run's row and its input are
    /// committed before this returns (an accepted input is durable before it is acknowledged).
    /// Nothing changes when the runtime refuses the run. Another caller's session is not
    /// found, as one that does not exist.
    pub(crate) async fn start(
        self: &Arc<Self>,
        agent: &Agent,
        caller: &Caller,
        session_id: Option<SessionId>,
        start: RunStart,
    ) -> Result<Arc<LiveRun>, RunsError> {
        // A session the client names may have a history; a fresh one has none to read.
        let named = session_id.is_some();
        if let Some(id) = &session_id {
            sessions::check_id(id.as_str())?;
        }
        let session_id = session_id.unwrap_or_else(sessions::new_id);
        let key = (caller.clone(), session_id);
        self.sessions.reserve(&key)?;
        // Boxed: the store's futures are large, and every dialect's handler awaits this one;
        // inline, their size would stay allocated for as long as the response streams.
        let started = Box::pin(self.start_reserved(agent, caller, &key.1, named, start)).await;
        self.sessions.started(key, started.as_ref().ok());
        let live = started?;
        lock(&self.live).insert(live.handle.id().clone(), Arc::clone(&live));
        Ok(live)
    }

    async fn start_reserved(
        self: &Arc<Self>,
        agent: &Agent,
        caller: &Caller,
        session_id: &SessionId,
        named: bool,
        start: RunStart,
    ) -> Result<Arc<LiveRun>, RunsError> {
        let owner = caller.owner_id();
        let stored = match named {
            true => self.store.session(owner, session_id).await?,
            false => None,
        };
        // The conversation goes on where the session's last run left the agent's schema, and
        // from the session's shared state.
        let (history, schema_state, stored_state) = match stored {
            Some(session) => {
                self.check_free(owner, session_id).await?;
                let history = self.store.session_messages(owner, session_id).await?;
                let state = match self.store.shared_state(owner, session_id).await {
                    Ok(state) => state.map(|state| state.state).unwrap_or_default(),
                    // A state the run is sent replaces it.
                    Err(StoreError::UnreadableState { .. }) if !start.shared_state.is_null() => {
                        Value::Null
                    }
                    Err(error) => return Err(error.into()),
                };
                (history, session.schema_state.map(StateName::from), state)
            }
            None => (Vec::new(), None, Value::Null),
        };
        let mut start = start;
        // A state the client sends with its run (AG-UI's `RunAgentInput.state`) becomes the
        // session's: the run starts from it and shows it, and it is stored with the run's first
        // events (`RunCommits` holds what the store has, so it sees the change).
        let shared_state = match std::mem::take(&mut start.shared_state) {
            Value::Null => stored_state.clone(),
            sent => {
                self.check_state_bounds(&sent)?;
                sent
            }
        };
        // The state may have been set for another agent, or before a run named this one.
        agent
            .check_state(&shared_state)
            .map_err(|error| RunsError::InvalidState(error.to_string()))?;
        let agent = self.speaker(agent, &history);
        let input_len = start.input.len();
        let run_id = start.run_id.clone().unwrap_or_else(|| agent.new_run_id());
        // Everything the run does, its runtime tasks included, logs inside this span.
        let span = tracing::info_span!(
            "run",
            run_id = %run_id,
            agent = agent.name(),
            session = %session_id,
            node = self.node
        );
        let started = std::time::Instant::now();
        // A handler may have given the run a telemetry of its own; else the run joins the
        // request's trace when it named one (`traceparent`).
        if start.telemetry.is_none() {
            start.telemetry =
                self.telemetry
                    .as_ref()
                    .map(|telemetry| match crate::traceparent::incoming() {
                        Some(parent) => telemetry.child_of(parent),
                        None => telemetry.clone(),
                    });
        }
        let start = start
            .with_run_id(run_id)
            .with_session(session_id.clone())
            .with_history(history)
            .with_limits(self.limits)
            .with_schema_state(schema_state)
            .with_agents(self.roster.clone())
            .with_shared_state(shared_state)
            .with_stored_events();
        let start = match &self.slots {
            Some(slots) => start.with_slots(slots.clone()),
            None => start,
        };
        let run = span.in_scope(|| agent.start(start))?;
        let live = Arc::new(LiveRun {
            handle: run.handle,
            log: EventLog::default(),
            owner: caller.clone(),
            store: self.store.clone(),
            input_len,
            followed: AtomicBool::new(false),
            parked: AtomicBool::new(false),
            checkpointing: tokio::sync::Mutex::default(),
            let_go: AtomicBool::new(false),
        });
        if let Err(error) = self.record_start(&live, session_id).await {
            live.handle.abort();
            return Err(error);
        }
        let metrics = self.metrics.run_started(agent.name(), started);
        let commits = RunCommits::new(
            self.committer.clone(),
            live.handle.id().clone(),
            stored_state,
        );
        let pump = Arc::clone(self).pump(Arc::clone(&live), run.events, commits, metrics);
        tokio::spawn(pump.instrument(span));
        Ok(live)
    }

    /// The agent that takes a turn asked of `agent`: the one the conversation was handed to,
    /// when the session's last answer is by an agent `agent` hands off to (directly or down a
    /// chain of handoffs), so a client that keeps addressing the agent it started with goes on
    /// with whoever took the conversation; `agent` itself otherwise (an agent named on its own
    /// answers).
    fn speaker<'a>(&'a self, agent: &'a Agent, history: &[Message]) -> &'a Agent {
        let last = history.iter().rev().find_map(|message| {
            (message.role == Role::Assistant)
                .then_some(message.metadata.agent_name.as_deref())
                .flatten()
        });
        let Some(last) = last.filter(|last| *last != agent.name()) else {
            return agent;
        };
        let mut seen = vec![agent.name()];
        let mut reachable = vec![agent];
        while let Some(from) = reachable.pop() {
            for name in from.handoffs() {
                if seen.contains(&name.as_str()) {
                    continue;
                }
                let Some(to) = self.roster.get(name) else {
                    continue;
                };
                if name == last {
                    return to;
                }
                seen.push(to.name());
                reachable.push(to);
            }
        }
        agent
    }

    /// Refuses a turn on a session whose latest run has not ended though no run of it goes on
    /// here: it waits in the store for its answer, or another node executes it. (One of this
    /// node's that is neither is a run whose end could not be stored: it holds nothing.)
    async fn check_free(
        &self,
        owner: Option<&str>,
        session_id: &SessionId,
    ) -> Result<(), RunsError> {
        let busy = |run: &RunRecord| {
            matches!(run.status, RunStatus::Awaiting(_))
                || (run.node != self.node && !run.status.is_terminal())
        };
        match self.store.last_session_run(owner, session_id).await? {
            Some(run) if busy(&run) => Err(RunsError::SessionBusy {
                session: session_id.to_string(),
                run: Some(run.id),
            }),
            _ => Ok(()),
        }
    }

    /// Commits the session (if new), the run's row and its input, in one transaction (with
    /// the other runs' writes waiting, see [`Committer`]).
    async fn record_start(&self, live: &LiveRun, session_id: &SessionId) -> Result<(), RunsError> {
        let handle = &live.handle;
        let record = RunRecord {
            session_id: Some(session_id.clone()),
            owner: live.owner.owner_id().map(str::to_owned),
            // Where the input took the schema: what a cancel from another node is checked
            // against (`cancel_elsewhere`).
            state: Some(handle.state().to_string()),
            ..RunRecord::new(handle.id().clone(), handle.agent().name(), &self.node)
        };
        let input: Vec<Message> = handle.messages().into_iter().take(live.input_len).collect();
        match self.committer.start_run(record, input).await {
            Ok(Started::Done) => Ok(()),
            Ok(Started::RunExists) => Err(RunsError::RunExists(handle.id().clone())),
            // The writer logged the group's error.
            Err(error) => Err(RunsError::Commit(error)),
        }
    }

    /// The run, if `caller` may see it: from memory when this process executes it, else from
    /// the store.
    pub(crate) async fn find(&self, id: &str, caller: &Caller) -> Result<Found, RunsError> {
        let run_id = RunId::from(id);
        let live = lock(&self.live).get(&run_id).cloned();
        if let Some(live) = live {
            return match live.owner == *caller {
                true => Ok(Found::Live(live)),
                false => Err(RunsError::no_run(id)),
            };
        }
        match self.store.run(&run_id).await? {
            Some(record) if record.owner.as_deref() == caller.owner_id() => {
                Ok(Found::Stored(Box::new(record)))
            }
            _ => Err(RunsError::no_run(id)),
        }
    }

    /// Gives a run the client's input, checked by the runtime against the run's wait and
    /// schema, so a refusal changes nothing. An answer to a run waiting in the store is
    /// acknowledged once it is stored too: with the checkpoint while the run still waits for
    /// more, or as the run's next status when it sets the run going. (A crash before leaves the
    /// run waiting for it, and its client was not told otherwise.)
    pub(crate) async fn answer(&self, live: &LiveRun, message: Message) -> Result<(), RunsError> {
        let parked = live.is_parked();
        if parked {
            self.check_held(live).await?;
        }
        let before = live.log.last_seq();
        live.handle.input(message)?;
        if !parked {
            return Ok(());
        }
        match live.handle.status() {
            RunStatus::Awaiting(_) => self.save_checkpoint(live).await,
            // Its next event is held until stored (a status), so the log shows it then.
            _ => {
                let _ = tokio::time::timeout(input::ANSWER_WITHIN, live.log.past(before)).await;
            }
        }
        Ok(())
    }

    /// Takes `live` out of the registry (not another copy of the run that took its place).
    fn forget(&self, live: &LiveRun) {
        let mut runs = lock(&self.live);
        if runs
            .get(live.handle.id())
            .is_some_and(|held| std::ptr::eq(Arc::as_ptr(held), live))
        {
            runs.remove(live.handle.id());
        }
    }

    /// The run as it stands and its output so far: from memory, or rebuilt from the store.
    pub(crate) async fn status(
        &self,
        id: &str,
        caller: &Caller,
    ) -> Result<(RunView, Vec<Message>), RunsError> {
        match self.find(id, caller).await? {
            Found::Live(live) => Ok((RunView::live(&live), live.handle.output())),
            Found::Stored(record) => {
                let mut accumulator = Accumulator::default();
                self.each_stored_event(&record.id, |event| {
                    // A log cut by a crash ends mid-message; what did complete is still shown.
                    let _ = accumulator.push(event);
                })
                .await?;
                Ok((RunView::stored(&record), accumulator.messages().to_vec()))
            }
        }
    }

    /// Hands `visit` every stored event of a run, in order, a page at a time.
    pub(crate) async fn each_stored_event(
        &self,
        run_id: &RunId,
        mut visit: impl FnMut(&Event),
    ) -> Result<(), RunsError> {
        let mut after = 0;
        loop {
            let page = self.store.events_after(run_id, after, PAGE).await?;
            let Some(last) = page.last() else {
                return Ok(());
            };
            after = last.seq;
            page.iter().for_each(&mut visit);
        }
    }

    /// A reader of the run's events after `after`, live or from the store.
    pub(crate) async fn follow(
        &self,
        id: &str,
        caller: &Caller,
        after: u64,
        until: Until,
    ) -> Result<Reader, RunsError> {
        Ok(self.follow_found(self.find(id, caller).await?, after, until))
    }

    /// A reader of a run already found, after `after`.
    pub(crate) fn follow_found(&self, found: Found, after: u64, until: Until) -> Reader {
        match found {
            Found::Live(live) => self.follow_live(live, after, until, false),
            Found::Stored(record) => Reader::Stored(StoredReader::new(
                self.store.clone(),
                &self.notices,
                record.id.clone(),
                after,
                self.heartbeat,
                until,
            )),
        }
    }

    /// A reader of a live run's events after `after`. `continues` says the stream picks up a
    /// settled run just answered, so it waits for the run's next event before it may end.
    pub(crate) fn follow_live(
        &self,
        live: Arc<LiveRun>,
        after: u64,
        until: Until,
        continues: bool,
    ) -> Reader {
        Reader::Live(LiveReader::new(
            live,
            after,
            self.heartbeat,
            until,
            continues,
        ))
    }

    /// The client cancels a run, here or on the node executing it (which hears the store's
    /// notice); the run as it was when asked. `cancel` is a message of the agent's schema: a
    /// schema that does not allow it in the run's state refuses it
    /// ([`RunsError::Input`] with the schema's refusal), and nothing changes.
    pub(crate) async fn cancel(
        self: &Arc<Self>,
        id: &str,
        caller: &Caller,
    ) -> Result<RunView, RunsError> {
        match self.find(id, caller).await? {
            Found::Live(live) => {
                live.handle.cancel().map_err(InputError::Refused)?;
                Ok(RunView::live(&live))
            }
            Found::Stored(record) => {
                self.cancel_elsewhere(&record).await?;
                Ok(RunView::stored(&record))
            }
        }
    }

    /// Cancels a run this process does not hold. One that waits in the store with no process
    /// holding it is taken over and canceled here. Otherwise the node executing it is asked; if
    /// that node has stopped (its lease lapsed), its runs are ended here and now
    /// (`incomplete`), not at the next sweep. A waiting run outlives its node, so if the node
    /// stops before it acts on the request, the run is taken over and canceled here then.
    pub(crate) async fn cancel_elsewhere(
        self: &Arc<Self>,
        record: &RunRecord,
    ) -> Result<(), RunsError> {
        if record.status.is_terminal() {
            return Ok(());
        }
        if let Some(live) = self.adopt(record).await? {
            live.handle.cancel().map_err(InputError::Refused)?;
            return Ok(());
        }
        self.check_cancel(record)?;
        if !self.store.node_alive(&record.node, clock::now()).await? {
            self.store.end_if_dead(&record.node, clock::now()).await?;
            return Ok(());
        }
        let notice = Notice::Cancel {
            run_id: record.id.clone(),
        };
        self.store.notify(&notice).await?;
        if !matches!(record.status, RunStatus::Awaiting(_)) {
            return Ok(());
        }
        let ended_or_taken = async {
            loop {
                tokio::time::sleep(input::READ_EVERY).await;
                let now = self.store.run(&record.id).await?;
                let Some(now) = now.filter(|now| !now.status.is_terminal()) else {
                    return Ok::<_, RunsError>(());
                };
                if !self.store.node_alive(&now.node, clock::now()).await? {
                    return Box::pin(self.cancel_elsewhere(&now)).await;
                }
            }
        };
        // A node that is alive has heard: it cancels the run itself.
        match tokio::time::timeout(input::ANSWER_WITHIN, ended_or_taken).await {
            Ok(result) => result,
            Err(_) => Ok(()),
        }
    }

    /// Refuses the client's cancel of a run another node executes where the agent's schema
    /// does not allow `cancel` in the run's state as its row tells it (where its input took
    /// it; the executing node checks again against the state it knows now). A row without a
    /// state, or an agent this node does not serve, leaves the check to that node.
    fn check_cancel(&self, record: &RunRecord) -> Result<(), RunsError> {
        let agent = self
            .agents
            .iter()
            .find(|agent| agent.name() == record.agent);
        let (Some(agent), Some(state)) = (agent, &record.state) else {
            return Ok(());
        };
        let Some(machine) = SchemaMachine::resume(Arc::clone(agent.schema()), state.as_str())
        else {
            return Ok(());
        };
        let cancel = Utterance::new(Party::Client, MessageKind::CANCEL);
        machine
            .check(&cancel)
            .map(drop)
            .map_err(|refusal| InputError::Refused(refusal).into())
    }

    /// The caller's session's run going on, with the stream its client last opened of it.
    pub(crate) fn current(&self, caller: &Caller, session: &str) -> Option<Current> {
        self.sessions
            .current(&(caller.clone(), SessionId::from(session)))
    }

    /// The client's stream of the session's current run now starts after `after`, continuing
    /// the assistant message `continues`.
    pub(crate) fn streamed(
        &self,
        caller: &Caller,
        session: &str,
        after: u64,
        continues: Option<MessageId>,
    ) {
        let key: SessionKey = (caller.clone(), SessionId::from(session));
        self.sessions.streamed(&key, after, continues);
    }

    /// Every run that has not ended.
    pub(crate) fn unfinished(&self) -> Vec<Arc<LiveRun>> {
        lock(&self.live)
            .values()
            .filter(|live| !live.handle.status().is_terminal())
            .cloned()
            .collect()
    }

    /// Every run this process executes.
    pub(crate) fn all(&self) -> Vec<Arc<LiveRun>> {
        lock(&self.live).values().cloned().collect()
    }

    /// How many runs are held in memory, and how many sessions have a current run.
    pub(crate) fn held(&self) -> (usize, usize) {
        (lock(&self.live).len(), self.sessions.len())
    }
}
