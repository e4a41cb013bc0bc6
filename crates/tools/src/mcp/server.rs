//! A connection to one MCP server: start it, shake hands, list its tools, end it.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use agentwire_core::ToolSpec;
use process_wrap::tokio::{CommandWrap, KillOnDrop, ProcessGroup};
use reqwest::header::{HeaderName, HeaderValue};
use rmcp::model::{ClientCapabilities, ClientConfig, Implementation, PaginatedRequestParams};
use rmcp::service::{ClientInitializeError, RunningService};
use rmcp::transport::streamable_http_client::{
    StreamableHttpClientTransportConfig, StreamableHttpError,
};
use rmcp::transport::{IntoTransport, StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{Peer, RoleClient, ServiceExt};
use serde_json::Value;
use tokio::io::AsyncReadExt;
use tokio::task::JoinHandle;

use super::tool::{McpTool, model_name};
use super::{McpError, McpServerConfig, McpTransport};
use crate::Tool;

/// How much of a stdio server's stderr is kept for error messages.
const STDERR_TAIL: usize = 2048;

/// How long a failed start waits for the server's last stderr words.
const STDERR_SETTLE: Duration = Duration::from_secs(1);

/// A connected MCP server and its tools.
///
/// Its tools share the connection with it: the server stays up while this value or any of its
/// tools is alive, and is ended (a stdio server killed with every process it started) when the
/// last of them is dropped, or at once by [`McpServer::shutdown`].
pub struct McpServer {
    connection: Arc<Connection>,
    tools: Vec<Arc<dyn Tool>>,
    process_id: Option<u32>,
}

/// What a server's tools share: the server's name, the peer to send requests through, and the
/// running rmcp service whose drop ends the connection.
pub(super) struct Connection {
    server: String,
    peer: Peer<RoleClient>,
    service: tokio::sync::Mutex<Option<Service>>,
}

type Service = RunningService<RoleClient, ClientConfig>;

impl Connection {
    pub(super) fn server(&self) -> &str {
        &self.server
    }

    pub(super) fn peer(&self) -> &Peer<RoleClient> {
        &self.peer
    }
}

impl McpServer {
    /// Starts (stdio) or reaches (HTTP) the server, runs the `initialize` handshake and lists
    /// every page of its tools, all within the config's startup timeout.
    pub async fn connect(config: McpServerConfig) -> Result<Self, McpError> {
        config.validate()?;
        let McpServerConfig {
            name,
            transport,
            startup_timeout,
        } = config;
        let (service, listed, process_id) = match transport {
            McpTransport::Stdio { command, env, cwd } => {
                start_stdio(&name, &command, &env, cwd.as_deref(), startup_timeout).await?
            }
            McpTransport::Http { url, headers } => {
                let headers = header_map(&name, &headers)?;
                let transport = StreamableHttpClientTransport::from_config(
                    StreamableHttpClientTransportConfig::with_uri(url.as_str())
                        .custom_headers(headers),
                );
                let (service, listed) = start(&name, &url, transport, startup_timeout).await?;
                (service, listed, None)
            }
        };
        let connection = Arc::new(Connection {
            server: name,
            peer: service.peer().clone(),
            service: tokio::sync::Mutex::new(Some(service)),
        });
        Ok(Self {
            tools: tools_of(&connection, listed)?,
            connection,
            process_id,
        })
    }

    /// The server's name from its config (the prefix of its tools' names).
    pub fn name(&self) -> &str {
        &self.connection.server
    }

    /// The process id of a stdio server (the leader of its process group); `None` over HTTP.
    pub fn process_id(&self) -> Option<u32> {
        self.process_id
    }

    /// Its tools, in the order the server listed them.
    pub fn tools(&self) -> Vec<Arc<dyn Tool>> {
        self.tools.clone()
    }

    /// Ends the connection now, for this value and every tool of it: a stdio server has its
    /// stdin closed and is then sent `SIGTERM`, then killed, if it does not exit within a few
    /// seconds; an HTTP session is deleted. Calls made afterwards fail. Doing it twice is
    /// harmless.
    pub async fn shutdown(&self) {
        let service = self.connection.service.lock().await.take();
        if let Some(mut service) = service {
            // The join error of a task that panicked tells the caller nothing it can act on:
            // the connection is over either way.
            let _ = service.close().await;
        }
    }
}

impl std::fmt::Debug for McpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServer")
            .field("name", &self.connection.server)
            .field("tools", &self.tools.len())
            .finish_non_exhaustive()
    }
}

