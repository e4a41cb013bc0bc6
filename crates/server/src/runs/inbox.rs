//! Messages into a session, busy or not ([`Runs::post`]): each is written down in the
//! session's inbox in the store before it is acknowledged, then acted on by its mode. A free
//! session starts a run of it at once; a busy one queues it, gives it to the run going on as
//! a steer, or cancels that run (interrupt, rollback) so that it runs next. Whichever node sees
//! the session free next starts the first queued message ([`Runs::drain`]): the node whose run
//! ended, the node that took the message, or the sweep that every node runs for sessions a
//! stopped node left ([`Runs::sweep_inbox`]).

use std::sync::Arc;
use std::time::Duration;

use agentwire_core::{
    EventKind, InputMode, InputOutcome, Message, MessageId, Outcome, Role, RunId, SessionId,
};
use agentwire_runtime::{Agent, InputError, RunStart, StartError};
use agentwire_store::{InboxEntry, InboxState, NewInboxEntry, Posted, RunRecord, Settlement};

use crate::caller::Caller;
use crate::clock;
use crate::runs::error::refusal_code;
use crate::runs::sessions::{self, SessionKey};
use crate::runs::{LiveRun, Runs, RunsError};

/// A message for a session.
#[derive(Debug)]
pub(crate) struct Posting {
    /// The client's name for it; one is made up when the client gave none.
    pub(crate) client_message_id: Option<String>,
    /// The message, from the user.
    pub(crate) message: Message,
    pub(crate) mode: InputMode,
}

/// How long a message may stay `starting` or `steering` with nothing settling it before the
/// sweep takes its node for stopped.
const STALE: Duration = Duration::from_secs(30);

/// How often every node sweeps the inboxes: how long a message queued in a session that a
/// stopped node left free waits at most, beyond that node's lease.
const SWEEP_EVERY: Duration = Duration::from_secs(2);

/// Sessions with queued messages the sweep looks at per round.
const SWEEP_SESSIONS: u32 = 100;

impl Runs {
    /// Writes `posting` down in the caller's session `session_id` (created if new) for
    /// `agent`, and acts on it: see the module docs. A message the client sent before (same
    /// `client_message_id`) is answered as it stands, and nothing is done again. Returns the
    /// message's entry as it stands after.
    pub(crate) async fn post(
        self: &Arc<Self>,
        agent: &Agent,
        caller: &Caller,
        session_id: SessionId,
        posting: Posting,
    ) -> Result<InboxEntry, RunsError> {
        sessions::check_id(session_id.as_str())?;
        let role = match posting.message.role {
            Role::User => None,
            Role::Assistant => Some("assistant"),
            Role::System => Some("system"),
            Role::Tool => Some("tool"),
            Role::Data => Some("data"),
        };
        if let Some(role) = role {
            return Err(InputError::Role { role }.into());
        }
        if posting.message.parts.is_empty() {
            return Err(StartError::NoInput.into());
        }
        let owner = caller.owner_id();
        self.own_session(owner, &session_id).await?;
        let client_message_id = posting
            .client_message_id
            .unwrap_or_else(|| format!("cm_{}", uuid::Uuid::now_v7().simple()));
        let mut message = posting.message;
        // Named, so that the sweep can tell whether a steer joined the history.
        message.id.get_or_insert_with(|| {
            MessageId::from(format!("msg_{}", uuid::Uuid::now_v7().simple()))
        });
        let key: SessionKey = (caller.clone(), session_id.clone());
        let busy = self.busy_run(&key).await?;
        let mode = posting.mode;
        if busy.is_some() && mode == InputMode::Reject {
            if let Some(found) = self
                .store
                .inbox_entry(owner, &session_id, &client_message_id)
                .await?
            {
                return Ok(found);
            }
            return Err(RunsError::SessionBusy {
                session: session_id.to_string(),
                run: busy.map(|run| run.id().clone()),
            });
        }
        let rollback_of = match (&busy, mode) {
            (Some(run), InputMode::Rollback) => Some(run.id().clone()),
            _ => None,
        };
        let posted = self
            .store
            .post_inbox(&NewInboxEntry {
                owner,
                session_id: &session_id,
                client_message_id: &client_message_id,
                agent: agent.name(),
                mode,
                message: &message,
                state: InboxState::Queued,
                run_id: None,
                rollback_of: rollback_of.as_ref(),
            })
            .await?;
        let entry = match posted {
            Posted::Again(entry) => return Ok(entry),
            Posted::New(entry) => entry,
        };
        self.inboxed(&key);
        match (busy, mode) {
            (None, _) => {}
            (Some(Busy::Here(live)), InputMode::Steer) => self.offer_steers(&live).await?,
            (Some(Busy::Here(live)), InputMode::Queue) => live.handle.note(InputOutcome::new(
                client_message_id.clone(),
                Outcome::Queued,
            )),
            (Some(busy), InputMode::Interrupt | InputMode::Rollback) => {
                if let Err(error) = self.cancel_busy(&busy).await {
                    let reason = match &error {
                        RunsError::Input(input) => refusal_code(input),
                        _ => "cancel_failed",
                    };
                    let settlement = Settlement {
                        state: InboxState::NotDelivered,
                        run_id: None,
                        step: None,
                        reason: Some(reason),
                    };
                    self.store
                        .settle_inbox(owner, &session_id, &client_message_id, settlement)
                        .await?;
                    return Err(error);
                }
            }
            // Elsewhere: that node hears of it from the store's notice.
            (Some(_), _) => {}
        }
        self.drain(&key).await;
        Ok(self
            .store
            .inbox_entry(owner, &session_id, &client_message_id)
            .await?
            .unwrap_or(entry))
    }

