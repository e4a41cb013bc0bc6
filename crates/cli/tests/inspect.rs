//! `agentwire inspect` and `convert`, run as the real binary on the golden transcripts, on
//! stdin, and on a live stream from a real HTTP server on port 0.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use agentwire_dialects::Dialect;
use agentwire_testkit::scenarios;
use serde_json::{Value, json};

fn agentwire(args: &[&str], stdin: Option<&[u8]>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_agentwire"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("agentwire starts");
    let mut input = child.stdin.take().expect("stdin");
    input
        .write_all(stdin.unwrap_or_default())
        .expect("write stdin");
    drop(input);
    child.wait_with_output().expect("agentwire ends")
}

fn golden(dialect: &str, scenario: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../dialects/tests/golden")
        .join(dialect)
        .join(format!("{scenario}.sse"))
}

fn report(output: &Output) -> Value {
    assert!(
        output.status.success(),
        "exit {:?}: {}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("one JSON document")
}

#[test]
fn inspect_sniffs_each_dialect_and_rebuilds_the_messages() {
    for scenario in scenarios::all() {
        for dialect in [
            "native",
            "agentx",
            "ai-sdk",
            "agentscope",
            "ag-ui",
            "a2a",
            "viber",
        ] {
            let path = golden(dialect, scenario.name);
            let output = agentwire(&["inspect", "--json", path.to_str().expect("utf-8")], None);
            let report = report(&output);
            assert_eq!(report["dialect"], dialect, "{}", scenario.name);
            assert_eq!(report["problem"], Value::Null);
            assert_eq!(
                report["status"]["status"],
                scenario.status.name(),
                "{dialect} {}",
                scenario.name
            );
            if dialect == "native" {
                assert_eq!(report["messages"], serde_json::json!(scenario.messages));
                assert_eq!(report["events"], serde_json::json!(scenario.events));
            }
        }
    }
}

#[test]
fn convert_then_inspect_gives_the_same_messages() {
    let scenario = scenarios::tool_call();
    let path = golden("native", scenario.name);
    let agentx = agentwire(
        &["convert", "--to", "agentx", path.to_str().expect("utf-8")],
        None,
    );
    assert!(agentx.status.success());
    assert!(agentx.stdout.starts_with(b"id: 1\nevent: run_created\n"));
    let back = agentwire(
        &["convert", "--from", "agentx", "--to", "native-ndjson", "-"],
        Some(&agentx.stdout),
    );
    assert!(back.status.success());
    let report = report(&agentwire(&["inspect", "--json", "-"], Some(&back.stdout)));
    assert_eq!(report["dialect"], "native-ndjson");
    assert_eq!(report["messages"], serde_json::json!(scenario.messages));
}

/// An AI SDK stream says no run status until it finishes; AgentScope's Runner always says
/// `created` and `in_progress` first, and their clients expect it.
#[test]
fn convert_to_agentscope_gives_the_statuses_its_protocol_requires() {
    let path = golden("ai-sdk", scenarios::tool_call().name);
    let out = agentwire(
        &[
            "convert",
            "--from",
            "ai-sdk",
            "--to",
            "agentscope",
            path.to_str().expect("utf-8"),
        ],
        None,
    );
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).expect("utf-8");
    let responses: Vec<String> = text
        .lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .map(|object| serde_json::from_str::<Value>(object).expect("json"))
        .filter(|object| object["object"] == "response")
        .map(|object| object["status"].as_str().expect("status").to_owned())
        .collect();
    assert_eq!(responses, ["created", "in_progress", "completed"]);
    let first_message = text.find("\"object\":\"message\"").expect("a message");
    assert!(text.find("\"in_progress\"").expect("in progress") < first_message);
}

