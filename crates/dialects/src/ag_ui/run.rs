//! [`RunState`]: how one run's messages become AG-UI events, the run's own or a sub-agent's
//! (whose events then carry `subagentRunId`, and whose ids are prefixed with its run id so that
//! they never meet another run's in the client's one list of messages).

use agentwire_core::part::{ApprovalRequest, StepStart};
use agentwire_core::{EventKind, Message, MessageId, Part, Role, StreamedPart, ToolCallId};
use serde_json::{Map, Value, json};

use super::wire::{
    ACTIVITY_ARTIFACT, ACTIVITY_PLAN, CUSTOM_ERROR, CUSTOM_INPUT, CUSTOM_PART, NAMESPACE, PatchOp,
    SUBAGENT_RUN_ID, WireEvent, content_of,
};

type Out<'a> = WireEvent<&'a str>;

impl Activity {
    /// A plan or artifact the client holds already (a snapshot sent it).
    pub(super) fn held(id: String, content: Map<String, Value>) -> Self {
        Self { id, content }
    }
}

/// What a run is in the middle of: the message being written, its open step, and the calls and
/// approval requests of the current AG-UI run.
#[derive(Debug, Default)]
pub(super) struct RunState {
    message: Option<MessageState>,
    /// `stepName` of the step open in the current message.
    open_step: Option<String>,
    /// The run's tool calls, in order: what `pendingToolCallIds` is made of.
    pub(super) calls: Vec<CallState>,
    /// Approval requests not yet answered: the interrupts of an awaiting run.
    pub(super) approvals: Vec<ApprovalRequest>,
}

/// A tool call of the run, as the encoder knows it.
#[derive(Debug)]
pub(super) struct CallState {
    pub(super) id: ToolCallId,
    pub(super) name: String,
    pub(super) answered: bool,
    /// The AG-UI assistant message that holds the call.
    pub(super) message: String,
}

/// A plan or artifact shown as an activity message, and the content the client holds.
#[derive(Debug)]
pub(super) struct Activity {
    id: String,
    content: Map<String, Value>,
}

/// Where a run's events are written: the run they are tagged with (`subagentRunId`; `None`
/// for the run's own), what the request told of the client, and the output.
pub(super) struct Ctx<'a> {
    pub(super) tag: Option<&'a str>,
    pub(super) client_results: &'a [ToolCallId],
    pub(super) client_messages: &'a [MessageId],
    pub(super) activities: &'a mut Vec<Activity>,
    pub(super) out: &'a mut Vec<u8>,
}

impl Ctx<'_> {
    fn write(&mut self, event: &Out<'_>) {
        write(self.out, event, self.tag);
    }

    /// An id of this run's in AG-UI's flat namespace: a sub-agent's carry its run id.
    fn id(&self, id: &str) -> String {
        prefixed(self.tag, id)
    }
}

#[derive(Debug)]
struct MessageState {
    id: MessageId,
    /// The id the message's AG-UI messages are minted from: its own, prefixed in a sub-agent.
    base: String,
    role: Role,
    /// AG-UI messages made for this message so far; the first takes the base id.
    minted: u32,
    /// The AG-UI assistant message that tool calls attach to (`parentMessageId`).
    assistant: Option<String>,
    /// What the last part was: tool calls join the message of a text or call just before them.
    last: Last,
    /// Streaming parts, by index.
    open: Vec<(u32, Open)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Last {
    TextOrCall,
    Other,
}

#[derive(Debug)]
enum Open {
    Text(String),
    Reasoning(String),
    /// The call's AG-UI id.
    ToolCall(String),
}

impl RunState {
    /// A message's event other than `message_complete`; `run_status` and `run_created` are the
    /// caller's.
    pub(super) fn encode(&mut self, kind: &EventKind, ctx: &mut Ctx<'_>) {
        match kind {
            EventKind::MessageStart {
                message_id, role, ..
            } => {
                self.message = None;
                self.message(message_id, *role, ctx);
            }
            EventKind::PartStart {
                message_id,
                index,
                part,
            } => self.part_start(message_id, *index, part, ctx),
            EventKind::PartDelta { index, delta, .. } => self.part_delta(*index, delta, ctx),
            EventKind::PartComplete {
                message_id,
                index,
                part,
            } => self.part_complete(message_id, *index, part, ctx),
            EventKind::MessageComplete { message } => self.message_complete(message, ctx),
            EventKind::Input(outcome) => ctx.write(&Out::Custom {
                name: CUSTOM_INPUT,
                value: json!(outcome),
            }),
            EventKind::Error(error) => ctx.write(&Out::Custom {
                name: CUSTOM_ERROR,
                value: json!({ "code": error.code, "message": error.message }),
            }),
            EventKind::RunCreated { .. }
            | EventKind::RunStatus { .. }
            | EventKind::Heartbeat {}
            | EventKind::StateSnapshot { .. }
            | EventKind::StateDelta { .. } => {}
        }
    }

