//! The scenarios with sub-agents: runs of other agents that the run's model called like tools,
//! streamed nested in the run's stream under their [`Namespace`], in the order the runtime
//! streams them (`crates/runtime/src/subagent.rs`): a child's `run_created` after the call that
//! starts it, its events interleaved with its siblings', every one of them before the result
//! that answers the call; a wait deep down reported by every run above it, innermost first.
//!
//! Every run's message is `msg_1` (and `msg_2` after a wait), as agents that each mint their own
//! ids give them: only the nesting keeps them apart, so a dialect that flattens runs into one
//! list of messages must tell them apart itself.

use agentwire_core::part::ApprovalRequest;
use agentwire_core::{
    Awaiting, Emitter, Event, EventKind, Message, MessageBuilder, MessageStart, Namespace, Part,
    RunId, RunStatus, Usage,
};
use serde_json::json;

use super::{Scenario, call, result, status, step, usage};

/// The session every run of the tree belongs to.
const SESSION: &str = "ses_1";

/// `run_created` of a sub-agent's run.
fn created(run_id: &str, agent: &str, parent_run: &str, parent_call: &str) -> EventKind {
    EventKind::RunCreated {
        run_id: run_id.into(),
        session_id: Some(SESSION.into()),
        agent: Some(agent.into()),
        parent_run_id: Some(parent_run.into()),
        parent_tool_call_id: Some(parent_call.into()),
    }
}

fn ns(path: &[&str]) -> Namespace {
    Namespace::new(path.iter().map(|id| RunId::from(*id)))
}

/// A stream being written: events of any run of the tree, numbered in one sequence.
#[derive(Default)]
struct Tree {
    out: Emitter,
    /// Events produced by a builder on a scratch emitter, waiting to be numbered.
    scratch: Emitter,
}

impl Tree {
    fn emit(&mut self, path: &[&str], kind: EventKind) {
        self.out.emit_in(ns(path), kind);
    }

    /// Moves what the builders wrote on the scratch emitter into the stream, under `path`.
    fn flush(&mut self, path: &[&str]) {
        let kinds: Vec<EventKind> = self.scratch.drain().map(|event| event.kind).collect();
        for kind in kinds {
            self.emit(path, kind);
        }
    }

    /// Starts a message of the run at `path` on the scratch emitter.
    fn start(&mut self, path: &[&str], id: &str) -> MessageBuilder {
        let builder = MessageBuilder::start(
            &mut self.scratch,
            MessageStart::new(id, agentwire_core::Role::Assistant),
        );
        self.flush(path);
        builder
    }

    /// Runs `write` on a message of the run at `path`, then numbers what it wrote.
    fn with(
        &mut self,
        path: &[&str],
        builder: &mut MessageBuilder,
        write: impl FnOnce(&mut MessageBuilder, &mut Emitter),
    ) {
        write(builder, &mut self.scratch);
        self.flush(path);
    }

    fn finish(&mut self, path: &[&str], builder: MessageBuilder) {
        builder.finish(&mut self.scratch);
        self.flush(path);
    }

    fn status(&mut self, path: &[&str], run: RunStatus, usage: Option<Usage>) {
        self.emit(path, status(run, None, usage));
    }

    fn scenario(
        self,
        name: &'static str,
        about: &'static str,
        input: &str,
        end: RunStatus,
    ) -> Scenario {
        let mut out = self.out;
        let events: Vec<Event> = out.drain().collect();
        let messages = own_messages(&events);
        Scenario {
            name,
            about,
            input: vec![Message::user(input).with_id("msg_user")],
            events,
            messages,
            status: end,
        }
    }
}

/// The messages the run's own events complete.
fn own_messages(events: &[Event]) -> Vec<Message> {
    events
        .iter()
        .filter(|event| event.is_own())
        .filter_map(|event| match &event.kind {
            EventKind::MessageComplete { message } => Some(message.clone()),
            _ => None,
        })
        .collect()
}

fn top_created(tree: &mut Tree) {
    tree.emit(
        &[],
        EventKind::RunCreated {
            run_id: "run_1".into(),
            session_id: Some(SESSION.into()),
            agent: Some("assistant".into()),
            parent_run_id: None,
            parent_tool_call_id: None,
        },
    );
    tree.status(&[], RunStatus::InProgress, None);
}

fn ask(input: &str) -> String {
    json!({ "input": input }).to_string()
}

