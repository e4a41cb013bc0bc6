//! The server's settings, and the configuration file that holds them with the agents.
//!
//! ```toml
//! [server]
//! addr = "127.0.0.1:8080"                             # env AGENTWIRE_ADDR, flag --addr
//! database_url = "sqlite://.agentwire/agentwire.db"   # or postgres://…; env AGENTWIRE_DATABASE_URL
//! node_id = "node-a"                                  # PostgreSQL: this node's stable name
//! api_keys = ["key-1", { name = "web", key_env = "WEB_KEY" }]   # none: no authentication
//! cors_origins = ["https://app.example"]              # or ["*"]; none: same-origin only
//! allowed_hosts = ["agents.internal"]                 # names (not IPs) this server answers to
//! allow_unauthenticated = false                       # no keys on a non-loopback address
//! max_body_bytes = 4194304                            # the largest request body
//! max_connections = 16384                             # open connections; more are refused
//! header_timeout_seconds = 30                         # a request's head, idle keep-alive too
//! body_timeout_seconds = 30                           # a request's whole body
//! max_input_messages = 256                            # the most messages one request carries
//! max_tool_output_bytes = 1048576                     # ceiling over every agent's tool output
//! max_state_bytes = 1048576                           # the largest shared state of a session
//! max_run_seconds = 900                               # ceiling over every run's working time
//! heartbeat_seconds = 15                              # keep-alive after this long quiet
//! max_concurrent_runs = 64                            # runs working at once on this node (default: no limit)
//! max_queued_runs = 256                               # runs waiting for a slot; more are rejected (default: no limit)
//! lease_seconds = 6                                   # PostgreSQL: a node silent this long is dead
//! shutdown_grace_seconds = 10                         # on SIGTERM, runs get this long to finish
//!
//! [store]
//! compact_after = "1h"    # an ended run's log is compacted this long after its last update
//! delete_after = "30d"    # sessions and runs are deleted this long after it (default: never)
//!
//! [webhooks]
//! allow_private = false   # deliver to loopback, private and link-local addresses too
//! timeout = "10s"         # a delivery's request, answer included
//! max_backoff = "10m"     # the longest wait between two tries of a delivery
//! give_up_after = "3d"    # a delivery failing this long after its status change is dropped
//! keep_delivered = "1h"   # done deliveries are deleted this long after
//! max_per_key = 100       # webhooks hearing every run, per key (a run may have 10 of its own)
//!
//! [[agents]]
//! name = "assistant"
//! ```
//!
//! `[webhooks]`: outbound URLs (webhooks, A2A push configs; at most 2048 bytes) are checked
//! when a webhook is created and again at each delivery (the host's addresses as resolved
//! then, so a name re-pointed at an internal address is refused): every address in a block of
//! the IANA special-purpose registries that is not globally reachable (loopback, private,
//! link-local, shared, benchmarking, documentation, reserved, multicast, …) and every IPv6 form
//! carrying an IPv4 address (mapped, compatible, 6to4, Teredo; NAT64 `64:ff9b::/96` is judged
//! by the IPv4 address it embeds) is refused unless `allow_private = true`
//! (`agentwire_tools::address`). A delivery refused at delivery time is given up at once, its
//! reason recorded. `[[agents.remote]]` entries have their own `allow_private` (see the
//! runtime's config).
//!
//! `max_body_bytes` is answered `413 payload_too_large` (at once when `Content-Length` says
//! so). The request head has fixed bounds: a target of 16 KiB (`414 uri_too_long`), 100
//! headers of 64 KiB in all (`431 headers_too_large`), always with the JSON error on a
//! connection's first request; on a kept-alive connection, past the HTTP parser's 320 KiB buffer
//! or its 64 KiB target, the parser's bare 431 or 414, and the connection closes. A refused body
//! is read and dropped after the answer (up to 64 MiB, 30 s, or 2 s without a byte), so a client
//! still sending it reads the answer.
//!
//! `max_tool_output_bytes` and `max_run_seconds` cap what each agent allows itself (its
//! toolbox's output limit, its `max_duration`): the tighter one wins. A run over its working
//! time ends `incomplete` with error code `max_duration`; a tool result over the limit is cut
//! (text) or answered with an `EXECUTION` error the model reads.
//!
//! `max_state_bytes` bounds a session's shared state as compact JSON, and its depth is bounded
//! to 100 levels of arrays and objects (below the JSON parser's 127, so that the state reads
//! back inside every envelope that carries it). Both hold for the *result* of every change —
//! a `PUT`, each operation of a `PATCH` before it takes effect, a run's `RunAgentInput.state`,
//! a model's `update_state` — so no change ever builds a state past them: a client is answered
//! `413 state_too_large` or `422 state_too_deep`, a model a `VALIDATION` error it reads, and
//! nothing is written.
//!
//! `max_concurrent_runs` counts the runs working on this node (per node: each node of a
//! PostgreSQL deployment has its own slots). A run started while every slot is taken is
//! created (its input stored, `run_created`), reports `run_status queued`, and works once a
//! slot frees, in order of arrival; canceled meanwhile it ends `canceled` without working. A
//! run waiting for its client (an approval, a tool's output, the user's answer) holds no slot,
//! and lines up again when answered. Past `max_queued_runs` waiting, a new run ends `rejected`
//! with error code `queue_full` instead of waiting (its stream says so like any run's end; the
//! HTTP answer is still 200, as the run exists). Default: no limit, as before; a server whose
//! models or tools cost per call should set one.
//!
//! An API key is a secret, given in the file (`"…"`, `{ key = "…" }`) or read from the
//! environment (`{ key_env = "NAME" }`), and optionally a `name`. What a key creates is owned by
//! its name, or by a hash of the secret when it has none, never by its place in the list: keys
//! can be added, removed and reordered, and a named key's secret replaced (two secrets may
//! share a name while clients move over), without one key's data passing to another.
//!
//! `[store]` says how long the store keeps things, in durations like `"90s"`, `"10m"`, `"1h"` or
//! `"30d"`: a compacted run replays exactly as before in every dialect, in a fraction of the
//! bytes; a deleted session takes its messages, runs and their events with it.
//!
//! The `[[agents]]` entries are read by the runtime's [`AgentsFile`]; this module reads
//! `[server]` and `[store]` from the same text and leaves the agents to it.

