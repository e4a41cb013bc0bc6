//! [`JsonBounds`]: how deep and how large a JSON value that a client or a model builds (a
//! session's shared state) may be, and [`measure`], which walks a value against them without
//! recursion, so that no value, however deep, can overflow the stack of the walk.
//!
//! What it leaves out: applying the bounds to a JSON Patch before each operation takes effect
//! is `patch_budget`'s.

use std::fmt::{self, Write};

use serde_json::Value;
use thiserror::Error;

/// The deepest nesting of arrays and objects a built value may have. The JSON parser accepts
/// 127 levels and refuses the 128th; a state is also carried inside envelopes (an event, a
/// stored event batch, a protocol frame, a JSON-RPC answer) that add levels of their own, so
/// the bound leaves them room: whatever is within it reads back everywhere it is sent.
pub const MAX_DEPTH: usize = 100;

/// The default of the largest a built value may be, as compact JSON: 1 MiB.
pub const DEFAULT_MAX_BYTES: usize = 1024 * 1024;

/// Bounds on a JSON value: nesting depth and size as compact JSON (`serde_json::to_string`).
///
/// ```
/// use agentwire_core::json_bounds::{BoundsError, JsonBounds};
/// use serde_json::json;
///
/// let bounds = JsonBounds { max_depth: 2, max_bytes: 16 };
/// assert_eq!(bounds.check(&json!({"a": [1]})), Ok(()));
/// assert_eq!(bounds.check(&json!({"a": [[1]]})), Err(BoundsError::TooDeep { max_depth: 2 }));
/// assert_eq!(bounds.check(&json!({"a": "0123456789"})), Err(BoundsError::TooLarge { max_bytes: 16 }));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JsonBounds {
    /// The most levels of arrays and objects (a scalar has none, `[]` has one).
    pub max_depth: usize,
    /// The most bytes the value takes as compact JSON.
    pub max_bytes: usize,
}

/// A value past its [`JsonBounds`]. Its message reads after "the state is" or "would be".
#[derive(Clone, Copy, Debug, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum BoundsError {
    /// Nested deeper than `max_depth` levels of arrays and objects.
    #[error("nested more than {max_depth} levels deep")]
    TooDeep {
        /// The bound.
        max_depth: usize,
    },
    /// More than `max_bytes` bytes as JSON.
    #[error("larger than {max_bytes} bytes as JSON")]
    TooLarge {
        /// The bound.
        max_bytes: usize,
    },
}

/// What [`measure`] found: exact while within the bounds it was given; once past one, the walk
/// stopped and the figure is only known to be past it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Measure {
    /// Levels of arrays and objects.
    pub depth: usize,
    /// Bytes as compact JSON.
    pub bytes: usize,
}

impl Default for JsonBounds {
    fn default() -> Self {
        Self {
            max_depth: MAX_DEPTH,
            max_bytes: DEFAULT_MAX_BYTES,
        }
    }
}

impl JsonBounds {
    /// Bounds with the default depth and `max_bytes`.
    pub fn with_max_bytes(max_bytes: usize) -> Self {
        Self {
            max_bytes,
            ..Self::default()
        }
    }

    /// Whether `value` is within the bounds. Costs O(its size, up to `max_bytes`).
    pub fn check(&self, value: &Value) -> Result<(), BoundsError> {
        self.check_measure(measure(value, *self))
    }

    /// Whether a measure is within the bounds (depth first: a value too deep is also large).
    pub fn check_measure(&self, measure: Measure) -> Result<(), BoundsError> {
        if measure.depth > self.max_depth {
            return Err(BoundsError::TooDeep {
                max_depth: self.max_depth,
            });
        }
        if measure.bytes > self.max_bytes {
            return Err(BoundsError::TooLarge {
                max_bytes: self.max_bytes,
            });
        }
        Ok(())
    }
}

