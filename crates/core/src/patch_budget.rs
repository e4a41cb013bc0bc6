//! [`PatchBudget`]: a document's [`JsonBounds`] held while JSON Patch operations change it,
//! checked before each operation takes effect, so that no operation ever builds a value past
//! them. Checking only the result would be too late: a root copied into itself doubles the
//! document's depth and size with each operation, and thirty such operations ask for 100 GB.
//!
//! Each check costs O(the value the operation adds, up to the bounds), plus O(the path): the
//! size of the document is kept as a running figure, exact for `add`, `copy`, `replace` and
//! `remove`, an upper bound for `move` (a key renamed may be shorter). When the figure passes
//! the bound, the document is measured again before the operation is refused.

use json_patch::jsonptr::Pointer;
use json_patch::jsonptr::index::Index;
use json_patch::{AddOperation, CopyOperation, MoveOperation, PatchOperation, ReplaceOperation};
use serde_json::Value;

use crate::json_bounds::{BoundsError, JsonBounds, measure, string_bytes};

/// The bounds of a document being patched, with its size so far; see the module docs.
#[derive(Clone, Copy, Debug)]
pub struct PatchBudget {
    bounds: JsonBounds,
    /// The document's size as JSON: exact or above it, never below.
    bytes: usize,
}

impl PatchBudget {
    /// A budget for `document` (measured here).
    pub fn new(document: &Value, bounds: JsonBounds) -> Self {
        Self {
            bounds,
            bytes: measure(document, bounds).bytes,
        }
    }

    /// The bounds.
    pub fn bounds(&self) -> JsonBounds {
        self.bounds
    }

    /// Checks `op` against `document` as it is, before the operation is applied, and counts
    /// what it adds. An operation that cannot apply (its path or `from` is not there) passes:
    /// applying it fails with its own reason.
    pub fn admit(&mut self, document: &Value, op: &PatchOperation) -> Result<(), BoundsError> {
        match op {
            PatchOperation::Add(AddOperation { path, value }) => {
                self.place(document, path, value, Purpose::Put)
            }
            PatchOperation::Replace(ReplaceOperation { path, value }) => {
                self.place(document, path, value, Purpose::Replace)
            }
            PatchOperation::Copy(CopyOperation { from, path }) => {
                match document.pointer(from.as_str()) {
                    Some(value) => self.place(document, path, value, Purpose::Put),
                    None => Ok(()),
                }
            }
            PatchOperation::Move(MoveOperation { from, path }) => {
                let Some(value) = document.pointer(from.as_str()) else {
                    return Ok(());
                };
                self.check_depth(path, value)?;
                let overhead = match slot(document, path, Purpose::Put, self.bounds) {
                    Some(Slot::New { overhead }) => overhead,
                    _ => 0,
                };
                self.grow(document, 0, overhead)
            }
            PatchOperation::Remove(remove) => {
                if let Some(Slot::Taken { bytes }) =
                    slot(document, &remove.path, Purpose::Remove, self.bounds)
                {
                    self.bytes = self.bytes.saturating_sub(bytes);
                }
                Ok(())
            }
            PatchOperation::Test(_) => Ok(()),
        }
    }

    /// Checks the document a patch left, exactly (a document that was past the bounds before
    /// the patch may still be).
    pub fn check(&self, document: &Value) -> Result<(), BoundsError> {
        self.bounds.check(document)
    }

    /// `value` set at `path` by an `add`, `copy` or `replace`.
    fn place(
        &mut self,
        document: &Value,
        path: &Pointer,
        value: &Value,
        purpose: Purpose,
    ) -> Result<(), BoundsError> {
        let added = self.check_depth(path, value)?;
        if added > self.bounds.max_bytes {
            return Err(BoundsError::TooLarge {
                max_bytes: self.bounds.max_bytes,
            });
        }
        if path.is_root() {
            self.bytes = added;
            return Ok(());
        }
        let (removed, overhead) = match slot(document, path, purpose, self.bounds) {
            Some(Slot::New { overhead }) => (0, overhead),
            Some(Slot::Replaced { bytes }) => (bytes, 0),
            // The operation fails when applied.
            Some(Slot::Taken { .. }) | None => return Ok(()),
        };
        self.bytes = self.bytes.saturating_sub(removed);
        self.grow(document, added, overhead)
    }