    /// `message_complete`: what a message that arrived whole holds, then the end of every part
    /// and step still open.
    pub(super) fn message_complete(&mut self, message: &Message, ctx: &mut Ctx<'_>) {
        self.whole_message(message, ctx);
        if let Some(state) = &mut self.message {
            for (_, open) in state.open.drain(..) {
                end(&open, ctx);
            }
        }
        self.close_step(ctx);
        self.message = None;
    }

    /// The AG-UI run is over: its calls and approvals are no longer the client's to answer in it.
    pub(super) fn end_run(&mut self) {
        self.calls.clear();
        self.approvals.clear();
    }

    fn message(&mut self, message_id: &MessageId, role: Role, ctx: &Ctx<'_>) -> &mut MessageState {
        if self.message.as_ref().is_none_or(|m| m.id != *message_id) {
            self.message = None;
        }
        self.message.get_or_insert_with(|| MessageState {
            id: message_id.clone(),
            base: ctx.id(message_id.as_str()),
            role,
            minted: 0,
            assistant: None,
            last: Last::Other,
            open: Vec::new(),
        })
    }

    /// Ends every open part and the open step: AG-UI refuses to finish a run with either open.
    pub(super) fn close_all(&mut self, ctx: &mut Ctx<'_>) {
        if let Some(message) = &mut self.message {
            for (_, open) in message.open.drain(..) {
                end(&open, ctx);
            }
        }
        self.close_step(ctx);
    }

    fn close_step(&mut self, ctx: &mut Ctx<'_>) {
        if let Some(step_name) = self.open_step.take() {
            ctx.write(&Out::StepFinished {
                step_name: &step_name,
            });
        }
    }

    fn part_start(
        &mut self,
        message_id: &MessageId,
        index: u32,
        part: &StreamedPart,
        ctx: &mut Ctx<'_>,
    ) {
        let open = match part {
            StreamedPart::Text | StreamedPart::Refusal => {
                let message = self.message(message_id, Role::Assistant, ctx);
                let id = message.mint();
                let metadata = matches!(part, StreamedPart::Refusal)
                    .then(|| json!({ NAMESPACE: { "refusal": true } }));
                let role = text_role(message.role);
                message.assistant = Some(id.clone());
                message.last = Last::TextOrCall;
                ctx.write(&Out::TextMessageStart {
                    message_id: &id,
                    role: Some(role),
                    metadata,
                });
                Open::Text(id)
            }
            StreamedPart::Reasoning => {
                let message = self.message(message_id, Role::Assistant, ctx);
                let id = message.mint();
                message.last = Last::Other;
                ctx.write(&Out::ReasoningStart { message_id: &id });
                ctx.write(&Out::ReasoningMessageStart {
                    message_id: &id,
                    role: "reasoning",
                });
                Open::Reasoning(id)
            }
            StreamedPart::ToolCall {
                tool_call_id,
                tool_name,
            } => {
                let message = self.message(message_id, Role::Assistant, ctx);
                let parent = match (&message.assistant, message.last) {
                    (Some(parent), Last::TextOrCall) => parent.clone(),
                    _ => {
                        let id = message.mint();
                        message.assistant = Some(id.clone());
                        id
                    }
                };
                message.last = Last::TextOrCall;
                let id = ctx.id(tool_call_id.as_str());
                ctx.write(&Out::ToolCallStart {
                    tool_call_id: &id,
                    tool_call_name: tool_name,
                    parent_message_id: Some(&parent),
                });
                self.calls.push(CallState {
                    id: tool_call_id.clone(),
                    name: tool_name.clone(),
                    answered: false,
                    message: parent,
                });
                Open::ToolCall(id)
            }
        };
        if let Some(message) = &mut self.message {
            message.open.push((index, open));
        }
    }

