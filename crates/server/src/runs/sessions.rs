//! Each session's current run on this node: the one starting or going (a session takes one
//! turn at a time), with where its client's stream last began. One map answers the three
//! questions that used to have a place each: is the session busy, which run does an AI SDK chat
//! continue or resume, which run does an AG-UI thread answer. An entry lives exactly as long
//! as its run: it goes when the run's output has joined the session, so the map holds live
//! work only.
//!
//! Keyed by the caller too, as the store keys sessions by owner: the same id named by another
//! key is another session, so naming it never blocks its owner. Also the shape of the session
//! ids clients choose.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use agentwire_core::{MessageId, SessionId};

use crate::caller::Caller;
use crate::runs::LiveRun;
use crate::runs::error::RunsError;

/// The longest session id.
pub(crate) const MAX_ID_CHARS: usize = 128;

/// Whether `id` has the shape of a session id: 1 to 128 characters, each a letter, a digit or
/// one of `-_.:~`. Session ids are stored, listed, and written back in URLs and headers; the
/// ids the server mints and the UUIDs clients generate have this shape.
pub(crate) fn is_valid(id: &str) -> bool {
    (1..=MAX_ID_CHARS).contains(&id.len())
        && id
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || b"-_.:~".contains(&byte))
}

/// A fresh session id, for a session the server opens (a run without one, a fork).
pub(crate) fn new_id() -> SessionId {
    SessionId::from(format!("ses_{}", uuid::Uuid::now_v7().simple()))
}

/// [`RunsError::InvalidSessionId`] for an id a client may not choose.
pub(crate) fn check_id(id: &str) -> Result<(), RunsError> {
    if is_valid(id) {
        return Ok(());
    }
    let shown: String = id.chars().take(40).collect();
    Err(RunsError::InvalidSessionId(
        shown.escape_debug().to_string(),
    ))
}

/// A session as its caller names it.
pub(crate) type SessionKey = (Caller, SessionId);

/// A session's run going on, and the stream its client last opened of it.
#[derive(Clone, Debug)]
pub(crate) struct Current {
    pub(crate) live: Arc<LiveRun>,
    /// That stream starts after this event (a continuation starts mid-run).
    pub(crate) after: u64,
    /// The assistant message that stream continues (an AI SDK continuation), if it does.
    pub(crate) continues: Option<MessageId>,
}

/// The sessions with a run starting (`None`) or going on this node.
#[derive(Debug, Default)]
pub(crate) struct Sessions(Mutex<HashMap<SessionKey, Option<Current>>>);

impl Sessions {
    fn lock(&self) -> MutexGuard<'_, HashMap<SessionKey, Option<Current>>> {
        // Nothing panics while holding the lock; the map stays consistent.
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Marks the session as starting a run, unless a run of it is starting or going on.
    pub(crate) fn reserve(&self, key: &SessionKey) -> Result<(), RunsError> {
        let mut sessions = self.lock();
        if let Some(current) = sessions.get(key) {
            let going = current
                .as_ref()
                .is_none_or(|current| !current.live.handle.status().is_terminal());
            if going {
                return Err(RunsError::SessionBusy {
                    session: key.1.to_string(),
                    run: current
                        .as_ref()
                        .map(|current| current.live.handle.id().clone()),
                });
            }
        }
        sessions.insert(key.clone(), None);
        Ok(())
    }

    /// The reserved session's run has started (`Some`), or it did not (`None`: the session is
    /// free again).
    pub(crate) fn started(&self, key: SessionKey, live: Option<&Arc<LiveRun>>) {
        let mut sessions = self.lock();
        match live {
            Some(live) => {
                let current = Current {
                    live: Arc::clone(live),
                    after: 0,
                    continues: None,
                };
                sessions.insert(key, Some(current));
            }
            None => {
                sessions.remove(&key);
            }
        }
    }

    /// A run taken over from the store is the session's run going on (unless one is).
    pub(crate) fn adopted(&self, key: SessionKey, live: &Arc<LiveRun>) {
        self.lock().entry(key).or_insert_with(|| {
            Some(Current {
                live: Arc::clone(live),
                after: 0,
                continues: None,
            })
        });
    }

    /// The session's run going on, if it has one.
    pub(crate) fn current(&self, key: &SessionKey) -> Option<Current> {
        self.lock().get(key).cloned().flatten()
    }

    /// The client's stream of the session's run now starts after `after`, continuing the
    /// assistant message `continues`.
    pub(crate) fn streamed(&self, key: &SessionKey, after: u64, continues: Option<MessageId>) {
        if let Some(Some(current)) = self.lock().get_mut(key) {
            current.after = after;
            current.continues = continues;
        }
    }

    /// The session's run `live` has ended: the session is free (unless another run took it).
    pub(crate) fn ended(&self, key: &SessionKey, live: &Arc<LiveRun>) {
        let mut sessions = self.lock();
        let ours = sessions
            .get(key)
            .is_some_and(|current| current.as_ref().is_some_and(|c| Arc::ptr_eq(&c.live, live)));
        if ours {
            sessions.remove(key);
        }
    }

    /// How many sessions have a run starting or going.
    pub(crate) fn len(&self) -> usize {
        self.lock().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_have_a_shape() {
        for id in [
            "ses_0195a3c2e1b47c3d8e9f",
            "3f2a1c9e-7b4d-4e21-9a8b-0c5d6e7f8a9b",
            "chat:2026.11~a",
            "x",
        ] {
            assert!(is_valid(id), "{id}");
        }
        let long = "a".repeat(MAX_ID_CHARS + 1);
        for id in ["", "a b", "a\nb", "a\0b", "ü", "a/b", long.as_str()] {
            assert!(!is_valid(id), "{id:?}");
        }
    }
}
