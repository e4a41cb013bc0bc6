//! What a settled run still waits for the client to answer, read from its messages: approval
//! requests without a response, and tool calls without a result or error.

use std::collections::{HashMap, HashSet};

use agentwire_core::part::ApprovalRequest;
use agentwire_core::{Message, Part, ToolCall};

/// Approval requests in `messages` that no approval response answers, each with the tool call
/// it asks about (when that call is in `messages`).
pub fn pending_approvals(messages: &[Message]) -> Vec<(&ApprovalRequest, Option<&ToolCall>)> {
    let parts = || messages.iter().flat_map(|message| &message.parts);
    let mut answered = HashSet::new();
    let mut calls = HashMap::new();
    for part in parts() {
        match part {
            Part::ApprovalResponse(response) => {
                answered.insert(&response.approval_id);
            }
            Part::ToolCall(call) => {
                calls.entry(&call.tool_call_id).or_insert(call);
            }
            _ => {}
        }
    }
    parts()
        .filter_map(|part| match part {
            Part::ApprovalRequest(request) if !answered.contains(&request.approval_id) => {
                Some((request, calls.get(&request.tool_call_id).copied()))
            }
            _ => None,
        })
        .collect()
}

/// Tool calls in `messages` with neither a result nor an error: in a run awaiting
/// `function_output`, the calls of the client's own tools.
pub fn pending_tool_calls(messages: &[Message]) -> Vec<&ToolCall> {
    let parts = || messages.iter().flat_map(|message| &message.parts);
    let answered: HashSet<_> = parts()
        .filter_map(|part| match part {
            Part::ToolResult(result) => Some(&result.tool_call_id),
            Part::ToolError(error) => Some(&error.tool_call_id),
            _ => None,
        })
        .collect();
    parts()
        .filter_map(|part| match part {
            Part::ToolCall(call) if !answered.contains(&call.tool_call_id) => Some(call),
            _ => None,
        })
        .collect()
}
