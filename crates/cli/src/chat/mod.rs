//! `agentwire chat`: a terminal chat with an agent. Reads lines from stdin, streams each answer
//! through the [`render::Renderer`], asks approvals as y/n questions, and handles Ctrl-C: the
//! first cancels the running answer, a second (or one at the prompt) quits. `/attach PATH`
//! attaches a file to the next message.

mod conversation;
mod render;

use std::io::IsTerminal;
use std::process::ExitCode;
use std::time::Duration;

use agentwire_client::Client;
use agentwire_client::ai_sdk::AiSdkChat;
use agentwire_core::Message;
use anyhow::Result;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::sync::mpsc;

use self::conversation::{Conversation, Turn};
use self::render::Renderer;
use crate::out;

/// The wire the chat speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum ChatDialect {
    /// agentwire's native API (`URL` is the server's base URL).
    Native,
    /// An AI SDK UI message stream endpoint (`URL` is the endpoint, e.g. `…/api/chat`).
    AiSdk,
}

/// What `agentwire chat` was asked.
pub(crate) struct ChatArgs {
    pub(crate) url: String,
    pub(crate) agent: Option<String>,
    pub(crate) dialect: Option<ChatDialect>,
    pub(crate) key: Option<String>,
}

/// How a turn ended.
enum Outcome {
    Settled,
    Quit,
}

/// Runs the chat until stdin ends or the user quits.
pub(crate) async fn run(args: ChatArgs) -> Result<ExitCode> {
    // A URL whose path ends in /api/chat is an AI SDK endpoint unless --dialect says otherwise.
    let dialect = args.dialect.unwrap_or_else(|| {
        if args.url.trim_end_matches('/').ends_with("/api/chat") {
            ChatDialect::AiSdk
        } else {
            ChatDialect::Native
        }
    });
    let mut conversation = match dialect {
        ChatDialect::Native => {
            let mut client = Client::new(&args.url)?;
            if let Some(key) = &args.key {
                client = client.with_api_key(key)?;
            }
            Conversation::Native {
                client,
                agent: args.agent.clone(),
                session: None,
                waiting: None,
            }
        }
        ChatDialect::AiSdk => {
            let mut chat = AiSdkChat::new(&args.url)?;
            if let Some(key) = &args.key {
                chat = chat.with_api_key(key)?;
            }
            Conversation::AiSdk(Box::new(chat))
        }
    };
    let terminal = std::io::stdout().is_terminal();
    let color = terminal && std::env::var_os("NO_COLOR").is_none();
    let mut renderer = Renderer::new(color, terminal);
    // Prompts are for a person typing; piped input gets none (nothing would end their line).
    let typing = std::io::stdin().is_terminal();
    let mut lines = stdin_lines();
    let mut interrupts = Interrupts::new()?;
    // Files `/attach` added, sent with the next message.
    let mut attached = Vec::new();
    let agent = args.agent.as_deref().unwrap_or("the default agent");
    write(&renderer.notice(
        &format!(
            "agentwire chat with {agent} at {} ({}). /attach PATH adds a file to your next message. Ctrl-C stops an answer; Ctrl-C again or Ctrl-D quits.",
            args.url,
            match dialect {
                ChatDialect::Native => "native",
                ChatDialect::AiSdk => "ai-sdk",
            }
        ),
        false,
    ))?;
    loop {
        if typing {
            write(&renderer.prompt())?;
        }
        let line = tokio::select! {
            line = lines.recv() => line,
            () = interrupts.next() => None,
        };
        let Some(line) = line else {
            write("\n")?;
            return Ok(ExitCode::SUCCESS);
        };
        let text = line.trim();
        if text.is_empty() {
            continue;
        }
        if let Some(path) = text.strip_prefix("/attach") {
            let path = path.trim();
            let note = match crate::attach::file_part(std::path::Path::new(path)) {
                Ok(part) => {
                    attached.push(part);
                    (format!("📎 {path} goes with your next message"), false)
                }
                Err(error) if path.is_empty() => (format!("✗ /attach PATH: {error}"), true),
                Err(error) => (format!("✗ {error:#}"), true),
            };
            write(&renderer.notice(&note.0, note.1))?;
            continue;
        }
        let mut message = Message::user(text);
        message.parts.append(&mut attached);
        let mut turn = match conversation.send(message).await {
            Ok(turn) => turn,
            Err(error) => {
                write(&renderer.notice(&format!("✗ {error}"), true))?;
                continue;
            }
        };
        loop {
            if let Outcome::Quit = drive(&mut turn, &mut renderer, &mut interrupts).await? {
                write(&renderer.end_turn())?;
                return Ok(ExitCode::SUCCESS);
            }
            let pending = conversation.settle(turn);
            if pending.is_empty() {
                break;
            }
            let mut answers = Vec::new();
            for approval in &pending {
                let approved = loop {
                    write(&renderer.approval_prompt(approval))?;
                    let answer = tokio::select! {
                        line = lines.recv() => line,
                        () = interrupts.next() => None,
                    };
                    let Some(answer) = answer else {
                        write("\n")?;
                        return Ok(ExitCode::SUCCESS);
                    };
                    match answer.trim().to_ascii_lowercase().as_str() {
                        "y" | "yes" => break true,
                        "n" | "no" => break false,
                        _ => {}
                    }
                };
                answers.push((approval.approval_id.clone(), approved));
            }
            turn = match conversation.answer(&answers).await {
                Ok(turn) => turn,
                Err(error) => {
                    write(&renderer.notice(&format!("✗ {error}"), true))?;
                    break;
                }
            };
        }
    }
}

