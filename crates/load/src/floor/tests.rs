#![allow(clippy::unwrap_used)]

use agentwire_core::{Accumulator, RunStatus};
use agentwire_dialects::Dialect;

use super::*;
use crate::connection::Connection;
use crate::unpaced::one_run;

fn dialect(endpoint: Endpoint) -> Dialect {
    match endpoint {
        Endpoint::Native => Dialect::Native,
        Endpoint::AiSdk => Dialect::AiSdk,
        Endpoint::AgUi => Dialect::AgUi,
    }
}

#[test]
fn every_endpoints_frames_decode_to_the_run_they_encode() {
    let events = events(200);
    for endpoint in Endpoint::ALL {
        let wire: Vec<u8> = frames(endpoint, &events).concat();
        let mut decoder = dialect(endpoint).decoder();
        let mut decoded = Vec::new();
        decoder.decode(&wire, &mut decoded).unwrap();
        decoder.finish(&mut decoded).unwrap();
        let deltas = decoded
            .iter()
            .filter(|event| matches!(event.kind, EventKind::PartDelta { .. }))
            .count();
        assert_eq!(deltas, 200, "{endpoint}");
        let mut accumulator = Accumulator::default();
        for event in &decoded {
            accumulator.push(event).unwrap();
        }
        assert_eq!(
            accumulator.status(),
            Some(RunStatus::Completed),
            "{endpoint}"
        );
        let message = accumulator.messages().last().unwrap();
        assert_eq!(message.content(), "token ".repeat(200), "{endpoint}");
    }
}

#[tokio::test]
async fn the_generator_reads_every_floor_stream_as_one_whole_proper_run() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(serve(listener, 200));
    let events = events(200);
    for endpoint in Endpoint::ALL {
        let body: usize = frames(endpoint, &events).iter().map(Bytes::len).sum();
        // Three runs on one keep-alive connection: each body ends exactly where the next
        // response begins.
        let mut connection = Connection::new(addr);
        for number in 0..3 {
            let run = one_run(&mut connection, endpoint, &format!("0-{number}"), 200).await;
            assert_eq!(run.outcome, Ok(()), "{endpoint}");
            assert_eq!(run.deltas, 200, "{endpoint}");
            assert_eq!(run.bytes, body as u64, "{endpoint}");
        }
        // Asking for one delta more than the floor streams is a short run, not a pass.
        let run = one_run(&mut connection, endpoint, "0-3", 201).await;
        assert_eq!(
            run.outcome,
            Err("200 of 201 deltas arrived".to_owned()),
            "{endpoint}"
        );
    }
    server.abort();
}
