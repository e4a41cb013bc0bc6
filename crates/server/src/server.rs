//! [`Server`]: binds the listener (backlog, TCP_NODELAY), serves the API, and shuts down
//! gracefully.
//!
//! Shutdown, decided: on the signal the server stops accepting connections; running runs get
//! [`Settings::shutdown_grace`] to settle. A run that then waits for the client with its
//! checkpoint stored is left waiting in the store: it goes on wherever its answer arrives,
//! after the restart or on another node. Every other run that has not ended is interrupted,
//! which ends it `incomplete` (code `shutdown`, which its clients see as the stream's last
//! event) with everything complete kept: the run did not finish, and nobody canceled it. Once
//! their streams have ended the server exits. Nothing is cut mid-event: a stream ends on its
//! run's terminal status (or its wait), and the server waits for every run's last events to be
//! committed before it closes the store.
//!
//! After a crash (`kill -9`) nothing needs to be shut down: on the next start the node marks its
//! runs that had not ended `incomplete` (code `interrupted`, see [`Store::mark_interrupted`]),
//! which ends their logs, so their streams replay to the end; those waiting with a checkpoint
//! wait on.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;

use agentwire_core::ErrorInfo;
use agentwire_runtime::{Agent, Telemetry};
use agentwire_store::{Store, StoreError};
use axum::Router;
use tokio::net::{TcpListener, TcpSocket};

use crate::auth::Keys;
use crate::clock;
use crate::leases::Leases;
use crate::retention::Retention;
use crate::runs::Sweeping;
use crate::settings::Settings;
use crate::state::AppState;
use crate::telemetry::Exporting;
use crate::webhooks::Deliveries;
use crate::{cors, error, guard, linger, listener, metrics, routes, spans, traceparent};

/// Connections waiting to be accepted; Linux's default of 128 drops bursts of clients.
const LISTEN_BACKLOG: u32 = 4096;

/// The agentwire server: agents and settings, ready to serve.
#[derive(Clone, Debug)]
pub struct Server {
    state: Arc<AppState>,
    /// The store's retention task, stopped with the server.
    retention: Arc<Retention>,
    /// This node's lease on its runs, given up with the server.
    leases: Arc<Leases>,
    /// The task that starts the queued messages of sessions left free (see `runs::inbox`).
    inbox_sweep: Arc<Sweeping>,
    /// The webhook delivery worker, stopped with the server.
    deliveries: Arc<Deliveries>,
    /// The OTLP exporters of `[telemetry]`, flushed and stopped with the server.
    exporting: Option<Arc<Exporting>>,
}

impl Server {
    /// A server for these agents (the default agent is `assistant`, or else the first) on the
    /// store of [`Settings::database_url`]: opens and migrates it (owners stored by earlier
    /// versions as `key-N` pass to the key now at place N, once), marks the runs this node
    /// left unfinished as interrupted, and starts listening for the store's notices and its
    /// retention (see [`Settings::compact_after`]).
    ///
    /// # Errors
    /// When the store cannot be opened or read.
    pub async fn open(agents: Vec<Agent>, settings: Settings) -> Result<Self, StoreError> {
        let exporting = match &settings.telemetry {
            Some(export) => match Exporting::start(export) {
                Ok(exporting) => Some(Arc::new(exporting)),
                Err(error) => {
                    tracing::error!("telemetry is off: the OTLP exporter cannot start: {error}");
                    None
                }
            },
            None => None,
        };
        let telemetry = exporting
            .as_ref()
            .map(|exporting| exporting.telemetry.clone());
        let mut server = Self::open_with_telemetry(agents, settings, telemetry).await?;
        server.exporting = exporting;
        Ok(server)
    }

