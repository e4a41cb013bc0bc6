//! Sessions and their messages: the conversation history a run starts from.

use sqlx::Row;

use agentwire_core::{Message, MessageId, RunId, SessionId, Timestamp};

use crate::error::StoreError;
use crate::group::{Append, Group, Started};
use crate::owners::owner_column;
use crate::run::RunRecord;
use crate::store::{Store, now, with_pool};

/// A stored session.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionRecord {
    /// The session.
    pub id: SessionId,
    /// The API key (its id, never the secret) that owns the session; `None` without auth.
    pub owner: Option<String>,
    /// When it was created.
    pub created_at: Timestamp,
    /// When a message was last added.
    pub updated_at: Timestamp,
    /// Where the conversation stands in its agent's communication schema, as the output of its
    /// last run that ended left it; `None` for a new session (and a fork), which starts from
    /// the schema's initial state.
    pub schema_state: Option<String>,
}

impl Store {
    /// Creates a session of `owner`. Fails with [`StoreError::AlreadyExists`] when the owner
    /// has a session with this id (another owner's with the same id is another session).
    pub async fn create_session(
        &self,
        owner: Option<&str>,
        id: &SessionId,
    ) -> Result<SessionRecord, StoreError> {
        let created_at = now();
        let _turn = self.write_turn().await;
        let inserted = with_pool!(self, |pool, _begin| {
            sqlx::query(
                "INSERT INTO sessions (id, owner, created_at, updated_at) VALUES ($1, $2, $3, $3)
                 ON CONFLICT (owner, id) DO NOTHING",
            )
            .bind(id.as_str())
            .bind(owner_column(owner))
            .bind(created_at.0)
            .execute(pool)
            .await?
            .rows_affected()
        });
        if inserted == 0 {
            return Err(StoreError::AlreadyExists(format!("session {id}")));
        }
        Ok(SessionRecord {
            id: id.clone(),
            owner: owner.map(str::to_owned),
            created_at,
            updated_at: created_at,
            schema_state: None,
        })
    }

    /// The session of `owner` with this id, or `None` when the owner has none.
    pub async fn session(
        &self,
        owner: Option<&str>,
        id: &SessionId,
    ) -> Result<Option<SessionRecord>, StoreError> {
        let row = with_pool!(self, |pool, _begin| {
            sqlx::query(
                "SELECT created_at, updated_at, schema_state FROM sessions \
                 WHERE owner = $1 AND id = $2",
            )
            .bind(owner_column(owner))
            .bind(id.as_str())
            .fetch_optional(pool)
            .await?
            .map(|row| -> Result<_, sqlx::Error> {
                Ok((
                    row.try_get::<i64, _>("created_at")?,
                    row.try_get::<i64, _>("updated_at")?,
                    row.try_get::<Option<String>, _>("schema_state")?,
                ))
            })
            .transpose()?
        });
        Ok(
            row.map(|(created_at, updated_at, schema_state)| SessionRecord {
                id: id.clone(),
                owner: owner.map(str::to_owned),
                created_at: Timestamp(created_at),
                updated_at: Timestamp(updated_at),
                schema_state,
            }),
        )
    }

    /// Deletes the session of `owner` with its messages, its shared state, its inbox, its runs
    /// and their events, and its runs' webhooks, all at once: one transaction, whose foreign
    /// keys cascade to the rest (a reader sees all of it or none). Returns false when there was
    /// no such session.
    pub async fn delete_session(
        &self,
        owner: Option<&str>,
        id: &SessionId,
    ) -> Result<bool, StoreError> {
        let _turn = self.write_turn().await;
        let deleted = with_pool!(self, |pool, begin| {
            let mut tx = pool.begin_with(begin).await?;
            for sql in crate::webhook::DELETE_SESSION_WEBHOOKS {
                sqlx::query(sql)
                    .bind(owner_column(owner))
                    .bind(id.as_str())
                    .execute(&mut *tx)
                    .await?;
            }
            let deleted = sqlx::query("DELETE FROM sessions WHERE owner = $1 AND id = $2")
                .bind(owner_column(owner))
                .bind(id.as_str())
                .execute(&mut *tx)
                .await?
                .rows_affected();
            tx.commit().await?;
            deleted
        });
        Ok(deleted > 0)
    }