/// The parent asks two agents at once; the researcher asks a third before it answers. The
/// children's events interleave, each answer is its call's result, and the parent answers.
pub fn subagents() -> Scenario {
    const B: &[&str] = &["run_b"];
    const C: &[&str] = &["run_c"];
    const D: &[&str] = &["run_b", "run_d"];
    let mut tree = Tree::default();
    top_created(&mut tree);
    let mut top = tree.start(&[], "msg_1");
    tree.with(&[], &mut top, |b, out| {
        step(b, out, 1);
        b.text_delta(out, "I will ask the researcher and the writer.");
        let researcher = ask("What is the capital of France?");
        let writer = ask("Write a one-line greeting.");
        call(
            b,
            out,
            "call_1",
            "researcher",
            &[&researcher[..12], &researcher[12..]],
        );
        call(b, out, "call_2", "writer", &[&writer]);
    });

    // Both children start, and stream at once.
    tree.emit(B, created("run_b", "researcher", "run_1", "call_1"));
    tree.status(B, RunStatus::InProgress, None);
    tree.emit(C, created("run_c", "writer", "run_1", "call_2"));
    tree.status(C, RunStatus::InProgress, None);
    let mut researcher = tree.start(B, "msg_1");
    let mut writer = tree.start(C, "msg_1");
    tree.with(B, &mut researcher, |b, out| {
        step(b, out, 1);
        b.text_delta(out, "Let me check with the fact checker.");
    });
    tree.with(C, &mut writer, |b, out| b.text_delta(out, "Hello "));
    tree.with(B, &mut researcher, |b, out| {
        let question = ask("Is Paris the capital of France?");
        call(b, out, "call_b1", "fact_checker", &[&question]);
    });
    tree.with(C, &mut writer, |b, out| b.text_delta(out, "from the "));

    // The researcher's call runs the grandchild, nested two deep.
    tree.emit(D, created("run_d", "fact_checker", "run_b", "call_b1"));
    tree.status(D, RunStatus::InProgress, None);
    let mut checker = tree.start(D, "msg_1");
    tree.with(D, &mut checker, |b, out| b.text_delta(out, "Yes, "));
    tree.with(C, &mut writer, |b, out| b.text_delta(out, "writer!"));
    tree.with(D, &mut checker, |b, out| b.text_delta(out, "it is Paris."));
    tree.finish(D, checker);
    tree.status(D, RunStatus::Completed, Some(Usage::new(12, 6)));

    // The writer ends first: its answer is the first result the parent gets.
    tree.finish(C, writer);
    tree.status(C, RunStatus::Completed, Some(Usage::new(10, 5)));
    tree.with(&[], &mut top, |b, out| {
        b.part(
            out,
            result("call_2", "writer", json!("Hello from the writer!")),
        );
    });
    tree.with(B, &mut researcher, |b, out| {
        b.part(
            out,
            result("call_b1", "fact_checker", json!("Yes, it is Paris.")),
        );
        step(b, out, 2);
        b.text_delta(out, "The capital of France is ");
        b.text_delta(out, "Paris.");
    });
    tree.finish(B, researcher);
    tree.status(B, RunStatus::Completed, Some(Usage::new(40, 18)));

    tree.with(&[], &mut top, |b, out| {
        // A child's answer is its last message's text, as the runtime takes it.
        let answer = "Let me check with the fact checker.\nThe capital of France is Paris.";
        b.part(out, result("call_1", "researcher", json!(answer)));
        step(b, out, 2);
        b.text_delta(out, "Paris is the capital of France, ");
        b.text_delta(out, "and the writer says hello.");
    });
    tree.finish(&[], top);
    tree.status(&[], RunStatus::Completed, usage(120, 64));
    tree.scenario(
        "subagents",
        "two sub-agents in parallel, one asking a third; each answer is its call's result",
        "Capital of France, and a greeting?",
        RunStatus::Completed,
    )
}

const DIRECTOR: &[&str] = &["run_b"];
const MANAGER: &[&str] = &["run_b", "run_c"];
const CLEANER: &[&str] = &["run_b", "run_c", "run_d"];