    fn part_delta(&mut self, index: u32, delta: &str, ctx: &mut Ctx<'_>) {
        let Some(message) = &self.message else {
            return;
        };
        let Some((_, open)) = message.open.iter().find(|(at, _)| *at == index) else {
            return;
        };
        let event = match open {
            Open::Text(id) => Out::TextMessageContent {
                message_id: id,
                delta,
            },
            Open::Reasoning(id) => Out::ReasoningMessageContent {
                message_id: id,
                delta,
            },
            Open::ToolCall(id) => Out::ToolCallArgs {
                tool_call_id: id,
                delta,
            },
        };
        ctx.write(&event);
    }

    fn part_complete(
        &mut self,
        message_id: &MessageId,
        index: u32,
        part: &Part,
        ctx: &mut Ctx<'_>,
    ) {
        let message = self.message(message_id, Role::Assistant, ctx);
        if let Some(at) = message.open.iter().position(|(open, _)| *open == index) {
            let (_, open) = message.open.remove(at);
            end(&open, ctx);
            return;
        }
        self.whole_part(message_id, index, part, ctx);
    }

    /// A part that arrives whole: streamed kinds are written as start, content and end at once.
    fn whole_part(&mut self, message_id: &MessageId, index: u32, part: &Part, ctx: &mut Ctx<'_>) {
        let (streamed, text) = match part {
            Part::Text(text) => (StreamedPart::Text, text.text.clone()),
            Part::Refusal(refusal) => (StreamedPart::Refusal, refusal.text.clone()),
            Part::Reasoning(reasoning) => (StreamedPart::Reasoning, reasoning.text.clone()),
            Part::ToolCall(call) => (
                StreamedPart::ToolCall {
                    tool_call_id: call.tool_call_id.clone(),
                    tool_name: call.tool_name.clone(),
                },
                call.args.to_json_text(),
            ),
            Part::ToolResult(result) => {
                let mut extra = Map::new();
                if let Some(is_error) = result.is_error {
                    extra.insert("isError".into(), Value::Bool(is_error));
                }
                let content = content_of(&result.result);
                let name = result.tool_name.as_deref();
                return self.tool_message(
                    message_id,
                    &result.tool_call_id,
                    name,
                    &content,
                    extra,
                    ctx,
                );
            }
            Part::ToolError(error) => {
                let mut extra = Map::new();
                extra.insert("errorType".into(), json!(error.error_type));
                let name = error.tool_name.as_deref();
                return self.tool_message(
                    message_id,
                    &error.tool_call_id,
                    name,
                    &error.message,
                    extra,
                    ctx,
                );
            }
            Part::StepStart(step) => return self.step(message_id, step, ctx),
            Part::PlanUpdate(_) | Part::Artifact(_) => {
                return self.activity(message_id, part, ctx);
            }
            other => return self.custom_part(message_id, other, ctx),
        };
        self.part_start(message_id, index, &streamed, ctx);
        if !text.is_empty() {
            self.part_delta(index, &text, ctx);
        }
        if let Some(message) = &mut self.message
            && let Some(at) = message.open.iter().position(|(open, _)| *open == index)
        {
            let (_, open) = message.open.remove(at);
            end(&open, ctx);
        }
    }

