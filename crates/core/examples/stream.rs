//! Streams a model's self-correction (a bad tool call, its error, the fixed call) through the
//! core: a model's output becomes events (printed as the native NDJSON a client would receive),
//! and the events become messages again in an accumulator, as a client would rebuild them.
//!
//! Run it with `cargo run -p agentwire-core --example stream`.

use agentwire_core::part::{ToolError, ToolErrorKind, ToolResult};
use agentwire_core::{
    Accumulator, Emitter, EventKind, MessageBuilder, MessageStart, Part, Role, RunStatus,
};
use serde_json::json;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut out = Emitter::default();
    out.emit(EventKind::RunCreated {
        run_id: "run_1".into(),
        session_id: None,
        agent: Some("assistant".into()),
        parent_run_id: None,
        parent_tool_call_id: None,
    });
    out.emit(EventKind::RunStatus {
        status: RunStatus::InProgress,
        error: None,
        usage: None,
    });

    let mut turn = MessageBuilder::start(&mut out, MessageStart::new("msg_abc", Role::Assistant));
    // Step 1: the model forgets the required `path`; the orchestrator answers with a tool error.
    turn.tool_call_start(&mut out, "tc_456", "write_file")?;
    turn.tool_call_delta(&mut out, "tc_456", r#"{"content": "This call is "#)?;
    turn.tool_call_delta(&mut out, "tc_456", r#"missing the path."}"#)?;
    turn.tool_call_end(&mut out, "tc_456")?;
    turn.part(
        &mut out,
        Part::ToolError(ToolError {
            tool_call_id: "tc_456".into(),
            tool_name: Some("write_file".into()),
            error_type: ToolErrorKind::Validation,
            message: "Validation failed for tool 'write_file': Missing required argument 'path'."
                .into(),
        }),
    );
    // Step 2: it reads the error and corrects itself.
    turn.text_delta(&mut out, "My apologies, I missed a required parameter. ");
    turn.text_delta(&mut out, "I will correct it now.");
    turn.tool_call_start(&mut out, "tc_789", "write_file")?;
    turn.tool_call_delta(
        &mut out,
        "tc_789",
        r#"{"path": "/corrected.txt", "content": "This call should now be valid."}"#,
    )?;
    turn.tool_call_end(&mut out, "tc_789")?;
    turn.part(
        &mut out,
        Part::ToolResult(ToolResult {
            tool_call_id: "tc_789".into(),
            tool_name: Some("write_file".into()),
            result: json!({"status": "success", "message": "File written successfully."}),
            is_error: None,
        }),
    );
    turn.text_delta(&mut out, "I have written the file to `/corrected.txt`.");
    turn.finish(&mut out);
    out.emit(EventKind::RunStatus {
        status: RunStatus::Completed,
        error: None,
        usage: None,
    });

    let mut accumulator = Accumulator::default();
    for event in out.drain() {
        println!("{}", serde_json::to_string(&event)?);
        accumulator.push(&event)?;
    }
    println!();
    println!("{}", serde_json::to_string_pretty(accumulator.messages())?);
    Ok(())
}
