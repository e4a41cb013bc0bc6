//! `agentwire chat` with sub-agents, through a pseudo-terminal against the real `agentwire
//! serve`: a lead calls four scouts at once; their runs show indented under the calls, each
//! line naming its agent as their lines interleave; west's manager's cleaner, three levels down,
//! asks to write a file, which is asked at the prompt and answered through the top run.
#![allow(clippy::unwrap_used)]

mod common;

use std::process::Command;
use std::time::Duration;

use common::{Server, serve};
use expectrl::{ControlCode, Eof, Expect, Session};
use serde_json::{Value, json};

const CONFIG: &str = r#"
[[agents]]
name = "lead"
provider = "scripted"
script = "lead.json"
subagents = ["north", "south", "east", "west"]

[[agents]]
name = "north"
provider = "scripted"
script = "north.json"
tokens_per_second = 20

[[agents]]
name = "south"
provider = "scripted"
script = "south.json"
tokens_per_second = 20

[[agents]]
name = "east"
provider = "scripted"
script = "east.json"
tokens_per_second = 20

[[agents]]
name = "west"
provider = "scripted"
script = "west.json"
subagents = ["manager"]

[[agents]]
name = "manager"
provider = "scripted"
script = "manager.json"
subagents = ["cleaner"]

[[agents]]
name = "cleaner"
provider = "scripted"
script = "cleaner.json"
tools = ["write_file"]
approval = ["write_file"]
workspace = "ws"
"#;

const SCOUTS: [&str; 3] = ["north", "south", "east"];

/// A turn that says `text` a word at a time.
fn words(text: &str) -> Vec<Value> {
    text.split_inclusive(' ')
        .map(|word| json!({"type": "text_delta", "text": word}))
        .collect()
}

/// A call of `name` with `args`.
fn call(id: &str, name: &str, args: Value) -> Vec<Value> {
    vec![
        json!({"type": "tool_call_start", "id": id, "name": name}),
        json!({"type": "tool_call_delta", "id": id, "args": args.to_string()}),
        json!({"type": "tool_call_end", "id": id}),
    ]
}

fn finish(mut turn: Vec<Value>, reason: &str) -> Value {
    turn.push(json!({"type": "finish", "reason": reason}));
    Value::Array(turn)
}

/// Three lines of a scout's report.
fn report(scout: &str) -> String {
    (1..=3)
        .map(|line| format!("{scout} line {line} of the report"))
        .collect::<Vec<_>>()
        .join("\n")
}

