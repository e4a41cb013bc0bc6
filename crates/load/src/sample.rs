//! What the soak watches of the server, read from `/proc` and its data directory: resident
//! memory, open files, the SQLite database and its write-ahead log. Each read is a few small
//! files, cheap enough to take every few seconds from the generator's own thread.

use std::path::Path;
use std::time::Duration;

use anyhow::Context;
use serde::Serialize;

use crate::spawn::ServerProcess;

/// The server at one moment of a soak.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Sample {
    /// Seconds since the load started (0: just before).
    pub t_s: f64,
    /// Whether the load was still on at that moment.
    pub loaded: bool,
    /// Resident memory (`VmRSS`), bytes.
    pub rss: u64,
    /// Open file descriptors (entries of `/proc/<pid>/fd`): sockets, the database's files.
    pub open_files: u64,
    /// The SQLite file's size, bytes (0 with another database).
    pub db_bytes: u64,
    /// Its write-ahead log's size, bytes (0 with another database, or none yet).
    pub wal_bytes: u64,
    /// Runs that ended since the last sample, per second.
    pub runs_per_s: f64,
    /// Server CPU time since the last sample over the time between them (1.0: one core busy).
    pub server_busy: f64,
}

/// The name of the SQLite file in a server's data directory (the CLI's default).
const DB_FILE: &str = "agentwire.db";

/// What one read of the server gives; the rates are the sampler's, from two reads.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Reading {
    pub(crate) rss: u64,
    pub(crate) open_files: u64,
    pub(crate) db_bytes: u64,
    pub(crate) wal_bytes: u64,
    pub(crate) cpu: Duration,
}

/// Reads the server's memory, files and CPU time now.
///
/// # Errors
/// When its `/proc` entries cannot be read (it has died).
pub(crate) fn read(server: &ServerProcess) -> anyhow::Result<Reading> {
    let open_files = std::fs::read_dir(format!("/proc/{}/fd", server.pid()))
        .context("cannot list the server's open files")?
        .count() as u64;
    let (db_bytes, wal_bytes) = match server.data_dir() {
        Some(dir) => (
            size(&dir.join(DB_FILE)),
            size(&dir.join(format!("{DB_FILE}-wal"))),
        ),
        None => (0, 0),
    };
    Ok(Reading {
        rss: server.memory()?.rss,
        open_files,
        db_bytes,
        wal_bytes,
        cpu: server.cpu()?,
    })
}

/// A file's size; 0 when it does not exist (a WAL not yet made, another database).
fn size(path: &Path) -> u64 {
    std::fs::metadata(path).map_or(0, |metadata| metadata.len())
}
