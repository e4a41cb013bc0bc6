//! `MESSAGES_SNAPSHOT`: a thread's conversation as AG-UI messages, for a client whose list of
//! messages holds what the thread no longer does (a run rolled back). The client keeps the
//! messages the snapshot names, replaced by the snapshot's, and drops the others, so the snapshot
//! must hold what the stream would have left there: each canonical message is cut and named as [`run`](super::run) streams it
//! (texts, reasoning, tool results and tool-call holders minted `<id>`, `<id>.1`, …; a call
//! joins the text or call just before it), plans and artifacts are activity messages updated in
//! place, and parts the client keeps no message for (steps, files, data, approvals) are left
//! out. A sub-agent's runs are not the thread's conversation and are not in it.

use agentwire_core::part::FileSource;
use agentwire_core::{Message, MessageId, Part, Role, ToolCallId};
use serde::Serialize;
use serde_json::{Map, Value, json};

use super::wire::{ACTIVITY_ARTIFACT, ACTIVITY_PLAN, NAMESPACE, content_of};

/// One AG-UI message of the snapshot.
#[derive(Debug, Serialize)]
#[serde(
    tag = "role",
    rename_all = "lowercase",
    rename_all_fields = "camelCase"
)]
pub(super) enum SnapshotMessage {
    User {
        id: String,
        content: Value,
    },
    System {
        id: String,
        content: String,
    },
    Assistant {
        id: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        content: Option<String>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<Value>,
        #[serde(skip_serializing_if = "Option::is_none")]
        metadata: Option<Value>,
    },
    Reasoning {
        id: String,
        content: String,
    },
    Tool {
        id: String,
        tool_call_id: String,
        content: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        metadata: Option<Value>,
    },
    Activity {
        id: String,
        activity_type: &'static str,
        content: Map<String, Value>,
        metadata: Value,
    },
}

#[derive(Serialize)]
#[serde(tag = "type", rename = "MESSAGES_SNAPSHOT")]
struct MessagesSnapshot<'a> {
    messages: &'a [SnapshotMessage],
}

/// The snapshot of `history`, in order.
pub(super) fn messages(history: &[Message]) -> Vec<SnapshotMessage> {
    let mut snapshot = Snapshot::default();
    for message in history {
        snapshot.message(message);
    }
    snapshot.out
}

/// The `MESSAGES_SNAPSHOT` frame of `messages`.
pub(super) fn frame(messages: &[SnapshotMessage]) -> Vec<u8> {
    let mut out = b"data: ".to_vec();
    // Serializing cannot fail: keys are strings and numbers finite.
    let _ = serde_json::to_writer(&mut out, &MessagesSnapshot { messages });
    out.extend_from_slice(b"\n\n");
    out
}

/// The plans and artifacts among `messages`, as the encoder tracks what the client holds.
pub(super) fn activities(messages: Vec<SnapshotMessage>) -> Vec<(String, Map<String, Value>)> {
    messages
        .into_iter()
        .filter_map(|message| match message {
            SnapshotMessage::Activity { id, content, .. } => Some((id, content)),
            _ => None,
        })
        .collect()
}

#[derive(Default)]
struct Snapshot {
    out: Vec<SnapshotMessage>,
    /// Every call seen so far and its tool's name: a result names its tool only when the call
    /// does not, as the stream does.
    calls: Vec<(ToolCallId, String)>,
}

/// Where the message being cut stands, as the streaming encoder's message state.
struct Cut<'m> {
    base: &'m str,
    minted: u32,
    /// The assistant message calls attach to: its place in the snapshot.
    assistant: Option<usize>,
    /// Whether the last part was a text or a call (a call joins it).
    joins: bool,
}

impl Cut<'_> {
    fn mint(&mut self) -> String {
        let n = self.minted;
        self.minted += 1;
        match n {
            0 => self.base.to_owned(),
            n => format!("{}.{n}", self.base),
        }
    }
}

impl Snapshot {
    fn message(&mut self, message: &Message) {
        let Some(id) = &message.id else {
            return;
        };
        match message.role {
            Role::User => self.out.push(SnapshotMessage::User {
                id: id.to_string(),
                content: user_content(&message.parts),
            }),
            Role::System => self.out.push(SnapshotMessage::System {
                id: id.to_string(),
                content: text_of(&message.parts),
            }),
            Role::Assistant | Role::Tool | Role::Data => self.assistant(id, &message.parts),
        }
    }

