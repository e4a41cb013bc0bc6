//! The renderer on event sequences, without colors (what a pipe gets) and with them.

use serde_json::{Value, json};

use super::*;

fn events(values: Vec<Value>) -> Vec<Event> {
    values
        .into_iter()
        .enumerate()
        .map(|(index, mut value)| {
            value["seq"] = json!(index + 1);
            serde_json::from_value(value).expect("a valid event")
        })
        .collect()
}

fn render(renderer: &mut Renderer, values: Vec<Value>) -> String {
    let mut out: String = events(values)
        .iter()
        .map(|event| renderer.event(event))
        .collect();
    out += &renderer.end_turn();
    out
}

fn delta(index: u32, text: &str) -> Value {
    json!({"event": "part_delta", "message_id": "m", "index": index, "delta": text})
}

#[test]
fn text_and_reasoning_stream_on_their_own_lines() {
    let mut renderer = Renderer::new(false, false);
    let out = render(
        &mut renderer,
        vec![
            json!({"event": "message_start", "message_id": "m", "role": "assistant"}),
            json!({"event": "part_start", "message_id": "m", "index": 0, "type": "reasoning"}),
            delta(0, "Think"),
            delta(0, "ing."),
            json!({"event": "part_complete", "message_id": "m", "index": 0, "part": {"type": "reasoning", "text": "Thinking."}}),
            json!({"event": "part_start", "message_id": "m", "index": 1, "type": "text"}),
            delta(1, "Hel"),
            delta(1, "lo"),
            json!({"event": "part_complete", "message_id": "m", "index": 1, "part": {"type": "text", "text": "Hello"}}),
            json!({"event": "run_status", "status": "completed"}),
        ],
    );
    assert_eq!(out, "Thinking.\nHello\n");
}

#[test]
fn reasoning_is_dimmed_and_text_is_not() {
    let mut renderer = Renderer::new(true, false);
    let out: String = events(vec![
        json!({"event": "part_start", "message_id": "m", "index": 0, "type": "reasoning"}),
        delta(0, "hmm"),
        json!({"event": "part_start", "message_id": "m", "index": 1, "type": "text"}),
        delta(1, "yes"),
    ])
    .iter()
    .map(|event| renderer.event(event))
    .collect();
    assert_eq!(out, "\u{1b}[2mhmm\u{1b}[0m\nyes");
}

#[test]
fn a_tool_call_streams_its_arguments_then_shows_its_result_or_error() {
    let mut renderer = Renderer::new(false, false);
    let out = render(
        &mut renderer,
        vec![
            json!({"event": "part_complete", "message_id": "m", "index": 0, "part": {"type": "step_start", "step_id": "s1", "step_name": "step 1"}}),
            json!({"event": "part_complete", "message_id": "m", "index": 9, "part": {"type": "step_start", "step_id": "s2", "step_name": "step 2"}}),
            json!({"event": "part_start", "message_id": "m", "index": 1, "type": "tool_call", "tool_call_id": "c1", "tool_name": "write_file"}),
            delta(1, "{\"path\":"),
            delta(1, "\"a.txt\"}"),
            json!({"event": "part_complete", "message_id": "m", "index": 1, "part": {"type": "tool_call", "tool_call_id": "c1", "tool_name": "write_file", "args": {"path": "a.txt"}}}),
            json!({"event": "part_complete", "message_id": "m", "index": 2, "part": {"type": "tool_error", "tool_call_id": "c1", "error_type": "VALIDATION", "message": "content is required"}}),
            json!({"event": "part_complete", "message_id": "m", "index": 3, "part": {"type": "tool_call", "tool_call_id": "c2", "tool_name": "read_file", "args": {"path": "a.txt"}}}),
            json!({"event": "part_complete", "message_id": "m", "index": 4, "part": {"type": "tool_result", "tool_call_id": "c2", "tool_name": "read_file", "result": "hello"}}),
            json!({"event": "run_status", "status": "failed", "error": {"code": "provider_error", "message": "boom"}}),
        ],
    );
    assert_eq!(
        out,
        "── step 2 ──\n\
         ▸ write_file {\"path\":\"a.txt\"}\n\
         ✗ write_file invalid arguments: content is required\n\
         ▸ read_file {\"path\":\"a.txt\"}\n\
         ✓ read_file → hello\n\
         ✗ the run failed: boom (provider_error)\n"
    );
}

