//! The toolbox: argument validation, execution failures, limits, cancellation and concurrency.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use agentwire_core::{Part, ToolArgs, ToolCall, ToolErrorKind};
use agentwire_tools::{
    Tool, ToolContext, ToolFailure, ToolFuture, ToolLimits, ToolSpec, Toolbox, ToolboxError,
};
use futures::FutureExt;
use futures::stream::{FuturesUnordered, StreamExt};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// A tool whose body is a closure over its arguments, for tests that need odd behaviour.
struct TestTool {
    spec: ToolSpec,
    body: Box<dyn Fn(Value, ToolContext) -> ToolFuture<'static> + Send + Sync>,
}

impl TestTool {
    fn new(
        name: &str,
        parameters: Value,
        body: impl Fn(Value, ToolContext) -> ToolFuture<'static> + Send + Sync + 'static,
    ) -> Self {
        Self {
            spec: ToolSpec::new(name, format!("the {name} tool"), parameters),
            body: Box::new(body),
        }
    }
}

impl Tool for TestTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn call(&self, args: Value, context: ToolContext) -> ToolFuture<'_> {
        (self.body)(args, context)
    }
}

fn write_file_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "path": {"type": "string"},
            "content": {"type": "string"},
            "mode": {"enum": ["overwrite", "append"]},
            "options": {
                "type": "object",
                "properties": {"retries": {"type": "integer", "minimum": 0}},
                "required": ["retries"],
                "additionalProperties": false
            }
        },
        "required": ["path", "content"],
        "additionalProperties": false
    })
}

/// A toolbox with `write_file` (echoes its arguments), `echo` (any object), `panic`, `sleep`
/// (sleeps `seconds`, counting how many sleep at once) and `big` (returns `n` bytes of text or
/// an array).
fn toolbox(limits: ToolLimits) -> Toolbox {
    let mut toolbox = Toolbox::new(limits);
    toolbox
        .add(TestTool::new(
            "write_file",
            write_file_schema(),
            |args, _| async move { Ok(json!({"written": args})) }.boxed(),
        ))
        .unwrap();
    toolbox
        .add(TestTool::new(
            "echo",
            json!({"type": "object"}),
            |args, _| async move { Ok(args) }.boxed(),
        ))
        .unwrap();
    toolbox
        .add(TestTool::new("panic", json!({"type": "object"}), |_, _| {
            async move { panic!("disk on fire") }.boxed()
        }))
        .unwrap();
    toolbox
        .add(TestTool::new("fail", json!({"type": "object"}), |_, _| {
            async move { Err(ToolFailure::new("the disk is full")) }.boxed()
        }))
        .unwrap();
    toolbox
        .add(TestTool::new(
            "sleep",
            json!({"type": "object", "properties": {"seconds": {"type": "number"}}}),
            |args, _| {
                async move {
                    let seconds = args["seconds"].as_f64().unwrap_or(1.0);
                    tokio::time::sleep(Duration::from_secs_f64(seconds)).await;
                    Ok(json!("slept"))
                }
                .boxed()
            },
        ))
        .unwrap();
    toolbox
        .add(TestTool::new(
            "big",
            json!({"type": "object", "properties": {"n": {"type": "integer"}, "array": {"type": "boolean"}}}),
            |args, _| {
                async move {
                    let n = args["n"].as_u64().unwrap() as usize;
                    if args["array"] == json!(true) {
                        Ok(json!(vec![1; n / 2]))
                    } else {
                        Ok(json!("x".repeat(n)))
                    }
                }
                .boxed()
            },
        ))
        .unwrap();
    toolbox
}

fn call(name: &str, args: Value) -> ToolCall {
    ToolCall {
        tool_call_id: "tc_1".into(),
        tool_name: name.to_owned(),
        args: ToolArgs(args),
    }
}

async fn run(toolbox: &Toolbox, name: &str, args: Value) -> Part {
    toolbox
        .run(&call(name, args), CancellationToken::new())
        .await
}

