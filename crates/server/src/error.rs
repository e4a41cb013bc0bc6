//! API errors: every bad input is answered with a 4xx status and
//! `{"error": {"code", "message"}}`, where `code` is a stable snake_case name.

use agentwire_runtime::{InputError, StartError};
use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;

/// An error answer: its status, stable code and message for people.
#[derive(Debug)]
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

    /// 404 `not_found`: also what a caller gets for another key's runs and sessions.
    pub fn not_found(what: &str, id: &str) -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            "not_found",
            format!("no {what} '{id}'"),
        )
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
        let (status, code) = match &error {
            InputError::Refused(_) => (StatusCode::CONFLICT, "input_refused"),
            InputError::Finished { .. } => (StatusCode::CONFLICT, "run_finished"),
            InputError::UnknownApproval { .. } => (StatusCode::CONFLICT, "unknown_approval"),
            InputError::UnknownToolCall { .. } => (StatusCode::CONFLICT, "unknown_tool_call"),
            InputError::NewTurn => (StatusCode::CONFLICT, "new_turn"),
            InputError::Role { .. } => (StatusCode::BAD_REQUEST, "invalid_role"),
            _ => (StatusCode::CONFLICT, "input_refused"),
        };
        Self::new(status, code, error.to_string())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = json!({"error": {"code": self.code, "message": self.message}});
        (self.status, Json(body)).into_response()
    }
}
