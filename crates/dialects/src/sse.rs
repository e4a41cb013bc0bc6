//! Server-sent events framing (the WHATWG event stream format), shared by every dialect that
//! streams over SSE: an incremental reader and frame writers.
//!
//! The reader is written here rather than taken from a crate because the codecs are pure and
//! synchronous: the SSE crates available parse only async byte streams.

use crate::error::DecodeError;

/// One server-sent event.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SseFrame {
    /// The `event:` field; `None` when the frame had none (the SSE default type, `message`).
    pub event: Option<String>,
    /// The `id:` field, when this frame set one.
    pub id: Option<String>,
    /// The `data:` lines, joined by `\n`.
    pub data: String,
}

/// Reads server-sent events from bytes arriving in pieces of any size, split anywhere (even inside
/// a UTF-8 sequence or between `\r` and `\n`). Each byte is looked at once.
///
/// Lines end with `\n`, `\r\n` or `\r`; `:` lines are comments (keep-alives) and are skipped; a
/// blank line ends a frame; a frame without `data:` lines is not dispatched; a leading byte-order
/// mark is ignored; `retry:` and unknown fields are ignored, as the format says.
#[derive(Debug, Default)]
pub struct SseReader {
    line: Vec<u8>,
    frame: SseFrame,
    has_data: bool,
    after_cr: bool,
    bom_checked: bool,
    offset: u64,
}

impl SseReader {
    /// Reads the next piece, appending the frames it completes to `frames`.
    pub fn feed(&mut self, bytes: &[u8], frames: &mut Vec<SseFrame>) -> Result<(), DecodeError> {
        const BOM: &[u8] = b"\xEF\xBB\xBF";
        let mut rest = bytes;
        if !self.bom_checked {
            // The first bytes may be a byte-order mark, perhaps split across pieces: hold them
            // in the line buffer until there are three, or they cannot be one.
            let take = (BOM.len() - self.line.len()).min(rest.len());
            self.line.extend_from_slice(&rest[..take]);
            rest = &rest[take..];
            if self.line.len() < BOM.len() && BOM.starts_with(&self.line) {
                return Ok(());
            }
            self.bom_checked = true;
            let start = std::mem::take(&mut self.line);
            if start != BOM {
                self.feed_lines(&start, frames)?;
            } else {
                self.offset += 3;
            }
        }
        self.feed_lines(rest, frames)
    }

    fn feed_lines(&mut self, bytes: &[u8], frames: &mut Vec<SseFrame>) -> Result<(), DecodeError> {
        let mut rest = bytes;
        while !rest.is_empty() {
            if self.after_cr {
                self.after_cr = false;
                if rest[0] == b'\n' {
                    rest = &rest[1..];
                    self.offset += 1;
                    continue;
                }
            }
            match rest.iter().position(|&byte| byte == b'\n' || byte == b'\r') {
                Some(end) => {
                    self.line.extend_from_slice(&rest[..end]);
                    self.after_cr = rest[end] == b'\r';
                    let line_start = self.offset + end as u64 - self.line.len() as u64;
                    self.offset += end as u64 + 1;
                    rest = &rest[end + 1..];
                    let line = std::mem::take(&mut self.line);
                    self.line_ended(&line, line_start, frames)?;
                    self.line = line;
                    self.line.clear();
                }
                None => {
                    self.line.extend_from_slice(rest);
                    self.offset += rest.len() as u64;
                    rest = &[];
                }
            }
        }
        Ok(())
    }

    /// The stream has ended. Fails if it ended inside a frame (data received but no blank line).
    pub fn finish(&mut self) -> Result<(), DecodeError> {
        let line_is_blank = self.line.iter().all(|&byte| byte == b' ');
        let partial_field = !line_is_blank && !self.line.starts_with(b":");
        if self.has_data || (self.bom_checked && partial_field) {
            return Err(DecodeError::UnexpectedEnd);
        }
        Ok(())
    }

