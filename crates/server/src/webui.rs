//! The web UI: `GET /` is its page and `GET /ui/{file}` its scripts and stylesheet, all built
//! into the binary from `webui/` (plain ES modules, no build step: what is in the repository is
//! what the browser runs), so serving it needs nothing beside the binary. The page speaks the
//! native API like any client; with keys configured it asks for one, so the page itself is
//! public, like `/docs`.
//!
//! Every answer carries a Content-Security-Policy that lets the page load only its own scripts
//! and styles and talk only to this server (images may come from anywhere, as a `file` part's
//! URL may point anywhere), so nothing a model writes can run as script.

use axum::extract::Path;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::error::ApiError;

/// The UI's files: name, content type, content.
const ASSETS: &[(&str, &str, &str)] = &[
    (
        "app.js",
        "text/javascript; charset=utf-8",
        include_str!("../webui/app.js"),
    ),
    (
        "accumulator.js",
        "text/javascript; charset=utf-8",
        include_str!("../webui/accumulator.js"),
    ),
    (
        "api.js",
        "text/javascript; charset=utf-8",
        include_str!("../webui/api.js"),
    ),
    (
        "dom.js",
        "text/javascript; charset=utf-8",
        include_str!("../webui/dom.js"),
    ),
    (
        "inbox.js",
        "text/javascript; charset=utf-8",
        include_str!("../webui/inbox.js"),
    ),
    (
        "markdown.js",
        "text/javascript; charset=utf-8",
        include_str!("../webui/markdown.js"),
    ),
    (
        "render.js",
        "text/javascript; charset=utf-8",
        include_str!("../webui/render.js"),
    ),
    (
        "subrun.js",
        "text/javascript; charset=utf-8",
        include_str!("../webui/subrun.js"),
    ),
    (
        "state.js",
        "text/javascript; charset=utf-8",
        include_str!("../webui/state.js"),
    ),
    (
        "style.css",
        "text/css; charset=utf-8",
        include_str!("../webui/style.css"),
    ),
    (
        "timeline.js",
        "text/javascript; charset=utf-8",
        include_str!("../webui/timeline.js"),
    ),
    (
        "timeline.css",
        "text/css; charset=utf-8",
        include_str!("../webui/timeline.css"),
    ),
];

const PAGE: &str = include_str!("../webui/index.html");

const POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
                      connect-src 'self'; img-src * data: blob:; base-uri 'none'; \
                      form-action 'self'; frame-ancestors 'none'";

/// `GET /`.
pub(crate) async fn page() -> Response {
    asset("text/html; charset=utf-8", PAGE)
}

/// `GET /ui/{file}`.
pub(crate) async fn file(Path(name): Path<String>) -> Result<Response, ApiError> {
    ASSETS
        .iter()
        .find(|(file, _, _)| *file == name)
        .map(|(_, content_type, content)| asset(content_type, content))
        .ok_or_else(|| {
            ApiError::new(
                StatusCode::NOT_FOUND,
                "not_found",
                format!("no file '{name}' in the web UI"),
            )
        })
}

fn asset(content_type: &'static str, content: &'static str) -> Response {
    let mut response = content.into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    // Revalidated on every load: a new binary's UI is seen at once (the files are small).
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(POLICY),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    response
}