#[track_caller]
fn expect_error(part: &Part, kind: ToolErrorKind, message: &str) {
    let Part::ToolError(error) = part else {
        panic!("expected a tool_error, got {part:?}");
    };
    assert_eq!((error.error_type, error.message.as_str()), (kind, message));
    assert_eq!(error.tool_call_id.as_ref(), "tc_1");
}

#[track_caller]
fn expect_result(part: &Part) -> &Value {
    let Part::ToolResult(result) = part else {
        panic!("expected a tool_result, got {part:?}");
    };
    &result.result
}

#[tokio::test]
async fn a_valid_call_returns_a_result_naming_the_tool() {
    let toolbox = toolbox(ToolLimits::default());
    let part = run(
        &toolbox,
        "write_file",
        json!({"path": "/a.txt", "content": "A"}),
    )
    .await;
    let Part::ToolResult(result) = &part else {
        panic!("{part:?}")
    };
    assert_eq!(result.tool_name.as_deref(), Some("write_file"));
    assert_eq!(
        result.result,
        json!({"written": {"path": "/a.txt", "content": "A"}})
    );
}

#[tokio::test]
async fn validation_names_each_bad_or_missing_argument() {
    let toolbox = toolbox(ToolLimits::default());
    #[track_caller]
    fn check(part: Part, problems: &str) {
        expect_error(
            &part,
            ToolErrorKind::Validation,
            &format!("Validation failed for tool 'write_file': {problems}."),
        );
    }
    check(
        run(
            &toolbox,
            "write_file",
            json!({"content": "This call is missing the path."}),
        )
        .await,
        "missing required argument 'path'",
    );
    check(
        run(
            &toolbox,
            "write_file",
            json!({"path": "/a.txt", "content": 42}),
        )
        .await,
        "'content' must be a string, got 42",
    );
    check(
        run(
            &toolbox,
            "write_file",
            json!({"path": "/a.txt", "content": "A", "force": true, "x": 1}),
        )
        .await,
        "unexpected argument 'force'; unexpected argument 'x'",
    );
    check(
        run(
            &toolbox,
            "write_file",
            json!({"content": null, "mode": "truncate"}),
        )
        .await,
        "missing required argument 'path'; 'content' must be a string, got null; 'mode' must be one of \"overwrite\", \"append\", got \"truncate\"",
    );
    check(
        run(
            &toolbox,
            "write_file",
            json!({"path": "p", "content": "c", "options": {"retries": -1, "y": 2}}),
        )
        .await,
        "'options.retries': -1 is less than the minimum of 0; unexpected argument 'options.y'",
    );
    check(
        run(
            &toolbox,
            "write_file",
            json!({"path": "p", "content": "c", "options": {}}),
        )
        .await,
        "missing required argument 'options.retries'",
    );
}