    fn line_ended(
        &mut self,
        line: &[u8],
        line_start: u64,
        frames: &mut Vec<SseFrame>,
    ) -> Result<(), DecodeError> {
        if line.is_empty() {
            let frame = std::mem::take(&mut self.frame);
            if std::mem::take(&mut self.has_data) {
                frames.push(frame);
            }
            return Ok(());
        }
        if line[0] == b':' {
            return Ok(());
        }
        let line = std::str::from_utf8(line).map_err(|err| DecodeError::InvalidUtf8 {
            offset: line_start + err.valid_up_to() as u64,
        })?;
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        match field {
            "data" => {
                if self.has_data {
                    self.frame.data.push('\n');
                }
                self.frame.data.push_str(value);
                self.has_data = true;
            }
            "event" => self.frame.event = Some(value.to_owned()),
            "id" if !value.contains('\0') => self.frame.id = Some(value.to_owned()),
            _ => {}
        }
        Ok(())
    }
}

/// Appends a frame: optional `id:` and `event:` lines, then `data` as one `data:` line per line
/// of it, then the blank line.
pub fn write_frame(out: &mut Vec<u8>, id: Option<&str>, event: Option<&str>, data: &str) {
    if let Some(id) = id {
        line(out, "id", id);
    }
    if let Some(event) = event {
        line(out, "event", event);
    }
    for data_line in data.split('\n') {
        line(out, "data", data_line);
    }
    out.push(b'\n');
}

/// Appends a comment frame, which every SSE client ignores: the form keep-alives take.
pub fn write_comment(out: &mut Vec<u8>, text: &str) {
    out.extend_from_slice(b": ");
    out.extend_from_slice(text.as_bytes());
    out.extend_from_slice(b"\n\n");
}

fn line(out: &mut Vec<u8>, field: &str, value: &str) {
    out.extend_from_slice(field.as_bytes());
    out.extend_from_slice(b": ");
    out.extend_from_slice(value.as_bytes());
    out.push(b'\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(event: Option<&str>, id: Option<&str>, data: &str) -> SseFrame {
        SseFrame {
            event: event.map(str::to_owned),
            id: id.map(str::to_owned),
            data: data.to_owned(),
        }
    }

    /// Reads `stream` whole and split at every byte, expecting the same frames both ways.
    #[track_caller]
    fn check(stream: &[u8], expect: &[SseFrame]) {
        for split in 0..=stream.len() {
            let mut reader = SseReader::default();
            let mut frames = Vec::new();
            reader.feed(&stream[..split], &mut frames).expect("valid");
            reader.feed(&stream[split..], &mut frames).expect("valid");
            reader.finish().expect("complete");
            assert_eq!(frames, expect, "split at {split}");
        }
        let mut reader = SseReader::default();
        let mut frames = Vec::new();
        for byte in stream {
            reader
                .feed(std::slice::from_ref(byte), &mut frames)
                .expect("valid");
        }
        assert_eq!(frames, expect, "byte by byte");
    }

    #[test]
    fn reads_frames_in_any_split() {
        check(
            b"id: 1\nevent: part_delta\ndata: {\"a\":1}\n\n",
            &[frame(Some("part_delta"), Some("1"), "{\"a\":1}")],
        );
        check(
            b"\xEF\xBB\xBFdata: one\r\ndata:two\r\rdata: caf\xC3\xA9\r\n\r\n",
            &[
                frame(None, None, "one\ntwo"),
                frame(None, None, "caf\u{e9}"),
            ],
        );
        check(
            b": keep-alive\n\nevent: only-event\n\nretry: 10\ndata\n\n",
            &[frame(None, None, "")],
        );
    }

    #[test]
    fn writes_what_it_reads() {
        let mut out = Vec::new();
        write_comment(&mut out, "stream-open");
        write_frame(&mut out, Some("7"), Some("x"), "line one\nline two");
        check(&out, &[frame(Some("x"), Some("7"), "line one\nline two")]);
    }

    #[test]
    fn a_frame_cut_off_is_an_error() {
        let mut reader = SseReader::default();
        reader
            .feed(b"data: half", &mut Vec::new())
            .expect("valid so far");
        assert!(matches!(reader.finish(), Err(DecodeError::UnexpectedEnd)));
        let mut reader = SseReader::default();
        reader
            .feed(b"data: x\n", &mut Vec::new())
            .expect("valid so far");
        assert!(matches!(reader.finish(), Err(DecodeError::UnexpectedEnd)));
    }

    #[test]
    fn invalid_utf8_names_its_offset() {
        let mut reader = SseReader::default();
        let err = reader
            .feed(b"data: ok\n\ndata: \xFF\n", &mut Vec::new())
            .expect_err("invalid");
        assert!(
            matches!(err, DecodeError::InvalidUtf8 { offset: 16 }),
            "{err:?}"
        );
    }
}
