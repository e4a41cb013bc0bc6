//! Checking a call's arguments against its tool's JSON Schema, and saying what is wrong in words
//! a model can act on: every missing, wrong-typed or unexpected argument by name.

use jsonschema::error::{TypeKind, ValidationErrorKind};
use jsonschema::paths::LocationSegment;
use jsonschema::{ValidationError, Validator};
use serde_json::Value;

/// A tool's argument schema, compiled once when the tool joins a toolbox.
pub(crate) struct ArgsSchema {
    validator: Validator,
}

impl ArgsSchema {
    /// Compiles `parameters`, which must be a valid JSON Schema whose root is an object schema
    /// (what every provider requires of tool parameters). The error says why not.
    pub(crate) fn compile(parameters: &Value) -> Result<Self, String> {
        let root_type = parameters.get("type");
        if root_type != Some(&Value::String("object".to_owned())) {
            return Err(format!(
                "the root of a parameters schema must have \"type\": \"object\", found {}",
                root_type.map_or_else(|| "no type".to_owned(), Value::to_string)
            ));
        }
        let validator = jsonschema::validator_for(parameters).map_err(|error| error.to_string())?;
        Ok(Self { validator })
    }

    /// Checks `args`; on failure, one problem per bad or missing argument, in the order the
    /// schema finds them, e.g. `missing required argument 'path'`.
    pub(crate) fn check(&self, args: &Value) -> Result<(), Vec<String>> {
        if !args.is_object() {
            return Err(vec![not_an_object(args)]);
        }
        let mut problems = Vec::new();
        for error in self.validator.iter_errors(args) {
            describe(&error, &mut problems);
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(problems)
        }
    }
}

/// The problem with arguments that are not a JSON object: `ToolArgs` keeps argument text that
/// did not parse as a JSON string, so a string is usually broken JSON.
fn not_an_object(args: &Value) -> String {
    if let Value::String(text) = args
        && let Err(error) = serde_json::from_str::<Value>(text)
    {
        return format!(
            "the arguments are not valid JSON ({error}): `{}`",
            preview(text, 200)
        );
    }
    format!("the arguments must be a JSON object, got {}", brief(args))
}

/// Appends the problems one validation error stands for (an unexpected-properties error names
/// several).
fn describe(error: &ValidationError<'_>, problems: &mut Vec<String>) {
    let field = field_name(error);
    let got = brief(error.instance());
    let problem = match error.kind() {
        ValidationErrorKind::Required { property } => {
            let name = property
                .as_str()
                .map_or_else(|| property.to_string(), str::to_owned);
            format!(
                "missing required argument '{}'",
                join_field(field.as_deref(), &name)
            )
        }
        ValidationErrorKind::AdditionalProperties { unexpected }
        | ValidationErrorKind::UnevaluatedProperties { unexpected } => {
            for name in unexpected {
                problems.push(format!(
                    "unexpected argument '{}'",
                    join_field(field.as_deref(), name)
                ));
            }
            return;
        }
        ValidationErrorKind::Type { kind } => {
            format!(
                "{} must be {}, got {got}",
                subject(field.as_deref()),
                expected_types(kind)
            )
        }
        ValidationErrorKind::Enum { options } => {
            let options = match options.as_ref() {
                Value::Array(options) => options.iter().map(Value::to_string).collect(),
                other => vec![other.to_string()],
            };
            format!(
                "{} must be one of {}, got {got}",
                subject(field.as_deref()),
                options.join(", ")
            )
        }
        ValidationErrorKind::Constant { expected_value } => {
            format!(
                "{} must be {expected_value}, got {got}",
                subject(field.as_deref())
            )
        }
        // Everything else (bounds, lengths, patterns, formats, combinators): the validator's own
        // sentence already quotes the value and the limit.
        _ => match field {
            Some(field) => format!("'{field}': {error}"),
            None => error.to_string(),
        },
    };
    problems.push(problem);
}

/// Where in the arguments the error is, as `options.mode` or `items[2].name`; `None` for the
/// arguments object itself.
fn field_name(error: &ValidationError<'_>) -> Option<String> {
    let mut name = String::new();
    for segment in error.instance_path().segments() {
        match segment {
            LocationSegment::Property(property) => {
                if !name.is_empty() {
                    name.push('.');
                }
                name.push_str(&property);
            }
            LocationSegment::Index(index) => name.push_str(&format!("[{index}]")),
        }
    }
    (!name.is_empty()).then_some(name)
}

fn join_field(parent: Option<&str>, name: &str) -> String {
    match parent {
        Some(parent) => format!("{parent}.{name}"),
        None => name.to_owned(),
    }
}

fn subject(field: Option<&str>) -> String {
    match field {
        Some(field) => format!("'{field}'"),
        None => "the arguments".to_owned(),
    }
}

/// `a string`, `a string or null`.
fn expected_types(kind: &TypeKind) -> String {
    let names: Vec<&str> = match kind {
        TypeKind::Single(json_type) => vec![with_article(json_type.as_str())],
        TypeKind::Multiple(set) => set.iter().map(|t| with_article(t.as_str())).collect(),
    };
    names.join(" or ")
}

fn with_article(type_name: &'static str) -> &'static str {
    match type_name {
        "array" => "an array",
        "boolean" => "a boolean",
        "integer" => "an integer",
        "number" => "a number",
        "object" => "an object",
        "string" => "a string",
        other => other,
    }
}

/// A value as the model wrote it when that is short, otherwise what kind of value it is.
fn brief(value: &Value) -> String {
    const MAX: usize = 60;
    let text = value.to_string();
    if text.len() <= MAX {
        return text;
    }
    match value {
        Value::String(s) => format!("a string of {} characters", s.chars().count()),
        Value::Array(items) => format!("an array of {} items", items.len()),
        Value::Object(_) => "an object".to_owned(),
        _ => preview(&text, MAX),
    }
}

/// The first `max` bytes of `text` (cut at a character boundary), with `…` when cut.
fn preview(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}
