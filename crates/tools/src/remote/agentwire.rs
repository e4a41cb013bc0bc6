//! [`AgentwireAgent`]: an agent of another agentwire server, spoken to in its native API
//! through the client SDK.

use std::time::Duration;

use agentwire_client::{Client, ClientError, RunStream, StartRun};
use agentwire_core::{Event, RunId};
use futures::future::BoxFuture;
use futures::stream;

use super::{RemoteAgent, RemoteError, RemoteEvents, RemoteRequest};
use crate::address;

/// One agent of an agentwire server. Cheap to clone.
///
/// ```no_run
/// # async fn demo() -> Result<(), agentwire_tools::remote::RemoteError> {
/// use std::time::Duration;
/// use agentwire_tools::remote::{AgentwireAgent, RemoteAgent};
///
/// let timeout = Duration::from_secs(10);
/// let reviewer =
///     AgentwireAgent::connect("http://127.0.0.1:8080", "reviewer", None, timeout, true).await?;
/// println!("{}: {}", reviewer.describe(), reviewer.description());
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct AgentwireAgent {
    client: Client,
    url: String,
    agent: String,
    description: String,
}

impl AgentwireAgent {
    /// The agent `agent` of the server at `base_url`, described by the server
    /// (`GET /v1/agents/{agent}`, within `timeout`). `api_key`, when given, is sent as a bearer
    /// key with every request, all of them to `base_url`. Unless `allow_private`, its host must
    /// be a public address, at connect and at every connection after (`crate::address`).
    ///
    /// # Errors
    /// [`RemoteError::Agentwire`] with the client's error (an unknown agent is the server's
    /// `404 unknown_agent`), [`RemoteError::Address`], or [`RemoteError::Timeout`].
    pub async fn connect(
        base_url: &str,
        agent: &str,
        api_key: Option<&str>,
        timeout: Duration,
        allow_private: bool,
    ) -> Result<Self, RemoteError> {
        let failed = |source| RemoteError::Agentwire {
            url: base_url.to_owned(),
            source,
        };
        let http = address::guarded(reqwest::Client::builder(), allow_private)
            .redirect(address::redirect_policy(allow_private))
            .build()
            .map_err(|error| failed(ClientError::Http(error)))?;
        let mut client = Client::new(base_url)
            .map_err(failed)?
            .with_http_client(http);
        if let Some(key) = api_key {
            client = client.with_api_key(key).map_err(failed)?;
        }
        let described = async {
            address::check_url(base_url, allow_private)
                .await
                .map_err(|source| RemoteError::Address { source })?;
            client.agent(agent).await.map_err(failed)
        };
        let card = tokio::time::timeout(timeout, described)
            .await
            .map_err(|_| RemoteError::Timeout {
                url: base_url.to_owned(),
                seconds: timeout.as_secs(),
            })??;
        let description = match card.description.trim() {
            "" => format!("The agent '{agent}' of the agentwire server at {base_url}."),
            description => description.to_owned(),
        };
        Ok(Self {
            client,
            url: base_url.to_owned(),
            agent: agent.to_owned(),
            description,
        })
    }

    /// The agent described by `description` rather than by its server.
    #[must_use]
    pub fn with_description(mut self, description: &str) -> Self {
        description.clone_into(&mut self.description);
        self
    }
}

impl RemoteAgent for AgentwireAgent {
    fn description(&self) -> &str {
        &self.description
    }

    fn describe(&self) -> String {
        format!("agentwire {} agent {}", self.url, self.agent)
    }

    fn run(&self, request: RemoteRequest) -> RemoteEvents {
        let start = StartRun::new(request.input).agent(self.agent.clone());
        let reading = Reading::Start(self.clone(), Box::new(start));
        Box::pin(stream::unfold(reading, Reading::next))
    }

    fn cancel(&self, run_id: RunId) -> BoxFuture<'static, Result<(), RemoteError>> {
        let this = self.clone();
        Box::pin(async move {
            match this.client.cancel(&run_id).await {
                Ok(_) => Ok(()),
                // A run that has ended is stopped all the same.
                Err(ClientError::Api { code, .. }) if code == "run_finished" => Ok(()),
                Err(source) => Err(this.failed(source)),
            }
        })
    }
}

impl AgentwireAgent {
    fn failed(&self, source: ClientError) -> RemoteError {
        RemoteError::Agentwire {
            url: self.url.clone(),
            source,
        }
    }
}

/// Where reading a run is.
enum Reading {
    Start(AgentwireAgent, Box<StartRun>),
    Streaming(AgentwireAgent, Box<RunStream>),
    Done,
}

impl Reading {
    async fn next(self) -> Option<(Result<Event, RemoteError>, Reading)> {
        let (agent, mut run) = match self {
            Reading::Start(agent, start) => match agent.client.start(&start).await {
                Ok(run) => (agent, Box::new(run)),
                Err(source) => return Some((Err(agent.failed(source)), Reading::Done)),
            },
            Reading::Streaming(agent, run) => (agent, run),
            Reading::Done => return None,
        };
        // `next` ends the stream once the run has ended or waits for its client.
        match run.next().await {
            Ok(Some(event)) => Some((Ok(event), Reading::Streaming(agent, run))),
            Ok(None) => None,
            Err(source) => Some((Err(agent.failed(source)), Reading::Done)),
        }
    }
}