use std::collections::HashSet;
use std::fmt;
use std::net::SocketAddr;
use std::num::NonZeroU64;
use std::time::Duration;

use agentwire_runtime::{AgentsFile, ConfigError};
use serde::Deserialize;

/// The address `agentwire serve` listens on by default.
pub const DEFAULT_ADDR: &str = "127.0.0.1:8080";

/// How the server runs: where it listens, who may call it, and its limits.
#[derive(Clone, Debug)]
pub struct Settings {
    /// Where to listen.
    pub addr: SocketAddr,
    /// The store's database (`sqlite://…` or `postgres://…`); `None` keeps everything in an
    /// in-memory SQLite database that lives as long as the server.
    pub database_url: Option<String>,
    /// How long after its last update an ended run's log is compacted (its deltas folded away;
    /// its replay from any point is unchanged): `[store] compact_after`, 1 hour by default.
    pub compact_after: Duration,
    /// How long after their last update sessions and runs are deleted with everything of
    /// theirs: `[store] delete_after`; `None` (the default) keeps them for ever.
    pub delete_after: Option<Duration>,
    /// This process's name in the store. Its runs carry it; on start it marks the runs it left
    /// unfinished `incomplete`. `None`: `local` on SQLite (one process per file), a fresh name
    /// per process on PostgreSQL.
    pub node_id: Option<String>,
    /// The API keys; empty means no authentication (see [`ApiKey`]).
    pub api_keys: Vec<ApiKey>,
    /// Host names a server without keys answers to, besides IP addresses and `localhost`:
    /// a request naming any other host is refused, so a web page whose name an attacker points
    /// at this machine (DNS rebinding) cannot call it.
    pub allowed_hosts: Vec<String>,
    /// Serve without keys on an address other than loopback. Off: [`Server::bind`] refuses,
    /// since anyone who reaches the address could run the agents.
    ///
    /// [`Server::bind`]: crate::Server::bind
    pub allow_unauthenticated: bool,
    /// The most connections open at once; one more is answered 503 `too_many_connections` and
    /// closed. Kept below the process's open-file limit.
    pub max_connections: usize,
    /// How long a connection may take to send a request's head, counted from when it is ready
    /// for one: a client that trickles its headers, and a keep-alive connection left idle,
    /// are closed after it.
    pub header_timeout: Duration,
    /// How long a request's body may take to arrive; then it is answered 408.
    pub body_timeout: Duration,
    /// The largest request body, in bytes.
    pub max_body_bytes: usize,
    /// The most input messages one request may carry.
    pub max_input_messages: usize,
    /// How long an event stream may stay silent before a heartbeat is sent.
    pub heartbeat: Duration,
    /// On PostgreSQL, how long a node's lease on its runs lasts: it renews it every third of
    /// that, and a node that has not renewed it for this long is taken for dead (its runs are
    /// ended by the others within a third more).
    pub lease: Duration,
    /// On shutdown, how long running runs get to settle before they are ended `incomplete`.
    pub shutdown_grace: Duration,
    /// Browser origins allowed to call the API across origins (`https://app.example`), or
    /// `*` for any; empty: none (same-origin only).
    pub cors_origins: Vec<String>,
    /// The most bytes of JSON one tool result may take, over every agent's own limit.
    pub max_tool_output_bytes: usize,
    /// The most bytes of JSON a session's shared state may take. Default: 1 MiB.
    pub max_state_bytes: usize,
    /// The most working time of a run, over every agent's own `max_duration`.
    pub max_run_duration: Duration,
    /// The most runs working at once on this node; `None` (the default): no limit. See the
    /// module docs.
    pub max_concurrent_runs: Option<usize>,
    /// With `max_concurrent_runs`, the most runs waiting for a slot; one more ends `rejected`
    /// (`queue_full`). `None` (the default): no limit.
    pub max_queued_runs: Option<usize>,
    /// Where runs are exported as OpenTelemetry traces and metrics (`[telemetry]` and the
    /// standard `OTEL_*` variables); `None`, the default: nowhere, at no cost.
    pub telemetry: Option<TelemetrySettings>,
    /// How webhooks are delivered (`[webhooks]`).
    pub webhooks: WebhookSettings,
}

