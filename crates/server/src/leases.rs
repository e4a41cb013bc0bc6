//! This node's lease on its runs, on PostgreSQL (see `agentwire_store`'s leases): a task renews
//! it every third of [`Settings::lease`], and ends the runs of every node whose lease has
//! lapsed, so a dead node's runs end within a lease and a third of its death. A node that has
//! not managed to renew its lease for a whole lease interrupts its own runs (code
//! [`LEASE_LOST`]): the others may have taken it for dead and ended them, and the store would
//! refuse their events anyway. On SQLite the store has no leases and this does nothing.

use std::sync::Arc;
use std::time::{Duration, Instant};

use agentwire_core::ErrorInfo;
use agentwire_store::Store;
use tokio::task::JoinHandle;

use crate::clock;
use crate::runs::Runs;
use crate::settings::Settings;

/// The error code of runs a node ended because it could not hold its lease.
pub const LEASE_LOST: &str = "lease_lost";

/// The running task; it stops when this is stopped or dropped.
#[derive(Debug)]
pub(crate) struct Leases {
    task: JoinHandle<()>,
}

impl Leases {
    /// Starts renewing `node`'s lease and sweeping lapsed ones.
    pub(crate) fn start(store: Store, runs: Arc<Runs>, settings: &Settings) -> Self {
        Self {
            task: tokio::spawn(run(store, runs, settings.lease)),
        }
    }

    /// Stops the task.
    pub(crate) fn stop(&self) {
        self.task.abort();
    }
}

impl Drop for Leases {
    fn drop(&mut self) {
        self.stop();
    }
}

async fn run(store: Store, runs: Arc<Runs>, lease: Duration) {
    if !store.is_postgres() {
        return;
    }
    let mut ticks = tokio::time::interval(lease / 3);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut renewed = Instant::now();
    loop {
        ticks.tick().await;
        match store.renew_lease(runs.node(), clock::after(lease)).await {
            Ok(()) => renewed = Instant::now(),
            Err(error) => {
                tracing::warn!("renewing this node's lease: {error}");
                if renewed.elapsed() >= lease {
                    // Runs waiting in the store wait on, for whichever node holds them next.
                    for live in runs
                        .unfinished()
                        .into_iter()
                        .filter(|live| !live.is_parked())
                    {
                        live.handle.interrupt(ErrorInfo::new(
                            LEASE_LOST,
                            "the server lost its hold on the run (it could not reach the store)",
                        ));
                    }
                }
            }
        }
        match store.sweep_lapsed(clock::now()).await {
            Ok(ended) if !ended.is_empty() => {
                tracing::warn!(runs = ended.len(), "ended the runs of nodes that stopped");
            }
            Ok(_) => {}
            Err(error) => tracing::warn!("ending the runs of nodes that stopped: {error}"),
        }
    }
}
