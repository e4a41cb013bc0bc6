//! [`PartialJson`]: an incremental JSON parser that shows a streamed JSON text (a tool call's
//! arguments) as a [`Value`] after every piece, without ever re-reading earlier text.
//!
//! It parses exactly the language `serde_json::from_str::<Value>` accepts and builds the same
//! value; it deliberately does not repair, guess or accept anything serde_json would reject.

use std::str::FromStr;

use serde_json::{Map, Number, Value};

/// How deeply arrays and objects may nest: serde_json's recursion limit. serde_json accepts 127
/// levels of `[`/`{` and rejects the 128th (measured in `tests/partial_json.rs`).
const MAX_DEPTH: usize = 127;

/// A number text longer than this is parsed for the view only each time it has doubled in length,
/// so that even a pathologically long number costs amortized O(1) per byte.
const SHORT_NUMBER: usize = 64;

/// A push-based JSON parser that applies text arriving in pieces to a [`Value`] the caller owns,
/// so that after every [`push`](Self::push) the value is the *partial view* of everything parsed
/// so far.
///
/// Each push costs O(bytes of the piece), plus O(nesting depth) to reach the open container for
/// every value it starts, ends or extends; earlier text is never looked at again. Reading the
/// view costs nothing: it is the `&mut Value` passed in.
///
/// The partial view:
/// - before the first value character the value stays [`Value::Null`];
/// - an object or array appears as soon as its `{` or `[` is read, holding the members or
///   elements parsed so far;
/// - a string value appears as `""` as soon as its opening quote is read and grows as characters
///   arrive, with escapes decoded; a half-read escape such as `\u00` is shown once complete;
/// - an object key is shown only once its value starts (`"key": ` plus the value's first
///   character); a repeated key replaces the earlier member in place, as in serde_json;
/// - a number is shown as soon as the text so far is a valid number (`12` shows 12, then `123`
///   replaces it in place); while the text so far is not a valid number (`-`, `1.`, `1e`) the
///   previously shown number, or nothing, stays. A number text over 64 bytes is re-shown only each
///   time its length has doubled; its final value is always exact;
/// - `true`, `false` and `null` are shown only when complete.
///
/// The final value, after [`finish`](Self::finish), is exactly what
/// `serde_json::from_str::<Value>` gives for the whole text (number representation included),
/// and every text serde_json rejects is rejected here too: leading zeros, unpaired UTF-16
/// surrogate escapes, raw control characters in strings, invalid escapes, out-of-range numbers,
/// trailing commas, trailing non-white-space, nesting deeper than 127 levels, and empty input.
///
/// ```
/// use agentwire_core::PartialJson;
/// use serde_json::{Value, json};
///
/// let mut parser = PartialJson::default();
/// let mut args = Value::Null;
/// parser.push(&mut args, r#"{"path": "a.txt", "content": "Hel"#)?;
/// assert_eq!(args, json!({"path": "a.txt", "content": "Hel"}));
/// parser.push(&mut args, r#"lo", "mode": 64"#)?;
/// assert_eq!(args, json!({"path": "a.txt", "content": "Hello", "mode": 64}));
/// parser.push(&mut args, "4}")?;
/// parser.finish(&mut args)?;
/// assert_eq!(args, json!({"path": "a.txt", "content": "Hello", "mode": 644}));
/// # Ok::<(), agentwire_core::partial_json::JsonError>(())
/// ```
#[derive(Debug, Default, Clone)]
pub struct PartialJson {
    /// What the next character may be.
    state: State,
    /// The open arrays and objects, outermost first.
    stack: Vec<Frame>,
    /// Bytes pushed before the current piece.
    offset: u64,
    /// Set by the first error; every later call returns it.
    error: Option<JsonError>,
    /// Decoded characters of the open string value not yet appended to the view.
    scratch: String,
    /// The text of the number being read.
    number: String,
    /// Byte offset where the number being read starts.
    number_start: u64,
    /// Length of `number` when it was last parsed for the view (0: never).
    number_parsed_len: usize,
    /// Whether the number being read already has its place in the view.
    number_shown: bool,
    /// Whether an object repeated a key, its later value replacing the earlier in place.
    repeated_key: bool,
}

