//! The framing against sseer's own event stream (what framed every stream before), and the
//! event cap against a model of it written over the whole body.

use futures::{FutureExt as _, StreamExt as _};
use proptest::prelude::*;

use super::{FrameError, Frames};

/// What framing gave: the events, then how it ended.
#[derive(Debug, PartialEq)]
struct Framed {
    events: Vec<(String, String)>,
    end: End,
}

#[derive(Debug, PartialEq)]
enum End {
    Complete,
    NotUtf8,
    TooLong,
}

/// Frames `reads` one after the other, the way the stream driver does.
fn frame(reads: &[Vec<u8>], max: usize) -> Framed {
    let mut frames = Frames::new(max);
    let mut events = Vec::new();
    let mut reads = reads.iter();
    loop {
        match frames.next_event() {
            Ok(Some((name, data))) => events.push((name.to_owned(), data.to_owned())),
            Ok(None) => match reads.next() {
                Some(read) => frames.push(read),
                None if !frames.ended => frames.end(),
                None => {
                    return Framed {
                        events,
                        end: End::Complete,
                    };
                }
            },
            Err(FrameError::Utf8(_)) => {
                return Framed {
                    events,
                    end: End::NotUtf8,
                };
            }
            Err(FrameError::TooLong) => {
                return Framed {
                    events,
                    end: End::TooLong,
                };
            }
        }
    }
}

/// The same reads through `sseer::EventStream`, up to its first error.
fn frame_with_sseer(reads: &[Vec<u8>]) -> Framed {
    let body = futures::stream::iter(
        reads
            .iter()
            .map(|read| Ok::<_, ()>(bytes::Bytes::copy_from_slice(read))),
    );
    let mut stream = sseer::EventStream::new(body);
    let mut events = Vec::new();
    loop {
        let next = stream
            .next()
            .now_or_never()
            .expect("an in-memory body is always ready");
        match next {
            Some(Ok(event)) => events.push((event.event.to_string(), event.data.to_string())),
            Some(Err(_)) => {
                return Framed {
                    events,
                    end: End::NotUtf8,
                };
            }
            None => {
                return Framed {
                    events,
                    end: End::Complete,
                };
            }
        }
    }
}

/// `body` cut at `cuts` (positions taken modulo its length).
fn split(body: &[u8], cuts: &[usize]) -> Vec<Vec<u8>> {
    let mut cuts: Vec<usize> = cuts.iter().map(|cut| cut % (body.len() + 1)).collect();
    cuts.sort_unstable();
    let mut reads = Vec::new();
    let mut start = 0;
    for cut in cuts.into_iter().chain([body.len()]) {
        reads.push(body[start..cut].to_vec());
        start = cut;
    }
    reads
}

/// Whether some line, or the field lines of one event up to a line, pass `max` (comments
/// count alone; line endings do not count; a blank line starts a new event).
fn over_cap(body: &[u8], max: usize) -> bool {
    let body = body.strip_prefix("\u{feff}".as_bytes()).unwrap_or(body);
    let mut event = 0;
    let mut rest = body;
    loop {
        let end = rest.iter().position(|&b| b == b'\n' || b == b'\r');
        let line = &rest[..end.unwrap_or(rest.len())];
        let comment = line.first() == Some(&b':');
        let counted = if comment {
            line.len()
        } else {
            event + line.len()
        };
        if counted > max {
            return true;
        }
        let Some(end) = end else { return false };
        if line.is_empty() {
            event = 0;
        } else if !comment {
            event += line.len();
        }
        let crlf = rest[end] == b'\r' && rest.get(end + 1) == Some(&b'\n');
        rest = &rest[end + 1 + usize::from(crlf)..];
    }
}

/// SSE bodies made of the pieces that matter to framing, with the odd BOM and invalid byte.
fn body() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        Just(b"data".to_vec()),
        Just(b"data: ".to_vec()),
        Just(b"event:".to_vec()),
        Just(b"event: x".to_vec()),
        Just(b"id: 1".to_vec()),
        Just(b"retry: 5".to_vec()),
        Just(b": ping".to_vec()),
        Just(b":".to_vec()),
        Just(b" ".to_vec()),
        Just(b"\n".to_vec()),
        Just(b"\r".to_vec()),
        Just(b"\r\n".to_vec()),
        Just(b"\n\n".to_vec()),
        Just("é".as_bytes().to_vec()),
        Just("\u{feff}".as_bytes().to_vec()),
        Just(vec![0xff]),
        "[a-z{}\"]{1,6}".prop_map(String::into_bytes),
    ];
    prop::collection::vec(piece, 0..40).prop_map(|pieces| pieces.concat())
}

proptest! {
    #[test]
    fn frames_like_sseer(body in body(), cuts in prop::collection::vec(any::<usize>(), 0..6)) {
        let reads = split(&body, &cuts);
        prop_assert_eq!(frame(&reads, usize::MAX), frame_with_sseer(&reads));
    }

    #[test]
    fn the_cap_fails_exactly_the_bodies_past_it(
        body in body(),
        cuts in prop::collection::vec(any::<usize>(), 0..6),
        max in 0usize..40,
    ) {
        let body = String::from_utf8_lossy(&body).into_owned().into_bytes();
        let reads = split(&body, &cuts);
        let capped = frame(&reads, max);
        prop_assert_eq!(capped.end == End::TooLong, over_cap(&body, max));
        // What came before the cap is what the body holds.
        let uncapped = frame(&reads, usize::MAX);
        prop_assert!(uncapped.events.starts_with(&capped.events));
    }
}

#[test]
fn a_line_across_reads_is_cut_at_the_cap_as_it_grows() {
    let mut frames = Frames::new(10);
    frames.push(b"data: 0123");
    assert!(matches!(frames.next_event(), Ok(None)));
    frames.push(b"45");
    assert!(matches!(frames.next_event(), Err(FrameError::TooLong)));
}

#[test]
fn field_lines_add_up_and_a_blank_line_starts_again() {
    // Two data lines of 6 bytes: 12 > 10.
    let framed = frame(&[b"data:a\ndata:b\n\n".to_vec()], 10);
    assert_eq!(framed.end, End::TooLong);
    // The same lines in two events fit.
    let framed = frame(&[b"data:a\n\ndata:b\n\n".to_vec()], 10);
    assert_eq!(framed.end, End::Complete);
    assert_eq!(framed.events.len(), 2);
}

#[test]
fn comments_are_counted_one_by_one() {
    let many = ": keep-alive\n".repeat(1000) + "data: x\n\n";
    let framed = frame(&[many.into_bytes()], 20);
    assert_eq!(framed.end, End::Complete);
    assert_eq!(framed.events, [("message".into(), "x".into())]);
}
