//! Input for a run (an approval, a tool's output, a message), through any node. The run's own
//! node gives it to the run at once; another node writes it down in the store, which the run's
//! node hears of ([`Notice::Input`]), gives it to the run and writes back the run's answer,
//! which the first node waits for and answers its client with: the client cannot tell which
//! node executes the run. A run whose node stopped ends (its lease lapsed): the input is then
//! refused as for any ended run.

use std::sync::Arc;
use std::time::Duration;

use agentwire_core::{Message, RunId};
use agentwire_store::{InputAnswer, Notice, Refusal, RunRecord};
use tokio::sync::broadcast;

use crate::caller::Caller;
use crate::clock;
use crate::runs::error::{REFUSALS, refusal_code};
use crate::runs::{Found, LiveRun, Reader, RunView, Runs, RunsError, StoredReader, Until, lock};

/// How long a node waits for the run's node to answer an input.
pub(super) const ANSWER_WITHIN: Duration = Duration::from_secs(10);

/// How often it reads the store meanwhile (a notice can be missed).
pub(super) const READ_EVERY: Duration = Duration::from_millis(500);

impl Runs {
    /// Gives `message` to the run `id`, wherever it runs; the run as it stands then. The run
    /// checks it against its wait and its schema: a refusal changes nothing.
    pub(crate) async fn give(
        self: &Arc<Self>,
        id: &str,
        caller: &Caller,
        message: Message,
    ) -> Result<RunView, RunsError> {
        match self.find(id, caller).await? {
            Found::Live(live) => match self.answer(&live, message.clone()).await {
                Ok(()) => Ok(RunView::live(&live)),
                // Another node took the waiting run over: it is let go here, and found there.
                Err(RunsError::RunMoved) => Box::pin(self.give(id, caller, message)).await,
                Err(error) => Err(error),
            },
            Found::Stored(record) if record.status.is_terminal() => {
                Err(RunsError::RunFinished(id.to_owned()))
            }
            Found::Stored(record) => match self.adopt(&record).await? {
                Some(live) => {
                    self.answer(&live, message).await?;
                    Ok(RunView::live(&live))
                }
                None => self.give_elsewhere(&record, &message).await,
            },
        }
    }

    /// Gives `message` to a run waiting on another node (a dialect's answer to it) and reads
    /// the run on from `record.last_seq`, where it waited. The reader is made first, so it
    /// hears of everything the answer sets off.
    pub(crate) async fn continue_elsewhere(
        self: &Arc<Self>,
        record: RunRecord,
        message: Message,
    ) -> Result<Reader, RunsError> {
        let reader = StoredReader::new(
            self.store.clone(),
            &self.notices,
            record.id.clone(),
            record.last_seq,
            self.heartbeat,
            Until::Settled,
        )
        .continuing();
        self.give_elsewhere(&record, &message).await?;
        Ok(Reader::Stored(reader))
    }

