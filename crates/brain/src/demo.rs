//! [`DemoBrain`]: the offline brain of the default agent. It needs no key and no network, answers
//! the same input the same way, and uses the workspace file tools, so that everything a run
//! streams can be seen before a model is configured.
//!
//! It reads the last user message and the current turn's tool results, and plays one of a few
//! fixed plans:
//!
//! - `tour` (also `demo`, `show`): every kind of part a run makes. Reasoning, then a plan
//!   (`update_plan`) and a `write_file` call that leaves out the path on purpose (the validation
//!   error comes back), the corrected call, `list_files` and `read_file` in parallel with the
//!   plan's progress, a summary saved with `save_artifact` as the plan completes, and an answer
//!   that quotes what the tools returned, with an image (a `file`), a `source` and `data`. The
//!   plan and the artifact are left out when the agent lacks those tools;
//! - `write <text>`: writes the text to a note; `list`: lists the workspace; `read <path>`: reads
//!   a file;
//! - anything else: a short answer that says what this brain is and what to try.
//!
//! Every answer says it comes from the demo brain. The plan's progress is read from the turn's
//! tool results (found by call ids the brain minted), not from the step number, so an approval
//! pause or a retried step does not throw it off. Usage is an estimate (four characters a
//! token), since there is no model to count.

use std::sync::Arc;

use agentwire_core::part::{FilePart, FileSource};
use agentwire_core::{Message, Part, Role, Usage};
use serde_json::{Value, json};

use crate::scripted::{pace, replay};
use crate::{Brain, BrainEvent, BrainRequest, BrainStream, FinishReason};

/// The offline demo brain. See the module docs for what it answers.
#[derive(Clone, Debug)]
pub struct DemoBrain {
    tokens_per_second: f64,
}

impl Default for DemoBrain {
    fn default() -> Self {
        Self {
            tokens_per_second: Self::DEFAULT_TOKENS_PER_SECOND,
        }
    }
}

impl DemoBrain {
    /// The pace of a new demo brain: quick, yet slow enough to see the parts stream.
    pub const DEFAULT_TOKENS_PER_SECOND: f64 = 60.0;

    /// A demo brain at the default pace.
    pub fn new() -> Self {
        Self::default()
    }

    /// Paces the deltas at this rate; 0 means as fast as possible (tests).
    pub fn with_tokens_per_second(mut self, tokens_per_second: f64) -> Self {
        self.tokens_per_second = pace(tokens_per_second);
        self
    }
}

impl Brain for DemoBrain {
    fn stream(&self, request: BrainRequest) -> BrainStream {
        let turn = Turn::of(&request);
        let mut out = Script::default();
        turn.answer(&mut out);
        out.finish(&request);
        replay(Arc::from(out.events), self.tokens_per_second)
    }

    fn describe(&self) -> String {
        "demo (offline)".into()
    }

    fn provider_name(&self) -> &'static str {
        "demo"
    }
}

const LABEL: &str = "*(demo brain: offline and scripted; set OPENAI_API_KEY or ANTHROPIC_API_KEY \
                     for a real model)*\n\n";
const TOUR_NOTE: &str = "/demo/note.txt";

/// The artifact the tour saves.
const TOUR_SUMMARY: &str = "# The agentwire tour\n\n\
    1. A plan, kept current with `update_plan`.\n\
    2. A call refused by validation, and its correction.\n\
    3. Two calls run in parallel.\n\
    4. This summary, saved with `save_artifact`.\n\
    5. An answer with a file, a source and data.\n";

/// The image the tour's answer shows: a small SVG badge, base64.
const TOUR_BADGE_SVG: &str = "PHN2ZyB4bWxucz0iaHR0cDovL3d3dy53My5vcmcvMjAwMC9zdmciIHdpZHRoPSIyNDAiIGhlaWdodD0iNjQiIHZpZXdCb3g9IjAgMCAyNDAgNjQiPjxyZWN0IHdpZHRoPSIyNDAiIGhlaWdodD0iNjQiIHJ4PSIxMiIgZmlsbD0iIzFmM2E1ZiIvPjxjaXJjbGUgY3g9IjMyIiBjeT0iMzIiIHI9IjE0IiBmaWxsPSIjN2NjNGZmIi8+PHBhdGggZD0iTTI2IDMyaDEyTTMyIDI2djEyIiBzdHJva2U9IiMxZjNhNWYiIHN0cm9rZS13aWR0aD0iMyIvPjx0ZXh0IHg9IjU4IiB5PSI0MCIgZm9udC1mYW1pbHk9InNhbnMtc2VyaWYiIGZvbnQtc2l6ZT0iMjAiIGZpbGw9IiNmZmYiPmFnZW50d2lyZSB0b3VyPC90ZXh0Pjwvc3ZnPg==";

