//! What a settled run still waits for the client to answer, read from its messages: approval
//! requests without a response, and tool calls without a result or error.

use agentwire_core::part::ApprovalRequest;
use agentwire_core::{Message, Part, ToolCall};

/// Approval requests in `messages` that no approval response answers, each with the tool call
/// it asks about (when that call is in `messages`).
pub fn pending_approvals(messages: &[Message]) -> Vec<(&ApprovalRequest, Option<&ToolCall>)> {
    let parts = || messages.iter().flat_map(|message| &message.parts);
    parts()
        .filter_map(|part| match part {
            Part::ApprovalRequest(request) => Some(request),
            _ => None,
        })
        .filter(|request| {
            !parts().any(|part| {
                matches!(part, Part::ApprovalResponse(response)
                    if response.approval_id == request.approval_id)
            })
        })
        .map(|request| {
            let call = parts().find_map(|part| match part {
                Part::ToolCall(call) if call.tool_call_id == request.tool_call_id => Some(call),
                _ => None,
            });
            (request, call)
        })
        .collect()
}

/// Tool calls in `messages` with neither a result nor an error: in a run awaiting
/// `function_output`, the calls of the client's own tools.
pub fn pending_tool_calls(messages: &[Message]) -> Vec<&ToolCall> {
    let parts = || messages.iter().flat_map(|message| &message.parts);
    parts()
        .filter_map(|part| match part {
            Part::ToolCall(call) => Some(call),
            _ => None,
        })
        .filter(|call| {
            !parts().any(|part| match part {
                Part::ToolResult(result) => result.tool_call_id == call.tool_call_id,
                Part::ToolError(error) => error.tool_call_id == call.tool_call_id,
                _ => false,
            })
        })
        .collect()
}
