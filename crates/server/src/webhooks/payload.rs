//! What a delivery posts: a native status change in the Standard Webhooks payload shape
//! (`{type, timestamp, data}`), or an A2A push notification (the dialect's codec).
//!
//! ```json
//! {"type": "run.completed", "timestamp": "2025-01-01T00:00:00.000Z",
//!  "data": {"run_id": "run_1", "session_id": "ses_1", "agent": "assistant",
//!           "status": "completed", "seq": 7}}
//! ```

use std::time::{Duration, UNIX_EPOCH};

use agentwire_core::Timestamp;
use agentwire_dialects::a2a::push_notification;
use agentwire_store::{Delivery, WebhookFormat};
use serde_json::{Value, json};

/// The delivery's body.
pub(crate) fn body(delivery: &Delivery) -> Vec<u8> {
    let timestamp = rfc3339(delivery.changed_at);
    let value = match delivery.webhook.format {
        WebhookFormat::A2a => push_notification(
            delivery.run_id.as_str(),
            delivery.session_id.as_ref().map(|id| id.as_str()),
            delivery.status,
            &timestamp,
        ),
        _ => native(delivery, &timestamp),
    };
    // A JSON value always serializes.
    serde_json::to_vec(&value).unwrap_or_default()
}

/// The `webhook-id` of a status change: the same for every try (a receiver deduplicates
/// by it) and for every webhook it goes to.
pub(crate) fn message_id(delivery: &Delivery) -> String {
    format!("msg_{}_{}", delivery.run_id, delivery.seq)
}

fn native(delivery: &Delivery, timestamp: &str) -> Value {
    let status = delivery.status;
    let mut data = json!({
        "run_id": delivery.run_id,
        "session_id": delivery.session_id,
        "agent": delivery.agent,
        "status": status.name(),
        "seq": delivery.seq,
    });
    // The status's second key, as the event log spells it (`awaiting: approval`).
    if let Ok(Value::Object(spelled)) = serde_json::to_value(status)
        && let Some(awaiting) = spelled.get("awaiting")
    {
        data["awaiting"] = awaiting.clone();
    }
    json!({
        "type": format!("run.{}", status.name()),
        "timestamp": timestamp,
        "data": data,
    })
}

fn rfc3339(at: Timestamp) -> String {
    let millis = u64::try_from(at.0).unwrap_or_default();
    humantime::format_rfc3339_millis(UNIX_EPOCH + Duration::from_millis(millis)).to_string()
}
