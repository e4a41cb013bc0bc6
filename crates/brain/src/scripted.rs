//! [`ScriptedBrain`]: replays a script of brain events (the `scripted` provider's file), for tests, demos and load
//! generation at a set token rate.

use std::sync::Arc;
use std::time::Duration;

use futures::stream;
use serde::Deserialize;
use tokio::time::Instant;

use crate::{Brain, BrainError, BrainEvent, BrainRequest, BrainStream};

/// A brain that answers the i-th model call of a run with the i-th turn of its script; after the
/// last turn, the last one repeats. An `error` event fails the call at that point.
///
/// ```json
/// {"turns": [[{"type": "text_delta", "text": "Hi"}, {"type": "finish", "reason": "stop"}]]}
/// ```
#[derive(Clone, Debug)]
pub struct ScriptedBrain {
    turns: Arc<[Arc<[BrainEvent]>]>,
    tokens_per_second: f64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Script {
    turns: Vec<Vec<BrainEvent>>,
}

impl ScriptedBrain {
    /// A brain with these turns, replayed as fast as they are read.
    ///
    /// # Errors
    /// [`BrainError::Config`] when there is no turn.
    pub fn new(turns: Vec<Vec<BrainEvent>>) -> Result<Self, BrainError> {
        if turns.is_empty() {
            return Err(BrainError::Config {
                message: "a script needs at least one turn".into(),
            });
        }
        Ok(Self {
            turns: turns.into_iter().map(Arc::from).collect(),
            tokens_per_second: 0.0,
        })
    }

    /// Reads a script: `{"turns": [[event, …], …]}`.
    ///
    /// # Errors
    /// [`BrainError::Config`] naming what does not parse, or when there is no turn.
    pub fn from_json(json: &str) -> Result<Self, BrainError> {
        let script: Script = serde_json::from_str(json).map_err(|error| BrainError::Config {
            message: format!("the script does not parse: {error}"),
        })?;
        Self::new(script.turns)
    }

    /// Paces the deltas (text, reasoning, refusal and argument deltas each count as a token) at
    /// this rate; 0 means as fast as possible.
    pub fn with_tokens_per_second(mut self, tokens_per_second: f64) -> Self {
        self.tokens_per_second = pace(tokens_per_second);
        self
    }

    fn turn(&self, step: u32) -> Arc<[BrainEvent]> {
        let last = self.turns.len() - 1;
        let index = usize::try_from(step).map_or(last, |step| step.min(last));
        Arc::clone(&self.turns[index])
    }
}

/// Where a replay is.
struct Replay {
    turn: Arc<[BrainEvent]>,
    next: usize,
    /// The pace: when the first token went, and the time between tokens.
    clock: Option<(Instant, Duration)>,
    tokens: u32,
}

impl Brain for ScriptedBrain {
    fn stream(&self, request: BrainRequest) -> BrainStream {
        replay(self.turn(request.step), self.tokens_per_second)
    }

    fn describe(&self) -> String {
        "scripted".into()
    }

    fn provider_name(&self) -> &'static str {
        "scripted"
    }
}

/// A token rate as [`replay`] takes it: a negative, NaN or infinite rate is 0, as fast as
/// possible.
pub(crate) fn pace(tokens_per_second: f64) -> f64 {
    if tokens_per_second.is_finite() {
        tokens_per_second.max(0.0)
    } else {
        0.0
    }
}

/// Plays one turn: its events in order, the deltas paced at `tokens_per_second` (0 = at once).
/// An `error` event ends the stream as an `Err`.
pub(crate) fn replay(turn: Arc<[BrainEvent]>, tokens_per_second: f64) -> BrainStream {
    let clock = (tokens_per_second > 0.0).then(|| {
        (
            Instant::now(),
            Duration::from_secs_f64(1.0 / tokens_per_second),
        )
    });
    let replay = Replay {
        turn,
        next: 0,
        clock,
        tokens: 0,
    };
    Box::pin(stream::unfold(replay, |mut replay| async move {
        let event = replay.turn.get(replay.next)?.clone();
        replay.next += 1;
        let is_token = matches!(
            event,
            BrainEvent::TextDelta { .. }
                | BrainEvent::ReasoningDelta { .. }
                | BrainEvent::RefusalDelta { .. }
                | BrainEvent::ToolCallDelta { .. }
        );
        if let (true, Some((start, gap))) = (is_token, replay.clock) {
            // Sleep until this token's slot on a fixed schedule, so the rate does not drift
            // with the time spent between polls.
            tokio::time::sleep_until(start + gap * replay.tokens).await;
            replay.tokens += 1;
        }
        match event {
            BrainEvent::Error { message } => {
                // Nothing follows an error.
                replay.next = replay.turn.len();
                Some((Err(BrainError::Model { message }), replay))
            }
            event => Some((Ok(event), replay)),
        }
    }))
}

#[cfg(test)]
mod tests {
    use futures::StreamExt;

    use super::*;

    fn script() -> ScriptedBrain {
        ScriptedBrain::from_json(
            r#"{"turns": [
                [{"type": "text_delta", "text": "a"}, {"type": "finish", "reason": "tool_calls"}],
                [{"type": "text_delta", "text": "b"}, {"type": "error", "message": "boom"},
                 {"type": "text_delta", "text": "never"}]
            ]}"#,
        )
        .expect("parses")
    }

    async fn run(brain: &ScriptedBrain, step: u32) -> Vec<Result<BrainEvent, String>> {
        let request = BrainRequest {
            step,
            ..BrainRequest::default()
        };
        brain
            .stream(request)
            .map(|item| item.map_err(|error| error.to_string()))
            .collect()
            .await
    }

    #[tokio::test]
    async fn the_i_th_call_gets_the_i_th_turn_and_the_last_repeats() {
        let brain = script();
        assert_eq!(run(&brain, 0).await.len(), 2);
        for step in [1, 2, 7] {
            let events = run(&brain, step).await;
            assert_eq!(
                events,
                vec![
                    Ok(BrainEvent::TextDelta { text: "b".into() }),
                    Err("the model failed: boom".into())
                ]
            );
        }
    }

    #[tokio::test(start_paused = true)]
    async fn deltas_are_paced_at_the_token_rate() {
        let turn: Vec<BrainEvent> = (0..10)
            .map(|_| BrainEvent::TextDelta { text: "x".into() })
            .collect();
        let brain = ScriptedBrain::new(vec![turn])
            .expect("a turn")
            .with_tokens_per_second(100.0);
        let start = Instant::now();
        let events = run(&brain, 0).await;
        assert_eq!(events.len(), 10);
        // Ten tokens at 100/s: the first at once, the last 90 ms later.
        assert_eq!(start.elapsed(), Duration::from_millis(90));
    }

    #[test]
    fn a_rate_that_is_no_pace_means_as_fast_as_possible() {
        for rate in [-1.0, f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            assert_eq!(pace(rate), 0.0, "{rate}");
        }
        assert_eq!(pace(60.0), 60.0);
    }

    #[test]
    fn bad_scripts_are_refused_with_the_reason() {
        let error = ScriptedBrain::from_json(r#"{"turns": []}"#).expect_err("no turn");
        assert!(error.to_string().contains("at least one turn"));
        let error = ScriptedBrain::from_json(r#"{"turns": [[{"type": "dance"}]]}"#)
            .expect_err("unknown event");
        assert!(
            error.to_string().contains("unknown variant `dance`"),
            "{error}"
        );
    }
}
