//! API errors: every bad input is answered with a 4xx status and
//! `{"error": {"code", "message"}}`, where `code` is a stable snake_case name.
//!
//! The routes answer with [`ApiError`]; what the HTTP edge refuses before a route runs (sizes,
//! body type, an unknown path) is a [`RequestError`], mapped to its status and code here. What
//! axum answers by itself (a method a route does not have, a path or query its extractor cannot
//! read) comes as an empty or plain-text body, which [`json_errors`] rewrites into the same
//! shape, so a client reads every error one way, always with a code and a message.

use agentwire_core::json_bounds::BoundsError;
use agentwire_runtime::{InputError, StartError};
use agentwire_tools::address::AddressError;
use axum::Json;
use axum::extract::Request;
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::runs::{RunsError, refusal_code};

/// The longest plain-text error body carried over into a message.
const MAX_TEXT: usize = 4096;
/// The most of a client's value (an id, a name) an error message repeats.
const MAX_ECHO: usize = 128;

/// An error answer: its status, stable code and message for people. Its response carries a
/// copy of it as an extension, so a layer that reshapes errors (OpenAI's) reads it from there
/// rather than from the body.
#[derive(Clone, Debug)]
pub struct ApiError {
    /// The HTTP status.
    pub status: StatusCode,
    /// A stable snake_case code, e.g. `unknown_agent`.
    pub code: &'static str,
    /// What went wrong.
    pub message: String,
}

impl ApiError {
    /// An error with this status, code and message.
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            code,
            message: message.into(),
        }
    }

    /// 404 `not_found`: also what a caller gets for another key's runs (a session id names the
    /// caller's own session, so another key's is not there to find).
    pub fn not_found(what: &str, id: &str) -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            "not_found",
            format!("no {what} '{}'", echo(id)),
        )
    }

    /// 400 `invalid_cursor`: a page's cursor (or A2A `pageToken`) that is not one the server
    /// gave.
    pub fn invalid_cursor(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "invalid_cursor", message)
    }

    /// 400 for a body that is not the JSON the endpoint reads: `invalid_json` when it does not
    /// parse, `invalid_request` when it parses but has the wrong shape.
    pub fn from_json(error: &serde_json::Error) -> Self {
        let code = if error.is_data() {
            "invalid_request"
        } else {
            "invalid_json"
        };
        Self::new(StatusCode::BAD_REQUEST, code, error.to_string())
    }

    /// What axum answered by itself, a status and maybe some text, as an API error: its code
    /// named after the status (`method_not_allowed`, `bad_request`, …), its message the text,
    /// or the status's reason when there is none.
    pub(crate) fn from_status(status: StatusCode, text: &str) -> Self {
        let code = match status {
            StatusCode::BAD_REQUEST => "bad_request",
            StatusCode::NOT_FOUND => "not_found",
            StatusCode::METHOD_NOT_ALLOWED => "method_not_allowed",
            StatusCode::PAYLOAD_TOO_LARGE => "payload_too_large",
            StatusCode::UNSUPPORTED_MEDIA_TYPE => "unsupported_media_type",
            StatusCode::URI_TOO_LONG => "uri_too_long",
            StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE => "headers_too_large",
            _ if status.is_server_error() => "internal",
            _ => "invalid_request",
        };
        let message = match text.trim() {
            "" => match status {
                StatusCode::METHOD_NOT_ALLOWED => {
                    "this endpoint does not answer that method (`Allow` lists those it does)"
                        .to_owned()
                }
                _ => status
                    .canonical_reason()
                    .unwrap_or("the request was refused")
                    .to_owned(),
            },
            text => text.to_owned(),
        };
        Self::new(status, code, message)
    }

    /// The JSON body: `{"error": {"code", "message"}}`.
    pub(crate) fn body(&self) -> serde_json::Value {
        json!({"error": {"code": self.code, "message": self.message}})
    }
}

/// At most [`MAX_ECHO`] bytes of `text`, cut at a character, for a message that repeats what a
/// client sent (a 100 kB id is not worth sending back).
pub(crate) fn echo(text: &str) -> std::borrow::Cow<'_, str> {
    if text.len() <= MAX_ECHO {
        return text.into();
    }
    let mut end = MAX_ECHO;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… ({} bytes)", &text[..end], text.len()).into()
}

