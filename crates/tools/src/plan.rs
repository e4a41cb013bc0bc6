//! [`UpdatePlan`]: the built-in `update_plan` tool, with which a model keeps its plan in the
//! conversation, step by step, for the reader to follow.

use agentwire_core::part::{PlanAction, PlanUpdate};
use agentwire_core::{Part, ToolCall, ToolSpec};
use futures::FutureExt;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::schema::parameters_for;
use crate::tool::{Tool, ToolContext, ToolFailure, ToolFuture};

/// `update_plan {plan: [{step, status}], explanation?}`: the model states its whole plan, each
/// step `pending`, `in_progress` (at most one) or `completed`. It answers `{"steps": n,
/// "completed": k}` and adds a `plan_update` part after its result ([`Tool::result_part`]):
/// `{"plan_id": "plan_<call id>", "action": "created", "details": {"plan": [...],
/// "explanation"?}}`, `completed` once every step is. A runtime that keeps one plan per
/// conversation gives later updates the first one's id and the action `updated` (the
/// orchestrator does).
///
/// The tool keeps no state: the plan lives in the conversation, so it needs no workspace and
/// every run of every session may share it.
#[derive(Debug)]
pub struct UpdatePlan {
    spec: ToolSpec,
}

/// The step statuses a plan may hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum StepStatus {
    Pending,
    InProgress,
    Completed,
}

#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Step {
    /// What the step does, in a few words.
    step: String,
    /// `pending`, `in_progress` (the step being worked on; at most one) or `completed`.
    status: StepStatus,
}

#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct UpdatePlanArgs {
    /// The whole plan, in order: every step with its status, not only the steps that changed.
    plan: Vec<Step>,
    /// Why the plan changed, in a sentence, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    explanation: Option<String>,
}

impl UpdatePlan {
    /// The tool's name.
    pub const NAME: &'static str = "update_plan";

    /// The tool.
    pub fn new() -> Self {
        Self {
            spec: ToolSpec::new(
                Self::NAME,
                "Show the user your plan for a task of several steps, and keep it current: call \
                 it with the whole plan when you make it and each time a step starts or is done.",
                parameters_for::<UpdatePlanArgs>(),
            ),
        }
    }
}

impl Default for UpdatePlan {
    fn default() -> Self {
        Self::new()
    }
}

impl Tool for UpdatePlan {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn call(&self, args: Value, _context: ToolContext) -> ToolFuture<'_> {
        futures::future::ready(checked(args).map(|args| {
            let completed = count(&args, StepStatus::Completed);
            json!({"steps": args.plan.len(), "completed": completed})
        }))
        .boxed()
    }

    fn result_part(&self, call: &ToolCall, _result: &Value) -> Option<Part> {
        let args = checked(call.args.as_value().clone()).ok()?;
        let action = if count(&args, StepStatus::Completed) == args.plan.len() {
            PlanAction::Completed
        } else {
            PlanAction::Created
        };
        Some(Part::PlanUpdate(PlanUpdate {
            plan_id: format!("plan_{}", call.tool_call_id).into(),
            action,
            details: serde_json::to_value(&args).ok(),
        }))
    }
}

/// The arguments, if they make a plan: at least one step, at most one in progress.
fn checked(args: Value) -> Result<UpdatePlanArgs, ToolFailure> {
    let args: UpdatePlanArgs = serde_json::from_value(args).map_err(|error| {
        ToolFailure::invalid_arguments(format!("the plan does not fit: {error}"))
    })?;
    if args.plan.is_empty() {
        return Err(ToolFailure::invalid_arguments(
            "'plan' must hold at least one step",
        ));
    }
    if count(&args, StepStatus::InProgress) > 1 {
        return Err(ToolFailure::invalid_arguments(
            "at most one step of 'plan' may be in_progress",
        ));
    }
    Ok(args)
}

fn count(args: &UpdatePlanArgs, status: StepStatus) -> usize {
    args.plan
        .iter()
        .filter(|step| step.status == status)
        .count()
}
