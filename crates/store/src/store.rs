//! [`Store`]: opens a database by URL, brings its schema up to date, and holds the pool.
//!
//! The two backends are an enum over two sqlx pools rather than sqlx's `Any` driver: `Any`
//! cannot LISTEN (PostgreSQL's notifications need a `PgPool`), and each backend wants its own
//! connection settings (WAL and `BEGIN IMMEDIATE` on SQLite). The SQL itself is shared: `$n`
//! placeholders, `ON CONFLICT` and foreign keys mean the same on both, so each query is written
//! once and [`with_pool!`] runs it on whichever pool is open.

use std::str::FromStr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use sqlx::Connection as _;
use sqlx::migrate::Migrator;
use sqlx::pool::PoolConnection;
use sqlx::postgres::{PgConnectOptions, PgConnection, PgPool, PgPoolOptions};
use sqlx::sqlite::{
    SqliteAutoVacuum, SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions,
    SqliteSynchronous,
};
use sqlx::{ConnectOptions as _, SqliteConnection};
use sqlx::{Postgres, Sqlite};
use tokio::sync::broadcast;

use agentwire_core::Timestamp;

use crate::error::StoreError;
use crate::notice::Notice;
use crate::sqlite_file;

/// The schema, embedded in the binary; the same migrations run on both backends.
static MIGRATOR: Migrator = sqlx::migrate!("./migrations");

/// How long a SQLite writer waits for another before giving up: long enough for a burst of
/// batched appends, short enough that a stuck writer shows up as an error.
const SQLITE_BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// How many notices a local (SQLite) listener may fall behind before it is told it lagged.
const LOCAL_NOTICE_CAPACITY: usize = 4096;

/// The store: sessions, messages, runs and event logs in one database. Cheap to clone (the pool
/// is shared); every method is safe to call from many tasks at once.
#[derive(Clone, Debug)]
pub struct Store {
    pub(crate) backend: Backend,
    /// Notices between the users of one SQLite store (PostgreSQL carries them itself).
    pub(crate) local: broadcast::Sender<Notice>,
    /// A SQLite file's checkpoints, stopped when the last clone of the store is dropped.
    checkpoints: Option<Arc<sqlite_file::Checkpoints>>,
    /// An in-memory database's own connection, never used: the database lives as long as a
    /// connection to it is open, and the pool's one may be closed (sqlx closes a connection
    /// whose query was dropped half way, as when a client leaves a replay).
    _memory: Option<Arc<std::sync::Mutex<SqliteConnection>>>,
    /// SQLite: whose turn it is to write. SQLite takes one writer at a time, and one waiting
    /// for its lock sleeps in the busy handler (up to 100 ms a try) while the event writer,
    /// committing group after group, takes the lock again at once: under load a run's start
    /// waited seconds. Taking turns here, first come first served (Tokio's mutex is fair),
    /// gives every writer its turn after at most the transactions queued before it.
    write_turns: Option<Arc<tokio::sync::Mutex<()>>>,
    /// Told when a group commit queued webhook deliveries ([`Store::deliveries_queued`]).
    pub(crate) deliveries: Arc<tokio::sync::Notify>,
}

/// The open pool.
#[derive(Clone, Debug)]
pub(crate) enum Backend {
    Sqlite(SqlitePool),
    Postgres(PgPool),
}

/// Runs `$body` with `$pool` bound to whichever pool is open, and `$begin` to the statement that
/// opens a write transaction on it (`BEGIN IMMEDIATE` on SQLite, so a transaction that reads
/// before it writes cannot fail to upgrade its lock).
macro_rules! with_pool {
    ($store:expr, |$pool:ident, $begin:ident| $body:expr) => {
        match &$store.backend {
            $crate::store::Backend::Sqlite($pool) => {
                let $begin: &'static str = "BEGIN IMMEDIATE";
                $body
            }
            $crate::store::Backend::Postgres($pool) => {
                let $begin: &'static str = "BEGIN";
                $body
            }
        }
    };
}
pub(crate) use with_pool;

/// A connection taken from the pool (returned to it when dropped).
#[derive(Debug)]
pub(crate) enum Connection {
    Sqlite(PoolConnection<Sqlite>),
    Postgres(PoolConnection<Postgres>),
}

