//! `GET /docs`: the OpenAPI document as one self-contained HTML page — every operation with its
//! parameters, body and answers, then every schema — rendered on the server from the document
//! itself, so it cannot disagree with `/openapi.json`. No script and nothing fetched: it works
//! offline, where a Swagger UI or Redoc page would load its code from a CDN or need it
//! downloaded at build time.

use std::fmt::Write;
use std::sync::LazyLock;

use axum::response::Html;
use serde_json::Value;

use crate::openapi::DOCUMENT;

/// The page, rendered once.
static PAGE: LazyLock<String> = LazyLock::new(|| render(&DOCUMENT));

/// `GET /docs`.
pub(crate) async fn page() -> Html<&'static str> {
    Html(PAGE.as_str())
}

const STYLE: &str = "body{font:15px/1.5 system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#222}\
h2{border-bottom:1px solid #ddd;margin-top:2.5rem}section{margin:1.5rem 0;padding:.5rem 1rem;border-left:4px solid #ccc}\
.method{font:bold 13px monospace;text-transform:uppercase;padding:2px 6px;border-radius:3px;background:#eee}\
.get{background:#dbeafe}.post{background:#dcfce7}.delete{background:#fee2e2}code,pre{font-family:ui-monospace,monospace;font-size:13px}\
pre{background:#f6f8fa;padding:.5rem;overflow-x:auto}table{border-collapse:collapse}td,th{border:1px solid #ddd;padding:2px 8px;text-align:left}";

fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            _ => out.push(c),
        }
    }
    out
}

fn text<'a>(value: &'a Value, key: &str) -> &'a str {
    value.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// A schema as pretty JSON, its `$ref`s linked to the schemas below.
fn schema_html(schema: &Value) -> String {
    let pretty = serde_json::to_string_pretty(schema).unwrap_or_default();
    let mut out = String::new();
    for line in escape(&pretty).lines() {
        const REF: &str = "&quot;#/components/schemas/";
        match line.find(REF) {
            Some(at) => {
                let rest = &line[at + REF.len()..];
                let name = rest.split("&quot;").next().unwrap_or_default();
                let end = at + REF.len() + name.len() + "&quot;".len();
                let _ = writeln!(
                    out,
                    "{}<a href=\"#schema-{name}\">{}</a>{}",
                    &line[..at],
                    &line[at..end.min(line.len())],
                    &line[end.min(line.len())..]
                );
            }
            None => {
                let _ = writeln!(out, "{line}");
            }
        }
    }
    format!("<pre>{out}</pre>")
}

fn content_html(out: &mut String, content: &Value) {
    let Some(content) = content.as_object() else {
        return;
    };
    for (media_type, media) in content {
        let _ = write!(out, "<p><code>{}</code></p>", escape(media_type));
        if let Some(schema) = media.get("schema") {
            out.push_str(&schema_html(schema));
        }
    }
}

fn operation_html(out: &mut String, document: &Value, path: &str, method: &str, op: &Value) {
    let _ = write!(
        out,
        "<section id=\"{method}-{anchor}\"><h3><span class=\"method {method}\">{method}</span> <code>{path}</code> — {summary}</h3><p>{description}</p>",
        anchor = escape(path),
        path = escape(path),
        summary = escape(text(op, "summary")),
        description = escape(text(op, "description")),
    );
    if op
        .get("security")
        .and_then(Value::as_array)
        .is_some_and(Vec::is_empty)
    {
        out.push_str("<p><em>Public: no key needed.</em></p>");
    }
    let parameters = op.get("parameters").and_then(Value::as_array);
    if let Some(parameters) = parameters.filter(|parameters| !parameters.is_empty()) {
        out.push_str(
            "<table><tr><th>parameter</th><th>in</th><th>required</th><th>description</th></tr>",
        );
        for parameter in parameters {
            let _ = write!(
                out,
                "<tr><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td></tr>",
                escape(text(parameter, "name")),
                escape(text(parameter, "in")),
                parameter
                    .get("required")
                    .and_then(Value::as_bool)
                    .unwrap_or(false),
                escape(text(parameter, "description")),
            );
        }
        out.push_str("</table>");
    }
    if let Some(body) = op.get("requestBody") {
        out.push_str("<h4>Request body</h4>");
        content_html(out, &body["content"]);
    }
    out.push_str("<h4>Answers</h4>");
    if let Some(responses) = op.get("responses").and_then(Value::as_object) {
        for (status, response) in responses {
            // Error answers are shared components: show what they point at.
            let response = match response.get("$ref").and_then(Value::as_str) {
                Some(reference) => reference
                    .strip_prefix("#/components/responses/")
                    .and_then(|name| document["components"]["responses"].get(name))
                    .unwrap_or(response),
                None => response,
            };
            let _ = write!(
                out,
                "<p><b>{}</b> {}</p>",
                escape(status),
                escape(text(response, "description"))
            );
            if let Some(content) = response.get("content") {
                content_html(out, content);
            }
        }
    }
    out.push_str("</section>");
}

/// The page for `document`.
fn render(document: &Value) -> String {
    let info = &document["info"];
    let mut out = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{title} API</title><style>{STYLE}</style></head><body><h1>{title} {version}</h1><p>{description}</p><p>The machine-readable document: <a href=\"/openapi.json\">/openapi.json</a> (OpenAPI {openapi}).</p>",
        title = escape(text(info, "title")),
        version = escape(text(info, "version")),
        description = escape(text(info, "description")),
        openapi = escape(text(document, "openapi")),
    );
    out.push_str("<h2>Routes</h2>");
    if let Some(paths) = document["paths"].as_object() {
        for (path, item) in paths {
            if let Some(item) = item.as_object() {
                for (method, op) in item {
                    operation_html(&mut out, document, path, method, op);
                }
            }
        }
    }
    out.push_str("<h2>Schemas</h2>");
    if let Some(schemas) = document["components"]["schemas"].as_object() {
        for (name, schema) in schemas {
            let _ = write!(
                out,
                "<section id=\"schema-{name}\"><h3>{name}</h3>{}</section>",
                schema_html(schema),
                name = escape(name)
            );
        }
    }
    out.push_str("</body></html>");
    out
}