/// The tour's plan with its first `done` steps completed and the next one in progress.
fn tour_plan(done: usize) -> Value {
    let steps = [
        "Write a note to the workspace",
        "List the folder and read the note back",
        "Save a summary as an artifact",
    ];
    let plan: Vec<Value> = steps
        .iter()
        .enumerate()
        .map(|(at, step)| {
            let status = match at.cmp(&done) {
                std::cmp::Ordering::Less => "completed",
                std::cmp::Ordering::Equal => "in_progress",
                std::cmp::Ordering::Greater => "pending",
            };
            json!({"step": step, "status": status})
        })
        .collect();
    json!({"plan": plan})
}

/// What the brain knows of the turn it answers.
struct Turn<'a> {
    /// The user's words, lowercased for matching.
    asked: String,
    /// The user's words as written.
    asked_raw: String,
    /// The number of user messages so far, which keeps call ids unique across turns.
    number: usize,
    /// The current turn's tool outcomes: call id → result (or `{"error": message}`).
    outcomes: Vec<(String, Value)>,
    tools: Vec<&'a str>,
}

impl<'a> Turn<'a> {
    fn of(request: &'a BrainRequest) -> Self {
        let last_user = request
            .messages
            .iter()
            .rposition(|message| message.role == Role::User);
        let asked_raw = last_user
            .map(|index| request.messages[index].content())
            .unwrap_or_default();
        let since_user = last_user.map_or(&request.messages[..], |index| {
            &request.messages[index + 1..]
        });
        let outcomes = since_user
            .iter()
            .flat_map(|message: &Message| &message.parts)
            .filter_map(|part| match part {
                Part::ToolResult(result) => {
                    Some((result.tool_call_id.to_string(), result.result.clone()))
                }
                Part::ToolError(error) => Some((
                    error.tool_call_id.to_string(),
                    json!({"error": error.message}),
                )),
                _ => None,
            })
            .collect();
        Self {
            asked: asked_raw.trim().to_lowercase(),
            asked_raw: asked_raw.trim().to_owned(),
            number: request
                .messages
                .iter()
                .filter(|message| message.role == Role::User)
                .count(),
            outcomes,
            tools: request
                .tools
                .iter()
                .map(|tool| tool.name.as_str())
                .collect(),
        }
    }

    fn id(&self, name: &str) -> String {
        format!("demo_{}_{name}", self.number)
    }

    fn outcome(&self, name: &str) -> Option<&Value> {
        let id = self.id(name);
        self.outcomes
            .iter()
            .find_map(|(call, outcome)| (*call == id).then_some(outcome))
    }

    fn offers(&self, tools: &[&str]) -> bool {
        tools.iter().all(|tool| self.tools.contains(tool))
    }

    fn first_word_is(&self, words: &[&str]) -> bool {
        let first = self.asked.split_whitespace().next().unwrap_or_default();
        words.contains(&first)
    }

    /// The user's words after the first one.
    fn rest(&self) -> &str {
        self.asked_raw
            .split_once(char::is_whitespace)
            .map_or("", |(_, rest)| rest.trim())
    }

    fn answer(&self, out: &mut Script) {
        let files = ["write_file", "read_file", "list_files"];
        if self.first_word_is(&["tour", "demo", "show"]) && self.offers(&files) {
            self.tour(out);
        } else if self.first_word_is(&["write", "note"]) && self.offers(&["write_file"]) {
            self.write(out);
        } else if self.first_word_is(&["list", "ls"]) && self.offers(&["list_files"]) {
            self.list(out);
        } else if self.first_word_is(&["read", "cat"]) && self.offers(&["read_file"]) {
            self.read(out);
        } else {
            self.chat(out);
        }
    }

