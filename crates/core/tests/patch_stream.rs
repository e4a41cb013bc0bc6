//! Tests of [`PatchStream`]: a document changed by a streamed `{"ops": [...]}` text, each
//! change reported once it is definite, and a client applying the reports always agreeing.

use agentwire_core::json_bounds::JsonBounds;
use agentwire_core::patch_stream::{PatchStream, PatchStreamError};
use agentwire_testkit::strategy::json_value;
use json_patch::{Patch, PatchOperation};
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::Index;
use serde_json::{Map, Value, json};

/// What a client holding a copy of the document sees: the reports, applied in order; a
/// snapshot wherever the server's document was set whole (a resync, a rollback).
struct Client {
    copy: Value,
    reported: Vec<PatchOperation>,
}

impl Client {
    fn apply(&mut self, ops: Vec<PatchOperation>) {
        json_patch::patch(&mut self.copy, &ops).expect("every report applies to the client's copy");
        self.reported.extend(ops);
    }
}

/// Streams `pieces` into `document`: the client, and how the stream ended.
fn stream(document: &mut Value, pieces: &[&str]) -> (Client, Result<bool, PatchStreamError>) {
    let mut client = Client {
        copy: document.clone(),
        reported: Vec::new(),
    };
    let mut stream = PatchStream::new(document, JsonBounds::default());
    for piece in pieces {
        match stream.push(document, piece) {
            Ok(ops) => client.apply(ops),
            Err(error) => {
                if stream.touched() {
                    client.copy = document.clone();
                }
                return (client, Err(error));
            }
        }
        assert_eq!(client.copy, *document, "after {piece:?}");
    }
    match stream.finish(document) {
        Ok(finished) => {
            if finished.resynced {
                client.copy = document.clone();
            }
            (client, Ok(finished.resynced))
        }
        Err(error) => {
            if stream.touched() {
                client.copy = document.clone();
            }
            (client, Err(error))
        }
    }
}

fn reported(client: &Client) -> Value {
    serde_json::to_value(&client.reported).expect("serializes")
}

#[test]
fn a_container_value_streams_as_an_empty_container_then_its_members() {
    let mut state = json!({"todo": []});
    let (client, end) = stream(
        &mut state,
        &[
            r#"{"ops": [{"op": "add", "path": "/todo/-", "value": {"title": "Wr"#,
            r#"ite", "tags": ["a", "#,
            r#""b"], "done": fal"#,
            r#"se}}, {"op": "replace", "path": "/title", "value": "Plan"}]}"#,
        ],
    );
    assert_eq!(
        end,
        Err(PatchStreamError::Apply {
            index: 1,
            op: "replace",
            path: "/title".into(),
            reason: "its path is not in the state",
        })
    );
    // The failure undid the call: the client is told with a snapshot.
    assert_eq!(state, json!({"todo": []}));
    assert_eq!(client.copy, state);

    let mut state = json!({"todo": [], "title": "Old"});
    let (client, end) = stream(
        &mut state,
        &[
            r#"{"ops": [{"op": "add", "path": "/todo/-", "value": {"title": "Wr"#,
            r#"ite", "tags": ["a", "#,
            r#""b"], "done": fal"#,
            r#"se}}, {"op": "replace", "path": "/title", "value": "Plan"}]}"#,
        ],
    );
    assert_eq!(end, Ok(false));
    assert_eq!(
        state,
        json!({"todo": [{"title": "Write", "tags": ["a", "b"], "done": false}], "title": "Plan"})
    );
    assert_eq!(
        reported(&client),
        json!([
            {"op": "add", "path": "/todo/0", "value": {}},
            {"op": "add", "path": "/todo/0/title", "value": "Write"},
            {"op": "add", "path": "/todo/0/tags", "value": []},
            {"op": "add", "path": "/todo/0/tags/0", "value": "a"},
            {"op": "add", "path": "/todo/0/tags/1", "value": "b"},
            {"op": "add", "path": "/todo/0/done", "value": false},
            {"op": "replace", "path": "/title", "value": "Plan"},
        ])
    );
}

