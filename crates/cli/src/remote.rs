//! `agentwire agents` and `agentwire run`: one request each to a server's native API, through
//! the client SDK.

use std::process::ExitCode;

use agentwire_client::{Client, StartRun};
use agentwire_core::{Message, RunStatus};
use anyhow::Result;
use serde_json::json;

use crate::out::outln;

/// `run`'s exit code for each way a run can settle (README "Clients"): 0 completed, 1 failed or
/// rejected, 3 awaiting the client (approval, tool output, input), 4 canceled, 5 incomplete.
/// 2 is every error before the run settled (bad arguments, no server, a refusal).
pub(crate) fn exit_code(status: Option<RunStatus>) -> u8 {
    match status {
        Some(RunStatus::Completed) => 0,
        Some(RunStatus::Failed | RunStatus::Rejected) => 1,
        Some(RunStatus::Awaiting(_)) => 3,
        Some(RunStatus::Canceled) => 4,
        Some(RunStatus::Incomplete) => 5,
        // The stream settled without saying how: not a success.
        Some(RunStatus::Created | RunStatus::Queued | RunStatus::InProgress) | None => 2,
    }
}

fn client(url: &str, key: Option<&str>) -> Result<Client> {
    let client = Client::new(url)?;
    Ok(match key {
        Some(key) => client.with_api_key(key)?,
        None => client,
    })
}

/// Lists the server's agents: one `name  description` line each, or their JSON.
pub(crate) async fn agents(url: &str, key: Option<&str>, as_json: bool) -> Result<ExitCode> {
    let agents = client(url, key)?.agents().await?;
    if as_json {
        let list: Vec<_> = agents
            .iter()
            .map(|agent| json!({"name": agent.name, "description": agent.description}))
            .collect();
        outln!(
            "{}",
            serde_json::to_string_pretty(&json!({"agents": list}))?
        )?;
    } else {
        let width = agents
            .iter()
            .map(|agent| agent.name.len())
            .max()
            .unwrap_or(0);
        for agent in &agents {
            outln!("{:width$}  {}", agent.name, agent.description)?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// What `agentwire run` was asked.
pub(crate) struct RunArgs {
    pub(crate) url: String,
    pub(crate) key: Option<String>,
    pub(crate) agent: Option<String>,
    pub(crate) session: Option<String>,
    pub(crate) message: String,
    /// Files attached to the message.
    pub(crate) files: Vec<std::path::PathBuf>,
}

/// Runs one message to its end and prints the run and its messages as JSON; the exit code
/// says how it ended ([`exit_code`]).
pub(crate) async fn run(args: RunArgs) -> Result<ExitCode> {
    let client = client(&args.url, args.key.as_deref())?;
    let mut message = Message::user(args.message);
    for path in &args.files {
        message.parts.push(crate::attach::file_part(path)?);
    }
    let mut start = StartRun::new(message);
    if let Some(agent) = args.agent {
        start = start.agent(agent);
    }
    if let Some(session) = args.session {
        start = start.session(session);
    }
    let mut run = client.start(&start).await?;
    let status = run.finish().await?;
    let state = run.state();
    let mut report = json!({
        "run_id": run.run_id().map(|id| id.as_str()),
        "session_id": run.session_id().map(|id| id.as_str()),
        "status": status,
        "messages": state.messages(),
    });
    if let Some(usage) = state.usage() {
        report["usage"] = json!(usage);
    }
    if !state.errors().is_empty() {
        report["errors"] = json!(state.errors());
    }
    // `status` flattens to `{"status", "awaiting"?}`: lift its keys to the top.
    if let Some(serde_json::Value::Object(status)) = report.get("status").cloned() {
        for (key, value) in status {
            report[key] = value;
        }
    }
    outln!("{}", serde_json::to_string_pretty(&report)?)?;
    Ok(ExitCode::from(exit_code(status)))
}

#[cfg(test)]
mod tests {
    use agentwire_core::Awaiting;

    use super::*;

    #[test]
    fn every_status_has_its_exit_code() {
        assert_eq!(exit_code(Some(RunStatus::Completed)), 0);
        assert_eq!(exit_code(Some(RunStatus::Failed)), 1);
        assert_eq!(exit_code(Some(RunStatus::Rejected)), 1);
        assert_eq!(exit_code(Some(RunStatus::Awaiting(Awaiting::Approval))), 3);
        assert_eq!(exit_code(Some(RunStatus::Canceled)), 4);
        assert_eq!(exit_code(Some(RunStatus::Incomplete)), 5);
        assert_eq!(exit_code(None), 2);
    }
}
