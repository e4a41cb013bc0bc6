//! A2A 1.0 push notifications: `CreateTaskPushNotificationConfig`,
//! `GetTaskPushNotificationConfig`, `ListTaskPushNotificationConfigs` and
//! `DeleteTaskPushNotificationConfig` on `POST /a2a`. A config is a per-run webhook in A2A's
//! format (`crate::webhooks`): the same queue, retries and URL checks; each status change of
//! the task is posted as a `StreamResponse` with its `statusUpdate`, carrying the config's
//! token in `X-A2A-Notification-Token` and the Standard Webhooks signature headers. A config
//! created with the id of one its task has replaces it, as the a2a-sdk's config store does.

use agentwire_core::RunId;
use agentwire_dialects::a2a::{
    PushConfig, decode_push_config, decode_push_config_ref, encode_push_config,
};
use agentwire_store::{StatusSet, WebhookFormat, WebhookRecord};
use serde_json::{Value, json};

use crate::caller::Caller;
use crate::error::ApiError;
use crate::state::AppState;
use crate::webhooks::{self, NewWebhook};

/// The methods this module answers.
pub(super) const METHODS: [&str; 4] = [
    "CreateTaskPushNotificationConfig",
    "GetTaskPushNotificationConfig",
    "ListTaskPushNotificationConfigs",
    "DeleteTaskPushNotificationConfig",
];

/// Why a push method failed: its params (invalid params), or what the server refused.
pub(super) enum PushError {
    Params(String),
    Refused(ApiError),
}

impl From<ApiError> for PushError {
    fn from(error: ApiError) -> Self {
        Self::Refused(error)
    }
}

/// Answers one of [`METHODS`] with its JSON-RPC `result`.
pub(super) async fn answer(
    state: &AppState,
    caller: &Caller,
    method: &str,
    params: &Value,
) -> Result<Value, PushError> {
    let bad = |error: agentwire_dialects::DecodeError| PushError::Params(error.to_string());
    if method == "CreateTaskPushNotificationConfig" {
        let config = decode_push_config(params).map_err(bad)?;
        if config.task_id.is_empty() {
            return Err(PushError::Params("`taskId` is empty".to_owned()));
        }
        let run_id = RunId::from(config.task_id.as_str());
        let webhook = webhooks::create(state, caller, new_webhook(&config, run_id)).await?;
        return Ok(view(&webhook));
    }
    let reference = decode_push_config_ref(params).map_err(bad)?;
    let run_id = RunId::from(reference.task_id.as_str());
    // A task the caller may not see has no configs to list: `TaskNotFound`, not `[]`.
    webhooks::check_run(state, caller, &run_id).await?;
    let configs = state
        .store
        .webhooks(caller.owner_id(), Some(&run_id))
        .await
        .map_err(ApiError::from)?;
    let mut configs = configs
        .into_iter()
        .filter(|webhook| webhook.format == WebhookFormat::A2a);
    if method == "ListTaskPushNotificationConfigs" {
        let configs: Vec<Value> = configs.map(|webhook| view(&webhook)).collect();
        return Ok(json!({"configs": configs, "nextPageToken": ""}));
    }
    let wanted = reference.id.unwrap_or_default();
    let found = configs
        .find(|webhook| webhook.config_id.as_deref() == Some(wanted.as_str()))
        .ok_or_else(|| ApiError::not_found("push notification config", &wanted))?;
    if method == "GetTaskPushNotificationConfig" {
        return Ok(view(&found));
    }
    state
        .store
        .delete_webhook(&found.id, caller.owner_id())
        .await
        .map_err(ApiError::from)?;
    Ok(json!({}))
}

/// The webhook a config asks for, of task `run_id`: every status change, in A2A's format.
pub(super) fn new_webhook(config: &PushConfig, run_id: RunId) -> NewWebhook<'_> {
    let config_id = config
        .id
        .clone()
        .filter(|id| !id.is_empty())
        .unwrap_or_else(|| format!("pnc_{}", uuid::Uuid::now_v7().simple()));
    NewWebhook {
        url: &config.url,
        events: StatusSet::ALL,
        run_id: Some(run_id),
        format: WebhookFormat::A2a,
        config_id: Some(config_id),
        token: config.token.clone(),
    }
}

fn view(webhook: &WebhookRecord) -> Value {
    encode_push_config(
        webhook.config_id.as_deref().unwrap_or_default(),
        webhook.run_id.as_ref().map_or("", RunId::as_str),
        &webhook.url,
        webhook.token.as_deref(),
    )
}
