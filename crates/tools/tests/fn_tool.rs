//! Tools defined in Rust: schemas derived from argument types, and calls through a toolbox.
#![allow(clippy::unwrap_used)]

use agentwire_core::{Part, ToolArgs, ToolCall, ToolErrorKind};
use agentwire_tools::{FnTool, JsonSchema, Tool, ToolFailure, ToolLimits, Toolbox, parameters_for};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

#[derive(Deserialize, JsonSchema)]
struct Add {
    a: f64,
    b: f64,
}

/// Books a meeting.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct Book {
    /// Who to invite.
    attendees: Vec<Person>,
    /// How long, in minutes.
    minutes: u32,
    room: Option<Room>,
    priority: Priority,
}

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct Person {
    name: String,
    email: String,
}

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
enum Room {
    Small,
    Large,
}

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[allow(dead_code)]
enum Priority {
    Low,
    High,
}

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct Tree {
    label: String,
    children: Vec<Tree>,
}

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct Plant {
    tree: Tree,
}

#[test]
fn a_flat_type_gives_a_plain_object_schema() {
    assert_eq!(
        parameters_for::<Add>(),
        json!({
            "type": "object",
            "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
            "required": ["a", "b"]
        })
    );
}

#[test]
fn nested_types_are_inlined_with_their_docs_and_no_rust_formats() {
    assert_eq!(
        parameters_for::<Book>(),
        json!({
            "description": "Books a meeting.",
            "type": "object",
            "properties": {
                "attendees": {
                    "description": "Who to invite.",
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {"name": {"type": "string"}, "email": {"type": "string"}},
                        "required": ["name", "email"]
                    }
                },
                "minutes": {"description": "How long, in minutes.", "type": "integer", "minimum": 0},
                "room": {"type": ["string", "null"], "enum": ["Small", "Large", null]},
                "priority": {"type": "string", "enum": ["low", "high"]}
            },
            "required": ["attendees", "minutes", "priority"],
            "additionalProperties": false
        })
    );
}

#[test]
fn a_recursive_type_keeps_its_references() {
    let schema = parameters_for::<Tree>();
    assert!(schema.get("$schema").is_none() && schema.get("title").is_none());
    assert_eq!(
        schema["properties"]["children"]["items"],
        json!({"$ref": "#"})
    );

    let schema = parameters_for::<Plant>();
    let tree = &schema["properties"]["tree"];
    assert_eq!(
        tree["properties"]["children"]["items"],
        json!({"$ref": "#/$defs/Tree"})
    );
    assert_eq!(
        schema["$defs"]["Tree"]["properties"]["children"]["items"],
        json!({"$ref": "#/$defs/Tree"})
    );
    // And the toolbox compiles it, references and all.
    let mut toolbox = Toolbox::default();
    toolbox
        .add(FnTool::new(
            "plant",
            "plants a tree",
            |_: Plant, _| async move { Ok(()) },
        ))
        .unwrap();
}

fn call(name: &str, args: Value) -> ToolCall {
    ToolCall {
        tool_call_id: "tc_1".into(),
        tool_name: name.to_owned(),
        args: ToolArgs(args),
    }
}

#[tokio::test]
async fn a_function_tool_runs_through_a_toolbox() {
    #[derive(Serialize)]
    struct Sum {
        sum: f64,
    }
    let mut toolbox = Toolbox::new(ToolLimits::default());
    toolbox
        .add(FnTool::new(
            "add",
            "Adds two numbers",
            |args: Add, _| async move {
                Ok(Sum {
                    sum: args.a + args.b,
                })
            },
        ))
        .unwrap();
    toolbox
        .add(FnTool::new(
            "book",
            "Books a meeting",
            |args: Book, _| async move {
                if args.minutes > 480 {
                    return Err(ToolFailure::invalid_arguments(
                        "'minutes' must be at most a working day (480)",
                    ));
                }
                let _ = String::from_utf8(vec![0xff])?;
                Ok(json!("booked"))
            },
        ))
        .unwrap();
    assert_eq!(
        toolbox.specs().next().unwrap().parameters,
        parameters_for::<Add>()
    );

    let part = toolbox
        .run(
            &call("add", json!({"a": 1.5, "b": 2})),
            CancellationToken::new(),
        )
        .await;
    let Part::ToolResult(result) = part else {
        panic!("{part:?}")
    };
    assert_eq!(result.result, json!({"sum": 3.5}));

    let part = toolbox
        .run(&call("add", json!({"a": "1"})), CancellationToken::new())
        .await;
    let Part::ToolError(error) = part else {
        panic!("{part:?}")
    };
    assert_eq!(
        error.message,
        "Validation failed for tool 'add': missing required argument 'b'; 'a' must be a number, got \"1\"."
    );

    let booking =
        json!({"attendees": [{"name": "Ann"}], "minutes": 30, "priority": "urgent", "floor": 3});
    let part = toolbox
        .run(&call("book", booking), CancellationToken::new())
        .await;
    let Part::ToolError(error) = part else {
        panic!("{part:?}")
    };
    assert_eq!(
        error.message,
        "Validation failed for tool 'book': missing required argument 'attendees[0].email'; 'priority' must be one of \"low\", \"high\", got \"urgent\"; unexpected argument 'floor'."
    );

    // What the schema cannot say, the function can: a VALIDATION error of its own.
    let booking = json!({"attendees": [], "minutes": 600, "priority": "low"});
    let part = toolbox
        .run(&call("book", booking), CancellationToken::new())
        .await;
    let Part::ToolError(error) = part else {
        panic!("{part:?}")
    };
    assert_eq!(error.error_type, ToolErrorKind::Validation);
    assert_eq!(
        error.message,
        "Validation failed for tool 'book': 'minutes' must be at most a working day (480)."
    );

    // `?` turns any error into an EXECUTION failure.
    let booking = json!({"attendees": [], "minutes": 60, "priority": "low"});
    let part = toolbox
        .run(&call("book", booking), CancellationToken::new())
        .await;
    let Part::ToolError(error) = part else {
        panic!("{part:?}")
    };
    assert_eq!(error.error_type, ToolErrorKind::Execution);
    assert_eq!(
        error.message,
        "Tool 'book' failed: invalid utf-8 sequence of 1 bytes from index 0"
    );
}

#[tokio::test]
async fn what_serde_refuses_after_the_schema_passed_is_a_validation_error() {
    #[derive(Deserialize, JsonSchema)]
    struct Small {
        #[allow(dead_code)]
        n: u8,
    }
    let tool = FnTool::new("small", "takes a small number", |_: Small, _| async move {
        Ok(())
    });
    // schemars bounds u8 with "maximum": 255, so build a call past the toolbox to reach serde.
    let context = agentwire_tools::ToolContext {
        tool_call_id: "tc_1".into(),
        run_id: None,
        trace_context: Default::default(),
        cancel: CancellationToken::new(),
        state: None,
    };
    let failure = tool.call(json!({"n": "x"}), context).await.unwrap_err();
    assert_eq!(failure.kind(), ToolErrorKind::Validation);
    assert_eq!(
        failure.message(),
        "the arguments do not fit: invalid type: string \"x\", expected u8"
    );
}