/// How webhook deliveries are made (`[webhooks]`, see the module docs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WebhookSettings {
    /// Deliver to addresses that are not public (loopback, private, link-local, …); off by
    /// default.
    pub allow_private: bool,
    /// How long one try may take, the receiver's answer included: 10 s by default.
    pub timeout: Duration,
    /// The longest wait between two tries (they double from a second, with jitter): 10
    /// minutes by default.
    pub max_backoff: Duration,
    /// A delivery still failing this long after its status change is given up: 3 days by
    /// default.
    pub give_up_after: Duration,
    /// Done (delivered or given up) deliveries are deleted this long after: 1 hour by default.
    pub keep_delivered: Duration,
    /// The most webhooks hearing every run one key may have (per-run ones and A2A push configs
    /// are at most 10 a run): 100 by default.
    pub max_per_key: u32,
}

impl Default for WebhookSettings {
    fn default() -> Self {
        Self {
            allow_private: false,
            timeout: Duration::from_secs(10),
            max_backoff: Duration::from_secs(10 * 60),
            give_up_after: Duration::from_secs(3 * 24 * 60 * 60),
            keep_delivered: Duration::from_secs(60 * 60),
            max_per_key: 100,
        }
    }
}

/// The `[webhooks]` table of `agentwire.toml`. Every key is optional.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WebhooksSection {
    /// Deliver to loopback and private addresses too.
    #[serde(default)]
    pub allow_private: bool,
    /// A try's time limit, e.g. `"10s"`.
    #[serde(default, deserialize_with = "duration")]
    pub timeout: Option<Duration>,
    /// The longest wait between tries, e.g. `"10m"`.
    #[serde(default, deserialize_with = "duration")]
    pub max_backoff: Option<Duration>,
    /// How long a failing delivery is tried, e.g. `"3d"`.
    #[serde(default, deserialize_with = "duration")]
    pub give_up_after: Option<Duration>,
    /// How long done deliveries are kept, e.g. `"1h"`.
    #[serde(default, deserialize_with = "duration")]
    pub keep_delivered: Option<Duration>,
    /// The most webhooks hearing every run, per key.
    pub max_per_key: Option<u32>,
}

