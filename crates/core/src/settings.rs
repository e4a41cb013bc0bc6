//! [`GenerationSettings`]: how one run asks its model to generate (model, sampling, length,
//! stop sequences, seed, penalties, number of choices), and [`InvalidField`], the error that
//! names the field a client got wrong.
//!
//! Every dialect's request carries these as loose JSON keys (AgentScope's `AgentRequest`, the
//! native run body, the AI SDK body's extras, AG-UI's `forwardedProps`), so they are read from
//! a JSON object in one place, [`GenerationSettings::from_object`], which accepts the snake_case
//! names (OpenAI's and AgentScope's) and the camelCase ones JavaScript clients write (`topP`,
//! `maxOutputTokens` as the AI SDK calls it, `stopSequences`, …). Ranges are the widest the
//! providers document (OpenAI's); a provider that takes less refuses the rest when the run
//! starts, naming the field, rather than dropping it.

use std::fmt;

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};
use thiserror::Error;

/// The most stop sequences a request may name (OpenAI's limit).
pub const MAX_STOP_SEQUENCES: usize = 4;

/// The most choices a request may ask for (AgentScope's `AgentRequest` bound).
pub const MAX_CHOICES: u32 = 5;

/// One run's generation settings; each one set overrides the agent's configured default for
/// that run, and one not set leaves it.
///
/// ```
/// use agentwire_core::GenerationSettings;
/// use serde_json::json;
///
/// let body = json!({"temperature": 0.2, "maxOutputTokens": 200, "stop": "END", "input": []});
/// let settings = GenerationSettings::from_object(body.as_object().unwrap())?;
/// assert_eq!(settings.temperature, Some(0.2));
/// assert_eq!(settings.max_tokens, Some(200));
/// assert_eq!(settings.stop, ["END"]);
///
/// let error = GenerationSettings::from_object(json!({"top_p": 1.5}).as_object().unwrap());
/// assert_eq!(error.unwrap_err().to_string(), "`top_p` must be between 0 and 1, got 1.5");
/// # Ok::<(), agentwire_core::InvalidField>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct GenerationSettings {
    /// The model to call instead of the agent's (an agent may forbid it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Sampling temperature, 0 to 2.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// Nucleus sampling mass, 0 to 1.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f64>,
    /// The most tokens one model call may produce, at least 1.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// Sequences that end the generation, at most [`MAX_STOP_SEQUENCES`]; empty is none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub stop: Vec<String>,
    /// A seed for best-effort deterministic sampling.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seed: Option<i64>,
    /// Penalty on tokens by how often they appeared, -2 to 2.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub frequency_penalty: Option<f64>,
    /// Penalty on tokens that appeared at all, -2 to 2.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub presence_penalty: Option<f64>,
    /// How many choices the model generates, 1 to [`MAX_CHOICES`]. The first one is the run's
    /// answer; a provider that can make more shows the others beside it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub n: Option<u32>,
}

/// A request field with a value that cannot be used; the message says why.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[error("`{field}` {message}")]
pub struct InvalidField {
    /// The field as the client spelled it, with its path (`tools[0].function.name`).
    pub field: String,
    /// What is wrong with it, e.g. `must be between 0 and 2, got 3`.
    pub message: String,
}

impl InvalidField {
    /// An error about `field`.
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            message: message.into(),
        }
    }
}

/// Each setting's spellings: the canonical (snake_case) name first.
const SPELLINGS: [(Setting, &[&str]); 9] = [
    (Setting::Model, &["model"]),
    (Setting::Temperature, &["temperature"]),
    (Setting::TopP, &["top_p", "topP"]),
    (
        Setting::MaxTokens,
        &["max_tokens", "maxTokens", "maxOutputTokens"],
    ),
    (Setting::Stop, &["stop", "stop_sequences", "stopSequences"]),
    (Setting::Seed, &["seed"]),
    (
        Setting::FrequencyPenalty,
        &["frequency_penalty", "frequencyPenalty"],
    ),
    (
        Setting::PresencePenalty,
        &["presence_penalty", "presencePenalty"],
    ),
    (Setting::N, &["n"]),
];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Setting {
    Model,
    Temperature,
    TopP,
    MaxTokens,
    Stop,
    Seed,
    FrequencyPenalty,
    PresencePenalty,
    N,
}

