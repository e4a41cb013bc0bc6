//! Runs that wait for the client outlive the process that ran them. When a run starts to wait,
//! its checkpoint is stored with the status it waits in ([`RunCommits::park`]); a restart, a
//! deploy or a crash leaves such a run waiting in the store (the store does not end it), and
//! the first node its answer (or cancel) reaches takes it over ([`Runs::adopt`]): it takes the
//! run from the node that held it in one conditional update, rebuilds it from its checkpoint
//! and its session, and from then on runs it as its own. The node that held it must be gone
//! for that (its lease lapsed) or be this node restarted; a node that was only slow finds its
//! later writes of the run refused, as for any run ended elsewhere.
//!
//! Nothing past the wait is shown before it is stored (the wait's commit reserves no seq
//! ahead), so the run goes on from the seq after its last stored event, and a client sees one
//! unbroken stream. Answers that leave the run waiting for more are stored with its checkpoint
//! ([`Runs::save_checkpoint`]); before a node acts on an answer it checks that it still holds
//! the run ([`Runs::check_held`]), so that no call runs on two nodes.
//!
//! [`RunCommits::park`]: crate::runs::commit::RunCommits::park

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use agentwire_core::{RunStatus, SessionId};
use agentwire_runtime::{Checkpoint, RunResume};
use agentwire_store::RunRecord;
use tracing::Instrument;

use crate::caller::Caller;
use crate::clock;
use crate::runs::commit::RunCommits;
use crate::runs::{EventLog, LiveRun, Runs, RunsError, lock};

/// A session's run that waits for the client's answer.
#[derive(Debug)]
pub(crate) enum Waiting {
    /// This node executes it.
    Here(Arc<LiveRun>),
    /// Another node does.
    Elsewhere(Box<RunRecord>),
}

impl Runs {
    /// The caller's session's run that waits for the client, wherever it is: here (taken over
    /// from the store if no process holds it), or on another node. `None` when the session's
    /// latest run does not wait.
    pub(crate) async fn waiting(
        self: &Arc<Self>,
        caller: &Caller,
        session: &str,
    ) -> Result<Option<Waiting>, RunsError> {
        if let Some(current) = self.current(caller, session) {
            return Ok(
                matches!(current.live.handle.status(), RunStatus::Awaiting(_))
                    .then_some(Waiting::Here(current.live)),
            );
        }
        let last = self
            .store
            .last_session_run(caller.owner_id(), &SessionId::from(session))
            .await?;
        let Some(record) = last.filter(|run| matches!(run.status, RunStatus::Awaiting(_))) else {
            return Ok(None);
        };
        Ok(Some(match self.adopt(&record).await? {
            Some(live) => Waiting::Here(live),
            None => Waiting::Elsewhere(Box::new(record)),
        }))
    }

    /// Takes over `record`'s run if it waits in the store with no process holding it (see the
    /// module docs), and returns it live; `None` when it is not such a run (it goes on
    /// elsewhere, it ended, or nothing was written down of it). A run this node executes is
    /// returned as it is.
    pub(crate) async fn adopt(
        self: &Arc<Self>,
        record: &RunRecord,
    ) -> Result<Option<Arc<LiveRun>>, RunsError> {
        if !matches!(record.status, RunStatus::Awaiting(_)) {
            return Ok(None);
        }
        // One take-over at a time here: the store's update cannot tell two of this node's apart.
        let _adopting = self.adopting.lock().await;
        if let Some(live) = lock(&self.live).get(&record.id).cloned() {
            return Ok(Some(live));
        }
        if record.node != self.node && self.store.node_alive(&record.node, clock::now()).await? {
            return Ok(None);
        }
        let Some((text, last_seq)) = self
            .store
            .take_over(&record.id, &record.node, &self.node)
            .await?
        else {
            return Ok(None);
        };
        let live = self
            .resume(record, &text, last_seq)
            .await
            .inspect_err(|error| {
                tracing::error!(run = %record.id, "a waiting run cannot go on: {error}");
            })?;
        lock(&self.live).insert(record.id.clone(), Arc::clone(&live));
        if let Some(session_id) = &record.session_id {
            self.sessions
                .adopted((live.owner.clone(), session_id.clone()), &live);
        }
        tracing::info!(run = %record.id, from = record.node, "took over a waiting run");
        Ok(Some(live))
    }

