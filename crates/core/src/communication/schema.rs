//! [`CommunicationSchema`]: the states of a run and the messages each party may send in each,
//! in their JSON shape, and the checks made when one is loaded.
//!
//! Following a run through a schema is [`SchemaMachine`](super::SchemaMachine)'s job; this module
//! only holds the declaration.

use std::fmt;

use indexmap::IndexMap;
use serde::de::{self, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::utterance::ContentItem;
use crate::ids::string_newtype;

/// Who sends a message: the caller of the agent or the agent itself (`party` in the JSON).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Party {
    /// The caller: a person, a UI or another program. `"client"`.
    Client,
    /// The agent. `"server"`.
    Server,
}

string_newtype!(
    /// The name of a state of a run, e.g. `idle`, `running`, `done`.
    ///
    /// Any string is accepted; the only name with a meaning of its own is [`StateName::IDLE`],
    /// the state every run starts in. Clones share one allocation.
    StateName
);

string_newtype!(
    /// The type of a message in a schema (`type` in the JSON), e.g. `user_message`.
    ///
    /// Any string is accepted, so agents can declare their own kinds; the associated constants
    /// name the kinds the built-in schemas use. Clones share one allocation.
    MessageKind
);

/// One piece of content a transition's message may or must carry.
///
/// ```json
/// {"name": "/sources/*", "contentType": "text/x-uri", "required": false}
/// ```
///
/// `content_type` may be a wildcard: `text/*` or `*/*`. Parameters (`; charset=…`) are ignored
/// and media types compare case-insensitively. `name` is a path pattern in which a `*` segment
/// matches any one segment, and a `*` as the last segment matches the whole rest of the path:
/// `/sources/*` matches `/sources/0` and `/sources/a/b` but not `/sources`. A spec without a
/// name matches only content without a name. On input, `content_type` is accepted for
/// `contentType`, and a missing `required` means `false`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContentSpec {
    /// The pattern the content's name must match; `None` for unnamed content such as the text
    /// of a message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The media type the content must have, e.g. `text/plain`, or a wildcard.
    #[serde(rename = "contentType", alias = "content_type")]
    pub content_type: String,
    /// Whether a message must carry at least one piece of content that matches.
    #[serde(default)]
    pub required: bool,
}

/// A message one party may send in a state, and the state the run moves to when it does.
///
/// ```json
/// {"party": "client", "type": "user_message", "schema": [{"contentType": "text/plain", "required": true}], "nextState": "running"}
/// ```
///
/// On input, `next_state` is accepted for `nextState`, and a missing `schema` means no content.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Transition {
    /// Who may send the message.
    pub party: Party,
    /// The message's type (`"type"` on the wire).
    #[serde(rename = "type")]
    pub kind: MessageKind,
    /// What the message may and must carry (`"schema"` on the wire). Empty means it carries
    /// nothing, as a `cancel` does.
    #[serde(rename = "schema", default)]
    pub content: Vec<ContentSpec>,
    /// The state the run moves to once the message is accepted.
    #[serde(rename = "nextState", alias = "next_state")]
    pub next_state: StateName,
}

/// An agent's communication schema: for each state of a run, the messages that may be
/// sent in it, by whom, with what content, and where each leads.
///
/// ```json
/// {
///   "idle": [{"party": "client", "type": "user_message", "schema": [{"contentType": "text/plain", "required": true}], "nextState": "running"}],
///   "running": [{"party": "server", "type": "agent_message", "schema": [{"contentType": "text/plain", "required": true}], "nextState": "idle"}]
/// }
/// ```
///
/// Invariants, checked whenever a schema is built or deserialized: an `idle` state exists (every
/// run starts in it), every `nextState` names a state of the schema, no state is declared twice,
/// and every content type has the form `type/subtype`. States keep the order they were declared
/// in. A state with no transitions is final: once a run reaches it, nothing more may be sent.
///
/// The default is [`CommunicationSchema::chat`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommunicationSchema {
    states: IndexMap<StateName, Vec<Transition>>,
}

