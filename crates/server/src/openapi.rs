//! `GET /openapi.json`: the OpenAPI 3.1 document of every route the server serves (native API,
//! WebSocket upgrade, dialect endpoints, health and docs), with request and response schemas and
//! the error shape. Public, like `/docs`: it says what the API is, not what is in it.
//!
//! Written here rather than derived: the wire types live in the pure crates (core, dialects),
//! which depend on nothing but serde, and the handlers build their JSON by hand, so a derive
//! would restate the same schemas in attributes. `tests/openapi.rs` keeps the document honest:
//! it parses as OpenAPI 3.1, lists every route the router serves, and real answers validate
//! against the schemas it gives for them.

use std::sync::LazyLock;

use axum::http::header;
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};

mod schemas;

/// The document, built once.
pub(crate) static DOCUMENT: LazyLock<Value> = LazyLock::new(document);

/// Its JSON text, served as is.
static TEXT: LazyLock<String> = LazyLock::new(|| DOCUMENT.to_string());

/// `GET /openapi.json`.
pub(crate) async fn serve() -> Response {
    ([(header::CONTENT_TYPE, "application/json")], TEXT.as_str()).into_response()
}

fn schema(name: &str) -> Value {
    json!({"$ref": format!("#/components/schemas/{name}")})
}

fn json_body(schema: Value) -> Value {
    json!({"required": true, "content": {"application/json": {"schema": schema}}})
}

fn json_answer(description: &str, schema: Value) -> Value {
    json!({"description": description, "content": {"application/json": {"schema": schema}}})
}

fn sse_answer(description: &str) -> Value {
    json!({"description": description, "content": {"text/event-stream": {"schema": {"type": "string"}}}})
}

fn path_param(name: &str, description: &str) -> Value {
    json!({"name": name, "in": "path", "required": true, "description": description, "schema": {"type": "string"}})
}

/// The error answers an operation may give, by status.
fn errors(statuses: &[u16]) -> Map<String, Value> {
    statuses
        .iter()
        .map(|status| {
            let answer = json!({"$ref": format!("#/components/responses/Error{status}")});
            (status.to_string(), answer)
        })
        .collect()
}

/// The `If-Match` header of a change of a session's state.
fn if_match_param() -> Value {
    json!({"name": "If-Match", "in": "header", "required": false,
           "description": "Change the state only if it is still this version (an `ETag` it gave).",
           "schema": {"type": "string"}})
}

