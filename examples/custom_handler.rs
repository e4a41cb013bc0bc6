//! A custom agent in Rust: a handler writes each run's answer with AgentScope's layered response
//! builder, and agentwire's server serves it through every dialect — the native API, the AI SDK,
//! AG-UI, AgentScope, A2A and AgentX — with sessions, cancellation and heartbeats.
//!
//! `cargo run -p agentwire-examples --example custom_handler -- [ADDR]` (default
//! `127.0.0.1:8080`), then e.g. `agentwire chat --agent wordsmith` or any dialect's client.
//!
//! The agent, `wordsmith`, answers with the words of the question counted: a short reasoning,
//! the answer streamed word by word, the counts as a `data` part and a bar chart as an image.

use std::time::Duration;

use agentwire_runtime::{Agent, HandlerError, HandlerRequest, Responder};
use agentwire_server::{Server, Settings};
use serde_json::json;

/// The handler: one assistant message, written piece by piece as a model's would stream.
async fn wordsmith(request: HandlerRequest, mut response: Responder) -> Result<(), HandlerError> {
    let question = request.question();
    let words: Vec<&str> = question.split_whitespace().collect();
    if words.is_empty() {
        return Err(HandlerError::new(
            "empty_question",
            "send a message with words",
        ));
    }
    response.in_progress()?;
    let mut message = response.assistant_message()?;

    let mut reasoning = message.reasoning()?;
    reasoning.delta(&format!("{} words to count.", words.len()))?;
    reasoning.complete()?;

    // The answer streams word by word; a cancel drops this future at the next sleep.
    let mut text = message.text()?;
    text.delta(&format!("You wrote {} words:", words.len()))?;
    for word in &words {
        tokio::time::sleep(Duration::from_millis(20)).await;
        text.delta(&format!(" {word}"))?;
    }
    text.complete()?;

    let longest = words
        .iter()
        .map(|word| word.chars().count())
        .max()
        .unwrap_or(0);
    message.add_data(
        "word_stats",
        json!({"words": words.len(), "characters": question.chars().count(), "longest": longest}),
    )?;
    message.add_image_url(chart(&words), "image/svg+xml")?;
    message.complete()?;
    response.completed().map_err(HandlerError::from)
}

/// A bar per word, its height the word's length, as an SVG `data:` URL.
fn chart(words: &[&str]) -> String {
    let bars: String = words
        .iter()
        .enumerate()
        .map(|(at, word)| {
            let height = word.chars().count() * 4;
            format!(
                "<rect x='{}' y='{}' width='8' height='{height}'/>",
                at * 10,
                60 - height.min(60)
            )
        })
        .collect();
    let svg = format!(
        "<svg xmlns='http://www.w3.org/2000/svg' width='{}' height='60'>{bars}</svg>",
        words.len() * 10
    );
    format!(
        "data:image/svg+xml,{}",
        svg.replace('<', "%3C")
            .replace('>', "%3E")
            .replace(' ', "%20")
            .replace('#', "%23")
    )
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:8080".to_owned());
    let agent = Agent::builder("wordsmith")
        .description("Counts the words of your message")
        .handler(wordsmith)
        .max_duration(Duration::from_secs(60))
        .build()?;
    let settings = Settings {
        addr: addr.parse()?,
        ..Settings::default()
    };
    let server = Server::open(vec![agent], settings).await?;
    let listener = server.bind().await?;
    // The first line says where it listens (port 0 picks a free port).
    println!("listening on http://{}", listener.local_addr()?);
    server
        .serve(listener, agentwire_server::shutdown_signal())
        .await?;
    Ok(())
}
