//! The workspace file tools: round trips, errors the model can act on, and confinement (no
//! `..`, absolute-looking paths stay inside, no symlink escapes).
#![allow(clippy::unwrap_used)]

use std::os::unix::fs::symlink;
use std::path::Path;

use agentwire_core::{Part, ToolArgs, ToolCall, ToolErrorKind};
use agentwire_tools::{ToolLimits, Toolbox, Workspace};
use serde_json::{Value, json};
use tempfile::TempDir;
use tokio_util::sync::CancellationToken;

/// A workspace in a fresh temporary directory (created by `Workspace::open`), with a sibling
/// `outside` directory holding `secret.txt`, and a toolbox of the file tools.
struct Fixture {
    _temp: TempDir,
    root: std::path::PathBuf,
    outside: std::path::PathBuf,
    toolbox: Toolbox,
}

fn fixture() -> Fixture {
    fixture_with(|workspace| workspace)
}

fn fixture_with(configure: impl FnOnce(Workspace) -> Workspace) -> Fixture {
    let temp = TempDir::new().unwrap();
    let root = temp.path().join("agents/assistant/workspace");
    let outside = temp.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    std::fs::write(outside.join("secret.txt"), "top secret").unwrap();
    let workspace = configure(Workspace::open(&root).unwrap());
    let mut toolbox = Toolbox::new(ToolLimits::default());
    for tool in workspace.tools() {
        toolbox.add_arc(tool).unwrap();
    }
    Fixture {
        _temp: temp,
        root,
        outside,
        toolbox,
    }
}

impl Fixture {
    async fn run(&self, name: &str, args: Value) -> Part {
        let call = ToolCall {
            tool_call_id: "tc_1".into(),
            tool_name: name.to_owned(),
            args: ToolArgs(args),
        };
        self.toolbox.run(&call, CancellationToken::new()).await
    }

    async fn ok(&self, name: &str, args: Value) -> Value {
        match self.run(name, args).await {
            Part::ToolResult(result) => result.result,
            other => panic!("expected a result, got {other:?}"),
        }
    }

    async fn error(&self, name: &str, args: Value) -> (ToolErrorKind, String) {
        match self.run(name, args).await {
            Part::ToolError(error) => (error.error_type, error.message),
            other => panic!("expected an error, got {other:?}"),
        }
    }

    fn outside_untouched(&self) {
        assert_eq!(
            std::fs::read_to_string(self.outside.join("secret.txt")).unwrap(),
            "top secret"
        );
        let names: Vec<_> = std::fs::read_dir(&self.outside)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["secret.txt"]);
    }
}

fn execution(message: &str) -> (ToolErrorKind, String) {
    (ToolErrorKind::Execution, message.to_owned())
}

fn validation(message: &str) -> (ToolErrorKind, String) {
    (ToolErrorKind::Validation, message.to_owned())
}

#[tokio::test]
async fn seed_000_write_then_read_round_trips_inside_the_workspace() {
    let f = fixture();
    assert!(f.root.is_dir(), "the workspace directory is created");
    let written = f
        .ok(
            "write_file",
            json!({"path": "/hello.txt", "content": "Hello, world!"}),
        )
        .await;
    assert_eq!(written, json!({"path": "/hello.txt", "bytes_written": 13}));
    assert_eq!(
        std::fs::read_to_string(f.root.join("hello.txt")).unwrap(),
        "Hello, world!"
    );
    // `/x`, `x`, `./x` and `//x` are one file.
    for path in ["/hello.txt", "hello.txt", "./hello.txt", "//hello.txt"] {
        let read = f.ok("read_file", json!({"path": path})).await;
        assert_eq!(
            read,
            json!({"path": "/hello.txt", "content": "Hello, world!"})
        );
    }
    let replaced = f
        .ok(
            "write_file",
            json!({"path": "hello.txt", "content": "Hi é"}),
        )
        .await;
    assert_eq!(replaced, json!({"path": "/hello.txt", "bytes_written": 5}));
    assert_eq!(
        f.ok("read_file", json!({"path": "/hello.txt"})).await["content"],
        "Hi é"
    );
}

