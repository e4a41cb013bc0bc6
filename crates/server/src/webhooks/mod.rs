//! Webhooks: `POST /v1/webhooks {url, events?, run_id?}`, `GET /v1/webhooks`,
//! `GET /v1/webhooks/{id}`, `DELETE /v1/webhooks/{id}`, per key (another key neither sees nor
//! deletes them, and hears nothing of their runs). A webhook hears of its owner's runs' status
//! changes (every run, or the one it names), not their deltas: `run.created`, `run.queued`,
//! `run.in_progress`, `run.awaiting`, `run.completed`, `run.failed`, `run.canceled`,
//! `run.rejected`, `run.incomplete`.
//!
//! Each delivery is queued in the store in the transaction that stores the status change, and
//! posted, signed as Standard Webhooks, by the `deliver` worker until the receiver answers 2xx
//! (see `deliver` for the retries; which URLs are allowed is `agentwire_tools::address`'s
//! policy, checked here at creation and by `deliver` at every connection). A per-run webhook hears
//! of the status changes committed after it is created; one given with the run (`webhook` in
//! `POST /v1/runs`) is written before the run's first, so it hears them all. A2A
//! push-notification configs are webhooks too (`crate::dialects::a2a`), written in A2A's
//! format.

mod deliver;
mod payload;
pub(crate) mod sign;

use std::sync::Arc;

use agentwire_core::{RunId, WebhookId};
use agentwire_store::{StatusSet, WebhookFormat, WebhookRecord};
use agentwire_tools::address;
use axum::Json;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::body::JsonBody;
use crate::caller::Caller;
use crate::clock;
use crate::error::ApiError;
use crate::native::parse;
use crate::state::AppState;
pub(crate) use deliver::Deliveries;

type Shared = State<Arc<AppState>>;

/// What an event name starts with: `run.completed` is the status `completed`.
const EVENT_PREFIX: &str = "run.";

/// The longest URL a webhook (or an A2A push config) may have, in bytes.
pub(crate) const MAX_URL_BYTES: usize = 2048;

/// The most webhooks (A2A push configs included) one run may have.
pub(crate) const MAX_PER_RUN: u32 = 10;

/// Webhooks in a page of `GET /v1/webhooks` when the client does not say, and the most.
const DEFAULT_PAGE: u32 = 100;

/// A `POST /v1/webhooks` body.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CreateWebhook {
    url: String,
    /// Event names (`run.completed`, …); none or empty: every status change.
    #[serde(default)]
    events: Vec<String>,
    /// Only this run's status changes.
    #[serde(default)]
    run_id: Option<String>,
}

/// What a new webhook is.
pub(crate) struct NewWebhook<'a> {
    pub(crate) url: &'a str,
    pub(crate) events: StatusSet,
    pub(crate) run_id: Option<RunId>,
    pub(crate) format: WebhookFormat,
    pub(crate) config_id: Option<String>,
    pub(crate) token: Option<String>,
}

/// Checks and stores a webhook of `caller`'s: its URL (see `url`), and its run, which must be
/// one the caller may see.
pub(crate) async fn create(
    state: &AppState,
    caller: &Caller,
    new: NewWebhook<'_>,
) -> Result<WebhookRecord, ApiError> {
    check_url(state, new.url).await?;
    if let Some(run_id) = &new.run_id {
        check_run(state, caller, run_id).await?;
    }
    insert(state, caller, new).await
}

/// A `webhook` of a `POST /v1/runs` body: this run's status changes only.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RunWebhook {
    url: String,
    /// As `POST /v1/webhooks`' `events`.
    #[serde(default)]
    events: Vec<String>,
}

impl RunWebhook {
    /// The webhook it asks for, of the run `run_id`.
    pub(crate) fn new_webhook(&self, run_id: RunId) -> Result<NewWebhook<'_>, ApiError> {
        Ok(NewWebhook {
            url: &self.url,
            events: events(&self.events)?,
            run_id: Some(run_id),
            format: WebhookFormat::Standard,
            config_id: None,
            token: None,
        })
    }
}

