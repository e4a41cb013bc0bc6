//! [`SchemaMachine`]: where a run is in its communication schema, and the [`Refusal`] of a
//! message that may not be sent there.
//!
//! The machine only decides; it stores no messages. Keeping the run's history and telling the
//! peer about a refusal are the runtime's job.

use std::fmt;
use std::sync::Arc;

use super::schema::{CommunicationSchema, ContentSpec, MessageKind, Party, StateName, Transition};
use super::utterance::Utterance;

/// Follows one run through its [`CommunicationSchema`]: it starts in `idle`, moves to a
/// transition's `nextState` when it accepts an utterance, and stays where it is when it refuses
/// one.
///
/// Several transitions of a state may share a party and type (say, to route a message by its
/// content): the first, in declared order, whose content checks pass is taken.
///
/// ```
/// use agentwire_core::communication::{
///     CommunicationSchema, ContentItem, MessageKind, Party, SchemaMachine, Utterance,
/// };
///
/// let mut run = SchemaMachine::new(CommunicationSchema::chat());
/// let question = Utterance::new(Party::Client, MessageKind::USER_MESSAGE)
///     .with(ContentItem::new("text/plain"));
/// run.accept(&question)?;
/// assert_eq!(run.state(), "running");
///
/// // The client may not speak again until the agent has answered.
/// let refusal = run.accept(&question).unwrap_err();
/// assert_eq!(
///     refusal.to_string(),
///     "in state 'running' the client may not send user_message; allowed: server agent_message",
/// );
/// assert_eq!(run.state(), "running");
/// # Ok::<(), agentwire_core::communication::Refusal>(())
/// ```
#[derive(Clone, Debug)]
pub struct SchemaMachine {
    schema: Arc<CommunicationSchema>,
    state: StateName,
}

/// Why a [`SchemaMachine`] refused an utterance. The machine's state is unchanged.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Refusal {
    /// The party may not send a message of this type in this state. `allowed` lists what may be
    /// sent instead; it is empty in a final state.
    #[error("{}", NotAllowedText::new(.state, *.party, .kind, .allowed))]
    NotAllowed {
        /// The run's state.
        state: StateName,
        /// Who tried to send.
        party: Party,
        /// What they tried to send.
        kind: MessageKind,
        /// What may be sent in this state, by whom, in declared order, without repeats.
        allowed: Vec<AllowedMessage>,
    },
    /// The message lacks content its type requires here.
    #[error("in state '{state}' {kind} must include {spec}")]
    MissingContent {
        /// The run's state.
        state: StateName,
        /// The message's type.
        kind: MessageKind,
        /// The required content no item matched.
        spec: ContentSpec,
    },
    /// The message carries content its type does not allow here.
    #[error(
        "in state '{state}' {kind} may not include {}; allowed: {}",
        ItemText::new(.name.as_deref(), .content_type),
        ListText::new(.allowed, "no content"),
    )]
    UnexpectedContent {
        /// The run's state.
        state: StateName,
        /// The message's type.
        kind: MessageKind,
        /// The unexpected item's media type.
        content_type: String,
        /// The unexpected item's name, if it has one.
        name: Option<String>,
        /// The content the message may carry.
        allowed: Vec<ContentSpec>,
    },
}

/// A message that may be sent: who sends it and its type.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct AllowedMessage {
    /// Who may send it.
    pub party: Party,
    /// Its type.
    pub kind: MessageKind,
}

impl SchemaMachine {
    /// A machine for a new run of `schema`, in `idle`.
    pub fn new(schema: impl Into<Arc<CommunicationSchema>>) -> Self {
        Self {
            schema: schema.into(),
            state: StateName::idle(),
        }
    }

    /// A machine for a run of `schema` that is in `state`, say one loaded from storage; `None`
    /// if the schema has no such state.
    pub fn resume(
        schema: impl Into<Arc<CommunicationSchema>>,
        state: impl Into<StateName>,
    ) -> Option<Self> {
        let (schema, state) = (schema.into(), state.into());
        schema
            .contains_state(&state)
            .then_some(Self { schema, state })
    }

    /// The schema the run follows.
    pub fn schema(&self) -> &CommunicationSchema {
        &self.schema
    }

    /// The run's current state.
    pub fn state(&self) -> &StateName {
        &self.state
    }

    /// What may be sent now, by whom, and where each leads; empty when the run is over.
    pub fn allowed(&self) -> &[Transition] {
        self.schema.transitions(&self.state)
    }

    /// Whether the run is over: nothing may be sent in its state.
    pub fn is_final(&self) -> bool {
        self.allowed().is_empty()
    }

