//! What every handler shares: the agents, the settings, the keys, the store, and the runs this
//! node hosts ([`Runs`]). The sessions' reads and deletes are here too; everything about
//! executing a run is in `runs`.

use std::sync::Arc;

use agentwire_core::{Message, MessageId, SessionId};
use agentwire_runtime::{Agent, RunLimits, RunSlots, Telemetry};
use agentwire_store::{SessionRecord, Store, StoreError};
use axum::extract::FromRef;

use crate::auth::Keys;
use crate::body::BodyLimits;
use crate::caller::Caller;
use crate::metrics::Metrics;
use crate::runs::{Runs, RunsError, sessions};
use crate::settings::Settings;

/// Everything the handlers share.
#[derive(Debug)]
pub(crate) struct AppState {
    pub(crate) agents: Vec<Agent>,
    default_agent: usize,
    pub(crate) settings: Settings,
    /// Who may call, and the owner ids their keys stand for.
    pub(crate) keys: Keys,
    pub(crate) store: Store,
    pub(crate) runs: Arc<Runs>,
    /// What `/metrics` reports.
    pub(crate) metrics: Arc<Metrics>,
}

/// Where the default agent is among `agents`: the one named `assistant`, or the first.
pub(crate) fn default_agent(agents: &[Agent]) -> usize {
    agents
        .iter()
        .position(|agent| agent.name() == "assistant")
        .unwrap_or(0)
}

impl AppState {
    pub(crate) fn new(
        agents: Vec<Agent>,
        settings: Settings,
        keys: Keys,
        store: Store,
        node: String,
        telemetry: Option<Telemetry>,
    ) -> Self {
        let default_agent = default_agent(&agents);
        let metrics = Arc::new(Metrics::new(agents.iter().map(Agent::name)));
        let limits = RunLimits {
            max_duration: Some(settings.max_run_duration),
            max_tool_output_bytes: Some(settings.max_tool_output_bytes),
            max_state_bytes: Some(settings.max_state_bytes),
        };
        let runs = Runs::new(
            store.clone(),
            agents.clone(),
            node,
            limits,
            settings.heartbeat,
            Arc::clone(&metrics),
            telemetry,
        )
        .with_slots(
            settings
                .max_concurrent_runs
                .map(|max| RunSlots::new(max, settings.max_queued_runs)),
        );
        Self {
            agents,
            default_agent,
            settings,
            keys,
            store,
            runs: Arc::new(runs),
            metrics,
        }
    }

    /// The agent by name, or the default agent.
    pub(crate) fn agent(&self, name: Option<&str>) -> Result<&Agent, RunsError> {
        match name {
            None => self
                .agents
                .get(self.default_agent)
                .ok_or(RunsError::NoAgents),
            Some(name) => self
                .agents
                .iter()
                .find(|agent| agent.name() == name)
                .ok_or_else(|| RunsError::UnknownAgent(name.to_owned())),
        }
    }

    /// Refuses a request carrying more messages than the server takes.
    pub(crate) fn check_message_count(&self, count: usize) -> Result<(), RunsError> {
        let limit = self.settings.max_input_messages;
        match count > limit {
            true => Err(RunsError::TooManyMessages { limit, count }),
            false => Ok(()),
        }
    }

    /// A session's messages, if `caller` may see it.
    pub(crate) async fn session(
        &self,
        id: &str,
        caller: &Caller,
    ) -> Result<Vec<Message>, RunsError> {
        Ok(self.session_record(id, caller).await?.1)
    }

    /// A session's row (its schema state, …) and messages, if `caller` may see it.
    pub(crate) async fn session_record(
        &self,
        id: &str,
        caller: &Caller,
    ) -> Result<(SessionRecord, Vec<Message>), RunsError> {
        let (owner, session_id) = (caller.owner_id(), SessionId::from(id));
        let record = match self.store.session(owner, &session_id).await? {
            Some(session) => session,
            None => return Err(RunsError::no_session(id)),
        };
        match self.store.session_messages(owner, &session_id).await {
            Ok(messages) => Ok((record, messages)),
            Err(StoreError::SessionNotFound(_)) => Err(RunsError::no_session(id)),
            Err(error) => Err(error.into()),
        }
    }

    /// A new session of `caller`'s holding a copy of session `id`'s messages before message
    /// `before` (all of them without), and those messages: the conversation taken up again
    /// from there, the original unchanged. Only what is stored is copied: the output of a run
    /// still going joins its session when it ends.
    pub(crate) async fn fork_session(
        &self,
        id: &str,
        caller: &Caller,
        before: Option<&MessageId>,
    ) -> Result<(SessionId, Vec<Message>), RunsError> {
        let (owner, from) = (caller.owner_id(), SessionId::from(id));
        let fork = sessions::new_id();
        match self.store.fork_session(owner, &from, before, &fork).await {
            Ok(Some(_)) => {}
            Ok(None) => {
                return Err(RunsError::NotFound {
                    what: "message",
                    id: before.map(ToString::to_string).unwrap_or_default(),
                });
            }
            // Deleted since it was looked at.
            Err(StoreError::SessionNotFound(_)) => return Err(RunsError::no_session(id)),
            Err(error) => return Err(error.into()),
        }
        let messages = self.store.session_messages(owner, &fork).await?;
        Ok((fork, messages))
    }

    /// Deletes a session with its runs, if `caller` may see it. A run still going on it goes
    /// on; its conversation is not kept.
    pub(crate) async fn delete_session(&self, id: &str, caller: &Caller) -> Result<(), RunsError> {
        match self
            .store
            .delete_session(caller.owner_id(), &SessionId::from(id))
            .await?
        {
            true => Ok(()),
            false => Err(RunsError::no_session(id)),
        }
    }
}

/// What the [`Caller`] extractor checks keys against.
impl FromRef<Arc<AppState>> for Keys {
    fn from_ref(state: &Arc<AppState>) -> Self {
        state.keys.clone()
    }
}

/// What the [`JsonBody`](crate::body::JsonBody) extractor reads within.
impl FromRef<Arc<AppState>> for BodyLimits {
    fn from_ref(state: &Arc<AppState>) -> Self {
        BodyLimits {
            max_bytes: state.settings.max_body_bytes,
            timeout: state.settings.body_timeout,
        }
    }
}
