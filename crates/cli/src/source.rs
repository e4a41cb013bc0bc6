//! Reading a stream from a file, stdin or a URL, piece by piece as it arrives, and telling its
//! dialect when the user did not say.

use agentwire_dialects::Dialect;
use anyhow::{Context, Result, bail};
use tokio::io::{AsyncRead, AsyncReadExt};

use crate::SourceArgs;

/// The most a stream's start is read to sniff its dialect.
const SNIFF_LIMIT: usize = 64 * 1024;

/// A stream being read.
pub(crate) enum Source {
    Reader(Box<dyn AsyncRead + Unpin>),
    Http(reqwest::Response),
}

impl Source {
    /// Opens the file, stdin or URL the arguments name.
    pub(crate) async fn open(args: &SourceArgs) -> Result<Self> {
        let name = args.source.as_str();
        if name.starts_with("http://") || name.starts_with("https://") {
            return Self::request(args).await;
        }
        if args.data.is_some() || !args.headers.is_empty() {
            bail!("--data and --header apply only to a URL");
        }
        if name == "-" {
            return Ok(Source::Reader(Box::new(tokio::io::stdin())));
        }
        let file = tokio::fs::File::open(name)
            .await
            .with_context(|| format!("cannot open {name}"))?;
        Ok(Source::Reader(Box::new(file)))
    }

    async fn request(args: &SourceArgs) -> Result<Self> {
        let client = reqwest::Client::new();
        let mut request = match &args.data {
            Some(data) => {
                let body = match data.strip_prefix('@') {
                    Some(path) => tokio::fs::read(path)
                        .await
                        .with_context(|| format!("cannot read {path}"))?,
                    None => data.clone().into_bytes(),
                };
                client
                    .post(&args.source)
                    .header("content-type", "application/json")
                    .body(body)
            }
            None => client.get(&args.source),
        };
        request = request.header("accept", "text/event-stream, application/x-ndjson, */*");
        for header in &args.headers {
            let Some((name, value)) = header.split_once(':') else {
                bail!("--header {header:?} is not `Name: value`");
            };
            request = request.header(name.trim(), value.trim());
        }
        let response = request
            .send()
            .await
            .with_context(|| format!("cannot reach {}", args.source))?;
        let status = response.status();
        if !status.is_success() {
            let body = response.text().await.unwrap_or_default();
            bail!("{} answered {status}: {}", args.source, body.trim());
        }
        Ok(Source::Http(response))
    }

    /// The next piece of the stream; empty at its end.
    pub(crate) async fn next(&mut self, buffer: &mut Vec<u8>) -> Result<bool> {
        buffer.clear();
        match self {
            Source::Reader(reader) => {
                buffer.reserve(16 * 1024);
                let n = reader.read_buf(buffer).await.context("read failed")?;
                Ok(n > 0)
            }
            Source::Http(response) => match response.chunk().await.context("read failed")? {
                Some(bytes) => {
                    buffer.extend_from_slice(&bytes);
                    Ok(true)
                }
                None => Ok(false),
            },
        }
    }

    /// A dialect the response's headers name, as the AI SDK's stream header does.
    fn announced(&self) -> Option<Dialect> {
        let Source::Http(response) = self else {
            return None;
        };
        let headers = response.headers();
        if headers.contains_key("x-vercel-ai-ui-message-stream") {
            return Some(Dialect::AiSdk);
        }
        let content_type = headers.get("content-type")?.to_str().ok()?;
        content_type
            .starts_with("application/x-ndjson")
            .then_some(Dialect::NativeNdjson)
    }
}

/// Opens the source and settles its dialect: the one given, the one its headers announce, or the
/// one its first frames show. Returns the bytes read to sniff, which the caller decodes first.
pub(crate) async fn open_stream(
    args: &SourceArgs,
    given: Option<Dialect>,
) -> Result<(Source, Dialect, Vec<u8>)> {
    let mut source = Source::open(args).await?;
    if let Some(dialect) = given.or_else(|| source.announced()) {
        return Ok((source, dialect, Vec::new()));
    }
    let mut start = Vec::new();
    let mut piece = Vec::new();
    loop {
        if let Some(dialect) = Dialect::sniff(&start) {
            return Ok((source, dialect, start));
        }
        if start.len() >= SNIFF_LIMIT || !source.next(&mut piece).await? {
            bail!(
                "cannot tell the dialect of {} from its first {} bytes; name it with --dialect",
                args.source,
                start.len()
            );
        }
        start.extend_from_slice(&piece);
    }
}
