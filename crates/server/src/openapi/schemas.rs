//! The document's schemas (JSON Schema 2020-12, as OpenAPI 3.1 uses it): the native JSON as
//! the server writes it (snake_case; input may also use Viber's camelCase, which the server
//! accepts), the error shape, and the WebSocket frames. Objects allow keys they do not list, as
//! the API's readers ignore unknown keys.

use serde_json::{Map, Value, json};

fn schema(name: &str) -> Value {
    json!({"$ref": format!("#/components/schemas/{name}")})
}

fn string() -> Value {
    json!({"type": "string"})
}

/// An agent's sub-agents: the names of the agents its model may call like tools, sorted.
fn subagent_names() -> Value {
    json!({"type": "array", "items": string(), "description": "The agents this agent's model may call like tools (sub-agents), by name, sorted."})
}

fn nullable(schema: Value) -> Value {
    json!({"oneOf": [schema, {"type": "null"}]})
}

/// An object with these required and optional properties.
fn object(required: &[(&str, Value)], optional: &[(&str, Value)]) -> Value {
    let names: Vec<&str> = required.iter().map(|(name, _)| *name).collect();
    let properties: Map<String, Value> = required
        .iter()
        .chain(optional)
        .map(|(name, schema)| ((*name).to_owned(), schema.clone()))
        .collect();
    json!({"type": "object", "required": names, "properties": properties})
}

/// A variant of a union tagged by `tag`.
fn variant(tag: &str, name: &str, required: &[(&str, Value)], optional: &[(&str, Value)]) -> Value {
    let mut all = vec![(tag, json!({"const": name}))];
    all.extend(required.iter().cloned());
    object(&all, optional)
}

fn parts() -> Value {
    let id = string;
    let any = || json!({});
    json!({"oneOf": [
        variant("type", "text", &[("text", string())], &[]),
        variant("type", "reasoning", &[("text", string())], &[]),
        variant("type", "refusal", &[("text", string())], &[]),
        variant("type", "tool_call", &[("tool_call_id", id()), ("tool_name", string()), ("args", any())], &[]),
        variant("type", "tool_result", &[("tool_call_id", id()), ("result", any())],
            &[("tool_name", string()), ("is_error", json!({"type": "boolean"}))]),
        variant("type", "tool_error", &[("tool_call_id", id()), ("error_type", json!({"enum": ["VALIDATION", "EXECUTION"]})), ("message", string())],
            &[("tool_name", string())]),
        {"allOf": [
            variant("type", "file", &[("media_type", string())], &[("filename", string())]),
            {"oneOf": [object(&[("url", string())], &[]), object(&[("data", json!({"type": "string", "description": "base64"}))], &[])]}
        ]},
        variant("type", "data", &[("name", string()), ("data", any())], &[]),
        variant("type", "step_start", &[("step_id", id())], &[("step_name", string())]),
        variant("type", "artifact", &[("artifact_id", id()), ("title", string())],
            &[("version", json!({"type": "integer", "minimum": 0})), ("preview", string())]),
        variant("type", "plan_update", &[("plan_id", id()), ("action", json!({"enum": ["created", "updated", "completed", "failed"]}))],
            &[("details", any())]),
        variant("type", "approval_request", &[("approval_id", id()), ("tool_call_id", id())], &[("reason", string())]),
        variant("type", "approval_response", &[("approval_id", id()), ("approved", json!({"type": "boolean"}))], &[("reason", string())]),
        variant("type", "source", &[("source_id", id()), ("url", string())], &[("title", string())]),
    ]})
}

