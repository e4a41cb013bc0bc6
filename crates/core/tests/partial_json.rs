//! Tests of [`PartialJson`]: its partial views piece by piece, its errors, and differential
//! properties against `serde_json::from_str::<Value>`, which it must agree with exactly.

use agentwire_core::partial_json::{JsonError, PartialJson};
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::{Index, select};
use serde_json::{Number, Value, json};

/// Pushes `pieces` in order, then finishes. Returns the view after each successful push and the
/// outcome: the final value, or the first error.
fn parse_pieces(pieces: &[&str]) -> (Vec<Value>, Result<Value, JsonError>) {
    let mut parser = PartialJson::default();
    let mut value = Value::Null;
    let mut views = Vec::new();
    for piece in pieces {
        if let Err(error) = parser.push(&mut value, piece) {
            return (views, Err(error));
        }
        views.push(value.clone());
    }
    let end = parser.finish(&mut value).map(|()| value);
    (views, end)
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
    positions.push(0);
    positions.push(text.len());
    positions.sort_unstable();
    positions.dedup();
    positions.windows(2).map(|w| &text[w[0]..w[1]]).collect()
}

/// Splits `text` into one piece per char.
fn chars(text: &str) -> Vec<&str> {
    text.char_indices()
        .map(|(i, c)| &text[i..i + c.len_utf8()])
        .collect()
}

/// Both results, comparable: serde_json's value (with its key order, through `to_string`) or
/// just the fact that it failed.
fn verdict(res: &Result<Value, impl std::fmt::Debug>) -> Option<(Value, String)> {
    res.as_ref()
        .ok()
        .map(|value| (value.clone(), value.to_string()))
}

/// The oracle.
fn serde(text: &str) -> Result<Value, serde_json::Error> {
    serde_json::from_str::<Value>(text)
}

/// Whether `view` could be what the parser shows part way through a text whose final value is
/// `last`.
fn is_partial_of(view: &Value, last: &Value) -> bool {
    match (view, last) {
        (Value::Null, _) => true,
        (Value::Object(view), Value::Object(last)) => view
            .iter()
            .all(|(key, member)| last.get(key).is_some_and(|l| is_partial_of(member, l))),
        (Value::Array(view), Value::Array(last)) => {
            view.len() <= last.len() && view.iter().zip(last).all(|(v, l)| is_partial_of(v, l))
        }
        (Value::String(view), Value::String(last)) => last.starts_with(view.as_str()),
        (Value::Number(_), Value::Number(_)) => true,
        (Value::Bool(view), Value::Bool(last)) => view == last,
        _ => false,
    }
}

/// The partial view after each piece.
mod views {
    use super::*;

    /// Pushing `pieces` shows `expect[i]` after piece `i`; if the whole text is valid JSON, the
    /// final value is serde_json's.
    #[track_caller]
    fn check(pieces: &[&str], expect: &[Value]) {
        let (views, end) = parse_pieces(pieces);
        assert_eq!(views, expect, "views for {pieces:?}");
        let whole = pieces.concat();
        if let Ok(value) = serde(&whole) {
            assert_eq!(end, Ok(value), "final value for {whole:?}");
        }
    }

    #[test]
    fn nothing_yet_is_null() {
        check(
            &["", "  \n", "\t"],
            &[Value::Null, Value::Null, Value::Null],
        );
    }

    #[test]
    fn tool_call_arguments() {
        check(
            &[
                r#"{"pa"#,
                r#"th": "a.t"#,
                r#"xt", "con"#,
                r#"tent":"#,
                r#" "Hel"#,
                r#"lo\nworld"#,
                r#"", "mode": 6"#,
                r#"44}"#,
            ],
            &[
                json!({}),
                json!({"path": "a.t"}),
                json!({"path": "a.txt"}),
                json!({"path": "a.txt"}),
                json!({"path": "a.txt", "content": "Hel"}),
                json!({"path": "a.txt", "content": "Hello\nworld"}),
                json!({"path": "a.txt", "content": "Hello\nworld", "mode": 6}),
                json!({"path": "a.txt", "content": "Hello\nworld", "mode": 644}),
            ],
        );
    }

