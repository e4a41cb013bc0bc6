//! [`AskUser`]: the built-in `ask_user` tool, with which a model asks the person it works for a
//! question and goes on with their answer, in the same run.

use agentwire_core::ToolSpec;
use futures::FutureExt;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::schema::parameters_for;
use crate::tool::{Tool, ToolContext, ToolFailure, ToolFuture};

/// `ask_user {question}`: the model asks the user something it needs to know to go on. It is
/// not run like other tools: a runtime that offers it pauses the run (`awaiting input`, a
/// durable wait like an approval's) and answers the call with the user's next message,
/// `{"answer": "<their text>"}`. Called any other way it fails, saying so.
#[derive(Debug)]
pub struct AskUser {
    spec: ToolSpec,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct AskUserArgs {
    /// The question, as the user will read it: one short, specific question.
    question: String,
}

impl AskUser {
    /// The tool's name.
    pub const NAME: &'static str = "ask_user";

    /// The tool.
    pub fn new() -> Self {
        Self {
            spec: ToolSpec::new(
                Self::NAME,
                "Ask the user a question when you cannot go on without their answer (a choice \
                 only they can make, a detail they left out). Their answer comes back as this \
                 call's result; do not ask what you can find out yourself.",
                parameters_for::<AskUserArgs>(),
            ),
        }
    }

    /// The question of a call's arguments, if they hold one.
    pub fn question(args: &Value) -> Option<&str> {
        args.get("question").and_then(Value::as_str)
    }

    /// The result the call is answered with: the user's answer.
    pub fn answer(text: &str) -> Value {
        json!({ "answer": text })
    }
}

impl Default for AskUser {
    fn default() -> Self {
        Self::new()
    }
}

impl Tool for AskUser {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn call(&self, _args: Value, _context: ToolContext) -> ToolFuture<'_> {
        futures::future::ready(Err(ToolFailure::new(
            "ask_user is answered by the user, and this runtime cannot ask them",
        )))
        .boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_question_and_the_answer() {
        let tool = AskUser::new();
        assert_eq!(tool.spec().name, "ask_user");
        let required = &tool.spec().parameters["required"];
        assert_eq!(required, &json!(["question"]));
        assert_eq!(
            AskUser::question(&json!({"question": "Which city?"})),
            Some("Which city?")
        );
        assert_eq!(AskUser::answer("Paris"), json!({"answer": "Paris"}));
    }
}
