//! The core is pure: it depends on no IO crate and its source touches no IO, clock, environment
//! or randomness. These checks keep it so.

use std::path::Path;
use std::process::Command;

/// Crates that do IO, run async tasks, or read the clock or entropy.
const FORBIDDEN_CRATES: &[&str] = &[
    "tokio",
    "mio",
    "socket2",
    "async-std",
    "smol",
    "futures-io",
    "hyper",
    "reqwest",
    "axum",
    "tower",
    "http",
    "h2",
    "sqlx",
    "rusqlite",
    "libsqlite3-sys",
    "tokio-postgres",
    "rand",
    "getrandom",
    "uuid",
    "chrono",
    "time",
    "jiff",
    "tracing",
    "log",
];

#[test]
fn core_depends_on_no_io_crate() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let output = Command::new(cargo)
        .args([
            "tree",
            "-p",
            "agentwire-core",
            "-e",
            "normal",
            "--prefix",
            "none",
            "--target",
            "all",
        ])
        .args(["--format", "{p}"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo tree runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let tree = String::from_utf8_lossy(&output.stdout);
    // Each line is `name vX.Y.Z`, perhaps followed by `(*)` for a repeat.
    let crates: Vec<&str> = tree
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .collect();
    assert!(
        crates.contains(&"serde_json"),
        "the tree lists crates by package name: {crates:?}"
    );
    for forbidden in FORBIDDEN_CRATES {
        assert!(
            !crates.contains(forbidden),
            "agentwire-core must not depend on {forbidden}: {crates:?}"
        );
    }
}

#[test]
fn core_source_touches_no_io() {
    const FORBIDDEN_PATHS: &[&str] = &[
        "std::fs",
        "std::net",
        "std::env",
        "std::process",
        "std::thread",
        "std::io::stdin",
        "SystemTime",
        "Instant::now",
        "println!",
        "eprintln!",
    ];
    let mut checked = 0;
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut dirs = vec![src];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("src is readable") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                dirs.push(path);
                continue;
            }
            let text = std::fs::read_to_string(&path).expect("source is text");
            for forbidden in FORBIDDEN_PATHS {
                assert!(
                    !text.contains(forbidden),
                    "{} uses {forbidden}",
                    path.display()
                );
            }
            assert!(
                text.starts_with("//!"),
                "{} opens with a //! header",
                path.display()
            );
            checked += 1;
        }
    }
    assert!(checked >= 10, "found the core's source files");
}
