//! Token usage, as providers report it and as runs sum it.

use std::ops::{Add, AddAssign};

use serde::{Deserialize, Serialize};

/// Tokens used by one model call, one message or one run.
///
/// `input_tokens` are the prompt, `output_tokens` the completion; `total_tokens` is what the
/// provider reported as the total (normally their sum). Read from JSON without a total, or with
/// a total of 0 while tokens were counted (a script, a client that leaves it out), the total is
/// input plus output, so a reported usage always has one. The optional counts are breakdowns
/// some providers give; `None` means the provider did not say.
///
/// ```json
/// {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "UsageJson")]
pub struct Usage {
    /// Prompt tokens.
    #[serde(default, alias = "inputTokens", alias = "prompt_tokens")]
    pub input_tokens: u64,
    /// Completion tokens, reasoning included.
    #[serde(default, alias = "outputTokens", alias = "completion_tokens")]
    pub output_tokens: u64,
    /// The total the provider reported.
    #[serde(default, alias = "totalTokens")]
    pub total_tokens: u64,
    /// Of the output, tokens spent on reasoning.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        alias = "reasoningTokens"
    )]
    pub reasoning_tokens: Option<u64>,
    /// Of the input, tokens read from the provider's prompt cache.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        alias = "cachedInputTokens"
    )]
    pub cached_input_tokens: Option<u64>,
}

impl Usage {
    /// Usage with the total computed as input plus output.
    pub fn new(input_tokens: u64, output_tokens: u64) -> Self {
        Self {
            input_tokens,
            output_tokens,
            total_tokens: input_tokens + output_tokens,
            ..Self::default()
        }
    }
}

/// [`Usage`] as JSON gives it: the total may be missing.
#[derive(Deserialize)]
struct UsageJson {
    #[serde(default, alias = "inputTokens", alias = "prompt_tokens")]
    input_tokens: u64,
    #[serde(default, alias = "outputTokens", alias = "completion_tokens")]
    output_tokens: u64,
    #[serde(default, alias = "totalTokens")]
    total_tokens: Option<u64>,
    #[serde(default, alias = "reasoningTokens")]
    reasoning_tokens: Option<u64>,
    #[serde(default, alias = "cachedInputTokens")]
    cached_input_tokens: Option<u64>,
}

impl From<UsageJson> for Usage {
    fn from(json: UsageJson) -> Self {
        let sum = json.input_tokens.saturating_add(json.output_tokens);
        Self {
            input_tokens: json.input_tokens,
            output_tokens: json.output_tokens,
            total_tokens: json.total_tokens.filter(|total| *total > 0).unwrap_or(sum),
            reasoning_tokens: json.reasoning_tokens,
            cached_input_tokens: json.cached_input_tokens,
        }
    }
}

fn add_optional(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (None, None) => None,
        (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
    }
}

impl Add for Usage {
    type Output = Usage;

    fn add(self, other: Usage) -> Usage {
        Usage {
            input_tokens: self.input_tokens + other.input_tokens,
            output_tokens: self.output_tokens + other.output_tokens,
            total_tokens: self.total_tokens + other.total_tokens,
            reasoning_tokens: add_optional(self.reasoning_tokens, other.reasoning_tokens),
            cached_input_tokens: add_optional(self.cached_input_tokens, other.cached_input_tokens),
        }
    }
}

impl AddAssign for Usage {
    fn add_assign(&mut self, other: Usage) {
        *self = *self + other;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_keep_unknown_breakdowns_unknown() {
        let a = Usage::new(10, 5);
        let b = Usage {
            reasoning_tokens: Some(2),
            ..Usage::new(1, 3)
        };
        let sum = a + b;
        assert_eq!(sum.total_tokens, 19);
        assert_eq!(sum.reasoning_tokens, Some(2));
        assert_eq!(sum.cached_input_tokens, None);
    }

    #[test]
    fn accepts_openai_and_camel_names() {
        let usage: Usage =
            serde_json::from_str(r#"{"prompt_tokens":3,"completion_tokens":4,"totalTokens":7}"#)
                .expect("parses");
        assert_eq!(usage, Usage::new(3, 4));
    }

    #[test]
    fn a_missing_or_zero_total_is_input_plus_output() {
        for json in [
            r#"{"input_tokens":10,"output_tokens":5}"#,
            r#"{"input_tokens":10,"output_tokens":5,"total_tokens":0}"#,
        ] {
            let usage: Usage = serde_json::from_str(json).expect("parses");
            assert_eq!(usage, Usage::new(10, 5), "{json}");
        }
        let usage: Usage =
            serde_json::from_str(r#"{"input_tokens":10,"output_tokens":5,"total_tokens":18}"#)
                .expect("parses");
        assert_eq!(usage.total_tokens, 18, "a reported total is kept");
    }
}
