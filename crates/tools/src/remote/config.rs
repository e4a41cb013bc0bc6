//! Where a remote agent is and how to reach it: the `[[agents.remote]]` entries of
//! `agentwire.toml`.

use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;

use super::{A2aAgent, AgentwireAgent, RemoteAgent, RemoteError};

/// How long reading the card (or the agent's details) may take at connect, unless told
/// otherwise.
const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// The longest tool name providers accept.
const MAX_NAME: usize = 64;

/// The path of an A2A agent card below an agent's base URL.
const CARD_PATH: &str = "/.well-known/agent-card.json";

/// One remote agent an agent's model may call, like a sub-agent, by the tool `name`.
///
/// Deserializes from the TOML of `[[agents.remote]]` (and any serde format of the same shape):
///
/// ```toml
/// [[agents.remote]]
/// name = "researcher"                                  # the tool's name
/// url = "https://agents.example.com/.well-known/agent-card.json"   # A2A: the agent card
/// api_key_env = "RESEARCHER_KEY"                       # optional: sent as a bearer key
/// description = "Finds and summarizes sources."        # optional: else the card's
///
/// [[agents.remote]]
/// name = "reviewer"
/// url = "http://10.0.0.7:8080"                         # another agentwire server
/// agent = "reviewer"                                   # its agent (so the protocol is agentwire)
/// protocol = "agentwire"                               # optional here: `agent` implies it
/// allow_private = true                                 # 10.0.0.7 is a private address
/// ```
///
/// `protocol` defaults to `agentwire` when `agent` is given and to `a2a` otherwise. An A2A
/// `url` is the agent card's; a URL that does not end in `.json` is taken as the agent's base
/// URL, its card at `/.well-known/agent-card.json` below it.
///
/// Where a remote agent may be is the outbound address policy's (`crate::address`, the same
/// as webhooks'): its URL and the endpoint its card names must be public addresses, checked
/// at connect and at every connection, unless `allow_private = true`. With a key, the card
/// must name an endpoint on its own origin (scheme, host and port): the key goes nowhere else.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(try_from = "RawConfig")]
pub struct RemoteAgentConfig {
    /// The name the model calls it by (a tool's name: 1–64 of `[A-Za-z0-9_-]`).
    pub name: String,
    /// For A2A, the agent card's URL; for agentwire, the server's base URL.
    pub url: String,
    /// Which protocol the agent is spoken to in.
    pub protocol: RemoteProtocol,
    /// For agentwire: the agent of the server that runs the calls.
    pub agent: Option<String>,
    /// The environment variable holding the bearer key to send, if any. The key itself never
    /// appears in the file.
    pub api_key_env: Option<String>,
    /// What the model is told the agent does; `None`: the card's description (A2A, with its
    /// skills) or the agent's (agentwire).
    pub description: Option<String>,
    /// How long reading the card (or the agent's details) may take at connect.
    pub connect_timeout: Duration,
    /// Whether the agent may be at an address that is not public (loopback, private,
    /// link-local, …; see `crate::address`); false by default.
    pub allow_private: bool,
}

/// The protocol a remote agent speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RemoteProtocol {
    /// A2A 1.0 over JSON-RPC ([`A2aAgent`]).
    A2a,
    /// Another agentwire server's native API ([`AgentwireAgent`]).
    Agentwire,
}

impl RemoteProtocol {
    /// The protocol as the file spells it.
    pub fn name(self) -> &'static str {
        match self {
            Self::A2a => "a2a",
            Self::Agentwire => "agentwire",
        }
    }
}

