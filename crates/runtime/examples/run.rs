//! Runs one turn of an agent in this process and prints its parts as they stream, asking on the
//! terminal when a call needs approval. Without `--config` the agent is the default assistant
//! of `agentwire serve` (the offline demo brain unless `OPENAI_API_KEY` or `ANTHROPIC_API_KEY` is set).
//!
//! ```sh
//! cargo run -p agentwire-runtime --example run -- tour
//! cargo run -p agentwire-runtime --example run -- --config agentwire.toml --agent assistant "Hi"
//! ```

use std::collections::HashSet;
use std::io::{BufRead, Write};
use std::path::Path;

use agentwire_core::part::ApprovalResponse;
use agentwire_core::{
    Awaiting, Event, EventKind, Message, MessageId, Part, Role, RunStatus, StreamedPart,
};
use agentwire_runtime::{AgentConfig, AgentsFile, RunStart};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let (mut config_path, mut agent_name, mut words) = (None, None, Vec::new());
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--config" => config_path = args.next(),
            "--agent" => agent_name = args.next(),
            _ => words.push(arg),
        }
    }
    let env = |name: &str| std::env::var(name).ok();
    let agent = match config_path {
        Some(path) => {
            let file = AgentsFile::from_toml(&std::fs::read_to_string(&path)?)?;
            let entry = match &agent_name {
                Some(name) => file.agents.iter().find(|agent| agent.name == *name),
                None => file.agents.first(),
            }
            .ok_or_else(|| anyhow::anyhow!("no such agent in {path}"))?;
            let base = Path::new(&path).parent().unwrap_or(Path::new("."));
            entry.build(base, env).await?
        }
        None => {
            AgentConfig::default_assistant(env)
                .build(Path::new("."), env)
                .await?
        }
    };
    eprintln!("agent '{}' on {}", agent.name(), agent.describe());

    let question = if words.is_empty() {
        "tour".to_owned()
    } else {
        words.join(" ")
    };
    let mut run = agent.start(RunStart::new(vec![Message::user(question)]))?;
    let mut out = std::io::stdout();
    let mut printer = Printer::default();
    while let Some(event) = run.events.recv().await {
        printer.show(&event, &mut out)?;
        if let EventKind::RunStatus {
            status,
            error,
            usage,
        } = &event.kind
        {
            match status {
                RunStatus::Awaiting(Awaiting::Approval) => {
                    for answer in ask_approvals(&run.handle.output())? {
                        run.handle.input(answer)?;
                    }
                }
                status if status.is_terminal() => {
                    let error = error.as_ref().map(|error| format!(": {}", error.message));
                    let usage = usage.map(|usage| {
                        format!(
                            " ({} tokens in, {} out)",
                            usage.input_tokens, usage.output_tokens
                        )
                    });
                    println!(
                        "[{}{}{}]",
                        status.name(),
                        error.unwrap_or_default(),
                        usage.unwrap_or_default()
                    );
                }
                _ => {}
            }
        }
    }
    Ok(())
}

/// Prints what each event adds: text as it streams, reasoning dimmed, whole parts on a line
/// each. Tool-call arguments are shown once the call is complete, so their deltas are skipped.
#[derive(Default)]
struct Printer {
    streaming_calls: HashSet<(MessageId, u32)>,
}

impl Printer {
    fn show(&mut self, event: &Event, out: &mut impl Write) -> std::io::Result<()> {
        const DIM: &str = "\x1b[2m";
        const RESET: &str = "\x1b[0m";
        match &event.kind {
            EventKind::PartStart {
                message_id,
                index,
                part,
            } => match part {
                StreamedPart::Reasoning => write!(out, "{DIM}")?,
                StreamedPart::ToolCall { .. } => {
                    self.streaming_calls.insert((message_id.clone(), *index));
                }
                _ => {}
            },
            EventKind::PartDelta {
                message_id,
                index,
                delta,
            } if !self.streaming_calls.contains(&(message_id.clone(), *index)) => {
                write!(out, "{delta}")?;
            }
            EventKind::PartComplete { part, .. } => match part {
                Part::Reasoning(_) => writeln!(out, "{RESET}")?,
                Part::Text(_) | Part::Refusal(_) => writeln!(out)?,
                Part::StepStart(_) => writeln!(out)?,
                Part::ToolCall(call) => {
                    writeln!(out, "→ {}({})", call.tool_name, call.args.as_value())?;
                }
                Part::ToolResult(result) => writeln!(out, "← {}", result.result)?,
                Part::ToolError(error) => {
                    writeln!(out, "✗ {:?}: {}", error.error_type, error.message)?;
                }
                other => writeln!(out, "[{}]", other.type_name())?,
            },
            _ => {}
        }
        out.flush()
    }
}

/// Asks on the terminal about each approval request the output leaves open.
fn ask_approvals(output: &[Message]) -> anyhow::Result<Vec<Message>> {
    let answered: Vec<_> = output
        .iter()
        .flat_map(|message| &message.parts)
        .filter_map(|part| match part {
            Part::ApprovalResponse(response) => Some(response.approval_id.clone()),
            _ => None,
        })
        .collect();
    let mut answers = Vec::new();
    let parts = output.iter().flat_map(|message| &message.parts);
    for part in parts {
        let Part::ApprovalRequest(request) = part else {
            continue;
        };
        if answered.contains(&request.approval_id) {
            continue;
        }
        print!("\napprove call {}? [y/N] ", request.tool_call_id);
        std::io::stdout().flush()?;
        let mut line = String::new();
        std::io::stdin().lock().read_line(&mut line)?;
        answers.push(Message::new(
            Role::User,
            vec![Part::ApprovalResponse(ApprovalResponse {
                approval_id: request.approval_id.clone(),
                approved: line.trim().eq_ignore_ascii_case("y"),
                reason: None,
            })],
        ));
    }
    Ok(answers)
}