/// Why a JSON text was rejected. Offsets are byte offsets into the whole text pushed so far.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum JsonError {
    /// A character that cannot appear at this point of a JSON text.
    #[error("unexpected {found:?} at byte {offset}, expected {expected}")]
    UnexpectedChar {
        /// The character found.
        found: char,
        /// Where it is.
        offset: u64,
        /// What could have appeared there instead.
        expected: &'static str,
    },
    /// A number that breaks JSON's number grammar (`01`, `-x`, `1.e5`).
    #[error("invalid number at byte {offset}")]
    InvalidNumber {
        /// Where the offending character is.
        offset: u64,
    },
    /// A number whose magnitude does not fit an `f64` (`1e400`).
    #[error("number out of range at byte {offset}")]
    NumberOutOfRange {
        /// Where the number starts.
        offset: u64,
    },
    /// A backslash escape that JSON does not define, or a `\u` without four hex digits.
    #[error("invalid escape at byte {offset}")]
    InvalidEscape {
        /// Where the offending character is.
        offset: u64,
    },
    /// A `\u` escape of a UTF-16 surrogate that is not part of a high-then-low pair.
    #[error("unpaired surrogate escape at byte {offset}")]
    LoneSurrogate {
        /// Where the pairing failed.
        offset: u64,
    },
    /// A raw control character (below U+0020) inside a string; it must be escaped.
    #[error("control character in string at byte {offset}")]
    ControlCharacter {
        /// Where it is.
        offset: u64,
    },
    /// A comma directly before `]` or `}`.
    #[error("trailing comma before byte {offset}")]
    TrailingComma {
        /// Where the closing bracket is.
        offset: u64,
    },
    /// Arrays and objects nested deeper than serde_json's limit of 127 levels.
    #[error("nesting deeper than 127 levels at byte {offset}")]
    TooDeep {
        /// Where the opening bracket of the 128th level is.
        offset: u64,
    },
    /// Something other than white space after the complete value.
    #[error("trailing characters at byte {offset}")]
    TrailingCharacters {
        /// Where the first of them is.
        offset: u64,
    },
    /// The text ended inside a value.
    #[error("json text ended before the value was complete")]
    Incomplete,
    /// The text ended without any value (it was empty or only white space).
    #[error("json text holds no value")]
    Empty,
}

/// What the parser expects next.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum State {
    /// A value: at the root, after `:`, or after `,` in an array.
    #[default]
    Value,
    /// Right after `[`: a value or `]`.
    FirstElement,
    /// Right after `{`: a key or `}`.
    FirstKey,
    /// After `,` in an object: a key.
    Key,
    /// After a key: `:`.
    Colon,
    /// After a value inside a container: `,` or the closing bracket.
    AfterValue,
    /// Inside a string; `key` tells an object key from a string value.
    Str { key: bool, escape: Escape },
    /// Inside a number.
    Number(NumberState),
    /// Inside `true`, `false` or `null`, with `matched` bytes of `word` read.
    Literal { word: &'static str, matched: usize },
    /// The root value is complete: only white space may follow.
    Done,
}

/// Where a string is inside an escape sequence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Escape {
    /// Not in an escape.
    None,
    /// After `\`.
    Backslash,
    /// Inside the hex digits of `\u`; `high` is the high surrogate this escape must complete.
    Hex {
        high: Option<u32>,
        digits: u8,
        code: u32,
    },
    /// After a high surrogate escape: the `\` of its low half.
    PairBackslash { high: u32 },
    /// After a high surrogate escape and `\`: the `u` of its low half.
    PairU { high: u32 },
}

/// How much of JSON's number grammar has been read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum NumberState {
    /// `-`
    Minus,
    /// `0` or `-0`: no more integer digits may follow.
    Zero,
    /// Integer digits not starting with `0`.
    Int,
    /// `.` with no fraction digit yet.
    Dot,
    /// Fraction digits.
    Frac,
    /// `e` or `E`.
    Exp,
    /// The exponent's sign.
    ExpSign,
    /// Exponent digits.
    ExpDigits,
}

/// An open container.
#[derive(Debug, Clone)]
enum Frame {
    Array,
    /// The key of the member being read (or last read); its value is the open child.
    Object {
        key: String,
    },
}