    /// Writes the input down for the run's node and waits for its answer. If that node stops
    /// meanwhile, the input is taken back and the run is taken over here, if it waits with a
    /// checkpoint (else it has ended).
    async fn give_elsewhere(
        self: &Arc<Self>,
        record: &RunRecord,
        message: &Message,
    ) -> Result<RunView, RunsError> {
        let id = record.id.as_str();
        if !self.store.node_alive(&record.node, clock::now()).await? {
            // Its node stopped: the run is ended here and now, and takes no input.
            self.store.end_if_dead(&record.node, clock::now()).await?;
            return Err(RunsError::RunFinished(id.to_owned()));
        }
        // Subscribed before it is sent: the answer's notice cannot come first.
        let mut notices = self.notices.subscribe();
        let input_id = format!("inp_{}", uuid::Uuid::now_v7().simple());
        self.store
            .send_input(&input_id, &record.id, message)
            .await?;
        let answer = tokio::time::timeout(ANSWER_WITHIN, async {
            loop {
                if let Some(answer) = self.store.input_answer(&input_id).await? {
                    return Ok::<_, RunsError>(Given::There(answer));
                }
                let _ = tokio::time::timeout(READ_EVERY, answered(&mut notices, &input_id)).await;
                // A run that ended meanwhile answers nothing more (unless it took the input
                // and ended right after: its answer is there then).
                let now = self.store.run(&record.id).await?;
                let Some(now) = now.filter(|now| !now.status.is_terminal()) else {
                    return match self.store.input_answer(&input_id).await? {
                        Some(answer) => Ok(Given::There(answer)),
                        None => Err(RunsError::RunFinished(id.to_owned())),
                    };
                };
                if !self.store.node_alive(&now.node, clock::now()).await?
                    && let Some(message) = self.store.withdraw_input(&input_id).await?
                {
                    return match self.adopt(&now).await? {
                        Some(live) => Ok(Given::Here(live, message)),
                        None => {
                            self.store.end_if_dead(&now.node, clock::now()).await?;
                            Err(RunsError::RunFinished(id.to_owned()))
                        }
                    };
                }
            }
        })
        .await
        .map_err(|_| RunsError::NoAnswer)??;
        let answer = match answer {
            Given::There(answer) => answer,
            Given::Here(live, message) => {
                self.answer(&live, message).await?;
                return Ok(RunView::live(&live));
            }
        };
        if let Some(Refusal { code, message }) = answer.refused {
            let code = REFUSALS
                .into_iter()
                .find(|known| *known == code)
                .unwrap_or("input_refused");
            return Err(RunsError::RefusedElsewhere { code, message });
        }
        let record = self.store.run(&record.id).await?;
        let record = record.ok_or_else(|| RunsError::no_run(id))?;
        Ok(RunView::stored(&record))
    }

    /// The store says input waits for a run: if this node executes it, the run gets it and
    /// its answer goes back.
    /// A run of this node that waits in the store with no process holding it (this node
    /// restarted) is taken over for it.
    pub(super) fn take_input(self: &Arc<Self>, run_id: RunId, input_id: String) {
        let live = lock(&self.live).get(&run_id).cloned();
        let runs = Arc::clone(self);
        tokio::spawn(async move {
            let live = match live {
                Some(live) => Some(live),
                None => runs.adopt_own(&run_id).await,
            };
            let Some(live) = live else {
                return;
            };
            if let Err(error) = runs.answer_input(&live, &input_id).await {
                tracing::warn!(run = %run_id, input = input_id, "answering an input: {error}");
            }
        });
    }

    /// The run, taken over from the store if this node holds it there.
    async fn adopt_own(self: &Arc<Self>, run_id: &RunId) -> Option<Arc<LiveRun>> {
        let record = match self.store.run(run_id).await {
            Ok(record) => record?,
            Err(error) => {
                tracing::warn!(run = %run_id, "reading a run: {error}");
                return None;
            }
        };
        if record.node != self.node {
            return None;
        }
        self.adopt(&record).await.ok().flatten()
    }

    async fn answer_input(&self, live: &LiveRun, input_id: &str) -> Result<(), RunsError> {
        let Some((_, message)) = self.store.take_input(input_id).await? else {
            return Ok(());
        };
        let answer = match self.answer(live, message).await {
            Ok(()) => InputAnswer::default(),
            Err(RunsError::Input(error)) => InputAnswer {
                refused: Some(Refusal {
                    code: refusal_code(&error).to_owned(),
                    message: error.to_string(),
                }),
            },
            Err(error) => return Err(error),
        };
        Ok(self.store.answer_input(input_id, &answer).await?)
    }
}

/// Where an input given through the store ended up.
enum Given {
    /// The run's node answered it.
    There(InputAnswer),
    /// That node stopped first: the run was taken over here, and takes the input here.
    Here(Arc<LiveRun>, Message),
}

/// Waits for the notice that the input was answered (or any sign that notices were missed).
async fn answered(notices: &mut broadcast::Receiver<Notice>, input_id: &str) {
    loop {
        match notices.recv().await {
            Ok(Notice::Answered { input_id: of }) if of == input_id => return,
            Ok(_) => {}
            Err(broadcast::error::RecvError::Lagged(_) | broadcast::error::RecvError::Closed) => {
                return;
            }
        }
    }
}
