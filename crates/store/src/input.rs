//! Input for a run another node executes. A node receives an approval, a tool's output or a
//! message for a run it does not execute; it writes the input down ([`Store::send_input`]),
//! which notifies the nodes ([`Notice::Input`]); the run's node reads it
//! ([`Store::take_input`]), gives it to the run and writes the run's answer
//! ([`Store::answer_input`], notifying [`Notice::Answered`]), which the first node reads
//! ([`Store::input_answer`]) and passes on to its client. The rows are the truth and the notices
//! hints: either side may read the row again when a notice is late.

use serde::{Deserialize, Serialize};

use agentwire_core::{Message, RunId};

use crate::error::StoreError;
use crate::notice::{CHANNEL, Notice};
use crate::store::{Store, now, with_pool};

/// What the run made of an input.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct InputAnswer {
    /// Why it refused the input (a stable code and a message for people); `None`: it took it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refused: Option<Refusal>,
}

/// Why a run refused an input.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Refusal {
    /// A stable snake_case code, e.g. `unknown_approval`.
    pub code: String,
    /// What was wrong.
    pub message: String,
}

impl Store {
    /// Writes down the input `id` for `run_id` and notifies the nodes. Fails with
    /// [`StoreError::RunNotFound`] when the run does not exist.
    pub async fn send_input(
        &self,
        id: &str,
        run_id: &RunId,
        message: &Message,
    ) -> Result<(), StoreError> {
        let text = serde_json::to_string(message)?;
        let notice = serde_json::to_string(&Notice::Input {
            run_id: run_id.clone(),
            input_id: id.to_owned(),
        })?;
        let _turn = self.write_turn().await;
        let inserted = with_pool!(self, |pool, begin| {
            let mut connection = pool.acquire().await?;
            let mut tx = sqlx::Connection::begin_with(&mut *connection, begin).await?;
            let inserted = sqlx::query(
                "INSERT INTO inputs (id, run_id, message, created_at) \
                 SELECT $1, id, $3, $4 FROM runs WHERE id = $2",
            )
            .bind(id)
            .bind(run_id.as_str())
            .bind(&text)
            .bind(now().0)
            .execute(&mut *tx)
            .await?
            .rows_affected();
            if self.is_postgres() {
                sqlx::query("SELECT pg_notify($1, $2)")
                    .bind(CHANNEL)
                    .bind(&notice)
                    .execute(&mut *tx)
                    .await?;
            }
            tx.commit().await?;
            inserted
        });
        if inserted == 0 {
            return Err(StoreError::RunNotFound(run_id.to_string()));
        }
        if !self.is_postgres() {
            let _ = self.local.send(Notice::Input {
                run_id: run_id.clone(),
                input_id: id.to_owned(),
            });
        }
        Ok(())
    }

    /// The input `id`, if it is there and not answered yet.
    pub async fn take_input(&self, id: &str) -> Result<Option<(RunId, Message)>, StoreError> {
        let row: Option<(String, String)> = with_pool!(self, |pool, _begin| {
            sqlx::query_as("SELECT run_id, message FROM inputs WHERE id = $1 AND answer IS NULL")
                .bind(id)
                .fetch_optional(pool)
                .await?
        });
        let Some((run_id, message)) = row else {
            return Ok(None);
        };
        Ok(Some((RunId::from(run_id), serde_json::from_str(&message)?)))
    }

    /// Takes back the input `id` if it is not answered yet (the run's node stopped): it is
    /// deleted, and its message returned.
    pub async fn withdraw_input(&self, id: &str) -> Result<Option<Message>, StoreError> {
        let message: Option<String> = with_pool!(self, |pool, _begin| {
            sqlx::query_scalar(
                "DELETE FROM inputs WHERE id = $1 AND answer IS NULL RETURNING message",
            )
            .bind(id)
            .fetch_optional(pool)
            .await?
        });
        Ok(message
            .map(|text| serde_json::from_str(&text))
            .transpose()?)
    }

    /// Writes the run's answer to the input `id` and notifies the nodes.
    pub async fn answer_input(&self, id: &str, answer: &InputAnswer) -> Result<(), StoreError> {
        let text = serde_json::to_string(answer)?;
        let turn = self.write_turn().await;
        with_pool!(self, |pool, _begin| {
            sqlx::query("UPDATE inputs SET answer = $2 WHERE id = $1")
                .bind(id)
                .bind(&text)
                .execute(pool)
                .await?;
        });
        drop(turn);
        self.notify(&Notice::Answered {
            input_id: id.to_owned(),
        })
        .await
    }

    /// The run's answer to the input `id`, once there is one; the answered input is then
    /// forgotten.
    pub async fn input_answer(&self, id: &str) -> Result<Option<InputAnswer>, StoreError> {
        let answer: Option<Option<String>> = with_pool!(self, |pool, _begin| {
            sqlx::query_scalar("SELECT answer FROM inputs WHERE id = $1")
                .bind(id)
                .fetch_optional(pool)
                .await?
        });
        let Some(Some(answer)) = answer else {
            return Ok(None);
        };
        let _turn = self.write_turn().await;
        with_pool!(self, |pool, _begin| {
            sqlx::query("DELETE FROM inputs WHERE id = $1")
                .bind(id)
                .execute(pool)
                .await?;
        });
        Ok(Some(serde_json::from_str(&answer)?))
    }
}