/// An approval three levels down: the parent asks a director, who asks a manager, who asks a
/// cleaner, whose call of `delete_file` needs a person's approval. The cleaner waits, and every
/// run above it reports that it waits too, the parent last: the client answers the parent.
pub fn subagent_approval() -> Scenario {
    let mut tree = Tree::default();
    top_created(&mut tree);
    let mut top = tree.start(&[], "msg_1");
    tree.with(&[], &mut top, |b, out| {
        step(b, out, 1);
        b.text_delta(out, "I will ask the director.");
        call(b, out, "call_1", "director", &[&ask("Clean up the logs.")]);
    });
    let mut builders = Vec::new();
    for (path, agent, parent, parent_call, next) in [
        (
            DIRECTOR,
            "director",
            "run_1",
            "call_1",
            Some(("call_m", "manager")),
        ),
        (
            MANAGER,
            "manager",
            "run_b",
            "call_m",
            Some(("call_c", "cleaner")),
        ),
        (CLEANER, "cleaner", "run_c", "call_c", None),
    ] {
        let run_id = path[path.len() - 1];
        tree.emit(path, created(run_id, agent, parent, parent_call));
        tree.status(path, RunStatus::InProgress, None);
        let mut builder = tree.start(path, "msg_1");
        tree.with(path, &mut builder, |b, out| {
            step(b, out, 1);
            match next {
                Some((id, agent)) => call(b, out, id, agent, &[&ask("Delete old.log.")]),
                None => {
                    call(
                        b,
                        out,
                        "call_del",
                        "delete_file",
                        &["{\"path\": \"old.log\"}"],
                    );
                    b.part(
                        out,
                        Part::ApprovalRequest(ApprovalRequest {
                            approval_id: "apr_1".into(),
                            tool_call_id: "call_del".into(),
                            reason: Some("delete_file changes the workspace".into()),
                        }),
                    );
                }
            }
        });
        builders.push((path, builder));
    }
    // The wait goes up: each run's message completes, then it reports waiting, innermost first.
    let waiting = RunStatus::Awaiting(Awaiting::Approval);
    while let Some((path, builder)) = builders.pop() {
        tree.finish(path, builder);
        tree.status(path, waiting, Some(Usage::new(10, 5)));
    }
    tree.finish(&[], top);
    tree.status(&[], waiting, usage(30, 12));
    tree.scenario(
        "subagent_approval",
        "an approval three sub-agents down; every run above the cleaner waits with it",
        "Clean up the logs",
        waiting,
    )
}

/// The rest of [`subagent_approval`]'s stream once the client approved `apr_1` through the
/// parent, numbered on from its last event: the answer goes down, each run works again
/// (innermost first) and opens a message of its own, the cleaner deletes the file, and every
/// answer goes up as its call's result.
pub fn subagent_approval_resumed() -> Vec<Event> {
    let before = subagent_approval().events.len() as u64;
    let mut tree = Tree {
        out: Emitter::starting_at(before + 1),
        scratch: Emitter::default(),
    };
    for path in [CLEANER, MANAGER, DIRECTOR, &[] as &[&str]] {
        tree.status(path, RunStatus::InProgress, None);
    }
    let mut cleaner = tree.start(CLEANER, "msg_2");
    tree.with(CLEANER, &mut cleaner, |b, out| {
        b.part(
            out,
            Part::ApprovalResponse(agentwire_core::part::ApprovalResponse {
                approval_id: "apr_1".into(),
                approved: true,
                reason: None,
            }),
        );
        b.part(
            out,
            result("call_del", "delete_file", json!({"deleted": "old.log"})),
        );
        step(b, out, 2);
        b.text_delta(out, "Deleted old.log.");
    });
    tree.finish(CLEANER, cleaner);
    tree.status(CLEANER, RunStatus::Completed, Some(Usage::new(20, 10)));
    let mut answer = "Deleted old.log.".to_owned();
    for (path, call_id, agent, said) in [
        (MANAGER, "call_c", "cleaner", "The cleaner deleted old.log."),
        (DIRECTOR, "call_m", "manager", "The logs are clean."),
    ] {
        let mut builder = tree.start(path, "msg_2");
        tree.with(path, &mut builder, |b, out| {
            b.part(out, result(call_id, agent, json!(answer)));
            step(b, out, 2);
            b.text_delta(out, said);
        });
        tree.finish(path, builder);
        tree.status(path, RunStatus::Completed, Some(Usage::new(20, 10)));
        said.clone_into(&mut answer);
    }
    let mut top = tree.start(&[], "msg_2");
    tree.with(&[], &mut top, |b, out| {
        b.part(out, result("call_1", "director", json!(answer)));
        step(b, out, 2);
        b.text_delta(out, "All clean.");
    });
    tree.finish(&[], top);
    tree.status(&[], RunStatus::Completed, usage(60, 24));
    let mut out = tree.out;
    out.drain().collect()
}