    fn tour(&self, out: &mut Script) {
        let note = "Written by agentwire's demo brain.";
        let planning = self.offers(&["update_plan"]);
        let artifacts = self.offers(&["save_artifact"]);
        if self.outcome("write_1").is_none() {
            out.reasoning(
                "The user wants the tour. I will write a note, but leave out the path on purpose, \
                 so the validation error and the correction can be seen.",
            );
            out.text(&format!("{LABEL}Let me write a note to the workspace."));
            let mut calls = Vec::new();
            if planning {
                calls.push((self.id("plan_1"), "update_plan", tour_plan(0)));
            }
            calls.push((self.id("write_1"), "write_file", json!({"content": note})));
            out.parallel_calls(&calls);
        } else if self.outcome("write_2").is_none() {
            let error = self
                .outcome("write_1")
                .and_then(|outcome| outcome.get("error"))
                .and_then(Value::as_str)
                .unwrap_or("the call failed");
            out.reasoning(&format!("The tool answered: {error} I will add the path."));
            out.text("I missed the path; here is the corrected call.");
            out.call(
                &self.id("write_2"),
                "write_file",
                &json!({"path": TOUR_NOTE, "content": note}),
            );
        } else if self.outcome("list").is_none() || self.outcome("read").is_none() {
            out.text("Now I will list the folder and read the note back, both at once.");
            let mut calls = vec![
                (self.id("list"), "list_files", json!({"path": "/demo"})),
                (self.id("read"), "read_file", json!({"path": TOUR_NOTE})),
            ];
            if planning {
                calls.push((self.id("plan_2"), "update_plan", tour_plan(1)));
            }
            out.parallel_calls(&calls);
        } else if artifacts && self.outcome("artifact").is_none() {
            out.text("I will save a summary of the tour as an artifact, and mark the plan done.");
            let mut calls = vec![(
                self.id("artifact"),
                "save_artifact",
                json!({
                    "name": "tour-summary.md",
                    "title": "Tour summary",
                    "media_type": "text/markdown",
                    "content": TOUR_SUMMARY,
                }),
            )];
            if planning {
                calls.push((self.id("plan_3"), "update_plan", tour_plan(3)));
            }
            out.parallel_calls(&calls);
        } else {
            let listing = self
                .outcome("list")
                .map(describe_outcome)
                .unwrap_or_default();
            let content = self
                .outcome("read")
                .map(describe_outcome)
                .unwrap_or_default();
            out.text(&format!(
                "Done. Listing `/demo` gave {listing}, and reading the note gave {content}. \
                 Here is a picture a model could return, as a file:"
            ));
            out.part(BrainEvent::File(FilePart {
                media_type: "image/svg+xml".into(),
                source: FileSource::Data(TOUR_BADGE_SVG.into()),
                filename: Some("tour-badge.svg".into()),
            }));
            out.text(
                "Each event reaches you as a server-sent event, the format the HTML standard \
                 defines; a model that cites what it read gives sources like this one:",
            );
            out.part(BrainEvent::source(
                "https://html.spec.whatwg.org/multipage/server-sent-events.html",
                Some("HTML Standard: Server-sent events"),
            ));
            out.part(BrainEvent::Data {
                name: "demo.tour".into(),
                data: json!({"steps": 5, "tools": ["update_plan", "write_file", "list_files", "read_file", "save_artifact"]}),
            });
            out.text(
                "\n\nThat was the whole tour: reasoning, text, a plan kept up to date, a tool call \
                 refused by validation, its correction, tool calls run in parallel and their \
                 results, an artifact, a file, a source, structured data, and a step for each \
                 model call.",
            );
        }
    }

    fn write(&self, out: &mut Script) {
        let path = format!("/notes/note-{}.txt", self.number);
        match self.outcome("write") {
            None => {
                let content = match self.rest() {
                    "" => "An empty note.",
                    rest => rest,
                };
                out.text(&format!("{LABEL}Writing your note to `{path}`."));
                out.call(
                    &self.id("write"),
                    "write_file",
                    &json!({"path": path, "content": content}),
                );
            }
            Some(outcome) => out.text(&format!("Done: {}.", describe_outcome(outcome))),
        }
    }

