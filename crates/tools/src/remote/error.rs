//! Why a remote agent could not be connected or called.

use agentwire_client::ClientError;
use agentwire_dialects::DecodeError;

use crate::address::AddressError;

/// Why a remote agent could not be connected, or a run of it could not be started or read.
/// The messages are meant for the person who wrote the configuration and for the model whose
/// call failed; [`RemoteError::code`] is a stable name for each kind.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RemoteError {
    /// The configuration cannot work (a bad name, URL or protocol setting).
    #[error("remote agent `{name}`: {reason}")]
    InvalidConfig {
        /// The remote agent's name (its tool's).
        name: String,
        /// What is wrong.
        reason: String,
    },
    /// The key is read from an environment variable that is not set.
    #[error(
        "remote agent `{name}`: the API key is read from the environment variable {var}, which is not set"
    )]
    MissingApiKey {
        /// The remote agent's name.
        name: String,
        /// The variable.
        var: String,
    },
    /// The request could not be sent, or no answer came (connection refused, DNS, TLS,
    /// timeout).
    #[error("could not reach {url}: {source}")]
    Unreachable {
        /// What was asked.
        url: String,
        /// Why, with its causes.
        #[source]
        source: reqwest::Error,
    },
    /// The agent answered with an HTTP error.
    #[error("{url} answered {status}: {body}")]
    Refused {
        /// What was asked.
        url: String,
        /// The HTTP status.
        status: u16,
        /// The start of the answer's body.
        body: String,
    },
    /// The URL gave something that is not an A2A agent card.
    #[error("{url} is not an A2A agent card: {source}")]
    BadCard {
        /// The card's URL.
        url: String,
        /// Why it does not read.
        #[source]
        source: DecodeError,
    },
    /// The card offers no interface this client speaks (A2A 1.x over JSON-RPC).
    #[error(
        "the agent card at {url} offers no A2A 1.0 JSON-RPC interface (it offers: {offered}); only JSON-RPC of A2A 1.x is spoken"
    )]
    NoJsonRpc {
        /// The card's URL.
        url: String,
        /// The interfaces it offers, as `binding version url`.
        offered: String,
    },
    /// The agent answered a JSON-RPC request with an error.
    #[error("{url} answered JSON-RPC error {code}: {message}")]
    Rpc {
        /// The endpoint.
        url: String,
        /// The JSON-RPC error code.
        code: i64,
        /// Its message.
        message: String,
    },
    /// The answer's body broke off.
    #[error("the answer of {url} broke off: {source}")]
    Broken {
        /// The endpoint.
        url: String,
        /// Why.
        #[source]
        source: reqwest::Error,
    },
    /// The answer is not the protocol's (a malformed frame or body).
    #[error("the answer of {url} is not A2A: {source}")]
    Decode {
        /// The endpoint.
        url: String,
        /// What was wrong.
        #[source]
        source: DecodeError,
    },
    /// The agentwire server could not be used (the client SDK's error: a refusal with the
    /// server's code, a broken stream it could not resume, a malformed stream).
    #[error("the agentwire server at {url}: {source}")]
    Agentwire {
        /// The server's base URL.
        url: String,
        /// What the client said.
        #[source]
        source: ClientError,
    },
    /// The agent's URL, or the endpoint its card names, is an address the outbound policy
    /// refuses (`crate::address`).
    #[error("{source}; set `allow_private = true` on its [[agents.remote]] entry to reach it")]
    Address {
        /// What the policy said.
        #[source]
        source: AddressError,
    },
    /// A card read with a key names an endpoint on another origin, where the key would go.
    #[error(
        "the agent card of {card} names its endpoint on {endpoint}, another origin: the key is \
         sent only to {card}, so the card is refused"
    )]
    OtherOrigin {
        /// The origin the card was read from (the configured one).
        card: String,
        /// The origin the card names.
        endpoint: String,
    },
    /// The agent did not answer within the time allowed (reading its card or its details).
    #[error("{url} did not answer within {seconds} s")]
    Timeout {
        /// What was asked.
        url: String,
        /// The time allowed.
        seconds: u64,
    },
}

impl RemoteError {
    /// A stable snake_case name of the failure, which a failed run's error carries:
    /// `remote_config`, `remote_unreachable`, `remote_refused`, `remote_bad_card`,
    /// `remote_stream_broken`, `remote_protocol` or `remote_forbidden` (the address policy,
    /// at connect or at a later connection, or a card sending the key to another origin).
    pub fn code(&self) -> &'static str {
        if self.refused_address() {
            return "remote_forbidden";
        }
        match self {
            Self::Address { .. } | Self::OtherOrigin { .. } => "remote_forbidden",
            Self::InvalidConfig { .. } | Self::MissingApiKey { .. } => "remote_config",
            Self::Unreachable { .. } | Self::Timeout { .. } => "remote_unreachable",
            Self::Refused { .. } | Self::Rpc { .. } => "remote_refused",
            Self::BadCard { .. } | Self::NoJsonRpc { .. } => "remote_bad_card",
            Self::Broken { .. } => "remote_stream_broken",
            Self::Decode { .. } => "remote_protocol",
            Self::Agentwire { source, .. } => match source {
                ClientError::InvalidUrl { .. } | ClientError::InvalidApiKey => "remote_config",
                ClientError::Api { .. } | ClientError::UnexpectedStatus { .. } => "remote_refused",
                ClientError::Http(error) if error.is_connect() || error.is_timeout() => {
                    "remote_unreachable"
                }
                ClientError::Http(_)
                | ClientError::Disconnected { .. }
                | ClientError::NoRunId
                | ClientError::EndedEarly => "remote_stream_broken",
                _ => "remote_protocol",
            },
        }
    }

    /// Whether a connection was refused by the address policy (its resolver or redirect
    /// check), as an HTTP error's cause.
    fn refused_address(&self) -> bool {
        let http = match self {
            Self::Unreachable { source, .. } | Self::Broken { source, .. } => source,
            Self::Agentwire {
                source: ClientError::Http(source),
                ..
            } => source,
            _ => return false,
        };
        AddressError::in_chain(http).is_some()
    }
}
