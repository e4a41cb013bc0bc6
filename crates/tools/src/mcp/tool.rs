//! One tool of an MCP server, callable like any other [`Tool`].

use std::sync::Arc;

use agentwire_core::{ToolKind, ToolSpec};
use rmcp::ServiceError;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, RequestMetaObject,
};
use serde_json::Value;

use super::server::Connection;
use crate::{Tool, ToolContext, ToolFailure, ToolFuture};

/// The most characters providers allow in a tool name.
const MAX_TOOL_NAME: usize = 64;

/// A tool of a connected [`McpServer`](super::McpServer). Its spec is the server's (name
/// prefixed with the server's, description, `inputSchema`); a call is a `tools/call`.
pub struct McpTool {
    spec: ToolSpec,
    mcp_name: String,
    connection: Arc<Connection>,
}

impl McpTool {
    pub(super) fn new(spec: ToolSpec, mcp_name: String, connection: Arc<Connection>) -> Self {
        Self {
            spec,
            mcp_name,
            connection,
        }
    }

    /// The name the server gave the tool (what `tools/call` sends).
    pub fn mcp_name(&self) -> &str {
        &self.mcp_name
    }

    /// The name of the server it belongs to.
    pub fn server(&self) -> &str {
        self.connection.server()
    }
}

impl std::fmt::Debug for McpTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpTool")
            .field("name", &self.spec.name)
            .field("server", &self.server())
            .finish_non_exhaustive()
    }
}

impl Tool for McpTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Mcp {
            server: self.server().to_owned(),
        }
    }

    fn call(&self, args: Value, context: ToolContext) -> ToolFuture<'_> {
        Box::pin(async move {
            let mut params = CallToolRequestParams::new(self.mcp_name.clone());
            params.meta = Some(call_meta(&context));
            params.arguments = match args {
                Value::Object(arguments) => Some(arguments),
                Value::Null => None,
                other => {
                    return Err(ToolFailure::new(format!(
                        "the arguments must be a JSON object, not {other}"
                    )));
                }
            };
            // Dropping the request future abandons it, and rmcp then sends the server
            // `notifications/cancelled` for it.
            let response = tokio::select! {
                biased;
                () = context.cancel.cancelled() => {
                    return Err(ToolFailure::new("the call was canceled"));
                }
                response = self.connection.peer().call_tool_once(params) => response,
            };
            match response {
                Ok(CallToolResponse::Complete(result)) => result_value(result),
                Ok(CallToolResponse::InputRequired(_)) => Err(ToolFailure::new(format!(
                    "the MCP server `{}` asked for input (elicitation or sampling), which this \
                     client does not offer",
                    self.server()
                ))),
                Ok(_) => Err(ToolFailure::new(format!(
                    "the MCP server `{}` answered with a task to poll, which this client does \
                     not do",
                    self.server()
                ))),
                Err(error) => Err(self.failure(error)),
            }
        })
    }
}

impl McpTool {
    fn failure(&self, error: ServiceError) -> ToolFailure {
        let server = self.server();
        ToolFailure::new(match error {
            ServiceError::McpError(error) => {
                let code = error.code.0.to_string();
                // Some SDKs already put the code in the message ("MCP error -32602: …").
                if error.message.contains(&code) {
                    format!(
                        "the MCP server `{server}` refused the call: {}",
                        error.message
                    )
                } else {
                    format!(
                        "the MCP server `{server}` refused the call: {} (JSON-RPC error {code})",
                        error.message
                    )
                }
            }
            ServiceError::TransportClosed | ServiceError::TransportSend(_) => {
                format!("the MCP server `{server}` is not running (its connection is closed)")
            }
            other => format!("the MCP server `{server}` failed: {other}"),
        })
    }
}

/// The tool's name as models see it: `<server>_<tool>`, every character outside
/// `[A-Za-z0-9_-]` made `_`, cut at 64 characters.
pub(super) fn model_name(server: &str, tool: &str) -> String {
    let mut name = String::with_capacity(MAX_TOOL_NAME);
    name.push_str(server);
    name.push('_');
    let safe = tool.chars().map(|c| {
        if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
            c
        } else {
            '_'
        }
    });
    // Every character pushed is ASCII, so bytes count characters.
    name.extend(safe.take(MAX_TOOL_NAME.saturating_sub(name.len())));
    name
}

/// A completed call's result as the tool's output, or its error as a failure.
fn result_value(result: CallToolResult) -> Result<Value, ToolFailure> {
    if result.is_error == Some(true) {
        return Err(ToolFailure::new(error_text(&result)));
    }
    if let Some(structured) = result.structured_content {
        return Ok(structured);
    }
    let mut content = result.content;
    if let [ContentBlock::Text(text)] = content.as_mut_slice() {
        return Ok(Value::String(std::mem::take(&mut text.text)));
    }
    Ok(Value::Array(
        content.into_iter().map(content_value).collect(),
    ))
}

/// A text item is its text; anything else is its MCP JSON (`{"type": "image", …}`).
fn content_value(block: ContentBlock) -> Value {
    match block {
        ContentBlock::Text(text) => Value::String(text.text),
        other => serde_json::to_value(&other).unwrap_or_else(|error| {
            Value::String(format!("(content that could not be represented: {error})"))
        }),
    }
}

/// What a result with `isError` says: its text items, else whatever JSON it carries.
fn error_text(result: &CallToolResult) -> String {
    let texts: Vec<&str> = result
        .content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Text(text) => Some(text.text.as_str()),
            _ => None,
        })
        .collect();
    if !texts.is_empty() {
        return texts.join("\n");
    }
    if let Some(structured) = &result.structured_content {
        return structured.to_string();
    }
    if !result.content.is_empty() {
        return serde_json::to_string(&result.content).unwrap_or_default();
    }
    "the tool reported an error without saying what it was".to_owned()
}

/// The `_meta` of a `tools/call`: the agentwire run and tool call it is (see
/// [`ToolContext::run_id`]), so the server can tie its work to them, and the call's W3C trace
/// context (`traceparent`, `tracestate`), where the OpenTelemetry MCP conventions put it: in
/// `_meta`, which reaches the server over stdio as over HTTP.
fn call_meta(context: &ToolContext) -> RequestMetaObject {
    let mut meta = serde_json::Map::new();
    for (name, value) in context.trace_context.iter() {
        meta.insert(name.to_owned(), Value::String(value.to_owned()));
    }
    meta.insert(
        "agentwire/tool_call_id".to_owned(),
        Value::String(context.tool_call_id.to_string()),
    );
    if let Some(run_id) = &context.run_id {
        meta.insert(
            "agentwire/run_id".to_owned(),
            Value::String(run_id.to_string()),
        );
    }
    RequestMetaObject::from(meta)
}

#[cfg(test)]
mod tests {
    use super::model_name;

    #[test]
    fn names_are_prefixed_made_safe_and_cut_at_64() {
        assert_eq!(model_name("fs", "read_file"), "fs_read_file");
        assert_eq!(model_name("ev", "get-sum"), "ev_get-sum");
        assert_eq!(model_name("ev", "a.b c/é"), "ev_a_b_c__");
        let long = model_name("server", &"x".repeat(100));
        assert_eq!(long.len(), 64);
        assert!(long.starts_with("server_xxx"));
    }
}
