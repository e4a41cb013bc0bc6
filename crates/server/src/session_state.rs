//! A session's shared state over HTTP: `GET /v1/sessions/{id}/state` reads it, `PUT` replaces
//! it (creating the session if it does not exist) and `PATCH` changes it with an RFC 6902 JSON
//! Patch (`Content-Type: application/json-patch+json`). The resource is the state document
//! itself, so the body of a `GET` and a `PUT` is the document, and a `PATCH`'s paths point into
//! it; `null` is no state. (The `state` of `GET /v1/sessions/{id}` is something else: where the
//! conversation stands in its agent's communication schema, e.g. `idle`.)
//!
//! Every answer carries the state's version as an `ETag` (`"3"`); a `PUT` or `PATCH` with
//! `If-Match` applies only to that version (`412 state_changed` otherwise). A change is checked
//! against the state schema of the agent of the session's latest run (`422 invalid_state`,
//! naming each problem and where it is); a patch that does not apply is `422 patch_failed`,
//! naming the operation; a state past the server's bounds (deeper than 100 levels, or over
//! `max_state_bytes` as JSON: each operation of a patch is held to them before it takes
//! effect) is `422 state_too_deep` or `413 state_too_large`; a stored state that cannot be
//! read back is `409 state_unreadable` on every route but `PUT`, which replaces it; while a run of the session is open the change is refused with `409
//! session_busy` (see `runs::shared_state` for why). A refused change changes nothing.

use std::sync::Arc;

use agentwire_core::patch_stream;
use axum::Json;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use json_patch::Patch;
use serde_json::Value;

use crate::body::JsonBody;
use crate::caller::Caller;
use crate::error::ApiError;
use crate::native::parse;
use crate::runs::{RunsError, StateView};
use crate::state::AppState;

/// The media type of a JSON Patch body (RFC 6902 §6).
pub(crate) const JSON_PATCH: &str = "application/json-patch+json";

/// `GET /v1/sessions/{id}/state`: the document, with its version as `ETag`.
pub(crate) async fn get(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let view = state.runs.shared_state(&caller, &id).await?;
    Ok(answer(view))
}

/// `PUT /v1/sessions/{id}/state`: the body is the new document.
pub(crate) async fn put(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(id): Path<String>,
    headers: HeaderMap,
    JsonBody(bytes): JsonBody,
) -> Result<Response, ApiError> {
    let document: Value = parse(&bytes)?;
    let if_match = if_match(&headers)?;
    let view = state
        .runs
        .change_shared_state(&caller, &id, if_match, true, &|_| Ok(document.clone()))
        .await?;
    Ok(answer(view))
}

/// `PATCH /v1/sessions/{id}/state`: the body is an RFC 6902 patch, applied all or nothing.
pub(crate) async fn patch(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(id): Path<String>,
    headers: HeaderMap,
    JsonBody(bytes): JsonBody,
) -> Result<Response, ApiError> {
    let media_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.split(';').next())
        .map(str::trim);
    if !media_type.is_some_and(|media_type| media_type.eq_ignore_ascii_case(JSON_PATCH)) {
        return Err(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
            format!("a PATCH of the state is a JSON Patch, sent with `Content-Type: {JSON_PATCH}`"),
        ));
    }
    let patch: Patch = parse(&bytes)?;
    let if_match = if_match(&headers)?;
    let bounds = state.runs.state_bounds();
    let apply = |current: &Value| {
        let mut document = current.clone();
        patch_stream::apply_patch(&mut document, &patch, bounds).map_err(|error| {
            match error.bounds() {
                Some(bounds) => RunsError::out_of_bounds(bounds, &error),
                None => RunsError::PatchFailed(error.to_string()),
            }
        })?;
        Ok(document)
    };
    let view = state
        .runs
        .change_shared_state(&caller, &id, if_match, false, &apply)
        .await?;
    Ok(answer(view))
}

/// `200` with the document and its version.
fn answer(view: StateView) -> Response {
    let mut response = Json(view.state).into_response();
    if let Ok(etag) = HeaderValue::from_str(&format!("\"{}\"", view.version)) {
        response.headers_mut().insert(header::ETAG, etag);
    }
    response
}

/// The version `If-Match` names: `None` without one or for `*`; a value that is no version
/// this server gives matches none (`412`).
fn if_match(headers: &HeaderMap) -> Result<Option<i64>, ApiError> {
    let Some(value) = headers.get(header::IF_MATCH) else {
        return Ok(None);
    };
    let value = value.to_str().unwrap_or_default().trim();
    if value == "*" {
        return Ok(None);
    }
    value
        .trim_start_matches("W/")
        .trim_matches('"')
        .parse()
        .map(Some)
        .map_err(|_| {
            ApiError::new(
                StatusCode::PRECONDITION_FAILED,
                "state_changed",
                format!("If-Match {value} names no version of the state"),
            )
        })
}
