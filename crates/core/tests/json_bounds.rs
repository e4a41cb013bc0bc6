//! A document changed by JSON Patch stays within its bounds: the attacks that once built
//! states deeper than any parser reads or larger than any server holds are refused before
//! they take effect, whole or streamed, and random patches never leave a document past the
//! bounds, nor a refused one changed.
#![allow(clippy::unwrap_used)]

use agentwire_core::json_bounds::{BoundsError, JsonBounds, MAX_DEPTH, measure};
use agentwire_core::patch_stream::{PatchStream, PatchStreamError, apply_patch};
use json_patch::PatchOperation;
use proptest::prelude::*;
use serde_json::{Value, json};

const UNBOUNDED: JsonBounds = JsonBounds {
    max_depth: usize::MAX,
    max_bytes: usize::MAX,
};

fn ops(ops: Value) -> Vec<PatchOperation> {
    serde_json::from_value(ops).unwrap()
}

/// `{"": {"": … {} …}}`, `levels` objects deep, and the path of its innermost object.
fn nested(levels: usize) -> (Value, String) {
    let mut value = json!({});
    for _ in 1..levels {
        value = json!({ "": value });
    }
    (value, "/".repeat(levels - 1))
}

/// Applies `patch` whole with the default bounds, checking a refusal leaves the document as
/// it was; the error.
#[track_caller]
fn refused(document: &Value, patch: &[PatchOperation]) -> PatchStreamError {
    let mut changed = document.clone();
    let error = apply_patch(&mut changed, patch, JsonBounds::default()).unwrap_err();
    assert_eq!(&changed, document, "a refused patch changes nothing");
    error
}

#[test]
fn root_self_copies_into_a_deep_state_are_refused() {
    let (document, innermost) = nested(126);
    let patch = ops(json!(
        (0..6)
            .map(|_| json!({"op": "copy", "from": "", "path": format!("{innermost}/")}))
            .collect::<Vec<_>>()
    ));
    let error = refused(&document, &patch);
    assert_eq!(
        error.bounds(),
        Some(BoundsError::TooDeep {
            max_depth: MAX_DEPTH
        })
    );
    assert!(
        error.to_string().starts_with("operation 0 (copy "),
        "{error}"
    );
}

#[test]
fn adds_building_twenty_thousand_levels_are_refused() {
    let (value, _) = nested(125);
    let (mut document, mut path) = (json!({}), String::new());
    let mut patch = Vec::new();
    // Each adds 126 levels inside the innermost object of the one before.
    for _ in 0..160 {
        path.push_str("/a");
        patch.push(json!({"op": "add", "path": path, "value": {"a": value}}));
        path.push_str("/a");
        path.push_str(&"/".repeat(124));
    }
    let error = refused(&document, &ops(json!(patch)));
    assert!(matches!(error.bounds(), Some(BoundsError::TooDeep { .. })));
    // Applied one by one, the first that would pass the bound is refused.
    for op in ops(json!(patch)) {
        if apply_patch(&mut document, &[op], JsonBounds::default()).is_err() {
            break;
        }
    }
    assert!(measure(&document, UNBOUNDED).depth <= MAX_DEPTH);
}

#[test]
fn copies_of_a_large_string_are_refused_before_they_are_made() {
    let document = json!({"big": "x".repeat(1_000_000)});
    let patch = ops(json!(
        (0..200)
            .map(|i| json!({"op": "copy", "from": "/big", "path": format!("/c{i}")}))
            .collect::<Vec<_>>()
    ));
    let error = refused(&document, &patch);
    assert_eq!(
        error.bounds(),
        Some(BoundsError::TooLarge {
            max_bytes: 1024 * 1024
        })
    );
    assert!(error.to_string().starts_with("operation 0 "), "{error}");
}

#[test]
fn root_self_copies_doubling_a_small_state_are_refused() {
    let document = json!({"note": "x".repeat(88)});
    assert_eq!(serde_json::to_string(&document).unwrap().len(), 99);
    let patch = ops(json!(
        (0..18)
            .map(|i| json!({"op": "copy", "from": "", "path": format!("/c{i}")}))
            .collect::<Vec<_>>()
    ));
    let error = refused(&document, &patch);
    assert!(matches!(error.bounds(), Some(BoundsError::TooLarge { .. })));
    // The refusal comes at the copy that would pass 1 MiB: 99 bytes doubled 14 times.
    assert!(error.to_string().starts_with("operation 13 "), "{error}");
}

