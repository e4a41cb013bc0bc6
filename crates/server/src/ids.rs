//! The ids clients choose: a session's (a chat's, a thread's, an A2A context's). They are
//! stored, listed, and written back in URLs and headers, so they have a documented shape:
//! 1 to 128 characters, each a letter, a digit or one of `-_.:~`. (The ids the server mints,
//! `ses_…` and `run_…`, have it too, and so do the UUIDs clients generate.)

use axum::http::StatusCode;

use crate::error::ApiError;

/// The longest session id.
pub(crate) const MAX_ID_CHARS: usize = 128;

/// Whether `id` has the shape of an id.
pub(crate) fn is_valid(id: &str) -> bool {
    (1..=MAX_ID_CHARS).contains(&id.len())
        && id
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || b"-_.:~".contains(&byte))
}

/// 400 `invalid_session_id` for a session id a client may not choose.
pub(crate) fn check_session_id(id: &str) -> Result<(), ApiError> {
    if is_valid(id) {
        return Ok(());
    }
    let shown: String = id
        .chars()
        .take(40)
        .collect::<String>()
        .escape_debug()
        .to_string();
    Err(ApiError::new(
        StatusCode::BAD_REQUEST,
        "invalid_session_id",
        format!(
            "session id \"{shown}\" is not 1 to {MAX_ID_CHARS} letters, digits, '-', '_', '.', \
             ':' or '~'"
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_have_a_shape() {
        for id in [
            "ses_0195a3c2e1b47c3d8e9f",
            "3f2a1c9e-7b4d-4e21-9a8b-0c5d6e7f8a9b",
            "chat:2026.11~a",
            "x",
        ] {
            assert!(is_valid(id), "{id}");
        }
        let long = "a".repeat(MAX_ID_CHARS + 1);
        for id in ["", "a b", "a\nb", "a\0b", "ü", "a/b", long.as_str()] {
            assert!(!is_valid(id), "{id:?}");
        }
    }
}
