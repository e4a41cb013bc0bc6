//! The built-in file tools, `write_file`, `read_file` and `list_files`, working in a
//! [`Workspace`].

use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;

use crate::fn_tool::FnTool;
use crate::tool::Tool;
use crate::workspace::Workspace;

// The argument types deny unknown fields, so a made-up argument is named back to the model.

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct WriteFileArgs {
    /// The file to write, e.g. `/notes/todo.txt`; paths start at the workspace root `/`.
    path: String,
    /// The whole text of the file.
    content: String,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ReadFileArgs {
    /// The file to read, e.g. `/notes/todo.txt`; paths start at the workspace root `/`.
    path: String,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ListFilesArgs {
    /// The directory to list, e.g. `/notes`; the workspace root `/` when left out.
    path: Option<String>,
}

impl Workspace {
    /// The names of the file tools, in the order [`Workspace::tools`] gives them.
    pub const TOOL_NAMES: [&'static str; 3] = ["write_file", "read_file", "list_files"];

    /// The file tools working in this workspace: `write_file {path, content}`, `read_file
    /// {path}` and `list_files {path?}`.
    ///
    /// Results are small JSON objects: `{"path": "/hello.txt", "bytes_written": 13}`,
    /// `{"path": "/hello.txt", "content": "…"}`, and `{"path": "/", "entries": [{"name":
    /// "hello.txt", "type": "file", "size": 13}, {"name": "notes", "type": "directory"}]}`
    /// (sorted by name; `"more": n` counts entries past the listing limit). A path with `..` is
    /// a `VALIDATION` error; a missing file, a path leading outside the workspace, a file over
    /// the read limit or one that is not UTF-8 text is an `EXECUTION` error saying so.
    pub fn tools(&self) -> [Arc<dyn Tool>; 3] {
        [
            Arc::new(self.write_file()),
            Arc::new(self.read_file()),
            Arc::new(self.list_files()),
        ]
    }

    fn write_file(&self) -> impl Tool + 'static {
        let workspace = self.clone();
        FnTool::new(
            "write_file",
            "Write a text file in the workspace, replacing it if it exists and creating missing \
             parent directories.",
            move |args: WriteFileArgs, _| {
                let workspace = workspace.clone();
                async move { workspace.write(&args.path, args.content).await }
            },
        )
    }

    fn read_file(&self) -> impl Tool + 'static {
        let workspace = self.clone();
        let description = format!(
            "Read a text file from the workspace (at most {} bytes).",
            self.max_read_bytes()
        );
        FnTool::new("read_file", description, move |args: ReadFileArgs, _| {
            let workspace = workspace.clone();
            async move { workspace.read(&args.path).await }
        })
    }

    fn list_files(&self) -> impl Tool + 'static {
        let workspace = self.clone();
        FnTool::new(
            "list_files",
            "List a directory of the workspace: each entry's name, type (file, directory or \
             symlink) and size in bytes.",
            move |args: ListFilesArgs, _| {
                let workspace = workspace.clone();
                async move { workspace.list(args.path.as_deref()).await }
            },
        )
    }
}