impl WebhooksSection {
    /// These keys over `settings`.
    pub fn apply(&self, settings: &mut Settings) {
        let webhooks = &mut settings.webhooks;
        webhooks.allow_private = self.allow_private;
        webhooks.timeout = self.timeout.unwrap_or(webhooks.timeout);
        webhooks.max_backoff = self.max_backoff.unwrap_or(webhooks.max_backoff);
        webhooks.give_up_after = self.give_up_after.unwrap_or(webhooks.give_up_after);
        webhooks.keep_delivered = self.keep_delivered.unwrap_or(webhooks.keep_delivered);
        webhooks.max_per_key = self.max_per_key.unwrap_or(webhooks.max_per_key);
    }
}

/// OTLP export of the runs' GenAI spans and metrics.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TelemetrySettings {
    /// The collector's base URL; traces go to `{endpoint}/v1/traces`, metrics to
    /// `{endpoint}/v1/metrics` (as `OTEL_EXPORTER_OTLP_ENDPOINT` means).
    pub endpoint: String,
    /// How they are posted.
    pub protocol: OtlpProtocol,
    /// The `service.name` of the resource (`OTEL_SERVICE_NAME`, else `agentwire`).
    pub service_name: String,
    /// Whether spans carry message content (prompts, answers, tool arguments and results).
    pub capture_content: bool,
}

/// How OTLP is posted: `http/protobuf` (the default) or `http/json`. gRPC is not offered (it
/// would bring in tonic for what a collector also takes over HTTP).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum OtlpProtocol {
    /// `http/protobuf`.
    #[default]
    HttpProtobuf,
    /// `http/json`.
    HttpJson,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            addr: SocketAddr::from(([127, 0, 0, 1], 8080)),
            database_url: None,
            compact_after: Duration::from_secs(60 * 60),
            delete_after: None,
            node_id: None,
            api_keys: Vec::new(),
            allowed_hosts: Vec::new(),
            allow_unauthenticated: false,
            max_connections: 16 * 1024,
            header_timeout: Duration::from_secs(30),
            body_timeout: Duration::from_secs(30),
            max_body_bytes: 4 * 1024 * 1024,
            max_input_messages: 256,
            heartbeat: Duration::from_secs(15),
            lease: Duration::from_secs(6),
            shutdown_grace: Duration::from_secs(10),
            cors_origins: Vec::new(),
            max_concurrent_runs: None,
            max_queued_runs: None,
            // Above the toolboxes' own default (128 KiB): a ceiling for agents that raise theirs.
            max_tool_output_bytes: 1024 * 1024,
            max_state_bytes: agentwire_core::json_bounds::DEFAULT_MAX_BYTES,
            // Working time: model calls and tools, not time waiting for the client.
            max_run_duration: Duration::from_secs(15 * 60),
            telemetry: None,
            webhooks: WebhookSettings::default(),
        }
    }
}

