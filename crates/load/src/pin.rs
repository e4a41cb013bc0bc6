//! Which core each process of the closed-loop modes runs on. The server under test (agentwire,
//! or the bare floor) gets one core to itself and the generator the other, so the two servers
//! are compared on equal terms and neither competes with the client that measures it.
//!
//! A process is pinned by inheritance: the generator's thread moves to the server's core,
//! starts the child (a child keeps its parent thread's affinity across `fork` and `exec`, and
//! every thread it starts keeps its own), and moves back. Every thread of the child, its
//! runtime's workers and SQLite's included, is therefore on that core from its first
//! instruction; a tokio runtime sizes itself to the one core it is allowed. The child's
//! `/proc/<pid>/status` is read back to check it.

use std::process::{Child, Command};

use anyhow::Context;
use core_affinity::CoreId;

/// The generator's core and the server's.
#[derive(Clone, Copy, Debug)]
pub struct Cores {
    /// Where the server under test runs.
    pub server: usize,
    /// Where the generator runs.
    pub load: usize,
}

impl Default for Cores {
    fn default() -> Self {
        Self { server: 0, load: 1 }
    }
}

impl Cores {
    /// Pins the calling thread (the generator's) to its core.
    ///
    /// # Errors
    /// When the cores are the same, or the load core is not one this machine has.
    pub(crate) fn pin_generator(self) -> anyhow::Result<()> {
        anyhow::ensure!(
            self.server != self.load,
            "the server and the generator need a core each (both are {})",
            self.server
        );
        set(self.load)
    }

    /// Starts `command` on the server's core and checks that it runs there.
    ///
    /// # Errors
    /// When the affinity cannot be set, the process not started, or it is not on its core.
    pub(crate) fn spawn_server(self, command: &mut Command) -> anyhow::Result<Child> {
        set(self.server)?;
        let spawned = command.spawn();
        set(self.load)?;
        let mut child = spawned.context("cannot start the server")?;
        let allowed = allowed_list(child.id());
        if allowed.as_deref().ok() != Some(&self.server.to_string()) {
            let _ = child.kill();
            let _ = child.wait();
            anyhow::bail!(
                "the server is not on core {} alone (Cpus_allowed_list: {allowed:?})",
                self.server
            );
        }
        Ok(child)
    }
}

/// Pins the calling thread to `core`.
fn set(core: usize) -> anyhow::Result<()> {
    anyhow::ensure!(
        core_affinity::set_for_current(CoreId { id: core }),
        "cannot pin a thread to core {core}"
    );
    Ok(())
}

/// The cores a process may run on, as `/proc/<pid>/status` lists them (`0`, `0-1`, …).
fn allowed_list(pid: u32) -> anyhow::Result<String> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    status
        .lines()
        .find_map(|line| line.strip_prefix("Cpus_allowed_list:"))
        .map(|list| list.trim().to_owned())
        .context("no Cpus_allowed_list in /proc status")
}
