//! Following a run by its id, from its first event: what a client does after it lost its
//! connection or restarted (within one stream the SDK resumes by itself, after the last event
//! it applied, with `Last-Event-ID`). Replayed events and live ones arrive alike, with no gap
//! and no duplicate.
//!
//! `cargo run -p agentwire-examples --example resume -- RUN_ID`

use agentwire_client::{Client, ClientError};
use agentwire_core::RunId;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), ClientError> {
    let Some(run_id) = std::env::args().nth(1) else {
        eprintln!("usage: resume RUN_ID");
        std::process::exit(2);
    };
    let client = Client::new(&agentwire_examples::server_url())?;
    let mut run = client.events(&RunId::new(run_id));
    let mut n_events = 0;
    while run.next().await?.is_some() {
        n_events += 1;
    }
    for message in run.state().messages() {
        println!("{}", message.content());
    }
    println!(
        "[{} after {n_events} events, last {}]",
        run.status().map_or("unknown", |status| status.name()),
        run.last_seq()
    );
    Ok(())
}
