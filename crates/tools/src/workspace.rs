//! [`Workspace`]: the directory an agent's file tools are confined to, and the file operations
//! they run in it.
//!
//! The model sees its workspace as a filesystem rooted at `/`: `/hello.txt` and `hello.txt`
//! both mean `<workspace>/hello.txt`. A path with a `..` component is refused as invalid
//! arguments (it can only mean to leave the directory it is in, and the model can fix it).
//!
//! Confinement is not done by inspecting paths: the workspace is a `cap_std::fs::Dir`, whose
//! operations resolve every path component, symlinks included, inside the directory and fail
//! on anything that would leave it. So a symlink inside the workspace pointing outside (at a
//! file, or at a directory used as a parent) cannot be followed out, whoever created it.

use std::ffi::OsString;
use std::io::{self, Read};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use cap_std::ambient_authority;
use cap_std::fs::Dir;
use serde::Serialize;

use crate::tool::ToolFailure;

/// A directory the file tools may touch, and nothing outside it.
///
/// Cheap to clone: clones share the open directory.
#[derive(Clone, Debug)]
pub struct Workspace {
    dir: Arc<Dir>,
    root: Arc<Path>,
    max_read_bytes: u64,
    max_list_entries: usize,
}

/// What `write_file` answers: `{"path": "/hello.txt", "bytes_written": 13}`.
#[derive(Debug, Serialize)]
pub(crate) struct Written {
    pub(crate) path: String,
    pub(crate) bytes_written: usize,
}

/// What `read_file` answers: `{"path": "/hello.txt", "content": "Hello, world!"}`.
#[derive(Debug, Serialize)]
pub(crate) struct FileContent {
    pub(crate) path: String,
    pub(crate) content: String,
}

/// Where [`Workspace::save_artifact`] put a version.
#[derive(Debug)]
pub(crate) struct SavedArtifact {
    pub(crate) path: String,
    pub(crate) version: u32,
    pub(crate) bytes: usize,
}

/// What `list_files` answers: the directory and its entries sorted by name; `more` counts the
/// entries left out past the listing limit.
#[derive(Debug, Serialize)]
pub(crate) struct Listing {
    pub(crate) path: String,
    pub(crate) entries: Vec<Entry>,
    #[serde(skip_serializing_if = "is_zero")]
    pub(crate) more: usize,
}

/// `{"name": "a.txt", "type": "file", "size": 13}`; a directory or symlink has no size.
#[derive(Debug, Serialize)]
pub(crate) struct Entry {
    pub(crate) name: String,
    #[serde(rename = "type")]
    pub(crate) kind: EntryKind,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) size: Option<u64>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum EntryKind {
    File,
    Directory,
    Symlink,
    Other,
}

impl Workspace {
    /// The largest file `read_file` reads by default: 100 KiB, so the file's content fits the
    /// toolbox's default output cap.
    pub const DEFAULT_MAX_READ_BYTES: u64 = 100 * 1024;

    /// The most entries `list_files` returns by default.
    pub const DEFAULT_MAX_LIST_ENTRIES: usize = 500;

    /// Opens the workspace at `root`, creating the directory (and its parents) if missing.
    ///
    /// This is the only place the host's filesystem is reached by path; it blocks, and is meant
    /// for setting an agent up.
    pub fn open(root: impl AsRef<Path>) -> io::Result<Self> {
        let root = root.as_ref();
        std::fs::create_dir_all(root)?;
        let dir = Dir::open_ambient_dir(root, ambient_authority())?;
        Ok(Self {
            dir: Arc::new(dir),
            root: Arc::from(root),
            max_read_bytes: Self::DEFAULT_MAX_READ_BYTES,
            max_list_entries: Self::DEFAULT_MAX_LIST_ENTRIES,
        })
    }

    /// The same workspace with a different largest readable file.
    #[must_use]
    pub fn with_max_read_bytes(mut self, max_read_bytes: u64) -> Self {
        self.max_read_bytes = max_read_bytes;
        self
    }

    /// The same workspace listing at most `max_list_entries` entries per directory.
    #[must_use]
    pub fn with_max_list_entries(mut self, max_list_entries: usize) -> Self {
        self.max_list_entries = max_list_entries;
        self
    }

    /// The directory on the host, as it was given to [`Workspace::open`].
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The largest file `read_file` reads, in bytes.
    pub fn max_read_bytes(&self) -> u64 {
        self.max_read_bytes
    }