    /// The agent of the last run of the caller's session, if it has one.
    pub(crate) async fn session_agent(
        &self,
        caller: &Caller,
        session_id: &SessionId,
    ) -> Result<Option<String>, RunsError> {
        Ok(self
            .store
            .last_session_run(caller.owner_id(), session_id)
            .await?
            .map(|run| run.agent))
    }

    /// The caller's session's inbox after `after`, at most `limit` entries.
    pub(crate) async fn inbox(
        &self,
        caller: &Caller,
        session_id: &SessionId,
        after: i64,
        limit: u32,
    ) -> Result<Vec<InboxEntry>, RunsError> {
        self.check_exists(caller, session_id).await?;
        Ok(self
            .store
            .inbox(caller.owner_id(), session_id, after, limit)
            .await?)
    }

    /// One message of the caller's session's inbox.
    pub(crate) async fn inbox_entry(
        &self,
        caller: &Caller,
        session_id: &SessionId,
        client_message_id: &str,
    ) -> Result<Option<InboxEntry>, RunsError> {
        self.check_exists(caller, session_id).await?;
        Ok(self
            .store
            .inbox_entry(caller.owner_id(), session_id, client_message_id)
            .await?)
    }

    /// Not found unless the caller has this session.
    async fn check_exists(&self, caller: &Caller, session_id: &SessionId) -> Result<(), RunsError> {
        match self.store.session(caller.owner_id(), session_id).await? {
            Some(_) => Ok(()),
            None => Err(RunsError::no_session(session_id.as_str())),
        }
    }

    /// The owner's session `session_id`, created if there is none.
    async fn own_session(
        &self,
        owner: Option<&str>,
        session_id: &SessionId,
    ) -> Result<(), RunsError> {
        if self.store.session(owner, session_id).await?.is_some() {
            return Ok(());
        }
        match self.store.create_session(owner, session_id).await {
            // Made meanwhile by another request of the owner's.
            Ok(_) | Err(agentwire_store::StoreError::AlreadyExists(_)) => Ok(()),
            Err(error) => Err(error.into()),
        }
    }

    /// The session's run that keeps it busy: one going on here, or one that has not ended in
    /// the store (waiting there, or going on elsewhere).
    async fn busy_run(&self, key: &SessionKey) -> Result<Option<Busy>, RunsError> {
        if let Some(current) = self.sessions.current(key)
            && !current.live.handle.status().is_terminal()
        {
            return Ok(Some(Busy::Here(current.live)));
        }
        Ok(self
            .store
            .last_session_run(key.0.owner_id(), &key.1)
            .await?
            .filter(|run| !run.status.is_terminal())
            .map(|run| Busy::Stored(Box::new(run))))
    }

    /// Cancels the session's busy run for an interrupt or a rollback.
    async fn cancel_busy(self: &Arc<Self>, busy: &Busy) -> Result<(), RunsError> {
        match busy {
            Busy::Here(live) => live.handle.cancel().map_err(InputError::Refused)?,
            Busy::Stored(record) => self.cancel_elsewhere(record).await?,
        }
        Ok(())
    }