#[tokio::test]
async fn write_creates_parents_and_list_shows_sorted_entries_with_types_and_sizes() {
    let f = fixture();
    f.ok(
        "write_file",
        json!({"path": "/notes/2024/todo.md", "content": "- walk"}),
    )
    .await;
    f.ok("write_file", json!({"path": "/b.txt", "content": "bb"}))
        .await;
    f.ok("write_file", json!({"path": "/a.txt", "content": ""}))
        .await;
    symlink("a.txt", f.root.join("c-link")).unwrap();
    assert_eq!(
        f.ok("list_files", json!({})).await,
        json!({"path": "/", "entries": [
            {"name": "a.txt", "type": "file", "size": 0},
            {"name": "b.txt", "type": "file", "size": 2},
            {"name": "c-link", "type": "symlink"},
            {"name": "notes", "type": "directory"},
        ]})
    );
    assert_eq!(
        f.ok("list_files", json!({"path": "/notes/2024"})).await,
        json!({"path": "/notes/2024", "entries": [{"name": "todo.md", "type": "file", "size": 6}]})
    );
    assert_eq!(
        f.ok("list_files", json!({"path": "/"})).await["entries"]
            .as_array()
            .unwrap()
            .len(),
        4
    );
    // A symlink that stays inside is followed.
    assert_eq!(
        f.ok("read_file", json!({"path": "c-link"})).await["content"],
        ""
    );
}

#[tokio::test]
async fn listing_stops_at_its_limit_and_says_how_many_more() {
    let f = fixture_with(|workspace| workspace.with_max_list_entries(2));
    for name in ["c", "a", "d", "b"] {
        f.ok("write_file", json!({"path": name, "content": name}))
            .await;
    }
    let listing = f.ok("list_files", json!({})).await;
    assert_eq!(
        listing["entries"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["name"].clone())
            .collect::<Vec<_>>(),
        ["a", "b"]
    );
    assert_eq!(listing["more"], 2);
}

#[tokio::test]
async fn errors_say_what_is_wrong() {
    let f = fixture_with(|workspace| workspace.with_max_read_bytes(10));
    f.ok("write_file", json!({"path": "/dir/a.txt", "content": "a"}))
        .await;
    std::fs::write(f.root.join("big.txt"), "12345678901").unwrap();
    std::fs::write(f.root.join("image.png"), [0x89, b'P', b'N', b'G', 0xff]).unwrap();
    let cases = [
        (
            "read_file",
            json!({"path": "/missing.txt"}),
            execution("Tool 'read_file' failed: cannot read '/missing.txt': it does not exist"),
        ),
        (
            "read_file",
            json!({"path": "/dir"}),
            execution("Tool 'read_file' failed: '/dir' is a directory; list it with list_files"),
        ),
        (
            "read_file",
            json!({"path": "/big.txt"}),
            execution(
                "Tool 'read_file' failed: '/big.txt' is 11 bytes, over the read limit of 10 bytes",
            ),
        ),
        (
            "read_file",
            json!({"path": "/image.png"}),
            execution(
                "Tool 'read_file' failed: '/image.png' is not UTF-8 text; read_file reads text files only",
            ),
        ),
        (
            "list_files",
            json!({"path": "/dir/a.txt"}),
            execution(
                "Tool 'list_files' failed: '/dir/a.txt' is a file, not a directory; read it with read_file",
            ),
        ),
        (
            "list_files",
            json!({"path": "/nowhere"}),
            execution("Tool 'list_files' failed: cannot list '/nowhere': it does not exist"),
        ),
        (
            "write_file",
            json!({"path": "/dir", "content": "x"}),
            execution("Tool 'write_file' failed: cannot write '/dir': it is a directory"),
        ),
        (
            "write_file",
            json!({"path": "/dir/a.txt/b", "content": "x"}),
            execution(
                "Tool 'write_file' failed: cannot write '/dir/a.txt/b': a parent of it is a file, not a directory",
            ),
        ),
        (
            "write_file",
            json!({"path": "/dir/a.txt/b/c", "content": "x"}),
            execution(
                "Tool 'write_file' failed: cannot write '/dir/a.txt/b/c': a parent of it is a file, not a directory",
            ),
        ),
        (
            "write_file",
            json!({"path": "/", "content": "x"}),
            validation(
                "Validation failed for tool 'write_file': 'path' must name a file, not the workspace root (got '/').",
            ),
        ),
        (
            "read_file",
            json!({"path": "a\u{0}b"}),
            validation(
                "Validation failed for tool 'read_file': 'path' must not contain a NUL character.",
            ),
        ),
        (
            "write_file",
            json!({"path": "/a.txt"}),
            validation(
                "Validation failed for tool 'write_file': missing required argument 'content'.",
            ),
        ),
        (
            "read_file",
            json!({"path": "/a.txt", "encoding": "latin1"}),
            validation("Validation failed for tool 'read_file': unexpected argument 'encoding'."),
        ),
    ];
    for (tool, args, expected) in cases {
        assert_eq!(f.error(tool, args.clone()).await, expected, "{tool} {args}");
    }
}

