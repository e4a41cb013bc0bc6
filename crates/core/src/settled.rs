//! [`Settled`]: what of a streamed JSON text has become definite since it was last asked.
//!
//! [`PartialJson`] keeps a partial view of the text so far; `Settled` walks that view after
//! each piece and reports, once each, every container as it opens, every scalar as it ends
//! and every container as it closes, with its path. A consumer can then act on a value the
//! moment it is final (the runtime turns a streamed `update_state` call into state patches
//! with it, see [`PatchStream`](crate::patch_stream::PatchStream)) without re-reading what it
//! saw before.
//!
//! It costs O(nesting depth) per piece to find its place again, plus O(1) per value reported:
//! it only looks down the view's last-child spine, where the parser is, and at the children
//! added there since the last call. Earlier values are never visited again.

use serde_json::Value;

use crate::partial_json::PartialJson;

/// A cursor over a [`PartialJson`] view that reports each value once it is definite.
///
/// Values are reported in text order:
/// - an object or array as [`Step::Open`] when its bracket is read (it is then empty), its
///   members next, and [`Step::Close`] once its closing bracket is read;
/// - a string, number, `true`, `false` or `null` as [`Step::Value`] once it has ended (a
///   number ends at the character after it, or at [`PartialJson::finish`]).
///
/// A text whose objects repeat a key (`{"a": 1, "a": 2}`) is not reported faithfully: the
/// parser replaces the earlier member in place, which a cursor that only looks ahead does not
/// see. [`Settled::advance`] says when that happened ([`Advance::RepeatedKey`]); the caller
/// should fall back to the whole value.
///
/// ```
/// use agentwire_core::PartialJson;
/// use agentwire_core::settled::{Segment, Settled, Step};
/// use serde_json::Value;
///
/// let (mut parser, mut view, mut settled) = (PartialJson::default(), Value::Null, Settled::default());
/// let mut seen = Vec::new();
/// for piece in [r#"{"name": "Ad"#, r#"a", "tags": [1"#, ", 2]}"] {
///     parser.push(&mut view, piece)?;
///     settled.advance(&parser, &view, |step| seen.push(step.to_string()));
/// }
/// assert_eq!(seen, [
///     "open {} at ''", "value \"Ada\" at '/name'", "open [] at '/tags'",
///     "value 1 at '/tags/0'", "value 2 at '/tags/1'", "close at '/tags'", "close at ''",
/// ]);
/// # Ok::<(), agentwire_core::partial_json::JsonError>(())
/// ```
#[derive(Clone, Debug, Default)]
pub struct Settled {
    root: Root,
    /// For each container open on the reported path, outermost first: how many of its children
    /// are reported complete. The child after them, if it is a container and the path goes on,
    /// is the next entry's.
    done: Vec<usize>,
}

/// One value that has become definite, with where it is.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Step<'p, 'v> {
    /// An object or array has begun; it is reported empty, and its members follow.
    Open {
        /// Where it is.
        path: &'p [Segment<'v>],
        /// An array (`true`) or an object.
        array: bool,
    },
    /// A scalar is complete.
    Value {
        /// Where it is.
        path: &'p [Segment<'v>],
        /// The scalar.
        value: &'v Value,
    },
    /// An object or array is complete: every member was reported.
    Close {
        /// Where it is.
        path: &'p [Segment<'v>],
    },
}

/// One step of a path into a JSON value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Segment<'v> {
    /// An object member, by key.
    Key(&'v str),
    /// An array element, by index.
    Index(usize),
}

/// What [`Settled::advance`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[must_use]
pub enum Advance {
    /// Everything definite so far is reported.
    Reported,
    /// The text repeated an object key, so a member reported earlier may have changed: the
    /// steps no longer describe the view (see [`Settled`]).
    RepeatedKey,
}

/// Where the root value is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Root {
    /// Not begun, or a scalar not yet ended.
    #[default]
    Pending,
    /// A container, open on the reported path.
    Open,
    /// Reported whole.
    Done,
}

