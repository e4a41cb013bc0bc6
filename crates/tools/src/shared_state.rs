//! [`SharedState`]: a session's shared state as the runs of one tree hold it while they work —
//! a JSON document that tools change (RFC 6902 patches, as they stream or whole), held to the
//! agent's [`StateSchema`] if it has one — and the `state_snapshot` / `state_delta` events its
//! changes make, in the order they were made, for the run to emit.
//!
//! Decided: the document and its events live under one lock, so the order of the events is the
//! order of the changes even when several runs of a tree (a parent and its sub-agents) change
//! it at once; the top run of the tree emits them all (see the runtime's `orchestrator`). A
//! reader that applies the events in order always holds the document as it is here.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use agentwire_core::EventKind;
use agentwire_core::json_bounds::{BoundsError, JsonBounds};
use agentwire_core::patch_stream::{self, PatchStream, PatchStreamError};
use json_patch::{Patch, PatchOperation};
use serde_json::Value;

use crate::state_schema::StateSchema;

/// A session's shared state, shared by the runs of a tree and their tools. Cloning it is
/// cheap and gives another handle on the same document.
///
/// Every change is all or nothing: a patch that does not apply, would pass the document's
/// [`JsonBounds`] (checked before each operation, so nothing past them is ever built), or
/// leaves a document the schema refuses, changes nothing. Each change made queues its event (a `state_delta` with
/// the operations as they were applied, or a `state_snapshot` of the whole document), which
/// the run takes with [`SharedState::take_events`].
///
/// ```
/// use agentwire_core::EventKind;
/// use agentwire_tools::SharedState;
/// use serde_json::json;
///
/// let state = SharedState::new(json!({"todo": []}), None);
/// let patch: json_patch::Patch =
///     serde_json::from_value(json!([{"op": "add", "path": "/todo/-", "value": "Write"}]))?;
/// state.patch(&patch)?;
/// assert_eq!(state.document(), json!({"todo": ["Write"]}));
/// let events = state.take_events();
/// assert!(matches!(&events[..], [EventKind::StateDelta { .. }]));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, Default)]
pub struct SharedState {
    inner: Arc<Mutex<Inner>>,
}

#[derive(Debug, Default)]
struct Inner {
    document: Value,
    schema: Option<Arc<StateSchema>>,
    bounds: JsonBounds,
    /// Changes made and not yet taken.
    events: Vec<EventKind>,
}

/// Why a change of the state was refused. The state is as it was before the change.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StateError {
    /// The operations, or their text, do not apply (see [`PatchStreamError`]).
    #[error(transparent)]
    Patch(#[from] PatchStreamError),
    /// The state set whole is past the bounds.
    #[error("the state would be {0}")]
    Bounds(BoundsError),
    /// The state they would leave does not match the state schema.
    #[error("the state would not match its schema: {}", problems.join("; "))]
    Schema {
        /// Each problem, with where it is in the state.
        problems: Vec<String>,
    },
}

impl StateError {
    /// The bound the change would have passed, if that is why it was refused.
    pub fn bounds(&self) -> Option<BoundsError> {
        match self {
            Self::Patch(error) => error.bounds(),
            Self::Bounds(bounds) => Some(*bounds),
            Self::Schema { .. } => None,
        }
    }
}

impl SharedState {
    /// A state holding `document` (`null`: none yet), held to `schema` if given and to the
    /// default [`JsonBounds`]. The document is taken as it is (it is not checked: it is what
    /// the session had).
    pub fn new(document: Value, schema: Option<Arc<StateSchema>>) -> Self {
        Self::with_bounds(document, schema, JsonBounds::default())
    }