impl PartialJson {
    /// Applies the next piece of JSON text to `value`.
    ///
    /// `value` must be the same value on every call and start as [`Value::Null`] (nothing seen
    /// yet); given anything else the view is unspecified, though the parser never panics. After an
    /// error the parser is failed: `value` keeps everything parsed before the offending
    /// character, and every later call returns the same error and leaves `value` alone.
    pub fn push(&mut self, value: &mut Value, text: &str) -> Result<(), JsonError> {
        if let Some(error) = &self.error {
            return Err(error.clone());
        }
        let res = self.run(value, text);
        self.flush(value);
        self.offset += text.len() as u64;
        if let Err(error) = &res {
            self.error = Some(error.clone());
        }
        res
    }

    /// The text has ended: a pending number is completed; incomplete JSON, or no JSON at all, is
    /// an error ([`JsonError::Incomplete`], [`JsonError::Empty`]). Calling it again, or after an
    /// error, returns the same result.
    pub fn finish(&mut self, value: &mut Value) -> Result<(), JsonError> {
        if let Some(error) = &self.error {
            return Err(error.clone());
        }
        let res = match self.state {
            State::Done => Ok(()),
            State::Number(number) if self.stack.is_empty() && number.is_complete() => {
                self.end_number(value)
            }
            State::Value if self.stack.is_empty() => Err(JsonError::Empty),
            _ => Err(JsonError::Incomplete),
        };
        if let Err(error) = &res {
            self.error = Some(error.clone());
        }
        res
    }

    /// True once a whole JSON value has been parsed (trailing white space may still follow).
    ///
    /// A number at the root counts as whole only once something ends it: white space or
    /// [`finish`](Self::finish).
    pub fn is_complete(&self) -> bool {
        self.state == State::Done
    }

    /// How many arrays and objects are open: the containers on the way from the root to the
    /// value being read, which are the last child of their parent in the view (but see
    /// [`repeated_key`](Self::repeated_key)).
    pub(crate) fn open_depth(&self) -> usize {
        self.stack.len()
    }

    /// Whether a string or number value is being read, so that the innermost open container's
    /// last child in the view (the root, when none is open) may still change. (A number that is
    /// not yet valid, such as `-`, is not in the view at all.)
    pub(crate) fn reading_scalar(&self) -> bool {
        matches!(self.state, State::Str { key: false, .. } | State::Number(_))
    }

    /// Whether an object of the text repeated a key: its later value replaced the earlier one
    /// in place, so the value being read is not necessarily the last member of its object.
    pub(crate) fn repeated_key(&self) -> bool {
        self.repeated_key
    }