#[test]
fn a_state_that_does_not_exist_yet_starts_as_an_empty_object() {
    let mut state = Value::Null;
    let (client, end) = stream(
        &mut state,
        &[
            r#"{"ops": [{"op": "add", "path": "/plan", "value": {"ti"#,
            r#"tle": "Trip"}}]}"#,
        ],
    );
    assert_eq!(end, Ok(false));
    assert_eq!(state, json!({"plan": {"title": "Trip"}}));
    assert_eq!(client.copy, state, "the client started from null too");
    assert_eq!(
        reported(&client),
        json!([
            {"op": "add", "path": "", "value": {}},
            {"op": "add", "path": "/plan", "value": {}},
            {"op": "add", "path": "/plan/title", "value": "Trip"},
        ])
    );

    // A failing call leaves no state, as before it.
    let mut state = Value::Null;
    let (client, end) = stream(
        &mut state,
        &[r#"{"ops": [{"op": "add", "path": "/a", "value": 1}, {"op": "remove", "path": "/b"}]}"#],
    );
    assert!(end.is_err());
    assert_eq!(state, Value::Null);
    assert_eq!(client.copy, Value::Null);

    // Applied whole, the same: the operation that started it is returned, to be sent first.
    let mut state = Value::Null;
    let patch: Patch =
        serde_json::from_value(json!([{"op": "add", "path": "/a", "value": 1}])).expect("a patch");
    let started =
        agentwire_core::patch_stream::apply_patch(&mut state, &patch, JsonBounds::default())
            .expect("applies");
    assert_eq!(state, json!({"a": 1}));
    assert_eq!(
        serde_json::to_value(started).expect("serializes"),
        json!({"op": "add", "path": "", "value": {}})
    );
    let mut state = Value::Null;
    let patch: Patch =
        serde_json::from_value(json!([{"op": "remove", "path": "/a"}])).expect("a patch");
    assert!(
        agentwire_core::patch_stream::apply_patch(&mut state, &patch, JsonBounds::default())
            .is_err()
    );
    assert_eq!(state, Value::Null, "a failed patch leaves no state");
}

#[test]
fn operations_without_a_streaming_value_apply_when_their_object_closes() {
    let mut state = json!({"a": 1, "b": [1, 2], "c": {"d": true}});
    let text = r#"{"ops": [
        {"op": "test", "path": "/a", "value": 1},
        {"op": "copy", "from": "/c", "path": "/e"},
        {"op": "move", "from": "/b/0", "path": "/f"},
        {"op": "remove", "path": "/a"},
        {"value": {"x": 1}, "op": "add", "path": "/g"}
    ]}"#;
    let pieces: Vec<&str> = text.split_inclusive(',').collect();
    let (client, end) = stream(&mut state, &pieces);
    assert_eq!(end, Ok(false));
    assert_eq!(
        state,
        json!({"b": [2], "c": {"d": true}, "e": {"d": true}, "f": 1, "g": {"x": 1}})
    );
    // The test changed nothing and is not reported; the value-first add went whole.
    assert_eq!(
        reported(&client),
        json!([
            {"op": "copy", "from": "/c", "path": "/e"},
            {"op": "move", "from": "/b/0", "path": "/f"},
            {"op": "remove", "path": "/a"},
            {"op": "add", "path": "/g", "value": {"x": 1}},
        ])
    );
}