/// An A2A stream begins with its task; an AI SDK stream has none to give, so one is made up.
#[test]
fn convert_to_a2a_begins_with_the_task() {
    let path = golden("ai-sdk", scenarios::tool_call().name);
    let out = agentwire(
        &[
            "convert",
            "--from",
            "ai-sdk",
            "--to",
            "a2a",
            path.to_str().expect("utf-8"),
        ],
        None,
    );
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).expect("utf-8");
    let results: Vec<Value> = text
        .lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .map(|item| serde_json::from_str::<Value>(item).expect("json")["result"].take())
        .collect();
    assert_eq!(
        results[0]["task"]["status"]["state"],
        "TASK_STATE_SUBMITTED"
    );
    assert_eq!(
        results
            .iter()
            .filter(|result| result.get("task").is_some())
            .count(),
        1
    );
    assert!(results[1..].iter().all(|result| result["task"].is_null()));
}

#[test]
fn convert_to_viber_and_back_gives_the_same_messages() {
    let scenario = scenarios::approval();
    let path = golden("native", scenario.name);
    let viber = agentwire(
        &["convert", "--to", "viber", path.to_str().expect("utf-8")],
        None,
    );
    assert!(viber.status.success());
    let wire = String::from_utf8_lossy(&viber.stdout).into_owned();
    assert!(
        wire.starts_with("id: 1\nevent: status\ndata: {\"status\":\"streaming\""),
        "{wire}"
    );
    assert!(wire.contains("\"status\":\"awaiting-approval\""), "{wire}");
    // Sniffed as Viber, and read back to the same messages.
    let sniffed = report(&agentwire(&["inspect", "--json", "-"], Some(&viber.stdout)));
    assert_eq!(sniffed["dialect"], "viber");
    assert_eq!(sniffed["messages"], serde_json::json!(scenario.messages));
    let back = agentwire(
        &["convert", "--from", "viber", "--to", "native-ndjson", "-"],
        Some(&viber.stdout),
    );
    assert!(back.status.success());
    let native = report(&agentwire(&["inspect", "--json", "-"], Some(&back.stdout)));
    assert_eq!(native["messages"], serde_json::json!(scenario.messages));
}

#[test]
fn a_malformed_or_out_of_order_stream_fails_naming_the_place() {
    let broken = b"data: {\"role\": \"assistant\", \"parts\": [{\"type\": \"text\"}]}\n\n";
    let output = agentwire(&["inspect", "-d", "agentx", "-"], Some(broken));
    assert_eq!(output.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&output.stderr).contains("frame 1 is not valid"));

    let out_of_order =
        b"{\"seq\":1,\"event\":\"part_delta\",\"message_id\":\"m\",\"index\":0,\"delta\":\"x\"}\n";
    let output = agentwire(&["inspect", "-"], Some(out_of_order));
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("event 1 (part_delta) is out of place"),
        "{stderr}"
    );

    let output = agentwire(&["inspect", "-"], Some(b"hello\n"));
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("name it with --dialect"));

    let output = agentwire(&["inspect", "--dialect", "klingon", "-"], None);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("possible values: native"), "{stderr}");
}

#[test]
fn help_lists_every_dialect() {
    for command in ["inspect", "convert"] {
        let output = agentwire(&[command, "--help"], None);
        assert!(output.status.success());
        let help = String::from_utf8_lossy(&output.stdout);
        for dialect in Dialect::ALL {
            assert!(
                help.contains(dialect.name()),
                "{command}: {dialect}: {help}"
            );
        }
    }
}

/// A native stream of `deltas` text deltas, far more output than a pipe holds.
fn long_stream(deltas: usize) -> String {
    let mut events = vec![
        json!({"event": "run_created", "run_id": "run_1"}),
        json!({"event": "run_status", "status": "in_progress"}),
        json!({"event": "message_start", "message_id": "m", "role": "assistant"}),
        json!({"event": "part_start", "message_id": "m", "index": 0, "type": "text"}),
    ];
    events.extend(
        (0..deltas)
            .map(|_| json!({"event": "part_delta", "message_id": "m", "index": 0, "delta": "x"})),
    );
    let mut wire = String::new();
    for (index, mut event) in events.into_iter().enumerate() {
        event["seq"] = json!(index + 1);
        wire += &format!("{event}\n");
    }
    wire
}

