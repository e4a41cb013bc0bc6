//! `agentwire convert`: decode a stream in one dialect and write it in another, as it arrives.

use std::process::ExitCode;

use agentwire_dialects::Dialect;
use anyhow::Result;
use tokio::io::AsyncWriteExt;

use crate::SourceArgs;
use crate::out;
use crate::source::open_stream;

pub(crate) async fn run(args: &SourceArgs, from: Option<Dialect>, to: Dialect) -> Result<ExitCode> {
    let (mut source, from, start) = open_stream(args, from).await?;
    let mut decoder = from.decoder();
    let mut encoder = to.encoder();
    let mut stdout = tokio::io::stdout();
    let mut events = Vec::new();
    let mut wire = Vec::new();
    let mut piece = start;
    loop {
        let decoded = decoder.decode(&piece, &mut events);
        for event in events.drain(..) {
            encoder.encode(&event, &mut wire);
        }
        out::checked(stdout.write_all(&wire).await)?;
        out::checked(stdout.flush().await)?;
        wire.clear();
        if let Err(error) = decoded {
            eprintln!("agentwire: the {from} stream is malformed: {error}");
            return Ok(ExitCode::FAILURE);
        }
        if !source.next(&mut piece).await? {
            break;
        }
    }
    let ended = decoder.finish(&mut events);
    for event in events.drain(..) {
        encoder.encode(&event, &mut wire);
    }
    encoder.finish(&mut wire);
    out::checked(stdout.write_all(&wire).await)?;
    out::checked(stdout.flush().await)?;
    if let Err(error) = ended {
        eprintln!("agentwire: the {from} stream is malformed: {error}");
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}