    /// The transition `utterance` would take, without taking it.
    pub fn check(&self, utterance: &Utterance) -> Result<&Transition, Refusal> {
        find(&self.schema, &self.state, utterance)
    }

    /// Takes the transition `utterance` matches and returns it; on a refusal, the state stays
    /// as it was.
    pub fn accept(&mut self, utterance: &Utterance) -> Result<&Transition, Refusal> {
        let transition = find(&self.schema, &self.state, utterance)?;
        self.state = transition.next_state.clone();
        Ok(transition)
    }
}

impl fmt::Display for AllowedMessage {
    /// `client user_message`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.party, self.kind)
    }
}

fn find<'s>(
    schema: &'s CommunicationSchema,
    state: &StateName,
    utterance: &Utterance,
) -> Result<&'s Transition, Refusal> {
    let transitions = schema.transitions(state);
    let mut candidates = transitions.iter().filter(|transition| {
        transition.party == utterance.party && transition.kind == utterance.kind
    });
    let Some(first) = candidates.next() else {
        return Err(Refusal::NotAllowed {
            state: state.clone(),
            party: utterance.party,
            kind: utterance.kind.clone(),
            allowed: allowed_messages(transitions),
        });
    };
    match check_content(state, first, utterance) {
        Ok(()) => Ok(first),
        // When no candidate fits, the first one's complaint is the one reported.
        Err(refusal) => candidates
            .find(|transition| check_content(state, transition, utterance).is_ok())
            .ok_or(refusal),
    }
}

/// Every required spec is matched by some item, and every item by some spec.
fn check_content(
    state: &StateName,
    transition: &Transition,
    utterance: &Utterance,
) -> Result<(), Refusal> {
    let missing = transition
        .content
        .iter()
        .find(|spec| spec.required && !utterance.contents.iter().any(|item| spec.matches(item)));
    if let Some(spec) = missing {
        return Err(Refusal::MissingContent {
            state: state.clone(),
            kind: transition.kind.clone(),
            spec: spec.clone(),
        });
    }
    let unexpected = utterance
        .contents
        .iter()
        .find(|item| !transition.content.iter().any(|spec| spec.matches(item)));
    if let Some(item) = unexpected {
        return Err(Refusal::UnexpectedContent {
            state: state.clone(),
            kind: transition.kind.clone(),
            content_type: item.content_type.clone(),
            name: item.name.clone(),
            allowed: transition.content.clone(),
        });
    }
    Ok(())
}

fn allowed_messages(transitions: &[Transition]) -> Vec<AllowedMessage> {
    let mut allowed: Vec<AllowedMessage> = Vec::with_capacity(transitions.len());
    for transition in transitions {
        let message = AllowedMessage {
            party: transition.party,
            kind: transition.kind.clone(),
        };
        if !allowed.contains(&message) {
            allowed.push(message);
        }
    }
    allowed
}

struct NotAllowedText<'a> {
    state: &'a StateName,
    party: Party,
    kind: &'a MessageKind,
    allowed: &'a [AllowedMessage],
}

impl<'a> NotAllowedText<'a> {
    fn new(
        state: &'a StateName,
        party: Party,
        kind: &'a MessageKind,
        allowed: &'a [AllowedMessage],
    ) -> Self {
        Self {
            state,
            party,
            kind,
            allowed,
        }
    }
}

impl fmt::Display for NotAllowedText<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Self {
            state,
            party,
            kind,
            allowed,
        } = self;
        if allowed.is_empty() {
            write!(f, "in state '{state}' nothing may be sent")
        } else {
            let allowed = ListText::new(allowed, "nothing");
            write!(
                f,
                "in state '{state}' the {party} may not send {kind}; allowed: {allowed}"
            )
        }
    }
}

struct ItemText<'a> {
    name: Option<&'a str>,
    content_type: &'a str,
}

impl<'a> ItemText<'a> {
    fn new(name: Option<&'a str>, content_type: &'a str) -> Self {
        Self { name, content_type }
    }
}

impl fmt::Display for ItemText<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name {
            Some(name) => write!(f, "{name} ({})", self.content_type),
            None => f.write_str(self.content_type),
        }
    }
}

struct ListText<'a, T> {
    items: &'a [T],
    empty: &'static str,
}

impl<'a, T> ListText<'a, T> {
    fn new(items: &'a [T], empty: &'static str) -> Self {
        Self { items, empty }
    }
}

impl<T: fmt::Display> fmt::Display for ListText<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.items.is_empty() {
            return f.write_str(self.empty);
        }
        for (idx, item) in self.items.iter().enumerate() {
            if idx > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{item}")?;
        }
        Ok(())
    }
}