    /// Runs the state machine over one piece; the view is brought up to date by `flush` after.
    fn run(&mut self, value: &mut Value, text: &str) -> Result<(), JsonError> {
        let bytes = text.as_bytes();
        let mut i = 0;
        while i < bytes.len() {
            let byte = bytes[i];
            let at = self.offset + i as u64;
            match self.state {
                State::Str {
                    key,
                    escape: Escape::None,
                } => {
                    // Copy the run of plain characters up to the next quote, backslash or control
                    // character in one go; all three are ASCII, so the run ends on a char boundary.
                    let run = bytes[i..]
                        .iter()
                        .position(|&b| b == b'"' || b == b'\\' || b < 0x20)
                        .map_or(bytes.len(), |n| i + n);
                    self.string_buffer(key).push_str(&text[i..run]);
                    i = run;
                    let Some(&stop) = bytes.get(i) else { break };
                    match stop {
                        b'"' => self.end_string(value, key),
                        b'\\' => {
                            self.state = State::Str {
                                key,
                                escape: Escape::Backslash,
                            };
                        }
                        _ => {
                            return Err(JsonError::ControlCharacter {
                                offset: self.offset + i as u64,
                            });
                        }
                    }
                }
                State::Str { key, escape } => {
                    let escape = self.escape(key, escape, byte, at)?;
                    self.state = State::Str { key, escape };
                }
                State::Number(number) => match number.next(byte) {
                    Some(next) => {
                        self.number.push(char::from(byte));
                        self.state = State::Number(next);
                    }
                    None if number.is_complete()
                        && !(number == NumberState::Zero && byte.is_ascii_digit()) =>
                    {
                        // The character ends the number; read it again in the new state.
                        self.end_number(value)?;
                        continue;
                    }
                    None => return Err(JsonError::InvalidNumber { offset: at }),
                },
                State::Literal { word, matched } => {
                    if word.as_bytes().get(matched) != Some(&byte) {
                        return Err(unexpected(text, i, at, literal_expectation(word)));
                    }
                    if matched + 1 == word.len() {
                        let literal = match word {
                            "true" => Value::Bool(true),
                            "false" => Value::Bool(false),
                            _ => Value::Null,
                        };
                        self.repeated_key |= insert_new(value, &self.stack, literal);
                        self.end_value();
                    } else {
                        self.state = State::Literal {
                            word,
                            matched: matched + 1,
                        };
                    }
                }
                _ if is_whitespace(byte) => {}
                State::Value | State::FirstElement => match byte {
                    b']' if self.state == State::FirstElement => self.close(),
                    b']' if matches!(self.stack.last(), Some(Frame::Array)) => {
                        return Err(JsonError::TrailingComma { offset: at });
                    }
                    _ => self.begin_value(value, text, i, at)?,
                },
                State::FirstKey | State::Key => match byte {
                    b'"' => {
                        if let Some(Frame::Object { key }) = self.stack.last_mut() {
                            key.clear();
                        }
                        self.state = State::Str {
                            key: true,
                            escape: Escape::None,
                        };
                    }
                    b'}' if self.state == State::FirstKey => self.close(),
                    b'}' => return Err(JsonError::TrailingComma { offset: at }),
                    _ if self.state == State::FirstKey => {
                        return Err(unexpected(text, i, at, "a string key or `}`"));
                    }
                    _ => return Err(unexpected(text, i, at, "a string key")),
                },
                State::Colon => match byte {
                    b':' => self.state = State::Value,
                    _ => return Err(unexpected(text, i, at, "`:`")),
                },
                State::AfterValue => match (byte, self.stack.last()) {
                    (b',', Some(Frame::Array)) => self.state = State::Value,
                    (b',', _) => self.state = State::Key,
                    (b']', Some(Frame::Array)) | (b'}', Some(Frame::Object { .. })) => self.close(),
                    (_, Some(Frame::Array)) => return Err(unexpected(text, i, at, "`,` or `]`")),
                    _ => return Err(unexpected(text, i, at, "`,` or `}`")),
                },
                State::Done => return Err(JsonError::TrailingCharacters { offset: at }),
            }
            i += 1;
        }
        Ok(())
    }

    /// Reads the first character of a value.
    fn begin_value(
        &mut self,
        value: &mut Value,
        text: &str,
        i: usize,
        at: u64,
    ) -> Result<(), JsonError> {
        let byte = text.as_bytes()[i];
        match byte {
            b'{' | b'[' => {
                if self.stack.len() >= MAX_DEPTH {
                    return Err(JsonError::TooDeep { offset: at });
                }
                if byte == b'{' {
                    self.repeated_key |= insert_new(value, &self.stack, Value::Object(Map::new()));
                    self.stack.push(Frame::Object { key: String::new() });
                    self.state = State::FirstKey;
                } else {
                    self.repeated_key |= insert_new(value, &self.stack, Value::Array(Vec::new()));
                    self.stack.push(Frame::Array);
                    self.state = State::FirstElement;
                }
            }
            b'"' => {
                self.repeated_key |= insert_new(value, &self.stack, Value::String(String::new()));
                self.state = State::Str {
                    key: false,
                    escape: Escape::None,
                };
            }
            b'-' | b'0'..=b'9' => {
                self.number.clear();
                self.number.push(char::from(byte));
                self.number_start = at;
                self.number_parsed_len = 0;
                self.number_shown = false;
                self.state = State::Number(match byte {
                    b'-' => NumberState::Minus,
                    b'0' => NumberState::Zero,
                    _ => NumberState::Int,
                });
            }
            b't' | b'f' | b'n' => {
                let word = match byte {
                    b't' => "true",
                    b'f' => "false",
                    _ => "null",
                };
                self.state = State::Literal { word, matched: 1 };
            }
            _ => return Err(unexpected(text, i, at, "a json value")),
        }
        Ok(())
    }