#[tokio::test]
async fn dot_dot_is_refused_and_nothing_is_written_outside() {
    let f = fixture();
    for path in [
        "../outside/secret.txt",
        "/../outside/new.txt",
        "a/../../outside/new.txt",
        "..",
        "notes/..",
    ] {
        for (tool, args) in [
            ("read_file", json!({"path": path})),
            ("write_file", json!({"path": path, "content": "pwned"})),
            ("list_files", json!({"path": path})),
        ] {
            let expected = format!(
                "Validation failed for tool '{tool}': 'path' must not contain '..' (got '{path}'); paths are relative to the workspace root '/'."
            );
            assert_eq!(f.error(tool, args).await, validation(&expected));
        }
    }
    f.outside_untouched();
    assert_eq!(std::fs::read_dir(&f.root).unwrap().count(), 0);
}

#[tokio::test]
async fn absolute_looking_paths_stay_inside() {
    let f = fixture();
    assert_eq!(
        f.error("read_file", json!({"path": "/etc/passwd"})).await,
        execution("Tool 'read_file' failed: cannot read '/etc/passwd': it does not exist")
    );
    let outside_path = f.outside.join("secret.txt").to_string_lossy().into_owned();
    assert!(outside_path.starts_with('/'));
    f.ok(
        "write_file",
        json!({"path": outside_path, "content": "inside"}),
    )
    .await;
    f.outside_untouched();
    let inside = f.root.join(outside_path.trim_start_matches('/'));
    assert_eq!(std::fs::read_to_string(inside).unwrap(), "inside");
    f.ok(
        "write_file",
        json!({"path": "/etc/passwd", "content": "root:x"}),
    )
    .await;
    assert_eq!(
        std::fs::read_to_string(f.root.join("etc/passwd")).unwrap(),
        "root:x"
    );
}

#[tokio::test]
async fn symlinks_cannot_lead_outside() {
    let f = fixture();
    let secret = f.outside.join("secret.txt");
    symlink(&secret, f.root.join("abs-link.txt")).unwrap();
    symlink("../../../outside/secret.txt", f.root.join("rel-link.txt")).unwrap();
    symlink(&f.outside, f.root.join("out-dir")).unwrap();
    symlink("/", f.root.join("host-root")).unwrap();
    std::fs::create_dir(f.root.join("sub")).unwrap();
    symlink("../../../../outside", f.root.join("sub/up")).unwrap();
    // A dangling link to a place outside that does not exist yet.
    symlink(f.outside.join("new.txt"), f.root.join("dangling.txt")).unwrap();

    let leads_out = |tool: &str, action: &str, path: &str| {
        execution(&format!(
            "Tool '{tool}' failed: cannot {action} '{path}': it leads outside the workspace"
        ))
    };
    for path in [
        "/abs-link.txt",
        "/rel-link.txt",
        "/out-dir/secret.txt",
        "/host-root/etc/passwd",
        "/sub/up/secret.txt",
    ] {
        assert_eq!(
            f.error("read_file", json!({"path": path})).await,
            leads_out("read_file", "read", path)
        );
    }
    for path in [
        "/abs-link.txt",
        "/rel-link.txt",
        "/out-dir/secret.txt",
        "/out-dir/new.txt",
        "/dangling.txt",
        "/sub/up/new.txt",
    ] {
        let error = f
            .error("write_file", json!({"path": path, "content": "pwned"}))
            .await;
        assert_eq!(error, leads_out("write_file", "write", path));
    }
    assert_eq!(
        f.error(
            "write_file",
            json!({"path": "/out-dir/deeper/new.txt", "content": "pwned"})
        )
        .await,
        leads_out("write_file", "write", "/out-dir/deeper/new.txt")
    );
    for path in ["/out-dir", "/host-root", "/sub/up"] {
        assert_eq!(
            f.error("list_files", json!({"path": path})).await,
            leads_out("list_files", "list", path)
        );
    }
    f.outside_untouched();
}

#[test]
fn the_file_tools_offer_plain_schemas() {
    let workspace = Workspace::open(TempDir::new().unwrap().path().join("w")).unwrap();
    let specs: Vec<_> = workspace
        .tools()
        .iter()
        .map(|tool| tool.spec().clone())
        .collect();
    let names: Vec<&str> = specs.iter().map(|spec| spec.name.as_str()).collect();
    assert_eq!(names, Workspace::TOOL_NAMES);
    assert_eq!(
        specs[0].parameters,
        json!({
            "type": "object",
            "properties": {
                "path": {"description": "The file to write, e.g. `/notes/todo.txt`; paths start at the workspace root `/`.", "type": "string"},
                "content": {"description": "The whole text of the file.", "type": "string"}
            },
            "required": ["path", "content"],
            "additionalProperties": false
        })
    );
    assert_eq!(
        specs[1].description,
        "Read a text file from the workspace (at most 102400 bytes)."
    );
    assert_eq!(
        specs[2].parameters["properties"]["path"]["type"],
        json!(["string", "null"])
    );
    assert!(
        specs[2]
            .parameters
            .get("required")
            .is_none_or(|r| r == &json!([]))
    );
    let _: &Path = workspace.root();
}