fn events() -> Value {
    let seq = || json!({"type": "integer", "minimum": 0});
    let index = || json!({"type": "integer", "minimum": 0});
    // Every event may be a sub-agent's, nested in the run's stream: the path of run ids down
    // to it (absent for the run's own).
    let event = |name: &str, required: &[(&str, Value)], optional: &[(&str, Value)]| {
        let mut required = required.to_vec();
        required.insert(0, ("seq", seq()));
        let mut optional = optional.to_vec();
        optional.push((
            "namespace",
            json!({"type": "array", "items": {"type": "string"}, "description": "The run ids from this run down to the sub-agent's run the event is of."}),
        ));
        variant("event", name, &required, &optional)
    };
    json!({"oneOf": [
        event("run_created", &[("run_id", string())], &[("session_id", string()), ("agent", string()),
            ("parent_run_id", string()), ("parent_tool_call_id", string())]),
        event("run_status", &[("status", schema("RunStatusName"))],
            &[("awaiting", schema("Awaiting")), ("error", schema("ErrorInfo")), ("usage", schema("Usage"))]),
        event("message_start", &[("message_id", string()), ("role", schema("Role"))],
            &[("metadata", json!({"type": "object"})), ("created_at", json!({"type": "integer"}))]),
        event("part_start", &[("message_id", string()), ("index", index()),
            ("type", json!({"enum": ["text", "reasoning", "refusal", "tool_call"]}))],
            &[("tool_call_id", string()), ("tool_name", string())]),
        event("part_delta", &[("message_id", string()), ("index", index()), ("delta", string())], &[]),
        event("part_complete", &[("message_id", string()), ("index", index()), ("part", schema("Part"))], &[]),
        event("message_complete", &[("message", schema("Message"))], &[]),
        event("heartbeat", &[], &[]),
        event("error", &[("code", string()), ("message", string())], &[]),
        event("input", &[("client_message_id", string()), ("outcome", json!({"enum": ["queued", "delivered", "not_delivered"]}))],
            &[("step", json!({"type": "integer", "minimum": 0})), ("reason", string())]),
        event("state_snapshot", &[("state", json!({}))], &[]),
        event("state_delta", &[("patch", schema("JsonPatch"))], &[]),
    ]})
}

fn ws_requests() -> Value {
    let id = || json!({"description": "Any JSON value; the answer repeats it."});
    let mut start = schema("CreateRun");
    start = json!({"allOf": [start, variant("type", "start", &[], &[("id", id())])]});
    json!({"oneOf": [
        start,
        variant("type", "subscribe", &[("run_id", string())], &[("id", id()), ("after", json!({"type": "integer", "minimum": 0}))]),
        variant("type", "unsubscribe", &[("run_id", string())], &[("id", id())]),
        variant("type", "input", &[("run_id", string()), ("message", schema("Message"))], &[("id", id())]),
        variant("type", "cancel", &[("run_id", string())], &[("id", id())]),
    ]})
}

fn ws_answers() -> Value {
    let id = || json!({"description": "The request's `id`, or null."});
    json!({"oneOf": [
        variant("type", "started", &[("id", id()), ("run_id", string()), ("run", schema("Run"))], &[]),
        variant("type", "subscribed", &[("id", id()), ("run_id", string()), ("after", json!({"type": "integer"}))], &[]),
        variant("type", "unsubscribed", &[("id", id()), ("run_id", string())], &[]),
        variant("type", "accepted", &[("id", id()), ("run_id", string()), ("run", schema("Run"))], &[]),
        variant("type", "error", &[("id", id()), ("request", nullable(string())), ("status", json!({"type": "integer"})),
            ("error", schema("ErrorInfo"))], &[]),
    ]})
}

