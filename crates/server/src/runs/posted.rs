//! Following a message posted into a busy session to the run it starts ([`PostedReader`]): a
//! dialect whose client sent a new message (queue, interrupt, rollback) streams that message's
//! answer, which is a run that does not exist yet. The reader waits, quiet but for heartbeats,
//! until the inbox entry names its run, then reads that run from its start (which reports the
//! message `delivered` at step 0); a message that will never run ends the stream with its
//! `not_delivered` outcome.

use std::sync::Arc;
use std::time::Duration;

use agentwire_core::{Event, EventKind, InputOutcome, Outcome, SessionId};
use agentwire_store::InboxState;

use crate::caller::Caller;
use crate::runs::{Reader, Runs, Until};

/// How often the inbox entry is read while the message waits its turn. Its run starts when
/// the session's run ends, so this is the delay its client sees at most after that.
const POLL: Duration = Duration::from_millis(50);

/// Waits for a posted message's run, then reads it (see the module docs).
pub(crate) struct PostedReader {
    runs: Arc<Runs>,
    caller: Caller,
    session_id: SessionId,
    client_message_id: String,
    /// The run's reader, once it has started.
    run: Option<Box<Reader>>,
    /// The stream has ended.
    done: bool,
}

impl PostedReader {
    pub(crate) fn new(
        runs: Arc<Runs>,
        caller: Caller,
        session_id: SessionId,
        client_message_id: String,
    ) -> Self {
        Self {
            runs,
            caller,
            session_id,
            client_message_id,
            run: None,
            done: false,
        }
    }

    pub(crate) async fn next(&mut self, mut visit: impl FnMut(&Event)) -> bool {
        if self.done {
            return false;
        }
        let mut quiet = Duration::ZERO;
        loop {
            if let Some(run) = &mut self.run {
                // Boxed: a reader may hold a reader.
                return Box::pin(run.next(visit)).await;
            }
            let entry = match self
                .runs
                .inbox_entry(&self.caller, &self.session_id, &self.client_message_id)
                .await
            {
                Ok(Some(entry)) => entry,
                // Gone or unreadable: nothing more will come of it.
                Ok(None) | Err(_) => return self.end(&mut visit, "lost"),
            };
            match (entry.state, &entry.run_id) {
                (InboxState::NotDelivered, _) => {
                    let reason = entry.reason.unwrap_or_else(|| "not_delivered".to_owned());
                    return self.end(&mut visit, &reason);
                }
                (InboxState::Queued, _) | (_, None) => {}
                (_, Some(run_id)) => {
                    // A run just claimed may not be registered yet: try again shortly.
                    if let Ok(found) = self.runs.find(run_id.as_str(), &self.caller).await {
                        let reader = self.runs.follow_found(found, 0, Until::Settled);
                        self.run = Some(Box::new(reader));
                        continue;
                    }
                }
            }
            tokio::time::sleep(POLL).await;
            quiet += POLL;
            if quiet >= self.runs.heartbeat {
                visit(&Event::heartbeat(0));
                return true;
            }
        }
    }

    /// Hands over the message's `not_delivered` outcome, the last event of the stream.
    fn end(&mut self, visit: &mut impl FnMut(&Event), reason: &str) -> bool {
        self.done = true;
        visit(&Event::new(
            0,
            EventKind::Input(InputOutcome::new(
                self.client_message_id.clone(),
                Outcome::NotDelivered {
                    reason: reason.to_owned(),
                },
            )),
        ));
        true
    }
}