    /// Reads one character of an escape sequence and returns the new escape state.
    fn escape(
        &mut self,
        key: bool,
        escape: Escape,
        byte: u8,
        at: u64,
    ) -> Result<Escape, JsonError> {
        let decoded = match escape {
            Escape::None => return Ok(Escape::None),
            Escape::Backslash => match byte {
                b'"' => '"',
                b'\\' => '\\',
                b'/' => '/',
                b'b' => '\u{8}',
                b'f' => '\u{c}',
                b'n' => '\n',
                b'r' => '\r',
                b't' => '\t',
                b'u' => {
                    return Ok(Escape::Hex {
                        high: None,
                        digits: 0,
                        code: 0,
                    });
                }
                _ => return Err(JsonError::InvalidEscape { offset: at }),
            },
            Escape::Hex { high, digits, code } => {
                let digit = char::from(byte)
                    .to_digit(16)
                    .ok_or(JsonError::InvalidEscape { offset: at })?;
                let code = (code << 4) | digit;
                if digits < 3 {
                    return Ok(Escape::Hex {
                        high,
                        digits: digits + 1,
                        code,
                    });
                }
                match (high, code) {
                    (None, 0xD800..=0xDBFF) => return Ok(Escape::PairBackslash { high: code }),
                    (None, 0xDC00..=0xDFFF) => return Err(JsonError::LoneSurrogate { offset: at }),
                    (Some(high), 0xDC00..=0xDFFF) => {
                        let scalar = 0x1_0000 + ((high - 0xD800) << 10) + (code - 0xDC00);
                        char::from_u32(scalar).ok_or(JsonError::LoneSurrogate { offset: at })?
                    }
                    (Some(_), _) => return Err(JsonError::LoneSurrogate { offset: at }),
                    (None, _) => {
                        char::from_u32(code).ok_or(JsonError::LoneSurrogate { offset: at })?
                    }
                }
            }
            Escape::PairBackslash { high } => {
                return match byte {
                    b'\\' => Ok(Escape::PairU { high }),
                    _ => Err(JsonError::LoneSurrogate { offset: at }),
                };
            }
            Escape::PairU { high } => {
                return match byte {
                    b'u' => Ok(Escape::Hex {
                        high: Some(high),
                        digits: 0,
                        code: 0,
                    }),
                    _ => Err(JsonError::LoneSurrogate { offset: at }),
                };
            }
        };
        self.string_buffer(key).push(decoded);
        Ok(Escape::None)
    }

    /// Where decoded string characters go: the open object's key, or the scratch buffer that
    /// `flush` appends to the string value in the view.
    fn string_buffer(&mut self, key: bool) -> &mut String {
        match (key, self.stack.last_mut()) {
            (true, Some(Frame::Object { key })) => key,
            _ => &mut self.scratch,
        }
    }

    /// Handles a string's closing quote.
    fn end_string(&mut self, value: &mut Value, key: bool) {
        if key {
            self.state = State::Colon;
        } else {
            self.flush_string(value);
            self.end_value();
        }
    }

    /// Completes the number being read: parses its whole text as serde_json does and shows it.
    fn end_number(&mut self, value: &mut Value) -> Result<(), JsonError> {
        let number = Number::from_str(&self.number).map_err(|_| JsonError::NumberOutOfRange {
            offset: self.number_start,
        })?;
        self.show_number(value, number);
        self.end_value();
        Ok(())
    }

    /// Puts a number into the view: in a new place the first time, in place after that.
    fn show_number(&mut self, value: &mut Value, number: Number) {
        if self.number_shown {
            if let Some(slot) = open_child(value, &self.stack) {
                *slot = Value::Number(number);
            }
        } else {
            self.repeated_key |= insert_new(value, &self.stack, Value::Number(number));
            self.number_shown = true;
        }
    }

    /// A value has ended: what follows is up to its container.
    fn end_value(&mut self) {
        self.state = if self.stack.is_empty() {
            State::Done
        } else {
            State::AfterValue
        };
    }

    /// Handles `]` or `}` closing the innermost container; the view already holds it.
    fn close(&mut self) {
        self.stack.pop();
        self.end_value();
    }

    /// Brings the view up to date at the end of a piece: the open string's new characters, and
    /// the open number if its text so far is a valid number.
    fn flush(&mut self, value: &mut Value) {
        self.flush_string(value);
        if let State::Number(number) = self.state
            && number.is_complete()
        {
            let len = self.number.len();
            let due = len <= SHORT_NUMBER || len >= 2 * self.number_parsed_len;
            if len != self.number_parsed_len && due {
                self.number_parsed_len = len;
                // Out of range is reported when the number ends; until then the view keeps the
                // last number that parsed.
                if let Ok(number) = Number::from_str(&self.number) {
                    self.show_number(value, number);
                }
            }
        }
    }

