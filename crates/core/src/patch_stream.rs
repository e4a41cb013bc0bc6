//! [`PatchStream`]: a JSON document changed by RFC 6902 operations while the text that lists
//! them streams in, each change made (and reported, to be sent as a `state_delta`) as soon as
//! it is definite.
//!
//! The text is an `update_state` call's arguments, `{"ops": [operation, …]}`, written by a
//! model a few bytes at a time. Re-parsing the whole text on every piece (as other bridges
//! that stream state from tool arguments do) costs O(n²); here the text goes through one
//! [`PartialJson`] and a [`Settled`] cursor, so every byte is read once and every value is
//! applied once: O(total bytes), plus O(nesting depth) per piece.
//!
//! What is applied when:
//! - an `add` or `replace` whose `op` and `path` came before its `value` streams: a scalar
//!   value is applied when it ends; an object or array value is applied as an empty container
//!   when it opens, then each member (by `add`, recursively the same way) as it becomes
//!   definite. So the operations sent add up to about the size of the value itself;
//! - any other operation (`remove`, `move`, `copy`, `test`, or an `add` written value-first)
//!   is applied whole when its object closes. A `test` changes nothing and is not reported;
//! - an `add` to the end of an array (`/list/-`) is reported at the index it took, so the
//!   members that follow have a real path;
//! - a state that does not exist yet (`null`) is started as an empty object by an `add` of
//!   `{}` at the root, reported before the first operation that needs it: a model adds
//!   `/plan` to a new session as it would to an empty one, and every copy of the state,
//!   applying the same operations, stays equal.
//!
//! Decided: the stream is checked once more at its end against the whole text, parsed as
//! serde_json does and applied to the document as it was before the call
//! ([`PatchStream::finish`]). Where they differ (an object that repeats a key, which makes
//! streaming stop, or an operation rewritten by a repeated `path`), the whole result wins
//! and the caller is told to send it as a snapshot. Any failure restores the document as it
//! was before the call, so a call changes the state all or nothing, as RFC 6902 asks of a
//! patch.
//!
//! Decided: the document is held to [`JsonBounds`] (depth and size) before each operation
//! takes effect ([`PatchBudget`]): an operation that would pass them fails the call as any
//! operation that cannot apply does, so no value past them is ever built.

use json_patch::jsonptr::index::Index;
use json_patch::jsonptr::{Pointer, PointerBuf};
use json_patch::{AddOperation, Patch, PatchErrorKind, PatchOperation, ReplaceOperation};
use serde::Deserialize;
use serde_json::{Map, Value};
use thiserror::Error;

use crate::json_bounds::{BoundsError, JsonBounds};
use crate::partial_json::{JsonError, PartialJson};
use crate::patch_budget::PatchBudget;
use crate::settled::{Advance, Segment, Settled, Step};

/// The key of the arguments' array of operations: `{"ops": [...]}`.
pub const OPS: &str = "ops";

/// A document being changed by a streamed `{"ops": [...]}` text; see the module docs.
///
/// ```
/// use agentwire_core::json_bounds::JsonBounds;
/// use agentwire_core::patch_stream::PatchStream;
/// use serde_json::json;
///
/// let mut state = json!({"todo": []});
/// let mut stream = PatchStream::new(&state, JsonBounds::default());
/// let sent = stream.push(&mut state, r#"{"ops": [{"op": "add", "path": "/todo/-", "value": {"ti"#)?;
/// // The new item exists, empty, at the index it took.
/// assert_eq!(serde_json::to_value(&sent)?, json!([{"op": "add", "path": "/todo/0", "value": {}}]));
/// let sent = stream.push(&mut state, r#"tle": "Write"#)?;
/// assert!(sent.is_empty(), "the title has not ended yet");
/// let sent = stream.push(&mut state, r#" docs"}}]}"#)?;
/// assert_eq!(serde_json::to_value(&sent)?, json!([{"op": "add", "path": "/todo/0/title", "value": "Write docs"}]));
/// let finished = stream.finish(&mut state)?;
/// assert!(!finished.resynced);
/// assert_eq!(state, json!({"todo": [{"title": "Write docs"}]}));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct PatchStream {
    parser: PartialJson,
    /// The partial view of the arguments.
    args: Value,
    settled: Settled,
    /// The document as it was before the stream: what a failure restores.
    before: Value,
    /// The operation being read.
    op: OpProgress,
    /// The document's bounds, and its size so far.
    budget: PatchBudget,
    /// Set by the first failure; every later call returns it.
    failed: Option<PatchStreamError>,
    /// Streaming stopped (the text repeated a key): the rest is settled at the end.
    whole: bool,
    /// Whether the document was changed (and changes reported) since the stream began.
    touched: bool,
    /// How many operations have taken effect.
    operations: usize,
}