impl Settled {
    /// Reports, in text order, what has become definite in `view` since the last call. `parser`
    /// and `view` must be the parser and view every earlier call was given, after the same
    /// pieces or more.
    pub fn advance<'v>(
        &mut self,
        parser: &PartialJson,
        view: &'v Value,
        mut visit: impl FnMut(Step<'_, 'v>),
    ) -> Advance {
        if parser.repeated_key() {
            return Advance::RepeatedKey;
        }
        let depth = parser.open_depth();
        let scalar = parser.reading_scalar();
        match self.root {
            Root::Done => return Advance::Reported,
            Root::Pending => {
                if depth == 0 && !parser.is_complete() {
                    return Advance::Reported;
                }
                match view {
                    Value::Object(_) | Value::Array(_) => {
                        visit(Step::Open {
                            path: &[],
                            array: view.is_array(),
                        });
                        self.done.push(0);
                        self.root = Root::Open;
                    }
                    _ => {
                        visit(Step::Value {
                            path: &[],
                            value: view,
                        });
                        self.root = Root::Done;
                        return Advance::Reported;
                    }
                }
            }
            Root::Open => {}
        }
        let mut path = Vec::with_capacity(depth);
        let root = Place {
            level: 0,
            open: depth > 0,
            cursor: Cursor { depth, scalar },
        };
        if self.walk(root, view, &mut path, &mut visit) {
            visit(Step::Close { path: &[] });
            self.done.clear();
            self.root = Root::Done;
        }
        Advance::Reported
    }

    /// Reports what is new in the container `node`, at `level` of the reported path, and
    /// returns whether it is complete. `open`: the parser is still inside it.
    fn walk<'v>(
        &mut self,
        at: Place,
        node: &'v Value,
        path: &mut Vec<Segment<'v>>,
        visit: &mut impl FnMut(Step<'_, 'v>),
    ) -> bool {
        let from = self.done.get(at.level).copied().unwrap_or_default();
        let len = match node {
            Value::Object(members) => members.len(),
            Value::Array(elements) => elements.len(),
            _ => 0,
        };
        let complete = match node {
            Value::Array(elements) => {
                (from..len)
                    .zip(&elements[from.min(len)..])
                    .all(|(idx, child)| {
                        self.child(at, (idx, len), Segment::Index(idx), child, path, visit)
                    })
            }
            // Only the members past `from` are looked at, found from the object's end: finding
            // them costs what they are, not where they are. Nearly always there is one.
            Value::Object(members) if from + 1 == len => match members.iter().next_back() {
                Some((key, child)) => {
                    self.child(at, (from, len), Segment::Key(key), child, path, visit)
                }
                None => true,
            },
            Value::Object(members) if from < len => {
                let mut new: Vec<_> = members.iter().rev().take(len - from).collect();
                new.reverse();
                (from..).zip(new).all(|(idx, (key, child))| {
                    self.child(at, (idx, len), Segment::Key(key), child, path, visit)
                })
            }
            _ => true,
        };
        complete && !at.open
    }

    /// Reports what is new of the child `idx` (of `len`) of the container at `at`, and
    /// returns whether it is complete (so the next child may be looked at).
    fn child<'v>(
        &mut self,
        at: Place,
        (idx, len): (usize, usize),
        segment: Segment<'v>,
        child: &'v Value,
        path: &mut Vec<Segment<'v>>,
        visit: &mut impl FnMut(Step<'_, 'v>),
    ) -> bool {
        let last = idx + 1 == len;
        let level = at.level;
        path.push(segment);
        let complete = match child {
            Value::Object(_) | Value::Array(_) => {
                if self.done.len() == level + 1 {
                    visit(Step::Open {
                        path,
                        array: child.is_array(),
                    });
                    self.done.push(0);
                }
                let inner = Place {
                    level: level + 1,
                    open: at.open && last && at.cursor.depth > level + 1,
                    cursor: at.cursor,
                };
                let complete = self.walk(inner, child, path, visit);
                if complete {
                    visit(Step::Close { path });
                    self.done.truncate(level + 1);
                }
                complete
            }
            scalar => {
                let reading = at.open && last && at.cursor.depth == level + 1 && at.cursor.scalar;
                if !reading {
                    visit(Step::Value {
                        path,
                        value: scalar,
                    });
                }
                !reading
            }
        };
        path.pop();
        if complete && let Some(done) = self.done.get_mut(level) {
            *done = idx + 1;
        }
        complete
    }
}

/// A container on the reported path: its level, and whether the parser is inside it.
#[derive(Clone, Copy, Debug)]
struct Place {
    level: usize,
    open: bool,
    cursor: Cursor,
}

/// Where the parser is: how many containers are open, and whether it reads a scalar.
#[derive(Clone, Copy, Debug)]
struct Cursor {
    depth: usize,
    scalar: bool,
}

impl std::fmt::Display for Step<'_, '_> {
    /// `open {} at '/a'`, `value 1 at '/a/b'`, `close at '/a'`: the path as a JSON Pointer.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let path = match self {
            Step::Open { path, array } => {
                write!(f, "open {} at '", if *array { "[]" } else { "{}" })?;
                path
            }
            Step::Value { path, value } => {
                write!(f, "value {value} at '")?;
                path
            }
            Step::Close { path } => {
                f.write_str("close at '")?;
                path
            }
        };
        for segment in *path {
            match segment {
                Segment::Key(key) => write!(f, "/{}", key.replace('~', "~0").replace('/', "~1"))?,
                Segment::Index(index) => write!(f, "/{index}")?,
            }
        }
        f.write_str("'")
    }
}