/// What the HTTP edge refuses before a handler reads a request, or instead of it: each kind
/// has one status and one stable code.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum RequestError {
    /// 414 `uri_too_long`.
    #[error("the request target is over {max} bytes, the most this server reads")]
    UriTooLong { max: usize },
    /// 431 `headers_too_large`.
    #[error(
        "the request has over {max_headers} headers or over {max_bytes} bytes of them, the \
         most this server reads"
    )]
    HeadersTooLarge {
        max_headers: usize,
        max_bytes: usize,
    },
    /// 413 `payload_too_large`.
    #[error("the request body is over {max} bytes, the most this server reads")]
    PayloadTooLarge { max: usize },
    /// 408 `body_timeout`.
    #[error("the request body did not arrive within {} s", .timeout.as_secs())]
    BodyTimeout { timeout: std::time::Duration },
    /// 415 `unsupported_media_type`.
    #[error("the body must be JSON, sent with `Content-Type: application/json`")]
    NotJson,
    /// 404 `not_found`: the path is none the server answers.
    #[error("no such endpoint")]
    NoSuchEndpoint,
}

impl From<RequestError> for ApiError {
    fn from(error: RequestError) -> Self {
        let (status, code) = match error {
            RequestError::UriTooLong { .. } => (StatusCode::URI_TOO_LONG, "uri_too_long"),
            RequestError::HeadersTooLarge { .. } => (
                StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
                "headers_too_large",
            ),
            RequestError::PayloadTooLarge { .. } => {
                (StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large")
            }
            RequestError::BodyTimeout { .. } => (StatusCode::REQUEST_TIMEOUT, "body_timeout"),
            RequestError::NotJson => (StatusCode::UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type"),
            RequestError::NoSuchEndpoint => (StatusCode::NOT_FOUND, "not_found"),
        };
        Self::new(status, code, error.to_string())
    }
}

impl IntoResponse for RequestError {
    fn into_response(self) -> Response {
        ApiError::from(self).into_response()
    }
}

impl From<RunsError> for ApiError {
    fn from(error: RunsError) -> Self {
        let (status, code) = match error {
            RunsError::Start(error) => return error.into(),
            RunsError::Input(error) => return error.into(),
            RunsError::Store(_) | RunsError::Commit(_) => {
                // What went wrong is for the log; the client learns that nothing was kept.
                tracing::error!("{error}");
                return Self::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "store_error",
                    "the server could not reach its store",
                );
            }
            RunsError::NotFound { .. } => (StatusCode::NOT_FOUND, "not_found"),
            RunsError::UnknownAgent(_) | RunsError::NoAgents => {
                (StatusCode::NOT_FOUND, "unknown_agent")
            }
            RunsError::InvalidSessionId(_) => (StatusCode::BAD_REQUEST, "invalid_session_id"),
            RunsError::TooManyMessages { .. } => (StatusCode::BAD_REQUEST, "too_many_messages"),
            RunsError::SessionBusy { .. } => (StatusCode::CONFLICT, "session_busy"),
            RunsError::RunExists(_) => (StatusCode::CONFLICT, "run_exists"),
            RunsError::RunFinished(_) => (StatusCode::CONFLICT, "run_finished"),
            RunsError::RefusedElsewhere { code, .. } => (refusal_status(code), code),
            RunsError::RunMoved => (StatusCode::CONFLICT, "run_moved"),
            RunsError::NoAnswer => (StatusCode::GATEWAY_TIMEOUT, "no_answer"),
            RunsError::Unresumable(_) => (StatusCode::INTERNAL_SERVER_ERROR, "run_unresumable"),
            RunsError::InvalidState(_) => (StatusCode::UNPROCESSABLE_ENTITY, "invalid_state"),
            RunsError::PatchFailed(_) => (StatusCode::UNPROCESSABLE_ENTITY, "patch_failed"),
            RunsError::StateChanged(_) => (StatusCode::PRECONDITION_FAILED, "state_changed"),
            RunsError::StateOutOfBounds { bounds, .. } => match bounds {
                BoundsError::TooDeep { .. } => (StatusCode::UNPROCESSABLE_ENTITY, "state_too_deep"),
                _ => (StatusCode::PAYLOAD_TOO_LARGE, "state_too_large"),
            },
            RunsError::StateUnreadable { .. } => (StatusCode::CONFLICT, "state_unreadable"),
        };
        Self::new(status, code, error.to_string())
    }
}

/// A store failure: logged, and answered as one that kept nothing of the request.
impl From<agentwire_store::StoreError> for ApiError {
    fn from(error: agentwire_store::StoreError) -> Self {
        RunsError::from(error).into()
    }
}

/// A URL the address policy refuses (a webhook's, an A2A push config's): 400 `invalid_url`.
impl From<AddressError> for ApiError {
    fn from(error: AddressError) -> Self {
        let mut message = error.to_string();
        if matches!(error, AddressError::NotPublic { .. }) {
            message.push_str(": set [webhooks] allow_private = true to deliver there");
        }
        Self::new(StatusCode::BAD_REQUEST, "invalid_url", message)
    }
}

impl From<StartError> for ApiError {
    fn from(error: StartError) -> Self {
        let (status, code) = match &error {
            StartError::Refused(_) => (StatusCode::CONFLICT, "input_refused"),
            StartError::NoInput => (StatusCode::BAD_REQUEST, "no_input"),
            StartError::Role { .. } => (StatusCode::BAD_REQUEST, "invalid_role"),
            StartError::ToolNameTaken { .. } => (StatusCode::BAD_REQUEST, "tool_name_taken"),
            StartError::ClientToolsNotAllowed => {
                (StatusCode::BAD_REQUEST, "client_tools_not_allowed")
            }
            // A setting the agent or its provider cannot take: the message names it.
            StartError::Setting(_) => (StatusCode::BAD_REQUEST, "invalid_request"),
            _ => (StatusCode::INTERNAL_SERVER_ERROR, "internal"),
        };
        Self::new(status, code, error.to_string())
    }
}

impl From<InputError> for ApiError {
    fn from(error: InputError) -> Self {
        let code = refusal_code(&error);
        Self::new(refusal_status(code), code, error.to_string())
    }
}

/// The status of an input's refusal: a message no client may send is a bad request; anything
/// else is refused for the run's state.
fn refusal_status(code: &str) -> StatusCode {
    match code {
        "invalid_role" => StatusCode::BAD_REQUEST,
        _ => StatusCode::CONFLICT,
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut response = (self.status, Json(self.body())).into_response();
        response.extensions_mut().insert(self);
        response
    }
}

/// The middleware that gives every error answer the JSON shape: one that is not JSON already
/// becomes `{"error": {"code", "message"}}` (see [`ApiError::from_status`]).
pub(crate) async fn json_errors(request: Request, next: Next) -> Response {
    let response = next.run(request).await;
    let status = response.status();
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.starts_with("application/json"));
    if !(status.is_client_error() || status.is_server_error()) || is_json {
        return response;
    }
    let (parts, body) = response.into_parts();
    let text = axum::body::to_bytes(body, MAX_TEXT)
        .await
        .map(|bytes| String::from_utf8_lossy(&bytes).trim().to_owned())
        .unwrap_or_default();
    let mut answer = ApiError::from_status(status, &text).into_response();
    // What the original answer said beside its body (`Allow` on a 405) stays.
    for (name, value) in &parts.headers {
        if name != header::CONTENT_TYPE && name != header::CONTENT_LENGTH {
            answer.headers_mut().append(name.clone(), value.clone());
        }
    }
    answer
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn echoes_are_cut_at_a_character() {
        assert_eq!(echo("run_1"), "run_1");
        let long = "é".repeat(100);
        let cut = echo(&long);
        assert!(cut.starts_with(&"é".repeat(MAX_ECHO / 2)), "{cut}");
        assert!(cut.ends_with("… (200 bytes)"), "{cut}");
    }

    #[test]
    fn what_axum_answers_alone_gets_a_code_and_a_message() {
        for status in [
            StatusCode::METHOD_NOT_ALLOWED,
            StatusCode::BAD_REQUEST,
            StatusCode::IM_A_TEAPOT,
        ] {
            let error = ApiError::from_status(status, " ");
            assert!(!error.message.is_empty(), "{status}");
            assert_ne!(error.code, "error");
        }
        let error = ApiError::from_status(StatusCode::BAD_REQUEST, "bad path");
        assert_eq!(
            (error.code, error.message.as_str()),
            ("bad_request", "bad path")
        );
    }
}