    #[test]
    fn containers_appear_when_opened() {
        check(
            &["[", "{", r#""a": ["#, "[", "]", "]}", ", {}]"],
            &[
                json!([]),
                json!([{}]),
                json!([{"a": []}]),
                json!([{"a": [[]]}]),
                json!([{"a": [[]]}]),
                json!([{"a": [[]]}]),
                json!([{"a": [[]]}, {}]),
            ],
        );
    }

    #[test]
    fn key_waits_for_its_value() {
        check(
            &[r#"{"k"#, r#"ey""#, ":", " ", r#""v"#],
            &[
                json!({}),
                json!({}),
                json!({}),
                json!({}),
                json!({"key": "v"}),
            ],
        );
        check(
            &[r#"{"a": -"#, "1", "}"],
            &[json!({}), json!({"a": -1}), json!({"a": -1})],
        );
        check(
            &[r#"{"a": tr"#, "ue", "}"],
            &[json!({}), json!({"a": true}), json!({"a": true})],
        );
    }

    #[test]
    fn escape_split_mid_sequence() {
        check(
            &[r#""\"#, "u00", r#"41""#],
            &[json!(""), json!(""), json!("A")],
        );
        check(
            &[r#""a\"#, r#"n"#, r#"b"#],
            &[json!("a"), json!("a\n"), json!("a\nb")],
        );
        check(
            &[r#""\u"#, "0", "0", "e", "9", "!"],
            &[
                json!(""),
                json!(""),
                json!(""),
                json!(""),
                json!("é"),
                json!("é!"),
            ],
        );
    }

    #[test]
    fn surrogate_pair_split_between_escapes() {
        check(&[r#""\ud83d"#, r#"\ude00""#], &[json!(""), json!("😀")]);
        check(
            &[r#"["a\uD83D\"#, "u", r#"DE00b"]"#],
            &[json!(["a"]), json!(["a"]), json!(["a😀b"])],
        );
    }

    #[test]
    fn number_grows_in_place() {
        check(
            &["1", "2.5", "e3"],
            &[json!(1), json!(12.5), json!(12500.0)],
        );
        check(
            &["[1", "2.5", "e3", "]"],
            &[
                json!([1]),
                json!([12.5]),
                json!([12500.0]),
                json!([12500.0]),
            ],
        );
        check(
            &["[-", "1", ".", "5", "e", "-", "1", ", 7]"],
            &[
                json!([]),
                json!([-1]),
                json!([-1]),
                json!([-1.5]),
                json!([-1.5]),
                json!([-1.5]),
                json!([-0.15]),
                json!([-0.15, 7]),
            ],
        );
    }

    #[test]
    fn literals_appear_when_complete() {
        check(
            &["[tr", "ue, nu", "ll, f", "alse]"],
            &[
                json!([]),
                json!([true]),
                json!([true, null]),
                json!([true, null, false]),
            ],
        );
    }

    #[test]
    fn duplicate_key_replaces_in_place() {
        check(
            &[r#"{"a": [1], "b": 2, "a": ["#, "3", "]}"],
            &[
                json!({"a": [], "b": 2}),
                json!({"a": [3], "b": 2}),
                json!({"a": [3], "b": 2}),
            ],
        );
        let (views, _) = parse_pieces(&[r#"{"a": 1, "b": 2, "a": 3}"#]);
        assert_eq!(views[0].to_string(), r#"{"a":3,"b":2}"#);
    }

    #[test]
    fn error_keeps_what_came_before() {
        let mut parser = PartialJson::default();
        let mut value = Value::Null;
        let error = parser.push(&mut value, "[\"ab\u{1}cd");
        assert_eq!(error, Err(JsonError::ControlCharacter { offset: 4 }));
        assert_eq!(value, json!(["ab"]));
    }
}

/// Agreement with serde_json on hand-picked texts, pushed whole and char by char.
mod agreement {
    use super::*;

    /// serde_json accepts `text` iff `valid` (pinning down serde_json's behaviour), and the
    /// parser gives exactly serde_json's result however the text is split.
    #[track_caller]
    fn check(text: &str, valid: bool) {
        let oracle = serde(text);
        assert_eq!(oracle.is_ok(), valid, "serde_json on {text:?}: {oracle:?}");
        for pieces in [vec![text], chars(text)] {
            let (_, end) = parse_pieces(&pieces);
            assert_eq!(
                verdict(&end),
                verdict(&oracle),
                "{pieces:?}: {end:?} vs {oracle:?}"
            );
        }
    }

    #[test]
    fn numbers() {
        for (text, valid) in [
            ("0", true),
            ("-0", true),
            ("-0.0", true),
            ("01", false),
            ("-01", false),
            ("00", false),
            ("1.", false),
            ("1.e5", false),
            ("1e", false),
            ("1e+", false),
            (".5", false),
            ("+1", false),
            ("--1", false),
            ("-", false),
            ("1E5", true),
            ("1.5E+3", true),
            ("2e-0", true),
            ("0e0", true),
            ("1e400", false),
            ("-1e400", false),
            ("[1e400]", false),
            ("1e-400", true),
            ("0e999999999999999999999", true),
            ("1.7976931348623157e308", true),
            ("1.7976931348623159e308", false),
            ("18446744073709551615", true),
            ("18446744073709551616", true),
            ("-9223372036854775808", true),
            ("-9223372036854775809", true),
            ("123456789012345678901234567890e-10", true),
            ("[1,2.5,-3e2,0.1]", true),
            ("[1 2]", false),
            ("1.2.3", false),
            ("NaN", false),
            ("Infinity", false),
        ] {
            check(text, valid);
        }
        check(&"9".repeat(400), false);
        check(&"9".repeat(300), true);
        check(&format!("0.{}1", "0".repeat(400)), true);
        check(&format!("[{}]", "1".repeat(200)), true);
    }

    #[test]
    fn strings() {
        for (text, valid) in [
            (r#""""#, true),
            (r#""\/\b\f\n\r\t\"\\""#, true),
            (r#""\u00e9\u00E9""#, true),
            (r#""\u0000""#, true),
            (r#""\ud83d\ude00""#, true),
            (r#""\uD83D\uDE00""#, true),
            (r#""\ud800""#, false),
            (r#""\udc00""#, false),
            (r#""\ude00\ud83d""#, false),
            (r#""\ud800\u0041""#, false),
            (r#""\ud800\n""#, false),
            (r#""\ud800x""#, false),
            (r#""\ud800\ud800\udc00""#, false),
            (r#""\x""#, false),
            (r#""\u12""#, false),
            (r#""\u12g4""#, false),
            (r#""\U0041""#, false),
            ("\"\u{1f}\"", false),
            ("\"\u{0}\"", false),
            ("\"\n\"", false),
            ("\"\t\"", false),
            ("\"\u{7f}\"", true),
            ("\"\u{2028}é😀\"", true),
            (r#""abc"#, false),
        ] {
            check(text, valid);
        }
    }

    #[test]
    fn structure_and_white_space() {
        for (text, valid) in [
            ("", false),
            (" ", false),
            (" 1 ", true),
            ("\t\r\n[\t\r\n1\t\r\n]\t\r\n", true),
            ("\u{c}1", false),
            ("1\u{c}", false),
            ("\u{a0}1", false),
            ("\u{feff}1", false),
            ("true", true),
            ("tru", false),
            ("truex", false),
            ("nul", false),
            ("null1", false),
            ("[1,]", false),
            ("[,1]", false),
            ("[1,,2]", false),
            (r#"{"a":1,}"#, false),
            (r#"{,"a":1}"#, false),
            (r#"{"a" 1}"#, false),
            (r#"{"a":}"#, false),
            (r#"{1:2}"#, false),
            (r#"{"a":1 "b":2}"#, false),
            (r#"{"a":1,"a":2,"b":3}"#, true),
            (r#"{"b":1,"a":2,"b":3}"#, true),
            ("[1]x", false),
            ("[1] ]", false),
            ("1 2", false),
            ("{}{}", false),
            ("[}", false),
            ("{]", false),
            ("[[]", false),
        ] {
            check(text, valid);
        }
    }

    #[test]
    fn depth_limit_matches_serde_json() {
        let nested = |depth: usize| format!("{}{}", "[".repeat(depth), "]".repeat(depth));
        let accepted = (1..200)
            .take_while(|&depth| serde(&nested(depth)).is_ok())
            .last();
        assert_eq!(accepted, Some(127), "serde_json's nesting limit moved");
        for depth in [1, 126, 127, 128, 129, 300] {
            check(&nested(depth), depth <= 127);
        }
        let objects = |depth: usize| format!("{}1{}", r#"{"a":"#.repeat(depth), "}".repeat(depth));
        check(&objects(127), true);
        check(&objects(128), false);
        let mixed =
            |depth: usize| format!("{}{{}}{}", "[".repeat(depth - 1), "]".repeat(depth - 1));
        check(&mixed(127), true);
        check(&mixed(128), false);
    }
}

/// The error reported for a text, and the parser's behaviour once failed.
mod errors {
    use super::*;

    /// Pushing `pieces` (then finishing) fails with `expect`, and serde_json rejects the text.
    #[track_caller]
    fn check(pieces: &[&str], expect: JsonError) {
        let (_, end) = parse_pieces(pieces);
        assert_eq!(end, Err(expect), "{pieces:?}");
        assert!(
            serde(&pieces.concat()).is_err(),
            "serde_json accepts {pieces:?}"
        );
    }

    #[test]
    fn typed_errors() {
        check(&["01"], JsonError::InvalidNumber { offset: 1 });
        check(&["[-", "x]"], JsonError::InvalidNumber { offset: 2 });
        check(&["1e400"], JsonError::NumberOutOfRange { offset: 0 });
        check(
            &["[7, 1e4", "00]"],
            JsonError::NumberOutOfRange { offset: 4 },
        );
        check(&["[1,", "]"], JsonError::TrailingComma { offset: 3 });
        check(&[r#"{"a":1,}"#], JsonError::TrailingComma { offset: 7 });
        check(&[r#""\ud800""#], JsonError::LoneSurrogate { offset: 7 });
        check(&[r#""\udc00""#], JsonError::LoneSurrogate { offset: 6 });
        check(
            &[r#""\ud800\u0041""#],
            JsonError::LoneSurrogate { offset: 12 },
        );
        check(&[r#""a\x""#], JsonError::InvalidEscape { offset: 3 });
        check(&[r#""\u0g00""#], JsonError::InvalidEscape { offset: 4 });
        check(
            &["\"a", "b\nc\""],
            JsonError::ControlCharacter { offset: 3 },
        );
        check(&["[1] ", "x"], JsonError::TrailingCharacters { offset: 4 });
        check(&["12 3"], JsonError::TrailingCharacters { offset: 3 });
        check(&[], JsonError::Empty);
        check(&["", " \n "], JsonError::Empty);
        check(&["[1"], JsonError::Incomplete);
        check(&["-"], JsonError::Incomplete);
        check(&["1."], JsonError::Incomplete);
        check(&[r#""abc"#], JsonError::Incomplete);
        check(&[r#"{"a""#], JsonError::Incomplete);
        check(&["tr"], JsonError::Incomplete);
        let unexpected = |found, offset, expected| JsonError::UnexpectedChar {
            found,
            offset,
            expected,
        };
        check(&["tx"], unexpected('x', 1, "`true`"));
        check(&["{1:2}"], unexpected('1', 1, "a string key or `}`"));
        check(&[r#"{"a":1,2}"#], unexpected('2', 7, "a string key"));
        check(&[r#"{"a" 1}"#], unexpected('1', 5, "`:`"));
        check(&["[1 2]"], unexpected('2', 3, "`,` or `]`"));
        check(&["[1}"], unexpected('}', 2, "`,` or `]`"));
        check(&["\u{c}1"], unexpected('\u{c}', 0, "a json value"));
        check(&["[é]"], unexpected('é', 1, "a json value"));
        check(&["[1,", "é]"], unexpected('é', 3, "a json value"));
    }

    #[test]
    fn depth_limit() {
        let open = "[".repeat(127);
        check(&[&open, "["], JsonError::TooDeep { offset: 127 });
        let (_, end) = parse_pieces(&[&open, &"]".repeat(127)]);
        assert!(end.is_ok());
    }

    #[test]
    fn failed_parser_keeps_its_error() {
        let mut parser = PartialJson::default();
        let mut value = Value::Null;
        assert_eq!(parser.push(&mut value, "[1, 2"), Ok(()));
        let error = JsonError::UnexpectedChar {
            found: 'x',
            offset: 7,
            expected: "a json value",
        };
        assert_eq!(parser.push(&mut value, ", x"), Err(error.clone()));
        assert_eq!(value, json!([1, 2]));
        assert_eq!(parser.push(&mut value, "3]"), Err(error.clone()));
        assert_eq!(parser.push(&mut value, ""), Err(error.clone()));
        assert_eq!(parser.finish(&mut value), Err(error.clone()));
        assert_eq!(parser.finish(&mut value), Err(error));
        assert_eq!(value, json!([1, 2]));
    }

    #[test]
    fn failed_finish_keeps_its_error() {
        let mut parser = PartialJson::default();
        let mut value = Value::Null;
        assert_eq!(parser.push(&mut value, "[1"), Ok(()));
        assert_eq!(parser.finish(&mut value), Err(JsonError::Incomplete));
        assert_eq!(parser.push(&mut value, "]"), Err(JsonError::Incomplete));
        assert_eq!(value, json!([1]));
    }

    #[test]
    fn messages_are_lowercase() {
        let error = JsonError::UnexpectedChar {
            found: 'x',
            offset: 3,
            expected: "`,` or `]`",
        };
        assert_eq!(
            error.to_string(),
            "unexpected 'x' at byte 3, expected `,` or `]`"
        );
        assert_eq!(
            JsonError::TooDeep { offset: 127 }.to_string(),
            "nesting deeper than 127 levels at byte 127"
        );
    }
}

/// When the parser says the value is whole.
mod completeness {
    use super::*;

    /// After each piece, `is_complete` is `expect[i]`; the last entry is after `finish`.
    #[track_caller]
    fn check(pieces: &[&str], expect: &[bool]) {
        let mut parser = PartialJson::default();
        let mut value = Value::Null;
        let mut seen = Vec::new();
        for piece in pieces {
            assert_eq!(parser.push(&mut value, piece), Ok(()), "{pieces:?}");
            seen.push(parser.is_complete());
        }
        assert_eq!(parser.finish(&mut value), Ok(()), "{pieces:?}");
        seen.push(parser.is_complete());
        assert_eq!(seen, expect, "{pieces:?}");
    }

    #[test]
    fn complete_once_the_root_closes() {
        check(&["{", "}", " "], &[false, true, true, true]);
        check(&["[1", "]"], &[false, true, true]);
        check(&[r#""a"#, r#"""#], &[false, true, true]);
        check(&["tru", "e"], &[false, true, true]);
        check(&["12", "3", " "], &[false, false, true, true]);
        check(&["12"], &[false, true]);
    }
}

/// A string with the characters that stress a JSON parser.
fn string() -> impl Strategy<Value = String> {
    let tricky = prop_oneof![
        select(vec![
            '"', '\\', '/', '\u{0}', '\u{1f}', '\n', '\t', '\u{7f}', 'é', '😀', '\u{2028}',
            '\u{ffff}'
        ]),
        proptest::char::range('a', 'z'),
        any::<char>(),
    ];
    prop_oneof![
        vec(tricky, 0..16).prop_map(|chars| chars.into_iter().collect()),
        any::<String>(),
    ]
}

/// Any number serde_json can hold.
fn number() -> impl Strategy<Value = Value> {
    prop_oneof![
        (-20i64..20).prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_filter_map("finite", |f| Number::from_f64(f).map(Value::Number)),
        (-1e6f64..1e6).prop_filter_map("finite", |f| Number::from_f64(f).map(Value::Number)),
    ]
}

/// Any JSON value, a few levels deep.
fn json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        number(),
        string().prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            vec(inner.clone(), 0..6).prop_map(Value::Array),
            vec((string(), inner), 0..6)
                .prop_map(|members| Value::Object(members.into_iter().collect())),
        ]
    })
}

/// Characters that make up most of JSON's syntax, and a few that do not belong.
const ALPHABET: &[char] = &[
    '{', '}', '[', ']', '"', ',', ':', '0', '1', '2', '9', 'e', 'E', '.', '+', '-', 't', 'f', 'n',
    'r', 'u', 'l', 's', 'a', '\\', ' ', '\n', 'd', '8', '\u{1}', 'é',
];

/// Valid JSON text, compact or pretty.
fn json_text() -> impl Strategy<Value = String> {
    (json(), any::<bool>()).prop_map(|(value, pretty)| {
        let text = if pretty {
            serde_json::to_string_pretty(&value)
        } else {
            serde_json::to_string(&value)
        };
        text.unwrap_or_default()
    })
}

/// Valid JSON text with a few random insertions, deletions and replacements.
fn mutated_text() -> impl Strategy<Value = String> {
    let edit = (0..3u8, any::<Index>(), select(ALPHABET));
    (json_text(), vec(edit, 1..4)).prop_map(|(text, edits)| {
        let mut chars: Vec<char> = text.chars().collect();
        for (kind, at, c) in edits {
            match kind {
                0 => chars.insert(at.index(chars.len() + 1), c),
                _ if chars.is_empty() => {}
                1 => {
                    chars.remove(at.index(chars.len()));
                }
                _ => {
                    let at = at.index(chars.len());
                    chars[at] = c;
                }
            }
        }
        chars.into_iter().collect()
    })
}

/// JSON-ish noise.
fn garbage_text() -> impl Strategy<Value = String> {
    vec(select(ALPHABET), 0..24).prop_map(|chars| chars.into_iter().collect())
}

/// A string literal made of escape fragments, many of them surrogate halves, paired or not.
fn escape_soup() -> impl Strategy<Value = String> {
    let fragment = select(vec![
        r"\ud83d", r"\ude00", r"\uD800", r"\uDBFF", r"\uDC00", r"\uDFFF", r"\u0041", r"\u00e9",
        r"\n", r"\", "u", "d", "a", "0", "\"", "x", "\u{1}",
    ]);
    vec(fragment, 0..8).prop_map(|fragments| format!("[\"{}\"]", fragments.concat()))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn valid_text_gives_serde_jsons_value_however_split(
        text in json_text(),
        cuts in vec(any::<Index>(), 0..12),
    ) {
        let oracle = serde(&text);
        prop_assert!(oracle.is_ok());
        for pieces in [split(&text, &cuts), chars(&text)] {
            let (_, end) = parse_pieces(&pieces);
            prop_assert_eq!(verdict(&end), verdict(&oracle), "{:?}", pieces);
        }
    }

    #[test]
    fn mutated_text_agrees_with_serde_json(
        text in mutated_text(),
        cuts in vec(any::<Index>(), 0..12),
    ) {
        let oracle = serde(&text);
        let (_, end) = parse_pieces(&split(&text, &cuts));
        prop_assert_eq!(
            verdict(&end),
            verdict(&oracle),
            "{:?}: {:?} vs {:?}",
            text,
            end,
            oracle
        );
    }

    #[test]
    fn garbage_agrees_with_serde_json(
        text in garbage_text(),
        cuts in vec(any::<Index>(), 0..8),
    ) {
        let oracle = serde(&text);
        for pieces in [split(&text, &cuts), chars(&text)] {
            let (_, end) = parse_pieces(&pieces);
            prop_assert_eq!(
                verdict(&end),
                verdict(&oracle),
                "{:?}: {:?} vs {:?}",
                text,
                end,
                oracle
            );
        }
    }

    #[test]
    fn escapes_agree_with_serde_json(
        text in escape_soup(),
        cuts in vec(any::<Index>(), 0..8),
    ) {
        let oracle = serde(&text);
        for pieces in [split(&text, &cuts), chars(&text)] {
            let (_, end) = parse_pieces(&pieces);
            prop_assert_eq!(
                verdict(&end),
                verdict(&oracle),
                "{:?}: {:?} vs {:?}",
                text,
                end,
                oracle
            );
        }
    }

    #[test]
    fn every_view_is_partial_of_the_final_value(
        text in json_text(),
        cuts in vec(any::<Index>(), 0..12),
    ) {
        let last = serde(&text).unwrap_or_default();
        for pieces in [split(&text, &cuts), chars(&text)] {
            let (views, end) = parse_pieces(&pieces);
            prop_assert_eq!(views.len(), pieces.len());
            for view in &views {
                prop_assert!(is_partial_of(view, &last), "{} is not partial of {}", view, last);
            }
            prop_assert_eq!(end.as_ref().ok(), Some(&last));
        }
    }
}