/// The `[server]` table of `agentwire.toml`. Every key is optional.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerSection {
    /// Where to listen, e.g. `0.0.0.0:8080`.
    pub addr: Option<SocketAddr>,
    /// The store's database URL.
    pub database_url: Option<String>,
    /// This node's stable name in a shared store (see [`Settings::node_id`]).
    pub node_id: Option<String>,
    /// The keys that may call the API.
    #[serde(default)]
    pub api_keys: Vec<KeyEntry>,
    /// Host names answered without keys, besides IP addresses and `localhost`.
    #[serde(default)]
    pub allowed_hosts: Vec<String>,
    /// Serve without keys on a non-loopback address.
    #[serde(default)]
    pub allow_unauthenticated: bool,
    /// The most connections open at once.
    pub max_connections: Option<NonZeroU64>,
    /// Seconds a connection may take to send a request's head (idle keep-alive included).
    pub header_timeout_seconds: Option<NonZeroU64>,
    /// Seconds a request's body may take to arrive.
    pub body_timeout_seconds: Option<NonZeroU64>,
    /// The largest request body, in bytes.
    pub max_body_bytes: Option<usize>,
    /// The most input messages one request may carry.
    pub max_input_messages: Option<usize>,
    /// Origins allowed to call across origins, or `["*"]`.
    #[serde(default, deserialize_with = "origins")]
    pub cors_origins: Vec<String>,
    /// The most bytes of JSON one tool result may take, over every agent's limit.
    pub max_tool_output_bytes: Option<usize>,
    /// The most bytes of JSON a session's shared state may take.
    pub max_state_bytes: Option<usize>,
    /// The most working time of a run, in seconds, over every agent's `max_duration`.
    pub max_run_seconds: Option<NonZeroU64>,
    /// The most runs working at once on this node.
    pub max_concurrent_runs: Option<NonZeroU64>,
    /// The most runs waiting for a slot (0: none wait, a run finding every slot taken is
    /// rejected).
    pub max_queued_runs: Option<u64>,
    /// How long, in seconds, a stream may stay quiet (a long tool call, a slow model) before it
    /// gets a keep-alive in its dialect's form, so proxies and clients do not time it out.
    pub heartbeat_seconds: Option<NonZeroU64>,
    /// PostgreSQL: how long, in seconds, a node's lease on its runs lasts (see
    /// [`Settings::lease`]).
    pub lease_seconds: Option<NonZeroU64>,
    /// On shutdown (SIGTERM), how long, in seconds, running runs get to finish before they
    /// are ended `incomplete` (code `shutdown`).
    pub shutdown_grace_seconds: Option<u64>,
}

/// Reads `cors_origins`: `["*"]` alone, or origins as browsers send them (`scheme://host`,
/// with a port if not the scheme's default, no path or trailing slash; a slip there would
/// silently match nothing).
fn origins<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Vec<String>, D::Error> {
    let origins = Vec::<String>::deserialize(deserializer)?;
    if origins.iter().any(|origin| origin == "*") && origins.len() > 1 {
        return Err(serde::de::Error::custom(
            "cors_origins: \"*\" allows every origin and must stand alone",
        ));
    }
    for origin in origins.iter().filter(|origin| *origin != "*") {
        let host = origin
            .strip_prefix("https://")
            .or_else(|| origin.strip_prefix("http://"));
        let valid = host.is_some_and(|host| {
            !host.is_empty()
                && host
                    .bytes()
                    .all(|byte| byte.is_ascii_alphanumeric() || b".-:[]".contains(&byte))
        });
        if !valid {
            return Err(serde::de::Error::custom(format!(
                "cors_origins: '{origin}' is not an origin like \"https://app.example\" \
                 (scheme and host, a port if needed, no path)"
            )));
        }
    }
    Ok(origins)
}