#[test]
fn a_reader_that_closes_early_ends_the_program_quietly() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("long.ndjson");
    std::fs::write(&path, long_stream(20_000)).expect("write");
    let path = path.to_str().expect("utf-8");
    for args in [
        &["inspect", path][..],
        &["inspect", "--json", path],
        &["convert", "--to", "ai-sdk", path],
    ] {
        // `agentwire … | head -c 100`: the reader takes a little and goes.
        let mut child = Command::new(env!("CARGO_BIN_EXE_agentwire"))
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("agentwire starts");
        let mut stdout = child.stdout.take().expect("stdout");
        let mut start = [0; 100];
        stdout.read_exact(&mut start).expect("the first bytes");
        drop(stdout);
        let output = child.wait_with_output().expect("agentwire ends");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(0), "{args:?}: {stderr}");
        assert_eq!(stderr, "", "{args:?}");
    }
}

/// Serves one response on port 0: `body` in small chunks, after checking the request line and
/// body. Returns the URL.
fn serve_once(expect_method: &'static str, expect_body: &'static str, body: Vec<u8>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!(
        "http://{}/api/stream",
        listener.local_addr().expect("address")
    );
    std::thread::spawn(move || {
        let (stream, _) = listener.accept().expect("accept");
        let mut reader = BufReader::new(stream.try_clone().expect("clone"));
        let mut request_line = String::new();
        reader.read_line(&mut request_line).expect("request line");
        let mut length = 0;
        loop {
            let mut line = String::new();
            reader.read_line(&mut line).expect("header");
            if line == "\r\n" {
                break;
            }
            if let Some(value) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                length = value.trim().parse().expect("length");
            }
        }
        let mut request_body = vec![0; length];
        reader.read_exact(&mut request_body).expect("body");
        let mut stream = stream;
        let ok = request_line.starts_with(expect_method) && request_body == expect_body.as_bytes();
        if !ok {
            let _ = stream.write_all(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 3\r\n\r\nbad");
            return;
        }
        let _ = stream.write_all(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n",
        );
        for chunk in body.chunks(7) {
            let _ = write!(stream, "{:x}\r\n", chunk.len());
            let _ = stream.write_all(chunk);
            let _ = stream.write_all(b"\r\n");
            let _ = stream.flush();
        }
        let _ = stream.write_all(b"0\r\n\r\n");
    });
    url
}

#[test]
fn inspect_reads_a_live_stream_from_a_url() {
    let scenario = scenarios::parallel_tools();
    let wire = std::fs::read(golden("agentx", scenario.name)).expect("golden");
    let url = serve_once("POST", "{\"hi\":1}", wire);
    let output = agentwire(&["inspect", "--json", "--data", "{\"hi\":1}", &url], None);
    let report = report(&output);
    assert_eq!(report["dialect"], "agentx");
    assert_eq!(report["messages"], serde_json::json!(scenario.messages));

    let url = serve_once("GET", "", b"nope".to_vec());
    let output = agentwire(&["inspect", "--data", "x", &url], None);
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("400 Bad Request"));
}

/// A native stream converted to the Responses API: semantic events a client of the official
/// SDKs reads, sniffed as such, and read back to the calls and text it carries.
#[test]
fn convert_to_openai_responses_and_inspect_it() {
    let scenario = scenarios::client_tool();
    let path = golden("native", scenario.name);
    let responses = agentwire(
        &[
            "convert",
            "--to",
            "openai-responses",
            path.to_str().expect("utf-8"),
        ],
        None,
    );
    assert!(responses.status.success());
    let wire = String::from_utf8_lossy(&responses.stdout).into_owned();
    assert!(
        wire.starts_with("event: response.created\ndata: {\"type\":\"response.created\""),
        "{wire}"
    );
    assert!(
        wire.contains("event: response.function_call_arguments.delta"),
        "{wire}"
    );
    let sniffed = report(&agentwire(
        &["inspect", "--json", "-"],
        Some(&responses.stdout),
    ));
    assert_eq!(sniffed["dialect"], "openai-responses");
    assert_eq!(sniffed["problem"], Value::Null);
    assert_eq!(sniffed["status"]["status"], "awaiting");
    let calls: Vec<&Value> = sniffed["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .flat_map(|message| message["parts"].as_array().expect("parts"))
        .filter(|part| part["type"] == "tool_call")
        .collect();
    assert_eq!(calls.len(), 1);
}
