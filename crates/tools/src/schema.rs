//! The JSON Schema of a tool's arguments, derived from a Rust type with `schemars` and cleaned
//! to the plain object schema that model providers accept.

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use schemars::transform::RestrictFormats;
use serde_json::Value;

/// The parameters schema for arguments of type `T`, as [`ToolSpec::parameters`] wants it.
///
/// schemars writes a root schema for documents; a tool's parameters are sent inside a provider
/// request, so this changes what providers reject or ignore:
/// - no `$schema` and no `title` (the type's Rust name means nothing to the model; doc comments
///   on the type and its fields stay, as `description`s);
/// - nested types are written inline rather than as `$ref`s into `$defs` (only a recursive type
///   keeps its `$defs`);
/// - `format`s that JSON Schema does not define (schemars marks numbers `double`, `uint32`, …)
///   are dropped; the numeric bounds they stand for stay as `minimum`/`maximum`.
///
/// The schema describes what `T` deserializes from. Unknown fields are allowed unless `T` has
/// `#[serde(deny_unknown_fields)]`, which becomes `"additionalProperties": false` and lets
/// validation name an argument the model made up.
///
/// [`ToolSpec::parameters`]: agentwire_core::ToolSpec::parameters
pub fn parameters_for<T: JsonSchema>() -> Value {
    let generator = SchemaSettings::draft2020_12()
        .for_deserialize()
        .with(|settings| settings.inline_subschemas = true)
        .with_transform(RestrictFormats::default())
        .into_generator();
    let mut schema = generator.into_root_schema_for::<T>().to_value();
    if let Some(root) = schema.as_object_mut() {
        root.remove("$schema");
        root.remove("title");
    }
    schema
}
