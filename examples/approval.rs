//! A run whose tool calls need approval: when the run settles awaiting approval, each request is
//! shown with its tool call and answered from stdin (`y` approves), and the run goes on.
//!
//! `cargo run -p agentwire-examples --example approval -- [--agent NAME] "message"`

use std::io::BufRead;

use agentwire_client::{Client, ClientError, StartRun};
use agentwire_core::{Awaiting, Message, RunStatus};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), ClientError> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let agent = match args.iter().position(|arg| arg == "--agent") {
        Some(at) if at + 1 < args.len() => {
            let name = args.remove(at + 1);
            args.remove(at);
            Some(name)
        }
        _ => None,
    };
    let text = args
        .pop()
        .unwrap_or_else(|| "Write a haiku to haiku.txt".to_owned());
    let client = Client::new(&agentwire_examples::server_url())?;
    let mut start = StartRun::new(Message::user(text));
    if let Some(agent) = agent {
        start = start.agent(agent);
    }
    let mut run = client.start(&start).await?;
    let mut stdin = std::io::stdin().lock().lines();
    while run.finish().await? == Some(RunStatus::Awaiting(Awaiting::Approval)) {
        let questions: Vec<(String, String)> = run
            .pending_approvals()
            .into_iter()
            .map(|(request, call)| {
                let call = call.map_or_else(String::new, |call| {
                    format!("{} {}", call.tool_name, call.args.to_json_text())
                });
                (request.approval_id.to_string(), call)
            })
            .collect();
        for (approval_id, call) in questions {
            println!("allow {call}? [y/n]");
            let answer = stdin.next().and_then(Result::ok).unwrap_or_default();
            let approved = answer.trim().eq_ignore_ascii_case("y");
            run.approve(&approval_id, approved, None).await?;
            println!("{}", if approved { "approved" } else { "denied" });
        }
    }
    for message in run.state().messages() {
        println!("{:?}: {}", message.role, message.content());
    }
    println!(
        "[{}]",
        run.status().map_or("unknown", |status| status.name())
    );
    Ok(())
}