/// Starts a stdio server in a process group of its own (so that ending it ends what it
/// started too), collects its stderr, and runs [`start`].
async fn start_stdio(
    server: &str,
    command: &[String],
    env: &BTreeMap<String, String>,
    cwd: Option<&Path>,
    timeout: Duration,
) -> Result<(Service, Vec<rmcp::model::Tool>, Option<u32>), McpError> {
    let Some((program, args)) = command.split_first() else {
        return Err(McpError::InvalidConfig {
            server: server.to_owned(),
            reason: "`command` must name a program".to_owned(),
        });
    };
    let mut child = tokio::process::Command::new(program);
    child.args(args).envs(env);
    if let Some(cwd) = cwd {
        child.current_dir(cwd);
    }
    let mut child = CommandWrap::from(child);
    // Kill-on-drop covers a drop where rmcp's own cleanup cannot run (no runtime left).
    child.wrap(ProcessGroup::leader()).wrap(KillOnDrop);
    let (transport, stderr) = TokioChildProcess::builder(child)
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|source| McpError::Spawn {
            server: server.to_owned(),
            program: program.clone(),
            source,
        })?;
    let process_id = transport.id();
    let mut stderr = StderrTail::collect(stderr);
    let target = format!("`{}`", command.join(" "));
    match start(server, &target, transport, timeout).await {
        Ok((service, listed)) => Ok((service, listed, process_id)),
        Err(mut error) => {
            stderr.settle().await;
            error.set_stderr(stderr.text());
            Err(error)
        }
    }
}

/// The listed tools as [`McpTool`]s sharing `connection`, named for models.
fn tools_of(
    connection: &Arc<Connection>,
    listed: Vec<rmcp::model::Tool>,
) -> Result<Vec<Arc<dyn Tool>>, McpError> {
    let mut named: HashMap<String, String> = HashMap::with_capacity(listed.len());
    let mut tools: Vec<Arc<dyn Tool>> = Vec::with_capacity(listed.len());
    for tool in listed {
        let name = model_name(&connection.server, &tool.name);
        if let Some(first) = named.insert(name.clone(), tool.name.to_string()) {
            return Err(McpError::DuplicateToolName {
                server: connection.server.clone(),
                name,
                first,
                second: tool.name.into_owned(),
            });
        }
        let description = tool
            .description
            .map(|description| description.into_owned())
            .or(tool.title)
            .unwrap_or_default();
        let parameters = Value::Object(Arc::unwrap_or_clone(tool.input_schema));
        tools.push(Arc::new(McpTool::new(
            ToolSpec::new(name, description, parameters),
            tool.name.into_owned(),
            Arc::clone(connection),
        )));
    }
    Ok(tools)
}

/// The handshake and the tool list, within the startup timeout.
async fn start<T, E, A>(
    server: &str,
    target: &str,
    transport: T,
    timeout: Duration,
) -> Result<(Service, Vec<rmcp::model::Tool>), McpError>
where
    T: IntoTransport<RoleClient, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    let work = async {
        let service =
            client_config()
                .serve(transport)
                .await
                .map_err(|error| McpError::Connect {
                    server: server.to_owned(),
                    target: target.to_owned(),
                    reason: handshake_failure(&error),
                    stderr: String::new(),
                })?;
        let tools = list_tools(&service)
            .await
            .map_err(|reason| McpError::ListTools {
                server: server.to_owned(),
                reason,
            })?;
        Ok((service, tools))
    };
    tokio::time::timeout(timeout, work)
        .await
        .unwrap_or_else(|_| {
            Err(McpError::Timeout {
                server: server.to_owned(),
                timeout,
                stderr: String::new(),
            })
        })
}

/// Who we say we are. No capabilities: this client offers no sampling, elicitation or roots.
fn client_config() -> ClientConfig {
    ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("agentwire", env!("CARGO_PKG_VERSION")),
    )
}

