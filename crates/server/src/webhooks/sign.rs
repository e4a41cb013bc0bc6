//! Standard Webhooks signing (<https://www.standardwebhooks.com>, "Signature scheme"): a secret
//! `whsec_<base64 of its bytes>`, and `webhook-signature: v1,<base64 of HMAC-SHA256 over
//! "{webhook-id}.{webhook-timestamp}.{body}">`, keyed with the secret's bytes.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

/// What a secret's text starts with.
const SECRET_PREFIX: &str = "whsec_";

/// Bytes of a fresh secret: 24 to 64 is what the specification asks for.
const SECRET_BYTES: usize = 32;

/// A fresh signing secret, `whsec_<base64>`, from the operating system's random source.
pub(crate) fn new_secret() -> Result<String, getrandom::Error> {
    let mut bytes = [0_u8; SECRET_BYTES];
    getrandom::fill(&mut bytes)?;
    Ok(format!("{SECRET_PREFIX}{}", STANDARD.encode(bytes)))
}

/// The `webhook-signature` value of a message: `v1,<base64>`. A secret that is not
/// `whsec_<base64>` (none is: the server makes them) signs with its text as the key.
pub(crate) fn signature(secret: &str, id: &str, timestamp: i64, body: &[u8]) -> String {
    let key = secret
        .strip_prefix(SECRET_PREFIX)
        .and_then(|encoded| STANDARD.decode(encoded).ok())
        .unwrap_or_else(|| secret.as_bytes().to_vec());
    // HMAC takes a key of any length.
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(&key)
        .unwrap_or_else(|_| unreachable!("HMAC accepts keys of every length"));
    mac.update(id.as_bytes());
    mac.update(b".");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    format!("v1,{}", STANDARD.encode(mac.finalize().into_bytes()))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// The example of the specification's reference libraries (their test suites use this
    /// secret, id, timestamp and body, and this signature).
    #[test]
    fn signs_as_the_reference_libraries_do() {
        let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
        let body = br#"{"test": 2432232314}"#;
        assert_eq!(
            signature(secret, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body),
            "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
        );
    }

    #[test]
    fn fresh_secrets_differ_and_decode_to_their_bytes() {
        let (a, b) = (new_secret().unwrap(), new_secret().unwrap());
        assert_ne!(a, b);
        let bytes = STANDARD
            .decode(a.strip_prefix(SECRET_PREFIX).unwrap())
            .unwrap();
        assert_eq!(bytes.len(), SECRET_BYTES);
    }
}
