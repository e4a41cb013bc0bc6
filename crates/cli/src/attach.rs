//! Files a user attaches to a message (`agentwire run --file`, `/attach` in `agentwire chat`):
//! read whole, sent inline as a `file` part (base64 data, the media type its extension names),
//! which the server checks against the agent's schema like any other content.

use std::path::Path;

use agentwire_core::Part;
use agentwire_core::part::{FilePart, FileSource};
use anyhow::{Context, Result, bail};

/// The largest file sent inline: a model takes images of a few megabytes at most, and a
/// server's body limit is of that order too.
const MAX_BYTES: u64 = 20 * 1024 * 1024;

/// The file at `path` as a `file` part.
pub(crate) fn file_part(path: &Path) -> Result<Part> {
    let size = std::fs::metadata(path)
        .with_context(|| format!("cannot attach {}", path.display()))?
        .len();
    if size > MAX_BYTES {
        bail!(
            "cannot attach {}: {size} bytes, more than the {MAX_BYTES} sent inline",
            path.display()
        );
    }
    let bytes = std::fs::read(path).with_context(|| format!("cannot attach {}", path.display()))?;
    Ok(Part::File(FilePart {
        media_type: media_type(path).to_owned(),
        source: FileSource::Data(base64(&bytes)),
        filename: path
            .file_name()
            .map(|name| name.to_string_lossy().into_owned()),
    }))
}

/// The media type a file's extension names; `application/octet-stream` for others.
fn media_type(path: &Path) -> &'static str {
    let extension = path
        .extension()
        .map(|extension| extension.to_string_lossy().to_ascii_lowercase());
    match extension.as_deref() {
        Some("png") => "image/png",
        Some("jpg" | "jpeg") => "image/jpeg",
        Some("gif") => "image/gif",
        Some("webp") => "image/webp",
        Some("pdf") => "application/pdf",
        Some("txt") => "text/plain",
        Some("md") => "text/markdown",
        Some("csv") => "text/csv",
        Some("json") => "application/json",
        _ => "application/octet-stream",
    }
}

/// Standard base64 with padding (RFC 4648 §4), as `file` parts carry data.
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk.iter().enumerate().fold(0u32, |n, (idx, byte)| {
            n | u32::from(*byte) << (16 - 8 * idx)
        });
        for idx in 0..4 {
            if idx <= chunk.len() {
                out.push(char::from(ALPHABET[(n >> (18 - 6 * idx)) as usize & 63]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_is_rfc_4648() {
        for (bytes, text) in [
            (&b""[..], ""),
            (b"f", "Zg=="),
            (b"fo", "Zm8="),
            (b"foo", "Zm9v"),
            (b"foob", "Zm9vYg=="),
            (b"fooba", "Zm9vYmE="),
            (b"foobar", "Zm9vYmFy"),
            (&[0xff, 0xfe, 0x00], "//4A"),
        ] {
            assert_eq!(base64(bytes), text);
        }
    }

    #[test]
    fn a_file_becomes_a_part_named_and_typed_by_its_extension() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let path = dir.path().join("Pixel.PNG");
        std::fs::write(&path, b"foo").expect("written");
        let Part::File(file) = file_part(&path).expect("attached") else {
            panic!("a file part");
        };
        assert_eq!(file.media_type, "image/png");
        assert_eq!(file.source, FileSource::Data("Zm9v".into()));
        assert_eq!(file.filename.as_deref(), Some("Pixel.PNG"));
        assert!(file_part(&dir.path().join("missing.png")).is_err());
    }
}
