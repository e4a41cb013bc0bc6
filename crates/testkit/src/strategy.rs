//! Proptest strategies for the core model: JSON values, parts, messages.

use agentwire_core::message::Metadata;
use agentwire_core::part::{
    ApprovalRequest, ApprovalResponse, Artifact, DataPart, FilePart, FileSource, PlanAction,
    PlanUpdate, ReasoningPart, RefusalPart, Source, StepStart, TextPart, ToolArgs, ToolCall,
    ToolError, ToolErrorKind, ToolResult,
};
use agentwire_core::{Message, Part, Role, Timestamp, Usage};
use proptest::collection::vec;
use proptest::prelude::*;
use serde_json::{Map, Number, Value};

/// Text as models write it: any Unicode, with quotes, backslashes, newlines and control
/// characters mixed in, so that JSON escaping is exercised.
pub fn text() -> impl Strategy<Value = String> {
    prop_oneof!["\\PC{0,24}", "[a-z \"\\\\\n\t\u{1}é😀]{0,16}",]
}

/// Short ids.
pub fn id() -> impl Strategy<Value = String> {
    "[a-z]{1,3}_[a-z0-9]{1,6}"
}

/// Any JSON value, nested up to three levels.
pub fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter_map("finite", Number::from_f64)
            .prop_map(Value::Number),
        text().prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 5, |inner| {
        prop_oneof![
            vec(inner.clone(), 0..5).prop_map(Value::Array),
            vec((text(), inner), 0..5)
                .prop_map(|members| Value::Object(members.into_iter().collect())),
        ]
    })
}

/// A JSON object, as tool arguments usually are.
pub fn json_object() -> impl Strategy<Value = Value> {
    vec(("[a-z_]{1,8}", json_value()), 0..5)
        .prop_map(|members| Value::Object(members.into_iter().collect::<Map<String, Value>>()))
}

/// Tool arguments: mostly objects, sometimes the text of a model that wrote invalid JSON.
pub fn tool_args() -> impl Strategy<Value = ToolArgs> {
    prop_oneof![
        4 => json_object().prop_map(ToolArgs),
        1 => json_value().prop_map(ToolArgs),
        1 => "\\{\"[a-z]{0,4}\"?:?".prop_map(|text| ToolArgs::from_json_text(&text)),
    ]
}

/// Any part.
pub fn part() -> impl Strategy<Value = Part> {
    let optional_text = || proptest::option::of(text());
    prop_oneof![
        4 => text().prop_map(|text| Part::Text(TextPart { text })),
        2 => text().prop_map(|text| Part::Reasoning(ReasoningPart { text })),
        1 => text().prop_map(|text| Part::Refusal(RefusalPart { text })),
        4 => (id(), "[a-z_]{1,10}", tool_args()).prop_map(|(tool_call_id, tool_name, args)| {
            Part::ToolCall(ToolCall { tool_call_id: tool_call_id.into(), tool_name, args })
        }),
        2 => (id(), proptest::option::of("[a-z_]{1,10}"), json_value(), proptest::option::of(any::<bool>()))
            .prop_map(|(tool_call_id, tool_name, result, is_error)| {
                Part::ToolResult(ToolResult { tool_call_id: tool_call_id.into(), tool_name, result, is_error })
            }),
        1 => (id(), proptest::option::of("[a-z_]{1,10}"), any::<bool>(), text()).prop_map(
            |(tool_call_id, tool_name, validation, message)| {
                let error_type = if validation { ToolErrorKind::Validation } else { ToolErrorKind::Execution };
                Part::ToolError(ToolError { tool_call_id: tool_call_id.into(), tool_name, error_type, message })
            }
        ),
        1 => ("[a-z]{1,5}/[a-z]{1,5}", any::<bool>(), text(), optional_text()).prop_map(
            |(media_type, by_url, location, filename)| {
                let source = if by_url { FileSource::Url(location) } else { FileSource::Data(location) };
                Part::File(FilePart { media_type, source, filename })
            }
        ),
        1 => ("[a-z]{1,8}", json_value()).prop_map(|(name, data)| Part::Data(DataPart { name, data })),
        1 => (id(), optional_text()).prop_map(|(step_id, step_name)| {
            Part::StepStart(StepStart { step_id: step_id.into(), step_name })
        }),
        1 => (id(), text(), proptest::option::of(1u32..9), optional_text()).prop_map(
            |(artifact_id, title, version, preview)| {
                Part::Artifact(Artifact { artifact_id: artifact_id.into(), title, version, preview })
            }
        ),
        1 => (id(), 0..4usize, proptest::option::of(json_object())).prop_map(|(plan_id, action, details)| {
            let action = [PlanAction::Created, PlanAction::Updated, PlanAction::Completed, PlanAction::Failed][action];
            Part::PlanUpdate(PlanUpdate { plan_id: plan_id.into(), action, details })
        }),
        1 => (id(), id(), optional_text()).prop_map(|(approval_id, tool_call_id, reason)| {
            Part::ApprovalRequest(ApprovalRequest {
                approval_id: approval_id.into(),
                tool_call_id: tool_call_id.into(),
                reason,
            })
        }),
        1 => (id(), any::<bool>(), optional_text()).prop_map(|(approval_id, approved, reason)| {
            Part::ApprovalResponse(ApprovalResponse { approval_id: approval_id.into(), approved, reason })
        }),
        1 => (id(), text(), optional_text()).prop_map(|(source_id, url, title)| {
            Part::Source(Source { source_id: source_id.into(), url, title })
        }),
    ]
}

/// Any role.
pub fn role() -> impl Strategy<Value = Role> {
    prop_oneof![
        Just(Role::System),
        Just(Role::User),
        Just(Role::Assistant),
        Just(Role::Tool),
        Just(Role::Data),
    ]
}

/// Metadata, often empty.
pub fn metadata() -> impl Strategy<Value = Metadata> {
    (
        proptest::option::of("[a-z]{1,8}"),
        proptest::option::of((0u64..1000, 0u64..1000).prop_map(|(i, o)| Usage::new(i, o))),
        vec(("[a-z]{1,6}", json_value()), 0..2),
    )
        .prop_map(|(agent_name, usage, extra)| Metadata {
            agent_name,
            usage,
            extra: extra
                .into_iter()
                .filter(|(key, _)| key != "usage" && key != "agent_name")
                .collect(),
        })
}

/// A message with an id and up to eight parts of any kind.
pub fn message() -> impl Strategy<Value = Message> {
    (
        id(),
        role(),
        vec(part(), 0..8),
        metadata(),
        proptest::option::of(0i64..2_000_000_000_000),
    )
        .prop_map(|(id, role, parts, metadata, created_at)| Message {
            id: Some(id.into()),
            role,
            parts,
            metadata,
            created_at: created_at.map(Timestamp),
        })
}
