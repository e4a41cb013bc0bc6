//! A session's shared state as clients read and set it between runs (`GET`, `PUT` and `PATCH`
//! of `/v1/sessions/{id}/state`). While its runs work, only they change it (their events
//! carry each change, and the store writes it with them, see `commit`).
//!
//! Decided: a client's change is refused (`409 session_busy`) while a run of the session is
//! open, on this node (starting or going) or in the store (created, queued, working or awaiting
//! the client), rather than applied through the running run: a run's model works from the
//! state it was shown, and a change under it would make its next patch apply to a state it has
//! not seen. Between runs the change is checked against the server's bounds and the schema of
//! the agent of the session's latest run (the default agent's without runs: what a run that
//! names none uses; a run of another agent checks the state it starts from), and written only
//! over the version it was made from (`If-Match`, or the version read: a `PATCH` that raced
//! another write is made again on the new state).
//!
//! Decided: a node makes its clients' state changes one at a time, so that two racing changes
//! meet at the version check (the loser of an `If-Match` race is told `412`), never at the
//! session's reservation, which would tell it a run is going.

use agentwire_core::SessionId;
use agentwire_core::json_bounds::JsonBounds;
use agentwire_runtime::Agent;
use agentwire_store::{SharedStateRecord, StateWrite, StoreError};
use serde_json::Value;

use crate::caller::Caller;
use crate::runs::sessions::{self, SessionKey};
use crate::runs::{Runs, RunsError};

/// How often a change that lost a race with another write is made again before the client is
/// told to try again.
const ATTEMPTS: u32 = 3;

/// A change of a session's shared state: the new state from the current one, or why not.
pub(crate) type Change<'a> = &'a (dyn Fn(&Value) -> Result<Value, RunsError> + Send + Sync);

/// A session's shared state as stored, with its version.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct StateView {
    pub(crate) state: Value,
    pub(crate) version: i64,
}

impl Runs {
    /// The bounds every shared state is held to.
    pub(crate) fn state_bounds(&self) -> JsonBounds {
        self.limits
            .max_state_bytes
            .map_or_else(JsonBounds::default, JsonBounds::with_max_bytes)
    }

    /// Refuses a state past the bounds.
    pub(crate) fn check_state_bounds(&self, state: &Value) -> Result<(), RunsError> {
        self.state_bounds().check(state).map_err(|bounds| {
            RunsError::out_of_bounds(bounds, format_args!("the state is {bounds}"))
        })
    }

    /// The session's shared state; another caller's session is not found.
    pub(crate) async fn shared_state(
        &self,
        caller: &Caller,
        id: &str,
    ) -> Result<StateView, RunsError> {
        match self.state_record(caller, &SessionId::from(id)).await? {
            Some(record) => Ok(StateView {
                state: record.state,
                version: record.version,
            }),
            None => Err(RunsError::no_session(id)),
        }
    }

    /// Sets the session's shared state to what `change` makes of it, if no run of the session
    /// is open and the state is still at `if_match` (when given). `create`: a session that
    /// does not exist is created for the caller first, and a state stored that cannot be read
    /// is replaced (a `PUT`).
    pub(crate) async fn change_shared_state(
        &self,
        caller: &Caller,
        id: &str,
        if_match: Option<i64>,
        create: bool,
        change: Change<'_>,
    ) -> Result<StateView, RunsError> {
        sessions::check_id(id)?;
        let key: SessionKey = (caller.clone(), SessionId::from(id));
        let _one_at_a_time = self.changing_state.lock().await;
        // No run of the session starts on this node meanwhile.
        self.sessions.reserve(&key)?;
        let changed = self
            .change_reserved(caller, &key.1, if_match, create, change)
            .await;
        self.sessions.started(key, None);
        changed
    }

    async fn change_reserved(
        &self,
        caller: &Caller,
        session_id: &SessionId,
        if_match: Option<i64>,
        create: bool,
        change: Change<'_>,
    ) -> Result<StateView, RunsError> {
        let id = session_id.as_str();
        for _ in 0..ATTEMPTS {
            let read = match self.state_record(caller, session_id).await {
                Err(RunsError::StateUnreadable { .. }) if create => {
                    self.unreadable_record(caller, session_id).await
                }
                read => read,
            };
            let record = match read? {
                Some(record) => record,
                None if create => {
                    match self
                        .store
                        .create_session(caller.owner_id(), session_id)
                        .await
                    {
                        // Created meanwhile: read again.
                        Ok(_) | Err(StoreError::AlreadyExists(_)) => {}
                        Err(error) => return Err(error.into()),
                    }
                    continue;
                }
                None => return Err(RunsError::no_session(id)),
            };
            if let Some(expected) = if_match
                && expected != record.version
            {
                return Err(RunsError::StateChanged(expected.to_string()));
            }
            let state = change(&record.state)?;
            self.check_state_bounds(&state)?;
            if let Some(agent) = self.state_agent(caller, session_id).await? {
                agent
                    .check_state(&state)
                    .map_err(|error| RunsError::InvalidState(error.to_string()))?;
            }
            match self
                .store
                .set_shared_state(caller.owner_id(), session_id, &state, Some(record.version))
                .await?
            {
                StateWrite::Written { version } => return Ok(StateView { state, version }),
                StateWrite::RunOpen(run) => {
                    return Err(RunsError::SessionBusy {
                        session: id.to_owned(),
                        run,
                    });
                }
                StateWrite::NoSession => return Err(RunsError::no_session(id)),
                StateWrite::Stale if if_match.is_some() => {
                    return Err(RunsError::StateChanged(record.version.to_string()));
                }
                // Written meanwhile: made again on what is there now.
                StateWrite::Stale => {}
            }
        }
        Err(RunsError::SessionBusy {
            session: id.to_owned(),
            run: None,
        })
    }

    /// The caller's session's shared state as stored; `None`: no such session for the caller.
    async fn state_record(
        &self,
        caller: &Caller,
        session_id: &SessionId,
    ) -> Result<Option<SharedStateRecord>, RunsError> {
        match self.store.shared_state(caller.owner_id(), session_id).await {
            Ok(record) => Ok(record),
            Err(StoreError::UnreadableState { session, reason }) => {
                Err(RunsError::StateUnreadable { session, reason })
            }
            Err(error) => Err(error.into()),
        }
    }

    /// The caller's session's record without its state (as `null`: what a `PUT` replaces, when
    /// the state cannot be read); `None`: no such session for the caller.
    async fn unreadable_record(
        &self,
        caller: &Caller,
        session_id: &SessionId,
    ) -> Result<Option<SharedStateRecord>, RunsError> {
        let owner = caller.owner_id();
        Ok(self
            .store
            .state_version(owner, session_id)
            .await?
            .map(|version| SharedStateRecord {
                owner: owner.map(str::to_owned),
                state: Value::Null,
                version,
            }))
    }

    /// The agent whose state schema the session's state is held to between runs: the agent of
    /// its latest run, or the default agent without runs (none when this server has no such
    /// agent).
    async fn state_agent(
        &self,
        caller: &Caller,
        session_id: &SessionId,
    ) -> Result<Option<&Agent>, RunsError> {
        Ok(match self.session_agent(caller, session_id).await? {
            Some(name) => self.agents.iter().find(|agent| agent.name() == name),
            None => self.agents.get(crate::state::default_agent(&self.agents)),
        })
    }
}