/// Why a communication schema was rejected when it was loaded or built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InvalidSchema {
    /// The text is not JSON, or not in a schema's shape.
    #[error("communication schema is not valid json: {source}")]
    Json {
        /// The parser's error.
        #[source]
        source: serde_json::Error,
    },
    /// There is no `idle` state to start runs in.
    #[error("communication schema has no 'idle' state, which every run starts in")]
    MissingIdle,
    /// A state is declared more than once.
    #[error("state '{state}' is declared more than once")]
    DuplicateState {
        /// The state declared twice.
        state: StateName,
    },
    /// A transition leads to a state the schema does not declare.
    #[error(
        "in state '{state}', transition {transition} ({party} {kind}) leads to unknown state '{next_state}'"
    )]
    UnknownNextState {
        /// The state the transition leaves.
        state: StateName,
        /// The transition's position in its state's list, from 0.
        transition: usize,
        /// The party of the transition.
        party: Party,
        /// The message type of the transition.
        kind: MessageKind,
        /// The state it names, which does not exist.
        next_state: StateName,
    },
    /// A content spec's content type is not of the form `type/subtype`.
    #[error(
        "in state '{state}', transition {transition} ({party} {kind}) has content type '{content_type}', which is not of the form type/subtype"
    )]
    InvalidContentType {
        /// The state the transition leaves.
        state: StateName,
        /// The transition's position in its state's list, from 0.
        transition: usize,
        /// The party of the transition.
        party: Party,
        /// The message type of the transition.
        kind: MessageKind,
        /// The content type as written.
        content_type: String,
    },
}

impl fmt::Display for Party {
    /// `client` or `server`, as on the wire.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Party::Client => "client",
            Party::Server => "server",
        })
    }
}

impl StateName {
    /// `idle`: the state every run starts in, awaiting the client's first message.
    pub const IDLE: &'static str = "idle";

    /// The `idle` state.
    pub fn idle() -> Self {
        Self::from(Self::IDLE)
    }
}

impl MessageKind {
    /// `user_message`: the client's message to the agent.
    pub const USER_MESSAGE: &'static str = "user_message";
    /// `agent_message`: the agent's answer.
    pub const AGENT_MESSAGE: &'static str = "agent_message";
    /// `function_call`: the agent asks the client to run a function.
    pub const FUNCTION_CALL: &'static str = "function_call";
    /// `function_output`: the client returns a function's output.
    pub const FUNCTION_OUTPUT: &'static str = "function_output";
    /// `cancel`: the client interrupts the agent.
    pub const CANCEL: &'static str = "cancel";
    /// `approval_request`: the agent asks the client to approve a tool call.
    pub const APPROVAL_REQUEST: &'static str = "approval_request";
    /// `approval_response`: the client approves or denies a tool call.
    pub const APPROVAL_RESPONSE: &'static str = "approval_response";
    /// `input_request`: the agent asks the client a question and waits, in the same run, for
    /// the user's answer (a `user_message`), as a "waiting for user" state does.
    pub const INPUT_REQUEST: &'static str = "input_request";
}

impl ContentSpec {
    /// Unnamed content of the given media type that a message must carry.
    pub fn required(content_type: impl Into<String>) -> Self {
        Self {
            name: None,
            content_type: content_type.into(),
            required: true,
        }
    }

    /// Unnamed content of the given media type that a message may carry.
    pub fn optional(content_type: impl Into<String>) -> Self {
        Self {
            name: None,
            content_type: content_type.into(),
            required: false,
        }
    }

    /// Sets the name pattern, e.g. `/sources/*`.
    pub fn named(mut self, pattern: impl Into<String>) -> Self {
        self.name = Some(pattern.into());
        self
    }

    /// Whether `item` is content this spec describes: its media type matches the spec's
    /// (wildcards included) and its name matches the spec's pattern, or both have no name.
    pub fn matches(&self, item: &ContentItem) -> bool {
        media_type_matches(&self.content_type, &item.content_type)
            && match (&self.name, &item.name) {
                (None, None) => true,
                (Some(pattern), Some(name)) => path_matches(pattern, name),
                _ => false,
            }
    }
}