#[test]
fn a_streamed_patch_past_the_bounds_fails_and_restores_the_document() {
    let document = json!({"n": 1});
    let bounds = JsonBounds {
        max_depth: 4,
        max_bytes: 64,
    };
    // Deep: each member streams into the document as it is written.
    let text = r#"{"ops": [{"op": "add", "path": "/d", "value": {"a": {"b": {"c": {"d": 1}}}}}]}"#;
    let mut changed = document.clone();
    let mut stream = PatchStream::new(&changed, bounds);
    let error = text
        .as_bytes()
        .chunks(3)
        .map(|piece| stream.push(&mut changed, std::str::from_utf8(piece).unwrap()))
        .find_map(Result::err)
        .unwrap();
    assert_eq!(error.bounds(), Some(BoundsError::TooDeep { max_depth: 4 }));
    assert_eq!(changed, document);
    // Large: a string that ends past the bound.
    let text = format!(
        r#"{{"ops": [{{"op": "add", "path": "/s", "value": "{}"}}]}}"#,
        "y".repeat(80)
    );
    let mut stream = PatchStream::new(&changed, bounds);
    let error = stream.push(&mut changed, &text).unwrap_err();
    assert_eq!(
        error.bounds(),
        Some(BoundsError::TooLarge { max_bytes: 64 })
    );
    assert_eq!(changed, document);
}

#[test]
fn a_document_exactly_at_the_bounds_is_kept() {
    let bounds = JsonBounds {
        max_depth: 3,
        max_bytes: 27,
    };
    let mut document = json!({"a": [1]});
    let patch = ops(json!([
        {"op": "add", "path": "/b", "value": [[2]]},
        {"op": "copy", "from": "/a", "path": "/c"}
    ]));
    apply_patch(&mut document, &patch, bounds).unwrap();
    assert_eq!(serde_json::to_string(&document).unwrap().len(), 27);
    let one_more = ops(json!([{"op": "add", "path": "/a/-", "value": 3}]));
    let error = apply_patch(&mut document, &one_more, bounds).unwrap_err();
    assert_eq!(
        error.bounds(),
        Some(BoundsError::TooLarge { max_bytes: 27 })
    );
}

/// Every path in `document`, the root first.
fn paths(document: &Value) -> Vec<String> {
    let mut paths = vec![String::new()];
    let mut stack = vec![(String::new(), document)];
    while let Some((path, value)) = stack.pop() {
        let children: Vec<(String, &Value)> = match value {
            Value::Object(members) => members
                .iter()
                .map(|(key, member)| {
                    let token = key.replace('~', "~0").replace('/', "~1");
                    (format!("{path}/{token}"), member)
                })
                .collect(),
            Value::Array(items) => items
                .iter()
                .enumerate()
                .map(|(index, item)| (format!("{path}/{index}"), item))
                .collect(),
            _ => Vec::new(),
        };
        for (path, child) in children {
            paths.push(path.clone());
            stack.push((path, child));
        }
    }
    paths
}