impl ServerSection {
    /// These settings over the defaults; `env` reads the variables that `key_env` names.
    ///
    /// # Errors
    /// A key that is empty, missing from the environment, given twice, or named badly.
    pub fn settings(
        &self,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Settings, SettingsError> {
        let defaults = Settings::default();
        let seconds = |value: Option<NonZeroU64>, default| {
            value.map_or(default, |seconds| Duration::from_secs(seconds.get()))
        };
        Ok(Settings {
            addr: self.addr.unwrap_or(defaults.addr),
            database_url: self.database_url.clone(),
            node_id: self.node_id.clone(),
            api_keys: ApiKey::from_entries(&self.api_keys, env)?,
            allowed_hosts: self.allowed_hosts.clone(),
            allow_unauthenticated: self.allow_unauthenticated,
            max_connections: self
                .max_connections
                .map_or(defaults.max_connections, |max| {
                    usize::try_from(max.get()).unwrap_or(usize::MAX)
                }),
            header_timeout: seconds(self.header_timeout_seconds, defaults.header_timeout),
            body_timeout: seconds(self.body_timeout_seconds, defaults.body_timeout),
            max_body_bytes: self.max_body_bytes.unwrap_or(defaults.max_body_bytes),
            max_input_messages: self
                .max_input_messages
                .unwrap_or(defaults.max_input_messages),
            cors_origins: self.cors_origins.clone(),
            max_tool_output_bytes: self
                .max_tool_output_bytes
                .unwrap_or(defaults.max_tool_output_bytes),
            max_state_bytes: self.max_state_bytes.unwrap_or(defaults.max_state_bytes),
            max_run_duration: seconds(self.max_run_seconds, defaults.max_run_duration),
            max_concurrent_runs: self
                .max_concurrent_runs
                .map(|max| usize::try_from(max.get()).unwrap_or(usize::MAX)),
            max_queued_runs: self
                .max_queued_runs
                .map(|max| usize::try_from(max).unwrap_or(usize::MAX)),
            heartbeat: seconds(self.heartbeat_seconds, defaults.heartbeat),
            lease: seconds(self.lease_seconds, defaults.lease),
            shutdown_grace: self
                .shutdown_grace_seconds
                .map_or(defaults.shutdown_grace, Duration::from_secs),
            ..defaults
        })
    }
}

/// The `[store]` table of `agentwire.toml`: how long the store keeps what it keeps. Every key
/// is optional.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StoreSection {
    /// How long after its last update an ended run's log is compacted, e.g. `"10m"`.
    #[serde(default, deserialize_with = "duration")]
    pub compact_after: Option<Duration>,
    /// How long after their last update sessions and runs are deleted, e.g. `"30d"`.
    #[serde(default, deserialize_with = "duration")]
    pub delete_after: Option<Duration>,
}

impl StoreSection {
    /// These keys over `settings`.
    pub fn apply(&self, settings: &mut Settings) {
        if let Some(compact_after) = self.compact_after {
            settings.compact_after = compact_after;
        }
        if self.delete_after.is_some() {
            settings.delete_after = self.delete_after;
        }
    }
}

/// Reads a duration as people write it: `"90s"`, `"10m"`, `"1h 30m"`, `"30d"`.
fn duration<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Duration>, D::Error> {
    let text = String::deserialize(deserializer)?;
    humantime::parse_duration(&text).map(Some).map_err(|error| {
        serde::de::Error::custom(format!(
            "'{text}' is not a duration like \"10m\", \"1h\" or \"30d\": {error}"
        ))
    })
}

/// What is wrong with the `[server]` table beyond its syntax.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SettingsError {
    /// An API key entry is empty, unnamed where a name is needed, or reads a missing variable.
    #[error("api_keys[{index}]: {message}")]
    Key {
        /// The entry's place in `api_keys`.
        index: usize,
        /// What is wrong with it.
        message: String,
    },
    /// `[telemetry]` or an `OTEL_*` variable asks for what cannot be done.
    #[error("telemetry: {message}")]
    Telemetry {
        /// What is wrong.
        message: String,
    },
}