    /// Rebuilds a run from its checkpoint and its session, and starts its pump.
    async fn resume(
        self: &Arc<Self>,
        record: &RunRecord,
        checkpoint: &str,
        last_seq: u64,
    ) -> Result<Arc<LiveRun>, RunsError> {
        let agent = self
            .agents
            .iter()
            .find(|agent| agent.name() == record.agent)
            .ok_or_else(|| RunsError::UnknownAgent(record.agent.clone()))?;
        let checkpoint: Checkpoint = serde_json::from_str(checkpoint)
            .map_err(|error| RunsError::Unresumable(error.to_string()))?;
        let input_len = checkpoint.input_len();
        let (conversation, shared_state) = match &record.session_id {
            Some(session_id) => (
                self.store
                    .session_messages(record.owner.as_deref(), session_id)
                    .await?,
                self.store
                    .shared_state(record.owner.as_deref(), session_id)
                    .await?,
            ),
            None => (Vec::new(), None),
        };
        // The run's changes until its wait were stored with the events that made them.
        let shared_state = shared_state.map(|state| state.state).unwrap_or_default();
        let span = tracing::info_span!(
            "run",
            run_id = %record.id,
            agent = agent.name(),
            session = record.session_id.as_ref().map(SessionId::as_str),
            node = self.node
        );
        let resume = RunResume {
            run_id: record.id.clone(),
            session_id: record.session_id.clone(),
            conversation,
            checkpoint,
            next_seq: last_seq + 1,
            slots: self.slots.clone(),
            telemetry: self.telemetry.clone(),
            agents: Some(self.roster.clone()),
            shared_state: shared_state.clone(),
        };
        let run = span
            .in_scope(|| agent.resume(resume))
            .map_err(|error| RunsError::Unresumable(error.to_string()))?;
        let owner = record
            .owner
            .as_deref()
            .map_or_else(Caller::default, |owner| Caller::owner(owner.into()));
        let live = Arc::new(LiveRun {
            log: EventLog::resumed(last_seq, run.handle.status()),
            handle: run.handle,
            owner,
            store: self.store.clone(),
            input_len,
            followed: AtomicBool::new(false),
            parked: AtomicBool::new(true),
            checkpointing: tokio::sync::Mutex::default(),
            let_go: AtomicBool::new(false),
        });
        let commits = RunCommits::resumed(
            self.committer.clone(),
            record.id.clone(),
            last_seq,
            shared_state,
        );
        let metrics = self.metrics.run_resumed(agent.name());
        let pump = Arc::clone(self).pump(Arc::clone(&live), run.events, commits, metrics);
        tokio::spawn(pump.instrument(span));
        Ok(live)
    }

    /// Makes sure this node still holds a run that waits in the store before it acts on an
    /// answer: while it could not renew its lease another node may have taken the run over
    /// (and would run the same calls). If so the run is let go here: it stops (its writes are
    /// refused) and the answer goes through the store.
    pub(super) async fn check_held(&self, live: &LiveRun) -> Result<(), RunsError> {
        let id = live.handle.id();
        let record = self.store.run(id).await?;
        if record.is_some_and(|record| record.node == self.node) {
            return Ok(());
        }
        // Its task stores nothing more (the run may come back here, taken over from the store
        // again, while this copy closes), and the copy stops.
        live.let_go.store(true, Ordering::Relaxed);
        self.forget(live);
        live.handle.abort();
        Err(RunsError::RunMoved)
    }

    /// Stores the waiting run's checkpoint anew, with the answers it has now.
    pub(super) async fn save_checkpoint(&self, live: &LiveRun) {
        let _one_at_a_time = live.checkpointing.lock().await;
        let Some(checkpoint) = live.handle.checkpoint() else {
            return;
        };
        let saved = match serde_json::to_string(&checkpoint) {
            Ok(text) => self
                .store
                .update_checkpoint(live.handle.id(), &self.node, &text)
                .await
                .map(drop)
                .map_err(|error| error.to_string()),
            Err(error) => Err(error.to_string()),
        };
        if let Err(error) = saved {
            tracing::warn!(run = %live.handle.id(), "storing a checkpoint: {error}");
        }
    }
}