    /// A state as [`SharedState::new`] makes it, held to `bounds`.
    pub fn with_bounds(
        document: Value,
        schema: Option<Arc<StateSchema>>,
        bounds: JsonBounds,
    ) -> Self {
        Self {
            inner: Arc::new(Mutex::new(Inner {
                document,
                schema,
                bounds,
                events: Vec::new(),
            })),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // Nothing panics while holding the lock; the document stays consistent.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The bounds the document is held to.
    pub fn bounds(&self) -> JsonBounds {
        self.lock().bounds
    }

    /// A copy of the document now.
    pub fn document(&self) -> Value {
        self.lock().document.clone()
    }

    /// Reads the document without copying it.
    pub fn read<T>(&self, read: impl FnOnce(&Value) -> T) -> T {
        read(&self.lock().document)
    }

    /// Applies `patch` whole, in order. Queues a `state_delta` with it.
    pub fn patch(&self, patch: &[PatchOperation]) -> Result<(), StateError> {
        let mut inner = self.lock();
        let before = inner.schema.is_some().then(|| inner.document.clone());
        let bounds = inner.bounds;
        let started = patch_stream::apply_patch(&mut inner.document, patch, bounds)?;
        if let Some(before) = before
            && let Err(error) = inner.check()
        {
            inner.document = before;
            return Err(error);
        }
        inner.events.push(EventKind::StateDelta {
            patch: Patch(started.into_iter().chain(patch.iter().cloned()).collect()),
        });
        Ok(())
    }

    /// Sets the whole document. Queues a `state_snapshot` of it.
    pub fn replace(&self, document: Value) -> Result<(), StateError> {
        let mut inner = self.lock();
        inner.bounds.check(&document).map_err(StateError::Bounds)?;
        if let Some(schema) = &inner.schema {
            schema
                .check(&document)
                .map_err(|problems| StateError::Schema { problems })?;
        }
        inner.document = document;
        inner.snapshot();
        Ok(())
    }

    /// Begins a streamed patch (an `update_state` call whose arguments are arriving): see
    /// [`SharedState::push_stream`].
    pub fn begin_stream(&self) -> PatchStream {
        let inner = self.lock();
        PatchStream::new(&inner.document, inner.bounds)
    }

    /// Applies the next piece of a streamed patch's text: what became definite is applied and
    /// queued as one `state_delta`. On failure the document is back to what it was before the
    /// stream (a `state_snapshot` is queued if readers saw it change), and the stream is
    /// failed.
    pub fn push_stream(&self, stream: &mut PatchStream, text: &str) -> Result<(), StateError> {
        let mut inner = self.lock();
        match stream.push(&mut inner.document, text) {
            Ok(ops) if ops.is_empty() => Ok(()),
            Ok(ops) => {
                inner
                    .events
                    .push(EventKind::StateDelta { patch: Patch(ops) });
                Ok(())
            }
            Err(error) => {
                if stream.touched() {
                    inner.snapshot();
                }
                Err(error.into())
            }
        }
    }

    /// Ends a streamed patch whose text is complete: checks the whole of it, then the
    /// document against the schema. Returns how many operations it made. On failure the
    /// document is back to what it was before the stream, as [`SharedState::push_stream`].
    pub fn finish_stream(&self, stream: &mut PatchStream) -> Result<usize, StateError> {
        let mut inner = self.lock();
        let finished = match stream.finish(&mut inner.document) {
            Ok(finished) => finished,
            Err(error) => {
                if stream.touched() {
                    inner.snapshot();
                }
                return Err(error.into());
            }
        };
        if let Err(error) = inner.check() {
            if stream.rollback(&mut inner.document) {
                inner.snapshot();
            }
            return Err(error);
        }
        if finished.resynced {
            inner.snapshot();
        }
        Ok(finished.operations)
    }

    /// Gives up a streamed patch that will not be completed (the model's output was cut
    /// short): the document goes back to what it was before the stream.
    pub fn abandon_stream(&self, stream: &mut PatchStream) {
        let mut inner = self.lock();
        if stream.rollback(&mut inner.document) {
            inner.snapshot();
        }
    }

    /// Checks `document` against the schema, without setting it.
    pub fn check(&self, document: &Value) -> Result<(), StateError> {
        match &self.lock().schema {
            Some(schema) => schema
                .check(document)
                .map_err(|problems| StateError::Schema { problems }),
            None => Ok(()),
        }
    }

    /// Queues a `state_snapshot` of the document as it is (a run's start shows it so).
    pub fn announce(&self) {
        self.lock().snapshot();
    }

    /// Takes the events of the changes made since the last call, in the order they were made.
    pub fn take_events(&self) -> Vec<EventKind> {
        let mut inner = self.lock();
        if inner.events.is_empty() {
            return Vec::new();
        }
        std::mem::take(&mut inner.events)
    }
}

impl Inner {
    /// Checks the document against the schema.
    fn check(&self) -> Result<(), StateError> {
        match &self.schema {
            Some(schema) => schema
                .check(&self.document)
                .map_err(|problems| StateError::Schema { problems }),
            None => Ok(()),
        }
    }

    /// Queues a snapshot of the document.
    fn snapshot(&mut self) {
        let state = self.document.clone();
        self.events.push(EventKind::StateSnapshot { state });
    }
}