impl fmt::Display for ContentSpec {
    /// `text/plain`, or `/sources/* (text/x-uri)` for named content.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.name {
            Some(name) => write!(f, "{name} ({})", self.content_type),
            None => f.write_str(&self.content_type),
        }
    }
}

impl Transition {
    /// A transition for a message without content; add content with [`Transition::with`].
    pub fn new(
        party: Party,
        kind: impl Into<MessageKind>,
        next_state: impl Into<StateName>,
    ) -> Self {
        Self {
            party,
            kind: kind.into(),
            content: Vec::new(),
            next_state: next_state.into(),
        }
    }

    /// Adds a content spec.
    pub fn with(mut self, spec: ContentSpec) -> Self {
        self.content.push(spec);
        self
    }
}

impl CommunicationSchema {
    /// A schema of the given states and their transitions, in order, after checking the
    /// invariants listed on the type.
    pub fn new<S>(
        states: impl IntoIterator<Item = (S, Vec<Transition>)>,
    ) -> Result<Self, InvalidSchema>
    where
        S: Into<StateName>,
    {
        let mut map = IndexMap::new();
        for (state, transitions) in states {
            let state = state.into();
            if map.contains_key(&state) {
                return Err(InvalidSchema::DuplicateState { state });
            }
            map.insert(state, transitions);
        }
        let schema = Self { states: map };
        schema.validate()?;
        Ok(schema)
    }

    /// Reads a schema from its JSON and checks it.
    pub fn from_json(json: &str) -> Result<Self, InvalidSchema> {
        let DeclaredStates(states) =
            serde_json::from_str(json).map_err(|source| InvalidSchema::Json { source })?;
        Self::new(states)
    }

    /// The state names, in the order they were declared.
    pub fn states(&self) -> impl ExactSizeIterator<Item = &StateName> {
        self.states.keys()
    }

    /// Whether the schema declares `state`.
    pub fn contains_state(&self, state: impl AsRef<str>) -> bool {
        self.states.contains_key(state.as_ref())
    }

    /// The messages that may be sent in `state`, in declared order; empty for a final state and
    /// for a state the schema does not declare.
    pub fn transitions(&self, state: impl AsRef<str>) -> &[Transition] {
        self.states.get(state.as_ref()).map_or(&[], Vec::as_slice)
    }

    /// Whether nothing may be sent in `state`.
    pub fn is_final(&self, state: impl AsRef<str>) -> bool {
        self.transitions(state).is_empty()
    }

    /// The schema with every message of `kind` that `party` may send also accepting unnamed
    /// content of each of `content_types` (optional): how an agent whose model reads images
    /// widens a schema written for text. A type a transition matches already (`text/plain`, or
    /// `image/png` where `image/*` is declared) is not added again; what is required stays
    /// required. A content type that is not of the form `type/subtype` is refused.
    ///
    /// ```
    /// use agentwire_core::communication::{CommunicationSchema, ContentItem, MessageKind, Party, SchemaMachine, Utterance};
    ///
    /// let schema = CommunicationSchema::chat()
    ///     .accepting(Party::Client, MessageKind::USER_MESSAGE, ["text/plain", "image/*"])?;
    /// let question = Utterance::new(Party::Client, MessageKind::USER_MESSAGE)
    ///     .with(ContentItem::new("text/plain"))
    ///     .with(ContentItem::new("image/png"));
    /// assert!(SchemaMachine::new(schema).check(&question).is_ok());
    /// # Ok::<(), agentwire_core::communication::InvalidSchema>(())
    /// ```
    pub fn accepting<T: AsRef<str>>(
        mut self,
        party: Party,
        kind: &str,
        content_types: impl IntoIterator<Item = T>,
    ) -> Result<Self, InvalidSchema> {
        let content_types: Vec<String> = content_types
            .into_iter()
            .map(|content_type| content_type.as_ref().trim().to_owned())
            .collect();
        for (state, transitions) in &mut self.states {
            for (idx, transition) in transitions.iter_mut().enumerate() {
                if transition.party != party || transition.kind != kind {
                    continue;
                }
                for content_type in &content_types {
                    if !is_media_type(content_type) {
                        return Err(InvalidSchema::InvalidContentType {
                            state: state.clone(),
                            transition: idx,
                            party,
                            kind: transition.kind.clone(),
                            content_type: content_type.clone(),
                        });
                    }
                    let covered = transition.content.iter().any(|spec| {
                        spec.name.is_none() && media_type_matches(&spec.content_type, content_type)
                    });
                    if !covered {
                        transition
                            .content
                            .push(ContentSpec::optional(content_type.as_str()));
                    }
                }
            }
        }
        Ok(self)
    }

