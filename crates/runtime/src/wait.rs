//! [`Wait`]: what a paused run waits for (approvals of tool calls, outputs of client tools,
//! the user's answers to `ask_user`), the answers as they arrive, and the parts that tell the
//! model how each call ended.
//!
//! Approvals are asked first: while any is unanswered the run is `awaiting approval`; then,
//! while a client tool's output is missing, `awaiting function_output`; then, while a question
//! the model asked with `ask_user` has no answer, `awaiting input` (the user's next message
//! answers it: its text becomes the call's result). The run resumes when everything is
//! answered, in a new assistant message that begins with one answer per call.

use agentwire_core::part::{ApprovalResponse, ToolError, ToolResult};
use agentwire_core::{Awaiting, Message, Part, ToolCall, ToolCallId, ToolErrorKind};
use agentwire_tools::AskUser;

use agentwire_core::ids::ApprovalId;
use serde::{Deserialize, Serialize};

/// The calls of one paused turn, in the order the model made them, with their answers so far.
/// Serialized as part of a [`Checkpoint`](crate::Checkpoint).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub(crate) struct Wait {
    items: Vec<Pending>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
struct Pending {
    call: ToolCall,
    /// `Some` for a call that needs approval; `None` for a client tool's call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    approval_id: Option<ApprovalId>,
    /// A question to the user (`ask_user`), answered by their next message.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    input: bool,
    /// A call of a sub-agent, answered when the child's run ends.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    child: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    answer: Option<Answer>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Answer {
    Approval(ApprovalResponse),
    Output(Part),
}

/// An answer that fits nothing the run waits for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Mismatch {
    /// No unanswered approval request has this id.
    Approval(ApprovalId),
    /// No unanswered client call has this id.
    ToolCall(ToolCallId),
}

/// How the waited-for calls end, once every answer is in.
#[derive(Debug, Default)]
pub(crate) struct Resolution {
    /// The parts that open the next message: each approval answer and, for a denial, the error
    /// the model reads; each client output. In call order.
    pub(crate) parts: Vec<Part>,
    /// The approved calls, to run now.
    pub(crate) approved: Vec<ToolCall>,
}

impl Wait {
    /// Waits for an approval of `call`, asked with `approval_id`.
    pub(crate) fn approval(&mut self, call: ToolCall, approval_id: ApprovalId) {
        self.items.push(Pending {
            call,
            approval_id: Some(approval_id),
            input: false,
            child: false,
            answer: None,
        });
    }

    /// Waits for the client to run `call`.
    pub(crate) fn client_call(&mut self, call: ToolCall) {
        self.items.push(Pending {
            call,
            approval_id: None,
            input: false,
            child: false,
            answer: None,
        });
    }

    /// Waits for the user's answer to the question `call` (an `ask_user` call) asks.
    pub(crate) fn question(&mut self, call: ToolCall) {
        self.items.push(Pending {
            call,
            approval_id: None,
            input: true,
            child: false,
            answer: None,
        });
    }

    /// Waits for the run of the sub-agent `call` started, which waits for the client (or of
    /// the agent it handed the conversation to).
    pub(crate) fn child(&mut self, call: ToolCall) {
        self.items.push(Pending {
            call,
            approval_id: None,
            input: false,
            child: true,
            answer: None,
        });
    }

    /// Records how a sub-agent's call ended (`part`: its result or error). False when no such
    /// call is waited on.
    pub(crate) fn child_ended(&mut self, part: Part) -> bool {
        let Some(item) = self.items.iter_mut().find(|item| {
            item.child && item.answer.is_none() && Some(&item.call.tool_call_id) == part_call(&part)
        }) else {
            return false;
        };
        item.answer = Some(Answer::Output(part));
        true
    }

    /// The sub-agents' calls still waited on.
    pub(crate) fn waiting_children(&self) -> impl Iterator<Item = &ToolCall> {
        self.items
            .iter()
            .filter(|item| item.child && item.answer.is_none())
            .map(|item| &item.call)
    }

    /// Whether a sub-agent's call is still waited on.
    pub(crate) fn waits_on_children(&self) -> bool {
        self.items
            .iter()
            .any(|item| item.child && item.answer.is_none())
    }

    /// Whether an answer the client sends is for this run's own requests: an approval
    /// response or a client tool's output that an unanswered item here waits for.
    pub(crate) fn expects(&self, part: &Part) -> bool {
        self.items.iter().any(|item| {
            item.answer.is_none()
                && match part {
                    Part::ApprovalResponse(response) => {
                        item.approval_id.as_ref() == Some(&response.approval_id)
                    }
                    Part::ToolResult(_) | Part::ToolError(_) => {
                        item.awaiting() == Some(Awaiting::FunctionOutput)
                            && Some(&item.call.tool_call_id) == part_call(part)
                    }
                    _ => false,
                }
        })
    }

    /// The number of questions asked.
    pub(crate) fn n_questions(&self) -> usize {
        self.items.iter().filter(|item| item.input).count()
    }

