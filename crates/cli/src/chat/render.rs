//! The terminal chat's rendering: events in, terminal text out, no IO. Text streams as it
//! comes, reasoning dimmed, a tool call's arguments as they fill in and then, while it runs, a
//! spinner on the last line, replaced by its result or error; steps are rules; approvals,
//! files, data, artifacts, plans and sources are one line each; the run's end says how it
//! ended. Sub-agents' runs show indented under their calls (`nested`). The chat loop writes
//! what these functions return.

use std::collections::HashMap;

use agentwire_core::part::{ToolError, ToolResult};
use agentwire_core::{
    Accumulator, Awaiting, Event, EventKind, Message, Outcome, Part, RunId, RunStatus, StreamedPart,
};
use crossterm::Command;
use crossterm::style::{StyledContent, Stylize};
use crossterm::terminal::{Clear, ClearType};

mod nested;

/// A tool call waiting for a person's yes or no.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Approval {
    /// The sub-agent whose call it is; `None` for the top run's own.
    pub(crate) agent: Option<String>,
    pub(crate) approval_id: String,
    pub(crate) tool_name: String,
    pub(crate) args: String,
    pub(crate) reason: Option<String>,
}

/// The spinner's frames (braille dots: one cell wide in every terminal font).
const FRAMES: &[&str] = &["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

/// The most of a tool's result or a data part shown on its line.
const MAX_VALUE_CHARS: usize = 160;

/// What has been written so far, to place the next output.
#[derive(Debug)]
pub(crate) struct Renderer {
    color: bool,
    animate: bool,
    /// The cursor is not at the start of a line.
    line_open: bool,
    /// The streamed part output last went to, by message id and index.
    current: Option<(String, u32)>,
    /// Streamed parts by (message id, index): what kind each is.
    streamed: HashMap<(String, u32), StreamedPart>,
    /// The tool call whose arguments stream on screen. Calls streamed alongside it (parallel
    /// calls) are shown whole once complete, so their arguments do not interleave.
    args_on_screen: Option<(String, u32)>,
    /// Tool calls that have not answered, in call order: (call id, tool name).
    running: Vec<(String, String)>,
    /// Every call's tool name by call id, for answers that do not repeat it (an AI SDK
    /// continuation answers a call made in an earlier response).
    names: HashMap<String, String>,
    /// The spinner line is on screen (the cursor is at its end).
    spinner_shown: bool,
    frame: usize,
    /// The user asked the answer to stop: of what still comes, only how the run ends shows.
    stopping: bool,
    /// Sub-agents' runs under way, by run id.
    nested: HashMap<RunId, nested::NestedRun>,
}

impl Renderer {
    /// `color`: ANSI styles; `animate`: the spinner (a terminal that can rewrite a line).
    pub(crate) fn new(color: bool, animate: bool) -> Self {
        Self {
            color,
            animate,
            line_open: false,
            current: None,
            streamed: HashMap::new(),
            args_on_screen: None,
            running: Vec::new(),
            names: HashMap::new(),
            spinner_shown: false,
            frame: 0,
            stopping: false,
            nested: HashMap::new(),
        }
    }

    /// The output for one event.
    pub(crate) fn event(&mut self, event: &Event) -> String {
        if !event.is_own() {
            return match self.stopping {
                true => String::new(),
                false => self.nested_event(event),
            };
        }
        if self.stopping
            && !matches!(
                event.kind,
                EventKind::RunStatus { .. } | EventKind::Error(_)
            )
        {
            return String::new();
        }
        let mut out = self.hide_spinner();
        match &event.kind {
            EventKind::PartStart {
                message_id,
                index,
                part,
            } => {
                let key = (message_id.to_string(), *index);
                if let StreamedPart::ToolCall { tool_name, .. } = part {
                    if self.args_on_screen.is_none() {
                        self.switch_to(&mut out, Some(key.clone()));
                        out += &self.paint(format!("▸ {tool_name} "), Paint::Tool);
                        self.line_open = true;
                        self.args_on_screen = Some(key.clone());
                    }
                } else {
                    self.switch_to(&mut out, Some(key.clone()));
                }
                self.streamed.insert(key, part.clone());
            }
            EventKind::PartDelta {
                message_id,
                index,
                delta,
            } => {
                let key = (message_id.to_string(), *index);
                let streamed = self.streamed.get(&key);
                if matches!(streamed, Some(StreamedPart::ToolCall { .. }))
                    && self.args_on_screen.as_ref() != Some(&key)
                {
                    // A parallel call: shown whole when complete.
                    return out + &self.show_spinner();
                }
                self.switch_to(&mut out, Some(key.clone()));
                let paint = match self.streamed.get(&key) {
                    Some(StreamedPart::Reasoning) | Some(StreamedPart::ToolCall { .. }) => {
                        Paint::Dim
                    }
                    Some(StreamedPart::Refusal) => Paint::Error,
                    _ => Paint::Plain,
                };
                if !delta.is_empty() {
                    out += &self.paint(delta, paint);
                    self.line_open = !delta.ends_with('\n');
                }
            }
            EventKind::PartComplete {
                message_id,
                index,
                part,
            } => {
                let key = (message_id.to_string(), *index);
                let streamed = self.streamed.remove(&key).is_some();
                let on_screen = self.args_on_screen.as_ref() == Some(&key);
                if on_screen {
                    self.args_on_screen = None;
                }
                if streamed && matches!(part, Part::ToolCall(_)) && !on_screen {
                    self.switch_to(&mut out, None);
                    self.whole_part(&mut out, part);
                } else if streamed {
                    if let Part::ToolCall(call) = part {
                        self.end_line(&mut out);
                        self.call_started(call);
                    }
                } else if !(*index == 0 && matches!(part, Part::StepStart(_))) {
                    // A message's first step starts with it: only later steps get a rule.
                    self.switch_to(&mut out, None);
                    self.whole_part(&mut out, part);
                }
            }
            EventKind::RunStatus { status, error, .. } => {
                let why = error
                    .as_ref()
                    .map(|error| format!(": {} ({})", error.message, error.code))
                    .unwrap_or_default();
                let line = match status {
                    RunStatus::Failed => {
                        Some(self.paint(format!("✗ the run failed{why}"), Paint::Error))
                    }
                    RunStatus::Rejected => {
                        Some(self.paint(format!("✗ the run was rejected{why}"), Paint::Error))
                    }
                    RunStatus::Canceled => Some(self.paint("■ canceled".to_owned(), Paint::Warn)),
                    RunStatus::Queued => Some(self.paint(
                        "… queued: the server is busy, the run starts when a slot frees".to_owned(),
                        Paint::Warn,
                    )),
                    RunStatus::Awaiting(agentwire_core::Awaiting::Input) => Some(self.paint(
                        "? the agent asks you (ask_user): your next message answers it".to_owned(),
                        Paint::Warn,
                    )),
                    RunStatus::Incomplete => Some(self.paint(
                        format!("■ the run stopped before it finished{why}"),
                        Paint::Warn,
                    )),
                    _ => None,
                };
                if let Some(line) = line {
                    self.switch_to(&mut out, None);
                    self.end_line(&mut out);
                    out += &line;
                    out.push('\n');
                }
                if status.is_terminal() {
                    self.running.clear();
                    self.nested.clear();
                }
            }
            EventKind::Error(error) => {
                self.switch_to(&mut out, None);
                self.end_line(&mut out);
                out += &self.paint(
                    format!("✗ {} ({})", error.message, error.code),
                    Paint::Error,
                );
                out.push('\n');
            }
            EventKind::Input(input) => {
                // Step 0 is a run's own input: the user's line is on screen already.
                let line = match &input.outcome {
                    Outcome::Delivered { step: 0 } => None,
                    Outcome::Delivered { step } => Some(format!("↳ taken in at step {step}")),
                    Outcome::Queued => Some("↳ queued".to_owned()),
                    Outcome::NotDelivered { reason } => Some(format!("↳ not delivered ({reason})")),
                };
                if let Some(line) = line {
                    self.switch_to(&mut out, None);
                    self.end_line(&mut out);
                    out += &self.paint(format!("{line}: {}", input.client_message_id), Paint::Warn);
                    out.push('\n');
                }
            }
            // Messages show through their parts; an echoed input is the user's own words.
            EventKind::RunCreated { .. }
            | EventKind::MessageStart { .. }
            | EventKind::MessageComplete { .. }
            | EventKind::StateSnapshot { .. }
            | EventKind::StateDelta { .. }
            | EventKind::Heartbeat {} => {}
        }
        out += &self.show_spinner();
        out
    }

    /// The next spinner frame, redrawn in place; empty when nothing runs or nothing animates.
    pub(crate) fn tick(&mut self) -> String {
        if !self.spinning() {
            return String::new();
        }
        self.frame = (self.frame + 1) % FRAMES.len();
        let mut out = self.hide_spinner();
        out += &self.show_spinner();
        out
    }

    /// Whether a spinner is turning (the loop ticks only then).
    pub(crate) fn spinning(&self) -> bool {
        self.animate && !self.running.is_empty()
    }

    /// Ends the turn's output: the spinner gone, the cursor at the start of a line.
    pub(crate) fn end_turn(&mut self) -> String {
        let mut out = self.hide_spinner();
        self.running.clear();
        self.current = None;
        self.stopping = false;
        self.end_line(&mut out);
        out
    }

    /// The user asked the answer to stop: `text` says so, last. The run's text still on its way
    /// (until the server has canceled it) would print after it, so only the run's end and
    /// errors show until the turn ends.
    pub(crate) fn stop(&mut self, text: &str) -> String {
        let mut out = self.end_turn();
        self.stopping = true;
        out += &self.notice(text, false);
        out
    }

    /// A line of the chat's own (a notice, an error), on a line of its own.
    pub(crate) fn notice(&mut self, text: &str, error: bool) -> String {
        let mut out = self.hide_spinner();
        self.end_line(&mut out);
        let paint = if error { Paint::Error } else { Paint::Warn };
        out += &self.paint(text.to_owned(), paint);
        out.push('\n');
        out += &self.show_spinner();
        out
    }

    /// The question for one approval, ending where the answer is typed.
    pub(crate) fn approval_prompt(&mut self, approval: &Approval) -> String {
        let mut out = self.end_turn();
        let reason = approval
            .reason
            .as_deref()
            .map(|reason| format!(" ({reason})"))
            .unwrap_or_default();
        let asker = approval
            .agent
            .as_deref()
            .map(|agent| format!("{agent}: "))
            .unwrap_or_default();
        out += &self.paint(
            format!(
                "? {asker}allow {} {}{reason}",
                approval.tool_name, approval.args
            ),
            Paint::Warn,
        );
        out += " [y/n] ";
        out
    }

    /// The input prompt.
    pub(crate) fn prompt(&mut self) -> String {
        let mut out = self.end_turn();
        out += &self.paint("> ".to_owned(), Paint::Tool);
        out
    }

    fn whole_part(&mut self, out: &mut String, part: &Part) {
        match part {
            Part::ToolCall(call) => self.call_started(call),
            Part::ToolResult(ToolResult { tool_call_id, .. })
            | Part::ToolError(ToolError { tool_call_id, .. }) => {
                self.running.retain(|(id, _)| id != tool_call_id.as_str());
            }
            _ => {}
        }
        let (text, paint) = describe(part, &self.names);
        let line = self.paint(text, paint);
        self.end_line(out);
        *out += &line;
        out.push('\n');
    }

    fn call_started(&mut self, call: &agentwire_core::ToolCall) {
        let id = call.tool_call_id.to_string();
        self.names.insert(id.clone(), call.tool_name.clone());
        self.running.push((id, call.tool_name.clone()));
    }

    /// Moves output to another part: a new line unless it continues the same part.
    fn switch_to(&mut self, out: &mut String, key: Option<(String, u32)>) {
        if self.current != key {
            self.end_line(out);
            self.current = key;
        }
    }

    fn end_line(&mut self, out: &mut String) {
        if self.line_open {
            out.push('\n');
            self.line_open = false;
        }
    }

    fn show_spinner(&mut self) -> String {
        if !self.spinning() || self.line_open {
            return String::new();
        }
        self.spinner_shown = true;
        let names: Vec<&str> = self.running.iter().map(|(_, name)| name.as_str()).collect();
        let text = format!("{} running {}", FRAMES[self.frame], names.join(", "));
        self.paint(text, Paint::Dim)
    }

    fn hide_spinner(&mut self) -> String {
        if !std::mem::take(&mut self.spinner_shown) {
            return String::new();
        }
        let mut out = String::from("\r");
        // Writing an ANSI command to a String cannot fail.
        let _ = Clear(ClearType::CurrentLine).write_ansi(&mut out);
        out
    }

    fn paint(&self, text: impl Into<String>, paint: Paint) -> String {
        let text: String = text.into();
        if !self.color {
            return text;
        }
        let styled: StyledContent<String> = match paint {
            Paint::Plain => return text,
            Paint::Dim => text.dim(),
            Paint::Tool => text.cyan(),
            Paint::Done => text.green(),
            Paint::Warn => text.yellow(),
            Paint::Error => text.red(),
        };
        styled.to_string()
    }
}

/// How a piece of output is styled.
#[derive(Clone, Copy)]
enum Paint {
    Plain,
    Dim,
    Tool,
    Done,
    Warn,
    Error,
}

/// A whole part as one line of text (its tool's name from `names` when the part lacks it), and
/// how it is painted.
fn describe(part: &Part, names: &HashMap<String, String>) -> (String, Paint) {
    match part {
        Part::Text(text) => (text.text.clone(), Paint::Plain),
        Part::Reasoning(reasoning) => (reasoning.text.clone(), Paint::Dim),
        Part::Refusal(refusal) => (refusal.text.clone(), Paint::Error),
        Part::ToolCall(call) => (
            format!("▸ {} {}", call.tool_name, call.args.to_json_text()),
            Paint::Tool,
        ),
        Part::ToolResult(result) => {
            let name = tool_name(
                names,
                result.tool_call_id.as_str(),
                result.tool_name.as_deref(),
            );
            let value = shorten(&value_text(&result.result));
            if result.is_error() {
                (format!("✗ {name} → {value}"), Paint::Error)
            } else {
                (format!("✓ {name} → {value}"), Paint::Done)
            }
        }
        Part::ToolError(error) => {
            let name = tool_name(
                names,
                error.tool_call_id.as_str(),
                error.tool_name.as_deref(),
            );
            let kind = match error.error_type {
                agentwire_core::ToolErrorKind::Validation => "invalid arguments",
                agentwire_core::ToolErrorKind::Execution => "failed",
            };
            (format!("✗ {name} {kind}: {}", error.message), Paint::Error)
        }
        Part::StepStart(step) => {
            let name = step.step_name.as_deref().unwrap_or("step");
            (format!("── {name} ──"), Paint::Dim)
        }
        Part::ApprovalRequest(request) => {
            let reason = request.reason.as_deref().unwrap_or("needs approval");
            (format!("? {reason}"), Paint::Warn)
        }
        Part::ApprovalResponse(response) => {
            let (word, paint) = if response.approved {
                ("approved", Paint::Done)
            } else {
                ("denied", Paint::Error)
            };
            let reason = response
                .reason
                .as_deref()
                .map(|reason| format!(": {reason}"))
                .unwrap_or_default();
            (format!("{word}{reason}"), paint)
        }
        Part::File(file) => {
            let name = file.filename.as_deref().unwrap_or("file");
            let place = match &file.source {
                agentwire_core::part::FileSource::Url(url) if !url.starts_with("data:") => {
                    format!(" {url}")
                }
                _ => String::new(),
            };
            (
                format!("📎 {name} ({}){place}", file.media_type),
                Paint::Tool,
            )
        }
        Part::Data(data) => (
            format!("◆ {}: {}", data.name, shorten(&data.data.to_string())),
            Paint::Dim,
        ),
        Part::Artifact(artifact) => {
            let version = artifact
                .version
                .map(|version| format!(" v{version}"))
                .unwrap_or_default();
            let preview = artifact
                .preview
                .as_deref()
                .map(|preview| format!(": {}", shorten(preview)))
                .unwrap_or_default();
            (
                format!("▣ {}{version}{preview}", artifact.title),
                Paint::Tool,
            )
        }
        Part::PlanUpdate(plan) => {
            let details = plan
                .details
                .as_ref()
                .map(|details| format!(": {}", shorten(&value_text(details))))
                .unwrap_or_default();
            let action = serde_json::to_value(plan.action)
                .ok()
                .and_then(|value| value.as_str().map(str::to_owned))
                .unwrap_or_default();
            (format!("☰ plan {action}{details}"), Paint::Tool)
        }
        Part::Source(source) => {
            let title = source.title.as_deref().unwrap_or("source");
            (format!("↗ {title} {}", source.url), Paint::Dim)
        }
    }
}

/// A call's tool name: the answer's own, else the call's, else "tool".
fn tool_name<'a>(
    names: &'a HashMap<String, String>,
    call_id: &str,
    name: Option<&'a str>,
) -> &'a str {
    name.or_else(|| names.get(call_id).map(String::as_str))
        .unwrap_or("tool")
}