fn start() -> (tempfile::TempDir, Server) {
    let dir = tempfile::tempdir().unwrap();
    let mut lead = words("Sending the scouts. ");
    for (idx, scout) in ["north", "south", "east", "west"].iter().enumerate() {
        lead.extend(call(&format!("c{idx}"), scout, json!({"input": "look"})));
    }
    let scripts = [
        (
            "lead.json".to_owned(),
            json!({"turns": [finish(lead, "tool_calls"), finish(words("All four scouts reported back."), "stop")]}),
        ),
        (
            "west.json".to_owned(),
            json!({"turns": [
                finish(call("c1", "manager", json!({"input": "tidy up"})), "tool_calls"),
                finish(words("West is tidy."), "stop"),
            ]}),
        ),
        (
            "manager.json".to_owned(),
            json!({"turns": [
                finish(call("c1", "cleaner", json!({"input": "remove the log"})), "tool_calls"),
                finish(words("The cleaner is done."), "stop"),
            ]}),
        ),
        (
            "cleaner.json".to_owned(),
            json!({"turns": [
                finish(call("c1", "write_file", json!({"path": "old.log", "content": "cleared"})), "tool_calls"),
                finish(words("Cleared the log."), "stop"),
            ]}),
        ),
    ]
    .into_iter()
    .chain(SCOUTS.iter().map(|scout| {
        (
            format!("{scout}.json"),
            json!({"turns": [finish(words(&report(scout)), "stop")]}),
        )
    }));
    for (name, script) in scripts {
        std::fs::write(dir.path().join(name), script.to_string()).unwrap();
    }
    std::fs::write(dir.path().join("agentwire.toml"), CONFIG).unwrap();
    std::fs::create_dir(dir.path().join("ws")).unwrap();
    let server = serve(dir.path(), &["--config", "agentwire.toml"]);
    (dir, server)
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The lines `out` shows, with their indentation: the terminal's `\r\n` and the spinner's
/// redraws (`\r`, clear the line) make line ends.
fn screen(out: &str) -> Vec<String> {
    out.split(['\n', '\r'])
        .map(|line| line.trim_start_matches("\u{1b}[2K"))
        .filter(|line| !line.is_empty())
        .map(str::to_owned)
        .collect()
}

/// The lines of `out` that say they are a sub-agent's run's (`{indent}{agent} │ …`), in order.
fn run_lines(out: &str) -> Vec<String> {
    screen(out)
        .into_iter()
        .filter(|line| line.contains(" │ "))
        .collect()
}

#[test]
fn chat_shows_sub_agents_indented_and_asks_an_approval_three_levels_down() {
    let (dir, server) = start();
    let mut command = Command::new(env!("CARGO_BIN_EXE_agentwire"));
    command
        .args(["chat", "--agent", "lead", &server.url])
        .env("NO_COLOR", "1");
    let mut chat = Session::spawn(command).unwrap();
    chat.set_expect_timeout(Some(Duration::from_secs(30)));
    chat.expect("> ").unwrap();
    chat.send_line("scout the house").unwrap();

    // The cleaner's call waits for a yes, asked once the lead's whole tree waits.
    let asked = chat.expect("[y/n] ").unwrap();
    let before = text(asked.before());
    assert!(
        before
            .contains("? cleaner: allow write_file {\"path\":\"old.log\",\"content\":\"cleared\"}"),
        "{before}"
    );
    // Each run's header, indented two spaces a level, under the call that started it.
    let shown = screen(&before);
    for header in ["  ◆ north", "  ◆ west", "    ◆ manager", "      ◆ cleaner"] {
        assert!(
            shown.iter().any(|line| line == header),
            "{header:?} in {shown:#?}"
        );
    }
    let lines = run_lines(&before);
    for scout in SCOUTS {
        let own: Vec<&str> = lines
            .iter()
            .filter_map(|line| line.strip_prefix(&format!("  {scout} │ ")))
            .collect();
        assert_eq!(
            own,
            [
                &format!("{scout} line 1 of the report"),
                &format!("{scout} line 2 of the report"),
                &format!("{scout} line 3 of the report"),
                "✓ done",
            ],
            "{before}"
        );
    }
    // The scouts answered at once: their lines interleave, each saying whose it is.
    let scouts: Vec<&str> = lines
        .iter()
        .filter_map(|line| {
            SCOUTS
                .into_iter()
                .find(|scout| line.starts_with(&format!("  {scout} │ ")))
        })
        .collect();
    let switches = scouts.windows(2).filter(|pair| pair[0] != pair[1]).count();
    assert!(switches >= 4, "{scouts:?}");
    assert!(
        lines.contains(
            &"      cleaner │ ▸ write_file {\"path\":\"old.log\",\"content\":\"cleared\"}"
                .to_owned()
        ),
        "{lines:?}"
    );
    assert!(
        lines.contains(
            &"      cleaner │ ? 'write_file' needs a person's approval before it runs".to_owned()
        ),
        "{lines:?}"
    );

    chat.send_line("y").unwrap();
    let done = chat.expect("All four scouts reported back.").unwrap();
    let after = text(done.before());
    let lines = run_lines(&after);
    assert_eq!(
        lines,
        [
            "      cleaner │ approved",
            "      cleaner │ ✓ write_file → {\"path\":\"/old.log\",\"bytes_written\":7}",
            "      cleaner │ Cleared the log.",
            "      cleaner │ ✓ done",
            "    manager │ ✓ cleaner → Cleared the log.",
            "    manager │ The cleaner is done.",
            "    manager │ ✓ done",
            "  west │ ✓ manager → The cleaner is done.",
            "  west │ West is tidy.",
            "  west │ ✓ done",
        ],
        "{after}"
    );
    // The top run's own lines are not indented: the calls' results, the answer.
    assert!(
        screen(&after)
            .iter()
            .any(|line| line == "✓ west → West is tidy."),
        "{after}"
    );
    chat.expect("> ").unwrap();
    assert_eq!(
        std::fs::read_to_string(dir.path().join("ws/old.log")).unwrap(),
        "cleared"
    );
    chat.send(ControlCode::EndOfTransmission).unwrap();
    chat.expect(Eof).unwrap();
}
