//! The text of an `event_batches` row: a JSON array of the batch's events, each as its JSON
//! object, except deltas. A run of consecutive deltas to one part is one array,
//! `[first_seq, message_id, index, [delta, …]]`, whose seqs count up from `first_seq`:
//!
//! ```text
//! [{"seq":4,"event":"part_start",…},[5,"msg_1",0,["Hello",","," world"]],{"seq":8,…}]
//! ```
//!
//! A streamed answer is then stored as about its text, not as an object per token that repeats
//! the message id and every key: a tenth of the bytes to write, checkpoint and parse. The form
//! is chosen by JSON type (array or object), so rows written before it read the same. Deltas of
//! a sub-agent's run nested in the stream carry its namespace as a fifth element,
//! `[first_seq, message_id, index, [delta, …], ["run_b"]]`.

use agentwire_core::{Event, EventKind, MessageId, Namespace};
use serde::de::value::MapAccessDeserializer;
use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

/// A batch's text, written an event at a time.
#[derive(Debug, Default)]
pub(crate) struct BatchText {
    json: Vec<u8>,
    /// The run of deltas whose array is open at the end of `json`.
    deltas: Option<OpenDeltas>,
}

#[derive(Debug)]
struct OpenDeltas {
    namespace: Namespace,
    message_id: MessageId,
    index: u32,
    next_seq: u64,
}

impl BatchText {
    /// Bytes written so far.
    pub(crate) fn len(&self) -> usize {
        self.json.len()
    }

    /// Appends an event.
    pub(crate) fn push(&mut self, event: &Event) -> Result<(), serde_json::Error> {
        let EventKind::PartDelta {
            message_id,
            index,
            delta,
        } = &event.kind
        else {
            self.close_deltas()?;
            self.separate();
            return serde_json::to_writer(&mut self.json, event);
        };
        match &mut self.deltas {
            Some(open)
                if open.next_seq == event.seq
                    && open.index == *index
                    && open.message_id == *message_id
                    && open.namespace == event.namespace =>
            {
                open.next_seq += 1;
                self.json.push(b',');
            }
            _ => {
                self.close_deltas()?;
                self.separate();
                // `[seq,"msg",index]` with its bracket left open for the deltas' array.
                serde_json::to_writer(&mut self.json, &(event.seq, message_id, index))?;
                self.json.pop();
                self.json.extend_from_slice(b",[");
                self.deltas = Some(OpenDeltas {
                    namespace: event.namespace.clone(),
                    message_id: message_id.clone(),
                    index: *index,
                    next_seq: event.seq + 1,
                });
            }
        }
        serde_json::to_writer(&mut self.json, delta)
    }

    /// The array, or `None` when no event was pushed.
    pub(crate) fn finish(mut self) -> Option<String> {
        // A namespace is ids, which always serialize.
        let _ = self.close_deltas();
        if self.json.is_empty() {
            return None;
        }
        self.json.push(b']');
        // serde_json writes UTF-8 only, and so do the brackets and commas around it.
        String::from_utf8(self.json).ok()
    }

    fn separate(&mut self) {
        self.json
            .push(if self.json.is_empty() { b'[' } else { b',' });
    }

    fn close_deltas(&mut self) -> Result<(), serde_json::Error> {
        let Some(open) = self.deltas.take() else {
            return Ok(());
        };
        self.json.push(b']');
        if !open.namespace.is_root() {
            self.json.push(b',');
            serde_json::to_writer(&mut self.json, &open.namespace)?;
        }
        self.json.push(b']');
        Ok(())
    }
}

/// The events of a batch's text, in order.
pub(crate) fn parse(text: &str) -> Result<Vec<Event>, serde_json::Error> {
    let items: Vec<Item> = serde_json::from_str(text)?;
    let mut events = Vec::with_capacity(items.len());
    for item in items {
        match item {
            Item::Event(event) => events.push(event),
            Item::Deltas {
                first_seq,
                message_id,
                index,
                deltas,
                namespace,
            } => events.extend((first_seq..).zip(deltas).map(|(seq, delta)| Event {
                namespace: namespace.clone(),
                seq,
                kind: EventKind::PartDelta {
                    message_id: message_id.clone(),
                    index,
                    delta,
                },
            })),
        }
    }
    Ok(events)
}

