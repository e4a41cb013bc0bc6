//! Notices between the nodes sharing a store ([`Notice`]): a run has new events, is to be
//! canceled, has input written down or answered, is followed by a client (and the live events
//! its node sends for that), and a session's inbox has a new message. On PostgreSQL they travel
//! by LISTEN/NOTIFY, so a node can stream, answer or cancel a run that another node executes; on
//! SQLite (one process) they go between the clones of one [`Store`].
//!
//! A notice is a hint, never the truth: a listener subscribes first, then replays with
//! [`Store::events_after`], then reads again after each notice for its run. Even the events of a
//! [`Notice::Live`] are stored too, and a follower that misses one reads the log.

use std::pin::Pin;
use std::task::{Context, Poll};

use futures::{Stream, StreamExt};
use serde::{Deserialize, Serialize};
use sqlx::postgres::PgListener;
use tokio::sync::broadcast;

use agentwire_core::{Event, RunId, SessionId};

use crate::error::StoreError;
use crate::store::{Backend, Store};

/// The PostgreSQL channel every notice goes on.
pub(crate) const CHANNEL: &str = "agentwire_notices";

/// Something other nodes should hear about.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "notice", rename_all = "snake_case")]
pub enum Notice {
    /// The run's log holds events up to `seq` (sent by [`Store::append_events`]).
    Events {
        /// The run.
        run_id: RunId,
        /// The last seq appended.
        seq: u64,
    },
    /// Someone asked to cancel the run; the node executing it cancels it.
    Cancel {
        /// The run.
        run_id: RunId,
    },
    /// Input for the run is written down (see [`Store::send_input`]): the node executing the run
    /// gives it to the run.
    Input {
        /// The run.
        run_id: RunId,
        /// The input.
        input_id: String,
    },
    /// The run's node answered the input (see [`Store::answer_input`]).
    Answered {
        /// The input.
        input_id: String,
    },
    /// A node streams the run to a client: the node executing it publishes the run's events
    /// as it shows them ([`Notice::Live`]), so that client need not wait for them to be stored.
    Follow {
        /// The run.
        run_id: RunId,
    },
    /// A message was written down in the session's inbox (see [`Store::post_inbox`]): the node
    /// whose run the session has offers it a steer, and whichever node sees the session free
    /// starts the next queued message.
    Inbox {
        /// The session's owner (`None` without auth): with the id, the session's key.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        owner: Option<String>,
        /// The session.
        session_id: SessionId,
    },
    /// Events of a followed run as its node showed them, consecutive, before they are stored
    /// (sent by [`Store::publish_live`]). A hint like the others: the log stays the truth, and
    /// a follower that missed one reads the log.
    Live {
        /// The run.
        run_id: RunId,
        /// The events, in order.
        events: Vec<Event>,
    },
}

/// The most bytes of JSON one [`Notice::Live`] carries: PostgreSQL's notification payloads
/// stop below 8,000 bytes.
const LIVE_BYTES: usize = 7_000;

/// The notices of a store, as a stream, from the moment [`Store::listen`] returned.
///
/// An `Err(StoreError::Lagged)` item means notices were missed (the listener fell behind):
/// read the logs of the runs being followed again.
pub struct Notices(Pin<Box<dyn Stream<Item = Result<Notice, StoreError>> + Send>>);

impl Stream for Notices {
    type Item = Result<Notice, StoreError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.0.as_mut().poll_next(cx)
    }
}

impl std::fmt::Debug for Notices {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Notices")
    }
}

impl Store {
    /// Starts listening for notices. On PostgreSQL this holds one connection of its own
    /// (reconnected if lost; notices sent while it was down are missed, so a follower should
    /// also read the log again from time to time).
    pub async fn listen(&self) -> Result<Notices, StoreError> {
        match &self.backend {
            Backend::Postgres(pool) => {
                let mut listener = PgListener::connect_with(pool).await?;
                listener.listen(CHANNEL).await?;
                let stream = listener
                    .into_stream()
                    .filter_map(|notification| async move {
                        match notification {
                            // A payload that is not a notice comes from a newer or foreign
                            // sender on the channel: not ours to read.
                            Ok(notification) => {
                                serde_json::from_str(notification.payload()).ok().map(Ok)
                            }
                            Err(error) => Some(Err(StoreError::from(error))),
                        }
                    });
                Ok(Notices(Box::pin(stream)))
            }
            Backend::Sqlite(_) => {
                let receiver = self.local.subscribe();
                let stream = futures::stream::unfold(receiver, |mut receiver| async move {
                    let item = match receiver.recv().await {
                        Ok(notice) => Ok(notice),
                        Err(broadcast::error::RecvError::Lagged(missed)) => {
                            Err(StoreError::Lagged(missed))
                        }
                        Err(broadcast::error::RecvError::Closed) => return None,
                    };
                    Some((item, receiver))
                });
                Ok(Notices(Box::pin(stream)))
            }
        }
    }

    /// Sends a run's `events`, as its node shows them, to the other nodes: as [`Notice::Live`]s
    /// of at most 7,000 bytes each, in order; from an event too large for one notice on, none
    /// is sent (the followers read those from the log). Nothing on SQLite: one process, whose
    /// readers follow the run in memory.
    pub async fn publish_live(&self, run_id: &RunId, events: &[Event]) -> Result<(), StoreError> {
        let Backend::Postgres(pool) = &self.backend else {
            return Ok(());
        };
        // Each event's size once; the events cut into runs that fit, the envelope counted.
        let envelope = serde_json::to_string(&Notice::Live {
            run_id: run_id.clone(),
            events: Vec::new(),
        })?
        .len();
        let mut payloads = Vec::new();
        let (mut start, mut end) = (0, 0);
        let mut bytes = envelope;
        for (at, event) in events.iter().enumerate() {
            let size = serde_json::to_string(event)?.len() + 1;
            if envelope + size > LIVE_BYTES {
                break;
            }
            if bytes + size > LIVE_BYTES {
                payloads.push(&events[start..at]);
                start = at;
                bytes = envelope;
            }
            bytes += size;
            end = at + 1;
        }
        if end > start {
            payloads.push(&events[start..end]);
        }
        let payloads = payloads
            .into_iter()
            .map(|chunk| {
                serde_json::to_string(&Notice::Live {
                    run_id: run_id.clone(),
                    events: chunk.to_vec(),
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        for payload in payloads {
            sqlx::query("SELECT pg_notify($1, $2)")
                .bind(CHANNEL)
                .bind(payload)
                .execute(pool)
                .await?;
        }
        Ok(())
    }

    /// Sends a notice to every listener (on PostgreSQL, every node's).
    pub async fn notify(&self, notice: &Notice) -> Result<(), StoreError> {
        match &self.backend {
            Backend::Postgres(pool) => {
                sqlx::query("SELECT pg_notify($1, $2)")
                    .bind(CHANNEL)
                    .bind(serde_json::to_string(notice)?)
                    .execute(pool)
                    .await?;
            }
            Backend::Sqlite(_) => {
                let _ = self.local.send(notice.clone());
            }
        }
        Ok(())
    }
}