#[test]
fn the_spinner_turns_while_a_call_runs_and_goes_when_it_answers() {
    let mut renderer = Renderer::new(false, true);
    let call = events(vec![
        json!({"event": "part_complete", "message_id": "m", "index": 0, "part": {"type": "tool_call", "tool_call_id": "c1", "tool_name": "slow", "args": {}}}),
    ]);
    let out = renderer.event(&call[0]);
    assert_eq!(out, "▸ slow {}\n⠋ running slow");
    assert!(renderer.spinning());
    let clear = "\r\u{1b}[2K";
    assert_eq!(renderer.tick(), format!("{clear}⠙ running slow"));
    let result = events(vec![
        json!({"event": "part_complete", "message_id": "m", "index": 1, "part": {"type": "tool_result", "tool_call_id": "c1", "result": {"ok": true}}}),
    ]);
    assert_eq!(
        renderer.event(&result[0]),
        format!("{clear}✓ slow → {{\"ok\":true}}\n")
    );
    assert!(!renderer.spinning());
    assert_eq!(renderer.tick(), "");
}

#[test]
fn every_other_part_is_one_line() {
    let mut renderer = Renderer::new(false, false);
    let out = render(
        &mut renderer,
        vec![
            json!({"event": "part_complete", "message_id": "m", "index": 0, "part": {"type": "approval_request", "approval_id": "a1", "tool_call_id": "c1", "reason": "rm needs approval"}}),
            json!({"event": "part_complete", "message_id": "m", "index": 1, "part": {"type": "approval_response", "approval_id": "a1", "approved": false, "reason": "no"}}),
            json!({"event": "part_complete", "message_id": "m", "index": 2, "part": {"type": "file", "media_type": "image/png", "url": "https://x/y.png", "filename": "y.png"}}),
            json!({"event": "part_complete", "message_id": "m", "index": 3, "part": {"type": "data", "name": "weather", "data": {"c": 3}}}),
            json!({"event": "part_complete", "message_id": "m", "index": 4, "part": {"type": "artifact", "artifact_id": "a", "title": "Report", "version": 2, "preview": "Sales"}}),
            json!({"event": "part_complete", "message_id": "m", "index": 5, "part": {"type": "plan_update", "plan_id": "p", "action": "created", "details": "three steps"}}),
            json!({"event": "part_complete", "message_id": "m", "index": 6, "part": {"type": "source", "source_id": "s", "url": "https://docs", "title": "Docs"}}),
            json!({"event": "error", "code": "tool_output_cut", "message": "output cut"}),
            json!({"event": "run_status", "status": "canceled"}),
        ],
    );
    assert_eq!(
        out,
        "? rm needs approval\n\
         denied: no\n\
         📎 y.png (image/png) https://x/y.png\n\
         ◆ weather: {\"c\":3}\n\
         ▣ Report v2: Sales\n\
         ☰ plan created: three steps\n\
         ↗ Docs https://docs\n\
         ✗ output cut (tool_output_cut)\n\
         ■ canceled\n"
    );
}

#[test]
fn long_values_are_cut_to_one_line() {
    let long = "x\n".repeat(200);
    let short = shorten(&long);
    assert_eq!(short.chars().count(), MAX_VALUE_CHARS);
    assert!(short.ends_with('…') && !short.contains('\n'));
}

#[test]
fn an_approval_prompt_names_the_call() {
    let mut renderer = Renderer::new(false, false);
    let prompt = renderer.approval_prompt(&Approval {
        agent: None,
        approval_id: "a1".into(),
        tool_name: "write_file".into(),
        args: "{\"path\":\"a.txt\"}".into(),
        reason: None,
    });
    assert_eq!(prompt, "? allow write_file {\"path\":\"a.txt\"} [y/n] ");
}