#[test]
fn a_failed_test_or_bad_shape_leaves_the_document_as_it_was() {
    for (text, expect) in [
        (
            r#"{"ops": [{"op": "add", "path": "/n", "value": 2}, {"op": "test", "path": "/n", "value": 3}]}"#,
            "operation 1 (test '/n') cannot be applied: the value at its path is not the one it tests for",
        ),
        (
            r#"{"ops": [{"op": "add", "path": "/n", "value": 2}], "extra": 1}"#,
            "the arguments must be {\"ops\": [operation, …]} with RFC 6902 operations: unknown field `extra`, expected `ops`",
        ),
        (
            r#"{"ops": [{"op": "add", "path": "/n", "value": 2}, {"op": "frob", "path": "/n"}]}"#,
            "the arguments must be {\"ops\": [operation, …]} with RFC 6902 operations: operation 1: unknown variant `frob`, expected one of `add`, `remove`, `replace`, `move`, `copy`, `test`",
        ),
        (
            r#"{"ops": [{"op": "add", "path": "/n", "value": 2}"#,
            "the arguments are not valid JSON: json text ended before the value was complete",
        ),
        (
            r#"{"ops": [{"op": "add", "path": "/n/x", "value": 2}]}"#,
            "operation 0 (add '/n/x') cannot be applied: the parent of its path is not an object or array in the state, or the index is past the end of the array",
        ),
    ] {
        let mut state = json!({"m": 1});
        let pieces: Vec<&str> = text.split_inclusive(' ').collect();
        let (client, end) = stream(&mut state, &pieces);
        assert_eq!(
            end.map_err(|error| error.to_string()),
            Err(expect.to_owned()),
            "{text}"
        );
        assert_eq!(state, json!({"m": 1}), "{text}");
        assert_eq!(client.copy, state, "{text}");
    }
}

#[test]
fn a_repeated_key_stops_streaming_and_the_whole_call_settles_it() {
    let mut state = json!({});
    let (client, end) = stream(
        &mut state,
        &[
            r#"{"ops": [{"op": "add", "path": "/a", "value": {"x": 1, "#,
            r#""x": 2}}, {"op": "add", "path": "/b", "value": 3}]}"#,
        ],
    );
    assert_eq!(end, Ok(true), "resynced: the client gets a snapshot");
    assert_eq!(state, json!({"a": {"x": 2}, "b": 3}));
    assert_eq!(client.copy, state);
}

#[test]
fn rollback_restores_a_stream_that_is_not_kept() {
    let mut state = json!({"n": 1});
    let mut stream = PatchStream::new(&state, JsonBounds::default());
    assert!(!stream.rollback(&mut state), "nothing changed yet");
    let ops = stream
        .push(
            &mut state,
            r#"{"ops": [{"op": "replace", "path": "/n", "value": 2}"#,
        )
        .expect("applies");
    assert_eq!(ops.len(), 1);
    assert_eq!(state, json!({"n": 2}));
    assert!(stream.rollback(&mut state), "the readers must be told");
    assert_eq!(state, json!({"n": 1}));
}