    /// Writes `content` to the file at `path`, creating missing parent directories.
    pub(crate) async fn write(&self, path: &str, content: String) -> Result<Written, ToolFailure> {
        let relative = file_path(path)?;
        let shown = shown(&relative);
        self.blocking(move |dir| {
            if let Some(parent) = relative.parent().filter(|p| !p.as_os_str().is_empty()) {
                create_parents(dir, parent).map_err(|error| io_failure(&error, "write", &shown))?;
            }
            dir.write(&relative, content.as_bytes())
                .map_err(|error| io_failure(&error, "write", &shown))?;
            Ok(Written {
                path: shown,
                bytes_written: content.len(),
            })
        })
        .await
    }

    /// Reads the text file at `path`, if it is at most `max_read_bytes` long.
    pub(crate) async fn read(&self, path: &str) -> Result<FileContent, ToolFailure> {
        let relative = file_path(path)?;
        let shown = shown(&relative);
        let max = self.max_read_bytes;
        self.blocking(move |dir| {
            let file = dir
                .open(&relative)
                .map_err(|error| io_failure(&error, "read", &shown))?;
            let metadata = file
                .metadata()
                .map_err(|error| io_failure(&error, "read", &shown))?;
            if metadata.is_dir() {
                return Err(ToolFailure::new(format!(
                    "'{shown}' is a directory; list it with list_files"
                )));
            }
            if metadata.len() > max {
                return Err(too_big(&shown, metadata.len(), max));
            }
            // Read one byte past the limit: the file may have grown since its size was taken.
            let mut bytes = Vec::new();
            file.take(max + 1)
                .read_to_end(&mut bytes)
                .map_err(|error| io_failure(&error, "read", &shown))?;
            if bytes.len() as u64 > max {
                return Err(too_big(&shown, bytes.len() as u64, max));
            }
            let content = String::from_utf8(bytes).map_err(|_| {
                ToolFailure::new(format!(
                    "'{shown}' is not UTF-8 text; read_file reads text files only"
                ))
            })?;
            Ok(FileContent {
                path: shown,
                content,
            })
        })
        .await
    }

    /// Lists the directory at `path` (the root when `None`).
    pub(crate) async fn list(&self, path: Option<&str>) -> Result<Listing, ToolFailure> {
        let relative = match path {
            Some(path) => relative_path(path)?,
            None => PathBuf::new(),
        };
        let shown = shown(&relative);
        let max_entries = self.max_list_entries;
        self.blocking(move |dir| {
            let not_listed = |error: io::Error| {
                if error.kind() == io::ErrorKind::NotADirectory {
                    ToolFailure::new(format!(
                        "'{shown}' is a file, not a directory; read it with read_file"
                    ))
                } else {
                    io_failure(&error, "list", &shown)
                }
            };
            let entries = if relative.as_os_str().is_empty() {
                dir.entries()
            } else {
                dir.read_dir(&relative)
            }
            .map_err(not_listed)?;
            let mut listed = Vec::new();
            for entry in entries {
                let entry = entry.map_err(|error| io_failure(&error, "list", &shown))?;
                let file_type = entry
                    .file_type()
                    .map_err(|error| io_failure(&error, "list", &shown))?;
                let (kind, size) = if file_type.is_symlink() {
                    (EntryKind::Symlink, None)
                } else if file_type.is_dir() {
                    (EntryKind::Directory, None)
                } else if file_type.is_file() {
                    (EntryKind::File, entry.metadata().ok().map(|m| m.len()))
                } else {
                    (EntryKind::Other, None)
                };
                listed.push(Entry {
                    name: name_text(entry.file_name()),
                    kind,
                    size,
                });
            }
            listed.sort_unstable_by(|a, b| a.name.cmp(&b.name));
            let more = listed.len().saturating_sub(max_entries);
            listed.truncate(max_entries);
            Ok(Listing {
                path: shown,
                entries: listed,
                more,
            })
        })
        .await
    }