    fn assistant(&mut self, id: &MessageId, parts: &[Part]) {
        let mut cut = Cut {
            base: id.as_str(),
            minted: 0,
            assistant: None,
            joins: false,
        };
        for part in parts {
            let joins = matches!(part, Part::Text(_) | Part::Refusal(_) | Part::ToolCall(_));
            match part {
                Part::Text(text) => self.text(&mut cut, &text.text, None),
                Part::Refusal(refusal) => {
                    let metadata = json!({ NAMESPACE: { "refusal": true } });
                    self.text(&mut cut, &refusal.text, Some(metadata));
                }
                Part::Reasoning(reasoning) => self.out.push(SnapshotMessage::Reasoning {
                    id: cut.mint(),
                    content: reasoning.text.clone(),
                }),
                Part::ToolCall(call) => {
                    let holder = match (cut.assistant, cut.joins) {
                        (Some(at), true) => at,
                        _ => {
                            self.out.push(SnapshotMessage::Assistant {
                                id: cut.mint(),
                                content: None,
                                tool_calls: Vec::new(),
                                metadata: None,
                            });
                            cut.assistant = Some(self.out.len() - 1);
                            self.out.len() - 1
                        }
                    };
                    if let Some(SnapshotMessage::Assistant { tool_calls, .. }) =
                        self.out.get_mut(holder)
                    {
                        tool_calls.push(json!({
                            "id": call.tool_call_id,
                            "type": "function",
                            "function": {"name": call.tool_name, "arguments": call.args.to_json_text()},
                        }));
                    }
                    self.calls
                        .push((call.tool_call_id.clone(), call.tool_name.clone()));
                }
                Part::ToolResult(result) => {
                    let mut extra = Map::new();
                    if let Some(is_error) = result.is_error {
                        extra.insert("isError".into(), Value::Bool(is_error));
                    }
                    let content = content_of(&result.result);
                    let name = result.tool_name.as_deref();
                    self.tool(&mut cut, &result.tool_call_id, name, content, extra);
                }
                Part::ToolError(error) => {
                    let mut extra = Map::new();
                    extra.insert("errorType".into(), json!(error.error_type));
                    let name = error.tool_name.as_deref();
                    let content = error.message.clone();
                    self.tool(&mut cut, &error.tool_call_id, name, content, extra);
                }
                Part::PlanUpdate(plan) => {
                    self.activity(ACTIVITY_PLAN, format!("plan:{}", plan.plan_id), id, part);
                }
                Part::Artifact(artifact) => {
                    let key = format!("artifact:{}", artifact.artifact_id);
                    self.activity(ACTIVITY_ARTIFACT, key, id, part);
                }
                _ => {}
            }
            cut.joins = joins;
        }
    }

    fn text(&mut self, cut: &mut Cut<'_>, text: &str, metadata: Option<Value>) {
        self.out.push(SnapshotMessage::Assistant {
            id: cut.mint(),
            content: Some(text.to_owned()),
            tool_calls: Vec::new(),
            metadata,
        });
        cut.assistant = Some(self.out.len() - 1);
    }

    fn tool(
        &mut self,
        cut: &mut Cut<'_>,
        tool_call_id: &ToolCallId,
        tool_name: Option<&str>,
        content: String,
        mut extra: Map<String, Value>,
    ) {
        let derived = self
            .calls
            .iter()
            .find(|(id, _)| id == tool_call_id)
            .map(|(_, name)| name.as_str());
        if let Some(name) = tool_name
            && derived != Some(name)
        {
            extra.insert("toolName".into(), Value::String(name.to_owned()));
        }
        self.out.push(SnapshotMessage::Tool {
            id: cut.mint(),
            tool_call_id: tool_call_id.to_string(),
            content,
            metadata: (!extra.is_empty()).then(|| json!({ NAMESPACE: extra })),
        });
    }

    /// A plan or artifact: one activity message per plan or artifact, where it first appeared,
    /// holding its latest content.
    fn activity(
        &mut self,
        activity_type: &'static str,
        key: String,
        from: &MessageId,
        part: &Part,
    ) {
        let Ok(Value::Object(mut content)) = serde_json::to_value(part) else {
            return;
        };
        content.shift_remove("type");
        let metadata = json!({ NAMESPACE: { "messageId": from } });
        let known = self.out.iter_mut().find_map(|message| match message {
            SnapshotMessage::Activity {
                id,
                content,
                metadata,
                ..
            } if *id == key => Some((content, metadata)),
            _ => None,
        });
        match known {
            Some((held, held_metadata)) => {
                *held = content;
                *held_metadata = metadata;
            }
            None => self.out.push(SnapshotMessage::Activity {
                id: key,
                activity_type,
                content,
                metadata,
            }),
        }
    }
}

/// The text of a message's text parts, joined.
fn text_of(parts: &[Part]) -> String {
    parts
        .iter()
        .filter_map(|part| match part {
            Part::Text(text) => Some(text.text.as_str()),
            _ => None,
        })
        .collect()
}

/// A user message's `content`: its text, or a list of content parts when it holds more than one
/// text (a file, several texts).
fn user_content(parts: &[Part]) -> Value {
    if let [Part::Text(text)] = parts {
        return Value::String(text.text.clone());
    }
    let listed: Vec<Value> = parts
        .iter()
        .filter_map(|part| match part {
            Part::Text(text) => Some(json!({"type": "text", "text": text.text})),
            Part::File(file) => {
                let kind = match file.media_type.split('/').next() {
                    Some("image") => "image",
                    Some("audio") => "audio",
                    Some("video") => "video",
                    _ => "document",
                };
                let source = match &file.source {
                    FileSource::Url(url) => {
                        json!({"type": "url", "value": url, "mimeType": file.media_type})
                    }
                    FileSource::Data(data) => {
                        json!({"type": "data", "value": data, "mimeType": file.media_type})
                    }
                };
                Some(json!({"type": kind, "source": source}))
            }
            _ => None,
        })
        .collect();
    match listed.as_slice() {
        [] => Value::String(String::new()),
        _ => Value::Array(listed),
    }
}