    /// Appends the scratch buffer to the open string value in the view.
    fn flush_string(&mut self, value: &mut Value) {
        if self.scratch.is_empty() {
            return;
        }
        if let Some(Value::String(string)) = open_child(value, &self.stack) {
            string.push_str(&self.scratch);
        }
        self.scratch.clear();
    }
}

impl NumberState {
    /// Whether the text read so far is a whole number by itself.
    fn is_complete(self) -> bool {
        matches!(self, Self::Zero | Self::Int | Self::Frac | Self::ExpDigits)
    }

    /// The state after `byte`, or `None` if the number cannot go on with it.
    fn next(self, byte: u8) -> Option<Self> {
        match (self, byte) {
            (Self::Minus, b'0') => Some(Self::Zero),
            (Self::Minus | Self::Int, b'0'..=b'9') => Some(Self::Int),
            (Self::Zero | Self::Int, b'.') => Some(Self::Dot),
            (Self::Dot | Self::Frac, b'0'..=b'9') => Some(Self::Frac),
            (Self::Zero | Self::Int | Self::Frac, b'e' | b'E') => Some(Self::Exp),
            (Self::Exp, b'+' | b'-') => Some(Self::ExpSign),
            (Self::Exp | Self::ExpSign | Self::ExpDigits, b'0'..=b'9') => Some(Self::ExpDigits),
            _ => None,
        }
    }
}

/// JSON's white space: exactly space, tab, line feed and carriage return.
fn is_whitespace(byte: u8) -> bool {
    matches!(byte, b' ' | b'\t' | b'\n' | b'\r')
}

/// What the rest of a literal should have been, for [`JsonError::UnexpectedChar`].
fn literal_expectation(word: &str) -> &'static str {
    match word {
        "true" => "`true`",
        "false" => "`false`",
        _ => "`null`",
    }
}

/// The error for the character at byte `i` of `text` (always a char boundary).
fn unexpected(text: &str, i: usize, offset: u64, expected: &'static str) -> JsonError {
    let found = text
        .get(i..)
        .and_then(|rest| rest.chars().next())
        .unwrap_or(char::REPLACEMENT_CHARACTER);
    JsonError::UnexpectedChar {
        found,
        offset,
        expected,
    }
}

/// The innermost open container in the view (the root itself when none is open).
fn open_container<'v>(root: &'v mut Value, stack: &[Frame]) -> Option<&'v mut Value> {
    let outer = stack.len().saturating_sub(1);
    let mut current = root;
    for frame in &stack[..outer] {
        current = child(current, frame)?;
    }
    Some(current)
}

/// The value being read: the innermost container's current child, or the root.
fn open_child<'v>(root: &'v mut Value, stack: &[Frame]) -> Option<&'v mut Value> {
    let container = open_container(root, stack)?;
    match stack.last() {
        Some(frame) => child(container, frame),
        None => Some(container),
    }
}

/// A container's current child: the object's member under the frame's key, or the array's last
/// element.
fn child<'v>(container: &'v mut Value, frame: &Frame) -> Option<&'v mut Value> {
    match (container, frame) {
        (Value::Object(members), Frame::Object { key }) => {
            // The open member is nearly always the last one (a repeated key is the exception);
            // checking that first saves hashing the key on every piece.
            let open_is_last = members.keys().next_back().is_some_and(|last| last == key);
            if open_is_last {
                members.values_mut().next_back()
            } else {
                members.get_mut(key.as_str())
            }
        }
        (Value::Array(elements), Frame::Array) => elements.last_mut(),
        _ => None,
    }
}

/// Puts a newly started value into the view: under the open object's key (replacing a duplicate
/// in place, as serde_json does), after the open array's elements, or as the root. Returns
/// whether it replaced a duplicate.
fn insert_new(root: &mut Value, stack: &[Frame], new: Value) -> bool {
    let Some(container) = open_container(root, stack) else {
        return false;
    };
    match (container, stack.last()) {
        (Value::Object(members), Some(Frame::Object { key })) => {
            members.insert(key.clone(), new).is_some()
        }
        (Value::Array(elements), Some(Frame::Array)) => {
            elements.push(new);
            false
        }
        (root, None) => {
            *root = new;
            false
        }
        _ => false,
    }
}