    /// A tool result or error: a `TOOL_CALL_RESULT`, whose `metadata` (kept on the tool message
    /// by the client) says what AG-UI cannot: an error, and a tool name the call does not give.
    fn tool_message(
        &mut self,
        message_id: &MessageId,
        tool_call_id: &ToolCallId,
        tool_name: Option<&str>,
        content: &str,
        mut extra: Map<String, Value>,
        ctx: &mut Ctx<'_>,
    ) {
        let call = self.calls.iter_mut().find(|call| call.id == *tool_call_id);
        let derived = call.map(|call| {
            call.answered = true;
            call.name.as_str()
        });
        if ctx.client_results.contains(tool_call_id) {
            self.message(message_id, Role::Assistant, ctx).last = Last::Other;
            return;
        }
        if let Some(name) = tool_name
            && derived != Some(name)
        {
            extra.insert("toolName".into(), Value::String(name.to_owned()));
        }
        let metadata = (!extra.is_empty()).then(|| json!({ NAMESPACE: extra }));
        let message = self.message(message_id, Role::Assistant, ctx);
        let id = message.mint();
        message.last = Last::Other;
        let call_id = ctx.id(tool_call_id.as_str());
        ctx.write(&Out::ToolCallResult {
            message_id: &id,
            tool_call_id: &call_id,
            content: Value::String(content.to_owned()),
            metadata,
        });
    }

    fn step(&mut self, message_id: &MessageId, step: &StepStart, ctx: &mut Ctx<'_>) {
        self.close_step(ctx);
        let message = self.message(message_id, Role::Assistant, ctx);
        message.last = Last::Other;
        let step_name = step.step_name.as_deref().unwrap_or(step.step_id.as_str());
        let metadata = json!({ NAMESPACE: { "messageId": message_id, "stepId": step.step_id } });
        ctx.write(&Out::StepStarted {
            step_name,
            metadata: Some(metadata),
        });
        self.open_step = Some(step_name.to_owned());
    }

    /// A plan update or an artifact: an activity message the client keeps and shows (one per
    /// plan or artifact, `ACTIVITY_SNAPSHOT` when it first appears, `ACTIVITY_DELTA` replacing
    /// what changed after that).
    fn activity(&mut self, message_id: &MessageId, part: &Part, ctx: &mut Ctx<'_>) {
        self.message(message_id, Role::Assistant, ctx).last = Last::Other;
        let (activity_type, key) = match part {
            Part::PlanUpdate(plan) => (ACTIVITY_PLAN, format!("plan:{}", plan.plan_id)),
            Part::Artifact(artifact) => (
                ACTIVITY_ARTIFACT,
                format!("artifact:{}", artifact.artifact_id),
            ),
            _ => return,
        };
        let mut content = match serde_json::to_value(part) {
            Ok(Value::Object(content)) => content,
            _ => return,
        };
        content.shift_remove("type");
        let id = ctx.id(&key);
        let metadata = Some(json!({ NAMESPACE: { "messageId": message_id } }));
        match ctx.activities.iter_mut().find(|activity| activity.id == id) {
            None => {
                write(
                    ctx.out,
                    &Out::ActivitySnapshot {
                        message_id: &id,
                        activity_type,
                        content: Value::Object(content.clone()),
                        replace: None,
                        metadata,
                    },
                    ctx.tag,
                );
                ctx.activities.push(Activity { id, content });
            }
            Some(activity) => {
                let patch = top_level_patch(&activity.content, &content);
                let patch: Vec<PatchOp<&str>> = patch
                    .iter()
                    .map(|(op, path, value)| PatchOp {
                        op: *op,
                        path: path.as_str(),
                        value: (*value).cloned(),
                    })
                    .collect();
                write(
                    ctx.out,
                    &Out::ActivityDelta {
                        message_id: &id,
                        activity_type,
                        patch,
                        metadata,
                    },
                    ctx.tag,
                );
                activity.content = content;
            }
        }
    }

    /// A part AG-UI has no event for: a `CUSTOM` event named `agentwire.part`.
    fn custom_part(&mut self, message_id: &MessageId, part: &Part, ctx: &mut Ctx<'_>) {
        match part {
            Part::ApprovalRequest(request) => self.approvals.push(request.clone()),
            Part::ApprovalResponse(response) => self
                .approvals
                .retain(|request| request.approval_id != response.approval_id),
            _ => {}
        }
        self.message(message_id, Role::Assistant, ctx).last = Last::Other;
        ctx.write(&Out::Custom {
            name: CUSTOM_PART,
            value: json!({ "messageId": message_id, "part": part }),
        });
    }