/// Approvals a run and its sub-agents' runs wait for, for the prompt: the run's own, then, in
/// the order they started, those of every nested run that waits for an approval (named by its
/// agent). The answers all go to the run, which hands each down to the run that asked.
pub(crate) fn approvals_of(run: &Accumulator) -> Vec<Approval> {
    let mut pending = approvals(run.messages(), None);
    nested_approvals(run, &mut pending);
    pending
}

fn nested_approvals(run: &Accumulator, pending: &mut Vec<Approval>) {
    for child in run.children() {
        if child.status() == Some(RunStatus::Awaiting(Awaiting::Approval)) {
            pending.extend(approvals(child.messages(), child.agent()));
        }
        nested_approvals(child, pending);
    }
}

/// Approvals of a message list (of `agent`'s run when it is a sub-agent's), owned, for the prompt.
pub(crate) fn approvals(messages: &[Message], agent: Option<&str>) -> Vec<Approval> {
    agentwire_client::pending_approvals(messages)
        .into_iter()
        .map(|(request, call)| Approval {
            agent: agent.map(str::to_owned),
            approval_id: request.approval_id.to_string(),
            tool_name: call.map_or_else(|| "a tool".to_owned(), |call| call.tool_name.clone()),
            args: call
                .map(|call| shorten(&call.args.to_json_text()))
                .unwrap_or_default(),
            reason: request.reason.clone(),
        })
        .collect()
}

/// A JSON value as one line: strings without their quotes.
fn value_text(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// At most [`MAX_VALUE_CHARS`] characters on one line.
fn shorten(text: &str) -> String {
    let line: String = text
        .chars()
        .map(|char| if char == '\n' { ' ' } else { char })
        .take(MAX_VALUE_CHARS + 1)
        .collect();
    if line.chars().count() > MAX_VALUE_CHARS {
        let kept: String = line.chars().take(MAX_VALUE_CHARS - 1).collect();
        format!("{kept}…")
    } else {
        line
    }
}

#[cfg(test)]
mod tests;