/// An operation: summary, description, and its answers (errors added by status).
fn operation(summary: &str, description: &str, answers: Value, statuses: &[u16]) -> Value {
    let mut responses = match answers {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    responses.extend(errors(statuses));
    json!({"summary": summary, "description": description, "responses": responses})
}

/// `operation` with `extra` keys (parameters, requestBody, tags, security).
fn with(mut operation: Value, extra: Value) -> Value {
    if let (Some(operation), Value::Object(extra)) = (operation.as_object_mut(), extra) {
        operation.extend(extra);
    }
    operation
}

/// A route open to anyone, keys or not.
fn public(operation: Value) -> Value {
    with(operation, json!({"security": []}))
}

fn native_paths() -> Map<String, Value> {
    let run_id = path_param("id", "The run's id.");
    let run_answer = |description: &str| {
        json!({"202": json_answer(description, json!({
            "type": "object", "required": ["run"], "properties": {"run": schema("Run")}
        }))})
    };
    let tag = json!({"tags": ["native"]});
    let paths = json!({
        "/healthz": {"get": public(with(operation(
            "Health", "Answers while the server is up.",
            json!({"200": json_answer("Up.", json!({"type": "object", "required": ["status"], "properties": {"status": {"const": "ok"}}}))}),
            &[]), json!({"tags": ["server"]})))},
        "/metrics": {"get": with(operation(
            "Metrics", "Prometheus text exposition: runs started and ended by agent and status, runs in \
             progress, tokens, time to the first delta, run duration, events, open streams and request \
             durations. Needs a key when keys are configured (the numbers cover every key's runs).",
            json!({"200": {"description": "The metrics.", "content": {"application/openmetrics-text": {"schema": {"type": "string"}}}}}),
            &[401]), json!({"tags": ["server"]}))},
        "/openapi.json": {"get": public(with(operation(
            "This document", "The OpenAPI 3.1 document of every route.",
            json!({"200": json_answer("The document.", json!({"type": "object"}))}),
            &[]), json!({"tags": ["server"]})))},
        "/docs": {"get": public(with(operation(
            "API docs", "This document as a self-contained HTML page (no scripts, nothing fetched).",
            json!({"200": {"description": "The page.", "content": {"text/html": {"schema": {"type": "string"}}}}}),
            &[]), json!({"tags": ["server"]})))},
        "/": {"get": public(with(operation(
            "Web UI", "The chat page: pick an agent, talk, watch parts stream, answer approvals, stop runs, \
             reopen sessions. It speaks this API (with a key, when keys are configured, kept in the browser).",
            json!({"200": {"description": "The page.", "content": {"text/html": {"schema": {"type": "string"}}}}}),
            &[]), json!({"tags": ["ui"]})))},
        "/ui/{file}": {"get": public(with(with(operation(
            "Web UI files", "The page's scripts (ES modules) and stylesheet, built into the binary.",
            json!({"200": {"description": "The file.", "content": {
                "text/javascript": {"schema": {"type": "string"}},
                "text/css": {"schema": {"type": "string"}}
            }}}),
            &[404]), json!({"tags": ["ui"]})), json!({"parameters": [path_param("file", "The file's name, e.g. `app.js`.")]})))},
        "/v1/agents": {"get": with(operation(
            "List agents", "The agents this server runs.",
            json!({"200": json_answer("The agents.", schema("AgentList"))}),
            &[401]), tag.clone())},
        "/v1/agents/{name}": {"get": with(with(operation(
            "Agent card", "An agent's description, brain, tools and communication schema.",
            json!({"200": json_answer("The card.", schema("AgentCard"))}),
            &[401, 404]), tag.clone()), json!({"parameters": [path_param("name", "The agent's name.")]}))},
        "/v1/runs": {"post": with(with(operation(
            "Start a run",
            "Starts a run of the agent on the input, in the session named (created if new) or a fresh one. \
             With `Accept: text/event-stream` the answer is the run's native SSE stream (`id:` the event's \
             `seq`, `event:` its name, `data:` an `Event`); otherwise the server waits until the run is \
             settled (awaiting the client, or ended) and answers the run as JSON. With `background: true` \
             it answers `202` at once with the run (and `Location: /v1/runs/{id}`), which goes on with \
             nobody connected.",
            json!({"200": {"description": "The run, streamed or settled.", "content": {
                "application/json": {"schema": schema("RunResult")},
                "text/event-stream": {"schema": {"type": "string", "description": "native SSE; every `data:` is an `Event`"}}
            }}, "202": json_answer("`background`: the run, started.", json!({
                "type": "object", "required": ["run"], "properties": {"run": schema("Run")}
            }))}),
            &[400, 401, 403, 404, 408, 409, 413, 415, 422]), tag.clone()), json!({"requestBody": json_body(schema("CreateRun"))})),
            "get": with(with(operation(
            "List runs",
            "The caller's runs (with keys, the key's own), newest first by creation, a page at a time, \
             each as `GET /v1/runs/{id}` shows it without output, with when it was created. `next`, when \
             not null, is the `cursor` of the next page; a run existing when the first page was read \
             comes exactly once across the pages, whatever is created meanwhile. A cursor the server \
             did not give (malformed, negative, or naming no run of the caller's created at its time) \
             is 400 `invalid_cursor`.",
            json!({"200": json_answer("A page of runs.", schema("RunList"))}),
            &[400, 401]), tag.clone()), json!({"parameters": [
                {"name": "session_id", "in": "query", "required": false, "description": "Only this session's runs.", "schema": {"type": "string"}},
                {"name": "agent", "in": "query", "required": false, "description": "Only this agent's runs.", "schema": {"type": "string"}},
                {"name": "status", "in": "query", "required": false, "description": "Only runs in these statuses, comma-separated (`in_progress,awaiting`).", "schema": {"type": "string"}},
                {"name": "limit", "in": "query", "required": false, "description": "Runs in the page, 1 to 100 (default 20).", "schema": {"type": "integer", "minimum": 1, "maximum": 100}},
                {"name": "cursor", "in": "query", "required": false, "description": "The `next` of the page before.", "schema": {"type": "string"}}
            ]}))},
        "/v1/runs/{id}": {"get": with(with(operation(
            "Get a run", "The run (status, schema state, usage, error) and its output messages.",
            json!({"200": json_answer("The run.", schema("RunResult"))}),
            &[401, 404]), tag.clone()), json!({"parameters": [run_id.clone()]}))},
        "/v1/runs/{id}/events": {"get": with(with(operation(
            "Stream a run's events",
            "The run's events after a point, replayed and then followed live (no gap, no duplicate), as \
             native SSE, until the run is settled. Heartbeats repeat the last `seq` and carry no `id:`.",
            json!({"200": sse_answer("Native SSE; every `data:` is an `Event`.")}),
            &[400, 401, 404]), tag.clone()), json!({"parameters": [
                run_id.clone(),
                {"name": "after", "in": "query", "required": false, "description": "Resume after this event's `seq`.", "schema": {"type": "integer", "minimum": 0}},
                {"name": "Last-Event-ID", "in": "header", "required": false, "description": "What a reconnecting EventSource sends; wins over `after`.", "schema": {"type": "string"}}
            ]}))},
        "/v1/runs/{id}/input": {"post": with(with(operation(
            "Answer a run",
            "Function output, an approval response or the next user message, checked against what the \
             run waits for and the agent's communication schema; a refusal changes nothing.",
            run_answer("Accepted; the run goes on."),
            &[400, 401, 403, 404, 408, 409, 413, 415]), tag.clone()), json!({"parameters": [run_id.clone()], "requestBody": json_body(schema("Message"))}))},
        "/v1/runs/{id}/cancel": {"post": with(with(operation(
            "Cancel a run", "Cancels the run, here or on the node that executes it. `cancel` is a message \
             of the agent's communication schema: where the schema does not allow it in the run's state \
             (the `chat` built-in never does; the default schema does while the agent works or waits), \
             the answer is 409 `input_refused` naming the state, and the run goes on.",
            run_answer("Asked; the run ends `canceled`."),
            &[401, 404, 409]), tag.clone()), json!({"parameters": [run_id]}))},
        "/v1/sessions": {"get": with(with(operation(
            "List sessions",
            "The caller's sessions (with keys, the key's own), most recently updated first, a page at a \
             time: each with a title (its first message's text), a preview (its last message's), its \
             agent and its latest run. `next`, when not null, is the `before` of the next page; a \
             cursor the server did not give (malformed, or naming no session of the caller's) is 400 \
             `invalid_cursor`.",
            json!({"200": json_answer("A page of sessions.", schema("SessionList"))}),
            &[400, 401]), tag.clone()), json!({"parameters": [
                {"name": "limit", "in": "query", "required": false, "description": "Sessions in the page, 1 to 100 (default 20).", "schema": {"type": "integer", "minimum": 1, "maximum": 100}},
                {"name": "before", "in": "query", "required": false, "description": "The `next` of the page before.", "schema": {"type": "string"}}
            ]}))},
        "/v1/sessions/{id}": {
            "get": with(with(operation(
                "Get a session", "The session's messages, in order, and its latest run (follow its events \
                 when it has not ended: its output joins the messages when it ends).",
                json!({"200": json_answer("The session.", schema("Session"))}),
                &[401, 404]), tag.clone()), json!({"parameters": [path_param("id", "The session's id.")]})),
            "delete": with(with(operation(
                "Delete a session", "Deletes the session with its messages, runs, inbox and shared state; \
                 a run still going goes on.",
                json!({"204": {"description": "Deleted."}}),
                &[401, 404]), tag.clone()), json!({"parameters": [path_param("id", "The session's id.")]}))
        },
        "/v1/sessions/{id}/fork": {"post": with(with(operation(
            "Fork a session",
            "A new session of the caller's holding a copy of this one's messages before the message \
             `before` (all of them without it): the conversation taken up again from there (an edited \
             question, an answer asked again) while this one stays as it is. Start the next turn in \
             it with `POST /v1/runs` and its `session_id`. Only stored messages are copied: a run's \
             output joins its session when the run ends.",
            json!({"201": json_answer("The new session.", schema("Session"))}),
            &[400, 401, 403, 404, 408, 413, 415]), tag.clone()), json!({
                "parameters": [path_param("id", "The session to copy.")],
                "requestBody": json_body(schema("ForkSession"))
            }))},
        "/v1/sessions/{id}/state": {
            "get": with(with(operation(
                "Read a session's shared state",
                "The session's shared state: the JSON document its clients show beside the \
                 conversation and its runs change (`state_snapshot` / `state_delta` events; the \
                 `update_state` tool), as the store holds it; `null` when it has none. (Not the \
                 `state` of `GET /v1/sessions/{id}`, which is where the conversation stands in \
                 its agent's communication schema.) The `ETag` is its version.",
                json!({"200": with(json_answer("The state.", json!({})), json!({"headers": {"ETag": {
                    "description": "The state's version, for `If-Match`.", "schema": {"type": "string"}}}}))}),
                &[401, 404, 409]), tag.clone()), json!({"parameters": [path_param("id", "The session's id.")]})),
            "put": with(with(operation(
                "Replace a session's shared state",
                "Sets the whole state (the session is made if new; `null` clears it). Checked \
                 against the state schema of the agent of the session's latest run; refused while \
                 a run of the session is open (it would work on a state that changed under it); \
                 with `If-Match`, only over that version. Runs after it start from it and show it. \
                 Held to the server's bounds: at most 100 levels deep (`422 state_too_deep`) and \
                 `max_state_bytes` as JSON (`413 state_too_large`). It replaces a stored state \
                 that cannot be read (`409 state_unreadable` on the other routes).",
                json!({"200": json_answer("The state as set; the `ETag` is its new version.", json!({}))}),
                &[400, 401, 404, 408, 409, 412, 413, 415, 422]), tag.clone()), json!({
                    "parameters": [path_param("id", "The session's id."), if_match_param()],
                    "requestBody": json_body(json!({}))
                })),
            "patch": with(with(operation(
                "Change a session's shared state",
                "Applies an RFC 6902 JSON Patch (`Content-Type: application/json-patch+json`) to \
                 the state, all or nothing: an operation that does not apply is `422 patch_failed` \
                 naming it, a result the state schema refuses `422 invalid_state` naming each \
                 problem. Each operation is held to the server's bounds before it takes effect \
                 (`422 state_too_deep`, `413 state_too_large`). Refused while a run of the \
                 session is open; with `If-Match`, only over that version.",
                json!({"200": json_answer("The state as patched; the `ETag` is its new version.", json!({}))}),
                &[400, 401, 404, 408, 409, 412, 413, 415, 422]), tag.clone()), json!({
                    "parameters": [path_param("id", "The session's id."), if_match_param()],
                    "requestBody": {"required": true, "content": {"application/json-patch+json": {
                        "schema": schema("JsonPatch")}}}
                }))
        },
        "/v1/sessions/{id}/messages": {
            "post": with(with(operation(
                "Send a message into a session",
                "Writes the user's message down in the session's inbox (the session is made if new) and \
                 acts on it: a free session starts a run of it at once; a busy one (a run going on or \
                 waiting) does what `mode` says: `queue` (the default, or the agent's `input_mode`) runs \
                 it after the messages before it; `steer` gives it to the run going on at its next step \
                 boundary, as a user message the model sees; `interrupt` cancels that run (keeping what \
                 it made) and `rollback` cancels it and takes it out of the history, then it runs; \
                 `reject` answers 409. The run reports each outcome as an `input` event. The same \
                 `client_message_id` again is answered with the message as it stands.",
                json!({"202": json_answer("Where the message stands now.", schema("InboxMessage"))}),
                &[400, 401, 404, 408, 409, 413, 415]), tag.clone()), json!({
                    "parameters": [path_param("id", "The session's id.")],
                    "requestBody": json_body(schema("PostMessage"))
                })),
            "get": with(with(operation(
                "List a session's inbox",
                "The messages sent into the session, in the order they came, with their outcomes; \
                 `?after=<position>&limit=` pages on (`next_after`).",
                json!({"200": json_answer("The messages.", json!({"type": "object", "properties": {
                    "messages": {"type": "array", "items": schema("InboxMessage")},
                    "next_after": {"type": ["integer", "null"]}
                }}))}),
                &[400, 401, 404]), tag.clone()), json!({"parameters": [path_param("id", "The session's id.")]}))
        },
        "/v1/sessions/{id}/messages/{client_message_id}": {"get": with(with(operation(
            "Read a message's outcome",
            "One message of the session's inbox, as it stands.",
            json!({"200": json_answer("The message.", schema("InboxMessage"))}),
            &[401, 404]), tag.clone()), json!({"parameters": [
                path_param("id", "The session's id."),
                path_param("client_message_id", "The client's name for the message.")
            ]}))},
        "/v1/webhooks": {
            "post": with(with(operation(
                "Subscribe a webhook",
                "Deliveries of run status changes (`run.<status>`; every one without `events`) of the \
                 caller's runs, or of `run_id` only, to `url`: queued in the store with the change, \
                 signed as Standard Webhooks (`webhook-id`, `webhook-timestamp`, `webhook-signature`) \
                 and retried with backoff until a 2xx. The `secret` is shown once, here. A URL over \
                 2048 bytes is 400 `url_too_long`; one reaching an address that is not public, \
                 400 `invalid_url`; past `[webhooks] max_per_key` webhooks of every run (or 10 of \
                 one run), 409 `too_many_webhooks`.",
                json!({"201": json_answer("The webhook, with its secret.", schema("Webhook"))}),
                &[400, 401, 404, 408, 409, 413, 415]), tag.clone()), json!({
                    "requestBody": json_body(schema("CreateWebhook"))
                })),
            "get": with(with(operation(
                "List webhooks",
                "The caller's webhooks (A2A push configs included), oldest first, `limit` (1-100, \
                 100 by default) a page; `next`, when not null, is the `cursor` of the next page. \
                 A cursor the server did not give is 400 `invalid_cursor`.",
                json!({"200": json_answer("The webhooks.", json!({"type": "object", "properties": {
                    "data": {"type": "array", "items": schema("Webhook")},
                    "next": {"type": ["string", "null"]}
                }}))}),
                &[400, 401]), tag.clone()), json!({"parameters": [
                    {"name": "limit", "in": "query", "required": false, "description": "Webhooks in the page, 1 to 100.", "schema": {"type": "integer", "minimum": 1, "maximum": 100}},
                    {"name": "cursor", "in": "query", "required": false, "description": "The `next` of the page before.", "schema": {"type": "string"}}
                ]}))
        },
        "/v1/webhooks/{id}": {
            "get": with(with(operation(
                "Get a webhook", "One of the caller's webhooks.",
                json!({"200": json_answer("The webhook.", schema("Webhook"))}),
                &[401, 404]), tag.clone()), json!({"parameters": [path_param("id", "The webhook's id.")]})),
            "delete": with(with(operation(
                "Delete a webhook", "Deletes it with its queued deliveries.",
                json!({"204": {"description": "Deleted."}}),
                &[401, 404]), tag.clone()), json!({"parameters": [path_param("id", "The webhook's id.")]}))
        },
        "/v1/ws": {"get": with(operation(
            "WebSocket transport",
            "Upgrades to the native protocol over a WebSocket. The client sends `WsRequest` frames \
             (JSON text), the server answers each with a `WsAnswer` and sends `WsEvent` frames for the \
             runs the connection follows, then `WsEnd`. A key may come as `Authorization: Bearer <key>` \
             or, from a browser, as the subprotocol entry `agentwire.bearer.<key>` offered beside \
             `agentwire` (the server selects `agentwire`).",
            json!({"101": {"description": "Switching to the WebSocket protocol; frames as described."}}),
            &[401, 426]), json!({"tags": ["native"], "parameters": [
                {"name": "Sec-WebSocket-Protocol", "in": "header", "required": false,
                 "description": "`agentwire`, and for browsers `agentwire.bearer.<key>`.", "schema": {"type": "string"}}
            ]}))},
    });
    match paths {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

/// A dialect endpoint: the method, path (at the root; also under `/agents/{name}`), summary,
/// and the content types of its answer.
struct DialectRoute {
    method: &'static str,
    path: &'static str,
    tag: &'static str,
    summary: &'static str,
    body: bool,
    /// Query parameters: name, description, JSON Schema type.
    query: &'static [(&'static str, &'static str, &'static str)],
    answers: fn() -> Value,
}

const DIALECT_ROUTES: &[DialectRoute] = &[
    DialectRoute {
        method: "post",
        path: "/chat",
        tag: "agentx",
        summary: "AgentX chat: message packets over SSE",
        body: true,
        query: &[],
        answers: || json!({"200": sse_answer("Partial messages sharing one id, run events beside them.")}),
    },
    DialectRoute {
        method: "post",
        path: "/api/chat",
        tag: "ai-sdk",
        summary: "AI SDK chat (`DefaultChatTransport`): the UI message stream v1",
        body: true,
        query: &[],
        answers: || json!({"200": sse_answer("The UI message stream.")}),
    },
    DialectRoute {
        method: "get",
        path: "/api/chat/{id}/stream",
        tag: "ai-sdk",
        summary: "AI SDK resume: the chat's current stream",
        body: false,
        query: &[],
        answers: || json!({"200": sse_answer("The UI message stream, from the start."), "204": {"description": "Nothing is streaming for the chat."}}),
    },
    DialectRoute {
        method: "post",
        path: "/process",
        tag: "agentscope",
        summary: "AgentScope Runtime Agent API (`AgentRequest`)",
        body: true,
        query: &[],
        answers: || json!({"200": sse_answer("`response`/`message`/`content` objects with a gapless `sequence_number`.")}),
    },
    DialectRoute {
        method: "post",
        path: "/ag-ui",
        tag: "ag-ui",
        summary: "AG-UI 1.0 (`RunAgentInput`)",
        body: true,
        query: &[],
        answers: || json!({"200": sse_answer("AG-UI events, `data: {json}` frames.")}),
    },
    DialectRoute {
        method: "post",
        path: "/viber/api/chat",
        tag: "viber",
        summary: "Viber chat (`useXChat`): camelCase message packets and the chat's status over SSE",
        body: true,
        query: &[],
        answers: || json!({"200": sse_answer("`XMessage` packets sharing one id; `event: status` frames (`idle`, `streaming`, `awaiting-approval`) naming the space and the run.")}),
    },
    DialectRoute {
        method: "get",
        path: "/viber/api/chat/{id}/stream",
        tag: "viber",
        summary: "Viber resume: the space's run going on, from its start or after `Last-Event-ID`",
        body: false,
        query: &[],
        answers: || json!({"200": sse_answer("The space's stream."), "204": {"description": "Nothing is streaming in the space."}}),
    },
    DialectRoute {
        method: "post",
        path: "/viber/api/chat/{id}/cancel",
        tag: "viber",
        summary: "Viber cancel: cancels the space's run that goes on or waits",
        body: false,
        query: &[],
        answers: || {
            json!({"202": json_answer("Asked: the run ends `canceled`; its stream says so.", json!({
                "type": "object", "required": ["spaceId", "runId"],
                "properties": {"spaceId": {"type": "string"}, "runId": {"type": "string"}}
            }))})
        },
    },
    DialectRoute {
        method: "get",
        path: "/.well-known/agent-card.json",
        tag: "a2a",
        summary: "A2A agent card",
        body: false,
        query: &[],
        answers: || json!({"200": json_answer("The A2A 1.0 agent card.", json!({"type": "object"}))}),
    },
    DialectRoute {
        method: "post",
        path: "/a2a",
        tag: "a2a",
        summary: "A2A 1.0 JSON-RPC (`SendMessage`, `SendStreamingMessage`)",
        body: true,
        query: &[],
        answers: || {
            json!({"200": {"description": "A JSON-RPC answer (failures too), or for `SendStreamingMessage` its SSE stream.", "content": {
                "application/json": {"schema": {"type": "object", "required": ["jsonrpc"], "properties": {"jsonrpc": {"const": "2.0"}}}},
                "text/event-stream": {"schema": {"type": "string"}}
            }}})
        },
    },
    DialectRoute {
        method: "post",
        path: "/v1/responses",
        tag: "openai-responses",
        summary: "OpenAI Responses API (`client.responses.create`): `model` names the agent",
        body: true,
        query: &[],
        answers: || {
            json!({"200": {"description": "The `response` object (settled; at once and `queued` for `background`), or with `stream: true` the semantic events (`response.created`, …, `response.completed`) with `sequence_number`s. Errors are OpenAI's `{\"error\": {\"message\", \"type\", \"param\", \"code\"}}`.", "content": {
                "application/json": {"schema": {"type": "object", "required": ["id", "object", "status", "output"]}},
                "text/event-stream": {"schema": {"type": "string"}}
            }}})
        },
    },
    DialectRoute {
        method: "get",
        path: "/v1/responses/{id}",
        tag: "openai-responses",
        summary: "OpenAI Responses retrieve: the response as it stands, or its events again",
        body: false,
        query: &[
            (
                "stream",
                "`true`: the response's events, from its start (or after `starting_after`) and on while it goes.",
                "boolean",
            ),
            (
                "starting_after",
                "With `stream`: leave out the events up to this `sequence_number`.",
                "integer",
            ),
        ],
        answers: || {
            json!({"200": {"description": "The `response` object, or its events.", "content": {
                "application/json": {"schema": {"type": "object", "required": ["id", "object", "status", "output"]}},
                "text/event-stream": {"schema": {"type": "string"}}
            }}})
        },
    },
    DialectRoute {
        method: "post",
        path: "/v1/responses/{id}/cancel",
        tag: "openai-responses",
        summary: "OpenAI Responses cancel: cancels the run and answers the response once it has ended",
        body: false,
        query: &[],
        answers: || json!({"200": json_answer("The `response` object (`cancelled`, or as it ended).", json!({"type": "object", "required": ["id", "object", "status", "output"]}))}),
    },
];

fn dialect_paths() -> Map<String, Value> {
    let mut paths = Map::new();
    for route in DIALECT_ROUTES {
        for under_agent in [false, true] {
            let mut parameters = Vec::new();
            let path = if under_agent {
                parameters.push(path_param(
                    "name",
                    "The agent; the root routes run the default agent.",
                ));
                format!("/agents/{{name}}{}", route.path)
            } else {
                route.path.to_owned()
            };
            if route.path.contains("{id}") {
                parameters.push(path_param(
                    "id",
                    "The chat's id (Viber: the space's; Responses: the response's).",
                ));
            }
            for (name, description, kind) in route.query {
                parameters.push(json!({"name": name, "in": "query", "required": false, "description": description, "schema": {"type": kind}}));
            }
            let description = format!(
                "The {} dialect's endpoint, for that ecosystem's own client; see ARCHITECTURE.md, \
                 \"Dialect endpoints\". Bad input is answered with the API's error.",
                route.tag
            );
            let mut op = with(
                operation(
                    route.summary,
                    &description,
                    (route.answers)(),
                    &[400, 401, 403, 404, 408, 409, 413, 415],
                ),
                json!({"tags": [route.tag], "parameters": parameters}),
            );
            if route.body {
                op = with(
                    op,
                    json!({"requestBody": json_body(json!({"type": "object", "description": format!("The {} request body.", route.tag)}))}),
                );
            }
            let entry = paths.entry(path).or_insert_with(|| json!({}));
            entry[route.method] = op;
        }
    }
    paths
}

fn document() -> Value {
    let mut paths = native_paths();
    paths.extend(dialect_paths());
    let responses: Map<String, Value> = [
        (
            400,
            "Bad input: not JSON, the wrong shape, too many messages, …",
        ),
        (401, "No valid key (`unauthorized`)."),
        (
            403,
            "A server without keys refuses a `Host` that is not its own (`forbidden_host`) and \
             pages of origins `cors_origins` does not list (`forbidden_origin`).",
        ),
        (
            404,
            "No such agent, run, session or route; also another key's run (`not_found`): a session \
             id always names a session of the caller's key.",
        ),
        (
            409,
            "Not now: the run or session is in a state that does not take this; or the \
             session's stored shared state cannot be read (`state_unreadable`: a `PUT` of the \
             state replaces it).",
        ),
        (
            408,
            "The body did not arrive within `body_timeout_seconds` (`body_timeout`).",
        ),
        (
            405,
            "A method the route does not answer (`method_not_allowed`); `Allow` lists those it \
             does. Any route.",
        ),
        (
            413,
            "The body is larger than `max_body_bytes` (`payload_too_large`), answered with \
             `Connection: close` while the rest of the body is read and dropped; or a shared \
             state would be larger than `max_state_bytes` as JSON (`state_too_large`).",
        ),
        (
            414,
            "A request target over 16 KiB (`uri_too_long`). Any route.",
        ),
        (
            431,
            "Over 100 headers or 64 KiB of them (`headers_too_large`). Any route.",
        ),
        (
            415,
            "A body not sent as `Content-Type: application/json` (a state's PATCH: \
             `application/json-patch+json`) (`unsupported_media_type`).",
        ),
        (
            412,
            "The session's state is no longer the version `If-Match` names (`state_changed`).",
        ),
        (
            422,
            "A state the agent's state schema refuses (`invalid_state`), nested deeper than 100 \
             levels (`state_too_deep`), or a JSON Patch that does not apply (`patch_failed`); \
             the message names the problem.",
        ),
        (426, "Not a WebSocket upgrade (`websocket_required`)."),
    ]
    .into_iter()
    .map(|(status, description)| {
        (
            format!("Error{status}"),
            json_answer(description, schema("Error")),
        )
    })
    .collect();
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "agentwire",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "Streaming conversations with AI agents: the native API (runs, their \
                event streams, input, cancel, sessions), its WebSocket transport, and the \
                endpoints of the dialects other ecosystems' clients speak. Every bad input is \
                answered 4xx with `{\"error\": {\"code\", \"message\"}}` and changes nothing; \
                any route may answer `405`, `414` and `431` (components `Error405`, `Error414`, \
                `Error431`).",
            "license": {"name": "MIT OR Apache-2.0", "identifier": "MIT OR Apache-2.0"}
        },
        "security": [{"bearer": []}],
        "tags": [
            {"name": "server"}, {"name": "ui"}, {"name": "native"}, {"name": "agentx"}, {"name": "ai-sdk"},
            {"name": "agentscope"}, {"name": "ag-ui"}, {"name": "a2a"}, {"name": "viber"},
            {"name": "openai-responses"}
        ],
        "paths": paths,
        "components": {
            "securitySchemes": {
                "bearer": {"type": "http", "scheme": "bearer", "description": "One of the server's `api_keys` (the scheme in any case), when it has any; without keys every route is open to requests addressed to the server by IP, `localhost` or `allowed_hosts`, from no page or its own."}
            },
            "responses": responses,
            "schemas": schemas::all(),
        }
    })
}