    /// As [`Server::open`], with the runs' OpenTelemetry spans and metrics going to
    /// `telemetry` (providers of the caller's own, an in-memory exporter in tests) instead of
    /// what [`Settings::telemetry`] says; `None`: nowhere.
    ///
    /// # Errors
    /// As [`Server::open`].
    pub async fn open_with_telemetry(
        agents: Vec<Agent>,
        settings: Settings,
        telemetry: Option<Telemetry>,
    ) -> Result<Self, StoreError> {
        let url = settings
            .database_url
            .as_deref()
            .unwrap_or("sqlite::memory:");
        let store = Store::open(url).await?;
        let node = match &settings.node_id {
            Some(node) => node.clone(),
            // One process per SQLite file: a fixed name finds the runs of the last process.
            None if !store.is_postgres() => "local".to_owned(),
            None => format!("node_{}", uuid::Uuid::now_v7().simple()),
        };
        let keys = Keys::new(&settings.api_keys);
        if !keys.is_empty() {
            let adopted = store.adopt_legacy_owners(&keys.legacy_owners()).await?;
            if adopted > 0 {
                tracing::info!(
                    rows = adopted,
                    "owners of earlier versions moved to key ids"
                );
            }
        }
        // The lease first: from then on no other node takes this one for dead.
        store
            .renew_lease(&node, clock::after(settings.lease))
            .await?;
        let mut interrupted = store.recover_node(&node).await?;
        // Nodes that hold no lease (of an earlier version) are found once, here.
        interrupted.extend(store.sweep_unleased(clock::now()).await?);
        if !interrupted.is_empty() {
            tracing::warn!(
                node,
                runs = interrupted.len(),
                "marked interrupted runs incomplete"
            );
        }
        let state = Arc::new(AppState::new(
            agents, settings, keys, store, node, telemetry,
        ));
        state.runs.follow_notices().await?;
        let retention = Arc::new(Retention::start(state.store.clone(), &state.settings));
        let leases = Arc::new(Leases::start(
            state.store.clone(),
            Arc::clone(&state.runs),
            &state.settings,
        ));
        let inbox_sweep = Arc::new(state.runs.start_sweeping());
        let deliveries = Arc::new(Deliveries::start(
            state.store.clone(),
            &state.settings.webhooks,
        ));
        Ok(Self {
            state,
            retention,
            leases,
            inbox_sweep,
            deliveries,
            exporting: None,
        })
    }

    /// This process's name in the store.
    pub fn node_id(&self) -> &str {
        self.state.runs.node()
    }

    /// The settings it runs with.
    pub fn settings(&self) -> &Settings {
        &self.state.settings
    }

    /// The HTTP routes, for serving elsewhere or testing in process: the API behind its
    /// request checks (sizes; without keys, `Host` and `Origin`), every error in the JSON
    /// shape, with its metrics and request spans, inside the CORS layer when origins are
    /// configured; a body left unread is read and dropped after the answer (`linger`).
    pub fn router(&self) -> Router {
        let state = &self.state;
        let router = routes::router(Arc::clone(state))
            .layer(axum::middleware::from_fn_with_state(
                Arc::clone(state),
                guard::check,
            ))
            .layer(axum::middleware::from_fn(error::json_errors))
            .layer(axum::middleware::from_fn_with_state(
                Arc::clone(&state.metrics),
                metrics::track,
            ))
            .layer(spans::requests());
        // Runs join a request's trace only when they are traced at all.
        let router = match state.runs.telemetry.is_some() {
            true => router.layer(axum::middleware::from_fn(traceparent::join)),
            false => router,
        };
        let router = match cors::layer(&state.settings.cors_origins) {
            Some(cors) => router.layer(cors),
            None => router,
        };
        // Outermost: a body any layer inside leaves unread is still read, so its answer
        // reaches a client that is still sending it.
        router.layer(axum::middleware::from_fn(linger::bodies))
    }