/// The `[telemetry]` table of `agentwire.toml`: OpenTelemetry export of the runs' GenAI spans
/// and metrics over OTLP. Off unless `enabled = true`, `otlp_endpoint` or the standard
/// `OTEL_EXPORTER_OTLP_ENDPOINT` is set; `enabled = false` keeps it off whatever the
/// environment says.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TelemetrySection {
    /// Export or not; unset: export when an endpoint is known.
    pub enabled: Option<bool>,
    /// The collector's base URL (`otlp_endpoint`, e.g. `"http://localhost:4318"`; `endpoint`
    /// is read as an alias); over `OTEL_EXPORTER_OTLP_ENDPOINT`, which is read when this is
    /// unset.
    #[serde(alias = "endpoint")]
    pub otlp_endpoint: Option<String>,
    /// `"http/protobuf"` or `"http/json"`; unset: `OTEL_EXPORTER_OTLP_PROTOCOL`, else
    /// `http/protobuf`.
    pub protocol: Option<String>,
    /// Record message content in spans (the conventions' opt-in attributes); off by default.
    #[serde(default)]
    pub capture_content: bool,
}

impl TelemetrySection {
    /// The export these keys and the `OTEL_*` variables (read through `env`) ask for; `None`
    /// when off.
    ///
    /// # Errors
    /// [`SettingsError::Telemetry`] for a protocol other than HTTP's two.
    pub fn settings(
        &self,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Option<TelemetrySettings>, SettingsError> {
        let set = |value: Option<String>| value.filter(|value| !value.trim().is_empty());
        let endpoint =
            set(self.otlp_endpoint.clone()).or_else(|| set(env("OTEL_EXPORTER_OTLP_ENDPOINT")));
        if !self.enabled.unwrap_or(endpoint.is_some()) {
            return Ok(None);
        }
        let protocol = match set(self.protocol.clone())
            .or_else(|| set(env("OTEL_EXPORTER_OTLP_PROTOCOL")))
            .as_deref()
        {
            None | Some("http/protobuf") => OtlpProtocol::HttpProtobuf,
            Some("http/json") => OtlpProtocol::HttpJson,
            Some(other) => {
                return Err(SettingsError::Telemetry {
                    message: format!(
                        "protocol '{other}' is not offered: use http/protobuf or http/json"
                    ),
                });
            }
        };
        Ok(Some(TelemetrySettings {
            endpoint: endpoint
                .unwrap_or_else(|| "http://localhost:4318".to_owned())
                .trim_end_matches('/')
                .to_owned(),
            protocol,
            service_name: set(env("OTEL_SERVICE_NAME")).unwrap_or_else(|| "agentwire".to_owned()),
            capture_content: self.capture_content,
        }))
    }
}

/// An entry of `api_keys` as written: the secret itself, or a table naming it.
#[derive(Clone, Debug, Deserialize)]
#[serde(untagged)]
pub enum KeyEntry {
    /// The secret (its data is owned by a hash of it).
    Secret(String),
    /// `{ name?, key | key_env }`.
    Named(NamedKey),
}

/// `{ name = "web", key_env = "WEB_KEY" }` or `{ name = "web", key = "…" }`.
#[derive(Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NamedKey {
    /// The name its data is owned by: letters, digits, `-`, `_` and `.`, at most 64.
    pub name: Option<String>,
    /// The secret, in the file.
    pub key: Option<String>,
    /// The environment variable holding the secret.
    pub key_env: Option<String>,
}

impl fmt::Debug for NamedKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NamedKey")
            .field("name", &self.name)
            .field("key", &self.key.as_ref().map(|_| "…"))
            .field("key_env", &self.key_env)
            .finish()
    }
}

/// One API key: the secret a client presents, and the name what it creates is owned by
/// (`None`: a hash of the secret).
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey {
    /// What follows `Bearer ` in a request's `Authorization` header.
    pub secret: String,
    /// The owner's name, kept when the secret changes.
    pub name: Option<String>,
}

impl ApiKey {
    /// A key owned by `name`.
    pub fn named(name: &str, secret: &str) -> Self {
        Self {
            secret: secret.to_owned(),
            name: Some(name.to_owned()),
        }
    }

