//! A session's shared state as clients read and set it between runs (`GET`, `PUT` and `PATCH`
//! of `/v1/sessions/{id}/state`). While its runs work, only they change it (their events
//! carry each change, and the store writes it with them, see `commit`).
//!
//! Decided: a client's change is refused (`409 session_busy`) while a run of the session is
//! open, on this node (starting or going) or in the store (created, queued, working or awaiting
//! the client), rather than applied through the running run: a run's model works from the
//! state it was shown, and a change under it would make its next patch apply to a state it has
//! not seen. Between runs the change is checked against the schema of the agent of the
//! session's latest run, and written only over the version it was made from (`If-Match`, or
//! the version read: a `PATCH` that raced another write is made again on the new state).

use agentwire_core::SessionId;
use agentwire_store::{StateWrite, StoreError};
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
    /// The shared state of the caller's session.
    pub(crate) async fn shared_state(
        &self,
        caller: &Caller,
        id: &str,
    ) -> Result<StateView, RunsError> {
        let session_id = SessionId::from(id);
        match self
            .store
            .shared_state(caller.owner_id(), &session_id)
            .await?
        {
            Some(record) => Ok(StateView {
                state: record.state,
                version: record.version,
            }),
            _ => Err(RunsError::no_session(id)),
        }
    }

    /// Sets the session's shared state to what `change` makes of it, if no run of the session
    /// is open and the state is still at `if_match` (when given). `create`: a session that
    /// does not exist is created for the caller first (a `PUT`).
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
        let owner = caller.owner_id();
        for _ in 0..ATTEMPTS {
            let record = match self.store.shared_state(owner, session_id).await? {
                Some(record) => record,
                None if create => {
                    match self.store.create_session(owner, session_id).await {
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
            // The schema of the agent of the session's latest run (none without runs, or when
            // this server has no such agent).
            let agent = self.session_agent(caller, session_id).await?;
            if let Some(agent) =
                agent.and_then(|name| self.agents.iter().find(|a| a.name() == name))
            {
                agent
                    .check_state(&state)
                    .map_err(|error| RunsError::InvalidState(error.to_string()))?;
            }
            match self
                .store
                .set_shared_state(owner, session_id, &state, Some(record.version))
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
}