/// How a stream ended well.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Finished {
    /// How many operations the call made (a `test` counts; it changes nothing).
    pub operations: usize,
    /// The document was set to the result of applying `patch` whole because the operations
    /// streamed did not add up to it (see the module docs): send it as a snapshot.
    pub resynced: bool,
}

/// Why a streamed patch failed. The document is back to what it was before the stream
/// ([`PatchStream::touched`] says whether it had been changed meanwhile).
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum PatchStreamError {
    /// The text is not JSON.
    #[error("the arguments are not valid JSON: {0}")]
    Json(#[from] JsonError),
    /// The text is JSON, but not `{"ops": [operation, …]}` with RFC 6902 operations.
    #[error("the arguments must be {{\"ops\": [operation, …]}} with RFC 6902 operations: {reason}")]
    Shape {
        /// What does not fit, as serde says it.
        reason: String,
    },
    /// An operation cannot be applied to the document as it is at that point.
    #[error("operation {index} ({op} '{path}') cannot be applied: {reason}")]
    Apply {
        /// The operation's place in `ops`, from 0.
        index: usize,
        /// Its `op`.
        op: &'static str,
        /// Its `path`.
        path: String,
        /// Why, in words a model can act on.
        reason: &'static str,
    },
    /// An operation would make the document pass its bounds (see [`JsonBounds`]).
    #[error("operation {index} ({op} '{path}') is refused: the state would be {bounds}")]
    Bounds {
        /// The operation's place in `ops`, from 0.
        index: usize,
        /// Its `op`.
        op: &'static str,
        /// Its `path`.
        path: String,
        /// Which bound.
        bounds: BoundsError,
    },
    /// The document the operations leave is past its bounds (it was before them, too: the
    /// bounds are lower than when it was set).
    #[error("the state would be {0}")]
    Result(BoundsError),
}

impl PatchStreamError {
    /// The bound a patch would have passed, if that is why it failed.
    pub fn bounds(&self) -> Option<BoundsError> {
        match self {
            Self::Bounds { bounds, .. } | Self::Result(bounds) => Some(*bounds),
            _ => None,
        }
    }
}

/// Where the operation being read is.
#[derive(Debug, Default)]
struct OpProgress {
    index: usize,
    /// Its `op`, once read.
    op: Option<String>,
    /// Its `path`, once read.
    path: Option<String>,
    /// Where its value streams to in the document, while it does.
    target: Option<PointerBuf>,
    /// It has taken effect (its value streams, or it was applied whole).
    applied: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct OpsArgs {
    ops: Patch,
}

impl PatchStream {
    /// A stream that changes `document` (the copy it restores on failure is taken here),
    /// holding it to `bounds`.
    pub fn new(document: &Value, bounds: JsonBounds) -> Self {
        Self {
            budget: PatchBudget::new(document, bounds),
            parser: PartialJson::default(),
            args: Value::Null,
            settled: Settled::default(),
            before: document.clone(),
            op: OpProgress::default(),
            failed: None,
            whole: false,
            touched: false,
            operations: 0,
        }
    }

    /// Applies the next piece of the text: returns the operations that took effect, in order,
    /// to be sent as one `state_delta` (none: nothing became definite). On failure the
    /// document is restored and the stream is failed: every later call returns the error.
    pub fn push(
        &mut self,
        document: &mut Value,
        text: &str,
    ) -> Result<Vec<PatchOperation>, PatchStreamError> {
        if let Some(error) = &self.failed {
            return Err(error.clone());
        }
        let mut applied = Vec::new();
        let res = self
            .parser
            .push(&mut self.args, text)
            .map_err(PatchStreamError::from)
            .and_then(|()| self.apply_settled(document, &mut applied));
        match res {
            Ok(()) => {
                self.touched |= !applied.is_empty();
                Ok(applied)
            }
            Err(error) => {
                self.touched |= !applied.is_empty();
                Err(self.fail(document, error))
            }
        }
    }

    /// The text has ended: checks the whole of it (see the module docs) and returns the call's
    /// operations. On failure the document is restored.
    pub fn finish(&mut self, document: &mut Value) -> Result<Finished, PatchStreamError> {
        if let Some(error) = &self.failed {
            return Err(error.clone());
        }
        let mut applied = Vec::new();
        let res = self
            .parser
            .finish(&mut self.args)
            .map_err(PatchStreamError::from)
            .and_then(|()| self.apply_settled(document, &mut applied));
        self.touched |= !applied.is_empty();
        let res = res.and_then(|()| {
            self.budget
                .check(document)
                .map_err(PatchStreamError::Result)
        });
        if let Err(error) = res {
            return Err(self.fail(document, error));
        }
        // Every operation took effect as written, in order: the document is what they make.
        let clean = !self.whole
            && matches!(&self.args, Value::Object(args) if args.len() == 1
                && args.get(OPS).and_then(Value::as_array)
                    .is_some_and(|ops| ops.len() == self.operations));
        if clean {
            return Ok(Finished {
                operations: self.operations,
                resynced: false,
            });
        }
        let ops = match OpsArgs::deserialize(&self.args) {
            Ok(args) => args.ops,
            Err(error) => {
                let error = PatchStreamError::Shape {
                    reason: error.to_string(),
                };
                return Err(self.fail(document, error));
            }
        };
        let mut expected = self.before.clone();
        if let Err(error) = apply_patch(&mut expected, &ops, self.budget.bounds()) {
            return Err(self.fail(document, error));
        }
        let resynced = expected != *document;
        if resynced {
            *document = expected;
            self.touched = true;
        }
        Ok(Finished {
            operations: ops.len(),
            resynced,
        })
    }

    /// Restores the document as it was before the stream (a call that streamed but is not
    /// kept: cut short, or refused once whole). Returns whether that changed it back, so
    /// that readers must be told (a snapshot).
    pub fn rollback(&mut self, document: &mut Value) -> bool {
        if self.failed.is_some() {
            // A failure restored it already.
            return false;
        }
        let touched = std::mem::take(&mut self.touched);
        if touched {
            *document = self.before.clone();
        }
        touched
    }

    /// Whether the stream has changed the document so far (after a failure: whether it had,
    /// before the document was restored).
    pub fn touched(&self) -> bool {
        self.touched
    }

    /// Records the failure and restores the document.
    fn fail(&mut self, document: &mut Value, error: PatchStreamError) -> PatchStreamError {
        // Restored even when untouched: a `move` that fails has taken its value away already.
        *document = std::mem::take(&mut self.before);
        self.failed = Some(error.clone());
        error
    }

    /// Applies what has become definite in the text, collecting what took effect.
    fn apply_settled(
        &mut self,
        document: &mut Value,
        applied: &mut Vec<PatchOperation>,
    ) -> Result<(), PatchStreamError> {
        if self.whole {
            return Ok(());
        }
        let mut res = Ok(());
        let (op, operations, budget) = (&mut self.op, &mut self.operations, &mut self.budget);
        let advance = self.settled.advance(&self.parser, &self.args, |step| {
            if res.is_ok() {
                let made = Made {
                    applied: &mut *applied,
                    operations: &mut *operations,
                    budget: &mut *budget,
                };
                res = op.step(step, &self.args, document, made);
            }
        });
        if advance == Advance::RepeatedKey {
            // What streamed so far may not add up to the text; `finish` settles it whole.
            self.whole = true;
        }
        res
    }
}

/// What a stream's steps make: the operations that took effect, how many of the call's did,
/// and the document's budget.
struct Made<'a> {
    applied: &'a mut Vec<PatchOperation>,
    operations: &'a mut usize,
    budget: &'a mut PatchBudget,
}

impl OpProgress {
    /// Acts on one definite value of the arguments.
    fn step(
        &mut self,
        step: Step<'_, '_>,
        args: &Value,
        document: &mut Value,
        made: Made<'_>,
    ) -> Result<(), PatchStreamError> {
        let Made {
            applied,
            operations,
            budget,
        } = made;
        let (path, new) = match step {
            Step::Open { path, array } => (path, Some(empty(array))),
            Step::Value { path, value } => (path, Some(value.clone())),
            Step::Close { path } => (path, None),
        };
        let [Segment::Key(OPS), Segment::Index(index), rest @ ..] = path else {
            return Ok(());
        };
        match (rest, new) {
            ([], Some(_)) => {
                *self = OpProgress {
                    index: *index,
                    ..OpProgress::default()
                }
            }
            ([], None) if !self.applied => {
                let written = args
                    .get(OPS)
                    .and_then(|ops| ops.get(index))
                    .cloned()
                    .unwrap_or_default();
                let op = PatchOperation::deserialize(written).map_err(|error| {
                    PatchStreamError::Shape {
                        reason: format!("operation {index}: {error}"),
                    }
                })?;
                self.applied = true;
                *operations += 1;
                let op = resolve_append(document, op);
                applied.extend(start(document, &op));
                admit(budget, document, &op, self.index)?;
                apply(document, &op, self.index)?;
                if !matches!(op, PatchOperation::Test(_)) {
                    applied.push(op);
                }
            }
            ([Segment::Key("op")], Some(Value::String(op))) => self.op = Some(op),
            ([Segment::Key("path")], Some(Value::String(path))) => self.path = Some(path),
            ([Segment::Key("value")], Some(value)) if !self.applied => {
                let (Some(op), Some(path)) = (self.op.as_deref(), self.path.as_deref()) else {
                    return Ok(());
                };
                let Ok(path) = PointerBuf::parse(path) else {
                    // Not a pointer: applied whole, it fails with serde's reason.
                    return Ok(());
                };
                let streams = step_is_open(step);
                let op = match op {
                    "add" => PatchOperation::Add(AddOperation { path, value }),
                    "replace" => PatchOperation::Replace(ReplaceOperation { path, value }),
                    _ => return Ok(()),
                };
                let op = resolve_append(document, op);
                applied.extend(start(document, &op));
                admit(budget, document, &op, self.index)?;
                apply(document, &op, self.index)?;
                self.applied = true;
                *operations += 1;
                if streams {
                    self.target = Some(op.path().to_buf());
                }
                applied.push(op);
            }
            ([Segment::Key("value")], None) => self.target = None,
            ([Segment::Key("value"), below @ ..], Some(value)) => {
                let Some(target) = &self.target else {
                    return Ok(());
                };
                let path = below_path(target, below);
                let op = PatchOperation::Add(AddOperation { path, value });
                admit(budget, document, &op, self.index)?;
                let PatchOperation::Add(AddOperation { value, .. }) = &op else {
                    return Ok(());
                };
                if !add_below(document, target, below, value.clone()) {
                    return Err(apply_error(
                        &op,
                        self.index,
                        &PatchErrorKind::InvalidPointer,
                    ));
                }
                applied.push(op);
            }
            _ => {}
        }
        Ok(())
    }
}

/// The path of a member `below` the value streaming to `target`.
fn below_path(target: &Pointer, below: &[Segment<'_>]) -> PointerBuf {
    let mut text = String::with_capacity(target.as_str().len() + 8 * below.len());
    text.push_str(target.as_str());
    for segment in below {
        text.push('/');
        match segment {
            Segment::Key(key) if key.contains(['~', '/']) => {
                text.push_str(&key.replace('~', "~0").replace('/', "~1"));
            }
            Segment::Key(key) => text.push_str(key),
            Segment::Index(index) => push_decimal(&mut text, *index),
        }
    }
    // Tokens encoded as above always make a valid pointer.
    PointerBuf::parse(text).unwrap_or_else(|_| target.with_trailing_token("~invalid"))
}

/// Writes `n` in decimal (without the formatting machinery: this runs for every element).
fn push_decimal(text: &mut String, mut n: usize) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    text.extend(digits[at..].iter().map(|&digit| char::from(digit)));
}

/// Adds a member `below` the value streaming to `target`, as RFC 6902's `add` does (an
/// object's member set, an array's element inserted), walking the document rather than
/// parsing a pointer: this runs for every value of a streaming call. False when the place is
/// not there (the document was changed under the stream).
fn add_below(document: &mut Value, target: &Pointer, below: &[Segment<'_>], value: Value) -> bool {
    let Some((last, parents)) = below.split_last() else {
        return false;
    };
    let mut node = document;
    for token in target.tokens() {
        let next = match node {
            Value::Object(members) => members.get_mut(token.decoded().as_ref()),
            Value::Array(items) => match token.to_index() {
                Ok(Index::Num(index)) => items.get_mut(index),
                _ => None,
            },
            _ => None,
        };
        let Some(next) = next else {
            return false;
        };
        node = next;
    }
    for segment in parents {
        let next = match (node, segment) {
            (Value::Object(members), Segment::Key(key)) => members.get_mut(*key),
            (Value::Array(items), Segment::Index(index)) => items.get_mut(*index),
            _ => None,
        };
        let Some(next) = next else {
            return false;
        };
        node = next;
    }
    match (node, last) {
        (Value::Object(members), Segment::Key(key)) => {
            members.insert((*key).to_owned(), value);
            true
        }
        (Value::Array(items), Segment::Index(index)) if *index <= items.len() => {
            items.insert(*index, value);
            true
        }
        _ => false,
    }
}

/// Whether a step opens a container (its members follow).
fn step_is_open(step: Step<'_, '_>) -> bool {
    matches!(step, Step::Open { .. })
}

/// An empty array or object.
fn empty(array: bool) -> Value {
    match array {
        true => Value::Array(Vec::new()),
        false => Value::Object(Map::new()),
    }
}

/// An `add` to the end of an array (`…/-`) as the index it takes, so that the operation names
/// where its value is, and the members that stream after it have a real path.
fn resolve_append(document: &Value, op: PatchOperation) -> PatchOperation {
    let PatchOperation::Add(AddOperation { path, value }) = op else {
        return op;
    };
    let path = match path.split_back() {
        Some((parent, last)) if last.encoded() == "-" => match document.pointer(parent.as_str()) {
            Some(Value::Array(items)) => parent.with_trailing_token(items.len()),
            _ => path,
        },
        _ => path,
    };
    PatchOperation::Add(AddOperation { path, value })
}

/// Applies a whole patch to `document`, all or nothing, failing as a streamed one would (the
/// same [`PatchStreamError::Apply`] or [`PatchStreamError::Bounds`], naming the operation;
/// each operation is held to `bounds` before it takes effect). An `add` to the end of an
/// array is applied as written (`/list/-`). A `null` document is started as an empty object
/// first, as a streamed patch starts it: the operation that did so is returned, to be sent
/// before the patch.
pub fn apply_patch(
    document: &mut Value,
    patch: &[PatchOperation],
    bounds: JsonBounds,
) -> Result<Option<PatchOperation>, PatchStreamError> {
    let before = document.clone();
    let mut budget = PatchBudget::new(document, bounds);
    let started = patch.first().and_then(|op| start(document, op));
    let applied = patch
        .iter()
        .enumerate()
        .try_for_each(|(index, op)| {
            admit(&mut budget, document, op, index)?;
            apply(document, op, index)
        })
        .and_then(|()| budget.check(document).map_err(PatchStreamError::Result));
    match applied {
        Ok(()) => Ok(started),
        Err(error) => {
            *document = before;
            Err(error)
        }
    }
}

/// Starts a state that does not exist yet (`null`) as an empty object, when `op` changes a
/// place inside it: returns the `add` that did so.
fn start(document: &mut Value, op: &PatchOperation) -> Option<PatchOperation> {
    if !document.is_null() || op.path().is_root() || matches!(op, PatchOperation::Test(_)) {
        return None;
    }
    *document = Value::Object(Map::new());
    Some(PatchOperation::Add(AddOperation {
        path: PointerBuf::new(),
        value: Value::Object(Map::new()),
    }))
}

/// Holds `op`, the `index`th operation, to the document's bounds, before it is applied.
fn admit(
    budget: &mut PatchBudget,
    document: &Value,
    op: &PatchOperation,
    index: usize,
) -> Result<(), PatchStreamError> {
    budget
        .admit(document, op)
        .map_err(|bounds| PatchStreamError::Bounds {
            index,
            op: op_name(op),
            path: op.path().to_string(),
            bounds,
        })
}

/// Applies one operation (the document is unchanged if it fails).
fn apply(document: &mut Value, op: &PatchOperation, index: usize) -> Result<(), PatchStreamError> {
    json_patch::patch(document, std::slice::from_ref(op))
        .map_err(|error| apply_error(op, index, &error.kind))
}

/// Why `op`, the `index`th operation, failed, in words a model can act on.
fn apply_error(op: &PatchOperation, index: usize, kind: &PatchErrorKind) -> PatchStreamError {
    let reason = match kind {
        PatchErrorKind::TestFailed => "the value at its path is not the one it tests for",
        PatchErrorKind::InvalidFromPointer => "its 'from' is not a path in the state",
        PatchErrorKind::CannotMoveInsideItself => "it moves a value inside itself",
        _ => match op {
            PatchOperation::Add(_) | PatchOperation::Move(_) | PatchOperation::Copy(_) => {
                "the parent of its path is not an object or array in the state, or the index is \
                 past the end of the array"
            }
            _ => "its path is not in the state",
        },
    };
    PatchStreamError::Apply {
        index,
        op: op_name(op),
        path: op.path().to_string(),
        reason,
    }
}

/// The `op` of an operation.
fn op_name(op: &PatchOperation) -> &'static str {
    match op {
        PatchOperation::Add(_) => "add",
        PatchOperation::Remove(_) => "remove",
        PatchOperation::Replace(_) => "replace",
        PatchOperation::Move(_) => "move",
        PatchOperation::Copy(_) => "copy",
        PatchOperation::Test(_) => "test",
    }
}
