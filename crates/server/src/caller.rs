//! [`Caller`]: who a request acts for. The `auth` module's extractor makes it from the
//! request's key; everything a caller creates is stored with its owner id, and the runs and
//! sessions of another owner are not there for it.

use std::sync::Arc;

/// The owner id of the key a request presented, or nobody when the server has no keys.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub(crate) struct Caller(Option<Arc<str>>);

impl Caller {
    /// The caller of a key whose owner id is `owner`.
    pub(crate) fn owner(owner: Arc<str>) -> Self {
        Self(Some(owner))
    }

    /// The caller whose owner id the store recorded (`None`: nobody's).
    pub(crate) fn of(owner: Option<String>) -> Self {
        Self(owner.map(Arc::from))
    }

    /// The owner id as the store records it (`None` without keys).
    pub(crate) fn owner_id(&self) -> Option<&str> {
        self.0.as_deref()
    }
}