    fn list(&self, out: &mut Script) {
        match self.outcome("list") {
            None => {
                out.text(&format!("{LABEL}Listing the workspace."));
                out.call(&self.id("list"), "list_files", &json!({"path": "/"}));
            }
            Some(outcome) => out.text(&format!(
                "The workspace holds {}.",
                describe_outcome(outcome)
            )),
        }
    }

    fn read(&self, out: &mut Script) {
        match self.outcome("read") {
            None => {
                let path = match self.rest() {
                    "" => TOUR_NOTE,
                    rest => rest,
                };
                out.text(&format!("{LABEL}Reading `{path}`."));
                out.call(&self.id("read"), "read_file", &json!({"path": path}));
            }
            Some(outcome) => out.text(&format!("The tool answered {}.", describe_outcome(outcome))),
        }
    }

    fn chat(&self, out: &mut Script) {
        out.reasoning("No plan of mine matches these words, so I say what I can do.");
        let echo = if self.asked_raw.is_empty() {
            String::new()
        } else {
            format!("You said: “{}”. ", self.asked_raw)
        };
        out.text(&format!(
            "{LABEL}{echo}I answer from a fixed script and can use the workspace file tools. \
             Try `tour` to see every kind of part stream, `write <text>`, `list`, or \
             `read <path>`."
        ));
    }
}

/// A tool outcome in a few words: a file's content, a listing's size, or the error.
fn describe_outcome(outcome: &Value) -> String {
    if let Some(error) = outcome.get("error").and_then(Value::as_str) {
        return format!("an error: {error}");
    }
    if let (Some(bytes), Some(path)) = (
        outcome.get("bytes_written").and_then(Value::as_u64),
        outcome.get("path").and_then(Value::as_str),
    ) {
        return format!("{bytes} bytes written to `{path}`");
    }
    if let Some(content) = outcome.get("content").and_then(Value::as_str) {
        return format!("“{content}”");
    }
    if let Some(entries) = outcome
        .as_object()
        .and_then(|object| object.values().find_map(Value::as_array))
        .or_else(|| outcome.as_array())
    {
        return match entries.len() {
            1 => "1 entry".to_owned(),
            count => format!("{count} entries"),
        };
    }
    format!("`{outcome}`")
}

/// The events of one answer, built up in order.
#[derive(Default)]
struct Script {
    events: Vec<BrainEvent>,
    output_chars: usize,
    calls: bool,
}

impl Script {
    /// Text streams word by word, each word with the space before it, so it paces like tokens.
    fn text(&mut self, text: &str) {
        for word in words(text) {
            self.events
                .push(BrainEvent::TextDelta { text: word.into() });
        }
        self.output_chars += text.len();
    }

    fn reasoning(&mut self, text: &str) {
        for word in words(text) {
            self.events
                .push(BrainEvent::ReasoningDelta { text: word.into() });
        }
        self.output_chars += text.len();
    }

    /// A whole event that is not text: a file, a source, data.
    fn part(&mut self, event: BrainEvent) {
        self.events.push(event);
    }

    fn call(&mut self, id: &str, name: &str, args: &Value) {
        self.parallel_calls(&[(id.to_owned(), name, args.clone())]);
    }

    /// Starts every call, then interleaves their argument deltas, as providers stream parallel
    /// calls.
    fn parallel_calls(&mut self, calls: &[(String, &str, Value)]) {
        let args: Vec<String> = calls.iter().map(|(_, _, args)| args.to_string()).collect();
        let pieces: Vec<Vec<&str>> = args.iter().map(|args| chunks(args, 12)).collect();
        for (id, name, _) in calls {
            self.events.push(BrainEvent::ToolCallStart {
                id: id.clone(),
                name: (*name).to_owned(),
            });
        }
        let longest = pieces.iter().map(Vec::len).max().unwrap_or(0);
        for round in 0..longest {
            for ((id, _, _), pieces) in calls.iter().zip(&pieces) {
                if let Some(piece) = pieces.get(round) {
                    self.events.push(BrainEvent::ToolCallDelta {
                        id: id.clone(),
                        args: (*piece).to_owned(),
                    });
                }
            }
        }
        for (id, _, _) in calls {
            self.events.push(BrainEvent::ToolCallEnd { id: id.clone() });
        }
        self.output_chars += args.iter().map(String::len).sum::<usize>();
        self.calls = true;
    }

