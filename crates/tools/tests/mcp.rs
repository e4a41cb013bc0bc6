//! MCP tools against real servers from npm (`peers/mcp`, installed by `scripts/peers.sh`): the
//! reference `@modelcontextprotocol/server-everything` over stdio and streamable HTTP, and
//! `peers/mcp/paged-server.mjs` on the official SDK for paging, odd names, errors and crashes.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use agentwire_tools::mcp::{McpError, McpServer, McpServerConfig, McpTransport};
use agentwire_tools::{Tool, ToolContext, ToolFailure};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

fn peer_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../peers/mcp")
}

/// A file of the installed peer; a missing install fails the test with what to do.
fn installed(relative: &str) -> String {
    let path = peer_dir().join(relative);
    assert!(
        path.exists(),
        "{} is missing: run scripts/peers.sh (it installs peers/mcp from its package-lock.json)",
        path.display()
    );
    path.to_string_lossy().into_owned()
}

fn everything_bin() -> String {
    installed("node_modules/.bin/mcp-server-everything")
}

fn everything(name: &str) -> McpServerConfig {
    McpServerConfig::stdio(name, [everything_bin(), "stdio".to_owned()])
        .with_startup_timeout(Duration::from_secs(30))
}

fn paged(mode: &str) -> McpServerConfig {
    installed("node_modules/@modelcontextprotocol/sdk/package.json");
    let script = peer_dir().join("paged-server.mjs");
    McpServerConfig::stdio(
        "paged",
        [
            "node".to_owned(),
            script.to_string_lossy().into_owned(),
            mode.to_owned(),
        ],
    )
    .with_startup_timeout(Duration::from_secs(30))
}

fn context() -> ToolContext {
    ToolContext {
        tool_call_id: "call_1".into(),
        run_id: None,
        trace_context: Default::default(),
        cancel: CancellationToken::new(),
        state: None,
    }
}

fn tool(server: &McpServer, name: &str) -> Arc<dyn Tool> {
    server
        .tools()
        .into_iter()
        .find(|tool| tool.spec().name == name)
        .unwrap_or_else(|| panic!("no tool {name}"))
}

async fn call(server: &McpServer, name: &str, args: Value) -> Result<Value, ToolFailure> {
    tool(server, name).call(args, context()).await
}

fn names(server: &McpServer) -> Vec<String> {
    server
        .tools()
        .iter()
        .map(|tool| tool.spec().name.clone())
        .collect()
}

/// Whether a live (not zombie) process is in the process group `group`.
fn group_alive(group: u32) -> bool {
    std::fs::read_dir("/proc").unwrap().flatten().any(|entry| {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            return false;
        };
        // `pid (comm) state ppid pgrp …`; comm may hold spaces and parentheses.
        let Some((_, rest)) = stat.rsplit_once(')') else {
            return false;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        fields.first() != Some(&"Z") && fields.get(2) == Some(&group.to_string().as_str())
    })
}

