//! [`Namespace`]: which run of a tree an event belongs to.
//!
//! A run whose agent calls another agent as a tool (a sub-agent) starts a run of its own for
//! it, and streams that child's events inside its own stream, each tagged with the path of run
//! ids from the parent down: `[]` for the run's own events, `["run_b"]` for its child's,
//! `["run_b", "run_c"]` for a grandchild's. The events keep their own kinds, so every reducer
//! and codec reads a child the way it reads a run; the path says whose they are.
//!
//! A path rather than the child's id alone: a reader routes an event down the tree without a
//! table of who is whose child, and a parent nests a child's stream by putting one id in front.
//!
//! ```json
//! {"seq": 41, "namespace": ["run_b"], "event": "part_delta", "message_id": "msg_9", "index": 0, "delta": "Fou"}
//! ```

use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::ids::RunId;

/// The path of run ids from a run down to the descendant an event belongs to; empty for the
/// run's own events. Cloning it is a reference-count increment.
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub struct Namespace(Option<Arc<[RunId]>>);

impl Namespace {
    /// The run's own events.
    pub const ROOT: Namespace = Namespace(None);

    /// A path of run ids, outermost first.
    pub fn new(path: impl IntoIterator<Item = RunId>) -> Self {
        let path: Arc<[RunId]> = path.into_iter().collect();
        match path.is_empty() {
            true => Self::ROOT,
            false => Self(Some(path)),
        }
    }

    /// The events of the child run `child` of a run: a path of one.
    pub fn child(child: RunId) -> Self {
        Self(Some(Arc::from([child])))
    }

    /// Whether the event is the run's own.
    pub fn is_root(&self) -> bool {
        self.0.is_none()
    }

    /// The run ids, outermost first.
    pub fn path(&self) -> &[RunId] {
        self.0.as_deref().unwrap_or(&[])
    }

    /// How many runs deep the event is: 0 for the run's own.
    pub fn depth(&self) -> usize {
        self.path().len()
    }

    /// The run the event is of: the last id, `None` for the run's own events.
    pub fn run(&self) -> Option<&RunId> {
        self.path().last()
    }

    /// This path as seen from the parent of its first run: `child` put in front. A parent
    /// streams its child's events under it.
    pub fn under(&self, child: &RunId) -> Self {
        let mut path = Vec::with_capacity(self.depth() + 1);
        path.push(child.clone());
        path.extend_from_slice(self.path());
        Self(Some(path.into()))
    }

    /// This path as seen from its first run (that run's own events are the root): the path
    /// without its first id. `None` for the run's own events.
    pub fn below_first(&self) -> Option<Self> {
        let (_, rest) = self.path().split_first()?;
        Some(Self::new(rest.iter().cloned()))
    }

    /// Whether the path starts with `prefix` (every path starts with the root's).
    pub fn starts_with(&self, prefix: &[RunId]) -> bool {
        self.path().starts_with(prefix)
    }
}

impl std::fmt::Debug for Namespace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.path()).finish()
    }
}

impl Serialize for Namespace {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.path().serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Namespace {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Vec::<RunId>::deserialize(deserializer).map(Self::new)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_grows_at_its_front_as_it_goes_up() {
        let grandchild = Namespace::ROOT.under(&RunId::from("run_c"));
        assert_eq!(grandchild, Namespace::child("run_c".into()));
        let seen_from_top = grandchild.under(&RunId::from("run_b"));
        assert_eq!(seen_from_top.path(), ["run_b", "run_c"].map(RunId::from));
        assert_eq!(seen_from_top.run(), Some(&RunId::from("run_c")));
        assert_eq!(seen_from_top.below_first(), Some(grandchild));
        assert_eq!(Namespace::ROOT.below_first(), None);
        assert!(Namespace::new([]).is_root());
    }

    #[test]
    fn it_is_a_json_array() {
        let path = Namespace::new(["run_b", "run_c"].map(RunId::from));
        let json = serde_json::to_string(&path).expect("serializes");
        assert_eq!(json, r#"["run_b","run_c"]"#);
        let back: Namespace = serde_json::from_str(&json).expect("parses");
        assert_eq!(back, path);
        let root: Namespace = serde_json::from_str("[]").expect("parses");
        assert!(root.is_root());
    }
}