/// Streams one turn to the terminal until it settles, or the user quits.
async fn drive(
    turn: &mut Turn,
    renderer: &mut Renderer,
    interrupts: &mut Interrupts,
) -> Result<Outcome> {
    let mut canceling = false;
    let mut ticker = tokio::time::interval(Duration::from_millis(80));
    loop {
        tokio::select! {
            event = turn.next() => match event {
                Ok(Some(event)) => write(&renderer.event(&event))?,
                Ok(None) => {
                    write(&renderer.end_turn())?;
                    return Ok(Outcome::Settled);
                }
                Err(error) => {
                    write(&renderer.notice(&format!("✗ {error}"), true))?;
                    return Ok(Outcome::Settled);
                }
            },
            () = interrupts.next() => {
                if canceling {
                    return Ok(Outcome::Quit);
                }
                canceling = true;
                write(&renderer.stop("stopping… (Ctrl-C again quits)"))?;
                match turn.cancel().await {
                    Ok(true) => {}
                    Ok(false) => write(&renderer.notice("■ stopped", false))?,
                    Err(error) => write(&renderer.notice(&format!("✗ {error}"), true))?,
                }
            },
            _ = ticker.tick(), if renderer.spinning() => write(&renderer.tick())?,
        }
    }
}

/// Ctrl-C presses, from one listener that lives as long as the chat: a press while the chat is
/// busy (asking the server to cancel) waits for the next `select!` instead of being lost, as it
/// would between two short-lived `ctrl_c()` listeners.
struct Interrupts {
    #[cfg(unix)]
    signal: tokio::signal::unix::Signal,
}

impl Interrupts {
    fn new() -> Result<Self> {
        Ok(Self {
            #[cfg(unix)]
            signal: tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())?,
        })
    }

    async fn next(&mut self) {
        #[cfg(unix)]
        self.signal.recv().await;
        #[cfg(not(unix))]
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// Stdin's lines, read by a task so that waiting for one can be raced with Ctrl-C.
fn stdin_lines() -> mpsc::Receiver<String> {
    let (sender, receiver) = mpsc::channel(16);
    tokio::spawn(async move {
        let mut lines = BufReader::new(tokio::io::stdin()).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            if sender.send(line).await.is_err() {
                break;
            }
        }
    });
    receiver
}

fn write(text: &str) -> Result<()> {
    if text.is_empty() {
        return Ok(());
    }
    out::write(text)
}