impl GenerationSettings {
    /// Reads the settings among a request object's keys, ignoring every other key. A `null`
    /// leaves a setting unset (pydantic clients send them); a setting spelled two ways at once
    /// is refused.
    ///
    /// # Errors
    /// [`InvalidField`] naming the key as the client spelled it, for a value of the wrong type
    /// or out of range.
    pub fn from_object(object: &Map<String, Value>) -> Result<Self, InvalidField> {
        let mut settings = Self::default();
        for (setting, names) in SPELLINGS {
            let mut found: Option<(&str, &Value)> = None;
            for name in names {
                let Some(value) = object.get(*name).filter(|value| !value.is_null()) else {
                    continue;
                };
                if let Some((first, _)) = found {
                    return Err(InvalidField::new(
                        *name,
                        format!("sets the same setting as `{first}`; send one of them"),
                    ));
                }
                found = Some((name, value));
            }
            if let Some((name, value)) = found {
                settings.read(setting, name, value)?;
            }
        }
        settings.check()?;
        Ok(settings)
    }

    fn read(&mut self, setting: Setting, name: &str, value: &Value) -> Result<(), InvalidField> {
        let wrong = |expected: &str| {
            InvalidField::new(name, format!("must be {expected}, got {}", short(value)))
        };
        match setting {
            Setting::Model => {
                let model = value.as_str().ok_or_else(|| wrong("a string"))?;
                self.model = Some(model.to_owned());
            }
            Setting::Temperature => {
                self.temperature = Some(number(value).ok_or_else(|| wrong("a number"))?)
            }
            Setting::TopP => self.top_p = Some(number(value).ok_or_else(|| wrong("a number"))?),
            Setting::FrequencyPenalty => {
                self.frequency_penalty = Some(number(value).ok_or_else(|| wrong("a number"))?);
            }
            Setting::PresencePenalty => {
                self.presence_penalty = Some(number(value).ok_or_else(|| wrong("a number"))?);
            }
            Setting::MaxTokens => {
                let count = value
                    .as_u64()
                    .ok_or_else(|| wrong("a whole number of at least 1"))?;
                let count =
                    u32::try_from(count).map_err(|_| wrong(&format!("at most {}", u32::MAX)))?;
                self.max_tokens = Some(count);
            }
            Setting::N => {
                let count = value
                    .as_u64()
                    .ok_or_else(|| wrong(&format!("a whole number from 1 to {MAX_CHOICES}")))?;
                self.n = Some(u32::try_from(count).unwrap_or(u32::MAX));
            }
            Setting::Seed => self.seed = Some(value.as_i64().ok_or_else(|| wrong("an integer"))?),
            Setting::Stop => {
                self.stop = match value {
                    Value::String(stop) => vec![stop.clone()],
                    Value::Array(items) => items
                        .iter()
                        .map(|item| item.as_str().map(str::to_owned))
                        .collect::<Option<Vec<_>>>()
                        .ok_or_else(|| wrong("a string or a list of strings"))?,
                    _ => return Err(wrong("a string or a list of strings")),
                };
            }
        }
        // The range checks name the canonical field; name the client's spelling instead.
        self.check_one(setting)
            .map_err(|error| InvalidField::new(name, error.message))
    }

    /// Checks every setting against its documented range.
    ///
    /// # Errors
    /// [`InvalidField`] for the first setting out of range, by its canonical name.
    pub fn check(&self) -> Result<(), InvalidField> {
        SPELLINGS
            .iter()
            .try_for_each(|(setting, _)| self.check_one(*setting))
    }

