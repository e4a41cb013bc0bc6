//! The task of each live run: it moves the run's events into its in-memory log, which readers
//! follow, and into the store ([`RunCommits`]): deltas are shown at once and stored behind
//! them; a part's completion, a status or an error only once it and everything before it is
//! committed, so a `part_complete` is durable before any client sees it. The run's output joins
//! its session in the commit that stores its terminal status, with the schema state it leaves
//! the session in, so a client that sees the end finds the history (and the state) updated. The run goes on whether or not anyone reads its log; if its
//! events cannot be stored it is given up (canceled) and what was not stored is not shown. When
//! the log is closed the run leaves the registry: from then on the store serves it.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use agentwire_core::{ErrorInfo, Event, EventKind, RunStatus};
use agentwire_runtime::RunEvents;

use crate::metrics::RunMetrics;
use crate::runs::commit::{RunCommits, SessionOutput, Settled};
use crate::runs::{LiveRun, Runs};

impl Runs {
    pub(super) async fn pump(
        self: Arc<Self>,
        live: Arc<LiveRun>,
        mut events: RunEvents,
        mut commits: RunCommits,
        mut metrics: RunMetrics,
    ) {
        let mut batch = Vec::new();
        let mut open = true;
        // The answers the checkpoint being stored has.
        let mut parked_answers = 0;
        while open || !commits.is_idle() {
            tokio::select! {
                received = events.recv_many(&mut batch), if open && !commits.holds() => {
                    if live.let_go.load(Ordering::Relaxed) {
                        break;
                    }
                    if received == 0 {
                        open = false;
                        commits.flush();
                        continue;
                    }
                    let end = batch.iter().position(ends_run);
                    // What comes before the end is shown before the output is stored, so the
                    // last deltas do not wait for that commit.
                    let ending = end.map(|end| batch.split_off(end));
                    if let Some((checkpoint, answered)) = waits(&live, &batch) {
                        commits.park(checkpoint);
                        parked_answers = answered;
                    }
                    self.settle_steers(&live, &batch);
                    let shown = commits.take(std::mem::take(&mut batch));
                    metrics.logged(&shown);
                    let published = live.followed.load(Ordering::Relaxed).then(|| shown.clone());
                    live.log.append_all(shown);
                    if let Some(events) = published {
                        self.publish(&live, &events).await;
                    }
                    if let Some(ending) = ending {
                        self.settle_steers(&live, &ending);
                        warn_if_unsuccessful(&ending[0]);
                        let state = live.handle.state().to_string();
                        let shown = commits.take_end(ending, output(&live), state);
                        metrics.logged(&shown);
                        live.log.append_all(shown);
                    }
                }
                settled = commits.settled() => match settled {
                    Settled::Show(held) => {
                        // The output is stored with the end: the session is free for its next
                        // turn before anyone sees the end.
                        if held.iter().any(ends_run) {
                            self.free_session(&live);
                            self.ended_in_session(&live);
                        }
                        metrics.logged(&held);
                        let was_parked = live.parked.swap(commits.is_parked(), Ordering::Relaxed);
                        // Answers given while the checkpoint was on its way are stored too.
                        if commits.is_parked() && !was_parked {
                            let answered = live.handle.checkpoint().map(|now| now.answered());
                            if answered.is_some_and(|answered| answered != parked_answers) {
                                self.save_checkpoint(&live).await;
                            }
                        }
                        live.log.append_all(held);
                        live.log.stored_through(commits.stored_through());
                        live.handle.stored_through(commits.stored_through());
                    }
                    Settled::Gone(held) => {
                        metrics.logged(&held);
                        live.log.append_all(held);
                        // The store has ended the run (this node was taken for dead) or
                        // deleted it with its session: nothing more of it would be kept.
                        live.handle.interrupt(ErrorInfo::new(
                            RUN_GONE,
                            "the run was ended elsewhere, or its session deleted, while it ran",
                        ));
                    }
                    Settled::Retrying => {}
                    // The host's stop, not the client's cancel: no message of the schema.
                    Settled::GaveUp => live.handle.abort(),
                },
            }
        }
        live.log.close();
        self.forget(&live);
        // A run given up before its end: its session is free again all the same.
        self.free_session(&live);
    }

    fn free_session(&self, live: &Arc<LiveRun>) {
        if let Some(session_id) = live.handle.session_id() {
            let key = (live.owner.clone(), session_id.clone());
            self.sessions.ended(&key, live);
        }
    }
}

impl Runs {
    /// Sends events shown ahead of their commit to the nodes streaming the run (a hint: they
    /// read the log when one is lost).
    async fn publish(&self, live: &LiveRun, events: &[Event]) {
        if events.is_empty() {
            return;
        }
        if let Err(error) = self.store.publish_live(live.handle.id(), events).await {
            tracing::warn!(run = %live.handle.id(), "publishing events: {error}");
        }
    }
}

/// The run's output (its messages after its input) for its session, with the schema state it
/// leaves the session in (`RunHandle::session_state`: after a failure, the state before).
fn output(live: &LiveRun) -> Option<SessionOutput> {
    let session_id = live.handle.session_id()?.clone();
    let output = live
        .handle
        .messages()
        .into_iter()
        .skip(live.input_len)
        .collect();
    let key = (live.owner.clone(), session_id);
    Some((key, output, live.handle.session_state()))
}

/// The checkpoint to store with `batch` if the run waits for the client from its last event
/// on (see `resume`).
fn waits(live: &LiveRun, batch: &[Event]) -> Option<(String, usize)> {
    let last = batch.last()?;
    if !matches!(last.own_status(), Some(RunStatus::Awaiting(_))) {
        return None;
    }
    let checkpoint = live.handle.checkpoint()?;
    let text = serde_json::to_string(&checkpoint)
        .inspect_err(|error| tracing::error!(run = %live.handle.id(), "a checkpoint: {error}"))
        .ok()?;
    Some((text, checkpoint.answered()))
}

/// The error code of a run stopped because the store no longer keeps it.
pub(crate) const RUN_GONE: &str = "run_gone";

/// Whether the event is the run's terminal status (a sub-agent's, nested, is not).
fn ends_run(event: &Event) -> bool {
    event.own_status().is_some_and(RunStatus::is_terminal)
}

/// A run that failed, or ended before its work was done, is worth an operator's look (the
/// pump's span, `run`, names the run and its agent).
fn warn_if_unsuccessful(end: &Event) {
    if let EventKind::RunStatus {
        status: status @ (RunStatus::Failed | RunStatus::Incomplete),
        error,
        ..
    } = &end.kind
        && end.is_own()
    {
        tracing::warn!(
            code = error.as_ref().map_or("", |error| error.code.as_str()),
            "run {}: {}",
            status.name(),
            error.as_ref().map_or("", |error| error.message.as_str()),
        );
    }
}
