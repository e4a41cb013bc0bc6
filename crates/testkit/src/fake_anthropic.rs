//! Anthropic Messages stream bodies in the real wire format (`event:` + `data:` lines, as in the
//! captured examples of Anthropic's streaming documentation), for a fake provider server to
//! send: text, thinking with a signature, tool use with its arguments in many pieces, parallel
//! tool use, a web search answer with citations, an error mid-stream and a stream cut short.
//!
//! Each body's model, ids and token counts are the constants here, so tests can state what a
//! parser must make of it.

use serde_json::{Value, json};

/// The message id every body uses.
pub const MESSAGE_ID: &str = "msg_01XFDUDYJgAACzvnptvVoYEL";
/// The model every body names.
pub const MODEL: &str = "claude-sonnet-4-5-20250929";
/// The prompt tokens `message_start` reports (before the cache's).
pub const INPUT_TOKENS: u64 = 472;
/// The cache reads `message_start` reports in [`tool_use`].
pub const CACHE_READ_TOKENS: u64 = 1024;
/// The output tokens the last `message_delta` reports.
pub const OUTPUT_TOKENS: u64 = 89;
/// The thinking block's signature in [`thinking`], sent in two `signature_delta`s.
pub const SIGNATURE: &str = "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgwYvNrTHnVN0ZaLTWQ=";
/// The id of the (first) tool call in [`tool_use`] and [`parallel_tool_use`].
pub const TOOL_USE_ID: &str = "toolu_01T1x1fJ34qAmk2tNTrN7Up6";
/// The id of the second call in [`parallel_tool_use`].
pub const SECOND_TOOL_USE_ID: &str = "toolu_01CqvRJYDA8v4YUrALpWQ6FJ";
/// The arguments of the call in [`tool_use`], as the model writes them.
pub const TOOL_ARGS: &str =
    r#"{"path": "/hello.txt", "content": "Hello, world! \u00e9\u00e8 \"quoted\""}"#;

/// A plain answer, `"Hello!"` in two deltas, with a `ping` as the real API sends one.
pub fn text() -> String {
    let mut body = start(json!({"input_tokens": INPUT_TOKENS, "output_tokens": 1}));
    body += &block_start(0, json!({"type": "text", "text": ""}));
    body += &frame("ping", json!({"type": "ping"}));
    body += &text_delta(0, "Hello");
    body += &text_delta(0, "!");
    body += &block_stop(0);
    body += &stop("end_turn");
    body
}

/// Thinking (`"Let me think."`, signed by [`SIGNATURE`]) then the answer `"4"`.
pub fn thinking() -> String {
    let mut body = start(json!({"input_tokens": INPUT_TOKENS, "output_tokens": 1}));
    body += &block_start(
        0,
        json!({"type": "thinking", "thinking": "", "signature": ""}),
    );
    body += &delta(0, json!({"type": "thinking_delta", "thinking": "Let me"}));
    body += &delta(0, json!({"type": "thinking_delta", "thinking": " think."}));
    let (head, tail) = SIGNATURE.split_at(20);
    body += &delta(0, json!({"type": "signature_delta", "signature": head}));
    body += &delta(0, json!({"type": "signature_delta", "signature": tail}));
    body += &block_stop(0);
    body += &block_start(1, json!({"type": "text", "text": ""}));
    body += &text_delta(1, "4");
    body += &block_stop(1);
    body += &stop("end_turn");
    body
}

/// Text (`"Okay."`) then a `write_file` call whose [`TOOL_ARGS`] arrive in pieces of
/// `piece_len` bytes (at least 1; cut on character boundaries), with cache reads in the usage.
pub fn tool_use(piece_len: usize) -> String {
    let mut body = start(json!({
        "input_tokens": INPUT_TOKENS,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": CACHE_READ_TOKENS,
        "output_tokens": 2
    }));
    body += &block_start(0, json!({"type": "text", "text": ""}));
    body += &text_delta(0, "Okay.");
    body += &block_stop(0);
    body += &tool_block(1, TOOL_USE_ID, "write_file", TOOL_ARGS, piece_len);
    body += &stop("tool_use");
    body
}