async fn assert_group_ends(group: u32, within: Duration) {
    let start = Instant::now();
    while group_alive(group) {
        assert!(
            start.elapsed() < within,
            "process group {group} still alive after {within:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn stdio_lists_the_tools_with_their_schemas() {
    let server = McpServer::connect(everything("everything")).await.unwrap();
    assert_eq!(server.name(), "everything");
    let names = names(&server);
    for expected in [
        "everything_echo",
        "everything_get-sum",
        "everything_get-structured-content",
        "everything_get-tiny-image",
        "everything_trigger-long-running-operation",
    ] {
        assert!(
            names.contains(&expected.to_owned()),
            "{expected} in {names:?}"
        );
    }
    let re = |name: &str| {
        !name.is_empty()
            && name.len() <= 64
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    };
    assert!(names.iter().all(|name| re(name)), "{names:?}");

    let echo = tool(&server, "everything_echo");
    assert_eq!(echo.spec().description, "Echoes back the input string");
    let schema = &echo.spec().parameters;
    assert_eq!(schema["type"], "object");
    assert_eq!(schema["properties"]["message"]["type"], "string");
    assert_eq!(schema["required"], json!(["message"]));
    let sum = tool(&server, "everything_get-sum");
    assert_eq!(sum.spec().parameters["properties"]["a"]["type"], "number");
    server.shutdown().await;
}

#[tokio::test]
async fn stdio_calls_return_text_structured_content_and_images() {
    let server = McpServer::connect(everything("ev")).await.unwrap();
    assert_eq!(
        call(&server, "ev_echo", json!({"message": "hello"}))
            .await
            .unwrap(),
        json!("Echo: hello")
    );
    assert_eq!(
        call(&server, "ev_get-sum", json!({"a": 2, "b": 3.5}))
            .await
            .unwrap(),
        json!("The sum of 2 and 3.5 is 5.5.")
    );
    // structuredContent wins over the text that repeats it.
    assert_eq!(
        call(
            &server,
            "ev_get-structured-content",
            json!({"location": "Chicago"})
        )
        .await
        .unwrap(),
        json!({"temperature": 36, "conditions": "Light rain / drizzle", "humidity": 82})
    );
    let image = call(&server, "ev_get-tiny-image", json!({})).await.unwrap();
    let items = image.as_array().unwrap();
    assert_eq!(items.len(), 3, "{image}");
    assert_eq!(items[0], json!("Here's the image you requested:"));
    assert_eq!(items[1]["type"], "image");
    assert_eq!(items[1]["mimeType"], "image/png");
    assert!(
        items[1]["data"]
            .as_str()
            .unwrap()
            .starts_with("iVBORw0KGgo")
    );
    assert_eq!(items[2], json!("The image above is the MCP logo."));
    server.shutdown().await;
}

#[tokio::test]
async fn an_is_error_result_is_a_tool_failure_with_its_text() {
    let server = McpServer::connect(everything("ev")).await.unwrap();
    // The server checks the arguments itself and answers `isError: true`.
    let failure = call(&server, "ev_echo", json!({"message": 42}))
        .await
        .unwrap_err();
    assert!(
        failure.message().contains("message"),
        "{}",
        failure.message()
    );
    let failure = call(&server, "ev_echo", json!([1, 2])).await.unwrap_err();
    assert!(
        failure.message().contains("must be a JSON object"),
        "{}",
        failure.message()
    );
    // The connection is fine afterwards.
    assert_eq!(
        call(&server, "ev_echo", json!({"message": "still here"}))
            .await
            .unwrap(),
        json!("Echo: still here")
    );
    server.shutdown().await;
}

#[tokio::test]
async fn a_canceled_call_returns_at_once_and_the_server_is_told() {
    let server = McpServer::connect(paged("pages")).await.unwrap();
    let slow = tool(&server, "paged_slow");
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        trigger.cancel();
    });
    let start = Instant::now();
    let failure = slow
        .call(
            json!({}),
            ToolContext {
                tool_call_id: "call_slow".into(),
                run_id: None,
                trace_context: Default::default(),
                cancel,
                state: None,
            },
        )
        .await
        .unwrap_err();
    assert!(
        start.elapsed() < Duration::from_secs(2),
        "{:?}",
        start.elapsed()
    );
    assert!(failure.message().contains("canceled"), "{failure}");
    // notifications/cancelled reached the server: its handler saw the abort.
    let mut counted = Value::Null;
    for _ in 0..50 {
        counted = call(&server, "paged_cancellations", json!({}))
            .await
            .unwrap();
        if counted == json!("1") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(counted, json!("1"));
    server.shutdown().await;
}

#[tokio::test]
async fn a_canceled_long_running_operation_returns_promptly() {
    let server = McpServer::connect(everything("ev")).await.unwrap();
    let long = tool(&server, "ev_trigger-long-running-operation");
    let cancel = CancellationToken::new();
    let context = ToolContext {
        tool_call_id: "call_long".into(),
        run_id: None,
        trace_context: Default::default(),
        cancel: cancel.clone(),
        state: None,
    };
    let call = tokio::spawn(async move {
        long.call(json!({"duration": 20, "steps": 20}), context)
            .await
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!call.is_finished());
    let start = Instant::now();
    cancel.cancel();
    let failure = call.await.unwrap().unwrap_err();
    assert!(
        start.elapsed() < Duration::from_millis(500),
        "{:?}",
        start.elapsed()
    );
    assert!(failure.message().contains("canceled"), "{failure}");
    server.shutdown().await;
}

#[tokio::test]
async fn tools_are_listed_across_pages_with_safe_names() {
    let server = McpServer::connect(paged("pages")).await.unwrap();
    let long = format!("paged_{}", "x".repeat(58));
    assert_eq!(
        names(&server),
        [
            "paged_first",
            "paged_dotted_name",
            long.as_str(),
            "paged_fail",
            "paged_crash",
            "paged_empty",
            "paged_slow",
            "paged_cancellations",
        ]
    );
    // The call goes out under the server's own name.
    assert_eq!(
        call(&server, "paged_dotted_name", json!({"text": "hi"}))
            .await
            .unwrap(),
        json!("dotted.name got {\"text\":\"hi\"}")
    );
    assert_eq!(
        call(&server, &long, json!({})).await.unwrap(),
        json!(format!("{} got {{}}", "x".repeat(80)))
    );
    assert_eq!(
        call(&server, "paged_empty", json!({})).await.unwrap(),
        json!([])
    );
    server.shutdown().await;
}

#[tokio::test]
async fn a_json_rpc_error_and_a_crashed_server_are_tool_failures() {
    let server = McpServer::connect(paged("pages")).await.unwrap();
    let failure = call(&server, "paged_fail", json!({})).await.unwrap_err();
    assert_eq!(
        failure.message(),
        "the MCP server `paged` refused the call: MCP error -32602: fail always fails"
    );
    let group = server.process_id().unwrap();
    let failure = call(&server, "paged_crash", json!({})).await.unwrap_err();
    assert_eq!(
        failure.message(),
        "the MCP server `paged` is not running (its connection is closed)"
    );
    assert_group_ends(group, Duration::from_secs(5)).await;
    let failure = call(&server, "paged_first", json!({})).await.unwrap_err();
    assert!(failure.message().contains("not running"), "{failure}");
}

#[tokio::test]
async fn tools_that_clash_once_made_safe_are_refused() {
    let error = McpServer::connect(paged("clash")).await.unwrap_err();
    assert!(
        matches!(&error, McpError::DuplicateToolName { name, .. } if name == "paged_a_b"),
        "{error}"
    );
    assert!(error.to_string().contains("`a.b` and `a b`"), "{error}");
}

#[tokio::test]
async fn a_cursor_that_repeats_is_an_error_not_a_loop() {
    let error = McpServer::connect(paged("loop")).await.unwrap_err();
    assert!(matches!(error, McpError::ListTools { .. }), "{error}");
    assert!(error.to_string().contains("`again` twice"), "{error}");
}

#[tokio::test]
async fn two_servers_with_the_same_tools_keep_them_apart() {
    let (a, b) = tokio::join!(
        McpServer::connect(everything("a")),
        McpServer::connect(everything("b"))
    );
    let (a, b) = (a.unwrap(), b.unwrap());
    assert!(names(&a).contains(&"a_echo".to_owned()));
    assert!(names(&b).contains(&"b_echo".to_owned()));
    assert_eq!(
        call(&b, "b_echo", json!({"message": "from b"}))
            .await
            .unwrap(),
        json!("Echo: from b")
    );
    a.shutdown().await;
    b.shutdown().await;
}

#[tokio::test]
async fn env_and_cwd_reach_the_server() {
    let mut config = McpServerConfig::stdio(
        "ev",
        [
            "sh",
            "-c",
            // Fails unless started in peers/mcp.
            "test -f paged-server.mjs && exec node_modules/.bin/mcp-server-everything stdio",
        ],
    );
    everything_bin();
    let McpTransport::Stdio { env, cwd, .. } = &mut config.transport else {
        unreachable!()
    };
    env.insert("AGENTWIRE_MCP_TEST".into(), "from the config".into());
    *cwd = Some(peer_dir());
    let server = McpServer::connect(config).await.unwrap();
    let text = call(&server, "ev_get-env", json!({})).await.unwrap();
    let env: Value = serde_json::from_str(text.as_str().unwrap()).unwrap();
    assert_eq!(env["AGENTWIRE_MCP_TEST"], "from the config");
    server.shutdown().await;
}

#[tokio::test]
async fn the_server_and_what_it_started_end_when_the_last_holder_is_dropped() {
    // `sh` stays as the parent of node, as `npx` would.
    let config = McpServerConfig::stdio(
        "ev",
        [
            "sh".to_owned(),
            "-c".to_owned(),
            "\"$0\" stdio; echo unreachable".to_owned(),
            everything_bin(),
        ],
    );
    let server = McpServer::connect(config).await.unwrap();
    let group = server.process_id().unwrap();
    assert!(group_alive(group));
    let echo = tool(&server, "ev_echo");
    drop(server);
    // A tool keeps the connection.
    assert_eq!(
        echo.call(json!({"message": "alive"}), context())
            .await
            .unwrap(),
        json!("Echo: alive")
    );
    assert!(group_alive(group));
    drop(echo);
    assert_group_ends(group, Duration::from_secs(10)).await;
}

#[tokio::test]
async fn shutdown_ends_the_server_for_its_tools_too() {
    let server = McpServer::connect(everything("ev")).await.unwrap();
    let group = server.process_id().unwrap();
    let echo = tool(&server, "ev_echo");
    let start = Instant::now();
    server.shutdown().await;
    assert!(!group_alive(group), "alive after shutdown");
    // Closing stdin ends it (SIGTERM would follow after 3 s, a kill after 6 s).
    assert!(
        start.elapsed() < Duration::from_secs(6),
        "{:?}",
        start.elapsed()
    );
    let failure = echo
        .call(json!({"message": "late"}), context())
        .await
        .unwrap_err();
    assert!(failure.message().contains("not running"), "{failure}");
    server.shutdown().await;
}

/// server-everything in streamable HTTP mode on a free port, killed when dropped.
struct HttpEverything {
    child: tokio::process::Child,
    url: String,
}

impl HttpEverything {
    async fn start() -> Self {
        let port = free_port();
        let child = tokio::process::Command::new(everything_bin())
            .arg("streamableHttp")
            .env("PORT", port.to_string())
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let start = Instant::now();
        while tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_err()
        {
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "server-everything did not listen on port {port}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Self {
            child,
            url: format!("http://127.0.0.1:{port}/mcp"),
        }
    }

    async fn stop(mut self) {
        self.child.kill().await.unwrap();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[tokio::test]
async fn streamable_http_lists_and_calls() {
    let http = HttpEverything::start().await;
    let mut config = McpServerConfig::http("web", &http.url);
    let McpTransport::Http { headers, .. } = &mut config.transport else {
        unreachable!()
    };
    headers.insert("X-Agentwire-Test".into(), "1".into());
    let server = McpServer::connect(config).await.unwrap();
    assert_eq!(server.process_id(), None);
    assert!(names(&server).contains(&"web_echo".to_owned()));
    assert_eq!(
        call(&server, "web_echo", json!({"message": "over http"}))
            .await
            .unwrap(),
        json!("Echo: over http")
    );
    assert_eq!(
        call(&server, "web_get-sum", json!({"a": 1, "b": 2}))
            .await
            .unwrap(),
        json!("The sum of 1 and 2 is 3.")
    );

    let long = tool(&server, "web_trigger-long-running-operation");
    let cancel = CancellationToken::new();
    let context = ToolContext {
        tool_call_id: "call_long".into(),
        run_id: None,
        trace_context: Default::default(),
        cancel: cancel.clone(),
        state: None,
    };
    let pending = tokio::spawn(async move {
        long.call(json!({"duration": 20, "steps": 20}), context)
            .await
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let start = Instant::now();
    cancel.cancel();
    assert!(pending.await.unwrap().is_err());
    assert!(start.elapsed() < Duration::from_millis(500));

    server.shutdown().await;
    let failure = call(&server, "web_echo", json!({"message": "late"}))
        .await
        .unwrap_err();
    assert!(failure.message().contains("not running"), "{failure}");
    http.stop().await;
}

#[tokio::test]
async fn a_server_that_stops_answering_over_http_is_a_tool_failure() {
    let http = HttpEverything::start().await;
    let server = McpServer::connect(McpServerConfig::http("web", &http.url))
        .await
        .unwrap();
    http.stop().await;
    let start = Instant::now();
    let failure = call(&server, "web_echo", json!({"message": "anyone?"}))
        .await
        .unwrap_err();
    assert!(failure.message().contains("`web`"), "{failure}");
    assert!(start.elapsed() < Duration::from_secs(10));
}

#[tokio::test]
async fn a_missing_program_is_a_spawn_error() {
    let error = McpServer::connect(McpServerConfig::stdio(
        "nope",
        ["/nonexistent/agentwire-mcp-server", "stdio"],
    ))
    .await
    .unwrap_err();
    assert!(matches!(error, McpError::Spawn { .. }), "{error}");
    let message = error.to_string();
    assert!(
        message.starts_with(
            "could not start MCP server `nope` (`/nonexistent/agentwire-mcp-server`): "
        ),
        "{message}"
    );
    assert!(message.contains("No such file"), "{message}");
}

#[tokio::test]
async fn a_server_that_exits_at_start_is_a_connect_error_with_its_stderr() {
    let error = McpServer::connect(McpServerConfig::stdio(
        "broken",
        ["sh", "-c", "echo 'no config file found' >&2; exit 3"],
    ))
    .await
    .unwrap_err();
    assert!(matches!(error, McpError::Connect { .. }), "{error}");
    let message = error.to_string();
    assert!(
        message.starts_with("could not connect to MCP server `broken` at `sh -c "),
        "{message}"
    );
    assert!(
        message.ends_with("its stderr ended with: no config file found"),
        "{message}"
    );
}

#[tokio::test]
async fn a_server_that_never_answers_times_out_and_is_killed_with_its_children() {
    // `sh` waits on a `sleep` of its own, as `npx` waits on the server it starts.
    let start = Instant::now();
    let error = McpServer::connect(
        McpServerConfig::stdio("mute", ["sh", "-c", "echo starting >&2; sleep 29.5; echo"])
            .with_startup_timeout(Duration::from_millis(500)),
    )
    .await
    .unwrap_err();
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "{:?}",
        start.elapsed()
    );
    assert_eq!(
        error.to_string(),
        "MCP server `mute` did not start within 500ms; its stderr ended with: starting"
    );
    let sleeping = || {
        std::fs::read_dir("/proc").unwrap().flatten().any(|entry| {
            let cmdline = std::fs::read_to_string(entry.path().join("cmdline")).unwrap_or_default();
            let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
            let state = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().next());
            cmdline == "sleep\u{0}29.5\u{0}" && state != Some("Z")
        })
    };
    let start = Instant::now();
    while sleeping() {
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "the server's child `sleep 29.5` outlived it"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn an_unreachable_url_is_a_connect_error() {
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let start = Instant::now();
    let error = McpServer::connect(McpServerConfig::http("gone", &url))
        .await
        .unwrap_err();
    assert!(matches!(error, McpError::Connect { .. }), "{error}");
    let message = error.to_string();
    assert!(
        message.starts_with(&format!(
            "could not connect to MCP server `gone` at {url}: "
        )),
        "{message}"
    );
    assert!(message.contains("Connection refused"), "{message}");
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "{:?}",
        start.elapsed()
    );
}

#[tokio::test]
async fn bad_configs_are_refused_before_anything_starts() {
    let cases = [
        (
            McpServerConfig::stdio("", ["x"]),
            "the name must be 1 to 32 characters",
        ),
        (
            McpServerConfig::stdio("has space", ["x"]),
            "the name must be",
        ),
        (
            McpServerConfig::stdio("n".repeat(33), ["x"]),
            "the name must be",
        ),
        (
            McpServerConfig::stdio("ok", Vec::<String>::new()),
            "`command` must name a program",
        ),
        (
            McpServerConfig::http("ok", "ftp://example.invalid"),
            "must start with http:// or https://",
        ),
    ];
    for (config, expected) in cases {
        let error = McpServer::connect(config).await.unwrap_err();
        assert!(matches!(error, McpError::InvalidConfig { .. }), "{error}");
        assert!(error.to_string().contains(expected), "{error}");
    }
    let mut config = McpServerConfig::http("ok", "http://127.0.0.1:1/mcp");
    let McpTransport::Http { headers, .. } = &mut config.transport else {
        unreachable!()
    };
    headers.insert("bad header".into(), "x".into());
    let error = McpServer::connect(config).await.unwrap_err();
    assert_eq!(
        error.to_string(),
        "MCP server `ok`: header `bad header`: not a valid HTTP header name"
    );
}

#[test]
fn configs_deserialize_from_the_design_shape() {
    // `[[agents.mcp]]` entries, in serde's data model.
    let stdio: McpServerConfig = serde_json::from_value(json!({
        "name": "fs",
        "command": ["npx", "-y", "@modelcontextprotocol/server-filesystem", "/tmp"],
        "env": {"LOG_LEVEL": "warn"},
        "cwd": "/srv"
    }))
    .unwrap();
    assert_eq!(stdio.name, "fs");
    assert_eq!(stdio.startup_timeout, Duration::from_secs(60));
    let McpTransport::Stdio { command, env, cwd } = &stdio.transport else {
        panic!("{stdio:?}")
    };
    assert_eq!(command[2], "@modelcontextprotocol/server-filesystem");
    assert_eq!(env["LOG_LEVEL"], "warn");
    assert_eq!(cwd.as_deref(), Some(Path::new("/srv")));

    let http: McpServerConfig = serde_json::from_value(json!({
        "name": "search",
        "url": "https://mcp.example.invalid/mcp",
        "headers": {"Authorization": "Bearer t"},
        "startup_timeout_secs": 5
    }))
    .unwrap();
    assert_eq!(http.startup_timeout, Duration::from_secs(5));
    let mut expected = McpServerConfig::http("search", "https://mcp.example.invalid/mcp")
        .with_startup_timeout(Duration::from_secs(5));
    let McpTransport::Http { headers, .. } = &mut expected.transport else {
        unreachable!()
    };
    headers.insert("Authorization".into(), "Bearer t".into());
    assert_eq!(http, expected);

    let refused = |value: Value| {
        serde_json::from_value::<McpServerConfig>(value)
            .unwrap_err()
            .to_string()
    };
    assert_eq!(
        refused(json!({"name": "x", "command": ["a"], "url": "http://h/mcp"})),
        "MCP server `x`: give `command` or `url`, not both"
    );
    assert!(refused(json!({"name": "x"})).contains("give `command = [...]` (stdio) or `url"));
    assert!(
        refused(json!({"name": "x", "url": "http://h/mcp", "cwd": "/"}))
            .contains("go with `command`")
    );
    assert!(
        refused(json!({"name": "x", "command": ["a"], "headers": {}})).contains("go with `url`")
    );
    assert!(refused(json!({"name": "x y", "command": ["a"]})).contains("the name must be"));
    assert!(refused(json!({"name": "x", "command": []})).contains("`command` must name a program"));
}

/// Each call names its run and tool call in `_meta`, so a server with effects can tie them to
/// the call, and its trace context when it has one (`peers/mcp/ledger-server.mjs` writes them
/// down).
#[tokio::test]
async fn a_call_names_its_run_and_tool_call_in_meta() {
    const TRACEPARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    installed("node_modules/@modelcontextprotocol/sdk/package.json");
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("ledger.txt");
    let config = McpServerConfig::stdio(
        "ledger",
        [
            "node".to_owned(),
            peer_dir()
                .join("ledger-server.mjs")
                .to_string_lossy()
                .into_owned(),
            ledger.to_string_lossy().into_owned(),
        ],
    )
    .with_startup_timeout(Duration::from_secs(30));
    let server = McpServer::connect(config).await.unwrap();
    let record = tool(&server, "ledger_record");
    let mut trace_context = agentwire_core::TraceContext::default();
    trace_context.set("traceparent", TRACEPARENT);
    let in_run = ToolContext {
        tool_call_id: "call_7".into(),
        run_id: Some("run_3".into()),
        trace_context,
        cancel: CancellationToken::new(),
        state: None,
    };
    let answer = record.call(json!({}), in_run).await.unwrap();
    assert_eq!(answer, json!("{\"recorded\":1}"));
    // Outside a run, only the call.
    record.call(json!({}), context()).await.unwrap();
    assert_eq!(
        std::fs::read_to_string(&ledger).unwrap(),
        format!("run_3 call_7 {TRACEPARENT}\n- call_1\n")
    );
}