    fn finish(&mut self, request: &BrainRequest) {
        let input_chars: usize = request.system.as_deref().map_or(0, str::len)
            + request
                .messages
                .iter()
                .map(|message| message.content().len())
                .sum::<usize>();
        let reason = if self.calls {
            FinishReason::ToolCalls
        } else {
            FinishReason::Stop
        };
        self.events.push(BrainEvent::Finish {
            reason,
            usage: Some(Usage::new(
                estimate_tokens(input_chars),
                estimate_tokens(self.output_chars),
            )),
        });
    }
}

fn estimate_tokens(chars: usize) -> u64 {
    u64::try_from(chars.div_ceil(4)).unwrap_or(u64::MAX)
}

/// Splits text into words, each keeping the whitespace before it.
fn words(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let start = rest.len() - rest.trim_start().len();
        let end = rest[start..]
            .find(char::is_whitespace)
            .map_or(rest.len(), |offset| start + offset);
        let (word, tail) = rest.split_at(end);
        rest = tail;
        Some(word)
    })
}

/// Splits text into pieces of about `size` bytes, on character boundaries.
fn chunks(text: &str, size: usize) -> Vec<&str> {
    let mut pieces = Vec::new();
    let mut start = 0;
    while start < text.len() {
        let mut end = (start + size).min(text.len());
        while !text.is_char_boundary(end) {
            end += 1;
        }
        pieces.push(&text[start..end]);
        start = end;
    }
    pieces
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use agentwire_core::{ToolCall, ToolErrorKind, ToolResult, ToolSpec};
    use futures::StreamExt;

    use super::*;

    fn file_tools() -> Vec<ToolSpec> {
        ["write_file", "read_file", "list_files"]
            .into_iter()
            .map(|name| ToolSpec::new(name, "", json!({"type": "object"})))
            .collect()
    }

    async fn answer(messages: Vec<Message>, tools: Vec<ToolSpec>) -> Vec<BrainEvent> {
        let request = BrainRequest {
            messages,
            tools: tools.into(),
            ..BrainRequest::default()
        };
        DemoBrain::new()
            .with_tokens_per_second(0.0)
            .stream(request)
            .map(Result::unwrap)
            .collect()
            .await
    }

    fn text_of(events: &[BrainEvent]) -> String {
        events
            .iter()
            .filter_map(|event| match event {
                BrainEvent::TextDelta { text } => Some(text.as_str()),
                _ => None,
            })
            .collect()
    }

    /// The calls an answer makes, with their arguments parsed.
    fn calls_of(events: &[BrainEvent]) -> Vec<(String, String, Value)> {
        let mut calls: Vec<(String, String, String)> = Vec::new();
        for event in events {
            match event {
                BrainEvent::ToolCallStart { id, name } => {
                    calls.push((id.clone(), name.clone(), String::new()));
                }
                BrainEvent::ToolCallDelta { id, args } => {
                    let call = calls.iter_mut().find(|call| call.0 == *id).unwrap();
                    call.2.push_str(args);
                }
                _ => {}
            }
        }
        calls
            .into_iter()
            .map(|(id, name, args)| (id, name, serde_json::from_str(&args).unwrap()))
            .collect()
    }

    /// The turn so far: an assistant message holding these calls and their outcomes.
    fn turn_with(outcomes: Vec<Part>) -> Message {
        let mut message = Message::assistant("");
        message.parts = outcomes;
        message
    }

    fn result(id: &str, result: Value) -> Part {
        Part::ToolResult(ToolResult {
            tool_call_id: id.into(),
            tool_name: None,
            result,
            is_error: None,
        })
    }

    #[tokio::test]
    async fn the_tour_makes_a_mistake_corrects_it_and_runs_two_calls_at_once() {
        let user = Message::user("tour");
        let first = answer(vec![user.clone()], file_tools()).await;
        assert!(text_of(&first).starts_with("*(demo brain"));
        assert!(matches!(first[0], BrainEvent::ReasoningDelta { .. }));
        let calls = calls_of(&first);
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].1, "write_file");
        assert_eq!(
            calls[0].2.get("path"),
            None,
            "the first call leaves out the path"
        );
        assert!(matches!(
            first.last(),
            Some(BrainEvent::Finish {
                reason: FinishReason::ToolCalls,
                usage: Some(_)
            })
        ));

        let refused = Part::ToolError(agentwire_core::ToolError {
            tool_call_id: calls[0].0.as_str().into(),
            tool_name: Some("write_file".into()),
            error_type: ToolErrorKind::Validation,
            message: "missing required argument 'path'".into(),
        });
        let second = answer(
            vec![user.clone(), turn_with(vec![refused.clone()])],
            file_tools(),
        )
        .await;
        let corrected = calls_of(&second);
        assert_eq!(corrected[0].2["path"], TOUR_NOTE);

        let written = result(&corrected[0].0, json!({"path": TOUR_NOTE}));
        let third = answer(
            vec![
                user.clone(),
                turn_with(vec![refused.clone(), written.clone()]),
            ],
            file_tools(),
        )
        .await;
        let parallel = calls_of(&third);
        let names: Vec<&str> = parallel.iter().map(|call| call.1.as_str()).collect();
        assert_eq!(names, ["list_files", "read_file"]);
        // Both start before the first argument delta: the deltas interleave.
        let starts: Vec<usize> = third
            .iter()
            .enumerate()
            .filter_map(|(at, event)| {
                matches!(event, BrainEvent::ToolCallStart { .. }).then_some(at)
            })
            .collect();
        let first_delta = third
            .iter()
            .position(|event| matches!(event, BrainEvent::ToolCallDelta { .. }))
            .unwrap();
        assert!(starts[1] < first_delta);

        let last = answer(
            vec![
                user,
                turn_with(vec![
                    refused,
                    written,
                    result(&parallel[0].0, json!({"entries": [{"name": "note.txt"}]})),
                    result(
                        &parallel[1].0,
                        json!({"content": "Written by agentwire's demo brain."}),
                    ),
                ]),
            ],
            file_tools(),
        )
        .await;
        assert!(calls_of(&last).is_empty());
        let text = text_of(&last);
        assert!(text.contains("1 entry"), "{text}");
        assert!(
            text.contains("“Written by agentwire's demo brain.”"),
            "{text}"
        );
        assert!(matches!(
            last.last(),
            Some(BrainEvent::Finish {
                reason: FinishReason::Stop,
                ..
            })
        ));
    }

    #[tokio::test]
    async fn the_same_words_get_the_same_answer() {
        let one = answer(vec![Message::user("write hello there")], file_tools()).await;
        let two = answer(vec![Message::user("write hello there")], file_tools()).await;
        assert_eq!(one, two);
        let calls = calls_of(&one);
        assert_eq!(
            calls[0].2,
            json!({"path": "/notes/note-1.txt", "content": "hello there"})
        );
    }

    #[tokio::test]
    async fn without_the_tools_it_only_talks() {
        let events = answer(vec![Message::user("tour")], Vec::new()).await;
        assert!(calls_of(&events).is_empty());
        assert!(text_of(&events).contains("You said: “tour”"));
        let events = answer(vec![Message::user("hello")], file_tools()).await;
        assert!(calls_of(&events).is_empty());
        assert!(text_of(&events).contains("Try `tour`"));
    }

    #[tokio::test]
    async fn call_ids_differ_from_turn_to_turn() {
        let first = answer(vec![Message::user("list")], file_tools()).await;
        let history = vec![
            Message::user("list"),
            turn_with(vec![Part::ToolCall(ToolCall {
                tool_call_id: "demo_1_list".into(),
                tool_name: "list_files".into(),
                args: json!({}).into(),
            })]),
            Message::user("list"),
        ];
        let second = answer(history, file_tools()).await;
        assert_ne!(calls_of(&first)[0].0, calls_of(&second)[0].0);
    }

    #[test]
    fn words_keep_their_spaces_and_chunks_their_characters() {
        assert_eq!(words(" a  bc d").collect::<Vec<_>>(), [" a", "  bc", " d"]);
        assert_eq!(chunks("ééé", 3), ["éé", "é"]);
        assert_eq!(words("").count(), 0);
    }
}
