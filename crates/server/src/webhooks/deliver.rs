//! [`Deliveries`]: the worker posting queued webhook deliveries.
//!
//! It claims due deliveries from the store (for the request's timeout and [`RECORD_WITHIN`]: a node that dies mid-send leaves
//! them to the next claim once that lapses, so every status change is delivered at least once,
//! here or on another node), posts each signed (at most [`IN_FLIGHT`] at once), and records the
//! outcomes in batches: 2xx is delivered; anything else is tried again after a wait that
//! doubles from a second up to `[webhooks] max_backoff`, drawn between half and all of it
//! (jitter, so receivers coming back are not hit by every sender at once), until
//! `give_up_after` has passed since the status change. A delivery the address policy refuses
//! (a literal address, or a name resolving to no public address, as it stands now) is given up
//! at once, its reason recorded (`last_error`): trying again would knock at the same door. It
//! wakes when a commit of this node queued deliveries, else every [`POLL`] (retries coming
//! due, other nodes' commits).
//!
//! Nothing is kept per run: what is owed lives in the store.

use std::sync::Arc;
use std::time::Duration;

use agentwire_store::{Delivery, DeliveryOutcome, Store};
use agentwire_tools::address::{self, AddressError};
use reqwest::Url;
use tokio::sync::{Semaphore, mpsc};
use tokio::task::JoinHandle;

use super::{payload, sign};
use crate::clock;
use crate::settings::WebhookSettings;

/// The most deliveries being posted at once.
const IN_FLIGHT: usize = 256;

/// The most deliveries one claim takes.
const CLAIM_BATCH: u32 = 256;

/// How long a claim holds a delivery past the request's timeout: time to record its outcome.
/// A node killed mid-send leaves its claims to lapse this long after the timeout.
const RECORD_WITHIN: Duration = Duration::from_secs(5);

/// How often the queue is looked at when nothing woke the worker.
const POLL: Duration = Duration::from_millis(500);

/// The first wait before a retry; it doubles with each failure.
const FIRST_BACKOFF: Duration = Duration::from_secs(1);

/// The running worker; it stops when this is stopped or dropped.
#[derive(Debug)]
pub(crate) struct Deliveries {
    task: JoinHandle<()>,
}

impl Deliveries {
    /// Starts the worker over `store`.
    pub(crate) fn start(store: Store, settings: &WebhookSettings) -> Self {
        let client = reqwest::Client::builder()
            .timeout(settings.timeout)
            .user_agent(concat!("agentwire-webhooks/", env!("CARGO_PKG_VERSION")))
            // A redirect would be a way around the URL check; a proxy would hide the address.
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy();
        let client = match address::guarded(client, settings.allow_private).build() {
            Ok(client) => client,
            Err(error) => {
                tracing::error!("webhooks are not delivered: no HTTP client: {error}");
                return Self {
                    task: tokio::spawn(async {}),
                };
            }
        };
        let worker = Worker {
            store,
            client,
            settings: settings.clone(),
        };
        Self {
            task: tokio::spawn(worker.run()),
        }
    }

    /// Stops the worker; deliveries being posted are claimed until their claim lapses.
    pub(crate) fn stop(&self) {
        self.task.abort();
    }
}

impl Drop for Deliveries {
    fn drop(&mut self) {
        self.stop();
    }
}

struct Worker {
    store: Store,
    client: reqwest::Client,
    settings: WebhookSettings,
}

impl Worker {
    async fn run(self) {
        let worker = Arc::new(self);
        let (done, outcomes) = mpsc::unbounded_channel();
        let recorder = tokio::spawn(record(worker.store.clone(), outcomes));
        let in_flight = Arc::new(Semaphore::new(IN_FLIGHT));
        let mut sending = tokio::task::JoinSet::new();
        loop {
            // Finished sends are reaped so the set does not grow.
            while sending.try_join_next().is_some() {}
            let free = u32::try_from(in_flight.available_permits())
                .unwrap_or(CLAIM_BATCH)
                .min(CLAIM_BATCH);
            if free == 0 {
                // Wait for one send to finish.
                let _ = sending.join_next().await;
                continue;
            }
            let now = clock::now();
            let claimed = match worker
                .store
                .claim_deliveries(
                    now,
                    clock::after(worker.settings.timeout + RECORD_WITHIN),
                    free,
                )
                .await
            {
                Ok(claimed) => claimed,
                Err(error) => {
                    tracing::warn!("claiming webhook deliveries: {error}");
                    Vec::new()
                }
            };
            let full = u32::try_from(claimed.len()).is_ok_and(|n| n == free);
            for delivery in claimed {
                let Ok(permit) = Arc::clone(&in_flight).acquire_owned().await else {
                    return;
                };
                let (worker, done) = (Arc::clone(&worker), done.clone());
                sending.spawn(async move {
                    let outcome = worker.send(&delivery).await;
                    let _ = done.send((delivery.id, outcome));
                    drop(permit);
                });
            }
            if full {
                continue;
            }
            tokio::select! {
                () = worker.store.deliveries_queued() => {}
                () = tokio::time::sleep(POLL) => {}
            }
            if recorder.is_finished() {
                return;
            }
        }
    }