    fn check_one(&self, setting: Setting) -> Result<(), InvalidField> {
        let between = |name: &str, value: Option<f64>, low: f64, high: f64| match value {
            Some(value) if !(low..=high).contains(&value) => Err(InvalidField::new(
                name,
                format!("must be between {low} and {high}, got {value}"),
            )),
            _ => Ok(()),
        };
        match setting {
            Setting::Model => match &self.model {
                Some(model) if model.trim().is_empty() => {
                    Err(InvalidField::new("model", "must name a model"))
                }
                _ => Ok(()),
            },
            Setting::Temperature => between("temperature", self.temperature, 0.0, 2.0),
            Setting::TopP => between("top_p", self.top_p, 0.0, 1.0),
            Setting::FrequencyPenalty => {
                between("frequency_penalty", self.frequency_penalty, -2.0, 2.0)
            }
            Setting::PresencePenalty => {
                between("presence_penalty", self.presence_penalty, -2.0, 2.0)
            }
            Setting::MaxTokens => match self.max_tokens {
                Some(0) => Err(InvalidField::new("max_tokens", "must be at least 1, got 0")),
                _ => Ok(()),
            },
            Setting::N => match self.n {
                Some(n) if !(1..=MAX_CHOICES).contains(&n) => Err(InvalidField::new(
                    "n",
                    format!("must be from 1 to {MAX_CHOICES}, got {n}"),
                )),
                _ => Ok(()),
            },
            Setting::Seed => Ok(()),
            Setting::Stop => {
                if self.stop.len() > MAX_STOP_SEQUENCES {
                    return Err(InvalidField::new(
                        "stop",
                        format!(
                            "may hold at most {MAX_STOP_SEQUENCES} sequences, got {}",
                            self.stop.len()
                        ),
                    ));
                }
                match self.stop.iter().any(String::is_empty) {
                    true => Err(InvalidField::new("stop", "may not hold an empty sequence")),
                    false => Ok(()),
                }
            }
        }
    }

    /// Whether nothing is set (`n = 1`, one choice, is what every model does anyway, so it
    /// counts as not set).
    pub fn is_empty(&self) -> bool {
        self.set_fields().is_empty()
    }

    /// The canonical names of the settings this run sets, in declaration order (`n = 1` left
    /// out, see [`is_empty`](Self::is_empty)).
    pub fn set_fields(&self) -> Vec<&'static str> {
        let set = [
            ("model", self.model.is_some()),
            ("temperature", self.temperature.is_some()),
            ("top_p", self.top_p.is_some()),
            ("max_tokens", self.max_tokens.is_some()),
            ("stop", !self.stop.is_empty()),
            ("seed", self.seed.is_some()),
            ("frequency_penalty", self.frequency_penalty.is_some()),
            ("presence_penalty", self.presence_penalty.is_some()),
            ("n", self.n.is_some_and(|n| n != 1)),
        ];
        set.into_iter()
            .filter_map(|(name, set)| set.then_some(name))
            .collect()
    }
}

/// Read from a JSON object with [`GenerationSettings::from_object`], so a field named in the
/// error is the one the client wrote; other keys are ignored (the settings are flattened into
/// request bodies).
impl<'de> Deserialize<'de> for GenerationSettings {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let object = Map::<String, Value>::deserialize(deserializer)?;
        Self::from_object(&object).map_err(D::Error::custom)
    }
}

/// A JSON number as `f64`; a number that is not finite cannot come from JSON text.
fn number(value: &Value) -> Option<f64> {
    value.as_f64()
}