impl RemoteAgentConfig {
    /// An A2A agent whose card is at `url` (or below the base URL `url`).
    pub fn a2a(name: impl Into<String>, url: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            url: url.into(),
            protocol: RemoteProtocol::A2a,
            agent: None,
            api_key_env: None,
            description: None,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            allow_private: false,
        }
    }

    /// The agent allowed at an address that is not public (on this host, or a private
    /// network): `allow_private = true`.
    #[must_use]
    pub fn allowing_private(mut self) -> Self {
        self.allow_private = true;
        self
    }

    /// The agent `agent` of the agentwire server at `url`.
    pub fn agentwire(
        name: impl Into<String>,
        url: impl Into<String>,
        agent: impl Into<String>,
    ) -> Self {
        Self {
            agent: Some(agent.into()),
            protocol: RemoteProtocol::Agentwire,
            ..Self::a2a(name, url)
        }
    }

    /// The URL of the A2A agent card: `url` itself when it ends in `.json`, else the card's
    /// well-known path below it.
    pub fn card_url(&self) -> String {
        if self.url.ends_with(".json") {
            self.url.clone()
        } else {
            format!("{}{CARD_PATH}", self.url.trim_end_matches('/'))
        }
    }

    /// Checks what can be checked without the network: the name, the URL's scheme, and that
    /// `agent` goes with agentwire (and only with it). Deserializing runs it, so a bad entry
    /// is refused when the file is read.
    pub fn validate(&self) -> Result<(), RemoteError> {
        let invalid = |reason: String| RemoteError::InvalidConfig {
            name: self.name.clone(),
            reason,
        };
        let name_ok = !self.name.is_empty()
            && self.name.len() <= MAX_NAME
            && self
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if !name_ok {
            return Err(invalid(format!(
                "the name must be 1 to {MAX_NAME} characters of A-Z, a-z, 0-9, `_` and `-` (the \
                 model calls the agent by it, as a tool)"
            )));
        }
        if !(self.url.starts_with("http://") || self.url.starts_with("https://")) {
            return Err(invalid(format!(
                "`url` must start with http:// or https://, not `{}`",
                self.url
            )));
        }
        match (self.protocol, &self.agent) {
            (RemoteProtocol::Agentwire, None) => Err(invalid(
                "protocol \"agentwire\" needs `agent`, the name of the server's agent to run"
                    .to_owned(),
            )),
            (RemoteProtocol::Agentwire, Some(agent)) if agent.is_empty() => {
                Err(invalid("`agent` is empty".to_owned()))
            }
            (RemoteProtocol::A2a, Some(_)) => Err(invalid(
                "`agent` names an agent of an agentwire server; an A2A agent is its card's \
                 (`url`)"
                    .to_owned(),
            )),
            _ => Ok(()),
        }
    }

    /// Connects to the agent: reads the key from `env` (when `api_key_env` is set), then
    /// reads the A2A card, or the agentwire agent's details, within `connect_timeout`.
    ///
    /// # Errors
    /// A [`RemoteError`] naming what is wrong: the configuration, a missing key, an agent that
    /// cannot be reached, refuses, or has no card this client can use.
    pub async fn connect(
        &self,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Arc<dyn RemoteAgent>, RemoteError> {
        self.validate()?;
        let api_key = match &self.api_key_env {
            Some(var) => Some(env(var).filter(|key| !key.is_empty()).ok_or_else(|| {
                RemoteError::MissingApiKey {
                    name: self.name.clone(),
                    var: var.clone(),
                }
            })?),
            None => None,
        };
        let timeout = self.connect_timeout;
        Ok(match (self.protocol, &self.agent) {
            (RemoteProtocol::Agentwire, Some(agent)) => {
                let key = api_key.as_deref();
                let mut remote =
                    AgentwireAgent::connect(&self.url, agent, key, timeout, self.allow_private)
                        .await?;
                if let Some(description) = &self.description {
                    remote = remote.with_description(description);
                }
                Arc::new(remote)
            }
            _ => {
                let key = api_key.as_deref();
                let mut remote =
                    A2aAgent::connect(&self.card_url(), key, timeout, self.allow_private).await?;
                if let Some(description) = &self.description {
                    remote = remote.with_description(description);
                }
                Arc::new(remote)
            }
        })
    }
}

/// The entry as written: `protocol` may be left out, and is then read from `agent`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    name: String,
    url: String,
    protocol: Option<RemoteProtocol>,
    agent: Option<String>,
    api_key_env: Option<String>,
    description: Option<String>,
    connect_timeout_secs: Option<u64>,
    #[serde(default)]
    allow_private: bool,
}

impl TryFrom<RawConfig> for RemoteAgentConfig {
    type Error = String;

    fn try_from(raw: RawConfig) -> Result<Self, String> {
        let protocol = raw.protocol.unwrap_or(match raw.agent {
            Some(_) => RemoteProtocol::Agentwire,
            None => RemoteProtocol::A2a,
        });
        let config = Self {
            name: raw.name,
            url: raw.url,
            protocol,
            agent: raw.agent,
            api_key_env: raw.api_key_env,
            description: raw.description,
            connect_timeout: raw
                .connect_timeout_secs
                .map_or(DEFAULT_CONNECT_TIMEOUT, Duration::from_secs),
            allow_private: raw.allow_private,
        };
        config.validate().map_err(|error| error.to_string())?;
        Ok(config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(toml_text: &str, expect: Result<(RemoteProtocol, &str), &str>) {
        #[derive(Deserialize)]
        struct Entry {
            remote: RemoteAgentConfig,
        }
        let read = toml::from_str::<Entry>(toml_text).map(|entry| entry.remote);
        match (read, expect) {
            (Ok(config), Ok((protocol, card))) => {
                assert_eq!(config.protocol, protocol);
                if protocol == RemoteProtocol::A2a {
                    assert_eq!(config.card_url(), card);
                }
            }
            (Err(error), Err(says)) => assert!(error.to_string().contains(says), "{error}"),
            (read, expect) => panic!("{toml_text}: read {read:?}, expected {expect:?}"),
        }
    }

    #[test]
    fn entries_read_with_their_protocol() {
        let card = "http://h/.well-known/agent-card.json";
        check(
            r#"remote = {name = "r", url = "http://h/.well-known/agent-card.json"}"#,
            Ok((RemoteProtocol::A2a, card)),
        );
        check(
            r#"remote = {name = "r", url = "http://h/", protocol = "a2a"}"#,
            Ok((RemoteProtocol::A2a, card)),
        );
        check(
            r#"remote = {name = "r", url = "http://h", agent = "helper"}"#,
            Ok((RemoteProtocol::Agentwire, "")),
        );
        check(
            r#"remote = {name = "r", url = "http://h", protocol = "agentwire"}"#,
            Err("needs `agent`"),
        );
        check(
            r#"remote = {name = "r", url = "http://h", protocol = "a2a", agent = "x"}"#,
            Err("an A2A agent is its card's"),
        );
        check(
            r#"remote = {name = "two words", url = "http://h"}"#,
            Err("the name must be"),
        );
        check(
            r#"remote = {name = "r", url = "ftp://h"}"#,
            Err("must start with http"),
        );
        check(
            r#"remote = {name = "r", url = "http://h", protocol = "acp"}"#,
            Err("unknown variant"),
        );
        check(
            r#"remote = {name = "r", url = "http://h", key = "x"}"#,
            Err("unknown field"),
        );
    }
}