/// As [`with_pool!`], for a [`Connection`]: `$connection` is the `&mut PoolConnection<_>`.
macro_rules! with_connection {
    ($connection:expr, |$conn:ident, $begin:ident| $body:expr) => {
        match $connection {
            $crate::store::Connection::Sqlite($conn) => {
                let $begin: &'static str = "BEGIN IMMEDIATE";
                $body
            }
            $crate::store::Connection::Postgres($conn) => {
                let $begin: &'static str = "BEGIN";
                $body
            }
        }
    };
}
pub(crate) use with_connection;

impl Store {
    /// Opens the database at `url` and migrates it: `sqlite://path/to/file.db` (the file and its
    /// directory are created; `sqlite::memory:` for a database that lives as long as the store)
    /// or `postgres://user:password@host:port/database`.
    pub async fn open(url: &str) -> Result<Store, StoreError> {
        let mut checkpoints = None;
        let mut memory = None;
        let write_turns = url
            .starts_with("sqlite:")
            .then(|| Arc::new(tokio::sync::Mutex::new(())));
        let backend = if let Some(turns) = &write_turns {
            let (pool, keeper) = open_sqlite(url).await?;
            let in_memory = keeper.is_some();
            memory = keeper.map(|connection| Arc::new(std::sync::Mutex::new(connection)));
            MIGRATOR.run(&pool).await?;
            if !in_memory {
                sqlite_file::use_incremental_vacuum(&pool).await?;
                let started = sqlite_file::Checkpoints::start(pool.clone(), Arc::clone(turns));
                checkpoints = Some(Arc::new(started));
            }
            Backend::Sqlite(pool)
        } else if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            let pool = open_postgres(url).await?;
            MIGRATOR.run(&pool).await?;
            Backend::Postgres(pool)
        } else {
            return Err(bad_url(url, "expected sqlite://path or postgres://…"));
        };
        let (local, _) = broadcast::channel(LOCAL_NOTICE_CAPACITY);
        Ok(Store {
            backend,
            local,
            checkpoints,
            _memory: memory,
            write_turns,
            deliveries: Arc::new(tokio::sync::Notify::new()),
        })
    }

    /// A connection of the pool, for a caller that keeps it.
    /// Waits for this writer's turn on SQLite (see `write_turns`); held until the write is
    /// committed. PostgreSQL locks rows, not the database: nothing to wait for.
    pub(crate) async fn write_turn(&self) -> Option<tokio::sync::OwnedMutexGuard<()>> {
        match &self.write_turns {
            Some(turns) => Some(Arc::clone(turns).lock_owned().await),
            None => None,
        }
    }

    pub(crate) async fn connection(&self) -> Result<Connection, StoreError> {
        Ok(match &self.backend {
            Backend::Sqlite(pool) => Connection::Sqlite(pool.acquire().await?),
            Backend::Postgres(pool) => Connection::Postgres(pool.acquire().await?),
        })
    }

    /// Whether the database lives in memory (SQLite's `:memory:`), on its one connection.
    pub(crate) fn in_memory(&self) -> bool {
        self._memory.is_some()
    }

    /// True when the store is on PostgreSQL, where other nodes may share it.
    pub fn is_postgres(&self) -> bool {
        matches!(self.backend, Backend::Postgres(_))
    }

    /// SQLite: copies the write-ahead log back into the database file, and truncates it once
    /// it is past 16 MiB (waiting for readers of older snapshots to move on). A background
    /// task does this every 200 ms; nothing to do on PostgreSQL or in memory.
    pub async fn checkpoint(&self) -> Result<(), StoreError> {
        match (&self.backend, &self.write_turns, &self.checkpoints) {
            (Backend::Sqlite(pool), Some(turns), Some(checkpoints)) => {
                checkpoints.now(pool, turns).await
            }
            _ => Ok(()),
        }
    }

    /// SQLite: gives the pages that deleted or compacted rows freed back to the file system,
    /// a few megabytes per transaction, but a tenth of the file that the next writes would take
    /// again; returns how many pages. PostgreSQL's autovacuum does its own.
    pub async fn reclaim_space(&self) -> Result<u64, StoreError> {
        match (&self.backend, &self.write_turns) {
            (Backend::Sqlite(pool), Some(turns)) => sqlite_file::reclaim(pool, turns).await,
            _ => Ok(0),
        }
    }

    /// Closes every connection, waiting for those in use to be returned.
    pub async fn close(&self) {
        match &self.backend {
            Backend::Sqlite(pool) => pool.close().await,
            Backend::Postgres(pool) => pool.close().await,
        }
    }
}