/// Stores a webhook of a run that is about to start (its id minted, nothing of it stored
/// yet): written before the run's first status change commits, it hears every one. Its URL is
/// checked as [`create`]'s.
pub(crate) async fn create_for_new_run(
    state: &AppState,
    caller: &Caller,
    new: NewWebhook<'_>,
) -> Result<WebhookRecord, ApiError> {
    check_url(state, new.url).await?;
    insert(state, caller, new).await
}

/// Checks a webhook's URL: at most [`MAX_URL_BYTES`], and allowed by the address policy
/// (unless `[webhooks] allow_private`).
pub(crate) async fn check_url(state: &AppState, url: &str) -> Result<(), ApiError> {
    if url.len() > MAX_URL_BYTES {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "url_too_long",
            format!(
                "the URL is {} bytes; a webhook's may have {MAX_URL_BYTES}",
                url.len()
            ),
        ));
    }
    address::check_url(url, state.settings.webhooks.allow_private).await?;
    Ok(())
}

/// Checks that run `run_id` is one `caller` may see: else 404, as for a run that is not.
pub(crate) async fn check_run(
    state: &AppState,
    caller: &Caller,
    run_id: &RunId,
) -> Result<(), ApiError> {
    match state.store.run(run_id).await? {
        Some(run) if run.owner.as_deref() == caller.owner_id() => Ok(()),
        _ => Err(ApiError::not_found("run", run_id.as_str())),
    }
}

/// Deletes a webhook stored for a run that then did not start (it would name a run that never
/// existed); a failure is logged, the retention sweep takes it later.
pub(crate) async fn discard(state: &AppState, caller: &Caller, webhook: &WebhookRecord) {
    if let Err(error) = state
        .store
        .delete_webhook(&webhook.id, caller.owner_id())
        .await
    {
        tracing::warn!(webhook = %webhook.id, "removing the webhook of a run not started: {error}");
    }
}

/// A webhook as the API shows it at its creation: with its signing secret, shown only then.
pub(crate) fn created_view(webhook: &WebhookRecord) -> Value {
    let mut view = view(webhook);
    view["secret"] = json!(webhook.secret);
    view
}

/// Stores a checked webhook with a fresh id and secret.
async fn insert(
    state: &AppState,
    caller: &Caller,
    new: NewWebhook<'_>,
) -> Result<WebhookRecord, ApiError> {
    let random = |error: getrandom::Error| {
        tracing::error!("the system's random source failed: {error}");
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            "no random bytes for a secret",
        )
    };
    let webhook = WebhookRecord {
        id: WebhookId::from(format!("wh_{}", uuid::Uuid::now_v7().simple())),
        owner: caller.owner_id().map(str::to_owned),
        run_id: new.run_id,
        url: new.url.to_owned(),
        secret: sign::new_secret().map_err(random)?,
        events: new.events,
        format: new.format,
        config_id: new.config_id,
        token: new.token,
        created_at: clock::now(),
    };
    let limit = match webhook.run_id {
        Some(_) => MAX_PER_RUN,
        None => state.settings.webhooks.max_per_key,
    };
    if !state.store.create_webhook(&webhook, limit).await? {
        let whose = match webhook.run_id {
            Some(_) => format!("run has {MAX_PER_RUN} webhooks, the most one may have"),
            None => format!(
                "key has {limit} webhooks hearing every run, the most one may have \
                 ([webhooks] max_per_key); delete one first"
            ),
        };
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "too_many_webhooks",
            format!("the {whose}"),
        ));
    }
    Ok(webhook)
}

/// `POST /v1/webhooks`: 201 with the webhook and its signing secret, which is shown only here.
pub(crate) async fn post(
    State(state): Shared,
    caller: Caller,
    JsonBody(bytes): JsonBody,
) -> Result<Response, ApiError> {
    let body: CreateWebhook = parse(&bytes)?;
    let events = events(&body.events)?;
    let webhook = create(
        &state,
        &caller,
        NewWebhook {
            url: &body.url,
            events,
            run_id: body.run_id.map(RunId::from),
            format: WebhookFormat::Standard,
            config_id: None,
            token: None,
        },
    )
    .await?;
    Ok((StatusCode::CREATED, Json(created_view(&webhook))).into_response())
}