    fn from_entries(
        entries: &[KeyEntry],
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Vec<Self>, SettingsError> {
        let mut secrets = HashSet::new();
        let mut keys = Vec::with_capacity(entries.len());
        for (index, entry) in entries.iter().enumerate() {
            let invalid = |message: String| SettingsError::Key { index, message };
            let key = match entry {
                KeyEntry::Secret(secret) => Self::from(secret.as_str()),
                KeyEntry::Named(NamedKey { name, key, key_env }) => {
                    let secret = match (key, key_env) {
                        (Some(key), None) => key.clone(),
                        (None, Some(var)) => env(var).ok_or_else(|| {
                            invalid(format!("the environment variable {var} is not set"))
                        })?,
                        _ => return Err(invalid("give one of `key` and `key_env`".into())),
                    };
                    Self {
                        secret,
                        name: name.clone(),
                    }
                }
            };
            if key.secret.trim().is_empty() || key.secret.chars().any(char::is_whitespace) {
                return Err(invalid("a key is a non-empty token without spaces".into()));
            }
            if let Some(name) = &key.name {
                let fine = (1..=64).contains(&name.len())
                    && name
                        .bytes()
                        .all(|byte| byte.is_ascii_alphanumeric() || b"-_.".contains(&byte));
                if !fine {
                    return Err(invalid(format!(
                        "name '{name}': up to 64 letters, digits, '-', '_' and '.'"
                    )));
                }
            }
            if !secrets.insert(key.secret.clone()) {
                return Err(invalid("the same key is listed twice".into()));
            }
            keys.push(key);
        }
        Ok(keys)
    }
}

impl From<&str> for ApiKey {
    /// An unnamed key: its data is owned by a hash of the secret.
    fn from(secret: &str) -> Self {
        Self {
            secret: secret.to_owned(),
            name: None,
        }
    }
}

impl From<String> for ApiKey {
    fn from(secret: String) -> Self {
        Self { secret, name: None }
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ApiKey")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// A whole configuration file: `[server]`, `[store]` and the agents.
#[derive(Clone, Debug, Default)]
pub struct ConfigFile {
    /// The `[server]` table.
    pub server: ServerSection,
    /// The `[store]` table.
    pub store: StoreSection,
    /// The `[telemetry]` table.
    pub telemetry: TelemetrySection,
    /// The `[webhooks]` table.
    pub webhooks: WebhooksSection,
    /// The `[[agents]]` entries.
    pub agents: AgentsFile,
}

/// The server's tables; the rest is the runtime's.
#[derive(Deserialize)]
struct ServerTables {
    #[serde(default)]
    server: ServerSection,
    #[serde(default)]
    store: StoreSection,
    #[serde(default)]
    telemetry: TelemetrySection,
    #[serde(default)]
    webhooks: WebhooksSection,
}

impl ConfigFile {
    /// Parses a configuration file.
    ///
    /// # Errors
    /// [`ConfigError::Toml`] with the line and column of what does not parse, or what the
    /// runtime finds wrong with the agents.
    pub fn from_toml(text: &str) -> Result<Self, ConfigError> {
        let ServerTables {
            server,
            store,
            telemetry,
            webhooks,
        } = toml::from_str(text).map_err(|error| ConfigError::Toml(error.to_string()))?;
        Ok(Self {
            server,
            store,
            telemetry,
            webhooks,
            agents: AgentsFile::from_toml(text)?,
        })
    }

    /// The settings of `[server]` and `[store]` over the defaults; `env` reads the variables
    /// that `key_env` names.
    ///
    /// # Errors
    /// As [`ServerSection::settings`].
    pub fn settings(
        &self,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Settings, SettingsError> {
        let mut settings = self.server.settings(&env)?;
        self.store.apply(&mut settings);
        self.webhooks.apply(&mut settings);
        settings.telemetry = self.telemetry.settings(&env)?;
        Ok(settings)
    }
}