/// Measures `value`'s depth and JSON size with an explicit stack, stopping as soon as either
/// is past `bounds`, so the walk costs O(the value's size, up to `max_bytes`) whatever the
/// value is.
pub fn measure(value: &Value, bounds: JsonBounds) -> Measure {
    let mut measure = Measure::default();
    // Each entry is a value and how many containers hold it.
    let mut stack: Vec<(&Value, usize)> = vec![(value, 0)];
    while let Some((value, level)) = stack.pop() {
        let bytes = match value {
            Value::Null | Value::Bool(true) => 4,
            Value::Bool(false) => 5,
            Value::Number(number) => number_bytes(number),
            Value::String(text) => string_bytes(text),
            Value::Array(items) => {
                measure.depth = measure.depth.max(level + 1);
                stack.extend(items.iter().map(|item| (item, level + 1)));
                2 + items.len().saturating_sub(1)
            }
            Value::Object(members) => {
                measure.depth = measure.depth.max(level + 1);
                let mut keys = 0usize;
                for (key, member) in members {
                    keys = keys.saturating_add(string_bytes(key) + 1);
                    stack.push((member, level + 1));
                }
                keys.saturating_add(2 + members.len().saturating_sub(1))
            }
        };
        measure.bytes = measure.bytes.saturating_add(bytes);
        if measure.depth > bounds.max_depth || measure.bytes > bounds.max_bytes {
            break;
        }
    }
    measure
}

/// The bytes `text` takes as a JSON string, quotes and escapes included, as serde_json writes
/// it: `"`, `\` and the short control escapes take two bytes, other control characters six.
pub fn string_bytes(text: &str) -> usize {
    let escapes: usize = text
        .bytes()
        .map(|byte| match byte {
            b'"' | b'\\' | b'\x08' | b'\x0c' | b'\n' | b'\r' | b'\t' => 1,
            0..0x20 => 5,
            _ => 0,
        })
        .sum();
    text.len().saturating_add(escapes).saturating_add(2)
}

/// The bytes a number takes as JSON (its `Display`, which is how serde_json writes it).
fn number_bytes(number: &serde_json::Number) -> usize {
    struct Count(usize);
    impl Write for Count {
        fn write_str(&mut self, text: &str) -> fmt::Result {
            self.0 += text.len();
            Ok(())
        }
    }
    let mut count = Count(0);
    // Writing to a counter cannot fail.
    let _ = write!(count, "{number}");
    count.0
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use proptest::prelude::*;
    use serde_json::{Value, json};

    use super::*;

    const WIDE: JsonBounds = JsonBounds {
        max_depth: usize::MAX,
        max_bytes: usize::MAX,
    };

    fn value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<f64>().prop_map(Value::from),
            any::<String>().prop_map(Value::String),
            "[\"\\\\\\x00-\\x1f\\x7f]{0,4}".prop_map(Value::String),
        ];
        leaf.prop_recursive(6, 64, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                prop::collection::btree_map(any::<String>(), inner, 0..6)
                    .prop_map(|members| Value::Object(members.into_iter().collect())),
            ]
        })
    }

    /// Depth by the obvious recursion (fine for the small values of the tests).
    fn depth(value: &Value) -> usize {
        match value {
            Value::Array(items) => 1 + items.iter().map(depth).max().unwrap_or(0),
            Value::Object(members) => 1 + members.values().map(depth).max().unwrap_or(0),
            _ => 0,
        }
    }

    proptest! {
        #[test]
        fn measure_is_serde_json_size_and_depth(value in value()) {
            let text = serde_json::to_string(&value).unwrap();
            prop_assert_eq!(measure(&value, WIDE), Measure { depth: depth(&value), bytes: text.len() });
        }
    }

    #[test]
    fn a_walk_stops_past_the_bounds_without_recursing() {
        let mut deep = json!(1);
        for _ in 0..100_000 {
            deep = Value::Array(vec![deep]);
        }
        let bounds = JsonBounds {
            max_depth: 10,
            max_bytes: usize::MAX,
        };
        assert_eq!(
            bounds.check(&deep),
            Err(BoundsError::TooDeep { max_depth: 10 })
        );
        assert_eq!(measure(&deep, WIDE).depth, 100_000);
        // Dropped piece by piece: the value's own drop recurses.
        while let Value::Array(mut items) = deep {
            deep = items.pop().unwrap_or_default();
        }
    }
}
