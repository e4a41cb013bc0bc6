//! The route table: every path the server answers and the handler answering it. Handlers live
//! with what they serve (`native`, `ws`, `dialects`, `session_list`, `webui`, …); nothing here
//! is imported back by them.

use std::sync::Arc;

use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::json;

use crate::caller::Caller;
use crate::error::RequestError;
use crate::native;
use crate::state::AppState;

/// Every route over `state`.
pub(crate) fn router(state: Arc<AppState>) -> Router {
    Router::new()
        .route("/", get(crate::webui::page))
        .route("/ui/{file}", get(crate::webui::file))
        .route("/healthz", get(|| async { Json(json!({"status": "ok"})) }))
        .route("/metrics", get(metrics))
        .route("/v1/agents", get(native::list_agents))
        .route("/v1/agents/{name}", get(native::agent_card))
        .route(
            "/v1/runs",
            post(native::create_run).get(crate::run_list::list),
        )
        .route("/v1/runs/{id}", get(native::get_run))
        .route("/v1/runs/{id}/events", get(native::run_events))
        .route("/v1/runs/{id}/input", post(native::run_input))
        .route("/v1/runs/{id}/cancel", post(native::cancel_run))
        .route("/v1/sessions", get(crate::session_list::list))
        .route(
            "/v1/sessions/{id}",
            get(native::get_session).delete(native::delete_session),
        )
        .route("/v1/sessions/{id}/fork", post(native::fork_session))
        .route(
            "/v1/sessions/{id}/state",
            get(crate::session_state::get)
                .put(crate::session_state::put)
                .patch(crate::session_state::patch),
        )
        .route(
            "/v1/sessions/{id}/messages",
            get(crate::session_input::list).post(crate::session_input::post),
        )
        .route(
            "/v1/sessions/{id}/messages/{client_message_id}",
            get(crate::session_input::get),
        )
        .route(
            "/v1/webhooks",
            get(crate::webhooks::list).post(crate::webhooks::post),
        )
        .route(
            "/v1/webhooks/{id}",
            get(crate::webhooks::get).delete(crate::webhooks::delete),
        )
        .route("/v1/ws", get(crate::ws::upgrade))
        .route("/openapi.json", get(crate::openapi::serve))
        .route("/docs", get(crate::docs::page))
        .merge(crate::dialects::router())
        .fallback(|| async { RequestError::NoSuchEndpoint })
        .with_state(state)
}

/// `GET /metrics`: wants a key like the API, since its numbers span every key's runs.
async fn metrics(
    axum::extract::State(state): axum::extract::State<Arc<AppState>>,
    _: Caller,
) -> Response {
    let text = state.metrics.encode(state.runs.held(), state.runs.queued());
    let mut response = text.into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(crate::metrics::CONTENT_TYPE),
    );
    response
}
