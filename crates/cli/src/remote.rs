//! `agentwire agents`, `run`, `runs` and `follow`: requests to a server's native API, through
//! the client SDK.

use std::process::ExitCode;

use agentwire_client::{Client, RunQuery, RunStream, StartRun};
use agentwire_core::{Message, RunId, RunStatus};
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
    /// Start the run in the background and print it at once, rather than wait for its end.
    pub(crate) background: bool,
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
    if args.background {
        let run = client.start_background(&start).await?;
        let mut report = json!({"run_id": run.id, "session_id": run.session_id});
        lift_status(&mut report, &run.status);
        outln!("{}", serde_json::to_string_pretty(&report)?)?;
        return Ok(ExitCode::SUCCESS);
    }
    report(client.start(&start).await?).await
}

/// Follows a run from its first event to where it settles (one started with `--background`,
/// or anywhere else) and prints it as `run` does, with `run`'s exit code.
pub(crate) async fn follow(url: &str, key: Option<&str>, run_id: &str) -> Result<ExitCode> {
    let client = client(url, key)?;
    report(client.events(&RunId::from(run_id))).await
}

/// What `agentwire runs` was asked.
pub(crate) struct RunsArgs {
    pub(crate) url: String,
    pub(crate) key: Option<String>,
    pub(crate) query: RunQuery,
    pub(crate) json: bool,
}

/// Lists a page of the caller's runs, newest first: one `id  status  agent  session` line
/// each (the next page's command on stderr), or the page's JSON.
pub(crate) async fn runs(args: RunsArgs) -> Result<ExitCode> {
    let page = client(&args.url, args.key.as_deref())?
        .runs(&args.query)
        .await?;
    if args.json {
        let runs: Vec<_> = page
            .runs
            .iter()
            .map(|run| {
                let mut view =
                    json!({"id": run.id, "session_id": run.session_id, "agent": run.agent});
                lift_status(&mut view, &run.status);
                view
            })
            .collect();
        let body = json!({"runs": runs, "next": page.next});
        outln!("{}", serde_json::to_string_pretty(&body)?)?;
        return Ok(ExitCode::SUCCESS);
    }
    for run in &page.runs {
        let session = run.session_id.as_ref().map_or("-", |id| id.as_str());
        outln!(
            "{}  {:11}  {}  {}",
            run.id,
            run.status.name(),
            run.agent,
            session
        )?;
    }
    if let Some(next) = page.next {
        eprintln!("more: agentwire runs --cursor {next}");
    }
    Ok(ExitCode::SUCCESS)
}

/// Reads `run` to where it settles and prints the run and its messages as JSON; the exit code
/// says how it ended ([`exit_code`]).
async fn report(mut run: RunStream) -> Result<ExitCode> {
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
    if let Some(status) = status {
        lift_status(&mut report, &status);
    }
    outln!("{}", serde_json::to_string_pretty(&report)?)?;
    Ok(ExitCode::from(exit_code(status)))
}

/// Sets `status` (and `awaiting` when it waits) on `report`, as a run's JSON spells them.
fn lift_status(report: &mut serde_json::Value, status: &RunStatus) {
    if let Ok(serde_json::Value::Object(status)) = serde_json::to_value(status) {
        for (key, value) in status {
            report[key] = value;
        }
    }
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