    /// Gives the run `live` the steers queued for its session, in order: each it takes is
    /// `steering` until the run reports it; one it refuses is not delivered, and one it can no
    /// longer take (it is ending) stays queued, to start the next run.
    pub(crate) async fn offer_steers(&self, live: &LiveRun) -> Result<(), RunsError> {
        let Some(session_id) = live.handle.session_id() else {
            return Ok(());
        };
        let owner = live.owner.owner_id();
        for entry in self
            .store
            .queued(owner, session_id, Some(InputMode::Steer))
            .await?
        {
            let id = &entry.client_message_id;
            if !self
                .store
                .take_for_steer(owner, session_id, id, live.handle.id())
                .await?
            {
                continue;
            }
            let (state, reason) = match live.handle.steer(id, entry.message) {
                Ok(()) => continue,
                Err(InputError::Finished { .. }) => (InboxState::Queued, None),
                Err(error) => (InboxState::NotDelivered, Some(refusal_code(&error))),
            };
            let settlement = Settlement {
                state,
                run_id: None,
                step: None,
                reason,
            };
            self.store
                .settle_inbox(owner, session_id, id, settlement)
                .await?;
        }
        Ok(())
    }

    /// Starts the session's queued messages' runs while the session is free: the first queued
    /// message becomes a run's input, and the session is busy again (its run's end drains it
    /// again). A message whose run cannot start is not delivered, and the next one is tried.
    /// Errors are logged: the sweep tries again.
    pub(crate) async fn drain(self: &Arc<Self>, key: &SessionKey) {
        if let Err(error) = self.drain_session(key).await {
            tracing::warn!(session = %key.1, "starting the session's next message: {error}");
        }
    }

    async fn drain_session(self: &Arc<Self>, key: &SessionKey) -> Result<(), RunsError> {
        let (caller, session_id) = key;
        let owner = caller.owner_id();
        loop {
            let run_id = RunId::from(format!("run_{}", uuid::Uuid::now_v7().simple()));
            let Some(entry) = self.store.claim_next(owner, session_id, &run_id).await? else {
                // Nothing queued, or the session is busy: its run's end drains it again.
                if self.session_run(key).is_none() && !self.has_queued(key).await? {
                    super::lock(&self.inboxed).remove(key);
                }
                return Ok(());
            };
            let id = entry.client_message_id.clone();
            let agent = self.agents.iter().find(|agent| agent.name() == entry.agent);
            let Some(agent) = agent.cloned() else {
                self.settle(
                    &entry,
                    InboxState::NotDelivered,
                    None,
                    Some("unknown_agent"),
                )
                .await?;
                continue;
            };
            if let Some(rolled_back) = &entry.rollback_of {
                self.store.roll_back(owner, session_id, rolled_back).await?;
            }
            let start = RunStart::new(vec![entry.message.clone()])
                .with_run_id(run_id.clone())
                .with_client_message_id(id.clone());
            match self
                .start(&agent, caller, Some(session_id.clone()), start)
                .await
            {
                Ok(_) => {
                    return self
                        .settle(&entry, InboxState::Delivered, Some(&run_id), None)
                        .await;
                }
                // A run began meanwhile (a run started directly): the message waits for it.
                Err(RunsError::SessionBusy { .. }) => {
                    return self.settle(&entry, InboxState::Queued, None, None).await;
                }
                Err(RunsError::Store(error)) => {
                    self.settle(&entry, InboxState::Queued, None, None).await?;
                    return Err(error.into());
                }
                Err(error) => {
                    let reason = match &error {
                        RunsError::Start(_) => "refused",
                        RunsError::StateUnreadable { .. } => "state_unreadable",
                        RunsError::InvalidState(_) => "invalid_state",
                        _ => "start_failed",
                    };
                    tracing::info!(session = %session_id, message = id, "not delivered: {error}");
                    self.settle(&entry, InboxState::NotDelivered, None, Some(reason))
                        .await?;
                }
            }
        }
    }

    async fn settle(
        &self,
        entry: &InboxEntry,
        state: InboxState,
        run_id: Option<&RunId>,
        reason: Option<&str>,
    ) -> Result<(), RunsError> {
        let settlement = Settlement {
            state,
            run_id,
            step: (state == InboxState::Delivered).then_some(0),
            reason,
        };
        self.store
            .settle_inbox(
                entry.owner.as_deref(),
                &entry.session_id,
                &entry.client_message_id,
                settlement,
            )
            .await?;
        Ok(())
    }