    /// A schema whose invariants the caller guarantees: for the built-ins, which tests check.
    pub(super) fn from_checked(states: Vec<(&'static str, Vec<Transition>)>) -> Self {
        let states = states
            .into_iter()
            .map(|(state, transitions)| (StateName::from(state), transitions))
            .collect();
        Self { states }
    }

    fn validate(&self) -> Result<(), InvalidSchema> {
        if !self.states.contains_key(StateName::IDLE) {
            return Err(InvalidSchema::MissingIdle);
        }
        for (state, transitions) in &self.states {
            for (idx, transition) in transitions.iter().enumerate() {
                if !self.states.contains_key(&transition.next_state) {
                    return Err(InvalidSchema::UnknownNextState {
                        state: state.clone(),
                        transition: idx,
                        party: transition.party,
                        kind: transition.kind.clone(),
                        next_state: transition.next_state.clone(),
                    });
                }
                let bad = transition
                    .content
                    .iter()
                    .find(|spec| !is_media_type(&spec.content_type));
                if let Some(spec) = bad {
                    return Err(InvalidSchema::InvalidContentType {
                        state: state.clone(),
                        transition: idx,
                        party: transition.party,
                        kind: transition.kind.clone(),
                        content_type: spec.content_type.clone(),
                    });
                }
            }
        }
        Ok(())
    }
}

impl Default for CommunicationSchema {
    /// [`CommunicationSchema::chat`].
    fn default() -> Self {
        Self::chat()
    }
}

impl Serialize for CommunicationSchema {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.states.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for CommunicationSchema {
    /// Reads a schema's JSON and checks the invariants; a schema that breaks one is an error.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let DeclaredStates(states) = DeclaredStates::deserialize(deserializer)?;
        Self::new(states).map_err(de::Error::custom)
    }
}

impl TryFrom<IndexMap<StateName, Vec<Transition>>> for CommunicationSchema {
    type Error = InvalidSchema;

    fn try_from(states: IndexMap<StateName, Vec<Transition>>) -> Result<Self, Self::Error> {
        Self::new(states)
    }
}

impl TryFrom<&str> for CommunicationSchema {
    type Error = InvalidSchema;

    /// [`CommunicationSchema::from_json`].
    fn try_from(json: &str) -> Result<Self, Self::Error> {
        Self::from_json(json)
    }
}

/// The states as written, duplicates included, so that a state declared twice is reported
/// rather than silently replaced by its second declaration.
struct DeclaredStates(Vec<(StateName, Vec<Transition>)>);

impl<'de> Deserialize<'de> for DeclaredStates {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct StatesVisitor;

        impl<'de> Visitor<'de> for StatesVisitor {
            type Value = DeclaredStates;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a map from state names to lists of transitions")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut states = Vec::with_capacity(map.size_hint().unwrap_or(0));
                while let Some(entry) = map.next_entry()? {
                    states.push(entry);
                }
                Ok(DeclaredStates(states))
            }
        }

        deserializer.deserialize_map(StatesVisitor)
    }
}

/// The media type without parameters: `text/plain; charset=utf-8` → `text/plain`.
fn essence(media_type: &str) -> &str {
    media_type
        .split_once(';')
        .map_or(media_type, |(essence, _)| essence)
        .trim()
}

