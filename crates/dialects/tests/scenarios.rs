//! The canonical scenario set, written out for the peers (`golden/scenarios/<name>.json`) and as
//! native transcripts (`golden/native/<name>.sse`), which decode back to the same events.

mod common;

use agentwire_core::{Accumulator, EventKind, Part, RunId, RunStatus};
use agentwire_dialects::native::{NativeSseDecoder, NativeSseEncoder};
use agentwire_testkit::{golden, scenarios};
use common::{accumulate, decode_whole, encode};

#[test]
fn every_scenario_accumulates_to_its_messages() {
    for scenario in scenarios::all() {
        assert_eq!(
            accumulate(&scenario.events),
            scenario.messages,
            "{}",
            scenario.name
        );
        assert_eq!(
            scenario.messages.len(),
            1,
            "{}: one assistant turn",
            scenario.name
        );
    }
}

#[test]
fn the_subagent_scenarios_nest_their_runs_and_the_approval_resumes() {
    let mut accumulator = Accumulator::default();
    let approval = scenarios::subagent_approval();
    let resumed = scenarios::subagent_approval_resumed();
    for event in approval.events.iter().chain(&resumed) {
        accumulator
            .push(event)
            .unwrap_or_else(|err| panic!("{event:?}: {err}"));
    }
    assert_eq!(accumulator.status(), Some(RunStatus::Completed));
    let cleaner = accumulator
        .descendant(&["run_b", "run_c", "run_d"].map(RunId::from))
        .expect("three down");
    assert_eq!(cleaner.agent(), Some("cleaner"));
    assert_eq!(
        cleaner.messages().len(),
        2,
        "one more message per resumption"
    );
    assert_eq!(cleaner.status(), Some(RunStatus::Completed));

    let subagents = scenarios::subagents();
    let runs: Vec<(String, String)> = subagents
        .subagents()
        .iter()
        .map(|run| (run["run_id"].to_string(), run["namespace"].to_string()))
        .collect();
    assert_eq!(
        runs,
        [
            (r#""run_b""#.into(), r#"["run_b"]"#.into()),
            (r#""run_d""#.into(), r#"["run_b","run_d"]"#.into()),
            (r#""run_c""#.into(), r#"["run_c"]"#.into()),
        ]
    );
    // Every child's events come before the result that answers its call.
    let result_at = |call: &str| {
        subagents
            .events
            .iter()
            .position(|event| {
                event.is_own()
                    && matches!(&event.kind, EventKind::PartComplete { part: Part::ToolResult(result), .. } if result.tool_call_id == call)
            })
            .expect("a result")
    };
    let last_of = |run: &str| {
        subagents
            .events
            .iter()
            .rposition(|event| event.namespace.path().first().is_some_and(|id| id == run))
            .expect("events")
    };
    assert!(last_of("run_b") < result_at("call_1"));
    assert!(last_of("run_c") < result_at("call_2"));
}

#[test]
fn scenarios_are_written_for_the_peers() {
    for scenario in scenarios::all() {
        let mut json = serde_json::to_vec_pretty(&scenario.to_json()).expect("serializes");
        json.push(b'\n');
        golden::check(
            common::golden("scenarios", &format!("{}.json", scenario.name)),
            &json,
        );
    }
}

#[test]
fn native_transcripts_are_golden_and_decode_to_the_same_events() {
    for scenario in scenarios::all() {
        let wire = encode(&mut NativeSseEncoder, &scenario.events);
        golden::check(
            common::golden("native", &format!("{}.sse", scenario.name)),
            &wire,
        );
        let decoded = decode_whole(&mut NativeSseDecoder::default(), &wire).expect("decodes");
        assert_eq!(decoded, scenario.events, "{}", scenario.name);
    }
}