/// A value for an error message: JSON text, cut short.
fn short(value: &Value) -> impl fmt::Display {
    let text = value.to_string();
    match text.char_indices().nth(40) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;

    fn read(value: Value) -> Result<GenerationSettings, String> {
        GenerationSettings::from_object(value.as_object().unwrap()).map_err(|e| e.to_string())
    }

    #[test]
    fn every_setting_is_read_in_either_spelling() {
        let snake = read(json!({
            "model": "gpt-4o", "temperature": 0.5, "top_p": 0.9, "max_tokens": 100,
            "stop": ["a", "b"], "seed": -7, "frequency_penalty": -1.5, "presence_penalty": 2,
            "n": 3, "input": [], "tools": []
        }))
        .unwrap();
        let camel = read(json!({
            "model": "gpt-4o", "temperature": 0.5, "topP": 0.9, "maxOutputTokens": 100,
            "stopSequences": ["a", "b"], "seed": -7, "frequencyPenalty": -1.5,
            "presencePenalty": 2, "n": 3
        }))
        .unwrap();
        let expected = GenerationSettings {
            model: Some("gpt-4o".into()),
            temperature: Some(0.5),
            top_p: Some(0.9),
            max_tokens: Some(100),
            stop: vec!["a".into(), "b".into()],
            seed: Some(-7),
            frequency_penalty: Some(-1.5),
            presence_penalty: Some(2.0),
            n: Some(3),
        };
        assert_eq!(snake, expected);
        assert_eq!(camel, expected);
        // Written back in the canonical spelling, it reads the same.
        let written = serde_json::to_value(&expected).unwrap();
        assert_eq!(read(written).unwrap(), expected);
    }

    #[test]
    fn nulls_and_unknown_keys_leave_settings_unset() {
        let settings = read(json!({"model": null, "temperature": null, "n": 1, "x": 9})).unwrap();
        assert!(settings.is_empty(), "{settings:?}");
        assert_eq!(settings.n, Some(1));
    }

    #[test]
    fn bounds_are_inclusive() {
        let edge = read(
            json!({"temperature": 2, "top_p": 0, "frequency_penalty": -2,
            "presence_penalty": 2, "n": 5, "max_tokens": 1, "stop": ["1", "2", "3", "4"]}),
        );
        assert!(edge.is_ok(), "{edge:?}");
        assert!(read(json!({"temperature": 0, "top_p": 1, "n": 1})).is_ok());
    }

    #[test]
    fn every_error_names_the_field_as_the_client_spelled_it() {
        let cases = [
            (
                json!({"temperature": 2.5}),
                "`temperature` must be between 0 and 2, got 2.5",
            ),
            (
                json!({"temperature": -0.1}),
                "`temperature` must be between 0 and 2, got -0.1",
            ),
            (
                json!({"temperature": "hot"}),
                "`temperature` must be a number, got \"hot\"",
            ),
            (
                json!({"topP": 1.01}),
                "`topP` must be between 0 and 1, got 1.01",
            ),
            (
                json!({"top_p": -1}),
                "`top_p` must be between 0 and 1, got -1",
            ),
            (
                json!({"frequency_penalty": 2.1}),
                "`frequency_penalty` must be between -2 and 2, got 2.1",
            ),
            (
                json!({"presencePenalty": -3}),
                "`presencePenalty` must be between -2 and 2, got -3",
            ),
            (json!({"n": 0}), "`n` must be from 1 to 5, got 0"),
            (json!({"n": 6}), "`n` must be from 1 to 5, got 6"),
            (
                json!({"n": 2.5}),
                "`n` must be a whole number from 1 to 5, got 2.5",
            ),
            (
                json!({"max_tokens": 0}),
                "`max_tokens` must be at least 1, got 0",
            ),
            (
                json!({"maxOutputTokens": -5}),
                "`maxOutputTokens` must be a whole number of at least 1, got -5",
            ),
            (
                json!({"max_tokens": 5_000_000_000_u64}),
                "`max_tokens` must be at most 4294967295, got 5000000000",
            ),
            (
                json!({"stop": ["a", "b", "c", "d", "e"]}),
                "`stop` may hold at most 4 sequences, got 5",
            ),
            (
                json!({"stop": [""]}),
                "`stop` may not hold an empty sequence",
            ),
            (
                json!({"stopSequences": [1]}),
                "`stopSequences` must be a string or a list of strings, got [1]",
            ),
            (json!({"seed": 1.5}), "`seed` must be an integer, got 1.5"),
            (json!({"model": 4}), "`model` must be a string, got 4"),
            (json!({"model": " "}), "`model` must name a model"),
            (
                json!({"top_p": 0.5, "topP": 0.5}),
                "`topP` sets the same setting as `top_p`; send one of them",
            ),
        ];
        for (body, expected) in cases {
            assert_eq!(read(body.clone()).unwrap_err(), expected, "{body}");
        }
    }

    #[test]
    fn check_catches_what_was_built_in_code() {
        let settings = GenerationSettings {
            presence_penalty: Some(9.0),
            ..GenerationSettings::default()
        };
        assert_eq!(
            settings.check().unwrap_err().to_string(),
            "`presence_penalty` must be between -2 and 2, got 9"
        );
        assert_eq!(settings.set_fields(), ["presence_penalty"]);
    }

    #[test]
    fn deserializing_flattened_keeps_the_field_in_the_error() {
        #[derive(Deserialize)]
        struct Body {
            #[allow(dead_code)]
            input: Vec<Value>,
            #[serde(flatten)]
            settings: GenerationSettings,
        }
        let body: Body = serde_json::from_value(json!({"input": [], "seed": 4})).unwrap();
        assert_eq!(body.settings.seed, Some(4));
        let error = serde_json::from_value::<Body>(json!({"input": [], "temperature": 3}))
            .err()
            .unwrap();
        assert!(
            error
                .to_string()
                .contains("`temperature` must be between 0 and 2"),
            "{error}"
        );
    }
}