    /// Records the outcomes a run reported for the steers it was given (the `input` events
    /// among `events`).
    pub(crate) fn settle_steers(
        self: &Arc<Self>,
        live: &LiveRun,
        events: &[agentwire_core::Event],
    ) {
        let Some(session_id) = live.handle.session_id() else {
            return;
        };
        for event in events {
            let EventKind::Input(outcome) = &event.kind else {
                continue;
            };
            if !event.is_own() {
                continue;
            }
            let (state, step, reason) = match &outcome.outcome {
                Outcome::Delivered { step } if *step > 0 => {
                    (InboxState::Delivered, Some(*step), None)
                }
                Outcome::NotDelivered { reason } => {
                    (InboxState::NotDelivered, None, Some(reason.clone()))
                }
                _ => continue,
            };
            let runs = Arc::clone(self);
            let key: SessionKey = (live.owner.clone(), session_id.clone());
            let (id, run_id) = (outcome.client_message_id.clone(), live.handle.id().clone());
            tokio::spawn(async move {
                let settlement = Settlement {
                    state,
                    run_id: Some(&run_id),
                    step,
                    reason: reason.as_deref(),
                };
                let settled = runs
                    .store
                    .settle_inbox(key.0.owner_id(), &key.1, &id, settlement)
                    .await;
                match settled {
                    // An unsettled steer holds the queue (see `Store::claim_next`).
                    Ok(()) => runs.drain(&key).await,
                    Err(error) => {
                        tracing::warn!(session = %key.1, message = id, "a steer's outcome: {error}");
                    }
                }
            });
        }
    }

    /// Heard that a message was written down in a session's inbox (on any node): the run
    /// going on here takes its steers, and a free session starts its queued message.
    pub(crate) async fn inbox_notice(self: &Arc<Self>, key: SessionKey) {
        self.inboxed(&key);
        let live = self.session_run(&key);
        if let Some(live) = live
            && let Err(error) = self.offer_steers(&live).await
        {
            tracing::warn!(session = %key.1, "offering steers: {error}");
        }
        // Free, or freed meanwhile (a steer the run could not take went back in the queue).
        self.drain(&key).await;
    }

    /// The session's live run on this node.
    fn session_run(&self, key: &SessionKey) -> Option<Arc<LiveRun>> {
        super::lock(&self.live)
            .values()
            .find(|live| {
                live.owner == key.0
                    && live.handle.session_id() == Some(&key.1)
                    && !live.handle.status().is_terminal()
            })
            .cloned()
    }

    /// Sweeps the inbox every [`SWEEP_EVERY`] until the task is aborted (see
    /// [`Runs::sweep_inbox`]).
    pub(crate) fn start_sweeping(self: &Arc<Self>) -> Sweeping {
        let runs = Arc::clone(self);
        Sweeping(tokio::spawn(async move {
            let mut ticks = tokio::time::interval(SWEEP_EVERY);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                ticks.tick().await;
                if let Err(error) = runs.sweep_inbox().await {
                    tracing::warn!("sweeping the sessions' inboxes: {error}");
                }
            }
        }))
    }

    /// One round of the inbox sweep: settles messages a stopped node left half done, then
    /// starts the queued messages of sessions that are free.
    pub(crate) async fn sweep_inbox(self: &Arc<Self>) -> Result<(), RunsError> {
        let before = clock::now().0 - STALE.as_millis() as i64;
        self.store.settle_stale_inbox(before).await?;
        for (owner, session_id) in self.store.sessions_with_queued(SWEEP_SESSIONS).await? {
            let key = (Caller::of(owner), session_id);
            if self.session_run(&key).is_none() {
                self.drain(&key).await;
            }
        }
        Ok(())
    }

    /// Marks the session as one whose inbox may hold queued messages: its runs' ends here
    /// drain it (other sessions' ends cost nothing).
    fn inboxed(&self, key: &SessionKey) {
        super::lock(&self.inboxed).insert(key.clone());
    }

    async fn has_queued(&self, key: &SessionKey) -> Result<bool, RunsError> {
        let queued = self.store.queued(key.0.owner_id(), &key.1, None).await?;
        Ok(!queued.is_empty())
    }

    /// After a run of a session ends here: its session's next message, if one waits.
    pub(crate) fn ended_in_session(self: &Arc<Self>, live: &LiveRun) {
        let Some(session_id) = live.handle.session_id() else {
            return;
        };
        let key: SessionKey = (live.owner.clone(), session_id.clone());
        if !super::lock(&self.inboxed).contains(&key) {
            return;
        }
        let runs = Arc::clone(self);
        tokio::spawn(async move { runs.drain(&key).await });
    }
}

/// The inbox sweep's task; it stops when this is stopped or dropped.
#[derive(Debug)]
pub(crate) struct Sweeping(tokio::task::JoinHandle<()>);

impl Sweeping {
    /// Stops the task.
    pub(crate) fn stop(&self) {
        self.0.abort();
    }
}

impl Drop for Sweeping {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The run a session is busy with.
enum Busy {
    Here(Arc<LiveRun>),
    Stored(Box<RunRecord>),
}

impl Busy {
    fn id(&self) -> &RunId {
        match self {
            Busy::Here(live) => live.handle.id(),
            Busy::Stored(record) => &record.id,
        }
    }
}