    /// Records the user's message as the answer to the first unanswered question: its text,
    /// as the `ask_user` call's result. False when no question waits.
    pub(crate) fn answer_question(&mut self, message: &Message) -> bool {
        let Some(item) = self
            .items
            .iter_mut()
            .find(|item| item.input && item.answer.is_none())
        else {
            return false;
        };
        item.answer = Some(Answer::Output(Part::ToolResult(ToolResult {
            tool_call_id: item.call.tool_call_id.clone(),
            tool_name: Some(item.call.tool_name.clone()),
            result: AskUser::answer(&message.content()),
            is_error: None,
        })));
        true
    }

    /// How many of the calls have their answer.
    pub(crate) fn answered(&self) -> usize {
        self.items
            .iter()
            .filter(|item| item.answer.is_some())
            .count()
    }

    /// Whether there is nothing to wait for.
    pub(crate) fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// The number of approvals asked.
    pub(crate) fn n_approvals(&self) -> usize {
        self.items
            .iter()
            .filter(|item| item.approval_id.is_some())
            .count()
    }

    /// The client calls waited for.
    pub(crate) fn client_calls(&self) -> impl Iterator<Item = &ToolCall> {
        self.items
            .iter()
            .filter(|item| item.awaiting() == Some(Awaiting::FunctionOutput))
            .map(|item| &item.call)
    }

    /// What the run waits for of the client itself now; `None` once all of that is answered
    /// (sub-agents' calls may still be waited on: [`Wait::waits_on_children`]).
    pub(crate) fn awaiting(&self) -> Option<Awaiting> {
        let unanswered = |kind: Awaiting| {
            self.items
                .iter()
                .any(|item| item.answer.is_none() && item.awaiting() == Some(kind))
        };
        [
            Awaiting::Approval,
            Awaiting::FunctionOutput,
            Awaiting::Input,
        ]
        .into_iter()
        .find(|kind| unanswered(*kind))
    }

    /// Records the answers a client message carries (approval responses, tool results and
    /// errors; other parts are not answers). On a mismatch nothing is recorded.
    pub(crate) fn answer(&mut self, parts: &[Part]) -> Result<(), Mismatch> {
        let mut answered = self.clone();
        for part in parts {
            match part {
                Part::ApprovalResponse(response) => {
                    let item = answered
                        .items
                        .iter_mut()
                        .find(|item| {
                            item.answer.is_none()
                                && item.approval_id.as_ref() == Some(&response.approval_id)
                        })
                        .ok_or_else(|| Mismatch::Approval(response.approval_id.clone()))?;
                    item.answer = Some(Answer::Approval(response.clone()));
                }
                Part::ToolResult(ToolResult { tool_call_id, .. })
                | Part::ToolError(ToolError { tool_call_id, .. }) => {
                    let item = answered
                        .items
                        .iter_mut()
                        .find(|item| {
                            item.answer.is_none()
                                && item.awaiting() == Some(Awaiting::FunctionOutput)
                                && &item.call.tool_call_id == tool_call_id
                        })
                        .ok_or_else(|| Mismatch::ToolCall(tool_call_id.clone()))?;
                    item.answer = Some(Answer::Output(named(part.clone(), &item.call)));
                }
                _ => {}
            }
        }
        *self = answered;
        Ok(())
    }

    /// How the calls end now that every answer is in (unanswered ones are treated as canceled,
    /// which only happens when the run is stopped while waiting).
    pub(crate) fn resolve(self, stopped: &str) -> Resolution {
        let mut resolution = Resolution::default();
        for item in self.items {
            match item.answer {
                Some(Answer::Approval(response)) => {
                    let approved = response.approved;
                    let reason = response.reason.clone();
                    resolution.parts.push(Part::ApprovalResponse(response));
                    if approved {
                        resolution.approved.push(item.call);
                    } else {
                        resolution.parts.push(denied(&item.call, reason.as_deref()));
                    }
                }
                Some(Answer::Output(part)) => resolution.parts.push(part),
                None => resolution.parts.push(not_run(&item.call, stopped)),
            }
        }
        resolution
    }
}

impl Pending {
    /// What the item waits for of the client while unanswered; `None` for a sub-agent's call,
    /// which its child's run answers.
    fn awaiting(&self) -> Option<Awaiting> {
        match (&self.approval_id, self.input, self.child) {
            (Some(_), _, _) => Some(Awaiting::Approval),
            (None, true, _) => Some(Awaiting::Input),
            (None, false, false) => Some(Awaiting::FunctionOutput),
            (None, false, true) => None,
        }
    }
}

/// The call a tool result or error answers.
fn part_call(part: &Part) -> Option<&ToolCallId> {
    match part {
        Part::ToolResult(result) => Some(&result.tool_call_id),
        Part::ToolError(error) => Some(&error.tool_call_id),
        _ => None,
    }
}