/// Every schema by name.
pub(super) fn all() -> Map<String, Value> {
    let tool_spec = object(
        &[("name", string())],
        &[
            ("description", string()),
            (
                "parameters",
                json!({"type": "object", "description": "JSON Schema of the arguments"}),
            ),
        ],
    );
    let run = object(
        &[
            ("id", string()),
            ("session_id", nullable(string())),
            ("agent", string()),
            ("status", schema("RunStatusName")),
            ("state", string()),
            ("usage", nullable(schema("Usage"))),
            ("error", nullable(schema("ErrorInfo"))),
        ],
        &[("awaiting", schema("Awaiting"))],
    );
    let entries = [
        (
            "Error",
            json!({
                "description": "Every error answer: a stable snake_case `code` and a message for people.",
                "type": "object", "required": ["error"],
                "properties": {"error": schema("ErrorInfo")}
            }),
        ),
        (
            "ErrorInfo",
            object(&[("code", string()), ("message", string())], &[]),
        ),
        (
            "Usage",
            object(
                &[
                    ("input_tokens", json!({"type": "integer"})),
                    ("output_tokens", json!({"type": "integer"})),
                    ("total_tokens", json!({"type": "integer"})),
                ],
                &[
                    ("reasoning_tokens", json!({"type": "integer"})),
                    ("cached_input_tokens", json!({"type": "integer"})),
                ],
            ),
        ),
        (
            "Role",
            json!({"enum": ["system", "user", "assistant", "tool", "data"]}),
        ),
        (
            "RunStatusName",
            json!({"enum": ["created", "queued", "in_progress", "awaiting", "completed", "failed", "canceled", "rejected", "incomplete"]}),
        ),
        (
            "Awaiting",
            json!({"description": "What an `awaiting` run waits for.", "enum": ["approval", "function_output", "input"]}),
        ),
        ("Part", parts()),
        (
            "Message",
            object(
                &[
                    ("role", schema("Role")),
                    ("parts", json!({"type": "array", "items": schema("Part")})),
                ],
                &[
                    ("id", string()),
                    ("metadata", json!({"type": "object"})),
                    (
                        "created_at",
                        json!({"type": "integer", "description": "milliseconds since the Unix epoch"}),
                    ),
                ],
            ),
        ),
        ("Event", events()),
        ("ToolSpec", tool_spec),
        (
            "CreateRun",
            object(
                &[(
                    "input",
                    json!({"type": "array", "items": schema("Message")}),
                )],
                &[
                    ("agent", string()),
                    ("session_id", string()),
                    (
                        "background",
                        json!({"type": "boolean", "default": false, "description": "Answer at once (`202`, the run) and leave the run going with nobody connected: follow it with `GET /v1/runs/{id}/events`, poll it with `GET /v1/runs/{id}`, cancel it with `POST /v1/runs/{id}/cancel`, from any client and any node."}),
                    ),
                    (
                        "webhook",
                        json!({"type": "object", "required": ["url"], "additionalProperties": false,
                            "description": "A webhook of this run alone, stored before its first status change, so it hears every one (as `POST /v1/webhooks` with `run_id`). The answer carries it with its signing `secret` (`webhook` beside `run`; on a stream, the `x-agentwire-webhook-id` and `x-agentwire-webhook-secret` headers).",
                            "properties": {"url": string(), "events": {"type": "array", "items": string(), "description": "`run.<status>` names; none: every status change."}}}),
                    ),
                    (
                        "tools",
                        json!({"type": "array", "description": "Tools the client runs itself: `{name, description, parameters}` or OpenAI's `{type: function, function: {…}}`.",
                            "items": {"anyOf": [schema("ToolSpec"), object(&[("function", schema("ToolSpec"))], &[("type", json!({"const": "function"}))])]}}),
                    ),
                    // The run's generation settings (camelCase spellings are read too).
                    (
                        "model",
                        json!({"type": "string", "minLength": 1, "description": "Another model for this run, unless the agent forbids it (`allow_model_override = false`)."}),
                    ),
                    (
                        "temperature",
                        json!({"type": "number", "minimum": 0, "maximum": 2}),
                    ),
                    (
                        "top_p",
                        json!({"type": "number", "minimum": 0, "maximum": 1}),
                    ),
                    (
                        "max_tokens",
                        json!({"type": "integer", "minimum": 1, "maximum": u32::MAX}),
                    ),
                    (
                        "stop",
                        json!({"anyOf": [{"type": "string", "minLength": 1}, {"type": "array", "maxItems": 4, "items": {"type": "string", "minLength": 1}}]}),
                    ),
                    ("seed", json!({"type": "integer"})),
                    (
                        "frequency_penalty",
                        json!({"type": "number", "minimum": -2, "maximum": 2}),
                    ),
                    (
                        "presence_penalty",
                        json!({"type": "number", "minimum": -2, "maximum": 2}),
                    ),
                    (
                        "n",
                        json!({"type": "integer", "minimum": 1, "maximum": 5, "description": "Choices to generate; the first is the answer, the others come as `openai.choice` data parts."}),
                    ),
                ],
            ),
        ),
        ("Run", run),
        (
            "RunList",
            object(
                &[
                    (
                        "runs",
                        json!({"type": "array", "items": {"allOf": [schema("Run"), object(
                            &[
                                ("created_at", json!({"type": "integer", "description": "milliseconds since the Unix epoch"})),
                                ("updated_at", json!({"type": "integer", "description": "milliseconds since the Unix epoch"})),
                            ],
                            &[],
                        )]}}),
                    ),
                    (
                        "next",
                        json!({"type": ["string", "null"], "description": "The `cursor` of the next page; null on the last."}),
                    ),
                ],
                &[],
            ),
        ),
        (
            "RunResult",
            object(
                &[
                    ("run", schema("Run")),
                    (
                        "output",
                        json!({"type": "array", "items": schema("Message")}),
                    ),
                ],
                &[],
            ),
        ),
        (
            "AgentList",
            object(
                &[(
                    "agents",
                    json!({"type": "array", "items": object(&[("name", string()), ("description", string()), ("subagents", subagent_names())], &[])}),
                )],
                &[],
            ),
        ),
        (
            "AgentCard",
            object(
                &[
                    ("name", string()),
                    ("description", string()),
                    ("brain", string()),
                    (
                        "tools",
                        json!({"type": "array", "items": schema("ToolSpec")}),
                    ),
                    ("subagents", subagent_names()),
                    (
                        "schema",
                        json!({"type": "object", "description": "The agent's communication schema."}),
                    ),
                ],
                &[],
            ),
        ),
        (
            "Session",
            object(
                &[
                    ("id", string()),
                    (
                        "messages",
                        json!({"type": "array", "items": schema("Message")}),
                    ),
                    (
                        "state",
                        json!({
                            "type": "string",
                            "description": "Where the conversation stands in its agent's communication schema: \
                                the state the session's last run that ended left it in (`idle` for a \
                                new session or a fork). The next message is checked against it: a one-shot agent's \
                                session is `done` after its answer and refuses another question (409 \
                                `input_refused`). A run that fails or is incomplete leaves the state it started \
                                from; a run the client canceled, the state the schema's `cancel` leads to."
                        }),
                    ),
                ],
                &[("last_run", nullable(schema("SessionRun")))],
            ),
        ),
        (
            "PostMessage",
            json!({
                "type": "object",
                "additionalProperties": false,
                "required": ["message"],
                "properties": {
                    "message": schema("Message"),
                    "mode": {"type": "string", "enum": ["queue", "steer", "interrupt", "rollback", "reject"],
                             "description": "What to do if the session is busy; the agent's `input_mode` (default `queue`) without it."},
                    "client_message_id": {"type": "string", "minLength": 1, "maxLength": 128,
                                          "description": "The client's name for the message: a retry with it is answered with the message as it stands."},
                    "agent": {"type": "string", "description": "The agent that answers; the session's last run's agent, or the server's default."}
                }
            }),
        ),
        (
            "InboxMessage",
            json!({
                "type": "object",
                "required": ["client_message_id", "session_id", "position", "agent", "mode", "outcome", "created_at"],
                "properties": {
                    "client_message_id": {"type": "string"},
                    "session_id": {"type": "string"},
                    "position": {"type": "integer", "description": "Its place in the session's inbox, from 1."},
                    "agent": {"type": "string"},
                    "mode": {"type": "string", "enum": ["queue", "steer", "interrupt", "rollback", "reject"]},
                    "outcome": {"type": "string", "enum": ["queued", "starting", "steering", "delivered", "not_delivered"]},
                    "run_id": {"type": "string", "description": "The run it started or was given to."},
                    "step": {"type": "integer", "description": "The model calls its run had made when it took the message (0: it is the run's input)."},
                    "reason": {"type": "string", "description": "Why it was not delivered (`refused`, `canceled`, `awaiting_client`, …)."},
                    "rollback_of": {"type": "string", "description": "For a rollback: the run it takes out of the history."},
                    "created_at": {"type": "integer"}
                }
            }),
        ),
        (
            "CreateWebhook",
            json!({
                "type": "object",
                "additionalProperties": false,
                "required": ["url"],
                "properties": {
                    "url": {"type": "string", "format": "uri", "maxLength": 2048, "description": "http(s), at most 2048 bytes; no address that is not public (loopback, private, link-local, IPv4 inside IPv6, any IANA special-purpose block that is not globally reachable) unless the server's `[webhooks] allow_private` is set."},
                    "events": {"type": "array", "items": {"type": "string"}, "description": "`run.<status>` names; every status change without them."},
                    "run_id": {"type": "string", "description": "Only this run's status changes."}
                }
            }),
        ),
        (
            "Webhook",
            json!({
                "type": "object",
                "required": ["id", "url", "events", "created_at"],
                "properties": {
                    "id": {"type": "string"},
                    "url": {"type": "string"},
                    "events": {"type": "array", "items": {"type": "string"}},
                    "run_id": {"type": ["string", "null"]},
                    "secret": {"type": "string", "description": "`whsec_…`: only in the answer that creates it."},
                    "created_at": {"type": "integer"}
                }
            }),
        ),
        (
            "JsonPatch",
            json!({
                "type": "array",
                "description": "RFC 6902 JSON Patch operations, applied in order, all or nothing.",
                "items": {
                    "type": "object",
                    "required": ["op", "path"],
                    "properties": {
                        "op": {"enum": ["add", "remove", "replace", "move", "copy", "test"]},
                        "path": {"type": "string", "description": "A JSON Pointer (RFC 6901)."},
                        "from": {"type": "string"},
                        "value": {}
                    }
                }
            }),
        ),
        (
            "ForkSession",
            json!({
                "type": "object",
                "additionalProperties": false,
                "properties": {"before": {
                    "type": "string",
                    "description": "The id of the message the copy stops before; without it, every message is copied."
                }}
            }),
        ),
        (
            "SessionRun",
            object(
                &[
                    ("id", string()),
                    ("agent", string()),
                    ("status", schema("RunStatusName")),
                    ("last_seq", json!({"type": "integer", "minimum": 0})),
                ],
                &[("awaiting", schema("Awaiting"))],
            ),
        ),
        (
            "SessionList",
            object(
                &[
                    (
                        "sessions",
                        json!({"type": "array", "items": object(
                            &[
                                ("id", string()),
                                ("title", nullable(string())),
                                ("preview", nullable(string())),
                                ("message_count", json!({"type": "integer", "minimum": 0})),
                                ("agent", nullable(string())),
                                ("created_at", json!({"type": "integer"})),
                                ("updated_at", json!({"type": "integer"})),
                                ("last_run", nullable(schema("SessionRun"))),
                            ],
                            &[],
                        )}),
                    ),
                    ("next", nullable(string())),
                ],
                &[],
            ),
        ),
        ("WsRequest", ws_requests()),
        ("WsAnswer", ws_answers()),
        (
            "WsEvent",
            variant(
                "type",
                "event",
                &[("run_id", string()), ("data", schema("Event"))],
                &[],
            ),
        ),
        (
            "WsEnd",
            variant("type", "end", &[("run_id", string())], &[]),
        ),
    ];
    entries
        .into_iter()
        .map(|(name, schema)| (name.to_owned(), schema))
        .collect()
}
