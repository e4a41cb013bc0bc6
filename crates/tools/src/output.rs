//! The cap on a tool's output, measured as the bytes of its result serialized as JSON (what the
//! model will be sent).
//!
//! A string result over the cap is cut, at a character boundary, and ends with a marker saying
//! so: the head of a long text (a log, a page) is usually what the model needs, and it learns
//! that there was more. Any other result over the cap is refused, because a cut object or array
//! would silently lose structure the model relies on.

use std::io;

use serde_json::Value;

/// A result over the cap that could not be cut: its size in bytes.
#[derive(Debug)]
pub(crate) struct TooLarge {
    pub(crate) bytes: usize,
}

/// `value` if it fits in `max_bytes` of JSON, else a string cut to fit, else [`TooLarge`].
pub(crate) fn cap(value: Value, max_bytes: usize) -> Result<Value, TooLarge> {
    let bytes = json_len(&value);
    if bytes <= max_bytes {
        return Ok(value);
    }
    let Value::String(text) = value else {
        return Err(TooLarge { bytes });
    };
    let marker = format!(
        "\n…[truncated: the output was {bytes} bytes of JSON, over the limit of {max_bytes}]"
    );
    // Two bytes for the quotes around the string.
    let Some(budget) = max_bytes.checked_sub(2 + escaped_len(&marker)) else {
        return Err(TooLarge { bytes });
    };
    let mut kept = 0;
    let mut end = 0;
    for (index, c) in text.char_indices() {
        kept += escaped_char_len(c);
        if kept > budget {
            break;
        }
        end = index + c.len_utf8();
    }
    let mut truncated = text;
    truncated.truncate(end);
    truncated.push_str(&marker);
    Ok(Value::String(truncated))
}

/// The length of `value` serialized as compact JSON, without building the text.
fn json_len(value: &Value) -> usize {
    let mut counter = ByteCounter(0);
    // Writing to a counter cannot fail, and a `Value` always serializes.
    let _ = serde_json::to_writer(&mut counter, value);
    counter.0
}

struct ByteCounter(usize);

impl io::Write for ByteCounter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0 += buf.len();
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn escaped_len(text: &str) -> usize {
    text.chars().map(escaped_char_len).sum()
}

/// How many bytes `c` takes inside a JSON string as serde_json writes it.
fn escaped_char_len(c: char) -> usize {
    match c {
        '"' | '\\' | '\u{08}' | '\u{0c}' | '\n' | '\r' | '\t' => 2,
        c if u32::from(c) < 0x20 => 6,
        c => c.len_utf8(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn escaped_lengths_match_serde_json() {
        let text: String = (0u32..0x300).filter_map(char::from_u32).collect();
        let serialized = serde_json::to_string(&text).unwrap_or_default();
        assert_eq!(escaped_len(&text) + 2, serialized.len());
    }

    #[test]
    fn a_cut_string_fits_exactly_within_the_cap() {
        for max in [120, 121, 150, 200, 333] {
            let text = "ab\"\n\u{1}é😀".repeat(40);
            let capped = cap(json!(text), max).unwrap_or_default();
            let len = json_len(&capped);
            assert!(len <= max, "{len} > {max}");
            assert!(len + 6 >= max, "cut too much: {len} for {max}");
        }
    }
}