    /// Saves a version of the artifact `name` (a plain file name): the content becomes
    /// `/artifacts/<name>`, where `read_file` finds it, and is kept as
    /// `/artifacts/.versions/<name>/<version>`. The version is one past the versions kept;
    /// each is created new, so two saves at once get different versions.
    pub(crate) async fn save_artifact(
        &self,
        name: &str,
        content: String,
    ) -> Result<SavedArtifact, ToolFailure> {
        let latest = file_path(&format!("/artifacts/{name}"))?;
        let versions = file_path(&format!("/artifacts/.versions/{name}"))?;
        let shown = shown(&latest);
        self.blocking(move |dir| {
            let failed = |error: io::Error| io_failure(&error, "save", &shown);
            create_parents(dir, &versions).map_err(failed)?;
            let kept = dir.read_dir(&versions).map_err(failed)?.count();
            let mut version = u32::try_from(kept).unwrap_or(u32::MAX).saturating_add(1);
            let mut options = cap_std::fs::OpenOptions::new();
            options.write(true).create_new(true);
            let mut file = loop {
                match dir.open_with(versions.join(version.to_string()), &options) {
                    Ok(file) => break file,
                    Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {
                        version = version.saturating_add(1);
                    }
                    Err(error) => return Err(failed(error)),
                }
            };
            io::Write::write_all(&mut file, content.as_bytes()).map_err(failed)?;
            dir.write(&latest, content.as_bytes()).map_err(failed)?;
            Ok(SavedArtifact {
                path: shown,
                version,
                bytes: content.len(),
            })
        })
        .await
    }

    /// Runs a blocking file operation off the async workers.
    async fn blocking<T: Send + 'static>(
        &self,
        operation: impl FnOnce(&Dir) -> Result<T, ToolFailure> + Send + 'static,
    ) -> Result<T, ToolFailure> {
        let dir = Arc::clone(&self.dir);
        tokio::task::spawn_blocking(move || operation(&dir))
            .await
            .unwrap_or_else(|join_error| {
                Err(ToolFailure::new(format!(
                    "the file operation stopped unexpectedly: {join_error}"
                )))
            })
    }
}

/// Creates the missing directories of `parent`. Looks first, because `create_dir_all` reports a
/// file or an outward symlink in the way only as "already exists".
fn create_parents(dir: &Dir, parent: &Path) -> io::Result<()> {
    match dir.metadata(parent) {
        Ok(metadata) if metadata.is_dir() => Ok(()),
        Ok(_) => Err(io::ErrorKind::NotADirectory.into()),
        Err(error) if error.kind() == io::ErrorKind::NotFound => dir.create_dir_all(parent),
        Err(error) => Err(error),
    }
}

/// A path the model wrote, as a path relative to the workspace: `/` and empty components and
/// `.` are dropped, `..` is refused.
fn relative_path(path: &str) -> Result<PathBuf, ToolFailure> {
    if path.contains('\0') {
        return Err(ToolFailure::invalid_arguments(
            "'path' must not contain a NUL character",
        ));
    }
    let mut relative = PathBuf::new();
    for component in path.split('/') {
        match component {
            "" | "." => {}
            ".." => {
                return Err(ToolFailure::invalid_arguments(format!(
                    "'path' must not contain '..' (got '{path}'); paths are relative to the workspace root '/'"
                )));
            }
            name => relative.push(name),
        }
    }
    // What `Path` parsed must be plain names, or `cap_std` would be handed something else.
    debug_assert!(
        relative
            .components()
            .all(|c| matches!(c, Component::Normal(_)))
    );
    Ok(relative)
}

/// A path that must name a file, so not the root.
fn file_path(path: &str) -> Result<PathBuf, ToolFailure> {
    let relative = relative_path(path)?;
    if relative.as_os_str().is_empty() {
        return Err(ToolFailure::invalid_arguments(format!(
            "'path' must name a file, not the workspace root (got '{path}')"
        )));
    }
    Ok(relative)
}

/// The path as the model sees it: `/notes/todo.txt`.
fn shown(relative: &Path) -> String {
    format!("/{}", relative.to_string_lossy())
}

fn name_text(name: OsString) -> String {
    name.into_string()
        .unwrap_or_else(|name| name.to_string_lossy().into_owned())
}

fn too_big(shown: &str, bytes: u64, max: u64) -> ToolFailure {
    ToolFailure::new(format!(
        "'{shown}' is {bytes} bytes, over the read limit of {max} bytes"
    ))
}

/// An IO error in the model's terms. `cap_std` reports an attempt to leave the workspace as
/// `PermissionDenied` with its own message.
fn io_failure(error: &io::Error, action: &str, shown: &str) -> ToolFailure {
    let message = match error.kind() {
        io::ErrorKind::NotFound => format!("cannot {action} '{shown}': it does not exist"),
        io::ErrorKind::PermissionDenied if error.to_string().contains("outside") => {
            format!("cannot {action} '{shown}': it leads outside the workspace")
        }
        io::ErrorKind::IsADirectory => format!("cannot {action} '{shown}': it is a directory"),
        io::ErrorKind::NotADirectory => {
            format!("cannot {action} '{shown}': a parent of it is a file, not a directory")
        }
        _ => format!("cannot {action} '{shown}': {error}"),
    };
    ToolFailure::new(message)
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}
