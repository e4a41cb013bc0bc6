//! The chunked transfer coding of HTTP/1.1 response bodies, decoded as the bytes arrive: every
//! stream the generator reads is chunked (a streamed body has no length), and the generator's
//! clients read their sockets themselves (see `client.rs` for why).

/// Where the chunked body decoder is.
#[derive(Debug, Default)]
pub(crate) struct Chunks {
    /// Data bytes of the current chunk still to come.
    data_left: u64,
    /// The current chunk's data is complete and its closing CRLF is still to come.
    crlf_left: bool,
    /// The last (empty) chunk was read; the empty line that ends its trailers is still to come
    /// (a keep-alive connection's next response starts after it).
    last: bool,
}

impl Chunks {
    /// Hands every whole or partial chunk's data in `buffer` to `data`, removing what it
    /// consumed; true once the body has ended (the last, empty chunk and the empty line after
    /// it). Trailer fields are refused: no server of the generator sends any.
    pub(crate) fn decode(
        &mut self,
        buffer: &mut Vec<u8>,
        mut data: impl FnMut(&[u8]) -> anyhow::Result<()>,
    ) -> anyhow::Result<bool> {
        let mut at = 0;
        let ended = loop {
            let rest = &buffer[at..];
            if self.last {
                if rest.len() < 2 {
                    break false;
                }
                anyhow::ensure!(rest.starts_with(b"\r\n"), "a chunked body with trailers");
                at += 2;
                break true;
            } else if self.data_left > 0 {
                if rest.is_empty() {
                    break false;
                }
                let take = rest
                    .len()
                    .min(usize::try_from(self.data_left).unwrap_or(usize::MAX));
                data(&rest[..take])?;
                at += take;
                self.data_left -= take as u64;
                self.crlf_left = self.data_left == 0;
            } else if self.crlf_left {
                if rest.len() < 2 {
                    break false;
                }
                anyhow::ensure!(rest.starts_with(b"\r\n"), "a chunk without its CRLF");
                at += 2;
                self.crlf_left = false;
            } else {
                match httparse::parse_chunk_size(rest)
                    .map_err(|_| anyhow::anyhow!("a bad chunk size"))?
                {
                    httparse::Status::Complete((length, 0)) => {
                        at += length;
                        self.last = true;
                    }
                    httparse::Status::Complete((length, size)) => {
                        at += length;
                        self.data_left = size;
                    }
                    httparse::Status::Partial => break false,
                }
            }
        };
        buffer.drain(..at);
        Ok(ended)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn chunks_split_anywhere_decode_to_their_data() {
        let body = b"5\r\nhello\r\n7;ext=1\r\n, world\r\n0\r\n\r\n";
        for split in 0..body.len() {
            let mut chunks = Chunks::default();
            let mut buffer = Vec::new();
            let mut out = Vec::new();
            let mut ended = false;
            for piece in [&body[..split], &body[split..]] {
                buffer.extend_from_slice(piece);
                ended = chunks
                    .decode(&mut buffer, |data| {
                        out.extend_from_slice(data);
                        Ok(())
                    })
                    .unwrap();
            }
            assert!(ended, "split at {split}");
            assert_eq!(out, b"hello, world", "split at {split}");
        }
    }
}
