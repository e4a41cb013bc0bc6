//! The server's live state: the agents, the runs (each a [`RunHandle`] and its [`EventLog`])
//! and the sessions (their history).
//!
//! Everything here lives in this process's memory today. It is reached only through the
//! methods below (start a run, find it, append a finished run to its session, read or delete a
//! session), which is the seam the store takes over: it will persist the event log and the
//! sessions' history behind the same calls.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use agentwire_core::{EventKind, Message, RunId, SessionId};
use agentwire_runtime::{Agent, RunEvents, RunHandle, RunStart};

use crate::error::ApiError;
use crate::log::EventLog;
use crate::settings::Settings;

/// Who made a request: the API key it presented, or `None` when the server has no keys.
pub(crate) type Owner = Option<Arc<str>>;

/// A run the server holds.
#[derive(Debug)]
pub(crate) struct LiveRun {
    pub(crate) handle: RunHandle,
    pub(crate) log: EventLog,
    pub(crate) owner: Owner,
}

/// A conversation: its history, and the run working on it now.
#[derive(Debug)]
struct Session {
    owner: Owner,
    messages: Vec<Message>,
    /// A run of this session that has not ended; the next turn waits for it.
    active: Option<Arc<LiveRun>>,
}

/// Everything the handlers share.
#[derive(Debug)]
pub(crate) struct AppState {
    pub(crate) agents: Vec<Agent>,
    default_agent: usize,
    pub(crate) settings: Settings,
    keys: Vec<Arc<str>>,
    runs: Mutex<HashMap<RunId, Arc<LiveRun>>>,
    sessions: Mutex<HashMap<SessionId, Session>>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // No code path panics while holding these locks; the maps stay consistent.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl AppState {
    pub(crate) fn new(agents: Vec<Agent>, settings: Settings) -> Self {
        let default_agent = agents
            .iter()
            .position(|agent| agent.name() == "assistant")
            .unwrap_or(0);
        let keys = settings
            .api_keys
            .iter()
            .map(|key| key.as_str().into())
            .collect();
        Self {
            agents,
            default_agent,
            settings,
            keys,
            runs: Mutex::default(),
            sessions: Mutex::default(),
        }
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

    /// Checks a request's bearer token: any caller when no keys are configured.
    pub(crate) fn authenticate(&self, authorization: Option<&str>) -> Result<Owner, ApiError> {
        if self.keys.is_empty() {
            return Ok(None);
        }
        let token = authorization.and_then(|value| value.strip_prefix("Bearer "));
        match token.and_then(|token| self.keys.iter().find(|key| key.as_ref() == token)) {
            Some(key) => Ok(Some(Arc::clone(key))),
            None => Err(ApiError::new(
                axum::http::StatusCode::UNAUTHORIZED,
                "unauthorized",
                "a valid `Authorization: Bearer <key>` header is required",
            )),
        }
    }

    /// Starts a run of `agent` for `owner` in a session (the one named, created if new, or a
    /// fresh one), with the session's history. Nothing changes when the runtime refuses it.
    pub(crate) fn start(
        self: &Arc<Self>,
        agent: &Agent,
        owner: &Owner,
        session_id: Option<SessionId>,
        start: RunStart,
    ) -> Result<Arc<LiveRun>, ApiError> {
        let session_id = session_id
            .unwrap_or_else(|| SessionId::from(format!("ses_{}", uuid::Uuid::now_v7().simple())));
        let mut sessions = lock(&self.sessions);
        let history = match sessions.get(&session_id) {
            Some(session) if session.owner != *owner => {
                return Err(ApiError::not_found("session", session_id.as_str()));
            }
            Some(session) => {
                if let Some(active) = &session.active
                    && !active.handle.status().is_terminal()
                {
                    return Err(ApiError::new(
                        axum::http::StatusCode::CONFLICT,
                        "session_busy",
                        format!(
                            "session '{session_id}' has run '{}' going; answer or cancel it first",
                            active.handle.id()
                        ),
                    ));
                }
                session.messages.clone()
            }
            None => Vec::new(),
        };
        let run = agent.start(start.with_session(session_id.clone()).with_history(history))?;
        let live = Arc::new(LiveRun {
            handle: run.handle,
            log: EventLog::default(),
            owner: owner.clone(),
        });
        sessions
            .entry(session_id)
            .or_insert_with(|| Session {
                owner: owner.clone(),
                messages: Vec::new(),
                active: None,
            })
            .active = Some(Arc::clone(&live));
        drop(sessions);
        lock(&self.runs).insert(live.handle.id().clone(), Arc::clone(&live));
        tokio::spawn(Arc::clone(self).pump(Arc::clone(&live), run.events));
        Ok(live)
    }

    /// Moves a run's events into its log. Before the terminal status is logged, the run's
    /// conversation joins its session, so a client that sees the end finds the history updated.
    /// The run goes on whether or not anyone reads its log.
    async fn pump(self: Arc<Self>, live: Arc<LiveRun>, mut events: RunEvents) {
        while let Some(event) = events.recv().await {
            if let EventKind::RunStatus { status, .. } = &event.kind
                && status.is_terminal()
            {
                self.finish_session(&live);
            }
            live.log.append(event);
        }
        live.log.close();
    }

    fn finish_session(&self, live: &Arc<LiveRun>) {
        let Some(session_id) = live.handle.session_id() else {
            return;
        };
        let mut sessions = lock(&self.sessions);
        if let Some(session) = sessions.get_mut(session_id) {
            session.messages.extend(live.handle.messages());
            if session
                .active
                .as_ref()
                .is_some_and(|active| Arc::ptr_eq(active, live))
            {
                session.active = None;
            }
        }
    }

    /// The run, if `owner` may see it.
    pub(crate) fn run(&self, id: &str, owner: &Owner) -> Result<Arc<LiveRun>, ApiError> {
        lock(&self.runs)
            .get(&RunId::from(id))
            .filter(|live| live.owner == *owner)
            .cloned()
            .ok_or_else(|| ApiError::not_found("run", id))
    }

    /// Every run that has not ended.
    pub(crate) fn unfinished_runs(&self) -> Vec<Arc<LiveRun>> {
        lock(&self.runs)
            .values()
            .filter(|live| !live.handle.status().is_terminal())
            .cloned()
            .collect()
    }

    /// A session's messages, if `owner` may see it.
    pub(crate) fn session(&self, id: &str, owner: &Owner) -> Result<Vec<Message>, ApiError> {
        lock(&self.sessions)
            .get(&SessionId::from(id))
            .filter(|session| session.owner == *owner)
            .map(|session| session.messages.clone())
            .ok_or_else(|| ApiError::not_found("session", id))
    }

    /// Deletes a session, if `owner` may see it. A run still going on it goes on; its
    /// conversation is not kept.
    pub(crate) fn delete_session(&self, id: &str, owner: &Owner) -> Result<(), ApiError> {
        let mut sessions = lock(&self.sessions);
        let key = SessionId::from(id);
        match sessions.get(&key) {
            Some(session) if session.owner == *owner => {
                sessions.remove(&key);
                Ok(())
            }
            _ => Err(ApiError::not_found("session", id)),
        }
    }
}