    /// Binds the settings' address with a large backlog.
    ///
    /// # Errors
    /// When the address cannot be bound, or is not a loopback address while the server has no
    /// keys and [`Settings::allow_unauthenticated`] is off: whoever reaches it could run the
    /// agents (and their tools) as the server's user.
    pub async fn bind(&self) -> io::Result<TcpListener> {
        let settings = &self.state.settings;
        let addr = settings.addr;
        if settings.api_keys.is_empty()
            && !addr.ip().is_loopback()
            && !settings.allow_unauthenticated
        {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!(
                    "refusing to serve without api_keys on {addr}, which is not a loopback \
                     address: anyone who reaches it could run the agents. Configure \
                     [server] api_keys, listen on 127.0.0.1, or set \
                     allow_unauthenticated = true (--allow-unauthenticated) if a proxy in \
                     front authenticates"
                ),
            ));
        }
        bind(addr)
    }

    /// Serves on `listener` until `shutdown` completes, then winds down (see the module docs).
    ///
    /// # Errors
    /// When accepting connections fails for good.
    pub async fn serve(
        self,
        listener: TcpListener,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> io::Result<()> {
        let (stop, stopped) = tokio::sync::watch::channel(false);
        let state = Arc::clone(&self.state);
        let wind_down = tokio::spawn(async move {
            shutdown.await;
            let _ = stop.send(true);
            let grace = state.settings.shutdown_grace;
            let running = state.runs.unfinished();
            let settle = futures::future::join_all(running.iter().map(|live| live.log.settled()));
            let _ = tokio::time::timeout(grace, settle).await;
            for live in state.runs.unfinished() {
                // It waits in the store, for whichever node its answer reaches.
                if live.is_parked() {
                    tracing::info!(run = %live.handle.id(), "left waiting in the store");
                    continue;
                }
                tracing::info!(run = %live.handle.id(), "interrupted by shutdown");
                live.handle.interrupt(ErrorInfo::new(
                    SHUTDOWN,
                    "the server shut down before the run finished",
                ));
            }
        });
        let mut stopped = stopped;
        // Routes resolved once; each connection then takes a clone of an `Arc` (serving the
        // `Router` itself re-resolves every route per connection: about 17 KiB and its CPU).
        let router = self.router().with_state(());
        let limits = listener::Limits {
            max_connections: self.state.settings.max_connections,
            header_timeout: self.state.settings.header_timeout,
        };
        let result = listener::serve(listener, router, limits, async move {
            let _ = stopped.wait_for(|stop| *stop).await;
        })
        .await;
        // Runs canceled by the wind-down still commit their last events.
        if result.is_err() {
            wind_down.abort();
        }
        let _ = wind_down.await;
        let all = self.state.runs.all();
        let settle = futures::future::join_all(all.iter().map(|live| live.log.settled()));
        let _ = tokio::time::timeout(self.state.settings.shutdown_grace, settle).await;
        self.retention.stop();
        self.leases.stop();
        self.inbox_sweep.stop();
        self.deliveries.stop();
        // Its runs have ended: nobody needs to wait for the lease to lapse.
        if let Err(error) = self.state.store.release_lease(self.node_id()).await {
            tracing::warn!("giving up this node's lease: {error}");
        }
        self.state.store.close().await;
        if let Some(exporting) = &self.exporting {
            exporting.shutdown().await;
        }
        result
    }
}

/// The error code of runs a shutdown ended before they finished.
pub const SHUTDOWN: &str = "shutdown";

/// Binds `addr` with a listen backlog above the usual 128.
///
/// # Errors
/// When the address cannot be bound.
pub fn bind(addr: SocketAddr) -> io::Result<TcpListener> {
    let socket = if addr.is_ipv4() {
        TcpSocket::new_v4()?
    } else {
        TcpSocket::new_v6()?
    };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(LISTEN_BACKLOG)
}

/// Completes on Ctrl-C (SIGINT) or SIGTERM. The handlers are installed when this is called,
/// not when the future is first polled, so a signal sent as soon as the server says where it
/// listens is not missed (which would kill the process instead of shutting it down).
pub fn shutdown_signal() -> impl Future<Output = ()> + Send + 'static {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{Signal, SignalKind, signal};
        async fn received(signal: std::io::Result<Signal>) {
            match signal {
                Ok(mut signal) => {
                    signal.recv().await;
                }
                Err(_) => std::future::pending().await,
            }
        }
        let interrupt = received(signal(SignalKind::interrupt()));
        let terminate = received(signal(SignalKind::terminate()));
        async move {
            tokio::select! {
                () = interrupt => {}
                () = terminate => {}
            }
        }
    }
    #[cfg(not(unix))]
    async {
        let _ = tokio::signal::ctrl_c().await;
    }
}
