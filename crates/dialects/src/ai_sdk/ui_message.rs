//! [`to_ui_message`]: a canonical message as the `UIMessage` the AI SDK client builds from its
//! stream.

use std::collections::HashMap;

use agentwire_core::{Message, Part, Role};
use serde_json::{Map, Value, json};

use super::{file_url, metadata_json, part_as_data, provider_metadata};

/// The `UIMessage` the AI SDK client builds when it reads `message` from [`AiSdkEncoder`]
/// (`{id, role, metadata?, parts}`): what a server sends as a chat's stored history, and what
/// the peer tests expect the real client to rebuild.
///
/// A tool call's result, error and approval change its one tool part, as the client does; an
/// outcome for a call that is not in the message is left out (the client would refuse it). Roles
/// other than `system` and `user` are `assistant`.
///
/// [`AiSdkEncoder`]: super::AiSdkEncoder
pub fn to_ui_message(message: &Message) -> Value {
    // Parts the client streams carry a state; the user's own parts do not.
    let streamed = !matches!(message.role, Role::System | Role::User);
    let done = |mut part: Value| {
        if streamed {
            part["state"] = "done".into();
        }
        part
    };
    let mut parts: Vec<Value> = Vec::with_capacity(message.parts.len());
    // Where each call's tool part is, by tool call id; and each approval's call.
    let mut tools: HashMap<&str, usize> = HashMap::new();
    let mut approvals: HashMap<&str, usize> = HashMap::new();
    for (index, part) in message.parts.iter().enumerate() {
        match part {
            Part::Text(text) => parts.push(done(json!({"type": "text", "text": text.text}))),
            Part::Refusal(refusal) => parts.push(done(json!({
                "type": "text",
                "text": refusal.text,
                "providerMetadata": provider_metadata("refusal", Value::Bool(true)),
            }))),
            Part::Reasoning(reasoning) => parts.push(done(json!({
                "type": "reasoning",
                "id": format!("r{index}"),
                "text": reasoning.text,
            }))),
            Part::ToolCall(call) => {
                tools.insert(call.tool_call_id.as_str(), parts.len());
                parts.push(json!({
                    "type": format!("tool-{}", call.tool_name),
                    "toolCallId": call.tool_call_id,
                    "state": "input-available",
                    "input": call.args,
                }));
            }
            Part::ToolResult(result) => {
                if let Some(tool) = tool_part(&mut parts, &tools, result.tool_call_id.as_str()) {
                    tool.insert("state".into(), "output-available".into());
                    tool.insert("output".into(), result.result.clone());
                    tool.remove("errorText");
                }
            }
            Part::ToolError(error) => {
                if let Some(tool) = tool_part(&mut parts, &tools, error.tool_call_id.as_str()) {
                    tool.insert("state".into(), "output-error".into());
                    tool.insert("errorText".into(), error.message.as_str().into());
                    tool.remove("output");
                }
            }
            Part::ApprovalRequest(request) => {
                let Some(&at) = tools.get(request.tool_call_id.as_str()) else {
                    continue;
                };
                if let Some(tool) = parts.get_mut(at).and_then(Value::as_object_mut) {
                    let mut approval = Map::new();
                    approval.insert("id".into(), request.approval_id.as_str().into());
                    if let Some(reason) = &request.reason {
                        approval.insert("requestReason".into(), reason.as_str().into());
                    }
                    tool.insert("state".into(), "approval-requested".into());
                    tool.insert("approval".into(), Value::Object(approval));
                    approvals.insert(request.approval_id.as_str(), at);
                }
            }
            Part::ApprovalResponse(response) => {
                let Some(&at) = approvals.get(response.approval_id.as_str()) else {
                    continue;
                };
                let Some(tool) = parts.get_mut(at).and_then(Value::as_object_mut) else {
                    continue;
                };
                let state = if response.approved {
                    "approval-responded"
                } else {
                    "output-denied"
                };
                tool.insert("state".into(), state.into());
                if let Some(Value::Object(approval)) = tool.get_mut("approval") {
                    approval.insert("approved".into(), response.approved.into());
                    if let Some(reason) = &response.reason {
                        approval.insert("reason".into(), reason.as_str().into());
                    }
                }
            }
            Part::StepStart(_) => parts.push(json!({"type": "step-start"})),
            Part::File(file) => {
                let mut part = json!({
                    "type": "file",
                    "mediaType": file.media_type,
                    "url": file_url(&file.media_type, &file.source),
                });
                if let Some(filename) = &file.filename {
                    part["providerMetadata"] =
                        provider_metadata("filename", filename.as_str().into());
                }
                parts.push(part);
            }
            Part::Source(source) => {
                let mut part = json!({
                    "type": "source-url",
                    "sourceId": source.source_id,
                    "url": source.url,
                });
                if let Some(title) = &source.title {
                    part["title"] = title.as_str().into();
                }
                parts.push(part);
            }
            Part::Data(data) => {
                parts.push(json!({"type": format!("data-{}", data.name), "data": data.data}));
            }
            Part::Artifact(_) | Part::PlanUpdate(_) => {
                if let Some((name, id, data)) = part_as_data(part) {
                    // As the client reconciles the stream: one part per artifact or plan.
                    let kind = format!("data-{name}");
                    let held = parts
                        .iter_mut()
                        .find(|held| held["type"] == kind.as_str() && held["id"] == id);
                    match held {
                        Some(held) => held["data"] = data,
                        None => parts.push(json!({"type": kind, "id": id, "data": data})),
                    }
                }
            }
        }
    }
    let role = match message.role {
        Role::System => "system",
        Role::User => "user",
        _ => "assistant",
    };
    let mut ui = Map::new();
    if let Some(id) = &message.id {
        ui.insert("id".into(), id.as_str().into());
    }
    ui.insert("role".into(), role.into());
    let metadata = metadata_json(&message.metadata, message.created_at);
    if !metadata.is_empty() {
        ui.insert("metadata".into(), Value::Object(metadata));
    }
    ui.insert("parts".into(), Value::Array(parts));
    Value::Object(ui)
}

fn tool_part<'p>(
    parts: &'p mut [Value],
    tools: &HashMap<&str, usize>,
    tool_call_id: &str,
) -> Option<&'p mut Map<String, Value>> {
    parts.get_mut(*tools.get(tool_call_id)?)?.as_object_mut()
}
