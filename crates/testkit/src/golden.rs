//! Golden files: a test compares what it produced with a file checked into the repository, and
//! `UPDATE_SNAPSHOTS=1` rewrites the file instead, so that a change of output is a reviewed diff.

use std::path::Path;

/// Checks that the file at `path` holds exactly `actual`; with `UPDATE_SNAPSHOTS=1` in the
/// environment, writes `actual` there instead (creating folders as needed).
///
/// # Panics
/// When the file differs or is missing (the test fails, naming the file and the first line that
/// differs), or cannot be written.
#[track_caller]
pub fn check(path: impl AsRef<Path>, actual: &[u8]) {
    let path = path.as_ref();
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some_and(|value| value == "1") {
        if let Some(folder) = path.parent() {
            std::fs::create_dir_all(folder).expect("create the snapshot folder");
        }
        if std::fs::read(path).ok().as_deref() != Some(actual) {
            std::fs::write(path, actual).expect("write the snapshot");
        }
        return;
    }
    let Ok(expected) = std::fs::read(path) else {
        panic!(
            "golden file {} is missing; run the test with UPDATE_SNAPSHOTS=1 to write it",
            path.display()
        );
    };
    if expected == actual {
        return;
    }
    let expected = String::from_utf8_lossy(&expected);
    let actual = String::from_utf8_lossy(actual);
    let line = expected
        .lines()
        .zip(actual.lines())
        .position(|(e, a)| e != a)
        .unwrap_or_else(|| expected.lines().count().min(actual.lines().count()));
    panic!(
        "golden file {} differs at line {}:\n  expected: {:?}\n  actual:   {:?}\n\
         (run with UPDATE_SNAPSHOTS=1 to accept the new output)",
        path.display(),
        line + 1,
        expected.lines().nth(line).unwrap_or("<end of file>"),
        actual.lines().nth(line).unwrap_or("<end of file>"),
    );
}