/// One element of a batch's array.
enum Item {
    Event(Event),
    Deltas {
        first_seq: u64,
        message_id: MessageId,
        index: u32,
        deltas: Vec<String>,
        namespace: Namespace,
    },
}

impl<'de> Deserialize<'de> for Item {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ItemVisitor;

        impl<'de> Visitor<'de> for ItemVisitor {
            type Value = Item;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(
                    "an event object or a [seq, message_id, index, deltas, namespace?] array",
                )
            }

            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Item, A::Error> {
                Event::deserialize(MapAccessDeserializer::new(map)).map(Item::Event)
            }

            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Item, A::Error> {
                let missing = |at| de::Error::invalid_length(at, &"4 elements");
                Ok(Item::Deltas {
                    first_seq: seq.next_element()?.ok_or_else(|| missing(0))?,
                    message_id: seq.next_element()?.ok_or_else(|| missing(1))?,
                    index: seq.next_element()?.ok_or_else(|| missing(2))?,
                    deltas: seq.next_element()?.ok_or_else(|| missing(3))?,
                    namespace: seq.next_element()?.unwrap_or_default(),
                })
            }
        }

        deserializer.deserialize_any(ItemVisitor)
    }
}

#[cfg(test)]
mod tests {
    use agentwire_core::{Event, EventKind, MessageId, Namespace, RunId, RunStatus};

    use super::{BatchText, parse};

    fn delta(seq: u64, message: &str, index: u32, text: &str) -> Event {
        Event::new(
            seq,
            EventKind::PartDelta {
                message_id: MessageId::from(message),
                index,
                delta: text.into(),
            },
        )
    }

    fn text_of(events: &[Event]) -> String {
        let mut text = BatchText::default();
        for event in events {
            text.push(event).expect("encodes");
        }
        text.finish().expect("not empty")
    }

    #[test]
    fn deltas_to_one_part_fold_into_one_array_and_read_back_as_they_were() {
        let events = vec![
            delta(3, "msg_1", 0, "Hel"),
            delta(4, "msg_1", 0, "lo \"quoted\"\n"),
            delta(5, "msg_1", 1, "{\"a\":"),
            delta(7, "msg_1", 1, "1}"),
            Event::new(
                8,
                EventKind::RunStatus {
                    status: RunStatus::Completed,
                    error: None,
                    usage: None,
                },
            ),
            delta(9, "msg_2", 0, "é"),
        ];
        let text = text_of(&events);
        assert!(
            text.starts_with(r#"[[3,"msg_1",0,["Hel","lo \"quoted\"\n"]],[5,"msg_1",1,["#),
            "{text}"
        );
        assert_eq!(parse(&text).expect("parses"), events);
    }

    #[test]
    fn a_nested_runs_deltas_keep_their_namespace_and_do_not_join_the_parents() {
        let nested = |seq, text: &str| Event {
            namespace: Namespace::new(["run_b", "run_c"].map(RunId::from)),
            ..delta(seq, "msg_1", 0, text)
        };
        let events = vec![
            delta(1, "msg_1", 0, "a"),
            nested(2, "b"),
            nested(3, "c"),
            delta(4, "msg_1", 0, "d"),
        ];
        let text = text_of(&events);
        assert_eq!(
            text,
            r#"[[1,"msg_1",0,["a"]],[2,"msg_1",0,["b","c"],["run_b","run_c"]],[4,"msg_1",0,["d"]]]"#
        );
        assert_eq!(parse(&text).expect("parses"), events);
    }

    #[test]
    fn rows_of_event_objects_read_as_before() {
        let events = vec![delta(1, "msg_1", 0, "a"), delta(2, "msg_1", 0, "b")];
        let text = serde_json::to_string(&events).expect("encodes");
        assert_eq!(parse(&text).expect("parses"), events);
    }

    #[test]
    fn a_malformed_array_is_an_error() {
        assert!(parse(r#"[[1,"msg_1",0]]"#).is_err());
        assert!(parse(r#"[[1,"msg_1",0,["a"],5]]"#).is_err());
    }
}