#[test]
fn what_is_reported_is_about_the_size_of_the_value() {
    // 2,000 items of a few fields, streamed a few bytes at a time.
    let items: Vec<Value> = (0..2000)
        .map(|i| json!({"id": i, "name": format!("item {i}"), "done": i % 2 == 0}))
        .collect();
    let args = json!({"ops": [{"op": "add", "path": "/items", "value": items}]}).to_string();
    let mut state = json!({});
    let mut stream = PatchStream::new(&state, JsonBounds::default());
    let mut bytes = 0;
    let mut at = 0;
    while at < args.len() {
        let end = (at + 7).min(args.len());
        let ops = stream.push(&mut state, &args[at..end]).expect("applies");
        bytes += serde_json::to_string(&ops).expect("serializes").len();
        at = end;
    }
    stream.finish(&mut state).expect("finishes");
    assert!(
        bytes < 6 * args.len(),
        "{bytes} bytes reported for {} of arguments",
        args.len()
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

/// What an operation is made to do, against the document as the operations before it left it.
#[derive(Clone, Debug)]
enum Intent {
    Add(Value),
    Append(Value),
    Replace(Index, Value),
    Remove(Index),
    Move(Index),
    Copy(Index),
    Test(Index),
    /// An operation that cannot apply: a replace of a key that is not there.
    Broken,
}

fn intent() -> impl Strategy<Value = Intent> {
    prop_oneof![
        4 => json_value().prop_map(Intent::Add),
        3 => json_value().prop_map(Intent::Append),
        2 => (any::<Index>(), json_value()).prop_map(|(at, value)| Intent::Replace(at, value)),
        1 => any::<Index>().prop_map(Intent::Remove),
        1 => any::<Index>().prop_map(Intent::Move),
        1 => any::<Index>().prop_map(Intent::Copy),
        1 => any::<Index>().prop_map(Intent::Test),
        1 => Just(Intent::Broken),
    ]
}

/// The operations of `intents` against `document`, each as the model might write it (`value`
/// first sometimes), and the document they lead to (`None` when one cannot apply).
fn operations(document: &Value, intents: &[(Intent, bool)]) -> (Vec<Value>, Option<Value>) {
    let mut now = document.clone();
    let mut ops = Vec::new();
    let mut fails = false;
    for (n, (intent, value_first)) in intents.iter().enumerate() {
        let keys: Vec<String> = now
            .as_object()
            .map(|members| {
                members
                    .keys()
                    .filter(|key| *key != "list")
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
        let pick = |at: &Index| (!keys.is_empty()).then(|| keys[at.index(keys.len())].clone());
        let pointer = |key: &str| format!("/{}", key.replace('~', "~0").replace('/', "~1"));
        let (op, path, from, value) = match intent {
            Intent::Add(value) => ("add", format!("/k{n}"), None, Some(value.clone())),
            Intent::Append(value) => ("add", "/list/-".to_owned(), None, Some(value.clone())),
            Intent::Replace(at, value) => match pick(at) {
                Some(key) => ("replace", pointer(&key), None, Some(value.clone())),
                None => continue,
            },
            Intent::Remove(at) => match pick(at) {
                Some(key) => ("remove", pointer(&key), None, None),
                None => continue,
            },
            Intent::Move(at) | Intent::Copy(at) => match pick(at) {
                Some(key) => {
                    let op = if matches!(intent, Intent::Move(_)) {
                        "move"
                    } else {
                        "copy"
                    };
                    (op, format!("/k{n}"), Some(pointer(&key)), None)
                }
                None => continue,
            },
            Intent::Test(at) => match pick(at) {
                Some(key) => {
                    let value = now.get(&key).cloned();
                    ("test", pointer(&key), None, value)
                }
                None => continue,
            },
            Intent::Broken => ("replace", "/missing".to_owned(), None, Some(json!(1))),
        };
        let mut object = Map::new();
        if *value_first && let Some(value) = &value {
            object.insert("value".into(), value.clone());
        }
        object.insert("op".into(), json!(op));
        if let Some(from) = from {
            object.insert("from".into(), json!(from));
        }
        object.insert("path".into(), json!(path));
        if !*value_first && let Some(value) = value {
            object.insert("value".into(), value);
        }
        let object = Value::Object(object);
        let patch: Patch = serde_json::from_value(json!([object])).expect("an operation");
        if json_patch::patch(&mut now, &patch).is_err() {
            fails = true;
        }
        ops.push(object);
    }
    (ops, (!fails).then_some(now))
}

proptest! {
    /// For any document, any operations and any split of their text: after every piece the
    /// client's copy (the reports applied in order) equals the server's document; at the end
    /// both are the document the operations make, or the document as it was when one of them
    /// cannot apply.
    #[test]
    fn the_client_copy_always_equals_the_servers_document(
        members in vec(("[a-z/~]{1,4}", json_value()), 0..4),
        intents in vec((intent(), any::<bool>()), 0..8),
        pretty in any::<bool>(),
        cuts in vec(any::<Index>(), 0..24),
    ) {
        let mut document: Map<String, Value> = members.into_iter().collect();
        document.insert("list".into(), json!([]));
        let document = Value::Object(document);
        let (ops, expect) = operations(&document, &intents);
        let args = json!({"ops": ops});
        let text = match pretty {
            true => serde_json::to_string_pretty(&args),
            false => serde_json::to_string(&args),
        }.expect("serializes");
        let mut state = document.clone();
        let (client, end) = stream(&mut state, &split(&text, &cuts));
        prop_assert_eq!(&client.copy, &state);
        match expect {
            Some(expect) => {
                prop_assert_eq!(end, Ok(false), "streamed without a resync");
                prop_assert_eq!(state, expect);
            }
            None => {
                prop_assert!(end.is_err());
                prop_assert_eq!(state, document);
            }
        }
    }
}