/// Two calls in one answer: `read_file` `{"path": "a.txt"}` ([`TOOL_USE_ID`]) and
/// `list_files` `{"dir": "/"}` ([`SECOND_TOOL_USE_ID`]), one block after the other as
/// Anthropic sends them.
pub fn parallel_tool_use() -> String {
    let mut body = start(json!({"input_tokens": INPUT_TOKENS, "output_tokens": 1}));
    body += &tool_block(0, TOOL_USE_ID, "read_file", r#"{"path": "a.txt"}"#, 5);
    body += &tool_block(1, SECOND_TOOL_USE_ID, "list_files", r#"{"dir": "/"}"#, 4);
    body += &stop("tool_use");
    body
}

/// The first result of [`web_search`]: its URL and title.
pub const SEARCH_RESULT: (&str, &str) = (
    "https://html.spec.whatwg.org/multipage/server-sent-events.html",
    "HTML Standard: Server-sent events",
);
/// The second result of [`web_search`], which the answer does not cite.
pub const OTHER_RESULT: (&str, &str) = (
    "https://developer.mozilla.org/en-US/docs/Web/API/Server-sent_events",
    "Server-sent events - Web APIs | MDN",
);

/// A web search answer as the web search tool streams it: the `server_tool_use` block with its
/// query in `input_json_delta`s, the `web_search_tool_result` block whole (two results), then
/// text whose citations name [`SEARCH_RESULT`] (twice) with their cited text and encrypted
/// index, and a last text block without citations.
pub fn web_search() -> String {
    let tool_id = "srvtoolu_01WYG3ziw53XMcoyKL4XcZmE";
    let mut body = start(json!({"input_tokens": INPUT_TOKENS, "output_tokens": 3}));
    body += &block_start(
        0,
        json!({"type": "server_tool_use", "id": tool_id, "name": "web_search", "input": {}}),
    );
    body += &delta(
        0,
        json!({"type": "input_json_delta", "partial_json": r#"{"query": "#}),
    );
    body += &delta(
        0,
        json!({"type": "input_json_delta", "partial_json": r#""server-sent events format"}"#}),
    );
    body += &block_stop(0);
    let result = |(url, title): (&str, &str), content: &str| {
        json!({"type": "web_search_result", "url": url, "title": title,
               "encrypted_content": content, "page_age": "2 days ago"})
    };
    body += &block_start(
        1,
        json!({"type": "web_search_tool_result", "tool_use_id": tool_id, "content": [
            result(SEARCH_RESULT, "EqgfCioIARgBIiQ3YTAwMjY1Mi1mZjM5LTQ1NGUtODgxNC1kNjNjNTk1ZWI3Y"),
            result(OTHER_RESULT, "EtEBCioIARgBIiQ3YTAwMjY1Mi1mZjM5LTQ1NGUtODgxNC1kNjNjNTk1ZWI3Y"),
        ]}),
    );
    body += &block_stop(1);
    let (url, title) = SEARCH_RESULT;
    let citation = |cited: &str| {
        json!({"type": "citations_delta", "citation": {
            "type": "web_search_result_location", "cited_text": cited, "url": url,
            "title": title, "encrypted_index": "Eo8BCioIAhgBIiQyYjQ0OWJmZi1lNm"
        }})
    };
    body += &block_start(2, json!({"type": "text", "text": "", "citations": []}));
    body += &delta(
        2,
        citation("Each message is separated by a pair of newlines."),
    );
    body += &text_delta(2, "Events are separated by a blank line");
    body += &delta(2, citation("Lines starting with a colon are comments."));
    body += &text_delta(2, ", and a line starting with a colon is a comment.");
    body += &block_stop(2);
    body += &block_start(3, json!({"type": "text", "text": ""}));
    body += &text_delta(3, " Both from the standard.");
    body += &block_stop(3);
    body += &stop("end_turn");
    body
}

/// Some text (`"Hel"`), then an `overloaded_error` event, as the API sends when it is overloaded
/// mid-answer.
pub fn error_mid_stream() -> String {
    let mut body = start(json!({"input_tokens": INPUT_TOKENS, "output_tokens": 1}));
    body += &block_start(0, json!({"type": "text", "text": ""}));
    body += &text_delta(0, "Hel");
    body += &frame(
        "error",
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
    );
    body
}

/// [`text`] cut after its first delta: no `message_stop`.
pub fn truncated() -> String {
    let mut body = start(json!({"input_tokens": INPUT_TOKENS, "output_tokens": 1}));
    body += &block_start(0, json!({"type": "text", "text": ""}));
    body += &text_delta(0, "Hello");
    body
}

/// The body of an HTTP error answer, e.g. `("overloaded_error", "Overloaded")` with status 529.
pub fn error_body(kind: &str, message: &str) -> String {
    json!({"type": "error", "error": {"type": kind, "message": message}}).to_string()
}

/// One SSE frame: `event: <name>\ndata: <json>\n\n`.
pub fn frame(event: &str, data: Value) -> String {
    format!("event: {event}\ndata: {data}\n\n")
}

fn start(usage: Value) -> String {
    frame(
        "message_start",
        json!({"type": "message_start", "message": {
            "id": MESSAGE_ID, "type": "message", "role": "assistant", "content": [],
            "model": MODEL, "stop_reason": null, "stop_sequence": null, "usage": usage
        }}),
    )
}

fn block_start(index: u64, content_block: Value) -> String {
    frame(
        "content_block_start",
        json!({"type": "content_block_start", "index": index, "content_block": content_block}),
    )
}

fn delta(index: u64, delta: Value) -> String {
    frame(
        "content_block_delta",
        json!({"type": "content_block_delta", "index": index, "delta": delta}),
    )
}

fn text_delta(index: u64, text: &str) -> String {
    delta(index, json!({"type": "text_delta", "text": text}))
}

fn block_stop(index: u64) -> String {
    frame(
        "content_block_stop",
        json!({"type": "content_block_stop", "index": index}),
    )
}

fn tool_block(index: u64, id: &str, name: &str, args: &str, piece_len: usize) -> String {
    let mut body = block_start(
        index,
        json!({"type": "tool_use", "id": id, "name": name, "input": {}}),
    );
    // The API opens every tool block with an empty piece.
    body += &delta(
        index,
        json!({"type": "input_json_delta", "partial_json": ""}),
    );
    let mut rest = args;
    while !rest.is_empty() {
        let mut cut = piece_len.clamp(1, rest.len());
        while !rest.is_char_boundary(cut) {
            cut += 1;
        }
        let (piece, tail) = rest.split_at(cut);
        body += &delta(
            index,
            json!({"type": "input_json_delta", "partial_json": piece}),
        );
        rest = tail;
    }
    body += &block_stop(index);
    body
}

fn stop(stop_reason: &str) -> String {
    let mut body = frame(
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": null},
               "usage": {"output_tokens": OUTPUT_TOKENS}}),
    );
    body += &frame("message_stop", json!({"type": "message_stop"}));
    body
}