/// `?limit=N&cursor=<next>` of `GET /v1/webhooks`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Page {
    limit: Option<u32>,
    cursor: Option<String>,
}

/// `GET /v1/webhooks`: the caller's webhooks, oldest first, a page at a time; `next` is the
/// cursor of the next page (the last webhook's id), `null` on the last.
pub(crate) async fn list(
    State(state): Shared,
    caller: Caller,
    query: Result<Query<Page>, QueryRejection>,
) -> Result<Json<Value>, ApiError> {
    let Query(page) = query.map_err(|rejection| {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            "invalid_query",
            rejection.body_text(),
        )
    })?;
    let limit = page.limit.unwrap_or(DEFAULT_PAGE);
    if !(1..=DEFAULT_PAGE).contains(&limit) {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "invalid_query",
            format!("limit must be between 1 and {DEFAULT_PAGE}"),
        ));
    }
    let after = page.cursor.as_deref().map(parse_cursor).transpose()?;
    // One more than asked tells whether there is a next page.
    let mut webhooks = state
        .store
        .webhooks_page(caller.owner_id(), after.as_ref(), limit + 1)
        .await?;
    let more = webhooks.len() > limit as usize;
    webhooks.truncate(limit as usize);
    let next = match (more, webhooks.last()) {
        (true, Some(last)) => Some(last.id.to_string()),
        _ => None,
    };
    Ok(Json(json!({
        "data": webhooks.iter().map(view).collect::<Vec<_>>(),
        "next": next,
    })))
}

/// A page's cursor: a webhook id as the server mints them (`wh_` and 32 hex digits).
fn parse_cursor(text: &str) -> Result<WebhookId, ApiError> {
    let minted = text
        .strip_prefix("wh_")
        .is_some_and(|hex| hex.len() == 32 && hex.bytes().all(|b| b.is_ascii_hexdigit()));
    match minted {
        true => Ok(WebhookId::from(text)),
        false => Err(ApiError::invalid_cursor(
            "the cursor must be the `next` of a page of webhooks",
        )),
    }
}

/// `GET /v1/webhooks/{id}`.
pub(crate) async fn get(
    State(state): Shared,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    match state
        .store
        .webhook(&WebhookId::from(id.as_str()), caller.owner_id())
        .await?
    {
        Some(webhook) => Ok(Json(view(&webhook))),
        None => Err(ApiError::not_found("webhook", &id)),
    }
}

/// `DELETE /v1/webhooks/{id}`: 204; its queued deliveries go with it.
pub(crate) async fn delete(
    State(state): Shared,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    match state
        .store
        .delete_webhook(&WebhookId::from(id.as_str()), caller.owner_id())
        .await?
    {
        true => Ok(StatusCode::NO_CONTENT),
        false => Err(ApiError::not_found("webhook", &id)),
    }
}

/// A webhook as the API shows it (never its secret, but at its creation).
fn view(webhook: &WebhookRecord) -> Value {
    json!({
        "id": webhook.id,
        "url": webhook.url,
        "events": webhook.events.names().map(|name| format!("{EVENT_PREFIX}{name}")).collect::<Vec<_>>(),
        "run_id": webhook.run_id,
        "created_at": webhook.created_at.0,
    })
}

/// The statuses `names` (`run.completed`, …) stand for; none: every status change.
fn events(names: &[String]) -> Result<StatusSet, ApiError> {
    let mut events = StatusSet::default();
    for name in names {
        let status = name
            .strip_prefix(EVENT_PREFIX)
            .and_then(StatusSet::named)
            .ok_or_else(|| {
                ApiError::new(
                    StatusCode::BAD_REQUEST,
                    "invalid_request",
                    format!("unknown event '{name}': events are run.<status>, e.g. run.completed"),
                )
            })?;
        events = events.with(status);
    }
    Ok(match events.is_empty() {
        true => StatusSet::ALL,
        false => events,
    })
}
