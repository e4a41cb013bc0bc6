//! One chat turn, streamed: the answer's text is printed as its deltas arrive, read from the
//! accumulator the SDK keeps; then a second message continues the same session.
//!
//! `cargo run -p agentwire-examples --example chat_turn -- [--agent NAME] "message"`

use std::io::Write;

use agentwire_client::{Client, ClientError, RunStream, StartRun};
use agentwire_core::{EventKind, Message};

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
    let text = args.pop().unwrap_or_else(|| "Hello".to_owned());
    let client = Client::new(&agentwire_examples::server_url())?;

    let mut start = StartRun::new(Message::user(&text));
    if let Some(agent) = &agent {
        start = start.agent(agent.clone());
    }
    let mut run = client.start(&start).await?;
    print_answer(&mut run).await?;

    // The next message of the conversation: the same session, so the agent sees the history.
    let Some(session) = run.session_id().cloned() else {
        return Ok(());
    };
    let mut next = StartRun::new(Message::user("And once more, please.")).session(session);
    if let Some(agent) = agent {
        next = next.agent(agent);
    }
    let mut run = client.start(&next).await?;
    print_answer(&mut run).await
}

/// Prints text deltas as they arrive and the run's status at the end.
async fn print_answer(run: &mut RunStream) -> Result<(), ClientError> {
    while let Some(event) = run.next().await? {
        if let EventKind::PartDelta { delta, .. } = &event.kind {
            print!("{delta}");
            let _ = std::io::stdout().flush();
        }
    }
    let status = run.status().map_or("unknown", |status| status.name());
    println!("\n[{status}]");
    Ok(())
}
