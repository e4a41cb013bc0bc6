//! A2A push notifications: the `TaskPushNotificationConfig` of the
//! `Create/Get/List/DeleteTaskPushNotificationConfig` methods, and the body a notification
//! posts (a `StreamResponse` holding the task's `statusUpdate`, as the a2a-sdk's own sender
//! writes it).

use agentwire_core::RunStatus;
use serde::Deserialize;
use serde_json::{Value, json};

use super::encode::task_state;
use crate::error::DecodeError;

/// A push-notification config as a client sends it (`CreateTaskPushNotificationConfig`'s
/// params, or `SendMessage`'s `configuration.taskPushNotificationConfig`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PushConfig {
    /// The config's id, if the client chose one.
    #[serde(default)]
    pub id: Option<String>,
    /// The task it is for (empty in `SendMessage`'s configuration: the task being created).
    #[serde(default, alias = "task_id")]
    pub task_id: String,
    /// Where notifications are posted.
    pub url: String,
    /// Sent back with each notification, in `X-A2A-Notification-Token`.
    #[serde(default)]
    pub token: Option<String>,
}

/// The params naming one config of a task (`Get`/`DeleteTaskPushNotificationConfig`) or all of
/// them (`ListTaskPushNotificationConfigs`, no `id`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PushConfigRef {
    /// The task.
    #[serde(alias = "task_id")]
    pub task_id: String,
    /// The config, if one is named.
    #[serde(default)]
    pub id: Option<String>,
}

/// Reads the `params` of `CreateTaskPushNotificationConfig`.
pub fn decode_push_config(params: &Value) -> Result<PushConfig, DecodeError> {
    PushConfig::deserialize(params).map_err(|source| DecodeError::InvalidRequest { source })
}

/// Reads the `params` of `Get`/`List`/`DeleteTaskPushNotificationConfig`.
pub fn decode_push_config_ref(params: &Value) -> Result<PushConfigRef, DecodeError> {
    let reference = PushConfigRef::deserialize(params)
        .map_err(|source| DecodeError::InvalidRequest { source })?;
    if reference.task_id.is_empty() {
        return Err(DecodeError::InvalidRequest {
            source: serde::de::Error::custom("`taskId` is empty"),
        });
    }
    Ok(reference)
}

/// A stored config as the methods answer it (`TaskPushNotificationConfig`).
pub fn encode_push_config(id: &str, task_id: &str, url: &str, token: Option<&str>) -> Value {
    let mut config = json!({"id": id, "taskId": task_id, "url": url});
    if let Some(token) = token {
        config["token"] = json!(token);
    }
    config
}

/// The body of a notification that task `task_id` (of context `context_id`, if any) changed
/// to `status` at `timestamp` (RFC 3339).
///
/// ```
/// use agentwire_core::RunStatus;
/// use agentwire_dialects::a2a::push_notification;
///
/// let body = push_notification("run_1", Some("ses_1"), RunStatus::Completed, "2025-01-01T00:00:00Z");
/// assert_eq!(body["statusUpdate"]["status"]["state"], "TASK_STATE_COMPLETED");
/// ```
pub fn push_notification(
    task_id: &str,
    context_id: Option<&str>,
    status: RunStatus,
    timestamp: &str,
) -> Value {
    let mut update = json!({
        "taskId": task_id,
        "status": {"state": task_state(status), "timestamp": timestamp},
    });
    if let Some(context_id) = context_id {
        update["contextId"] = json!(context_id);
    }
    json!({ "statusUpdate": update })
}