    /// Posts one delivery and says what became of it.
    async fn send(&self, delivery: &Delivery) -> DeliveryOutcome {
        let error = match self.post(delivery).await {
            Ok(()) => return DeliveryOutcome::Delivered,
            Err(Failure::Refused(error)) => {
                tracing::warn!(delivery = %delivery.id, url = %delivery.webhook.url, "webhook given up: {error}");
                return DeliveryOutcome::GaveUp {
                    error: format!("refused: {error}"),
                };
            }
            Err(Failure::Failed(error)) => error,
        };
        tracing::debug!(delivery = %delivery.id, attempt = delivery.attempts, "webhook: {error}");
        let give_up_at = delivery
            .changed_at
            .0
            .saturating_add(millis(self.settings.give_up_after));
        let at = clock::after(self.backoff(delivery.attempts));
        if at.0 > give_up_at {
            tracing::warn!(delivery = %delivery.id, url = %delivery.webhook.url, "webhook given up: {error}");
            return DeliveryOutcome::GaveUp { error };
        }
        DeliveryOutcome::Retry { at, error }
    }

    async fn post(&self, delivery: &Delivery) -> Result<(), Failure> {
        let webhook = &delivery.webhook;
        let url = Url::parse(&webhook.url).map_err(|error| {
            Failure::Refused(format!("'{}' is not a URL: {error}", webhook.url))
        })?;
        // A literal address is not resolved, so the resolver cannot refuse it: checked here.
        address::check_literal(&url, self.settings.allow_private)
            .map_err(|error| Failure::Refused(error.to_string()))?;
        let body = payload::body(delivery);
        let id = payload::message_id(delivery);
        let timestamp = clock::now().0 / 1000;
        let signature = sign::signature(&webhook.secret, &id, timestamp, &body);
        let mut request = self
            .client
            .post(url)
            .header("content-type", "application/json")
            .header("webhook-id", &id)
            .header("webhook-timestamp", timestamp.to_string())
            .header("webhook-signature", signature);
        if let Some(token) = &webhook.token {
            request = request.header("x-a2a-notification-token", token);
        }
        let response = request.body(body).send().await.map_err(|error| {
            if let Some(refused) = AddressError::in_chain(&error) {
                return Failure::Refused(refused.to_string());
            }
            // reqwest's outer error says only "error sending request"; the cause is below.
            let mut text = error.to_string();
            let mut source = std::error::Error::source(&error);
            while let Some(cause) = source {
                text = format!("{text}: {cause}");
                source = cause.source();
            }
            Failure::Failed(text)
        })?;
        match response.status() {
            status if status.is_success() => Ok(()),
            status => Err(Failure::Failed(format!("the receiver answered {status}"))),
        }
    }

    /// The wait after failure number `attempts`: doubling from [`FIRST_BACKOFF`] up to
    /// `max_backoff`, then drawn between half and all of it.
    fn backoff(&self, attempts: u32) -> Duration {
        let doublings = attempts.saturating_sub(1).min(30);
        let full = FIRST_BACKOFF
            .saturating_mul(1 << doublings)
            .min(self.settings.max_backoff);
        let mut byte = [0_u8; 1];
        // Without randomness the wait is the whole of it: still a backoff.
        let _ = getrandom::fill(&mut byte);
        full / 2 + full / 2 * u32::from(byte[0]) / 255
    }
}

/// Why a post did not deliver.
enum Failure {
    /// The address policy refused where it would go: not tried again.
    Refused(String),
    /// It failed (no connection, an error status): tried again.
    Failed(String),
}

/// Records outcomes as they come, many per transaction. A batch that cannot be recorded is
/// logged and dropped: its claims lapse and those deliveries are sent again (at least once).
async fn record(store: Store, mut outcomes: mpsc::UnboundedReceiver<(String, DeliveryOutcome)>) {
    let mut batch = Vec::new();
    while outcomes.recv_many(&mut batch, 1024).await > 0 {
        if let Err(error) = store.record_deliveries(&batch, clock::now()).await {
            tracing::warn!(
                deliveries = batch.len(),
                "recording webhook deliveries: {error}"
            );
        }
        batch.clear();
    }
}

fn millis(duration: Duration) -> i64 {
    i64::try_from(duration.as_millis()).unwrap_or(i64::MAX)
}