/// In-memory databases opened by this process, for their names.
static MEMORY_DATABASES: AtomicU64 = AtomicU64::new(0);

/// The pool, and for an in-memory database the connection that keeps it alive.
async fn open_sqlite(url: &str) -> Result<(SqlitePool, Option<SqliteConnection>), StoreError> {
    let in_memory = url.contains(":memory:") || url.contains("mode=memory");
    let options = match in_memory {
        // A named, shared in-memory database: every connection of this store reaches the same
        // one, which lives until the last of them closes.
        true => {
            let n = MEMORY_DATABASES.fetch_add(1, Ordering::Relaxed);
            let name = format!(
                "sqlite:file:agentwire-{}-{n}?mode=memory&cache=shared",
                std::process::id()
            );
            SqliteConnectOptions::from_str(&name)
        }
        false => SqliteConnectOptions::from_str(url),
    }
    .map_err(|error| bad_url(url, &error.to_string()))?;
    let file = options.get_filename().to_path_buf();
    if !in_memory && let Some(dir) = file.parent().filter(|dir| !dir.as_os_str().is_empty()) {
        tokio::fs::create_dir_all(dir).await.map_err(|error| {
            bad_url(
                url,
                &format!("cannot create directory {}: {error}", dir.display()),
            )
        })?;
    }
    // WAL: readers (replaying streams) never block the writer. synchronous=NORMAL in WAL mode
    // keeps every committed transaction when the process dies (kill -9); only an OS crash or
    // power loss can lose the last few, and it saves an fsync per commit.
    let options = options
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        .synchronous(SqliteSynchronous::Normal)
        .foreign_keys(true)
        .busy_timeout(SQLITE_BUSY_TIMEOUT)
        // Checkpoints are `sqlite_file`'s, off the writers' path; it also keeps the file bounded.
        .pragma("wal_autocheckpoint", "0")
        .pragma(
            "journal_size_limit",
            sqlite_file::WAL_KEEP_BYTES.to_string(),
        )
        .auto_vacuum(SqliteAutoVacuum::Incremental)
        .statement_cache_capacity(STATEMENT_CACHE);
    // A shared in-memory database locks whole tables: one connection at a time uses it.
    let max_connections = if in_memory { 1 } else { 8 };
    let keeper = match in_memory {
        true => Some(options.connect().await?),
        false => None,
    };
    let pool = SqlitePoolOptions::new()
        .max_connections(max_connections)
        .connect_with(options)
        .await?;
    Ok((pool, keeper))
}

async fn open_postgres(url: &str) -> Result<PgPool, StoreError> {
    let options = PgConnectOptions::from_str(url)
        .map_err(|error| bad_url(url, &error.to_string()))?
        .statement_cache_capacity(STATEMENT_CACHE);
    // One connection first: the pool retries a refused connection until its acquire timeout,
    // and a wrong URL should fail at once with the server's own reason.
    PgConnection::connect_with(&options).await?.close().await?;
    Ok(PgPoolOptions::new()
        .max_connections(16)
        .acquire_timeout(Duration::from_secs(10))
        .connect_with(options)
        .await?)
}

/// Prepared statements a connection keeps: every size a group's statements are cut into, of
/// each statement, with room for the rest (sqlx keeps 100 by default).
const STATEMENT_CACHE: usize = 256;

/// A [`StoreError::BadUrl`] naming the URL without its password.
fn bad_url(url: &str, reason: &str) -> StoreError {
    StoreError::BadUrl {
        url: without_password(url),
        reason: reason.to_owned(),
    }
}

fn without_password(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    match rest.split_once('@') {
        Some((credentials, host)) if credentials.contains(':') => {
            let user = credentials.split(':').next().unwrap_or_default();
            format!("{scheme}://{user}:***@{host}")
        }
        _ => url.to_owned(),
    }
}

/// Now, in milliseconds since the Unix epoch.
pub(crate) fn now() -> Timestamp {
    let millis = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_millis());
    Timestamp(i64::try_from(millis).unwrap_or(i64::MAX))
}