/// The error that tells the model a person denied the call, with their reason.
fn denied(call: &ToolCall, reason: Option<&str>) -> Part {
    let reason = match reason.map(str::trim) {
        Some(reason) if !reason.is_empty() => format!(" Their reason: {reason}"),
        _ => " They gave no reason.".to_owned(),
    };
    tool_error(
        call,
        format!(
            "The user denied this call to tool '{}', so it did not run.{reason}",
            call.tool_name
        ),
    )
}

/// The error for a call that did not run, or did not finish, because the run stopped (`why`:
/// "was canceled", …).
pub(crate) fn not_run(call: &ToolCall, why: &str) -> Part {
    tool_error(
        call,
        format!(
            "The call to tool '{}' was not completed: the run {why}.",
            call.tool_name
        ),
    )
}

fn tool_error(call: &ToolCall, message: String) -> Part {
    Part::ToolError(ToolError {
        tool_call_id: call.tool_call_id.clone(),
        tool_name: Some(call.tool_name.clone()),
        error_type: ToolErrorKind::Execution,
        message,
    })
}

/// A client's output with the tool's name filled in, as the run's own results carry it.
fn named(part: Part, call: &ToolCall) -> Part {
    match part {
        Part::ToolResult(mut result) => {
            result
                .tool_name
                .get_or_insert_with(|| call.tool_name.clone());
            Part::ToolResult(result)
        }
        Part::ToolError(mut error) => {
            error
                .tool_name
                .get_or_insert_with(|| call.tool_name.clone());
            Part::ToolError(error)
        }
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn call(id: &str, name: &str) -> ToolCall {
        ToolCall {
            tool_call_id: id.into(),
            tool_name: name.into(),
            args: json!({}).into(),
        }
    }

    fn approve(id: &str, approved: bool) -> Part {
        Part::ApprovalResponse(ApprovalResponse {
            approval_id: id.into(),
            approved,
            reason: (!approved).then(|| "not today".to_owned()),
        })
    }

    #[test]
    fn approvals_come_first_then_outputs() {
        let mut wait = Wait::default();
        wait.approval(call("c1", "delete_file"), "apr_1".into());
        wait.client_call(call("c2", "get_location"));
        assert_eq!(wait.awaiting(), Some(Awaiting::Approval));
        assert_eq!(
            wait.answer(&[approve("apr_9", true)]),
            Err(Mismatch::Approval("apr_9".into()))
        );
        assert_eq!(wait.answer(&[approve("apr_1", false)]), Ok(()));
        assert_eq!(wait.awaiting(), Some(Awaiting::FunctionOutput));
        assert_eq!(
            wait.answer(&[approve("apr_1", true)]),
            Err(Mismatch::Approval("apr_1".into())),
            "an approval is answered once"
        );
        let output = Part::ToolResult(ToolResult {
            tool_call_id: "c2".into(),
            tool_name: None,
            result: json!({"city": "Paris"}),
            is_error: None,
        });
        assert_eq!(wait.answer(&[output]), Ok(()));
        assert_eq!(wait.awaiting(), None);

        let resolution = wait.resolve("was canceled");
        assert!(resolution.approved.is_empty());
        let types: Vec<_> = resolution.parts.iter().map(Part::type_name).collect();
        assert_eq!(types, ["approval_response", "tool_error", "tool_result"]);
        let Part::ToolError(error) = &resolution.parts[1] else {
            panic!("a denial is a tool error");
        };
        assert!(error.message.contains("denied") && error.message.contains("not today"));
        let Part::ToolResult(result) = &resolution.parts[2] else {
            panic!("the output is kept");
        };
        assert_eq!(result.tool_name.as_deref(), Some("get_location"));
    }
}

#[cfg(test)]
mod question_tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_question_waits_last_and_the_next_message_answers_it() {
        let mut wait = Wait::default();
        let ask = ToolCall {
            tool_call_id: "c1".into(),
            tool_name: "ask_user".into(),
            args: json!({"question": "Which city?"}).into(),
        };
        wait.question(ask);
        assert_eq!(wait.awaiting(), Some(Awaiting::Input));
        assert_eq!(wait.client_calls().count(), 0);
        assert_eq!(wait.n_questions(), 1);
        let checkpointed: Wait =
            serde_json::from_value(serde_json::to_value(&wait).expect("json")).expect("back");
        assert_eq!(checkpointed.awaiting(), Some(Awaiting::Input));
        assert!(wait.answer_question(&Message::user("Paris")));
        assert!(
            !wait.answer_question(&Message::user("Lyon")),
            "answered once"
        );
        assert_eq!(wait.awaiting(), None);
        let resolution = wait.resolve("");
        let [Part::ToolResult(result)] = resolution.parts.as_slice() else {
            panic!("the answer is the call's result");
        };
        assert_eq!(result.result, json!({"answer": "Paris"}));
        assert_eq!(result.tool_name.as_deref(), Some("ask_user"));
    }
}
