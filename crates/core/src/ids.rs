//! Id newtypes. Each kind of id is its own type, so a tool call id can never be passed where a
//! message id is expected.
//!
//! Ids are immutable shared strings (`Arc<str>`): every event of a message repeats its id, and
//! cloning one is a reference-count increment, not a copy. The core never mints ids (it has no
//! randomness and no clock); the runtime passes fresh ones in.

/// Declares a string newtype over `Arc<str>` with its conversions, serialized as a plain
/// string. Used for ids here and for the names of the communication schema.
macro_rules! string_newtype {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
        #[serde(transparent)]
        pub struct $name(std::sync::Arc<str>);

        impl $name {
            /// Wraps a string. Any string is accepted: ids and names from peers are opaque.
            pub fn new(value: impl Into<std::sync::Arc<str>>) -> Self {
                Self(value.into())
            }

            /// The string.
            pub fn as_str(&self) -> &str {
                &self.0
            }

            /// True when both values share one allocation: a cheap pre-check before comparing
            /// the strings. Only hot paths (message ids) use it.
            #[allow(dead_code)]
            pub(crate) fn same_allocation(&self, other: &Self) -> bool {
                std::sync::Arc::ptr_eq(&self.0, &other.0)
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl std::fmt::Debug for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                std::fmt::Debug::fmt(&*self.0, f)
            }
        }

        impl From<&str> for $name {
            fn from(id: &str) -> Self {
                Self(id.into())
            }
        }

        impl From<String> for $name {
            fn from(id: String) -> Self {
                Self(id.into())
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl std::borrow::Borrow<str> for $name {
            fn borrow(&self) -> &str {
                &self.0
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                &*self.0 == other
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                &*self.0 == *other
            }
        }
    };
}

pub(crate) use string_newtype;

string_newtype!(
    /// Identifies a [`Message`](crate::Message), e.g. `msg_abc`.
    MessageId
);
string_newtype!(
    /// Identifies a tool call; results, errors and approvals refer back to it. Provider-given
    /// call ids are used as they are, because the provider must see them again in the history.
    ToolCallId
);
string_newtype!(
    /// Identifies an approval request, so that its response can refer back to it.
    ApprovalId
);
string_newtype!(
    /// Identifies a run: one agent working on one conversation turn or task.
    RunId
);
string_newtype!(
    /// Identifies a session: the conversation that runs belong to.
    SessionId
);
string_newtype!(
    /// Identifies a webhook: a URL told of runs' status changes (an A2A push-notification
    /// config is one too), e.g. `wh_abc`.
    WebhookId
);
string_newtype!(
    /// Identifies a step of a multi-step operation (a `step_start` part).
    StepId
);
string_newtype!(
    /// Identifies an artifact the agent produced (a document, a file, a piece of code).
    ArtifactId
);
string_newtype!(
    /// Identifies a plan whose updates `plan_update` parts report.
    PlanId
);
string_newtype!(
    /// Identifies a source (a citation) within a message.
    SourceId
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_serialize_as_plain_strings() {
        let id = MessageId::from("msg_1");
        assert_eq!(
            serde_json::to_string(&id).ok().as_deref(),
            Some("\"msg_1\"")
        );
        let back: MessageId = serde_json::from_str("\"msg_1\"").expect("parses");
        assert_eq!(back, id);
        assert_eq!(format!("{id:?}"), "\"msg_1\"");
    }

    #[test]
    fn clones_share_their_allocation() {
        let id = ToolCallId::new("tc_1");
        assert!(id.same_allocation(&id.clone()));
        assert!(!id.same_allocation(&ToolCallId::new("tc_1")));
    }
}
