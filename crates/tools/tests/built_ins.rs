//! The built-ins that produce parts: `update_plan` (a `plan_update` after its result) and
//! `save_artifact` (the content saved as a versioned file, an `artifact` after its result).
#![allow(clippy::unwrap_used)]

use agentwire_core::part::{Artifact, PlanAction, PlanUpdate};
use agentwire_core::{Part, ToolCall, ToolErrorKind};
use agentwire_tools::{SaveArtifact, ToolLimits, Toolbox, UpdatePlan, Workspace};
use serde_json::{Value, json};
use tempfile::TempDir;
use tokio_util::sync::CancellationToken;

fn toolbox(workspace: &Workspace) -> Toolbox {
    let mut toolbox = Toolbox::new(ToolLimits::default());
    toolbox.add(UpdatePlan::new()).unwrap();
    toolbox.add(SaveArtifact::new(workspace.clone())).unwrap();
    toolbox
}

/// Runs a call; returns its answer and the part the tool adds after it.
async fn run(toolbox: &Toolbox, id: &str, name: &str, args: Value) -> (Part, Option<Part>) {
    let call = ToolCall {
        tool_call_id: id.into(),
        tool_name: name.into(),
        args: args.into(),
    };
    let outcome = toolbox.run(&call, CancellationToken::new()).await;
    let extra = toolbox.result_part(&call, &outcome);
    (outcome, extra)
}

#[track_caller]
fn result_of(part: &Part) -> &Value {
    match part {
        Part::ToolResult(result) => &result.result,
        other => panic!("not a result: {other:?}"),
    }
}

#[track_caller]
fn validation_error(part: &Part) -> &str {
    match part {
        Part::ToolError(error) if error.error_type == ToolErrorKind::Validation => &error.message,
        other => panic!("not a validation error: {other:?}"),
    }
}

#[tokio::test]
async fn a_plan_update_follows_the_result_and_completes_with_its_steps() {
    let temp = TempDir::new().unwrap();
    let toolbox = toolbox(&Workspace::open(temp.path()).unwrap());
    let plan = json!({"plan": [
        {"step": "Find sources", "status": "completed"},
        {"step": "Write the summary", "status": "in_progress"}
    ], "explanation": "Sources found."});
    let (outcome, extra) = run(&toolbox, "c1", "update_plan", plan.clone()).await;
    assert_eq!(result_of(&outcome), &json!({"steps": 2, "completed": 1}));
    assert_eq!(
        extra,
        Some(Part::PlanUpdate(PlanUpdate {
            plan_id: "plan_c1".into(),
            action: PlanAction::Created,
            details: Some(plan),
        }))
    );

    let done = json!({"plan": [{"step": "Find sources", "status": "completed"}]});
    let (_, extra) = run(&toolbox, "c2", "update_plan", done).await;
    assert!(
        matches!(
            extra,
            Some(Part::PlanUpdate(PlanUpdate {
                action: PlanAction::Completed,
                ..
            }))
        ),
        "{extra:?}"
    );
}

#[tokio::test]
async fn a_plan_that_is_no_plan_is_a_validation_error_and_adds_nothing() {
    let temp = TempDir::new().unwrap();
    let toolbox = toolbox(&Workspace::open(temp.path()).unwrap());
    for (args, says) in [
        (json!({"plan": []}), "at least one step"),
        (
            json!({"plan": [{"step": "a", "status": "in_progress"}, {"step": "b", "status": "in_progress"}]}),
            "at most one step",
        ),
        (
            json!({"plan": [{"step": "a", "status": "started"}]}),
            "status",
        ),
    ] {
        let (outcome, extra) = run(&toolbox, "c1", "update_plan", args).await;
        assert!(validation_error(&outcome).contains(says), "{outcome:?}");
        assert_eq!(extra, None);
    }
}

#[tokio::test]
async fn artifacts_are_saved_in_versions_and_shown_with_a_preview() {
    let temp = TempDir::new().unwrap();
    let toolbox = toolbox(&Workspace::open(temp.path()).unwrap());
    let long = "x".repeat(300);
    let (outcome, extra) = run(
        &toolbox,
        "c1",
        "save_artifact",
        json!({"name": "report.md", "title": "Report", "content": long}),
    )
    .await;
    assert_eq!(
        result_of(&outcome),
        &json!({"artifact_id": "report.md", "path": "/artifacts/report.md", "title": "Report",
                "media_type": "text/markdown", "version": 1, "bytes": 300})
    );
    assert_eq!(
        extra,
        Some(Part::Artifact(Artifact {
            artifact_id: "report.md".into(),
            title: "Report".into(),
            version: Some(1),
            preview: Some(format!("{}…", "x".repeat(240))),
        }))
    );

    let (outcome, extra) = run(
        &toolbox,
        "c2",
        "save_artifact",
        json!({"name": "report.md", "content": "v2", "media_type": "text/plain"}),
    )
    .await;
    assert_eq!(result_of(&outcome)["version"], 2);
    assert_eq!(result_of(&outcome)["title"], "report.md");
    assert_eq!(result_of(&outcome)["media_type"], "text/plain");
    let Some(Part::Artifact(artifact)) = extra else {
        panic!("no artifact")
    };
    assert_eq!(
        (artifact.version, artifact.preview.as_deref()),
        (Some(2), Some("v2"))
    );
    let root = temp.path().join("artifacts");
    assert_eq!(
        std::fs::read_to_string(root.join("report.md")).unwrap(),
        "v2"
    );
    assert_eq!(
        std::fs::read_to_string(root.join(".versions/report.md/1")).unwrap(),
        long
    );
}

#[tokio::test]
async fn an_artifact_name_must_be_a_plain_file_name() {
    let temp = TempDir::new().unwrap();
    let toolbox = toolbox(&Workspace::open(temp.path()).unwrap());
    for name in ["", "../x", "a/b.md", ".hidden"] {
        let args = json!({"name": name, "content": "c"});
        let (outcome, extra) = run(&toolbox, "c1", "save_artifact", args).await;
        assert!(
            validation_error(&outcome).contains("plain file name"),
            "{name}: {outcome:?}"
        );
        assert_eq!(extra, None);
    }
}
