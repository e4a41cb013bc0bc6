//! `agentwire chat`: a terminal chat with an agent. Reads lines from stdin, streams each answer
//! through the [`render::Renderer`], asks approvals as y/n questions, and handles Ctrl-C: the
//! first cancels the running answer, a second (or one at the prompt) quits. `/attach PATH`
//! attaches a file to the next message. At a terminal, a line typed while an answer streams
//! goes into the session at once (`/steer …`, `/queue …`, `/interrupt …`, `/rollback …`, or the
//! agent's default mode), its outcome is shown as the run reports it, and the runs such lines
//! start are streamed after the answer, in order.

mod conversation;
mod render;

use std::io::IsTerminal;
use std::process::ExitCode;
use std::time::Duration;

use agentwire_client::Client;
use agentwire_client::ai_sdk::AiSdkChat;
use agentwire_core::{InputMode, Message};
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
    let mut sent = Sent::default();
    let agent = args.agent.as_deref().unwrap_or("the default agent");
    write(&renderer.notice(
        &format!(
            "agentwire chat with {agent} at {} ({}). /attach PATH adds a file to your next message. While it answers, type to queue a message (/steer, /interrupt to say otherwise). Ctrl-C stops an answer; Ctrl-C again or Ctrl-D quits.",
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
        let turn = match conversation.send(message).await {
            Ok(turn) => turn,
            Err(error) => {
                write(&renderer.notice(&format!("✗ {error}"), true))?;
                continue;
            }
        };
        let mut chat = Chat {
            conversation: &mut conversation,
            renderer: &mut renderer,
            interrupts: &mut interrupts,
            lines: &mut lines,
            sent: &mut sent,
            busy_input: typing,
        };
        if chat.converse(turn).await?.is_some() {
            return Ok(ExitCode::SUCCESS);
        }
        // The runs that lines typed meanwhile started, one after another.
        while let Some(turn) = chat.next_sent().await? {
            if chat.converse(turn).await?.is_some() {
                return Ok(ExitCode::SUCCESS);
            }
        }
    }
}

/// What one exchange works with: the conversation, the screen, and the user's keys.
struct Chat<'a> {
    conversation: &'a mut Conversation,
    renderer: &'a mut Renderer,
    interrupts: &'a mut Interrupts,
    lines: &'a mut mpsc::Receiver<String>,
    /// Lines typed while an answer streamed, sent into the session, by client message id.
    sent: &'a mut Sent,
    /// Whether a line typed while an answer streams is sent at once (a person at a terminal;
    /// piped lines wait their turn, as a script expects).
    busy_input: bool,
}

/// Lines sent while an answer streamed, oldest first, and the count naming them.
#[derive(Default)]
struct Sent {
    ids: std::collections::VecDeque<String>,
    count: u64,
}

