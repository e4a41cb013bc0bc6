//! Tests of [`Settled`]: the values of a streamed JSON text, each reported once, when definite.

use agentwire_core::PartialJson;
use agentwire_core::settled::{Advance, Segment, Settled, Step};
use agentwire_testkit::strategy::json_value;
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::Index;
use serde_json::{Value, json};

/// A step as owned data: `(kind, JSON Pointer, value)`.
type Owned = (&'static str, String, Option<Value>);

fn owned(step: Step<'_, '_>) -> Owned {
    let pointer = |path: &[Segment<'_>]| {
        path.iter()
            .map(|segment| match segment {
                Segment::Key(key) => format!("/{}", key.replace('~', "~0").replace('/', "~1")),
                Segment::Index(index) => format!("/{index}"),
            })
            .collect::<String>()
    };
    match step {
        Step::Open { path, array } => ("open", pointer(path), Some(empty(array))),
        Step::Value { path, value } => ("value", pointer(path), Some(value.clone())),
        Step::Close { path } => ("close", pointer(path), None),
    }
}

fn empty(array: bool) -> Value {
    if array { json!([]) } else { json!({}) }
}

/// The steps after each piece, then after `finish`.
fn steps_of(pieces: &[&str]) -> Vec<Vec<Owned>> {
    let (mut parser, mut view, mut settled) =
        (PartialJson::default(), Value::Null, Settled::default());
    let mut all = Vec::new();
    for piece in pieces {
        parser.push(&mut view, piece).expect("valid JSON");
        let mut steps = Vec::new();
        let advance = settled.advance(&parser, &view, |step| steps.push(owned(step)));
        assert_eq!(advance, Advance::Reported);
        all.push(steps);
    }
    parser.finish(&mut view).expect("complete");
    let mut steps = Vec::new();
    let _ = settled.advance(&parser, &view, |step| steps.push(owned(step)));
    all.push(steps);
    all
}

#[track_caller]
fn check(pieces: &[&str], expect: &[&[&str]]) {
    let shown: Vec<Vec<String>> = steps_of(pieces)
        .into_iter()
        .map(|steps| {
            steps
                .into_iter()
                .map(|(kind, pointer, value)| match value {
                    Some(value) if kind == "value" => format!("{kind} {pointer} {value}"),
                    _ => format!("{kind} {pointer}"),
                })
                .collect()
        })
        .collect();
    let expect: Vec<Vec<String>> = expect
        .iter()
        .map(|steps| steps.iter().map(|step| (*step).to_owned()).collect())
        .collect();
    assert_eq!(shown, expect, "{pieces:?}");
}

#[test]
fn containers_open_at_their_bracket_and_close_after_their_members() {
    check(
        &[r#"{"a": [1, {"#, r#""b": nu"#, "ll}], ", r#""c": {}}"#],
        &[
            &["open ", "open /a", "value /a/0 1", "open /a/1"],
            &[],
            &["value /a/1/b null", "close /a/1", "close /a"],
            &["open /c", "close /c", "close "],
            &[],
        ],
    );
}

#[test]
fn a_scalar_is_reported_once_it_has_ended() {
    // A string grows in the view, a number may go on: neither is reported before it ends.
    check(
        &[r#"["ab"#, r#"c", 12"#, "3", "]"],
        &[
            &["open "],
            &["value /0 \"abc\""],
            &[],
            &["value /1 123", "close "],
            &[],
        ],
    );
    // A number at the root ends only with the text.
    check(&["4", "2"], &[&[], &[], &["value  42"]]);
    check(&[r#""x"#, r#"""#], &[&[], &["value  \"x\""], &[]]);
}

#[test]
fn keys_with_slashes_and_tildes_are_escaped_in_pointers() {
    check(
        &[r#"{"a/b~": true}"#],
        &[&["open ", "value /a~1b~0 true", "close "], &[]],
    );
}

#[test]
fn a_repeated_key_is_said_rather_than_reported_wrong() {
    let (mut parser, mut view, mut settled) =
        (PartialJson::default(), Value::Null, Settled::default());
    parser
        .push(&mut view, r#"{"a": 1, "b": 2, "a": 3"#)
        .expect("valid");
    assert_eq!(
        settled.advance(&parser, &view, |_| {}),
        Advance::RepeatedKey
    );
}

/// Splits `text` at the given positions, each moved down to a char boundary.
fn split<'t>(text: &'t str, cuts: &[Index]) -> Vec<&'t str> {
    let mut positions: Vec<usize> = cuts
        .iter()
        .map(|cut| {
            let mut position = cut.index(text.len() + 1);
            while !text.is_char_boundary(position) {
                position -= 1;
            }
            position
        })
        .collect();
    positions.extend([0, text.len()]);
    positions.sort_unstable();
    positions.dedup();
    positions.windows(2).map(|w| &text[w[0]..w[1]]).collect()
}

/// Objects whose keys are unique, as every generated one is (a map's keys are).
fn document() -> impl Strategy<Value = Value> {
    json_value()
}

proptest! {
    /// However the text is split, the steps rebuild the value exactly, every value is
    /// reported once, and a value is reported only as it finally is.
    #[test]
    fn steps_rebuild_the_value_whatever_the_split(
        value in document(),
        pretty in any::<bool>(),
        cuts in vec(any::<Index>(), 0..12),
    ) {
        let text = match pretty {
            true => serde_json::to_string_pretty(&value),
            false => serde_json::to_string(&value),
        }.expect("serializes");
        let pieces = split(&text, &cuts);
        let mut rebuilt = Value::Null;
        let mut open = Vec::new();
        for (kind, pointer, new) in steps_of(&pieces).into_iter().flatten() {
            match (kind, new) {
                ("close", _) => prop_assert_eq!(open.pop(), Some(pointer.clone())),
                (kind, Some(new)) => {
                    if kind == "value" {
                        prop_assert_eq!(value.pointer(&pointer), Some(&new), "reported early");
                    } else {
                        open.push(pointer.clone());
                    }
                    let add: json_patch::Patch = serde_json::from_value(
                        json!([{"op": "add", "path": pointer, "value": new}]),
                    ).expect("an operation");
                    json_patch::patch(&mut rebuilt, &add).expect("applies in order");
                }
                _ => prop_assert!(false, "an open or value step without a value"),
            }
        }
        prop_assert!(open.is_empty(), "every container closed: {open:?}");
        prop_assert_eq!(rebuilt, value);
    }
}
