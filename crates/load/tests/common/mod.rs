//! What the load generator's tests share: the `agentwire` binary they load.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// The `agentwire` binary of this build profile, built if needed (it belongs to another
/// package, so Cargo does not build it for this test).
pub(crate) fn agentwire() -> PathBuf {
    let load = Path::new(env!("CARGO_BIN_EXE_agentwire-load"));
    let dir = load.parent().unwrap();
    let mut build = Command::new(env!("CARGO"));
    build.args([
        "build",
        "--quiet",
        "-p",
        "agentwire-cli",
        "--bin",
        "agentwire",
    ]);
    match dir.file_name().and_then(|name| name.to_str()) {
        Some("debug") | None => {}
        Some(profile) => {
            build.args(["--profile", profile]);
        }
    }
    assert!(build.status().unwrap().success(), "building agentwire");
    dir.join("agentwire")
}