    /// A message that arrives whole, without `message_start`: its parts, each whole.
    fn whole_message(&mut self, message: &Message, ctx: &mut Ctx<'_>) {
        let Some(message_id) = &message.id else {
            return;
        };
        if self.message.as_ref().is_some_and(|m| m.id == *message_id) {
            return;
        }
        if message.role == Role::User && ctx.client_messages.contains(message_id) {
            return;
        }
        self.message(message_id, message.role, ctx);
        for (index, part) in message.parts.iter().enumerate() {
            let index = u32::try_from(index).unwrap_or(u32::MAX);
            self.whole_part(message_id, index, part, ctx);
        }
    }
}

impl MessageState {
    /// The id of the next AG-UI message made for this message: its base id first, then
    /// `<base>.1`, `<base>.2`, …
    fn mint(&mut self) -> String {
        let n = self.minted;
        self.minted += 1;
        if n == 0 {
            self.base.clone()
        } else {
            format!("{}.{n}", self.base)
        }
    }
}

/// The events that end a streaming part.
fn end(open: &Open, ctx: &mut Ctx<'_>) {
    match open {
        Open::Text(id) => ctx.write(&Out::TextMessageEnd { message_id: id }),
        Open::Reasoning(id) => {
            ctx.write(&Out::ReasoningMessageEnd { message_id: id });
            ctx.write(&Out::ReasoningEnd { message_id: id });
        }
        Open::ToolCall(id) => ctx.write(&Out::ToolCallEnd { tool_call_id: id }),
    }
}

/// The operations that turn `old` into `new`, key by key: `replace` what changed, `add` what is
/// new, `remove` what is gone. Keys are JSON Pointer tokens (`~` and `/` escaped).
fn top_level_patch<'v>(
    old: &Map<String, Value>,
    new: &'v Map<String, Value>,
) -> Vec<(&'static str, String, Option<&'v Value>)> {
    let pointer = |key: &str| format!("/{}", key.replace('~', "~0").replace('/', "~1"));
    let mut ops = Vec::new();
    for (key, value) in new {
        match old.get(key) {
            Some(before) if before == value => {}
            Some(_) => ops.push(("replace", pointer(key), Some(value))),
            None => ops.push(("add", pointer(key), Some(value))),
        }
    }
    for key in old.keys().filter(|key| !new.contains_key(*key)) {
        ops.push(("remove", pointer(key), None));
    }
    ops
}

/// `TEXT_MESSAGE_START.role`: AG-UI text messages are assistant, user, system or developer.
fn text_role(role: Role) -> &'static str {
    match role {
        Role::User => "user",
        Role::System => "system",
        Role::Assistant | Role::Tool | Role::Data => "assistant",
    }
}

/// `id` as an id of run `run` in AG-UI's flat namespace: `<run id>:<id>` for a sub-agent's run,
/// `id` itself for the run's own.
pub(super) fn prefixed(run: Option<&str>, id: &str) -> String {
    match run {
        Some(run) => format!("{run}:{id}"),
        None => id.to_owned(),
    }
}

/// Appends one frame: `data: {json}\n\n`; `tag`, when given, is the event's `subagentRunId`.
pub(super) fn write(out: &mut Vec<u8>, event: &Out<'_>, tag: Option<&str>) {
    out.extend_from_slice(b"data: ");
    // Serializing cannot fail: keys are strings and numbers finite.
    let _ = serde_json::to_writer(&mut *out, event);
    // Every event is a JSON object: the tag goes in before its closing brace, which costs no
    // second pass over the event.
    if let Some(tag) = tag
        && out.last() == Some(&b'}')
    {
        out.pop();
        out.extend_from_slice(b",\"");
        out.extend_from_slice(SUBAGENT_RUN_ID.as_bytes());
        out.extend_from_slice(b"\":");
        let _ = serde_json::to_writer(&mut *out, tag);
        out.push(b'}');
    }
    out.extend_from_slice(b"\n\n");
}