fn is_media_type(media_type: &str) -> bool {
    essence(media_type)
        .split_once('/')
        .is_some_and(|(top, sub)| !top.is_empty() && !sub.is_empty() && !sub.contains('/'))
}

fn media_type_matches(pattern: &str, media_type: &str) -> bool {
    let (pattern, media_type) = (essence(pattern), essence(media_type));
    if pattern == "*/*" {
        return true;
    }
    match pattern.strip_suffix("/*") {
        Some(top) => media_type
            .split_once('/')
            .is_some_and(|(media_top, _)| media_top.eq_ignore_ascii_case(top)),
        None => pattern.eq_ignore_ascii_case(media_type),
    }
}

fn path_matches(pattern: &str, name: &str) -> bool {
    let mut pattern_segments = pattern.split('/').peekable();
    let mut name_segments = name.split('/');
    loop {
        match (pattern_segments.next(), name_segments.next()) {
            (None, None) => return true,
            // A trailing `*` takes the rest of the path, however many segments it has.
            (Some("*"), Some(_)) if pattern_segments.peek().is_none() => return true,
            (Some("*"), Some(_)) => {}
            (Some(expected), Some(segment)) if expected == segment => {}
            _ => return false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check_media(pattern: &str, media_type: &str, expect: bool) {
        assert_eq!(
            media_type_matches(pattern, media_type),
            expect,
            "{pattern} vs {media_type}"
        );
    }

    #[track_caller]
    fn check_path(pattern: &str, name: &str, expect: bool) {
        assert_eq!(path_matches(pattern, name), expect, "{pattern} vs {name}");
    }

    #[test]
    fn media_types_match_exactly_or_by_wildcard() {
        check_media("text/plain", "text/plain", true);
        check_media("text/plain", "Text/Plain; charset=utf-8", true);
        check_media("text/plain", "text/html", false);
        check_media("text/*", "text/html", true);
        check_media("text/*", "image/png", false);
        check_media("*/*", "image/png", true);
        check_media("image/png", "image/png+x", false);
    }

    #[test]
    fn name_patterns_match_segments_and_a_trailing_rest() {
        check_path("/function", "/function", true);
        check_path("/function", "/function_output", false);
        check_path("/sources/*", "/sources/0", true);
        check_path("/sources/*", "/sources/a/b", true);
        check_path("/sources/*", "/sources", false);
        check_path("/sources/*", "/data/0", false);
        check_path("/*/id", "/sources/id", true);
        check_path("/*/id", "/sources/id/x", false);
        check_path("/*/id", "/sources/name", false);
    }

    #[test]
    fn accepting_adds_each_type_once_and_keeps_what_is_required() {
        let schema = CommunicationSchema::chat()
            .accepting(
                Party::Client,
                MessageKind::USER_MESSAGE,
                ["text/plain", "image/*", "image/png", "application/pdf"],
            )
            .expect("valid types");
        let idle = schema.transitions("idle");
        let specs: Vec<(&str, bool)> = idle[0]
            .content
            .iter()
            .map(|spec| (spec.content_type.as_str(), spec.required))
            .collect();
        assert_eq!(
            specs,
            [
                ("text/plain", true),
                ("image/*", false),
                ("application/pdf", false)
            ]
        );
        // The agent's answer is not the client's message: unchanged.
        assert_eq!(
            schema.transitions("running"),
            CommunicationSchema::chat().transitions("running")
        );
        assert!(matches!(
            CommunicationSchema::chat().accepting(
                Party::Client,
                MessageKind::USER_MESSAGE,
                ["image"]
            ),
            Err(InvalidSchema::InvalidContentType { .. })
        ));
    }

    #[test]
    fn content_types_must_have_a_subtype() {
        assert!(is_media_type("text/plain"));
        assert!(is_media_type("*/*"));
        assert!(is_media_type("text/plain; charset=utf-8"));
        assert!(!is_media_type("text"));
        assert!(!is_media_type("text/"));
        assert!(!is_media_type("/plain"));
        assert!(!is_media_type("a/b/c"));
    }
}
