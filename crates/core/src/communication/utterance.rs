//! [`Utterance`]: one message as a communication schema sees it (who sends it, its type and the
//! content it carries), and how a canonical [`Message`] becomes one.
//!
//! What a message means, and which schema type it has, is the runtime's business; this module only
//! describes the content of its parts.

use super::schema::{MessageKind, Party};
use crate::message::Message;
use crate::part::Part;

/// A message as a [`SchemaMachine`](super::SchemaMachine) checks it: who sends it, its schema
/// type, and the content it carries.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Utterance {
    /// Who sends it.
    pub party: Party,
    /// Its type in the schema, e.g. `user_message`.
    pub kind: MessageKind,
    /// The content it carries, in order.
    pub contents: Vec<ContentItem>,
}

/// One piece of content an utterance carries, as content specs match it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ContentItem {
    /// Where the content sits, e.g. `/sources/0`; `None` for the message's plain content, such
    /// as its text.
    pub name: Option<String>,
    /// Its media type, e.g. `text/plain`.
    pub content_type: String,
}

impl Utterance {
    /// An utterance without content; add content with [`Utterance::with`].
    pub fn new(party: Party, kind: impl Into<MessageKind>) -> Self {
        Self {
            party,
            kind: kind.into(),
            contents: Vec::new(),
        }
    }

    /// Adds a piece of content.
    pub fn with(mut self, item: ContentItem) -> Self {
        self.contents.push(item);
        self
    }

    /// The utterance `party` makes by sending `message` as a `kind`: one content item per
    /// content part, as listed on [`ContentItem::from_part`]. Process parts (reasoning, steps,
    /// plan updates, artifacts) are not content and are left out.
    pub fn from_message(party: Party, kind: impl Into<MessageKind>, message: &Message) -> Self {
        Self {
            party,
            kind: kind.into(),
            contents: message
                .parts
                .iter()
                .filter_map(ContentItem::from_part)
                .collect(),
        }
    }
}

impl ContentItem {
    /// Unnamed content of the given media type.
    pub fn new(content_type: impl Into<String>) -> Self {
        Self {
            name: None,
            content_type: content_type.into(),
        }
    }

    /// Named content of the given media type, e.g. `("/sources/0", "text/x-uri")`.
    pub fn named(name: impl Into<String>, content_type: impl Into<String>) -> Self {
        Self {
            name: Some(name.into()),
            content_type: content_type.into(),
        }
    }

    /// The content a part carries, or `None` for a process part, which a schema does not check.
    ///
    /// | part                                    | name                    | content type        |
    /// |-----------------------------------------|-------------------------|---------------------|
    /// | `text`, `refusal`                       | none                    | `text/plain`        |
    /// | `file`                                  | none                    | its `media_type`    |
    /// | `data`                                  | `/data/<name>`          | `application/json`  |
    /// | `source`                                | `/sources/<source_id>`  | `text/x-uri`        |
    /// | `tool_call`                             | `/function`             | `application/json`  |
    /// | `tool_result`, `tool_error`             | `/function_output`      | `application/json`  |
    /// | `approval_request`, `approval_response` | `/approval`             | `application/json`  |
    /// | `reasoning`, `step_start`, `plan_update`, `artifact` | not content | —                 |
    ///
    /// The names follow the one-shot schema's `/sources/*` and the function-calling schema's
    /// `/function`.
    pub fn from_part(part: &Part) -> Option<Self> {
        const JSON: &str = "application/json";
        let item = match part {
            Part::Text(_) | Part::Refusal(_) => Self::new("text/plain"),
            Part::File(file) => Self::new(file.media_type.as_str()),
            Part::Data(data) => Self::named(format!("/data/{}", data.name), JSON),
            Part::Source(source) => {
                Self::named(format!("/sources/{}", source.source_id), "text/x-uri")
            }
            Part::ToolCall(_) => Self::named("/function", JSON),
            Part::ToolResult(_) | Part::ToolError(_) => Self::named("/function_output", JSON),
            Part::ApprovalRequest(_) | Part::ApprovalResponse(_) => Self::named("/approval", JSON),
            Part::Reasoning(_) | Part::StepStart(_) | Part::PlanUpdate(_) | Part::Artifact(_) => {
                return None;
            }
        };
        Some(item)
    }
}