/// Every page of `tools/list`. A cursor that comes back a second time is an error rather than
/// a loop.
async fn list_tools(service: &Service) -> Result<Vec<rmcp::model::Tool>, String> {
    let has_tools = service
        .peer()
        .peer_info()
        .is_some_and(|info| info.capabilities.tools.is_some());
    if !has_tools {
        return Ok(Vec::new());
    }
    let mut tools = Vec::new();
    let mut cursor = None;
    let mut seen = HashSet::new();
    loop {
        let page = service
            .peer()
            .list_tools(Some(PaginatedRequestParams::default().with_cursor(cursor)))
            .await
            .map_err(|error| error.to_string())?;
        tools.extend(page.tools);
        match page.next_cursor {
            None => return Ok(tools),
            Some(next) if !seen.insert(next.clone()) => {
                return Err(format!("the server sent the page cursor `{next}` twice"));
            }
            Some(next) => cursor = Some(next),
        }
    }
}

fn header_map(
    server: &str,
    headers: &BTreeMap<String, String>,
) -> Result<HashMap<HeaderName, HeaderValue>, McpError> {
    headers
        .iter()
        .map(|(name, value)| {
            let invalid = |what: &str| McpError::InvalidConfig {
                server: server.to_owned(),
                reason: format!("header `{name}`: not a valid HTTP header {what}"),
            };
            Ok((
                HeaderName::try_from(name.as_str()).map_err(|_| invalid("name"))?,
                HeaderValue::try_from(value.as_str()).map_err(|_| invalid("value"))?,
            ))
        })
        .collect()
}

/// Why the handshake failed, without rmcp's transport type names.
fn handshake_failure(error: &ClientInitializeError) -> String {
    match error {
        ClientInitializeError::TransportError { error, context } => {
            format!("{context}: {}", error_chain(error.error.as_ref()))
        }
        other => error_chain(other),
    }
}

/// An error and its causes, each once (rmcp's messages often repeat their source's).
fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut current = error;
    while let Some(cause) = cause_of(current) {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        current = cause;
    }
    text
}

/// An error's source; rmcp's HTTP client error does not declare its reqwest error as one, and
/// that is where "connection refused" is said.
fn cause_of<'a>(
    error: &'a (dyn std::error::Error + 'static),
) -> Option<&'a (dyn std::error::Error + 'static)> {
    match error.downcast_ref::<StreamableHttpError<reqwest::Error>>() {
        Some(StreamableHttpError::Client(client)) => Some(client),
        _ => error.source(),
    }
}

/// Drains a stdio server's stderr (a full pipe would stall it) and keeps the end, for the
/// error message when the server fails to start.
struct StderrTail {
    tail: Arc<Mutex<Vec<u8>>>,
    reader: Option<JoinHandle<()>>,
}

impl StderrTail {
    fn collect(stderr: Option<tokio::process::ChildStderr>) -> Self {
        let tail = Arc::new(Mutex::new(Vec::new()));
        let reader = stderr.map(|mut stderr| {
            let tail = Arc::clone(&tail);
            tokio::spawn(async move {
                let mut buffer = [0_u8; 1024];
                while let Ok(read @ 1..) = stderr.read(&mut buffer).await {
                    let mut tail = tail.lock().unwrap_or_else(PoisonError::into_inner);
                    tail.extend_from_slice(&buffer[..read]);
                    let excess = tail.len().saturating_sub(STDERR_TAIL);
                    tail.drain(..excess);
                }
            })
        });
        Self { tail, reader }
    }

    /// Waits a moment for the server's last words (its stderr closes when it exits).
    async fn settle(&mut self) {
        if let Some(reader) = self.reader.as_mut() {
            let _ = tokio::time::timeout(STDERR_SETTLE, reader).await;
        }
    }

    fn text(&self) -> String {
        let tail = self.tail.lock().unwrap_or_else(PoisonError::into_inner);
        String::from_utf8_lossy(&tail).trim().to_owned()
    }
}

impl McpError {
    fn set_stderr(&mut self, text: String) {
        if let McpError::Connect { stderr, .. } | McpError::Timeout { stderr, .. } = self {
            *stderr = text;
        }
    }
}
