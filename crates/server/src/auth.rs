//! Who is calling: the [`Caller`] extractor, and the [`Keys`] it checks requests against.
//!
//! With `api_keys`, a request must carry one of them as `Authorization: Bearer <key>` (the
//! scheme in any case, as RFC 9110 has it) and acts as its key's owner; without keys everyone
//! is the same anonymous caller. A presented key is hashed and compared with every key's hash in
//! constant time, so neither the comparison nor the lookup tells how close a guess was.
//!
//! What a key creates is owned by an identity that does not depend on the key list's order:
//! `name:<name>` for a named key (kept when its secret is replaced), `sha256:<hex>` of the
//! secret for an unnamed one. Earlier versions stored `key-N`, the key's place in the list;
//! [`Keys::legacy_owners`] maps those once, on the first start with this version.

use std::sync::Arc;

use axum::extract::{FromRef, FromRequestParts};
use axum::http::request::Parts;
use axum::http::{HeaderValue, StatusCode, header};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::caller::Caller;
use crate::error::ApiError;
use crate::settings::ApiKey;

/// The server's keys: each secret's digest and its owner id.
#[derive(Clone, Debug, Default)]
pub(crate) struct Keys {
    /// Shared: every request's extractor takes a copy.
    keys: Arc<[([u8; 32], Arc<str>)]>,
}

fn digest(secret: &str) -> [u8; 32] {
    Sha256::digest(secret.as_bytes()).into()
}

impl Keys {
    pub(crate) fn new(keys: &[ApiKey]) -> Self {
        let keys = keys
            .iter()
            .map(|key| {
                let digest = digest(&key.secret);
                let owner = match &key.name {
                    Some(name) => format!("name:{name}"),
                    None => format!("sha256:{}", hex(&digest)),
                };
                (digest, owner.into())
            })
            .collect();
        Self { keys }
    }

    /// Whether the server runs without authentication.
    pub(crate) fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// The owner ids earlier versions stored (`key-1` for the first key, …), each with the
    /// identity of the key now at that place: right when the key list has not changed since
    /// the last start of such a version, which is the only information there is.
    pub(crate) fn legacy_owners(&self) -> Vec<(String, String)> {
        self.keys
            .iter()
            .enumerate()
            .map(|(index, (_, owner))| (format!("key-{}", index + 1), owner.to_string()))
            .collect()
    }

    /// The caller an `Authorization` header makes: anyone without keys; else the key's owner,
    /// or 401 `unauthorized`.
    pub(crate) fn authenticate(
        &self,
        authorization: Option<&HeaderValue>,
    ) -> Result<Caller, ApiError> {
        if self.is_empty() {
            return Ok(Caller::default());
        }
        let token = authorization
            .and_then(|value| value.to_str().ok())
            .and_then(bearer_token);
        token
            .and_then(|token| self.find(token))
            .ok_or_else(unauthorized)
    }

    /// The caller whose key is `token`, if any: every key is compared, in constant time.
    pub(crate) fn find(&self, token: &str) -> Option<Caller> {
        let presented = digest(token);
        let mut found = None;
        for (digest, owner) in self.keys.iter() {
            if bool::from(digest.ct_eq(&presented)) {
                found = Some(Caller::owner(Arc::clone(owner)));
            }
        }
        found
    }
}

/// The token of a `Bearer` credential (`bearer`, `BEARER`, …, then one or more spaces).
fn bearer_token(value: &str) -> Option<&str> {
    let (scheme, token) = value.split_once(' ')?;
    let token = token.trim_start_matches(' ');
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

fn unauthorized() -> ApiError {
    ApiError::new(
        StatusCode::UNAUTHORIZED,
        "unauthorized",
        "a valid `Authorization: Bearer <key>` header is required",
    )
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

impl<S> FromRequestParts<S> for Caller
where
    Keys: FromRef<S>,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        Keys::from_ref(state).authenticate(parts.headers.get(header::AUTHORIZATION))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn keys() -> Keys {
        Keys::new(&[ApiKey::from("first"), ApiKey::named("web", "second")])
    }

    #[test]
    fn the_bearer_scheme_is_case_insensitive() {
        let keys = keys();
        for header in ["Bearer first", "bearer first", "BEARER   first"] {
            let value = HeaderValue::from_static(header);
            assert!(keys.authenticate(Some(&value)).is_ok(), "{header}");
        }
        for header in [
            "Basic first",
            "Bearer",
            "Bearer ",
            "Bearerfirst",
            "Bearer firs",
        ] {
            let value = HeaderValue::from_static(header);
            assert!(keys.authenticate(Some(&value)).is_err(), "{header}");
        }
        assert!(keys.authenticate(None).is_err());
    }

    #[test]
    fn owners_follow_the_key_not_its_place() {
        let before = keys();
        let after = Keys::new(&[ApiKey::named("web", "rotated"), ApiKey::from("first")]);
        assert_eq!(before.find("first"), after.find("first"));
        assert_eq!(
            before.find("second").unwrap().owner_id(),
            after.find("rotated").unwrap().owner_id()
        );
        assert_eq!(before.find("second").unwrap().owner_id(), Some("name:web"));
        assert!(
            before
                .find("first")
                .unwrap()
                .owner_id()
                .unwrap()
                .starts_with("sha256:")
        );
    }

    #[test]
    fn without_keys_everyone_is_the_anonymous_caller() {
        let keys = Keys::default();
        assert_eq!(keys.authenticate(None).unwrap(), Caller::default());
    }
}
