//! [`SaveArtifact`]: the built-in `save_artifact` tool, with which a model hands the user a
//! finished piece of work (a report, a script, a table) as a versioned artifact.

use agentwire_core::part::Artifact;
use agentwire_core::{Part, ToolCall, ToolSpec};
use futures::FutureExt;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::schema::parameters_for;
use crate::tool::{Tool, ToolContext, ToolFailure, ToolFuture};
use crate::workspace::Workspace;

/// The longest preview an `artifact` part carries, in characters.
const PREVIEW_CHARS: usize = 240;

/// `save_artifact {name, title?, media_type?, content}`: saves the content in the workspace as
/// `/artifacts/<name>` (where `read_file` reads it), each save of a name a new version kept
/// beside it. It answers `{"artifact_id": "<name>", "path": "/artifacts/<name>", "title",
/// "media_type", "version", "bytes"}` and adds an `artifact` part after its result
/// ([`Tool::result_part`]): `{"artifact_id", "title", "version", "preview"}`, the preview the
/// content's first 240 characters.
///
/// `name` is a plain file name (no `/`, not starting with `.`, at most 100 characters);
/// anything else is a `VALIDATION` error. `media_type` defaults to the one the name's extension
/// suggests, else `text/plain`.
#[derive(Debug)]
pub struct SaveArtifact {
    spec: ToolSpec,
    workspace: Workspace,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct SaveArtifactArgs {
    /// The artifact's file name, e.g. `report.md`; saving the same name again makes its next
    /// version.
    name: String,
    /// A title to show the user, e.g. `Trip plan`; the name when left out.
    #[serde(default)]
    title: Option<String>,
    /// The content's media type, e.g. `text/markdown`; guessed from the name when left out.
    #[serde(default)]
    media_type: Option<String>,
    /// The whole content, as text.
    content: String,
}

impl SaveArtifact {
    /// The tool's name.
    pub const NAME: &'static str = "save_artifact";

    /// The tool, saving in `workspace`.
    pub fn new(workspace: Workspace) -> Self {
        Self {
            spec: ToolSpec::new(
                Self::NAME,
                "Save a finished piece of work for the user (a document, code, a table) as an \
                 artifact they can open; saving the same name again makes a new version.",
                parameters_for::<SaveArtifactArgs>(),
            ),
            workspace,
        }
    }
}

impl Tool for SaveArtifact {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn call(&self, args: Value, _context: ToolContext) -> ToolFuture<'_> {
        async move {
            let args = checked(args)?;
            let saved = self
                .workspace
                .save_artifact(&args.name, args.content)
                .await?;
            let title = args.title.unwrap_or_else(|| args.name.clone());
            let media_type = args
                .media_type
                .unwrap_or_else(|| media_type_of(&args.name).to_owned());
            Ok(json!({
                "artifact_id": args.name,
                "path": saved.path,
                "title": title,
                "media_type": media_type,
                "version": saved.version,
                "bytes": saved.bytes,
            }))
        }
        .boxed()
    }

    fn result_part(&self, call: &ToolCall, result: &Value) -> Option<Part> {
        let content = call.args.as_value().get("content")?.as_str()?;
        let text = |key: &str| result.get(key).and_then(Value::as_str);
        Some(Part::Artifact(Artifact {
            artifact_id: text("artifact_id")?.into(),
            title: text("title")?.to_owned(),
            version: result
                .get("version")
                .and_then(Value::as_u64)
                .and_then(|version| u32::try_from(version).ok()),
            preview: Some(preview(content)),
        }))
    }
}

fn checked(args: Value) -> Result<SaveArtifactArgs, ToolFailure> {
    let args: SaveArtifactArgs = serde_json::from_value(args).map_err(|error| {
        ToolFailure::invalid_arguments(format!("the arguments do not fit: {error}"))
    })?;
    let name = &args.name;
    if name.is_empty()
        || name.starts_with('.')
        || name.contains(['/', '\\', '\0'])
        || name.chars().count() > 100
    {
        return Err(ToolFailure::invalid_arguments(format!(
            "'name' must be a plain file name such as 'report.md' (no '/', not starting with \
             '.', at most 100 characters); got '{name}'"
        )));
    }
    Ok(args)
}

/// The media type a file name's extension suggests; `text/plain` when it suggests none.
fn media_type_of(name: &str) -> &'static str {
    let extension = name
        .rsplit_once('.')
        .map(|(_, extension)| extension.to_ascii_lowercase());
    match extension.as_deref() {
        Some("md" | "markdown") => "text/markdown",
        Some("html" | "htm") => "text/html",
        Some("csv") => "text/csv",
        Some("json") => "application/json",
        Some("svg") => "image/svg+xml",
        Some("py") => "text/x-python",
        Some("rs") => "text/x-rust",
        Some("js") => "text/javascript",
        _ => "text/plain",
    }
}

/// The content's first [`PREVIEW_CHARS`] characters, `…` marking a cut.
fn preview(content: &str) -> String {
    match content.char_indices().nth(PREVIEW_CHARS) {
        Some((cut, _)) => format!("{}…", &content[..cut]),
        None => content.to_owned(),
    }
}