    /// The messages of `owner`'s session, oldest first. Fails with
    /// [`StoreError::SessionNotFound`] when there is no such session (an empty session has an
    /// empty list).
    pub async fn session_messages(
        &self,
        owner: Option<&str>,
        id: &SessionId,
    ) -> Result<Vec<Message>, StoreError> {
        let owner = owner_column(owner);
        let texts: Vec<String> = with_pool!(self, |pool, begin| {
            let mut tx = pool.begin_with(begin).await?;
            let exists = sqlx::query("SELECT 1 FROM sessions WHERE owner = $1 AND id = $2")
                .bind(owner)
                .bind(id.as_str())
                .fetch_optional(&mut *tx)
                .await?
                .is_some();
            if !exists {
                return Err(StoreError::SessionNotFound(id.to_string()));
            }
            let rows = sqlx::query(
                "SELECT message FROM messages WHERE owner = $1 AND session_id = $2 \
                 ORDER BY position",
            )
            .bind(owner)
            .bind(id.as_str())
            .fetch_all(&mut *tx)
            .await?;
            tx.commit().await?;
            rows.iter()
                .map(|row| row.try_get::<String, _>("message"))
                .collect::<Result<_, _>>()?
        });
        texts
            .iter()
            .map(|text| serde_json::from_str(text).map_err(StoreError::from))
            .collect()
    }

    /// The messages of `owner`'s session `id` before run `run_id`'s input: the conversation as
    /// it will be once the run is rolled back. `None` when the run has no input in the session
    /// (it was rolled back already, or is not the session's).
    pub async fn messages_before_run(
        &self,
        owner: Option<&str>,
        id: &SessionId,
        run_id: &RunId,
    ) -> Result<Option<Vec<Message>>, StoreError> {
        let owner = owner_column(owner);
        let texts: Option<Vec<String>> = with_pool!(self, |pool, begin| {
            let mut tx = pool.begin_with(begin).await?;
            let first: Option<i64> = sqlx::query_scalar(
                "SELECT MIN(position) FROM messages WHERE owner = $1 AND session_id = $2 \
                 AND input_of = $3",
            )
            .bind(owner)
            .bind(id.as_str())
            .bind(run_id.as_str())
            .fetch_one(&mut *tx)
            .await?;
            let texts = match first {
                Some(first) => Some(
                    sqlx::query_scalar(
                        "SELECT message FROM messages WHERE owner = $1 AND session_id = $2 \
                         AND position < $3 ORDER BY position",
                    )
                    .bind(owner)
                    .bind(id.as_str())
                    .bind(first)
                    .fetch_all(&mut *tx)
                    .await?,
                ),
                None => None,
            };
            tx.commit().await?;
            texts
        });
        texts
            .map(|texts| {
                texts
                    .iter()
                    .map(|text| serde_json::from_str(text).map_err(StoreError::from))
                    .collect()
            })
            .transpose()
    }

    /// Creates `owner`'s session `new`, holding a copy of the owner's session `from`'s messages
    /// before its message `before` (all of them when `before` is `None`), in one transaction:
    /// a conversation taken up again from an earlier point (an edited question, an answer
    /// asked again) while the original stays as it was. The copies are no run's input. The
    /// fork has no schema state (its conversation starts from the schema's initial state): the
    /// state at an earlier point is not kept, and a fork is cut before a question. It has the
    /// session's shared state as it is now, with its version.
    ///
    /// Returns `None`, creating nothing, when `from` holds no message `before`. Fails with
    /// [`StoreError::SessionNotFound`] when there is no session `from`, and with
    /// [`StoreError::AlreadyExists`] when the owner has a session `new`.
    pub async fn fork_session(
        &self,
        owner: Option<&str>,
        from: &SessionId,
        before: Option<&MessageId>,
        new: &SessionId,
    ) -> Result<Option<SessionRecord>, StoreError> {
        let created_at = now();
        let owner_key = owner_column(owner);
        let _turn = self.write_turn().await;
        with_pool!(self, |pool, begin| {
            let mut tx = pool.begin_with(begin).await?;
            let exists = sqlx::query("SELECT 1 FROM sessions WHERE owner = $1 AND id = $2")
                .bind(owner_key)
                .bind(from.as_str())
                .fetch_optional(&mut *tx)
                .await?
                .is_some();
            if !exists {
                return Err(StoreError::SessionNotFound(from.to_string()));
            }
            // Positions only grow within a session, so "before" is "at a lower position".
            let end = match before {
                None => i64::MAX,
                Some(id) => {
                    let found: Option<i64> = sqlx::query(
                        "SELECT MIN(position) FROM messages WHERE owner = $1 AND session_id = $2 \
                         AND message_id = $3",
                    )
                    .bind(owner_key)
                    .bind(from.as_str())
                    .bind(id.as_str())
                    .fetch_one(&mut *tx)
                    .await?
                    .try_get(0)?;
                    match found {
                        Some(position) => position,
                        None => return Ok(None),
                    }
                }
            };
            // The fork starts from the session's shared state as it is now, and its version.
            let inserted = sqlx::query(
                "INSERT INTO sessions (id, owner, created_at, updated_at, shared_state, \
                 shared_state_version) \
                 SELECT $1, $2, $3, $3, shared_state, shared_state_version FROM sessions \
                 WHERE owner = $2 AND id = $4 ON CONFLICT (owner, id) DO NOTHING",
            )
            .bind(new.as_str())
            .bind(owner_key)
            .bind(created_at.0)
            .bind(from.as_str())
            .execute(&mut *tx)
            .await?
            .rows_affected();
            if inserted == 0 {
                return Err(StoreError::AlreadyExists(format!("session {new}")));
            }
            sqlx::query(
                "INSERT INTO messages (owner, session_id, position, message_id, input_of, message)
                 SELECT owner, $1, position, message_id, NULL, message FROM messages
                 WHERE owner = $2 AND session_id = $3 AND position < $4",
            )
            .bind(new.as_str())
            .bind(owner_key)
            .bind(from.as_str())
            .bind(end)
            .execute(&mut *tx)
            .await?;
            tx.commit().await?;
        });
        Ok(Some(SessionRecord {
            id: new.clone(),
            owner: owner.map(str::to_owned),
            created_at,
            updated_at: created_at,
            schema_state: None,
        }))
    }

