//! [`Lengths`]: the byte lengths of a folded part's deltas, one character each.
//!
//! A delta is a token or a few, so its length is small: written as the character U+0030 plus the
//! length, each takes one byte of JSON up to 79 (two from there to 2,047), where a JSON array
//! of numbers takes two or three. This is most of what a compacted log adds to its text. A
//! length with no such character (55,248 bytes or more) makes the whole list an array.

use std::fmt;

use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::ser::Serializer;
use serde::{Deserialize, Serialize};

/// The first character: the length 0.
const ZERO: u32 = 0x30;

/// Each delta's length in bytes, in order.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Lengths(pub(super) Vec<usize>);

impl Serialize for Lengths {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let text: Option<String> = self.0.iter().map(|&len| char_of(len)).collect();
        match text {
            Some(text) => serializer.serialize_str(&text),
            None => self.0.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for Lengths {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(LengthsVisitor)
    }
}

struct LengthsVisitor;

impl<'de> Visitor<'de> for LengthsVisitor {
    type Value = Lengths;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("delta lengths: a string of one character each, or an array of numbers")
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<Lengths, E> {
        text.chars()
            .map(|c| {
                let len = u32::from(c)
                    .checked_sub(ZERO)
                    .ok_or_else(|| E::custom(format!("{c:?} is not a delta length")))?;
                usize::try_from(len).map_err(E::custom)
            })
            .collect::<Result<_, _>>()
            .map(Lengths)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Lengths, A::Error> {
        let mut lens = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        while let Some(len) = seq.next_element()? {
            lens.push(len);
        }
        Ok(Lengths(lens))
    }
}

/// The character of a length, if it has one (the surrogates are no characters: lengths from
/// where they start are written as numbers).
fn char_of(len: usize) -> Option<char> {
    u32::try_from(len)
        .ok()
        .and_then(|len| len.checked_add(ZERO))
        .filter(|&code| code < 0xD800)
        .and_then(char::from_u32)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[track_caller]
    fn check(lens: &[usize], json: &str) {
        let lengths = Lengths(lens.to_vec());
        assert_eq!(serde_json::to_string(&lengths).unwrap(), json);
        assert_eq!(serde_json::from_str::<Lengths>(json).unwrap(), lengths);
    }

    #[test]
    fn lengths_are_one_character_each_or_numbers() {
        check(&[], r#""""#);
        check(&[4, 0, 9, 10, 44, 79], "\"409:\\\\\u{7f}\"");
        check(&[2047, 2048], "\"\u{82f}\u{830}\"");
        check(&[3, 55_248], "[3,55248]");
        assert!(serde_json::from_str::<Lengths>(r#""/""#).is_err());
    }
}