    /// Refuses `value` at `path` if it would nest past the bound; returns its size in bytes
    /// (measured up to the bounds).
    fn check_depth(&self, path: &Pointer, value: &Value) -> Result<usize, BoundsError> {
        let level = path.count();
        let too_deep = BoundsError::TooDeep {
            max_depth: self.bounds.max_depth,
        };
        let room = self.bounds.max_depth.checked_sub(level).ok_or(too_deep)?;
        let within = JsonBounds {
            max_depth: room,
            max_bytes: self.bounds.max_bytes,
        };
        let measured = measure(value, within);
        match measured.depth > room {
            true => Err(too_deep),
            false => Ok(measured.bytes),
        }
    }

    /// Counts `added` bytes of value and `overhead` bytes of key and comma, measuring the
    /// document again before refusing.
    fn grow(&mut self, document: &Value, added: usize, overhead: usize) -> Result<(), BoundsError> {
        let grown = |bytes: usize| bytes.saturating_add(added).saturating_add(overhead);
        let mut bytes = grown(self.bytes);
        if bytes > self.bounds.max_bytes {
            // The running figure may be above the document's size (after a `move`).
            let exact = measure(document, self.bounds).bytes;
            bytes = grown(exact.min(self.bytes));
            if bytes > self.bounds.max_bytes {
                return Err(BoundsError::TooLarge {
                    max_bytes: self.bounds.max_bytes,
                });
            }
        }
        self.bytes = bytes;
        Ok(())
    }
}

/// What is at a path that is not the root, as far as its size goes.
enum Slot {
    /// Nothing: a value put there adds `overhead` bytes of key, colon and comma.
    New { overhead: usize },
    /// A value of `bytes` that a value put there replaces.
    Replaced { bytes: usize },
    /// A value that takes `bytes` with its key and comma (what removing it takes away).
    Taken { bytes: usize },
}

/// What an operation does at its path.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Purpose {
    /// An `add`, `copy` or `move`: an array's element is inserted, an object's member set.
    Put,
    /// A `replace`: the value there is replaced.
    Replace,
    /// A `remove`.
    Remove,
}

/// What is at `path` in `document` for an operation with `purpose` there; `None` when its
/// parent is not there. Sizes are measured up to `bounds` (a figure cut short leaves the
/// running size above the document's, never below).
fn slot(document: &Value, path: &Pointer, purpose: Purpose, bounds: JsonBounds) -> Option<Slot> {
    let (parent, last) = path.split_back()?;
    let parent = document.pointer(parent.as_str())?;
    let size = |value: &Value| measure(value, bounds).bytes;
    match parent {
        Value::Object(members) => {
            let key = last.decoded();
            let key_bytes = string_bytes(&key) + 1;
            match members.get(key.as_ref()) {
                Some(old) if purpose == Purpose::Remove => Some(Slot::Taken {
                    bytes: size(old) + key_bytes + usize::from(members.len() > 1),
                }),
                Some(old) => Some(Slot::Replaced { bytes: size(old) }),
                None => Some(Slot::New {
                    overhead: key_bytes + usize::from(!members.is_empty()),
                }),
            }
        }
        Value::Array(items) => {
            let at = match last.to_index() {
                Ok(Index::Num(at)) => items.get(at),
                _ => None,
            };
            match (at, purpose) {
                (Some(old), Purpose::Remove) => Some(Slot::Taken {
                    bytes: size(old) + usize::from(items.len() > 1),
                }),
                (Some(old), Purpose::Replace) => Some(Slot::Replaced { bytes: size(old) }),
                _ => Some(Slot::New {
                    overhead: usize::from(!items.is_empty()),
                }),
            }
        }
        _ => None,
    }
}