    /// The messages a run started with (its input), as its start added them to its session;
    /// none for a run without a session, or whose session is gone.
    pub async fn run_input(&self, run: &RunRecord) -> Result<Vec<Message>, StoreError> {
        let Some(session_id) = &run.session_id else {
            return Ok(Vec::new());
        };
        let texts: Vec<String> = with_pool!(self, |pool, _begin| {
            sqlx::query(
                "SELECT message FROM messages WHERE owner = $1 AND session_id = $2 \
                 AND input_of = $3 ORDER BY position",
            )
            .bind(owner_column(run.owner.as_deref()))
            .bind(session_id.as_str())
            .bind(run.id.as_str())
            .fetch_all(pool)
            .await?
            .iter()
            .map(|row| row.try_get::<String, _>("message"))
            .collect::<Result<_, _>>()?
        });
        texts
            .iter()
            .map(|text| serde_json::from_str(text).map_err(StoreError::from))
            .collect()
    }

    /// Appends messages to the history of `owner`'s session, in order, in one transaction: when
    /// this returns `Ok` they are committed (an accepted input is durable before it is
    /// acknowledged). Fails with [`StoreError::SessionNotFound`] when the session does not
    /// exist. (A [`Group`]'s append also sets the session's schema state.)
    pub async fn append_messages(
        &self,
        owner: Option<&str>,
        id: &SessionId,
        messages: &[Message],
    ) -> Result<(), StoreError> {
        let group = Group {
            appends: vec![Append {
                owner,
                session_id: id,
                messages,
                schema_state: None,
            }],
            ..Group::default()
        };
        match self.write_group(&group).await?.appended.as_slice() {
            [true] => Ok(()),
            _ => Err(StoreError::SessionNotFound(id.to_string())),
        }
    }
}

/// The messages as stored: id and JSON text.
pub(crate) fn message_texts(
    messages: &[Message],
) -> Result<Vec<(Option<&str>, String)>, StoreError> {
    messages
        .iter()
        .map(|message| {
            Ok((
                message.id.as_ref().map(|id| id.as_str()),
                serde_json::to_string(message)?,
            ))
        })
        .collect()
}

impl Store {
    /// Begins a turn in ONE transaction: the run's session (created, owned by the run's owner,
    /// if new), the run's row and its input at the end of the session's history. When this
    /// returns `Ok` all of it is committed (an accepted input is durable before it is
    /// acknowledged); on an error nothing is (a [`Group`] of one start: a server starting many
    /// runs writes them in groups). The session is the run owner's: another owner's session of
    /// the same id is another session. Fails with [`StoreError::AlreadyExists`] when the run id
    /// is taken.
    pub async fn start_run(&self, run: &RunRecord, input: &[Message]) -> Result<(), StoreError> {
        if run.session_id.is_none() {
            return self.create_run(run).await;
        }
        let group = Group {
            starts: vec![(run, input)],
            ..Group::default()
        };
        match self.write_group(&group).await?.started.as_slice() {
            [Started::Done] => Ok(()),
            _ => Err(StoreError::AlreadyExists(format!("run {}", run.id))),
        }
    }
}
