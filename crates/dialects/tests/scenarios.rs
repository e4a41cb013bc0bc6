//! The canonical scenario set, written out for the peers (`golden/scenarios/<name>.json`) and as
//! native transcripts (`golden/native/<name>.sse`), which decode back to the same events.

mod common;

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