#[test]
fn parallel_calls_do_not_interleave_their_arguments() {
    let mut renderer = Renderer::new(false, false);
    let start = |index: u32, id: &str, name: &str| {
        json!({"event": "part_start", "message_id": "m", "index": index,
               "type": "tool_call", "tool_call_id": id, "tool_name": name})
    };
    let complete = |index: u32, id: &str, name: &str, args: &str| {
        json!({"event": "part_complete", "message_id": "m", "index": index,
               "part": {"type": "tool_call", "tool_call_id": id, "tool_name": name,
                        "args": serde_json::from_str::<Value>(args).expect("JSON arguments")}})
    };
    let out = render(
        &mut renderer,
        vec![
            start(0, "c1", "list_files"),
            start(1, "c2", "read_file"),
            delta(0, "{\"path\":\"/de"),
            delta(1, "{\"path\":\"/de"),
            delta(0, "mo\"}"),
            delta(1, "mo/note.txt\"}"),
            complete(0, "c1", "list_files", r#"{"path":"/demo"}"#),
            complete(1, "c2", "read_file", r#"{"path":"/demo/note.txt"}"#),
        ],
    );
    assert_eq!(
        out,
        "▸ list_files {\"path\":\"/demo\"}\n▸ read_file {\"path\":\"/demo/note.txt\"}\n"
    );
}

#[test]
fn once_stopping_only_the_end_of_the_run_shows() {
    let mut renderer = Renderer::new(false, false);
    let before: String = events(vec![
        json!({"event": "part_start", "message_id": "m", "index": 0, "type": "text"}),
        delta(0, "one "),
    ])
    .iter()
    .map(|event| renderer.event(event))
    .collect();
    let stop = renderer.stop("stopping…");
    let after = render(
        &mut renderer,
        vec![
            delta(0, "two "),
            json!({"event": "part_complete", "message_id": "m", "index": 0, "part": {"type": "text", "text": "one two "}}),
            json!({"event": "run_status", "status": "canceled"}),
        ],
    );
    assert_eq!(before + &stop + &after, "one \nstopping…\n■ canceled\n");
    // The next answer shows in full.
    let next = render(&mut renderer, vec![delta(1, "three")]);
    assert_eq!(next, "three\n");
}

/// An event of the sub-agent's run at `path`.
fn nested(path: &[&str], mut event: Value) -> Value {
    event["namespace"] = json!(path);
    event
}

fn created(run_id: &str, agent: &str, call: &str) -> Value {
    json!({"event": "run_created", "run_id": run_id, "agent": agent,
           "parent_run_id": "r_top", "parent_tool_call_id": call})
}

fn text_delta(message_id: &str, index: u32, text: &str) -> Value {
    json!({"event": "part_delta", "message_id": message_id, "index": index, "delta": text})
}

#[test]
fn sub_agents_runs_show_indented_under_their_calls_each_line_named() {
    let mut renderer = Renderer::new(false, false);
    let west = ["r_west"];
    let north = ["r_north"];
    let manager = ["r_west", "r_manager"];
    let text_start = |message_id: &str| json!({"event": "part_start", "message_id": message_id, "index": 0, "type": "text"});
    let out = render(
        &mut renderer,
        vec![
            json!({"event": "part_start", "message_id": "m", "index": 0, "type": "tool_call", "tool_call_id": "c1", "tool_name": "west"}),
            delta(0, "{\"input\":\"tidy\"}"),
            json!({"event": "part_complete", "message_id": "m", "index": 0, "part": {"type": "tool_call", "tool_call_id": "c1", "tool_name": "west", "args": {"input": "tidy"}}}),
            nested(&west, created("r_west", "west", "c1")),
            nested(&west, text_start("mw")),
            nested(&west, text_delta("mw", 0, "Asking the ")),
            nested(&north, created("r_north", "north", "c2")),
            nested(&north, text_start("mn")),
            nested(&north, text_delta("mn", 0, "North is ")),
            // Parallel runs' text interleaves a whole line at a time.
            nested(&west, text_delta("mw", 0, "manager.\nThen I wait.")),
            nested(&north, text_delta("mn", 0, "cold.")),
            nested(
                &north,
                json!({"event": "part_complete", "message_id": "mn", "index": 0, "part": {"type": "text", "text": "North is cold."}}),
            ),
            nested(
                &north,
                json!({"event": "run_status", "status": "completed"}),
            ),
            nested(
                &west,
                json!({"event": "part_complete", "message_id": "mw", "index": 0, "part": {"type": "text", "text": "Asking the manager.\nThen I wait."}}),
            ),
            // The sub-agent's calls are its own: the same id as the top run's call.
            nested(
                &west,
                json!({"event": "part_start", "message_id": "mw", "index": 1, "type": "tool_call", "tool_call_id": "c1", "tool_name": "manager"}),
            ),
            nested(&west, text_delta("mw", 1, "{\"input\":\"go\"}")),
            nested(
                &west,
                json!({"event": "part_complete", "message_id": "mw", "index": 1, "part": {"type": "tool_call", "tool_call_id": "c1", "tool_name": "manager", "args": {"input": "go"}}}),
            ),
            nested(&manager, created("r_manager", "manager", "c1")),
            nested(
                &manager,
                json!({"event": "part_complete", "message_id": "mm", "index": 0, "part": {"type": "step_start", "step_id": "s"}}),
            ),
            nested(
                &manager,
                json!({"event": "part_complete", "message_id": "mm", "index": 1, "part": {"type": "approval_request", "approval_id": "apr_1", "tool_call_id": "c9", "reason": "needs a yes"}}),
            ),
            nested(
                &manager,
                json!({"event": "run_status", "status": "awaiting", "awaiting": "approval"}),
            ),
            nested(
                &manager,
                json!({"event": "part_complete", "message_id": "mm2", "index": 0, "part": {"type": "approval_response", "approval_id": "apr_1", "approved": true}}),
            ),
            nested(
                &manager,
                json!({"event": "part_complete", "message_id": "mm2", "index": 1, "part": {"type": "text", "text": "Done."}}),
            ),
            nested(
                &manager,
                json!({"event": "run_status", "status": "completed"}),
            ),
            nested(
                &west,
                json!({"event": "part_complete", "message_id": "mw", "index": 2, "part": {"type": "tool_result", "tool_call_id": "c1", "result": "Done."}}),
            ),
            nested(
                &west,
                json!({"event": "run_status", "status": "failed", "error": {"code": "provider_error", "message": "boom"}}),
            ),
            json!({"event": "part_complete", "message_id": "m", "index": 1, "part": {"type": "tool_error", "tool_call_id": "c1", "error_type": "EXECUTION", "message": "the agent 'west' did not answer"}}),
            json!({"event": "part_start", "message_id": "m", "index": 2, "type": "text"}),
            delta(2, "West failed."),
        ],
    );
    assert_eq!(
        out,
        [
            "▸ west {\"input\":\"tidy\"}",
            "  ◆ west",
            "  ◆ north",
            "  west │ Asking the manager.",
            "  north │ North is cold.",
            "  north │ ✓ done",
            "  west │ Then I wait.",
            "  west │ ▸ manager {\"input\":\"go\"}",
            "    ◆ manager",
            "    manager │ ? needs a yes",
            "    manager │ approved",
            "    manager │ Done.",
            "    manager │ ✓ done",
            "  west │ ✓ manager → Done.",
            "  west │ ✗ failed: boom (provider_error)",
            "✗ west failed: the agent 'west' did not answer",
            "West failed.",
            "",
        ]
        .join("\n")
    );
}

#[test]
fn a_sub_agents_lines_are_indented_and_named_in_color_too() {
    let mut renderer = Renderer::new(true, false);
    let out = render(
        &mut renderer,
        vec![
            nested(&["r_a"], created("r_a", "scout", "c1")),
            nested(
                &["r_a"],
                json!({"event": "part_complete", "message_id": "ma", "index": 1, "part": {"type": "text", "text": "Found it."}}),
            ),
        ],
    );
    assert_eq!(
        out,
        "  \u{1b}[38;5;14m◆ scout\u{1b}[39m\n  \u{1b}[2mscout │ \u{1b}[0mFound it.\n"
    );
}

#[test]
fn approvals_at_any_depth_are_asked_naming_their_agent() {
    let stream = events(vec![
        json!({"event": "run_created", "run_id": "r_top", "agent": "lead"}),
        nested(&["r_w"], created("r_w", "west", "c1")),
        nested(
            &["r_w", "r_c"],
            json!({"event": "run_created", "run_id": "r_c", "agent": "cleaner", "parent_run_id": "r_w", "parent_tool_call_id": "c1"}),
        ),
        nested(
            &["r_w", "r_c"],
            json!({"event": "message_start", "message_id": "mc", "role": "assistant"}),
        ),
        nested(
            &["r_w", "r_c"],
            json!({"event": "part_complete", "message_id": "mc", "index": 0, "part": {"type": "tool_call", "tool_call_id": "c1", "tool_name": "write_file", "args": {"path": "a.txt"}}}),
        ),
        nested(
            &["r_w", "r_c"],
            json!({"event": "part_complete", "message_id": "mc", "index": 1, "part": {"type": "approval_request", "approval_id": "apr_9", "tool_call_id": "c1"}}),
        ),
        nested(
            &["r_w", "r_c"],
            json!({"event": "run_status", "status": "awaiting", "awaiting": "approval"}),
        ),
        nested(
            &["r_w"],
            json!({"event": "run_status", "status": "awaiting", "awaiting": "approval"}),
        ),
        json!({"event": "run_status", "status": "awaiting", "awaiting": "approval"}),
    ]);
    let mut run = Accumulator::default();
    for event in &stream {
        run.push(event).expect("a valid stream");
    }
    let pending = approvals_of(&run);
    assert_eq!(
        pending,
        [Approval {
            agent: Some("cleaner".into()),
            approval_id: "apr_9".into(),
            tool_name: "write_file".into(),
            args: "{\"path\":\"a.txt\"}".into(),
            reason: None,
        }]
    );
    let mut renderer = Renderer::new(false, false);
    assert_eq!(
        renderer.approval_prompt(&pending[0]),
        "? cleaner: allow write_file {\"path\":\"a.txt\"} [y/n] "
    );
}
