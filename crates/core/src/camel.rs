//! Viber's camelCase spelling of the model: `"type": "tool-call"`, `toolCallId`, `isError`.
//!
//! Input in this spelling is read by the serde aliases on the model itself; this module writes
//! it. It rewrites the native JSON rather than keeping a second set of types, so the two
//! spellings cannot drift apart. Only keys the model defines are renamed: payloads (tool
//! arguments and results, data, plan details, free metadata keys) are left exactly as they are.

use serde_json::{Map, Value};

/// Rewrites a message's native JSON into the camelCase spelling.
pub(crate) fn message_to_camel(value: Value) -> Value {
    let Value::Object(message) = value else {
        return value;
    };
    let message = message
        .into_iter()
        .map(|(key, value)| match key.as_str() {
            "parts" => (key, map_array(value, part_to_camel)),
            "metadata" => (key, metadata_to_camel(value)),
            _ => (snake_to_camel(&key), value),
        })
        .collect();
    Value::Object(message)
}

/// Rewrites a part's native JSON into the camelCase spelling.
pub(crate) fn part_to_camel(value: Value) -> Value {
    let Value::Object(part) = value else {
        return value;
    };
    let part_type = part
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    let part = part
        .into_iter()
        .map(|(key, value)| match (part_type.as_str(), key.as_str()) {
            (_, "type") => {
                let kebab = value.as_str().map(|name| name.replace('_', "-"));
                (key, kebab.map_or(value, Value::String))
            }
            // The camelCase spelling names these two fields differently from the native one.
            ("reasoning", "text") => ("content".to_owned(), value),
            ("file", "media_type") => ("mimeType".to_owned(), value),
            _ => (snake_to_camel(&key), value),
        })
        .collect();
    Value::Object(part)
}

fn metadata_to_camel(value: Value) -> Value {
    let Value::Object(metadata) = value else {
        return value;
    };
    let metadata: Map<String, Value> = metadata
        .into_iter()
        .map(|(key, value)| match key.as_str() {
            "agent_name" => ("agentName".to_owned(), value),
            "usage" => (key, rename_keys(value)),
            _ => (key, value),
        })
        .collect();
    Value::Object(metadata)
}

fn rename_keys(value: Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(key, value)| (snake_to_camel(&key), value))
                .collect(),
        ),
        other => other,
    }
}

fn map_array(value: Value, f: fn(Value) -> Value) -> Value {
    match value {
        Value::Array(items) => Value::Array(items.into_iter().map(f).collect()),
        other => other,
    }
}

fn snake_to_camel(key: &str) -> String {
    let mut out = String::with_capacity(key.len());
    let mut upper = false;
    for c in key.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn renames_model_keys_and_leaves_payloads() {
        let native = json!({
            "id": "m", "role": "assistant", "created_at": 1,
            "metadata": {"agent_name": "a", "usage": {"input_tokens": 1}, "free_key": 2},
            "parts": [
                {"type": "tool_call", "tool_call_id": "c", "tool_name": "t", "args": {"snake_key": 1}},
                {"type": "reasoning", "text": "r"},
                {"type": "file", "media_type": "image/png", "data": "AA"}
            ]
        });
        assert_eq!(
            message_to_camel(native),
            json!({
                "id": "m", "role": "assistant", "createdAt": 1,
                "metadata": {"agentName": "a", "usage": {"inputTokens": 1}, "free_key": 2},
                "parts": [
                    {"type": "tool-call", "toolCallId": "c", "toolName": "t", "args": {"snake_key": 1}},
                    {"type": "reasoning", "content": "r"},
                    {"type": "file", "mimeType": "image/png", "data": "AA"}
                ]
            })
        );
    }
}