impl Chat<'_> {
    /// Streams a turn and any approvals it asks, to its end; `Some` when the user quit.
    async fn converse(&mut self, mut turn: Turn) -> Result<Option<()>> {
        loop {
            if let Outcome::Quit = self.drive(&mut turn).await? {
                write(&self.renderer.end_turn())?;
                return Ok(Some(()));
            }
            let pending = self.conversation.settle(turn);
            if pending.is_empty() {
                return Ok(None);
            }
            let mut answers = Vec::new();
            for approval in &pending {
                let approved = loop {
                    write(&self.renderer.approval_prompt(approval))?;
                    let answer = tokio::select! {
                        line = self.lines.recv() => line,
                        () = self.interrupts.next() => None,
                    };
                    let Some(answer) = answer else {
                        write("\n")?;
                        return Ok(Some(()));
                    };
                    match answer.trim().to_ascii_lowercase().as_str() {
                        "y" | "yes" => break true,
                        "n" | "no" => break false,
                        _ => {}
                    }
                };
                answers.push((approval.approval_id.clone(), approved));
            }
            turn = match self.conversation.answer(&answers).await {
                Ok(turn) => turn,
                Err(error) => {
                    write(&self.renderer.notice(&format!("✗ {error}"), true))?;
                    return Ok(None);
                }
            };
        }
    }

    /// Streams one turn to the terminal until it settles, or the user quits. A line typed
    /// meanwhile goes into the session: `/steer …`, `/queue …`, `/interrupt …` or
    /// `/rollback …` name the mode, a plain line takes the agent's default.
    async fn drive(&mut self, turn: &mut Turn) -> Result<Outcome> {
        let mut canceling = false;
        let mut ticker = tokio::time::interval(Duration::from_millis(80));
        loop {
            tokio::select! {
                event = turn.next() => match event {
                    Ok(Some(event)) => write(&self.renderer.event(&event))?,
                    Ok(None) => {
                        write(&self.renderer.end_turn())?;
                        return Ok(Outcome::Settled);
                    }
                    Err(error) => {
                        write(&self.renderer.notice(&format!("✗ {error}"), true))?;
                        return Ok(Outcome::Settled);
                    }
                },
                () = self.interrupts.next() => {
                    if canceling {
                        return Ok(Outcome::Quit);
                    }
                    canceling = true;
                    write(&self.renderer.stop("stopping… (Ctrl-C again quits)"))?;
                    match turn.cancel().await {
                        Ok(true) => {}
                        Ok(false) => write(&self.renderer.notice("■ stopped", false))?,
                        Err(error) => write(&self.renderer.notice(&format!("✗ {error}"), true))?,
                    }
                },
                line = self.lines.recv(), if self.busy_input => match line {
                    Some(line) => self.send_while(turn, &line).await?,
                    // Stdin ended: the answer still streams to its end.
                    None => self.busy_input = false,
                },
                _ = ticker.tick(), if self.renderer.spinning() => write(&self.renderer.tick())?,
            }
        }
    }

    /// Sends a line typed while `turn` answers into the session.
    async fn send_while(&mut self, turn: &Turn, line: &str) -> Result<()> {
        let (mode, text) = busy_mode(line.trim());
        if text.is_empty() {
            return Ok(());
        }
        self.sent.count += 1;
        let id = format!("chat_{}_{}", std::process::id(), self.sent.count);
        let note = match self
            .conversation
            .send_while(turn, Message::user(text), mode, id.clone())
            .await
        {
            Some(Ok(entry)) => {
                self.sent.ids.push_back(id);
                (
                    format!("↳ {}: {}", entry.outcome, entry.client_message_id),
                    false,
                )
            }
            Some(Err(error)) => (format!("✗ {error}"), true),
            None => (
                "✗ this chat sends only between answers here; send it again when this one ends"
                    .to_owned(),
                true,
            ),
        };
        write(&self.renderer.notice(&note.0, note.1))
    }

    /// The turn of the next run a line sent meanwhile started, once it starts; lines a run took
    /// as it went (steers) or that were not delivered are passed over, the latter said.
    async fn next_sent(&mut self) -> Result<Option<Turn>> {
        while let Some(id) = self.sent.ids.front().cloned() {
            let entry = loop {
                match self.conversation.outcome(&id).await {
                    Ok(entry) if entry.is_settled() => break Some(entry),
                    Ok(_) => {}
                    Err(error) => {
                        write(&self.renderer.notice(&format!("✗ {error}"), true))?;
                        break None;
                    }
                }
                tokio::select! {
                    () = tokio::time::sleep(Duration::from_millis(250)) => {}
                    () = self.interrupts.next() => return Ok(None),
                }
            };
            self.sent.ids.pop_front();
            let Some(entry) = entry else { continue };
            match (entry.outcome.as_str(), entry.step, &entry.run_id) {
                ("delivered", Some(0), Some(run_id)) => {
                    return Ok(self.conversation.follow(run_id));
                }
                ("not_delivered", ..) => {
                    let why = entry.reason.as_deref().unwrap_or("no reason given");
                    let note = format!("↳ not delivered ({why}): {id}");
                    write(&self.renderer.notice(&note, true))?;
                }
                _ => {}
            }
        }
        Ok(None)
    }
}

/// The mode a line names (`/steer …`), and its text.
fn busy_mode(line: &str) -> (Option<InputMode>, &str) {
    for mode in [
        InputMode::Steer,
        InputMode::Queue,
        InputMode::Interrupt,
        InputMode::Rollback,
    ] {
        if let Some(rest) = line
            .strip_prefix('/')
            .and_then(|l| l.strip_prefix(mode.name()))
            && (rest.is_empty() || rest.starts_with(' '))
        {
            return (Some(mode), rest.trim());
        }
    }
    (None, line)
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