/// An operation over a document: kinds, paths and values drawn so that most apply, and copies
/// of the root and of large strings are frequent.
#[derive(Clone, Debug)]
enum Draw {
    Add(usize, &'static str, Value),
    Copy(usize, usize, &'static str),
    Move(usize, usize, &'static str),
    Replace(usize, Value),
    Remove(usize),
}

fn draw() -> impl Strategy<Value = Draw> {
    let key = prop::sample::select(vec!["a", "b", "long_key", "-", "0"]);
    let value = prop_oneof![
        Just(json!(1)),
        Just(json!("x".repeat(60))),
        Just(json!({"k": [1, {"d": [[]]}]})),
        Just(json!([])),
    ];
    prop_oneof![
        (any::<usize>(), key.clone(), value.clone()).prop_map(|(at, k, v)| Draw::Add(at, k, v)),
        (any::<usize>(), any::<usize>(), key.clone()).prop_map(|(f, at, k)| Draw::Copy(f, at, k)),
        (Just(0usize), any::<usize>(), key.clone()).prop_map(|(f, at, k)| Draw::Copy(f, at, k)),
        (any::<usize>(), any::<usize>(), key).prop_map(|(f, at, k)| Draw::Move(f, at, k)),
        (any::<usize>(), value).prop_map(|(at, v)| Draw::Replace(at, v)),
        any::<usize>().prop_map(Draw::Remove),
    ]
}

/// The operation `draw` makes on `document`.
fn operation(document: &Value, draw: &Draw) -> PatchOperation {
    let paths = paths(document);
    let pick = |at: usize| paths[at % paths.len()].clone();
    let op = match draw {
        Draw::Add(at, key, value) => {
            json!({"op": "add", "path": format!("{}/{key}", pick(*at)), "value": value})
        }
        Draw::Copy(from, at, key) => {
            json!({"op": "copy", "from": pick(*from), "path": format!("{}/{key}", pick(*at))})
        }
        Draw::Move(from, at, key) => {
            json!({"op": "move", "from": pick(*from), "path": format!("{}/{key}", pick(*at))})
        }
        Draw::Replace(at, value) => json!({"op": "replace", "path": pick(*at), "value": value}),
        Draw::Remove(at) => json!({"op": "remove", "path": pick(*at)}),
    };
    serde_json::from_value(op).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn random_patches_never_leave_a_document_past_its_bounds(
        start in agentwire_testkit::strategy::json_object(),
        draws in prop::collection::vec(draw(), 1..12),
        max_depth in 2usize..8,
        max_bytes in 40usize..600,
    ) {
        let bounds = JsonBounds { max_depth, max_bytes };
        prop_assume!(bounds.check(&start).is_ok());
        // The operations are drawn over the document as unbounded JSON Patch leaves it, so
        // most of them apply; `reference` is that document and whether it stayed in bounds.
        let mut reference = start.clone();
        let mut within = true;
        let mut patch = Vec::new();
        let mut moved = false;
        for draw in &draws {
            let op = operation(&reference, draw);
            moved |= matches!(op, PatchOperation::Move(_));
            let mut next = reference.clone();
            if json_patch::patch(&mut next, std::slice::from_ref(&op)).is_err() {
                break;
            }
            reference = next;
            patch.push(op);
            if measure(&reference, UNBOUNDED).depth > max_depth
                || measure(&reference, UNBOUNDED).bytes > max_bytes
            {
                within = false;
                break;
            }
        }
        let mut document = start.clone();
        match apply_patch(&mut document, &patch, bounds) {
            Ok(_) => {
                prop_assert!(bounds.check(&document).is_ok());
                prop_assert_eq!(&document, &reference);
            }
            Err(error) => {
                prop_assert_eq!(&document, &start, "a refused patch changes nothing");
                // Only a patch that passes the bounds somewhere is refused for them (a `move`
                // is counted by an upper bound of its key's bytes).
                prop_assert!(!within || (moved && error.bounds().is_some()), "{}", error);
            }
        }
        // Streamed, the same patch ends the same way.
        let text = json!({"ops": patch}).to_string();
        let mut streamed = start.clone();
        let mut stream = PatchStream::new(&streamed, bounds);
        let chars: Vec<char> = text.chars().collect();
        let res = chars
            .chunks(7)
            .try_for_each(|piece| stream.push(&mut streamed, &piece.iter().collect::<String>()).map(drop))
            .and_then(|()| stream.finish(&mut streamed).map(drop));
        match res {
            Ok(()) => prop_assert!(bounds.check(&streamed).is_ok()),
            Err(_) => prop_assert_eq!(&streamed, &start),
        }
    }
}

/// Tool arguments nested past the bound are kept as their text, as text that is not JSON is,
/// by the builder and by the accumulator alike: they travel inside events that must read back.
#[test]
fn tool_arguments_nested_past_the_bound_are_kept_as_text() {
    use agentwire_core::{Accumulator, Emitter, MessageBuilder, MessageStart, Part, Role};
    for (levels, json) in [(MAX_DEPTH, true), (MAX_DEPTH + 1, false)] {
        let text = format!("{}{}", "[".repeat(levels), "]".repeat(levels));
        let mut out = Emitter::default();
        let mut builder =
            MessageBuilder::start(&mut out, MessageStart::new("msg_1", Role::Assistant));
        builder.tool_call_start(&mut out, "tc_1", "deep").unwrap();
        for piece in text.as_bytes().chunks(16) {
            let piece = std::str::from_utf8(piece).unwrap();
            builder.tool_call_delta(&mut out, "tc_1", piece).unwrap();
        }
        builder.tool_call_end(&mut out, "tc_1").unwrap();
        let built = builder.message().clone();
        builder.finish(&mut out);
        let mut accumulator = Accumulator::default();
        for event in out.drain() {
            accumulator.push(&event).unwrap();
        }
        for message in [&built, &accumulator.messages()[0]] {
            let Part::ToolCall(call) = &message.parts[0] else {
                panic!("{message:?}");
            };
            assert_eq!(call.args.0.is_array(), json, "{levels} levels");
            assert_eq!(call.args.0.is_string(), !json, "{levels} levels");
        }
    }
}