#[tokio::test]
async fn arguments_that_are_not_an_object_or_not_json_are_validation_errors() {
    let toolbox = toolbox(ToolLimits::default());
    let broken = ToolArgs::from_json_text(r#"{"path": "a.txt", "content"#);
    let part = toolbox
        .run(
            &ToolCall {
                args: broken,
                ..call("write_file", json!({}))
            },
            CancellationToken::new(),
        )
        .await;
    expect_error(
        &part,
        ToolErrorKind::Validation,
        r#"Validation failed for tool 'write_file': the arguments are not valid JSON (EOF while parsing a string at line 1 column 26): `{"path": "a.txt", "content`."#,
    );
    expect_error(
        &run(&toolbox, "write_file", json!([1, 2])).await,
        ToolErrorKind::Validation,
        "Validation failed for tool 'write_file': the arguments must be a JSON object, got [1,2].",
    );
}

#[tokio::test]
async fn an_unknown_tool_is_a_validation_error_naming_the_available_ones() {
    let toolbox = toolbox(ToolLimits::default());
    expect_error(
        &run(&toolbox, "delete_file", json!({})).await,
        ToolErrorKind::Validation,
        "Validation failed for tool 'delete_file': no such tool; the available tools are 'write_file', 'echo', 'panic', 'fail', 'sleep', 'big'.",
    );
    expect_error(
        &Toolbox::default()
            .run(&call("x", json!({})), CancellationToken::new())
            .await,
        ToolErrorKind::Validation,
        "Validation failed for tool 'x': no such tool; there are no tools.",
    );
}

#[tokio::test]
async fn a_failure_is_an_execution_error() {
    let toolbox = toolbox(ToolLimits::default());
    expect_error(
        &run(&toolbox, "fail", json!({})).await,
        ToolErrorKind::Execution,
        "Tool 'fail' failed: the disk is full",
    );
}

#[tokio::test]
async fn a_panic_is_an_execution_error_and_the_next_call_still_works() {
    let toolbox = toolbox(ToolLimits::default());
    expect_error(
        &run(&toolbox, "panic", json!({})).await,
        ToolErrorKind::Execution,
        "Tool 'panic' crashed: it panicked with 'disk on fire'.",
    );
    assert_eq!(
        expect_result(&run(&toolbox, "echo", json!({"a": 1})).await),
        &json!({"a": 1})
    );
}

#[tokio::test(start_paused = true)]
async fn a_call_past_the_timeout_is_stopped() {
    let limits = ToolLimits {
        timeout: Duration::from_secs(5),
        ..ToolLimits::default()
    };
    let toolbox = toolbox(limits);
    let started = tokio::time::Instant::now();
    expect_error(
        &run(&toolbox, "sleep", json!({"seconds": 60})).await,
        ToolErrorKind::Execution,
        "Tool 'sleep' timed out after 5 s and was stopped.",
    );
    assert_eq!(started.elapsed(), Duration::from_secs(5));
    assert_eq!(
        expect_result(&run(&toolbox, "sleep", json!({"seconds": 4})).await),
        &json!("slept")
    );
}

#[tokio::test(start_paused = true)]
async fn cancellation_stops_the_call_at_once_and_the_tool_sees_it() {
    let seen_cancel = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&seen_cancel);
    let mut toolbox = Toolbox::default();
    toolbox
        .add(TestTool::new(
            "wait",
            json!({"type": "object"}),
            move |_, context| {
                let seen = Arc::clone(&seen);
                async move {
                    // Stands for work done elsewhere that watches the token.
                    tokio::spawn(async move {
                        context.cancel.cancelled().await;
                        seen.fetch_add(1, Ordering::SeqCst);
                    });
                    std::future::pending::<()>().await;
                    Ok(Value::Null)
                }
                .boxed()
            },
        ))
        .unwrap();
    let cancel = CancellationToken::new();
    let started = tokio::time::Instant::now();
    let canceller = {
        let cancel = cancel.clone();
        async move {
            tokio::time::sleep(Duration::from_secs(3)).await;
            cancel.cancel();
        }
    };
    let wait = call("wait", json!({}));
    let (part, ()) = tokio::join!(toolbox.run(&wait, cancel), canceller);
    expect_error(
        &part,
        ToolErrorKind::Execution,
        "The call to tool 'wait' was canceled.",
    );
    assert_eq!(started.elapsed(), Duration::from_secs(3));
    tokio::task::yield_now().await;
    assert_eq!(seen_cancel.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn output_over_the_cap_is_cut_when_a_string_and_refused_otherwise() {
    let toolbox = toolbox(ToolLimits {
        max_output_bytes: 200,
        ..ToolLimits::default()
    });
    assert_eq!(
        expect_result(&run(&toolbox, "big", json!({"n": 198})).await),
        &json!("x".repeat(198))
    );

    let cut = expect_result(&run(&toolbox, "big", json!({"n": 1000})).await)
        .as_str()
        .unwrap()
        .to_owned();
    let marker = "\n…[truncated: the output was 1002 bytes of JSON, over the limit of 200]";
    assert!(cut.ends_with(marker), "{cut}");
    assert_eq!(serde_json::to_string(&cut).unwrap().len(), 200);
    assert!(cut.starts_with("xxxx"));

    expect_error(
        &run(&toolbox, "big", json!({"n": 1000, "array": true})).await,
        ToolErrorKind::Execution,
        "Tool 'big' returned 1001 bytes of output, over the limit of 200 bytes; ask for less.",
    );
}

#[tokio::test(start_paused = true)]
async fn parallel_calls_run_concurrently() {
    let toolbox = toolbox(ToolLimits::default());
    let calls: Vec<ToolCall> = (0..3)
        .map(|_| call("sleep", json!({"seconds": 10})))
        .collect();
    let started = tokio::time::Instant::now();
    let parts: Vec<Part> = calls
        .iter()
        .map(|call| toolbox.run(call, CancellationToken::new()))
        .collect::<FuturesUnordered<_>>()
        .collect()
        .await;
    assert_eq!(parts.len(), 3);
    parts
        .iter()
        .for_each(|part| assert_eq!(expect_result(part), &json!("slept")));
    // Three ten-second calls in ten seconds: they overlapped.
    assert_eq!(started.elapsed(), Duration::from_secs(10));
}

#[test]
fn adding_rejects_duplicates_bad_names_and_bad_schemas() {
    let mut toolbox = toolbox(ToolLimits::default());
    let echo = || {
        TestTool::new("echo", json!({"type": "object"}), |a, _| {
            async move { Ok(a) }.boxed()
        })
    };
    assert!(
        matches!(toolbox.add(echo()), Err(ToolboxError::DuplicateName { name }) if name == "echo")
    );
    let named =
        |name: &str, schema| TestTool::new(name, schema, |a, _| async move { Ok(a) }.boxed());
    assert!(matches!(
        toolbox.add(named("fs.read", json!({"type": "object"}))),
        Err(ToolboxError::InvalidName { .. })
    ));
    assert!(matches!(
        toolbox.add(named("", json!({"type": "object"}))),
        Err(ToolboxError::InvalidName { .. })
    ));
    let error = toolbox
        .add(named("s", json!({"type": "string"})))
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "the parameters schema of tool 's' is invalid: the root of a parameters schema must have \"type\": \"object\", found \"string\""
    );
    let error = toolbox
        .add(named(
            "t",
            json!({"type": "object", "properties": {"a": {"type": "strin"}}}),
        ))
        .unwrap_err();
    assert!(
        matches!(error, ToolboxError::InvalidSchema { .. }),
        "{error}"
    );
    assert_eq!(
        toolbox
            .specs()
            .map(|spec| spec.name.as_str())
            .collect::<Vec<_>>(),
        ["write_file", "echo", "panic", "fail", "sleep", "big"]
    );
    assert!(toolbox.contains("echo") && !toolbox.contains("s"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_run_in_parallel_even_when_a_tool_blocks_its_thread() {
    // Each call blocks its thread until the other one has started too (or ten seconds pass):
    // both meet only if the two run at the same time on different threads.
    let started = Arc::new(AtomicUsize::new(0));
    let mut toolbox = Toolbox::default();
    toolbox
        .add(TestTool::new(
            "meet",
            json!({"type": "object"}),
            move |_, _| {
                let started = Arc::clone(&started);
                async move {
                    started.fetch_add(1, Ordering::SeqCst);
                    let deadline = std::time::Instant::now() + Duration::from_secs(10);
                    while started.load(Ordering::SeqCst) < 2 && std::time::Instant::now() < deadline
                    {
                        std::thread::sleep(Duration::from_millis(1));
                    }
                    Ok(json!(started.load(Ordering::SeqCst) == 2))
                }
                .boxed()
            },
        ))
        .unwrap();
    let calls = [call("meet", json!({})), call("meet", json!({}))];
    let parts = futures::future::join_all(
        calls
            .iter()
            .map(|call| toolbox.run(call, CancellationToken::new())),
    )
    .await;
    assert_eq!(
        expect_result(&parts[0]),
        &json!(true),
        "the first call never met the second"
    );
    assert_eq!(expect_result(&parts[1]), &json!(true));
}

#[test]
fn a_toolbox_and_its_calls_can_cross_threads() {
    fn send_sync<T: Send + Sync>(_: &T) {}
    fn send<T: Send>(_: &T) {}
    let toolbox = toolbox(ToolLimits::default());
    send_sync(&toolbox);
    let call = call("echo", json!({}));
    send(&toolbox.run(&call, CancellationToken::new()));
}
