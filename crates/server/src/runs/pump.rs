//! The task of each live run: it moves the run's events into its in-memory log, which readers
//! follow, and into the store ([`RunCommits`]): deltas are shown at once and stored behind
//! them; a part's completion, a status or an error only once it and everything before it is
//! committed, so a `part_complete` is durable before any client sees it. Before the terminal
//! status is stored, the run's output joins its session, so a client that sees the end finds
//! the history updated. The run goes on whether or not anyone reads its log; if its events
//! cannot be stored it is given up (canceled) and what was not stored is not shown. When the
//! log is closed the run leaves the registry: from then on the store serves it.

use std::sync::Arc;

use agentwire_core::{EventKind, Message};
use agentwire_runtime::RunEvents;

use crate::metrics::RunMetrics;
use crate::runs::commit::{RunCommits, Settled};
use crate::runs::{LiveRun, Runs, lock};

impl Runs {
    pub(super) async fn pump(
        self: Arc<Self>,
        live: Arc<LiveRun>,
        mut events: RunEvents,
        mut metrics: RunMetrics,
    ) {
        let mut commits = RunCommits::new(self.committer.clone(), live.handle.id().clone());
        let mut batch = Vec::new();
        let mut open = true;
        while open || !commits.is_idle() {
            tokio::select! {
                received = events.recv_many(&mut batch), if open && !commits.holds() => {
                    if received == 0 {
                        open = false;
                        commits.flush();
                        continue;
                    }
                    let end = batch.iter().position(|event| {
                        matches!(&event.kind, EventKind::RunStatus { status, .. } if status.is_terminal())
                    });
                    // What comes before the end is shown before the output joins the session,
                    // so the last deltas do not wait for that commit.
                    let ending = end.map(|end| batch.split_off(end));
                    let shown = commits.take(std::mem::take(&mut batch));
                    metrics.logged(&shown);
                    live.log.append_all(shown);
                    if let Some(ending) = ending {
                        // Boxed: the store's future would otherwise size the pump's task
                        // for the whole run.
                        Box::pin(self.finish_session(&live)).await;
                        let shown = commits.take(ending);
                        metrics.logged(&shown);
                        live.log.append_all(shown);
                    }
                }
                settled = commits.settled() => match settled {
                    Settled::Show(held) => {
                        metrics.logged(&held);
                        live.log.append_all(held);
                        live.log.stored_through(commits.stored_through());
                    }
                    Settled::Retrying => {}
                    Settled::GaveUp => live.handle.cancel(),
                },
            }
        }
        live.log.close();
        lock(&self.live).remove(live.handle.id());
        // A run given up before its end: its session is free again all the same.
        self.free_session(&live);
    }

    /// The run's output joins its session, and the session is free for its next turn.
    async fn finish_session(&self, live: &Arc<LiveRun>) {
        let Some(session_id) = live.handle.session_id() else {
            return;
        };
        let output: Vec<Message> = live
            .handle
            .messages()
            .into_iter()
            .skip(live.input_len)
            .collect();
        // A session deleted while its run went on does not keep the run's conversation.
        if let Err(error) = self.committer.append_messages(session_id, output).await {
            tracing::error!(run = %live.handle.id(), "storing the output: {error}");
        }
        self.free_session(live);
    }

    fn free_session(&self, live: &Arc<LiveRun>) {
        if let Some(session_id) = live.handle.session_id() {
            let key = (live.owner.clone(), session_id.clone());
            self.sessions.ended(&key, live);
        }
    }
}
